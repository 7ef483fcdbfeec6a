// The runs function (presigned checkpoint and metrics uploads, manifest commits) as a cloud function: the store
// from RLPIPE_RUNS_STORE (s3://, obs:// or cos://; credentials from the platform's role, see the adapters) and
// the secret per-run tokens derive from, RLPIPE_RUNS_SECRET, from the platform's secret store. Each run's
// routes authenticate with that run's token; /v1/ping is public.
import { parseStoreUri } from "../../adapters/storage/store.js";
import { S3Store } from "../../adapters/storage/s3.js";
import type { ColdStart, FunctionApp, FunctionAppFactory } from "../app.js";
import { ResultCache } from "../reward.js";
import { route } from "../router.js";
import { configError, optionalPositiveInt, requireEnv, requireSecret } from "./config.js";

export const RUNS_ENV = {
  store: "RLPIPE_RUNS_STORE",
  secret: "RLPIPE_RUNS_SECRET",
  urlTtlS: "RLPIPE_RUNS_URL_TTL_S",
} as const;

export const runsApp: FunctionAppFactory = async (cold: ColdStart): Promise<FunctionApp> => {
  const uri = requireEnv(cold, RUNS_ENV.store, "the object store for checkpoints and metrics (s3://, obs:// or cos://bucket/prefix)");
  let parsed;
  try {
    parsed = parseStoreUri(uri);
  } catch (e) {
    throw configError("config_invalid", `${RUNS_ENV.store}: ${(e as Error).message}`);
  }
  if (parsed.scheme === "file") throw configError("config_invalid", `${RUNS_ENV.store} must be s3://, obs:// or cos:// (the runs function hands out presigned URLs)`);
  const urlTtlS = optionalPositiveInt(cold, RUNS_ENV.urlTtlS);
  const secret = await requireSecret(cold, RUNS_ENV.secret, 16, "the secret per-run tokens derive from");
  const store = S3Store.fromUri(parsed, cold.env);
  cold.log(`runs function: store ${store.url}`);
  const deps = { runs: { store, secret, ...(urlTtlS === undefined ? {} : { urlTtlS }) }, cache: new ResultCache() };
  return { http: (req) => route(req, deps) };
};
