// One sandbox process: bubblewrap running harness/zygote.py as pid 1, which takes programs one at a time on its
// stdin (one JSON line each) and reports events on its stdout. Per-program isolation spawns one per program;
// warm isolation (warm.ts) keeps a pool of them. A zygote serves one program at a time.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { createInterface } from "node:readline";
import type { Limits } from "../../../core/grading/types.js";
import type { HarnessCase, HarnessEvent, HarnessOutcome, ProgramTiming } from "./harness-events.js";
import type { CallDriver, Toolchain } from "../toolchains/toolchains.js";

export interface ZygoteSpawn {
  readonly bwrap: string;
  /** bubblewrap's arguments, the zygote's command included. */
  readonly args: readonly string[];
  /** A seccomp filter file bubblewrap reads from fd 3. */
  readonly seccompFile: string | undefined;
  /** The sandbox's uid: bubblewrap itself runs as it when the server is root (see spawn). */
  readonly uid: number;
  /** Files bubblewrap reads from fds 4, 5, … (--ro-bind-data): opened here, so the sandbox uid needs no access. */
  readonly dataFiles: readonly string[];
}

export interface ZygoteJob {
  readonly language: string;
  readonly code: string;
  readonly cases: readonly HarnessCase[];
  readonly limits: Required<Limits>;
  readonly startIndex: number;
  /** How to build and run a program in a language other than Python. */
  readonly toolchain?: Toolchain;
  /** Function-call cases in such a language: the code that calls the function (toolchains.ts). */
  readonly callDriver?: CallDriver;
  /** Called per finished case; true stops the program after it (the zygote stays usable). */
  readonly stopAfter?: (ev: HarnessEvent) => boolean;
}

/** How long after the job's budget a zygote that has not finished is killed (its manager enforces the budget). */
const BUDGET_GRACE_MS = 2000;

export class Zygote {
  /** True once the zygote said it is ready; false if it exited first. */
  readonly ready: Promise<boolean>;
  /** Resolves when the sandbox process has exited. */
  readonly closed: Promise<void>;
  readonly bornAt = Date.now();
  served = 0;
  exited = false;
  private listener: ((ev: HarnessEvent) => void) | undefined;
  private onExit: (() => void) | undefined;
  private stderr = "";
  private retired = false;

  private constructor(private readonly proc: ChildProcess) {
    let markReady!: (ok: boolean) => void;
    this.ready = new Promise((r) => { markReady = r; });
    proc.stderr!.on("data", (d: Buffer) => { if (this.stderr.length < 8192) this.stderr += d.toString("utf8"); });
    createInterface({ input: proc.stdout! }).on("line", (line) => {
      let ev: HarnessEvent;
      try { ev = JSON.parse(line) as HarnessEvent; } catch { return; }
      if (ev.event === "ready") markReady(true);
      else this.listener?.(ev);
    });
    proc.stdin!.on("error", () => { /* the zygote is gone; its close handler reports it */ });
    this.closed = new Promise((resolve) => proc.on("close", () => {
      this.exited = true;
      markReady(false);
      this.onExit?.();
      resolve();
    }));
  }

  /**
   * Starts bubblewrap with an empty environment (its own environ must hold no secret of the server). A server
   * running as root starts it as the sandbox's uid: a sandbox of root's is root's outside its namespaces, and the
   * kernel exempts root's processes from RLIMIT_NPROC, so a fork bomb would fill the machine's process table (and
   * an escape would be root). As its own unprivileged uid, the limit holds and nothing of the host is root's.
   */
  static spawn(s: ZygoteSpawn): Zygote {
    const fds: number[] = [];
    try {
      // Each sandbox gets its own descriptors (a shared one would share the read offset).
      const filterFd = s.seccompFile === undefined ? undefined : openSync(s.seccompFile, "r");
      if (filterFd !== undefined) fds.push(filterFd);
      const dataFds = s.dataFiles.map((f) => { const fd = openSync(f, "r"); fds.push(fd); return fd; });
      const asRoot = process.getuid?.() === 0;
      const proc = spawn(s.bwrap, [...s.args], {
        stdio: ["pipe", "pipe", "pipe", filterFd ?? "ignore", ...dataFds], detached: true, env: {}, cwd: "/",
        ...(asRoot ? { uid: s.uid, gid: s.uid } : {}),
      });
      return new Zygote(proc);
    } finally {
      for (const fd of fds) closeSync(fd); // the child has its copies
    }
  }

