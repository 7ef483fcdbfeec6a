#!/usr/bin/env node
// Benchmark (issue 22, item 7): reward test cases/s through the sandbox of one Ray node and of two, as a Ray job runs
// them: a real Ray cluster whose nodes each live in a network namespace of their own (veth pairs into a bridge in
// another namespace; nothing listens on the host's addresses), node i pinned to CPU i with everything it starts.
// The rendered bundle's launch.sh runs as the job's driver (provider ray): it starts `rlpipe serve` on every node
// through one Ray actor per node. The stage is the load: one Ray task per node (node affinity, as verl places its
// reward and agent-loop workers), each sending the same workload to its own node's sandbox at 127.0.0.1.
//
//   sudo node bench/ray-nodes.mjs [--rounds 3] [--programs 200] [--in-flight 8] [--nodes 1,2]
//
// Workload per node: --programs /common_evaluate_batch requests (a 10-case Python stdin/stdout a+b program, every text
// distinct) at --in-flight at once, every answer checked (and an a−b program must be rejected). All tasks start at a
// common instant after warm-up; test cases/s = all nodes' cases / (last finish − start). Also per node: /run_code
// print(1) p50 from a worker on the node (the path a tool call takes: no router in between), and the p50 round trip
// of an empty Ray task from the driver to the node (what Ray adds to any call placed through it).
// Prints the machine and the figures, the scaling factor (2 nodes / 1 node; goal ≥ 1.8×); writes
// bench/results/ray-nodes.json. Needs root (network namespaces) and the test virtualenv (Ray). Run `npm run build` first.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { startNetnsRay } = await import(join(root, "dist", "test", "servers", "ray-netns.js"));
const { plan } = await import(join(root, "dist", "core", "plan.js"));
const { parseRecipe } = await import(join(root, "dist", "core", "recipe", "load.js"));
const { writeBundle } = await import(join(root, "dist", "bin", "bundle-writer.js"));
const { bundledAssets } = await import(join(root, "dist", "bin", "commands", "plan.js"));

const { values: opt } = parseArgs({
  options: {
    rounds: { type: "string", default: "3" }, programs: { type: "string", default: "200" }, "in-flight": { type: "string", default: "8" },
    nodes: { type: "string", default: "1,2" }, help: { type: "boolean", default: false },
  },
  strict: true,
});
if (opt.help) {
  console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1, 18).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
  process.exit(0);
}
const int = (name) => {
  const n = Number(opt[name]);
  if (!Number.isInteger(n) || n < 1) { console.error(`bench/ray-nodes: --${name} must be an integer ≥ 1, got ${opt[name]}`); process.exit(2); }
  return n;
};
const rounds = int("rounds"), programs = int("programs"), inFlight = int("in-flight");
const nodeCounts = opt.nodes.split(",").map(Number);
const cpus = os.cpus().length;
if (nodeCounts.some((n) => !Number.isInteger(n) || n < 1 || n > cpus)) { console.error(`bench/ray-nodes: --nodes must list node counts between 1 and the ${cpus} CPUs (one per node)`); process.exit(2); }
if (process.getuid?.() !== 0) { console.error("bench/ray-nodes: needs root (network namespaces)"); process.exit(2); }

const machine = { cpu: os.cpus()[0]?.model ?? "unknown", cores: cpus, memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}`, load1AtStart: os.loadavg()[0] };
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, ${machine.platform}, load ${machine.load1AtStart.toFixed(2)}`);

const PYTHON = join(root, ".venv-test", "bin", "python");
const PORT = 18790;

