// Hosted ScaleBox / SandboxFusion over HTTP. One /common_evaluate_batch per job (ScaleBox); per-case /run_code
// for plain SandboxFusion, which has no batch endpoint. Several endpoints with health checks and least-loaded
// balancing, bounded concurrency, retries with jittered backoff for 429/5xx/SandboxError/network errors.
// Stdio cases are re-judged here from the returned stdout: ScaleBox's own comparator accepts output with
// missing or extra lines, and rlpipe does not inherit that.
import { Agent, request } from "undici";
import { compileFailed, gradeCase, gradeJudge, summarize } from "../../core/grading/grade.js";
import {
  type CaseExecution, type CaseResult, type EvalJob, type EvalResult, type Limits, type RunRequest, type RunResult, type TestCase, withDefaults,
} from "../../core/grading/types.js";
import { backoffMs, sleep } from "../../core/util/retry.js";
import { Semaphore } from "../../core/util/semaphore.js";
import { type Capabilities, type EvaluateOptions, type SandboxBackend, SandboxError } from "./sandbox.js";
import { stringifyJson } from "../../core/grading/exact-json.js";

export interface ScaleBoxOptions {
  /** Base URLs, e.g. http://10.0.0.5:8080 (several are balanced by least in-flight requests). */
  readonly endpoints: readonly string[];
  /** scalebox: /common_evaluate_batch per job; sandbox-fusion: /run_code per case. */
  readonly flavor?: "scalebox" | "sandbox-fusion";
  /** Requests in flight across all endpoints (default 32). */
  readonly concurrency?: number;
  readonly attempts?: number;
  readonly retryBaseDelayMs?: number;
  readonly retryMaxDelayMs?: number;
  /** Bearer token for a server behind an authenticating proxy (or rlpipe serve). */
  readonly token?: string;
  readonly healthIntervalMs?: number;
  /** Extra time on top of a job's own budget before the HTTP request is abandoned. */
  readonly requestMarginMs?: number;
}

interface Endpoint { readonly url: string; inFlight: number; healthy: boolean; batch: boolean }

class Retryable extends Error {
  constructor(message: string, readonly retryAfterMs?: number) { super(message); }
}

/** Every endpoint turned out to be plain SandboxFusion (no batch endpoint). */
class NoBatchEndpoint extends Error {}

interface RunCodeResponse {
  status: "Success" | "Failed" | "SandboxError";
  message?: string;
  compile_result?: { status: string; execution_time?: number | null; return_code: number | null; stdout?: string | null; stderr?: string | null } | null;
  run_result?: { status: string; execution_time?: number | null; return_code: number | null; stdout?: string | null; stderr?: string | null } | null;
}

interface BatchResponse {
  accepted: boolean;
  tests: { passed: boolean; exec_info: RunCodeResponse; test_info?: unknown }[];
}

const CALL_MARKER = "\u0000rlpipe-value:";

export class ScaleBoxSandbox implements SandboxBackend {
  readonly name = "scalebox";
  private readonly endpoints: Endpoint[];
  private readonly slots: Semaphore;
  private readonly agent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
  private readonly healthTimer: NodeJS.Timeout;
  private rr = 0;

  private constructor(private readonly opts: ScaleBoxOptions) {
    this.endpoints = opts.endpoints.map((u) => ({ url: u.replace(/\/+$/, ""), inFlight: 0, healthy: true, batch: opts.flavor !== "sandbox-fusion" }));
    this.slots = new Semaphore(opts.concurrency ?? 32);
    this.healthTimer = setInterval(() => void this.checkHealth(), opts.healthIntervalMs ?? 10_000);
    this.healthTimer.unref();
  }

  /** Validates the endpoints and pings them; fails when none answers. */
  static async create(opts: ScaleBoxOptions): Promise<ScaleBoxSandbox> {
    if (opts.endpoints.length === 0) throw new SandboxError("no_endpoints", "ScaleBox needs at least one endpoint URL", { exitCode: 2 });
    for (const u of opts.endpoints) {
      let url: URL;
      try { url = new URL(u); } catch { throw new SandboxError("bad_endpoint", `not a URL: ${u}`, { exitCode: 2 }); }
      if (url.protocol !== "http:" && url.protocol !== "https:") throw new SandboxError("bad_endpoint", `unsupported scheme in ${u}`, { exitCode: 2 });
    }
    const sb = new ScaleBoxSandbox(opts);
    await sb.checkHealth();
    if (!sb.endpoints.some((e) => e.healthy)) {
      await sb.close();
      throw new SandboxError("scalebox_unreachable", `no ScaleBox/SandboxFusion endpoint answered GET /v1/ping: ${opts.endpoints.join(", ")}`, { hint: "start the server (make run-online) or check the URL" });
    }
    return sb;
  }