  get ageMs(): number {
    return Date.now() - this.bornAt;
  }

  /** What the sandbox wrote on stderr (bubblewrap's or the zygote's own complaints), for error messages. */
  get diagnostics(): string {
    return this.stderr.trim().slice(0, 500) || "no output";
  }

  /** Kills the whole sandbox (its process group: bubblewrap and, through --die-with-parent, everything inside). */
  kill(): void {
    try { process.kill(-this.proc.pid!, "SIGKILL"); } catch { /* already gone */ }
  }

  /** Ends the zygote gracefully: it exits when it next waits for a program (its CPU time stays accounted). */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    this.proc.stdin!.end();
  }

  /** Sends one program and collects its events until the zygote reports it done or exits. `clean`: still usable. */
  run(job: ZygoteJob, budgetMs: number, signal?: AbortSignal): Promise<HarnessOutcome & { clean: boolean }> {
    const outcome: HarnessOutcome = { cases: new Map(), budgetExhausted: false };
    const sentAt = performance.now();
    const t = { buildMs: 0, forkMs: 0, programMs: 0, collectMs: 0, cleanupMs: 0 };
    let built = false;
    let stopSent = false;
    this.served++;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (clean: boolean, exitMessage?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(backstop);
        signal?.removeEventListener("abort", onAbort);
        this.listener = undefined;
        this.onExit = undefined;
        const timing: ProgramTiming = { ...t, wallMs: performance.now() - sentAt };
        if (signal?.aborted === true) { resolve({ cases: outcome.cases, budgetExhausted: false, infraError: "aborted", clean: false, timing }); return; }
        const missing = job.cases.findIndex((_, i) => i >= job.startIndex && !outcome.cases.has(i));
        // A program that killed its manager (or the zygote) ends the case it was running.
        if (built && missing >= 0 && outcome.interrupted === undefined && !outcome.budgetExhausted && outcome.stoppedEarly !== true && exitMessage !== undefined) outcome.interrupted = missing;
        if (outcome.compile?.unavailable === true) outcome.infraError = outcome.compile.stderr;
        else if (!built && exitMessage !== undefined && !outcome.budgetExhausted) outcome.infraError = exitMessage;
        resolve({ ...outcome, clean, timing });
      };
      // The manager enforces the budget itself; this only ends a sandbox that stopped answering.
      const backstop = setTimeout(() => { outcome.budgetExhausted = true; this.kill(); }, budgetMs + BUDGET_GRACE_MS);
      const onAbort = () => this.kill();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.onExit = () => finish(false, `sandbox exited: ${this.diagnostics}`);
      this.listener = (ev) => {
        switch (ev.event) {
          case "built": built = true; t.buildMs += ev.timeMs; break;
          case "compile": built = true; outcome.compile = ev; t.buildMs += ev.timeMs; break;
          case "case":
            if (ev.index === undefined) break;
            outcome.cases.set(ev.index, ev);
            if (ev.t !== undefined) { t.forkMs += ev.t[0]; t.programMs += ev.t[1]; t.collectMs += ev.t[2]; }
            if (!stopSent && job.stopAfter?.(ev) === true) {
              stopSent = true;
              outcome.stoppedEarly = true;
              this.proc.stdin!.write("stop\n");
            }
            break;
          case "budget": outcome.budgetExhausted = true; outcome.interrupted = ev.index; break;
          case "done": {
            t.cleanupMs += ev.cleanupMs ?? 0;
            const anomaly = ev.anomaly ?? [];
            finish(anomaly.length === 0, anomaly.some((a) => a.startsWith("manager ended")) ? "the program terminated the sandbox harness" : undefined);
            break;
          }
          default: break;
        }
      };
      if (this.exited) { finish(false, `sandbox exited: ${this.diagnostics}`); return; }
      const { stopAfter, ...wire } = job;
      this.proc.stdin!.write(`${JSON.stringify({ ...wire, stopOnFailure: stopAfter !== undefined })}\n`);
    });
  }
}
