// The embedded sandbox: every program runs in bubblewrap — empty network namespace, empty environment plus a
// short whitelist, an unprivileged uid of its own, read-only /usr, private tmpfs, a fresh work dir, rlimits, a
// wall clock that kills the whole group, output capped. Inside, a zygote (harness/zygote.py) builds a program once
// and forks a process per test case. Two isolation paths share that harness and the security suite:
//   warm (default): a pool of long-lived zygotes (warm.ts) fork per program and clean up after each one, so a
//     program pays forks, not a bubblewrap and interpreter start;
//   per-program: a fresh bubblewrap sandbox per program (zygote.ts with one program), discarded after it.
// Nothing of the server reaches a program: bubblewrap itself starts with an empty environment and stays outside
// the sandbox (the zygote is pid 1), inherited descriptors are closed, kernel keyring calls are refused.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { compileFailed, gradeCase, gradeJudge, summarize } from "../../../core/grading/grade.js";
import {
  type CaseExecution, type CaseResult, type EvalJob, type EvalResult, type Limits, type RunRequest, type RunResult, type TestCase, withDefaults,
} from "../../../core/grading/types.js";
import { Semaphore } from "../../../core/util/semaphore.js";
import { type Capabilities, type EvaluateOptions, type SandboxBackend, SandboxError } from "../sandbox.js";
import type { HarnessCase, HarnessEvent, HarnessOutcome } from "./harness-events.js";
import { keyringFilter } from "./seccomp.js";
import { SandboxTimings, type SandboxTimingsSnapshot } from "./timings.js";
import { checkPythonEnv, type PythonEnv } from "../toolchains/python-env.js";
import { detectRoots } from "../toolchains/debian-root.js";
import {
  detectToolchains, goTestToolchain, javaHome, javaToolchain, jestToolchain, junitToolchain, pytestToolchain, type Toolchain, typescriptToolchain, withGoCache,
} from "../toolchains/toolchains.js";
import { WarmPool } from "./warm-pool.js";
import { Zygote } from "./zygote.js";

const HARNESS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../adapters/sandboxes/local/harness");
const HARNESS_FILES = ["zygote.py", "local_harness.py"] as const;
/** bubblewrap reads the seccomp filter from fd 3 and the harness files from fds 4, 5, … */
const HARNESS_FD = 4;
/** The sandbox's /etc/hosts: its loopback only (the host's names are not its business). */
const SANDBOX_HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
/** Where a sandbox sees the Python environment (--python-env). */
const SANDBOX_PYTHON_ENV = "/opt/python-env";

/**
 * Compiles the harness to bytecode files (unchecked hash-based .pyc, for this interpreter) in dir. A zygote that
 * loads bytecode instead of compiling its source keeps ~1.5 MiB less heap (the compiler's scraps stay in Python's
 * arenas), and every fork copies, and every exit unmaps, the page table of the whole heap: fewer pages, cheaper cases.
 * Names in tracebacks stay /opt/rlpipe/<file>.py.
 */
