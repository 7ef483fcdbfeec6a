// E2B / Tencent AGS backend: a pool of long-lived cloud sandboxes (no internet), one job at a time each.
// Per job: ONE files.write (runner + program + case inputs) and ONE commands.run of the runner, which runs
// every case in a fresh process and prints one JSON document; grading happens here (core/grading), so expected
// outputs never enter the sandbox (except a special judge's files, in its own second run).
// The `e2b` SDK is pinned to 2.50.0 (2.51 creates through /v2/sandboxes, which AGS-compatible services may
// lack) and loaded lazily so that other commands never pay for it.
// Toolchains come from the template: code-interpreter-v1 is python:3.12 + build-essential (g++) + Node 20.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, posix, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Sandbox as SdkSandbox } from "e2b";
import { compileFailed, gradeCase, gradeJudge, summarize } from "../../core/grading/grade.js";
import {
  type CaseExecution, type CaseResult, type Checker, type EvalJob, type EvalResult, type Limits, type RunRequest, type RunResult, type TestCase, withDefaults,
} from "../../core/grading/types.js";
import { BoxPool, type Place, type PoolClock, PoolClosed, type PoolStats } from "./e2b-pool.js";
import { type Capabilities, type EvaluateOptions, type SandboxBackend, SandboxError, SandboxSaturated } from "./sandbox.js";
import { stringifyJson } from "../../core/grading/exact-json.js";

const loadSdk = () => import("e2b");
type Sdk = Awaited<ReturnType<typeof loadSdk>>;

const RUNNER_PATH = resolve(dirname(fileURLToPath(import.meta.url)), "../../../adapters/sandboxes/harness/e2b_runner.py");
/**
 * The runner's text when a bundler embedded it — esbuild `--define:__RLPIPE_E2B_RUNNER__=<JSON string>`, as the CDK
 * app's NodejsFunction does: beside a bundle there is no harness directory to read. Undefined otherwise.
 */
declare const __RLPIPE_E2B_RUNNER__: string | undefined;
const LANGUAGES = ["python", "cpp", "nodejs"] as const;
const SOURCE_FILE: Readonly<Record<string, string>> = { python: "main.py", cpp: "main.cpp", nodejs: "main.js" };
/** Every job gets a fresh directory under this root; the runner deletes it. */
const JOB_ROOT = "/tmp/rlpipe";
/** Runner start-up, file I/O and result transfer on top of the job's own budget. */
const RUNNER_MARGIN_MS = 15_000;
const JUDGE_RUN_TIMEOUT_MS = 10_000;
const JOB_ATTEMPTS = 2;
/** Create attempts (within createRetryBudgetMs): E2B answers 429 while the account is at a limit another instance may hold. */
const CREATE_ATTEMPTS = 8;
/** Kill attempts before a sandbox's place is given up on (it then ends at its own timeout). */
const KILL_ATTEMPTS = 2;
const RESULT_MARK = "RLPIPE_RESULT";

