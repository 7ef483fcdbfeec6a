// Shared test helpers: repository paths and planning a recipe from recipes/.
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type Plan, type PlanOptions, plan } from "../core/plan.js";
import { type LoadedRecipe, loadRecipeFile, parseRecipe } from "../core/recipe/load.js";
import type { Provider } from "../core/recipe/schema.js";
import { parseDocument } from "yaml";
import { bundledAssets } from "../bin/commands/plan.js";

/** Repository root (tests run from dist/test/). */
export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const RECIPES = join(ROOT, "recipes");
export const FIXTURES = join(ROOT, "test", "fixtures");

export const SEED_RECIPES = [
  "qwen3-1.7b-code-toolcall",
  "qwen3-1.7b-code-toolcall-sd",
  "retool-qwen3-4b-ascend",
  "retool-qwen2.5-32b-h200",
  "retool-qwen3-4b-tione-ags",
] as const;

/** The provider each seed recipe was published for. */
export const SEED_PROVIDER: Record<(typeof SEED_RECIPES)[number], Provider> = {
  "qwen3-1.7b-code-toolcall": "docker",
  "qwen3-1.7b-code-toolcall-sd": "local",
  "retool-qwen3-4b-ascend": "docker",
  "retool-qwen2.5-32b-h200": "ray",
  "retool-qwen3-4b-tione-ags": "tione",
};

export function recipePath(name: string): string {
  return join(RECIPES, `${name}.yaml`);
}

export function loadSeed(name: string): LoadedRecipe {
  return loadRecipeFile(recipePath(name));
}

export function planSeed(name: string, provider: Provider, opts: Omit<PlanOptions, "provider"> = {}): Plan {
  return plan(loadSeed(name), { provider, localWorkDir: "/tmp/rlpipe-test-work", assets: bundledAssets(), ...opts });
}

export function recipeText(name: string): string {
  return readFileSync(recipePath(name), "utf8");
}

export function planText(text: string, provider: Provider = "local", file = "test.yaml"): Plan {
  return plan(parseRecipe(text, file), { provider, localWorkDir: "/tmp/rlpipe-test-work", assets: bundledAssets() });
}

/** Deterministic PRNG (mulberry32): randomized trials reproduce from their seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A recipe's text with values set (or deleted, for undefined) at YAML paths, comments kept. */
export function editYaml(text: string, edits: [(string | number)[], unknown][]): string {
  const doc = parseDocument(text);
  for (const [p, v] of edits) v === undefined ? doc.deleteIn(p) : doc.setIn(p, v);
  return doc.toString();
}
