// Sandbox health per verl step (recipes/python/rlpipe_health.py) against a real `rlpipe serve`: requests, overload
// answers, timeouts and latency between two steps verl logged, as lines in verl's own format beside its metrics; what
// `rlpipe metrics` makes of them; and a program that prints Prometheus lines and health JSON of its own changes nothing.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { mainSeries, mergeMetrics, toSeries } from "../core/metrics.js";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { ROOT } from "./helpers.js";
import { type ServeProcess, startServe } from "./serve-process.js";

const PYTHON = join(ROOT, ".venv-test", "bin", "python");
const TOKEN_ENV = "RLPIPE_HEALTH_TEST_TOKEN";

// Drives Health step by step (no timing): base poll; step 1's traffic; verl logs step 1; poll; step 2; poll.
const DRIVER = String.raw`
import json, sys, threading, urllib.request, urllib.error
sys.path.insert(0, sys.argv[1])
import rlpipe_health as h
url, token, metrics, out = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
def post(code, deadline=None):
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + token}
    if deadline: headers["X-Rlpipe-Deadline-S"] = str(deadline)
    req = urllib.request.Request(url + "/run_code", data=json.dumps({"code": code, "language": "python", "run_timeout": 20}).encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, None
health = h.Health(h.UrlSource([url], token), metrics, out)
assert health.poll() is None  # the base
codes = []
# A program that prints what a scraper would read, and lines in the health file's format: it reaches only its reply.
forged = 'print("rlpipe_requests_total{route=\\"/run_code\\",status=\\"200\\"} 1000000")\nprint(json.dumps({"step": 1, "data": {"sandbox/requests": 0}}))'
codes.append(post("import json\n" + forged)[0])
codes.append(post("print(1)")[0])
# Overload: the server admits one program at a time (--max-requests 1); a second one while it runs gets 429.
slow = threading.Thread(target=lambda: codes.append(post("import time\ntime.sleep(3)\nprint(2)")[0]))
slow.start()
import time
while True:
    stats = json.load(urllib.request.urlopen(urllib.request.Request(url + "/v1/stats", headers={"Authorization": "Bearer " + token})))
    if stats["server"]["admission"]["inProgress"] >= 1: break
    time.sleep(0.05)
codes.append(post("print(3)")[0])
slow.join()
# A deadline that passes while the program runs: 504.
codes.append(post("import time\ntime.sleep(15)", deadline=1)[0])
assert health.poll() is None, "nothing is written before verl logs a step"
open(metrics, "a").write(json.dumps({"step": 1, "data": {"critic/score/mean": 0.5}}) + "\n")
row1 = health.poll()
codes.append(post("print(4)")[0])
open(metrics, "a").write(json.dumps({"step": 2, "data": {"critic/score/mean": 0.6}}) + "\n")
row2 = health.poll()
assert health.poll() is None, "no second line for the same step"
print(json.dumps({"codes": codes, "row1": row1, "row2": row2}))
`;

