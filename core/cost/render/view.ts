// A cost report laid out once for every format (terminal table, Markdown, HTML): the plan header, the candidates
// across providers, the chosen one's breakdown as a tree, the totals in CNY and USD with the exchange rate, what
// needs a rate and how to supply it, assumptions, exclusions and price sources. Everything is already formatted
// text here; the renderers only arrange it. Deterministic: rows are stable-sorted.
import { type BudgetCheck, checkBudget, ratesNeeded } from "../budget-check.js";
import { CATALOG, catalogRow } from "../catalog.js";
import type { Candidate, Component, CostLine, CostReport, Currency, Range, Rate } from "../types.js";
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
  /** No line has a cost: there is nothing to chart, only rates to supply. */
  readonly nothingPriced: boolean;
  /** One sentence: what dominates the expected total (its share), what is prepaid, what has no rate yet. */
  readonly dominant: string;
  /** The steps the run goes through, all stages together — the step axis of the cumulative chart. */
  readonly steps: StepsView;
  /** The run's wall-clock length (the report's runLength, else its stages' hours summed). */
  readonly runLength?: RunLengthView;
  /** YAML to paste under the recipe's `prices:` (or into a --rates file) for every rate needed; absent when none is. */
  readonly pricesSnippet?: string;
}

export interface StepsView {
  /** Expected steps of every stage with steps, summed (the report's steps when it has no stages). */
  readonly total: number;
  /** "3,871 steps (sft 372 + rl 3,499)" or "2,070 steps". */
  readonly text: string;
  readonly stages: readonly {
    readonly stage: string; readonly steps: string; readonly expected: number; readonly source?: string;
    /** From the report's stage of the same id, when it has one: "3,597 s/step (2,398–5,395)", "2,082 h (692–6,288)". */
    readonly secondsPerStep?: string; readonly hours?: string;
  }[];
}

