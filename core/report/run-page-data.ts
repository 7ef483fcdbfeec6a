// What a run's page shows (`rlpipe report <run>`), gathered by the command from the run record, the provider, the
// run's store and the cost comparison; rendered by core/report/run-page.ts. Every part that is read from somewhere
// else can fail on its own: it is a Readout, and the page says why it is missing instead of drawing it empty.
import type { CostReport } from "../cost/types.js";
import type { JobStatus, Phase } from "../providers/phases.js";

/** A part of the page read from elsewhere: its value, or why it could not be read (a sentence for the reader). */
export type Readout<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly why: string };

/** The run's state as its provider reports it. */
export type RunPageStatus = JobStatus;

export interface StoredCheckpoint {
  readonly step: number;
  readonly files: number;
  readonly bytes: number;
  readonly committedAt: string;
}

/** One metric as [step, value] points in step order. */
export interface MetricSeries {
  readonly name: string;
  readonly points: readonly (readonly [number, number])[];
}

/** What the store keeps of one run: the job itself, or one of its stages (`<job>.<stage>`). */
export interface StoredRun {
  readonly run: string;
  readonly series: readonly MetricSeries[];
  readonly checkpoints: readonly StoredCheckpoint[];
}

export interface RunPageOutputs {
  /** The store's URI (no credentials in it: they come from the environment). */
  readonly store: string;
  /** The job and its stage runs the store holds metrics or checkpoints of, in name order. */
  readonly runs: readonly StoredRun[];
}

export interface RunPageLogs {
  /** The last lines of the job's log, already redacted. */
  readonly lines: readonly string[];
  /** How many lines the log had in all. */
  readonly totalLines: number;
}

export interface RunPageCost {
  /** The estimate with `actual` filled (functions/run-cost.ts costOfRun). */
  readonly report: CostReport;
  readonly estimateFrom: "recorded" | "recomputed";
}

export interface RunPageData {
  readonly schema: "rlpipe.run-page";
  readonly version: 1;
  /** When the data was gathered (ISO 8601): the page's "now" (a running job's duration so far). */
  readonly generatedAt: string;
  readonly run: string;
  readonly provider: string;
  readonly jobId: string;
  readonly region?: string;
  readonly recipe: { readonly name: string; readonly file: string; readonly hash: string };
  /** When the job was submitted (the run record's creation). */
  readonly submittedAt: string;
  /** The phase rlpipe last recorded, shown when the provider cannot be asked now. */
  readonly lastSeen?: { readonly phase: Phase; readonly rawPhase: string; readonly at: string; readonly message?: string };
  /** Who gathered it: rlpipe report (default) or the job's sync sidecar, which cannot ask the provider. */
  readonly writtenBy?: "report" | "job";
  readonly status: Readout<RunPageStatus>;
  readonly outputs: Readout<RunPageOutputs>;
  readonly cost: Readout<RunPageCost>;
  readonly logs: Readout<RunPageLogs>;
}
