// Estimate vs actual (`rlpipe cost --run`), per line: the estimate's expected quantity and cost next to what the run
// used and cost at the same rate, and the difference — as terminal text, Markdown, and an HTML section that goes
// into the report page. Lines that were not measured say why (their source).
import type { CostLine, CostReport, Currency } from "../types.js";
import { formatMoney, formatQuantity } from "./format.js";
import { escapeHtml } from "./html.js";
import { alignColumns } from "./table.js";

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

/** The totals row. No priced line is an unknown total, as `rlpipe cost` says it — never ¥0 / $0. */
function totals(report: CostReport): { est: string; actual: string } {
  const t = report.actual?.total;
  const priced = !report.totals.incomplete || flat(report.lines).some(({ line }) => line.cost !== undefined);
  return {
    est: priced ? `${formatMoney(report.totals.CNY.expected, "CNY")} / ${formatMoney(report.totals.USD.expected, "USD")}` : "unknown: no line has a rate",
    actual: t === undefined ? "unknown: no measured line has a rate" : `${formatMoney(t.CNY, "CNY")} / ${formatMoney(t.USD, "USD")}`,
  };
}

const HEAD = ["LINE", "UNIT", "EST. QTY", "ACTUAL QTY", "EST. COST", "ACTUAL COST", "DIFFERENCE"];
const NOTE = "Actual costs use the rates the estimate used (recorded at deploy); only measured lines count in the actual total, so compare it with the lines that have an actual cost.";

export function actualTable(report: CostReport): string {
  const a = report.actual;
  if (a === undefined) return "";
  const rows = actualRows(report);
  const t = totals(report);
  const L = [` Estimate vs actual: run ${a.run}`];
  L.push(...alignColumns([HEAD, ...rows.map((r) => [r.label, r.unit, r.estQuantity, r.quantity, r.estCost, r.cost, r.diff]), ["TOTAL (CNY / USD)", "", "", "", t.est, t.actual, ""]], new Set([2, 3])).map((l) => ` ${l}`));
  L.push(` ${NOTE}`, "", "Where the actual figures come from:");
  for (const r of rows) L.push(`  - ${r.label.trim()}: ${r.source}`);
  return L.join("\n");
}

const cell = (s: string) => s.replace(/\|/g, "\\|");

export function actualMarkdown(report: CostReport): string {
  const a = report.actual;
  if (a === undefined) return "";
  const rows = actualRows(report);
  const t = totals(report);
  return [
    `## Estimate vs actual: run ${a.run}`, "",
    `| ${[...HEAD, "SOURCE"].map((h) => h.toLowerCase()).join(" | ")} |`,
    `|${[...HEAD, "SOURCE"].map((_, i) => (i >= 2 && i <= 6 ? " ---: " : " --- ")).join("|")}|`,
    ...rows.map((r) => `| ${[r.label.replace(/^ +/, (s) => "\u00a0".repeat(s.length)), r.unit, r.estQuantity, r.quantity, r.estCost, r.cost, r.diff, r.source].map(cell).join(" | ")} |`),
    `| **total (CNY / USD)** | | | | ${t.est} | ${t.actual} | | |`, "", NOTE, "",
  ].join("\n");
}

export function actualHtml(report: CostReport): string {
  const a = report.actual;
  if (a === undefined) return "";
  const rows = actualRows(report);
  const t = totals(report);
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
</section>
`;
}

/** The report page with the estimate-vs-actual section before its price sources (or at the end of the page). */
export function withActualHtml(page: string, report: CostReport): string {
  const section = actualHtml(report);
  if (section === "") return page;
  const at = page.indexOf("<h2>Price sources</h2>");
  if (at >= 0) return `${page.slice(0, at)}${section}${page.slice(at)}`;
  return page.replace("</main>", `${section}</main>`);
}
