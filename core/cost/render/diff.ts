// A cost diff (core/cost/diff.ts) for a reader: a headline that says how the run's total moves ("will increase by
// ¥X (+Y%)", as infracost's pull-request comment does), the changed lines with base, head and change, the totals
// low / expected / high in CNY and USD, and what else changed (chosen candidate, steps, hours). A side without a
// rate says "rate needed", never ¥0; a total with one is said to be of priced lines only.
import type { CostDiff, LineDiff, LineSide, SideSummary } from "../diff.js";
import type { Currency, Range } from "../types.js";
import { formatFx, formatMoney, formatMoneyTriple, formatQuantity, formatQuantityRange } from "./format.js";
import { alignColumns } from "./table.js";

const ABSENT = "—";

/** "+¥1,234" / "−¥1,234" / "¥0": a change with its sign. */
export function formatChange(v: number, currency: Currency): string {
  const m = formatMoney(v, currency);
  return m.startsWith("−") || /^[¥$]0$/.test(m) ? m : `+${m}`;
}

/** "+12%", "−3.5%", "+0.04%": a change ratio as a percent with its sign. */
export function formatPercent(ratio: number): string {
  const p = ratio * 100;
  const a = Math.abs(p);
  const body = a >= 10 ? a.toFixed(0) : a >= 1 ? a.toFixed(1) : a >= 0.01 ? a.toFixed(2) : a === 0 ? "0" : "<0.01";
  return `${p < 0 ? "−" : p > 0 ? "+" : ""}${body}%`;
}

function sideText(s: LineSide | undefined): string {
  if (s === undefined) return ABSENT;
  switch (s.kind) {
    case "priced": return formatMoneyTriple(s.cost, s.currency);
    case "included": return `included in ${s.includedIn}`;
    case "rate-needed": return s.item === undefined ? "rate needed (below)" : `rate needed (${s.item})`;
  }
}

function changeText(l: LineDiff): string {
  if (l.change !== undefined && l.currency !== undefined) {
    return `${formatChange(l.change.expected, l.currency)}${l.changeRatio === undefined ? "" : ` (${formatPercent(l.changeRatio)})`}`;
  }
  if (l.status === "unchanged") return "no change";
  // Added or removed without a cost: the total moves by an amount nobody priced.
  if (l.status === "added" || l.status === "removed") return (l.head ?? l.base)!.kind === "included" ? "none (included)" : "unknown (rate needed)";
  // Changed, but one side has no cost: say what moved instead of a sum that would treat "rate needed" as 0.
  const b = l.base!;
  const h = l.head!;
  if (b.kind !== h.kind) return `${kindWord(b)} → ${kindWord(h)}`;
  return `quantity ${formatQuantityRange(b.quantity)} → ${formatQuantityRange(h.quantity)} ${h.unit}`;
}

function kindWord(s: LineSide): string {
  return s.kind === "priced" ? "priced" : s.kind === "included" ? "included" : "rate needed";
}

function totalText(side: SideSummary, currency: Currency): string {
  return side.priced ? formatMoneyTriple(side.totals[currency], currency) : "unknown: no line has a rate";
}

function changeTriple(r: Range, currency: Currency): string {
  return [r.low, r.expected, r.high].map((v) => formatChange(v, currency)).join(" – ");
}

/** The one sentence a pull request needs first; an incomplete total says how many rates it leaves out. */
export function diffHeadline(d: CostDiff): string {
  const missing = new Set([...d.base.ratesNeeded, ...d.head.ratesNeeded]).size;
  return d.totals.incomplete ? `${totalSentence(d)} — incomplete: ${missing} rate${missing === 1 ? "" : "s"} needed` : totalSentence(d);
}

