// Training metrics from verl's `file` logger (JSON lines {"step": N, "data": {...}}): merging the chunks a
// run uploaded, the latest values of the main series, and an SVG plot.

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
export const MAIN_SERIES: readonly { readonly label: string; readonly names: readonly string[]; readonly derive?: (v: number) => number }[] = [
  { label: "reward (score mean)", names: ["critic/score/mean", "critic/rewards/mean", "eval/score/mean"] },
  { label: "response length (mean tokens)", names: ["response_length/mean"] },
  { label: "response clip ratio", names: ["response_length/clip_ratio"] },
  { label: "pass rate", names: ["reward_extra_info/pass_rate/mean", "critic/pass_rate/mean", "eval/pass_rate"] },
  // verl counts turns as user + assistant turns + 1; tool calls = (num_turns - 2) / 2.
  { label: "tool calls per response", names: ["num_turns/mean"], derive: (v) => (v - 2) / 2 },
  { label: "step time (s)", names: ["timing_s/step"] },
];

export interface LatestValue { readonly label: string; readonly metric: string; readonly step: number; readonly value: number }

export function latestValues(series: Series): LatestValue[] {
  const out: LatestValue[] = [];
  for (const m of MAIN_SERIES) {
    const name = m.names.find((n) => (series.get(n)?.length ?? 0) > 0);
    if (name === undefined) continue;
    const pts = series.get(name)!;
    const [step, v] = pts[pts.length - 1]!;
    out.push({ label: m.label, metric: name, step, value: m.derive === undefined ? v : m.derive(v) });
  }
  // Validation accuracy (val-core/<data_source>/…) when present.
  for (const [name, pts] of [...series.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (name.startsWith("val-core/") && pts.length > 0) {
      const [step, value] = pts[pts.length - 1]!;
      out.push({ label: name, metric: name, step, value });
    }
  }
  return out;
}

function esc(s: string): string {
  return s.replace(/[<>&"]/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;" })[c]!);
}

function fmt(v: number): string {
  const a = Math.abs(v);
  return a !== 0 && (a >= 1e5 || a < 1e-3) ? v.toExponential(2) : Number(v.toPrecision(4)).toString();
}

/** One small panel per series (shared step axis), as a standalone SVG. Deterministic output. */
export function renderSvg(series: Series, names: readonly string[], title: string): string {
  const W = 640;
  const PH = 180;
  const M = { l: 64, r: 16, t: 28, b: 28 };
  const panels = names.filter((n) => (series.get(n)?.length ?? 0) > 0);
  const H = 40 + panels.length * (PH + 24);
  const allSteps = panels.flatMap((n) => series.get(n)!.map(([s]) => s));
  const x0 = Math.min(...allSteps);
  const x1 = Math.max(...allSteps);
  const sx = (s: number) => M.l + ((s - x0) / Math.max(1e-9, x1 - x0)) * (W - M.l - M.r);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${W / 2}" y="20" text-anchor="middle" font-size="14">${esc(title)}</text>`,
  ];
  panels.forEach((name, i) => {
    const pts = series.get(name)!;
    const top = 36 + i * (PH + 24);
    const ys = pts.map(([, v]) => v);
    let y0 = Math.min(...ys);
    let y1 = Math.max(...ys);
    if (y0 === y1) { y0 -= 1; y1 += 1; }
    const sy = (v: number) => top + M.t + (1 - (v - y0) / (y1 - y0)) * (PH - M.t - M.b);
    parts.push(`<text x="${M.l}" y="${top + 16}" font-size="12" font-weight="bold">${esc(name)}</text>`);
    parts.push(`<rect x="${M.l}" y="${top + M.t}" width="${W - M.l - M.r}" height="${PH - M.t - M.b}" fill="none" stroke="#ccc"/>`);
    for (const v of [y0, (y0 + y1) / 2, y1]) parts.push(`<text x="${M.l - 6}" y="${sy(v).toFixed(1)}" text-anchor="end" dominant-baseline="middle">${fmt(v)}</text>`);
    for (const s of [x0, x1]) parts.push(`<text x="${sx(s).toFixed(1)}" y="${top + PH - 8}" text-anchor="middle">${s}</text>`);
    const d = pts.map(([s, v], k) => `${k === 0 ? "M" : "L"}${sx(s).toFixed(1)},${sy(v).toFixed(1)}`).join(" ");
    parts.push(`<path d="${d}" fill="none" stroke="#1f77b4" stroke-width="1.5"/>`);
    if (pts.length === 1) parts.push(`<circle cx="${sx(pts[0]![0]).toFixed(1)}" cy="${sy(pts[0]![1]).toFixed(1)}" r="3" fill="#1f77b4"/>`);
  });
  parts.push(`<text x="${W / 2}" y="${H - 6}" text-anchor="middle" fill="#666">training step</text>`, "</svg>", "");
  return parts.join("\n");
}
