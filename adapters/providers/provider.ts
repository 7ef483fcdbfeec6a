// One interface for every place a recipe runs (ModelArts, TI-ONE, Ray, Slurm, local), and the deploy algorithm
// that guarantees exactly one job per deploy: look the job up by its deterministic name first, and after any
// failure that may have reached the provider, look it up again before retrying the create.
import { type ExitCode, RlpipeError } from "../../core/errors.js";
import type { Plan } from "../../core/plan.js";
import type { JobStatus, Phase } from "../../core/providers/phases.js";
import type { Provider, Recipe } from "../../core/recipe/schema.js";
import { backoffMs, sleep as defaultSleep } from "../../core/util/retry.js";

/** A submitted job: enough to find it again (stored in the run record). */
export interface JobRef {
  readonly provider: Provider;
  /** The deterministic job name (also the run's name). */
  readonly name: string;
  /** The provider's id: ModelArts job id, TI-ONE task id, Ray submission id, Slurm job id, local pid. */
  readonly id: string;
  readonly region?: string;
  /** Endpoint or address the job was created at (so status/logs/stop go to the same place). */
  readonly endpoint?: string;
  /** Provider-specific ids (e.g. TI-ONE LatestInstanceId, a Slurm output file). */
  readonly extra?: Readonly<Record<string, string>>;
}

export type { JobStatus } from "../../core/providers/phases.js";

/** How long a job has been billed for (the compute side of `rlpipe cost --run`). */
export interface JobBilling {
  /** Billable seconds of one node: the provider's own running-time figure where it gives one, else end − start. */
  readonly seconds: number;
  /** Still running: `seconds` is so far. */
  readonly running: boolean;
  readonly startedAt?: string;
  readonly endedAt?: string;
  /** Where the figure comes from, for the report ("ModelArts status.duration", "Ray job start_time/end_time"). */
  readonly source: string;
}

/**
 * Billable time from a status's start and end (a running job: until `now`); undefined when the job never started.
 * Providers whose API states a running time (ModelArts duration, TI-ONE RuntimeInSeconds) answer billing() instead.
 */
export function billingFromStatus(s: JobStatus, source: string, now: Date = new Date()): JobBilling | undefined {
  if (s.startedAt === undefined) return undefined;
  const start = Date.parse(s.startedAt);
  const end = s.endedAt === undefined ? now.getTime() : Date.parse(s.endedAt);
  if (!Number.isFinite(start) || !Number.isFinite(end)) return undefined;
  const running = s.endedAt === undefined;
  return {
    seconds: Math.max(0, Math.round(end - start) / 1000), running, startedAt: s.startedAt,
    ...(s.endedAt === undefined ? {} : { endedAt: s.endedAt }), source: running ? `${source} (running: until now)` : source,
  };
}

/** A page of log text and the cursor to pass for the next page (opaque to callers). */
export interface LogPage {
  readonly text: string;
  readonly cursor: string;
}

export interface ProviderAdapter {
  readonly provider: Provider;
  /** Put what the job needs where it will read it (content-addressed, so repeating it is harmless). */
  prepare(plan: Plan, signal?: AbortSignal): Promise<void>;
  /** The job this plan already created, found by its deterministic name. */
  findExisting(plan: Plan, signal?: AbortSignal): Promise<JobRef | undefined>;
  /** Create the job. Never retried blindly: deploy() looks the job up after an ambiguous failure. */
  submit(plan: Plan, signal?: AbortSignal): Promise<JobRef>;
  status(ref: JobRef, signal?: AbortSignal): Promise<JobStatus>;
  /** Log text after `cursor` (from the start when undefined). */
  logs(ref: JobRef, cursor: string | undefined, signal?: AbortSignal): Promise<LogPage>;
  /** Idempotent: stopping a finished or already stopping job succeeds. */
  stop(ref: JobRef, signal?: AbortSignal): Promise<void>;
  /**
   * The job's billable time as the provider states it; adapters without such a figure leave it out and callers
   * use billingFromStatus(status()). Undefined when the job has not started.
   */
  billing?(ref: JobRef, signal?: AbortSignal): Promise<JobBilling | undefined>;
  close?(): Promise<void>;
}

/** Where an adapter puts a launch bundle: an object store (S3Store and FsStore satisfy it structurally). */
export interface BundleSink {
  putBytes(key: string, data: Uint8Array | string, opts?: { contentType?: string; signal?: AbortSignal }): Promise<unknown>;
  head(key: string, signal?: AbortSignal): Promise<{ readonly size: number } | undefined>;
}

