// rlpipe init [FILE] [--from NAME] [--force]: a recipe to start from — a copy of a shipped one (default the local demo,
// which plans and runs on this machine), with the files it ships and a schema comment that works where it is written.
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { parseArgs } from "node:util";
import { RlpipeError } from "../../core/errors.js";
import { parseRecipe } from "../../core/recipe/load.js";
import { filesNextToRecipe, starterText } from "../../core/recipe/starter.js";
import { didYouMean } from "../../core/recipe/suggest.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";
import { PACKAGE_ROOT, SCHEMA_FILE, shippedRecipeNames, shippedRecipePath } from "../shipped-recipes.js";
import { usage } from "./plan.js";

export const DEFAULT_INIT_FILE = "recipe.yaml";
export const DEFAULT_INIT_RECIPE = "local-demo";

interface Output { readonly path: string; readonly text: string }

export function runInit(argv: readonly string[], io: Io): number {
  const { values, positionals } = parseArgs({ args: [...argv], options: COMMANDS.init.options, allowPositionals: true, strict: true });
  if (values.help) { io.out(formatHelp("init")); return 0; }
  if (positionals.length > 1) throw usage("rlpipe init takes at most one file name");
  const name = recipeName(values.from ?? DEFAULT_INIT_RECIPE);

  let file = positionals[0] ?? DEFAULT_INIT_FILE;
  if (existsSync(file) && statSync(file).isDirectory()) file = join(file, DEFAULT_INIT_FILE);
  const dir = dirname(resolve(file));

  const source = readFileSync(shippedRecipePath(name), "utf8");
  const text = starterText(source, { name, schemaRef: schemaRefFrom(dir), writtenAs: file });
  // What init writes must load (the plan checks are the tests' job): a failure here is rlpipe's bug, not the user's.
  const recipe = parseRecipe(text, file).recipe;
  const shipped = filesNextToRecipe(recipe).map((p) => ({ path: join(dir, p), text: readFileSync(join(dirname(shippedRecipePath(name)), p), "utf8") }));

  // Refuse before writing anything; a shipped file already there with the same content is fine as it is.
  // Outside rlpipe's tree the schema goes next to the recipe (a copy: generated, always refreshed), so the comment
  // works for anyone who gets the recipe — not only on the machine where rlpipe was installed.
  const schemaCopy = schemaRefFrom(dir) === SCHEMA_COPY ? { path: join(dir, SCHEMA_COPY), text: readFileSync(SCHEMA_FILE, "utf8") } : undefined;
  const outputs: Output[] = [...shipped, ...(schemaCopy === undefined ? [] : [schemaCopy]), { path: resolve(file), text }];
  const conflicts = outputs.filter((o) => o !== schemaCopy && existsSync(o.path) && !(o.path !== resolve(file) && readFileSync(o.path, "utf8") === o.text));
  if (conflicts.length > 0 && values.force !== true) {
    const names = conflicts.map((c) => (c.path === resolve(file) ? file : relative(process.cwd(), c.path) || c.path));
    throw new RlpipeError("file_exists", `${names.join(", ")} already exist${names.length === 1 ? "s" : ""}; nothing was written`, {
      exitCode: 2, hint: `pass --force to replace ${names.length === 1 ? "it" : "them"}, or name another file: rlpipe init other.yaml`,
    });
  }
  // The recipe last: it never exists without the files it ships.
  for (const o of outputs) writeAtomically(o.path, o.text);

  const extra = [...shipped, ...(schemaCopy === undefined ? [] : [schemaCopy])].map((s) => relative(dir, s.path));
  if (values.json) {
    io.out(JSON.stringify({ file, from: name, schema: schemaRefFrom(dir), files: [file, ...extra.map((e) => join(dirname(file), e))] }));
    return 0;
  }
  io.out(`wrote ${file} (from ${name})${extra.length === 0 ? "" : `, with ${extra.join(", ")} next to it`}`);
  io.out(`  editor schema: ${schemaRefFrom(dir)}`);
  io.out(`  next: rlpipe validate ${file}; rlpipe plan ${file}${name === DEFAULT_INIT_RECIPE ? `; rlpipe deploy ${file} --provider local --yes --wait` : ""}`);
  return 0;
}

/** A shipped recipe's name from what the user typed (`local-demo`, `local-demo.yaml`, `recipes/local-demo.yaml`). */
function recipeName(given: string): string {
  const names = shippedRecipeNames();
  const name = given.replace(/^.*\//, "").replace(/\.ya?ml$/, "");
  if (names.includes(name)) return name;
  const guess = didYouMean(name, names);
  throw new RlpipeError("unknown_recipe", `no shipped recipe is called ${JSON.stringify(given)}${guess === undefined ? "" : `; ${guess}`}`, {
    exitCode: 2, hint: `shipped recipes: ${names.join(", ")}`,
  });
}

/** The schema's copy next to a recipe written outside rlpipe's tree. */
const SCHEMA_COPY = "recipe.schema.json";

/**
 * Where the schema comment points: relative to the recipe when it is written inside rlpipe's own tree (a clone,
 * like the shipped recipes), else the copy init writes next to it — an absolute path into this machine's install
 * would break completion for anyone else who opens the recipe.
 */
function schemaRefFrom(dir: string): string {
  const root = realpathSync(PACKAGE_ROOT);
  const schema = realpathSync(SCHEMA_FILE);
  const here = realPath(dir);
  const insideTree = here === root || here.startsWith(root + sep);
  return insideTree ? relative(here, schema).split(sep).join("/") : SCHEMA_COPY;
}

/** The real path of `p`, whose last parts may not exist yet (init creates them). */
function realPath(p: string): string {
  if (existsSync(p)) return realpathSync(p);
  const parent = dirname(p);
  return parent === p ? p : join(realPath(parent), basename(p));
}

/** Write beside and rename: the file is either as it was or complete, never half-written. */
function writeAtomically(path: string, text: string): void {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp-init`);
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(tmp, text, { flag: "wx" });
    renameSync(tmp, path);
  } catch (e) {
    try { rmSync(tmp, { force: true }); } catch { /* its directory could not be made: there is no temporary file */ }
    const code = (e as NodeJS.ErrnoException).code ?? String(e);
    throw new RlpipeError("write_failed", `cannot write ${relative(process.cwd(), path) || path} (${code})`, { exitCode: 2, hint: "name a file in a directory you can write to", cause: e });
  }
}
