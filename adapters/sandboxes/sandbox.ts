// One interface for every sandbox backend: run() for tool calls, evaluate() for rewards (batched,
// order-preserving), capabilities(), close(). Grading is shared (core/grading); a backend only executes.
import { type ExitCode, RlpipeError } from "../../core/errors.js";
import type { OutputBudget } from "../../core/grading/output-budget.js";
import type { EvalJob, EvalResult, Language, RunRequest, RunResult } from "../../core/grading/types.js";
import type { VerdictAbilities } from "../../core/grading/verdicts.js";

export type { CaseResult, CaseStatus, Checker, EvalJob, EvalResult, Language, Limits, RunRequest, RunResult, TestCase } from "../../core/grading/types.js";

export interface Capabilities {
  readonly backend: string;
  readonly languages: readonly Language[];
  readonly maxConcurrency: number;
  /** How programs are isolated from each other, for backends with a choice (the local sandbox: warm, per-program). */
  readonly isolation?: string;
  readonly specialJudge: boolean;
  /** How the local sandbox bounds a program's memory: a cgroup over all its processes, or per process only. */
  readonly memoryBound?: string;
  /** Where the local sandbox's managers run a program's cases: "c" (caseloop.c) or "python" (no C compiler here). */
  readonly caseLoop?: string;
  /** The local sandbox's Python environment for programs (rlpipe serve --python-env): where, and how many packages. */
  readonly pythonEnv?: { readonly dir: string; readonly packages: number };
}

export interface EvaluateOptions {
  readonly signal?: AbortSignal;
  /** What the results may keep of the programs' output, over all jobs (default: DEFAULT_REPLY_OUTPUT_BYTES). */
  readonly outputBudget?: OutputBudget;
}

/** Where a backend's time went since it started: program and case counts, milliseconds summed per phase. */
export interface SandboxStats {
  readonly programs: number;
  readonly cases: number;
  readonly ms: Readonly<Record<string, number>>;
  /** Event counts (the local sandbox: sandboxes started and retired, programs that waited for one to start). */
  readonly counts?: Readonly<Record<string, number>>;
  /** The local sandbox's slots: how many, busy, and jobs waiting for one. */
  readonly slots?: { readonly size: number; readonly busy: number; readonly waiting: number };
  /** How the local sandbox bounds a program's memory. */
  readonly memoryBound?: string;
  /** Where the local sandbox's managers run a program's cases: "c" or "python". */
  readonly caseLoop?: string;
  /** Whether the local sandbox's programs get namespaces of their own ("own"), or share the sandbox's and why. */
  readonly programNamespaces?: string;
}

export interface SandboxBackend {
  readonly name: string;
  capabilities(): Promise<Capabilities>;
  /** One program (a tool call). Never throws for a program failure; infra problems come back as status infra_error. */
  run(req: RunRequest, signal?: AbortSignal): Promise<RunResult>;
  /** Many jobs; results in the same order. A job whose sandbox failed has status infra_error (never a 0 score). */
  evaluate(jobs: readonly EvalJob[], opts?: EvaluateOptions): Promise<EvalResult[]>;
  close(): Promise<void>;
  /** Timing counters, for backends that keep them (the local sandbox). */
  stats?(): SandboxStats;
  /**
   * What this backend keeps apart from the program's process (core/grading/verdicts.ts); absent: nothing (an assert
   * test's verdict is then the exit status of the process that ran the program).
   */
  verdictAbilities?(): VerdictAbilities;
}

/** Sandbox adapter failures (setup, configuration). Program failures are never errors. */
export class SandboxError extends RlpipeError {
  constructor(code: string, message: string, opts: { hint?: string; cause?: unknown; exitCode?: ExitCode } = {}) {
    super(code, message, opts);
    this.name = "SandboxError";
  }
}

/**
 * The backend's own capacity is taken (every sandbox of its share busy, its queue full): the request is refused
 * whole, before any of its programs runs. Servers answer it 429 with Retry-After (functions/router.ts).
 */
export class SandboxSaturated extends SandboxError {
  constructor(readonly retryAfterS: number, message: string) {
    super("sandbox_saturated", message, { hint: "retry after the time in Retry-After (the reward shim and rlpipe's tool do, with jitter)" });
    this.name = "SandboxSaturated";
  }
}
