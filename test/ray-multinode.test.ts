// A two-node Ray job from a rendered bundle, on a real Ray cluster whose nodes each live in a network namespace this
// test creates (own address, veth pair; a node's 127.0.0.1 is its own). launch.sh runs unchanged as the job's driver
// on the head node; only the verl stage is a stand-in: a Ray driver that, like verl's agent loop, places a worker on
// every node and makes a tool call there through rlpipe's verl tool as rendered (class by module name, the tool
// config's URL). Each call must be served by the sandbox on the worker's own node (that sandbox counts it), a
// sandbox killed mid-stage must be restarted by its node's actor, the token never travels through Ray, and
// nothing of the sandboxes is left when launch.sh ends.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { writeBundle } from "../bin/bundle-writer.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { ROOT } from "./helpers.js";
import { type NetnsRayCluster, startNetnsRay } from "./servers/ray-netns.js";

const PYTHON = join(ROOT, ".venv-test", "bin", "python");
const TOKEN = "node-sandbox-token-0123456789abcdef";
const PORT = 18777;

const FOREIGN = "import http.server, sys\nclass H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        self.send_response(200); self.end_headers(); self.wfile.write(b'pong')\n    log_message = lambda *a: None\ns = http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H)\nprint('up', flush=True)\ns.serve_forever()\n";

function recipeText(work: string): string {
  return `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: two-node-tools }
runtime: { accelerator: nvidia-gpu, workDir: ${work}, verl: { ref: c651b7b } }
resources: { nodes: 2, devicesPerNode: 1 }
models: { m: { path: models/m } }
datasets: { d: { path: d.parquet, format: verl-rl } }
sandbox: { kind: rlpipe, deploy: colocated, url: "http://127.0.0.1:${PORT}", auth: { secret: sandbox-token } }
secrets: { sandbox-token: { env: MY_SANDBOX_TOKEN } }
tools: [{ name: code_interpreter, preset: rlpipe }]
checkpoints: { storage: "file://${work}-store" }
stages:
  - { id: rl, type: rl, model: m, data: { train: d, promptsPerStep: 2, maxPromptLength: 8, maxResponseLength: 8 }, rollout: { engine: vllm, mode: async }, agent: { multiTurn: true, tools: [code_interpreter] }, logging: { backends: [console, file] } }
`;
}

