// What the in-sandbox harness (harness/local_harness.py, and the warm zygote built on it) reports, one JSON line per event.
export interface HarnessCase { kind: "stdio" | "call" | "assert"; stdin?: string; fnName?: string; args?: readonly unknown[]; testCode?: string; entryPoint?: string; files?: Record<string, string> }

export interface HarnessEvent {
  event: "compile" | "start" | "case" | "done";
  index?: number;
  exitCode: number | null;
  signal?: number | null;
  stdout: string;
  stderr: string;
  timeMs: number;
  timedOut: boolean;
  outputExceeded?: boolean;
  memoryExceeded?: boolean;
  valueJson?: string;
  unavailable?: boolean;
  /** warm zygote, event "done": what the clean-up after the program found left over (empty: clean). */
  anomaly?: string[];
}

export interface HarnessOutcome {
  compile?: HarnessEvent;
  cases: Map<number, HarnessEvent>;
  /** Index of a case that started and never finished (the program killed the harness, or the budget ran out). */
  interrupted?: number;
  budgetExhausted: boolean;
  /** The harness was stopped on purpose after a failing case (stopOnFirstFailure). */
  stoppedEarly?: boolean;
  infraError?: string;
}
