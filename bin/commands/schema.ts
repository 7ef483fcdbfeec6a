// rlpipe schema [--out FILE]: the recipe's JSON Schema, for editor completion (yaml-language-server).
import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { z } from "zod";
import { RecipeSchema } from "../../core/recipe/schema.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";

export function recipeJsonSchema(): unknown {
  return {
    ...z.toJSONSchema(RecipeSchema, { io: "input", unrepresentable: "any" }),
    $id: "https://rlpipe.dev/schema/recipe-v1.json",
    title: "rlpipe recipe (rlpipe/v1)",
  };
}

export function runSchema(argv: readonly string[], io: Io): number {
  const { values } = parseArgs({ args: [...argv], options: COMMANDS.schema.options, strict: true });
  if (values.help) { io.out(formatHelp("schema")); return 0; }
  const text = `${JSON.stringify(recipeJsonSchema(), null, 2)}\n`;
  if (values.out === undefined) io.out(text.trimEnd());
  else { writeFileSync(values.out, text); io.err(`wrote ${values.out}`); }
  return 0;
}