// The stand-in for verl's trainer: one task per alive node (node affinity, as AgentLoopManager places its workers),
// each building the tool from the rendered config and calling it; then the sandbox of the second node is killed,
// its actor restarts it, and every node is called again.
const STAGE = String.raw`
import json, os, signal, sys, time
import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
args = dict(a.split("=", 1) for a in sys.argv[1:])
tool_config = os.path.abspath(args["actor_rollout_ref.rollout.multi_turn.tool_config_path"])
tree = os.environ["VERL_TREE"]
ray.init(address="auto", logging_level="ERROR")

@ray.remote(num_cpus=0)
def tool_call(tool_config, tree, helpers, code):
    import socket, sys, urllib.request
    sys.path.append(helpers)
    import verl_tree
    verl_tree.stand_up(tree)
    tool, entry = verl_tree.tool_from_config(tool_config)
    text, metrics = verl_tree.call_once(tool, {"code": code})
    cfg = entry.config
    base = cfg["sandbox_url"].rsplit("/", 1)[0]
    req = urllib.request.Request(base + "/v1/stats", headers={"Authorization": "Bearer " + os.environ["MY_SANDBOX_TOKEN"]})
    stats = json.load(urllib.request.urlopen(req, timeout=30))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.connect(("10.213.0.250", 9)); ip = s.getsockname()[0]; s.close()
    return {"ip": ip, "url": cfg["sandbox_url"], "text": text, "infra": metrics.get("rlpipe_infra_error"), "requests": stats["requests"]["requests"]}

def everywhere(code):
    nodes = sorted((n["NodeManagerAddress"], n["NodeID"]) for n in ray.nodes() if n["Alive"])
    return ray.get([tool_call.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=nid, soft=False)).remote(tool_config, tree, os.environ["TEST_PYTHON_DIR"], code) for _, nid in nodes])

first = everywhere("print(6*7)")
# verl logs step 1; the health poller (every node's sandbox, through its actor) writes what step 1 cost beside it.
metrics = os.environ["VERL_FILE_LOGGER_PATH"]
health = metrics[: -len(".jsonl")] + ".sandbox.jsonl"
open(metrics, "a").write(json.dumps({"step": 1, "data": {"critic/score/mean": 0.25}}) + "\n")
until = time.monotonic() + 300
while not (os.path.exists(health) and '"step": 1' in open(health).read()):
    assert time.monotonic() < until, "no health line for step 1"
    time.sleep(0.5)
ready = json.load(open(os.path.join(os.getcwd(), ".rlpipe", "node-sandboxes.json")))
victim = ready["nodes"][1]
os.kill(victim["pid"], signal.SIGKILL)
actor = ray.get_actor("rlpipe-sandbox-" + victim["nodeId"], namespace=ready["namespace"])
until = time.monotonic() + 300
while True:
    st = ray.get(actor.status.remote())
    if st["restarts"] == 1 and st["healthy"] and st["pid"] != victim["pid"]:
        break
    assert time.monotonic() < until, st
    time.sleep(0.5)
second = everywhere("print(sum(range(10)))")
open(metrics, "a").write(json.dumps({"step": 2, "data": {"critic/score/mean": 0.5}}) + "\n")
json.dump({"ready": ready, "first": first, "second": second, "restarted": st}, open(os.environ["STUB_LOG"] + "/result.json", "w"))
`;

