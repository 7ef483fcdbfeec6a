// One sandbox process: bubblewrap running harness/zygote.py as pid 1, which takes programs one at a time on its
// stdin (one JSON line each) and reports events on its stdout. Per-program isolation spawns one per program;
// warm isolation (warm-pool.ts) keeps a pool of them. A zygote serves one program at a time.
//
// Nothing here trusts the sandbox to keep time: a watchdog ends a zygote whose harness stopped answering (a program
// can SIGSTOP its manager), each phase of a program at its own limit (the build at its compile timeout, each case at
// its run timeout, the clean-up), and the event stream is read with a bound on a line's size.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import type { Limits } from "../../../core/grading/types.js";
import type { HarnessCase, HarnessEvent, HarnessOutcome, ProgramTiming } from "./harness-events.js";
import type { CallDriver, Toolchain } from "../toolchains/toolchains.js";
import type { ProgramMemory } from "./memory-bounds.js";
import { PROGRAM_CGROUP_FD } from "./bwrap.js";
import { SandboxError } from "../sandbox.js";
import { stringifyJson } from "../../../core/grading/exact-json.js";

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
  /** The memory cgroup the sandbox runs in (memory-bounds.ts), when the host has one for it. */
  readonly memory?: ProgramMemory;
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
  /**
   * The test codes of split assert cases (asserts.py), by case index. They are not in the job: the harness asks for
   * them once the process that forks the program's processes exists, so that no program process ever holds them.
   */
  readonly splitTests?: readonly (string | null)[];
  /** Called per finished case as it arrives (it may keep only what it needs of the event); true stops the program
   * after it, when `stopOnFailure` (the zygote stays usable). */
  readonly onCase?: (ev: HarnessEvent) => boolean;
  /** The harness checks between cases whether the server asked it to stop. */
  readonly stopOnFailure?: boolean;
}

/** How long after a phase's own limit a harness that has not reported is taken for stopped. */
const WATCHDOG_GRACE_MS = 5000;
/** The clean-up after a program (kill, empty the scratch directories, checks). */
const CLEANUP_LIMIT_MS = 30_000;
/** A sandbox whose cgroup still holds more than a program's limit allows (it is ended; the request may retry). */
const LIMIT_NOT_SET = "the sandbox's memory limit could not be set (its cgroup held too much); the sandbox was replaced";
/** How long after the job's budget a zygote that has not finished is killed (its manager enforces the budget). */
const BUDGET_GRACE_MS = 2000;

