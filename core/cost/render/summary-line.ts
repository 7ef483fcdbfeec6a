// The estimate in one line, for `rlpipe plan` and `rlpipe deploy` (and the console's dry run): the total range in
// CNY and USD, the expected figure, how many rates are missing, the budget verdict, and where the breakdown is.
import { type BudgetCap, checkBudget, linesNeedingRates } from "../budget-check.js";
import type { CostReport } from "../types.js";
import { formatMoney, formatMoneyRange } from "./format.js";

/**
 * "≈ ¥1,200–¥2,300 / $167–$319 (expected ¥1,650; 2 rates needed, not included — rlpipe cost for the breakdown)".
 * `command` is what to run for the breakdown (default "rlpipe cost"; false: no pointer).
 */
export function formatCostSummary(report: CostReport, opts: { budget?: BudgetCap; command?: string | false } = {}): string {
  const { CNY, USD, incomplete } = report.totals;
  const missing = linesNeedingRates(report.lines).length;
  const command = opts.command ?? "rlpipe cost";
  const priced = CNY.high > 0 || !incomplete;
  const notes: string[] = [];
  if (priced) notes.push(`expected ${formatMoney(CNY.expected, "CNY")}`);
  if (incomplete) notes.push(`${Math.max(1, missing)} rate${missing === 1 ? "" : "s"} needed, not included`);
  const budget = opts.budget ?? report.budget;
  if (budget !== undefined) {
    const check = checkBudget(report, budget);
    notes.push(`budget ${formatMoney(budget.cap, budget.currency)}: ${check.status.toUpperCase()}`);
  }
  const head = priced ? `≈ ${formatMoneyRange(CNY, "CNY")} / ${formatMoneyRange(USD, "USD")}` : "unknown: no line has a rate";
  return `${head} (${notes.join("; ")}${command === false ? "" : ` — ${command} for the breakdown`})`;
}
