#!/usr/bin/env node
// Benchmark (issue 12, item 4): `rlpipe serve --sandbox local` side by side with a ScaleBox/SandboxFusion server, in one run.
//
//   node bench/sandbox-peer.mjs [--isolation warm[,per-program]] [--case-loop c[,python]] [--program-namespaces own[,shared]] [--peer URL [--peer-pid PID]] [--rounds 3]
//                               [--programs 200] [--seq 60] [--conc-requests 200] [--in-flight 8] [--concurrency N] [--keep-alive]
//
// Workloads (the same client and request bodies for every server; the bodies are the SandboxFusion API ScaleBox accepts):
//   (a) /common_evaluate_batch, a 10-case Python stdin/stdout a+b program, --in-flight requests at once → test cases/s;
//   (b) /run_code print(1) sequentially → p50/p90 ms;  (c) /run_code print(1), --in-flight at once → req/s;
//   (d) /common_evaluate_batch, a HumanEval-style assert test (test + entry_point, 10 asserts) → programs/s.
// Servers are measured in rounds, alternating (the order rotates each round). Every answer is checked: a wrong answer
// is an error that stops the bench, never a fast result; a negative control (an a−b program) must be rejected.
// Each rlpipe path is a child `node dist/bin/rlpipe.js serve` on 127.0.0.1 (kernel-chosen free port), stopped by its pid.
// `--isolation` and `--case-loop` are passed to `rlpipe serve` only when given here (warm and c are the server's
// defaults); a list measures each (--isolation warm,per-program; --case-loop c,python: the C loop against Python's).
// Server CPU: utime+stime+cutime+cstime of the server's pid and all its live descendants (/proc), before and after each
// workload, so the programs the server ran count too; for the peer only when --peer-pid (e.g. /tmp/peers/scalebox/server.pid).
// Where rlpipe's time goes: GET /v1/stats before and after each workload, printed per test case and per request (HTTP
// parse/handle/respond; queue, zygote wait, build, fork, program, collect, clean-up, round trip, grading).
// Prints the machine, per-server figures, ratios rlpipe/peer; writes bench/results/sandbox-peer.json. Nothing leaves 127.0.0.1.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { clkTck, machineTicks, procStat, treeCpuS } from "./proc-cpu.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const cli = join(root, "dist", "bin", "rlpipe.js");

const { values: opt } = parseArgs({
  options: {
    isolation: { type: "string" }, "case-loop": { type: "string" }, "program-namespaces": { type: "string" }, peer: { type: "string" }, "peer-pid": { type: "string" },
    rounds: { type: "string", default: "3" }, programs: { type: "string", default: "200" }, seq: { type: "string", default: "60" },
    "conc-requests": { type: "string", default: "200" }, "in-flight": { type: "string", default: "8" }, concurrency: { type: "string" },
    "keep-alive": { type: "boolean", default: false }, help: { type: "boolean", default: false },
  },
  strict: true,
});
if (opt.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1, 20).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
  process.exit(0);
}
const int = (name, min = 1) => {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < min) fail(2, `--${name} must be an integer ≥ ${min}, got ${opt[name]}`);
  return n;
};
const rounds = int("rounds"), programs = int("programs"), seqN = int("seq", 2), concN = int("conc-requests"), inFlight = int("in-flight");
const isolations = opt.isolation === undefined ? [undefined] : opt.isolation.split(",").map((s) => s.trim()).filter((s) => s !== "");
for (const i of isolations) if (i !== undefined && !["warm", "per-program"].includes(i)) fail(2, `--isolation: unknown path "${i}" (warm, per-program)`);
const caseLoops = opt["case-loop"] === undefined ? [undefined] : opt["case-loop"].split(",").map((s) => s.trim()).filter((s) => s !== "");
for (const l of caseLoops) if (l !== undefined && !["c", "python"].includes(l)) fail(2, `--case-loop: unknown loop "${l}" (c, python)`);
const namespacesList = opt["program-namespaces"] === undefined ? [undefined] : opt["program-namespaces"].split(",").map((s) => s.trim()).filter((s) => s !== "");
for (const n of namespacesList) if (n !== undefined && !["own", "shared"].includes(n)) fail(2, `--program-namespaces: unknown mode "${n}" (own, shared)`);
if (opt.peer !== undefined && !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(opt.peer)) fail(2, `--peer must be a loopback http URL (nothing leaves this machine), got ${opt.peer}`);
const peerPid = opt["peer-pid"] === undefined ? undefined : Number(opt["peer-pid"]);
if (peerPid !== undefined && !(Number.isInteger(peerPid) && peerPid > 0)) fail(2, `--peer-pid must be a pid, got ${opt["peer-pid"]}`);

