// A cost report laid out once for every format (terminal table, Markdown, HTML): the plan header, the candidates
// across providers, the chosen one's breakdown as a tree, the totals in CNY and USD with the exchange rate, what
// needs a rate and how to supply it, assumptions, exclusions and price sources. Everything is already formatted
// text here; the renderers only arrange it. Deterministic: rows are stable-sorted.
import { type BudgetCheck, checkBudget, ratesNeeded } from "../budget-check.js";
import type { Candidate, Component, CostLine, CostReport, Currency, Rate } from "../types.js";
import {
  CURRENCY_SYMBOL, convertRange, formatFx, formatMoney, formatMoneyRange, formatMoneyTriple, formatQuantity, formatQuantityRange, formatRate,
  formatSeconds,
} from "./format.js";

/** Catalog rows read longer ago than this get a warning in the header (prices move). */
export const STALE_AFTER_DAYS = 180;

/** Where a user supplies a missing rate; said under every report that needs one. */
export const HOW_TO_SUPPLY = "add it under prices: in the recipe, or in a YAML file passed with --rates FILE (a list of {item, value, currency, unit, source} entries, or prices: with that list)";

export interface CandidateRow {
  readonly provider: string;
  readonly region: string;
  readonly flavor: string;
  readonly accelerators: string;
  readonly nodes: string;
  readonly unitPrice: string;
  readonly hours: string;
  /** The candidate's cost in CNY and in USD (one of them converted), or "rate needed". */
  readonly costCNY: string;
  readonly costUSD: string;
  readonly chosen: boolean;
  readonly note: string;
  /** Its compute is paid for already (a prepaid group or pool): "prepaid (sunk)", cost 0 marginal. */
  readonly includedIn?: string;
  /** Expected cost in CNY, for charts; undefined without a price. */
  readonly expectedCNY?: { readonly low: number; readonly expected: number; readonly high: number };
}

export interface BreakdownRow {
  /** Depth in the tree (0: a top-level line). */
  readonly depth: number;
  /** Tree prefix: "├─ ", "└─ ", "│  ├─ " … */
  readonly prefix: string;
  readonly label: string;
  readonly quantity: string;
  readonly unit: string;
  readonly unitPrice: string;
  readonly cost: string;
  readonly basis: string;
  readonly rateNeeded: boolean;
  /** Paid for by another line (co-located sandbox → compute; a prepaid pool): no cost, and nothing missing. */
  readonly includedIn?: string;
  readonly note?: string;
  readonly component: Component;
  /** Cost in CNY (converted when the line is in USD), for charts. */
  readonly costCNY?: { readonly low: number; readonly expected: number; readonly high: number };
}

export interface ReportView {
  readonly title: string;
  /** "offline; catalog modelarts@2026-08-01, e2b@2026-07-15; no credentials used" */
  readonly mode: string;
  readonly target: string;
  readonly budget?: BudgetCheck;
  readonly budgetText?: string;
  readonly run: string;
  readonly fx: string;
  readonly warnings: readonly string[];
  readonly candidates: readonly CandidateRow[];
  readonly breakdown: readonly BreakdownRow[];
  readonly total: {
    /** low – expected – high */
    readonly CNY: string; readonly USD: string;
    readonly expected: { readonly CNY: string; readonly USD: string };
    /** low–high */
    readonly range: { readonly CNY: string; readonly USD: string };
    readonly incomplete: boolean; readonly note: string;
  };
  readonly ratesNeeded: readonly string[];
  /** What a reader should know about single lines ("label: note"). */
  readonly notes: readonly string[];
  /** The sandbox's capacity per RL step, one line per stage (as plan prints it). */
  readonly capacity: readonly string[];
  readonly assumptions: readonly string[];
  readonly exclusions: readonly string[];
  readonly sources: readonly { readonly id: string; readonly price: string; readonly source: string; readonly confidence: string; readonly date: string; readonly region: string }[];
  readonly generatedAt: string;
  readonly recipe: CostReport["recipe"];
}

const COMPONENT_ORDER: readonly Component[] = ["compute", "sandbox", "functions", "storage", "egress"];

/** A candidate's unit price cell when its compute is sunk (prepaid): not a rate, and not a missing one. */
export const SUNK_UNIT_PRICE = "prepaid (sunk)";

/** "¥7.50/node-hour". */
export function formatUnitPrice(rate: Rate | undefined): string {
  if (rate === undefined) return "rate needed";
  // An exchange rate (unit CNY/USD) is a ratio, not money per unit: "6.7152 CNY/USD".
  if (/^[A-Z]{3}\/[A-Z]{3}$/.test(rate.unit)) return `${rate.value} ${rate.unit}`;
  return `${formatRate(rate.value, rate.currency)}/${rate.unit}`;
}

