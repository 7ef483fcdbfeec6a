// SandboxFusion/ScaleBox-compatible API over any sandbox backend: POST /run_code, POST /common_evaluate(_batch),
// GET /v1/ping — the shapes and status enums verl's SandboxFusionTool, the seed's scalebox.py and ScaleBox's
// own clients use, so they work unchanged. Grading follows SandboxFusion's strict line comparison (ScaleBox
// dropped the line-count check; rlpipe keeps it). Pure: request in, response out.
import { z } from "zod";
import { type ParsedCases, parseCaseList, parseTestCases, TestCaseError } from "../core/grading/cases.js";
import { NO_VERDICT_ABILITIES, planProgram, strictRefusal, verdictBy, type VerdictAbilities } from "../core/grading/verdicts.js";
import { canonicalLanguage, extractCode } from "../core/grading/extract.js";
import { OUTPUT_OMITTED, OutputBudget } from "../core/grading/output-budget.js";
import type { CaseResult, EvalJob, EvalResult, RunResult, TestCase } from "../core/grading/types.js";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { type FnRequest, type FnResponse, json, unprocessable } from "./http-types.js";

/** SandboxFusion's Language literal (plus ScaleBox's javascript alias). */
export const SF_LANGUAGES = [
  "python", "cpp", "nodejs", "go", "go_test", "java", "php", "csharp", "bash", "typescript", "sql", "rust", "cuda", "lua", "R", "perl",
  "D_ut", "ruby", "scala", "julia", "pytest", "junit", "kotlin_script", "jest", "verilog", "python_gpu", "lean", "swift", "racket", "javascript",
] as const;

const RunCodeRequest = z.object({
  code: z.string(),
  language: z.enum(SF_LANGUAGES),
  stdin: z.string().nullable().optional(),
  compile_timeout: z.number().positive().default(10),
  run_timeout: z.number().positive().default(10),
  memory_limit_MB: z.number().int().default(-1),
  files: z.record(z.string(), z.string().nullable()).default({}),
  fetch_files: z.array(z.string()).default([]),
});

const SubmitRequest = z.object({
  dataset: z.string().default(""),
  id: z.union([z.number(), z.string()]).default(0),
  completion: z.string(),
  config: z.object({
    language: z.string().nullable().optional(),
    compile_timeout: z.number().positive().nullable().optional(),
    run_timeout: z.number().positive().nullable().optional(),
    mem_limit: z.number().nullable().optional(),
    provided_data: z.record(z.string(), z.unknown()).nullable().optional(),
    extra: z.record(z.string(), z.unknown()).nullable().optional(),
  }).passthrough(),
});

export type RunStatusSF = "Success" | "Failed" | "SandboxError";

export interface CommandRunResultSF {
  status: "Finished" | "TimeLimitExceeded" | "Error";
  execution_time: number | null;
  return_code: number | null;
  stdout: string | null;
  stderr: string | null;
  /** rlpipe's addition to a compile step: its time budget (a slow compiler gets at least its floor, toolchains.ts). */
  rlpipe_budget_s?: number;
}

export interface RunCodeResponseSF {
  status: RunStatusSF;
  message: string;
  compile_result: CommandRunResultSF | null;
  run_result: CommandRunResultSF | null;
  executor_pod_name: string | null;
  files: Record<string, string>;
}

export interface SandboxApiDeps {
  readonly backend: SandboxBackend;
  /** Default per-case memory when a request gives none (MB). */
  readonly defaultMemoryMb?: number;
  /** rlpipe serve --strict-verdicts: refuse a job with a case whose verdict would be the program's own exit status. */
  readonly strictVerdicts?: boolean;
}

/**
 * Why a fetch_files path is refused, or undefined: a path relative to the work dir, or under /tmp or /mnt (the
 * sandbox's scratch directories; SandboxFusion's programs write /mnt), never with `..`.
 */
export function fetchPathProblem(path: string): string | undefined {
  if (path.split("/").includes("..") || (path.startsWith("/") && !path.startsWith("/tmp/") && !path.startsWith("/mnt/"))) {
    return `fetch_files: ${path} must be relative to the work dir or under /tmp or /mnt`;
  }
  return undefined;
}

