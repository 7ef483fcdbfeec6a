// Store endpoints from S3_ENDPOINT / AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, OBS_ENDPOINT or COS_ENDPOINT, read by
// the same rules as every endpoint (core/util/endpoint.ts): without a scheme (obs.cn-north-4.myhuaweicloud.com, as
// consoles print them) https://, or http:// on a loopback address; plain http only for loopback servers.
import { parseEndpoint } from "../../core/util/endpoint.js";
import { StorageError } from "./object-store.js";

/** The endpoint as a URL string (its scheme added when it has none), or a configuration error naming `variable`. */
export function storeEndpoint(raw: string, variable: string): string {
  const r = parseEndpoint(raw);
  if ("problem" in r) {
    throw new StorageError(r.problem.code, `${variable}: ${r.problem.message}`, { exitCode: 2, hint: r.problem.hint ?? `set ${variable} to https://host[:port] (a host alone means https://host)` });
  }
  if (r.url.pathname !== "/" || r.url.search !== "" || r.url.hash !== "") {
    throw new StorageError("bad_endpoint", `${variable}: an S3 endpoint is a scheme, host and port only, got ${JSON.stringify(raw)}`, { exitCode: 2, hint: "put the bucket and prefix in the store URI (s3://bucket/prefix), not in the endpoint" });
  }
  return r.url.origin;
}
