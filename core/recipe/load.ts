// Recipe text → validated Recipe, or a RecipeError whose every issue says file:line:col, the path, what was
// expected, what was found, and a hint.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { LineCounter, parseDocument } from "yaml";
import type { z } from "zod";
import { type LocatedIssue, RecipeError, type RecipeIssue, type RecipePath, RlpipeError, formatPath } from "../errors.js";
import { descriptionOf, keysAt, schemaAt } from "./introspect.js";
import { type Recipe, RecipeSchema } from "./schema.js";
import { type SourceMap, sourceMapOf } from "./source.js";
import { whatToWrite } from "./expected.js";
import { closest, didYouMean } from "./suggest.js";
import { yamlSyntaxIssues } from "./yaml-errors.js";

export interface LoadedRecipe {
  readonly recipe: Recipe;
  /** The file name as given (used in messages). */
  readonly file: string;
  readonly source: SourceMap;
  /** sha256 of the canonical JSON of the validated recipe. */
  readonly hash: string;
}

/** Largest recipe accepted; a recipe is a page of YAML, not a dataset. */
const MAX_RECIPE_BYTES = 1 << 20;

export function loadRecipeFile(file: string): LoadedRecipe {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new RlpipeError("recipe_unreadable", `${file}: cannot read recipe (${code ?? String(e)})`, {
      exitCode: 2,
      hint: code === "ENOENT" ? "check the path; recipes live in recipes/*.yaml" : undefined,
    });
  }
  return parseRecipe(text, file);
}

export function parseRecipe(text: string, file: string): LoadedRecipe {
  if (Buffer.byteLength(text) > MAX_RECIPE_BYTES) {
    throw new RecipeError(file, [{ severity: "error", code: "recipe_too_large", path: [], message: `recipe is larger than ${MAX_RECIPE_BYTES} bytes`, file }]);
  }
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  const source = sourceMapOf(doc, lines);
  if (doc.errors.length > 0) throw new RecipeError(file, yamlSyntaxIssues(text, doc, doc.errors, lines, file));
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 50 });
  } catch (e) {
    throw new RecipeError(file, [{ severity: "error", code: "yaml_syntax", path: [], message: (e as Error).message, file }]);
  }
  if (data === null || typeof data !== "object" || Array.isArray(data)) {
    throw new RecipeError(file, [{ severity: "error", code: "not_a_mapping", path: [], message: "a recipe must be a YAML mapping (apiVersion, kind, metadata, …)", file, line: 1, col: 1 }]);
  }
  const parsed = RecipeSchema.safeParse(data);
  if (!parsed.success) {
    const issues = parsed.error.issues.flatMap((i) => zodIssueToRecipeIssues(i, data));
    throw new RecipeError(file, locateAll(dedupe(misspeltKeys(issues, data)), source, file));
  }
  const recipe = parsed.data as Recipe;
  return { recipe, file, source, hash: sha256(canonicalJson(recipe)) };
}

/** Attach file:line:col to issues found after loading (semantic checks, interpolation). */
export function locateAll(issues: readonly RecipeIssue[], source: SourceMap, file: string): LocatedIssue[] {
  return issues.map((i) => {
    const at = i.code === "unknown_key" ? "key" : "value";
    const p = source.locate(i.path, at);
    return { ...i, file, ...(p === undefined ? {} : { line: p.line, col: p.col }) };
  });
}