export async function handleRunCode(req: FnRequest, deps: SandboxApiDeps): Promise<FnResponse> {
  const parsed = RunCodeRequest.safeParse(req.body);
  if (!parsed.success) return unprocessable(parsed.error.issues);
  const r = parsed.data;
  for (const path of r.fetch_files) {
    const problem = fetchPathProblem(path);
    if (problem !== undefined) return json(200, sandboxError(problem));
  }
  const files: Record<string, Uint8Array> = {};
  for (const [path, data] of Object.entries(r.files)) {
    if (data === null) continue;
    if (path.startsWith("/") || path.split("/").includes("..")) return json(200, sandboxError(`input file path must be relative to the work dir: ${path}`));
    files[path] = Buffer.from(data, "base64");
  }
  const result = await deps.backend.run({
    language: canonicalLanguage(r.language),
    code: r.code,
    ...(r.stdin === null || r.stdin === undefined ? {} : { stdin: r.stdin }),
    files,
    ...(r.fetch_files.length === 0 ? {} : { fetchFiles: r.fetch_files }),
    limits: {
      runTimeoutMs: r.run_timeout * 1000,
      compileTimeoutMs: r.compile_timeout * 1000,
      memoryMb: r.memory_limit_MB > 0 ? r.memory_limit_MB : deps.defaultMemoryMb ?? 1024,
    },
  }, req.signal);
  return json(200, runCodeResponse(result, canonicalLanguage(r.language)));
}

/**
 * Languages whose build step is rlpipe's own: SandboxFusion runs the interpreter (or `kotlinc -script`) directly, so
 * a program that does not parse fails in its run (run_result, exit 1, the interpreter's message on stderr), not in a
 * compile step.
 */
const NO_COMPILE_STEP = new Set(["python", "kotlin_script"]);

/**
 * The first command SandboxFusion runs for a language (sandbox/runners/major.py and minor.py) and whether it is a
 * compile step. Where a runtime is missing, SandboxFusion's shell answers exit 127 in that step, and so does rlpipe.
 */
const SF_FIRST_COMMAND: Readonly<Record<string, readonly [command: string, compileStep: boolean]>> = {
  python: ["python", false], pytest: ["pytest", false], python_gpu: ["python", false], cpp: ["g++", true], cuda: ["nvcc", true],
  csharp: ["dotnet", false], go: ["go", true], go_test: ["go", false], java: ["javac", true], junit: ["javac", true],
  nodejs: ["node", false], javascript: ["node", false], typescript: ["tsx", false], jest: ["npm", false], php: ["php", false],
  rust: ["rustc", true], bash: ["/bin/bash", false], lua: ["lua", false], R: ["Rscript", false], perl: ["perl", false],
  D_ut: ["dmd", true], ruby: ["ruby", false], scala: ["scalac", true], julia: ["julia", false], kotlin_script: ["kotlin", false],
  verilog: ["iverilog", true], lean: ["lake", false], swift: ["swiftc", true], racket: ["racket", false], sql: ["sqlite3", false],
};

/** What SandboxFusion answers when a language's runtime is not installed: its first command fails with exit 127. */
function missingRuntime(language: string): RunCodeResponseSF {
  const [command, compileStep] = SF_FIRST_COMMAND[language] ?? [language, false];
  const step: CommandRunResultSF = {
    status: "Finished", execution_time: 0, return_code: 127, stdout: "",
    stderr: `/bin/bash: line 1: ${command}: command not found\nrlpipe: this server has no ${language} toolchain (rlpipe sandbox setup --languages ${language} installs the ones it knows)\n`,
  };
  return { status: "Failed", message: "", compile_result: compileStep ? step : null, run_result: compileStep ? null : step, executor_pod_name: null, files: {} };
}

