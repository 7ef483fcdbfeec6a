// Composition root for providers: loads adapters/providers/<provider>.js only when that provider is used (the
// cloud SDKs are heavy), and gives it object-store access for bundle uploads. Adapters never import each other.
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { RlpipeError } from "../core/errors.js";
import type { Recipe, Provider } from "../core/recipe/schema.js";
import { shellQuote } from "../core/render/shell.js";
import type { AdapterContext, AdapterFactory, BundleSink, ProviderAdapter } from "../adapters/providers/provider.js";
import { type ObjectStore, openStore, retryLines } from "../adapters/storage/store.js";

/** The command line that runs this rlpipe (jobs on this machine call it back: rlpipe serve, eval, sync). */
export function selfCli(): string {
  const script = resolve(fileURLToPath(import.meta.url), "..", "rlpipe.js");
  return `${shellQuote(process.execPath)} ${shellQuote(script)}`;
}

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

export async function loadAdapter(provider: Provider, recipe: Recipe, opts: { env?: NodeJS.ProcessEnv; cwd?: string; log?: (line: string) => void } = {}): Promise<LoadedAdapter> {
  if (provider === "docker") {
    throw new RlpipeError("no_deploy_target", "provider docker has no API to deploy to: run the docker-run.sh that `rlpipe plan --provider docker` writes, on the host", { exitCode: 2 });
  }
  const env: NodeJS.ProcessEnv = { RLPIPE_CLI: selfCli(), ...(opts.env ?? process.env) };
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
  let mod: { createAdapter?: AdapterFactory };
  try {
    mod = await import(`../adapters/providers/${provider}.js`) as { createAdapter?: AdapterFactory };
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