export interface E2BSandboxOptions {
  /** Default: env E2B_API_KEY. AGS keys (`ark_…`) work too: the SDK's key-format check is always off. */
  readonly apiKey?: string;
  /** Default: env E2B_DOMAIN, else e2b.app (AGS: `<region>.tencentags.com`). */
  readonly domain?: string;
  /** Template (AGS: the sandbox tool's name). Default code-interpreter-v1. */
  readonly template?: string;
  /**
   * Sandboxes alive at once (being created or killed included), and so jobs running at once: this process's share of
   * the account's concurrent sandboxes (core/sandbox-quota.ts). Default 4.
   */
  readonly poolSize?: number;
  /** Sandbox creates per second: this process's share of the account's (E2B Hobby allows 1, Pro 5). Default 1. */
  readonly maxCreatesPerSecond?: number;
  /** Jobs waiting for a sandbox beyond those running; a batch that does not fit is refused (SandboxSaturated). Default unbounded. */
  readonly maxQueuedJobs?: number;
  /** Sent as the sandboxes' `instance` metadata: which process made them (one per function instance). */
  readonly instanceId?: string;
  /** Lifetime asked for at creation, renewed when a sandbox is reused. Default 30 min. */
  readonly sandboxTimeoutMs?: number;
  /** Recycle a sandbox after this many jobs, bounding what a program can leave behind. Default 200. */
  readonly maxJobsPerSandbox?: number;
  /** Control-plane URL (default env E2B_API_URL, else derived from the domain by the SDK). */
  readonly apiUrl?: string;
  /** Send all envd traffic here (default env E2B_SANDBOX_URL); for loopback tests. */
  readonly sandboxUrl?: string;
  /** Per HTTP request (not per command). Default the SDK's 60 s. */
  readonly requestTimeoutMs?: number;
  /** Base of the jittered backoff between attempts. Default 500 ms. */
  readonly retryBaseDelayMs?: number;
  /** Ceiling of the backoff between create attempts. Default 10 s. */
  readonly retryMaxDelayMs?: number;
  /** How long one sandbox create keeps being retried (429, 5xx, network) before the job is an infra error. Default 30 s. */
  readonly createRetryBudgetMs?: number;
  /** Time for pacing and backoff (tests). */
  readonly clock?: PoolClock;
  /** Where E2B_* variables are read from. Default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

interface Settings {
  readonly apiKey: string;
  readonly domain: string;
  readonly template: string;
  readonly poolSize: number;
  readonly maxCreatesPerSecond: number;
  readonly sandboxTimeoutMs: number;
  readonly maxJobsPerSandbox: number;
  readonly apiUrl: string | undefined;
  readonly sandboxUrl: string | undefined;
  readonly requestTimeoutMs: number | undefined;
  readonly retryBaseDelayMs: number;
  readonly retryMaxDelayMs: number;
  readonly createRetryBudgetMs: number;
  readonly maxQueuedJobs: number | undefined;
  readonly instanceId: string;
}

/** A pooled sandbox. */
interface Box {
  readonly sandbox: SdkSandbox;
  jobs: number;
  expiresAtMs: number;
  /** The lifetime asked for at creation (a fresh sandbox made for at least this job's budget needs no renewal). */
  readonly lifetimeMs: number;
}

/** One case as the runner sees it: no expected output. stdin is in in/<i>, extra files in files/<i>/. */
type RunnerCase = { readonly kind: "stdio" } | { readonly kind: "call"; readonly fnName: string; readonly args: readonly unknown[] }
  | { readonly kind: "assert"; readonly testCode: string; readonly entryPoint?: string };

interface RunnerJob {
  readonly language: string;
  readonly code: string;
  readonly cases: readonly RunnerCase[];
  readonly stdins: readonly string[];
  readonly files?: ReadonlyMap<number, Readonly<Record<string, string | Uint8Array>>>;
  readonly limits: Required<Limits>;
  readonly stopOnFailure: boolean;
}

interface RunnerRecord {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timeMs: number;
  readonly timedOut: boolean;
  readonly unavailable?: boolean;
}

interface RunnerCaseRecord extends Partial<RunnerRecord> {
  readonly index: number;
  readonly skipped?: string;
  readonly outputExceeded?: boolean;
  readonly memoryExceeded?: boolean;
  readonly valueJson?: string;
}

interface RunnerDoc {
  readonly compile?: RunnerRecord;
  readonly cases: readonly RunnerCaseRecord[];
}

/** A sandbox (not program) failure inside this adapter; `retryable` says whether a fresh sandbox may help. */
class InfraFailure extends Error {
  constructor(readonly code: string, message: string, readonly retryable: boolean) {
    super(message);
  }
}

export class E2BSandbox implements SandboxBackend {
  readonly name = "e2b";
  private readonly pool: BoxPool<Box>;
  /** Every sandbox that exists (idle, busy, being killed): close() kills them all. */
  private readonly live = new Set<Box>();
  /** Kills and creations in flight, awaited by close(). */
  private readonly pending = new Set<Promise<unknown>>();
  private readonly runner: string;
  private closed = false;
  /** Lifetime asked for at creation: the configured one, or the longest job budget seen (no renewal for a fresh sandbox). */
  private createLifetimeMs: number;

