// A recipe copied out of rlpipe's package, made to work where it is written: the editor-schema comment points at
// the schema from its new place, and its comments name the new file instead of recipes/<name>.yaml.
import type { Recipe } from "./schema.js";

const MODELINE = /^#\s*yaml-language-server:\s*\$schema=.*$/m;

/** The `# yaml-language-server: $schema=…` line yaml-language-server reads (VS Code's YAML extension, neovim's yamlls). */
export function schemaModeline(schemaRef: string): string {
  return `# yaml-language-server: $schema=${schemaRef}`;
}

/**
 * `text` with its schema comment pointing at `schemaRef` (added as the first line when it has none) and each
 * mention of `recipes/<name>.yaml` (the shipped place, in usage comments) replaced by `writtenAs`.
 */
export function starterText(text: string, opts: { readonly name: string; readonly schemaRef: string; readonly writtenAs: string }): string {
  const line = schemaModeline(opts.schemaRef);
  const withSchema = MODELINE.test(text) ? text.replace(MODELINE, () => line) : `${line}\n${text}`;
  return withSchema.split(`recipes/${opts.name}.yaml`).join(opts.writtenAs);
}

/** Files the recipe needs next to it (datasets' `ship`), relative to its directory. */
export function filesNextToRecipe(recipe: Recipe): string[] {
  return Object.values(recipe.datasets ?? {}).flatMap((d) => (d.ship === undefined ? [] : [d.ship])).sort();
}
