// Benchmark (issue 10): per platform and function, the zipped bundle size, and the time from starting a process to
// the first response — `node` spawned on the unpacked bundle (no node_modules, as on the platform), loading the
// handler file, building the app (cold start) and answering one documented trigger event (reward and runs: GET
// /v1/ping through the platform's HTTP event; console: a dryRun deploy event). The reward function checks its E2B
// backend in the background after the cold start (functions/backend-warmup.ts), so ping does not wait for it; what
// the first real request costs is measured too: "first run_code", a fresh process answering one authenticated POST
// /run_code (cold start, the warm-up that creates and checks a sandbox on the loopback E2B fake
// test/fakes/e2b-fake.ts, and the job itself, a python print run by the fake's envd). Also the start-up plus
// loading of the handler file alone ("load"), what the bundle's size costs. Median of RUNS (default 15).
// Goal: reward bundle under 1 MB zipped, first response under 150 ms here. Prints the machine like bench/plan.mjs;
// writes bench/results/functions.json. Needs a build (npm run build); no network, no credentials.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import os from "node:os";
import { join } from "node:path";
import { buildFunctionBundle } from "../bin/function-bundle.js";
import { FUNCTION_NAMES, FUNCTION_PLATFORMS, type FunctionName, type FunctionPlatform, PLATFORM_TARGETS } from "../core/packaging/targets.js";
import { fakeE2bKey } from "../test/fakes/credentials.js";
import { FakeE2B } from "../test/fakes/e2b-fake.js";
import { eventFor, parseResult } from "../test/fakes/platform-events.js";
import { invokeBundle, unzipIndependently } from "../test/function-invoker.js";
import { ROOT } from "../test/helpers.js";

const runs = Number(process.env["RUNS"] ?? 15);
/** Only these functions (comma-separated FUNCTIONS=reward,runs; default all): a partial run does not write the results file. */
const only = process.env["FUNCTIONS"]?.split(",").map((f) => f.trim()).filter((f) => f !== "");
const MB = 1_000_000;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** What the function needs at cold start, and the event it answers (nothing here leaves the machine). */
// Generated per run: never a key-shaped literal in the repository.
const E2B_KEY = fakeE2bKey();
const TOKEN = randomBytes(24).toString("hex");

function workload(platform: FunctionPlatform, fn: FunctionName, e2b: FakeE2B): { env: Record<string, string>; userData: Record<string, string>; event: unknown } {
  const secretName = fn === "reward" ? "RLPIPE_SANDBOX_TOKEN" : "RLPIPE_RUNS_SECRET";
  const secrets = { [secretName]: TOKEN, E2B_API_KEY: E2B_KEY };
  const inEnv = platform === "functiongraph" ? {} : secrets;
  switch (fn) {
    case "reward": return { env: { RLPIPE_SANDBOX: "e2b", E2B_API_URL: e2b.apiUrl, E2B_SANDBOX_URL: e2b.sandboxUrl, E2B_DOMAIN: "localhost", RLPIPE_SANDBOX_CONCURRENCY: "1", ...inEnv }, userData: secrets, event: eventFor(platform, { method: "GET", path: "/v1/ping" }) };
    case "runs": return { env: { RLPIPE_RUNS_STORE: "s3://bench-bucket/runs", S3_ENDPOINT: "http://127.0.0.1:9", AWS_ACCESS_KEY_ID: "bench", AWS_SECRET_ACCESS_KEY: "bench-secret", ...inEnv }, userData: secrets, event: eventFor(platform, { method: "GET", path: "/v1/ping" }) };
    case "console": return { env: {}, userData: {}, event: { action: "deploy", recipe: readFileSync(join(ROOT, "recipes", "qwen3-1.7b-code-toolcall.yaml"), "utf8"), provider: "modelarts", dryRun: true } };
  }
}