/** The catalog groups and the oldest date read in each: "modelarts@2026-08-01" (user and live rates apart). */
function catalogDates(sources: readonly Rate[]): string[] {
  const oldest = new Map<string, string>();
  for (const s of sources) {
    if (s.confidence === "user" || s.confidence === "live") continue;
    const group = s.id.split(/[:/.]/)[0] ?? s.id;
    const seen = oldest.get(group);
    if (seen === undefined || s.dateRead < seen) oldest.set(group, s.dateRead);
  }
  return [...oldest.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([g, d]) => `${g}@${d}`);
}

function daysBetween(fromIso: string, toIso: string): number {
  return Math.floor((Date.parse(toIso) - Date.parse(fromIso)) / 86_400_000);
}

function candidateCost(c: Candidate, report: CostReport): { CNY?: CandidateRow["expectedCNY"]; text: { CNY: string; USD: string } } {
  if (c.cost === undefined || c.currency === undefined) return { text: { CNY: "rate needed", USD: "rate needed" } };
  if (c.includedIn !== undefined) return { CNY: c.cost, text: { CNY: `${formatMoney(0, "CNY")} (sunk)`, USD: `${formatMoney(0, "USD")} (sunk)` } };
  const cny = convertRange(c.cost, c.currency, "CNY", report.fx);
  const usd = convertRange(c.cost, c.currency, "USD", report.fx);
  return { CNY: cny, text: { CNY: formatMoneyRange(cny, "CNY"), USD: formatMoneyRange(usd, "USD") } };
}

/** Cheapest first (expected, in CNY), unpriced last; ties by provider, region, flavor. */
function sortCandidates(rows: CandidateRow[]): CandidateRow[] {
  const key = (r: CandidateRow) => r.expectedCNY?.expected ?? Number.POSITIVE_INFINITY;
  return rows
    .map((r, i) => ({ r, i }))
    .sort((a, b) => key(a.r) - key(b.r) || a.r.provider.localeCompare(b.r.provider) || a.r.region.localeCompare(b.r.region) || a.r.flavor.localeCompare(b.r.flavor) || a.i - b.i)
    .map(({ r }) => r);
}

function breakdownRows(lines: readonly CostLine[], report: CostReport, depth: number, lead: string): BreakdownRow[] {
  // Components in a fixed order; within one, the report's order (a stable sort).
  const ordered = depth === 0
    ? lines.map((l, i) => ({ l, i })).sort((a, b) => COMPONENT_ORDER.indexOf(a.l.component) - COMPONENT_ORDER.indexOf(b.l.component) || a.i - b.i).map(({ l }) => l)
    : [...lines];
  return ordered.flatMap((l, i) => {
    const last = i === ordered.length - 1;
    const currency: Currency | undefined = l.currency ?? l.rate?.currency;
    const row: BreakdownRow = {
      depth, prefix: `${lead}${last ? "└─ " : "├─ "}`, label: l.label,
      quantity: formatQuantityRange(l.quantity), unit: l.unit,
      unitPrice: l.rateNeeded !== undefined ? "rate needed" : l.rate !== undefined ? formatUnitPrice(l.rate) : (l.children ?? []).length > 0 ? "(lines below)" : "—",
      cost: l.cost !== undefined && currency !== undefined ? formatMoneyTriple(l.cost, currency)
        : l.rateNeeded !== undefined ? "rate needed" : l.includedIn !== undefined ? `included in ${l.includedIn}`
        : ratesNeeded(l.children ?? []).length > 0 ? "rate needed (below)" : "—",
      basis: l.basis, rateNeeded: l.rateNeeded !== undefined, component: l.component,
      ...(l.includedIn === undefined ? {} : { includedIn: l.includedIn }), ...(l.note === undefined ? {} : { note: l.note }),
      ...(l.cost === undefined || currency === undefined ? {} : { costCNY: convertRange(l.cost, currency, "CNY", report.fx) }),
    };
    return [row, ...breakdownRows(l.children ?? [], report, depth + 1, `${lead}${last ? "   " : "│  "}`)];
  });
}

function targetText(report: CostReport): string {
  const c = report.candidates.find((x) => x.chosen);
  if (c === undefined) return report.chosen;
  const parts = [c.provider, c.region, c.flavor ?? c.accelerators].filter((p): p is string => p !== undefined && p !== "");
  const accel = c.flavor !== undefined && c.accelerators !== undefined ? ` (${c.accelerators})` : "";
  return `${parts.join(" / ")}${accel} × ${c.nodes} node${c.nodes === 1 ? "" : "s"}`;
}

/** "<line>; <line>: <note>" — lines sharing a note (each stage on one anchor price) said once. */
function groupNotes(rows: readonly BreakdownRow[]): string[] {
  const byNote = new Map<string, string[]>();
  for (const r of rows) if (r.note !== undefined) byNote.set(r.note, [...(byNote.get(r.note) ?? []), r.label]);
  return [...byNote.entries()].map(([note, labels]) => `${labels.join("; ")}: ${note}`);
}

/** "<item> [unit], for <line>; <line>: <how to supply it>". */
function rateNeededText(r: { readonly need: NonNullable<CostLine["rateNeeded"]>; readonly lines: readonly CostLine[] }): string {
  return `${r.need.item} [${r.need.unit}], for ${r.lines.map((l) => l.label).join("; ")}: ${r.need.howToSupply}`;
}

