// POST /v1/rewards: score a batch of verl-style samples {data_source, solution_str, ground_truth, extra_info}.
// GRPO groups repeat answers, so identical (language, code, tests) are evaluated once per batch and through a
// short-lived cache; sandbox failures are retried with backoff and, if they persist, reported per sample as
// infra_error — never as a 0 score.
import { createHash } from "node:crypto";
import { setMaxListeners } from "node:events";
import { z } from "zod";
import { parseTestCases, TestCaseError } from "../core/grading/cases.js";
import { NO_VERDICT_ABILITIES, planProgram, strictRefusal, verdictBy, type VerdictAbilities, type VerdictBy } from "../core/grading/verdicts.js";
import { detectLanguage, extractCode } from "../core/grading/extract.js";
import { scoreOf } from "../core/grading/grade.js";
import { OutputBudget } from "../core/grading/output-budget.js";
import type { EvalJob, EvalResult } from "../core/grading/types.js";
import { retry } from "../core/util/retry.js";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { type FnRequest, type FnResponse, json, unprocessable } from "./http-types.js";
import { stringifyJson } from "../core/grading/exact-json.js";

const Sample = z.object({
  data_source: z.string().nullable().optional(),
  solution_str: z.string(),
  ground_truth: z.unknown(),
  extra_info: z.record(z.string(), z.unknown()).nullable().optional(),
});

const RewardsRequest = z.object({
  samples: z.array(Sample).min(1).max(4096),
  config: z.object({
    language: z.string().optional(),
    run_timeout_s: z.number().positive().max(600).optional(),
    total_timeout_s: z.number().positive().max(3600).optional(),
    memory_mb: z.number().int().positive().max(65536).optional(),
  }).optional(),
});

export type SampleStatus = "ok" | "no_code" | "invalid_test_cases" | "infra_error";

export interface SampleScore {
  readonly score: number;
  readonly status: SampleStatus;
  readonly passed: number;
  readonly total: number;
  readonly language?: string;
  /** Per-case statuses, in test order. */
  readonly cases?: readonly string[];
  /** How each case's verdict was reached, in test order (core/grading/verdicts.ts). */
  readonly verdicts?: readonly VerdictBy[];
  readonly error?: string;
  readonly cached: boolean;
}

/** A short-lived LRU of evaluation results keyed by (language, code, tests, checker, limits). */
export class ResultCache {
  private readonly entries = new Map<string, { result: EvalResult; expiresAt: number }>();
  hits = 0;
  lookups = 0;
  constructor(private readonly maxEntries = 20_000, private readonly ttlMs = 15 * 60_000, private readonly now: () => number = Date.now) {}

  get(key: string): EvalResult | undefined {
    this.lookups++;
    const e = this.entries.get(key);
    if (e === undefined) return undefined;
    if (e.expiresAt < this.now()) { this.entries.delete(key); return undefined; }
    this.entries.delete(key);
    this.entries.set(key, e); // most recently used last
    this.hits++;
    return e.result;
  }

