// Values a recipe template leaves for its user to fill in (rsg-xxxxxxxx, <bucket>, CHANGE_ME, your-project,
// cos://bucket-1250000000/…, https://sandbox.example.com). Planning with them is fine — a plan is also for review
// and cost reports — so plan and validate warn; a deploy would send them to a provider, so it refuses them.
import { type LocatedIssue, RecipeError, type RecipeIssue, type RecipePath } from "../errors.js";
import type { Provider, Recipe } from "./schema.js";

export const PLACEHOLDER_CODE = "placeholder_value";

/** Free text for people (or for the model), never sent as a setting: placeholders there are not settings. */
const PROSE_KEYS = new Set(["description", "note", "provenance", "schema"]);

/** Ids whose digits are an example's: 1250000000 (COS's example APPID), 000000000000. */
const ID_KEY = /(?:id|Id|ID|appid|account|Account|project|Project)$/;

/** Why `value` (at a key named `key`) looks like a placeholder, or undefined. */
export function placeholderReason(value: string, key: string | number | undefined): string | undefined {
  const v = value.trim();
  if (/(?:^|[^A-Za-z])[xX]{4,}(?:[^A-Za-z]|$)/.test(v)) return "it contains a run of x";
  if (!/\s/.test(v) && /<[A-Za-z][\w .:-]*>/.test(v)) return "it contains an <angle-bracket> name";
  if (/^<[^<>]+>$/.test(v)) return "it is an <angle-bracket> name";
  if (/\b(?:TODO|FIXME|TBD|CHANGE_?ME|REPLACE_?ME)\b/.test(v) || /\b(?:change|replace)-?me\b/i.test(v)) return "it says to change it";
  if (/(?:^|[^A-Za-z0-9])your[-_][A-Za-z]/i.test(v)) return "it names your-… value";
  const host = /^[a-z][a-z0-9+.-]*:\/\/(?:[^/@]*@)?([^/:?#]+)/i.exec(v)?.[1]?.toLowerCase();
  if (host !== undefined && /(?:^|\.)example\.(?:com|org|net)$|\.example$|\.invalid$/.test(host)) return `its host ${host} is an example domain`;
  const bucket = /^(?:s3|obs|cos):\/\/([^/]+)/.exec(v)?.[1];
  if (bucket !== undefined && /0{6,}/.test(bucket)) return `its bucket ${bucket} carries an example account number`;
  if (typeof key === "string" && ID_KEY.test(key) && /(?:^|[^0-9])0{6,}|0{6,}(?:[^0-9]|$)/.test(v) && /\d{8,}/.test(v)) return "it is an example id (a run of zeros)";
  return undefined;
}

/**
 * Every placeholder-shaped string value of the recipe, as warnings with their paths. Targets other than the one
 * planned for are skipped: a TI-ONE resource group left as a template does not matter to a docker plan.
 */
export function findPlaceholders(recipe: Recipe, provider: Provider): RecipeIssue[] {
  const issues: RecipeIssue[] = [];
  const walk = (value: unknown, path: RecipePath): void => {
    const key = path[path.length - 1];
    if (typeof key === "string" && PROSE_KEYS.has(key)) return;
    if (typeof value === "string") {
      const why = placeholderReason(value, key);
      if (why !== undefined) {
        issues.push({
          severity: "warning", code: PLACEHOLDER_CODE, path,
          message: `${JSON.stringify(value)} looks like a placeholder (${why})`,
          hint: "replace it with your own value; rlpipe deploy refuses a recipe that still has one",
        });
      }
      return;
    }
    if (Array.isArray(value)) { value.forEach((v, i) => walk(v, [...path, i])); return; }
    if (value !== null && typeof value === "object") {
      for (const [k, v] of Object.entries(value)) {
        if (path.length === 1 && path[0] === "targets" && k !== provider) continue;
        walk(v, [...path, k]);
      }
    }
  };
  for (const [k, v] of Object.entries(recipe)) walk(v, [k]);
  return issues;
}

/** The placeholder warnings of a plan. */
export function placeholdersIn(warnings: readonly LocatedIssue[]): LocatedIssue[] {
  return warnings.filter((w) => w.code === PLACEHOLDER_CODE);
}

/** For deploy: a plan that still carries placeholder values is refused (exit 2), each named with its place. */
export function refusePlaceholders(file: string, warnings: readonly LocatedIssue[]): void {
  const found = placeholdersIn(warnings);
  if (found.length === 0) return;
  throw new RecipeError(file, found.map((w) => ({
    ...w, severity: "error" as const,
    message: `${w.message}: refusing to deploy it`,
    hint: "set your own value in the recipe (rlpipe plan lists every placeholder left)",
  })));
}
