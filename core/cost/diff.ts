// What changed between two cost estimates (a pull request's base and head recipe, priced at the same options): per
// line matched by id, the chosen candidate, the run's steps and hours, and the totals. Pure and deterministic: the
// same two reports give the same diff, in a stable order (the head's tree order, a removed line where it stood in
// the base). An unpriced line is never a zero: its side says "rate-needed", and a total with such a line on either
// side is incomplete (the change is of priced lines only).
import { roundRange } from "./range.js";
import type { Candidate, Component, CostLine, CostReport, Currency, FxRate, Range } from "./types.js";

/** One side of a line: what it costs, or why it has no cost. */
export type LineSide =
  | { readonly kind: "priced"; readonly cost: Range; readonly currency: Currency; readonly quantity: Range; readonly unit: string; readonly rateId?: string }
  /** No usable price on this line, or (a parent) on a line below it. `item` is the rate to supply, when this line needs it. */
  | { readonly kind: "rate-needed"; readonly quantity: Range; readonly unit: string; readonly item?: string }
  /** Paid for elsewhere (co-located with compute, a prepaid group): no cost, and not missing. */
  | { readonly kind: "included"; readonly includedIn: string; readonly quantity: Range; readonly unit: string };

export type LineStatus = "added" | "removed" | "changed" | "unchanged";

export interface LineDiff {
  readonly id: string;
  /** The head's label (the base's for a removed line). */
  readonly label: string;
  readonly component: Component;
  /** 0 for a top-level line; its children are 1, … (the report's tree, for indenting). */
  readonly depth: number;
  readonly status: LineStatus;
  readonly base?: LineSide;
  readonly head?: LineSide;
  /** head − base, each bound, in `currency`: when both sides are priced, or the one side of an added or removed line is. */
  readonly change?: Range;
  readonly currency?: Currency;
  /** change.expected ÷ base expected, when both are priced and the base's is above 0. */
  readonly changeRatio?: number;
}

export interface SideSummary {
  readonly recipe: CostReport["recipe"];
  readonly chosen: { readonly provider: string; readonly region?: string; readonly flavor?: string; readonly accelerators?: string; readonly nodes: number };
  readonly steps: Range;
  /** Wall-clock hours of the whole run (the report's runLength, else its stages' hours summed), when known. */
  readonly hours?: Range;
  readonly days?: Range;
  readonly totals: CostReport["totals"];
  /** Some line has a cost: without one, the totals' 0 means "unknown", not ¥0. */
  readonly priced: boolean;
  /** The rate items this side needs, sorted, each once. */
  readonly ratesNeeded: readonly string[];
}

export interface CostDiff {
  readonly schema: "rlpipe.cost-diff";
  readonly version: 1;
  readonly base: SideSummary;
  readonly head: SideSummary;
  readonly chosenChanged: boolean;
  readonly stepsChanged: boolean;
  readonly hoursChanged: boolean;
  readonly lines: readonly LineDiff[];
  readonly totals: {
    /** head − base per currency, each bound (priced lines only when incomplete). */
    readonly change: { readonly CNY: Range; readonly USD: Range };
    /** change.CNY.expected ÷ base CNY expected, when the base has a priced total above 0. */
    readonly changeRatio?: number;
    /** A line on either side lacks a rate: the change is of priced lines only. */
    readonly incomplete: boolean;
    /** Neither side or only one has any priced line: there is no total change to state. */
    readonly comparable: boolean;
  };
  /** The exchange rate of the head (the same options price both; `fxDiffers` says when they did not agree). */
  readonly fx: FxRate;
  readonly fxDiffers: boolean;
}

/** Equal up to float noise (the estimate rounds to 6 significant digits). */
function same(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a), Math.abs(b));
}
function sameRange(a: Range | undefined, b: Range | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return same(a.low, b.low) && same(a.expected, b.expected) && same(a.high, b.high);
}
const minus = (a: Range, b: Range): Range => ({ low: a.low - b.low, expected: a.expected - b.expected, high: a.high - b.high });
const scale = (r: Range, f: number): Range => ({ low: r.low * f, expected: r.expected * f, high: r.high * f });

