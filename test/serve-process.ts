// `rlpipe serve` as a child process on 127.0.0.1 for tests that look at it from outside: its log on stderr, its
// memory (peak resident set from /proc), its stats. Stopped by its process id.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./helpers.js";

export interface ServeProcess {
  readonly url: string;
  readonly pid: number;
  /** The banner line rlpipe serve printed. */
  readonly banner: string;
  /** Lines it wrote on stderr so far (its request and anomaly log). */
  readonly log: string[];
  /** Its peak resident memory so far (VmHWM), in bytes. */
  peakRssBytes(): number;
  /** GET /v1/stats. */
  stats(): Promise<any>;
  stop(): Promise<void>;
}

/** `env`: the server's environment instead of the test's (PATH without a C compiler, say). */
export async function startServe(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<ServeProcess> {
  const child = spawn(process.execPath, [join(ROOT, "dist", "bin", "rlpipe.js"), "serve", "--host", "127.0.0.1", "--port", "0", ...args], { stdio: ["ignore", "pipe", "pipe"], ...(env === undefined ? {} : { env }) });
  const log: string[] = [];
  let partial = "";
  child.stderr.on("data", (d: Buffer) => {
    const lines = (partial + d.toString()).split("\n");
    partial = lines.pop()!;
    log.push(...lines);
  });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const force = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(force);
    }
  };
  let stdout = "";
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rlpipe serve did not start: ${log.join("\n")}`)), 120_000);
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      const m = /rlpipe serve: (http:\/\/\S+) .*/.exec(stdout);
      if (m !== null) { clearTimeout(timer); resolve(m[0]); }
    });
    void exited.then(() => { clearTimeout(timer); reject(new Error(`rlpipe serve exited: ${log.join("\n")}`)); });
  }).catch(async (e) => { await stop(); throw e; });
  const url = /(http:\/\/\S+)/.exec(banner)![1]!;
  return {
    url, pid: child.pid!, banner, log, stop,
    peakRssBytes: () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))![1]) * 1024,
    stats: async () => (await fetch(`${url}/v1/stats`)).json(),
  };
}

/** Polls `check` every 100 ms until it is true or `boundMs` passed (a generous bound, never a fixed sleep). */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, boundMs: number): Promise<void> {
  const until = Date.now() + boundMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error(`gave up waiting (${boundMs / 1000} s) for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
