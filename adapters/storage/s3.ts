// s3://, obs:// and cos:// through the S3 API (@aws-sdk/client-s3; lib-storage for streams of unknown size).
// Files go up as multipart uploads of fixed-size parts, in parallel, each with a checksum the server verifies,
// then the whole file's SHA-256 is recorded. The part checksum is CRC32 (x-amz-checksum-crc32) where the server
// proves it checked it by echoing it back, else Content-MD5 checked against the ETag the server computed (so a
// part corrupted in transit is caught even by servers that ignore Content-MD5). CRC32 is ~6× cheaper than MD5
// for us, and a server that verifies Content-MD5 hashes every byte a second time; OBS and COS take MD5 only.
// An interrupted upload resumes: the parts the server already holds with the right MD5 are not sent again.
// Every request goes through one retry layer (store-retry.ts) and every failure becomes a classified
// StorageError (store-errors.ts); the SDK itself does not retry.
import { createHash, randomBytes } from "node:crypto";
import { setMaxListeners } from "node:events";
import { crc32 } from "node:zlib";
import { createReadStream } from "node:fs";
import { type FileHandle, mkdir, open, rename, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import {
  AbortMultipartUploadCommand, CompleteMultipartUploadCommand, CreateMultipartUploadCommand, DeleteObjectCommand, GetObjectCommand,
  HeadObjectCommand, ListMultipartUploadsCommand, ListObjectsV2Command, ListPartsCommand, PutObjectCommand, S3Client, type S3ClientConfig,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import { isLoopbackHost } from "../../core/util/endpoint.js";
import { Semaphore } from "../../core/util/semaphore.js";
import { FileHasher } from "./file-hasher.js";
import {
  type ByteRange, DEFAULT_PART_BYTES, type DownloadOptions, type ObjectInfo, type ObjectStore, type PutFileOptions, type PutFileResult, type RetryNotice,
  StorageError, type StoredCopy,
} from "./object-store.js";
import { storeEndpoint } from "./store-endpoint.js";
import { type StoreErrorContext, classifyStoreError, httpStatusOf, s3CodeOf } from "./store-errors.js";
import { type StoreRetryPolicy, withStoreRetry } from "./store-retry.js";
import type { StoreUri } from "./store-uri.js";

// We pin the SDK (Node 20); its notice about future versions needing Node 22 is noise in CLI output.
process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true";

const MiB = 1024 * 1024;
export const MIN_PART_BYTES = 8 * MiB;
const MAX_PARTS = 10_000;
/** Range size for downloads: big enough that per-request costs vanish, small enough to retry cheaply. */
const RANGE_BYTES = 16 * MiB;

export interface S3StoreOptions {
  readonly scheme: "s3" | "obs" | "cos";
  readonly bucket: string;
  readonly prefix: string;
  readonly region: string;
  readonly endpoint?: string;
  readonly credentials?: { readonly accessKeyId: string; readonly secretAccessKey: string; readonly sessionToken?: string };
  /** Default: path style for loopback endpoints, virtual-hosted otherwise. */
  readonly forcePathStyle?: boolean;
  /** The longest one request may take, body included (default 15 min: a part or range on a slow link). */
  readonly requestTimeoutMs?: number;
  /** A connection that sends and receives nothing for this long is dead (default 120 s). */
  readonly idleTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly maxSockets?: number;
  /** Retries of failed requests (the store's only retry layer). */
  readonly retry?: StoreRetryPolicy;
  /** Told before each retry (the CLI prints one line on stderr). */
  readonly onRetry?: (n: RetryNotice) => void;
  /**
   * Checksum of each multipart part. "crc32" (default for s3://) falls back to "md5" by itself when the server
   * does not echo the CRC32 (it did not verify it); "md5" (OBS, COS, RLPIPE_PART_CHECKSUM=md5) is Content-MD5.
   */
  readonly partChecksum?: PartChecksum;
}

export type PartChecksum = "crc32" | "md5";

/** What a part is checked by: its MD5 (hex; Content-MD5 and the ETag) and/or its CRC32 (base64, as S3 writes it). */
export interface PartDigest {
  readonly md5?: string;
  readonly crc32?: string;
}

/** A part the server stored: its ETag, and its CRC32 when the upload carries CRC32 checksums. */
export interface PartRef {
  readonly etag: string;
  readonly crc32?: string;
}

export function md5Hex(data: Uint8Array): string {
  return createHash("md5").update(data).digest("hex");
}

/** CRC32 (IEEE, as S3's x-amz-checksum-crc32) in S3's form: 4 big-endian bytes, base64. */
export function crc32Base64(data: Uint8Array, running?: number): string {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc32(data, running));
  return b.toString("base64");
}

export interface PartPlan {
  readonly partSize: number;
  readonly count: number;
}

/** Part size: at least 8 MiB and large enough that the file fits in 10,000 parts. */
export function planParts(size: number, requested = DEFAULT_PART_BYTES): PartPlan {
  let partSize = Math.max(MIN_PART_BYTES, requested);
  partSize = Math.max(partSize, Math.ceil(size / MAX_PARTS));
  return { partSize, count: Math.max(1, Math.ceil(size / partSize)) };
}

type Env = Readonly<Record<string, string | undefined>>;

/** Endpoint, region and credentials per provider, from options then environment variables. */
export function resolveS3Options(uri: StoreUri, env: Env): S3StoreOptions {
  const pickNamed = (...names: string[]) => names.map((n) => ({ n, v: env[n] })).find((x) => x.v !== undefined && x.v !== "");
  const pick = (...names: string[]) => pickNamed(...names)?.v;
  const scheme = uri.scheme as "s3" | "obs" | "cos";
  let region: string | undefined;
  let endpointVar: { n: string; v?: string | undefined } | undefined;
  let endpoint: string | undefined;
  let id: string | undefined;
  let secret: string | undefined;
  let token: string | undefined;
  if (scheme === "s3") {
    region = pick("AWS_REGION", "AWS_DEFAULT_REGION") ?? "us-east-1";
    endpointVar = pickNamed("S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL");
    id = pick("AWS_ACCESS_KEY_ID");
    secret = pick("AWS_SECRET_ACCESS_KEY");
    token = pick("AWS_SESSION_TOKEN");
  } else {
    if (scheme === "obs") {
      region = pick("OBS_REGION", "HUAWEICLOUD_SDK_REGION", "HUAWEICLOUD_REGION");
      endpointVar = pickNamed("OBS_ENDPOINT");
      endpoint = region === undefined ? undefined : `https://obs.${region}.myhuaweicloud.com`;
    } else {
      region = pick("COS_REGION", "TENCENTCLOUD_REGION");
      endpointVar = pickNamed("COS_ENDPOINT");
      endpoint = region === undefined ? undefined : `https://cos.${region}.myqcloud.com`;
    }
    // The first set of variables holding a key is used, its token with it: a temporary key (a function's role)
    // works only with its own token, never with one from another set.
    const source = CREDENTIAL_SOURCES[scheme].find(([i, s]) => pick(i) !== undefined || pick(s) !== undefined);
    if (source !== undefined) {
      id = pick(source[0]);
      secret = pick(source[1]);
      token = pick(source[2]);
    }
  }
  // An endpoint without a scheme means https:// (see store-endpoint.ts); a variable wins over the region's default.
  if (endpointVar?.v !== undefined) endpoint = storeEndpoint(endpointVar.v, endpointVar.n);
  if (region === undefined) {
    if (endpoint === undefined) {
      const v = scheme === "obs" ? "OBS_REGION (e.g. cn-southwest-2)" : "COS_REGION (e.g. ap-shanghai)";
      throw new StorageError("region_missing", `${scheme}:// needs a region`, { exitCode: 2, hint: `set ${v} or the endpoint (${scheme.toUpperCase()}_ENDPOINT)` });
    }
    // The endpoint names the region (obs.<region>.myhuaweicloud.com, cos.<region>.myqcloud.com); signing needs it.
    region = /^(?:obs|cos)\.([a-z0-9-]+)\./.exec(new URL(endpoint).hostname)?.[1] ?? "us-east-1";
  }
  if ((id === undefined) !== (secret === undefined)) {
    throw new StorageError("credentials_incomplete", `${scheme}:// credentials need both an access key id and a secret`, { exitCode: 2, hint: `set both: ${credentialVars[scheme]}` });
  }
  // OBS and COS keys come only from these variables (the AWS SDK's own chain would read AWS_* files and
  // instance metadata, which is wrong for them); s3:// may use that chain (profiles, SSO, instance roles).
  if (id === undefined && scheme !== "s3") {
    throw new StorageError("store_credentials_missing", `${scheme}:// needs credentials and none are set`, { exitCode: 2, hint: `set ${credentialVars[scheme]}` });
  }
  const retrySeconds = pick("RLPIPE_STORE_RETRY_S");
  if (retrySeconds !== undefined && !(Number.isFinite(Number(retrySeconds)) && Number(retrySeconds) >= 0)) {
    throw new StorageError("bad_retry_budget", `RLPIPE_STORE_RETRY_S must be a number of seconds ≥ 0, not ${JSON.stringify(retrySeconds)}`, { exitCode: 2 });
  }
  const forced = pick("RLPIPE_PART_CHECKSUM");
  if (forced !== undefined && forced !== "md5" && forced !== "crc32") {
    throw new StorageError("bad_part_checksum", `RLPIPE_PART_CHECKSUM must be md5 or crc32, not ${JSON.stringify(forced)}`, { exitCode: 2 });
  }
  // OBS and COS document Content-MD5 only (no x-amz-checksum-* headers); S3 and most S3 servers take CRC32.
  const partChecksum: PartChecksum = forced ?? (scheme === "s3" ? "crc32" : "md5");
  return {
    scheme, bucket: uri.bucket, prefix: uri.prefix, region, partChecksum,
    ...(retrySeconds === undefined ? {} : { retry: { budgetMs: Number(retrySeconds) * 1000, ...(Number(retrySeconds) === 0 ? { maxAttempts: 1 } : {}) } }),
    ...(endpoint === undefined ? {} : { endpoint }),
    ...(id === undefined || secret === undefined ? {} : { credentials: { accessKeyId: id, secretAccessKey: secret, ...(token === undefined ? {} : { sessionToken: token }) } }),
  };
}

/**
 * Where OBS and COS keys come from, in order: [id, secret, token] variables. The last COS set is what Tencent SCF
 * sets for a function's execution role (temporary keys); FunctionGraph hands an agency's keys to the code, which
 * sets HUAWEICLOUD_SDK_AK/SK/SECURITY_TOKEN from them.
 */
export const CREDENTIAL_SOURCES: Readonly<Record<"obs" | "cos", readonly (readonly [string, string, string])[]>> = {
  obs: [["OBS_ACCESS_KEY_ID", "OBS_SECRET_ACCESS_KEY", "OBS_SECURITY_TOKEN"], ["HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_SECURITY_TOKEN"]],
  cos: [["COS_SECRET_ID", "COS_SECRET_KEY", "COS_SESSION_TOKEN"], ["TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN"], ["TENCENTCLOUD_SECRETID", "TENCENTCLOUD_SECRETKEY", "TENCENTCLOUD_SESSIONTOKEN"]],
};

const credentialVars: Record<"s3" | "obs" | "cos", string> = {
  s3: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
  obs: "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK (or OBS_ACCESS_KEY_ID and OBS_SECRET_ACCESS_KEY)",
  cos: "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY (or COS_SECRET_ID and COS_SECRET_KEY)",
};

export class S3Store implements ObjectStore {
  readonly url: string;
  readonly client: S3Client;
  private readonly prefix: string;
  /** The part checksum in use: starts as configured, becomes "md5" for good once a server ignores CRC32. */
  partChecksum: PartChecksum;
  private readonly hasher = new FileHasher();

  constructor(readonly opts: S3StoreOptions) {
    this.prefix = opts.prefix === "" ? "" : `${opts.prefix}/`;
    this.partChecksum = opts.partChecksum ?? (opts.scheme === "s3" ? "crc32" : "md5");
    this.url = `${opts.scheme}://${opts.bucket}${opts.prefix === "" ? "" : `/${opts.prefix}`}`;
    const loopback = opts.endpoint !== undefined && isLoopbackHost(new URL(opts.endpoint).hostname);
    const config: S3ClientConfig = {
      region: opts.region,
      forcePathStyle: opts.forcePathStyle ?? loopback,
      // rlpipe checks every part (CRC32 or Content-MD5 + ETag) and every file (SHA-256) itself; OBS and COS
      // reject or mishandle the SDK's default checksum headers (aws-chunked trailers), so it never adds them.
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      // One retry layer: ours (withStoreRetry), which classifies, bounds the time and tells the user.
      maxAttempts: 1,
      requestHandler: new NodeHttpHandler({
        connectionTimeout: opts.connectTimeoutMs ?? 10_000,
        requestTimeout: opts.requestTimeoutMs ?? 15 * 60_000,
        // Without this a request past its timeout only logs a warning and waits on forever.
        throwOnRequestTimeout: true,
        socketTimeout: opts.idleTimeoutMs ?? 120_000,
        httpAgent: { maxSockets: opts.maxSockets ?? 64, keepAlive: true },
        httpsAgent: { maxSockets: opts.maxSockets ?? 64, keepAlive: true },
      }),
      ...(opts.endpoint === undefined ? {} : { endpoint: opts.endpoint }),
      ...(opts.credentials === undefined ? {} : { credentials: opts.credentials }),
    };
    this.client = new S3Client(config);
    {
      // Payloads are not hashed into the signature: every body carries a checksum the server checks (CRC32, or
      // Content-MD5 also checked by us through the ETag) and the file's SHA-256 goes into the manifest, so a
      // second SHA-256 pass per part would only cost CPU (on both sides: the server verifies it too). OBS requires
      // it anyway (SigV4 only with UNSIGNED-PAYLOAD or streaming).
      this.client.middlewareStack.add((next) => async (args) => {
        const req = args.request as { headers?: Record<string, string> };
        if (req.headers !== undefined) req.headers["x-amz-content-sha256"] = "UNSIGNED-PAYLOAD";
        return next(args);
      }, { step: "build", priority: "low", name: "obsUnsignedPayload", override: true }); // before signing (finalizeRequest)
    }
    // The SDK sends `Expect: 100-continue` with large bodies and then opens a fresh, non-keep-alive connection for
    // each such request (a TCP, and on real endpoints TLS, handshake per part). Parts are bounded (≤ part size)
    // and a rejected one costs one wasted body, so connection reuse wins: measured 15–20% less server CPU per GB.
    this.client.middlewareStack.remove("addExpectContinueMiddleware");
  }

  static fromUri(uri: StoreUri, env: Env): S3Store {
    return new S3Store(resolveS3Options(uri, env));
  }

  /** Bucket key for a store key. */
  fullKey(key: string): string {
    if (key === "" || key.startsWith("/")) throw new StorageError("bad_key", `invalid object key ${JSON.stringify(key)}`);
    return `${this.prefix}${key}`;
  }

  private bucketArgs(key: string) {
    return { Bucket: this.opts.bucket, Key: this.fullKey(key) };
  }

  /** The object as a URI for messages: s3://bucket/prefix/key. */
  private target(key: string): string {
    return `${this.opts.scheme}://${this.opts.bucket}/${this.prefix}${key}`;
  }

  private context(op: string, target: string): StoreErrorContext {
    return { op, target, scheme: this.opts.scheme, ...(this.opts.endpoint === undefined ? {} : { endpoint: this.opts.endpoint }) };
  }

  /** One request (or a request and the reading of its body) through the retry layer. */
  private request<T>(op: string, target: string, attempt: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    return withStoreRetry(attempt, {
      ctx: this.context(op, target),
      ...(this.opts.retry === undefined ? {} : { policy: this.opts.retry }),
      ...(this.opts.onRetry === undefined ? {} : { onRetry: this.opts.onRetry }),
      ...(signal === undefined ? {} : { signal }),
    });
  }

  async putBytes(key: string, data: Uint8Array | string, opts: { sha256?: string; contentType?: string; signal?: AbortSignal } = {}): Promise<ObjectInfo> {
    const body = typeof data === "string" ? Buffer.from(data) : Buffer.from(data);
    const sha256 = createHash("sha256").update(body).digest("hex");
    if (opts.sha256 !== undefined && opts.sha256 !== sha256) throw new StorageError("checksum_mismatch", `bytes for ${key} do not match their sha256`);
    const md5 = createHash("md5").update(body).digest();
    const r = await this.request("PUT", this.target(key), async () => {
      const put = await this.client.send(new PutObjectCommand({
        ...this.bucketArgs(key), Body: body, ContentLength: body.length, ContentMD5: md5.toString("base64"),
        Metadata: { sha256 }, ...(opts.contentType === undefined ? {} : { ContentType: opts.contentType }),
      }), opts.signal === undefined ? {} : { abortSignal: opts.signal });
      checkEtag(put.ETag, md5.toString("hex"), key);
      return put;
    }, opts.signal);
    return { key, size: body.length, ...(r.ETag === undefined ? {} : { etag: r.ETag }) };
  }

  /**
   * s3: If-None-Match: * (412 when the key exists). cos: x-cos-forbid-overwrite: true (409 FileAlreadyExists; COS
   * ignores it in a bucket that has ever had versioning). obs: OBS documents no conditional PUT, so a HEAD then a
   * PUT — two writers at the same moment can both create.
   */
  get conditionalCreate(): "atomic" | "checked" {
    return this.opts.scheme === "obs" ? "checked" : "atomic";
  }

  async putBytesIfAbsent(key: string, data: Uint8Array | string, opts: { contentType?: string; signal?: AbortSignal } = {}): Promise<"created" | "exists"> {
    if (this.opts.scheme === "obs") {
      if (await this.head(key, opts.signal) !== undefined) return "exists";
      await this.putBytes(key, data, opts);
      return "created";
    }
    const body = typeof data === "string" ? Buffer.from(data) : Buffer.from(data);
    const md5 = createHash("md5").update(body).digest();
    const sha256 = createHash("sha256").update(body).digest("hex");
    return this.request("PUT", this.target(key), async () => {
      const cmd = new PutObjectCommand({
        ...this.bucketArgs(key), Body: body, ContentLength: body.length, ContentMD5: md5.toString("base64"), Metadata: { sha256 },
        ...(this.opts.scheme === "s3" ? { IfNoneMatch: "*" } : {}), ...(opts.contentType === undefined ? {} : { ContentType: opts.contentType }),
      });
      if (this.opts.scheme === "cos") {
        cmd.middlewareStack.add((next) => async (args) => {
          const req = args.request as { headers?: Record<string, string> };
          if (req.headers !== undefined) req.headers["x-cos-forbid-overwrite"] = "true";
          return next(args);
        }, { step: "build", name: "cosForbidOverwrite" });
      }
      try {
        const put = await this.client.send(cmd, opts.signal === undefined ? {} : { abortSignal: opts.signal });
        checkEtag(put.ETag, md5.toString("hex"), key);
        return "created" as const;
      } catch (e) {
        const status = httpStatusOf(e);
        // A retried PUT whose first try landed also sees the key taken: the caller tells by the content.
        if (status === 412 || (status === 409 && s3CodeOf(e) !== "ConditionalRequestConflict")) return "exists" as const;
        // S3: another conditional write to the key was in flight; send it again.
        if (status === 409) throw new StorageError("store_write_conflict", `PUT ${this.target(key)}: HTTP 409 ConditionalRequestConflict`, { retryable: true, cause: e });
        throw e;
      }
    }, opts.signal);
  }

  async putStream(key: string, body: Readable, opts: { contentType?: string; signal?: AbortSignal } = {}): Promise<ObjectInfo> {
    const { Upload } = await import("@aws-sdk/lib-storage");
    const up = new Upload({
      client: this.client, partSize: MIN_PART_BYTES, queueSize: 4, leavePartsOnError: false,
      params: { ...this.bucketArgs(key), Body: body, ...(opts.contentType === undefined ? {} : { ContentType: opts.contentType }) },
      ...(opts.signal === undefined ? {} : { abortController: abortControllerFor(opts.signal) }),
    });
    // A stream can be read once: no retry here, only the classified error.
    const r = await up.done().catch((e: unknown) => { throw classifyStoreError(e, this.context("PUT", this.target(key)))?.error ?? e; });
    const head = await this.head(key);
    return { key, size: head?.size ?? 0, ...(r.ETag === undefined ? {} : { etag: r.ETag }) };
  }

  async putFile(key: string, path: string, opts: PutFileOptions = {}): Promise<PutFileResult> {
    const size = (await stat(path)).size;
    const plan = planParts(size, opts.partSizeBytes);
    const signal = opts.signal;
    if (plan.count === 1) {
      const fh = await open(path, "r");
      let body: Buffer;
      try {
        body = Buffer.alloc(size);
        if (size > 0) await fh.read(body, 0, size, 0);
      } finally {
        await fh.close();
      }
      const sha256 = createHash("sha256").update(body).digest("hex");
      if (opts.sha256 !== undefined && opts.sha256 !== sha256) throw new StorageError("checksum_mismatch", `${path}: sha256 ${sha256}, expected ${opts.sha256}`);
      const info = await this.putBytes(key, body, { sha256, ...(signal === undefined ? {} : { signal }) });
      opts.onBytes?.(size);
      return { size, sha256, ...(info.etag === undefined ? {} : { etag: info.etag }), partsUploaded: 1, partsReused: 0, bytesReused: 0 };
    }
    const listed = await this.request("LIST-UPLOADS", this.target(key), () => this.client.send(new ListMultipartUploadsCommand({ Bucket: this.opts.bucket, Prefix: this.fullKey(key) }), signal === undefined ? {} : { abortSignal: signal }), signal);
    if (!(listed.Uploads ?? []).some((u) => u.Key === this.fullKey(key))) return this.putFileStreaming(key, path, size, plan, opts);
    // An earlier attempt left an unfinished upload: hash every part first to see which ones it already stored.
    const { sha256, md5s, crc32s } = await hashFile(path, plan.partSize);
    if (opts.sha256 !== undefined && opts.sha256 !== sha256) throw new StorageError("checksum_mismatch", `${path}: sha256 ${sha256}, expected ${opts.sha256}`);
    const session = await this.startMultipart(key, { sha256, size, partSize: plan.partSize, md5s, ...(this.partChecksum === "crc32" ? { crc32s } : {}) }, signal);
    const todo = md5s.map((_, i) => i + 1).filter((n) => !session.done.has(n));
    const partBytes = (n: number) => Math.min(plan.partSize, size - (n - 1) * plan.partSize);
    const bytesReused = [...session.done].reduce((sum, n) => sum + partBytes(n), 0);
    opts.onBytes?.(bytesReused); // already stored: done
    const fh = await open(path, "r");
    try {
      const slots = opts.partSlots ?? new Semaphore(opts.concurrency ?? 8);
      await Promise.all(todo.map((n) => slots.run(async () => {
        const offset = (n - 1) * plan.partSize;
        const len = Math.min(plan.partSize, size - offset);
        const body = Buffer.alloc(len);
        await fh.read(body, 0, len, offset);
        await this.uploadPart(key, session.uploadId, n, body, { md5: md5s[n - 1]!, ...(session.crc32 ? { crc32: crc32s[n - 1]! } : {}) }, signal);
        opts.onBytes?.(len);
      }, signal)));
    } finally {
      await fh.close();
    }
    const etag = await this.completeMultipart(key, session.uploadId, md5s, session.crc32 ? crc32s : undefined, signal);
    return { size, sha256, etag, partsUploaded: todo.length, partsReused: md5s.length - todo.length, bytesReused };
  }

  /**
   * A fresh multipart upload: each part is read once, checksummed (CRC32, or MD5 for Content-MD5 and the ETag
   * check; the file's running SHA-256) and sent while the next part is read, with at most `concurrency` parts in
   * memory.
   */
  private async putFileStreaming(key: string, path: string, size: number, plan: PartPlan, opts: PutFileOptions): Promise<PutFileResult> {
    const signal = opts.signal;
    const { uploadId, crc32: withCrc32 } = await this.createUpload(key, this.partChecksum === "crc32", undefined, signal);
    const sha = createHash("sha256");
    const refs: PartRef[] = [];
    const slots = opts.partSlots ?? new Semaphore(opts.concurrency ?? 8);
    const inflight: Promise<void>[] = [];
    const fh = await open(path, "r");
    try {
      for (let n = 1; n <= plan.count; n++) {
        const release = await slots.acquire(signal);
        const offset = (n - 1) * plan.partSize;
        const len = Math.min(plan.partSize, size - offset);
        const body = Buffer.allocUnsafeSlow(len);
        const { bytesRead } = await fh.read(body, 0, len, offset);
        if (bytesRead !== len) { release(); throw new StorageError("file_changed", `${path} shrank while it was uploaded`); }
        sha.update(body);
        // An upload created with CRC32 needs the CRC32 of every part, also once the store fell back to MD5.
        const digest: PartDigest = {
          ...(withCrc32 ? { crc32: crc32Base64(body) } : {}),
          ...(this.partChecksum === "md5" ? { md5: md5Hex(body) } : {}),
        };
        const p = this.uploadPart(key, uploadId, n, body, digest, signal).then((ref) => { refs[n - 1] = ref; opts.onBytes?.(len); }).finally(release);
        p.catch(() => undefined); // observed below; avoid an unhandled rejection while later parts are read
        inflight.push(p);
      }
      opts.onPartsIssued?.();
      await Promise.all(inflight);
    } finally {
      await fh.close();
    }
    const sha256 = sha.digest("hex");
    if (opts.sha256 !== undefined && opts.sha256 !== sha256) throw new StorageError("checksum_mismatch", `${path}: sha256 ${sha256}, expected ${opts.sha256}`);
    const etag = await this.completeMultipart(key, uploadId, refs.map((r) => r.etag), withCrc32 ? refs.map((r) => r.crc32!) : undefined, signal);
    return { size, sha256, etag, partsUploaded: plan.count, partsReused: 0, bytesReused: 0 };
  }

  /**
   * Resume the newest unfinished upload of `key` whose parts all match `expect` (by size and MD5, and CRC32 when
   * listed), or start one — with CRC32 checksums when `expect.crc32s` is given. An upload that needs CRC32s the
   * caller cannot send is not reused. Stale or mismatching uploads of the key are aborted (unfinished uploads are
   * billed).
   */
  async startMultipart(key: string, expect: { sha256: string; size: number; partSize: number; md5s: readonly string[]; crc32s?: readonly string[] }, signal?: AbortSignal): Promise<{ uploadId: string; done: Set<number>; crc32: boolean }> {
    const full = this.fullKey(key);
    const opt = signal === undefined ? {} : { abortSignal: signal };
    const listed = await this.request("LIST-UPLOADS", this.target(key), () => this.client.send(new ListMultipartUploadsCommand({ Bucket: this.opts.bucket, Prefix: full }), opt), signal);
    const uploads = (listed.Uploads ?? []).filter((u) => u.Key === full && u.UploadId !== undefined)
      .sort((a, b) => (b.Initiated?.getTime() ?? 0) - (a.Initiated?.getTime() ?? 0));
    let reuse: { uploadId: string; done: Set<number>; crc32: boolean } | undefined;
    for (const u of uploads) {
      const crc32 = u.ChecksumAlgorithm === "CRC32";
      if (reuse === undefined && (!crc32 || expect.crc32s !== undefined) && (u.ChecksumAlgorithm === undefined || crc32)) {
        const parts = await this.listParts(key, u.UploadId!, signal);
        const done = new Set<number>();
        let ok = true;
        for (const p of parts) {
          const n = p.partNumber;
          const wantSize = Math.min(expect.partSize, expect.size - (n - 1) * expect.partSize);
          const crcDiffers = p.crc32 !== undefined && expect.crc32s !== undefined && p.crc32 !== expect.crc32s[n - 1];
          if (n < 1 || n > expect.md5s.length || p.size !== wantSize || p.etag !== expect.md5s[n - 1] || crcDiffers) { ok = false; break; }
          done.add(n);
        }
        if (ok) { reuse = { uploadId: u.UploadId!, done, crc32 }; continue; }
      }
      // Best effort: a stale upload left behind costs storage, not correctness.
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.opts.bucket, Key: full, UploadId: u.UploadId! }), opt).catch(() => undefined);
    }
    if (reuse !== undefined) return reuse;
    const created = await this.createUpload(key, expect.crc32s !== undefined && this.partChecksum === "crc32", { sha256: expect.sha256 }, signal);
    return { ...created, done: new Set() };
  }

  /**
   * CreateMultipartUpload, with CRC32 part checksums when asked. A server that refuses the checksum algorithm
   * (400/501: older S3-compatible servers) gets a plain upload, and the store uses MD5 from then on.
   */
  private async createUpload(key: string, crc32: boolean, metadata: Record<string, string> | undefined, signal?: AbortSignal): Promise<{ uploadId: string; crc32: boolean }> {
    const args = { ...this.bucketArgs(key), ...(metadata === undefined ? {} : { Metadata: metadata }) };
    const opt = signal === undefined ? {} : { abortSignal: signal };
    let created;
    let withCrc32 = crc32;
    const create = (withChecksum: boolean) => this.request("CREATE-UPLOAD", this.target(key), () =>
      this.client.send(new CreateMultipartUploadCommand({ ...args, ...(withChecksum ? { ChecksumAlgorithm: "CRC32" } : {}) }), opt), signal);
    try {
      created = await create(withCrc32);
    } catch (e) {
      const status = httpStatusOf(e);
      if (!withCrc32 || (status !== 400 && status !== 501)) throw e;
      created = await create(false);
      // Only now is it the checksum the server refused (a 400 for another reason fails again above).
      this.partChecksum = "md5";
      withCrc32 = false;
    }
    if (created.UploadId === undefined) throw new StorageError("multipart_failed", `CREATE-UPLOAD ${this.target(key)}: the store returned no upload id`);
    return { uploadId: created.UploadId, crc32: withCrc32 };
  }

  async listParts(key: string, uploadId: string, signal?: AbortSignal): Promise<{ partNumber: number; size: number; etag: string; crc32?: string }[]> {
    const out: { partNumber: number; size: number; etag: string; crc32?: string }[] = [];
    let marker: string | undefined;
    for (;;) {
      const r = await this.request("LIST-PARTS", this.target(key), () => this.client.send(new ListPartsCommand({ ...this.bucketArgs(key), UploadId: uploadId, ...(marker === undefined ? {} : { PartNumberMarker: marker }) }), signal === undefined ? {} : { abortSignal: signal }), signal);
      for (const p of r.Parts ?? []) out.push({ partNumber: p.PartNumber ?? 0, size: p.Size ?? -1, etag: stripQuotes(p.ETag), ...(p.ChecksumCRC32 === undefined ? {} : { crc32: p.ChecksumCRC32 }) });
      if (r.IsTruncated !== true || r.NextPartNumberMarker === undefined) break;
      marker = r.NextPartNumberMarker;
    }
    return out;
  }

  /**
   * One part. With an MD5 it goes with Content-MD5 and the server's ETag must be that MD5; with only a CRC32 the
   * server must echo the CRC32 it verified — one that does not (it ignores x-amz-checksum-*) gets the part again
   * with Content-MD5, and the store uses MD5 from then on. A mismatch or damage in transit sends the part again.
   */
  async uploadPart(key: string, uploadId: string, partNumber: number, body: Buffer, digest: PartDigest, signal?: AbortSignal): Promise<PartRef> {
    if (digest.md5 === undefined && digest.crc32 === undefined) throw new StorageError("bad_digest", `${key} part ${partNumber}: no checksum to send`);
    let d = digest;
    // A part damaged in transit (BadDigest, or an ETag/CRC32 that is not the one sent) is a retryable failure.
    return this.request("PUT", `${this.target(key)} part ${partNumber}`, async () => {
      for (;;) {
        const r = await this.client.send(new UploadPartCommand({
          ...this.bucketArgs(key), UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length,
          ...(d.md5 === undefined ? {} : { ContentMD5: Buffer.from(d.md5, "hex").toString("base64") }),
          ...(d.crc32 === undefined ? {} : { ChecksumCRC32: d.crc32 }),
        }), signal === undefined ? {} : { abortSignal: signal });
        if (d.md5 !== undefined) {
          checkEtag(r.ETag, d.md5, `${key} part ${partNumber}`);
          return { etag: stripQuotes(r.ETag) || d.md5, ...(d.crc32 === undefined ? {} : { crc32: d.crc32 }) };
        }
        if (r.ChecksumCRC32 === undefined) {
          // Accepted unverified: this server ignores CRC32 checksums. Send it again, checked by its MD5.
          this.partChecksum = "md5";
          d = { ...d, md5: md5Hex(body) };
          continue;
        }
        if (r.ChecksumCRC32 !== d.crc32) throw new StorageError("checksum_mismatch", `${key} part ${partNumber}: the server stored CRC32 ${r.ChecksumCRC32}, sent ${d.crc32}; sending again`, { retryable: true });
        return { etag: stripQuotes(r.ETag), crc32: d.crc32! };
      }
    }, signal);
  }

  /**
   * Verify every part is present with its ETag (and CRC32 when given), then complete; checks the multipart ETag
   * too. `etags` are the parts' MD5s for MD5-checked parts, the server's ETags otherwise.
   */
  async completeMultipart(key: string, uploadId: string, etags: readonly string[], crc32s?: readonly string[], signal?: AbortSignal): Promise<string> {
    const parts = await this.listParts(key, uploadId, signal);
    const byNumber = new Map(parts.map((p) => [p.partNumber, p]));
    const missing = etags.findIndex((m, i) => {
      const p = byNumber.get(i + 1);
      return p === undefined || p.etag !== m || (crc32s !== undefined && p.crc32 !== undefined && p.crc32 !== crc32s[i]);
    });
    if (missing >= 0) throw new StorageError("part_missing", `${key}: part ${missing + 1} is missing or differs on the server; upload it again`);
    // S3's multipart ETag is the MD5 of the parts' binary MD5s, then "-<count>" (when the part ETags are MD5s).
    const expected = etags.every((m) => /^[0-9a-f]{32}$/.test(m)) ? multipartEtag(etags) : undefined;
    let retried = false;
    let etag: string;
    try {
      etag = await this.request("COMPLETE-UPLOAD", this.target(key), async () => {
        if (retried) {
          // A completion whose reply was lost may have happened: the object is there, with the expected ETag.
          const head = await this.head(key, signal);
          if (head !== undefined && expected !== undefined && head.etag === expected) return expected;
        }
        retried = true;
        const r = await this.client.send(new CompleteMultipartUploadCommand({
          ...this.bucketArgs(key), UploadId: uploadId,
          MultipartUpload: { Parts: etags.map((m, i) => ({ PartNumber: i + 1, ETag: `"${m}"`, ...(crc32s === undefined ? {} : { ChecksumCRC32: crc32s[i]! }) })) },
        }), signal === undefined ? {} : { abortSignal: signal });
        return stripQuotes(r.ETag);
      }, signal);
    } catch (e) {
      if (s3CodeOf(e) !== "NoSuchUpload" || expected === undefined) throw e;
      const head = await this.head(key, signal);
      if (head?.etag !== expected) throw e;
      etag = expected;
    }
    if (expected !== undefined && etag !== "" && /-\d+$/.test(etag) && etag !== expected) throw new StorageError("checksum_mismatch", `${key}: multipart ETag ${etag}, expected ${expected}`);
    return etag;
  }

  async get(key: string, range?: ByteRange, signal?: AbortSignal): Promise<Buffer> {
    try {
      return await this.request("GET", this.target(key), async () => {
        const r = await this.client.send(new GetObjectCommand({ ...this.bucketArgs(key), ...(range === undefined ? {} : { Range: `bytes=${range.start}-${range.end}` }) }), signal === undefined ? {} : { abortSignal: signal });
        return Buffer.from(await r.Body!.transformToByteArray());
      }, signal);
    } catch (e) {
      throw notFound(e, key, this.url);
    }
  }

  /**
   * Download to `path` (written beside, fsynced, renamed into place): ranges in parallel, each streamed straight to
   * its place in the file (nothing but a socket's worth of bytes in memory per range), retried on its own when its
   * connection drops or it comes back short. The SHA-256 is computed while downloading, in file order, on a worker
   * thread that reads each range back (from the page cache) once every range before it is in.
   */
  async download(key: string, path: string, opts: DownloadOptions = {}): Promise<{ size: number; sha256: string }> {
    const head = await this.head(key, opts.signal);
    if (head === undefined) throw new StorageError("not_found", `no object ${key} in ${this.url}`);
    await mkdir(dirname(path), { recursive: true });
    const tmp = `${path}.rlpipe-tmp-${process.pid}-${randomBytes(4).toString("hex")}`;
    // The first failure stops the other ranges; the file is closed and removed only once none is still writing.
    const stop = new AbortController();
    setMaxListeners(0, stop.signal); // every queued range waits on it (slots), by design
    const onAbort = () => stop.abort(opts.signal?.reason);
    if (opts.signal?.aborted === true) onAbort();
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    let fh: FileHandle | undefined;
    let hash: ReturnType<FileHasher["begin"]> | undefined;
    try {
      fh = await open(tmp, "w");
      const file = fh;
      const h = this.hasher.begin(tmp);
      hash = h;
      const ranges = Array.from({ length: Math.ceil(head.size / RANGE_BYTES) }, (_, i) => ({ start: i * RANGE_BYTES, end: Math.min(head.size, (i + 1) * RANGE_BYTES) - 1 }));
      const slots = new Semaphore(opts.concurrency ?? 8);
      const landed = new Set<number>();
      let nextToHash = 0;
      let firstError: unknown;
      await Promise.allSettled(ranges.map((r, i) => slots.run(async () => {
        await this.fetchRangeInto(key, file, r, stop.signal, opts.onBytes);
        landed.add(i);
        while (landed.delete(nextToHash)) { h.add(ranges[nextToHash]!.start, ranges[nextToHash]!.end); nextToHash++; }
      }, stop.signal).catch((e: unknown) => { if (firstError === undefined) { firstError = e; stop.abort(e); } })));
      if (firstError !== undefined) throw firstError;
      const sha256 = await h.finish();
      await file.sync();
      await file.close();
      fh = undefined;
      if (opts.sha256 !== undefined && sha256 !== opts.sha256) {
        throw new StorageError("checksum_mismatch", `${key}: sha256 ${sha256} does not match the manifest's ${opts.sha256}`, {
          exitCode: 1, hint: "the stored object is not what was committed: restore another step (rlpipe checkpoints <run> lists them)",
        });
      }
      await rename(tmp, path);
      return { size: head.size, sha256 };
    } catch (e) {
      hash?.abandon();
      await fh?.close().catch(() => undefined);
      await rm(tmp, { force: true });
      throw e;
    } finally {
      opts.signal?.removeEventListener("abort", onAbort);
    }
  }

  /**
   * One range of an object streamed into `fh` at its offset, in writes of ≥ 1 MiB; the whole range is one
   * request for the retry layer (a body cut off mid-way, short or long, is fetched again).
   */
  private async fetchRangeInto(key: string, fh: FileHandle, r: ByteRange, signal?: AbortSignal, onBytes?: (bytes: number) => void): Promise<void> {
    await this.request("GET", `${this.target(key)} bytes ${r.start}-${r.end}`, async () => {
      let pos = r.start;
      try {
        const res = await this.client.send(new GetObjectCommand({ ...this.bucketArgs(key), Range: `bytes=${r.start}-${r.end}` }), signal === undefined ? {} : { abortSignal: signal });
        let batch: Buffer[] = [];
        let batchBytes = 0;
        const flush = async () => {
          if (batchBytes === 0) return;
          if (pos + batchBytes > r.end + 1) throw new StorageError("long_read", `${key}: range ${r.start}-${r.end} returned more than ${r.end - r.start + 1} bytes`, { retryable: true });
          await fh.writev(batch, pos);
          pos += batchBytes;
          onBytes?.(batchBytes);
          batch = [];
          batchBytes = 0;
        };
        for await (const chunk of res.Body as AsyncIterable<Uint8Array>) {
          batch.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          batchBytes += chunk.byteLength;
          if (batchBytes >= MiB) await flush();
        }
        await flush();
        if (pos !== r.end + 1) throw new StorageError("short_read", `${key}: range ${r.start}-${r.end} returned ${pos - r.start} bytes`, { retryable: true });
      } catch (e) {
        onBytes?.(-(pos - r.start)); // fetched again from its start
        throw e;
      }
    }, signal).catch((e: unknown) => { throw notFound(e, key, this.url); });
  }

  async head(key: string, signal?: AbortSignal): Promise<ObjectInfo | undefined> {
    try {
      const r = await this.request("HEAD", this.target(key), () => this.client.send(new HeadObjectCommand(this.bucketArgs(key)), signal === undefined ? {} : { abortSignal: signal }), signal);
      return {
        key, size: r.ContentLength ?? 0,
        ...(r.ETag === undefined ? {} : { etag: stripQuotes(r.ETag) }),
        ...(r.LastModified === undefined ? {} : { lastModified: r.LastModified }),
        ...(r.Metadata === undefined ? {} : { metadata: r.Metadata }),
      };
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async list(prefix: string, signal?: AbortSignal): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = [];
    let token: string | undefined;
    for (;;) {
      const r = await this.request("LIST", `${this.target(prefix)}*`, () => this.client.send(new ListObjectsV2Command({
        Bucket: this.opts.bucket, Prefix: `${this.prefix}${prefix}`, ...(token === undefined ? {} : { ContinuationToken: token }),
      }), signal === undefined ? {} : { abortSignal: signal }), signal);
      for (const o of r.Contents ?? []) {
        if (o.Key === undefined) continue;
        out.push({ key: o.Key.slice(this.prefix.length), size: o.Size ?? 0, ...(o.ETag === undefined ? {} : { etag: stripQuotes(o.ETag) }), ...(o.LastModified === undefined ? {} : { lastModified: o.LastModified }) });
      }
      if (r.IsTruncated !== true || r.NextContinuationToken === undefined) break;
      token = r.NextContinuationToken;
    }
    return out;
  }

  /** One DeleteObject per key: DeleteObjects needs a checksum header OBS and COS handle differently. */
  async delete(keys: readonly string[], signal?: AbortSignal): Promise<void> {
    const slots = new Semaphore(16);
    await Promise.all(keys.map((k) => slots.run(() => this.request("DELETE", this.target(k), () => this.client.send(new DeleteObjectCommand(this.bucketArgs(k)), signal === undefined ? {} : { abortSignal: signal }), signal), signal)));
  }

  /**
   * The object holds the file when the sizes match and either its ETag is the one rlpipe's upload of the file
   * would get (the MD5 of a single-part object; the MD5 of the parts' MD5s, "-<parts>", of a multipart one — S3,
   * OBS and COS compute it so, unless the bucket encrypts with KMS) or the SHA-256 stored with it matches. One
   * read of the local file; nothing is downloaded.
   */
  async storedCopy(key: string, path: string, opts: { partSizeBytes?: number; listed?: ObjectInfo; signal?: AbortSignal } = {}): Promise<StoredCopy | undefined> {
    const size = (await stat(path)).size;
    let info = opts.listed ?? await this.head(key, opts.signal);
    if (info === undefined || info.size !== size) return undefined;
    const plan = planParts(size, opts.partSizeBytes);
    const local = await hashFile(path, plan.partSize);
    const etag = stripQuotes(info.etag);
    if (etag !== "" && etag === (plan.count === 1 ? local.md5s[0] : multipartEtag(local.md5s))) return { size, sha256: local.sha256 };
    if (info.metadata === undefined) info = await this.head(key, opts.signal);
    return info?.metadata?.["sha256"] === local.sha256 && info.size === size ? { size, sha256: local.sha256 } : undefined;
  }

  /** Presigned URLs for the runs function: a PUT of a whole object or of one part, Content-MD5 signed in. */
  async presignPut(key: string, opts: { md5hex: string; sha256?: string; uploadId?: string; partNumber?: number; expiresInS: number }): Promise<string> {
    const md5 = Buffer.from(opts.md5hex, "hex").toString("base64");
    const how = { expiresIn: opts.expiresInS, signableHeaders: new Set(["content-md5"]) };
    if (opts.uploadId === undefined) {
      return getSignedUrl(this.client, new PutObjectCommand({ ...this.bucketArgs(key), ContentMD5: md5, ...(opts.sha256 === undefined ? {} : { Metadata: { sha256: opts.sha256 } }) }), how);
    }
    return getSignedUrl(this.client, new UploadPartCommand({ ...this.bucketArgs(key), UploadId: opts.uploadId, PartNumber: opts.partNumber!, ContentMD5: md5 }), how);
  }

  /** A presigned GET of one object (SigV4 query auth): whoever holds the URL reads the object until it expires. */
  async presignGet(key: string, expiresInS: number): Promise<string> {
    return getSignedUrl(this.client, new GetObjectCommand(this.bucketArgs(key)), { expiresIn: expiresInS });
  }

  async close(): Promise<void> {
    this.client.destroy();
    await this.hasher.close();
  }
}

