// node:util parseArgs's strict errors, said the way rlpipe says every usage error: what was wrong (the option, in
// the user's spelling), a did-you-mean from the command's own options (bin/help.ts), and what to do — exit 2.
// Every command parses with strict parseArgs and lets the error reach reportError, so this is the one place.
import type { ErrorDocument } from "../core/error-document.js";
import { ExitCode } from "../core/errors.js";
import { didYouMean } from "../core/recipe/suggest.js";
import { COMMANDS, type CommandSpec, isCommand } from "./help.js";

export function isParseArgsError(e: unknown): e is TypeError & { code: string } {
  return e instanceof TypeError && typeof (e as NodeJS.ErrnoException).code === "string" && (e as NodeJS.ErrnoException).code!.startsWith("ERR_PARSE_ARGS");
}

/** `--provider` for an option name; shorts are matched apart (any letter is one edit from any other). */
function longNames(spec: CommandSpec): string[] {
  return Object.keys(spec.options).map((n) => `--${n}`);
}

/** A did-you-mean for a mistyped option: the closest long option; a short one only when it differs in case (-P for -p). */
function suggestOption(typed: string, spec: CommandSpec): string | undefined {
  if (/^-[^-]$/.test(typed)) {
    const short = Object.entries(spec.options).find(([, o]) => o.short !== undefined && o.short.toLowerCase() === typed[1]!.toLowerCase());
    return short === undefined ? undefined : `did you mean -${short[1].short!} (--${short[0]})?`;
  }
  return didYouMean(typed, longNames(spec), false);
}

/** What the user is told about a parseArgs error of `command` (its message is Node's; the option names are ours). */
export function parseArgsErrorDocument(e: TypeError & { code: string }, command: string | undefined): ErrorDocument {
  const spec: CommandSpec | undefined = command !== undefined && isCommand(command) ? COMMANDS[command] : undefined;
  const name = command === undefined ? "rlpipe" : `rlpipe ${command}`;
  const help = `${name} --help`;
  const usage = (message: string, hint = `run ${help}`): ErrorDocument => ({ code: "usage", message, hint, exitCode: ExitCode.invalidInput });

  const unknown = /^Unknown option '([^']+)'/.exec(e.message)?.[1];
  if (unknown !== undefined) {
    const guess = spec === undefined ? undefined : suggestOption(unknown, spec);
    const options = spec === undefined ? help : `${name} takes ${longNames(spec).join(", ")} (${help})`;
    return {
      code: "unknown_option",
      message: `unknown option ${unknown}${guess === undefined ? "" : `; ${guess}`}`,
      // Without a guess, Node's own advice is kept: an argument that starts with '-' goes after "--".
      hint: guess === undefined ? `${options}; an argument starting with '-' goes after "--"` : options,
      exitCode: ExitCode.invalidInput,
    };
  }
  const missing = /^Option '(?:-\w, )?--([^ ']+) <value>' argument missing/.exec(e.message)?.[1];
  if (missing !== undefined) {
    const value = spec?.options[missing]?.value;
    return usage(`option --${missing} needs a value${value === undefined ? "" : ` (${value})`}`, `write --${missing} ${value ?? "VALUE"} (${help})`);
  }
  const ambiguous = /^Option '--([^']+)' argument is ambiguous/.exec(e.message)?.[1];
  if (ambiguous !== undefined) return usage(`option --${ambiguous}: its value starts with '-'`, `write --${ambiguous}=-… to pass a value that starts with '-' (${help})`);
  const flag = /^Option '(?:-\w, )?--([^ ']+)' does not take an argument/.exec(e.message)?.[1];
  if (flag !== undefined) return usage(`option --${flag} is a switch and takes no value`, `write --${flag} alone (${help})`);
  const extra = /^Unexpected argument '(.*)'\. /s.exec(e.message)?.[1];
  if (extra !== undefined) return usage(`${name} takes no arguments, got ${JSON.stringify(extra)}`);
  return usage(e.message);
}
