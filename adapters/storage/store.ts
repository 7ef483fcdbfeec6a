// One object-store interface for s3://, obs://, cos:// (through the S3 API) and file:// (embedded default).
// Keys are relative to the store's root (bucket + prefix).
import type { Readable } from "node:stream";
import { type ExitCode, RlpipeError } from "../../core/errors.js";
import type { Semaphore } from "../../core/util/semaphore.js";

/**
 * Default multipart part size: 8 MiB (as the AWS CLI), the smallest every backend accepts. Memory is bounded by
 * part slots × part size, and against the loopback server it measured fastest. Larger files get larger parts
 * (S3 allows 10,000 parts per upload).
 */
export const DEFAULT_PART_BYTES = 8 * 1024 * 1024;

export interface ObjectInfo {
  readonly key: string;
  readonly size: number;
  readonly etag?: string;
  readonly lastModified?: Date;
  /** User metadata: the sha256 rlpipe stores with single-part files and resumable uploads (the manifest is authoritative). */
  readonly metadata?: Readonly<Record<string, string>>;
}

export interface PutFileOptions {
  /** Multipart part size (default 8 MiB, the minimum rlpipe uses so that S3, OBS and COS all accept it). */
  readonly partSizeBytes?: number;
  /** Parts in flight (default 8). */
  readonly concurrency?: number;
  /**
   * Part slots shared with other uploads (overrides `concurrency`): a checkpoint sync bounds the parts in flight,
   * and so the memory they hold, across all its files instead of per file.
   */
  readonly partSlots?: Semaphore;
  /** Whole-file SHA-256 (hex) when already known; computed otherwise. */
  readonly sha256?: string;
  readonly signal?: AbortSignal;
  /**
   * Called once every part of a fresh multipart upload has been read and handed out (only the last ones are still
   * in flight, then the completion): a caller uploading files one after another can start the next one here, so
   * the pipe does not drain at every file boundary.
   */
  readonly onPartsIssued?: () => void;
}

export interface PutFileResult {
  readonly size: number;
  readonly sha256: string;
  readonly etag?: string;
  readonly partsUploaded: number;
  /** Parts an interrupted earlier attempt had already uploaded (not sent again). */
  readonly partsReused: number;
}

export interface ByteRange {
  readonly start: number;
  /** Inclusive. */
  readonly end: number;
}

export interface ObjectStore {
  /** The root, e.g. s3://bucket/prefix or file:///abs/dir. */
  readonly url: string;
  putFile(key: string, path: string, opts?: PutFileOptions): Promise<PutFileResult>;
  putBytes(key: string, data: Uint8Array | string, opts?: { readonly sha256?: string; readonly contentType?: string; readonly signal?: AbortSignal }): Promise<ObjectInfo>;
  /** A stream of unknown length. */
  putStream(key: string, body: Readable, opts?: { readonly contentType?: string; readonly signal?: AbortSignal }): Promise<ObjectInfo>;
  get(key: string, range?: ByteRange, signal?: AbortSignal): Promise<Buffer>;
  /** Download to a file (parallel ranges for large objects); verifies the SHA-256 when given. */
  download(key: string, path: string, opts?: { readonly sha256?: string; readonly concurrency?: number; readonly signal?: AbortSignal }): Promise<{ size: number; sha256: string }>;
  head(key: string, signal?: AbortSignal): Promise<ObjectInfo | undefined>;
  list(prefix: string, signal?: AbortSignal): Promise<ObjectInfo[]>;
  delete(keys: readonly string[], signal?: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export class StorageError extends RlpipeError {
  constructor(code: string, message: string, opts: { hint?: string; cause?: unknown; exitCode?: ExitCode } = {}) {
    super(code, message, opts);
    this.name = "StorageError";
  }
}

export type StoreScheme = "s3" | "obs" | "cos" | "file";

export interface StoreUri {
  readonly scheme: StoreScheme;
  /** Bucket, or the absolute directory for file://. */
  readonly bucket: string;
  /** Key prefix inside the bucket, without leading or trailing slash ("" for none). */
  readonly prefix: string;
}

export function parseStoreUri(uri: string): StoreUri {
  if (!uri.includes("://")) {
    if (!uri.startsWith("/")) throw new StorageError("bad_store_uri", `a local store must be an absolute path or file:// URI, got ${JSON.stringify(uri)}`, { exitCode: 2 });
    return { scheme: "file", bucket: uri.replace(/\/+$/, "") || "/", prefix: "" };
  }
  const m = /^(s3|obs|cos|file):\/\/(.*)$/.exec(uri);
  if (m === null) throw new StorageError("bad_store_uri", `unsupported store URI ${JSON.stringify(uri)}`, { exitCode: 2, hint: "use s3://bucket/prefix, obs://bucket/prefix, cos://bucket-appid/prefix or file:///dir" });
  const scheme = m[1] as StoreScheme;
  const rest = m[2]!;
  if (scheme === "file") {
    if (!rest.startsWith("/")) throw new StorageError("bad_store_uri", `file:// URIs must be absolute (file:///dir), got ${JSON.stringify(uri)}`, { exitCode: 2 });
    return { scheme, bucket: rest.replace(/\/+$/, "") || "/", prefix: "" };
  }
  const [bucket, ...parts] = rest.split("/");
  if (bucket === undefined || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    throw new StorageError("bad_store_uri", `invalid bucket name in ${JSON.stringify(uri)}`, { exitCode: 2, hint: scheme === "cos" ? "COS buckets are <name>-<APPID>" : "3–63 lower-case letters, digits, '.' or '-'" });
  }
  const prefix = parts.filter((p) => p !== "").join("/");
  return { scheme, bucket, prefix };
}

/** Open the store for a URI; SDKs load only for cloud schemes. */
export async function openStore(uri: string, env: Readonly<Record<string, string | undefined>> = process.env): Promise<ObjectStore> {
  const parsed = parseStoreUri(uri);
  if (parsed.scheme === "file") {
    const { FsStore } = await import("./fs.js");
    return new FsStore(parsed.bucket);
  }
  const { S3Store } = await import("./s3.js");
  return S3Store.fromUri(parsed, env);
}