  async capabilities(): Promise<Capabilities> {
    return { backend: this.name, languages: ["python", "cpp", "nodejs", "go", "java", "rust", "bash"], maxConcurrency: this.slots.size, specialJudge: true };
  }

  async close(): Promise<void> {
    clearInterval(this.healthTimer);
    await this.agent.close();
  }

  async run(req: RunRequest, signal?: AbortSignal): Promise<RunResult> {
    const limits = withDefaults(req.limits);
    const body = {
      code: req.code, language: req.language, stdin: req.stdin ?? "",
      run_timeout: limits.runTimeoutMs / 1000, compile_timeout: limits.compileTimeoutMs / 1000, memory_limit_MB: limits.memoryMb,
      files: Object.fromEntries(Object.entries(req.files ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")])),
      fetch_files: [],
    };
    try {
      const r = await this.call<RunCodeResponse>("/run_code", body, limits.runTimeoutMs + limits.compileTimeoutMs, signal, (x) => x.status !== "SandboxError");
      return toRunResult(r);
    } catch (e) {
      return { status: "infra_error", exitCode: null, stdout: "", stderr: "", timeMs: 0, error: (e as Error).message };
    }
  }

  async evaluate(jobs: readonly EvalJob[], opts: EvaluateOptions = {}): Promise<EvalResult[]> {
    return Promise.all(jobs.map((j) => this.evaluateOne(j, opts.signal)));
  }

  private async evaluateOne(job: EvalJob, signal?: AbortSignal): Promise<EvalResult> {
    const started = performance.now();
    const limits = withDefaults(job.limits);
    let results: CaseResult[];
    try {
      try {
        if (!this.endpoints.some((e) => e.batch)) throw new NoBatchEndpoint();
        results = await this.viaBatch(job, limits, signal);
      } catch (e) {
        if (!(e instanceof NoBatchEndpoint)) throw e;
        results = await this.viaRunCode(job, limits, signal);
      }
      results = await this.judge(job, results, signal);
    } catch (e) {
      results = job.tests.map((_, index) => ({ index, status: "infra_error" as const, detail: (e as Error).message }));
    }
    return summarize(job.id, this.name, results, performance.now() - started);
  }

  /** ScaleBox: one request per run of same-kind cases (a dataset's cases are normally all one kind). */
  private async viaBatch(job: EvalJob, limits: Required<Limits>, signal?: AbortSignal): Promise<CaseResult[]> {
    const results: CaseResult[] = [];
    for (const group of groupByKind(job.tests)) {
      const extra: Record<string, unknown> = { run_all_cases: job.stopOnFirstFailure !== true, total_timeout: Math.ceil(limits.totalTimeoutMs / 1000), return_full_case: true };
      const body = {
        completion: "```" + fenceTag(job.language) + "\n" + job.code + "\n```",
        config: {
          language: job.language === "nodejs" ? "javascript" : job.language,
          compile_timeout: limits.compileTimeoutMs / 1000,
          run_timeout: limits.runTimeoutMs / 1000,
          provided_data: { test_cases: toScaleBoxCases(group.tests) },
          extra,
        },
      };
      const r = await this.call<BatchResponse>("/common_evaluate_batch", body, limits.totalTimeoutMs, signal,
        (x) => Array.isArray(x.tests) && !x.tests.some((t) => t.exec_info?.status === "SandboxError" && t.exec_info.message !== "Total Timeout"));
      group.tests.forEach((t, k) => {
        const index = group.start + k;
        const got = r.tests[k];
        results.push(got === undefined ? { index, status: "skipped", detail: job.stopOnFirstFailure === true ? "stopped at the first failure" : "not run by the server" } : gradeRemote(index, t, got.exec_info, got.passed, job));
      });
    }
    return results;
  }

  /** Plain SandboxFusion: one /run_code per case; function calls and asserts run in a small wrapper. */
  private async viaRunCode(job: EvalJob, limits: Required<Limits>, signal?: AbortSignal): Promise<CaseResult[]> {
    const deadline = Date.now() + limits.totalTimeoutMs;
    let stop = false;
    const one = async (t: TestCase, index: number): Promise<CaseResult> => {
      if (stop || Date.now() > deadline) return { index, status: "skipped", detail: stop ? "stopped at the first failure" : "Total Timeout" };
      const { code, stdin } = wrapForRunCode(job.language, job.code, t);
      const r = await this.call<RunCodeResponse>("/run_code", {
        code, language: job.language, stdin, run_timeout: limits.runTimeoutMs / 1000, compile_timeout: limits.compileTimeoutMs / 1000, memory_limit_MB: limits.memoryMb, files: {}, fetch_files: [],
      }, limits.runTimeoutMs + limits.compileTimeoutMs, signal, (x) => x.status !== "SandboxError");
      const res = gradeRemote(index, t, r, undefined, job);
      if (res.status !== "passed" && job.stopOnFirstFailure === true) stop = true;
      return res;
    };
    if (job.stopOnFirstFailure === true) {
      const out: CaseResult[] = [];
      for (const [i, t] of job.tests.entries()) out.push(await one(t, i));
      return out;
    }
    return Promise.all(job.tests.map(one));
  }

  /** Special judge: /run_code of the judge with stdin.txt, stdout.txt (expected) and answer.txt (actual). */
  private async judge(job: EvalJob, results: CaseResult[], signal?: AbortSignal): Promise<CaseResult[]> {
    const checker = job.checker;
    if (checker?.kind !== "special") return results;
    return Promise.all(results.map(async (r) => {
      const t = job.tests[r.index]!;
      if (r.status !== "wrong_answer" || t.kind !== "stdio") return r;
      const b64 = (s: string) => Buffer.from(s).toString("base64");
      const resp = await this.call<RunCodeResponse>("/run_code", {
        code: checker.program, language: checker.language, stdin: "", run_timeout: 10, compile_timeout: 10, memory_limit_MB: 1024,
        files: { "stdin.txt": b64(t.stdin), "stdout.txt": b64(t.expectedStdout), "answer.txt": b64(r.stdout ?? "") }, fetch_files: [],
      }, 20_000, signal, (x) => x.status !== "SandboxError");
      const run = resp.run_result;
      const verdict = gradeJudge({ exitCode: run?.return_code ?? null, stdout: run?.stdout ?? "", stderr: run?.stderr ?? "", timeMs: 0, timedOut: run?.status === "TimeLimitExceeded" });
      return { ...r, status: verdict.status, ...(verdict.detail === undefined ? {} : { detail: verdict.detail }) };
    }));
  }

  /** POST with retries: network errors, 429, 5xx and responses `ok` rejects (SandboxError) are retried. */
  private async call<T>(path: string, body: unknown, budgetMs: number, signal: AbortSignal | undefined, ok: (r: T) => boolean): Promise<T> {
    const attempts = this.opts.attempts ?? 4;
    let last: Error = new Error("no attempt made");
    let avoid: Endpoint | undefined;
    const needBatch = path === "/common_evaluate_batch";
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (needBatch && !this.endpoints.some((e) => e.batch)) throw new NoBatchEndpoint();
      const ep = this.pick(avoid, needBatch);
      try {
        return await this.slots.run(async () => {
          ep.inFlight++;
          try {
            const timeout = budgetMs + (this.opts.requestMarginMs ?? 15_000);
            const res = await request(`${ep.url}${path}`, {
              method: "POST", dispatcher: this.agent, body: stringifyJson(body),
              headers: { "content-type": "application/json", ...(this.opts.token === undefined ? {} : { authorization: `Bearer ${this.opts.token}` }) },
              headersTimeout: timeout, bodyTimeout: timeout,
              ...(signal === undefined ? {} : { signal }),
            });
            const text = await res.body.text();
            if (res.statusCode === 404 && needBatch) {
              ep.batch = false; // plain SandboxFusion: this endpoint serves /run_code only
              if (!this.endpoints.some((e) => e.batch)) throw new NoBatchEndpoint();
              throw new Retryable(`no /common_evaluate_batch at ${ep.url}`);
            }
            if (res.statusCode === 429 || res.statusCode >= 500) {
              const ra = Number(res.headers["retry-after"]);
              if (res.statusCode >= 500) ep.healthy = this.endpoints.filter((e) => e.healthy).length <= 1; // keep the last one
              throw new Retryable(`HTTP ${res.statusCode} from ${path}: ${text.slice(0, 200)}`, Number.isFinite(ra) ? ra * 1000 : undefined);
            }
            if (res.statusCode !== 200) throw new SandboxError("scalebox_rejected", `HTTP ${res.statusCode} from ${path}: ${text.slice(0, 300)}`);
            const parsed = JSON.parse(text) as T;
            if (!ok(parsed)) throw new Retryable(`sandbox error from ${path}: ${JSON.stringify(parsed).slice(0, 300)}`);
            return parsed;
          } finally {
            ep.inFlight--;
          }
        }, signal);
      } catch (e) {
        if (signal?.aborted === true || e instanceof SandboxError || e instanceof NoBatchEndpoint) throw e;
        last = e instanceof Error ? e : new Error(String(e));
        if (!(e instanceof Retryable)) ep.healthy = this.endpoints.filter((x) => x.healthy).length <= 1;
        avoid = ep;
        if (attempt + 1 < attempts) {
          const wait = e instanceof Retryable && e.retryAfterMs !== undefined ? e.retryAfterMs : backoffMs(attempt, { baseDelayMs: this.opts.retryBaseDelayMs ?? 1000, maxDelayMs: this.opts.retryMaxDelayMs ?? 30_000 });
          await sleep(wait, signal);
        }
      }
    }
    throw last;
  }

  /** Least in-flight among healthy endpoints (round-robin on ties); all endpoints when none is healthy. */
  private pick(avoid: Endpoint | undefined, needBatch: boolean): Endpoint {
    const usable = this.endpoints.filter((e) => !needBatch || e.batch);
    const healthy = usable.filter((e) => e.healthy);
    const preferred = healthy.filter((e) => e !== avoid);
    const pool = preferred.length > 0 ? preferred : healthy.length > 0 ? healthy : usable;
    const min = Math.min(...pool.map((e) => e.inFlight));
    const best = pool.filter((e) => e.inFlight === min);
    return best[this.rr++ % best.length]!;
  }

  private async checkHealth(): Promise<void> {
    await Promise.all(this.endpoints.map(async (e) => {
      try {
        const res = await request(`${e.url}/v1/ping`, { method: "GET", dispatcher: this.agent, headersTimeout: 5000, bodyTimeout: 5000 });
        const text = await res.body.text();
        e.healthy = res.statusCode === 200 && text.includes("pong");
      } catch {
        e.healthy = false;
      }
    }));
  }
}

function fenceTag(language: string): string {
  return language === "nodejs" ? "javascript" : language;
}

function groupByKind(tests: readonly TestCase[]): { start: number; tests: TestCase[] }[] {
  const groups: { start: number; tests: TestCase[] }[] = [];
  tests.forEach((t, i) => {
    const last = groups[groups.length - 1];
    if (last !== undefined && last.tests[0]!.kind === t.kind && (t.kind !== "call" || (last.tests[0] as { fnName: string }).fnName === t.fnName) && t.kind !== "assert") last.tests.push(t);
    else groups.push({ start: i, tests: [t] });
  });
  return groups;
}

/** One group's cases in ScaleBox's provided_data.test_cases form (groupByKind keeps a group to one kind). */
function toScaleBoxCases(tests: readonly TestCase[]): unknown {
  const first = tests[0]!;
  if (first.kind === "assert") return { type: "assert", test: first.testCode, ...(first.entryPoint === undefined ? {} : { entry_point: first.entryPoint }) };
  if (first.kind === "stdio") {
    const stdio = tests.filter((t): t is Extract<TestCase, { kind: "stdio" }> => t.kind === "stdio");
    return { type: "stdin_stdout", input: stdio.map((t) => t.stdin), output: stdio.map((t) => t.expectedStdout), fn_name: null };
  }
  const calls = tests.filter((t): t is Extract<TestCase, { kind: "call" }> => t.kind === "call");
  return { type: "function_call", fn_name: first.fnName, input: calls.map((t) => t.args), output: calls.map((t) => [t.expected]), json_input: false };
}

/** Turn the server's exec_info into a graded case; stdio is re-judged here, call/assert use the server's verdict. */
function gradeRemote(index: number, t: TestCase, info: RunCodeResponse, serverPassed: boolean | undefined, job: EvalJob): CaseResult {
  if (info.status === "SandboxError") {
    return info.message === "Total Timeout" ? { index, status: "skipped", detail: "Total Timeout" } : { index, status: "infra_error", detail: info.message ?? "SandboxError" };
  }
  const compile = info.compile_result;
  if (compile !== null && compile !== undefined && (compile.return_code !== 0 || compile.status === "TimeLimitExceeded")) {
    return { ...compileFailed(1, compile.stderr ?? "")[0]!, index };
  }
  const run = info.run_result;
  const stdout = run?.stdout ?? "";
  const stderr = run?.stderr ?? "";
  let valueJson: string | undefined;
  let out = stdout;
  const m = stdout.lastIndexOf(CALL_MARKER);
  if (t.kind === "call" && serverPassed === undefined && m >= 0) {
    valueJson = stdout.slice(m + CALL_MARKER.length).split("\n")[0];
    out = stdout.slice(0, m);
  }
  const exec: CaseExecution = {
    exitCode: run?.return_code ?? null, stdout: out, stderr, timeMs: (run?.execution_time ?? 0) * 1000,
    timedOut: run?.status === "TimeLimitExceeded", memoryExceeded: /MemoryError|bad_alloc/.test(stderr),
    ...(valueJson === undefined ? {} : { valueJson }),
  };
  let grade;
  if (t.kind === "stdio") {
    grade = gradeCase(t, exec, job.checker);
  } else if (serverPassed !== undefined) {
    // ScaleBox ran the assertion (fn(*input) == output[0], or the assert test) itself.
    const wrong = info.message === "Wrong Answer" || /AssertionError|Wrong Answer/.test(stderr) || run?.return_code === 0;
    grade = serverPassed ? { status: "passed" as const } : exec.timedOut === true ? { status: "timeout" as const } : { status: wrong ? "wrong_answer" as const : "runtime_error" as const };
  } else {
    grade = gradeCase(t, exec, job.checker);
  }
  return { index, ...grade, exitCode: exec.exitCode, stdout: out, stderr, timeMs: exec.timeMs };
}

/** Plain /run_code per case: function calls print their JSON result after a marker; asserts append the test. */
function wrapForRunCode(language: string, code: string, t: TestCase): { code: string; stdin: string } {
  if (t.kind === "stdio") return { code, stdin: t.stdin };
  if (language !== "python") return { code, stdin: "" };
  if (t.kind === "assert") {
    return { code: `${code}\n\n${t.testCode}\n${t.entryPoint === undefined ? "" : `check(${t.entryPoint})\n`}`, stdin: "" };
  }
  const call = [
    "", "import json as __rlpipe_json, sys as __rlpipe_sys",
    `__rlpipe_args = __rlpipe_json.loads(${JSON.stringify(stringifyJson(t.args))})`,
    `__rlpipe_fn = globals()[${JSON.stringify(t.fnName)}] if ${JSON.stringify(t.fnName)} in globals() else getattr(Solution(), ${JSON.stringify(t.fnName)})`,
    "__rlpipe_res = __rlpipe_fn(*__rlpipe_args)",
    `__rlpipe_sys.stdout.write(${JSON.stringify(CALL_MARKER)} + __rlpipe_json.dumps(__rlpipe_res, default=repr) + "\\n")`,
  ].join("\n");
  return { code: `${code}\n${call}\n`, stdin: "" };
}

function toRunResult(r: RunCodeResponse): RunResult {
  if (r.status === "SandboxError") return { status: "infra_error", exitCode: null, stdout: "", stderr: "", timeMs: 0, error: r.message ?? "SandboxError" };
  const c = r.compile_result;
  const compile = c === null || c === undefined ? undefined : { exitCode: c.return_code, stdout: c.stdout ?? "", stderr: c.stderr ?? "", timeMs: (c.execution_time ?? 0) * 1000, timedOut: c.status === "TimeLimitExceeded" };
  if (compile !== undefined && (compile.exitCode !== 0 || compile.timedOut)) {
    return { status: "compile_error", exitCode: compile.exitCode, stdout: "", stderr: compile.stderr, timeMs: compile.timeMs, compile };
  }
  const run = r.run_result;
  const stderr = run?.stderr ?? "";
  const timedOut = run?.status === "TimeLimitExceeded";
  const code = run?.return_code ?? null;
  const status = timedOut ? "timeout" : code === 0 ? "ok" : /MemoryError|bad_alloc/.test(stderr) ? "memory_limit" : "runtime_error";
  return { status, exitCode: code, stdout: run?.stdout ?? "", stderr, timeMs: (run?.execution_time ?? 0) * 1000, ...(compile === undefined ? {} : { compile }) };
}
