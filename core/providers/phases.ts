// Normalized job phases: every provider's own states map onto one small set, and the raw state is kept beside it.
import { z } from "zod";

export const PHASES = ["QUEUED", "STARTING", "RUNNING", "STOPPING", "SUCCEEDED", "FAILED", "STOPPED", "UNKNOWN"] as const;
export const Phase = z.enum(PHASES);
export type Phase = z.infer<typeof Phase>;

export const TERMINAL_PHASES: ReadonlySet<Phase> = new Set<Phase>(["SUCCEEDED", "FAILED", "STOPPED"]);

export function isTerminal(phase: Phase): boolean {
  return TERMINAL_PHASES.has(phase);
}

/** A job's state as a provider reports it: the normalized phase beside the provider's own. */
export interface JobStatus {
  readonly phase: Phase;
  /** The provider's own state, unchanged. */
  readonly rawPhase: string;
  readonly message?: string;
  /** ISO 8601. */
  readonly startedAt?: string;
  readonly endedAt?: string;
  readonly exitCode?: number;
}

export type PhaseSource = "modelarts" | "tione" | "ray" | "slurm" | "local";

// Sources: ModelArts status.phase, TI-ONE TrainingTaskDetail.Status, Ray JobStatus, Slurm job states (squeue/sacct
// long names), and rlpipe's own local runner. Anything not listed is UNKNOWN, with the raw value kept.
const TABLES: Readonly<Record<PhaseSource, Readonly<Record<string, Phase>>>> = {
  modelarts: {
    Creating: "QUEUED", Pending: "QUEUED", Running: "RUNNING", Terminating: "STOPPING",
    Completed: "SUCCEEDED", Failed: "FAILED", Abnormal: "FAILED", Terminated: "STOPPED",
  },
  tione: {
    SUBMITTING: "QUEUED", PENDING: "QUEUED", STARTING: "STARTING", RUNNING: "RUNNING", STOPPING: "STOPPING",
    SUCCEED: "SUCCEEDED", FAILED: "FAILED", SUBMIT_FAILED: "FAILED", STOPPED: "STOPPED",
  },
  ray: { PENDING: "QUEUED", RUNNING: "RUNNING", SUCCEEDED: "SUCCEEDED", FAILED: "FAILED", STOPPED: "STOPPED" },
  slurm: {
    PENDING: "QUEUED", REQUEUED: "QUEUED", REQUEUE_HOLD: "QUEUED", REQUEUE_FED: "QUEUED", RESV_DEL_HOLD: "QUEUED",
    CONFIGURING: "STARTING", RUNNING: "RUNNING", COMPLETING: "STOPPING", SIGNALING: "STOPPING", STAGE_OUT: "STOPPING",
    COMPLETED: "SUCCEEDED", CANCELLED: "STOPPED",
    FAILED: "FAILED", TIMEOUT: "FAILED", OUT_OF_MEMORY: "FAILED", NODE_FAIL: "FAILED", BOOT_FAIL: "FAILED",
    DEADLINE: "FAILED", PREEMPTED: "FAILED",
  },
  local: { STARTING: "STARTING", RUNNING: "RUNNING", STOPPING: "STOPPING", SUCCEEDED: "SUCCEEDED", FAILED: "FAILED", STOPPED: "STOPPED" },
};

/** The normalized phase of a provider's raw state (Slurm's "CANCELLED by 0" reads as CANCELLED). */
export function normalizePhase(source: PhaseSource, raw: string): Phase {
  const key = source === "slurm" ? raw.trim().split(/[\s+]/)[0]!.toUpperCase() : raw.trim();
  return TABLES[source][key] ?? "UNKNOWN";
}
