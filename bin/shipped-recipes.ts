// The recipes rlpipe ships (recipes/*.yaml in the package), by name: what `rlpipe init --from` copies.
import { readdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The package root: dist/bin/ is two levels below it, in a clone and in an installed package alike. */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const RECIPES_DIR = join(PACKAGE_ROOT, "recipes");
export const SCHEMA_FILE = join(PACKAGE_ROOT, "schema", "recipe.schema.json");

/** Names of the shipped recipes, sorted (empty when the package has none: help must still print). */
export function shippedRecipeNames(): string[] {
  try {
    return readdirSync(RECIPES_DIR).filter((f) => f.endsWith(".yaml")).map((f) => f.slice(0, -".yaml".length)).sort();
  } catch {
    return [];
  }
}

export function shippedRecipePath(name: string): string {
  return join(RECIPES_DIR, `${name}.yaml`);
}
