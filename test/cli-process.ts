// The CLI (dist/bin/rlpipe.js) in a process of its own, with a bare environment (PATH, HOME = its directory, and
// what the test adds): no proxy, no cloud credentials of the machine's. Shared by the tests that run it as a user would.
import { spawn, spawnSync } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "./helpers.js";

export const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

export interface Ran { readonly code: number | null; readonly out: string; readonly err: string }

export interface CliOptions {
  readonly cwd?: string;
  readonly env?: Readonly<Record<string, string>>;
  /** Generous: CI's machine may be busy. */
  readonly timeoutMs?: number;
}

const envFor = (cwd: string, env: Readonly<Record<string, string>> | undefined) => ({ PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd, ...env });

/** Runs the CLI to its end (this process waits). */
export function runCli(args: readonly string[], opts: CliOptions = {}): Ran {
  const cwd = opts.cwd ?? ROOT;
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", timeout: opts.timeoutMs ?? 60_000, env: envFor(cwd, opts.env) });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** Runs the CLI while this process goes on (the loopback fakes it talks to answer from here). */
export function runCliAsync(args: readonly string[], opts: CliOptions = {}): Promise<Ran> {
  const cwd = opts.cwd ?? ROOT;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, env: envFor(cwd, opts.env), stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => { out += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { err += d.toString(); });
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 90_000);
    child.on("error", reject);
    child.on("close", (code) => { clearTimeout(timer); resolve({ code, out, err }); });
  });
}

/** A run's exit code and output, for an assertion's message. */
export const show = (r: Ran): string => `exit ${r.code}\n--- stdout\n${r.out}\n--- stderr\n${r.err}`;
