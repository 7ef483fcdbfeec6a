// The embedded sandbox: every program runs in bubblewrap (bwrap.ts) — empty network namespace, empty environment plus
// a short whitelist, an unprivileged uid of its own (sandbox-uids.ts), read-only /usr, private tmpfs scratch
// directories, a seccomp filter (seccomp.ts), rlimits, a memory cgroup over all of a program's processes
// (memory-bounds.ts), a wall clock that kills the whole group, output capped. Inside, a zygote (harness/zygote.py)
// builds a program once and forks a process per test case. Two isolation paths share that harness and the security
// suite:
//   warm (default): a pool of long-lived zygotes (warm-pool.ts) fork per program and restore a clean state after each
//     one (harness/reset.py), so a program pays forks, not a bubblewrap and interpreter start;
//   per-program: a fresh bubblewrap sandbox per program (zygote.ts with one program), discarded after it.
// Nothing of the server reaches a program: bubblewrap itself starts with an empty environment and stays outside
// the sandbox (the zygote is pid 1), inherited descriptors are closed, kernel keyring calls are refused. Cases are
// graded as their events arrive, and only the output a request's reply carries is kept (core/grading/output-budget.ts).
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { compileFailed, gradeCase, gradeJudge, summarize } from "../../../core/grading/grade.js";
import { OutputBudget } from "../../../core/grading/output-budget.js";
import {
  type CaseExecution, type CaseResult, type EvalJob, type EvalResult, type Limits, type RunRequest, type RunResult, type TestCase, withDefaults,
} from "../../../core/grading/types.js";
import { Semaphore } from "../../../core/util/semaphore.js";
import { type Capabilities, type EvaluateOptions, type SandboxBackend, SandboxError } from "../sandbox.js";
import { detectRoots } from "../toolchains/debian-root.js";
import { checkPythonEnv, type PythonEnv } from "../toolchains/python-env.js";
import { withEnvironment } from "../toolchains/runtime-environment.js";
import { detectToolchains, type Toolchain } from "../toolchains/toolchains.js";
import type { VerdictAbilities } from "../../../core/grading/verdicts.js";
import { buildCaseLoop, bwrapArgs, compileHarness, HARNESS_DIR, HARNESS_FILES, SANDBOX_HOSTS, SANDBOX_NSSWITCH, type SandboxLayout } from "./bwrap.js";
import type { HarnessCase, HarnessEvent, HarnessOutcome } from "./harness-events.js";
import { MemoryBounds } from "./memory-bounds.js";
import { planUids, type UidPlan, WARM_SPARES } from "./sandbox-uids.js";
import { sandboxFilter } from "./seccomp.js";
import { SandboxTimings, type SandboxTimingsSnapshot } from "./timings.js";
import { WarmPool } from "./warm-pool.js";
import { Zygote } from "./zygote.js";

/** Programs a warm sandbox serves before it is replaced. Starting one costs ~60 ms of CPU (bubblewrap, the interpreter,
 * the warm-up); at 200 programs that was ~2% of a 10-case program's CPU, and a busy slot replaced its sandbox every few
 * seconds. Every program is checked clean after it, so the count is a backstop, not what keeps programs apart. */
const WARM_MAX_PROGRAMS = 2000;

export interface LocalSandboxOptions {
  /** Programs running at once (default: the number of cores). */
  readonly concurrency?: number;
  readonly bwrap?: string;
  /** Interpreter for the harness and Python programs (Debian's; the pyenv shim costs ~100 ms per start). */
  readonly python?: string;
  /** Size of each private tmpfs inside the sandbox (/tmp and the work dir /work). */
  readonly tmpfsBytes?: number;
  /** Where the sandbox keeps its few host files (the seccomp filter). */
  readonly workRoot?: string;
  /** warm (default): programs fork from a pool of long-lived sandboxes (warm-pool.ts). per-program: one bubblewrap per program. */
  readonly isolation?: Isolation;
  /** The manager's per-case work in C (caseloop.c, built with the host's C compiler when there is one; default true);
   * false: in Python. The same events either way. */
  readonly caseLoop?: boolean;
  /**
   * Each program in namespaces and scratch file systems of its own (default true, where the kernel allows:
   * harness/reset.py); false: programs share the sandbox's, cleaned up after (the fallback, and its tests).
   */
  readonly programNamespaces?: boolean;
  /** warm: programs a sandbox serves before it is replaced (default WARM_MAX_PROGRAMS). */
  readonly warmMaxPrograms?: number;
  /** warm: age after which an idle sandbox is replaced (default 10 minutes). */
  readonly warmMaxAgeMs?: number;
  /** The languages besides Python (default: every toolchain installed here, toolchains.ts). */
  readonly toolchains?: readonly Toolchain[];
  /** A Python environment (python-env.ts) for programs: mounted read-only; its interpreter runs them (and the harness). */
  readonly pythonEnv?: string;
  /**
   * A root file system (debian-root.ts) whose /usr the sandboxes see instead of the host's, for toolchains only a
   * newer release has; its own python3 runs the harness.
   */
  readonly root?: string;
  /**
   * Roots whose languages this sandbox also offers, each through a sandbox of its own (per-program, sharing this one's
   * slots). Default: the roots built here (detectRoots), unless `toolchains` is given.
   */
  readonly roots?: readonly { readonly dir: string; readonly toolchains: readonly Toolchain[] }[];
  /** auto (default): a memory cgroup per sandbox where the host gives one; per-process: rlimits only. */
  readonly memoryBounds?: "auto" | "per-process";
  /** Where host-wide uid leases live (uid-lease.ts; tests give their own). */
  readonly uidLeaseDir?: string;
  /** One line per anomaly: a program after which the sandbox was found unclean, a harness that stopped answering. */
  readonly log?: (line: string) => void;
}

