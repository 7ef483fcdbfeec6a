// The URI → store factory. The backends load on demand (the S3 SDK only for cloud schemes); they import the
// shared types from object-store.ts, never this module, so the imports form no circle.
import type { ObjectStore, RetryNotice } from "./object-store.js";
import { parseStoreUri } from "./store-uri.js";

export interface OpenStoreOptions {
  /** Told before each retry of a failed request (the CLI prints a line on stderr). */
  readonly onRetry?: (n: RetryNotice) => void;
}

/** Open the store for a URI; SDKs load only for cloud schemes. Bad URIs and configuration fail here (exit code 2). */
export async function openStore(uri: string, env: Readonly<Record<string, string | undefined>> = process.env, opts: OpenStoreOptions = {}): Promise<ObjectStore> {
  const parsed = parseStoreUri(uri);
  if (parsed.scheme === "file") {
    const { FsStore } = await import("./fs.js");
    return new FsStore(parsed.bucket);
  }
  const { S3Store, resolveS3Options } = await import("./s3.js");
  return new S3Store({ ...resolveS3Options(parsed, env), ...(opts.onRetry === undefined ? {} : { onRetry: opts.onRetry }) });
}
