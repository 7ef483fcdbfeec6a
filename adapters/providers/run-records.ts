// Run records: one per deployed job, how `rlpipe status|logs|stop|list` and the console function find a job again.
// The CLI keeps them in .rlpipe/runs/<name>.json, written atomically (temp file, fsync, rename) so a crash never
// leaves a half-written record; a function, which has no disk to keep, in its object store (functions/run-record-store.ts).
// Both sit behind RunRecordStore.
import { mkdir, open, readFile, readdir, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { RlpipeError } from "../../core/errors.js";
import { PriceAssumption } from "../../core/prices.js";
import { Phase } from "../../core/providers/phases.js";
import { PROVIDERS } from "../../core/recipe/schema.js";

const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

export const RunRecord = z.object({
  version: z.literal(1),
  name: z.string().regex(NAME),
  provider: z.enum(PROVIDERS),
  /** How to find the job again (a JobRef). */
  ref: z.object({
    id: z.string(),
    region: z.string().optional(),
    endpoint: z.string().optional(),
    extra: z.record(z.string(), z.string()).readonly().optional(),
  }).readonly(),
  recipe: z.object({ name: z.string(), file: z.string(), hash: z.string() }).readonly(),
  /** The recipe as deployed (recipes hold no secrets): status, logs and stop use its targets, not today's file. */
  recipeData: z.unknown(),
  /** The provider request as planned (api, body, bundle location, unverified fields). */
  request: z.unknown(),
  outcome: z.enum(["created", "existing", "recovered"]),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastStatus: z.object({ phase: Phase, rawPhase: z.string(), at: z.string(), message: z.string().optional() }).readonly().optional(),
  /** The rates assumed for this run at deploy (core/prices.ts): the recipe's prices, else public reference figures. */
  prices: z.array(PriceAssumption).readonly().default([]),
  /**
   * The cost estimate made at deploy (a CostReport, schema rlpipe.cost-report): `rlpipe cost --run` compares the
   * run's actual usage with it at the rates it recorded. Records written before issue 11 have none (the estimate is
   * then made again from recipeData with the prices above). Kept opaque here: core/cost owns the shape.
   */
  cost: z.looseObject({ schema: z.literal("rlpipe.cost-report"), version: z.number() }).optional(),
  /** Where the job keeps checkpoints, metrics and results (the plan's store, interpolated): its stages are the runs
   *  `<name>.<stage>` there, so `rlpipe checkpoints|restore|metrics <name>.<stage>` need no --store. */
  store: z.string().optional(),
}).readonly();
export type RunRecord = z.infer<typeof RunRecord>;

export class RunRecordError extends RlpipeError {}

/** Where run records are kept: a directory (the CLI) or an object store (a function). */
export interface RunRecordStore {
  /** Where, for messages: "this directory", "s3://bucket/prefix/runs". */
  readonly label: string;
  /** The record of run `name`; unknown_run (exit 2) when there is none. */
  read(name: string): Promise<RunRecord>;
  /** Replace the record of run `record.name` as a whole (a reader sees the old record or the new one). */
  write(record: RunRecord): Promise<void>;
  /** Every record, newest first; unreadable ones are reported, not skipped silently. */
  list(): Promise<{ records: RunRecord[]; problems: string[] }>;
  /** See readStartedAttempt. */
  readStartedAttempt(base: string): Promise<number>;
  writeStartedAttempt(base: string, n: number): Promise<void>;
}

/** The CLI's run records: files in `dir` (.rlpipe/runs under the current directory). */
export function dirRunRecords(dir: string, label = "this directory"): RunRecordStore {
  return {
    label,
    read: (name) => readRunRecord(dir, name),
    write: (record) => writeRunRecord(dir, record),
    list: () => listRunRecords(dir),
    readStartedAttempt: (base) => readStartedAttempt(dir, base),
    writeStartedAttempt: (base, n) => writeStartedAttempt(dir, base, n),
  };
}

/** Check a run name (also a file or object name): `<recipe>-<8 hex digits>[-r<k>]`. */
export function checkRunName(name: string): string {
  if (!NAME.test(name)) throw new RunRecordError("bad_run_name", `not a run name: ${JSON.stringify(name)}`, { exitCode: 2, hint: "run names look like <recipe>-<8 hex digits>; see rlpipe list" });
  return name;
}

/** A record read back from its bytes, or a bad_run_record error (exit 2) naming `where`. */
export function parseRunRecord(raw: string, where: string): RunRecord {
  let json: unknown;
  // A damaged record is bad local input (exit 2), not a provider failure.
  const damaged = { exitCode: 2, hint: "restore the file from a backup, or remove it to forget the run (the job itself is not affected)" } as const;
  try { json = JSON.parse(raw); } catch { throw new RunRecordError("bad_run_record", `${where} is not valid JSON`, damaged); }
  const parsed = RunRecord.safeParse(json);
  if (!parsed.success) throw new RunRecordError("bad_run_record", `${where}: ${parsed.error.issues[0]?.path.join(".") ?? ""} ${parsed.error.issues[0]?.message ?? ""}`, damaged);
  return parsed.data;
}

/** Newest first, ties by name. */
export function sortRunRecords(records: RunRecord[]): RunRecord[] {
  return records.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : a.name.localeCompare(b.name)));
}

