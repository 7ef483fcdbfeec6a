// Estimate vs actual of a deployed run (`rlpipe cost --run <name>`): the estimate recorded at deploy (or, for a
// record written before estimates were kept, the estimate made again from the recorded recipe with the recorded
// prices), the provider's billable time of the job, and the usage rlpipe's function counted for the run in its usage
// store (core/run-usage.ts). core/cost/actual.ts puts them side by side.
import { type ComputeMeasure, type RunMeasurements, withActual } from "../core/cost/actual.js";
import { DEFAULT_SANDBOX } from "../core/cost/quantities.js";
import type { CostReport, Rate } from "../core/cost/types.js";
import type { PriceAssumption } from "../core/prices.js";
import type { Provider, Recipe } from "../core/recipe/schema.js";
import { type RunUsage, UsageRecord, sumUsage, usageLayout } from "../core/run-usage.js";
import { type JobBilling, type RetryPolicy, billingFromStatus, withRetry } from "../adapters/providers/provider.js";
import type { RunRecord } from "../adapters/providers/run-records.js";
import { type ObjectStore, openStore } from "../adapters/storage/store.js";
import { type AdapterLoader, recipeOfRecord, withRecordAdapter } from "./deploy.js";

/** Makes the estimate of a recipe on a provider with the given user rates (core/cost/estimate.ts's estimateCost). */
export type EstimateFn = (recipe: Recipe, provider: Provider, userRates: readonly Rate[], now: Date) => CostReport;

export interface RunCostOptions {
  readonly record: RunRecord;
  readonly load: AdapterLoader;
  /** For a record without a recorded estimate. */
  readonly estimate: EstimateFn;
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Where the function wrote the run's usage (default: the run's store, record.store). */
  readonly usageStore?: string;
  readonly openUsageStore?: (uri: string) => Promise<Pick<ObjectStore, "list" | "get" | "close">>;
  readonly statusPolicy?: RetryPolicy;
  readonly now?: () => Date;
  /**
   * When the provider cannot be asked the job's billable time: "throw" (default: `rlpipe cost --run` fails), or
   * "unmeasured" (the report keeps the estimate and says why compute was not measured — a run's page).
   */
  readonly billingFailure?: "throw" | "unmeasured";
}

export interface RunCost {
  readonly report: CostReport;
  /** How the estimate was obtained: recorded at deploy, or made again. */
  readonly estimateFrom: "recorded" | "recomputed";
  readonly measurements: RunMeasurements;
}

/** The record's prices (core/prices.ts assumptions) as user rates: what was assumed at deploy wins again. */
export function ratesOfRecord(record: RunRecord): Rate[] {
  const day = record.createdAt.slice(0, 10);
  return record.prices.map((p: PriceAssumption): Rate => ({
    id: p.item, value: p.value, currency: p.currency, unit: p.unit, source: `recorded at deploy (${p.source})`, dateRead: day,
    confidence: p.confidence === "recipe" ? "user" : p.confidence === "high" ? "official" : p.confidence,
  }));
}

/** The estimate kept in the record when it is one this rlpipe reads. */
export function recordedEstimate(record: RunRecord): CostReport | undefined {
  const c = record.cost as unknown as Partial<CostReport> | undefined;
  if (c === undefined || c.schema !== "rlpipe.cost-report" || c.version !== 1 || !Array.isArray(c.lines) || !Array.isArray(c.candidates) || c.fx === undefined) return undefined;
  return c as CostReport;
}

/** Billable time of the run's job: the adapter's own figure, else from its status's start and end. */
export async function billingOfRun(record: RunRecord, load: AdapterLoader, policy: RetryPolicy = {}, now = new Date()): Promise<JobBilling | undefined> {
  return withRecordAdapter(record, load, async (adapter, ref) => {
    const op = { provider: record.provider, op: "billable time" };
    if (adapter.billing !== undefined) return withRetry(op, (s) => adapter.billing!(ref, s), policy);
    const status = await withRetry({ provider: record.provider, op: "status" }, (s) => adapter.status(ref, s), policy);
    return billingFromStatus(status, record.provider === "local" ? "local runner start/exit times (wall time)" : `${record.provider} job start/end times`, now);
  });
}