/** S3's ETag of a multipart object from its parts' MD5s (hex). */
export function multipartEtag(md5s: readonly string[]): string {
  return `${createHash("md5").update(Buffer.concat(md5s.map((m) => Buffer.from(m, "hex")))).digest("hex")}-${md5s.length}`;
}

function abortControllerFor(signal: AbortSignal): AbortController {
  const c = new AbortController();
  if (signal.aborted) c.abort(signal.reason);
  else signal.addEventListener("abort", () => c.abort(signal.reason), { once: true });
  return c;
}

export function stripQuotes(etag: string | undefined): string {
  return (etag ?? "").replace(/^"|"$/g, "");
}

function checkEtag(etag: string | undefined, md5hex: string, what: string): void {
  const got = stripQuotes(etag);
  // The ETag of a plain or part upload is the MD5 of the bytes the server stored (without SSE-KMS/SSE-C).
  if (got !== "" && got !== md5hex) throw new StorageError("checksum_mismatch", `${what}: the server stored different bytes (ETag ${got}, MD5 ${md5hex}); sending again`, { retryable: true });
}

function isNotFound(e: unknown): boolean {
  const code = s3CodeOf(e);
  return code === "NotFound" || code === "NoSuchKey" || (httpStatusOf(e) === 404 && code !== "NoSuchBucket" && code !== "NoSuchUpload");
}