export function runsDir(root: string): string {
  return join(root, ".rlpipe", "runs");
}

function recordPath(dir: string, name: string): string {
  return join(dir, `${checkRunName(name)}.json`);
}

export async function writeRunRecord(dir: string, record: RunRecord): Promise<void> {
  const checked = RunRecord.parse(record);
  await mkdir(dir, { recursive: true });
  const path = recordPath(dir, checked.name);
  const tmp = `${path}.tmp-${process.pid}-${Date.now()}`;
  const fh = await open(tmp, "w", 0o600);
  try {
    await fh.writeFile(`${JSON.stringify(checked, null, 2)}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await rename(tmp, path);
  } catch (e) {
    await rm(tmp, { force: true });
    throw e;
  }
}

export async function readRunRecord(dir: string, name: string): Promise<RunRecord> {
  const path = recordPath(dir, name);
  let raw: string;
  try {
    raw = await readFile(path, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") throw new RunRecordError("unknown_run", `no run named ${name} in ${dir}`, { exitCode: 2, hint: "rlpipe list shows the runs deployed from this directory" });
    throw e;
  }
  return parseRunRecord(raw, path);
}

/** Every record in `dir`, newest first; unreadable files are reported, not skipped silently. */
export async function listRunRecords(dir: string): Promise<{ records: RunRecord[]; problems: string[] }> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return { records: [], problems: [] };
    throw e;
  }
  const records: RunRecord[] = [];
  const problems: string[] = [];
  for (const n of names.sort()) {
    try { records.push(await readRunRecord(dir, n)); } catch (e) { problems.push((e as Error).message); }
  }
  return { records: sortRunRecords(records), problems };
}

// ------------------------------------------------------------------------------------------ attempts (deploy --new)

function attemptPath(dir: string, base: string): string {
  return join(dir, `${checkRunName(base)}.attempt`);
}

/** An attempt number as stored, or a bad_run_record error naming `where`. */
export function parseStartedAttempt(raw: string, where: string): number {
  const n = Number(raw.trim());
  if (!Number.isSafeInteger(n) || n < 1) throw new RunRecordError("bad_run_record", `${where} does not hold an attempt number`, { exitCode: 2, hint: "remove it; a deploy --new will number the next run after the run records" });
  return n;
}

/**
 * The highest attempt of job `base` whose create was started from this directory (written before the create, so
 * a `deploy --new` repeated after a lost reply reuses it), or 0 when none was recorded.
 */
export async function readStartedAttempt(dir: string, base: string): Promise<number> {
  let raw: string;
  try { raw = await readFile(attemptPath(dir, base), "utf8"); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw e;
  }
  return parseStartedAttempt(raw, attemptPath(dir, base));
}

/** Record (atomically) that attempt `n` of job `base` is about to be created. */
export async function writeStartedAttempt(dir: string, base: string, n: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const path = attemptPath(dir, base);
  const tmp = `${path}.tmp-${process.pid}-${Date.now()}`;
  const fh = await open(tmp, "w", 0o600);
  try {
    await fh.writeFile(`${n}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, path);
}

/** The attempt a run name is of job `base` (1 for the base name, k for <base>-r<k>), or undefined. */
export function attemptOf(base: string, name: string): number | undefined {
  if (name === base) return 1;
  if (!name.startsWith(`${base}-r`)) return undefined;
  const k = name.slice(base.length + 2);
  return /^[1-9]\d{0,5}$/.test(k) && Number(k) >= 2 ? Number(k) : undefined;
}