function dedupe(issues: RecipeIssue[]): RecipeIssue[] {
  const seen = new Set<string>();
  return issues.filter((i) => {
    const k = `${formatPath(i.path)}|${i.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * A misspelt required key is one mistake, not two ("missing field" plus "unknown key"): the missing field becomes
 * the unknown key that is close to it, with "did you mean". zod reports no unknown keys of a union member it could
 * not pick (a stage without `type`), so the keys at the parent are compared with the schema's here.
 */
function misspeltKeys(issues: RecipeIssue[], data: unknown): RecipeIssue[] {
  const replaced = new Set<string>();
  const out = issues.map((i) => {
    const field = i.path[i.path.length - 1];
    if (i.code !== "missing_field" || typeof field !== "string") return i;
    const parent = i.path.slice(0, -1);
    const here = valueAt(data, parent);
    if (here === null || typeof here !== "object" || Array.isArray(here)) return i;
    const allowed = new Set(keysAt(RecipeSchema, parent, data));
    const typo = Object.keys(here).find((k) => !allowed.has(k) && !replaced.has(formatPath([...parent, k])) && closest(k, [field]) === field);
    if (typo === undefined) return i;
    replaced.add(formatPath([...parent, typo]));
    return { severity: "error" as const, code: "unknown_key", path: [...parent, typo], message: `unknown key ${JSON.stringify(typo)}`, hint: `did you mean ${JSON.stringify(field)}?` };
  });
  // The unknown-key issue zod raised for the same key is now the replacement itself.
  return out.filter((i, n) => !(i.code === "unknown_key" && replaced.has(formatPath(i.path)) && issues[n]!.code === "unknown_key"));
}

function valueAt(data: unknown, path: RecipePath): unknown {
  let d = data;
  for (const p of path) d = d !== null && typeof d === "object" ? (d as Record<string | number, unknown>)[p] : undefined;
  return d;
}

/** How a found value is shown: short, JSON-quoted for strings, by shape for collections. */
export function describeValue(v: unknown): string {
  if (v === undefined) return "nothing";
  if (v === null) return "null";
  if (Array.isArray(v)) return "a list";
  if (typeof v === "object") return "a mapping";
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}..."` : s;
}

const GENERIC_EXPECTED: Record<string, string> = {
  object: "a mapping", array: "a list", string: "a string", number: "a number", boolean: "true or false",
};

function zodIssueToRecipeIssues(issue: z.core.$ZodIssue, data: unknown): RecipeIssue[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
  const value = valueAt(data, path);
  const schema = schemaAt(RecipeSchema, path, data);
  const description = descriptionOf(schema);
  const mk = (code: string, message: string, hint?: string, at: RecipePath = path): RecipeIssue => ({
    severity: "error", code, path: at, message, ...(hint === undefined ? {} : { hint }),
  });

  switch (issue.code) {
    case "unrecognized_keys": {
      const allowed = keysAt(RecipeSchema, path, data);
      return issue.keys.map((k) => mk("unknown_key", `unknown key ${JSON.stringify(k)}`,
        didYouMean(k, allowed) ?? (allowed.length > 0 ? `allowed keys here: ${allowed.join(", ")}` : undefined), [...path, k]));
    }
    case "invalid_type": {
      if (value === undefined) {
        const field = path[path.length - 1];
        return [mk("missing_field", `missing required field${field === undefined ? "" : ` ${JSON.stringify(field)}`}`, description)];
      }
      const expected = issue.message.startsWith("expected") ? issue.message : `expected ${GENERIC_EXPECTED[issue.expected] ?? issue.expected}`;
      return [mk("invalid_type", `${expected}, got ${describeValue(value)}`, whatToWrite(schema, value) ?? description)];
    }
    case "invalid_value": {
      const values = issue.values.map(String);
      if (value === undefined) {
        const field = path[path.length - 1];
        return [mk("missing_field", `missing required field${field === undefined ? "" : ` ${JSON.stringify(field)}`} (${values.join(", ")})`, description)];
      }
      const suggestion = typeof value === "string" ? didYouMean(value, values) : undefined;
      return [mk("invalid_value", `${issue.message}, got ${describeValue(value)}`, suggestion ?? description)];
    }
    case "invalid_union": {
      if ("discriminator" in issue && issue.discriminator !== undefined) {
        const options = (issue as { options?: unknown[] }).options?.map(String) ?? [];
        const suggestion = typeof value === "string" ? didYouMean(value, options) : undefined;
        const message = value === undefined ? `missing required field ${JSON.stringify(issue.discriminator)} (${options.join(", ")})` : `${issue.message}, got ${describeValue(value)}`;
        return [mk(value === undefined ? "missing_field" : "invalid_value", message, suggestion ?? description)];
      }
      return [mk("invalid_type", `${issue.message.startsWith("expected") ? issue.message : "value does not match any allowed form"}, got ${describeValue(value)}`, description)];
    }
    default: {
      const base = issue.message.startsWith("expected") ? issue.message : issue.message.charAt(0).toLowerCase() + issue.message.slice(1);
      // Range and format errors (too_small, too_big, a refinement): say what is allowed, by example.
      return [mk(issue.code, value === undefined ? base : `${base}, got ${describeValue(value)}`, whatToWrite(schema, value) ?? description)];
    }
  }
}

/** JSON with object keys sorted at every level: stable across key order in the YAML. */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(",")}}`;
}

export function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}
