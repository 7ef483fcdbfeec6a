// Terminal output for the CLI: every line passes through redaction; errors go to stderr with their hints.
import { ExitCode, RecipeError, RlpipeError, formatIssue } from "../core/errors.js";
import { Redactor } from "../core/redact.js";

export interface Io {
  out(text: string): void;
  err(text: string): void;
}

export function processIo(extraSecretEnvNames: readonly string[] = []): Io {
  const r = new Redactor(process.env, extraSecretEnvNames);
  return {
    out: (t) => process.stdout.write(`${r.redact(t)}\n`),
    err: (t) => process.stderr.write(`${r.redact(t)}\n`),
  };
}

/** Print an error the user can act on and return its exit code (see ExitCode in core/errors.ts). */
export function reportError(io: Io, e: unknown): number {
  if (e instanceof RecipeError) {
    const errors = e.issues.filter((i) => i.severity === "error");
    for (const issue of errors) io.err(formatIssue(issue));
    io.err(`${e.file}: ${errors.length} error${errors.length === 1 ? "" : "s"}`);
    return ExitCode.invalidInput;
  }
  if (e instanceof RlpipeError) {
    io.err(`rlpipe: ${e.message}${e.hint === undefined ? "" : `\n  hint: ${e.hint}`}`);
    return e.exitCode;
  }
  const msg = e instanceof Error ? e.message : String(e);
  io.err(`rlpipe: internal error: ${msg}\n  this is a bug in rlpipe; please report it with the command you ran (set RLPIPE_DEBUG=1 for a stack trace)`);
  if (process.env["RLPIPE_DEBUG"] === "1" && e instanceof Error && e.stack !== undefined) io.err(e.stack);
  return ExitCode.internal;
}
