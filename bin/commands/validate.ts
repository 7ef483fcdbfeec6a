// rlpipe validate <recipe…> [--provider P] [--json]: for CI. Exit 0 when every recipe plans cleanly, 2 otherwise.
import { parseArgs } from "node:util";
import { type LocatedIssue, RecipeError, RlpipeError, formatIssue } from "../../core/errors.js";
import type { Io } from "../io.js";
import { parseProvider, planRecipeFile, usage } from "./plan.js";

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

export const VALIDATE_USAGE = "usage: rlpipe validate <recipe.yaml>... [--provider P] [--json]";

export function runValidate(argv: readonly string[], io: Io): number {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: { provider: { type: "string", short: "p" }, json: { type: "boolean", default: false }, help: { type: "boolean", short: "h", default: false } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(VALIDATE_USAGE); return 0; }
  if (positionals.length === 0) throw usage("rlpipe validate needs at least one recipe file");
  const provider = values.provider === undefined ? undefined : parseProvider(values.provider);
  const results: { file: string; ok: boolean; errors: string[]; warnings: string[]; issues: IssueJson[] }[] = [];
  for (const file of positionals) {
    try {
      const { plan: p } = planRecipeFile(file, provider === undefined ? {} : { provider });
      results.push({ file, ok: true, errors: [], warnings: p.warnings.map(formatIssue), issues: p.warnings.map(issueJson) });
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
