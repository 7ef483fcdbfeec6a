#!/usr/bin/env node
// rlpipe CLI: thin dispatch to the commands; help, version and the error report are handled here once.
// Exit codes (core/errors.ts ExitCode): 0 ok, 1 failed, 2 invalid input, 3 external, 4 internal, 130 cancelled.
import { didYouMean } from "../core/recipe/suggest.js";
import { COMMAND_NAMES, formatHelp, formatMainHelp, isCommand } from "./help.js";
import { endOnClosedPipe, processIo, reportError, wantsJson, type Io } from "./io.js";
import { VERSION } from "./version.js";

/** `--help`/`-h` among a command's arguments (before a `--`). */
function asksHelp(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  const [command, ...rest] = argv;
  const json = wantsJson(rest);
  try {
    if (command !== undefined && isCommand(command) && asksHelp(rest)) { io.out(formatHelp(command)); return 0; }
    switch (command) {
      case "init": return (await import("./commands/init.js")).runInit(rest, io);
      case "plan": return (await import("./commands/plan.js")).runPlan(rest, io);
      case "validate": return (await import("./commands/validate.js")).runValidate(rest, io);
      case "schema": return (await import("./commands/schema.js")).runSchema(rest, io);
      case "serve": return await (await import("./commands/serve.js")).runServe(rest, io);
      case "sync": return await (await import("./commands/storage.js")).runSync(rest, io);
      case "checkpoints": return await (await import("./commands/storage.js")).runCheckpoints(rest, io);
      case "restore": return await (await import("./commands/storage.js")).runRestore(rest, io);
      case "metrics": return await (await import("./commands/storage.js")).runMetrics(rest, io);
      case "run-token": return (await import("./commands/storage.js")).runRunToken(rest, io);
      case "eval": return await (await import("./commands/eval.js")).runEval(rest, io);
      case "deploy": return await (await import("./commands/runs.js")).runDeploy(rest, io);
      case "cost": return await (await import("./commands/cost.js")).runCost(rest, io);
      case "status": return await (await import("./commands/runs.js")).runStatus(rest, io);
      case "logs": return await (await import("./commands/runs.js")).runLogs(rest, io);
      case "stop": return await (await import("./commands/runs.js")).runStop(rest, io);
      case "list": return await (await import("./commands/runs.js")).runList(rest, io);
      case "report": return await (await import("./commands/report.js")).runReport(rest, io);
      case "dashboard": return await (await import("./commands/dashboard.js")).runDashboard(rest, io);
      case "tione": return await (await import("./commands/tione.js")).runTione(rest, io);
      case "sandbox": return (await import("./commands/sandbox.js")).runSandbox(rest, io);
      case "package": return await (await import("./commands/package.js")).runPackage(rest, io);
      case "functions": return await (await import("./commands/functions.js")).runFunctions(rest, io);
      case "--version": case "-V": case "version": io.out(VERSION); return 0;
      case "--help": case "-h": io.out(formatMainHelp()); return 0;
      case "help": {
        const topic = rest[0];
        if (topic === undefined) { io.out(formatMainHelp()); return 0; }
        if (isCommand(topic)) { io.out(formatHelp(topic)); return 0; }
        return unknownCommand(io, topic, json);
      }
      case undefined: io.err(formatMainHelp()); return 2;
      default: return unknownCommand(io, command, json);
    }
  } catch (e) {
    return reportError(io, e, { json, ...(command === undefined ? {} : { command }) });
  }
}

function unknownCommand(io: Io, command: string, json: boolean): number {
  const known = [...COMMAND_NAMES, "help", "version"];
  const guess = didYouMean(command, known);
  const doc = { code: "unknown_command", message: `unknown command ${JSON.stringify(command)}${guess === undefined ? "" : `; ${guess}`}`, hint: `commands: ${COMMAND_NAMES.join(", ")} (rlpipe --help)`, exitCode: 2 };
  io.err(`rlpipe: ${doc.message}\n  hint: ${doc.hint}`);
  if (json) io.out(JSON.stringify({ error: doc }));
  return 2;
}

/**
 * `node …/dist/bin/rlpipe.js` runs the CLI (jobs call rlpipe back that way); importing this module (tests,
 * bin/entry.ts, the installed command) does not. Compared as real paths: argv[1] may name a symlink.
 */
async function startedAsScript(): Promise<boolean> {
  const script = process.argv[1];
  if (script === undefined) return false;
  const [{ realpathSync }, { fileURLToPath }] = await Promise.all([import("node:fs"), import("node:url")]);
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}
if (await startedAsScript()) {
  endOnClosedPipe();
  process.exitCode = await main(process.argv.slice(2));
}