function fail(code, msg) {
  console.error(`bench/sandbox-peer: ${msg}`);
  process.exit(code);
}

// ---------- the machine ----------
const loadNow = () => os.loadavg()[0];
const machine = {
  cpu: os.cpus()[0]?.model ?? "unknown", cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30),
  node: process.version, platform: `${os.platform()} ${os.release()}`, load1AtStart: loadNow(),
};
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, ${machine.platform}, load ${machine.load1AtStart.toFixed(2)}`);

// ---------- server CPU from /proc: bench/proc-cpu.mjs ----------

// A fresh connection per request by default, as side_by_side.py's urllib does: with keep-alive, uvicorn's separate
// header/body writes meet Nagle + delayed ACK and a /run_code answer stalls ~40 ms, which would measure TCP, not the server.
const newAgent = () => new http.Agent({ keepAlive: opt["keep-alive"], maxSockets: inFlight });

// ---------- HTTP client (one agent per server; the same for every server) ----------
function post(server, path, body, timeoutMs = 120_000) {
  const data = Buffer.from(JSON.stringify(body));
  const u = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname, method: "POST", agent: server.agent, timeout: timeoutMs,
      headers: { "content-type": "application/json", "content-length": data.length } }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if (res.statusCode !== 200) return reject(new Error(`${server.name} ${path}: HTTP ${res.statusCode}: ${text.slice(0, 300)}`));
        try { resolve(JSON.parse(text)); } catch { reject(new Error(`${server.name} ${path}: not JSON: ${text.slice(0, 300)}`)); }
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`${server.name} ${path}: no answer in ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(data);
  });
}

// ---------- workloads (bodies as in ../shared/tools/peers/side_by_side.py) ----------
const CASES = 10;
const inputs = Array.from({ length: CASES }, (_, i) => `${i} ${i + 1}`);
const outputs = Array.from({ length: CASES }, (_, i) => String(2 * i + 1));
let uniq = 0; // every program text is distinct, so no server can answer from a cache
const batchBody = (op = "+") => ({
  completion: "```python\na,b=map(int,input().split())\nprint(a" + op + "b)\n# " + `${uniq++} ${Date.now()}` + "\n```",
  config: { language: "python", run_timeout: 5,
    provided_data: { test_cases: { type: "stdin_stdout", input: inputs, output: outputs, fn_name: null } },
    extra: { run_all_cases: true, total_timeout: 30 } },
});
const runCodeBody = () => ({ code: `print(1) # ${uniq++} ${Date.now()}`, language: "python" });
// HumanEval's shape: the program defines add, the test's check(candidate) asserts 10 calls (ScaleBox runs them in the
// program's process; rlpipe in its assert verifier, apart from the program).
const ASSERT_TEST = `def check(candidate):\n${inputs.map((_, i) => `    assert candidate(${i}, ${i + 1}) == ${2 * i + 1}`).join("\n")}\n`;
const assertBody = (op = "+") => ({
  completion: "```python\ndef add(a, b):\n    return a " + op + " b\n# " + `${uniq++} ${Date.now()}` + "\n```",
  config: { language: "python", run_timeout: 5,
    provided_data: { test_cases: { type: "assert", test: ASSERT_TEST, entry_point: "add" } },
    extra: { run_all_cases: true, total_timeout: 30 } },
});
function checkAssert(server, r, expectAccepted) {
  if (r.accepted !== expectAccepted) throw new Error(`${server.name} /common_evaluate_batch (assert): accepted=${r.accepted}, expected ${expectAccepted}: ${JSON.stringify(r).slice(0, 400)}`);
}