describe("a two-node Ray job: the sandbox on every node, each node's tool calls served there", { timeout: 900_000 }, () => {
  let cluster: NetnsRayCluster;
  let root: string;
  before(async () => {
    assert.equal(process.getuid?.(), 0, "network namespaces need root");
    root = mkdtempSync("/tmp/rlpipe-rn-job-");
    // The cluster's own environment carries the secret (as a real one would export it before ray start).
    cluster = await startNetnsRay({ nodes: 2, env: { MY_SANDBOX_TOKEN: TOKEN } });
  });
  after(async () => {
    await cluster?.stop();
    if (root !== undefined) rmSync(root, { recursive: true, force: true });
  });

  const cmdline = (pid: number) => { try { return readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " "); } catch { return ""; } };
  const sandboxes = () => cluster.pids().map(cmdline).filter((c) => /rlpipe\.js serve|rlpipe serve|local_harness|bwrap/.test(c));
  const noSandboxLeft = async () => {
    // Nothing of the sandboxes outlives the job: only Ray's own processes remain in the namespaces.
    const deadline = Date.now() + 60_000;
    while (sandboxes().length > 0 && Date.now() < deadline) await new Promise((res) => setTimeout(res, 250));
    assert.deepEqual(sandboxes(), []);
  };

  it("launch.sh, as the driver, starts one sandbox per node; calls from each node reach their own; a killed one is restarted", async () => {
    const work = join(root, "work");
    const stubs = join(root, "stubs");
    const logs = join(root, "logs");
    for (const d of [work, stubs, logs]) mkdirSync(d, { recursive: true });
    writeFileSync(join(stubs, "rlpipe"), `#!/usr/bin/env bash\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(join(ROOT, "dist", "bin", "rlpipe.js"))} "$@"\n`);
    writeFileSync(join(root, "stage.py"), STAGE);
    writeFileSync(join(stubs, "python3"), `#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = verl.trainer.main_ppo ]; then shift 2; exec ${JSON.stringify(PYTHON)} ${JSON.stringify(join(root, "stage.py"))} "$@"; fi
exec ${JSON.stringify(PYTHON)} "$@"
`);
    for (const n of ["rlpipe", "python3"]) chmodSync(join(stubs, n), 0o755);
    const text = recipeText(work);
    const p = plan(parseRecipe(text, "two-node.yaml"), { provider: "ray", assets: bundledAssets() });
    const launch = p.files.find((f) => f.path === "launch.sh")!.content;
    assert.match(launch, /rlpipe_start_node_sandboxes\n/);
    assert.doesNotMatch(launch, /setsid bash -c/, "no sandbox of launch.sh's own on the driver's node");
    const spec = JSON.parse(p.files.find((f) => f.path === ".rlpipe/node-sandbox.json")!.content);
    assert.ok(!spec.forwardEnv.includes("MY_SANDBOX_TOKEN"), "the secret is never forwarded through Ray");
    for (const f of p.files) assert.doesNotMatch(f.content, new RegExp(TOKEN), `${f.path} holds no token`);
    assert.match(p.sandbox!.where, /every Ray node/);

    const bundle = join(root, "bundle");
    writeBundle(bundle, p.files);
    const r = spawnSync(cluster.inNode(0, ["bash", join(bundle, "launch.sh")])[0]!, cluster.inNode(0, ["bash", join(bundle, "launch.sh")]).slice(1), {
      encoding: "utf8", timeout: 600_000,
      env: { PATH: `${stubs}:${join(ROOT, ".venv-test", "bin")}:/usr/bin:/bin`, HOME: root, STUB_LOG: logs, RAY_ADDRESS: cluster.address, RLPIPE_RUN: "two-node-run", MY_SANDBOX_TOKEN: TOKEN, VERL_TREE: join(ROOT, ".venv-test", "verl", "0.9.1"), TEST_PYTHON_DIR: join(ROOT, "test", "python"), RLPIPE_SANDBOX_CHECK_S: "1" },
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const result = JSON.parse(readFileSync(join(logs, "result.json"), "utf8"));
    const ips = cluster.nodes.map((n) => n.ip);
    assert.deepEqual(result.ready.nodes.map((n: { nodeIp: string }) => n.nodeIp), ips, "one sandbox per node");
    for (const [round, expected, perNode] of [["first", "42\n", [1, 1]], ["second", "45\n", [2, 1]]] as const) {
      const calls = result[round] as { ip: string; url: string; text: string; infra: number; requests: Record<string, { count: number }> }[];
      assert.deepEqual(calls.map((c) => c.ip), ips, `${round}: a call from every node`);
      calls.forEach((c, i) => {
        assert.equal(c.url, `http://127.0.0.1:${PORT}/run_code`, "the rendered tool config, unchanged");
        assert.equal(c.text, expected, `${round}, node ${c.ip}: the tool call ran`);
        assert.equal(c.infra, 0);
        // Each node's sandbox counted exactly the calls made from its own node (the second node's is a new one).
        assert.equal(c.requests["/run_code"]?.count, perNode[i], `${round}, node ${c.ip}: served by its own node's sandbox`);
      });
    }
    assert.equal(result.restarted.restarts, 1);
    assert.match(r.stderr, new RegExp(`the sandbox on node ${ips[1]!.replace(/\./g, "\\.")} \\(pid \\d+\\) exited with code -?\\d+ during the run; restarting it \\(1 of 5\\)`));
    assert.match(r.stderr, /sandbox healthy on every Ray node/);
    // The job's end stops every node's sandbox cleanly: the one restart is the kill above, none at the end.
    assert.equal([...r.stderr.matchAll(/restarting it/g)].length, 1, r.stderr);
    assert.doesNotMatch(`${r.stdout}${r.stderr}`, new RegExp(TOKEN));
    // Sandbox health per step, summed over both nodes (the restarted one counted from its new start), beside verl's
    // metrics in the store, where rlpipe metrics reads both.
    const health = readFileSync(join(work, ".rlpipe", "metrics", "rl.sandbox.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(health.map((h: { step: number; data: Record<string, number> }) => [h.step, h.data["sandbox/requests"], h.data["sandbox/failures"]]), [[1, 2, 0], [2, 2, 0]]);
    const m = spawnSync(process.execPath, [join(ROOT, "dist", "bin", "rlpipe.js"), "metrics", "two-node-run.rl", "--store", `file://${work}-store`, "--json"], { encoding: "utf8" });
    assert.equal(m.status, 0, m.stderr);
    const latest = JSON.parse(m.stdout).latest as { label: string; step: number; value: number }[];
    assert.deepEqual(latest.filter((l) => l.label.startsWith("sandbox requests") || l.label.startsWith("reward")).map((l) => [l.label, l.step, l.value]),
      [["reward (score mean)", 2, 0.5], ["sandbox requests per step", 2, 2]]);
    await noSandboxLeft();
  });

  it("a node whose sandbox is out of restarts stops the job: exit 3 naming the node and the sandbox's log; nothing left", async () => {
    const work = join(root, "work-lost");
    const logs = join(root, "logs-lost");
    for (const d of [work, logs]) mkdirSync(d, { recursive: true });
    const p = plan(parseRecipe(recipeText(work), "two-node.yaml"), { provider: "ray", assets: bundledAssets() });
    const bundle = join(root, "bundle-lost");
    writeBundle(bundle, p.files);
    const argv = cluster.inNode(0, ["bash", join(bundle, "launch.sh")]);
    // The stand-in stage kills the second node's sandbox and waits for a restart that, with none allowed, never comes.
    const r = spawnSync(argv[0]!, argv.slice(1), {
      encoding: "utf8", timeout: 600_000,
      env: { PATH: `${join(root, "stubs")}:${join(ROOT, ".venv-test", "bin")}:/usr/bin:/bin`, HOME: root, STUB_LOG: logs, RAY_ADDRESS: cluster.address, RLPIPE_RUN: "lost-run", MY_SANDBOX_TOKEN: TOKEN, VERL_TREE: join(ROOT, ".venv-test", "verl", "0.9.1"), TEST_PYTHON_DIR: join(ROOT, "test", "python"), RLPIPE_SANDBOX_CHECK_S: "1", RLPIPE_SANDBOX_RESTARTS: "0" },
    });
    assert.equal(r.status, 3, `${r.stdout}\n${r.stderr}`);
    const ip = cluster.nodes[1]!.ip.replace(/\./g, "\\.");
    assert.match(r.stderr, new RegExp(`node ${ip}: the sandbox is gone for good \\(node ${ip}: the sandbox exited again after 0 restarts; not restarting it \\(see [^)]*node-${ip}\\.log\\); its log: [^)]*node-${ip}\\.log\\): the job stops`));
    assert.doesNotMatch(r.stderr, /stage rl: complete/);
    await noSandboxLeft();
  });

  it("a foreign process on the sandbox's port of one node: exit 3 naming that node and the port; no sandbox is left on the others", async () => {
    // Another server already answers on the port inside the second node (its /v1/ping even says pong).
    const foreign = spawn(cluster.inNode(1, [PYTHON, "-c", FOREIGN, String(PORT)])[0]!, cluster.inNode(1, [PYTHON, "-c", FOREIGN, String(PORT)]).slice(1), { stdio: ["ignore", "pipe", "ignore"] });
    try {
      await new Promise<void>((res, rej) => { foreign.stdout!.once("data", () => res()); foreign.once("exit", (c) => rej(new Error(`foreign server exited ${c}`))); });
      const work = join(root, "work-foreign");
      mkdirSync(work, { recursive: true });
      const p = plan(parseRecipe(recipeText(work), "two-node.yaml"), { provider: "ray", assets: bundledAssets() });
      const bundle = join(root, "bundle-foreign");
      writeBundle(bundle, p.files);
      const argv = cluster.inNode(0, ["bash", join(bundle, "launch.sh")]);
      const r = spawnSync(argv[0]!, argv.slice(1), {
        encoding: "utf8", timeout: 600_000,
        env: { PATH: `${join(root, "stubs")}:${join(ROOT, ".venv-test", "bin")}:/usr/bin:/bin`, HOME: root, RAY_ADDRESS: cluster.address, MY_SANDBOX_TOKEN: TOKEN },
      });
      assert.equal(r.status, 3, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stderr, new RegExp(`node ${cluster.nodes[1]!.ip.replace(/\./g, "\\.")}: port ${PORT} is already in use by another process`));
      assert.match(r.stderr, /move the sandbox to another port in the recipe \(the port of sandbox\.url\)/);
      assert.match(r.stderr, /the sandbox could not be started on every Ray node/);
      assert.doesNotMatch(r.stderr, /stage rl: starting/, "no stage runs without a sandbox on every node");
      await noSandboxLeft();
    } finally {
      foreign.kill("SIGKILL");
    }
  });
});

describe("plan: where a co-located sandbox runs on a Ray job", () => {
  const planFor = (provider: "ray" | "slurm" | "tione", url: string, stage = "rl") => {
    const text = recipeText("/work/job").replace(`"http://127.0.0.1:${PORT}"`, JSON.stringify(url))
      .replace("datasets: { d: { path: d.parquet, format: verl-rl } }", stage === "rl" ? "$&" : "datasets: { d: { path: d.parquet, format: verl-rl }, p: { path: p.jsonl, format: jsonl } }")
      .replace(/stages:\n.*\n$/s, stage === "rl" ? "$&" : "stages:\n  - { id: check, type: score, data: p }\n");
    try {
      return { plan: plan(parseRecipe(text, "r.yaml"), { provider, assets: bundledAssets() }), error: undefined };
    } catch (e) {
      return { plan: undefined, error: e as Error & { issues?: { code: string; path: readonly (string | number)[]; message: string; hint?: string }[] } };
    }
  };

  it("refuses a sandbox URL naming one host on a Ray job (every node would call it), with what to write instead", () => {
    const { error } = planFor("ray", "http://10.0.0.5:8080");
    const issue = error?.issues?.find((i) => i.code === "sandbox_not_on_every_node");
    assert.ok(issue, String(error));
    assert.deepEqual(issue.path, ["sandbox", "url"]);
    assert.match(issue.message, /10\.0\.0\.5/);
    assert.match(issue.hint ?? "", /http:\/\/127\.0\.0\.1:8080/);
  });

  it("places one sandbox per node on provider ray and TI-ONE's Ray mode; slurm starts one per node with launch.sh itself", () => {
    for (const provider of ["ray", "tione"] as const) {
      const { plan: p, error } = planFor(provider, `http://127.0.0.1:${PORT}`);
      assert.ok(p, `${provider}: ${String(error)} ${JSON.stringify(error?.issues)}`);
      assert.ok(p.files.some((f) => f.path === ".rlpipe/rlpipe_node_sandbox.py"), provider);
      assert.match(p.files.find((f) => f.path === "launch.sh")!.content, /rlpipe_start_node_sandboxes\n/);
    }
    const { plan: slurm, error } = planFor("slurm", `http://127.0.0.1:${PORT}`);
    assert.ok(slurm, String(error));
    assert.ok(!slurm.files.some((f) => f.path === ".rlpipe/rlpipe_node_sandbox.py"));
    assert.match(slurm.files.find((f) => f.path === "launch.sh")!.content, /setsid bash -c/);
  });

  it("keeps one sandbox on the driver's node when only score stages (run by the driver) call it", () => {
    const { plan: p, error } = planFor("ray", `http://127.0.0.1:${PORT}`, "score");
    assert.ok(p, `${String(error)} ${JSON.stringify(error?.issues)}`);
    assert.ok(!p.files.some((f) => f.path === ".rlpipe/node-sandbox.json"));
  });
});
