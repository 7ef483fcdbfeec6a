// The one retry layer of an S3-compatible store: a request that failed in a way that may pass (see
// store-errors.ts) is sent again after a growing, jittered delay, until it succeeds, fails for good, or its time
// budget is spent — so a command against an unreachable store ends with a clear error in bounded time, saying
// on the way (`onRetry`) what it is waiting for. The SDK itself does not retry (maxAttempts 1).
import { sleep } from "../../core/util/retry.js";
import { type RetryNotice, StorageError } from "./object-store.js";
import { type StoreErrorContext, classifyStoreError, isAbort } from "./store-errors.js";

export interface StoreRetryPolicy {
  /** Attempts of one request in all (default 8). */
  readonly maxAttempts?: number;
  /** No retry starts later than this after the request first failed (default 60 s; RLPIPE_STORE_RETRY_S). */
  readonly budgetMs?: number;
  /** The delay before retry n is between half and all of min(maxDelayMs, baseDelayMs × 2^(n-1)). */
  readonly baseDelayMs?: number;
  readonly maxDelayMs?: number;
  readonly random?: () => number;
  readonly now?: () => number;
}

export const DEFAULT_RETRY_BUDGET_MS = 60_000;

export function retryDelayMs(retry: number, policy: StoreRetryPolicy): number {
  const cap = Math.min(policy.maxDelayMs ?? 8000, (policy.baseDelayMs ?? 500) * 2 ** (retry - 1));
  return Math.round(cap / 2 + (policy.random ?? Math.random)() * (cap / 2));
}

/**
 * Run `attempt` until it succeeds; a retryable store failure is tried again within the policy, any other one is
 * thrown at once as a classified StorageError (errors that are no store failure — bugs — pass unchanged).
 */
export async function withStoreRetry<T>(attempt: () => Promise<T>, o: {
  readonly ctx: StoreErrorContext;
  readonly policy?: StoreRetryPolicy;
  readonly onRetry?: (n: RetryNotice) => void;
  readonly signal?: AbortSignal;
}): Promise<T> {
  const policy = o.policy ?? {};
  const now = policy.now ?? Date.now;
  const maxAttempts = policy.maxAttempts ?? 8;
  const budgetMs = policy.budgetMs ?? DEFAULT_RETRY_BUDGET_MS;
  let firstFailure: number | undefined;
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (e) {
      if (isAbort(e, o.signal)) throw e;
      const failure = classifyStoreError(e, o.ctx);
      if (failure === undefined) throw e;
      const t = now();
      firstFailure ??= t;
      const delayMs = retryDelayMs(n, policy);
      const spent = t - firstFailure;
      if (!failure.error.retryable) throw failure.error;
      if (n >= maxAttempts || spent + delayMs > budgetMs) throw gaveUp(failure.error, n, spent);
      o.onRetry?.({ op: o.ctx.op, target: o.ctx.target, reason: failure.reason, attempt: n + 1, delayMs });
      await sleep(delayMs, o.signal);
    }
  }
}

function gaveUp(e: StorageError, attempts: number, spentMs: number): StorageError {
  if (attempts === 1) return e;
  return new StorageError(e.code, `${e.message}; gave up after ${attempts} attempts in ${(spentMs / 1000).toFixed(1)} s`, {
    exitCode: e.exitCode, cause: e.cause, ...(e.hint === undefined ? {} : { hint: e.hint }),
  });
}