/** What a sandbox for a root shares with the one that offers its languages. */
interface RootedParent {
  readonly slots: Semaphore;
  readonly uids: readonly number[];
  readonly memory: MemoryBounds;
}

export const ISOLATIONS = ["warm", "per-program"] as const;
export type Isolation = (typeof ISOLATIONS)[number];
export const DEFAULT_ISOLATION: Isolation = "warm";

/** Event counts besides the warm pool's: harnesses the watchdog ended, programs whose clean-up found something. */
interface SandboxCounts { stalls: number; anomalies: number; programMemoryKills: number }

export class LocalSandbox implements SandboxBackend {
  readonly name = "local";
  private readonly slots: Semaphore;
  /** One uid per concurrent slot: RLIMIT_NPROC counts per uid, so a fork bomb cannot starve another slot. */
  private readonly freeUids: number[];
  private readonly workRoot: string;
  /** The case loop bound into every sandbox (buildCaseLoop): a library, or an empty file (the Python loop). */
  private readonly caseLoop: { readonly file: string; readonly built: boolean };
  /** The seccomp filter bubblewrap installs (seccomp.ts), when there is one for this architecture. */
  private readonly seccompFile: string | undefined;
  /** The harness as bytecode (compileHarness), bound into every sandbox at /opt/rlpipe. */
  private readonly harnessFiles: readonly string[];
  private readonly layout: SandboxLayout;
  private closed = false;
  /** The pool of long-lived sandboxes (isolation warm). */
  private readonly warm: WarmPool | undefined;
  /** Where requests' time goes (stats()). */
  private readonly timings = new SandboxTimings();
  private readonly counts: SandboxCounts = { stalls: 0, anomalies: 0, programMemoryKills: 0 };
  private readonly log: ((line: string) => void) | undefined;

  /** Python (the harness's own interpreter) and every language whose toolchain is installed (toolchains.ts). */
  private readonly languages: string[];
  /** Sandboxes for roots (debian-root.ts), each offering the languages of its toolchains. */
  private rooted: readonly LocalSandbox[] = [];

