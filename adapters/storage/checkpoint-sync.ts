// Checkpoint sync with durable commits: a step verl has finished (latest_checkpointed_iteration.txt) is uploaded
// file by file, then its manifest (files, sizes, SHA-256s, step, run, recipe hash) is written last. Readers see
// only steps with a manifest. Retention deletes a manifest before its files. Restore verifies every file.
import { readFile, readdir, stat, writeFile, mkdir } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { type Manifest, Manifest as ManifestSchema, type ManifestFile, type RetentionPolicy, buildManifest, layout, parseTracker, stepOfManifestKey, stepsToDelete } from "../../core/checkpoints.js";
import { Semaphore } from "../../core/util/semaphore.js";
import { DEFAULT_PART_BYTES, type ObjectStore, StorageError } from "./object-store.js";

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
  readonly signal?: AbortSignal;
}

export interface SyncReport {
  readonly committed: readonly number[];
  readonly alreadyCommitted: readonly number[];
  readonly deleted: readonly number[];
  readonly bytesUploaded: number;
}

const STEP_DIR = /^global_step_(\d+)$/;
export const TRACKER = "latest_checkpointed_iteration.txt";

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

export class CheckpointSync {
  constructor(private readonly opts: CheckpointSyncOptions) {}

  private log(line: string): void {
    this.opts.log?.(line);
  }

  /** Steps with a manifest, ascending. */
  async committedSteps(): Promise<number[]> {
    const objects = await this.opts.store.list(layout.manifestsPrefix(this.opts.run), this.opts.signal);
    return objects.map((o) => stepOfManifestKey(o.key)).filter((s): s is number => s !== undefined).sort((a, b) => a - b);
  }

  async manifest(step: number): Promise<Manifest> {
    const raw = await this.opts.store.get(layout.manifest(this.opts.run, step), undefined, this.opts.signal);
    const parsed = ManifestSchema.safeParse(JSON.parse(raw.toString("utf8")));
    if (!parsed.success) throw new StorageError("bad_manifest", `manifest of ${this.opts.run} step ${step} is malformed: ${parsed.error.issues[0]?.message ?? ""}`);
    return parsed.data;
  }