  set(key: string, result: EvalResult): void {
    if (result.status !== "ok") return; // a sandbox failure is never remembered as an answer
    this.entries.delete(key);
    this.entries.set(key, { result, expiresAt: this.now() + this.ttlMs });
    while (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  get size(): number {
    return this.entries.size;
  }
}

export interface RewardDeps {
  readonly backend: SandboxBackend;
  readonly cache: ResultCache;
  /** Attempts for a job whose sandbox failed (default 3). */
  readonly attempts?: number;
  readonly retryBaseDelayMs?: number;
  /** rlpipe serve --strict-verdicts: a sample whose verdict would be the program's own exit status is not graded. */
  readonly strictVerdicts?: boolean;
}

export function jobKey(job: Omit<EvalJob, "id">): string {
  return createHash("sha256").update(stringifyJson([job.language, job.code, job.tests, job.checker ?? null, job.limits, job.stopOnFirstFailure ?? false])).digest("hex");
}

export async function handleRewards(req: FnRequest, deps: RewardDeps): Promise<FnResponse> {
  const parsed = RewardsRequest.safeParse(req.body);
  if (!parsed.success) return unprocessable(parsed.error.issues);
  const started = performance.now();
  const { samples, config = {} } = parsed.data;
  const out: (SampleScore | undefined)[] = new Array(samples.length).fill(undefined);
  const pending = new Map<string, { job: EvalJob; indices: number[] }>();
  let cacheHits = 0;
  const abilities = deps.backend.verdictAbilities?.() ?? NO_VERDICT_ABILITIES;

  samples.forEach((s, i) => {
    const extra = s.extra_info ?? {};
    const language = languageOf(s, config.language);
    const code = extractCode(s.solution_str, language).code;
    if (code.trim() === "") {
      out[i] = { score: 0, status: "no_code", passed: 0, total: 0, language, error: "no fenced code block in the response", cached: false };
      return;
    }
    let parsedCases;
    try {
      parsedCases = parseTestCases(s.ground_truth, extra);
    } catch (e) {
      if (!(e instanceof TestCaseError)) throw e;
      out[i] = { score: 0, status: "invalid_test_cases", passed: 0, total: 0, language, error: `samples[${i}].ground_truth: ${e.message}`, cached: false };
      return;
    }
    const program = planProgram(language, code, parsedCases, abilities);
    const refusal = deps.strictVerdicts === true ? strictRefusal(program, parsedCases.checker, abilities) : undefined;
    if (refusal !== undefined) {
      out[i] = { score: 0, status: "invalid_test_cases", passed: 0, total: 0, language, error: `samples[${i}].ground_truth: ${refusal}`, cached: false };
      return;
    }
    const job: Omit<EvalJob, "id"> = {
      language: program.language, code: program.code, tests: program.tests,
      ...(parsedCases.checker === undefined ? {} : { checker: parsedCases.checker }),
      limits: { runTimeoutMs: (config.run_timeout_s ?? 10) * 1000, totalTimeoutMs: (config.total_timeout_s ?? 300) * 1000, memoryMb: config.memory_mb ?? 1024 },
    };
    const key = jobKey(job);
    const hit = deps.cache.get(key);
    if (hit !== undefined) {
      cacheHits++;
      out[i] = toScore(hit, { ...job, id: "" }, language, true, abilities);
      return;
    }
    const p = pending.get(key);
    if (p !== undefined) p.indices.push(i);
    else pending.set(key, { job: { ...job, id: key.slice(0, 16) }, indices: [i] });
  });

  const unique = [...pending.entries()];
  const { results, sandboxSeconds } = await evaluateWithRetry(unique.map(([, p]) => p.job), deps, req.signal);
  unique.forEach(([key, p], k) => {
    const r = results[k]!;
    deps.cache.set(key, r);
    p.indices.forEach((i, n) => { out[i] = toScore(r, p.job, languageOf(samples[i]!, config.language), n > 0, abilities); });
  });

  const dedupedInBatch = samples.length - unique.length - cacheHits - out.filter((o) => o !== undefined && (o.status === "no_code" || o.status === "invalid_test_cases")).length;
  return json(200, {
    results: out,
    stats: {
      samples: samples.length,
      evaluated: unique.length,
      dedupedInBatch,
      cacheHits,
      hitRate: samples.length === 0 ? 0 : (dedupedInBatch + cacheHits) / samples.length,
      cacheHitRateLifetime: deps.cache.lookups === 0 ? 0 : deps.cache.hits / deps.cache.lookups,
      infraErrors: out.filter((o) => o?.status === "infra_error").length,
      // Sandbox time of every program run for this batch, retries included (what a per-second sandbox bills).
      sandboxSeconds,
      wallMs: Math.round(performance.now() - started),
    },
  });
}

/** Seconds a result's programs held a sandbox: the backend's own figure, else the wall time of the job. */
export function sandboxSecondsOf(r: EvalResult): number {
  return r.usage.sandboxSeconds ?? r.usage.wallMs / 1000;
}

/** Evaluate; jobs whose sandbox failed are retried (only those), with jittered backoff. */
async function evaluateWithRetry(jobs: EvalJob[], deps: RewardDeps, signal?: AbortSignal): Promise<{ results: EvalResult[]; sandboxSeconds: number }> {
  // Every job of the batch waits on the request's signal (for a slot, then in its sandbox): not a leak, a big batch.
  if (signal !== undefined) setMaxListeners(jobs.length + 10, signal);
  const results: EvalResult[] = new Array(jobs.length);
  let todo = jobs.map((_, i) => i);
  let seconds = 0;
  await retry(async () => {
    // The reply carries scores, not output: the results keep none (bounded memory, and a small cache).
    const batch = await deps.backend.evaluate(todo.map((i) => jobs[i]!), { outputBudget: OutputBudget.none(), ...(signal === undefined ? {} : { signal }) });
    batch.forEach((r, k) => { results[todo[k]!] = r; seconds += sandboxSecondsOf(r); });
    todo = todo.filter((i) => results[i]!.status === "infra_error");
    return todo.length;
  }, ({ value }) => (value ?? 0) > 0 && signal?.aborted !== true, { attempts: deps.attempts ?? 3, baseDelayMs: deps.retryBaseDelayMs ?? 500, maxDelayMs: 10_000, ...(signal === undefined ? {} : { signal }) });
  return { results, sandboxSeconds: Math.round(seconds * 1000) / 1000 };
}

function toScore(r: EvalResult, job: EvalJob, language: string, cached: boolean, abilities: VerdictAbilities): SampleScore {
  if (r.status === "infra_error") {
    return { score: 0, status: "infra_error", passed: r.passed, total: r.total, language, error: r.error ?? "sandbox error", cached };
  }
  return {
    score: scoreOf(r), status: "ok", passed: r.passed, total: r.total, language, cases: r.cases.map((c) => c.status),
    verdicts: r.cases.map((c) => verdictBy(job.language, job.tests[c.index]!, job.checker, abilities)), cached,
  };
}

/** The sample's language as the request gives it (extra_info.language, config.language, else its first fence). */
function languageOf(s: z.infer<typeof Sample>, configured: string | undefined): string {
  const extra = s.extra_info ?? {};
  return typeof extra["language"] === "string" ? extra["language"] : configured ?? detectLanguage(s.solution_str);
}
