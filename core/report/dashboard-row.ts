// One run as one row of `rlpipe dashboard`: the phase, progress (step of total), latest reward, the sandbox's
// infrastructure error rate over the last steps, the cost so far and the estimate — summarized from the data a run
// page is made of (run-page-data.ts), so the table and the page never disagree. Pure.
import type { CostLine, Range } from "../cost/types.js";
import { latestValues } from "../metrics.js";
import { type Phase, isTerminal } from "../providers/phases.js";
import type { RunPageData, StoredRun } from "./run-page-data.js";

/** Steps of sandbox health the error rate is taken over (the run page's health table shows as many). */
export const ERROR_RATE_STEPS = 10;

export interface DashboardRow {
  readonly run: string;
  readonly provider: string;
  readonly region?: string;
  readonly recipe: string;
  readonly submittedAt: string;
  /** The provider's phase now, else the one last recorded, else UNKNOWN. */
  readonly phase: Phase;
  /** Why the provider could not be asked (the phase is then the one last seen). */
  readonly statusUnavailable?: string;
  /** Not ended (or not known to have ended): its pages reload. */
  readonly live: boolean;
  /** The latest step recorded (undefined: no metrics) of the total the estimate counts (undefined: unknown). */
  readonly progress: { readonly step?: number; readonly total?: number; readonly stage?: string };
  readonly latestReward?: { readonly value: number; readonly step: number; readonly run: string };
  /** Infrastructure errors and requests summed over the last ERROR_RATE_STEPS steps of sandbox health. */
  readonly sandbox?: { readonly infraErrors: number; readonly requests: number; readonly steps: number };
  /** In CNY. `why` when the cost could not be read or has no rates. */
  readonly cost: { readonly soFar?: number; readonly estimate?: Range; readonly why?: string };
  /** Why the store could not be read (no progress, reward or sandbox figures then). */
  readonly storeUnavailable?: string;
}

const lastStep = (r: StoredRun): number | undefined => {
  let max: number | undefined;
  for (const s of r.series) for (const [step] of s.points) if (max === undefined || step > max) max = step;
  return max;
};

const training = (r: StoredRun) => new Map(r.series.filter((s) => !s.name.startsWith("sandbox/") && s.points.length > 0).map((s) => [s.name, s.points]));

const hasRates = (lines: readonly CostLine[]): boolean => lines.some((l) => l.cost !== undefined || hasRates(l.children ?? []));

export function dashboardRow(d: RunPageData): DashboardRow {
  const phase: Phase = d.status.ok ? d.status.value.phase : d.lastSeen?.phase ?? "UNKNOWN";
  const report = d.cost.ok ? d.cost.value.report : undefined;
  // The stage the estimate counts steps for: the longest one with steps (as the estimate's own `steps`).
  const main = [...(report?.stages ?? [])].filter((s) => s.steps !== undefined).sort((a, b) => b.hours.expected - a.hours.expected || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))[0];
  const total = main?.steps?.expected ?? (report !== undefined && report.steps.expected > 0 ? report.steps.expected : undefined);
  const runs = d.outputs.ok ? d.outputs.value.runs : [];
  const mainRun = main === undefined ? undefined : runs.find((r) => r.run === `${d.run}.${main.id}`);
  // The figures of the stage the total counts, else of the last stored run (name order) that has them.
  const pick = <T>(f: (r: StoredRun) => T | undefined): T | undefined => {
    const own = mainRun === undefined ? undefined : f(mainRun);
    if (own !== undefined) return own;
    for (const r of [...runs].reverse()) { const v = f(r); if (v !== undefined) return v; }
    return undefined;
  };
  // A known stage's step only counts against its own total: another stage's step would read as its progress.
  const step = main !== undefined ? (mainRun === undefined ? undefined : lastStep(mainRun)) : pick(lastStep);
  const latestReward = pick((r) => {
    const l = latestValues(training(r)).find((v) => v.label.startsWith("reward"));
    return l === undefined ? undefined : { value: l.value, step: l.step, run: r.run };
  });
  const sandbox = pick((r) => {
    const byStep = new Map<number, { infra?: number; req?: number }>();
    for (const s of r.series) {
      const key = s.name === "sandbox/infra_errors" ? "infra" : s.name === "sandbox/requests" ? "req" : undefined;
      if (key !== undefined) for (const [st, v] of s.points) byStep.set(st, { ...byStep.get(st), [key]: v });
    }
    const steps = [...byStep.keys()].sort((a, b) => a - b).slice(-ERROR_RATE_STEPS);
    if (steps.length === 0) return undefined;
    return {
      infraErrors: steps.reduce((t, st) => t + (byStep.get(st)!.infra ?? 0), 0),
      requests: steps.reduce((t, st) => t + (byStep.get(st)!.req ?? 0), 0),
      steps: steps.length,
    };
  });
  const cost = !d.cost.ok
    ? { why: `cost unavailable: ${d.cost.why}` }
    : !hasRates(d.cost.value.report.lines)
      ? { why: "no rates: cost unknown" }
      : { ...(d.cost.value.report.actual?.total === undefined ? {} : { soFar: d.cost.value.report.actual.total.CNY }), estimate: d.cost.value.report.totals.CNY };
  return {
    run: d.run, provider: d.provider, ...(d.region === undefined ? {} : { region: d.region }), recipe: d.recipe.name, submittedAt: d.submittedAt,
    phase, ...(d.status.ok ? {} : { statusUnavailable: d.status.why }),
    live: !isTerminal(phase),
    progress: { ...(step === undefined ? {} : { step }), ...(total === undefined ? {} : { total }), ...(main === undefined ? {} : { stage: main.id }) },
    ...(latestReward === undefined ? {} : { latestReward }),
    ...(sandbox === undefined ? {} : { sandbox }),
    cost,
    ...(d.outputs.ok ? {} : { storeUnavailable: d.outputs.why }),
  };
}

/** Newest deploy first (as rlpipe list), then by name: the same runs always in the same order. */
export function sortRows<T extends { readonly submittedAt: string; readonly run: string }>(rows: readonly T[]): T[] {
  return [...rows].sort((a, b) => (a.submittedAt < b.submittedAt ? 1 : a.submittedAt > b.submittedAt ? -1 : a.run < b.run ? -1 : a.run > b.run ? 1 : 0));
}
