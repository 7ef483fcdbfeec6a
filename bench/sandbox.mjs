#!/usr/bin/env node
// Benchmark: the embedded bubblewrap sandbox and the reward function on this machine.
// Workload as in ../shared/reference/sandbox-apis.md (appendix): a 10-case a+b stdin/stdout Python program.
// Prints programs/s and cases/s (reference on this machine kind: ScaleBox /common_evaluate_batch ~390–531 cases/s,
// one-bwrap-per-program design 430–460 cases/s), and writes bench/results/sandbox.json.
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { LocalSandbox } = await import(join(root, "dist/adapters/sandboxes/local/local-sandbox.js"));
const { startHttpServer } = await import(join(root, "dist/functions/platforms/http.js"));
const { ResultCache } = await import(join(root, "dist/functions/reward.js"));

const PROGRAMS = Number(process.env.PROGRAMS ?? 200);
const machine = { cpu: os.cpus()[0]?.model ?? "unknown", cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, load1: os.loadavg()[0] };
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, load ${machine.load1.toFixed(2)}`);

const code = (k) => `a, b = map(int, input().split())\nprint(a + b + ${k} - ${k})`; // distinct text, same behaviour
const tests = Array.from({ length: 10 }, (_, i) => ({ kind: "stdio", stdin: `${i} ${i * 7}`, expectedStdout: String(i * 8) }));
const results = {};

const sb = await LocalSandbox.create();
{
  const jobs = Array.from({ length: PROGRAMS }, (_, k) => ({ id: String(k), language: "python", code: code(k), tests, limits: { runTimeoutMs: 5000 } }));
  await sb.evaluate(jobs.slice(0, 4)); // warm
  const t0 = performance.now();
  const rs = await sb.evaluate(jobs);
  const s = (performance.now() - t0) / 1000;
  const ok = rs.every((r) => r.passed === 10);
  results.localEvaluate = { programs: PROGRAMS, seconds: s, programsPerS: PROGRAMS / s, casesPerS: (PROGRAMS * 10) / s, allPassed: ok };
  console.log(`LocalSandbox.evaluate: ${PROGRAMS} programs × 10 cases in ${s.toFixed(2)} s → ${(PROGRAMS / s).toFixed(1)} programs/s, ${((PROGRAMS * 10) / s).toFixed(0)} cases/s (concurrency ${machine.cores})${ok ? "" : "  (SOME FAILED)"}`);
}

const server = await startHttpServer({ backend: sb, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
{
  // ScaleBox-style clients: one /common_evaluate_batch per program, 8 requests in flight.
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    for (;;) {
      const k = next++;
      if (k >= PROGRAMS) return;
      const body = { completion: "```python\n" + code(10_000 + k) + "\n```", config: { language: "python", provided_data: { test_cases: { type: "stdin_stdout", input: tests.map((t) => t.stdin), output: tests.map((t) => t.expectedStdout) } }, extra: { run_all_cases: true } } };
      const r = await fetch(`${server.url}/common_evaluate_batch`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
      const j = await r.json();
      if (!j.accepted) throw new Error("not accepted");
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  const s = (performance.now() - t0) / 1000;
  results.httpBatch = { programs: PROGRAMS, seconds: s, requestsPerS: PROGRAMS / s, casesPerS: (PROGRAMS * 10) / s, clientConcurrency: 8 };
  console.log(`HTTP /common_evaluate_batch (8 in flight): ${(PROGRAMS / s).toFixed(1)} req/s, ${((PROGRAMS * 10) / s).toFixed(0)} cases/s`);
}
{
  // GRPO-shaped reward batch: 32 prompts × n=8 responses, where a group repeats answers (4 distinct per group).
  const gt = JSON.stringify({ type: "stdin_stdout", input: tests.map((t) => t.stdin), output: tests.map((t) => t.expectedStdout) });
  const samples = [];
  for (let p = 0; p < 32; p++) for (let r = 0; r < 8; r++) samples.push({ data_source: "bench", solution_str: "```python\n" + code(50_000 + p * 100 + (r % 4)) + "\n```", ground_truth: gt });
  const t0 = performance.now();
  const res = await fetch(`${server.url}/v1/rewards`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ samples }) });
  const j = await res.json();
  const s = (performance.now() - t0) / 1000;
  const t1 = performance.now();
  const again = await (await fetch(`${server.url}/v1/rewards`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ samples }) })).json();
  const s2 = (performance.now() - t1) / 1000;
  results.rewards = { samples: samples.length, evaluated: j.stats.evaluated, hitRate: j.stats.hitRate, seconds: s, samplesPerS: samples.length / s, secondCallSeconds: s2, secondCallHitRate: again.stats.hitRate };
  console.log(`/v1/rewards 256 samples (32 groups × 8, 4 distinct answers each): evaluated ${j.stats.evaluated}, hit rate ${(j.stats.hitRate * 100).toFixed(0)}%, ${s.toFixed(2)} s (${(samples.length / s).toFixed(0)} samples/s); repeated batch ${s2.toFixed(3)} s, hit rate ${(again.stats.hitRate * 100).toFixed(0)}%`);
}
await server.close();
await sb.close();
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "sandbox.json"), `${JSON.stringify({ machine, results }, null, 2)}\n`);
