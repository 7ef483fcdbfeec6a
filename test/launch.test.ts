// launch.sh, run for real under bash: stub training programs (python3 -m verl…, torchrun, ray, docker) record
// the argv they receive, a real HTTP server on 127.0.0.1 stands in for the sandbox, a real git repository
// takes the patch. Checks: order, exact argv after shell quoting, environment, health wait and timeout,
// exit-code propagation, restart skipping, secrets by name only, multi-node roles, docker-run.sh.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Plan, plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { writeBundle } from "../bin/bundle-writer.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { FIXTURES, ROOT } from "./helpers.js";

const STUB_PYTHON = `#!/usr/bin/env bash
if [ "$1" = "-m" ] && [[ "$2" == verl* ]] && [ -n "\${KILL_SANDBOX_ON:-}" ] && [[ "$*" == *"$KILL_SANDBOX_ON"* ]]; then
  # The sandbox dies mid-stage; the stage goes on once a new one (another pid) answers on the port again.
  old=$(cat "$RLPIPE_SANDBOX_PID_FILE")
  kill -9 "$old"
  /usr/bin/python3 - "$old" "$RLPIPE_SANDBOX_PID_FILE" "$SANDBOX_PORT" <<'PY' || exit 19
import json, os, sys, time, urllib.request
old, pid_file, port = sys.argv[1], sys.argv[2], sys.argv[3]
until = time.monotonic() + 120
while time.monotonic() < until:
    try:
        pid = open(pid_file).read().strip()
        req = urllib.request.Request("http://127.0.0.1:%s/run_code" % port, data=b'{"code": "print(1)"}', headers={"Content-Type": "application/json"})
        if pid and pid != old and json.load(urllib.request.urlopen(req, timeout=5))["status"] == "Success":
            open(os.environ["STUB_LOG"] + "/restarted", "w").write(pid)
            sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit(1)
PY
fi
if [ "$1" = "-m" ] && [[ "$2" == verl* ]] && [ -n "\${BLOCK_ON:-}" ] && [[ "$*" == *"$BLOCK_ON"* ]]; then
  # A long stage: says it started (its pid), then runs until it is stopped.
  echo $$ > "$STUB_LOG/blocked-stage"
  exec sleep 600
fi
if [ "$1" = "-m" ] && [[ "$2" == verl* ]] && [ -n "\${CALL_TOOL_URL_IN:-}" ]; then
  # Call the tool URL the bundle rendered, as verl's workers would, and keep what answered.
  /usr/bin/python3 - "$CALL_TOOL_URL_IN" <<'PY' > "$STUB_LOG/tool-reply" 2>&1 || true
import re, sys, urllib.request
url = re.search(r"_url: (\\S+)", open(sys.argv[1]).read()).group(1)
req = urllib.request.Request(url, data=b'{"code": "print(1)"}', headers={"Content-Type": "application/json"})
print(url, urllib.request.urlopen(req, timeout=10).read().decode())
PY
fi
if [ "$1" = "-m" ] && [[ "$2" == verl* ]]; then
  n=$(ls "$STUB_LOG" | wc -l)
  printf '%s\\0' python3 "$@" > "$STUB_LOG/$(printf %03d "$n").argv"
  env > "$STUB_LOG/$(printf %03d "$n").env"
  if [ -n "\${FAIL_ON:-}" ] && [[ "$*" == *"$FAIL_ON"* ]]; then echo "stub failing" >&2; exit 17; fi
  echo "stub ran $2"
  exit 0
fi
if [ "$1" = "-c" ] && [[ "$2" == *"import ray"* ]]; then echo "$RLPIPE_NNODES"; exit 0; fi
exec /usr/bin/python3 "$@"
`;
const STUB_RECORD = (name: string) => `#!/usr/bin/env bash
n=$(ls "$STUB_LOG" | wc -l)
printf '%s\\0' ${name} "$@" > "$STUB_LOG/$(printf %03d "$n").argv"
env > "$STUB_LOG/$(printf %03d "$n").env"
echo "stub ran ${name}"
exit 0
`;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => resolve(typeof a === "object" && a !== null ? a.port : 0));
    });
  });
}

