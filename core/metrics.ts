// Training metrics from verl's `file` logger (JSON lines {"step": N, "data": {...}}): merging the chunks a
// run uploaded, the latest values of the main series, and the panels of a plot (drawn by core/plot/).
import { type ChartLayout, type ChartLine, type ChartPanel, layoutChart } from "./plot/chart.js";
import { encodePng } from "./plot/png.js";
import { rasterize } from "./plot/raster.js";
import { sceneToSvg } from "./plot/svg.js";

export interface MetricsChunk {
  readonly generation: string;
  readonly start: number;
  readonly end: number;
  readonly text: string;
  /** When the generation's first chunk was uploaded: later generations (restarts) win for the same step. */
  readonly generationOrder: number;
}

export type Series = ReadonlyMap<string, readonly (readonly [number, number])[]>;

/**
 * Rows by step. A restarted run (verl rewrites its log file from the resumed step) is a later generation whose
 * rows replace the earlier generation's for the same steps. Overlapping chunks (a re-upload after a crash)
 * are read once, by byte offsets.
 */
export function mergeMetrics(chunks: readonly MetricsChunk[]): Map<number, Record<string, number>> {
  const byGen = new Map<string, MetricsChunk[]>();
  for (const c of chunks) byGen.set(c.generation, [...(byGen.get(c.generation) ?? []), c]);
  const gens = [...byGen.entries()].sort((a, b) => Math.min(...a[1].map((c) => c.generationOrder)) - Math.min(...b[1].map((c) => c.generationOrder)));
  const rows = new Map<number, Record<string, number>>();
  for (const [, list] of gens) {
    let offset = 0;
    let text = "";
    for (const c of [...list].sort((a, b) => a.start - b.start)) {
      if (c.end <= offset) continue; // already covered
      text += c.text.slice(Math.max(0, offset - c.start));
      offset = c.end;
    }
    for (const line of text.split("\n")) {
      if (line.trim() === "") continue;
      let rec: unknown;
      try { rec = JSON.parse(line); } catch { continue; }
      const r = rec as { step?: unknown; data?: unknown };
      if (typeof r.step !== "number" || r.data === null || typeof r.data !== "object") continue;
      const values: Record<string, number> = {};
      for (const [k, v] of Object.entries(r.data as Record<string, unknown>)) if (typeof v === "number" && Number.isFinite(v)) values[k] = v;
      rows.set(r.step, { ...rows.get(r.step), ...values });
    }
  }
  return rows;
}

export function toSeries(rows: ReadonlyMap<number, Record<string, number>>): Map<string, [number, number][]> {
  const out = new Map<string, [number, number][]>();
  for (const step of [...rows.keys()].sort((a, b) => a - b)) {
    for (const [k, v] of Object.entries(rows.get(step)!)) {
      const s = out.get(k) ?? [];
      s.push([step, v]);
      out.set(k, s);
    }
  }
  return out;
}

/** The series people look at first, with verl's names; the first present name of each wins. */
export const MAIN_SERIES: readonly {
  readonly label: string;
  readonly names: readonly string[];
  /** A value computed from the metric, the same for the printed latest value and every plotted point. */
  readonly derive?: (v: number) => number;
  /** How `derive` reads, for the plot's subtitle. */
  readonly formula?: string;
}[] = [
  { label: "reward (score mean)", names: ["critic/score/mean", "critic/rewards/mean", "eval/score/mean"] },
  { label: "response length (mean tokens)", names: ["response_length/mean"] },
  { label: "response clip ratio", names: ["response_length/clip_ratio"] },
  { label: "pass rate", names: ["reward_extra_info/pass_rate/mean", "critic/pass_rate/mean", "eval/pass_rate"] },
  // verl counts turns as user + assistant turns + 1; tool calls = (num_turns - 2) / 2.
  { label: "tool calls per response", names: ["num_turns/mean"], derive: (v) => (v - 2) / 2, formula: "(n − 2) / 2" },
  { label: "step time (s)", names: ["timing_s/step"] },
  // The job's sandbox during each step (rlpipe_health.py, a second stream beside verl's): when rewards were starved.
  // Failures are infra errors + overload answers + timeouts.
  { label: "sandbox requests per step", names: ["sandbox/requests"] },
  { label: "sandbox failures per step", names: ["sandbox/failures"] },
  { label: "sandbox latency p50 (ms)", names: ["sandbox/latency_p50_ms"] },
  { label: "sandbox latency p99 (ms)", names: ["sandbox/latency_p99_ms"] },
];

/** One main series of a run as printed and plotted: derived values already applied. */
export interface MainSeries {
  readonly label: string;
  /** The verl metric it comes from. */
  readonly metric: string;
  readonly formula?: string;
  readonly points: readonly (readonly [number, number])[];
}

