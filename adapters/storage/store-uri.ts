// Store URIs: s3://bucket/prefix, obs://…, cos://bucket-appid/…, file:///dir or an absolute directory.
import { StorageError } from "./object-store.js";

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