/** What the CLI (or a function) hands an adapter factory. Adapters never import each other; bin composes them. */
export interface AdapterContext {
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The recipe: its targets.<provider> block holds endpoint, region and platform fields. */
  readonly recipe: Recipe;
  /** Directory run records and local bundles live under (.rlpipe/…). */
  readonly cwd: string;
  /** Object-store access for bundle uploads, by URI (obs://bucket/prefix, cos://…, s3://…, file://…). */
  readonly bundleSink?: (uri: string) => BundleSink;
  /** Progress lines for the user (already redacted by the caller). */
  readonly log?: (line: string) => void;
}

/** Every adapters/providers/<provider>.ts exports `createAdapter` of this type (bin loads it by provider name). */
export type AdapterFactory = (ctx: AdapterContext) => ProviderAdapter | Promise<ProviderAdapter>;

/**
 * How a failed call may be handled:
 * - retryable: the provider did not act (throttled, connection refused) — safe to repeat;
 * - ambiguous: the request may have been acted on (timeout or reset after sending, 5xx) — for a create, look first;
 * - exists: the name is taken (ModelArts.2751, Ray's duplicate submission_id) — the job exists, look it up;
 * - not_found: the job is gone or never existed;
 * - fatal: bad request, auth, quota — repeating cannot help.
 */
export type FailureKind = "retryable" | "ambiguous" | "exists" | "not_found" | "fatal";

export class ProviderError extends RlpipeError {
  readonly kind: FailureKind;
  readonly provider: Provider;
  /** The provider's error code (e.g. ModelArts.2751, RequestLimitExceeded) when it sent one. */
  readonly providerCode: string | undefined;
  readonly httpStatus: number | undefined;
  constructor(provider: Provider, kind: FailureKind, code: string, message: string, opts: { providerCode?: string; httpStatus?: number; hint?: string; cause?: unknown; exitCode?: ExitCode } = {}) {
    super(code, message, { exitCode: opts.exitCode ?? 3, ...(opts.hint === undefined ? {} : { hint: opts.hint }), ...(opts.cause === undefined ? {} : { cause: opts.cause }) });
    this.name = "ProviderError";
    this.kind = kind;
    this.provider = provider;
    this.providerCode = opts.providerCode;
    this.httpStatus = opts.httpStatus;
  }
}

/** Failure kind of an HTTP status: 429 → retryable, 5xx → ambiguous, 404 → not_found, other 4xx → fatal. */
export function kindOfHttpStatus(status: number): FailureKind {
  if (status === 429) return "retryable";
  if (status >= 500) return "ambiguous";
  if (status === 404) return "not_found";
  return "fatal";
}

/** TLS error codes (Node and OpenSSL): the handshake failed, so nothing was sent and repeating cannot help. */
const TLS_CODES = /^(ERR_SSL_|ERR_TLS_|EPROTO$|CERT_|UNABLE_TO_(GET|VERIFY)_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$)/;

function errorCodes(e: unknown): string[] {
  const out: string[] = [];
  for (let cur = e as { code?: unknown; cause?: unknown } | undefined, depth = 0; cur !== undefined && cur !== null && depth < 4; cur = cur.cause as typeof cur, depth++) {
    if (typeof cur.code === "string") out.push(cur.code);
  }
  return out;
}

/**
 * What went wrong in a TLS handshake, in words a user can act on (never OpenSSL's own text), or undefined when
 * `e` is not a TLS failure. The usual cause: an https:// endpoint that is really a plain-http server.
 */
export function tlsFailure(e: unknown): string | undefined {
  const codes = errorCodes(e);
  const text = String((e as { message?: unknown })?.message ?? "");
  const code = codes.find((c) => TLS_CODES.test(c)) ?? (/SSL routines|wrong version number|EPROTO/.test(text) ? "EPROTO" : undefined);
  if (code === undefined) return undefined;
  if (code === "ERR_SSL_WRONG_VERSION_NUMBER" || code === "EPROTO" || /wrong version number|packet length too long|http request/i.test(text)) {
    return "the TLS handshake failed: the server does not speak https (is it a plain-http endpoint? http:// is allowed for loopback addresses only)";
  }
  if (/CERT|VERIFY|SELF_SIGNED|HOSTNAME/.test(code)) return `the server's TLS certificate was not accepted (${code})`;
  return `the TLS handshake failed (${code})`;
}

