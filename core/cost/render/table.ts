// The cost report for a terminal: SkyPilot's candidates table with a chosen mark, dstack's plan header,
// infracost's component tree ending in TOTAL, and show-gpus-style footnotes for what is excluded.
import type { CostReport, Currency } from "../types.js";
import { HOW_TO_SUPPLY, type ReportView, reportView } from "./view.js";

/** Columns padded to their widest cell (two spaces between); numbers right-aligned. */
export function alignColumns(rows: readonly (readonly string[])[], right: ReadonlySet<number> = new Set()): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => { widths[i] = Math.max(widths[i] ?? 0, [...c].length); });
  return rows.map((r) => r.map((c, i) => {
    const pad = " ".repeat(widths[i]! - [...c].length);
    return right.has(i) ? `${pad}${c}` : i === r.length - 1 ? c : `${c}${pad}`;
  }).join("  ").trimEnd());
}

function candidatesTable(v: ReportView): string[] {
  const head = ["PROVIDER", "REGION", "FLAVOR/INSTANCE", "ACCEL", "NODES", "UNIT PRICE", "EST. HOURS", "EST. COST (CNY)", "EST. COST (USD)", "CHOSEN"];
  const rows = v.candidates.map((c) => [c.provider, c.region, c.flavor, c.accelerators, c.nodes, c.unitPrice, c.hours, c.costCNY, c.costUSD, c.chosen ? "✔" : c.note === "" ? "" : `(${c.note})`]);
  return alignColumns([head, ...rows], new Set([4, 6])).map((l) => ` ${l}`);
}

function breakdownTable(v: ReportView): string[] {
  const head = ["", "QTY (low–high)", "UNIT", "UNIT PRICE", "COST (low – exp – high)", "BASIS"];
  const rows = v.breakdown.map((b) => [`${b.prefix}${b.label}`, b.quantity, b.unit, b.unitPrice, b.cost, b.basis]);
  const total = ["TOTAL (CNY)", "", "", "", v.total.CNY, ""];
  const usd = ["TOTAL (USD)", "", "", "", v.total.USD, ""];
  return alignColumns([head, ...rows, total, usd], new Set([1])).map((l) => ` ${l}`);
}

/** ", wall time 10.3 (6.71–17.5) days = 247 (161–420) h": the run's length in days and hours, when known. */
export function wallTime(v: ReportView): string {
  const rl = v.runLength;
  if (rl === undefined) return "";
  // Under a day, days and hours would read "0.000926 days = 0.0222 h": the unit that reads instead.
  const length = rl.expectedDays >= 1 ? `${rl.days} = ${rl.hours}` : `${rl.headline} (${rl.headlineRange})`;
  return `, wall time ${length}${rl.derived ? " (stages' hours summed)" : ""}`;
}

function bullets(items: readonly string[]): string[] {
  return items.map((i) => `  - ${i}`);
}

export function renderTable(v: ReportView): string {
  const L: string[] = [];
  L.push(`${v.title}  (${v.mode})`);
  L.push(`Target: ${v.target}${v.budgetText === undefined ? "" : `      ${v.budgetText}`}`);
  L.push(`Run: ${v.run}${wallTime(v)}`);
  for (const f of v.runLength?.flags ?? []) L.push(`flag: ${f}`);
  L.push(`Exchange rate: ${v.fx}`);
  v.capacity.forEach((c, i) => L.push(`${i === 0 ? "Sandbox capacity:" : "                 "} ${c}`));
  for (const w of v.warnings) L.push(`warning: ${w}`);
  if (v.budget !== undefined && v.budget.status !== "within") L.push(`Budget: ${v.budget.message}`);
  L.push("");
  L.push(` Candidates considered (${v.candidates.length})`);
  L.push(...candidatesTable(v));
  L.push("");
  L.push(` Cost breakdown (chosen: ${v.target})`);
  L.push(...breakdownTable(v));
  L.push(` ${v.total.note}`);
  if (v.notes.length > 0) {
    L.push("");
    L.push("Notes:");
    L.push(...bullets(v.notes));
  }
  if (v.ratesNeeded.length > 0) {
    L.push("");
    L.push(`Rates needed (${v.ratesNeeded.length}):`);
    L.push(...bullets(v.ratesNeeded));
    L.push(`  To supply a rate: ${HOW_TO_SUPPLY}.`);
  }
  L.push("");
  L.push("Assumptions:");
  L.push(...bullets(v.assumptions));
  L.push(`Excluded: ${v.exclusions.length === 0 ? "nothing listed" : v.exclusions.join("; ")}`);
  L.push("");
  L.push("Price sources:");
  L.push(...alignColumns(v.sources.map((s) => [s.id, s.price, s.region, s.confidence, `read ${s.date}`, s.source])).map((l) => `  ${l}`));
  L.push("");
  L.push(`Generated ${v.generatedAt} for ${v.recipe.file ?? v.recipe.name} (sha256 ${v.recipe.hash.slice(0, 12)}); the JSON report (--format json) has every figure.`);
  return L.join("\n");
}

export function costTable(report: CostReport, opts: { budget?: { cap: number; currency: Currency } } = {}): string {
  return renderTable(reportView(report, opts));
}
