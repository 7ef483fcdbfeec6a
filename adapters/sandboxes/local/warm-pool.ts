// Warm isolation for the local sandbox: a pool of long-lived zygotes (zygote.ts), each a bubblewrap sandbox that
// forks a manager per program and a child per test case, so a program pays forks instead of a bubblewrap and
// interpreter start. The zygote restores a clean state after every program itself and exits on any leftover or
// change (harness/reset.py); this side replaces a zygote that exited, was killed (stuck past its budget, an
// abort), served `maxPrograms` programs or is older than `maxAgeMs`. The pool holds `spares` zygotes more than
// programs can run at once, started ahead of need, so a program never waits for a cold start unless zygotes are
// replaced faster than they start.
import type { HarnessOutcome } from "./harness-events.js";
import { Zygote, type ZygoteJob } from "./zygote.js";

export interface WarmPoolOptions {
  /** Programs that may run at once (the sandbox's concurrency). */
  readonly size: number;
  /** Ready zygotes kept beyond `size` (default 1). */
  readonly spares?: number;
  /** Programs a zygote serves before it is replaced. */
  readonly maxPrograms: number;
  /** Age after which an idle zygote is replaced. */
  readonly maxAgeMs: number;
  /** Starts a zygote with this uid, serving up to `maxPrograms`. */
  readonly spawn: (uid: number, maxPrograms: number) => Zygote;
  /** Uids for zygotes: at least twice the pool (retiring zygotes keep theirs until they are gone). */
  readonly uids: readonly number[];
}

/** Zygotes in a row that may fail to start before programs get an infra error instead of waiting. */
const MAX_FAILED_STARTS = 3;
const RESTART_DELAY_MS = 1000;

interface Member {
  readonly zygote: Zygote;
  readonly uid: number;
  ready: boolean;
  busy: boolean;
}

export class WarmPool {
  private readonly members = new Set<Member>();
  /** Zygotes taken out of the pool that have not exited yet. */
  private readonly retiring = new Set<Zygote>();
  private readonly freeUids: number[];
  private readonly waiters: (() => void)[] = [];
  private readonly ageTimer: NodeJS.Timeout;
  private closed = false;
  /** Zygotes in a row that exited before they were ready, and what the last one said. */
  private failedStarts = 0;
  private lastFailure = "";
  private refill: NodeJS.Timeout | undefined;
  /** Zygotes started since the pool was made (the first `size + spares` included), retired, and programs that found
   * no ready zygote and waited for one to start. */
  readonly counts = { zygotesStarted: 0, zygotesRetired: 0, coldWaits: 0 };

  constructor(private readonly opts: WarmPoolOptions) {
    this.freeUids = [...opts.uids];
    this.fill();
    // Zygotes past their age are replaced one per tick while another ready one is idle, so none waits for it.
    this.ageTimer = setInterval(() => this.retireOld(), Math.max(1000, Math.floor(opts.maxAgeMs / 4)));
    this.ageTimer.unref();
  }

  private get target(): number {
    return this.opts.size + (this.opts.spares ?? 1);
  }

  /** Resolves once every zygote of the initial pool is ready (or failed to start). */
  async warmedUp(): Promise<void> {
    await Promise.all([...this.members].map((m) => m.zygote.ready));
  }

  async run(job: ZygoteJob, budgetMs: number, signal?: AbortSignal): Promise<HarnessOutcome> {
    const m = await this.acquire(signal);
    if (typeof m === "string") return { cases: new Map(), budgetExhausted: false, infraError: m };
    const { clean, ...outcome } = await m.zygote.run(job, budgetMs, signal);
    m.busy = false;
    if (!clean || m.zygote.exited || m.zygote.served >= this.opts.maxPrograms) this.drop(m, !clean);
    this.wake();
    return outcome;
  }

  /** Kills every zygote; resolves once all of them (those retiring too) have exited. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.ageTimer);
    clearTimeout(this.refill);
    for (const m of this.members) m.zygote.kill();
    for (const z of this.retiring) z.kill();
    const gone = [...this.members].map((m) => m.zygote.closed).concat([...this.retiring].map((z) => z.closed));
    this.members.clear();
    for (const w of this.waiters.splice(0)) w();
    await Promise.all(gone);
  }

  /** An idle ready zygote, waiting for one when none is; or why there is none. */
  private async acquire(signal?: AbortSignal): Promise<Member | string> {
    let waited = false;
    for (;;) {
      if (this.closed) return "the sandbox is closed";
      if (signal?.aborted === true) return "aborted";
      const m = [...this.members].find((x) => x.ready && !x.busy && !x.zygote.exited);
      if (m !== undefined) {
        m.busy = true;
        return m;
      }
      if (this.failedStarts >= MAX_FAILED_STARTS) return `sandbox failed to start: ${this.lastFailure}`;
      if (!waited) this.counts.coldWaits++;
      waited = true;
      this.fill();
      await new Promise<void>((resolve) => {
        const done = () => { signal?.removeEventListener("abort", done); resolve(); };
        this.waiters.push(done);
        signal?.addEventListener("abort", done, { once: true });
      });
    }
  }

  private wake(): void {
    const w = this.waiters.shift();
    w?.();
  }

  /** Takes a zygote out of the pool (killing it when it misbehaved, else letting it exit) and starts a replacement. */
  private drop(m: Member, kill: boolean): void {
    if (!this.members.delete(m)) return;
    this.counts.zygotesRetired++;
    this.retiring.add(m.zygote);
    void m.zygote.closed.then(() => this.retiring.delete(m.zygote));
    if (kill) m.zygote.kill();
    else m.zygote.retire();
    this.fill();
  }

  private fill(): void {
    if (this.refill !== undefined) return; // after failed starts: wait for the scheduled retry
    while (!this.closed && this.members.size < this.target && this.freeUids.length > 0) this.start();
  }

  private start(): void {
    const uid = this.freeUids.shift()!;
    const zygote = this.opts.spawn(uid, this.opts.maxPrograms);
    this.counts.zygotesStarted++;
    const m: Member = { zygote, uid, ready: false, busy: false };
    this.members.add(m);
    void zygote.ready.then((ok) => {
      if (!ok) return;
      m.ready = true;
      this.failedStarts = 0;
      this.wake();
    });
    void zygote.closed.then(() => {
      this.freeUids.push(uid);
      const member = this.members.delete(m);
      if (!m.ready) {
        // Exited before it was ready: bubblewrap or the interpreter cannot start. Retry later, not in a loop.
        this.failedStarts++;
        this.lastFailure = zygote.diagnostics;
        if (this.refill === undefined && !this.closed) {
          // Not unref'd: a program may be waiting for this retry (close() clears it).
          this.refill = setTimeout(() => { this.refill = undefined; this.fill(); }, RESTART_DELAY_MS);
        }
      } else if (member) {
        this.fill(); // died while idle: replace it
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  private retireOld(): void {
    const idle = [...this.members].filter((x) => x.ready && !x.busy && !x.zygote.exited);
    const old = idle.find((x) => x.zygote.ageMs > this.opts.maxAgeMs);
    if (old !== undefined && idle.length > 1) this.drop(old, false);
  }
}
