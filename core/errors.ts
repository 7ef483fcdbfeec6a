// Errors a user can act on. Every error has a stable `code`; callers match on the code, never on the text.

/** A path into the recipe data, e.g. ["stages", 2, "rollout", "n"]. */
export type RecipePath = readonly (string | number)[];

export type Severity = "error" | "warning";

/** One finding about a recipe: what is wrong, where, and what to do. */
export interface RecipeIssue {
  readonly severity: Severity;
  /** Stable machine-readable code, e.g. "invalid_type", "unknown_key", "tp_not_divisor". */
  readonly code: string;
  readonly path: RecipePath;
  readonly message: string;
  readonly hint?: string;
}

/** Base of every rlpipe error. `exitCode` 2 means bad input, 1 an internal or remote failure. */
export class RlpipeError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly exitCode: 1 | 2;
  constructor(code: string, message: string, opts: { hint?: string; exitCode?: 1 | 2; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "RlpipeError";
    this.code = code;
    this.hint = opts.hint;
    this.exitCode = opts.exitCode ?? 1;
  }
}

/** A recipe that cannot be used: carries every error-level issue, each with its location. */
export class RecipeError extends RlpipeError {
  readonly file: string;
  readonly issues: readonly LocatedIssue[];
  constructor(file: string, issues: readonly LocatedIssue[]) {
    const first = issues[0];
    super(first?.code ?? "invalid_recipe", issues.map(formatIssue).join("\n"), { exitCode: 2 });
    this.name = "RecipeError";
    this.file = file;
    this.issues = issues;
  }
}

/** An issue with a source position (1-based line and column) when the recipe came from a file. */
export interface LocatedIssue extends RecipeIssue {
  readonly file?: string;
  readonly line?: number;
  readonly col?: number;
}

/** `stages[2].rollout.n` from ["stages", 2, "rollout", "n"]. */
export function formatPath(path: RecipePath): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_-]*$/.test(part)) out += out === "" ? part : `.${part}`;
    else out += `[${JSON.stringify(part)}]`;
  }
  return out === "" ? "(recipe)" : out;
}

/** `recipes/x.yaml:12:7: stages[2].rollout.n: expected a positive integer, got "eight"` plus an indented hint. */
export function formatIssue(issue: LocatedIssue): string {
  const where = issue.file === undefined ? "" : `${issue.file}${issue.line === undefined ? "" : `:${issue.line}:${issue.col ?? 1}`}: `;
  const level = issue.severity === "warning" ? "warning: " : "";
  const head = `${where}${level}${formatPath(issue.path)}: ${issue.message}`;
  return issue.hint === undefined ? head : `${head}\n  hint: ${issue.hint}`;
}