/** SandboxFusion's parse_run_status: Error → SandboxError; time limit or non-zero exit → Failed; else Success. */
export function runCodeResponse(r: RunResult, language = ""): RunCodeResponseSF {
  if (r.status === "infra_error") return sandboxError(r.error ?? "sandbox error");
  const built = r.compile === undefined ? null : {
    status: r.compile.timedOut ? "TimeLimitExceeded" as const : "Finished" as const,
    execution_time: r.compile.timeMs / 1000, return_code: r.compile.timedOut ? null : r.compile.exitCode, stdout: r.compile.stdout, stderr: r.compile.stderr,
    ...(r.compile.budgetMs === undefined ? {} : { rlpipe_budget_s: r.compile.budgetMs / 1000 }),
  };
  if (r.status === "compile_error") {
    // The local backend reports an unavailable language as compile_error with no compile step: a missing runtime.
    if (built === null) return missingRuntime(language);
    if (NO_COMPILE_STEP.has(language)) return { status: "Failed", message: "", compile_result: null, run_result: { ...built, return_code: built.return_code === null ? null : 1 }, executor_pod_name: null, files: {} };
    return { status: "Failed", message: "", compile_result: built, run_result: null, executor_pod_name: null, files: {} };
  }
  // Where SandboxFusion has no build step, rlpipe's own is not reported either.
  const compile = NO_COMPILE_STEP.has(language) ? null : built;
  const timedOut = r.status === "timeout";
  const run: CommandRunResultSF = {
    status: timedOut ? "TimeLimitExceeded" : "Finished",
    execution_time: r.timeMs / 1000,
    return_code: timedOut ? null : r.exitCode,
    stdout: r.stdout,
    stderr: r.status === "output_limit" ? `${r.stderr}\n[rlpipe: output limit exceeded]`.trimStart() : r.stderr,
  };
  const failed = timedOut || r.status !== "ok";
  // Which limit a program hit, where there is more than one (memory: one process's, or all of its processes').
  return { status: failed ? "Failed" : "Success", message: r.detail ?? "", compile_result: compile, run_result: run, executor_pod_name: null, files: { ...r.files } };
}

function sandboxError(message: string): RunCodeResponseSF {
  return { status: "SandboxError", message, compile_result: null, run_result: null, executor_pod_name: null, files: {} };
}

export async function handleCommonEvaluateBatch(req: FnRequest, deps: SandboxApiDeps): Promise<FnResponse> {
  return commonEvaluate(req, deps, (data, extra) => parseTestCases(data["test_cases"], extra), "config.provided_data.test_cases is required (rlpipe evaluates provided test cases only)");
}

/** ScaleBox's non-batch endpoint: the same evaluation, with test cases as a list of one-case objects. */
export async function handleCommonEvaluate(req: FnRequest, deps: SandboxApiDeps): Promise<FnResponse> {
  return commonEvaluate(req, deps, parseCaseList, "config.provided_data needs test_cases (a list) or test (rlpipe evaluates provided test cases only)");
}

async function commonEvaluate(req: FnRequest, deps: SandboxApiDeps, parse: (data: Record<string, unknown>, extra: Record<string, unknown>) => ParsedCases, missing: string): Promise<FnResponse> {
  const parsed = SubmitRequest.safeParse(req.body);
  if (!parsed.success) return unprocessable(parsed.error.issues);
  const { completion, config, id } = parsed.data;
  if (config.language === undefined || config.language === null || config.language === "") {
    return json(400, { detail: `config.language field must exist, got ${config.language ?? "None"}` });
  }
  const extra = config.extra ?? {};
  if (config.provided_data === undefined || config.provided_data === null) return json(400, { detail: missing });
  let cases: ParsedCases;
  try {
    cases = parse(config.provided_data, extra);
  } catch (e) {
    if (e instanceof TestCaseError) return json(400, { detail: e.message });
    throw e;
  }
  const requested = canonicalLanguage(config.language);
  const extracted = extractCode(completion, requested);
  const abilities = deps.backend.verdictAbilities?.() ?? NO_VERDICT_ABILITIES;
  const program = planProgram(requested, extracted.code, cases, abilities);
  if (deps.strictVerdicts === true) {
    const refusal = strictRefusal(program, cases.checker, abilities);
    if (refusal !== undefined) return json(400, { detail: refusal, code: "unverifiable_test_cases" });
  }
  const { language, code } = program;
  const compiled = language !== "python" && language !== "nodejs";
  const runTimeoutS = config.run_timeout ?? (compiled ? 10 : 20);
  const job: EvalJob = {
    id: String(id),
    language,
    code,
    tests: program.tests,
    ...(cases.checker === undefined ? {} : { checker: cases.checker }),
    limits: {
      runTimeoutMs: runTimeoutS * 1000,
      compileTimeoutMs: (config.compile_timeout ?? 10) * 1000,
      memoryMb: config.mem_limit !== undefined && config.mem_limit !== null && config.mem_limit > 0 ? Math.ceil(config.mem_limit / 1024) : deps.defaultMemoryMb ?? 1024,
      totalTimeoutMs: (typeof extra["total_timeout"] === "number" ? extra["total_timeout"] : 300) * 1000,
    },
    stopOnFirstFailure: extra["run_all_cases"] !== true,
  };
  const [result] = await deps.backend.evaluate([job], { ...(req.signal === undefined ? {} : { signal: req.signal }), outputBudget: new OutputBudget() });
  if (result!.status === "infra_error") {
    // Never report success for a sandbox failure; clients (scalebox.py, ScaleBox's own) retry on 5xx.
    return json(503, { detail: `sandbox error: ${result!.error ?? "unknown"}` });
  }
  return json(200, evalResponse(job, result!, code, extra["return_full_case"] === true, abilities));
}

