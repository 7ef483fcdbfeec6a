// Bounded retries with full-jitter exponential backoff, only for errors the caller says are retryable.

export interface RetryOptions {
  readonly attempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly signal?: AbortSignal;
  /** Deterministic tests pass their own random. */
  readonly random?: () => number;
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export function backoffMs(attempt: number, opts: Pick<RetryOptions, "baseDelayMs" | "maxDelayMs" | "random">): number {
  const cap = Math.min(opts.maxDelayMs, opts.baseDelayMs * 2 ** attempt);
  return Math.floor((opts.random ?? Math.random)() * cap);
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted === true) { reject(signal.reason); return; }
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal!.reason); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Run `fn` until it returns a value `retryable` rejects, or throws an error `retryable` rejects, or the
 * attempts run out (then the last outcome is returned / thrown).
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, retryable: (outcome: { value?: T; error?: unknown }) => boolean, opts: RetryOptions): Promise<T> {
  const wait = opts.sleep ?? sleep;
  for (let attempt = 0; ; attempt++) {
    let value: T | undefined;
    let error: unknown;
    let failed = false;
    try {
      value = await fn(attempt);
    } catch (e) {
      error = e;
      failed = true;
    }
    const again = attempt + 1 < opts.attempts && retryable(failed ? { error } : { value: value as T });
    if (!again) {
      if (failed) throw error;
      return value as T;
    }
    await wait(backoffMs(attempt, opts), opts.signal);
  }
}