/**
 * Failure kind of a network error: refused/unreachable before anything was sent → retryable; a failed TLS
 * handshake → fatal (nothing was sent, and repeating gives the same answer); a reset, a timeout or a closed
 * socket after the request may have been sent → ambiguous. Unknown errors are ambiguous (the safe assumption
 * for a create: look before retrying).
 */
export function kindOfNetworkError(e: unknown): FailureKind {
  const codes = errorCodes(e);
  if (codes.some((c) => ["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "UND_ERR_CONNECT_TIMEOUT"].includes(c))) return "retryable";
  if (tlsFailure(e) !== undefined) return "fatal";
  return "ambiguous";
}

export interface RetryPolicy {
  /** Attempts in all (default 6). */
  readonly attempts?: number;
  /** Backoff base (default 1000 ms), doubled per attempt with full jitter, capped (default 8000 ms). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  /**
   * Total time for all attempts and the waits between them (default: unbounded, only `attempts` limit). No wait
   * crosses it, and the signal an attempt gets aborts at it, so an interactive command ends in bounded time.
   */
  readonly budgetMs?: number;
  readonly random?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly signal?: AbortSignal;
  /** Progress lines ("create timed out; looking the job up"), for the CLI. */
  readonly onEvent?: (line: string) => void;
  /** Called before each wait: what failed, how long until the next attempt, and its number (2 = first retry). */
  readonly onRetry?: (r: RetryNotice) => void;
}

/** What a retried call is, for messages: provider and operation ("status", "logs", "lookup"…). */
export interface RetryTarget {
  readonly provider: Provider;
  readonly op: string;
}

export interface RetryNotice {
  readonly what: RetryTarget;
  readonly error: ProviderError;
  readonly delayMs: number;
  readonly nextAttempt: number;
}

/** The retry line the CLI prints on stderr: `rlpipe: modelarts status: <reason>; retrying in 1.2 s (attempt 2)`. */
export function formatRetryNotice(r: RetryNotice): string {
  return `rlpipe: ${r.what.provider} ${r.what.op}: ${r.error.message}; retrying in ${(r.delayMs / 1000).toFixed(1)} s (attempt ${r.nextAttempt})`;
}

/** The least time an attempt is given within a budget (a refused connection answers in well under it). */
const MIN_ATTEMPT_MS = 250;

const isRepeatable = (e: unknown): e is ProviderError => e instanceof ProviderError && (e.kind === "retryable" || e.kind === "ambiguous");

function gaveUp(e: ProviderError, attempts: number, startedMs: number, budgetMs: number | undefined): ProviderError {
  const secs = ((Date.now() - startedMs) / 1000).toFixed(1);
  const budget = budgetMs === undefined ? "" : ` (retry budget ${budgetMs / 1000} s: RLPIPE_RETRY_BUDGET_MS)`;
  return new ProviderError(e.provider, e.kind, e.code, `${e.message}; gave up after ${attempts} attempt${attempts === 1 ? "" : "s"} in ${secs} s${budget}`, {
    ...(e.providerCode === undefined ? {} : { providerCode: e.providerCode }),
    ...(e.httpStatus === undefined ? {} : { httpStatus: e.httpStatus }),
    hint: e.hint ?? "check the endpoint, your network and the provider's status; the command can be repeated safely",
    cause: e, exitCode: e.exitCode,
  });
}

/**
 * The one retry layer for provider calls (adapters make one attempt per call; the CLI and deploy() retry):
 * repeat an idempotent call (reads, lookups, stop, uploads) on retryable or ambiguous failures, within the
 * attempts and the time budget. `fn` gets a signal that aborts when the caller cancels or the budget ends.
 */
export async function withRetry<T>(what: RetryTarget, fn: (signal: AbortSignal | undefined) => Promise<T>, policy: RetryPolicy = {}): Promise<T> {
  const attempts = policy.attempts ?? 6;
  const wait = policy.sleep ?? defaultSleep;
  const started = Date.now();
  const deadline = policy.budgetMs === undefined ? undefined : started + policy.budgetMs;
  let lastFailure: ProviderError | undefined;
  for (let attempt = 0; ; attempt++) {
    const remaining = deadline === undefined ? undefined : Math.max(1, deadline - Date.now());
    const budgetSignal = remaining === undefined ? undefined : AbortSignal.timeout(remaining);
    const signal = budgetSignal === undefined ? policy.signal : policy.signal === undefined ? budgetSignal : AbortSignal.any([policy.signal, budgetSignal]);
    try {
      return await fn(signal);
    } catch (e) {
      if (policy.signal?.aborted === true) throw e;
      if (budgetSignal?.aborted === true) {
        // Cut at the budget: report what the provider last said, or that it said nothing in time.
        const last = e instanceof ProviderError && e.code !== "aborted" ? e
          : lastFailure ?? new ProviderError(what.provider, "ambiguous", "provider_timeout", `${what.provider} ${what.op}: no answer in time`);
        throw gaveUp(last, attempt + 1, started, policy.budgetMs);
      }
      if (!isRepeatable(e)) throw e;
      lastFailure = e;
      let delay = backoffMs(attempt, { baseDelayMs: policy.baseDelayMs ?? 1000, maxDelayMs: policy.maxDelayMs ?? 8000, ...(policy.random === undefined ? {} : { random: policy.random }) });
      // Within a budget, a wait never crosses it: it is shortened so one more attempt still fits.
      const left = deadline === undefined ? Infinity : deadline - Date.now() - MIN_ATTEMPT_MS;
      if (attempt + 1 >= attempts || left <= 0) throw attempt === 0 && attempts === 1 ? e : gaveUp(e, attempt + 1, started, policy.budgetMs);
      delay = Math.min(delay, left);
      policy.onRetry?.({ what, error: e, delayMs: delay, nextAttempt: attempt + 2 });
      await wait(delay, policy.signal);
    }
  }
}

export interface DeployOutcome {
  readonly ref: JobRef;
  /** created: this deploy made the job; existing: an earlier deploy had; recovered: a create whose reply was lost. */
  readonly outcome: "created" | "existing" | "recovered";
}

/**
 * Exactly one job per deploy: prepare, find an existing job by name, else create; after a create fails in a way
 * that may have reached the provider (or says the name is taken), look the job up before trying again.
 */
export async function deploy(adapter: ProviderAdapter, plan: Plan, policy: RetryPolicy = {}): Promise<DeployOutcome> {
  const signal = policy.signal;
  const say = policy.onEvent ?? (() => undefined);
  const attempts = policy.attempts ?? 5;
  const wait = policy.sleep ?? defaultSleep;
  const backoff = (attempt: number) => backoffMs(attempt, { baseDelayMs: policy.baseDelayMs ?? 1000, maxDelayMs: policy.maxDelayMs ?? 30_000, ...(policy.random === undefined ? {} : { random: policy.random }) });

  const lookup = () => withRetry({ provider: adapter.provider, op: `lookup of ${plan.jobName}` }, (s) => adapter.findExisting(plan, s), policy);
  // Uploads keep their own (longer) timeouts: the budget bounds waiting on an answer, not moving bytes.
  const { budgetMs: _unbounded, ...uploadPolicy } = policy;
  await withRetry({ provider: adapter.provider, op: "launch bundle upload" }, (s) => adapter.prepare(plan, s), uploadPolicy);
  const existing = await lookup();
  if (existing !== undefined) return { ref: existing, outcome: "existing" };

  let lastError: unknown;
  let nameTaken = false;
  for (let attempt = 0; attempt < attempts; attempt++) {
    if (!nameTaken) {
      try {
        return { ref: await adapter.submit(plan, signal), outcome: "created" };
      } catch (e) {
        if (!(e instanceof ProviderError) || e.kind === "fatal" || e.kind === "not_found") throw e;
        lastError = e;
        // The provider says the name is taken but may not list the job yet (eventual consistency): from now on
        // only look, never create.
        nameTaken = e.kind === "exists";
        say(`${adapter.provider}: create ${nameTaken ? "says the name is taken" : `failed (${e.message})`}; looking the job up before any retry`);
      }
    }
    // A create that may have happened must be found, never repeated; the lookups themselves retry.
    await wait(backoff(attempt), signal);
    const found = await lookup();
    if (found !== undefined) return { ref: found, outcome: nameTaken ? "existing" : "recovered" };
  }
  const found = await lookup();
  if (found !== undefined) return { ref: found, outcome: "recovered" };
  throw lastError instanceof Error ? lastError : new ProviderError(adapter.provider, "fatal", "deploy_failed", `could not create job ${plan.jobName}`);
}