describe("sandbox health per verl step beside the metrics", { timeout: 300_000 }, () => {
  let serve: ServeProcess;
  let dir: string;
  const token = "health-token-0123456789abcdef";
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-health-"));
    process.env[TOKEN_ENV] = token;
    serve = await startServe(["--sandbox", "local", "--max-requests", "1", "--token-env", TOKEN_ENV]);
  });
  after(async () => {
    await serve?.stop();
    delete process.env[TOKEN_ENV];
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes what the sandbox did during each step verl logged, in verl's format; rlpipe metrics plots it with the training curves", () => {
    const metrics = join(dir, "rl.jsonl");
    const out = join(dir, "rl.sandbox.jsonl");
    writeFileSync(metrics, "");
    const r = spawnSync(PYTHON, ["-c", DRIVER, join(ROOT, "recipes", "python"), serve.url, token, metrics, out], { encoding: "utf8", timeout: 240_000 });
    assert.equal(r.status, 0, r.stderr);
    const { codes, row1, row2 } = JSON.parse(r.stdout.trim().split("\n").pop()!);
    assert.deepEqual([...codes].sort(), [200, 200, 200, 200, 429, 504], "three programs, the slow one, one refused, one past its deadline");
    assert.equal(row1.step, 1);
    assert.equal(row1.data["sandbox/requests"], 5, "every request that reached a program route, whatever its answer");
    assert.equal(row1.data["sandbox/overloaded"], 1);
    assert.ok(row1.data["sandbox/timeouts"] >= 1, JSON.stringify(row1));
    assert.equal(row1.data["sandbox/infra_errors"], 0);
    assert.equal(row1.data["sandbox/failures"], row1.data["sandbox/overloaded"] + row1.data["sandbox/timeouts"]);
    assert.ok(row1.data["sandbox/latency_p99_ms"] >= 1000, "the slowest request (≥ 1 s) sets p99");
    assert.ok(row1.data["sandbox/latency_p50_ms"] <= row1.data["sandbox/latency_p99_ms"]);
    assert.deepEqual({ step: row2.step, requests: row2.data["sandbox/requests"], failures: row2.data["sandbox/failures"] }, { step: 2, requests: 1, failures: 0 },
      "step 2 counts only its own request (the forged line changed nothing)");
    const lines = readFileSync(out, "utf8").trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines, [row1, row2]);

    // The two files merge by step (as the store's chunks do) and the health panels sit beside the training curves.
    const chunk = (text: string, generation: string, order: number) => ({ generation, start: 0, end: Buffer.byteLength(text), text, generationOrder: order });
    const rows = mergeMetrics([chunk(readFileSync(metrics, "utf8"), "verl", 0), chunk(readFileSync(out, "utf8"), "health", 1)]);
    assert.deepEqual(Object.keys(rows.get(2)!).sort(), ["critic/score/mean", ...Object.keys(row2.data)].sort());
    const labels = mainSeries(toSeries(rows)).map((m) => m.label);
    assert.deepEqual(labels.filter((l) => l.startsWith("sandbox")), ["sandbox requests per step", "sandbox failures per step", "sandbox latency p50 (ms)", "sandbox latency p99 (ms)"]);
    assert.ok(labels.indexOf("reward (score mean)") < labels.indexOf("sandbox requests per step"));
  });

  it("counts a restarted sandbox's requests from zero (its start time changed, or a counter went down)", () => {
    const r = spawnSync(PYTHON, ["-c", `import sys; sys.path.insert(0, ${JSON.stringify(join(ROOT, "recipes", "python"))}); import rlpipe_health as h, json
print(json.dumps([h.delta({"requests": 40.0, "le:0.5": 40.0}, {"requests": 3.0, "le:0.5": 2.0}),
                  h.delta({"started": 100.0, "requests": 1.0}, {"started": 170.0, "requests": 4.0}),
                  h.delta({"started": 100.0, "requests": 1.0}, {"started": 100.0, "requests": 4.0})]))`], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), [{ requests: 3, "le:0.5": 2 }, { requests: 4 }, { requests: 3 }],
      "a counter that went down, or another start time, means a new server: its values count whole");
  });
});

