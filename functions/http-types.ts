// Platform-neutral request/response for the function handlers: node:http, Lambda, FunctionGraph and SCF
// wrappers all translate to and from these.

export interface FnRequest {
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
  /** Query parameters (repeated ones joined with ","); absent when the platform gave none. */
  readonly query?: Readonly<Record<string, string>>;
  /** Parsed JSON body (undefined when there is none). */
  readonly body: unknown;
  /**
   * Aborts when nobody waits for the answer any more: the client disconnected, or the platform's time for the
   * invocation is nearly up (reason: admission.ts RequestCancelled). The router adds the request's own deadline.
   */
  readonly signal?: AbortSignal;
}

export interface FnResponse {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** A body sent as it is instead of JSON (the Prometheus text at /metrics); headers give its content-type. */
  readonly text?: string;
}

export function json(status: number, body: unknown, headers?: Record<string, string>): FnResponse {
  return { status, body, ...(headers === undefined ? {} : { headers }) };
}

/** FastAPI's validation error shape (`{"detail": [{loc, msg, type}]}`), which SandboxFusion clients expect on 422. */
export function unprocessable(issues: readonly { path: readonly PropertyKey[]; message: string; code: string }[]): FnResponse {
  return json(422, { detail: issues.map((i) => ({ loc: ["body", ...i.path.map((p) => (typeof p === "symbol" ? String(p) : p))], msg: i.message, type: i.code })) });
}
