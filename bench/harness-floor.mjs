#!/usr/bin/env node
// Benchmark (issue 21): where the local sandbox's CPU per test case goes, against the floor of forking one process per
// test case at all.
//
//   node bench/harness-floor.mjs [--rounds 3] [--scale 1] [--floor-cases 2000]
//
// (1) The sandbox: a LocalSandbox with one slot (no HTTP), programs of C = 1, 10 and 50 a+b stdin/stdout cases run one
//     at a time. CPU of this process and all its descendants (/proc: the zygotes, managers and case processes included)
//     per program, fitted by least squares to  cost(C) = perProgram + C × perCase.
// (2) The floor: inside the same sandbox (one /run_code program, so the same namespaces, seccomp filter, uid and
//     cgroup), a Python loop that forks one process per case running the same a+b program on memfd stdin/stdout and
//     waits for it: the least a fork-per-case design costs on this machine (its own and its children's CPU, getrusage).
// Prints the machine, per round and the median: perProgram, perCase, the floor and perCase − floor (what the harness
// adds to each case: its manager's bookkeeping, the case's directory and limits, events, Node's share). Every answer is
// checked; writes bench/results/harness-floor.json. Nothing leaves this machine.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { treeCpuS } from "./proc-cpu.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values: opt } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" }, scale: { type: "string", default: "1" }, "floor-cases": { type: "string", default: "2000" },
    help: { type: "boolean", default: false },
  },
  strict: true,
});
if (opt.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1, 15).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
  process.exit(0);
}
const positive = (name) => {
  const n = Number(opt[name]);
  if (!(n > 0) || !Number.isFinite(n)) { console.error(`bench/harness-floor: --${name} must be a positive number, got ${opt[name]}`); process.exit(2); }
  return n;
};
const rounds = Math.round(positive("rounds")), scale = positive("scale"), floorCases = Math.round(positive("floor-cases"));

const machine = { cpu: os.cpus()[0]?.model ?? "unknown", cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}`, load1AtStart: os.loadavg()[0] };
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, ${machine.platform}, load ${machine.load1AtStart.toFixed(2)}`);

const { LocalSandbox } = await import(join(root, "dist/adapters/sandboxes/local/local-sandbox.js"));
const sb = await LocalSandbox.create({ concurrency: 1 });

// ---------- (1) the sandbox: cost per program of C cases ----------
const SIZES = [1, 10, 50];
const PROGRAMS = { 1: Math.max(20, Math.round(300 * scale)), 10: Math.max(10, Math.round(120 * scale)), 50: Math.max(4, Math.round(30 * scale)) };
let uniq = 0;
const job = (cases) => ({
  id: String(uniq), language: "python", limits: { runTimeoutMs: 10_000 },
  code: `a, b = map(int, input().split())\nprint(a + b)  # ${uniq++}\n`, // distinct text: nothing answers from a cache
  tests: Array.from({ length: cases }, (_, i) => ({ kind: "stdio", stdin: `${i} ${3 * i}`, expectedStdout: String(4 * i) })),
});
async function msPerProgram(cases) {
  for (let k = 0; k < 3; k++) await sb.evaluate([job(cases)]); // warm this size's path
  const n = PROGRAMS[cases];
  const c0 = treeCpuS(process.pid);
  for (let k = 0; k < n; k++) {
    const [r] = await sb.evaluate([job(cases)]);
    if (r.passed !== cases) throw new Error(`a correct ${cases}-case program passed ${r.passed}: ${JSON.stringify(r).slice(0, 300)}`);
  }
  return ((treeCpuS(process.pid) - c0) / n) * 1000;
}
/** Least squares of y = a + b·x. */
function fit(xs, ys) {
  const n = xs.length, mx = xs.reduce((s, x) => s + x, 0) / n, my = ys.reduce((s, y) => s + y, 0) / n;
  const b = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  return { a: my - b * mx, b };
}