function checkBatch(server, r, expectAccepted) {
  if (r.accepted !== expectAccepted) throw new Error(`${server.name} /common_evaluate_batch: accepted=${r.accepted}, expected ${expectAccepted}: ${JSON.stringify(r).slice(0, 400)}`);
  if (expectAccepted && Array.isArray(r.tests)) {
    if (r.tests.length !== CASES) throw new Error(`${server.name} /common_evaluate_batch: ${r.tests.length} test results, expected ${CASES}`);
    const bad = r.tests.find((t) => t.passed !== true);
    if (bad !== undefined) throw new Error(`${server.name}: accepted but a test did not pass: ${JSON.stringify(bad).slice(0, 300)}`);
  }
}
function checkRunCode(server, r) {
  if (r.status !== "Success" || r.run_result?.stdout !== "1\n") throw new Error(`${server.name} /run_code print(1): wrong answer: ${JSON.stringify(r).slice(0, 400)}`);
}

async function pool(n, width, fn) {
  let next = 0;
  const worker = async () => { for (let k = next++; k < n; k = next++) await fn(k); };
  await Promise.all(Array.from({ length: Math.min(width, n) }, worker));
}
/** Runs fn, returning wall seconds, the server tree's CPU seconds over it, and the server process's own (rlpipe: node). */
async function measured(server, fn) {
  const c0 = server.pid === undefined ? undefined : treeCpuS(server.pid);
  const o0 = server.pid === undefined ? undefined : procStat(server.pid)?.own;
  const m0 = machineTicks();
  const t0 = performance.now();
  await fn();
  const wallS = (performance.now() - t0) / 1000;
  const m1 = machineTicks();
  const machineBusy = (m1.busy - m0.busy) / Math.max(1, m1.total - m0.total);
  const cpuS = c0 === undefined ? undefined : treeCpuS(server.pid) - c0;
  const ownCpuS = o0 === undefined ? undefined : ((procStat(server.pid)?.own ?? o0) - o0) / clkTck;
  return { wallS, cpuS, ownCpuS, machineBusy };
}
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
const median = (xs) => pct(xs, 50);

// ---------- where rlpipe's time goes: GET /v1/stats before and after a workload ----------
function getJson(server, path) {
  const u = new URL(path, server.url);
  return new Promise((resolve, reject) => {
    http.get({ host: u.hostname, port: u.port, path: u.pathname, agent: server.agent }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => { try { resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))); } catch (e) { reject(e); } });
    }).on("error", reject);
  });
}
/** Milliseconds per phase spent during fn (server: its HTTP side; sandbox: queue, zygote, build, fork, program, …). */
async function withBreakdown(server, key, fn) {
  if (server.kind !== "rlpipe") return fn();
  const before = await getJson(server, "/v1/stats");
  const out = await fn();
  const after = await getJson(server, "/v1/stats");
  const acc = (server.breakdown[key] ??= { requests: 0, programs: 0, cases: 0, ms: {} });
  acc.requests += after.server.requests - before.server.requests - 1; // less the stats request itself
  acc.programs += after.sandbox.programs - before.sandbox.programs;
  acc.cases += after.sandbox.cases - before.sandbox.cases;
  for (const [k, v] of Object.entries(after.server.ms)) acc.ms[`http ${k.replace(/Ms$/, "")}`] = (acc.ms[`http ${k.replace(/Ms$/, "")}`] ?? 0) + v - before.server.ms[k];
  for (const [k, v] of Object.entries(after.sandbox.ms)) acc.ms[k.replace(/Ms$/, "")] = (acc.ms[k.replace(/Ms$/, "")] ?? 0) + v - before.sandbox.ms[k];
  return out;
}

