#!/usr/bin/env node
// Benchmark (issue 22, item 7; issue 34, item 8): reward test cases/s through the sandbox of one Ray "node" and of
// two, as a Ray job runs them.
//
// WHAT IT MEASURES: CPUs of ONE machine, not machines. Every "node" is a network namespace on this machine (veth
// pairs into a bridge in another namespace; nothing listens on the host's addresses) running a real Ray node; with
// --pin per-node, node i and everything it starts is pinned to CPU i of this machine. So "2 nodes / 1 node" with
// per-node pinning compares one CPU of this machine with two CPUs of it. No second machine, network, NIC or switch is
// involved, and nothing here measures scaling across machines.
// THE CONTROL: --pin shared puts every node on CPU 0 (the same single CPU as the one-node run), so a ratio above 1
// there cannot come from more hardware; it is printed next to the per-node-CPU ratio. --pin none leaves the nodes
// unpinned (both may use every CPU of the machine). Default: --pin per-node,shared.
// The rendered bundle's launch.sh runs as the job's driver (provider ray): it starts `rlpipe serve` on every node
// through one Ray actor per node. The stage is the load: one Ray task per node (node affinity, as verl places its
// reward and agent-loop workers), each sending the same workload to its own node's sandbox at 127.0.0.1.
//
//   sudo node bench/ray-nodes.mjs [--rounds 3] [--programs 200] [--in-flight 8] [--nodes 1,2] [--pin per-node,shared]
//
// Workload per node: --programs /common_evaluate_batch requests (a 10-case Python stdin/stdout a+b program, every text
// distinct) at --in-flight at once, every answer checked (and an a−b program must be rejected). All tasks start at a
// common instant after warm-up; test cases/s = all nodes' cases / (last finish − start). Also per node: test cases/s,
// the CPU-seconds its sandbox server's process tree used per test case (from /proc: the server and its sandboxes),
// /run_code print(1) p50 from a worker on the node (the path a tool call takes: no router in between), and the p50
// round trip of an empty Ray task from the driver to the node (what Ray adds to any call placed through it).
// Prints the machine, what is measured, the figures, the ratio N nodes / 1 node for each --pin (the shared-CPU
// control beside the per-node-CPU figure), and a MODEL line for N machines computed from the per-node figures —
// a model, not measured on more than one machine. Writes bench/results/ray-nodes.json (with a `measures` field).
// Needs root (network namespaces) and the test virtualenv (Ray). Run `npm run build` first.
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
    nodes: { type: "string", default: "1,2" }, pin: { type: "string", default: "per-node,shared" }, help: { type: "boolean", default: false },
  },
  strict: true,
});
if (opt.help) {
  const lines = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1);
  console.log(lines.slice(0, lines.findIndex((l) => !l.startsWith("//"))).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
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
const PIN_MODES = ["per-node", "shared", "none"];
const pins = [...new Set(opt.pin.split(",").map((x) => x.trim()))];
if (pins.length === 0 || pins.some((m) => !PIN_MODES.includes(m))) { console.error(`bench/ray-nodes: --pin must list modes among ${PIN_MODES.join(", ")}, got ${opt.pin}`); process.exit(2); }
if (nodeCounts.some((n) => !Number.isInteger(n) || n < 1)) { console.error(`bench/ray-nodes: --nodes must list node counts ≥ 1`); process.exit(2); }
if (pins.includes("per-node") && nodeCounts.some((n) => n > cpus)) { console.error(`bench/ray-nodes: with --pin per-node, --nodes must list node counts between 1 and the ${cpus} CPUs (one per node)`); process.exit(2); }
if (process.getuid?.() !== 0) { console.error("bench/ray-nodes: needs root (network namespaces)"); process.exit(2); }

const machine = { cpu: os.cpus()[0]?.model ?? "unknown", cores: cpus, memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, platform: `${os.platform()} ${os.release()}`, load1AtStart: os.loadavg()[0] };
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, ${machine.platform}, load ${machine.load1AtStart.toFixed(2)}`);
const MEASURES = `CPUs of ONE machine (${machine.cpu}, ${machine.cores} cores), not machines: each Ray "node" is a network namespace on this machine; ` +
  "per-node: node i pinned to CPU i (N nodes = N CPUs of this machine); shared (the control): every node on CPU 0, so a ratio above 1 cannot come from more hardware; " +
  "none: unpinned, every node may use every CPU. No multi-machine scaling is measured.";
console.log(`measures: ${MEASURES}`);
/** The CPUs node i is pinned to under a --pin mode (undefined: not pinned). */
const pinCpusFor = (mode, n) => (mode === "per-node" ? Array.from({ length: n }, (_, i) => i) : mode === "shared" ? Array.from({ length: n }, () => 0) : undefined);
/** A configuration is (node count, pinning); one node on CPU 0 is the same run under per-node and shared. */
const configKey = (mode, n) => `${n}:${JSON.stringify(pinCpusFor(mode, n) ?? "none")}`;

const PYTHON = join(root, ".venv-test", "bin", "python");
const PORT = 18790;

// The load, run as the verl stage of the job: a Ray driver placing one task per node.
const LOAD = String.raw`
import json, os, sys, threading, time, urllib.request
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
PROGRAMS, IN_FLIGHT, PORT = int(os.environ["BENCH_PROGRAMS"]), int(os.environ["BENCH_IN_FLIGHT"]), int(os.environ["BENCH_PORT"])
CASES = 10
CLK_TCK = os.sysconf("SC_CLK_TCK")
ray.init(address="auto", logging_level="ERROR")

def proc_stat(pid):
    """(ppid, own + reaped children's ticks) of a process, None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    f = s[s.rindex(")") + 2:].split(" ")
    return int(f[1]), int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])

def server_pids():
    """rlpipe serve on this node: node processes running rlpipe.js serve in this network namespace, roots only."""
    me, found = os.readlink("/proc/self/ns/net"), {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{d}/ns/net") != me:
                continue
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if any(a.endswith(b"rlpipe.js") for a in argv) and b"serve" in argv:
            st = proc_stat(d)
            if st is not None:
                found[int(d)] = st[0]
    return [p for p, pp in found.items() if pp not in found]

def tree_cpu_s(roots):
    """CPU seconds of the process trees under roots (live members' own and reaped children's time)."""
    parent, ticks = {}, {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = proc_stat(d)
            if st is not None:
                parent[int(d)], ticks[int(d)] = st
    total = 0
    for pid, t in ticks.items():
        p, hops = pid, 0
        while p > 0 and hops < 64:
            if p in roots:
                total += t
                break
            p, hops = parent.get(p, 0), hops + 1
    return total / CLK_TCK

def cpu_busy_s():
    """Busy seconds (everything but idle and iowait) of every CPU of the machine, from /proc/stat."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *v = line.split()
                v = [int(x) for x in v[:8]]
                out[name[3:]] = (sum(v) - v[3] - v[4]) / CLK_TCK
    return out

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
        servers = server_pids()
        time.sleep(max(0.0, start_at - time.time()))
        t0, srv0 = time.time(), tree_cpu_s(servers)
        self.run(PROGRAMS, IN_FLIGHT)
        end = time.time()
        srv = tree_cpu_s(servers) - srv0
        return {"start": t0, "end": end, "cases": PROGRAMS * CASES, "servers": len(servers), "serverCpuS": srv}
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
pending = [l.measure.remote(start_at) for l in loads]
time.sleep(max(0.0, start_at - time.time()))
busy0 = cpu_busy_s()
res = ray.get(pending)
busy1 = cpu_busy_s()
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
           "cpuBusyS": {c: busy1[c] - busy0.get(c, 0) for c in busy1},
           "perNode": [{"ip": ip, "casesPerS": r["cases"] / (r["end"] - start_at), "cases": r["cases"],
                        "serverCpuSPerCase": r["serverCpuS"] / r["cases"] if r["servers"] > 0 else None,
                        "runCodeP50Ms": p, "rayTaskP50Ms": t} for (ip, _), r, p, t in zip(nodes, res, p50, rtt)]},
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