  private constructor(private readonly sdk: Sdk, private readonly cfg: Settings, clock?: PoolClock) {
    this.createLifetimeMs = cfg.sandboxTimeoutMs;
    this.pool = new BoxPool<Box>({
      maxLive: cfg.poolSize, createsPerS: cfg.maxCreatesPerSecond, ...(cfg.maxQueuedJobs === undefined ? {} : { maxQueuedJobs: cfg.maxQueuedJobs }),
      create: () => this.createBox(), destroy: (box) => this.destroyBox(box),
      createRetry: { attempts: CREATE_ATTEMPTS, budgetMs: cfg.createRetryBudgetMs, baseDelayMs: cfg.retryBaseDelayMs, maxDelayMs: cfg.retryMaxDelayMs, retryable: (e) => this.classify(e).retryable },
      ...(clock === undefined ? {} : { clock }),
    });
    this.runner = typeof __RLPIPE_E2B_RUNNER__ === "string" ? __RLPIPE_E2B_RUNNER__ : readFileSync(RUNNER_PATH, "utf8");
  }

  /** Checks the configuration and loads the SDK; sandboxes are created lazily, on first use. */
  static async create(opts: E2BSandboxOptions = {}): Promise<E2BSandbox> {
    const cfg = settings(opts);
    let sdk: Sdk;
    try {
      sdk = await loadSdk();
    } catch (e) {
      throw new SandboxError("e2b_sdk_missing", `cannot load the e2b SDK: ${(e as Error).message}`, { hint: "npm install (the project pins e2b 2.50.0)", cause: e });
    }
    return new E2BSandbox(sdk, cfg, opts.clock);
  }

  /** The pool's state and counters (GET /v1/stats; tests). */
  poolStats(): PoolStats {
    return this.pool.stats();
  }

  async capabilities(): Promise<Capabilities> {
    return { backend: this.name, languages: [...LANGUAGES], maxConcurrency: this.cfg.poolSize, specialJudge: true };
  }

  /** Creates (or reuses) one sandbox: fails fast with a SandboxError on bad credentials or template. */
  async check(signal?: AbortSignal): Promise<void> {
    try {
      const box = await this.acquire(RUNNER_MARGIN_MS, signal);
      this.pool.release(box, false);
    } catch (e) {
      const f = this.classify(e);
      throw new SandboxError(f.code, f.message, f.code === "e2b_auth_failed" ? { hint: "check E2B_API_KEY (and E2B_DOMAIN for AGS)" } : {});
    }
  }

  async run(req: RunRequest, signal?: AbortSignal): Promise<RunResult> {
    const limits = withDefaults(req.limits);
    if (!isSupported(req.language)) {
      return { status: "compile_error", exitCode: null, stdout: "", stderr: unsupported(req.language), timeMs: 0 };
    }
    const files = req.files === undefined ? undefined : new Map([[0, req.files]]);
    const job: RunnerJob = {
      language: req.language, code: req.code, cases: [{ kind: "stdio" }], stdins: [req.stdin ?? ""], ...(files === undefined ? {} : { files }),
      limits: { ...limits, totalTimeoutMs: limits.compileTimeoutMs + limits.runTimeoutMs }, stopOnFailure: false,
    };
    const [place] = this.admit(1);
    let doc: RunnerDoc;
    try {
      doc = (await this.withRetries(job.limits.totalTimeoutMs, signal, (box) => this.execute(box, job, signal))).value;
    } catch (e) {
      return { status: "infra_error", exitCode: null, stdout: "", stderr: "", timeMs: 0, error: describe(this.classify(e)) };
    } finally {
      place!.leave();
    }
    const c = doc.compile;
    const compile = c === undefined ? undefined : { exitCode: c.exitCode, stdout: c.stdout, stderr: c.stderr, timeMs: c.timeMs, timedOut: c.timedOut };
    if (c !== undefined && (c.exitCode !== 0 || c.timedOut)) {
      return { status: "compile_error", exitCode: c.exitCode, stdout: "", stderr: c.stderr, timeMs: c.timeMs, ...(compile === undefined ? {} : { compile }) };
    }
    const r = doc.cases[0];
    if (r === undefined || r.skipped !== undefined) {
      return { status: "timeout", exitCode: null, stdout: "", stderr: "", timeMs: limits.runTimeoutMs, ...(compile === undefined ? {} : { compile }) };
    }
    const e = toExecution(r);
    const status = e.timedOut === true ? "timeout" : e.outputExceeded === true ? "output_limit"
      : e.exitCode !== 0 && e.memoryExceeded === true ? "memory_limit" : e.exitCode === 0 ? "ok" : "runtime_error";
    return { status, exitCode: e.exitCode, stdout: e.stdout, stderr: e.stderr, timeMs: e.timeMs, ...(compile === undefined ? {} : { compile }) };
  }

