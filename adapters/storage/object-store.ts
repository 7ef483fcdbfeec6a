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
