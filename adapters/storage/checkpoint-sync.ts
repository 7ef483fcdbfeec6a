// Checkpoint sync with durable commits: a step verl has finished (latest_checkpointed_iteration.txt) is uploaded
// file by file, then its manifest (files, sizes, SHA-256s, step, run, recipe hash) is written last. Readers see
// only steps with a manifest. Retention remembers what it retired (a marker written before the manifest is
// deleted), so a step verl still keeps on disk is never uploaded again. An interrupted step resumes: files already
// stored with the same size and checksum are not sent again. Restore verifies every file, writes nothing in place
// until all of them are verified, and refuses a directory that holds anything unless forced.
import { randomBytes } from "node:crypto";
import { mkdir, readFile, readdir, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import { dirname, join, relative, sep } from "node:path";
import {
  type Manifest, Manifest as ManifestSchema, type ManifestFile, type RetentionPolicy, buildManifest, layout, parseTracker, retiredRecord, safeRelativePath,
  stepOfManifestKey, stepOfRetiredKey, stepsToDelete,
} from "../../core/checkpoints.js";
import { Semaphore } from "../../core/util/semaphore.js";
import { DEFAULT_PART_BYTES, type ObjectInfo, type ObjectStore, StorageError, fsError } from "./object-store.js";

/** Progress of one step's transfer, for a meter: its size, then bytes as they move (negative: to be sent again). */
export type TransferEvent =
  | { readonly kind: "start"; readonly direction: "upload" | "download"; readonly step: number; readonly totalBytes: number }
  | { readonly kind: "bytes"; readonly step: number; readonly bytes: number }
  | { readonly kind: "end"; readonly step: number; readonly ok: boolean };

export interface CheckpointSyncOptions {
  readonly run: string;
  readonly store: ObjectStore;
  readonly recipeHash?: string;
  readonly retention?: RetentionPolicy;
  readonly partSizeBytes?: number;
  /** Parts in flight across all files of a step (default 8); bounds memory to concurrency × part size. */
  readonly concurrency?: number;
  /** Files uploaded at once (default 4; many small files benefit). */
  readonly fileConcurrency?: number;
  readonly now?: () => Date;
  readonly log?: (line: string) => void;
  readonly onTransfer?: (e: TransferEvent) => void;
  readonly signal?: AbortSignal;
}

export interface SyncReport {
  readonly committed: readonly number[];
  readonly alreadyCommitted: readonly number[];
  readonly deleted: readonly number[];
  /** Finished local steps not uploaded because retention retired them (now or earlier). */
  readonly retired: readonly number[];
  readonly bytesUploaded: number;
  /** Bytes of files an interrupted earlier pass had already stored (not sent again). */
  readonly bytesReused: number;
}

export interface RestoreOptions {
  /** Restore into a directory that is not empty: replaces global_step_N and the tracker there. */
  readonly force?: boolean;
}

export interface RestoreReport {
  readonly manifest: Manifest;
  /** The tracker's step before the restore, when the directory had one. */
  readonly previousTracker?: number;
  /** global_step_N was already in the directory and has been replaced. */
  readonly replacedStep: boolean;
  /** Steps newer than the restored one left in the directory (verl resumes from the tracker, not from them). */
  readonly newerSteps: readonly number[];
}

const STEP_DIR = /^global_step_(\d+)$/;
export const TRACKER = "latest_checkpointed_iteration.txt";
/** A restore's staging directory inside the target (same file system, so moving it into place is a rename). */
const STAGING = ".rlpipe-restore-";

/** Regular files under `dir`, as sorted relative POSIX paths. */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const full = join(d, e.name);
      if (e.isDirectory()) await walk(full);
      else if (e.isFile()) out.push(relative(dir, full).split(sep).join("/"));
    }
  };
  await walk(dir);
  return out.sort();
}