  /** Throws SandboxSaturated, before any program runs, when the batch does not fit in the pool and its queue. */
  async evaluate(jobs: readonly EvalJob[], opts: EvaluateOptions = {}): Promise<EvalResult[]> {
    const places = this.admit(jobs.length);
    return Promise.all(jobs.map(async (job, i) => {
      try {
        return await this.evaluateOne(job, opts.signal);
      } finally {
        places[i]!.leave();
      }
    }));
  }

  /** Kills every sandbox (idle or busy) and waits for all kills; not-found is fine. */
  async close(): Promise<void> {
    this.closed = true;
    this.pool.close();
    for (const box of [...this.live]) this.discard(box);
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  private admit(jobs: number): Place[] {
    const places = this.pool.admit(jobs);
    if (!Array.isArray(places)) throw new SandboxSaturated(places.retryAfterS, places.detail);
    return places;
  }

  private async evaluateOne(job: EvalJob, signal?: AbortSignal): Promise<EvalResult> {
    const started = performance.now();
    const n = job.tests.length;
    if (!isSupported(job.language)) {
      const detail = unsupported(job.language);
      return summarize(job.id, this.name, job.tests.map((_, index) => ({ index, status: "compile_error" as const, detail })), performance.now() - started);
    }
    if (n === 0) return summarize(job.id, this.name, [], performance.now() - started);
    const limits = withDefaults(job.limits);
    const spec: RunnerJob = {
      language: job.language, code: job.code, cases: job.tests.map(toRunnerCase), stdins: job.tests.map((t) => (t.kind === "stdio" ? t.stdin : "")),
      limits, stopOnFailure: job.stopOnFirstFailure === true,
    };
    try {
      const { value, heldMs } = await this.withRetries(limits.totalTimeoutMs, signal, async (box) => {
        const doc = await this.execute(box, spec, signal);
        const c = doc.compile;
        if (c !== undefined && (c.exitCode !== 0 || c.timedOut)) return compileFailed(n, c.timedOut ? "compilation timed out" : c.stderr);
        const results = job.tests.map((test, i): CaseResult => {
          const r = doc.cases.find((x) => x.index === i);
          if (r === undefined) return { index: i, status: "infra_error", detail: "the runner reported no result for this case" };
          const e = toExecution(r);
          const g = gradeCase(test, e, job.checker);
          return {
            index: i, status: g.status, ...(g.detail === undefined ? {} : { detail: g.detail }),
            ...(r.skipped === undefined ? { exitCode: e.exitCode, stdout: e.stdout, stderr: e.stderr, timeMs: e.timeMs } : {}),
          };
        });
        if (job.checker?.kind === "special") await this.judge(box, job.checker, job.tests, results, limits, signal);
        return job.stopOnFirstFailure === true ? stopAtFirstFailure(results) : results;
      });
      return summarize(job.id, this.name, value, performance.now() - started, heldMs / 1000);
    } catch (e) {
      const detail = describe(this.classify(e));
      return summarize(job.id, this.name, job.tests.map((_, index) => ({ index, status: "infra_error" as const, detail })), performance.now() - started);
    }
  }

  /** Stdio cases whose output differs go to the special judge (stdin.txt, stdout.txt = expected, answer.txt). */
  private async judge(box: Box, checker: Extract<Checker, { kind: "special" }>, tests: readonly TestCase[], results: CaseResult[], limits: Required<Limits>, signal?: AbortSignal): Promise<void> {
    const pending = results.filter((r) => r.status === "wrong_answer" && tests[r.index]!.kind === "stdio");
    if (pending.length === 0) return;
    const files = new Map(pending.map((r, k) => {
      const t = tests[r.index] as Extract<TestCase, { kind: "stdio" }>;
      return [k, { "stdin.txt": t.stdin, "stdout.txt": t.expectedStdout, "answer.txt": r.stdout ?? "" }] as const;
    }));
    const doc = await this.execute(box, {
      language: checker.language, code: checker.program, cases: pending.map(() => ({ kind: "stdio" as const })), stdins: pending.map(() => ""), files,
      limits: { ...limits, runTimeoutMs: JUDGE_RUN_TIMEOUT_MS, totalTimeoutMs: limits.compileTimeoutMs + JUDGE_RUN_TIMEOUT_MS * pending.length }, stopOnFailure: false,
    }, signal);
    const compileBroken = doc.compile !== undefined && (doc.compile.exitCode !== 0 || doc.compile.timedOut);
    pending.forEach((r, k) => {
      const rec = doc.cases.find((x) => x.index === k);
      const verdict = compileBroken ? { status: "infra_error" as const, detail: "special judge does not compile" }
        : rec === undefined || rec.skipped !== undefined ? { status: "infra_error" as const, detail: "special judge did not run" }
        : gradeJudge(toExecution(rec));
      results[r.index] = { ...r, status: verdict.status, ...(verdict.detail === undefined ? {} : { detail: verdict.detail }) };
    });
  }

  /** Runs `fn` on a pooled sandbox; on an infra failure the sandbox is replaced and `fn` retried once. */
  private async withRetries<T>(budgetMs: number, signal: AbortSignal | undefined, fn: (box: Box) => Promise<T>): Promise<{ value: T; heldMs: number }> {
    for (let attempt = 1; ; attempt++) {
      if (this.closed) throw new InfraFailure("e2b_closed", "the E2B backend is closed", false);
      let box: Box | undefined;
      try {
        box = await this.acquire(budgetMs + RUNNER_MARGIN_MS, signal);
        const held = performance.now();
        const value = await fn(box);
        box.jobs++;
        this.pool.release(box, box.jobs >= this.cfg.maxJobsPerSandbox || this.closed);
        return { value, heldMs: performance.now() - held };
      } catch (e) {
        // State unknown (a program past its deadline may still be running in it): never reuse it. Its place in
        // the pool is free once the kill is confirmed.
        if (box !== undefined) this.pool.release(box, true);
        const f = this.classify(e, signal);
        if (!f.retryable || attempt >= JOB_ATTEMPTS) throw f;
        await sleep(jitter(this.cfg.retryBaseDelayMs * attempt), signal).catch(() => undefined);
      }
    }
  }

  /** ONE files.write + ONE commands.run; returns the runner's document. */
  private async execute(box: Box, job: RunnerJob, signal?: AbortSignal): Promise<RunnerDoc> {
    const dir = posix.join(JOB_ROOT, `${Date.now().toString(36)}-${randomBytes(8).toString("hex")}`);
    const nonce = randomBytes(16).toString("hex");
    const spec = { nonce, language: job.language, limits: job.limits, stopOnFailure: job.stopOnFailure, cases: job.cases };
    const writes: { path: string; data: string | ArrayBuffer }[] = [
      { path: `${dir}/runner.py`, data: this.runner },
      { path: `${dir}/job.json`, data: stringifyJson(spec) },
      { path: `${dir}/src/${SOURCE_FILE[job.language]}`, data: job.code },
      ...job.stdins.map((s, i) => ({ path: `${dir}/in/${i}`, data: s })),
    ];
    for (const [i, files] of job.files ?? []) {
      for (const [rel, data] of Object.entries(files)) {
        const clean = posix.normalize(rel);
        if (clean.startsWith("/") || clean === ".." || clean.startsWith("../")) throw new InfraFailure("e2b_bad_file", `input file path ${JSON.stringify(rel)} leaves the work directory`, false);
        writes.push({ path: `${dir}/files/${i}/${clean}`, data: typeof data === "string" ? data : toArrayBuffer(data) });
      }
    }
    const http = this.cfg.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: this.cfg.requestTimeoutMs };
    await box.sandbox.files.write(writes, { ...http, ...(signal === undefined ? {} : { signal }) });
    let out: { exitCode: number; stdout: string; stderr: string };
    try {
      out = await box.sandbox.commands.run(`exec python3 -I ${dir}/runner.py ${dir}`, {
        timeoutMs: job.limits.totalTimeoutMs + RUNNER_MARGIN_MS, ...http, ...(signal === undefined ? {} : { signal }),
      });
    } catch (e) {
      if (!(e instanceof this.sdk.CommandExitError)) throw e;
      out = { exitCode: e.exitCode, stdout: e.stdout, stderr: e.stderr }; // the runner failed; its output says why
    }
    const doc = parseRunnerOutput(out.stdout, nonce);
    if (doc === undefined) {
      const why = out.stderr.trim().split("\n").pop()?.slice(0, 300) || "no output";
      throw new InfraFailure("e2b_runner_failed", `the sandbox runner exited ${out.exitCode} without a result: ${why}`, true);
    }
    if (doc.compile?.unavailable === true) throw new InfraFailure("e2b_toolchain_missing", `${doc.compile.stderr} (template ${this.cfg.template})`, false);
    return doc;
  }

