// The runs function: it holds the storage credentials and hands a training job short-lived presigned URLs for
// its checkpoint parts and metrics chunks, and commits manifests on request — so no cloud credentials ever
// enter the training container. A job authenticates with a per-run token (HMAC of the run name under the
// function's secret), which only opens that run's keys.
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { ManifestFile, type RetentionPolicy, RUN_NAME, buildManifest, layout, parseChunkKey, retiredRecord, safeRelativePath, stepOfManifestKey, stepOfRetiredKey, stepsToDelete } from "../core/checkpoints.js";
import type { S3Store } from "../adapters/storage/s3.js";
import { type FnRequest, type FnResponse, json, unprocessable } from "./http-types.js";

export interface RunsDeps {
  readonly store: S3Store;
  /** Secret the per-run tokens derive from (never sent anywhere). */
  readonly secret: string;
  /** Lifetime of each presigned URL (default 900 s). */
  readonly urlTtlS?: number;
  readonly now?: () => Date;
}

/** The token a job presents for `run`. */
export function runToken(secret: string, run: string): string {
  return createHmac("sha256", secret).update(`rlpipe-run:${run}`).digest("hex");
}

const md5Hex = z.string().regex(/^[0-9a-f]{32}$/, { error: "expected an MD5 as 32 hex digits" });
const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, { error: "expected a SHA-256 as 64 hex digits" });
const CKPT_PATH = /^checkpoints\/global_step_(\d+)\/(.+)$/;
const MIN_PART = 5 * 1024 * 1024;

const UploadRequest = z.strictObject({
  path: z.string(),
  size: z.number().int().nonnegative(),
  sha256: sha256Hex,
  partSize: z.number().int().min(MIN_PART).max(5 * 1024 ** 3),
  partMd5s: z.array(md5Hex).min(1).max(10_000),
});
const CompleteRequest = z.strictObject({ path: z.string(), uploadId: z.string().min(1), partMd5s: z.array(md5Hex).min(1).max(10_000) });
const Keep = z.strictObject({ last: z.number().int().positive().optional(), every: z.number().int().positive().optional() });
const CommitRequest = z.strictObject({
  step: z.number().int().nonnegative(),
  files: z.array(ManifestFile).min(1),
  recipeHash: z.string().max(128).optional(),
  keep: Keep.optional(),
});
const RetireRequest = z.strictObject({
  step: z.number().int().nonnegative(),
  keep: Keep.refine((k) => k.last !== undefined || k.every !== undefined, { error: "a retention policy needs last and/or every" }),
});
const MetricsRequest = z.strictObject({
  generation: z.string().regex(/^[0-9a-f]{16}$/),
  start: z.number().int().nonnegative(),
  end: z.number().int().positive(),
  md5: md5Hex,
});

function checkpointKey(run: string, path: string): { key: string; step: number } | undefined {
  const m = CKPT_PATH.exec(path);
  if (m === null || !safeRelativePath(m[2]!)) return undefined;
  const step = Number(m[1]);
  return { key: layout.file(run, step, m[2]!), step };
}

