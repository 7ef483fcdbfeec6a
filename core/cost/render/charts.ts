// The cost report's charts as plot scenes (core/plot): the breakdown of the chosen candidate by line, the
// candidates side by side, and the cumulative cost over the run's steps — each a bar or line at the expected
// value with its low–high range drawn around it, in CNY. The HTML report inlines them as SVG.
import { AXIS, GRID, INK, MUTED, RUN_COLORS } from "../../plot/chart.js";
import { measureText } from "../../plot/font.js";
import type { Color, Point, Scene, Shape } from "../../plot/scene.js";
import { sceneToSvg } from "../../plot/svg.js";
import { formatTicks, niceTicks } from "../../plot/ticks.js";
import type { CostReport, Range } from "../types.js";
import { convert, formatMoney, formatQuantity } from "./format.js";
import { type ReportView, SUNK_UNIT_PRICE } from "./view.js";

const WARN = "#b45309";
const PAD = 16;
const TICK = 10;

/** One colour per cost component, the same in every chart and in the HTML legend. */
export const COMPONENT_COLORS: Readonly<Record<string, Color>> = {
  compute: RUN_COLORS[0]!, sandbox: RUN_COLORS[1]!, functions: RUN_COLORS[2]!, storage: RUN_COLORS[4]!, egress: RUN_COLORS[5]!,
};
const CHOSEN = RUN_COLORS[0]!;
const OTHER = "#9fb8cf";

export interface BarRow {
  readonly label: string;
  /** In CNY; undefined: no price (the row says `missing`). */
  readonly value?: Range;
  readonly color: Color;
  readonly bold?: boolean;
  readonly missing?: string;
  /** No bar because another line or a prepaid group pays for it: said in muted text, not as a warning. */
  readonly included?: string;
}

/**
 * The browser draws these charts' text in its own sans-serif face, wider than the plot font's metrics (and the plot
 * font has no glyph for ▸ or CJK): text is fitted as if this much wider, so it stays inside its box.
 */
const BROWSER_TEXT_SLACK = 1.2;

const textWidth = (t: string, size: number, bold: boolean) => measureText(t, size, bold) * BROWSER_TEXT_SLACK;

/** A word wider than the box, split after its punctuation (a flavor id at its dots) or, failing that, anywhere. */
function splitWord(word: string, size: number, width: number, bold: boolean): string[] {
  const pieces = word.split(/(?<=[./_:-])/);
  const out: string[] = [];
  let cur = "";
  for (const p of pieces) {
    if (cur !== "" && textWidth(cur + p, size, bold) > width) { out.push(cur); cur = ""; }
    if (textWidth(p, size, bold) <= width) { cur += p; continue; }
    for (const ch of p) {
      if (cur !== "" && textWidth(cur + ch, size, bold) > width) { out.push(cur); cur = ""; }
      cur += ch;
    }
  }
  if (cur !== "") out.push(cur);
  return out;
}

/** `text` in lines no wider than `width` (as the browser draws it): wrapped at spaces, never cut. */
export function wrapText(text: string, size: number, width: number, bold = false): string[] {
  const lines: string[] = [];
  let cur = "";
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    const next = cur === "" ? word : `${cur} ${word}`;
    if (textWidth(next, size, bold) <= width) { cur = next; continue; }
    if (cur !== "") lines.push(cur);
    if (textWidth(word, size, bold) <= width) { cur = word; continue; }
    const parts = splitWord(word, size, width, bold);
    lines.push(...parts.slice(0, -1));
    cur = parts[parts.length - 1] ?? "";
  }
  if (cur !== "") lines.push(cur);
  return lines.length === 0 ? [""] : lines;
}

/** Wrapped text as one text shape per line, the first baseline at y; returns the shapes and the height used. */
function textBlock(spec: { x: number; y: number; text: string; size: number; width: number; color: Color; anchor: "start" | "middle" | "end"; bold?: boolean; lineHeight?: number }): { shapes: Shape[]; height: number } {
  const lh = spec.lineHeight ?? Math.round(spec.size * 1.3);
  const lines = wrapText(spec.text, spec.size, spec.width, spec.bold === true);
  return {
    shapes: lines.map((t, i) => ({ kind: "text", x: spec.x, y: spec.y + i * lh, text: t, size: spec.size, color: spec.color, anchor: spec.anchor, ...(spec.bold === true ? { bold: true } : {}) })),
    height: lines.length * lh,
  };
}