function totalSentence(d: CostDiff): string {
  const subject = d.totals.incomplete ? "Expected run cost (priced lines only)" : "Expected run cost";
  if (!d.totals.comparable) {
    const which = !d.base.priced && !d.head.priced ? "neither side has" : !d.base.priced ? "the base has" : "the head has";
    return `${subject} cannot be compared: ${which} no line with a rate`;
  }
  const change = d.totals.change.CNY.expected;
  const from = `from ${formatMoney(d.base.totals.CNY.expected, "CNY")} to ${formatMoney(d.head.totals.CNY.expected, "CNY")}`;
  if (formatMoney(Math.abs(change), "CNY") === "¥0") return `${subject} will not change (${formatMoney(d.head.totals.CNY.expected, "CNY")})`;
  const verb = change > 0 ? "increase" : "decrease";
  const pct = d.totals.changeRatio === undefined ? "" : ` (${formatPercent(d.totals.changeRatio)})`;
  return `${subject} will ${verb} by ${formatMoney(Math.abs(change), "CNY")}${pct}, ${from}`;
}

/** Rates one side needs and the other does not, and the warning that the total leaves them out. */
function incompleteNotes(d: CostDiff): string[] {
  if (!d.totals.incomplete) return [];
  const notes: string[] = [];
  const say = (side: SideSummary, name: string) => {
    if (side.ratesNeeded.length > 0) notes.push(`${name} needs ${side.ratesNeeded.length} rate${side.ratesNeeded.length === 1 ? "" : "s"}: ${side.ratesNeeded.join(", ")}`);
  };
  say(d.base, "base");
  say(d.head, "head");
  notes.push("the total change is incomplete: lines that need a rate are not in it (supply them under prices: in the recipe or with --rates FILE)");
  return notes;
}

function chosenText(c: SideSummary["chosen"]): string {
  const parts = [c.provider, c.region, c.flavor ?? c.accelerators].filter((p): p is string => p !== undefined && p !== "");
  const accel = c.flavor !== undefined && c.accelerators !== undefined ? ` (${c.accelerators})` : "";
  return `${parts.join(" / ")}${accel} × ${c.nodes} node${c.nodes === 1 ? "" : "s"}`;
}

function stepsText(r: Range): string {
  const range = formatQuantityRange(r);
  return range === formatQuantity(r.expected) ? range : `${formatQuantity(r.expected)} (${range})`;
}

function hoursText(s: SideSummary): string {
  if (s.hours === undefined) return "unknown";
  const days = s.days === undefined ? "" : `, ${formatQuantity(s.days.expected)} days`;
  return `${formatQuantity(s.hours.expected)} h (${formatQuantityRange(s.hours)} h${days})`;
}

/** "what → what" for the run's facts that changed (chosen candidate, steps, hours), each once. */
export function runChanges(d: CostDiff): string[] {
  const out: string[] = [];
  if (d.chosenChanged) out.push(`Chosen: ${chosenText(d.base.chosen)} → ${chosenText(d.head.chosen)}`);
  if (d.stepsChanged) out.push(`Steps: ${stepsText(d.base.steps)} → ${stepsText(d.head.steps)}`);
  if (d.hoursChanged) out.push(`Hours: ${hoursText(d.base)} → ${hoursText(d.head)}`);
  return out;
}

function recipeText(s: SideSummary): string {
  return `${s.recipe.file ?? s.recipe.name} (sha256 ${s.recipe.hash.slice(0, 12)})`;
}

// ---------------------------------------------------------------- terminal

export function diffTable(d: CostDiff): string {
  const L: string[] = [];
  L.push(`Cost diff: ${recipeText(d.base)} → ${recipeText(d.head)}`);
  L.push(diffHeadline(d));
  for (const c of runChanges(d)) L.push(c);
  const changed = d.lines.filter((l) => l.status !== "unchanged");
  L.push("");
  if (changed.length === 0) L.push(" No line changed.");
  const head = ["", "STATUS", "BASE (low – exp – high)", "HEAD (low – exp – high)", "CHANGE (expected)"];
  const rows = changed.map((l) => [`${"  ".repeat(l.depth)}${l.label}`, l.status, sideText(l.base), sideText(l.head), changeText(l)]);
  const totals = (["CNY", "USD"] as const).map((c) => [
    `TOTAL (${c})`, "", totalText(d.base, c), totalText(d.head, c),
    d.totals.comparable ? `${changeTriple(d.totals.change[c], c)}${d.totals.incomplete ? " (priced lines only)" : ""}` : "not comparable",
  ]);
  L.push(...alignColumns([head, ...rows, ...totals]).map((l) => ` ${l}`));
  const unchanged = d.lines.length - changed.length;
  L.push("", ` ${unchanged} line${unchanged === 1 ? "" : "s"} unchanged; the total change is head − base for low, expected and high each.`);
  const notes = incompleteNotes(d);
  if (notes.length > 0) L.push(...notes.map((n) => `  - ${n}`));
  if (d.fxDiffers) L.push("  - the two estimates used different exchange rates: USD and CNY totals are not strictly comparable");
  L.push(`Exchange rate: ${formatFx(d.fx)}`);
  return L.join("\n");
}

