// The URI → store factory. The backends load on demand (the S3 SDK only for cloud schemes); they import the
// shared types from object-store.ts, never this module, so the imports form no circle.
import type { ObjectStore } from "./object-store.js";
import { parseStoreUri } from "./store-uri.js";

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