const snap = (v: number) => Math.round(v - 0.5) + 0.5;

/** Money tick labels in CNY: ¥0, ¥500, ¥1k, ¥1.5k … */
function moneyTicks(max: number): { values: readonly number[]; labels: string[]; hi: number } {
  const t = niceTicks(0, max > 0 ? max : 1, { min: 4, max: 6 });
  // Thousands separated as everywhere else in the report (¥2,000); formatTicks abbreviates from 10,000 (¥20k).
  return { values: t.values, labels: formatTicks(t).map((l, i) => (t.values[i] === 0 ? "¥0" : `¥${l.replace(/^(\d+)(\d{3})(?=$|\.)/, "$1,$2")}`)), hi: t.hi };
}

/** Horizontal bars at the expected value with a low–high whisker, one row each, on a shared money axis. Labels wrap. */
export function barChart(spec: { readonly title: string; readonly subtitle: string; readonly rows: readonly BarRow[]; readonly width?: number }): Scene {
  const width = spec.width ?? 560;
  const labelW = 200;
  const valueW = 100;
  const lineH = 13;
  const shapes: Shape[] = [];
  const title = textBlock({ x: PAD, y: PAD + 14, text: spec.title, size: 14, width: width - 2 * PAD, color: INK, anchor: "start", bold: true, lineHeight: 18 });
  shapes.push(...title.shapes);
  const subtitle = textBlock({ x: PAD, y: PAD + 14 + title.height - 1, text: spec.subtitle, size: 10, width: width - 2 * PAD, color: MUTED, anchor: "start" });
  shapes.push(...subtitle.shapes);
  const top = PAD + title.height + subtitle.height + 14;
  const plotX = PAD + labelW;
  const plotW = width - plotX - valueW - PAD;
  const max = Math.max(0, ...spec.rows.map((r) => r.value?.high ?? 0));
  const axis = moneyTicks(max);
  const sx = (v: number) => plotX + (v / axis.hi) * plotW;
  // Each row as tall as its wrapped label (or its wrapped note), at least 30 px.
  const laid = spec.rows.map((r) => {
    const label = wrapText(r.label, 11, labelW - 12, r.bold === true);
    const note = r.value === undefined ? wrapText(r.included ?? r.missing ?? "rate needed", 11, width - plotX - PAD - 6, r.included === undefined) : [];
    return { r, label, note, h: Math.max(30, Math.max(label.length, note.length) * lineH + 12) };
  });
  const bottom = top + (laid.length === 0 ? 30 : laid.reduce((t, l) => t + l.h, 0));
  axis.values.forEach((v, i) => {
    const x = snap(sx(v));
    shapes.push({ kind: "line", points: [[x, top - 4], [x, bottom]], color: i === 0 ? AXIS : GRID, width: 1, role: i === 0 ? "axis" : "grid" });
    shapes.push({ kind: "text", x: sx(v), y: bottom + 14, text: axis.labels[i]!, size: TICK, color: MUTED, anchor: "middle" });
  });
  let y0 = top;
  for (const { r, label, note, h } of laid) {
    const cy = y0 + h / 2;
    y0 += h;
    // Lines centred on the row: the middle line's baseline 4 px below the centre.
    const first = (n: number) => cy + 4 - ((n - 1) * lineH) / 2;
    label.forEach((t, i) => shapes.push({ kind: "text", x: plotX - 8, y: first(label.length) + i * lineH, text: t, size: 11, color: INK, anchor: "end", ...(r.bold === true ? { bold: true } : {}) }));
    if (r.value === undefined) {
      const included = r.included !== undefined;
      note.forEach((t, i) => shapes.push({ kind: "text", x: plotX + 6, y: first(note.length) + i * lineH, text: t, size: 11, color: included ? MUTED : WARN, anchor: "start", ...(included ? {} : { bold: true }) }));
      continue;
    }
    const { low, expected, high } = r.value;
    const barH = 14;
    shapes.push({ kind: "rect", x: plotX, y: cy - barH / 2, w: Math.max(1, sx(expected) - plotX), h: barH, fill: r.color });
    if (high > low) {
      shapes.push({ kind: "line", points: [[sx(low), cy], [sx(high), cy]], color: INK, width: 1.5, role: "series" });
      shapes.push({ kind: "line", points: [[sx(low), cy - 5], [sx(low), cy + 5]], color: INK, width: 1.5, role: "series" });
      shapes.push({ kind: "line", points: [[sx(high), cy - 5], [sx(high), cy + 5]], color: INK, width: 1.5, role: "series" });
    }
    shapes.push({ kind: "text", x: width - PAD, y: cy + 4, text: formatMoney(expected, "CNY"), size: 11, color: INK, anchor: "end", bold: true });
  }
  return { width, height: bottom + 30, background: "#ffffff", shapes };
}