// ---------------------------------------------------------------- Markdown (a pull-request comment)

function cell(s: string): string {
  return s.replace(/\|/g, "\\|").replace(/\r?\n/g, " ");
}

function mdTable(head: readonly string[], rows: readonly (readonly string[])[]): string[] {
  return [`| ${head.map(cell).join(" | ")} |`, `|${head.map((_, i) => (i === 0 ? "---" : "---:")).join("|")}|`, ...rows.map((r) => `| ${r.map(cell).join(" | ")} |`)];
}

/** Backticks around text with Markdown syntax characters, so it shows as written. */
function literal(s: string): string {
  return /[*_`[\]<>#]/.test(s) ? `\`${s.replace(/`/g, "'")}\`` : s;
}

function lineRow(l: LineDiff): string[] {
  const label = `${"\u00a0\u00a0".repeat(l.depth)}${literal(l.label)}${l.status === "added" || l.status === "removed" ? ` *(${l.status})*` : ""}`;
  const side = (s: LineSide | undefined) => (s?.kind === "rate-needed" ? `**${sideText(s)}**` : sideText(s));
  return [label, side(l.base), side(l.head), changeText(l)];
}

export function diffMarkdown(d: CostDiff): string {
  const L: string[] = [];
  L.push(`### rlpipe cost diff: ${literal(d.head.recipe.name)}`, "");
  L.push(`**${diffHeadline(d)}**`, "");
  for (const c of runChanges(d)) L.push(`- ${literal(c)}`);
  for (const n of incompleteNotes(d)) L.push(`- ${n}`);
  if (runChanges(d).length > 0 || d.totals.incomplete) L.push("");
  const changed = d.lines.filter((l) => l.status !== "unchanged");
  const totals = (["CNY", "USD"] as const).map((c) => [
    `**Total (${c})**`, totalText(d.base, c), totalText(d.head, c),
    d.totals.comparable ? `**${changeTriple(d.totals.change[c], c)}**${d.totals.incomplete ? " (priced lines only)" : ""}` : "not comparable",
  ]);
  L.push(...mdTable(["Line", "Base (low – exp – high)", "Head (low – exp – high)", "Change (expected)"], [...changed.map(lineRow), ...totals]));
  const unchanged = d.lines.filter((l) => l.status === "unchanged");
  if (unchanged.length > 0) {
    L.push("", `<details><summary>${unchanged.length} unchanged line${unchanged.length === 1 ? "" : "s"}</summary>`, "");
    L.push(...mdTable(["Line", "Cost (low – exp – high)"], unchanged.map((l) => [lineRow(l)[0]!, sideText(l.head)])));
    L.push("", "</details>");
  }
  L.push("", "<details><summary>Run and prices</summary>", "");
  L.push(`- **Base:** ${literal(recipeText(d.base))}: ${literal(chosenText(d.base.chosen))}; ${stepsText(d.base.steps)} steps; ${hoursText(d.base)}`);
  L.push(`- **Head:** ${literal(recipeText(d.head))}: ${literal(chosenText(d.head.chosen))}; ${stepsText(d.head.steps)} steps; ${hoursText(d.head)}`);
  L.push(`- **Exchange rate:** ${formatFx(d.fx)}${d.fxDiffers ? " (the base used another; totals in the other currency are not strictly comparable)" : ""}`);
  L.push("- The total change is head − base for low, expected and high each; both recipes are priced at the same options.");
  L.push("", "</details>", "");
  return L.join("\n");
}

// ---------------------------------------------------------------- JSON

/** The diff as data (schema rlpipe.cost-diff, version 1). */
export function diffJson(d: CostDiff): string {
  return `${JSON.stringify(d, null, 2)}\n`;
}
