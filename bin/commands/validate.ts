// rlpipe validate <recipe…> [--provider P] [--strict] [--json]: for CI. Exit 0 when every recipe plans cleanly, 2
// otherwise. Without --provider a recipe is planned for every target it declares (local when it declares none), so a
// CI check sees what any later `plan` or `deploy` of it would; --strict refuses placeholders as deploy does, and the
// sandbox capacity warnings.
import { parseArgs } from "node:util";
import { type LocatedIssue, RecipeError, RlpipeError, formatIssue, formatPath } from "../../core/errors.js";
import type { Io } from "../io.js";
import { strictCapacityErrors } from "../../core/capacity.js";
import { plan } from "../../core/plan.js";
import { loadRecipeFile } from "../../core/recipe/load.js";
import { refusePlaceholders } from "../../core/recipe/placeholders.js";
import { PROVIDERS, type Provider } from "../../core/recipe/schema.js";
import { parseProvider, planOptionsFor, usage } from "./plan.js";

interface IssueJson {
  readonly severity: "error" | "warning";
  readonly code: string;
  readonly path: readonly (string | number)[];
  readonly message: string;
  readonly line?: number;
  readonly col?: number;
  readonly hint?: string;
}

/** One issue for --json: what planDocument gives for warnings, plus the severity. */
function issueJson(i: LocatedIssue): IssueJson {
  return { severity: i.severity, code: i.code, path: i.path, message: i.message, ...(i.line === undefined ? {} : { line: i.line, col: i.col ?? 1 }), ...(i.hint === undefined ? {} : { hint: i.hint }) };
}

/** The placeholder warnings as the errors a deploy would refuse them with (none when there are none). */
function placeholderRefusal(file: string, warnings: readonly LocatedIssue[]): LocatedIssue[] {
  try {
    refusePlaceholders(file, warnings);
    return [];
  } catch (e) {
    if (e instanceof RecipeError) return [...e.issues];
    throw e;
  }
}

export const VALIDATE_USAGE = "usage: rlpipe validate <recipe.yaml>... [--provider P] [--strict] [--json]";

export function runValidate(argv: readonly string[], io: Io): number {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: { provider: { type: "string", short: "p" }, strict: { type: "boolean", default: false }, json: { type: "boolean", default: false }, help: { type: "boolean", short: "h", default: false } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(VALIDATE_USAGE); return 0; }
  if (positionals.length === 0) throw usage("rlpipe validate needs at least one recipe file");
  const provider = values.provider === undefined ? undefined : parseProvider(values.provider);
  const results: { file: string; ok: boolean; errors: string[]; warnings: string[]; issues: IssueJson[] }[] = [];
  for (const file of positionals) {
    try {
      const loaded = loadRecipeFile(file);
      const declared = PROVIDERS.filter((t) => loaded.recipe.targets?.[t] !== undefined);
      const targets: readonly (Provider | undefined)[] = provider !== undefined ? [provider] : declared.length > 0 ? declared : [undefined];
      // The same finding through several targets (a recipe-level warning) is reported once.
      const warnings = new Map<string, LocatedIssue>();
      for (const target of targets) {
        for (const w of plan(loaded, planOptionsFor(file, loaded, target === undefined ? {} : { provider: target })).warnings) warnings.set(formatIssue(w), w);
      }
      const found = [...warnings.values()];
      // --strict: the placeholders deploy refuses are errors here, with deploy's words (refusePlaceholders), and so are
      // the sandbox capacity warnings (their hints name the fields to change).
      const refused = values.strict ? [...placeholderRefusal(file, found), ...strictCapacityErrors(found)] : [];
      const rest = found.filter((w) => !refused.some((r) => r.code === w.code && formatPath(r.path) === formatPath(w.path)));
      results.push({ file, ok: refused.length === 0, errors: refused.map(formatIssue), warnings: rest.map(formatIssue), issues: [...refused, ...rest].map(issueJson) });
    } catch (e) {
      if (e instanceof RecipeError) results.push({ file, ok: false, errors: e.issues.map(formatIssue), warnings: [], issues: e.issues.map(issueJson) });
      else if (e instanceof RlpipeError && e.exitCode === 2) results.push({ file, ok: false, errors: [e.message], warnings: [], issues: [{ severity: "error", code: e.code, path: [], message: e.message, ...(e.hint === undefined ? {} : { hint: e.hint }) }] });
      else throw e;
    }
  }
  if (values.json) {
    io.out(JSON.stringify(results, null, 2));
  } else {
    for (const r of results) {
      if (r.ok) io.out(`ok      ${r.file}${r.warnings.length > 0 ? ` (${r.warnings.length} warning${r.warnings.length > 1 ? "s" : ""})` : ""}`);
      else io.err(`invalid ${r.file}`);
      for (const e of r.errors) io.err(e.split("\n").map((l) => `  ${l}`).join("\n"));
      for (const w of r.warnings) io.out(w.split("\n").map((l) => `  ${l}`).join("\n"));
    }
  }
  return results.every((r) => r.ok) ? 0 : 2;
}