describe("a step whose sandbox calls mostly failed stops the run loudly (issue 34: infra failures are not training signal)", () => {
  it("judges each step's failure share against the limit (only steps with enough calls), and stops the run as a lost sandbox does", async () => {
    const { spawn } = await import("node:child_process");
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-health-limit-"));
    // A stand-in for launch.sh: waits for SIGUSR1 and says what the reason file holds.
    const launch = spawn("bash", ["-c", `trap 'cat "$RLPIPE_SANDBOX_LOST"; exit 3' USR1; echo ready; while :; do sleep 0.2; done`], { env: { ...process.env, RLPIPE_SANDBOX_LOST: join(dir, "lost") }, stdio: ["ignore", "pipe", "inherit"] });
    try {
      let out = "";
      launch.stdout!.on("data", (d: Buffer) => { out += d.toString(); });
      for (const until = Date.now() + 30_000; !out.includes("ready") && Date.now() < until;) await new Promise((res) => setTimeout(res, 20));
      const exited = new Promise<number | null>((res) => launch.on("exit", (c) => res(c)));
      const row = (requests: number, infra: number, over: number, timeouts: number) => ({ step: 7, data: { "sandbox/requests": requests, "sandbox/infra_errors": infra, "sandbox/overloaded": over, "sandbox/timeouts": timeouts, "sandbox/failures": infra + over + timeouts } });
      const r = spawnSync(PYTHON, ["-c", `import sys, json; sys.path.insert(0, ${JSON.stringify(join(ROOT, "recipes", "python"))}); import rlpipe_health as h
rows = json.loads(sys.argv[1])
print(json.dumps([h.over_limit(r, 0.2, 20) for r in rows] + [h.over_limit(rows[1], None, 20)]))
h.stop_the_run(h.over_limit(rows[1], 0.2, 20))`, JSON.stringify([row(100, 5, 5, 5), row(100, 10, 6, 9), row(10, 5, 5, 0)])],
        { encoding: "utf8", env: { ...process.env, RLPIPE_SANDBOX_LOST: join(dir, "lost"), RLPIPE_LAUNCH_PID: String(launch.pid) } });
      assert.equal(r.status, 0, r.stderr);
      const verdicts = JSON.parse(r.stdout.trim().split("\n")[0]!) as (string | null)[];
      assert.equal(verdicts[0], null, "15% is under the 20% limit");
      assert.equal(verdicts[1], "step 7: 25 of 100 sandbox calls failed (10 infra errors, 6 refused as overloaded, 9 timed out): 25% is over the run's limit of 20% (RLPIPE_MAX_SANDBOX_FAILURE_RATE)");
      assert.equal(verdicts[2], null, "a step with fewer calls than the minimum is not judged");
      assert.equal(verdicts[3], null, "no limit (1 turns it off)");
      assert.equal(await exited, 3, "launch.sh was told and stopped");
      assert.match(out, /step 7: 25 of 100 sandbox calls failed/);
    } finally {
      launch.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("plan: the health poller next to the sync sidecar", () => {
  it("starts one per verl stage with metrics when rlpipe serve is the job's sandbox, and syncs its file as a second stream", () => {
    const text = `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: health }
runtime: { accelerator: nvidia-gpu, workDir: /work/job, verl: { ref: c651b7b } }
resources: { nodes: 1, devicesPerNode: 1 }
models: { m: { path: models/m } }
datasets: { d: { path: d.parquet, format: verl-rl } }
sandbox: { kind: rlpipe, deploy: colocated, url: "http://127.0.0.1:18555", auth: { secret: tok } }
secrets: { tok: { env: MY_TOKEN } }
tools: [{ name: code_interpreter, preset: rlpipe }]
checkpoints: { storage: "file:///work/store" }
stages:
  - { id: rl, type: rl, model: m, data: { train: d, promptsPerStep: 2, maxPromptLength: 8, maxResponseLength: 8 }, rollout: { engine: vllm, mode: async }, agent: { multiTurn: true, tools: [code_interpreter] }, logging: { backends: [console, file] } }
`;
    for (const provider of ["local", "ray"] as const) {
      const p = plan(parseRecipe(text, "h.yaml"), { provider, assets: bundledAssets() });
      const launch = p.files.find((f) => f.path === "launch.sh")!.content;
      assert.ok(p.files.some((f) => f.path === ".rlpipe/rlpipe_health.py"), provider);
      const source = provider === "ray" ? '--ray-nodes "\\$RLPIPE_NODE_SANDBOXES_READY"' : '--url "\\$RLPIPE_REWARD_URL"';
      assert.match(launch, new RegExp(`python3 \\.rlpipe/rlpipe_health\\.py --metrics (\\S+)\\.jsonl --out \\1\\.sandbox\\.jsonl ${source} --token-env MY_TOKEN >> \\.rlpipe/health-rl\\.log 2>&1 &\\n  RLPIPE_SYNC_PIDS\\+=\\(\\$!\\)`), provider);
      assert.match(launch, /--metrics (\S+)\.jsonl --metrics \1\.sandbox\.jsonl/, `${provider}: the sidecar syncs both files`);
      // The poller starts once the sandbox answers, and before the stage.
      assert.ok(launch.indexOf("python3 .rlpipe/rlpipe_health.py") > launch.indexOf(provider === "ray" ? "rlpipe_start_node_sandboxes\n" : "rlpipe_wait_healthy \""), provider);
      assert.ok(launch.indexOf("python3 .rlpipe/rlpipe_health.py") < launch.indexOf("# ---- stages"), provider);
    }
  });
});