  private constructor(private readonly bwrap: string, python: string, private readonly toolchains: readonly Toolchain[], opts: LocalSandboxOptions,
    /** The memory cgroups of this server's sandboxes (shared with its roots' sandboxes). */
    readonly memory: MemoryBounds,
    uids: { readonly slots: readonly number[]; readonly warm: readonly number[] },
    /** The host-wide lease of this server's uids (a root's sandbox uses its parent's). */
    private readonly uidPlan: UidPlan | undefined,
    /** The Python environment programs import from, when the server was given one. */
    readonly pythonEnv?: PythonEnv, parent?: RootedParent) {
    this.languages = ["python", ...toolchains.map((t) => t.language)];
    this.log = opts.log;
    this.slots = parent?.slots ?? new Semaphore(uids.slots.length);
    this.freeUids = [...uids.slots];
    this.workRoot = mkdtempSync(join(opts.workRoot ?? tmpdir(), "rlpipe-sandbox-"));
    // bubblewrap's filter leaves namespaces to the managers; each installs the program's before any program code.
    const filter = sandboxFilter(process.arch, { namespaces: false });
    this.seccompFile = filter === undefined ? undefined : join(this.workRoot, "seccomp.bpf");
    if (filter !== undefined) writeFileSync(this.seccompFile!, filter);
    writeFileSync(join(this.workRoot, "program.bpf"), sandboxFilter(process.arch) ?? Buffer.alloc(0));
    try {
      this.harnessFiles = compileHarness(python, this.workRoot, opts.root === undefined ? undefined : { bwrap, root: opts.root });
      // Built for the host's C library only: a root's interpreter runs on the root's.
      this.caseLoop = buildCaseLoop(this.workRoot, (opts.caseLoop ?? true) && opts.root === undefined);
      writeFileSync(join(this.workRoot, "hosts"), SANDBOX_HOSTS);
      writeFileSync(join(this.workRoot, "nsswitch.conf"), SANDBOX_NSSWITCH);
    } catch (e) {
      rmSync(this.workRoot, { recursive: true, force: true });
      throw e;
    }
    this.layout = {
      python, tmpfsBytes: opts.tmpfsBytes ?? 256 << 20, toolchains, seccomp: filter !== undefined, programNamespaces: opts.programNamespaces !== false,
      ...(opts.root === undefined ? {} : { root: opts.root }), ...(pythonEnv === undefined ? {} : { pythonEnvDir: pythonEnv.dir }),
    };
    if ((opts.isolation ?? DEFAULT_ISOLATION) === "warm") {
      this.warm = new WarmPool({
        size: this.slots.size, spares: WARM_SPARES, maxPrograms: opts.warmMaxPrograms ?? WARM_MAX_PROGRAMS, maxAgeMs: opts.warmMaxAgeMs ?? 10 * 60_000,
        uids: uids.warm, spawn: (uid, maxPrograms) => this.spawnZygote(uid, maxPrograms),
      });
    }
  }

  /** Where the managers run a program's cases (capabilities, stats): "c" or "python". */
  private get caseLoopKind(): "c" | "python" {
    return this.caseLoop.built ? "c" : "python";
  }

  get isolation(): Isolation {
    return this.warm === undefined ? "per-program" : "warm";
  }

  /** Checks bubblewrap and the toolchains; fails with a hint when bubblewrap is missing. */
  static async create(opts: LocalSandboxOptions = {}): Promise<LocalSandbox> {
    return LocalSandbox.createWith(opts);
  }

  private static async createWith(opts: LocalSandboxOptions, parent?: RootedParent): Promise<LocalSandbox> {
    const bwrap = opts.bwrap ?? "/usr/bin/bwrap";
    const env = opts.pythonEnv === undefined || opts.root !== undefined ? undefined : checkPythonEnv(opts.pythonEnv);
    // Inside a root's sandbox its own interpreter is at /usr/bin/python3; on the host it is under the root.
    const python = opts.root !== undefined ? "/usr/bin/python3" : env?.python ?? opts.python ?? "/usr/bin/python3";
    const hostPython = opts.root === undefined ? python : join(opts.root, "usr", "bin", "python3");
    const probe = spawnSync(bwrap, ["--version"], { encoding: "utf8" });
    if (probe.status !== 0) {
      throw new SandboxError("bwrap_missing", `bubblewrap is not available at ${bwrap}`, { hint: "install it: apt-get install -y bubblewrap (npm test does this)" });
    }
    if (!existsSync(hostPython)) throw new SandboxError("python_missing", `the sandbox harness needs ${hostPython}`, { hint: opts.root === undefined ? "install Debian's python3" : "rebuild the root: rlpipe sandbox setup --languages <its language>" });
    if (HARNESS_FILES.some((f) => !existsSync(join(HARNESS_DIR, f)))) throw new SandboxError("harness_missing", `sandbox harness not found in ${HARNESS_DIR}`);
    const toolchains = env === undefined ? (opts.toolchains ?? detectToolchains()) : withEnvironment(opts.toolchains ?? detectToolchains(), env);
    const roots = opts.root !== undefined ? [] : opts.roots ?? (opts.toolchains === undefined ? detectRoots().map((r) => ({ dir: r.dir, toolchains: r.spec.toolchains })) : []);
    const slots = parent?.slots.size ?? opts.concurrency ?? Math.max(1, availableParallelism());
    const plan = parent === undefined ? planUids(slots, roots.length, opts.uidLeaseDir) : undefined;
    let memory = parent?.memory;
    let sandbox: LocalSandbox | undefined;
    try {
      memory ??= opts.memoryBounds === "per-process" ? MemoryBounds.perProcess("per-process limits asked for") : MemoryBounds.open(`rlpipe/uids-${plan!.slots[0]}`);
      sandbox = new LocalSandbox(bwrap, python, toolchains, opts, memory, parent?.uids === undefined ? { slots: plan!.slots, warm: plan!.warm } : { slots: parent.uids, warm: [] }, plan, env, parent);
      await sandbox.warm?.warmedUp();
      // One real run proves the sandbox works here (namespaces permitted, /usr usable).
      const check = await sandbox.run({ language: "python", code: "print(1)", limits: { runTimeoutMs: 10_000 } });
      if (check.status !== "ok" || check.stdout !== "1\n") {
        throw new SandboxError("sandbox_broken", `bubblewrap cannot run programs${opts.root === undefined ? "" : ` in the root ${opts.root}`} here: ${check.error ?? check.stderr.slice(0, 300)}`, { hint: "bwrap needs unprivileged namespaces or root" });
      }
      // Per-program sandboxes (a root's languages compile for a second or more: a warm pool would save little), on
      // this sandbox's slots and uids of their own.
      const own = sandbox;
      sandbox.rooted = await Promise.all(roots.map((r, k) => LocalSandbox.createWith(
        { ...opts, root: r.dir, toolchains: r.toolchains, isolation: "per-program", roots: [] },
        { slots: own.slots, uids: plan!.rooted(k), memory: memory! },
      )));
    } catch (e) {
      if (sandbox !== undefined) await sandbox.close();
      else {
        if (parent === undefined) memory?.close();
        plan?.release();
      }
      throw e;
    }
    return sandbox;
  }

