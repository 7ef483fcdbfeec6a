// The recipe's budget cap against an estimate. One rule for `rlpipe deploy` and the console's deploy action:
// - over: the expected total is above the cap → refuse (unless forced). When rates are missing, the priced lines
//   alone are a lower bound, so they being above the cap is already "over";
// - unknown: a rate is missing and the priced lines are within the cap → the cap cannot be checked: warn;
// - at-risk: the expected total is within the cap but the high end is not → warn;
// - within: the high end is within the cap.
import { formatMoney, formatMoneyRange } from "./render/format.js";
import type { CostLine, CostReport, Currency } from "./types.js";

export type BudgetStatus = "within" | "over" | "unknown" | "at-risk";

export interface BudgetCap { readonly cap: number; readonly currency: Currency }

export interface BudgetCheck extends BudgetCap {
  readonly status: BudgetStatus;
  /** The estimate's total in the cap's currency (priced lines only when some rate is missing). */
  readonly total: CostReport["totals"]["CNY"];
  /** Rates to supply (distinct items without a rate). */
  readonly ratesNeeded: number;
  /** One sentence with the figures. */
  readonly message: string;
}

/** Every line that has no usable rate, depth first in report order. */
export function linesNeedingRates(lines: readonly CostLine[]): CostLine[] {
  return lines.flatMap((l) => [...(l.rateNeeded === undefined ? [] : [l]), ...linesNeedingRates(l.children ?? [])]);
}

/** The rates to supply: one per item and unit (several lines, e.g. each stage on one flavor, may need the same). */
export function ratesNeeded(lines: readonly CostLine[]): { readonly need: NonNullable<CostLine["rateNeeded"]>; readonly lines: readonly CostLine[] }[] {
  const byItem = new Map<string, { need: NonNullable<CostLine["rateNeeded"]>; lines: CostLine[] }>();
  for (const l of linesNeedingRates(lines)) {
    const key = `${l.rateNeeded!.item}\u0000${l.rateNeeded!.unit}`;
    const seen = byItem.get(key);
    if (seen === undefined) byItem.set(key, { need: l.rateNeeded!, lines: [l] });
    else seen.lines.push(l);
  }
  return [...byItem.values()];
}

/** The verdict alone (the rule above), from the totals: what the report's `budget.status` says. */
export function budgetStatus(totals: CostReport["totals"], budget: BudgetCap): BudgetStatus {
  const t = totals[budget.currency];
  if (t.expected > budget.cap) return "over";
  if (totals.incomplete) return "unknown";
  return t.high > budget.cap ? "at-risk" : "within";
}

export function checkBudget(report: CostReport, budget: BudgetCap): BudgetCheck {
  const total = report.totals[budget.currency];
  const status = budgetStatus(report.totals, budget);
  const missingRates = Math.max(ratesNeeded(report.lines).length, report.totals.incomplete ? 1 : 0);
  const cap = formatMoney(budget.cap, budget.currency);
  const expected = formatMoney(total.expected, budget.currency);
  const range = formatMoneyRange(total, budget.currency);
  const missing = `${missingRates} rate${missingRates === 1 ? "" : "s"} needed`;
  const base = { ...budget, total, ratesNeeded: missingRates };
  if (status === "over") {
    const beyond = report.totals.incomplete ? ` — and that is without the ${missing}` : "";
    return { ...base, status: "over", message: `the estimated cost (expected ${expected}; ${range}) is above the budget cap of ${cap}${beyond}` };
  }
  if (status === "unknown") {
    return { ...base, status: "unknown", message: `the budget cap of ${cap} cannot be checked: the estimate is incomplete (${missing}; the priced lines come to ${range}, expected ${expected})` };
  }
  if (status === "at-risk") {
    return { ...base, status: "at-risk", message: `the expected cost ${expected} is within the budget cap of ${cap}, but the high end of the estimate (${range}) is above it` };
  }
  return { ...base, status: "within", message: `the estimated cost (${range}, expected ${expected}) is within the budget cap of ${cap}` };
}
