// Estimate vs actual (`rlpipe cost --run`), per line: the estimate's expected quantity and cost next to what the run
// used and cost at the same rate, and the difference — as terminal text, Markdown, and an HTML section that goes
// into the report page. Lines that were not measured say why (their source).
import { linesNeedingRates } from "../budget-check.js";
import type { CostLine, CostReport, Currency } from "../types.js";
import { formatMoney, formatQuantity } from "./format.js";
import { escapeHtml } from "./html.js";
import { alignColumns } from "./table.js";
import { pricesSnippet } from "./view.js";

export interface ActualRow {
  readonly label: string;
  readonly unit: string;
  readonly estQuantity: string;
  readonly quantity: string;
  readonly estCost: string;
  readonly cost: string;
  readonly diff: string;
  readonly source: string;
}

function flat(lines: readonly CostLine[], depth = 0): { line: CostLine; depth: number }[] {
  return lines.flatMap((l) => [{ line: l, depth }, ...flat(l.children ?? [], depth + 1)]);
}

const signedMoney = (v: number, c: Currency) => (v > 0 ? `+${formatMoney(v, c)}` : formatMoney(v, c));

export function actualRows(report: CostReport): ActualRow[] {
  const actual = new Map((report.actual?.lines ?? []).map((a) => [a.id, a]));
  return flat(report.lines).map(({ line, depth }) => {
    const a = actual.get(line.id);
    const est = line.cost?.expected;
    const cur = line.currency ?? a?.currency;
    const same = a?.cost !== undefined && est !== undefined && a.currency === line.currency;
    const pct = est === 0 || !same ? 0 : Math.round(((a.cost! - est) / est) * 100);
    const diff = same ? `${signedMoney(a.cost! - est, a.currency!)}${est === 0 ? "" : ` (${pct > 0 ? "+" : pct < 0 ? "−" : ""}${Math.abs(pct)}%)`}` : "";
    return {
      label: `${"  ".repeat(depth)}${line.label}`,
      unit: line.unit,
      estQuantity: formatQuantity(line.quantity.expected),
      quantity: a?.quantity === undefined ? "—" : formatQuantity(a.quantity),
      estCost: est === undefined || cur === undefined ? (line.rateNeeded !== undefined ? "rate needed" : line.includedIn !== undefined ? "included" : "—") : formatMoney(est, cur),
      cost: a?.cost === undefined || a.currency === undefined ? "—" : formatMoney(a.cost, a.currency),
      diff,
      source: a?.source ?? "not measured",
    };
  });
}

/** "3 lines without a rate". */
function withoutRate(n: number): string {
  return `${n} line${n === 1 ? "" : "s"} without a rate`;
}

/**
 * The totals, estimated and actual. A total never reads ¥0 / $0 because lines had no rate: with nothing priced (or
 * only ¥0 priced) it is "unknown (N lines without a rate)"; with some priced it is "at least" their sum, and says
 * how many lines it leaves out.
 */
export function actualTotals(report: CostReport): { est: string; actual: string; missing: number } {
  const missing = linesNeedingRates(report.lines).length;
  const money = (cny: number, usd: number) => `${formatMoney(cny, "CNY")} / ${formatMoney(usd, "USD")}`;
  const total = (t: { CNY: number; USD: number } | undefined, what: string): string => {
    if (missing === 0) return t === undefined ? `unknown: no ${what} has a rate` : money(t.CNY, t.USD);
    if (t === undefined || t.CNY <= 0) return `unknown (${withoutRate(missing)})`;
    return `at least ${money(t.CNY, t.USD)} (${withoutRate(missing)})`;
  };
  const priced = flat(report.lines).some(({ line }) => line.cost !== undefined);
  return {
    est: total(priced ? { CNY: report.totals.CNY.expected, USD: report.totals.USD.expected } : undefined, "line"),
    actual: total(report.actual?.total, "measured line"),
    missing,
  };
}

/** The rates to add, as YAML for the recipe's prices: (empty when every line has one). */
function addRates(report: CostReport): string[] {
  const yaml = pricesSnippet(report);
  if (yaml === undefined) return [];
  return ["To price the lines without a rate, add this under prices: in the recipe (or pass it as --rates FILE), each <price> replaced:", "", yaml.trimEnd()];
}