  /** Every language offered: this sandbox's, then its roots' (Python is this one's). */
  private get offered(): string[] {
    return [...this.languages, ...this.rooted.flatMap((r) => r.languages.filter((l) => l !== "python" && !this.languages.includes(l)))];
  }

  /** The root's sandbox that runs `language`, when this one does not. */
  private rootFor(language: string): LocalSandbox | undefined {
    return this.languages.includes(language) ? undefined : this.rooted.find((r) => r.languages.includes(language));
  }

  async capabilities(): Promise<Capabilities> {
    return {
      backend: this.name, languages: this.offered, maxConcurrency: this.slots.size, specialJudge: true, isolation: this.isolation,
      memoryBound: this.memory.kind, caseLoop: this.caseLoopKind,
      ...(this.pythonEnv === undefined ? {} : { pythonEnv: { dir: this.pythonEnv.dir, packages: this.pythonEnv.packages.length } }),
    };
  }

  /** Python asserts run in the verifier; asserts taken apart run where a language's toolchain has a source-call driver. */
  verdictAbilities(): VerdictAbilities {
    return {
      pythonVerifier: true,
      sourceCalls: (language) => this.toolchains.some((t) => t.language === language && t.sourceCallDriver !== undefined)
        || this.rooted.some((r) => r.verdictAbilities().sourceCalls(language)),
    };
  }

