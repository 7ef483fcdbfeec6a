// A run's page in its store (issue 25 item 2): `<job>/report.html`, beside the stage runs `<job>.<stage>` it shows.
// Read by `rlpipe report` (the outputs part of the page), written by `rlpipe sync --page` and rlpipe_sync.py --page
// inside the job, presigned for `rlpipe report --url` and the console's report action (never outliving the keys
// that sign it).
import { RlpipeError } from "../../core/errors.js";
import { mergeMetrics, toSeries } from "../../core/metrics.js";
import type { RunPageOutputs, StoredRun } from "../../core/report/run-page-data.js";
import { CheckpointSync, stageRuns } from "./checkpoint-sync.js";
import { readMetricChunks } from "./metrics-sync.js";
import { type ObjectStore, StorageError } from "./object-store.js";
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

/**
 * How long a URL signed with temporary credentials whose expiry nobody tells is taken to stay valid: the shortest
 * session STS issues (DurationSeconds ≥ 900) and the runs function's default URL lifetime. Lambda's role keys
 * (AWS_SESSION_TOKEN without AWS_CREDENTIAL_EXPIRATION), a FunctionGraph agency's and an SCF role's come without an
 * expiry or an issue time, so no bound is certain; this one is short enough that a link rarely outlives its keys.
 */
export const UNKNOWN_EXPIRY_TTL_S = 900;

/** The variable an S3 credential set may carry its expiry in (ISO 8601; the AWS SDK's environment provider reads it). */
export const AWS_CREDENTIAL_EXPIRY_VAR = "AWS_CREDENTIAL_EXPIRATION";

/** A presigned page URL and how long it really lives. */
export interface PresignedPage {
  readonly url: string;
  /** Seconds the URL is valid from now: the asked lifetime, or less when the signing credentials end first. */
  readonly expiresS: number;
  /** Present when `expiresS` is shorter than asked: the credentials that signed the URL end sooner. */
  readonly cappedBy?: "credentials";
  /** When the signing credentials expire, if known. */
  readonly credentialsExpireAt?: string;
  /** Why the lifetime is what it is, in a sentence (temporary credentials only). */
  readonly notice?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/** When the credentials that sign for `store` expire: temporary (a session token) or not, and the expiry if known. */
async function signingCredentials(store: S3Store, env: Env): Promise<{ readonly temporary: boolean; readonly expiresAt?: Date }> {
  // The client's provider is what the presigner signs with: static keys, or the SDK's chain (which knows expiries).
  const id = await store.client.config.credentials();
  const temporary = (id.sessionToken ?? "") !== "";
  if (id.expiration !== undefined) return { temporary, expiresAt: id.expiration };
  // Keys from AWS_* variables are handed to the client as static keys; their expiry, when set, is beside them.
  const declared = env[AWS_CREDENTIAL_EXPIRY_VAR];
  if (store.opts.scheme === "s3" && declared !== undefined && declared !== "" && env["AWS_ACCESS_KEY_ID"] === id.accessKeyId) {
    const at = new Date(declared);
    if (!Number.isNaN(at.getTime())) return { temporary, expiresAt: at };
  }
  return { temporary };
}

/** Refuses a store without presigned URLs, and a page not written yet. */
async function checkPresignable(store: ObjectStore, job: string): Promise<void> {
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
}

/**
 * A presigned GET URL of the page whose lifetime never outlives the credentials that sign it: a URL signed with
 * temporary keys dies with their session whatever X-Amz-Expires says, so the lifetime is capped at the keys' expiry
 * (when the provider or AWS_CREDENTIAL_EXPIRATION says it) or at UNKNOWN_EXPIRY_TTL_S (when nothing does), and the
 * answer says so. The URL is a bearer secret until it expires: print it only when asked, never log it.
 */
export async function presignRunPageFor(store: ObjectStore, job: string, askedS: number, opts: { readonly env?: Env; readonly now?: Date } = {}): Promise<PresignedPage> {
  await checkPresignable(store, job);
  const s3 = store as S3Store;
  const creds = await signingCredentials(s3, opts.env ?? {});
  let expiresS = askedS;
  let notice: string | undefined;
  if (creds.expiresAt !== undefined) {
    const leftS = Math.floor((creds.expiresAt.getTime() - (opts.now ?? new Date()).getTime()) / 1000);
    if (leftS < 1) {
      throw new StorageError("store_credentials_expired", `the credentials that sign for ${s3.url} expired at ${creds.expiresAt.toISOString()}`, {
        exitCode: 3, retryable: true, hint: "the platform renews its role's keys; ask again shortly (or set keys that are not expiring)",
      });
    }
    expiresS = Math.min(askedS, leftS);
    if (expiresS < askedS) notice = `the URL lives ${expiresS} s, not ${askedS} s: it is signed with temporary credentials that expire at ${creds.expiresAt.toISOString()}`;
  } else if (creds.temporary) {
    expiresS = Math.min(askedS, UNKNOWN_EXPIRY_TTL_S);
    notice = `signed with temporary credentials whose expiry is not known here (a function role's keys): the URL is given at most ${UNKNOWN_EXPIRY_TTL_S} s and may still end sooner, with the keys' session`;
  }
  return {
    url: await s3.presignGet(runPageKey(job), expiresS),
    expiresS,
    ...(expiresS < askedS ? { cappedBy: "credentials" as const } : {}),
    ...(creds.expiresAt === undefined ? {} : { credentialsExpireAt: creds.expiresAt.toISOString() }),
    ...(notice === undefined ? {} : { notice }),
  };
}

