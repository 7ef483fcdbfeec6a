// The usage store of a cloud function (RLPIPE_USAGE_STORE): where its UsageMeter writes this instance's record.
// The S3 client (the AWS SDK, also for OBS and COS) is imported on the first write, not at cold start: a function
// without the variable never loads it, and on Lambda (a split ES module bundle) it is a chunk the entry does not read.
// Credentials are the platform's, like the runs function's store: Lambda's role (AWS_*), FunctionGraph's agency
// (OBS_*), SCF's role (COS_*). A write is small and answers wait for it, so it gets a short timeout and retry budget:
// a store that is down costs a reward call about two seconds and a log line, never the reward.
import type { StoreRetryPolicy } from "../adapters/storage/store-retry.js";
import { type StoreUri, parseStoreUri } from "../adapters/storage/store-uri.js";
import type { UsageSink } from "./usage-meter.js";

export const USAGE_WRITE_RETRY: StoreRetryPolicy = { maxAttempts: 3, budgetMs: 2_000 };
export const USAGE_WRITE_TIMEOUT_MS = 5_000;

/** RLPIPE_USAGE_STORE parsed and checked without the network; throws a message naming what is wrong. */
export function parseUsageStore(uri: string): StoreUri {
  const parsed = parseStoreUri(uri);
  if (parsed.scheme === "file") throw new TypeError("must be s3://, obs:// or cos://bucket/prefix (a function instance has no lasting disk)");
  return parsed;
}

/** A sink that opens the store on its first write. */
export function lazyStoreSink(uri: StoreUri, env: NodeJS.ProcessEnv): UsageSink & { readonly opened: () => boolean } {
  let store: Promise<{ putBytes(key: string, data: string | Uint8Array): Promise<unknown> }> | undefined;
  return {
    url: `${uri.scheme}://${uri.bucket}${uri.prefix === "" ? "" : `/${uri.prefix}`}`,
    opened: () => store !== undefined,
    async putBytes(key, data) {
      store ??= import("../adapters/storage/s3.js").then(({ S3Store, resolveS3Options }) =>
        new S3Store({ ...resolveS3Options(uri, env), retry: USAGE_WRITE_RETRY, requestTimeoutMs: USAGE_WRITE_TIMEOUT_MS, connectTimeoutMs: USAGE_WRITE_TIMEOUT_MS }));
      // A store that could not be opened (missing region, bad endpoint) is tried again by the next write.
      const s = await store.catch((e: unknown) => { store = undefined; throw e; });
      return s.putBytes(key, data);
    },
  };
}