function convert(r: Range, from: Currency, to: Currency, fx: FxRate): Range {
  if (from === to) return r;
  return scale(r, from === "USD" ? fx.cnyPerUsd : 1 / fx.cnyPerUsd);
}

function sideOf(line: CostLine): LineSide {
  const q = { quantity: line.quantity, unit: line.unit };
  if (line.cost !== undefined && line.currency !== undefined) {
    return { kind: "priced", cost: line.cost, currency: line.currency, ...q, ...(line.rate === undefined ? {} : { rateId: line.rate.id }) };
  }
  if (line.includedIn !== undefined) return { kind: "included", includedIn: line.includedIn, ...q };
  return { kind: "rate-needed", ...q, ...(line.rateNeeded === undefined ? {} : { item: line.rateNeeded.item }) };
}

function sameSide(a: LineSide, b: LineSide, aRate: number | undefined, bRate: number | undefined): boolean {
  if (a.kind !== b.kind || a.unit !== b.unit || !sameRange(a.quantity, b.quantity)) return false;
  switch (a.kind) {
    case "priced": {
      const p = b as typeof a;
      return a.currency === p.currency && sameRange(a.cost, p.cost) && a.rateId === p.rateId && (aRate === bRate || (aRate !== undefined && bRate !== undefined && same(aRate, bRate)));
    }
    case "included": return a.includedIn === (b as typeof a).includedIn;
    case "rate-needed": return a.item === (b as typeof a).item;
  }
}

interface Flat { readonly line: CostLine; readonly depth: number }

function flatten(lines: readonly CostLine[], depth = 0): Flat[] {
  return lines.flatMap((line) => [{ line, depth }, ...flatten(line.children ?? [], depth + 1)]);
}

/**
 * The union of both trees' line ids, in the head's order; a line only the base has goes right after the line
 * that preceded it in the base (or first, when none did), so a removed child stays under its parent.
 */
function mergedOrder(base: readonly Flat[], head: readonly Flat[]): string[] {
  const order = head.map((f) => f.line.id);
  const inHead = new Set(order);
  let previous: string | undefined;
  for (const f of base) {
    const id = f.line.id;
    if (!inHead.has(id)) {
      const at = previous === undefined ? 0 : order.indexOf(previous) + 1;
      order.splice(at, 0, id);
    }
    previous = id;
  }
  return order;
}

function lineDiff(id: string, b: Flat | undefined, h: Flat | undefined, headFx: FxRate): LineDiff {
  const line = (h ?? b)!.line;
  const depth = (h ?? b)!.depth;
  const common = { id, label: line.label, component: line.component, depth };
  // An added or removed priced line changes the total by its whole cost; one without a rate changes it by an unknown.
  if (b === undefined) {
    const hs = sideOf(h!.line);
    return { ...common, status: "added", head: hs, ...(hs.kind === "priced" ? { change: hs.cost, currency: hs.currency } : {}) };
  }
  if (h === undefined) {
    const bs = sideOf(b.line);
    return { ...common, status: "removed", base: bs, ...(bs.kind === "priced" ? { change: scale(bs.cost, -1), currency: bs.currency } : {}) };
  }
  const bs = sideOf(b.line);
  const hs = sideOf(h.line);
  const status: LineStatus = sameSide(bs, hs, b.line.rate?.value, h.line.rate?.value) ? "unchanged" : "changed";
  if (bs.kind !== "priced" || hs.kind !== "priced") return { ...common, status, base: bs, head: hs };
  // A line keeps its own currency; when the two sides differ (a rate supplied in the other currency), the change
  // is said in the base's, the head converted at its own exchange rate.
  const change = minus(convert(hs.cost, hs.currency, bs.currency, headFx), bs.cost);
  return {
    ...common, status, base: bs, head: hs, change, currency: bs.currency,
    ...(bs.cost.expected > 0 ? { changeRatio: change.expected / bs.cost.expected } : {}),
  };
}

function sumRanges(rs: readonly Range[]): Range {
  return rs.reduce((a, r) => ({ low: a.low + r.low, expected: a.expected + r.expected, high: a.high + r.high }), { low: 0, expected: 0, high: 0 });
}