/** The main series present in a run (in MAIN_SERIES order), then validation accuracy (val-core/…) by name. */
export function mainSeries(series: Series): MainSeries[] {
  const out: MainSeries[] = [];
  for (const m of MAIN_SERIES) {
    const name = m.names.find((n) => (series.get(n)?.length ?? 0) > 0);
    if (name === undefined) continue;
    const derive = m.derive;
    const pts = series.get(name)!;
    out.push({ label: m.label, metric: name, ...(m.formula === undefined ? {} : { formula: m.formula }), points: derive === undefined ? pts : pts.map(([s, v]) => [s, derive(v)] as const) });
  }
  for (const [name, pts] of [...series.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (name.startsWith("val-core/") && pts.length > 0) out.push({ label: name, metric: name, points: pts });
  }
  return out;
}

export interface LatestValue { readonly label: string; readonly metric: string; readonly step: number; readonly value: number }

/** The last point of each main series: what `rlpipe metrics` prints, and the last point of each plotted line. */
export function latestValues(series: Series): LatestValue[] {
  return mainSeries(series).map((m) => {
    const [step, value] = m.points[m.points.length - 1]!;
    return { label: m.label, metric: m.metric, step, value };
  });
}

export interface RunSeries { readonly run: string; readonly series: Series }

/**
 * The panels of a metrics plot for one or more runs: by default one per main series (derived values, titled by
 * label, the metric names under it), or one per raw metric named in `names`. Each run present in a panel is a
 * line in it.
 */
export function metricsPanels(runs: readonly RunSeries[], names?: readonly string[]): ChartPanel[] {
  if (names !== undefined) {
    return names.map((name) => ({
      title: name,
      lines: runs.filter((r) => (r.series.get(name)?.length ?? 0) > 0).map((r) => ({ run: r.run, points: r.series.get(name)! })),
    }));
  }
  const byLabel = new Map<string, { metrics: string[]; formula?: string; lines: ChartLine[] }>();
  const order = new Map<string, number>(MAIN_SERIES.map((m, i) => [m.label, i]));
  for (const r of runs) {
    for (const m of mainSeries(r.series)) {
      const p = byLabel.get(m.label) ?? { metrics: [], lines: [], ...(m.formula === undefined ? {} : { formula: m.formula }) };
      if (!p.metrics.includes(m.metric)) p.metrics.push(m.metric);
      p.lines.push({ run: r.run, points: m.points });
      byLabel.set(m.label, p);
    }
  }
  return [...byLabel.entries()]
    .sort(([a], [b]) => (order.get(a) ?? MAIN_SERIES.length) - (order.get(b) ?? MAIN_SERIES.length) || (a < b ? -1 : a > b ? 1 : 0))
    .map(([label, p]) => ({
      title: label,
      // Under a derived series, where it comes from; under a main series, which verl metric was found.
      ...(label.startsWith("val-core/") ? {} : { subtitle: p.formula === undefined ? p.metrics.join(", ") : `${p.metrics.join(", ")} → ${p.formula}` }),
      lines: p.lines,
    }));
}

export type PlotFormat = "svg" | "png";

/** The plot format a file name asks for, or undefined for an extension rlpipe does not write. */
export function plotFormat(file: string): PlotFormat | undefined {
  const m = /\.(svg|png)$/i.exec(file);
  return m === null ? undefined : (m[1]!.toLowerCase() as PlotFormat);
}

export interface PlotOptions {
  readonly title: string;
  /** Raw metric names to plot instead of the main series. */
  readonly names?: readonly string[];
  /** EMA weight in [0, 1). */
  readonly smoothing?: number;
}

/** Device pixels per layout pixel in a PNG: sharp text and lines on high-density screens. */
export const PNG_SCALE = 2;

/** The chart of one or more runs' metrics. */
export function metricsChart(runs: readonly RunSeries[], opts: PlotOptions): ChartLayout {
  return layoutChart({ title: opts.title, runs: runs.map((r) => r.run), panels: metricsPanels(runs, opts.names), ...(opts.smoothing === undefined ? {} : { smoothing: opts.smoothing }) });
}

/** The plot file's bytes: SVG text or a PNG. Pure and deterministic: the same metrics give the same bytes. */
export function renderPlot(runs: readonly RunSeries[], format: PlotFormat, opts: PlotOptions): Uint8Array {
  const { scene } = metricsChart(runs, opts);
  return format === "svg" ? new TextEncoder().encode(sceneToSvg(scene)) : encodePng(rasterize(scene, PNG_SCALE));
}

/** One run's panels as SVG text (`names`: raw metric names). */
export function renderSvg(series: Series, names: readonly string[], title: string): string {
  return sceneToSvg(layoutChart({ title, runs: [title], panels: metricsPanels([{ run: title, series }], names) }).scene);
}
