// The layout of a metrics chart: small panels (two columns) sharing one step axis, round ticks with light grid
// lines, one colour per run with a legend when several runs are overlaid, and optional EMA smoothing drawn over
// the faint raw series — the way TensorBoard and W&B show training curves.
import { measureText } from "./font.js";
import type { Color, Point, Shape, Scene } from "./scene.js";
import { emaSmooth } from "./smooth.js";
import { type Ticks, formatTicks, niceTicks } from "./ticks.js";

export interface ChartLine {
  readonly run: string;
  /** [step, value] in step order. */
  readonly points: readonly Point[];
}

export interface ChartPanel {
  readonly title: string;
  /** Where the values come from (metric names, a formula), shown small under the title. */
  readonly subtitle?: string;
  readonly lines: readonly ChartLine[];
}

export interface ChartSpec {
  readonly title: string;
  /** Runs in legend order; a line's colour follows its run's position here. */
  readonly runs: readonly string[];
  readonly panels: readonly ChartPanel[];
  /** EMA weight in [0, 1); 0 or absent draws the raw values only. */
  readonly smoothing?: number;
  readonly xLabel?: string;
}

export interface Box { readonly x: number; readonly y: number; readonly w: number; readonly h: number }

export interface ChartLayout {
  readonly scene: Scene;
  /** Each panel's plotting area (inside the axes), in the scene's pixels. */
  readonly panels: readonly { readonly title: string; readonly plot: Box }[];
  readonly colors: ReadonlyMap<string, Color>;
}

/** Distinct, colour-blind-tolerable line colours (the common "category10" set), reused when runs outnumber it. */
export const RUN_COLORS: readonly Color[] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/** Text, secondary text, grid and axis colours: every chart drawn from core/plot uses the same ones. */
export const INK = "#222222";
export const MUTED = "#6b6b6b";
export const GRID = "#e6e6e6";
export const AXIS = "#b4b4b4";
const CARD = "#dddddd";

const PAD = 20;
const PANEL_W = 440;
const PANEL_H = 250;
const GAP = 18;
const TICK_SIZE = 10;
/** Lines with at most this many points get a dot on each. */
const SPARSE_POINTS = 30;
/** Baseline offset that centres digits of this size on a y position. */
const centreBaseline = (size: number) => 0.35 * size;

/** Cut `text` with an ellipsis to fit `width` pixels. */
function fit(text: string, size: number, width: number, bold = false): string {
  if (measureText(text, size, bold) <= width) return text;
  let t = text;
  while (t.length > 1 && measureText(`${t}…`, size, bold) > width) t = t.slice(0, -1);
  return `${t}…`;
}

/** A crisp 1-pixel line sits on a pixel centre. */
const snap = (v: number) => Math.round(v - 0.5) + 0.5;