// The load, run as the verl stage of the job: a Ray driver placing one task per node.
const LOAD = String.raw`
import json, os, sys, threading, time, urllib.request
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
PROGRAMS, IN_FLIGHT, PORT = int(os.environ["BENCH_PROGRAMS"]), int(os.environ["BENCH_IN_FLIGHT"]), int(os.environ["BENCH_PORT"])
CASES = 10
ray.init(address="auto", logging_level="ERROR")

@ray.remote(num_cpus=0)
class Load:
    def __init__(self):
        self.n = 0
        self.lock = threading.Lock()
    def post(self, path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.load(r)
    def batch(self, op="+"):
        with self.lock:
            self.n += 1
            n = self.n
        body = {"completion": "` + "```" + String.raw`python\na,b=map(int,input().split())\nprint(a" + op + "b)\n# %d %s %f\n` + "```" + String.raw`" % (n, ray.get_runtime_context().get_node_id()[:8], time.time()),
                "config": {"language": "python", "run_timeout": 5, "provided_data": {"test_cases": {"type": "stdin_stdout",
                "input": [f"{i} {i+1}" for i in range(CASES)], "output": [str(2*i+1) for i in range(CASES)], "fn_name": None}},
                "extra": {"run_all_cases": True, "total_timeout": 30}}}
        r = self.post("/common_evaluate_batch", body)
        ok = r.get("accepted") is True and len(r.get("tests", [])) == CASES and all(t.get("passed") for t in r["tests"])
        if op == "+" and not ok:
            raise RuntimeError("a correct program was not accepted: " + json.dumps(r)[:300])
        if op == "-" and r.get("accepted") is not False:
            raise RuntimeError("a wrong program was accepted")
    def run(self, n, in_flight):
        todo = list(range(n))
        lock = threading.Lock()
        errors = []
        def worker():
            while True:
                with lock:
                    if not todo: return
                    todo.pop()
                try:
                    self.batch()
                except Exception as e:
                    errors.append(str(e)); return
        ts = [threading.Thread(target=worker) for _ in range(in_flight)]
        for t in ts: t.start()
        for t in ts: t.join()
        if errors: raise RuntimeError(errors[0])
    def warm(self):
        self.batch("-")
        self.run(2 * IN_FLIGHT, IN_FLIGHT)
        return True
    def measure(self, start_at):
        time.sleep(max(0.0, start_at - time.time()))
        t0 = time.time()
        self.run(PROGRAMS, IN_FLIGHT)
        return {"start": t0, "end": time.time(), "cases": PROGRAMS * CASES}
    def run_code_p50(self, n=60):
        ms = []
        for i in range(n):
            t = time.perf_counter()
            r = self.post("/run_code", {"code": "print(1) # %d %f" % (i, time.time()), "language": "python"})
            ms.append((time.perf_counter() - t) * 1000)
            assert r["status"] == "Success" and r["run_result"]["stdout"] == "1\n", r
        return sorted(ms)[len(ms) // 2]

@ray.remote(num_cpus=0)
def noop():
    return 0

nodes = sorted((n["NodeManagerAddress"], n["NodeID"]) for n in ray.nodes() if n["Alive"])
pin = lambda nid: NodeAffinitySchedulingStrategy(node_id=nid, soft=False)
loads = [Load.options(scheduling_strategy=pin(nid)).remote() for _, nid in nodes]
ray.get([l.warm.remote() for l in loads])
start_at = time.time() + 2
res = ray.get([l.measure.remote(start_at) for l in loads])
wall = max(r["end"] for r in res) - start_at
cases = sum(r["cases"] for r in res)
p50 = ray.get([l.run_code_p50.remote() for l in loads])
rtt = []
for _, nid in nodes:
    ms = []
    for _ in range(100):
        t = time.perf_counter(); ray.get(noop.options(scheduling_strategy=pin(nid)).remote()); ms.append((time.perf_counter() - t) * 1000)
    rtt.append(sorted(ms)[50])
json.dump({"nodes": [ip for ip, _ in nodes], "casesPerS": cases / wall, "wallS": wall, "cases": cases,
           "perNode": [{"ip": ip, "casesPerS": r["cases"] / (r["end"] - start_at), "runCodeP50Ms": p, "rayTaskP50Ms": t} for (ip, _), r, p, t in zip(nodes, res, p50, rtt)]},
          open(os.environ["BENCH_OUT"], "w"))
`;

function recipe(work, nodes) {
  return `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: bench-ray-nodes }
runtime: { accelerator: nvidia-gpu, workDir: ${work}, verl: { ref: c651b7b } }
resources: { nodes: ${nodes}, devicesPerNode: 1 }
models: { m: { path: models/m } }
datasets: { d: { path: d.parquet, format: verl-rl } }
sandbox: { kind: rlpipe, deploy: colocated, url: "http://127.0.0.1:${PORT}" }
tools: [{ name: code_interpreter, preset: rlpipe }]
stages:
  - { id: rl, type: rl, model: m, data: { train: d, promptsPerStep: 2, maxPromptLength: 8, maxResponseLength: 8 }, rollout: { engine: vllm, mode: async }, agent: { multiTurn: true, tools: [code_interpreter] } }
`;
}

