// The E2B backend's sandboxes under the account's limits, for one process (one function instance):
//   * at most `maxLive` sandboxes exist at once — counted from the moment a create is sent until the provider has
//     confirmed the kill, because a sandbox being killed still counts against the account;
//   * creates are paced to `createsPerS` (CreatePacer), retried on 429/5xx/network errors with exponential backoff and
//     full jitter, and never abandoned mid-flight (a create whose reply is lost may still have made a sandbox);
//   * jobs beyond the sandboxes wait in a bounded FIFO; a batch that does not fit is refused whole, with a
//     Retry-After computed from how fast jobs drain (SandboxSaturated, answered 429 by the router).
// Generic over the sandbox type so that it can be tested without the SDK; time comes from an injected clock.
import { backoffMs, sleep as realSleep } from "../../core/util/retry.js";

export interface PoolClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
}

export const systemClock: PoolClock = { now: () => performance.now(), sleep: realSleep, random: Math.random };

/** Why a batch was refused: seconds to wait, and a sentence for the client. */
export interface PoolRefusal {
  readonly retryAfterS: number;
  readonly detail: string;
}

/** A job's place in the pool (running or queued); leave() when the job is done. */
export interface Place {
  leave(): void;
}

/**
 * Spaces creates 1/createsPerS apart and, so that the provider's per-second window holds whatever the network's
 * latency, sends create k+n only `windowMs` after every create up to k has been answered (n = the creates a window
 * allows): each create reaches the provider between its send and its answer, so any n+1 of them arrive at least
 * windowMs apart. FIFO.
 */
export class CreatePacer {
  readonly intervalMs: number;
  readonly burst: number;
  readonly windowMs: number;
  private tail: Promise<unknown> = Promise.resolve();
  private seq = 0;
  private lastSentMs = Number.NEGATIVE_INFINITY;
  private readonly answered = new Map<number, number>();
  /** Every create below this index has been answered; the latest answer among them. */
  private answeredPrefix = 0;
  private prefixLastMs = Number.NEGATIVE_INFINITY;
  private wake: { promise: Promise<void>; resolve: () => void } = deferred();

  constructor(createsPerS: number, private readonly clock: PoolClock = systemClock) {
    if (!(createsPerS > 0) || !Number.isFinite(createsPerS)) throw new RangeError(`createsPerS must be a positive number, got ${createsPerS}`);
    this.intervalMs = 1000 / createsPerS;
    this.burst = Math.max(1, Math.floor(createsPerS));
    this.windowMs = (this.burst * 1000) / createsPerS;
  }

  /** Waits for this create's turn; call the returned function once the create is answered (or failed). */
  turn(signal?: AbortSignal): Promise<() => void> {
    const mine = this.tail.then(() => this.waitGate(signal));
    this.tail = mine.catch(() => undefined);
    return abortable(mine, signal);
  }

  private async waitGate(signal?: AbortSignal): Promise<() => void> {
    for (;;) {
      signal?.throwIfAborted();
      const k = this.seq;
      const back = k - this.burst; // the create that must have been answered a window ago
      if (back >= 0 && this.answeredPrefix <= back) {
        await abortable(this.wake.promise, signal);
        continue;
      }
      const gate = back >= 0 ? this.prefixLastMs + this.windowMs : Number.NEGATIVE_INFINITY;
      const waitMs = Math.max(gate, this.lastSentMs + this.intervalMs) - this.clock.now();
      if (waitMs > 0) {
        await this.clock.sleep(waitMs, signal);
        continue;
      }
      this.seq++;
      this.lastSentMs = this.clock.now();
      let once = false;
      return () => {
        if (once) return;
        once = true;
        this.answered.set(k, this.clock.now());
        while (this.answered.has(this.answeredPrefix)) {
          this.prefixLastMs = Math.max(this.prefixLastMs, this.answered.get(this.answeredPrefix)!);
          this.answered.delete(this.answeredPrefix++);
        }
        const w = this.wake;
        this.wake = deferred();
        w.resolve();
      };
    }
  }
}