function chosenOf(report: CostReport): SideSummary["chosen"] {
  const c: Candidate | undefined = report.candidates.find((x) => x.chosen);
  if (c === undefined) return { provider: report.chosen, nodes: 0 };
  return {
    provider: c.provider, nodes: c.nodes,
    ...(c.region === undefined ? {} : { region: c.region }),
    ...(c.flavor === undefined ? {} : { flavor: c.flavor }),
    ...(c.accelerators === undefined ? {} : { accelerators: c.accelerators }),
  };
}

function summaryOf(report: CostReport): SideSummary {
  const all = flatten(report.lines).map((f) => f.line);
  const stageHours = report.stages?.map((s) => s.hours);
  const hours = report.runLength?.hours ?? (stageHours === undefined || stageHours.length === 0 ? undefined : roundRange(sumRanges(stageHours)));
  const days = report.runLength?.days;
  const ratesNeeded = [...new Set(all.flatMap((l) => (l.rateNeeded === undefined ? [] : [l.rateNeeded.item])))].sort();
  return {
    recipe: report.recipe, chosen: chosenOf(report), steps: report.steps,
    ...(hours === undefined ? {} : { hours }), ...(days === undefined ? {} : { days }),
    totals: report.totals, priced: all.some((l) => l.cost !== undefined), ratesNeeded,
  };
}

function sameChosen(a: SideSummary["chosen"], b: SideSummary["chosen"]): boolean {
  return a.provider === b.provider && a.region === b.region && a.flavor === b.flavor && a.accelerators === b.accelerators && a.nodes === b.nodes;
}

/** What changed from `base` to `head`. Both should be estimated with the same options, so only the recipe differs. */
export function diffReports(base: CostReport, head: CostReport): CostDiff {
  const baseFlat = flatten(base.lines);
  const headFlat = flatten(head.lines);
  const byId = (fs: readonly Flat[]) => new Map(fs.map((f) => [f.line.id, f] as const));
  const baseById = byId(baseFlat);
  const headById = byId(headFlat);
  const lines = mergedOrder(baseFlat, headFlat).map((id) => lineDiff(id, baseById.get(id), headById.get(id), head.fx));

  const b = summaryOf(base);
  const h = summaryOf(head);
  const incomplete = base.totals.incomplete || head.totals.incomplete;
  const comparable = b.priced && h.priced;
  const change = { CNY: minus(head.totals.CNY, base.totals.CNY), USD: minus(head.totals.USD, base.totals.USD) };
  const hoursChanged = !sameRange(b.hours, h.hours);
  return {
    schema: "rlpipe.cost-diff", version: 1, base: b, head: h,
    chosenChanged: !sameChosen(b.chosen, h.chosen),
    stepsChanged: !sameRange(b.steps, h.steps),
    hoursChanged,
    lines,
    totals: {
      change,
      ...(comparable && base.totals.CNY.expected > 0 ? { changeRatio: change.CNY.expected / base.totals.CNY.expected } : {}),
      incomplete, comparable,
    },
    fx: head.fx,
    fxDiffers: base.fx.cnyPerUsd !== head.fx.cnyPerUsd || base.fx.dateRead !== head.fx.dateRead,
  };
}

/** The lines a reader needs to see: every one that was added, removed or changed. */
export function changedLines(diff: CostDiff): LineDiff[] {
  return diff.lines.filter((l) => l.status !== "unchanged");
}

/** A limit on the total's expected increase: an amount in a currency, or a share of the base's total. */
export type IncreaseLimit = { readonly kind: "amount"; readonly value: number; readonly currency: Currency } | { readonly kind: "ratio"; readonly value: number };

/**
 * Whether the expected total rose by more than `limit`: true/false, or undefined when the two totals cannot be
 * compared (a side with no priced line; a ratio over a base of 0). With a rate missing, the priced lines decide.
 */
export function exceedsIncrease(diff: CostDiff, limit: IncreaseLimit): boolean | undefined {
  if (!diff.totals.comparable) return undefined;
  if (limit.kind === "amount") return diff.totals.change[limit.currency].expected > limit.value;
  return diff.totals.changeRatio === undefined ? undefined : diff.totals.changeRatio > limit.value;
}