async function once(nodes) {
  const dir = mkdtempSync("/tmp/rlpipe-bench-rn-");
  const cluster = await startNetnsRay({ nodes, pinCpus: Array.from({ length: nodes }, (_, i) => i), cpusPerNode: 1 });
  try {
    const work = join(dir, "work"), stubs = join(dir, "stubs"), bundle = join(dir, "bundle");
    for (const d of [work, stubs]) mkdirSync(d, { recursive: true });
    writeFileSync(join(dir, "load.py"), LOAD);
    writeFileSync(join(stubs, "rlpipe"), `#!/usr/bin/env bash\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(root, "dist", "bin", "rlpipe.js"))} "$@"\n`);
    writeFileSync(join(stubs, "python3"), `#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = verl.trainer.main_ppo ]; then exec ${JSON.stringify(PYTHON)} ${JSON.stringify(join(dir, "load.py"))}; fi
exec ${JSON.stringify(PYTHON)} "$@"
`);
    for (const n of ["rlpipe", "python3"]) chmodSync(join(stubs, n), 0o755);
    const p = plan(parseRecipe(recipe(work, nodes), "bench.yaml"), { provider: "ray", assets: bundledAssets() });
    writeBundle(bundle, p.files);
    const out = join(dir, "out.json");
    const argv = cluster.inNode(0, ["bash", join(bundle, "launch.sh")]);
    const r = spawnSync(argv[0], argv.slice(1), {
      encoding: "utf8", timeout: 1_800_000,
      env: { PATH: `${stubs}:${join(root, ".venv-test", "bin")}:/usr/bin:/bin`, HOME: dir, RAY_ADDRESS: cluster.address, BENCH_OUT: out, BENCH_PROGRAMS: String(programs), BENCH_IN_FLIGHT: String(inFlight), BENCH_PORT: String(PORT) },
    });
    if (r.status !== 0) throw new Error(`launch.sh exited ${r.status}:\n${r.stderr.slice(-3000)}`);
    return JSON.parse(readFileSync(out, "utf8"));
  } finally {
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = Object.fromEntries(nodeCounts.map((n) => [n, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? nodeCounts : [...nodeCounts].reverse();
  for (const n of order) {
    const r = await once(n);
    results[n].push(r);
    console.log(`round ${round + 1} ${n} node(s): ${r.casesPerS.toFixed(0)} cases/s (${r.cases} cases in ${r.wallS.toFixed(2)} s); ` +
      r.perNode.map((x) => `${x.ip}: ${x.casesPerS.toFixed(0)} cases/s, run_code p50 ${x.runCodeP50Ms.toFixed(1)} ms, Ray task p50 ${x.rayTaskP50Ms.toFixed(2)} ms`).join("; "));
  }
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
const summary = Object.fromEntries(nodeCounts.map((n) => [n, {
  casesPerS: median(results[n].map((r) => r.casesPerS)),
  runCodeP50Ms: median(results[n].flatMap((r) => r.perNode.map((x) => x.runCodeP50Ms))),
  rayTaskP50Ms: median(results[n].flatMap((r) => r.perNode.map((x) => x.rayTaskP50Ms))),
}]));
console.log(`\nmedian of ${rounds} rounds (${programs} programs × 10 cases per node at ${inFlight} in flight; node i pinned to CPU i):`);
for (const n of nodeCounts) console.log(`${n} node(s): ${summary[n].casesPerS.toFixed(0)} test cases/s; /run_code p50 from a worker on its node ${summary[n].runCodeP50Ms.toFixed(1)} ms; an empty Ray task's round trip p50 ${summary[n].rayTaskP50Ms.toFixed(2)} ms`);
let scaling;
if (summary[1] !== undefined && summary[2] !== undefined) {
  scaling = summary[2].casesPerS / summary[1].casesPerS;
  const paired = results[2].map((r, i) => (r.casesPerS / results[1][i].casesPerS).toFixed(2));
  console.log(`scaling 2 nodes / 1 node: ${scaling.toFixed(2)}× (goal ≥ 1.8×; ScaleBox publishes 1.58× at 3 nodes); per round ${paired.join(" ")}`);
}
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "ray-nodes.json"), `${JSON.stringify({ machine, workload: { programs, casesPerProgram: 10, inFlight, rounds, nodes: nodeCounts }, results, summary, scaling: scaling ?? null }, null, 2)}\n`);