export interface BoxPoolOptions<B> {
  /** Sandboxes alive at once, in creation or being killed included (this instance's share of the account). */
  readonly maxLive: number;
  /** This instance's share of the account's creates per second. */
  readonly createsPerS: number;
  /** Jobs waiting for a sandbox beyond maxLive running; more are refused. Default unbounded. */
  readonly maxQueuedJobs?: number;
  readonly create: () => Promise<B>;
  /** Resolves once the provider has the sandbox gone (or gave up trying): only then is its place free. */
  readonly destroy: (box: B) => Promise<void>;
  /**
   * Create attempts and their backoff; `budgetMs` bounds the time one create keeps being retried (a later attempt
   * is not started past it); `retryable` says which failures may be retried.
   */
  readonly createRetry: {
    readonly attempts: number; readonly budgetMs: number; readonly baseDelayMs: number; readonly maxDelayMs: number; readonly retryable: (e: unknown) => boolean;
  };
  readonly clock?: PoolClock;
}

interface Waiter<B> {
  readonly grant: (g: { box: B } | { slot: true }) => void;
  readonly fail: (e: unknown) => void;
}

export interface PoolStats {
  readonly maxLive: number;
  readonly createsPerS: number;
  readonly live: number;
  readonly busy: number;
  readonly idle: number;
  readonly waitingJobs: number;
  readonly admittedJobs: number;
  readonly peakLive: number;
  readonly creates: number;
  readonly createRetries: number;
  readonly createFailures: number;
  readonly refusedBatches: number;
}

export class BoxPool<B> {
  readonly pacer: CreatePacer;
  private readonly clock: PoolClock;
  private readonly maxQueuedJobs: number;
  private readonly idle: B[] = [];
  private readonly waiters: Waiter<B>[] = [];
  private live = 0;
  private busy = 0;
  private admitted = 0;
  /** Milliseconds a job holds a sandbox, smoothed: how fast the queue drains (Retry-After). */
  private serviceMs = 1000;
  private closed = false;
  private readonly counts = { peakLive: 0, creates: 0, createRetries: 0, createFailures: 0, refusedBatches: 0 };
  private readonly heldSince = new Map<B, number>();

  constructor(private readonly opts: BoxPoolOptions<B>) {
    if (!Number.isInteger(opts.maxLive) || opts.maxLive < 1) throw new RangeError(`maxLive must be a positive integer, got ${opts.maxLive}`);
    this.clock = opts.clock ?? systemClock;
    this.pacer = new CreatePacer(opts.createsPerS, this.clock);
    this.maxQueuedJobs = opts.maxQueuedJobs ?? Number.POSITIVE_INFINITY;
  }

  /**
   * Places for a batch of `jobs`, all or none: a batch is never half run. A batch larger than the whole pool is
   * taken when nothing else is in it (else it could never run).
   */
  admit(jobs: number): Place[] | PoolRefusal {
    const capacity = this.opts.maxLive + this.maxQueuedJobs;
    if (this.admitted > 0 && this.admitted + jobs > capacity) {
      this.counts.refusedBatches++;
      // The places that must free up before this batch fits, at the rate the sandboxes finish jobs.
      const mustFree = Math.min(this.admitted, this.admitted + jobs - capacity);
      const drainMs = (mustFree / this.opts.maxLive) * this.serviceMs;
      return {
        retryAfterS: Math.min(60, Math.max(1, Math.ceil(drainMs / 1000))),
        detail: `sandbox pool saturated: ${this.admitted} jobs in progress or queued for ${this.opts.maxLive} sandboxes (at most ${capacity}); a batch of ${jobs} does not fit; retry after the time in Retry-After`,
      };
    }
    this.admitted += jobs;
    return Array.from({ length: jobs }, () => {
      let left = false;
      return { leave: () => { if (!left) { left = true; this.admitted--; } } };
    });
  }

