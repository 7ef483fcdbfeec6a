// What the in-sandbox zygote (harness/zygote.py over harness/local_harness.py) reports, one JSON line per event.
export interface HarnessCase {
  kind: "stdio" | "call" | "assert"; stdin?: string; fnName?: string; args?: readonly unknown[]; testCode?: string; entryPoint?: string;
  files?: Record<string, string>; fetch?: string[];
  /** A Python assert case whose test runs apart from the program (asserts.py); its testCode is sent separately. */
  split?: boolean;
  /** A call whose arguments are source text (an assert taken apart): its index among the job's source calls. */
  source?: number;
  /** Its callee and arguments, for the source-call driver (not sent to the harness). */
  sourceCall?: { readonly callee: string; readonly argsSource: string };
}

export interface HarnessEvent {
  /**
   * ready: the zygote can take a program. built: a program is ready to run (compile: its compiler's result, for
   * languages that compile). case: one case ran. budget: the job's total budget ran out before or during case
   * `index`. tests: the harness is ready for the test codes of split assert cases. done: the program ended and the
   * zygote cleaned up after it.
   */
  event: "ready" | "built" | "compile" | "tests" | "case" | "budget" | "done";
  index?: number;
  exitCode: number | null;
  signal?: number | null;
  stdout: string;
  stderr: string;
  timeMs: number;
  timedOut: boolean;
  outputExceeded?: boolean;
  memoryExceeded?: boolean;
  /** Set here, not by the harness: the kernel's OOM killer ended a process of the program (its cgroup's limit). */
  programMemoryExceeded?: boolean;
  valueJson?: string;
  unavailable?: boolean;
  /** case: [fork, program, collect] milliseconds as the harness measured them. */
  t?: [number, number, number];
  /** done: what the clean-up after the program found left over or changed (empty: clean). */
  anomaly?: string[];
  /** done: how long the clean-up took. */
  cleanupMs?: number;
  /** case: the files it asked to fetch that existed after the run (path → base64). */
  files?: Record<string, string>;
}

/** Where a program's time went inside the sandbox (milliseconds; sums over its cases). */
export interface ProgramTiming {
  readonly buildMs: number;
  readonly forkMs: number;
  readonly programMs: number;
  readonly collectMs: number;
  readonly cleanupMs: number;
  /** From sending the job to the zygote until its "done" (or exit). */
  readonly wallMs: number;
}

export interface HarnessOutcome {
  compile?: HarnessEvent;
  cases: Map<number, HarnessEvent>;
  /** Index of a case that started and never finished (the program killed the harness, or the budget ran out). */
  interrupted?: number;
  budgetExhausted: boolean;
  /** The job stopped after a failing case (stopOnFirstFailure). */
  stoppedEarly?: boolean;
  infraError?: string;
  timing?: ProgramTiming;
  /** The harness stopped answering during case `stalled` (-1: during the build or the clean-up) and was ended. */
  stalled?: number;
  /** The program's processes together passed its memory limit while the interrupted case ran. */
  programMemoryExceeded?: boolean;
  /** What the clean-up after the program found (empty: clean). */
  anomaly?: readonly string[];
}