async function batchPhase(s) {
  const m = await withBreakdown(s, "batch", () => measured(s, () => pool(programs, inFlight, async () => checkBatch(s, await post(s, "/common_evaluate_batch", batchBody()), true))));
  return {
    casesPerS: (programs * CASES) / m.wallS, cpuMsPerCase: m.cpuS === undefined ? undefined : (m.cpuS * 1000) / (programs * CASES),
    ownCpuMsPerCase: m.ownCpuS === undefined ? undefined : (m.ownCpuS * 1000) / (programs * CASES), wallS: m.wallS,
    machineBusy: m.machineBusy,
  };
}
async function assertPhase(s) {
  const m = await withBreakdown(s, "assert", () => measured(s, () => pool(programs, inFlight, async () => checkAssert(s, await post(s, "/common_evaluate_batch", assertBody()), true))));
  return { assertProgramsPerS: programs / m.wallS, cpuMsPerAssertProgram: m.cpuS === undefined ? undefined : (m.cpuS * 1000) / programs };
}
async function seqPhase(s) {
  const ms = [];
  for (let i = 0; i < seqN; i++) {
    const t0 = performance.now();
    const r = await post(s, "/run_code", runCodeBody());
    ms.push(performance.now() - t0);
    checkRunCode(s, r);
  }
  return { p50Ms: median(ms), p90Ms: pct(ms, 90) };
}
async function concPhase(s) {
  const m = await withBreakdown(s, "run_code", () => measured(s, () => pool(concN, inFlight, async () => checkRunCode(s, await post(s, "/run_code", runCodeBody())))));
  return { reqPerS: concN / m.wallS, cpuMsPerReq: m.cpuS === undefined ? undefined : (m.cpuS * 1000) / concN };
}

// ---------- rlpipe servers: children on 127.0.0.1, stopped by pid ----------
async function startRlpipe(isolation, caseLoop, namespaces) {
  const args = [cli, "serve", "--sandbox", "local", "--host", "127.0.0.1", "--port", "0", "--quiet",
    ...(isolation === undefined ? [] : ["--isolation", isolation]), ...(caseLoop === undefined ? [] : ["--case-loop", caseLoop]),
    ...(namespaces === undefined ? [] : ["--program-namespaces", namespaces]), ...(opt.concurrency === undefined ? [] : ["--concurrency", opt.concurrency])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (c) => { stderr = (stderr + c).slice(-4000); });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`rlpipe serve did not report its URL in 60 s; stderr: ${stderr}`)), 60_000);
    child.stdout.on("data", (c) => {
      out += c;
      const m = /rlpipe serve: (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.once("exit", (code) => { clearTimeout(timer); reject(new Error(`rlpipe serve exited ${code} before listening: ${stderr.trim()}`)); });
  });
  const name = `rlpipe-${isolation ?? "warm"}${caseLoop === undefined ? "" : `-${caseLoop}`}${namespaces === undefined ? "" : `-ns-${namespaces}`}`;
  console.log(`${name}: ${url} (pid ${child.pid}; node ${args.slice(1).join(" ").replace(root + "/", "")})`);
  return { name, kind: "rlpipe", url, pid: child.pid, child, agent: newAgent(), stderr: () => stderr, breakdown: {} };
}
async function stop(server) {
  server.agent.destroy();
  const child = server.child;
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  process.kill(child.pid, "SIGTERM");
  const timer = setTimeout(() => { try { process.kill(child.pid, "SIGKILL"); } catch { /* already gone */ } }, 15_000);
  await exited;
  clearTimeout(timer);
}

const servers = [];
let stopping = false;
const stopAll = async () => { if (stopping) return; stopping = true; await Promise.all(servers.map(stop)); };
process.once("SIGINT", () => { void stopAll().then(() => process.exit(130)); });