  /** A sandbox for one job: an idle one, else a new one (paced), else the next to be freed (FIFO). */
  async acquire(signal?: AbortSignal): Promise<B> {
    signal?.throwIfAborted();
    if (this.closed) throw new PoolClosed();
    if (this.waiters.length === 0) {
      const box = this.idle.pop();
      if (box !== undefined) return this.handOut(box);
      if (this.live < this.opts.maxLive) {
        this.takeSlot();
        return this.createFor(signal);
      }
    }
    const grant = await new Promise<{ box: B } | { slot: true }>((resolve, reject) => {
      const w: Waiter<B> = {
        grant: (g) => { signal?.removeEventListener("abort", onAbort); resolve(g); },
        fail: (e) => { signal?.removeEventListener("abort", onAbort); reject(e); },
      };
      const onAbort = () => {
        const i = this.waiters.indexOf(w);
        if (i >= 0) this.waiters.splice(i, 1);
        reject(signal!.reason);
      };
      this.waiters.push(w);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    if ("box" in grant) return grant.box;
    return this.createFor(signal);
  }

  /** A job is done with its sandbox: kept for the next job, or (recycle) destroyed, freeing its place once gone. */
  release(box: B, recycle: boolean): void {
    const since = this.heldSince.get(box);
    if (since === undefined) return; // not handed out (released twice)
    this.heldSince.delete(box);
    this.busy--;
    this.serviceMs = 0.8 * this.serviceMs + 0.2 * Math.max(0, this.clock.now() - since);
    if (recycle || this.closed) {
      this.destroy(box);
      return;
    }
    const w = this.waiters.shift();
    if (w !== undefined) w.grant({ box: this.handOut(box) });
    else this.idle.push(box);
  }

  /** Destroys the idle sandboxes and refuses new work; busy ones are destroyed as they are released. */
  close(): void {
    this.closed = true;
    for (const box of this.idle.splice(0)) this.destroy(box);
    for (const w of this.waiters.splice(0)) w.fail(new PoolClosed());
  }

  stats(): PoolStats {
    return {
      maxLive: this.opts.maxLive, createsPerS: this.opts.createsPerS, live: this.live, busy: this.busy, idle: this.idle.length,
      waitingJobs: this.waiters.length, admittedJobs: this.admitted, ...this.counts,
    };
  }

  private handOut(box: B): B {
    this.busy++;
    this.heldSince.set(box, this.clock.now());
    return box;
  }

  private takeSlot(): void {
    this.live++;
    this.counts.peakLive = Math.max(this.counts.peakLive, this.live);
  }

  private freeSlot(): void {
    this.live--;
    this.pump();
  }

  private pump(): void {
    while (this.waiters.length > 0 && !this.closed) {
      const box = this.idle.pop();
      if (box !== undefined) {
        this.waiters.shift()!.grant({ box: this.handOut(box) });
      } else if (this.live < this.opts.maxLive) {
        this.takeSlot();
        this.waiters.shift()!.grant({ slot: true });
      } else {
        return;
      }
    }
  }

  private destroy(box: B): void {
    void this.opts.destroy(box).catch(() => undefined).finally(() => this.freeSlot());
  }

  /**
   * Holding a slot: creates a sandbox for this job. The create runs to its end even if the job gives up (its
   * sandbox then serves the next job): abandoning it could leave a sandbox the account counts and nobody kills.
   */
  private async createFor(signal?: AbortSignal): Promise<B> {
    if (this.closed) {
      this.freeSlot();
      throw new PoolClosed();
    }
    const creating = this.createWithRetries(signal);
    try {
      return await abortable(creating, signal);
    } catch (e) {
      if (signal?.aborted === true) void creating.then((box) => this.release(box, false), () => undefined);
      throw e;
    }
  }

  private async createWithRetries(signal?: AbortSignal): Promise<B> {
    const r = this.opts.createRetry;
    const startedMs = this.clock.now();
    for (let attempt = 0; ; attempt++) {
      let answered: (() => void) | undefined;
      try {
        answered = await this.pacer.turn();
        if (this.closed) throw new PoolClosed();
        const box = await this.opts.create();
        this.counts.creates++;
        return this.handOut(box); // closed meanwhile: the backend kills every live sandbox, and release() destroys it
      } catch (e) {
        answered?.();
        answered = undefined;
        // Give up: not retryable, out of attempts, or nobody waits for it any more (the job's deadline passed).
        const nobodyWaits = signal?.aborted === true && this.waiters.length === 0;
        const delayMs = backoffMs(attempt + 1, { baseDelayMs: r.baseDelayMs, maxDelayMs: r.maxDelayMs, random: this.clock.random });
        const overBudget = this.clock.now() + delayMs - startedMs > r.budgetMs;
        if (e instanceof PoolClosed || !r.retryable(e) || attempt + 1 >= r.attempts || overBudget || nobodyWaits || this.closed) {
          this.counts.createFailures++;
          this.freeSlot();
          throw e;
        }
        this.counts.createRetries++;
        await this.clock.sleep(delayMs);
      } finally {
        answered?.();
      }
    }
  }
}

export class PoolClosed extends Error {
  readonly code = "e2b_closed";
  constructor() {
    super("the E2B backend is closed");
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => { resolve = r; });
  return { promise, resolve };
}

/** `p`, or the signal's reason as soon as it aborts (p itself goes on). */
function abortable<T>(p: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (signal === undefined) return p;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then((v) => { signal.removeEventListener("abort", onAbort); resolve(v); }, (e: unknown) => { signal.removeEventListener("abort", onAbort); reject(e); });
  });
}