function git(cwd: string, ...args: string[]): void {
  const r = spawnSync("git", ["-c", "user.email=t@example.invalid", "-c", "user.name=t", ...args], { cwd, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
}

interface Env { root: string; work: string; bundle: string; stubs: string; logs: string; sandboxDir: string; verlRepo: string }

function recipeText(e: Env, port: number, opts: { nodes?: number; healthTimeoutS?: number; start?: string } = {}): string {
  return `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: launch-test }
runtime:
  accelerator: nvidia-gpu
  workDir: ${e.work}
  verl: { ref: c651b7b, path: ${e.verlRepo}, patches: [{ file: patches/0001-change.patch }] }
  env: { GREETING: "hello $USER_NAME", QUOTED: "it's \\"fine\\"" }
resources: { nodes: ${opts.nodes ?? 1}, devicesPerNode: 2 }
models: { base: { path: models/base } }
datasets:
  sft: { path: data/sft.parquet, format: multiturn-sft, build: { command: python3 make_data.py, creates: [data/sft.parquet, data/train.parquet] } }
  train: { path: data/train.parquet, format: verl-rl, build: { command: python3 make_data.py, creates: [data/sft.parquet, data/train.parquet] } }
sandbox:
  kind: sandbox-fusion
  deploy: colocated
  server: { dir: ${e.sandboxDir}, port: ${port}, host: 127.0.0.1, start: "${opts.start ?? `python3 fake_sandbox.py ${port}`}" }
  health: { timeoutS: ${opts.healthTimeoutS ?? 20}, intervalS: 1 }
tools: [{ name: code_interpreter, preset: sandbox-fusion }]
reward: { fn: { path: reward.py, kwargs: { sandbox_fusion_url: "\${sandbox.url}/run_code", note: "a b'c" }, acceptsKwargs: true } }
secrets: { key: { env: TEST_SECRET_KEY } }
stages:
  - { id: sft, type: sft, model: base, data: { train: sft, val: sft, maxLength: 1024 }, batch: { global: 4, microPerDevice: 1 }, schedule: { epochs: 1, saveEvery: 2 }, outputDir: ckpt/sft, logFile: log/sft.log, env: { STAGE: one } }
  - { id: merge, type: merge, from: { stage: sft, step: 2 } }
  - id: rl
    type: rl
    model: \${stages.merge.output}
    data: { train: train, promptsPerStep: 4, maxPromptLength: 64, maxResponseLength: 64 }
    rollout: { engine: vllm, mode: async, n: 2 }
    agent: { multiTurn: true, tools: [code_interpreter] }
    logging: { backends: [console, tensorboard], project: "p q", experiment: "x[1]" }
`;
}

function setup(): Env {
  const root = mkdtempSync(join(tmpdir(), "rlpipe-launch-"));
  const e: Env = { root, work: join(root, "work"), bundle: join(root, "bundle"), stubs: join(root, "stubs"), logs: join(root, "logs"), sandboxDir: join(root, "sandbox"), verlRepo: join(root, "verl") };
  for (const d of [e.work, e.stubs, e.logs, e.sandboxDir, e.verlRepo, join(e.work, "patches")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(e.stubs, "python3"), STUB_PYTHON);
  for (const n of ["torchrun", "docker"]) writeFileSync(join(e.stubs, n), STUB_RECORD(n));
  // `ray status` fails: the head is gone, so a worker's wait loop ends at once.
  writeFileSync(join(e.stubs, "ray"), STUB_RECORD("ray").replace("exit 0", '[ "$1" = status ] && exit 1\nexit 0'));
  for (const n of readdirSync(e.stubs)) chmodSync(join(e.stubs, n), 0o755);
  cpSync(join(FIXTURES, "launch", "fake_sandbox.py"), join(e.sandboxDir, "fake_sandbox.py"));
  writeFileSync(join(e.work, "make_data.py"), "import os\nos.makedirs('data', exist_ok=True)\nopen('data/count','a').write('x')\nfor f in ('data/sft.parquet','data/train.parquet'): open(f,'w').write('rows')\n");
  // a real checkout for the patch
  writeFileSync(join(e.verlRepo, "a.txt"), "one\n");
  git(e.verlRepo, "init", "-q");
  git(e.verlRepo, "add", "a.txt");
  git(e.verlRepo, "commit", "-qm", "init");
  writeFileSync(join(e.verlRepo, "a.txt"), "two\n");
  const diff = spawnSync("git", ["diff"], { cwd: e.verlRepo, encoding: "utf8" }).stdout;
  git(e.verlRepo, "checkout", "a.txt");
  writeFileSync(join(e.work, "patches", "0001-change.patch"), diff);
  return e;
}

function bundle(e: Env, text: string): Plan {
  const p = plan(parseRecipe(text, "launch-test.yaml"), { provider: "local" });
  rmSync(e.bundle, { recursive: true, force: true });
  writeBundle(e.bundle, [...p.files, { path: "rlpipe-plan.json", content: "{}", executable: false }]);
  return p;
}

function launch(e: Env, env: Record<string, string> = {}, timeoutMs = 60_000) {
  return spawnSync("bash", [join(e.bundle, "launch.sh")], {
    encoding: "utf8", timeout: timeoutMs,
    env: { PATH: `${e.stubs}:/usr/bin:/bin`, HOME: e.root, STUB_LOG: e.logs, TEST_SECRET_KEY: "s3cr3t-value-xyz", USER_NAME: "ada", ...env },
  });
}

/** Recorded invocations, in order: argv (NUL-separated) and env. */
function calls(e: Env): { argv: string[]; env: Map<string, string> }[] {
  return readdirSync(e.logs).filter((f) => f.endsWith(".argv")).sort().map((f) => ({
    argv: readFileSync(join(e.logs, f), "utf8").split("\0").slice(0, -1),
    env: new Map(readFileSync(join(e.logs, f.replace(".argv", ".env")), "utf8").split("\n").filter((l) => l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)] as [string, string])),
  }));
}

function clearLogs(e: Env): void {
  rmSync(e.logs, { recursive: true, force: true });
  mkdirSync(e.logs);
}

function sandboxAlive(port: number): boolean {
  return spawnSync("/usr/bin/python3", ["-c", `import socket; socket.create_connection(("127.0.0.1", ${port}), timeout=1)`]).status === 0;
}

describe("launch.sh under bash", () => {
  let e: Env;
  let port: number;
  before(async () => { e = setup(); port = await freePort(); });
  after(() => rmSync(e.root, { recursive: true, force: true }));

  it("runs dataset build, patch, sandbox + health check, then sft → merge → rl with the exact argv", () => {
    const p = bundle(e, recipeText(e, port));
    const r = launch(e);
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    const c = calls(e);
    assert.deepEqual(c.map((x) => x.argv), p.stages.map((s) => [...s.argv]), "each program received exactly the planned words");
    assert.equal(readFileSync(join(e.verlRepo, "a.txt"), "utf8"), "two\n", "the patch was applied to the checkout");
    assert.equal(readFileSync(join(e.work, "data", "count"), "utf8"), "x", "the dataset was built once");
    assert.ok(existsSync(join(e.work, "tool_config", "rl_tools.yaml")), "the tool config was copied into the working directory");
    assert.match(readFileSync(join(e.work, "log", "sft.log"), "utf8"), /stub ran torchrun/, "the stage's output is teed to its log file");
    assert.match(r.stderr, /sandbox healthy/);
    assert.ok(!sandboxAlive(port), "the sandbox is stopped when launch.sh exits");
    // environment: runtime env with $VAR expansion, stage env only in its stage, secrets passed through by name
    const [sft, , rl] = c;
    assert.equal(sft!.env.get("GREETING"), "hello ada");
    assert.equal(sft!.env.get("QUOTED"), `it's "fine"`);
    assert.equal(sft!.env.get("STAGE"), "one");
    assert.equal(rl!.env.has("STAGE"), false);
  });

  it("skips completed stages, applied patches and built datasets on a restart", () => {
    clearLogs(e);
    const r = launch(e);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(calls(e), []);
    assert.match(r.stderr, /patch already applied/);
    assert.match(r.stderr, /stage sft: already complete, skipping/);
    assert.equal(readFileSync(join(e.work, "data", "count"), "utf8"), "x");
  });

  it("a new run in the same workDir (deploy --new: another RLPIPE_RUN) runs every stage again; its restart skips them", () => {
    const p = bundle(e, recipeText(e, port));
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    assert.equal(launch(e, { RLPIPE_RUN: "launch-test" }).status, 0);
    clearLogs(e);
    const second = launch(e, { RLPIPE_RUN: "launch-test-r2" });
    assert.equal(second.status, 0, second.stderr);
    assert.deepEqual(calls(e).map((x) => x.argv), p.stages.map((s) => [...s.argv]), "run 2 ran every stage, though run 1 completed them in this workDir");
    assert.doesNotMatch(second.stderr, /already complete/);
    clearLogs(e);
    const restart = launch(e, { RLPIPE_RUN: "launch-test-r2" });
    assert.equal(restart.status, 0, restart.stderr);
    assert.deepEqual(calls(e), [], "a restart of run 2 skips what run 2 completed");
    assert.match(restart.stderr, /stage sft: already complete, skipping \(run launch-test-r2\)/);
  });

  it("a new run over the checkpoints another run completed in the same output directory is refused (it would resume them and train nothing); a restart of a run resumes", () => {
    const p = bundle(e, recipeText(e, port));
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    const sft = p.stages.find((s) => s.type === "sft")!;
    const out = sft.output!.startsWith("/") ? sft.output! : join(e.work, sft.output!);
    // Run 1 completes every stage; its SFT left a checkpoint, as verl does.
    assert.equal(launch(e, { RLPIPE_RUN: "ckpt-run" }).status, 0);
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, "latest_checkpointed_iteration.txt"), "186");
    clearLogs(e);
    const second = launch(e, { RLPIPE_RUN: "ckpt-run-r2" });
    assert.equal(second.status, 2, second.stderr);
    assert.match(second.stderr, new RegExp(`stage sft: run ckpt-run already completed this same stage into ${out.replace(/[/.]/g, "\\$&")}; run ckpt-run-r2 would resume from its last checkpoint and train nothing\\. Give this run its own output directory`));
    assert.deepEqual(calls(e), [], "nothing ran");
    assert.equal(readFileSync(join(out, "latest_checkpointed_iteration.txt"), "utf8"), "186", "run 1's checkpoint is untouched");
    // A restart of run 1 whose SFT was interrupted (started, not done) resumes over its own checkpoints.
    for (const f of readdirSync(join(e.work, ".rlpipe", "stages", "ckpt-run")).filter((f) => f.startsWith("sft-") && f.endsWith(".done"))) rmSync(join(e.work, ".rlpipe", "stages", "ckpt-run", f));
    clearLogs(e);
    const restart = launch(e, { RLPIPE_RUN: "ckpt-run" });
    assert.equal(restart.status, 0, restart.stderr);
    assert.deepEqual(calls(e).map((x) => x.argv[0]), ["torchrun"], "only the interrupted SFT runs again, resuming");
  });

  it("propagates a failing stage's exit code and resumes from that stage on the next run", () => {
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    const failed = launch(e, { FAIL_ON: "verl.trainer.main_ppo" });
    assert.equal(failed.status, 17, failed.stderr);
    assert.match(failed.stderr, /stage rl failed with exit code 17/);
    assert.ok(!sandboxAlive(port), "the sandbox is stopped after a failure too");
    clearLogs(e);
    const again = launch(e);
    assert.equal(again.status, 0, again.stderr);
    assert.deepEqual(calls(e).map((x) => x.argv[2]), ["verl.trainer.main_ppo"], "only the failed stage runs again");
  });

  it("fails with exit 3 when the sandbox never becomes healthy, and stops it", () => {
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    // A duration no other test uses: pgrep below looks at every process on the machine.
    const sleeper = `sleep 59.${process.pid % 1000}`;
    bundle(e, recipeText(e, port, { healthTimeoutS: 2, start: sleeper }));
    const r = launch(e);
    assert.equal(r.status, 3);
    assert.match(r.stderr, /was not healthy after 2 s/);
    assert.deepEqual(calls(e), [], "no stage runs without a healthy sandbox");
    // Killed processes may take a moment to be reaped after launch.sh exits.
    const alive = () => spawnSync("pgrep", ["-f", `^${sleeper.replace(".", "\\.")}$`], { encoding: "utf8" }).status === 0;
    for (let i = 0; i < 50 && alive(); i++) spawnSync("sleep", ["0.1"]);
    assert.equal(alive(), false, "the sandbox process group was killed");
  });

  it("restarts a sandbox that dies during a stage (a line in the log); the stage goes on, and the new one is stopped at the end", () => {
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    bundle(e, recipeText(e, port));
    const r = launch(e, { KILL_SANDBOX_ON: "verl.trainer.main_ppo", SANDBOX_PORT: String(port), RLPIPE_SANDBOX_CHECK_S: "0.2" }, 180_000);
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.ok(existsSync(join(e.logs, "restarted")), "the stage saw a new sandbox answer");
    assert.match(r.stderr, /the sandbox \(pid \d+\) exited during the run; restarting it \(1 of 5\)/);
    assert.equal(calls(e).length, 3, "every stage ran");
    assert.ok(!sandboxAlive(port), "the restarted sandbox is stopped when launch.sh exits");
  });

  /** launch.sh in the background, its RL stage blocked (BLOCK_ON) until stopped; once the stage has started. */
  const launchBlockedAtRl = async (env: Record<string, string>) => {
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    bundle(e, recipeText(e, port));
    const child = spawn("bash", [join(e.bundle, "launch.sh")], {
      env: { PATH: `${e.stubs}:/usr/bin:/bin`, HOME: e.root, STUB_LOG: e.logs, TEST_SECRET_KEY: "s3cr3t-value-xyz", USER_NAME: "ada", BLOCK_ON: "verl.trainer.main_ppo", RLPIPE_SANDBOX_CHECK_S: "0.2", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let text = "";
    child.stderr.on("data", (d: Buffer) => { text += d.toString(); });
    const exited = new Promise<number | null>((res) => child.on("exit", (code) => res(code)));
    const blocked = join(e.logs, "blocked-stage");
    for (const until = Date.now() + 120_000; !existsSync(blocked) && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
    assert.ok(existsSync(blocked), `the RL stage started: ${text}`);
    return { child, stderr: () => text, exited, stagePid: Number(readFileSync(blocked, "utf8")) };
  };

  it("a sandbox out of restarts stops the job: exit 3 naming its log, the running stage stopped (never a job that goes on without it)", async () => {
    const { child, stderr, exited, stagePid } = await launchBlockedAtRl({ RLPIPE_SANDBOX_RESTARTS: "0" });
    // The sandbox dies while the stage runs; with no restart left, the job must stop.
    const sandboxPid = Number(readFileSync(join(e.work, ".rlpipe", "sandbox-node0.pid"), "utf8"));
    process.kill(-sandboxPid, "SIGKILL");
    const code = await Promise.race([exited, new Promise<"late">((res) => setTimeout(() => res("late"), 120_000))]);
    if (code === "late") child.kill("SIGKILL");
    assert.equal(code, 3, stderr());
    assert.match(stderr(), /error: the sandbox exited again after 0 restarts \(see its log [^)]+\): the job stops/);
    const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
    for (const until = Date.now() + 30_000; alive(stagePid) && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
    assert.equal(alive(stagePid), false, "the running stage was stopped");
  });

  it("SIGTERM to the job stops the stage and the sandbox with no restart line, and exits 143", async () => {
    const { child, stderr, exited, stagePid } = await launchBlockedAtRl({});
    child.kill("SIGTERM");
    // The documented bound (docs/ARCHITECTURE.md) is 60 s; the wait here is generous and only bounds a hang.
    const code = await Promise.race([exited, new Promise<"late">((res) => setTimeout(() => res("late"), 120_000))]);
    if (code === "late") child.kill("SIGKILL");
    assert.equal(code, 143, stderr());
    assert.match(stderr(), /SIGTERM: stopping the stage, the sandboxes and the sidecars/);
    assert.doesNotMatch(stderr(), /restarting it/);
    const alive = (pid: number) => { try { process.kill(pid, 0); return true; } catch { return false; } };
    for (const until = Date.now() + 30_000; (alive(stagePid) || sandboxAlive(port)) && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
    assert.equal(alive(stagePid), false, "the stage was stopped");
    assert.ok(!sandboxAlive(port), "the sandbox was stopped");
  });

  it("refuses to start when another process already answers on the sandbox's port (it would pass the health check in its place)", async () => {
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    bundle(e, recipeText(e, port));
    const foreign = spawn("/usr/bin/python3", [join(FIXTURES, "launch", "fake_sandbox.py"), String(port)], { stdio: "ignore" });
    try {
      for (const until = Date.now() + 60_000; !sandboxAlive(port) && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
      assert.ok(sandboxAlive(port), "the foreign server listens");
      const r = launch(e);
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, new RegExp(`port ${port} is already in use by another process.*sandbox\\.server\\.port`));
      assert.doesNotMatch(r.stderr, /sandbox healthy/);
      assert.deepEqual(calls(e), [], "no stage ran");
      assert.equal(foreign.exitCode, null, "the other process is left alone");
    } finally {
      foreign.kill("SIGKILL");
    }
  });

  it("one loopback address: where localhost resolves to ::1 and a foreign server listens there, the tool calls still reach the job's own sandbox", async () => {
    if (spawnSync("unshare", ["-m", "true"]).status !== 0) return; // needs a mount namespace (root): the plan test covers the rendering
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    bundle(e, recipeText(e, port));
    const hosts = join(e.root, "hosts-v6");
    writeFileSync(hosts, "::1 localhost\n");
    const foreignLog = join(e.root, "foreign.log");
    const foreign = spawn("/usr/bin/python3", ["-c", `import http.server, socket, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        open(sys.argv[2], "a").write(self.path + "\\n")
        self.send_response(501); self.send_header("Content-Length", "7"); self.end_headers(); self.wfile.write(b"foreign")
    def log_message(self, *a): pass
class S(http.server.HTTPServer): address_family = socket.AF_INET6
S(("::1", int(sys.argv[1])), H).serve_forever()`, String(port), foreignLog], { stdio: "ignore" });
    try {
      const v6Alive = () => spawnSync("/usr/bin/python3", ["-c", `import socket; socket.create_connection(("::1", ${port}), timeout=1)`]).status === 0;
      for (const until = Date.now() + 60_000; !v6Alive() && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
      assert.ok(v6Alive(), "the foreign server listens on [::1]");
      const env = { PATH: `${e.stubs}:/usr/bin:/bin`, HOME: e.root, STUB_LOG: e.logs, TEST_SECRET_KEY: "s3cr3t-value-xyz", USER_NAME: "ada", CALL_TOOL_URL_IN: join(e.bundle, "tool_config", "rl_tools.yaml") };
      const r = spawnSync("unshare", ["-m", "bash", "-c", `mount --bind "$0" /etc/hosts && exec bash "$1"`, hosts, join(e.bundle, "launch.sh")], { encoding: "utf8", timeout: 120_000, env });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const reply = readFileSync(join(e.logs, "tool-reply"), "utf8");
      assert.match(reply, new RegExp(`^http://127\\.0\\.0\\.1:${port}/run_code \\{"status":"Success"`), reply);
      assert.equal(existsSync(foreignLog) ? readFileSync(foreignLog, "utf8") : "", "", "the foreign server on [::1] got no call");
    } finally {
      foreign.kill("SIGKILL");
    }
  });

  it("refuses to start without a required secret, naming the variable and never a value", () => {
    bundle(e, recipeText(e, port));
    const r = spawnSync("bash", [join(e.bundle, "launch.sh")], { encoding: "utf8", env: { PATH: `${e.stubs}:/usr/bin:/bin`, HOME: e.root, STUB_LOG: e.logs } });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /environment variable TEST_SECRET_KEY \(secret 'key'\) is not set/);
    for (const f of readdirSync(e.bundle, { recursive: true }) as string[]) {
      const path = join(e.bundle, f);
      if (existsSync(path) && !f.endsWith("/") && spawnSync("test", ["-f", path]).status === 0) assert.doesNotMatch(readFileSync(path, "utf8"), /s3cr3t/);
    }
  });

  it("multi-node: a worker runs SFT, joins Ray and leaves the rest to rank 0", () => {
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    bundle(e, recipeText(e, port, { nodes: 2 }));
    const missing = launch(e, { RLPIPE_NODE_RANK: "1" });
    assert.equal(missing.status, 2);
    assert.match(missing.stderr, /RLPIPE_MASTER_ADDR must be set/);
    const r = launch(e, { RLPIPE_NODE_RANK: "1", RLPIPE_MASTER_ADDR: "10.0.0.1" });
    assert.equal(r.status, 0, r.stderr);
    const c = calls(e);
    assert.deepEqual(c.map((x) => `${x.argv[0]} ${x.argv[1]}`), ["torchrun --nnodes=2", "ray start", "ray status"]);
    assert.equal(c[0]!.env.get("PET_NODE_RANK"), "1");
    assert.equal(c[0]!.env.get("PET_MASTER_ADDR"), "10.0.0.1");
    assert.deepEqual(c[1]!.argv.slice(0, 3), ["ray", "start", "--address=10.0.0.1:6379"]);
  });

  it("multi-node: rank 0 runs SFT, merge, starts the Ray head and runs RL", () => {
    rmSync(join(e.work, ".rlpipe"), { recursive: true, force: true });
    clearLogs(e);
    const r = launch(e, { RLPIPE_NODE_RANK: "0", RLPIPE_MASTER_ADDR: "127.0.0.1" });
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(calls(e).map((x) => `${x.argv[0]} ${x.argv[1]} ${x.argv[2] ?? ""}`.trim()), [
      `torchrun --nnodes=2 --nproc_per_node=2`, "python3 -m verl.model_merger", "ray start --head", "python3 -m verl.trainer.main_ppo", "ray stop --force",
    ]);
  });
});

describe("docker-run.sh under bash", () => {
  it("passes the planned docker argv with the host workspace expanded and secrets by name", () => {
    const root = mkdtempSync(join(tmpdir(), "rlpipe-docker-"));
    try {
      const text = readFileSync(join(FIXTURES, "..", "..", "recipes", "qwen3-1.7b-code-toolcall.yaml"), "utf8");
      const p = plan(parseRecipe(text, "a.yaml"), { provider: "docker" });
      const dir = join(root, "bundle");
      writeBundle(dir, [...p.files, { path: "rlpipe-plan.json", content: "{}", executable: false }]);
      const stubs = join(root, "stubs");
      const logs = join(root, "logs");
      mkdirSync(stubs);
      mkdirSync(logs);
      writeFileSync(join(stubs, "docker"), STUB_RECORD("docker"));
      chmodSync(join(stubs, "docker"), 0o755);
      const r = spawnSync("bash", [join(dir, "docker-run.sh")], { encoding: "utf8", env: { PATH: `${stubs}:/usr/bin:/bin`, STUB_LOG: logs, HOST_WORKSPACE: "/data/my ws", WANDB_API_KEY: "k-123456" } });
      assert.equal(r.status, 0, r.stderr);
      const argv = readFileSync(join(logs, "000.argv"), "utf8").split("\0").slice(0, -1);
      assert.deepEqual(argv, p.docker!.argv.map((a) => a.replace("$HOST_WORKSPACE", "/data/my ws")));
      assert.ok(argv.includes("WANDB_API_KEY") && !argv.some((a) => a.includes("k-123456")));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("launch.sh with sandbox.kind rlpipe", () => {
  it("starts rlpipe serve with the token, and the bundled reward shim and tool URL reach it", { timeout: 120_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), "rlpipe-kind-"));
    const port = await freePort();
    try {
      const work = join(root, "work");
      const stubs = join(root, "stubs");
      const logs = join(root, "logs");
      for (const d of [work, stubs, logs]) mkdirSync(d, { recursive: true });
      // `rlpipe` in the job is this checkout's CLI.
      writeFileSync(join(stubs, "rlpipe"), `#!/usr/bin/env bash\nexec node ${JSON.stringify(join(FIXTURES, "..", "..", "dist", "bin", "rlpipe.js"))} "$@"\n`);
      // The "trainer": scores one answer through the shim with the kwargs launch.sh passes, and reads the tool URL.
      writeFileSync(join(stubs, "python3"), `#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = verl.trainer.main_ppo ]; then
  shift 2
  exec ${JSON.stringify(join(ROOT, ".venv-test", "bin", "python"))} - "$@" <<'PY'
import json, os, re, sys
args = dict(a.split("=", 1) for a in sys.argv[1:])
import importlib, importlib.util
spec = importlib.util.spec_from_file_location("shim", args["custom_reward_function.path"])
shim = importlib.util.module_from_spec(spec); spec.loader.exec_module(shim)
kw = {k.split(".")[-1]: v for k, v in args.items() if k.startswith("+custom_reward_function.reward_kwargs.")}
gt = json.dumps({"input": ["2 3"], "output": ["5"], "type": "stdin_stdout"})
r = shim.compute_score("code", "\`\`\`python\\na, b = map(int, input().split())\\nprint(a + b)\\n\`\`\`", gt, {}, **kw)
# The tool as verl's registry builds it: OmegaConf, the class by module name (found on PYTHONPATH), verl's schema.
sys.path.append(${JSON.stringify(join(ROOT, "test", "python"))})
import verl_tree
verl_tree.stand_up(os.environ["VERL_TREE"])
tool, entry = verl_tree.tool_from_config(args["actor_rollout_ref.rollout.multi_turn.tool_config_path"])
text, metrics = verl_tree.call_once(tool, {"code": "print(6*7)"})
open(os.environ["STUB_LOG"] + "/result.json", "w").write(json.dumps({"reward": r, "tool": text, "toolMetrics": metrics, "toolClass": entry.class_name, "pythonPath": os.environ.get("PYTHONPATH", ""), "kw": kw}))
PY
fi
exec /usr/bin/python3 "$@"
`);
      for (const n of ["rlpipe", "python3"]) chmodSync(join(stubs, n), 0o755);
      const text = `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: kind-rlpipe }
runtime: { accelerator: nvidia-gpu, workDir: ${work}, verl: { ref: c651b7b } }
resources: { nodes: 1, devicesPerNode: 1 }
models: { m: { path: models/m } }
datasets: { d: { path: d.parquet, format: verl-rl } }
sandbox: { kind: rlpipe, deploy: colocated, url: "http://127.0.0.1:${port}", auth: { secret: sandbox-token } }
secrets: { sandbox-token: { env: MY_SANDBOX_TOKEN } }
tools: [{ name: code_interpreter, preset: rlpipe }]
stages:
  - { id: rl, type: rl, model: m, data: { train: d, promptsPerStep: 2, maxPromptLength: 8, maxResponseLength: 8 }, rollout: { engine: vllm, mode: async }, agent: { multiTurn: true, tools: [code_interpreter] } }
`;
      const p = plan(parseRecipe(text, "k.yaml"), { provider: "local", assets: bundledAssets() });
      // colocated without a server block: rlpipe serve on loopback, on the port of the recipe's URL
      const launch = p.files.find((f) => f.path === "launch.sh")!.content;
      assert.match(launch, new RegExp(`rlpipe serve --sandbox local --host 127\\.0\\.0\\.1 --port ${port} --token-env MY_SANDBOX_TOKEN`));
      // RL stages have the port baked into the tool config, so it is fixed here (not RLPIPE_SANDBOX_PORT-overridable).
      assert.match(launch, new RegExp(`export RLPIPE_SANDBOX_PORT=${port}\n`));
      assert.match(launch, /export RLPIPE_REWARD_URL="http:\/\/127\.0\.0\.1:\$RLPIPE_SANDBOX_PORT"/);
      assert.match(launch, /rlpipe_wait_healthy "\$RLPIPE_REWARD_URL\/v1\/ping" '' pong \d+ \d+ \S+ "\$RLPIPE_SERVE_NONCE"\n/);
      assert.match(launch, /export RLPIPE_SERVE_NONCE="\$\(python3 -c 'import secrets; print\(secrets\.token_hex\(16\)\)'\)"\n/);
      const fixed = p.files;
      assert.ok(fixed.some((f) => f.path === "rlpipe_reward.py"), "the shim is in the bundle");
      const bundleDir = join(root, "bundle");
      writeBundle(bundleDir, [...fixed, { path: "rlpipe-plan.json", content: "{}", executable: false }]);
      const r = spawnSync("bash", [join(bundleDir, "launch.sh")], {
        encoding: "utf8", timeout: 110_000,
        env: { PATH: `${stubs}:/usr/bin:/bin`, HOME: root, STUB_LOG: logs, MY_SANDBOX_TOKEN: "kind-rlpipe-token-0123456789", VERL_TREE: join(ROOT, ".venv-test", "verl", "0.7.0") },
      });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const result = JSON.parse(readFileSync(join(logs, "result.json"), "utf8"));
      assert.deepEqual(result.reward, { score: 1, passed: 1, total: 1, pass_rate: 1 });
      assert.equal(result.tool, "42\n", "rlpipe's own tool, imported from the bundle on PYTHONPATH, ran the call with the token");
      assert.equal(result.toolClass, "rlpipe_tool.RlpipeCodeTool");
      // verl's workers (Ray actors) do not run in the working directory: they find the tool on PYTHONPATH.
      assert.equal(result.pythonPath.split(":")[0], work);
      assert.equal(result.toolMetrics.rlpipe_infra_error, 0);
      assert.ok(fixed.some((f) => f.path === "rlpipe_tool.py"), "the tool is in the bundle");
      assert.deepEqual(result.kw, { url: `http://127.0.0.1:${port}/v1/rewards`, token_env: "MY_SANDBOX_TOKEN" });
      for (const f of fixed) assert.doesNotMatch(f.content, /kind-rlpipe-token/, `${f.path} holds no token`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("launch.sh with a sandbox port no config names (score stages only)", () => {
  it("moves rlpipe serve to a free port when another process holds the planned one, and scores through it", { timeout: 180_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), "rlpipe-port-"));
    const held = await freePort();
    const foreign = spawn("/usr/bin/python3", [join(FIXTURES, "launch", "fake_sandbox.py"), String(held)], { stdio: "ignore" });
    try {
      const stubs = join(root, "stubs");
      mkdirSync(stubs);
      writeFileSync(join(stubs, "rlpipe"), `#!/usr/bin/env bash\nexec node ${JSON.stringify(join(ROOT, "dist", "bin", "rlpipe.js"))} "$@"\n`);
      chmodSync(join(stubs, "rlpipe"), 0o755);
      const bundleDir = join(root, "bundle");
      const planned = spawnSync(process.execPath, [join(ROOT, "dist", "bin", "rlpipe.js"), "plan", join(ROOT, "recipes", "local-demo.yaml"), "--provider", "local", "--out", bundleDir], { encoding: "utf8" });
      assert.equal(planned.status, 0, planned.stderr);
      for (const until = Date.now() + 60_000; !sandboxAlive(held) && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
      assert.ok(sandboxAlive(held), "the other process listens on the planned port");
      const r = spawnSync("bash", [join(bundleDir, "launch.sh")], {
        encoding: "utf8", timeout: 170_000,
        env: { PATH: `${stubs}:/usr/bin:/bin`, HOME: root, RLPIPE_WORKDIR: join(root, "work"), RLPIPE_SANDBOX_PORT: String(held) },
      });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const moved = new RegExp(`port ${held} is in use by another process; the sandbox takes the free port (\\d+)`).exec(r.stderr);
      assert.ok(moved, r.stderr);
      assert.notEqual(Number(moved[1]), held);
      assert.match(r.stderr, /stage check: complete/);
      assert.equal(foreign.exitCode, null, "the other process is left alone");
    } finally {
      foreign.kill("SIGKILL");
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("launch.sh when another deploy takes the port between the check and the bind", () => {
  it("moves the sandbox to another free port instead of failing; a sandbox that exits for another reason names its log and its last lines", { timeout: 240_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), "rlpipe-port-race-"));
    try {
      const stubs = join(root, "stubs");
      mkdirSync(stubs);
      // The first `rlpipe serve` finds its port taken just before it binds (a second deploy got there first).
      writeFileSync(join(stubs, "rlpipe"), `#!/usr/bin/env bash
if [ "$1" = serve ] && [ -n "\${BREAK_SERVE:-}" ]; then echo "rlpipe serve: error: a stand-in failure the message must show"; exit 4; fi
if [ "$1" = serve ] && [ ! -e "$RACE_MARK" ]; then
  touch "$RACE_MARK"
  port=; prev=; for a in "$@"; do [ "$prev" = --port ] && port="$a"; prev="$a"; done
  /usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)
open(sys.argv[2], "w").write("up"); time.sleep(200)' "$port" "$RACE_MARK.up" &
  until [ -s "$RACE_MARK.up" ]; do sleep 0.05; done
fi
exec node ${JSON.stringify(join(ROOT, "dist", "bin", "rlpipe.js"))} "$@"
`);
      chmodSync(join(stubs, "rlpipe"), 0o755);
      const bundleDir = join(root, "bundle");
      const planned = spawnSync(process.execPath, [join(ROOT, "dist", "bin", "rlpipe.js"), "plan", join(ROOT, "recipes", "local-demo.yaml"), "--provider", "local", "--out", bundleDir], { encoding: "utf8" });
      assert.equal(planned.status, 0, planned.stderr);
      const port = await freePort();
      const r = spawnSync("bash", [join(bundleDir, "launch.sh")], {
        encoding: "utf8", timeout: 200_000,
        env: { PATH: `${stubs}:/usr/bin:/bin`, HOME: root, RLPIPE_WORKDIR: join(root, "work"), RLPIPE_SANDBOX_PORT: String(port), RACE_MARK: join(root, "raced") },
      });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      assert.ok(existsSync(join(root, "raced")), "the race happened");
      assert.match(r.stderr, /another process took the port before the sandbox could listen there; the sandbox takes the free port \d+/);
      assert.match(r.stderr, /stage check: complete/);
      // A sandbox that exits for another reason: the message names its log (absolute) and what it said last.
      const broken = spawnSync("bash", [join(bundleDir, "launch.sh")], {
        encoding: "utf8", timeout: 200_000,
        env: { PATH: `${stubs}:/usr/bin:/bin`, HOME: root, RLPIPE_WORKDIR: join(root, "work2"), RLPIPE_SANDBOX_PORT: String(await freePort()), RACE_MARK: join(root, "raced"), BREAK_SERVE: "1" },
      });
      assert.equal(broken.status, 3, broken.stderr);
      assert.match(broken.stderr, /the sandbox exited before it became healthy; its log \/[^ ]+\.log ends: .*a stand-in failure the message must show/);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("launch.sh's health probe knows the rlpipe serve it started (a nonce on /v1/ping)", () => {
  it("passes for the server started with the nonce; a server with another nonce, or none, answering pong does not pass", { timeout: 120_000 }, async () => {
    const p = plan(parseRecipe(readFileSync(join(ROOT, "recipes", "local-demo.yaml"), "utf8"), "local-demo.yaml"), { provider: "local", localWorkDir: "/tmp/w", assets: bundledAssets(), readRecipeFile: (f) => readFileSync(join(ROOT, "recipes", f), "utf8") });
    const launch = p.files.find((f) => f.path === "launch.sh")!.content;
    const probe = /\nrlpipe_probe\(\) \{\n[^]*?\nPY\n\}\n/.exec(launch)![0];
    const port = await freePort();
    const fake = await freePort();
    const serve = spawn(process.execPath, [join(ROOT, "dist", "bin", "rlpipe.js"), "serve", "--sandbox", "local", "--host", "127.0.0.1", "--port", String(port), "--quiet"], { stdio: ["ignore", "pipe", "ignore"], env: { ...process.env, RLPIPE_SERVE_NONCE: "nonce-of-this-job" } });
    const foreign = spawn("/usr/bin/python3", ["-c", `import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Length", "6"); self.end_headers(); self.wfile.write(b'"pong"')
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", ${fake}), H).serve_forever()`], { stdio: "ignore" });
    try {
      await new Promise<void>((resolve, reject) => { serve.stdout!.once("data", () => resolve()); serve.once("exit", () => reject(new Error("rlpipe serve exited"))); });
      for (const until = Date.now() + 60_000; !sandboxAlive(fake) && Date.now() < until;) await new Promise((res) => setTimeout(res, 50));
      const run = (url: string, nonce: string) => spawnSync("bash", ["-c", `${probe}rlpipe_probe "$1" '' pong "$2"`, "probe", url, nonce], { encoding: "utf8" }).status;
      assert.equal(run(`http://127.0.0.1:${port}/v1/ping`, "nonce-of-this-job"), 0, "the server this job started");
      assert.equal(run(`http://127.0.0.1:${port}/v1/ping`, "nonce-of-another-job"), 2, "a server started with another nonce");
      assert.equal(run(`http://127.0.0.1:${fake}/v1/ping`, "nonce-of-this-job"), 2, "a foreign server that answers pong");
      assert.equal(run(`http://127.0.0.1:${fake}/v1/ping`, ""), 0, "without a nonce (a sandbox rlpipe did not start), pong is enough");
    } finally {
      serve.kill("SIGTERM");
      foreign.kill("SIGKILL");
    }
  });
});

describe("launch.sh with checkpoints.storage (sync sidecar)", () => {
  const CLI_JS = join(FIXTURES, "..", "..", "dist", "bin", "rlpipe.js");
  /** launch.sh of a one-stage RL recipe synced by rlpipe sync to a file:// store; `trainer` is what "verl" does. */
  function launchWithStore(root: string, trainer: string) {
    const work = join(root, "work");
    const stubs = join(root, "stubs");
    const storeDir = join(root, "store");
    for (const d of [work, stubs]) mkdirSync(d, { recursive: true });
    writeFileSync(join(stubs, "rlpipe"), `#!/usr/bin/env bash\nexec node ${JSON.stringify(CLI_JS)} "$@"\n`);
    writeFileSync(join(stubs, "python3"), `#!/usr/bin/env bash
if [ "$1" = "-m" ] && [ "$2" = verl.trainer.main_ppo ]; then
${trainer}
fi
exec /usr/bin/python3 "$@"
`);
    for (const n of ["rlpipe", "python3"]) chmodSync(join(stubs, n), 0o755);
    const text = `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: sync-demo }
runtime: { accelerator: nvidia-gpu, workDir: ${work}, verl: { ref: c651b7b } }
resources: { nodes: 1, devicesPerNode: 1 }
models: { m: { path: models/m } }
datasets: { d: { path: d.parquet, format: verl-rl } }
checkpoints: { storage: "file://${storeDir}", intervalS: 300, keep: { last: 5 } }
stages:
  - { id: rl, type: rl, model: m, outputDir: ckpt/rl, data: { train: d, promptsPerStep: 2, maxPromptLength: 8, maxResponseLength: 8 }, rollout: { engine: vllm, mode: async }, logging: { backends: [console, file] } }
`;
    const p = plan(parseRecipe(text, "s.yaml"), { provider: "local", assets: bundledAssets() });
    assert.equal(p.storage?.mechanism, "sidecar-direct");
    const bundleDir = join(root, "bundle");
    writeBundle(bundleDir, [...p.files, { path: "rlpipe-plan.json", content: "{}", executable: false }]);
    const r = spawnSync("bash", [join(bundleDir, "launch.sh")], { encoding: "utf8", timeout: 110_000, env: { PATH: `${stubs}:/usr/bin:/bin`, HOME: root, RLPIPE_RUN: "demo-run" } });
    const read = (...args: string[]) => spawnSync(process.execPath, [CLI_JS, ...args, "--json"], { encoding: "utf8", env: { ...process.env, RLPIPE_STORE: storeDir } });
    return { r, work, read };
  }

  it("starts rlpipe sync next to training; its last pass commits the final checkpoint and metrics", { timeout: 120_000 }, () => {
    const root = mkdtempSync(join(tmpdir(), "rlpipe-sync-launch-"));
    try {
      // The "trainer" saves two steps the way verl does (tracker after the step) and logs metrics.
      const { r, read } = launchWithStore(root, `  for s in 1 2; do
    mkdir -p ckpt/rl/global_step_$s/actor
    head -c 200000 /dev/urandom > ckpt/rl/global_step_$s/actor/model.pt
    echo $s > ckpt/rl/latest_checkpointed_iteration.txt
    echo "{\\"step\\": $s, \\"data\\": {\\"critic/score/mean\\": 0.$s}}" >> "$VERL_FILE_LOGGER_PATH"
  done
  exit 0`);
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const ck = read("checkpoints", "demo-run.rl");
      assert.equal(ck.status, 0, ck.stderr);
      assert.deepEqual(JSON.parse(ck.stdout).map((x: { step: number }) => x.step), [1, 2], "the final pass committed both steps");
      const m = read("metrics", "demo-run.rl");
      assert.equal(JSON.parse(m.stdout).latest[0].value, 0.2);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a stage that ends before its first checkpoint: the final pass still uploads its metrics (the watched directory is there, empty)", { timeout: 120_000 }, () => {
    const root = mkdtempSync(join(tmpdir(), "rlpipe-sync-launch-"));
    try {
      const { r, work, read } = launchWithStore(root, `  echo '{"step": 1, "data": {"critic/score/mean": 0.4}}' >> "$VERL_FILE_LOGGER_PATH"
  exit 9`);
      assert.equal(r.status, 9, r.stderr);
      assert.doesNotMatch(r.stderr, /final sync of rl failed/, readFileSync(join(work, ".rlpipe", "sync-rl.log"), "utf8"));
      const m = read("metrics", "demo-run.rl");
      assert.equal(m.status, 0, m.stderr);
      assert.equal(JSON.parse(m.stdout).latest[0].value, 0.4);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
