// Terminal output for the CLI: every line passes through redaction; errors go to stderr with their hints, and with
// --json also to stdout as {"error": {...}} so a script reading stdout sees why a command failed.
import { type ErrorDocument, errorDocument } from "../core/error-document.js";
import { RecipeError, formatIssue } from "../core/errors.js";
import { Redactor } from "../core/redact.js";
import { TerminalLine } from "./terminal-line.js";
import { isParseArgsError, parseArgsErrorDocument } from "./usage-errors.js";

export interface Io {
  out(text: string): void;
  err(text: string): void;
  /**
   * A transient status line (a heartbeat, progress) on a terminal: replaced by the next one, kept under the lines
   * printed meanwhile, "" takes it away. Absent when stderr is not a terminal; callers print plain lines now and then.
   */
  status?(text: string): void;
  /**
   * Text the user asked for that is a bearer credential by design (`rlpipe report --url`: a presigned URL), on stdout
   * only and never redacted — redaction would blank its signature and hand out a dead link. Nothing else uses it.
   */
  bearer?(text: string): void;
}

export function processIo(extraSecretEnvNames: readonly string[] = []): Io {
  const r = new Redactor(process.env, extraSecretEnvNames);
  return streamIo((raw) => process.stdout.write(raw), (raw) => process.stderr.write(raw), {
    // A terminal that reports no width (0) gets 80 columns.
    terminal: process.stderr.isTTY === true ? { columns: () => process.stderr.columns || 80 } : undefined,
    redact: (t) => r.redact(t),
  });
}

/** An Io writing raw text to `out` and `err`; with `terminal`, err is a terminal that gets a live status line. */
export function streamIo(out: (raw: string) => void, err: (raw: string) => void, opts: { terminal: { columns: () => number } | undefined; redact: (t: string) => string }): Io {
  const term = opts.terminal === undefined ? undefined : new TerminalLine(err, opts.terminal.columns);
  const print = (write: (raw: string) => void, t: string) => {
    const line = `${opts.redact(t)}\n`;
    if (term === undefined) write(line);
    else term.above(() => write(line));
  };
  return {
    out: (t) => print(out, t),
    err: (t) => print(err, t),
    bearer: (t) => { if (term === undefined) out(`${t}\n`); else term.above(() => out(`${t}\n`)); },
    ...(term === undefined ? {} : { status: (t: string) => term.show(opts.redact(t)) }),
  };
}

/** An error as JSON: what `--json` prints on stdout. */
export type { ErrorDocument } from "../core/error-document.js";

/** What the user is told about `e`, and the exit code it maps to (see ExitCode in core/errors.ts). */
export function describeError(e: unknown, command?: string): ErrorDocument {
  if (isParseArgsError(e)) return parseArgsErrorDocument(e, command);
  return errorDocument(e);
}

/** Print an error the user can act on (stderr; with `json` also on stdout) and return its exit code. */
export function reportError(io: Io, e: unknown, opts: { json?: boolean; command?: string } = {}): number {
  const doc = describeError(e, opts.command);
  if (e instanceof RecipeError) {
    for (const issue of e.issues.filter((i) => i.severity === "error")) io.err(formatIssue(issue));
    io.err(doc.message);
  } else if (doc.code === "internal_error") {
    io.err(`rlpipe: ${doc.message}\n  ${doc.hint!}`);
    if (process.env["RLPIPE_DEBUG"] === "1" && e instanceof Error && e.stack !== undefined) io.err(e.stack);
  } else {
    io.err(`rlpipe: ${doc.message}${doc.hint === undefined ? "" : `\n  hint: ${doc.hint}`}`);
  }
  if (opts.json === true) io.out(JSON.stringify({ error: doc }));
  return doc.exitCode;
}

/** True when the arguments ask for JSON output (anywhere before a `--`). */
export function wantsJson(argv: readonly string[]): boolean {
  const end = argv.indexOf("--");
  return (end < 0 ? argv : argv.slice(0, end)).includes("--json");
}

/**
 * A reader that stops reading (`rlpipe schema | head -1`, `rlpipe logs -f | head`) closes the pipe: rlpipe then ends
 * quietly with exit 0 — the reader has what it wanted — instead of an unhandled EPIPE stack and exit 1.
 */
export function endOnClosedPipe(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE") process.exit(0);
      throw e;
    });
  }
}