/** global_step_N directories in `dir`, ascending. */
async function localSteps(dir: string): Promise<number[]> {
  return (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => STEP_DIR.exec(e.name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

export class CheckpointSync {
  constructor(private readonly opts: CheckpointSyncOptions) {}

  private log(line: string): void {
    this.opts.log?.(line);
  }

  private get signalOpt(): { signal?: AbortSignal } {
    return this.opts.signal === undefined ? {} : { signal: this.opts.signal };
  }

  /** Committed and retired steps, from one listing of the run's checkpoints. */
  private async ledger(): Promise<{ committed: number[]; retired: Set<number> }> {
    const objects = await this.opts.store.list(layout.manifestsPrefix(this.opts.run), this.opts.signal);
    const committed = objects.map((o) => stepOfManifestKey(o.key)).filter((s): s is number => s !== undefined).sort((a, b) => a - b);
    const retired = new Set(objects.map((o) => stepOfRetiredKey(o.key)).filter((s): s is number => s !== undefined));
    return { committed, retired };
  }

  /** Steps with a manifest, ascending. */
  async committedSteps(): Promise<number[]> {
    return (await this.ledger()).committed;
  }

  /** Steps retention has retired (deleted, or never uploaded because it would have deleted them), ascending. */
  async retiredSteps(): Promise<number[]> {
    return [...(await this.ledger()).retired].sort((a, b) => a - b);
  }

  /** Whether the store holds anything at all for this run (checkpoints, metrics, artifacts). */
  async runExists(): Promise<boolean> {
    return (await this.opts.store.list(layout.runPrefix(this.opts.run), this.opts.signal)).length > 0;
  }

  async manifest(step: number): Promise<Manifest> {
    const raw = await this.opts.store.get(layout.manifest(this.opts.run, step), undefined, this.opts.signal);
    let json: unknown;
    try { json = JSON.parse(raw.toString("utf8")); } catch { json = undefined; }
    const parsed = ManifestSchema.safeParse(json);
    if (!parsed.success) throw new StorageError("bad_manifest", `manifest of ${this.opts.run} step ${step} is malformed: ${parsed.error.issues[0]?.message ?? ""}`);
    const unsafe = parsed.data.files.find((f) => !safeRelativePath(f.path));
    if (unsafe !== undefined) throw new StorageError("bad_manifest", `manifest of ${this.opts.run} step ${step} names a path outside the step: ${JSON.stringify(unsafe.path)}`);
    return parsed.data;
  }

  /**
   * Upload every finished step of a verl checkpoint directory that is neither committed nor retired, then apply
   * retention. A step retention would delete at once (older than the newest K it keeps) is retired without
   * being uploaded.
   */
  async syncDir(dir: string): Promise<SyncReport> {
    try {
      return await this.syncDirOnce(dir);
    } catch (e) {
      throw fsError(e, dir); // an unreadable checkpoint directory is the user's to fix, not a bug
    }
  }

  private async syncDirOnce(dir: string): Promise<SyncReport> {
    let latest: number | undefined;
    try {
      latest = parseTracker(await readFile(join(dir, TRACKER), "utf8"));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    const { committed: committedBefore, retired: retiredBefore } = await this.ledger();
    const committed: number[] = [];
    const retiredNow: number[] = [];
    let bytesUploaded = 0;
    let bytesReused = 0;
    let skippedRetired: number[] = [];
    if (latest !== undefined) {
      const finished = (await localSteps(dir)).filter((s) => s <= latest!); // a step past the tracker is still being written
      skippedRetired = finished.filter((s) => retiredBefore.has(s) && !committedBefore.includes(s));
      const todo = finished.filter((s) => !committedBefore.includes(s) && !retiredBefore.has(s));
      const policy = this.opts.retention;
      const committedNow = [...committedBefore];
      // Newest first: the latest checkpoint is safe soonest, and an older step is judged against the steps that
      // really were committed — one that retention would delete right away is retired without being uploaded.
      for (const step of [...todo].reverse()) {
        if (policy !== undefined && stepsToDelete([...committedNow, step], policy).includes(step)) {
          await this.retire(step, false);
          retiredNow.push(step);
          this.log(`step ${step}: not uploaded, retention (${describePolicy(policy)}) keeps newer steps`);
          continue;
        }
        try {
          const r = await this.commitStep(join(dir, `global_step_${step}`), step);
          committed.push(step);
          committedNow.push(step);
          bytesUploaded += r.manifest.totalBytes - r.bytesReused;
          bytesReused += r.bytesReused;
        } catch (e) {
          // verl may delete an old step (max_*_ckpt_to_keep) while we upload it: skip it, commit the rest.
          if ((e as NodeJS.ErrnoException).code === "ENOENT") { this.log(`step ${step}: removed locally during upload; not committed`); continue; }
          throw e;
        }
      }
    }
    const deleted = await this.applyRetention();
    return {
      committed: committed.sort((a, b) => a - b), alreadyCommitted: committedBefore, deleted, retired: [...skippedRetired, ...retiredNow].sort((a, b) => a - b), bytesUploaded, bytesReused,
    };
  }

  /**
   * Upload one step's files, then write its manifest (the commit). Files an interrupted earlier attempt already
   * stored — same size, and a checksum the store kept matches the local file's — are not sent again; one listing
   * of the step's prefix finds them. Multipart files go one after another (their parts in parallel), so each
   * completes as early as possible — less to redo after an interruption, and the server rarely assembles several
   * large files at once — the next starting as soon as the previous one has handed out its last part, so the pipe
   * does not drain at file boundaries (measured: 10–15% faster with 4 shards). Small files go `fileConcurrency`
   * at a time beside them. Parts in flight are bounded across both lanes by one set of part slots.
   */
  async commitStep(stepDir: string, step: number): Promise<{ manifest: Manifest; bytesReused: number }> {
    const { store, run } = this.opts;
    const files = await listFiles(stepDir);
    const sizes = await Promise.all(files.map(async (rel) => (await stat(join(stepDir, ...rel.split("/")))).size));
    const stored = new Map<string, ObjectInfo>((await store.list(layout.stepPrefix(run, step), this.opts.signal)).map((o) => [o.key, o]));
    const multipartFrom = 2 * (this.opts.partSizeBytes ?? DEFAULT_PART_BYTES);
    const smallLane = new Semaphore(this.opts.fileConcurrency ?? 4);
    const largeLane = new Semaphore(1);
    const partSlots = new Semaphore(this.opts.concurrency ?? 8);
    const started = Date.now();
    const tell = this.opts.onTransfer;
    tell?.({ kind: "start", direction: "upload", step, totalBytes: sizes.reduce((a, b) => a + b, 0) });
    let bytesReused = 0;
    let ok = false;
    try {
      const entries: ManifestFile[] = await Promise.all(files.map(async (rel, i) => {
        const large = sizes[i]! >= multipartFrom;
        const key = layout.file(run, step, rel);
        const path = join(stepDir, ...rel.split("/"));
        const release = await (large ? largeLane : smallLane).acquire(this.opts.signal);
        let held = true;
        const free = () => { if (held) { held = false; release(); } };
        try {
          const listed = stored.get(key);
          if (listed !== undefined && listed.size === sizes[i]) {
            const copy = await store.storedCopy(key, path, { listed, ...(this.opts.partSizeBytes === undefined ? {} : { partSizeBytes: this.opts.partSizeBytes }), ...this.signalOpt });
            if (copy !== undefined) {
              bytesReused += copy.size;
              tell?.({ kind: "bytes", step, bytes: copy.size });
              return { path: rel, size: copy.size, sha256: copy.sha256 };
            }
          }
          const r = await store.putFile(key, path, {
            ...(this.opts.partSizeBytes === undefined ? {} : { partSizeBytes: this.opts.partSizeBytes }),
            partSlots,
            ...this.signalOpt,
            ...(large ? { onPartsIssued: free } : {}),
            ...(tell === undefined ? {} : { onBytes: (bytes: number) => tell({ kind: "bytes", step, bytes }) }),
          });
          const now = await stat(path);
          if (now.size !== r.size) throw new StorageError("file_changed", `${rel} changed size while it was uploaded`);
          bytesReused += r.bytesReused; // the parts an interrupted upload had stored
          return { path: rel, size: r.size, sha256: r.sha256 };
        } finally {
          free();
        }
      }));
      const manifest = buildManifest(run, step, entries, { ...(this.opts.recipeHash === undefined ? {} : { recipeHash: this.opts.recipeHash }), now: (this.opts.now ?? (() => new Date()))() });
      await store.putBytes(layout.manifest(run, step), `${JSON.stringify(manifest, null, 2)}\n`, { contentType: "application/json", ...this.signalOpt });
      const reused = bytesReused > 0 ? ` (${(bytesReused / 2 ** 20).toFixed(1)} MiB were already stored)` : "";
      this.log(`step ${step}: committed ${entries.length} files, ${(manifest.totalBytes / 2 ** 20).toFixed(1)} MiB in ${((Date.now() - started) / 1000).toFixed(1)} s${reused}`);
      ok = true;
      return { manifest, bytesReused };
    } finally {
      tell?.({ kind: "end", step, ok });
    }
  }

  /** Remember that retention retired `step` (before anything of it is deleted). */
  private async retire(step: number, committed: boolean): Promise<void> {
    const policy = this.opts.retention ?? {};
    await this.opts.store.putBytes(layout.retired(this.opts.run, step), retiredRecord(step, policy, (this.opts.now ?? (() => new Date()))(), committed), { contentType: "application/json", ...this.signalOpt });
  }

  /**
   * Delete steps the policy drops: first the retired marker (the decision is remembered), then the manifest (the
   * step disappears for readers), then its files.
   */
  async applyRetention(): Promise<number[]> {
    const policy = this.opts.retention;
    if (policy === undefined) return [];
    const doomed = stepsToDelete(await this.committedSteps(), policy);
    for (const step of doomed) {
      await this.retire(step, true);
      await this.opts.store.delete([layout.manifest(this.opts.run, step)], this.opts.signal);
      const files = await this.opts.store.list(layout.stepPrefix(this.opts.run, step), this.opts.signal);
      await this.opts.store.delete(files.map((f) => f.key), this.opts.signal);
      this.log(`step ${step}: deleted by retention`);
    }
    return doomed;
  }

  /**
   * Download a committed step (the newest when `step` is undefined) into `dir` in the layout verl resumes from
   * (global_step_N/… plus latest_checkpointed_iteration.txt), verifying every file's SHA-256. Files land in a
   * staging directory inside `dir` and the step is moved into place only once all of them are verified: a failure
   * leaves `dir` as it was. A directory holding anything is refused unless `force` (then global_step_N is replaced
   * as a whole — no file of what was there stays inside it — and the tracker names the restored step).
   */
  async restore(dir: string, step?: number, opts: RestoreOptions = {}): Promise<RestoreReport> {
    try {
      return await this.restoreOnce(dir, step, opts);
    } catch (e) {
      throw fsError(e, dir);
    }
  }

  private async restoreOnce(dir: string, step: number | undefined, opts: RestoreOptions): Promise<RestoreReport> {
    const { run, store } = this.opts;
    const steps = await this.committedSteps();
    const chosen = step ?? steps[steps.length - 1];
    if (chosen === undefined) {
      if (!(await this.runExists())) throw unknownRun(run, store.url);
      throw new StorageError("no_checkpoints", `run ${run} has no committed checkpoint in ${store.url}`, { exitCode: 2, hint: "a step appears once `rlpipe sync` (or the job's sidecar) has committed it" });
    }
    if (!steps.includes(chosen)) {
      throw new StorageError("step_not_committed", `run ${run} has no committed step ${chosen}`, { exitCode: 2, hint: steps.length > 0 ? `committed steps: ${steps.join(", ")}` : "nothing is committed yet" });
    }
    const m = await this.manifest(chosen);
    const created = await makeRestoreDir(dir);
    try {
      return await this.restoreInto(dir, m, opts);
    } catch (e) {
      // DIR is left as it was: a directory this restore made goes again (a failure left nothing inside it).
      if (created !== undefined) await removeMadeDirs(dir, created);
      throw e;
    }
  }

  private async restoreInto(dir: string, m: Manifest, opts: RestoreOptions): Promise<RestoreReport> {
    const { run, store } = this.opts;
    const chosen = m.step;
    await removeAbandonedStaging(dir);
    const present = (await readdir(dir)).filter((n) => !n.startsWith(STAGING)).sort();
    if (present.length > 0 && opts.force !== true) {
      const shown = present.slice(0, 5).join(", ") + (present.length > 5 ? `, … (${present.length} entries)` : "");
      throw new StorageError("restore_dir_not_empty", `${dir} is not empty (${shown}); restoring there would mix another run's files with step ${chosen}`, {
        exitCode: 2, hint: `restore into an empty or new directory, or pass --force to replace global_step_${chosen} and ${TRACKER} there (other steps are left alone)`,
      });
    }
    const staging = join(dir, `${STAGING}${process.pid}-${randomBytes(4).toString("hex")}`);
    const stepName = `global_step_${chosen}`;
    // The first failure stops the other downloads; the staging directory goes only once none is writing into it.
    const stop = new AbortController();
    const onAbort = () => stop.abort(this.opts.signal?.reason);
    if (this.opts.signal?.aborted === true) onAbort();
    this.opts.signal?.addEventListener("abort", onAbort, { once: true });
    const tell = this.opts.onTransfer;
    tell?.({ kind: "start", direction: "download", step: chosen, totalBytes: m.totalBytes });
    let ok = false;
    try {
      await mkdir(join(staging, stepName), { recursive: true });
      const slots = new Semaphore(this.opts.fileConcurrency ?? 4);
      let firstError: unknown;
      await Promise.allSettled(m.files.map((f) => slots.run(() => store.download(layout.file(run, chosen, f.path), join(staging, stepName, ...f.path.split("/")), {
        sha256: f.sha256, signal: stop.signal,
        ...(tell === undefined ? {} : { onBytes: (bytes: number) => tell({ kind: "bytes", step: chosen, bytes }) }),
      }), stop.signal).catch((e: unknown) => { if (firstError === undefined) { firstError = e; stop.abort(e); } })));
      // Interrupted (Ctrl-C): the caller's reason, not the abort errors of the downloads it stopped.
      if (this.opts.signal?.aborted === true) throw this.opts.signal.reason;
      if (firstError !== undefined) throw firstError;
      // Everything verified: move the step into place (replacing what was there as a whole), then the tracker.
      const target = join(dir, stepName);
      let replacedStep = false;
      try {
        await rename(target, join(staging, "replaced"));
        replacedStep = true;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
      }
      await rename(join(staging, stepName), target);
      let previousTracker: number | undefined;
      try { previousTracker = parseTracker(await readFile(join(dir, TRACKER), "utf8")); } catch { previousTracker = undefined; }
      await writeFile(join(staging, TRACKER), String(chosen));
      await rename(join(staging, TRACKER), join(dir, TRACKER));
      const newerSteps = (await localSteps(dir)).filter((s) => s > chosen);
      ok = true;
      return { manifest: m, ...(previousTracker === undefined ? {} : { previousTracker }), replacedStep, newerSteps };
    } finally {
      this.opts.signal?.removeEventListener("abort", onAbort);
      await rm(staging, { recursive: true, force: true });
      tell?.({ kind: "end", step: chosen, ok });
    }
  }
}

/**
 * `no run named X in <store>`: exit 2, the input names something that is not there. `known`: the runs the store
 * does hold of that job (its stages), named in the hint.
 */
export function unknownRun(run: string, url: string, known: readonly string[] = []): StorageError {
  return new StorageError("unknown_run", `no run named ${run} in ${url}`, {
    exitCode: 2,
    hint: known.length > 0 ? `the store holds these runs of that job (a deployed job keeps each stage as a run <job>.<stage>): ${known.join(", ")}`
      : "check the run name (`rlpipe list` shows the runs deployed from here) and the store (--store or RLPIPE_STORE)",
  });
}

/**
 * The runs a deployed job's stages are kept as (`<job>.<stage>`; `rlpipe list` shows the job), sorted. One listing
 * of the `<job>.` prefix: only a job name the store holds no run for costs it.
 */
export async function stageRuns(store: ObjectStore, job: string, signal?: AbortSignal): Promise<string[]> {
  const names = new Set<string>();
  for (const o of await store.list(`${job}.`, signal)) {
    const run = o.key.slice(0, Math.max(0, o.key.indexOf("/")));
    if (run.length > job.length + 1 && !run.slice(job.length + 1).includes(".")) names.add(run);
  }
  return [...names].sort();
}

function describePolicy(p: RetentionPolicy): string {
  return [p.keepLast === undefined ? "" : `keep-last ${p.keepLast}`, p.keepEvery === undefined ? "" : `keep-every ${p.keepEvery}`].filter((x) => x !== "").join(", ");
}

/**
 * The directory a restore goes into, made when new: returns the first directory made (undefined when DIR existed).
 * A path that is a file is the user's to fix (exit 2), not mkdir's EEXIST.
 */
async function makeRestoreDir(dir: string): Promise<string | undefined> {
  try {
    if (!(await stat(dir)).isDirectory()) {
      throw new StorageError("restore_dir_not_directory", `${dir} is a file, not a directory`, {
        exitCode: 2, hint: "restore into an empty or new directory: global_step_N and latest_checkpointed_iteration.txt go inside it",
      });
    }
    return undefined;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  return mkdir(dir, { recursive: true });
}

/** Remove DIR and the parents up to `made` that a restore made, each only while empty. */
async function removeMadeDirs(dir: string, made: string): Promise<void> {
  for (let p = dir; ; p = dirname(p)) {
    try { await rmdir(p); } catch { return; }
    if (p === made || dirname(p) === p) return;
  }
}

/** Staging directories of restores whose process is gone (killed mid-restore). */
async function removeAbandonedStaging(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!name.startsWith(STAGING)) continue;
    const pid = Number(/^\.rlpipe-restore-(\d+)-/.exec(name)?.[1]);
    let alive = false;
    try { process.kill(pid, 0); alive = true; } catch (e) { alive = (e as NodeJS.ErrnoException).code === "EPERM"; }
    if (!alive) await rm(join(dir, name), { recursive: true, force: true });
  }
}