function compileHarness(python: string, dir: string, rooted?: { bwrap: string; root: string }): string[] {
  const script = [
    "import importlib.util, marshal, sys",
    "src, name, out = sys.argv[1:4]",
    "data = open(src, 'rb').read()",
    "code = compile(data, name, 'exec', dont_inherit=True)",
    // flags 0b01: hash-based, source not checked (the sandbox has no source to check against)
    "pyc = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, 'little') + importlib.util.source_hash(data) + marshal.dumps(code)",
    "open(out, 'wb').write(pyc)",
  ].join("\n");
  return HARNESS_FILES.map((f) => {
    const out = join(dir, f.replace(/\.py$/, ".pyc"));
    // A root's interpreter runs in that root (its C library is not the host's), writing into dir bound at /out.
    const r = rooted === undefined
      ? spawnSync(python, ["-I", "-c", script, join(HARNESS_DIR, f), `/opt/rlpipe/${f}`, out], { encoding: "utf8" })
      : spawnSync(rooted.bwrap, [
        "--unshare-all", "--die-with-parent", "--ro-bind", join(rooted.root, "usr"), "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
        "--proc", "/proc", "--dev", "/dev", "--ro-bind", HARNESS_DIR, "/src", "--bind", dir, "/out", "--clearenv",
        python, "-I", "-c", script, `/src/${f}`, `/opt/rlpipe/${f}`, `/out/${basename(out)}`,
      ], { encoding: "utf8" });
    if (r.status !== 0) throw new SandboxError("harness_compile_failed", `${python} could not compile the sandbox harness ${f}: ${(r.stderr || r.error?.message || "").trim().slice(0, 300)}`);
    return out;
  });
}

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
  /** warm (default): programs fork from a pool of long-lived sandboxes (warm.ts). per-program: one bubblewrap per program. */
  readonly isolation?: Isolation;
  /** warm: programs a sandbox serves before it is replaced (default 200). */
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
}

/** What a sandbox for a root shares with the one that offers its languages. */
interface RootedParent {
  readonly slots: Semaphore;
  readonly firstUid: number;
}

export const ISOLATIONS = ["warm", "per-program"] as const;
export type Isolation = (typeof ISOLATIONS)[number];
export const DEFAULT_ISOLATION: Isolation = "warm";

/**
 * Sandbox uids, none of which exists on the host, one range after another for N slots: the per-program slots
 * (64000 + N), the warm zygotes (twice the pool: a retiring one keeps its uid until it has exited), then N per Debian
 * root's sandbox. No two sandboxes ever share a uid (RLIMIT_NPROC counts per uid, and a uid is what a process may
 * signal), and all stay below 65534 (nobody).
 */
const FIRST_UID = 64000;
const LAST_UID = 65533;
const WARM_SPARES = 1;
function uidLayout(slots: number, roots: number): { warm: number; rooted: (k: number) => number; end: number } {
  const warm = FIRST_UID + slots;
  const rootedFrom = warm + 2 * (slots + WARM_SPARES);
  return { warm, rooted: (k) => rootedFrom + k * slots, end: rootedFrom + roots * slots };
}

export class LocalSandbox implements SandboxBackend {
  readonly name = "local";
  private readonly slots: Semaphore;
  /** One uid per concurrent slot: RLIMIT_NPROC counts per uid, so a fork bomb cannot starve another slot. */
  private readonly freeUids: number[];
  private readonly workRoot: string;
  /** The seccomp filter bubblewrap installs (keyring calls refused), when there is one for this architecture. */
  private readonly seccompFile: string | undefined;
  /** The harness as bytecode (compileHarness), bound into every sandbox at /opt/rlpipe. */
  private readonly harnessFiles: readonly string[];
  private closed = false;
  /** The pool of long-lived sandboxes (isolation warm). */
  private readonly warm: WarmPool | undefined;
  /** Where requests' time goes (stats()). */
  private readonly timings = new SandboxTimings();

  /** Python (the harness's own interpreter) and every language whose toolchain is installed (toolchains.ts). */
  private readonly languages: string[];
  /** Sandboxes for roots (debian-root.ts), each offering the languages of its toolchains. */
  private rooted: readonly LocalSandbox[] = [];

