// The CLI's side of the provider composition root (functions/providers.ts): jobs on this machine call this rlpipe
// back (rlpipe serve, eval, sync), so the CLI tells the adapters how to run it (RLPIPE_CLI).
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Provider, Recipe } from "../core/recipe/schema.js";
import { shellQuote } from "../core/render/shell.js";
import { type LoadAdapterOptions, type LoadedAdapter, loadAdapter as loadProviderAdapter } from "../functions/providers.js";

export type { LoadedAdapter } from "../functions/providers.js";

/** The command line that runs this rlpipe (jobs on this machine call it back: rlpipe serve, eval, sync). */
export function selfCli(): string {
  const script = resolve(fileURLToPath(import.meta.url), "..", "rlpipe.js");
  return `${shellQuote(process.execPath)} ${shellQuote(script)}`;
}

export function loadAdapter(provider: Provider, recipe: Recipe, opts: LoadAdapterOptions = {}): Promise<LoadedAdapter> {
  return loadProviderAdapter(provider, recipe, { ...opts, env: { RLPIPE_CLI: selfCli(), ...(opts.env ?? process.env) } });
}
