// rlpipe dashboard: a small web app over every run deployed from this directory (its run records) and the runs a
// console function keeps in each --store: a table of runs across providers, each row opening the run's page (the
// page rlpipe report writes, gathered by the same function). Bound to loopback unless --allow-remote says otherwise.
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { ExitCode, RlpipeError } from "../../core/errors.js";
import { dirRunRecords, runsDir } from "../../adapters/providers/run-records.js";
import { type ObjectStore, openStore, retryLines } from "../../adapters/storage/store.js";
import { storeRunRecords } from "../../functions/run-record-store.js";
import { DashboardServer, type RunSource, isLoopbackHost } from "../dashboard-server.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";
import { usage } from "./plan.js";
import { gatherRunPage } from "./report.js";

const LOG_LINES = 50;

export async function runDashboard(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.dashboard.options });
  if (values.help) { io.out(formatHelp("dashboard")); return 0; }
  if (positionals.length > 0) throw usage("rlpipe dashboard takes no arguments (--store URI adds the runs a console function keeps there)");
  const port = Number(values.port);
  if (!/^\d{1,5}$/.test(values.port) || port > 65_535) throw usage(`--port must be a port number from 0 to 65535 (0: any free port), got ${values.port}`);
  const refreshSeconds = Number(values["refresh-s"]);
  if (!/^\d{1,4}$/.test(values["refresh-s"]) || refreshSeconds < 1 || refreshSeconds > 3600) throw usage(`--refresh-s must be a whole number of seconds from 1 to 3600, got ${values["refresh-s"]}`);
  const host = values.host;
  const remote = !isLoopbackHost(host);
  if (remote && !values["allow-remote"]) {
    throw new RlpipeError("remote_host_refused", `refusing to serve the dashboard on ${host}: it is not a loopback address, and the dashboard has no login`, {
      exitCode: ExitCode.invalidInput,
      hint: "keep the default --host 127.0.0.1 (reach it from elsewhere through an SSH tunnel: ssh -L 8765:127.0.0.1:8765 HOST), or pass --allow-remote to show your runs' phases, logs and costs to everyone who can reach that address",
    });
  }

  const env = process.env;
  const stores: ObjectStore[] = [];
  const sources: RunSource[] = [{ label: "this directory (.rlpipe/runs)", list: () => dirRunRecords(runsDir(process.cwd())).list() }];
  try {
    for (const uri of values.store ?? []) {
      const store = await openStore(uri.includes("://") ? uri : resolve(uri), env, { onRetry: retryLines((l) => io.err(l)) });
      stores.push(store);
      const records = storeRunRecords(store);
      sources.push({ label: records.label, list: () => records.list() });
    }
    const server = new DashboardServer({
      sources, env, refreshSeconds, anyHost: remote,
      gather: (record) => gatherRunPage(record, { io, logLines: LOG_LINES, env }),
      log: (l) => io.err(l),
    });
    let url: string;
    try {
      url = await server.listen(host, port);
    } catch (e) {
      throw listenFailure(e, host, port);
    }
    if (remote) io.err(`rlpipe dashboard: WARNING: serving on ${host}, beyond this machine, with no login: everyone who can reach ${url} sees every run's phase, log lines, metrics and costs`);
    io.out(`rlpipe dashboard: ${url} (runs from ${sources.map((s) => s.label).join(", ")}; data read again every ${refreshSeconds} s; Ctrl-C to stop)`);
    await new Promise<void>((done) => {
      process.once("SIGINT", () => done());
      process.once("SIGTERM", () => done());
    });
    await server.close();
    io.err("rlpipe dashboard: stopped");
    return 0;
  } finally {
    await Promise.all(stores.map((s) => s.close().catch(() => undefined)));
  }
}

/** A port that cannot be listened on is a choice to change (exit 2), not a bug. */
function listenFailure(e: unknown, host: string, port: number): unknown {
  const code = (e as NodeJS.ErrnoException).code;
  const why: Record<string, string> = { EADDRINUSE: "the address is already in use", EACCES: "permission denied (ports below 1024 need privileges)", EADDRNOTAVAIL: "no such local address", ENOTFOUND: "no such host" };
  if (code === undefined || why[code] === undefined) return e;
  return new RlpipeError("listen_failed", `cannot listen on ${host}:${port}: ${why[code]}`, { exitCode: ExitCode.invalidInput, hint: "choose another --port (0 picks a free one) or --host", cause: e });
}
