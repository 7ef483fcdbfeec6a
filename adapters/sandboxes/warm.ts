// Warm isolation for the local sandbox: per slot one long-lived bubblewrap sandbox running the zygote
// (harness/warm_zygote.py), which forks a manager per program and a child per test case, so a program pays a
// fork instead of a bubblewrap and interpreter start. The zygote cleans up after each program itself (kills
// every other process of its PID namespace, empties /work, /tmp and /dev/shm, removes System V IPC objects)
// and exits on any leftover; this side replaces a zygote that exited, was killed (budget, abort, stop at the
// first failure) or served `maxPrograms` programs, and starts the replacement at once so the next program
// does not wait for it.
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, closeSync, mkdirSync, openSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { Limits } from "../../core/grading/types.js";
import type { HarnessCase, HarnessEvent, HarnessOutcome } from "./harness-events.js";

export interface WarmPoolOptions {
  /** bubblewrap arguments for a sandbox with `work` as /work (everything but the command). */
  readonly bwrapArgs: (work: string, uid: number, seccompOnFd3: boolean) => string[];
  readonly bwrap: string;
  readonly python: string;
  readonly seccompFile: string | undefined;
  readonly workRoot: string;
  /** Programs a zygote serves before it is replaced. */
  readonly maxPrograms: number;
}

export interface WarmProgram {
  readonly language: string;
  readonly code: string;
  readonly cases: readonly HarnessCase[];
  readonly limits: Required<Limits>;
  readonly startIndex: number;
  /** Called per finished case; returning true stops the program (the zygote is replaced). */
  readonly stopAfter?: (ev: HarnessEvent) => boolean;
}

class Zygote {
  private listener: ((ev: HarnessEvent) => void) | undefined;
  private onExit: (() => void) | undefined;
  exited = false;
  served = 0;
  stderr = "";

  constructor(readonly proc: ChildProcess, readonly workDir: string) {
    proc.stderr!.on("data", (d: Buffer) => { if (this.stderr.length < 8192) this.stderr += d.toString("utf8"); });
    createInterface({ input: proc.stdout! }).on("line", (line) => {
      let ev: HarnessEvent;
      try { ev = JSON.parse(line) as HarnessEvent; } catch { return; }
      this.listener?.(ev);
    });
    proc.on("close", () => { this.exited = true; this.onExit?.(); });
    proc.stdin!.on("error", () => { /* the zygote is gone; its close handler reports it */ });
  }

  kill(): void {
    try { process.kill(-this.proc.pid!, "SIGKILL"); } catch { /* already gone */ }
  }

  /** Sends one program and collects its events until the zygote reports it done or exits. */
  run(job: WarmProgram, budgetMs: number, signal?: AbortSignal): Promise<HarnessOutcome & { clean: boolean }> {
    const outcome: HarnessOutcome = { cases: new Map(), budgetExhausted: false };
    let current: number | undefined;
    this.served++;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (clean: boolean, infraError?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(budget);
        signal?.removeEventListener("abort", onAbort);
        this.listener = undefined;
        this.onExit = undefined;
        if (current !== undefined) outcome.interrupted = current;
        if (signal?.aborted === true) { resolve({ cases: outcome.cases, budgetExhausted: false, infraError: "aborted", clean: false }); return; }
        const ranSomething = outcome.compile !== undefined || outcome.cases.size > 0 || current !== undefined;
        if (infraError !== undefined && !ranSomething && !outcome.budgetExhausted && outcome.stoppedEarly !== true) outcome.infraError = infraError;
        else if (outcome.compile?.unavailable === true) outcome.infraError = outcome.compile.stderr;
        resolve({ ...outcome, clean });
      };
      const budget = setTimeout(() => { outcome.budgetExhausted = true; this.kill(); }, budgetMs);
      const onAbort = () => this.kill();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.onExit = () => finish(false, `warm sandbox exited: ${this.stderr.trim().slice(0, 500) || "no output"}`);
      this.listener = (ev) => {
        if (ev.event === "compile") outcome.compile = ev;
        else if (ev.event === "start") current = ev.index;
        else if (ev.event === "case" && ev.index !== undefined) {
          outcome.cases.set(ev.index, ev);
          current = undefined;
          if (job.stopAfter?.(ev) === true) { outcome.stoppedEarly = true; this.kill(); }
        } else if (ev.event === "done") {
          // A manager that died mid-case (the program killed it) shows up as an anomaly with `current` set.
          finish((ev.anomaly ?? []).length === 0);
        }
      };
      if (this.exited) { finish(false, `warm sandbox exited: ${this.stderr.trim().slice(0, 500) || "no output"}`); return; }
      const { stopAfter: _, ...wire } = job;
      this.proc.stdin!.write(`${JSON.stringify(wire)}\n`);
    });
  }
}

/** One zygote per slot uid, replaced after `maxPrograms`, any anomaly, or a kill. */
export class WarmPool {
  private readonly zygotes = new Map<number, Zygote>();
  private closed = false;
  private spawned = 0;

  constructor(private readonly opts: WarmPoolOptions) {}

  /** Starts the zygotes of these slots now (so no request waits for a cold start). */
  prestart(uids: readonly number[]): void {
    for (const uid of uids) this.zygoteFor(uid);
  }

  async run(uid: number, job: WarmProgram, budgetMs: number, signal?: AbortSignal): Promise<HarnessOutcome> {
    if (this.closed) return { cases: new Map(), budgetExhausted: false, infraError: "the sandbox is closed" };
    const z = this.zygoteFor(uid);
    const { clean, ...outcome } = await z.run(job, budgetMs, signal);
    if (!clean || z.exited || z.served >= this.opts.maxPrograms) this.replace(uid, z);
    return outcome;
  }

  close(): void {
    this.closed = true;
    for (const z of this.zygotes.values()) z.kill();
    this.zygotes.clear();
  }

  private replace(uid: number, old: Zygote): void {
    old.kill();
    const dir = old.workDir;
    old.proc.once("close", () => rmSync(dir, { recursive: true, force: true }));
    if (old.exited) rmSync(dir, { recursive: true, force: true });
    this.zygotes.delete(uid);
    if (!this.closed) this.zygoteFor(uid); // respawn ahead of the next program
  }

  private zygoteFor(uid: number): Zygote {
    const have = this.zygotes.get(uid);
    if (have !== undefined && !have.exited) return have;
    const work = join(this.opts.workRoot, `warm-${uid}-${this.spawned++}`);
    mkdirSync(work, { mode: 0o700 });
    chmodSync(work, 0o777); // writable by the sandbox uid; the 0700 work root keeps other host users out
    let filterFd: number | undefined;
    try {
      if (this.opts.seccompFile !== undefined) filterFd = openSync(this.opts.seccompFile, "r");
      const args = [...this.opts.bwrapArgs(work, uid, filterFd !== undefined), this.opts.python, "-I", "/opt/rlpipe/warm_zygote.py", String(this.opts.maxPrograms)];
      const proc = spawn(this.opts.bwrap, args, { stdio: ["pipe", "pipe", "pipe", filterFd ?? "ignore"], detached: true, env: {} });
      const z = new Zygote(proc, work);
      this.zygotes.set(uid, z);
      return z;
    } finally {
      if (filterFd !== undefined) closeSync(filterFd);
    }
  }
}
