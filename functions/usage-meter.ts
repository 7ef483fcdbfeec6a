// Per-run usage counters of one function instance (core/run-usage.ts says what is counted and where it is kept).
// Counting never fails a request: a usage store that cannot be written costs a log line, not a reward.
import { randomBytes } from "node:crypto";
import { RUN_NAME } from "../core/checkpoints.js";
import { type UsageCounters, type UsageRecord, ZERO_COUNTERS, addCounters, usageLayout } from "../core/run-usage.js";

/** Where an instance's records go: an object store (ObjectStore satisfies it structurally). */
export interface UsageSink {
  readonly url?: string;
  putBytes(key: string, data: Uint8Array | string): Promise<unknown>;
}

export interface UsageMeterOptions {
  readonly platform: string;
  readonly sink?: UsageSink;
  /** This instance's name in the store (default: platform, pid and random hex). */
  readonly instance?: string;
  readonly sandbox?: string;
  readonly memoryMb?: number;
  readonly now?: () => Date;
  readonly log?: (line: string) => void;
}

export class UsageMeter {
  readonly instance: string;
  private readonly runs = new Map<string, UsageRecord>();
  private readonly writes = new Map<string, Promise<void>>();
  private readonly now: () => Date;

  constructor(private readonly opts: UsageMeterOptions) {
    this.instance = opts.instance ?? `${opts.platform}-${process.pid}-${randomBytes(6).toString("hex")}`;
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(this.instance)) throw new TypeError(`usage instance name ${JSON.stringify(this.instance)} is not a safe object name`);
    this.now = opts.now ?? (() => new Date());
  }

  /** Where records are written, if anywhere. */
  get sinkUrl(): string | undefined {
    return this.opts.sink === undefined ? undefined : this.opts.sink.url ?? "the usage store";
  }

  /** Whether `run` may be counted under (a run name is also an object key prefix). */
  static validRun(run: string): boolean {
    return RUN_NAME.test(run);
  }

  /** Add to `run`'s counters and write this instance's record (the write is awaited, its failure only logged). */
  async record(run: string, delta: Partial<UsageCounters>): Promise<void> {
    if (!UsageMeter.validRun(run)) return;
    const at = this.now().toISOString();
    const prev = this.runs.get(run);
    const next: UsageRecord = {
      schema: "rlpipe.run-usage", version: 1, run, instance: this.instance, platform: this.opts.platform,
      ...(this.opts.sandbox === undefined ? {} : { sandbox: this.opts.sandbox }),
      ...(this.opts.memoryMb === undefined ? {} : { memoryMb: this.opts.memoryMb }),
      firstAt: prev?.firstAt ?? at, lastAt: at,
      counters: addCounters(prev?.counters ?? ZERO_COUNTERS, delta),
    };
    this.runs.set(run, next);
    const sink = this.opts.sink;
    if (sink === undefined) return;
    // One write at a time per run, each of the newest counters: a slow write is never overtaken by an older one.
    const write = (this.writes.get(run) ?? Promise.resolve()).then(async () => {
      const latest = this.runs.get(run)!;
      try {
        await sink.putBytes(usageLayout.object(run, this.instance), `${JSON.stringify(latest, null, 2)}\n`);
      } catch (e) {
        this.opts.log?.(`rlpipe: usage of run ${run} not written to ${sink.url ?? "the usage store"}: ${(e as Error).message}`);
      }
    });
    this.writes.set(run, write);
    await write;
  }

  /** This instance's record of `run`, if it counted any. */
  snapshot(run: string): UsageRecord | undefined {
    return this.runs.get(run);
  }

  /** Every pending write done. */
  async flush(): Promise<void> {
    await Promise.all(this.writes.values());
  }
}