export interface RunLengthView {
  /** The expected length in the unit that reads ("87 days", "14.5 h", "40 min") and its range in the same unit. */
  readonly headline: string;
  readonly headlineRange: string;
  /** "87 (28.8–262) days" */
  readonly days: string;
  /** "2,088 (692–6,344) h" */
  readonly hours: string;
  /** "2,088 h" */
  readonly expectedHours: string;
  /** Expected days, for emphasis. */
  readonly expectedDays: number;
  readonly flags: readonly string[];
  readonly maxDays?: number;
  /** True when the report has no runLength and the length is its stages' hours summed. */
  readonly derived: boolean;
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

const sum = (rs: readonly Range[]): Range => ({
  low: rs.reduce((t, r) => t + r.low, 0), expected: rs.reduce((t, r) => t + r.expected, 0), high: rs.reduce((t, r) => t + r.high, 0),
});
const scale = (r: Range, k: number): Range => ({ low: r.low * k, expected: r.expected * k, high: r.high * k });

/** "87" / "87 (29–262)": the expected figure with its range when the range says more. */
function expectedWithRange(r: Range): string {
  const range = formatQuantityRange(r);
  return range === formatQuantity(r.expected) ? range : `${formatQuantity(r.expected)} (${range})`;
}

/** The steps of every stage (the runLength's, else the report's stages), summed: what the cumulative chart runs over. */
export function stepsView(report: CostReport): StepsView {
  const stages: readonly { stage: string; steps: Range; source?: string }[] = report.runLength !== undefined
    ? report.runLength.stages.map((s) => ({ stage: s.stage, steps: s.steps, source: s.source }))
    : (report.stages ?? []).flatMap((s) => (s.steps === undefined ? [] : [{ stage: s.id, steps: s.steps }]));
  if (stages.length === 0) {
    return { total: Math.round(report.steps.expected), text: `${expectedWithRange(report.steps)} steps`, stages: [] };
  }
  const total = stages.reduce((t, s) => t + Math.round(s.steps.expected), 0);
  const parts = stages.map((s) => `${s.stage} ${formatQuantity(Math.round(s.steps.expected))}`);
  return {
    total,
    text: stages.length === 1 ? `${expectedWithRange(stages[0]!.steps)} steps (${stages[0]!.stage})` : `${formatQuantity(total)} steps (${parts.join(" + ")})`,
    stages: stages.map((s) => {
      const st = report.stages?.find((x) => x.id === s.stage);
      return {
        stage: s.stage, steps: expectedWithRange(s.steps), expected: Math.round(s.steps.expected), ...(s.source === undefined ? {} : { source: s.source }),
        ...(st?.secondsPerStep === undefined ? {} : { secondsPerStep: `${expectedWithRange(st.secondsPerStep)} s/step` }),
        ...(st === undefined ? {} : { hours: `${expectedWithRange(st.hours)} h` }),
      };
    }),
  };
}

/** The run's length in days and hours: the report's runLength, else (an older report) its stages' hours summed. */
export function runLengthView(report: CostReport): RunLengthView | undefined {
  const rl = report.runLength;
  if (rl !== undefined) return lengthOf(rl.hours, rl.days, { flags: [...rl.flags], maxDays: rl.maxDays, derived: false });
  const hours = (report.stages ?? []).map((s) => s.hours);
  if (hours.length === 0) return undefined;
  const h = sum(hours);
  return lengthOf(h, scale(h, 1 / 24), { flags: [], derived: true });
}

function lengthOf(hours: Range, days: Range, rest: Pick<RunLengthView, "flags" | "derived"> & { maxDays?: number }): RunLengthView {
  // Days from a day up, hours from an hour, minutes below: "0.000926 days" says nothing to a reader.
  const [value, unit] = days.expected >= 1 ? [days, "days"] : hours.expected >= 1 ? [hours, "h"] : [scale(hours, 60), "min"];
  return {
    headline: `${formatQuantity(value.expected)} ${unit}`, headlineRange: `${formatQuantityRange(value)} ${unit}`,
    days: `${expectedWithRange(days)} days`, hours: `${expectedWithRange(hours)} h`, expectedHours: `${formatQuantity(hours.expected)} h`,
    expectedDays: days.expected, ...rest,
  };
}

/** "Training compute" → "training compute", "COS storage" stays. */
function midSentence(label: string): string {
  return /^[A-Z][a-z]/.test(label) ? `${label[0]!.toLowerCase()}${label.slice(1)}` : label;
}

function share(part: number, whole: number): string {
  const p = (100 * part) / whole;
  if (p >= 99.5 && part < whole) return "over 99%";
  if (p < 1) return "under 1%";
  return `${Math.round(p)}%`;
}

function listed(items: readonly string[]): string {
  return items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

/**
 * One sentence on what the expected total is made of: the biggest top-level line and its share (the next one too
 * when the biggest is not most of it), compute that is prepaid, and the lines without a rate the total leaves out.
 * From the report alone, so every renderer can print it.
 */
export function dominantSentence(report: CostReport): string {
  const top = report.lines.map((l) => {
    const currency = l.currency ?? l.rate?.currency;
    return { line: l, cny: l.cost === undefined || currency === undefined ? undefined : convertRange(l.cost, currency, "CNY", report.fx).expected };
  });
  const priced = top.filter((t): t is { line: CostLine; cny: number } => t.cny !== undefined).sort((a, b) => b.cny - a.cny);
  const needing = ratesNeeded(report.lines);
  const unpriced = top.filter((t) => t.cny === undefined && t.line.includedIn === undefined && ratesNeeded([t.line]).length > 0).map((t) => midSentence(t.line.label));
  const prepaid = top.filter((t) => t.line.includedIn !== undefined && /prepaid|sunk/i.test(t.line.includedIn)).map((t) => midSentence(t.line.label));
  const total = priced.reduce((s, t) => s + t.cny, 0);
  if (priced.length === 0 || total <= 0) {
    const what = priced.length === 0 ? "No line has a rate yet, so the total is unknown" : `The priced lines come to ${formatMoney(0, "CNY")}`;
    const tail = needing.length === 0 ? "" : `: ${needing.length} price${needing.length === 1 ? " is" : "s are"} needed (${listed(needing.map((n) => n.need.item))})`;
    return `${what}${prepaid.length === 0 ? "" : `${tail === "" ? "; " : " — "}${listed(prepaid)} ${prepaid.length === 1 ? "is" : "are"} prepaid`}${tail}.`;
  }
  const [first, second] = priced;
  const whole = formatMoney(report.totals.CNY.expected, "CNY");
  let head = priced.length === 1 || first!.cny >= total
    ? `${first!.line.label} is all of the expected total (${whole})`
    : `${first!.line.label} is ${share(first!.cny, total)} of the expected total (${formatMoney(first!.cny, "CNY")} of ${whole})`;
  if (second !== undefined && first!.cny / total < 0.6) head += `, ${midSentence(second.line.label)} ${share(second.cny, total)}`;
  const clauses = [
    ...(prepaid.length === 0 ? [] : [`${listed(prepaid)} ${prepaid.length === 1 ? "is" : "are"} prepaid`]),
    ...(unpriced.length === 0 ? [] : [`no rate yet for ${listed(unpriced)}, so the total leaves ${unpriced.length === 1 ? "it" : "them"} out`]),
  ];
  return `${head}${clauses.map((c) => `; ${c}`).join("")}.`;
}

/** A YAML value that needs no quotes (ids like modelarts:flavor.name do; "a: b" would not). */
function yamlScalar(s: string): string {
  return /^[A-Za-z0-9_./-][A-Za-z0-9_.:/-]*$/.test(s) ? s : JSON.stringify(s);
}

/**
 * The prices: block for every rate the report needs, ready to paste under the recipe's `prices:` (or to save as a
 * --rates file): one entry per item with the value left as <price> (so it cannot be read as 0 by mistake), the
 * currency the catalog lists for the item (CNY when the catalog has no row), its unit and the lines it prices.
 */
export function pricesSnippet(report: CostReport): string | undefined {
  const needing = ratesNeeded(report.lines);
  if (needing.length === 0) return undefined;
  const entries = needing.map(({ need, lines }) => {
    const row = catalogRow(CATALOG, need.item);
    // What the item is (the catalog's words), else the lines it prices.
    const what = row?.item ?? [...new Set(lines.map((l) => l.label))].join("; ");
    return [
      `  # ${what}`,
      `  - item: ${yamlScalar(need.item)}`,
      `    value: <price>        # per ${need.unit}`,
      `    currency: ${row?.currency ?? "CNY"}         # or ${row?.currency === "USD" ? "CNY" : "USD"}`,
      `    unit: ${yamlScalar(need.unit)}`,
      `    source: "<where the price is from, and the date>"`,
    ].join("\n");
  });
  return `prices:\n${entries.join("\n")}\n`;
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
    nothingPriced,
    dominant: dominantSentence(report),
    steps: stepsView(report),
    ...(() => { const rl = runLengthView(report); return rl === undefined ? {} : { runLength: rl }; })(),
    ...(() => { const y = pricesSnippet(report); return y === undefined ? {} : { pricesSnippet: y }; })(),
  };
}