/** The largest event line: a case's stdout, stderr, returned value and fetched files, each within maxOutputBytes. */
export function maxEventBytes(limits: Required<Limits>): number {
  return 5 * limits.maxOutputBytes + (1 << 20);
}

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
  private onOverflow: (() => void) | undefined;
  private stderr = "";
  private retired = false;
  /** Whether its programs get namespaces of their own (harness/reset.py), once ready; else why the kernel refused. */
  namespaces = false;
  namespacesRefused: string | undefined;
  /** The event stream's partial line, and the bound on a line. */
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private maxLineBytes = 1 << 20;

  private constructor(private readonly proc: ChildProcess, readonly memory: ProgramMemory | undefined) {
    let markReady!: (ok: boolean) => void;
    this.ready = new Promise((r) => { markReady = r; });
    proc.stderr!.on("data", (d: Buffer) => { if (this.stderr.length < 8192) this.stderr += d.toString("utf8"); });
    proc.stdout!.on("data", (chunk: Buffer) => this.take(chunk, (line) => {
      let ev: HarnessEvent;
      try { ev = JSON.parse(line) as HarnessEvent; } catch { return; }
      if (ev.event === "ready") {
        this.namespaces = (ev as { namespaces?: boolean }).namespaces === true;
        this.namespacesRefused = (ev as { namespacesRefused?: string }).namespacesRefused;
        markReady(true);
      }
      else this.listener?.(ev);
    }));
    proc.stdin!.on("error", () => { /* the zygote is gone; its close handler reports it */ });
    this.closed = new Promise((resolve) => proc.on("close", () => {
      this.exited = true;
      markReady(false);
      this.onExit?.();
      memory?.sandboxExited(); // after the program's outcome read its OOM count
      resolve();
    }));
  }

  /**
   * Starts bubblewrap with an empty environment (its own environ must hold no secret of the server). A server
   * running as root starts it as the sandbox's uid: a sandbox of root's is root's outside its namespaces, and the
   * kernel exempts root's processes from RLIMIT_NPROC, so a fork bomb would fill the machine's process table (and
   * an escape would be root). As its own unprivileged uid, the limit holds and nothing of the host is root's. With a
   * memory cgroup it joins the cgroup first (as root, which cgroup v2 requires) and drops to that uid before bubblewrap.
   */
  static spawn(s: ZygoteSpawn): Zygote {
    const fds: number[] = [];
    try {
      // Each sandbox gets its own descriptors (a shared one would share the read offset).
      const filterFd = s.seccompFile === undefined ? undefined : openSync(s.seccompFile, "r");
      if (filterFd !== undefined) fds.push(filterFd);
      const dataFds = s.dataFiles.map((f) => { const fd = openSync(f, "r"); fds.push(fd); return fd; });
      // The program leaf's cgroup.procs, opened here (by the server: the kernel checks a move against the opener) for
      // the harness to move the processes it forks for a program into; the sandbox has no cgroup file system of its own.
      if (s.memory !== undefined) {
        if (3 + 1 + dataFds.length !== PROGRAM_CGROUP_FD) throw new SandboxError("memory_cgroup_failed", `the program cgroup's descriptor would be ${4 + dataFds.length}, not ${PROGRAM_CGROUP_FD}`);
        try {
          dataFds.push(openSync(s.memory.programProcsFile, "w"));
          fds.push(dataFds.at(-1)!);
        } catch (e) {
          throw new SandboxError("memory_cgroup_failed", `cannot open ${s.memory.programProcsFile}: ${(e as Error).message}`, { cause: e });
        }
      }
      const asRoot = process.getuid?.() === 0;
      const argv = s.memory === undefined ? [s.bwrap, ...s.args] : s.memory.spawnArgs([s.bwrap, ...s.args], asRoot ? { uid: s.uid, gid: s.uid } : undefined);
      const proc = spawn(argv[0]!, argv.slice(1), {
        stdio: ["pipe", "pipe", "pipe", filterFd ?? "ignore", ...dataFds], detached: true, env: {}, cwd: "/",
        ...(asRoot && s.memory === undefined ? { uid: s.uid, gid: s.uid } : {}),
      });
      return new Zygote(proc, s.memory);
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

  /** Splits the event stream into lines, never holding more than one line's bound. */
  private take(chunk: Buffer, onLine: (line: string) => void): void {
    let from = 0;
    for (let nl = chunk.indexOf(10, from); nl >= 0; nl = chunk.indexOf(10, from)) {
      const part = chunk.subarray(from, nl);
      const line = this.pending.length === 0 ? part : Buffer.concat([...this.pending, part]);
      this.pending = [];
      this.pendingBytes = 0;
      from = nl + 1;
      if (line.length <= this.maxLineBytes) onLine(line.toString("utf8"));
      else this.onOverflow?.();
    }
    if (from < chunk.length) {
      this.pendingBytes += chunk.length - from;
      if (this.pendingBytes > this.maxLineBytes) {
        this.pending = [];
        this.pendingBytes = 0;
        this.onOverflow?.();
        return;
      }
      this.pending.push(chunk.subarray(from));
    }
  }

  /** Sends one program and collects its events until the zygote reports it done or exits. `clean`: still usable. */
  run(job: ZygoteJob, budgetMs: number, signal?: AbortSignal): Promise<HarnessOutcome & { clean: boolean }> {
    const outcome: HarnessOutcome = { cases: new Map(), budgetExhausted: false };
    const sentAt = performance.now();
    const t = { buildMs: 0, forkMs: 0, programMs: 0, collectMs: 0, cleanupMs: 0 };
    const compiled = job.toolchain?.compile !== undefined || job.callDriver?.compile !== undefined;
    const runMs = job.limits.runTimeoutMs;
    let built = false;
    let stopSent = false;
    let running = job.startIndex;
    this.served++;
    this.maxLineBytes = maxEventBytes(job.limits);
    const memory = this.memory;
    const oomBefore = memory?.oomKills() ?? 0;
    return new Promise((resolve) => {
      let settled = false;
      const finish = (clean: boolean, exitMessage?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(backstop);
        clearTimeout(watchdog);
        signal?.removeEventListener("abort", onAbort);
        this.listener = undefined;
        this.onExit = undefined;
        this.onOverflow = undefined;
        const timing: ProgramTiming = { ...t, wallMs: performance.now() - sentAt };
        if (signal?.aborted === true) { resolve({ cases: outcome.cases, budgetExhausted: false, infraError: "aborted", clean: false, timing }); return; }
        const missing = job.cases.findIndex((_, i) => i >= job.startIndex && !outcome.cases.has(i));
        // A program that killed its manager (or the zygote) ends the case it was running.
        if (built && missing >= 0 && outcome.interrupted === undefined && !outcome.budgetExhausted && outcome.stoppedEarly !== true && exitMessage !== undefined) outcome.interrupted = missing;
        if (outcome.interrupted !== undefined && memory !== undefined && memory.oomKills() > oomBefore) outcome.programMemoryExceeded = true;
        if (outcome.compile?.unavailable === true) outcome.infraError = outcome.compile.stderr;
        else if (!built && exitMessage !== undefined && !outcome.budgetExhausted) outcome.infraError ??= outcome.stalled === -1 ? "the sandbox stopped answering during the build" : exitMessage;
        resolve({ ...outcome, clean, timing });
      };
      // The manager enforces the budget itself; this only ends a sandbox that stopped answering.
      const backstop = setTimeout(() => { outcome.budgetExhausted = true; this.kill(); }, budgetMs + BUDGET_GRACE_MS);
      // Each phase has a limit of its own; a harness silent past it (stopped, or stuck) ends the sandbox.
      let watchdog: NodeJS.Timeout | undefined;
      const expect = (phaseMs: number, what: "build" | "case" | "cleanup") => {
        clearTimeout(watchdog);
        watchdog = setTimeout(() => {
          outcome.stalled = what === "case" ? running : -1;
          this.kill();
        }, phaseMs + Math.max(WATCHDOG_GRACE_MS, phaseMs / 2));
      };
      const onAbort = () => this.kill();
      signal?.addEventListener("abort", onAbort, { once: true });
      this.onExit = () => finish(false, `sandbox exited: ${this.diagnostics}`);
      this.onOverflow = () => { outcome.infraError = `the sandbox's event stream exceeded ${this.maxLineBytes} bytes in one line`; this.kill(); };
      const nextCase = () => {
        const more = job.cases.findIndex((_, i) => i >= job.startIndex && !outcome.cases.has(i));
        if (more < 0 || stopSent) expect(CLEANUP_LIMIT_MS, "cleanup");
        else { running = more; expect(runMs, "case"); }
      };
      this.listener = (ev) => {
        switch (ev.event) {
          case "built": built = true; t.buildMs += ev.timeMs; nextCase(); break;
          case "compile": {
            built = true;
            outcome.compile = ev;
            t.buildMs += ev.timeMs;
            if (ev.exitCode === 0 && !ev.timedOut && memory !== undefined) {
              // The build ran under the compiler's memory limit; the cases run under the program's.
              if (!memory.programStarts(job.limits.memoryMb)) { outcome.infraError = LIMIT_NOT_SET; this.kill(); break; }
              this.proc.stdin!.write("go\n");
            }
            nextCase();
            break;
          }
          case "tests":
            this.proc.stdin!.write(`${JSON.stringify(job.cases.map((_, i) => job.splitTests?.[i] ?? null))}\n`);
            nextCase();
            break;
          case "case":
            if (ev.index === undefined) break;
            if (memory !== undefined && ev.exitCode !== 0 && memory.oomKills() > oomBefore) ev.programMemoryExceeded = true;
            outcome.cases.set(ev.index, ev);
            if (ev.t !== undefined) { t.forkMs += ev.t[0]; t.programMs += ev.t[1]; t.collectMs += ev.t[2]; }
            if (job.onCase?.(ev) === true && job.stopOnFailure === true && !stopSent) {
              stopSent = true;
              outcome.stoppedEarly = true;
              this.proc.stdin!.write("stop\n");
            }
            nextCase();
            break;
          case "budget": outcome.budgetExhausted = true; outcome.interrupted = ev.index; expect(CLEANUP_LIMIT_MS, "cleanup"); break;
          case "done": {
            t.cleanupMs += ev.cleanupMs ?? 0;
            const anomaly = ev.anomaly ?? [];
            outcome.anomaly = anomaly;
            finish(anomaly.length === 0, anomaly.some((a) => a.startsWith("manager ended")) ? "the program terminated the sandbox harness" : undefined);
            break;
          }
          default: break;
        }
      };
      if (this.exited) { finish(false, `sandbox exited: ${this.diagnostics}`); return; }
      const { onCase: _onCase, splitTests: _splitTests, stopOnFailure, ...wire } = job;
      if (memory !== undefined && !(compiled ? memory.buildStarts(Math.max(job.limits.memoryMb, 2048)) : memory.programStarts(job.limits.memoryMb))) {
        outcome.infraError = LIMIT_NOT_SET;
        this.kill();
        return;
      }
      expect(compiled ? job.limits.compileTimeoutMs : runMs, "build");
      this.proc.stdin!.write(`${stringifyJson({ ...wire, stopOnFailure: stopOnFailure === true, goAfterBuild: compiled && memory !== undefined })}\n`);
    });
  }
}