  async run(req: RunRequest, signal?: AbortSignal): Promise<RunResult> {
    const root = this.rootFor(req.language);
    if (root !== undefined) return root.run(req, signal);
    if (!this.languages.includes(req.language)) return unavailable(req.language, this.offered);
    const limits = this.effectiveLimits(req.language, req.limits);
    const files = Object.fromEntries(Object.entries(req.files ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
    const fetch = req.fetchFiles === undefined || req.fetchFiles.length === 0 ? {} : { fetch: [...req.fetchFiles] };
    const out = await this.withSlot((uid) => this.runHarness(uid, req.language, req.code, [{ kind: "stdio", stdin: req.stdin ?? "", files, ...fetch }], { ...limits, totalTimeoutMs: limits.runTimeoutMs + limits.compileTimeoutMs + 10_000 }, signal), signal);
    if (out.infraError !== undefined) return { status: "infra_error", exitCode: null, stdout: "", stderr: "", timeMs: 0, error: out.infraError };
    const compile = out.compile === undefined ? undefined
      : { exitCode: out.compile.exitCode, stdout: out.compile.stdout, stderr: out.compile.stderr, timeMs: out.compile.timeMs, timedOut: out.compile.timedOut, budgetMs: limits.compileTimeoutMs };
    if (out.compile !== undefined && (out.compile.exitCode !== 0 || out.compile.timedOut)) {
      return { status: "compile_error", exitCode: out.compile.exitCode, stdout: "", stderr: out.compile.stderr, timeMs: out.compile.timeMs, ...(compile === undefined ? {} : { compile }) };
    }
    const c = out.cases.get(0);
    if (c === undefined) {
      if (out.stalled === 0) return { status: "timeout", exitCode: null, stdout: "", stderr: "", timeMs: limits.runTimeoutMs, detail: STALLED, ...(compile === undefined ? {} : { compile }) };
      if (out.interrupted === 0 && out.programMemoryExceeded === true) return { status: "memory_limit", exitCode: null, stdout: "", stderr: "", timeMs: 0, detail: programMemoryDetail(limits.memoryMb) };
      return { status: out.interrupted === 0 ? "runtime_error" : "infra_error", exitCode: null, stdout: "", stderr: "", timeMs: 0, error: "the program terminated the sandbox" };
    }
    const exec = toExecution(c);
    const status = exec.timedOut ? "timeout" : exec.outputExceeded ? "output_limit" : c.exitCode !== 0 && exec.memoryExceeded ? "memory_limit" : c.exitCode === 0 ? "ok" : "runtime_error";
    const detail = status === "memory_limit" ? memoryDetail(c, limits.memoryMb) : undefined;
    return {
      status, exitCode: c.exitCode, stdout: c.stdout, stderr: c.stderr, timeMs: c.timeMs, ...(detail === undefined ? {} : { detail }),
      ...(compile === undefined ? {} : { compile }), ...(c.files === undefined ? {} : { files: c.files }),
    };
  }

  async evaluate(jobs: readonly EvalJob[], opts: EvaluateOptions = {}): Promise<EvalResult[]> {
    const budget = opts.outputBudget ?? new OutputBudget();
    return Promise.all(jobs.map(async (job) => {
      const root = this.rootFor(job.language);
      if (root !== undefined) return (await root.evaluate([job], { ...opts, outputBudget: budget }))[0]!;
      return this.withSlot((uid) => this.evaluateOne(uid, job, budget, opts.signal), opts.signal);
    }));
  }

  /** Where requests' time went since the sandbox started (sums and counts; see timings.ts). */
  stats(): SandboxTimingsSnapshot {
    const rootCounts = this.rooted.map((r) => r.counts);
    const sum = (k: keyof SandboxCounts) => this.counts[k] + rootCounts.reduce((n, c) => n + c[k], 0);
    return {
      ...this.timings.snapshot(),
      counts: { ...(this.warm === undefined ? {} : this.warm.counts), stalls: sum("stalls"), anomalies: sum("anomalies"), programMemoryKills: sum("programMemoryKills") },
      slots: { size: this.slots.size, busy: this.slots.inUse, waiting: this.slots.waiting },
      memoryBound: this.memory.kind, caseLoop: this.caseLoopKind,
      ...(this.programNamespaces === undefined ? {} : { programNamespaces: this.programNamespaces }),
    };
  }

  private async withSlot<T>(fn: (uid: number) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const queued = performance.now();
    return this.slots.run(async () => {
      this.timings.add("queueMs", performance.now() - queued);
      const uid = this.freeUids.pop()!;
      try {
        return await fn(uid);
      } finally {
        this.freeUids.push(uid);
      }
    }, signal);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.rooted.map((r) => r.close()));
    await this.warm?.close();
    rmSync(this.workRoot, { recursive: true, force: true });
    if (this.uidPlan !== undefined) {
      // The server's own sandbox (not a root's): its cgroups and its uids go back when everything has exited.
      this.memory.close();
      this.uidPlan.release();
    }
  }

  /** The request's limits, with the compile budget a slow compiler needs on a busy machine (toolchains.ts). */
  private effectiveLimits(language: string, given: Limits): Required<Limits> {
    const limits = withDefaults(given);
    const floor = this.toolchains.find((t) => t.language === language)?.minCompileTimeoutMs ?? 0;
    return floor > limits.compileTimeoutMs ? { ...limits, compileTimeoutMs: floor } : limits;
  }

  private async evaluateOne(uid: number, job: EvalJob, budget: OutputBudget, signal?: AbortSignal): Promise<EvalResult> {
    const started = performance.now();
    const limits = this.effectiveLimits(job.language, job.limits);
    const n = job.tests.length;
    if (!this.languages.includes(job.language)) {
      const msg = `language ${job.language} is not available in the local sandbox (available: ${this.offered.join(", ")})`;
      return summarize(job.id, this.name, job.tests.map((_, index) => ({ index, status: "compile_error" as const, detail: msg })), performance.now() - started);
    }
    const cases = toHarnessCases(job.tests);
    const results: (CaseResult | undefined)[] = new Array(n).fill(undefined);
    /** A special judge reads the output of the cases it judges: kept apart from the reply's budget, within a bound. */
    const judgeInputs = new Map<number, string>();
    let judgeBytes = 0;
    // Graded as each case's event arrives; only what the reply keeps stays in memory.
    const onCase = (ev: HarnessEvent): boolean => {
      const i = ev.index!;
      const grading = performance.now();
      const exec = toExecution(ev);
      let grade = gradeCase(job.tests[i]!, exec, job.checker);
      if (grade.needsJudge === true) {
        if (judgeBytes + ev.stdout.length > JUDGE_INPUT_BYTES) grade = { status: "output_limit", detail: `more output than the special judge reads (${JUDGE_INPUT_BYTES >> 20} MiB per job)` };
        else { judgeInputs.set(i, ev.stdout); judgeBytes += ev.stdout.length; }
      }
      const detail = grade.status === "memory_limit" ? memoryDetail(ev, limits.memoryMb) : grade.detail;
      const kept = budget.keep(ev.stdout, ev.stderr);
      results[i] = {
        index: i, status: grade.status, ...(detail === undefined ? {} : { detail }), exitCode: ev.exitCode, timeMs: ev.timeMs,
        stdout: kept ? ev.stdout : "", stderr: kept ? ev.stderr : "", ...(kept ? {} : { outputOmitted: true }),
      };
      ev.stdout = "";
      ev.stderr = "";
      delete ev.valueJson;
      this.timings.add("gradeMs", performance.now() - grading);
      return grade.status !== "passed";
    };
    // The cases' budget: each (re)start's build time is added back (a build has compileTimeoutMs of its own).
    let deadline = Date.now() + limits.totalTimeoutMs;
    let from = 0;
    // A program that kills its harness loses only the case it was running; the rest run in a fresh sandbox.
    while (from < n) {
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) break;
      const out = await this.runHarness(uid, job.language, job.code, cases, { ...limits, totalTimeoutMs: remainingMs }, signal, from, onCase, job.stopOnFirstFailure === true);
      if (out.infraError !== undefined) {
        for (let i = from; i < n; i++) results[i] = { index: i, status: "infra_error", detail: out.infraError };
        break;
      }
      deadline += out.compile?.timeMs ?? 0;
      if (out.compile !== undefined && (out.compile.exitCode !== 0 || out.compile.timedOut)) {
        const detail = out.compile.timedOut ? `compilation timed out after ${Math.round(out.compile.timeMs / 100) / 10} s (its budget: ${limits.compileTimeoutMs / 1000} s)` : out.compile.stderr;
        return summarize(job.id, this.name, compileFailed(n, detail), performance.now() - started);
      }
      const cut = out.interrupted ?? out.stalled;
      if (cut !== undefined && cut >= 0 && results[cut] === undefined && !out.stoppedEarly) {
        results[cut] = out.stalled === cut ? { index: cut, status: "timeout", detail: STALLED }
          : out.budgetExhausted ? { index: cut, status: "skipped", detail: "Total Timeout" }
            : out.programMemoryExceeded === true ? { index: cut, status: "memory_limit", detail: programMemoryDetail(limits.memoryMb) }
              : { index: cut, status: "runtime_error", detail: "the program terminated the sandbox harness" };
      }
      if (out.budgetExhausted) break;
      const firstFailure = results.findIndex((r) => r !== undefined && r.status !== "passed");
      if (job.stopOnFirstFailure === true && firstFailure >= 0) {
        // Cases the sandbox ran before it saw the stop do not count: the answer is the same however fast it stopped.
        for (let i = firstFailure + 1; i < n; i++) results[i] = undefined;
        break;
      }
      const next = results.findIndex((r) => r === undefined);
      if (next < 0 || next === from) break;
      from = next;
    }
    for (let i = 0; i < n; i++) results[i] ??= { index: i, status: "skipped", detail: job.stopOnFirstFailure === true ? "stopped at the first failure" : "Total Timeout" };
    await this.judge(uid, job, results as CaseResult[], judgeInputs, limits, signal);
    return summarize(job.id, this.name, results as CaseResult[], performance.now() - started);
  }