  /** Upload every finished step of a verl checkpoint directory that is not committed yet, then apply retention. */
  async syncDir(dir: string): Promise<SyncReport> {
    let latest: number | undefined;
    try {
      latest = parseTracker(await readFile(join(dir, TRACKER), "utf8"));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
    const committedBefore = new Set(await this.committedSteps());
    const committed: number[] = [];
    let bytesUploaded = 0;
    if (latest !== undefined) {
      const local = (await readdir(dir, { withFileTypes: true }))
        .filter((e) => e.isDirectory())
        .map((e) => STEP_DIR.exec(e.name))
        .filter((m): m is RegExpExecArray => m !== null)
        .map((m) => Number(m[1]))
        .filter((s) => s <= latest!) // a step past the tracker is still being written
        .sort((a, b) => a - b);
      for (const step of local) {
        if (committedBefore.has(step)) continue;
        try {
          const m = await this.commitStep(join(dir, `global_step_${step}`), step);
          committed.push(step);
          bytesUploaded += m.totalBytes;
        } catch (e) {
          // verl may delete an old step (max_*_ckpt_to_keep) while we upload it: skip it, commit the rest.
          if ((e as NodeJS.ErrnoException).code === "ENOENT") { this.log(`step ${step}: removed locally during upload; not committed`); continue; }
          throw e;
        }
      }
    }
    const deleted = await this.applyRetention();
    return { committed, alreadyCommitted: [...committedBefore].sort((a, b) => a - b), deleted, bytesUploaded };
  }

  /**
   * Upload one step's files, then write its manifest (the commit). Multipart files go one after another (their
   * parts in parallel), so each completes as early as possible — less to redo after an interruption, and the
   * server rarely assembles several large files at once — the next starting as soon as the previous one has
   * handed out its last part, so the pipe does not drain at file boundaries (measured: 10–15% faster with 4
   * shards). Small files go `fileConcurrency` at a time beside them. Parts in flight are bounded across both
   * lanes by one set of part slots.
   */
  async commitStep(stepDir: string, step: number): Promise<Manifest> {
    const { store, run } = this.opts;
    const files = await listFiles(stepDir);
    const sizes = await Promise.all(files.map(async (rel) => (await stat(join(stepDir, ...rel.split("/")))).size));
    const multipartFrom = 2 * (this.opts.partSizeBytes ?? DEFAULT_PART_BYTES);
    const smallLane = new Semaphore(this.opts.fileConcurrency ?? 4);
    const largeLane = new Semaphore(1);
    const partSlots = new Semaphore(this.opts.concurrency ?? 8);
    const started = Date.now();
    const entries: ManifestFile[] = await Promise.all(files.map(async (rel, i) => {
      const large = sizes[i]! >= multipartFrom;
      const release = await (large ? largeLane : smallLane).acquire(this.opts.signal);
      let held = true;
      const free = () => { if (held) { held = false; release(); } };
      try {
        const r = await store.putFile(layout.file(run, step, rel), join(stepDir, ...rel.split("/")), {
          ...(this.opts.partSizeBytes === undefined ? {} : { partSizeBytes: this.opts.partSizeBytes }),
          partSlots,
          ...(this.opts.signal === undefined ? {} : { signal: this.opts.signal }),
          ...(large ? { onPartsIssued: free } : {}),
        });
        const now = await stat(join(stepDir, ...rel.split("/")));
        if (now.size !== r.size) throw new StorageError("file_changed", `${rel} changed size while it was uploaded`);
        return { path: rel, size: r.size, sha256: r.sha256 };
      } finally {
        free();
      }
    }));
    const manifest = buildManifest(run, step, entries, { ...(this.opts.recipeHash === undefined ? {} : { recipeHash: this.opts.recipeHash }), now: (this.opts.now ?? (() => new Date()))() });
    await store.putBytes(layout.manifest(run, step), `${JSON.stringify(manifest, null, 2)}\n`, { contentType: "application/json", ...(this.opts.signal === undefined ? {} : { signal: this.opts.signal }) });
    this.log(`step ${step}: committed ${entries.length} files, ${(manifest.totalBytes / 2 ** 20).toFixed(1)} MiB in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return manifest;
  }

  /** Delete steps the policy drops: the manifest first (the step disappears for readers), then its files. */
  async applyRetention(): Promise<number[]> {
    const policy = this.opts.retention;
    if (policy === undefined) return [];
    const doomed = stepsToDelete(await this.committedSteps(), policy);
    for (const step of doomed) {
      await this.opts.store.delete([layout.manifest(this.opts.run, step)], this.opts.signal);
      const files = await this.opts.store.list(layout.stepPrefix(this.opts.run, step), this.opts.signal);
      await this.opts.store.delete(files.map((f) => f.key), this.opts.signal);
      this.log(`step ${step}: deleted by retention`);
    }
    return doomed;
  }

  /**
   * Download a committed step (the newest when `step` is undefined) into `dir` in the layout verl resumes
   * from (global_step_N/… plus latest_checkpointed_iteration.txt), verifying every file's SHA-256.
   */
  async restore(dir: string, step?: number): Promise<Manifest> {
    const steps = await this.committedSteps();
    const chosen = step ?? steps[steps.length - 1];
    if (chosen === undefined) throw new StorageError("no_checkpoints", `run ${this.opts.run} has no committed checkpoint in ${this.opts.store.url}`, { exitCode: 2 });
    if (!steps.includes(chosen)) {
      throw new StorageError("step_not_committed", `run ${this.opts.run} has no committed step ${chosen}`, { exitCode: 2, hint: steps.length > 0 ? `committed steps: ${steps.join(", ")}` : "nothing is committed yet" });
    }
    const m = await this.manifest(chosen);
    const slots = new Semaphore(this.opts.fileConcurrency ?? 4);
    await Promise.all(m.files.map((f) => slots.run(() => this.opts.store.download(layout.file(this.opts.run, chosen, f.path), join(dir, `global_step_${chosen}`, ...f.path.split("/")), { sha256: f.sha256, ...(this.opts.signal === undefined ? {} : { signal: this.opts.signal }) }), this.opts.signal)));
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, TRACKER), String(chosen));
    return m;
  }
}
