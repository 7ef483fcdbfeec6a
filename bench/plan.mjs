#!/usr/bin/env node
// Benchmark: wall time of `rlpipe plan` (a fresh node process, as a user runs it) on each seed recipe.
// Target (issue 2): under 0.5 s on this machine. Prints the figures and the machine; writes bench/results/plan.json.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist", "bin", "rlpipe.js");
const runs = Number(process.env.RUNS ?? 15);
const seeds = [
  ["qwen3-1.7b-code-toolcall", "modelarts"],
  ["qwen3-1.7b-code-toolcall-sd", "local"],
  ["retool-qwen3-4b-ascend", "docker"],
  ["retool-qwen2.5-32b-h200", "ray"],
  ["retool-qwen3-4b-tione-ags", "tione"],
];

const tmp = mkdtempSync(join(os.tmpdir(), "rlpipe-bench-"));
const machine = {
  cpu: os.cpus()[0]?.model ?? "unknown", cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30),
  node: process.version, platform: `${os.platform()} ${os.release()}`, load1: os.loadavg()[0],
};
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, ${machine.platform}, load ${machine.load1.toFixed(2)}`);

// Baseline: an empty node process, to show how much of the time is node's own start-up.
const baseline = time(() => spawnSync(process.execPath, ["-e", ""], { stdio: "ignore" }));
console.log(`node -e '' (start-up floor): median ${baseline.median.toFixed(0)} ms`);

const results = [];
for (const [name, provider] of seeds) {
  const out = join(tmp, name);
  const t = time(() => {
    const r = spawnSync(process.execPath, [cli, "plan", join(root, "recipes", `${name}.yaml`), "--provider", provider, "--out", out], { stdio: "ignore" });
    if (r.status !== 0) throw new Error(`plan ${name} exited ${r.status}`);
  });
  results.push({ recipe: name, provider, ...t });
  console.log(`rlpipe plan ${name.padEnd(28)} --provider ${provider.padEnd(9)} median ${t.median.toFixed(0)} ms  min ${t.min.toFixed(0)}  max ${t.max.toFixed(0)}  (${runs} runs)  ${t.max < 500 ? "< 0.5 s ✓" : "OVER 0.5 s"}`);
}
rmSync(tmp, { recursive: true, force: true });
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "plan.json"), `${JSON.stringify({ machine, runs, baselineMs: baseline, results }, null, 2)}\n`);

function time(fn) {
  const ms = [];
  fn(); // warm the page cache
  for (let i = 0; i < runs; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return { min: ms[0], median: ms[Math.floor(ms.length / 2)], max: ms[ms.length - 1] };
}