// ---------- (2) the floor, measured inside the sandbox ----------
const FLOOR_PROGRAM = `
import gc, json, os, resource, sys
N = ${floorCases}
code = compile("a, b = map(int, input().split())\\nprint(a + b)\\n", "main.py", "exec")
inp, out = os.memfd_create("in"), os.memfd_create("out")
os.write(inp, b"3 4\\n")
fin, fout = open(inp, "r", closefd=False), open(out, "w", closefd=False)
gc.freeze()
def case():
    os.lseek(inp, 0, 0)
    os.ftruncate(out, 0)
    os.lseek(out, 0, 0)
    pid = os.fork()
    if pid == 0:
        sys.stdin, sys.stdout = fin, fout
        try:
            exec(code, {"__name__": "__main__"})
            fout.flush()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    if os.pread(out, 16, 0) != b"7\\n":
        raise SystemExit("the floor's a+b gave a wrong answer")
for _ in range(50):
    case()
r0, c0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range(N):
    case()
r1, c1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = lambda a, b: (b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime) / N * 1000
print(json.dumps({"parentMs": cpu(r0, r1), "childMs": cpu(c0, c1), "childFaults": (c1.ru_minflt - c0.ru_minflt) / N}))
`;
async function floor() {
  const r = await sb.run({ language: "python", code: FLOOR_PROGRAM, limits: { runTimeoutMs: 120_000 } });
  if (r.status !== "ok") throw new Error(`the floor program failed: ${r.status} ${r.stderr.slice(0, 400)}`);
  const f = JSON.parse(r.stdout.trim().split("\n").pop());
  return { ...f, totalMs: f.parentMs + f.childMs };
}

const results = [];
try {
  for (let round = 1; round <= rounds; round++) {
    const perSize = {};
    for (const c of SIZES) perSize[c] = await msPerProgram(c);
    const { a, b } = fit(SIZES, SIZES.map((c) => perSize[c]));
    const f = await floor();
    const row = { round, msPerProgramBySize: perSize, perProgramMs: a, perCaseMs: b, floorMsPerCase: f.totalMs, floorParentMs: f.parentMs, floorChildMs: f.childMs, floorChildFaults: f.childFaults, aboveFloorMsPerCase: b - f.totalMs, load1: os.loadavg()[0] };
    results.push(row);
    console.log(`round ${round}: per program ${a.toFixed(3)} ms + per case ${b.toFixed(3)} ms (programs of 1/10/50 cases: ${SIZES.map((c) => perSize[c].toFixed(2)).join(" / ")} ms); floor ${f.totalMs.toFixed(3)} ms/case (parent ${f.parentMs.toFixed(3)}, child ${f.childMs.toFixed(3)}, ${f.childFaults.toFixed(0)} faults); above the floor ${(b - f.totalMs).toFixed(3)} ms/case  load ${row.load1.toFixed(2)}`);
  }
} finally {
  await sb.close();
}
const med = (k) => [...results.map((r) => r[k])].sort((x, y) => x - y)[Math.floor(results.length / 2)];
const tenCaseMs = [...results.map((r) => r.msPerProgramBySize[10])].sort((x, y) => x - y)[Math.floor(results.length / 2)];
const summary = { perProgramMs: med("perProgramMs"), perCaseMs: med("perCaseMs"), floorMsPerCase: med("floorMsPerCase"), aboveFloorMsPerCase: med("aboveFloorMsPerCase"), tenCaseProgramMs: tenCaseMs };
console.log(`\nmedian of ${rounds} rounds: per program ${summary.perProgramMs.toFixed(3)} ms, per case ${summary.perCaseMs.toFixed(3)} ms, fork-per-case floor ${summary.floorMsPerCase.toFixed(3)} ms, the harness adds ${summary.aboveFloorMsPerCase.toFixed(3)} ms per case; a 10-case program took ${tenCaseMs.toFixed(2)} ms, ${(tenCaseMs / 10).toFixed(3)} ms per case (${(tenCaseMs / (10 * summary.floorMsPerCase)).toFixed(2)}× the floor)`);
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "harness-floor.json"), `${JSON.stringify({ machine, rounds: results, summary }, null, 2)}\n`);