function authorized(req: FnRequest, run: string, secret: string): boolean {
  const bearer = /^Bearer\s+([0-9a-f]{64})$/i.exec(req.headers["authorization"] ?? "");
  if (bearer === null) return false;
  const a = Buffer.from(bearer[1]!.toLowerCase());
  const b = Buffer.from(runToken(secret, run));
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Routes under /v1/runs/<run>/…; undefined when the path is not a runs route. */
export async function routeRuns(req: FnRequest, deps: RunsDeps): Promise<FnResponse | undefined> {
  const m = /^\/v1\/runs\/([^/]+)\/(uploads|uploads\/complete|commit|retire|metrics|state)$/.exec(req.path);
  if (m === null) return undefined;
  const run = decodeURIComponent(m[1]!);
  const op = m[2]!;
  if (!RUN_NAME.test(run)) return json(400, { detail: `invalid run name ${JSON.stringify(run)}` });
  if (!authorized(req, run, deps.secret)) return json(401, { detail: "missing or invalid run token" }, { "www-authenticate": "Bearer" });
  const wantMethod = op === "state" ? "GET" : "POST";
  if (req.method !== wantMethod) return json(405, { detail: "Method Not Allowed" }, { allow: wantMethod });
  switch (op) {
    case "uploads": return startUpload(run, req.body, deps);
    case "uploads/complete": return completeUpload(run, req.body, deps);
    case "commit": return commit(run, req.body, deps);
    case "retire": return retire(run, req.body, deps);
    case "metrics": return metricsUrl(run, req.body, deps);
    default: return state(run, deps);
  }
}

async function startUpload(run: string, body: unknown, deps: RunsDeps): Promise<FnResponse> {
  const p = UploadRequest.safeParse(body);
  if (!p.success) return unprocessable(p.error.issues);
  const r = p.data;
  const target = checkpointKey(run, r.path);
  if (target === undefined) return json(400, { detail: `path must be checkpoints/global_step_<N>/<relative file>, got ${JSON.stringify(r.path)}` });
  const expectedParts = Math.max(1, Math.ceil(r.size / r.partSize));
  if (r.partMd5s.length !== expectedParts) return json(400, { detail: `${r.size} bytes in parts of ${r.partSize} is ${expectedParts} parts, got ${r.partMd5s.length} MD5s` });
  const ttl = deps.urlTtlS ?? 900;
  const headers = (md5: string) => ({ "Content-MD5": Buffer.from(md5, "hex").toString("base64") });
  if (expectedParts === 1) {
    // Single PUT: the object carries its SHA-256 as metadata (signed into the URL).
    const url = await deps.store.presignPut(target.key, { md5hex: r.partMd5s[0]!, sha256: r.sha256, expiresInS: ttl });
    return json(200, { mode: "single", url, headers: headers(r.partMd5s[0]!), expiresInS: ttl });
  }
  const session = await deps.store.startMultipart(target.key, { sha256: r.sha256, size: r.size, partSize: r.partSize, md5s: r.partMd5s });
  const parts = await Promise.all(r.partMd5s.map(async (md5, i) => {
    const partNumber = i + 1;
    if (session.done.has(partNumber)) return { partNumber, done: true };
    const url = await deps.store.presignPut(target.key, { md5hex: md5, uploadId: session.uploadId, partNumber, expiresInS: ttl });
    return { partNumber, done: false, url, headers: headers(md5) };
  }));
  return json(200, { mode: "multipart", uploadId: session.uploadId, partSize: r.partSize, parts, expiresInS: ttl });
}

async function completeUpload(run: string, body: unknown, deps: RunsDeps): Promise<FnResponse> {
  const p = CompleteRequest.safeParse(body);
  if (!p.success) return unprocessable(p.error.issues);
  const target = checkpointKey(run, p.data.path);
  if (target === undefined) return json(400, { detail: `path must be checkpoints/global_step_<N>/<relative file>, got ${JSON.stringify(p.data.path)}` });
  try {
    const etag = await deps.store.completeMultipart(target.key, p.data.uploadId, p.data.partMd5s);
    return json(200, { etag });
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (code === "part_missing" || code === "checksum_mismatch") return json(409, { detail: (e as Error).message });
    throw e;
  }
}

/** Commit a step: every file must be stored with its size and SHA-256; the manifest is written last. */
async function commit(run: string, body: unknown, deps: RunsDeps): Promise<FnResponse> {
  const p = CommitRequest.safeParse(body);
  if (!p.success) return unprocessable(p.error.issues);
  const { step, files, recipeHash, keep } = p.data;
  // A retired step stays retired (what rlpipe sync honours too), whoever asks to commit it again.
  if (await deps.store.head(layout.retired(run, step)) !== undefined) return json(409, { detail: `step ${step} was retired by retention; it is not committed again`, retired: true });
  const problems: string[] = [];
  await Promise.all(files.map(async (f) => {
    if (!safeRelativePath(f.path)) { problems.push(`${f.path}: not a relative path`); return; }
    const head = await deps.store.head(layout.file(run, step, f.path));
    if (head === undefined) problems.push(`${f.path}: not uploaded`);
    else if (head.size !== f.size) problems.push(`${f.path}: stored ${head.size} bytes, manifest says ${f.size}`);
    else if (head.metadata?.["sha256"] !== undefined && head.metadata["sha256"] !== f.sha256) problems.push(`${f.path}: stored SHA-256 differs`);
  }));
  if (problems.length > 0) return json(409, { detail: `step ${step} cannot be committed`, problems: problems.sort() });
  const manifest = buildManifest(run, step, files, { ...(recipeHash === undefined ? {} : { recipeHash }), now: (deps.now ?? (() => new Date()))() });
  await deps.store.putBytes(layout.manifest(run, step), `${JSON.stringify(manifest, null, 2)}\n`, { contentType: "application/json" });
  const deleted = await retention(run, keep === undefined ? undefined : policyOf(keep), deps);
  return json(200, { manifest, deleted });
}

function policyOf(keep: z.infer<typeof Keep>): RetentionPolicy {
  return { ...(keep.last === undefined ? {} : { keepLast: keep.last }), ...(keep.every === undefined ? {} : { keepEvery: keep.every }) };
}

/**
 * Retire a finished step without uploading it, as rlpipe sync does for a step retention would delete at once
 * (older than the newest steps it keeps). The function checks that decision against the committed steps.
 */
async function retire(run: string, body: unknown, deps: RunsDeps): Promise<FnResponse> {
  const p = RetireRequest.safeParse(body);
  if (!p.success) return unprocessable(p.error.issues);
  const { step } = p.data;
  const policy = policyOf(p.data.keep);
  const listed = await deps.store.list(layout.manifestsPrefix(run));
  const committed = listed.map((o) => stepOfManifestKey(o.key)).filter((s): s is number => s !== undefined);
  if (listed.some((o) => stepOfRetiredKey(o.key) === step)) return json(200, { retired: step });
  if (committed.includes(step)) return json(409, { detail: `step ${step} is committed; retention retires it when a commit applies the policy` });
  if (!stepsToDelete([...committed, step], policy).includes(step)) return json(409, { detail: `retention (${JSON.stringify(policy)}) keeps step ${step}; upload it instead` });
  await deps.store.putBytes(layout.retired(run, step), retiredRecord(step, policy, (deps.now ?? (() => new Date()))(), false), { contentType: "application/json" });
  return json(200, { retired: step });
}

async function retention(run: string, policy: RetentionPolicy | undefined, deps: RunsDeps): Promise<number[]> {
  if (policy === undefined) return [];
  const committed = (await deps.store.list(layout.manifestsPrefix(run))).map((o) => stepOfManifestKey(o.key)).filter((s): s is number => s !== undefined);
  const doomed = stepsToDelete(committed, policy);
  for (const step of doomed) {
    // The decision is remembered first (as rlpipe sync does): a retired step is never uploaded again.
    await deps.store.putBytes(layout.retired(run, step), retiredRecord(step, policy, (deps.now ?? (() => new Date()))(), true), { contentType: "application/json" });
    await deps.store.delete([layout.manifest(run, step)]); // the step disappears for readers next
    await deps.store.delete((await deps.store.list(layout.stepPrefix(run, step))).map((o) => o.key));
  }
  return doomed;
}

async function metricsUrl(run: string, body: unknown, deps: RunsDeps): Promise<FnResponse> {
  const p = MetricsRequest.safeParse(body);
  if (!p.success) return unprocessable(p.error.issues);
  const { generation, start, end, md5 } = p.data;
  if (end <= start || end - start > 16 * 1024 * 1024) return json(400, { detail: "a metrics chunk is 1 byte to 16 MiB" });
  const ttl = deps.urlTtlS ?? 900;
  const url = await deps.store.presignPut(layout.metricsChunk(run, generation, start, end), { md5hex: md5, expiresInS: ttl });
  return json(200, { url, headers: { "Content-MD5": Buffer.from(md5, "hex").toString("base64") }, expiresInS: ttl });
}

/**
 * What a restarted sidecar needs: committed and retired steps (neither is uploaded), the files already stored for
 * the other steps (an interrupted upload; the sidecar does not send again a file whose size and ETag match) and
 * how far each metrics generation got.
 */
async function state(run: string, deps: RunsDeps): Promise<FnResponse> {
  const checkpoints = await deps.store.list(layout.manifestsPrefix(run));
  const committed = checkpoints.map((o) => stepOfManifestKey(o.key)).filter((s): s is number => s !== undefined).sort((a, b) => a - b);
  const retired = checkpoints.map((o) => stepOfRetiredKey(o.key)).filter((s): s is number => s !== undefined).sort((a, b) => a - b);
  const settled = new Set([...committed, ...retired]);
  const files = new Map<number, { path: string; size: number; etag: string }[]>();
  for (const o of checkpoints) {
    const f = storedFile(run, o.key);
    if (f === undefined || settled.has(f.step) || o.etag === undefined) continue;
    files.set(f.step, [...(files.get(f.step) ?? []), { path: f.path, size: o.size, etag: o.etag }]);
  }
  const uncommitted = [...files.entries()].sort((a, b) => a[0] - b[0])
    .map(([step, fs]) => ({ step, files: fs.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)) }));
  const metrics: Record<string, number> = {};
  for (const o of await deps.store.list(layout.metricsPrefix(run))) {
    const c = parseChunkKey(o.key);
    if (c !== undefined) metrics[c.generation] = Math.max(metrics[c.generation] ?? 0, c.end);
  }
  return json(200, { run, committed, retired, uncommitted, metrics });
}

/** A file of a step, from its key under the run: `<run>/checkpoints/global_step_N/<path>`. */
function storedFile(run: string, key: string): { step: number; path: string } | undefined {
  const prefix = layout.manifestsPrefix(run);
  if (!key.startsWith(prefix)) return undefined;
  const m = CKPT_PATH.exec(`checkpoints/${key.slice(prefix.length)}`);
  if (m === null || !safeRelativePath(m[2]!)) return undefined;
  return { step: Number(m[1]), path: m[2]! };
}