async function main(): Promise<void> {
  const machine = {
    cpu: os.cpus()[0]?.model ?? "unknown", cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version, platform: `${os.platform()} ${os.release()}`, load1: os.loadavg()[0] ?? 0,
  };
  console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, ${machine.platform}, load ${machine.load1.toFixed(2)}`);
  const floor: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    spawnSync(process.execPath, ["-e", ""], { stdio: "ignore" });
    floor.push(performance.now() - t);
  }
  console.log(`node -e '' (start-up floor): median ${median(floor).toFixed(0)} ms`);

  const tmp = mkdtempSync(join(os.tmpdir(), "rlpipe-bench-functions-"));
  const results: Record<string, unknown>[] = [];
  const e2b = await FakeE2B.start({ apiKey: E2B_KEY });
  try {
    for (const platform of FUNCTION_PLATFORMS) {
      for (const fn of FUNCTION_NAMES) {
        if (only !== undefined && !only.includes(fn)) continue;
        const built = await buildFunctionBundle({ platform, fn });
        const zipPath = join(tmp, `${platform}-${fn}.zip`);
        writeFileSync(zipPath, built.zip);
        const dir = unzipIndependently(zipPath, join(tmp, platform, fn));
        const w = workload(platform, fn, e2b);
        // Start-up and loading the handler file alone (no cold start, no event): what the bundle's size costs.
        const loadTimes: number[] = [];
        const file = join(dir, PLATFORM_TARGETS[platform].handlerFile);
        const loader = file.endsWith(".mjs") ? `await import(${JSON.stringify(`file://${file}`)})` : `(await import("node:module")).createRequire(${JSON.stringify(file)})(${JSON.stringify(file)})`;
        for (let i = 0; i < runs; i++) {
          const t = performance.now();
          const r = spawnSync(process.execPath, ["--input-type=module", "-e", loader], { cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stdio: "ignore" });
          if (r.status !== 0) throw new Error(`loading ${file} failed (${r.status})`);
          loadTimes.push(performance.now() - t);
        }
        const times: number[] = [];
        for (let i = 0; i < runs; i++) {
          const r = await invokeBundle({ platform, dir, events: [w.event], env: w.env, userData: w.userData });
          const out = r.results[0] as { statusCode?: number; ok?: boolean };
          if (out.statusCode !== undefined ? out.statusCode !== 200 : out.ok !== true) throw new Error(`${platform}/${fn} answered ${JSON.stringify(out).slice(0, 300)}\n${r.log}`);
          times.push(r.firstResponseMs);
        }
        // The reward function's first real request: one authenticated /run_code in a fresh process.
        const runCodeTimes: number[] = [];
        if (fn === "reward") {
          const event = eventFor(platform, { method: "POST", path: "/run_code", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: { code: "print(6 * 7)", language: "python" } });
          for (let i = 0; i < runs; i++) {
            const r = await invokeBundle({ platform, dir, events: [event], env: w.env, userData: w.userData });
            const out = parseResult(r.results[0]);
            if (out.status !== 200 || out.body.run_result?.stdout !== "42\n") throw new Error(`${platform}/${fn} /run_code answered ${out.status} ${JSON.stringify(out.body).slice(0, 300)}\n${r.log}`);
            runCodeTimes.push(r.firstResponseMs);
          }
        }
        const row = {
          platform, function: fn, zipBytes: built.report.zipBytes, rawBytes: built.report.rawBytes,
          loadMs: { median: median(loadTimes), min: Math.min(...loadTimes) },
          firstResponseMs: { median: median(times), min: Math.min(...times), max: Math.max(...times) }, runs,
          ...(runCodeTimes.length === 0 ? {} : { firstRunCodeMs: { median: median(runCodeTimes), min: Math.min(...runCodeTimes), max: Math.max(...runCodeTimes) } }),
        };
        results.push(row);
        const sizeOk = fn !== "reward" || built.report.zipBytes < MB;
        const timeOk = fn !== "reward" || row.firstResponseMs.median < 150;
        console.log(`${platform.padEnd(13)} ${fn.padEnd(8)} ${(built.report.zipBytes / 1024).toFixed(0).padStart(5)} KiB zipped  load ${row.loadMs.median.toFixed(0).padStart(3)} ms  first response median ${row.firstResponseMs.median.toFixed(0).padStart(4)} ms  min ${row.firstResponseMs.min.toFixed(0)}  max ${row.firstResponseMs.max.toFixed(0)}  (${runs} runs)${fn === "reward" ? `  ${sizeOk ? "< 1 MB ✓" : "OVER 1 MB"}, ${timeOk ? "< 150 ms ✓" : "OVER 150 ms"}` : ""}`);
        if (runCodeTimes.length > 0) console.log(`${"".padEnd(13)} ${"".padEnd(8)} first run_code (cold start + sandbox warm-up + one job) median ${median(runCodeTimes).toFixed(0).padStart(4)} ms  min ${Math.min(...runCodeTimes).toFixed(0)}  max ${Math.max(...runCodeTimes).toFixed(0)}`);
      }
    }
  } finally {
    await e2b.close();
    rmSync(tmp, { recursive: true, force: true });
  }
  if (only !== undefined) return;
  mkdirSync(join(ROOT, "bench", "results"), { recursive: true });
  writeFileSync(join(ROOT, "bench", "results", "functions.json"), `${JSON.stringify({ machine, runs, nodeStartFloorMs: median(floor), results }, null, 2)}\n`);
}

await main();
