// An error as a JSON document a user (or a script) can act on: what (code, message), where (file, line, recipe
// path, every issue of a recipe) and what to do (hint), with the exit code it maps to. The CLI prints it with
// --json; the console function answers with it.
import { ExitCode, RecipeError, RlpipeError, formatPath } from "./errors.js";

export interface ErrorDocument {
  readonly code: string;
  readonly message: string;
  readonly hint?: string;
  readonly exitCode: number;
  readonly file?: string;
  readonly line?: number;
  readonly col?: number;
  readonly path?: string;
  /** Every error-level issue of a recipe, each with where it is. */
  readonly issues?: readonly { code: string; message: string; path: string; hint?: string; file?: string; line?: number; col?: number }[];
}

const CLI_BUG_HINT = "this is a bug in rlpipe; please report it with the command you ran (set RLPIPE_DEBUG=1 for a stack trace)";

/** What the user is told about `e`; anything that is no RlpipeError is a bug (exit 4) unless it is a timeout. */
export function errorDocument(e: unknown, opts: { internalHint?: string } = {}): ErrorDocument {
  if (e instanceof RecipeError) {
    const errors = e.issues.filter((i) => i.severity === "error");
    const first = errors[0];
    const at = (i: (typeof errors)[number]) => ({
      ...(i.file === undefined ? {} : { file: i.file }), ...(i.line === undefined ? {} : { line: i.line, col: i.col ?? 1 }),
    });
    return {
      code: e.code, message: `${e.file}: ${errors.length} error${errors.length === 1 ? "" : "s"}`, exitCode: ExitCode.invalidInput,
      file: first?.file ?? e.file, ...(first?.line === undefined ? {} : { line: first.line, col: first.col ?? 1 }),
      ...(first === undefined ? {} : { path: formatPath(first.path) }),
      issues: errors.map((i) => ({ code: i.code, message: i.message, path: formatPath(i.path), ...(i.hint === undefined ? {} : { hint: i.hint }), ...at(i) })),
    };
  }
  if (e instanceof RlpipeError) {
    return { code: e.code, message: e.message, ...(e.hint === undefined ? {} : { hint: e.hint }), exitCode: e.exitCode };
  }
  // A deadline that escaped a provider or store call: the world was slow, not rlpipe wrong.
  if (e instanceof Error && e.name === "TimeoutError") {
    return { code: "timeout", message: `no answer in time: ${e.message}`, hint: "check the endpoint and your network; the command can be repeated", exitCode: ExitCode.external };
  }
  const msg = e instanceof Error ? e.message : String(e);
  return { code: "internal_error", message: `internal error: ${msg}`, exitCode: ExitCode.internal, hint: opts.internalHint ?? CLI_BUG_HINT };
}
