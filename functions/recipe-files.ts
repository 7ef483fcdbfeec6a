// The planning context of a recipe that lives in a file, the same for validate, plan, deploy and the console
// function: the recipe's own directory (for `datasets.*.ship` files and the reward function's signature check),
// the files rlpipe ships into bundles, and the local working directory (.rlpipe/work/<name> under the current one).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { PlanOptions } from "../core/plan.js";
import type { LoadedRecipe } from "../core/recipe/load.js";
import type { Provider } from "../core/recipe/schema.js";
import { bundledAssets } from "./python-assets.js";

export interface RecipeFilePlanOptions {
  readonly provider?: Provider;
  /** Force a verl profile (--verl-profile). */
  readonly profile?: string;
}

export function planOptionsFor(file: string, loaded: LoadedRecipe, opts: RecipeFilePlanOptions = {}): PlanOptions {
  const recipeDir = dirname(resolve(file));
  return {
    ...(opts.provider === undefined ? {} : { provider: opts.provider }),
    ...(opts.profile === undefined ? {} : { profile: opts.profile }),
    localWorkDir: resolve(".rlpipe", "work", loaded.recipe.metadata.name),
    readRecipeFile: (rel) => readBeside(recipeDir, rel),
    assets: bundledAssets(),
  };
}

/** A file named relative to the recipe's directory, or undefined (absolute paths and ${…} are never read). */
export function readBeside(dir: string, rel: string): string | undefined {
  if (rel.startsWith("/") || rel.includes("${")) return undefined;
  const p = join(dir, rel);
  return existsSync(p) ? readFileSync(p, "utf8") : undefined;
}