  // ---- pool ----

  /** A sandbox from the pool that lives long enough for the job (a reused one is renewed, or replaced). */
  private async acquire(jobBudgetMs: number, signal?: AbortSignal): Promise<Box> {
    for (;;) {
      if (this.closed) throw new InfraFailure("e2b_closed", "the E2B backend is closed", false);
      this.createLifetimeMs = Math.max(this.createLifetimeMs, jobBudgetMs);
      const box = await this.pool.acquire(signal);
      if (await this.renew(box, jobBudgetMs)) return box;
      this.pool.release(box, true);
    }
  }

  /** Extends a reused sandbox's lifetime when less than half of it (or less than the job needs) is left. */
  private async renew(box: Box, jobBudgetMs: number): Promise<boolean> {
    const leftMs = box.expiresAtMs - Date.now();
    const wantMs = Math.max(this.cfg.sandboxTimeoutMs, jobBudgetMs);
    if (box.jobs === 0 && box.lifetimeMs >= jobBudgetMs && leftMs > jobBudgetMs / 2) return true; // just made for it
    if (leftMs > Math.max(this.cfg.sandboxTimeoutMs / 2, jobBudgetMs)) return true;
    if (leftMs < 2_000) return false; // probably gone already
    try {
      await box.sandbox.setTimeout(wantMs, this.http());
      box.expiresAtMs = Date.now() + wantMs;
      return true;
    } catch {
      return false;
    }
  }

