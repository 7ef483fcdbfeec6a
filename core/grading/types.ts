// The vocabulary every sandbox backend and the reward function share: test cases, checkers, per-case
// outcomes. Model outcomes (passed, wrong_answer, runtime_error, timeout, memory_limit, output_limit,
// compile_error) are kept apart from infra_error, which is never a 0 reward: it is retried or surfaced.

export type Language = "python" | "cpp" | "nodejs" | (string & {});

/** Languages rlpipe's own sandbox runs (when the toolchain is present). */
export const LOCAL_LANGUAGES = ["python", "cpp", "nodejs"] as const;

export interface Limits {
  /** Wall clock per test case (or per run). */
  readonly runTimeoutMs: number;
  readonly compileTimeoutMs?: number;
  readonly memoryMb?: number;
  /** stdout/stderr beyond this are cut and the case is output_limit. */
  readonly maxOutputBytes?: number;
  /** Budget for a job's test cases (its build has compileTimeoutMs of its own); cases not started in time are `skipped`. */
  readonly totalTimeoutMs?: number;
}

/** maxOutputBytes: 16 MiB per stream — 200,000 lines of numbers (an ordinary competitive-programming answer) fit. */
export const DEFAULT_LIMITS: Required<Limits> = {
  runTimeoutMs: 10_000, compileTimeoutMs: 10_000, memoryMb: 1024, maxOutputBytes: 16 << 20, totalTimeoutMs: 300_000,
};

/** Limits with every unset field at its default. */
export function withDefaults(l: Limits): Required<Limits> {
  return { ...DEFAULT_LIMITS, ...Object.fromEntries(Object.entries(l).filter(([, v]) => v !== undefined)) } as Required<Limits>;
}

export type TestCase =
  | { readonly kind: "stdio"; readonly stdin: string; readonly expectedStdout: string }
  | {
    readonly kind: "call"; readonly fnName: string; readonly args: readonly unknown[]; readonly expected: unknown;
    /** The arguments as source text of the program's language (an assert taken apart, tail-asserts.ts); args is then empty. */
    readonly argsSource?: string;
    /** The assert this call was taken from, as the test wrote it. */
    readonly source?: string;
  }
  | { readonly kind: "assert"; readonly testCode: string; readonly entryPoint?: string };

export type Checker =
  /** SandboxFusion semantics: strip, per-line compare with per-line strip, float tolerance, equal line counts. */
  | { readonly kind: "lines"; readonly floatRelTol?: number; readonly caseInsensitive?: boolean }
  | { readonly kind: "exact" }
  /** Judge program gets stdin.txt (input), stdout.txt (expected), answer.txt (actual); exit 0 accepts. */
  | { readonly kind: "special"; readonly language: Language; readonly program: string };

export interface EvalJob {
  /** Caller's id, echoed back (tracing, dedupe). */
  readonly id: string;
  readonly language: Language;
  /** Program text, already extracted from the completion (never markdown). */
  readonly code: string;
  readonly tests: readonly TestCase[];
  readonly checker?: Checker;
  readonly limits: Limits;
  /** Stop at the first failing case (the rest are `skipped`). Default false: partial credit needs every case. */
  readonly stopOnFirstFailure?: boolean;
}

export type CaseStatus =
  | "passed" | "wrong_answer" | "runtime_error" | "timeout" | "memory_limit" | "output_limit" | "compile_error" | "skipped" | "infra_error";

export const MODEL_FAILURES: readonly CaseStatus[] = ["wrong_answer", "runtime_error", "timeout", "memory_limit", "output_limit", "compile_error"];

export interface CaseResult {
  readonly index: number;
  readonly status: CaseStatus;
  readonly exitCode?: number | null;
  readonly stdout?: string;
  readonly stderr?: string;
  readonly timeMs?: number;
  /** Short reason for a failure ("expected 3 lines, got 1", "Total Timeout", an infra message). */
  readonly detail?: string;
  /** stdout and stderr are not kept: the request's reply budget for program output was spent (output-budget.ts). */
  readonly outputOmitted?: boolean;
}

export interface EvalResult {
  readonly id: string;
  /** infra_error: the sandbox failed, not the program; the caller retries or reports a failed scoring call. */
  readonly status: "ok" | "infra_error";
  readonly error?: string;
  readonly passed: number;
  readonly total: number;
  readonly cases: readonly CaseResult[];
  readonly backend: string;
  readonly usage: { readonly wallMs: number; readonly sandboxSeconds?: number };
}

export type RunStatus = "ok" | "compile_error" | "runtime_error" | "timeout" | "memory_limit" | "output_limit" | "infra_error";

export interface RunRequest {
  readonly language: Language;
  readonly code: string;
  readonly stdin?: string;
  /** Extra input files, relative paths inside the run's work dir → bytes. */
  readonly files?: Readonly<Record<string, Uint8Array>>;
  /** Files to return after the run: relative to its work dir, or absolute under /tmp or /mnt (what exists is returned). */
  readonly fetchFiles?: readonly string[];
  readonly limits: Limits;
}

export interface RunResult {
  readonly status: RunStatus;
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timeMs: number;
  readonly compile?: { readonly exitCode: number | null; readonly stdout: string; readonly stderr: string; readonly timeMs: number; readonly timedOut: boolean; readonly budgetMs?: number };
  /** Which limit a program hit, where it matters (memory: one process's, or all of the program's processes). */
  readonly detail?: string;
  /** Set for infra_error. */
  readonly error?: string;
  /** The fetched files that existed (RunRequest.fetchFiles), base64. */
  readonly files?: Readonly<Record<string, string>>;
}

/**
 * What a backend observed for one case before grading. `value` is the JSON of a function-call result.
 * Grading (core/grading/grade.ts) turns this into a CaseStatus.
 */
export interface CaseExecution {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly timeMs: number;
  readonly timedOut?: boolean;
  readonly memoryExceeded?: boolean;
  readonly outputExceeded?: boolean;
  /** For call cases: the returned value as JSON text (harness-serialized). */
  readonly valueJson?: string;
  /** The backend could not run the case (sandbox failure, not the program's). */
  readonly infraError?: string;
  readonly skipped?: string;
}