function truncate(s: string, full: boolean): string {
  return full || s.length <= 1000 ? s : `${s.slice(0, 1000)}...`;
}

function caseExecInfo(c: CaseResult, language: string): RunCodeResponseSF {
  if (c.status === "skipped") return sandboxError(c.detail ?? "Total Timeout");
  if (c.status === "infra_error") return sandboxError(c.detail ?? "sandbox error");
  if (c.status === "compile_error") {
    const step: CommandRunResultSF = { status: "Finished", execution_time: null, return_code: 1, stdout: "", stderr: c.stderr ?? c.detail ?? "" };
    return NO_COMPILE_STEP.has(language)
      ? { status: "Failed", message: "", compile_result: null, run_result: step, executor_pod_name: null, files: {} }
      : { status: "Failed", message: "", compile_result: step, run_result: null, executor_pod_name: null, files: {} };
  }
  const timedOut = c.status === "timeout";
  return {
    status: c.status === "passed" ? "Success" : "Failed",
    message: c.outputOmitted === true ? OUTPUT_OMITTED : c.status === "wrong_answer" ? "Wrong Answer" : c.status === "memory_limit" || c.status === "timeout" ? c.detail ?? "" : "",
    compile_result: null,
    run_result: { status: timedOut ? "TimeLimitExceeded" : "Finished", execution_time: c.timeMs === undefined ? null : c.timeMs / 1000, return_code: timedOut ? null : c.exitCode ?? null, stdout: c.stdout ?? "", stderr: c.stderr ?? "" },
    executor_pod_name: null,
    files: {},
  };
}

function testInfo(t: TestCase, full: boolean): unknown {
  switch (t.kind) {
    case "stdio": return { input: { stdin: truncate(t.stdin, full) }, output: { stdout: truncate(t.expectedStdout, full) } };
    case "call": return t.source !== undefined
      ? { type: "assert", test: truncate(t.source, full) }
      : { type: "function_call", fn_name: t.fnName, input: t.args, output: [t.expected] };
    case "assert": return { type: "assert", test: truncate(t.testCode, full) };
  }
}

function evalResponse(job: EvalJob, r: EvalResult, extractedCode: string, full: boolean, abilities: VerdictAbilities): unknown {
  // With run_all_cases false, ScaleBox stops at the first failure and returns the cases it ran.
  const shown = job.stopOnFirstFailure === true ? r.cases.filter((c) => c.status !== "skipped" || c.detail === "Total Timeout") : r.cases;
  return {
    id: job.id,
    accepted: r.total > 0 && r.passed === r.total,
    extracted_code: extractedCode,
    full_code: null,
    test_code: null,
    tests: shown.map((c) => ({
      passed: c.status === "passed", exec_info: caseExecInfo(c, job.language), test_info: testInfo(job.tests[c.index]!, full), rlpipe_status: c.status,
      rlpipe_verdict_by: verdictBy(job.language, job.tests[c.index]!, job.checker, abilities),
    })),
    extracted_type: null,
    extra: null,
  };
}

/** "pong", as SandboxFusion answers; with the nonce the server was started with in X-Rlpipe-Nonce. */
export function handlePing(nonce?: string): FnResponse {
  return json(200, "pong", nonce === undefined ? undefined : { "X-Rlpipe-Nonce": nonce });
}