  /**
   * One create (the pool paces and retries it). E2B's Retry-After on a 429 is honoured by the SDK itself (one
   * `retries`: its RateLimitError does not carry the header): that wait happens inside this call, so the pacer's
   * window, which spans each create from its send to its answer, still holds.
   */
  private async createBox(): Promise<Box> {
    if (this.closed) throw new InfraFailure("e2b_closed", "the E2B backend is closed", false);
    const lifetimeMs = this.createLifetimeMs;
    // The pool bookkeeping happens inside the tracked promise, so close() also waits for the kill of a sandbox that
    // finished creating after close() began.
    const creating = (async (): Promise<Box> => {
      const sandbox = await this.sdk.Sandbox.create(this.cfg.template, {
        ...this.connection(), retries: 1, timeoutMs: lifetimeMs, allowInternetAccess: false, metadata: { app: "rlpipe", instance: this.cfg.instanceId },
      });
      const box: Box = { sandbox, jobs: 0, expiresAtMs: Date.now() + lifetimeMs, lifetimeMs };
      this.live.add(box);
      if (this.closed) this.discard(box);
      return box;
    })();
    this.track(creating.catch(() => undefined));
    return creating;
  }

  /** Kills a sandbox the pool gave up; resolves once the service confirmed it (or after KILL_ATTEMPTS tries). */
  private destroyBox(box: Box): Promise<void> {
    return this.discard(box);
  }

