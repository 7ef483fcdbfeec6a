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

/**
 * The one exit-code convention of every rlpipe command (README and `rlpipe --help` list it):
 * - 0 ok;
 * - 1 failed: the command worked but what it checked did not pass — a job ended FAILED or STOPPED, an eval below
 *   its minimum pass rate, a file that did not verify against its manifest;
 * - 2 invalid input: usage, a recipe, a flag, missing credentials or configuration, an unknown run — fix the input;
 * - 3 external: a provider, network, object store or sandbox refused or could not be reached (auth, missing bucket,
 *   quota, timeouts after the retries) — the input may be fine, the world was not;
 * - 4 internal: a bug in rlpipe;
 * - 130 cancelled: a prompt was declined or the command was interrupted (Ctrl-C); nothing was created.
 */
export const ExitCode = { ok: 0, failed: 1, invalidInput: 2, external: 3, internal: 4, cancelled: 130 } as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** What each exit code means, in the order `rlpipe --help` and the README list them. */
export const EXIT_CODE_MEANINGS: readonly (readonly [ExitCode, string])[] = [
  [ExitCode.ok, "ok"],
  [ExitCode.failed, "failed: a job ended FAILED or STOPPED, an eval was below its minimum, a file did not verify"],
  [ExitCode.invalidInput, "invalid input: usage, a recipe, a flag, missing credentials or configuration, an unknown run"],
  [ExitCode.external, "external: a provider, network, object store or sandbox refused or could not be reached (auth, missing bucket, after retries)"],
  [ExitCode.internal, "internal error: a bug in rlpipe"],
  [ExitCode.cancelled, "cancelled: a declined prompt or Ctrl-C (a job already created keeps running)"],
];

/** Base of every rlpipe error; `exitCode` follows ExitCode (default: external, a failure outside rlpipe). */
export class RlpipeError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly exitCode: ExitCode;
  constructor(code: string, message: string, opts: { hint?: string; exitCode?: ExitCode; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = "RlpipeError";
    this.code = code;
    this.hint = opts.hint;
    this.exitCode = opts.exitCode ?? ExitCode.external;
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