  /** Cases whose output differs go to the special judge: stdin.txt, stdout.txt (expected), answer.txt (actual). */
  private async judge(uid: number, job: EvalJob, results: CaseResult[], answers: ReadonlyMap<number, string>, limits: Required<Limits>, signal?: AbortSignal): Promise<void> {
    const checker = job.checker;
    if (checker?.kind !== "special") return;
    const pending = results.filter((r) => r.status === "wrong_answer" && answers.has(r.index));
    if (pending.length === 0) return;
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const judgeCases: HarnessCase[] = pending.map((r) => {
      const t = job.tests[r.index] as Extract<TestCase, { kind: "stdio" }>;
      return { kind: "stdio", stdin: "", files: { "stdin.txt": b64(t.stdin), "stdout.txt": b64(t.expectedStdout), "answer.txt": b64(answers.get(r.index)!) } };
    });
    const verdicts = new Map<number, CaseExecution>();
    const out = await this.runHarness(uid, checker.language, checker.program, judgeCases, { ...limits, runTimeoutMs: 10_000 }, signal, 0, (ev) => { verdicts.set(ev.index!, toExecution(ev)); return false; });
    pending.forEach((r, k) => {
      const exec: CaseExecution = verdicts.get(k) ?? { exitCode: null, stdout: "", stderr: "", timeMs: 0, infraError: out.infraError ?? "special judge did not run" };
      const compileBroken = out.compile !== undefined && out.compile.exitCode !== 0;
      const verdict = compileBroken ? { status: "infra_error" as const, detail: "special judge does not compile" } : gradeJudge(exec);
      results[r.index] = { ...r, status: verdict.status, ...(verdict.detail === undefined ? {} : { detail: verdict.detail }) };
    });
  }