export function reportView(report: CostReport, opts: { budget?: { cap: number; currency: Currency } } = {}): ReportView {
  const budget = opts.budget ?? report.budget;
  const check = budget === undefined ? undefined : checkBudget(report, budget);
  const dates = catalogDates(report.priceSources);
  const count = (c: Rate["confidence"], what: string) => {
    const n = report.priceSources.filter((s) => s.confidence === c).length;
    return n === 0 ? [] : [`${n} ${what} rate${n === 1 ? "" : "s"}`];
  };
  const mode = [
    report.mode,
    dates.length === 0 ? "no catalog prices" : `catalog ${dates.join(", ")}`,
    ...count("user", "user"), ...count("live", "live"),
    report.mode === "offline" ? "no credentials used" : "live prices read with the credentials in the environment",
  ].join("; ");
  const stale = report.priceSources
    .filter((s) => s.confidence !== "user" && s.confidence !== "live" && daysBetween(s.dateRead, report.generatedAt) > STALE_AFTER_DAYS)
    .map((s) => s.id);
  const warnings = stale.length === 0 ? [] : [`${stale.length} catalog price${stale.length === 1 ? " was" : "s were"} read more than ${STALE_AFTER_DAYS} days ago (${stale.sort().join(", ")}): check them, or supply current rates with --rates`];

  const candidates = sortCandidates(report.candidates.map((c) => {
    const cost = candidateCost(c, report);
    return {
      provider: c.provider, region: c.region ?? "—", flavor: c.flavor ?? "—", accelerators: c.accelerators ?? "—", nodes: String(c.nodes),
      unitPrice: c.unitPrice === undefined && c.includedIn !== undefined ? SUNK_UNIT_PRICE : formatUnitPrice(c.unitPrice), hours: formatQuantityRange(c.hours), costCNY: cost.text.CNY, costUSD: cost.text.USD,
      chosen: c.chosen, note: c.note ?? "", ...(c.includedIn === undefined ? {} : { includedIn: c.includedIn }),
      ...(cost.CNY === undefined ? {} : { expectedCNY: cost.CNY }),
    };
  }));

  const needing = ratesNeeded(report.lines);
  const rows = breakdownRows(report.lines, report, 0, "");
  const nothingPriced = report.totals.incomplete && !rows.some((r) => r.costCNY !== undefined);
  const { CNY, USD, incomplete } = report.totals;
  const steps = report.steps;
  return {
    title: `Plan: ${report.recipe.name}`,
    mode,
    target: targetText(report),
    ...(check === undefined ? {} : { budget: check, budgetText: `Budget cap: ${formatMoney(check.cap, check.currency)}   Status: ${check.status.toUpperCase()}` }),
    run: `${formatQuantity(steps.expected)} steps${formatQuantityRange(steps) === formatQuantity(steps.expected) ? "" : ` (${formatQuantityRange(steps)})`} × ${formatSeconds(report.secondsPerStep)}`,
    fx: `USD and CNY converted at ${formatFx(report.fx)}`,
    warnings,
    candidates,
    breakdown: rows,
    total: {
      CNY: nothingPriced ? "no line has a rate" : formatMoneyTriple(CNY, "CNY"), USD: nothingPriced ? "no line has a rate" : formatMoneyTriple(USD, "USD"),
      expected: { CNY: nothingPriced ? "—" : formatMoney(CNY.expected, "CNY"), USD: nothingPriced ? "—" : formatMoney(USD.expected, "USD") },
      range: { CNY: nothingPriced ? "no line has a rate" : formatMoneyRange(CNY, "CNY"), USD: nothingPriced ? "no line has a rate" : formatMoneyRange(USD, "USD") },
      incomplete,
      note: incomplete
        ? `priced lines only: ${needing.length} rate${needing.length === 1 ? " is" : "s are"} needed (below)`
        : `every line priced; ${CURRENCY_SYMBOL.CNY} and ${CURRENCY_SYMBOL.USD} converted at the rate above`,
    },
    ratesNeeded: needing.map(rateNeededText),
    // The chosen row shows ✔ where others show their note: a sunk (prepaid) choice says why its cost is 0 here.
    notes: [
      ...groupNotes(rows),
      ...report.candidates.filter((c) => c.chosen && c.includedIn !== undefined && c.note !== undefined).map((c) => `chosen candidate ${c.provider}: ${c.note}`),
    ],
    capacity: (report.capacity?.stages ?? []).map((c) => c.line),
    assumptions: [...report.assumptions],
    exclusions: [...report.exclusions],
    sources: [...report.priceSources].sort((a, b) => a.id.localeCompare(b.id) || a.dateRead.localeCompare(b.dateRead)).map((s) => ({
      id: s.id, price: formatUnitPrice(s), source: s.source, confidence: s.confidence, date: s.dateRead, region: s.region ?? "—",
    })),
    generatedAt: report.generatedAt,
    recipe: report.recipe,
  };
}