  private discard(box: Box): Promise<void> {
    if (!this.live.delete(box)) return Promise.resolve();
    const killing = (async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          await box.sandbox.kill(this.http()); // false (not found): already gone, fine
          return;
        } catch {
          if (attempt >= KILL_ATTEMPTS) return;
          await sleep(jitter(this.cfg.retryBaseDelayMs));
        }
      }
    })();
    this.track(killing);
    return killing;
  }

  private track(p: Promise<unknown>): void {
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  private connection() {
    return {
      apiKey: this.cfg.apiKey, validateApiKey: false, domain: this.cfg.domain, debug: false,
      ...(this.cfg.apiUrl === undefined ? {} : { apiUrl: this.cfg.apiUrl }),
      ...(this.cfg.sandboxUrl === undefined ? {} : { sandboxUrl: this.cfg.sandboxUrl }),
      ...this.http(),
    };
  }

  private http(): { requestTimeoutMs?: number } {
    return this.cfg.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: this.cfg.requestTimeoutMs };
  }

  /** SDK error → infra failure with a stable code; the message never carries the API key. */
  private classify(e: unknown, signal?: AbortSignal): InfraFailure {
    if (e instanceof InfraFailure) return e;
    if (e instanceof PoolClosed) return new InfraFailure("e2b_closed", e.message, false);
    const sdk = this.sdk;
    const raw = e instanceof Error ? e.message : String(e);
    const msg = this.scrub(raw).split("\n")[0]!.slice(0, 500);
    if (signal?.aborted === true) return new InfraFailure("aborted", "the request was aborted", false);
    if (e instanceof sdk.AuthenticationError) return new InfraFailure("e2b_auth_failed", "the E2B/AGS service rejected the credentials (HTTP 401); check E2B_API_KEY and E2B_DOMAIN", false);
    if (e instanceof sdk.RateLimitError) return new InfraFailure("e2b_rate_limited", msg, true);
    if (e instanceof sdk.ServiceBusyError) return new InfraFailure("e2b_busy", msg, true);
    if (e instanceof sdk.TimeoutError) return new InfraFailure("e2b_timeout", msg, true);
    if (e instanceof sdk.NotFoundError) return new InfraFailure("e2b_sandbox_gone", msg, true);
    if (e instanceof sdk.TemplateError) return new InfraFailure("e2b_template", msg, false);
    if (e instanceof sdk.InvalidArgumentError) return new InfraFailure("e2b_invalid_argument", msg, false);
    if (e instanceof sdk.SandboxError) {
      const status = (e as { statusCode?: number }).statusCode;
      const rejected = status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429;
      return new InfraFailure(rejected ? "e2b_request_rejected" : "e2b_error", msg, !rejected);
    }
    return new InfraFailure("e2b_network", msg, true);
  }

  private scrub(text: string): string {
    return this.cfg.apiKey.length === 0 ? text : text.split(this.cfg.apiKey).join("***");
  }
}

function settings(opts: E2BSandboxOptions): Settings {
  const env = opts.env ?? process.env;
  const apiKey = opts.apiKey ?? env.E2B_API_KEY ?? "";
  if (apiKey.trim() === "") {
    throw new SandboxError("e2b_api_key_missing", "no E2B/AGS API key", { hint: "set E2B_API_KEY (for Tencent AGS also E2B_DOMAIN=<region>.tencentags.com)", exitCode: 2 });
  }
  const positive = (name: string, v: number | undefined, dflt: number, integer: boolean): number => {
    const x = v ?? dflt;
    if (!(x > 0) || !Number.isFinite(x) || (integer && !Number.isInteger(x))) {
      throw new SandboxError("e2b_bad_option", `${name} must be a positive ${integer ? "integer" : "number"}, got ${v}`, { exitCode: 2 });
    }
    return x;
  };
  return {
    apiKey,
    domain: opts.domain ?? env.E2B_DOMAIN ?? "e2b.app",
    template: opts.template ?? "code-interpreter-v1",
    poolSize: positive("poolSize", opts.poolSize, 4, true),
    maxCreatesPerSecond: positive("maxCreatesPerSecond", opts.maxCreatesPerSecond, 1, false),
    sandboxTimeoutMs: positive("sandboxTimeoutMs", opts.sandboxTimeoutMs, 30 * 60_000, true),
    maxJobsPerSandbox: positive("maxJobsPerSandbox", opts.maxJobsPerSandbox, 200, true),
    apiUrl: opts.apiUrl ?? env.E2B_API_URL,
    sandboxUrl: opts.sandboxUrl ?? env.E2B_SANDBOX_URL,
    requestTimeoutMs: opts.requestTimeoutMs,
    retryBaseDelayMs: opts.retryBaseDelayMs ?? 500,
    retryMaxDelayMs: opts.retryMaxDelayMs ?? 10_000,
    createRetryBudgetMs: positive("createRetryBudgetMs", opts.createRetryBudgetMs, 30_000, false),
    maxQueuedJobs: opts.maxQueuedJobs === undefined ? undefined : (opts.maxQueuedJobs === 0 ? 0 : positive("maxQueuedJobs", opts.maxQueuedJobs, 0, true)),
    instanceId: opts.instanceId ?? randomBytes(6).toString("hex"),
  };
}