  /** Runs one program's `cases` from `from` in a warm zygote or a fresh sandbox; returns what it reported. */
  private async runHarness(uid: number, language: string, code: string, cases: HarnessCase[], limits: Required<Limits>, signal: AbortSignal | undefined, from = 0, onCase?: (ev: HarnessEvent) => boolean, stopOnFailure = false): Promise<HarnessOutcome> {
    if (this.closed) return { cases: new Map(), budgetExhausted: false, infraError: "the sandbox is closed" };
    if (signal?.aborted === true) return { cases: new Map(), budgetExhausted: false, infraError: "aborted" };
    const toolchain = this.toolchains.find((t) => t.language === language);
    const adapted = toolchain?.forProgram?.(code) ?? {};
    const program = adapted.code ?? code;
    const fnNames = [...new Set(cases.filter((c) => c.kind === "call" && c.sourceCall === undefined).map((c) => c.fnName!))].sort();
    const sourceCalls = cases.flatMap((c) => (c.sourceCall === undefined ? [] : [c.sourceCall]));
    const callDriver = sourceCalls.length > 0 ? toolchain?.sourceCallDriver?.(sourceCalls, program) : fnNames.length === 0 ? undefined : toolchain?.callDriver?.(fnNames, program);
    const run = callDriver?.run ?? adapted.run;
    const compile = callDriver?.compile;
    // Python assert tests run apart from the program (harness/asserts.py): their code is sent only when asked for.
    const split = language === "python" && cases.some((c) => c.kind === "assert" && (c.testCode ?? "") !== "");
    const job = {
      language, code: callDriver?.program ?? program, limits, startIndex: from,
      cases: split
        ? cases.map((c) => (c.kind === "assert" && (c.testCode ?? "") !== "" ? { kind: c.kind, split: true, ...(c.entryPoint === undefined ? {} : { entryPoint: c.entryPoint }) } : c))
        : cases.map(({ sourceCall: _, ...c }) => c),
      ...(split ? { splitTests: cases.map((c) => (c.kind === "assert" && (c.testCode ?? "") !== "" ? c.testCode! : null)) } : {}),
      ...(toolchain === undefined ? {} : { toolchain: { ...toolchain, ...(run === undefined ? {} : { run }), ...(compile === undefined ? {} : { compile }) } }),
      ...(callDriver === undefined ? {} : { callDriver: { text: callDriver.text, ...(callDriver.file === undefined ? {} : { file: callDriver.file }), ...(callDriver.prefix === undefined ? {} : { prefix: callDriver.prefix }) } }),
      ...(onCase === undefined ? {} : { onCase }), stopOnFailure,
    };
    let out: HarnessOutcome;
    // The backstop covers the build too: the harness starts the cases' clock when the program is built.
    const budgetMs = limits.totalTimeoutMs + (toolchain?.compile !== undefined || compile !== undefined ? limits.compileTimeoutMs : 0);
    if (this.warm !== undefined) {
      const waiting = performance.now();
      out = await this.warm.run(job, budgetMs, signal);
      this.timings.add("zygoteWaitMs", performance.now() - waiting - (out.timing?.wallMs ?? 0));
    } else {
      const z = this.spawnZygote(uid, 1);
      try {
        const { clean: _, ...o } = await z.run(job, budgetMs, signal);
        out = o;
      } finally {
        z.retire();
      }
      if (out.infraError !== undefined && out.infraError.startsWith("sandbox exited")) out.infraError = `sandbox failed to start: ${out.infraError}`;
    }
    if (out.stalled !== undefined) {
      this.counts.stalls++;
      this.log?.(`sandbox: the harness stopped answering during ${out.stalled < 0 ? "a build or clean-up" : `case ${out.stalled}`} (run timeout ${limits.runTimeoutMs / 1000} s); its sandbox was ended`);
    }
    if ((out.anomaly?.length ?? 0) > 0 && this.warm !== undefined) {
      this.counts.anomalies++;
      this.log?.(`sandbox: replaced after a program that left or changed: ${out.anomaly!.join("; ").slice(0, 400)}`);
    }
    if (out.programMemoryExceeded === true || [...out.cases.values()].some((c) => c.programMemoryExceeded === true)) this.counts.programMemoryKills++;
    if (out.timing !== undefined) this.timings.addProgram(out.timing, out.cases.size);
    return out;
  }