async function once(nodes, mode) {
  const dir = mkdtempSync("/tmp/rlpipe-bench-rn-");
  const cluster = await startNetnsRay({ nodes, pinCpus: pinCpusFor(mode, nodes), cpusPerNode: 1 });
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


// Every distinct configuration once per round (one node on CPU 0 is the same run under per-node and shared).
const configs = [];
for (const mode of pins) for (const n of nodeCounts) {
  const key = configKey(mode, n);
  const c = configs.find((x) => x.key === key);
  if (c) c.modes.push(mode); else configs.push({ key, nodes: n, mode, modes: [mode], pinCpus: pinCpusFor(mode, n) ?? null, rounds: [] });
}
const pinLabel = (c) => (c.pinCpus === null ? "unpinned" : c.nodes === 1 ? `CPU ${c.pinCpus[0]}` : c.pinCpus.every((x) => x === c.pinCpus[0]) ? `all on CPU ${c.pinCpus[0]}` : `node i on CPU i (${c.pinCpus.join(",")})`);
const inUse = (c, busy) => (c.pinCpus === null ? Object.keys(busy) : [...new Set(c.pinCpus.map(String))]);
for (let round = 0; round < rounds; round++) {
  for (const c of round % 2 === 0 ? configs : [...configs].reverse()) {
    const r = await once(c.nodes, c.mode);
    c.rounds.push(r);
    const cpuS = inUse(c, r.cpuBusyS).reduce((a, k) => a + (r.cpuBusyS[k] ?? 0), 0);
    console.log(`round ${round + 1} ${c.nodes} node(s), ${pinLabel(c)}: ${r.casesPerS.toFixed(0)} cases/s (${r.cases} cases in ${r.wallS.toFixed(2)} s; ` +
      `${((1000 * cpuS) / r.cases).toFixed(2)} ms busy CPU per case on the CPUs in use, any process's); ` +
      r.perNode.map((x) => `${x.ip}: ${x.casesPerS.toFixed(0)} cases/s, server CPU ${x.serverCpuSPerCase === null ? "?" : (1000 * x.serverCpuSPerCase).toFixed(2)} ms/case, ` +
        `run_code p50 ${x.runCodeP50Ms.toFixed(1)} ms, Ray task p50 ${x.rayTaskP50Ms.toFixed(2)} ms`).join("; "));
  }
}
const median = (xs) => { const s = xs.filter((x) => typeof x === "number").sort((a, b) => a - b); return s.length === 0 ? null : s.length % 2 === 1 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
for (const c of configs) {
  c.summary = {
    casesPerS: median(c.rounds.map((r) => r.casesPerS)),
    runCodeP50Ms: median(c.rounds.flatMap((r) => r.perNode.map((x) => x.runCodeP50Ms))),
    rayTaskP50Ms: median(c.rounds.flatMap((r) => r.perNode.map((x) => x.rayTaskP50Ms))),
    serverCpuSPerCase: median(c.rounds.flatMap((r) => r.perNode.map((x) => x.serverCpuSPerCase))),
    busyCpuSPerCase: median(c.rounds.map((r) => inUse(c, r.cpuBusyS).reduce((a, k) => a + (r.cpuBusyS[k] ?? 0), 0) / r.cases)),
    // Per node (index i: node i; node 0 also carries the Ray head and the driver).
    perNode: Array.from({ length: c.nodes }, (_, i) => ({
      ip: c.rounds[0]?.perNode[i]?.ip,
      casesPerS: median(c.rounds.map((r) => r.perNode[i]?.casesPerS)),
      serverCpuSPerCase: median(c.rounds.map((r) => r.perNode[i]?.serverCpuSPerCase)),
      // Busy CPU-seconds per test case on the node's own CPU: only meaningful when the node has a CPU to itself.
      nodeCpuSPerCase: c.mode === "per-node" && c.nodes <= cpus ? median(c.rounds.map((r) => (r.cpuBusyS[String(i)] ?? 0) / r.perNode[i].cases)) : null,
    })),
  };
}
const ms = (x, d = 2) => (x === null ? "?" : (1000 * x).toFixed(d));
console.log(`\nmedian of ${rounds} rounds (${programs} programs × 10 cases per node at ${inFlight} in flight); measures ${MEASURES}`);
for (const c of configs) {
  const s = c.summary;
  console.log(`${c.nodes} node(s), ${pinLabel(c)} [${c.modes.join(", ")}]: ${s.casesPerS.toFixed(0)} test cases/s; server CPU ${ms(s.serverCpuSPerCase)} ms per test case; ` +
    `busy CPU ${ms(s.busyCpuSPerCase)} ms per test case on the CPUs in use (any process's, from /proc/stat); /run_code p50 from a worker on its node ${s.runCodeP50Ms.toFixed(1)} ms; an empty Ray task's round trip p50 ${s.rayTaskP50Ms.toFixed(2)} ms`);
}
const find = (mode, n) => configs.find((c) => c.key === configKey(mode, n));
const ratios = {};
const ratioText = {
  "per-node": (n) => `per-node CPU (node i pinned to CPU i: ${n} CPUs of this one machine against 1 CPU of it)`,
  shared: (n) => `CONTROL, shared CPU (all ${n} nodes on CPU 0, the same single CPU as the 1-node run: a ratio above 1 here cannot come from more hardware)`,
  none: (n) => `unpinned (every node, and the 1-node run too, may use all ${cpus} CPUs)`,
};
if (nodeCounts.includes(1) && nodeCounts.some((n) => n > 1)) {
  console.log(`\nratio N nodes / 1 node (test cases/s) — CPUs of one machine, not machines:`);
  for (const mode of pins) for (const n of nodeCounts.filter((x) => x > 1)) {
    const one = find(mode, 1), many = find(mode, n);
    const perRound = many.rounds.map((r, i) => r.casesPerS / one.rounds[i].casesPerS);
    (ratios[mode] ??= {})[n] = { ratio: many.summary.casesPerS / one.summary.casesPerS, perRound };
    console.log(`  ${n}/1, ${ratioText[mode](n)}: ${ratios[mode][n].ratio.toFixed(2)}× (per round ${perRound.map((x) => x.toFixed(2)).join(" ")})`);
  }
  const pn = ratios["per-node"]?.[2], sh = ratios.shared?.[2];
  if (pn && sh) console.log(`  so: ${pn.ratio.toFixed(2)}× with a CPU per node against ${sh.ratio.toFixed(2)}× with one CPU for both: the difference is what a second CPU of this machine gives; it says nothing about a second machine.`);
}
// Per-node cost and a model for N machines, from the per-node-pinned run with the most nodes.
const base = [...configs].filter((c) => c.mode === "per-node").sort((a, b) => b.nodes - a.nodes)[0];
let perNodeCost = null, model = null;
if (base) {
  const head = base.summary.perNode[0], workers = base.summary.perNode.slice(1);
  const worker = workers.length === 0 ? head : {
    casesPerS: median(workers.map((x) => x.casesPerS)), serverCpuSPerCase: median(workers.map((x) => x.serverCpuSPerCase)), nodeCpuSPerCase: median(workers.map((x) => x.nodeCpuSPerCase)),
  };
  perNodeCost = { from: `${base.nodes} node(s), node i pinned to CPU i`, cpusPerNode: 1, head, worker };
  console.log(`\nper-node cost (from the ${base.nodes}-node run, one pinned CPU per node): ` +
    `head node (also the Ray head and the driver) ${head.casesPerS.toFixed(0)} test cases/s, server CPU ${ms(head.serverCpuSPerCase)} ms per test case, busy CPU ${ms(head.nodeCpuSPerCase)} ms per test case on its CPU (any process's)` +
    (workers.length === 0 ? "" : `; other node(s) ${worker.casesPerS.toFixed(0)} test cases/s, server CPU ${ms(worker.serverCpuSPerCase)} ms per test case, busy CPU ${ms(worker.nodeCpuSPerCase)} ms per test case on its CPU (any process's)`));
  const ns = [2, 4, 8, 16];
  const at = (n) => head.casesPerS + (n - 1) * worker.casesPerS;
  model = {
    label: "model, not measured on more than one machine",
    formula: "head-node test cases/s + (N − 1) × other-node test cases/s, each node one CPU like the ones measured",
    assumes: "each node's workers call only their own node's sandbox (as the design places them); nothing on the request path is shared between machines; Ray adds only control traffic",
    notMeasured: "network between machines, the Ray head's load at N nodes, stragglers, machines with more than one CPU per node",
    casesPerS: Object.fromEntries(ns.map((n) => [n, at(n)])),
  };
  console.log(`MODEL for N machines (model, not measured on more than one machine): N one-CPU nodes ≈ ${head.casesPerS.toFixed(0)} + (N − 1) × ${worker.casesPerS.toFixed(0)} test cases/s: ` +
    ns.map((n) => `N=${n} ${at(n).toFixed(0)}`).join(", ") + `; assumes ${model.assumes}; not measured: ${model.notMeasured}.`);
}
machine.load1AtEnd = os.loadavg()[0];
console.log(`load at start ${machine.load1AtStart.toFixed(2)}, at end ${machine.load1AtEnd.toFixed(2)} (${cpus} cores): other work on this machine slows every configuration and counts in "busy CPU"`);
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "ray-nodes.json"), `${JSON.stringify({
  measures: MEASURES, machine, workload: { programs, casesPerProgram: 10, inFlight, rounds, nodes: nodeCounts, pin: pins },
  configs: configs.map(({ key, nodes, modes, pinCpus, rounds: rs, summary }) => ({ key, nodes, modes, pinCpus, rounds: rs, summary })),
  ratios, scaling: ratios["per-node"]?.[2]?.ratio ?? null, control: ratios.shared?.[2]?.ratio ?? null, perNodeCost, model,
}, null, 2)}\n`);
