// Durable checkpoints in object storage: the layout, the manifest that commits a step, and retention.
// A step exists for readers only when its manifest exists; the manifest is written after every file, and
// deleted before any file, so no reader ever sees half a checkpoint.
import { z } from "zod";

/** Object keys, relative to the store root. */
export const layout = {
  stepPrefix: (run: string, step: number) => `${run}/checkpoints/global_step_${step}/`,
  file: (run: string, step: number, rel: string) => `${run}/checkpoints/global_step_${step}/${rel}`,
  manifest: (run: string, step: number) => `${run}/checkpoints/global_step_${step}.manifest.json`,
  /**
   * Written before retention deletes a step (or instead of uploading one it would delete at once): the decision
   * is remembered, so a step verl still keeps on disk is never uploaded again.
   */
  retired: (run: string, step: number) => `${run}/checkpoints/global_step_${step}.retired.json`,
  /** Everything stored for a run. */
  runPrefix: (run: string) => `${run}/`,
  manifestsPrefix: (run: string) => `${run}/checkpoints/`,
  metricsPrefix: (run: string) => `${run}/metrics/`,
  /** A chunk of the metrics file: bytes [start, end) of one generation (verl rewrites the file on restart). */
  metricsChunk: (run: string, generation: string, start: number, end: number) =>
    `${run}/metrics/${generation}/${String(start).padStart(16, "0")}-${String(end).padStart(16, "0")}.jsonl`,
} as const;

const MANIFEST_RE = /(?:^|\/)checkpoints\/global_step_(\d+)\.manifest\.json$/;
const RETIRED_RE = /(?:^|\/)checkpoints\/global_step_(\d+)\.retired\.json$/;
const CHUNK_RE = /(?:^|\/)metrics\/([0-9a-f]{8,64})\/(\d{16})-(\d{16})\.jsonl$/;

export const RUN_NAME = /^[a-z0-9][a-z0-9._-]{0,127}$/;

export const ManifestFile = z.strictObject({
  path: z.string().min(1),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

export const Manifest = z.strictObject({
  format: z.literal("rlpipe-checkpoint/v1"),
  run: z.string().regex(RUN_NAME),
  step: z.number().int().nonnegative(),
  recipeHash: z.string().optional(),
  committedAt: z.string(),
  totalBytes: z.number().int().nonnegative(),
  files: z.array(ManifestFile),
});

export type Manifest = z.infer<typeof Manifest>;
export type ManifestFile = z.infer<typeof ManifestFile>;

export function stepOfManifestKey(key: string): number | undefined {
  const m = MANIFEST_RE.exec(key);
  return m === null ? undefined : Number(m[1]);
}

export function stepOfRetiredKey(key: string): number | undefined {
  const m = RETIRED_RE.exec(key);
  return m === null ? undefined : Number(m[1]);
}

export function parseChunkKey(key: string): { generation: string; start: number; end: number } | undefined {
  const m = CHUNK_RE.exec(key);
  return m === null ? undefined : { generation: m[1]!, start: Number(m[2]), end: Number(m[3]) };
}

/** A relative file path inside a step: no absolute paths, no `..`, no empty parts. */
export function safeRelativePath(p: string): boolean {
  if (p === "" || p.startsWith("/") || p.includes("\\") || p.includes("\0")) return false;
  return p.split("/").every((part) => part !== "" && part !== "." && part !== "..");
}

export function buildManifest(run: string, step: number, files: readonly ManifestFile[], opts: { recipeHash?: string; now: Date }): Manifest {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return {
    format: "rlpipe-checkpoint/v1",
    run,
    step,
    ...(opts.recipeHash === undefined ? {} : { recipeHash: opts.recipeHash }),
    committedAt: opts.now.toISOString(),
    totalBytes: sorted.reduce((n, f) => n + f.size, 0),
    files: sorted,
  };
}

export interface RetentionPolicy {
  /** Keep the newest N committed steps. */
  readonly keepLast?: number;
  /** Also keep every step divisible by M. */
  readonly keepEvery?: number;
}

/** What a retired-step marker records (for people reading the bucket; its existence is what counts). */
export function retiredRecord(step: number, policy: RetentionPolicy, now: Date, committed: boolean): string {
  return `${JSON.stringify({ format: "rlpipe-retired/v1", step, retiredAt: now.toISOString(), committed, policy })}\n`;
}

/** Steps to delete: everything not among the newest keepLast and not a multiple of keepEvery. */
export function stepsToDelete(committed: readonly number[], policy: RetentionPolicy): number[] {
  if (policy.keepLast === undefined && policy.keepEvery === undefined) return [];
  const sorted = [...new Set(committed)].sort((a, b) => a - b);
  const newest = new Set(sorted.slice(Math.max(0, sorted.length - (policy.keepLast ?? sorted.length))));
  return sorted.filter((s) => !newest.has(s) && !(policy.keepEvery !== undefined && s % policy.keepEvery === 0));
}

/** verl's latest_checkpointed_iteration.txt: the newest complete step, written after the step is saved. */
export function parseTracker(text: string): number | undefined {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : undefined;
}

/** The SHA-256 of a metrics file's first line names its generation (verl truncates the file on restart). */
export const GENERATION_HEX_CHARS = 16;