  /** A sandbox running the zygote for up to `maxPrograms` programs. */
  private spawnZygote(uid: number, maxPrograms: number): Zygote {
    const memory = this.memory.forSandbox(uid);
    const z = Zygote.spawn({
      bwrap: this.bwrap, seccompFile: this.seccompFile, uid, args: bwrapArgs(this.layout, uid, maxPrograms, memory !== undefined),
      dataFiles: [...this.harnessFiles, this.caseLoop.file, join(this.workRoot, "hosts"), join(this.workRoot, "nsswitch.conf"), join(this.workRoot, "program.bpf")],
      ...(memory === undefined ? {} : { memory }),
    });
    void z.ready.then((ok) => {
      if (!ok) return;
      const seen = z.namespaces ? "own" : `shared (${z.namespacesRefused ?? "refused"})`;
      if (seen !== this.programNamespaces && !z.namespaces) this.log?.(`sandbox: programs share the sandbox's namespaces and are cleaned up after: ${z.namespacesRefused ?? "refused"}`);
      this.programNamespaces = seen;
    });
    return z;
  }

  /** Whether programs get namespaces of their own, as the last sandbox started found (undefined before one is ready). */
  private programNamespaces: string | undefined;
}

/** The most output of wrong cases a special judge is given per job (it reads each case's answer as a file). */
const JUDGE_INPUT_BYTES = 64 << 20;
const STALLED = "the sandbox stopped answering past the run timeout (the program stopped its harness) and was ended";

function programMemoryDetail(memoryMb: number): string {
  return `memory limit exceeded: the program's processes together passed ${memoryMb} MB (the kernel's OOM killer ended one)`;
}

/** Which memory limit a case hit: the program's (all its processes, a cgroup) or one process's (its address space). */
function memoryDetail(ev: HarnessEvent, memoryMb: number): string {
  return ev.programMemoryExceeded === true ? programMemoryDetail(memoryMb) : `memory limit exceeded: a process of the program passed ${memoryMb} MB`;
}

/** The harness's cases; calls with source arguments are numbered in test order (the source-call driver's table). */
function toHarnessCases(tests: readonly TestCase[]): HarnessCase[] {
  let source = 0;
  return tests.map((t) => (t.kind === "call" && t.argsSource !== undefined
    ? { kind: "call", fnName: t.fnName, args: [], source: source++, sourceCall: { callee: t.fnName, argsSource: t.argsSource } }
    : toHarnessCase(t)));
}

function toHarnessCase(t: TestCase): HarnessCase {
  switch (t.kind) {
    case "stdio": return { kind: "stdio", stdin: t.stdin };
    case "call": return { kind: "call", fnName: t.fnName, args: t.args };
    case "assert": return { kind: "assert", testCode: t.testCode, ...(t.entryPoint === undefined ? {} : { entryPoint: t.entryPoint }) };
  }
}

function toExecution(ev: HarnessEvent): CaseExecution {
  return {
    exitCode: ev.exitCode, stdout: ev.stdout, stderr: ev.stderr, timeMs: ev.timeMs, timedOut: ev.timedOut,
    outputExceeded: ev.outputExceeded === true, memoryExceeded: ev.memoryExceeded === true || ev.programMemoryExceeded === true,
    ...(ev.valueJson === undefined ? {} : { valueJson: ev.valueJson }),
  };
}

function unavailable(language: string, available: readonly string[]): RunResult {
  return { status: "compile_error", exitCode: null, stdout: "", stderr: `language ${language} is not available in the local sandbox (available: ${available.join(", ")})`, timeMs: 0 };
}
