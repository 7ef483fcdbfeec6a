// A run's page in its store (issue 25 item 2): `<job>/report.html`, beside the stage runs `<job>.<stage>` it shows.
// Read by `rlpipe report` (the outputs part of the page), written by `rlpipe sync --page` and rlpipe_sync.py --page
// inside the job, presigned for `rlpipe report --url` and the console's report action.
import { RlpipeError } from "../../core/errors.js";
import { mergeMetrics, toSeries } from "../../core/metrics.js";
import type { RunPageOutputs, StoredRun } from "../../core/report/run-page-data.js";
import { CheckpointSync, stageRuns } from "./checkpoint-sync.js";
import { readMetricChunks } from "./metrics-sync.js";
import type { ObjectStore } from "./object-store.js";
import { S3Store } from "./s3.js";

/** The page's key, relative to the store's root (rlpipe_sync.py writes the same key). */
export const runPageKey = (job: string): string => `${job}/report.html`;

/** How long a presigned URL of the page stays valid unless asked otherwise (the SigV4 maximum is 7 days). */
export const PAGE_URL_TTL_S = 3600;
export const PAGE_URL_MAX_TTL_S = 7 * 24 * 3600;

/**
 * What the store keeps of the job, with no provider asked: the run named like the job and its stage runs
 * `<job>.<stage>` that have metrics (verl's and the sandbox health stream, merged by step) or committed checkpoints.
 * `rlpipe report` and the sync sidecar both build their page's outputs with this.
 */
export async function readRunOutputs(store: ObjectStore, job: string, signal?: AbortSignal): Promise<RunPageOutputs> {
  const names = [...new Set([job, ...(await stageRuns(store, job, signal))])];
  const runs = await Promise.all(names.map(async (run): Promise<StoredRun | undefined> => {
    const sync = new CheckpointSync({ run, store, ...(signal === undefined ? {} : { signal }) });
    const series = [...toSeries(mergeMetrics(await readMetricChunks(store, run))).entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, points]) => ({ name, points }));
    const manifests = await Promise.all((await sync.committedSteps()).map((step) => sync.manifest(step)));
    if (series.length === 0 && manifests.length === 0) return undefined; // e.g. only the function's usage records
    return { run, series, checkpoints: manifests.sort((a, b) => a.step - b.step).map((m) => ({ step: m.step, files: m.files.length, bytes: m.totalBytes, committedAt: m.committedAt })) };
  }));
  return { store: store.url, runs: runs.filter((r): r is StoredRun => r !== undefined) };
}

/**
 * Replace the page with one PUT: an object PUT on S3, OBS and COS is atomic per object (a reader gets the old page
 * or the new one whole, never a part), so no temporary key and copy are needed; a file store writes beside and
 * renames. Small (a page is tens of KiB), so never multipart.
 */
export async function putRunPage(store: ObjectStore, job: string, html: string, signal?: AbortSignal): Promise<void> {
  await store.putBytes(runPageKey(job), html, { contentType: "text/html; charset=utf-8", ...(signal === undefined ? {} : { signal }) });
}

/** A presigned GET URL of the page (a bearer secret until it expires: print it only when asked, never log it). */
export async function presignRunPage(store: ObjectStore, job: string, expiresInS: number): Promise<string> {
  if (!(store instanceof S3Store)) {
    throw new RlpipeError("presign_unsupported", `${store.url} is not an S3-compatible store, so it has no presigned URLs`, {
      exitCode: 2, hint: `open the page file itself (${runPageKey(job)} under the store's directory), or keep the run in s3://, obs:// or cos://`,
    });
  }
  if (await store.head(runPageKey(job)) === undefined) {
    throw new RlpipeError("page_missing", `no page for ${job} in ${store.url} yet (${runPageKey(job)})`, {
      exitCode: 2, hint: "the job's sync sidecar writes it once its first pass is done; rlpipe sync <job>.<stage> --page <job> writes it from here",
    });
  }
  return store.presignGet(runPageKey(job), expiresInS);
}