const HEAD = ["LINE", "UNIT", "EST. QTY", "ACTUAL QTY", "EST. COST", "ACTUAL COST", "DIFFERENCE"];
const NOTE = "Actual costs use the rates the estimate used (recorded at deploy); only measured lines count in the actual total, so compare it with the lines that have an actual cost.";

export function actualTable(report: CostReport): string {
  const a = report.actual;
  if (a === undefined) return "";
  const rows = actualRows(report);
  const t = actualTotals(report);
  const L = [` Estimate vs actual: run ${a.run}`];
  L.push(...alignColumns([HEAD, ...rows.map((r) => [r.label, r.unit, r.estQuantity, r.quantity, r.estCost, r.cost, r.diff]), ["TOTAL (CNY / USD)", "", "", "", t.est, t.actual, ""]], new Set([2, 3])).map((l) => ` ${l}`));
  L.push(` ${NOTE}`, "", "Where the actual figures come from:");
  for (const r of rows) L.push(`  - ${r.label.trim()}: ${r.source}`);
  const add = addRates(report);
  if (add.length > 0) L.push("", ...add);
  return L.join("\n");
}

const cell = (s: string) => s.replace(/\|/g, "\\|");

export function actualMarkdown(report: CostReport): string {
  const a = report.actual;
  if (a === undefined) return "";
  const rows = actualRows(report);
  const t = actualTotals(report);
  const add = addRates(report);
  return [
    `## Estimate vs actual: run ${a.run}`, "",
    `| ${[...HEAD, "SOURCE"].map((h) => h.toLowerCase()).join(" | ")} |`,
    `|${[...HEAD, "SOURCE"].map((_, i) => (i >= 2 && i <= 6 ? " ---: " : " --- ")).join("|")}|`,
    ...rows.map((r) => `| ${[r.label.replace(/^ +/, (s) => "\u00a0".repeat(s.length)), r.unit, r.estQuantity, r.quantity, r.estCost, r.cost, r.diff, r.source].map(cell).join(" | ")} |`),
    `| **total (CNY / USD)** | | | | ${t.est} | ${t.actual} | | |`, "", NOTE, "",
    ...(add.length === 0 ? [] : [add[0]!, "", "```yaml", add[2]!, "```", ""]),
  ].join("\n");
}

/** The section; `snippet: false` where the page around it already shows the prices: block (the cost page does). */
export function actualHtml(report: CostReport, opts: { readonly snippet?: boolean } = {}): string {
  const a = report.actual;
  if (a === undefined) return "";
  const rows = actualRows(report);
  const t = actualTotals(report);
  const add = opts.snippet === false ? [] : addRates(report);
  const td = (s: string, num = false) => `<td${num ? ' class="num"' : ""}>${escapeHtml(s)}</td>`;
  return `<section id="actual">
<h2>${escapeHtml(`Estimate vs actual: run ${a.run}`)}</h2>
<table>
<thead><tr>${[...HEAD, "SOURCE"].map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr></thead>
<tbody>
${rows.map((r) => `<tr>${td(r.label)}${td(r.unit)}${td(r.estQuantity, true)}${td(r.quantity, true)}${td(r.estCost, true)}${td(r.cost, true)}${td(r.diff, true)}${td(r.source)}</tr>`).join("\n")}
<tr class="total">${td("TOTAL (CNY / USD)")}${td("")}${td("")}${td("")}${td(t.est, true)}${td(t.actual, true)}${td("")}${td("")}</tr>
</tbody>
</table>
<p>${escapeHtml(NOTE)}</p>
${add.length === 0 ? "" : `<p>${escapeHtml(add[0]!)}</p>\n<pre class="snippet">${escapeHtml(add[2]!)}</pre>\n`}</section>
`;
}

/** The report page with the estimate-vs-actual section before its price sources (or at the end of the page). */
export function withActualHtml(page: string, report: CostReport): string {
  const section = actualHtml(report, { snippet: false });
  if (section === "") return page;
  const at = page.indexOf("<h2>Price sources</h2>");
  if (at >= 0) return `${page.slice(0, at)}${section}${page.slice(at)}`;
  return page.replace("</main>", `${section}</main>`);
}
