// Admission and lifetime of the work a server takes on. An RL run sends thousands of concurrent requests whose clients
// time out and retry; a server that queues them all, and keeps working for clients that gave up, spirals (1000
// sleeping programs on 2 slots left an 80-minute backlog that no client waited for). So:
//   * a bounded number of requests is admitted at once (a default derived from the sandbox's slots); the rest are
//     answered at once with 429 and Retry-After, in a body SandboxFusion's and FastAPI's clients both read;
//   * the places are shared between clients (ClientKey: the credential presented, the peer's address and the route's
//     family, so that a job's tool calls and its rewards are two clients even on one loopback): a client may take more
//     than its share only while places stay free for others, and never the last `reserve` of them, so a second client
//     is admitted at once however many requests the first sends, and refusals go to the client over its share;
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

/** How long a client that has nothing in progress still counts as sharing the server. */
export const CLIENT_ACTIVE_MS = 10_000;

/** Places no single client takes: a newcomer is admitted at once (an eighth of the capacity, none below 4). */
export function reservedPlaces(capacity: number): number {
  return capacity < 4 ? 0 : Math.max(1, Math.floor(capacity / 8));
}

export class Admission {
  private inFlight = 0;
  /** Milliseconds a request held its place, smoothed: the basis of Retry-After. */
  private holdMs = 1000;
  private readonly clients = new Map<string, { inFlight: number; lastSeen: number }>();
  readonly counts = { admitted: 0, rejected: 0 };
  readonly reserve: number;

  /**
   * `capacity`: requests admitted at once (running or waiting for a slot); `parallelism`: how many of them the
   * sandbox runs at once (its slots), to estimate when a place frees up.
   */
  constructor(readonly capacity: number, private readonly parallelism: number, private readonly now: () => number = () => performance.now()) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError(`admission capacity must be a positive integer, got ${capacity}`);
    this.reserve = reservedPlaces(capacity);
  }

  /** Clients with a request in progress or one in the last CLIENT_ACTIVE_MS (forgetting the others). */
  private activeClients(at: number): number {
    let n = 0;
    for (const [key, c] of this.clients) {
      if (c.inFlight > 0 || at - c.lastSeen < CLIENT_ACTIVE_MS) n++;
      else this.clients.delete(key);
    }
    return n;
  }

  /** Each active client's share of the places. */
  shareOf(clients: number): number {
    return Math.max(1, Math.floor(this.capacity / Math.max(1, clients)));
  }

  /** Requests in progress per client (for /v1/stats). */
  byClient(): Record<string, number> {
    return Object.fromEntries([...this.clients].filter(([, c]) => c.inFlight > 0).map(([k, c]) => [k, c.inFlight]).sort(([a], [b]) => String(a).localeCompare(String(b))));
  }

  get active(): number {
    return this.inFlight;
  }

  /** Waiting for a sandbox slot, as far as admission can tell: admitted beyond the slots. */
  get queued(): number {
    return Math.max(0, this.inFlight - this.parallelism);
  }

  /**
   * A place for a request of `client`, or why there is none: the server is full; or the client holds its share and
   * only the places kept free for others are left; or it would take one of the reserved places.
   */
  enter(client = "anonymous"): Ticket | Refusal {
    const since = this.now();
    const c = this.clients.get(client) ?? { inFlight: 0, lastSeen: since };
    c.lastSeen = since;
    this.clients.set(client, c);
    const share = this.shareOf(this.activeClients(since));
    const free = this.capacity - this.inFlight;
    const overShare = c.inFlight >= share;
    const refusal = free <= 0 ? `server busy: ${this.inFlight} requests in progress (at most ${this.capacity})`
      : c.inFlight >= this.capacity - this.reserve ? `server busy for this client: it has ${c.inFlight} requests in progress, and the last ${this.reserve} of ${this.capacity} places are kept for other clients`
      : overShare && free <= this.reserve ? `server busy for this client: it has ${c.inFlight} requests in progress, its share (${share} of ${this.capacity}) while other clients use the server`
      : undefined;
    if (refusal !== undefined) {
      this.counts.rejected++;
      return { retryAfterS: this.retryAfterS(), detail: `${refusal}; retry after the time in Retry-After` };
    }
    this.inFlight++;
    c.inFlight++;
    this.counts.admitted++;
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        this.inFlight--;
        c.inFlight--;
        c.lastSeen = this.now();
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