/** The chosen candidate's top-level lines, by component colour. */
export function breakdownChart(view: ReportView): Scene {
  const rows: BarRow[] = view.breakdown.filter((b) => b.depth === 0).map((b) => ({
    label: b.label, color: COMPONENT_COLORS[b.component] ?? RUN_COLORS[7]!,
    // No cost: the line (or a line under it) needs a rate, or another line pays for it.
    ...(b.costCNY !== undefined ? { value: b.costCNY } : b.includedIn !== undefined ? { included: `included in ${b.includedIn}` } : { missing: "rate needed" }),
  }));
  return barChart({ title: "Cost breakdown (chosen)", subtitle: "CNY; bar: expected, whisker: low–high", rows });
}

/** Every candidate: the chosen one stands out. */
export function providersChart(view: ReportView): Scene {
  const rows: BarRow[] = view.candidates.map((c) => ({
    label: `${c.chosen ? "▸ " : ""}${c.provider}${c.flavor === "—" ? "" : ` ${c.flavor}`}`, color: c.chosen ? CHOSEN : OTHER, bold: c.chosen,
    ...(c.includedIn !== undefined ? { included: `${SUNK_UNIT_PRICE}: ${formatMoney(0, "CNY")} marginal` } : c.expectedCNY === undefined ? { missing: "rate needed" } : { value: c.expectedCNY }),
  }));
  return barChart({ title: "Candidates side by side", subtitle: "training compute, CNY; bar: expected, whisker: low–high; ▸ chosen", rows });
}

/** Width of the column right of the steps that shows what is billed after the run. */
const AFTER_RUN_W = 170;

/** Whether a chart has anything to draw: a bar with a price above ¥0, or a cumulative curve that leaves ¥0. */
export function chartsToDraw(report: CostReport, view: ReportView): { readonly breakdown: boolean; readonly providers: boolean; readonly cumulative: boolean } {
  return {
    breakdown: view.breakdown.some((b) => b.depth === 0 && (b.costCNY?.high ?? 0) > 0),
    providers: view.candidates.some((c) => c.includedIn === undefined && (c.expectedCNY?.high ?? 0) > 0),
    cumulative: !view.nothingPriced && report.cumulative.some((p) => p.cost.high > 0),
  };
}

/**
 * Cumulative cost (CNY) over the run's steps: the expected line inside its low–high band; the budget cap when set.
 * The step axis is the run's steps as the page states them (view.steps: every stage's, summed), each stage marked.
 * What is billed after the run (storage kept, the final export) stands in its own column to the right, as a bar from
 * the run's end to the total with the total's low–high whisker — not as a jump at the last step.
 */