let exitCode = 0;
const results = {};
try {
  for (const iso of isolations) for (const loop of caseLoops) for (const ns of namespacesList) servers.push(await startRlpipe(iso, loop, ns));
  if (opt.peer !== undefined) {
    const url = opt.peer.replace(/\/$/, "");
    servers.push({ name: "peer", kind: "peer", url, pid: peerPid, agent: newAgent() });
    console.log(`peer: ${url}${peerPid === undefined ? " (no --peer-pid: its CPU is not measured)" : ` (pid ${peerPid})`}`);
  }
  // Warm-up and controls: a correct program is accepted, an a−b program rejected, print(1) prints 1.
  for (const s of servers) {
    checkBatch(s, await post(s, "/common_evaluate_batch", batchBody("-")), false);
    checkAssert(s, await post(s, "/common_evaluate_batch", assertBody("-")), false);
    checkAssert(s, await post(s, "/common_evaluate_batch", assertBody()), true);
    await pool(2 * inFlight, inFlight, async () => checkBatch(s, await post(s, "/common_evaluate_batch", batchBody()), true));
    checkRunCode(s, await post(s, "/run_code", runCodeBody()));
    results[s.name] = { url: s.url, rounds: [] };
  }
  for (let r = 0; r < rounds; r++) {
    const order = servers.map((_, i) => servers[(i + r) % servers.length]);
    for (const s of order) {
      const load1 = loadNow();
      const row = { ...(await batchPhase(s)), ...(await seqPhase(s)), ...(await concPhase(s)), ...(await assertPhase(s)), load1 };
      results[s.name].rounds.push(row);
      console.log(`round ${r + 1} ${s.name.padEnd(20)} ${row.casesPerS.toFixed(0).padStart(5)} cases/s` +
        `${row.cpuMsPerCase === undefined ? "" : ` (server CPU ${row.cpuMsPerCase.toFixed(2)} ms/case, its main process ${row.ownCpuMsPerCase.toFixed(2)})`}` +
        `  run_code p50 ${row.p50Ms.toFixed(1)} ms p90 ${row.p90Ms.toFixed(1)} ms  ${row.reqPerS.toFixed(1)} req/s at ${inFlight} in flight` +
        `${row.cpuMsPerReq === undefined ? "" : ` (server CPU ${row.cpuMsPerReq.toFixed(2)} ms/req)`}  assert ${row.assertProgramsPerS.toFixed(1)} programs/s` +
        `${row.cpuMsPerAssertProgram === undefined ? "" : ` (server CPU ${row.cpuMsPerAssertProgram.toFixed(2)} ms/program)`}  machine busy ${(100 * row.machineBusy).toFixed(0)}%  load ${load1.toFixed(2)}`);
    }
  }
  // Summary: the median over rounds of each figure.
  const keys = ["casesPerS", "machineBusy", "cpuMsPerCase", "ownCpuMsPerCase", "p50Ms", "p90Ms", "reqPerS", "cpuMsPerReq", "assertProgramsPerS", "cpuMsPerAssertProgram"];
  console.log(`\nmedian of ${rounds} rounds (${programs} programs × ${CASES} cases at ${inFlight} in flight; ${seqN} sequential and ${concN} at ${inFlight} in flight /run_code print(1)):`);
  for (const s of servers) {
    const rows = results[s.name].rounds;
    const med = Object.fromEntries(keys.map((k) => [k, rows.every((x) => x[k] !== undefined) ? median(rows.map((x) => x[k])) : undefined]));
    results[s.name].median = med;
    const f = (v, d, u) => (v === undefined ? "n/a" : `${v.toFixed(d)}${u}`);
    console.log(`${s.name.padEnd(20)} ${f(med.casesPerS, 0, " cases/s")}, server CPU ${f(med.cpuMsPerCase, 2, " ms/case")} (main process ${f(med.ownCpuMsPerCase, 2, "")}); run_code p50 ${f(med.p50Ms, 1, " ms")}, p90 ${f(med.p90Ms, 1, " ms")}, ${f(med.reqPerS, 1, " req/s")}, server CPU ${f(med.cpuMsPerReq, 2, " ms/req")}; assert ${f(med.assertProgramsPerS, 1, " programs/s")}, server CPU ${f(med.cpuMsPerAssertProgram, 2, " ms/program")}`);
  }
  // Where a test case's time went on each rlpipe path, summed over all rounds: wall milliseconds per case (phases
  // overlap across the programs in flight, so they add up to more than the wall time per case at the measured rate).
  for (const s of servers.filter((x) => x.kind === "rlpipe")) {
    results[s.name].breakdown = s.breakdown;
    for (const [key, b] of Object.entries(s.breakdown)) {
      const per = key === "batch" ? b.cases : b.requests;
      const parts = Object.entries(b.ms).map(([k, v]) => `${k} ${(v / per).toFixed(3)}`).join(", ");
      console.log(`${s.name} ${key}: ms per ${key === "batch" ? "test case" : "request"} (${b.requests} requests, ${b.programs} programs, ${b.cases} cases): ${parts}`);
    }
  }
  if (opt.peer !== undefined) {
    const p = results.peer.median;
    for (const s of servers.filter((x) => x.kind === "rlpipe")) {
      const m = results[s.name].median;
      const ratio = { casesPerS: m.casesPerS / p.casesPerS, p50Ms: m.p50Ms / p.p50Ms, reqPerS: m.reqPerS / p.reqPerS, assertProgramsPerS: m.assertProgramsPerS / p.assertProgramsPerS,
        ...(m.cpuMsPerCase !== undefined && p.cpuMsPerCase !== undefined ? { cpuMsPerCase: m.cpuMsPerCase / p.cpuMsPerCase } : {}) };
      results[s.name].ratioToPeer = ratio;
      console.log(`ratio ${s.name}/peer: cases/s ${ratio.casesPerS.toFixed(2)}× (goal ≥ 2.5×); run_code p50 ${ratio.p50Ms.toFixed(2)}× (goal ≤ 0.5×); ` +
        `run_code req/s ${ratio.reqPerS.toFixed(2)}× (goal ≥ 3×); assert programs/s ${ratio.assertProgramsPerS.toFixed(2)}×${ratio.cpuMsPerCase === undefined ? "" : `; server CPU per case ${ratio.cpuMsPerCase.toFixed(2)}×`}`);
      // Paired: each round's ratio (the two servers measured back to back), so load that drifts between rounds cancels out.
      const rs = results[s.name].rounds, ps = results.peer.rounds;
      const paired = Object.fromEntries(["casesPerS", "p50Ms", "reqPerS", "assertProgramsPerS"].map((k) => [k, rs.map((x, i) => x[k] / ps[i][k])]));
      results[s.name].pairedRatiosToPeer = paired;
      console.log(`  per round: cases/s ${paired.casesPerS.map((x) => x.toFixed(2)).join(" ")}; p50 ${paired.p50Ms.map((x) => x.toFixed(2)).join(" ")}; req/s ${paired.reqPerS.map((x) => x.toFixed(2)).join(" ")}; assert programs/s ${paired.assertProgramsPerS.map((x) => x.toFixed(2)).join(" ")}`);
    }
  }
} catch (e) {
  console.error(`bench/sandbox-peer: ${e instanceof Error ? e.message : String(e)}`);
  for (const s of servers) if (s.stderr !== undefined && s.stderr().trim() !== "") console.error(`${s.name} stderr (tail):\n${s.stderr().trim()}`);
  exitCode = 1;
} finally {
  await stopAll();
}
machine.load1AtEnd = loadNow();
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "sandbox-peer.json"), `${JSON.stringify({
  machine, when: new Date().toISOString(), ok: exitCode === 0,
  workload: { programs, casesPerProgram: CASES, inFlight, runCodeSequential: seqN, runCodeConcurrent: concN, rounds, isolations: isolations.map((i) => i ?? "warm (default)"), caseLoops: caseLoops.map((l) => l ?? "c (default)"), programNamespaces: namespacesList.map((n) => n ?? "own (default)"), assertPrograms: programs, peer: opt.peer ?? null },
  results,
}, null, 2)}\n`);
process.exit(exitCode);