/** The runner's result line: `RLPIPE_RESULT <nonce> <json>`; anything else on stdout is ignored. */
function parseRunnerOutput(stdout: string, nonce: string): RunnerDoc | undefined {
  const prefix = `${RESULT_MARK} ${nonce} `;
  const line = stdout.split("\n").reverse().find((l) => l.startsWith(prefix));
  if (line === undefined) return undefined;
  try {
    const doc = JSON.parse(line.slice(prefix.length)) as RunnerDoc;
    return Array.isArray(doc.cases) ? doc : undefined;
  } catch {
    return undefined;
  }
}

function toExecution(r: RunnerCaseRecord): CaseExecution {
  if (r.skipped !== undefined) return { exitCode: null, stdout: "", stderr: "", timeMs: 0, skipped: r.skipped };
  return {
    exitCode: r.exitCode ?? null, stdout: r.stdout ?? "", stderr: r.stderr ?? "", timeMs: r.timeMs ?? 0,
    timedOut: r.timedOut === true, outputExceeded: r.outputExceeded === true, memoryExceeded: r.memoryExceeded === true,
    ...(r.valueJson === undefined ? {} : { valueJson: r.valueJson }),
  };
}

function toRunnerCase(t: TestCase): RunnerCase {
  switch (t.kind) {
    case "stdio": return { kind: "stdio" };
    case "call": return { kind: "call", fnName: t.fnName, args: t.args };
    case "assert": return { kind: "assert", testCode: t.testCode, ...(t.entryPoint === undefined ? {} : { entryPoint: t.entryPoint }) };
  }
}

/** Cases after the first failure become skipped (the runner stops early only on failures it can see). */
function stopAtFirstFailure(results: CaseResult[]): CaseResult[] {
  const first = results.findIndex((r) => r.status !== "passed");
  if (first < 0) return results;
  return results.map((r, i) => (i > first && r.status !== "infra_error" ? { index: i, status: "skipped", detail: "stopped at the first failure" } : r));
}

function isSupported(language: string): boolean {
  return (LANGUAGES as readonly string[]).includes(language);
}

function unsupported(language: string): string {
  return `language ${language} is not available in the E2B sandbox (available: ${LANGUAGES.join(", ")})`;
}

function describe(f: InfraFailure): string {
  return `${f.code}: ${f.message}`;
}

function toArrayBuffer(u: Uint8Array): ArrayBuffer {
  return u.buffer.slice(u.byteOffset, u.byteOffset + u.byteLength) as ArrayBuffer;
}

/** Full jitter in [base/2, base*1.5): retries from many jobs do not line up. */
function jitter(baseMs: number): number {
  return baseMs / 2 + Math.random() * baseMs;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((res, rej) => {
    if (signal?.aborted === true) return rej(signal.reason);
    const t = setTimeout(() => { signal?.removeEventListener("abort", onAbort); res(); }, ms);
    const onAbort = () => { clearTimeout(t); rej(signal!.reason); };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
