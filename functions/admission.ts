// Admission and lifetime of the work a server takes on. An RL run sends thousands of concurrent requests whose clients
// time out and retry; a server that queues them all, and keeps working for clients that gave up, spirals (1000
// sleeping programs on 2 slots left an 80-minute backlog that no client waited for). So:
//   * a bounded number of requests is admitted at once (a default derived from the sandbox's slots); the rest are
//     answered at once with 429 and Retry-After, in a body SandboxFusion's and FastAPI's clients both read;
//   * every admitted request carries a signal that aborts when its client disconnects or its deadline passes, and the
//     sandbox then kills its programs and frees their slots at once (local-sandbox.ts, zygote.ts).
// Pure: the HTTP server and the cloud function handlers own the sockets and timers.

/** Why a request's work was stopped before it finished. */
export type CancelReason = "client_disconnected" | "deadline";

export class RequestCancelled extends Error {
  readonly code = "request_cancelled";
  constructor(readonly reason: CancelReason, readonly route: string) {
    super(reason === "deadline" ? `the request's deadline passed (${route})` : `the client disconnected (${route})`);
    this.name = "RequestCancelled";
  }
}

/** The cancellation behind an abort signal, when it was one of ours. */
export function cancellation(signal: AbortSignal | undefined): RequestCancelled | undefined {
  return signal?.aborted === true && signal.reason instanceof RequestCancelled ? signal.reason : undefined;
}

/** Requests admitted per sandbox slot by default: enough for a verl reward worker's threads, bounded for floods. */
export const REQUESTS_PER_SLOT = 16;
/** The least default capacity (small servers still take a reward worker's concurrent requests). */
export const MIN_CAPACITY = 64;

export function defaultCapacity(slots: number): number {
  return Math.max(MIN_CAPACITY, slots * REQUESTS_PER_SLOT);
}

/** A place in the server: give it back when the request is answered or cancelled. */
export interface Ticket {
  release(): void;
}

export interface Refusal {
  /** Seconds a client should wait before retrying (clients add their own jitter). */
  readonly retryAfterS: number;
  readonly detail: string;
}

export class Admission {
  private inFlight = 0;
  /** Milliseconds a request held its place, smoothed: the basis of Retry-After. */
  private holdMs = 1000;
  readonly counts = { admitted: 0, rejected: 0 };

  /**
   * `capacity`: requests admitted at once (running or waiting for a slot); `parallelism`: how many of them the
   * sandbox runs at once (its slots), to estimate when a place frees up.
   */
  constructor(readonly capacity: number, private readonly parallelism: number, private readonly now: () => number = () => performance.now()) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`admission capacity must be a positive integer, got ${capacity}`);
  }

  get active(): number {
    return this.inFlight;
  }

  /** Waiting for a sandbox slot, as far as admission can tell: admitted beyond the slots. */
  get queued(): number {
    return Math.max(0, this.inFlight - this.parallelism);
  }

  /** A place, or why there is none. */
  enter(): Ticket | Refusal {
    if (this.inFlight >= this.capacity) {
      this.counts.rejected++;
      return { retryAfterS: this.retryAfterS(), detail: `server busy: ${this.inFlight} requests in progress (at most ${this.capacity}); retry after the time in Retry-After` };
    }
    this.inFlight++;
    this.counts.admitted++;
    const since = this.now();
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.inFlight--;
        this.holdMs = 0.8 * this.holdMs + 0.2 * Math.max(0, this.now() - since);
      },
    };
  }

  /**
   * About when the present backlog has drained: a request's usual hold (its wait for a slot included, which is
   * what a full server makes long); 1 to 60 s.
   */
  retryAfterS(): number {
    return Math.min(60, Math.max(1, Math.ceil(this.holdMs / 1000)));
  }
}

export function isRefusal(x: Ticket | Refusal): x is Refusal {
  return "retryAfterS" in x;
}

/**
 * The answer to a refused request, whoever refused it (admission, or a sandbox pool at its account's limits):
 * Retry-After in seconds, in a body SandboxFusion's clients (`status`/`message`) and FastAPI's (`detail`) both read.
 */
export function refusalResponse(r: Refusal, status = 429): { readonly status: number; readonly body: { status: "SandboxError"; message: string; detail: string }; readonly headers: Readonly<Record<string, string>> } {
  return { status, body: { status: "SandboxError", message: r.detail, detail: r.detail }, headers: { "retry-after": String(r.retryAfterS) } };
}

/** The header a client sets to bound how long the server works for it (seconds), like gRPC's grpc-timeout. */
export const DEADLINE_HEADER = "x-rlpipe-deadline-s";

/**
 * A request's deadline in milliseconds from its arrival: the client's header when it gives one (within the route's
 * ceiling), else what the route's own limits imply (what the client itself waits, plus a margin).
 */
export function deadlineMs(header: string | undefined, routeDefaultMs: number, ceilingMs = 60 * 60_000): number {
  const asked = header === undefined ? Number.NaN : Number(header);
  if (Number.isFinite(asked) && asked > 0) return Math.min(asked * 1000, ceilingMs);
  return Math.min(routeDefaultMs, ceilingMs);
}