  private constructor(private readonly bwrap: string, private readonly python: string, private readonly toolchains: readonly Toolchain[], private readonly opts: LocalSandboxOptions,
    /** The Python environment programs import from, when the server was given one. */
    readonly pythonEnv?: PythonEnv, parent?: RootedParent) {
    this.languages = ["python", ...toolchains.map((t) => t.language)];
    this.slots = parent?.slots ?? new Semaphore(opts.concurrency ?? Math.max(1, availableParallelism()));
    this.freeUids = Array.from({ length: this.slots.size }, (_, i) => (parent?.firstUid ?? FIRST_UID) + i);
    this.workRoot = mkdtempSync(join(opts.workRoot ?? tmpdir(), "rlpipe-sandbox-"));
    const filter = keyringFilter();
    this.seccompFile = filter === undefined ? undefined : join(this.workRoot, "seccomp.bpf");
    if (filter !== undefined) writeFileSync(this.seccompFile!, filter);
    try {
      this.harnessFiles = compileHarness(python, this.workRoot, opts.root === undefined ? undefined : { bwrap, root: opts.root });
      writeFileSync(join(this.workRoot, "hosts"), SANDBOX_HOSTS);
      writeFileSync(join(this.workRoot, "nsswitch.conf"), "hosts: files\n");
    } catch (e) {
      rmSync(this.workRoot, { recursive: true, force: true });
      throw e;
    }
    if ((opts.isolation ?? DEFAULT_ISOLATION) === "warm") {
      const spares = WARM_SPARES;
      const first = uidLayout(this.slots.size, 0).warm;
      this.warm = new WarmPool({
        size: this.slots.size, spares, maxPrograms: opts.warmMaxPrograms ?? 200, maxAgeMs: opts.warmMaxAgeMs ?? 10 * 60_000,
        // Twice the pool: a retiring zygote keeps its uid until it has exited.
        uids: Array.from({ length: 2 * (this.slots.size + spares) }, (_, i) => first + i),
        spawn: (uid, maxPrograms) => this.spawnZygote(uid, maxPrograms),
      });
    }
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
    const slots = opts.concurrency ?? Math.max(1, availableParallelism());
    const layout = uidLayout(slots, roots.length);
    if (parent === undefined && layout.end - 1 > LAST_UID) {
      const most = Math.floor((LAST_UID + 1 - FIRST_UID - 2 * WARM_SPARES) / (3 + roots.length));
      throw new SandboxError("concurrency_too_high", `--concurrency ${slots} needs more sandbox uids than there are from ${FIRST_UID} to ${LAST_UID} (at most ${most} here)`, { hint: `run with --concurrency ${most} or less` });
    }
    const sandbox = new LocalSandbox(bwrap, python, toolchains, opts, env, parent);
    try {
      await sandbox.warm?.warmedUp();
      // One real run proves the sandbox works here (namespaces permitted, /usr usable).
      const check = await sandbox.run({ language: "python", code: "print(1)", limits: { runTimeoutMs: 10_000 } });
      if (check.status !== "ok" || check.stdout !== "1\n") {
        throw new SandboxError("sandbox_broken", `bubblewrap cannot run programs${opts.root === undefined ? "" : ` in the root ${opts.root}`} here: ${check.error ?? check.stderr.slice(0, 300)}`, { hint: "bwrap needs unprivileged namespaces or root" });
      }
      // Per-program sandboxes (a root's languages compile for a second or more: a warm pool would save little), on
      // this sandbox's slots and uids of their own.
      sandbox.rooted = await Promise.all(roots.map((r, k) => LocalSandbox.createWith(
        { ...opts, root: r.dir, toolchains: r.toolchains, isolation: "per-program", roots: [] },
        { slots: sandbox.slots, firstUid: layout.rooted(k) },
      )));
    } catch (e) {
      await sandbox.close();
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
      ...(this.pythonEnv === undefined ? {} : { pythonEnv: { dir: this.pythonEnv.dir, packages: this.pythonEnv.packages.length } }),
    };
  }