function notFound(e: unknown, key: string, url: string): unknown {
  return isNotFound(e) ? new StorageError("not_found", `no object ${key} in ${url}`, { cause: e }) : e;
}

/** One sequential read: the whole file's SHA-256 and each part's MD5 (hex) and CRC32 (base64). */
export async function hashFile(path: string, partSize: number): Promise<{ sha256: string; md5s: string[]; crc32s: string[] }> {
  const sha = createHash("sha256");
  const md5s: string[] = [];
  const crc32s: string[] = [];
  let part = createHash("md5");
  let crc = 0;
  let inPart = 0;
  let any = false;
  const endPart = () => {
    md5s.push(part.digest("hex"));
    crc32s.push(crc32Base64(Buffer.alloc(0), crc));
    part = createHash("md5");
    crc = 0;
    inPart = 0;
    any = false;
  };
  for await (const chunk of createReadStream(path, { highWaterMark: 4 * MiB })) {
    const buf = chunk as Buffer;
    sha.update(buf);
    let off = 0;
    while (off < buf.length) {
      const take = Math.min(partSize - inPart, buf.length - off);
      const piece = buf.subarray(off, off + take);
      part.update(piece);
      crc = crc32(piece, crc);
      inPart += take;
      off += take;
      any = true;
      if (inPart === partSize) endPart();
    }
  }
  if (any || md5s.length === 0) endPart();
  return { sha256: sha.digest("hex"), md5s, crc32s };
}

export async function sha256File(path: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(path, { highWaterMark: 4 * MiB })) h.update(chunk as Buffer);
  return h.digest("hex");
}
