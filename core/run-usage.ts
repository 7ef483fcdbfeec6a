// What a run used of rlpipe's functions, as the functions counted it: requests to the reward/tool function, the
// samples scored, the programs actually run (evaluated: GRPO groups repeat answers, and repeats are cached), the
// sandbox time they took, and the function's own busy time. `rlpipe cost --run` compares these with the estimate.
//
// Where it is kept: every function instance keeps cumulative counters per run and writes them, after each request
// it counted, to `<run>/usage/<instance>.json` in its usage store (`rlpipe serve --usage-store`, RLPIPE_USAGE_STORE
// for a cloud function). One object per instance, written only by that instance, so concurrent instances never
// race on a read-modify-write; a reader sums every instance's object. The job names its run by sending the
// X-Rlpipe-Run header (the reward shim sends $RLPIPE_RUN) or a /r/<run>/ path prefix (verl's stock tool client
// sends no headers, but its URL is configurable).
import { z } from "zod";

export const USAGE_RUN_HEADER = "x-rlpipe-run";
export const usageLayout = {
  prefix: (run: string) => `${run}/usage/`,
  object: (run: string, instance: string) => `${run}/usage/${instance}.json`,
} as const;

export const UsageCounters = z.object({
  /** Requests answered (rewards batches and tool calls). */
  requests: z.number().int().nonnegative(),
  /** Of which /v1/rewards batches. */
  rewardRequests: z.number().int().nonnegative(),
  /** Of which tool calls (/run_code). */
  toolCalls: z.number().int().nonnegative(),
  /** Samples in the rewards batches. */
  samples: z.number().int().nonnegative(),
  /** Programs run in a sandbox (distinct answers of a batch not found in the cache, plus tool calls). */
  evaluated: z.number().int().nonnegative(),
  cacheHits: z.number().int().nonnegative(),
  /** Sandbox time of the programs run: what a per-second sandbox (E2B, AGS) bills, per vCPU. */
  sandboxSeconds: z.number().nonnegative(),
  /** Time the function spent answering (its billed duration on a per-ms platform). */
  functionSeconds: z.number().nonnegative(),
});
export type UsageCounters = z.infer<typeof UsageCounters>;

export const UsageRecord = z.object({
  schema: z.literal("rlpipe.run-usage"),
  version: z.literal(1),
  run: z.string(),
  /** The function instance that counted (one record each). */
  instance: z.string(),
  /** Where it ran: local, lambda, functiongraph, scf. */
  platform: z.string(),
  /** The sandbox backend the programs ran in (local, scalebox, e2b). */
  sandbox: z.string().optional(),
  /** Memory of the function instance (GB-seconds = functionSeconds × memoryMb / 1024), when the platform says. */
  memoryMb: z.number().positive().optional(),
  firstAt: z.string(),
  lastAt: z.string(),
  counters: UsageCounters,
});
export type UsageRecord = z.infer<typeof UsageRecord>;

export const ZERO_COUNTERS: UsageCounters = { requests: 0, rewardRequests: 0, toolCalls: 0, samples: 0, evaluated: 0, cacheHits: 0, sandboxSeconds: 0, functionSeconds: 0 };

export function addCounters(a: UsageCounters, b: Partial<UsageCounters>): UsageCounters {
  const out: Record<string, number> = { ...a };
  for (const [k, v] of Object.entries(b)) if (typeof v === "number") out[k] = (out[k] ?? 0) + v;
  // Seconds are kept to the millisecond: sums of many small floats must not drift in the report.
  out["sandboxSeconds"] = Math.round(out["sandboxSeconds"]! * 1000) / 1000;
  out["functionSeconds"] = Math.round(out["functionSeconds"]! * 1000) / 1000;
  return out as UsageCounters;
}

/** A run's usage over every instance that counted it. */
export interface RunUsage {
  readonly run: string;
  readonly counters: UsageCounters;
  /** function GB-seconds, where every instance said its memory. */
  readonly gbSeconds?: number;
  readonly instances: number;
  readonly sandboxes: readonly string[];
  readonly firstAt?: string;
  readonly lastAt?: string;
}

export function sumUsage(run: string, records: readonly UsageRecord[]): RunUsage {
  let counters = ZERO_COUNTERS;
  let gb = 0;
  let gbKnown = records.length > 0;
  for (const r of records) {
    counters = addCounters(counters, r.counters);
    if (r.memoryMb === undefined) gbKnown = false;
    else gb += (r.counters.functionSeconds * r.memoryMb) / 1024;
  }
  const firsts = records.map((r) => r.firstAt).sort();
  const lasts = records.map((r) => r.lastAt).sort();
  return {
    run, counters, instances: records.length,
    sandboxes: [...new Set(records.map((r) => r.sandbox).filter((s): s is string => s !== undefined))].sort(),
    ...(gbKnown ? { gbSeconds: Math.round(gb * 1000) / 1000 } : {}),
    ...(firsts[0] === undefined ? {} : { firstAt: firsts[0] }),
    ...(lasts.at(-1) === undefined ? {} : { lastAt: lasts.at(-1)! }),
  };
}
