// The estimate in one line, for `rlpipe plan` and `rlpipe deploy` (and the console's dry run): the total range in
// CNY and USD, the expected figure, how many rates are missing, the budget verdict, and where the breakdown is.
import { type BudgetCap, checkBudget, ratesNeeded } from "../budget-check.js";
import type { CostLine, CostReport } from "../types.js";

function allLines(lines: readonly CostLine[]): CostLine[] {
  return lines.flatMap((l) => [l, ...allLines(l.children ?? [])]);
}
import { formatMoney, formatMoneyRange, formatWallTime } from "./format.js";

/**
 * "≈ ¥1,200–¥2,300 / $167–$319 (expected ¥1,650; run ≈ 10.3 days / 247 h; 2 rates needed, not included — rlpipe cost for the breakdown)".
 * `command` is what to run for the breakdown (default "rlpipe cost"; false: no pointer).
 */
export function formatCostSummary(report: CostReport, opts: { budget?: BudgetCap; command?: string | false } = {}): string {
  const { CNY, USD, incomplete } = report.totals;
  const missing = Math.max(1, ratesNeeded(report.lines).length);
  const command = opts.command ?? "rlpipe cost";
  const priced = !incomplete || allLines(report.lines).some((l) => l.cost !== undefined);
  const notes: string[] = [];
  if (priced) notes.push(`expected ${formatMoney(CNY.expected, "CNY")}`);
  const run = report.runLength;
  if (run !== undefined) {
    const over = run.days.expected > run.maxDays ? `, over ${run.maxDays} days` : "";
    notes.push(`run ≈ ${formatWallTime(run.hours.expected)}${over}`);
  }
  if (incomplete) notes.push(`${missing} rate${missing === 1 ? "" : "s"} needed, not included`);
  const budget = opts.budget ?? report.budget;
  if (budget !== undefined) {
    const check = checkBudget(report, budget);
    notes.push(`budget ${formatMoney(budget.cap, budget.currency)}: ${check.status.toUpperCase()}`);
  }
  const head = priced ? `≈ ${formatMoneyRange(CNY, "CNY")} / ${formatMoneyRange(USD, "USD")}` : "unknown: no line has a rate";
  return `${head} (${notes.join("; ")}${command === false ? "" : ` — ${command} for the breakdown`})`;
}
