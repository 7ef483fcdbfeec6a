#!/usr/bin/env node
// rlpipe CLI: thin dispatch to the commands. Exit codes: 0 ok, 2 invalid input, 1 internal error.
import { processIo, reportError, type Io } from "./io.js";
import { VERSION } from "./version.js";

const HELP = `rlpipe ${VERSION}: one verl recipe → jobs on ModelArts, TI-ONE, Ray, Slurm or a local machine

usage: rlpipe <command> [options]

commands:
  plan <recipe>        validate and write the launch bundle (no network, no credentials)
  deploy <recipe>      create the job (--provider local|ray|slurm|modelarts|tione); exactly one per deploy
  status [run]         normalized phase of a run (or of every run deployed from here)
  logs <run> [-f]      a run's log, or follow it to the end
  stop <run>           stop a run (idempotent)
  list                 runs deployed from this directory
  tione inspect <id>   read a TI-ONE task (e.g. a console-made Ray task) as a targets.tione snippet
  validate <recipe…>   check recipes (for CI)
  schema               print the recipe JSON Schema (editor completion)
  serve                the reward/tool function as an HTTP server (local, ScaleBox or E2B sandbox)
  sync <run>           upload finished checkpoints (durable commits) and metrics to object storage
  checkpoints <run>    list a run's committed checkpoint steps
  restore <run> DIR    download and verify a step into the layout verl resumes from
  metrics <run>…       latest values of the main training series; --plot FILE.png|.svg (runs overlaid)
  eval <data.jsonl>    score responses against their test cases (reference solutions: a preflight)

run rlpipe <command> --help for a command's options.`;

export async function main(argv: readonly string[], io: Io = processIo()): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
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
      case "status": return await (await import("./commands/runs.js")).runStatus(rest, io);
      case "logs": return await (await import("./commands/runs.js")).runLogs(rest, io);
      case "stop": return await (await import("./commands/runs.js")).runStop(rest, io);
      case "list": return await (await import("./commands/runs.js")).runList(rest, io);
      case "tione": return await (await import("./commands/tione.js")).runTione(rest, io);
      case "--version": case "version": io.out(VERSION); return 0;
      case undefined: case "--help": case "-h": case "help": io.out(HELP); return command === undefined ? 2 : 0;
      default:
        io.err(`rlpipe: unknown command ${JSON.stringify(command)}\n\n${HELP}`);
        return 2;
    }
  } catch (e) {
    if (e instanceof TypeError && (e as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS")) {
      io.err(`rlpipe: ${e.message}\n  hint: run rlpipe ${command} --help`);
      return 2;
    }
    return reportError(io, e);
  }
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
  process.exitCode = await main(process.argv.slice(2));
}
