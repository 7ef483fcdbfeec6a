// Composition root for providers, shared by the CLI and the console function: loads adapters/providers/<provider>
// only when that provider is used (the cloud SDKs are heavy), and gives it object-store access for bundle uploads.
// Adapters never import each other. The modules are named one by one (not by a computed path) so that a bundler
// (esbuild, for rlpipe package and the CDK app) sees and includes them.
import { resolve } from "node:path";
import { RlpipeError } from "../core/errors.js";
import type { Provider, Recipe } from "../core/recipe/schema.js";
import type { AdapterContext, AdapterFactory, BundleSink, ProviderAdapter } from "../adapters/providers/provider.js";
import { type ObjectStore, openStore, retryLines } from "../adapters/storage/store.js";

type AdapterModule = { createAdapter?: AdapterFactory };

const ADAPTER_MODULES: Readonly<Record<Exclude<Provider, "docker">, () => Promise<AdapterModule>>> = {
  local: () => import("../adapters/providers/local.js"),
  ray: () => import("../adapters/providers/ray.js"),
  slurm: () => import("../adapters/providers/slurm.js"),
  modelarts: () => import("../adapters/providers/modelarts.js"),
  tione: () => import("../adapters/providers/tione.js"),
};

/**
 * A BundleSink over a store opened on first use (opening validates the URI and reads credentials). The store
 * retries failed requests itself (saying so through `log`) and fails with a StorageError carrying its exit code.
 */
function lazySink(uri: string, env: NodeJS.ProcessEnv, log?: (line: string) => void): BundleSink & { close(): Promise<void> } {
  let store: Promise<ObjectStore> | undefined;
  const get = () => (store ??= openStore(uri.includes("://") ? uri : resolve(uri), env, log === undefined ? {} : { onRetry: retryLines(log) }));
  return {
    putBytes: async (key, data, opts) => (await get()).putBytes(key, data, opts),
    head: async (key, signal) => (await get()).head(key, signal),
    close: async () => { if (store !== undefined) await (await store).close(); },
  };
}

export interface LoadedAdapter {
  readonly adapter: ProviderAdapter;
  close(): Promise<void>;
}

export interface LoadAdapterOptions {
  /** Credentials and endpoints (default process.env). */
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** Progress lines (already redacted by the caller). */
  readonly log?: (line: string) => void;
}

export async function loadAdapter(provider: Provider, recipe: Recipe, opts: LoadAdapterOptions = {}): Promise<LoadedAdapter> {
  if (provider === "docker") {
    throw new RlpipeError("no_deploy_target", "provider docker has no API to deploy to: run the docker-run.sh that `rlpipe plan --provider docker` writes, on the host", { exitCode: 2 });
  }
  const env: NodeJS.ProcessEnv = opts.env ?? process.env;
  const sinks: ReturnType<typeof lazySink>[] = [];
  // The bundle's bucket is in the job's region unless OBS_/COS_REGION say otherwise.
  const sinkEnv: NodeJS.ProcessEnv = {
    ...env,
    ...(env["OBS_REGION"] === undefined && recipe.targets?.modelarts?.region !== undefined ? { OBS_REGION: recipe.targets.modelarts.region } : {}),
    ...(env["COS_REGION"] === undefined && recipe.targets?.tione?.region !== undefined ? { COS_REGION: recipe.targets.tione.region } : {}),
  };
  const ctx: AdapterContext = {
    env, recipe, cwd: opts.cwd ?? process.cwd(),
    bundleSink: (uri) => { const s = lazySink(uri, sinkEnv, opts.log); sinks.push(s); return s; },
    ...(opts.log === undefined ? {} : { log: opts.log }),
  };
  let mod: AdapterModule;
  try {
    mod = await ADAPTER_MODULES[provider]();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ERR_MODULE_NOT_FOUND") throw new RlpipeError("provider_unavailable", `provider ${provider} is not available in this build`, { cause: e });
    throw e;
  }
  if (mod.createAdapter === undefined) throw new RlpipeError("provider_unavailable", `adapters/providers/${provider}.js exports no createAdapter`, { exitCode: 4 });
  const adapter = await mod.createAdapter(ctx);
  return {
    adapter,
    close: async () => {
      await adapter.close?.();
      for (const s of sinks) await s.close();
    },
  };
}
