// Runs a packaged function the way its platform would: the zip unpacked by an independent reader (Python's
// zipfile, not rlpipe's own writer run backwards) into an empty directory, then a fresh node process started
// there with no node_modules anywhere above it and no NODE_PATH, which loads the handler file (require for
// index.js, import for index.mjs) and calls the handler with each event in turn, writing one JSON line per
// result to file descriptor 3 (stdout and stderr are the function's log, as on the platform). Shared by test/functions-package.test.ts and bench/functions.ts.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, parse } from "node:path";
import type { FunctionPlatform } from "../core/packaging/targets.js";
import { PLATFORM_TARGETS } from "../core/packaging/targets.js";

/** The script the fresh process runs: reads {file, exportName, platform, events, userData} on stdin. */
const INVOKER = `
import { writeSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
let input = "";
for await (const chunk of process.stdin) input += chunk;
const { file, exportName, platform, events, userData } = JSON.parse(input);
const path = resolve(file);
const mod = path.endsWith(".mjs") ? await import(pathToFileURL(path).href) : createRequire(path)(path);
const handler = mod[exportName];
if (typeof handler !== "function") throw new Error(file + " exports no " + exportName);
const context = platform === "functiongraph"
  ? { getRequestID: () => "req-1", getUserData: (k) => userData[k] }
  : platform === "scf" ? { request_id: "req-1", function_name: "rlpipe" } : { awsRequestId: "req-1", functionName: "rlpipe" };
for (const event of events) {
  const out = await handler(event, context);
  writeSync(3, JSON.stringify(out === undefined ? null : out) + "\\n");
}
process.exit(0);
`;

/** Unpack with Python's zipfile into a new directory under the system temp dir; returns the directory. */
export function unzipIndependently(zipPath: string, into?: string): string {
  const dir = into ?? mkdtempSync(join(tmpdir(), "rlpipe-fn-"));
  const r = spawnSync("python3", ["-m", "zipfile", "-e", zipPath, dir], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`python3 -m zipfile -e ${zipPath} failed (${r.status}): ${r.stderr}`);
  return dir;
}

/** Every directory from `dir` up to the root that holds a node_modules (there must be none for the test to mean anything). */
export function nodeModulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(join(d, "node_modules"))) found.push(join(d, "node_modules"));
    if (d === parse(d).root) return found;
  }
}

export interface InvokeOptions {
  readonly platform: FunctionPlatform;
  /** The unpacked bundle directory. */
  readonly dir: string;
  readonly events: readonly unknown[];
  /** The function's environment (nothing else from this process is passed on, NODE_PATH least of all). */
  readonly env: Readonly<Record<string, string>>;
  /** FunctionGraph: what context.getUserData answers (its encrypted variables). */
  readonly userData?: Readonly<Record<string, string>>;
  readonly timeoutMs?: number;
}

export interface Invocation {
  readonly results: unknown[];
  /** What the function logged (stdout and stderr). */
  readonly log: string;
  /** Milliseconds from spawning the process to the first result line. */
  readonly firstResponseMs: number;
}

/** Start a fresh node in the bundle directory and call its handler with each event. */
export function invokeBundle(opts: InvokeOptions): Promise<Invocation> {
  const target = PLATFORM_TARGETS[opts.platform];
  const files = readdirSync(opts.dir);
  if (!files.includes(target.handlerFile)) throw new Error(`${opts.dir} holds ${files.join(", ")}, not ${target.handlerFile}`);
  const env: Record<string, string> = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", ...opts.env };
  delete env["NODE_PATH"];
  return new Promise((resolve, reject) => {
    const started = performance.now();
    let firstResponseMs = -1;
    const child = spawn(process.execPath, ["--input-type=module", "-e", INVOKER], { cwd: opts.dir, env, stdio: ["pipe", "pipe", "pipe", "pipe"] });
    let results = "";
    let log = "";
    (child.stdio[3] as NodeJS.ReadableStream).on("data", (d: Buffer) => {
      if (firstResponseMs < 0) firstResponseMs = performance.now() - started;
      results += d.toString();
    });
    child.stdout!.on("data", (d: Buffer) => { log += d.toString(); });
    child.stderr!.on("data", (d: Buffer) => { log += d.toString(); });
    const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 60_000);
    child.on("error", (e) => { clearTimeout(timer); reject(e); });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      const lines = results.split("\n").filter((l) => l.trim() !== "");
      if (code !== 0 || lines.length !== opts.events.length) {
        reject(new Error(`the ${opts.platform} bundle in ${opts.dir} exited ${code ?? signal} after ${lines.length} of ${opts.events.length} results\n--- results\n${results.slice(0, 2000)}\n--- log\n${log.slice(0, 4000)}`));
        return;
      }
      resolve({ results: lines.map((l) => JSON.parse(l) as unknown), log, firstResponseMs });
    });
    child.stdin.end(JSON.stringify({ file: target.handlerFile, exportName: target.handlerExport, platform: opts.platform, events: opts.events, userData: opts.userData ?? {} }));
  });
}
