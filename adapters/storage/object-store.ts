// The object-store interface every backend implements — s3://, obs://, cos:// (through the S3 API) and file://
// (the embedded default) — and its error type. Keys are relative to the store's root (bucket + prefix).
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
  /** Bytes the server has acknowledged, as they are (a part, or the whole file when it goes in one request). */
  readonly onBytes?: (bytes: number) => void;
}

export interface DownloadOptions {
  /** Verify the file against this SHA-256 (hex); a mismatch fails with exit code 1 and leaves no file. */
  readonly sha256?: string;
  /** Ranges in flight (default 8). */
  readonly concurrency?: number;
  readonly signal?: AbortSignal;
  /** Bytes written to disk, as they land. */
  readonly onBytes?: (bytes: number) => void;
}

/** A stored object that already holds a local file's bytes (see ObjectStore.storedCopy). */
export interface StoredCopy {
  readonly size: number;
  readonly sha256: string;
}

export interface PutFileResult {
  readonly size: number;
  readonly sha256: string;
  readonly etag?: string;
  readonly partsUploaded: number;
  /** Parts an interrupted earlier attempt had already uploaded (not sent again), and their bytes. */
  readonly partsReused: number;
  readonly bytesReused: number;
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
  /**
   * Create `key` only when no object has it: "created" when this call made it, "exists" when one was there. How
   * firmly depends on the store (`conditionalCreate`). A write retried after a lost reply may find its own object
   * and say "exists": callers that must know tell by the content.
   */
  putBytesIfAbsent(key: string, data: Uint8Array | string, opts?: { readonly contentType?: string; readonly signal?: AbortSignal }): Promise<"created" | "exists">;
  /** atomic: the store decides in the write itself; checked: a lookup then a write (two writers at once can both create). */
  readonly conditionalCreate: "atomic" | "checked";
  /** A stream of unknown length. */
  putStream(key: string, body: Readable, opts?: { readonly contentType?: string; readonly signal?: AbortSignal }): Promise<ObjectInfo>;
  get(key: string, range?: ByteRange, signal?: AbortSignal): Promise<Buffer>;
  /**
   * Download to a file (parallel ranges for large objects), written beside it and renamed into place; verifies
   * the SHA-256 when given. Whatever fails, no partial file is left behind once the promise settles.
   */
  download(key: string, path: string, opts?: DownloadOptions): Promise<{ size: number; sha256: string }>;
  head(key: string, signal?: AbortSignal): Promise<ObjectInfo | undefined>;
  list(prefix: string, signal?: AbortSignal): Promise<ObjectInfo[]>;
  delete(keys: readonly string[], signal?: AbortSignal): Promise<void>;
  /**
   * Whether the object `key` already holds exactly the file at `path` — same size, and a checksum the store kept
   * (its SHA-256, or the MD5-based ETag of the parts rlpipe would send) matches the file's — so an interrupted
   * upload need not send it again. `listed` is the object as a listing returned it (saves a request).
   */
  storedCopy(key: string, path: string, opts?: { readonly partSizeBytes?: number; readonly listed?: ObjectInfo; readonly signal?: AbortSignal }): Promise<StoredCopy | undefined>;
  close(): Promise<void>;
}

/**
 * An object-store failure with a stable `code`, an exit code (2: fix the configuration; 3: the store refused or
 * could not be reached; 1: data that does not verify) and a hint. `retryable`: sending the same request again may
 * succeed (the store's one retry layer does, within its time budget).
 */
export class StorageError extends RlpipeError {
  readonly retryable: boolean;
  constructor(code: string, message: string, opts: { hint?: string; cause?: unknown; exitCode?: ExitCode; retryable?: boolean } = {}) {
    super(code, message, opts);
    this.name = "StorageError";
    this.retryable = opts.retryable ?? false;
  }
}

/** What the store says while it waits to send a request again (the CLI prints one line on stderr). */
export interface RetryNotice {
  /** PUT, GET, HEAD, LIST, DELETE, … */
  readonly op: string;
  /** The object or prefix, as a URI (s3://bucket/key). */
  readonly target: string;
  /** Why, in a few words: "connection refused", "HTTP 503 SlowDown". */
  readonly reason: string;
  /** The attempt about to be made (2 for the first retry). */
  readonly attempt: number;
  readonly delayMs: number;
}

/** `retrying PUT s3://b/k: connection refused (attempt 2, next in 1.3 s)` */
export function formatRetryNotice(n: RetryNotice): string {
  return `retrying ${n.op} ${n.target}: ${n.reason} (attempt ${n.attempt}, next in ${(n.delayMs / 1000).toFixed(1)} s)`;
}

/**
 * A sink for retry notices that prints at most one line per `minIntervalMs` for the same reason (parallel parts
 * failing together would otherwise print one line each).
 */
export function retryLines(write: (line: string) => void, minIntervalMs = 1000, now: () => number = Date.now): (n: RetryNotice) => void {
  let lastAt = -Infinity;
  let lastReason = "";
  return (n) => {
    const t = now();
    if (n.reason === lastReason && t - lastAt < minIntervalMs) return;
    lastAt = t;
    lastReason = n.reason;
    write(formatRetryNotice(n));
  };
}

/**
 * A local file-system failure (a file:// store, a checkpoint or restore directory) as a StorageError a user can
 * act on; other errors (ENOENT among them: callers handle a file that went away) are returned unchanged.
 */
export function fsError(e: unknown, where: string): unknown {
  const x = e as NodeJS.ErrnoException;
  const path = x.path ?? where;
  switch (x.code) {
    case "EACCES": case "EPERM": return new StorageError("permission_denied", `${path}: permission denied (${x.syscall ?? "access"})`, { exitCode: 2, cause: e, hint: `give this user access to ${path}` });
    case "EROFS": return new StorageError("read_only", `${path}: read-only file system`, { exitCode: 2, cause: e, hint: "use a writable directory" });
    case "ENOSPC": case "EDQUOT": return new StorageError("disk_full", `${path}: no space left (${x.code})`, { exitCode: 3, cause: e, hint: `free space on the file system of ${path}` });
    case "ENOTDIR": case "EISDIR": return new StorageError("bad_path", `${path}: ${x.code === "ENOTDIR" ? "a file where a directory is needed" : "a directory where a file is needed"}`, { exitCode: 2, cause: e, hint: "check the path" });
    default: return e;
  }
}