/** Every instance's usage record of `run` in `store`, summed; undefined when no instance wrote one. */
export async function readRunUsage(store: Pick<ObjectStore, "list" | "get">, run: string): Promise<{ usage?: RunUsage; problems: string[] }> {
  const problems: string[] = [];
  const records: UsageRecord[] = [];
  for (const o of await store.list(usageLayout.prefix(run))) {
    if (!o.key.endsWith(".json")) continue;
    try {
      const r = UsageRecord.safeParse(JSON.parse((await store.get(o.key)).toString("utf8")));
      if (r.success && r.data.run === run) records.push(r.data);
      else problems.push(`${o.key}: not a usage record of ${run}`);
    } catch (e) {
      problems.push(`${o.key}: ${(e as Error).message}`);
    }
  }
  records.sort((a, b) => (a.instance < b.instance ? -1 : 1));
  return { ...(records.length === 0 ? {} : { usage: sumUsage(run, records) }), problems };
}

/** Sandbox size for vcpu-/gib- lines: the recipe's cost.usage, else the estimate's default (E2B's default sandbox). */
export function sandboxSize(recipe: Recipe): { vcpus: number; memoryGiB: number; source: string } {
  const u = recipe.cost?.usage;
  const vcpus = u?.sandboxVcpus;
  const mem = u?.sandboxMemoryGiB;
  const source = vcpus !== undefined && mem !== undefined ? "recipe cost.usage" : vcpus === undefined && mem === undefined ? "the estimate's default sandbox size" : "recipe cost.usage and the estimate's default";
  return { vcpus: vcpus ?? DEFAULT_SANDBOX.vcpus, memoryGiB: mem ?? DEFAULT_SANDBOX.memoryGiB, source };
}

export async function costOfRun(opts: RunCostOptions): Promise<RunCost> {
  const { record } = opts;
  const now = (opts.now ?? (() => new Date()))();
  const recipe = recipeOfRecord(record);
  const recorded = recordedEstimate(record);
  const estimate = recorded ?? opts.estimate(recipe, record.provider as Provider, ratesOfRecord(record), new Date(record.createdAt));

  let compute: ComputeMeasure | undefined;
  let computeMissing: string | undefined;
  let billing: JobBilling | undefined;
  try {
    billing = await billingOfRun(record, opts.load, opts.statusPolicy, now);
    if (billing === undefined) computeMissing = `${record.provider} says the job has not started`;
  } catch (e) {
    if (opts.billingFailure !== "unmeasured") throw e;
    computeMissing = `${record.provider} could not be asked the job's billable time (${(e as Error).message})`;
  }
  if (billing !== undefined) compute = { hours: billing.seconds / 3600, running: billing.running, source: billing.source };

  const uri = opts.usageStore ?? record.store;
  let usage: RunUsage | undefined;
  let usageSource: string;
  if (uri === undefined) {
    usageSource = "no usage store: the run has no store (checkpoints.storage) and none was given";
  } else {
    const store = await (opts.openUsageStore ?? ((u: string) => openStore(u, opts.env ?? process.env)))(uri);
    try {
      const read = await readRunUsage(store, record.name);
      usage = read.usage;
      const where = `${uri.replace(/\/+$/, "")}/${usageLayout.prefix(record.name)}`;
      usageSource = usage === undefined
        ? `no usage recorded under ${where} (the function counts runs named by X-Rlpipe-Run; rlpipe serve writes them with --usage-store)`
        : `function usage at ${where} (${usage.instances} instance${usage.instances === 1 ? "" : "s"})`;
      if (read.problems.length > 0) usageSource += `; skipped: ${read.problems.join("; ")}`;
    } finally {
      await store.close();
    }
  }
  const memory = recipe.cost?.usage?.functionMemoryMB;
  const measurements: RunMeasurements = {
    run: record.name,
    ...(compute === undefined ? {} : { compute }), ...(computeMissing === undefined ? {} : { computeMissing }),
    ...(usage === undefined ? {} : { usage }), usageSource,
    sandbox: sandboxSize(recipe),
    ...(memory === undefined ? {} : { functionMemoryMb: memory }),
  };
  return { report: withActual(estimate, measurements), estimateFrom: recorded === undefined ? "recomputed" : "recorded", measurements };
}
