// The answer to an HTTP request whose handler threw. A classified rlpipe error keeps its stable code and hint, so
// a caller (a sync sidecar, a reward client) can tell a store or provider that refused from a setting to fix and
// from a bug: 502 when the service behind the function refused (credentials, a missing bucket), 503 when it could
// not be reached or is overloaded (worth a retry: with Retry-After, as the functions' other retryable 503s) or when
// the function's own configuration is wrong (exit 2, as a failed cold start answers; no Retry-After: repeating it
// fixes nothing). Anything else is a bug: 500 {"detail":"internal error"}, its text only in the log.
import { ExitCode, RlpipeError } from "../core/errors.js";
import { type FnResponse, json } from "./http-types.js";

/**
 * Seconds a caller is told to wait after a retryable failure of the service behind the function. The function's
 * own retries (the store's budget, a provider call's) are already spent by then; a few seconds lets a throttled
 * or restarting service recover without a caller hammering it.
 */
export const RETRYABLE_RETRY_AFTER_S = 5;

/**
 * Whether sending the same request again may pass: a store failure classified retryable (store-errors.ts: refused,
 * reset, DNS EAI_AGAIN, timeouts, 5xx, 429/SlowDown) or a provider failure of kind "retryable" (the provider did not
 * act: throttled, connection refused).
 */
export function isRetryable(e: unknown): boolean {
  const x = e as { retryable?: unknown; kind?: unknown } | null | undefined;
  return x?.retryable === true || x?.kind === "retryable";
}

/** The status (and headers) of a classified external failure: 503 + Retry-After when retryable, else 502. */
export function externalFailure(retryable: boolean): { readonly status: 502 | 503; readonly headers?: Readonly<Record<string, string>> } {
  return retryable ? { status: 503, headers: { "retry-after": String(RETRYABLE_RETRY_AFTER_S) } } : { status: 502 };
}

/** `redact` scrubs the message (the function's secrets, credential-looking strings) before it leaves. */
export function thrownResponse(e: unknown, redact: (text: string) => string): FnResponse {
  if (!(e instanceof RlpipeError) || (e.exitCode !== ExitCode.external && e.exitCode !== ExitCode.invalidInput)) return json(500, { detail: "internal error" });
  const body = { detail: redact(e.message), code: e.code, ...(e.hint === undefined ? {} : { hint: redact(e.hint) }) };
  if (e.exitCode === ExitCode.invalidInput) return json(503, body);
  const { status, headers } = externalFailure(isRetryable(e));
  return json(status, body, headers === undefined ? undefined : { ...headers });
}