export function cumulativeChart(report: CostReport, view: ReportView): Scene {
  const width = 1100;
  const shapes: Shape[] = [];
  const raw = report.cumulative.filter((p) => p.afterRun !== true).sort((a, b) => a.step - b.step);
  const after = report.cumulative.find((p) => p.afterRun === true);
  // The series ends where the page says the run ends: if the report's run length counts steps differently from the
  // series (runLength filled apart from it), the series is stretched onto the stated count rather than disagreeing.
  const total = view.steps.total;
  const end = raw.length === 0 ? 0 : raw[raw.length - 1]!.step;
  const pts = end > 0 && total > 0 && end !== total ? raw.map((p) => ({ ...p, step: Math.round((p.step * total) / end) })) : raw;
  const title = textBlock({ x: PAD, y: PAD + 14, text: "Cumulative cost over the run", size: 14, width: width - 2 * PAD, color: INK, anchor: "start", bold: true, lineHeight: 18 });
  const subtitleText = `CNY by training step over ${view.steps.text}, as incurred; line: expected, band: low–high${after === undefined ? "" : "; right: storage kept and the final export, billed after the run"}`;
  const subtitle = textBlock({ x: PAD, y: PAD + 14 + title.height - 1, text: subtitleText, size: 10, width: width - 2 * PAD, color: MUTED, anchor: "start" });
  shapes.push(...title.shapes, ...subtitle.shapes);
  const plotTop = PAD + title.height + subtitle.height + 14;
  const height = plotTop + 254;
  const cap = view.budget === undefined ? undefined : convert(view.budget.cap, view.budget.currency, "CNY", report.fx);
  const maxY = Math.max(0, ...report.cumulative.map((p) => p.cost.high), cap ?? 0);
  const maxX = Math.max(1, total, ...pts.map((p) => p.step));
  const yt = moneyTicks(maxY);
  const xt = niceTicks(0, maxX, { integer: true });
  const xLabels = formatTicks(xt);
  const labelW = Math.max(...yt.labels.map((l) => measureText(l, TICK)));
  const plot = { x: PAD + labelW + 10, y: plotTop, w: 0, h: height - 40 - plotTop };
  plot.w = width - PAD - 10 - plot.x - (after === undefined ? 0 : AFTER_RUN_W);
  const sx = (s: number) => plot.x + ((s - xt.lo) / (xt.hi - xt.lo)) * plot.w;
  const sy = (v: number) => plot.y + plot.h - (v / yt.hi) * plot.h;
  yt.values.forEach((v, i) => {
    const y = snap(sy(v));
    shapes.push({ kind: "line", points: [[plot.x, y], [plot.x + plot.w, y]], color: i === 0 ? AXIS : GRID, width: 1, role: i === 0 ? "axis" : "grid" });
    shapes.push({ kind: "text", x: plot.x - 7, y: sy(v) + 3.5, text: yt.labels[i]!, size: TICK, color: MUTED, anchor: "end" });
  });
  xt.values.forEach((s, i) => {
    const x = snap(sx(s));
    shapes.push({ kind: "line", points: [[x, plot.y], [x, plot.y + plot.h]], color: GRID, width: 1, role: "grid" });
    shapes.push({ kind: "text", x: sx(s), y: plot.y + plot.h + 15, text: xLabels[i]!, size: TICK, color: MUTED, anchor: "middle" });
  });
  shapes.push({ kind: "text", x: plot.x + plot.w / 2, y: plot.y + plot.h + 30, text: "step", size: TICK, color: MUTED, anchor: "middle" });
  // Stages one after another: a boundary at each stage's end and its name over its span, when there are several.
  if (view.steps.stages.length > 1) {
    let offset = 0;
    for (const st of view.steps.stages) {
      const x0 = sx(offset);
      const x1 = sx(offset + st.expected);
      offset += st.expected;
      if (offset < total) shapes.push({ kind: "line", points: [[snap(x1), plot.y], [snap(x1), plot.y + plot.h]], color: MUTED, width: 1, opacity: 0.6, role: "grid" });
      const name = `${st.stage} ${formatQuantity(st.expected)}`;
      if (x1 - x0 >= textWidth(name, TICK, false) + 8) shapes.push({ kind: "text", x: (x0 + x1) / 2, y: plot.y + 12, text: name, size: TICK, color: MUTED, anchor: "middle" });
    }
  }
  if (pts.length > 0) {
    const withOrigin = pts[0]!.step > 0 ? [{ step: 0, cost: { low: 0, expected: 0, high: 0 } }, ...pts] : pts;
    const upper: Point[] = withOrigin.map((p): Point => [sx(p.step), sy(p.cost.high)]);
    const lower: Point[] = withOrigin.map((p): Point => [sx(p.step), sy(p.cost.low)]).reverse();
    shapes.push({ kind: "area", points: [...upper, ...lower], fill: CHOSEN, opacity: 0.18 });
    shapes.push({ kind: "line", points: withOrigin.map((p) => [sx(p.step), sy(p.cost.expected)]), color: CHOSEN, width: 2, role: "series" });
    const last = withOrigin[withOrigin.length - 1]!;
    const endText = `${formatMoney(last.cost.expected, "CNY")} at step ${formatQuantity(last.step)}${after === undefined ? "" : ", the end of the run"}`;
    // Above the line's end, or under it when the end is at the top of the plot.
    const endY = sy(last.cost.expected) - 8 < plot.y + 24 ? sy(last.cost.expected) + 18 : sy(last.cost.expected) - 8;
    shapes.push({ kind: "text", x: sx(last.step) - 4, y: endY, text: endText, size: 11, color: INK, anchor: "end", bold: true });
    if (after !== undefined) {
      const x0 = plot.x + plot.w + 14;
      const w = AFTER_RUN_W - 24;
      const cx = x0 + 24;
      shapes.push({ kind: "rect", x: x0, y: plot.y, w, h: plot.h, fill: "#f6f8fa" });
      shapes.push({ kind: "line", points: [[snap(x0), plot.y], [snap(x0), plot.y + plot.h]], color: AXIS, width: 1, role: "axis" });
      shapes.push({ kind: "text", x: x0 + w / 2, y: plot.y + plot.h + 15, text: "after the run", size: TICK, color: MUTED, anchor: "middle" });
      // A bar from the run's end to the total: the storage colour, since retention is most of it.
      const top = sy(after.cost.expected);
      const base = sy(last.cost.expected);
      shapes.push({ kind: "rect", x: cx - 14, y: top, w: 28, h: Math.max(1, base - top), fill: COMPONENT_COLORS["storage"]! });
      shapes.push({ kind: "line", points: [[sx(last.step), base], [cx - 14, base]], color: CHOSEN, width: 1, opacity: 0.6, role: "series" });
      if (after.cost.high > after.cost.low) {
        shapes.push({ kind: "line", points: [[cx, sy(after.cost.low)], [cx, sy(after.cost.high)]], color: INK, width: 1.5, role: "series" });
        shapes.push({ kind: "line", points: [[cx - 5, sy(after.cost.high)], [cx + 5, sy(after.cost.high)]], color: INK, width: 1.5, role: "series" });
        shapes.push({ kind: "line", points: [[cx - 5, sy(after.cost.low)], [cx + 5, sy(after.cost.low)]], color: INK, width: 1.5, role: "series" });
      }
      // Labels right of the bar and its whisker, at the total's height (kept inside the plot), wrapped to the column.
      const labelX = cx + 22;
      const colW = x0 + w - labelX - 4;
      const labelY = Math.min(Math.max(plot.y + 12, top + 4), plot.y + plot.h - 30);
      const totalText = textBlock({ x: labelX, y: labelY, text: `${formatMoney(after.cost.expected, "CNY")} total`, size: 11, width: colW, color: INK, anchor: "start", bold: true });
      const plus = textBlock({ x: labelX, y: labelY + totalText.height, text: `+${formatMoney(after.cost.expected - last.cost.expected, "CNY")} after`, size: 10, width: colW, color: MUTED, anchor: "start" });
      shapes.push(...totalText.shapes, ...plus.shapes);
    }
  }
  if (cap !== undefined) {
    const y = snap(sy(cap));
    shapes.push({ kind: "line", points: [[plot.x, y], [plot.x + plot.w, y]], color: "#d62728", width: 1.5, role: "series" });
    shapes.push({ kind: "text", x: plot.x + 6, y: y - 5, text: `budget cap ${formatMoney(cap, "CNY")}`, size: 11, color: "#d62728", anchor: "start", bold: true });
  }
  return { width, height, background: "#ffffff", shapes };
}

/** A scene as an inline <svg> element (no XML prolog), scaled to its container's width. */
export function inlineSvg(scene: Scene, label: string): string {
  return sceneToSvg(scene)
    .trimEnd()
    .replace(/^<svg /, `<svg role="img" aria-label="${label.replace(/[<>&"]/g, "")}" preserveAspectRatio="xMinYMin meet" style="max-width:100%;height:auto" `);
}