  async run(req: RunRequest, signal?: AbortSignal): Promise<RunResult> {
    const limits = withDefaults(req.limits);
    const root = this.rootFor(req.language);
    if (root !== undefined) return root.run(req, signal);
    if (!this.languages.includes(req.language)) return unavailable(req.language, this.offered);
    const files = Object.fromEntries(Object.entries(req.files ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
    const fetch = req.fetchFiles === undefined || req.fetchFiles.length === 0 ? {} : { fetch: [...req.fetchFiles] };
    const out = await this.withSlot((uid) => this.runHarness(uid, req.language, req.code, [{ kind: "stdio", stdin: req.stdin ?? "", files, ...fetch }], { ...limits, totalTimeoutMs: limits.runTimeoutMs + limits.compileTimeoutMs + 10_000 }, signal), signal);
    if (out.infraError !== undefined) return { status: "infra_error", exitCode: null, stdout: "", stderr: "", timeMs: 0, error: out.infraError };
    const compile = out.compile === undefined ? undefined
      : { exitCode: out.compile.exitCode, stdout: out.compile.stdout, stderr: out.compile.stderr, timeMs: out.compile.timeMs, timedOut: out.compile.timedOut };
    if (out.compile !== undefined && (out.compile.exitCode !== 0 || out.compile.timedOut)) {
      return { status: "compile_error", exitCode: out.compile.exitCode, stdout: "", stderr: out.compile.stderr, timeMs: out.compile.timeMs, ...(compile === undefined ? {} : { compile }) };
    }
    const c = out.cases.get(0);
    if (c === undefined) {
      return { status: out.interrupted === 0 ? "runtime_error" : "infra_error", exitCode: null, stdout: "", stderr: "", timeMs: 0, error: "the program terminated the sandbox" };
    }
    const status = c.timedOut ? "timeout" : c.outputExceeded ? "output_limit" : c.exitCode !== 0 && c.memoryExceeded ? "memory_limit" : c.exitCode === 0 ? "ok" : "runtime_error";
    return { status, exitCode: c.exitCode, stdout: c.stdout, stderr: c.stderr, timeMs: c.timeMs, ...(compile === undefined ? {} : { compile }), ...(c.files === undefined ? {} : { files: c.files }) };
  }

  async evaluate(jobs: readonly EvalJob[], opts: EvaluateOptions = {}): Promise<EvalResult[]> {
    return Promise.all(jobs.map(async (job) => {
      const root = this.rootFor(job.language);
      if (root !== undefined) return (await root.evaluate([job], opts))[0]!;
      return this.withSlot((uid) => this.evaluateOne(uid, job, opts.signal), opts.signal);
    }));
  }

  /** Where requests' time went since the sandbox started (sums and counts; see timings.ts). */
  stats(): SandboxTimingsSnapshot {
    return { ...this.timings.snapshot(), ...(this.warm === undefined ? {} : { counts: { ...this.warm.counts } }) };
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
    this.warm?.close();
    rmSync(this.workRoot, { recursive: true, force: true });
  }

  private async evaluateOne(uid: number, job: EvalJob, signal?: AbortSignal): Promise<EvalResult> {
    const started = performance.now();
    const limits = withDefaults(job.limits);
    const n = job.tests.length;
    if (!this.languages.includes(job.language)) {
      const msg = `language ${job.language} is not available in the local sandbox (available: ${this.offered.join(", ")})`;
      return summarize(job.id, this.name, job.tests.map((_, index) => ({ index, status: "compile_error" as const, detail: msg })), performance.now() - started);
    }
    const cases = job.tests.map(toHarnessCase);
    const results: (CaseResult | undefined)[] = new Array(n).fill(undefined);
    // The cases' budget: each (re)start's build time is added back (a build has compileTimeoutMs of its own).
    let deadline = Date.now() + limits.totalTimeoutMs;
    let from = 0;
    // A program that kills its harness loses only the case it was running; the rest run in a fresh sandbox.
    while (from < n) {
      const remainingMs = deadline - Date.now();
      if (remainingMs <= 0) break;
      const out = await this.runHarness(uid, job.language, job.code, cases, { ...limits, totalTimeoutMs: remainingMs }, signal, from, job.stopOnFirstFailure === true ? job.tests : undefined);
      if (out.infraError !== undefined) {
        for (let i = from; i < n; i++) results[i] = { index: i, status: "infra_error", detail: out.infraError };
        break;
      }
      deadline += out.compile?.timeMs ?? 0;
      if (out.compile !== undefined && (out.compile.exitCode !== 0 || out.compile.timedOut)) {
        const detail = out.compile.timedOut ? "compilation timed out" : out.compile.stderr;
        return summarize(job.id, this.name, compileFailed(n, detail), performance.now() - started);
      }
      const grading = performance.now();
      for (const [i, ev] of out.cases) results[i] = { index: i, ...gradeCase(job.tests[i]!, toExecution(ev), job.checker), exitCode: ev.exitCode, stdout: ev.stdout, stderr: ev.stderr, timeMs: ev.timeMs };
      this.timings.add("gradeMs", performance.now() - grading);
      if (out.interrupted !== undefined && results[out.interrupted] === undefined && !out.stoppedEarly) {
        results[out.interrupted] = out.budgetExhausted
          ? { index: out.interrupted, status: "skipped", detail: "Total Timeout" }
          : { index: out.interrupted, status: "runtime_error", detail: "the program terminated the sandbox harness" };
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
    await this.judge(uid, job, results as CaseResult[], limits, signal);
    return summarize(job.id, this.name, results as CaseResult[], performance.now() - started);
  }

  /** Cases whose output differs go to the special judge: stdin.txt, stdout.txt (expected), answer.txt (actual). */
  private async judge(uid: number, job: EvalJob, results: CaseResult[], limits: Required<Limits>, signal?: AbortSignal): Promise<void> {
    const checker = job.checker;
    if (checker?.kind !== "special") return;
    const pending = results.filter((r) => r.status === "wrong_answer" && job.tests[r.index]!.kind === "stdio");
    if (pending.length === 0) return;
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const judgeCases: HarnessCase[] = pending.map((r) => {
      const t = job.tests[r.index] as Extract<TestCase, { kind: "stdio" }>;
      return { kind: "stdio", stdin: "", files: { "stdin.txt": b64(t.stdin), "stdout.txt": b64(t.expectedStdout), "answer.txt": b64(r.stdout ?? "") } };
    });
    const out = await this.runHarness(uid, checker.language, checker.program, judgeCases, { ...limits, runTimeoutMs: 10_000 }, signal);
    pending.forEach((r, k) => {
      const ev = out.cases.get(k);
      const exec: CaseExecution = ev === undefined ? { exitCode: null, stdout: "", stderr: "", timeMs: 0, infraError: out.infraError ?? "special judge did not run" } : toExecution(ev);
      const compileBroken = out.compile !== undefined && out.compile.exitCode !== 0;
      const verdict = compileBroken ? { status: "infra_error" as const, detail: "special judge does not compile" } : gradeJudge(exec);
      results[r.index] = { ...r, status: verdict.status, ...(verdict.detail === undefined ? {} : { detail: verdict.detail }) };
    });
  }

  /** Runs one program's `cases` from `from` in a warm zygote or a fresh sandbox; returns what it reported. */
  private async runHarness(uid: number, language: string, code: string, cases: HarnessCase[], limits: Required<Limits>, signal: AbortSignal | undefined, from = 0, stopOnFailure?: readonly TestCase[]): Promise<HarnessOutcome> {
    if (this.closed) return { cases: new Map(), budgetExhausted: false, infraError: "the sandbox is closed" };
    const toolchain = this.toolchains.find((t) => t.language === language);
    const adapted = toolchain?.forProgram?.(code) ?? {};
    const program = adapted.code ?? code;
    const fnNames = [...new Set(cases.filter((c) => c.kind === "call").map((c) => c.fnName!))].sort();
    const callDriver = fnNames.length === 0 ? undefined : toolchain?.callDriver?.(fnNames, program);
    const run = callDriver?.run ?? adapted.run;
    const compile = callDriver?.compile;
    const job = {
      language, code: callDriver?.program ?? program, cases, limits, startIndex: from,
      ...(toolchain === undefined ? {} : { toolchain: { ...toolchain, ...(run === undefined ? {} : { run }), ...(compile === undefined ? {} : { compile }) } }),
      ...(callDriver === undefined ? {} : { callDriver: { text: callDriver.text, ...(callDriver.file === undefined ? {} : { file: callDriver.file }), ...(callDriver.prefix === undefined ? {} : { prefix: callDriver.prefix }) } }),
      ...(stopOnFailure === undefined ? {} : { stopAfter: (ev: HarnessEvent) => gradeCase(stopOnFailure[ev.index!]!, toExecution(ev)).status !== "passed" }),
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
    if (out.timing !== undefined) this.timings.addProgram(out.timing, out.cases.size);
    return out;
  }

  /** A sandbox running the zygote for up to `maxPrograms` programs. */
  private spawnZygote(uid: number, maxPrograms: number): Zygote {
    return Zygote.spawn({
      bwrap: this.bwrap, seccompFile: this.seccompFile, uid, args: this.bwrapArgs(uid, this.seccompFile !== undefined, maxPrograms),
      dataFiles: [...this.harnessFiles, join(this.workRoot, "hosts"), join(this.workRoot, "nsswitch.conf")],
    });
  }

  private bwrapArgs(uid: number, seccompOnFd3: boolean, maxPrograms: number): string[] {
    const tmpfsBytes = String(this.opts.tmpfsBytes ?? 256 << 20);
    // The system the sandbox sees: the host's, or a root's (debian-root.ts).
    const sys = this.opts.root ?? "";
    return [
      // --as-pid-1: no bubblewrap process inside the sandbox. Its reaper was dumpable by the program's uid, so a
      // program could read its memory and take its descriptors (pidfd_getfd), among them the result stream.
      // The zygote is pid 1 instead: not dumpable, it reaps, and its exit ends every process in the sandbox.
      "--unshare-all", "--as-pid-1", "--die-with-parent", "--new-session",
      "--uid", String(uid), "--gid", String(uid), "--cap-drop", "ALL",
      "--ro-bind", `${sys}/usr`, "/usr",
      "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
      "--ro-bind-try", `${sys}/etc/alternatives`, "/etc/alternatives",
      // Configuration some toolchains read outside /usr (the JDK's /etc/java-*, PHP's and R's).
      ...[...new Set(this.toolchains.flatMap((t) => t.binds ?? []))].sort().flatMap((b) => ["--ro-bind-try", `${sys}${b}`, b]),
      "--ro-bind-try", `${sys}/etc/ld.so.cache`, "/etc/ld.so.cache",
      // The Python environment, read-only like /usr, at a path of its own: not under /tmp or /work, which are emptied
      // after every program (a virtualenv's interpreter finds its packages from where it is, whatever the path).
      ...(this.pythonEnv === undefined ? [] : ["--ro-bind", this.pythonEnv.dir, SANDBOX_PYTHON_ENV]),
      // fontconfig's configuration, which matplotlib reads to draw text.
      ...(this.pythonEnv === undefined ? [] : ["--ro-bind-try", "/etc/fonts", "/etc/fonts"]),
      "--proc", "/proc", "--dev", "/dev", "--size", tmpfsBytes, "--tmpfs", "/dev/shm", "--mqueue", "/dev/mqueue",
      // The work dir is a tmpfs of the sandbox's own too: nothing of a program reaches the host's disk.
      "--size", tmpfsBytes, "--tmpfs", "/tmp", "--size", tmpfsBytes, "--tmpfs", "/work", "--chdir", "/work",
      // /mnt is scratch space too, as in SandboxFusion's containers (its programs write there).
      "--size", tmpfsBytes, "--tmpfs", "/mnt",
      // The harness comes on descriptors (zygote.ts): bubblewrap may run as a uid that cannot read the checkout.
      ...HARNESS_FILES.flatMap((f, i) => ["--perms", "0444", "--ro-bind-data", String(HARNESS_FD + i), `/opt/rlpipe/${f}c`]),
      // localhost resolves (a program may serve and call itself on the sandbox's own loopback), and nothing else does.
      "--perms", "0444", "--ro-bind-data", String(HARNESS_FD + HARNESS_FILES.length), "/etc/hosts",
      "--perms", "0444", "--ro-bind-data", String(HARNESS_FD + HARNESS_FILES.length + 1), "/etc/nsswitch.conf",
      // bubblewrap's own / and /dev belong to the sandbox uid: read-only, so that the only writable places are
      // /work, /tmp, /mnt, /dev/shm and /dev/mqueue, the ones a warm zygote empties after every program.
      "--remount-ro", "/dev", "--remount-ro", "/",
      ...(seccompOnFd3 ? ["--seccomp", "3"] : []),
      "--clearenv",
      "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
      "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--setenv", "PYTHONHASHSEED", "0",
      this.pythonEnv === undefined ? this.python : `${SANDBOX_PYTHON_ENV}/bin/python3`, "-I", "/opt/rlpipe/zygote.pyc", String(maxPrograms),
    ];
  }
}

/**
 * The toolchains with a runtime environment: Node programs find its packages (NODE_PATH), Java programs its
 * libraries, Go builds start from its standard-library cache, and its pytest, tsx, Jest, Go module and JUnit console
 * add SandboxFusion's pytest, typescript, jest, go_test and junit languages.
 */
function withEnvironment(toolchains: readonly Toolchain[], env: PythonEnv): Toolchain[] {
  const modules = `${SANDBOX_PYTHON_ENV}/node_modules`;
  const hasNode = env.nodePackages.length > 0;
  const jars = env.jars.map((f) => `${SANDBOX_PYTHON_ENV}/java/${f}`);
  const junitConsole = jars.find((j) => /\/junit-platform-console-standalone-[^/]*\.jar$/.test(j));
  const libraries = jars.filter((j) => j !== junitConsole);
  const out = toolchains.map((t) => {
    if (t.language === "nodejs" && hasNode) return { ...t, env: { ...t.env, NODE_PATH: modules } };
    if (t.language === "java" && libraries.length > 0) return javaToolchain(javaHome(t), libraries);
    if (t.language === "go" && env.goCache !== undefined) return withGoCache(t, `${SANDBOX_PYTHON_ENV}/go-cache`);
    return t;
  });
  const java = toolchains.find((t) => t.language === "java");
  if (java !== undefined && junitConsole !== undefined) out.push(junitToolchain(javaHome(java), junitConsole, libraries));
  const go = toolchains.find((t) => t.language === "go");
  if (go !== undefined && env.goCache !== undefined && env.goModules !== undefined) {
    out.push(withGoCache(goTestToolchain(go, `${SANDBOX_PYTHON_ENV}/go`, `${SANDBOX_PYTHON_ENV}/go-mod-cache`), `${SANDBOX_PYTHON_ENV}/go-cache`));
  }
  if (env.packages.some((p) => p.name.toLowerCase() === "pytest")) out.push(pytestToolchain(`${SANDBOX_PYTHON_ENV}/bin/python3`));
  const node = toolchains.find((t) => t.language === "nodejs");
  if (node !== undefined && env.nodePackages.some((p) => p.name === "tsx")) out.push(typescriptToolchain(node, `${modules}/tsx/dist/loader.mjs`, modules));
  if (node !== undefined && ["jest", "babel-jest", "@babel/preset-env", "@babel/preset-typescript"].every((n) => env.nodePackages.some((p) => p.name === n))) out.push(jestToolchain(node, modules));
  return out;
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
    outputExceeded: ev.outputExceeded === true, memoryExceeded: ev.memoryExceeded === true,
    ...(ev.valueJson === undefined ? {} : { valueJson: ev.valueJson }),
  };
}

function unavailable(language: string, available: readonly string[]): RunResult {
  return { status: "compile_error", exitCode: null, stdout: "", stderr: `language ${language} is not available in the local sandbox (available: ${available.join(", ")})`, timeMs: 0 };
}
