#!/usr/bin/env node
// Benchmark (issue 21): a flood of sleeping programs whose clients give up, against `rlpipe serve --sandbox local`.
//
//   node bench/flood.mjs [--requests 1000] [--sleep-s 10] [--give-up-s 5] [--concurrency 2] [--isolation warm|per-program]
//                        [--peer URL] [--bound-s 60]
//
// --requests clients each POST /run_code with a Python program that sleeps --sleep-s seconds, all at once, and give up
// (disconnect) after --give-up-s. Printed: how many were refused at once (429) and how fast, how many were admitted,
// the time from the last disconnect until the server is idle (GET /v1/stats: nothing in progress, no slot busy), the
// latency of a fresh print(1) right after, and the server's peak resident memory (VmHWM). With --peer (a ScaleBox or
// SandboxFusion on 127.0.0.1), the same flood is sent to it and the fresh print(1) is timed there too, within --bound-s.
// Prints the machine; writes bench/results/flood.json. Nothing leaves 127.0.0.1.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values: opt } = parseArgs({
  options: {
    requests: { type: "string", default: "1000" }, "sleep-s": { type: "string", default: "10" }, "give-up-s": { type: "string", default: "5" },
    concurrency: { type: "string", default: "2" }, isolation: { type: "string", default: "warm" }, peer: { type: "string" }, "bound-s": { type: "string", default: "60" },
    help: { type: "boolean", default: false },
  },
  strict: true,
});
if (opt.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1, 12).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
  process.exit(0);
}
const num = (k) => { const n = Number(opt[k]); if (!(n > 0)) { console.error(`bench/flood: --${k} must be positive, got ${opt[k]}`); process.exit(2); } return n; };
const requests = num("requests"), sleepS = num("sleep-s"), giveUpS = num("give-up-s"), boundS = num("bound-s");
if (opt.peer !== undefined && !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\/?$/.test(opt.peer)) { console.error("bench/flood: --peer must be a loopback http URL"); process.exit(2); }

const cpu = os.cpus();
console.log(`machine: ${os.hostname()} · ${cpu.length} × ${cpu[0]?.model ?? "?"} · ${Math.round(os.totalmem() / 2 ** 30)} GiB · Linux ${os.release()} · node ${process.version}`);

async function startServer() {
  const child = spawn(process.execPath, [join(root, "dist", "bin", "rlpipe.js"), "serve", "--sandbox", "local", "--host", "127.0.0.1", "--port", "0", "--quiet",
    "--concurrency", opt.concurrency, "--isolation", opt.isolation], { stdio: ["ignore", "pipe", "inherit"] });
  const banner = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => { out += d; const m = /rlpipe serve: (http:\/\/\S+) (.*)/.exec(out); if (m) resolve(m); });
    child.once("exit", () => reject(new Error("rlpipe serve exited")));
  });
  return { url: banner[1], banner: banner[0], pid: child.pid, stop: () => new Promise((r) => { child.once("exit", r); child.kill("SIGTERM"); }) };
}

const body = JSON.stringify({ language: "python", code: `import time\ntime.sleep(${sleepS})\nprint('woke')`, run_timeout: sleepS + 30 });

/** Floods `url`; returns the outcome counts, when the refusals came, and when the last client gave up. */
async function flood(url) {
  const started = performance.now();
  const refusedAt = [];
  let admitted = 0, other = 0, lastGiveUp = 0;
  await Promise.all(Array.from({ length: requests }, async () => {
    try {
      const res = await fetch(`${url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body, signal: AbortSignal.timeout(giveUpS * 1000) });
      await res.arrayBuffer();
      if (res.status === 429 || res.status === 503) refusedAt.push(performance.now() - started);
      else other++;
    } catch {
      admitted++;
      lastGiveUp = Math.max(lastGiveUp, performance.now());
    }
  }));
  refusedAt.sort((a, b) => a - b);
  return { refused: refusedAt.length, refusedP50Ms: refusedAt[Math.floor(refusedAt.length / 2)] ?? null, refusedMaxMs: refusedAt.at(-1) ?? null, gaveUp: admitted, answered: other, lastGiveUp };
}

async function freshMs(url) {
  const t = performance.now();
  const res = await fetch(`${url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ language: "python", code: "print(1)" }), signal: AbortSignal.timeout(boundS * 1000) })
    .catch(() => undefined);
  if (res === undefined) return null;
  const j = await res.json();
  if (j.run_result?.stdout !== "1\n") throw new Error(`a wrong answer: ${JSON.stringify(j).slice(0, 200)}`);
  return performance.now() - t;
}

const results = {};
const server = await startServer();
console.log(server.banner);
try {
  const f = await flood(server.url);
  let idleMs = null;
  for (const until = performance.now() + boundS * 1000; performance.now() < until;) {
    const st = await (await fetch(`${server.url}/v1/stats`)).json();
    if (st.server.admission.inProgress === 0 && st.sandbox.slots.busy === 0 && st.sandbox.slots.waiting === 0) { idleMs = performance.now() - f.lastGiveUp; break; }
    await new Promise((r) => setTimeout(r, 20));
  }
  const fresh = await freshMs(server.url);
  const peakMiB = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.pid}/status`, "utf8"))[1]) / 1024;
  results.rlpipe = { ...f, lastGiveUp: undefined, idleAfterLastDisconnectMs: idleMs, freshPrint1Ms: fresh, peakRssMiB: Math.round(peakMiB) };
} finally {
  await server.stop();
}
if (opt.peer !== undefined) {
  const f = await flood(opt.peer.replace(/\/$/, ""));
  results.peer = { ...f, lastGiveUp: undefined, freshPrint1Ms: await freshMs(opt.peer.replace(/\/$/, "")) };
}
const fmt = (v) => (v === null || v === undefined ? `none within ${boundS} s` : `${Math.round(v)} ms`);
for (const [who, r] of Object.entries(results)) {
  console.log(`${who}: ${requests} clients (${sleepS} s programs, giving up after ${giveUpS} s): refused ${r.refused} (p50 ${fmt(r.refusedP50Ms)}, last ${fmt(r.refusedMaxMs)}), gave up ${r.gaveUp}, answered ${r.answered}`);
  if (r.idleAfterLastDisconnectMs !== undefined) console.log(`  idle ${fmt(r.idleAfterLastDisconnectMs)} after the last disconnect; peak RSS ${r.peakRssMiB} MiB`);
  console.log(`  a fresh print(1) after the flood: ${fmt(r.freshPrint1Ms)}`);
}
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "flood.json"), `${JSON.stringify({ requests, sleepS, giveUpS, concurrency: Number(opt.concurrency), isolation: opt.isolation, results }, null, 2)}\n`);