export function layoutChart(spec: ChartSpec): ChartLayout {
  const smoothing = spec.smoothing ?? 0;
  const colors = new Map<string, Color>(spec.runs.map((r, i) => [r, RUN_COLORS[i % RUN_COLORS.length]!]));
  const cols = spec.panels.length <= 1 ? 1 : 2;
  const width = PAD * 2 + cols * PANEL_W + (cols - 1) * GAP;
  const shapes: Shape[] = [];

  // ---- header: title, what is drawn, the legend
  let y = PAD + 16;
  shapes.push({ kind: "text", x: PAD, y, text: fit(spec.title, 16, width - 2 * PAD, true), size: 16, color: INK, anchor: "start", bold: true });
  const notes: string[] = [];
  if (smoothing > 0) notes.push(`smoothed: EMA weight ${smoothing} (raw values faint)`);
  if (notes.length > 0) {
    y += 18;
    shapes.push({ kind: "text", x: PAD, y, text: notes.join("; "), size: 11, color: MUTED, anchor: "start" });
  }
  if (spec.runs.length > 1) {
    y += 22;
    let x = PAD;
    for (const run of spec.runs) {
      const label = fit(run, 12, width - 2 * PAD - 24);
      const w = 24 + measureText(label, 12) + 20;
      if (x > PAD && x + w > width - PAD) { x = PAD; y += 20; }
      shapes.push({ kind: "line", points: [[x + 1, y - 4], [x + 17, y - 4]], color: colors.get(run)!, width: 3, role: "legend" });
      shapes.push({ kind: "text", x: x + 24, y, text: label, size: 12, color: INK, anchor: "start" });
      x += w;
    }
  }
  const top = y + 16;

  // ---- one step axis for every panel, so panels line up and runs compare at the same step
  const allSteps = spec.panels.flatMap((p) => p.lines.flatMap((l) => l.points.map(([s]) => s)));
  const xt = allSteps.length === 0 ? niceTicks(0, 1, { integer: true }) : niceTicks(Math.min(...allSteps), Math.max(...allSteps), { integer: true });
  const xLabels = formatTicks(xt);

  const rows = Math.ceil(spec.panels.length / cols);
  const height = top + rows * PANEL_H + Math.max(0, rows - 1) * GAP + PAD;
  const panels: { title: string; plot: Box }[] = [];

  spec.panels.forEach((panel, i) => {
    const px = PAD + (i % cols) * (PANEL_W + GAP);
    const py = top + Math.floor(i / cols) * (PANEL_H + GAP);
    shapes.push({ kind: "rect", x: px + 0.5, y: py + 0.5, w: PANEL_W - 1, h: PANEL_H - 1, fill: "#ffffff", stroke: CARD, strokeWidth: 1 });
    shapes.push({ kind: "text", x: px + 12, y: py + 21, text: fit(panel.title, 13, PANEL_W - 24, true), size: 13, color: INK, anchor: "start", bold: true });
    if (panel.subtitle !== undefined) shapes.push({ kind: "text", x: px + 12, y: py + 36, text: fit(panel.subtitle, 10, PANEL_W - 24), size: 10, color: MUTED, anchor: "start" });

    const values = panel.lines.flatMap((l) => l.points.map(([, v]) => v));
    const yt: Ticks = values.length === 0 ? niceTicks(0, 1) : niceTicks(Math.min(...values), Math.max(...values), { min: 4, max: 6 });
    const yLabels = formatTicks(yt);
    const labelW = Math.max(...yLabels.map((l) => measureText(l, TICK_SIZE)));
    const plot: Box = { x: px + 14 + labelW + 6, y: py + 48, w: 0, h: 0 };
    const right = px + PANEL_W - 18;
    const bottom = py + PANEL_H - 38;
    const box: Box = { ...plot, w: right - plot.x, h: bottom - plot.y };
    panels.push({ title: panel.title, plot: box });
    const sx = (s: number) => box.x + ((s - xt.lo) / (xt.hi - xt.lo)) * box.w;
    const sy = (v: number) => box.y + box.h - ((v - yt.lo) / (yt.hi - yt.lo)) * box.h;

    // grid and tick labels
    yt.values.forEach((v, k) => {
      const gy = snap(sy(v));
      shapes.push({ kind: "line", points: [[box.x, gy], [box.x + box.w, gy]], color: k === 0 ? AXIS : GRID, width: 1, role: k === 0 ? "axis" : "grid" });
      shapes.push({ kind: "text", x: box.x - 7, y: sy(v) + centreBaseline(TICK_SIZE), text: yLabels[k]!, size: TICK_SIZE, color: MUTED, anchor: "end" });
    });
    xt.values.forEach((s, k) => {
      const gx = snap(sx(s));
      shapes.push({ kind: "line", points: [[gx, box.y], [gx, box.y + box.h]], color: GRID, width: 1, role: "grid" });
      shapes.push({ kind: "line", points: [[gx, box.y + box.h], [gx, box.y + box.h + 4]], color: AXIS, width: 1, role: "axis" });
      shapes.push({ kind: "text", x: sx(s), y: box.y + box.h + 16, text: xLabels[k]!, size: TICK_SIZE, color: MUTED, anchor: "middle" });
    });
    shapes.push({ kind: "text", x: box.x + box.w / 2, y: box.y + box.h + 31, text: spec.xLabel ?? "step", size: TICK_SIZE, color: MUTED, anchor: "middle" });

    // the series: faint raw lines under the smoothed ones, runs in legend order
    const toPx = (pts: readonly Point[]): Point[] => pts.map(([s, v]) => [sx(s), sy(v)] as const);
    const lines = [...panel.lines].sort((a, b) => spec.runs.indexOf(a.run) - spec.runs.indexOf(b.run));
    if (smoothing > 0) {
      for (const l of lines) if (l.points.length > 0) shapes.push({ kind: "line", points: toPx(l.points), color: colors.get(l.run) ?? INK, width: l.points.length === 1 ? 5 : 1.25, opacity: 0.28, role: "series" });
      for (const l of lines) if (l.points.length > 1) shapes.push({ kind: "line", points: toPx(emaSmooth(l.points, smoothing)), color: colors.get(l.run) ?? INK, width: 2, role: "series" });
    } else {
      for (const l of lines) if (l.points.length > 0) shapes.push({ kind: "line", points: toPx(l.points), color: colors.get(l.run) ?? INK, width: l.points.length === 1 ? 5 : 1.6, role: "series" });
    }
    // Sparse series (validation every N steps): a dot on each value, so a reader sees where the data is.
    for (const l of lines) {
      if (l.points.length < 2 || l.points.length > SPARSE_POINTS) continue;
      for (const p of toPx(l.points)) shapes.push({ kind: "line", points: [p], color: colors.get(l.run) ?? INK, width: 4.5, ...(smoothing > 0 ? { opacity: 0.5 } : {}), role: "series" });
    }
  });

  return { scene: { width, height, background: "#ffffff", shapes }, panels, colors };
}
