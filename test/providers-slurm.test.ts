// The Slurm provider: the sbatch request (one node and the multi-node start-up), the adapter's parsing, bundle
// copies and ssh argv, and deploys against a real two-node Slurm cluster the suite starts on this machine
// (munge + slurmctld + two slurmd): the local demo runs to COMPLETED, logs are read with a cursor, a second
// deploy finds the first job, a long job is cancelled, a failing job reports its exit code, a multi-node job
// runs its ranks on both nodes, and a job slurmctld forgot is found in the completion log.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createSlurmAdapter, commandFailure, localRunner, parseDelimited, parseSbatchId, parseScontrolJob, remoteInstallScript, sshArgv, slurmTime, statusOf, utf8CompleteLength, writeBundleLocal, createAdapter } from "../adapters/providers/slurm.js";
import { type JobRef, type JobStatus, type ProviderAdapter, ProviderError, deploy } from "../adapters/providers/provider.js";
import { bundledAssets } from "../bin/commands/plan.js";
import type { RunRecord } from "../adapters/providers/run-records.js";
import { gatherRunPage } from "../bin/commands/report.js";
import type { Io } from "../bin/io.js";
import { RecipeError } from "../core/errors.js";
import { runPageHtml } from "../core/report/run-page.js";
import { type Plan, plan } from "../core/plan.js";
import { buildNamedRequest } from "../core/providers/request.js";
import { SlurmRequestBody, buildSlurmRequest } from "../core/providers/slurm-request.js";
import { canonicalJson, parseRecipe, sha256 } from "../core/recipe/load.js";
import { shellJoin } from "../core/render/shell.js";
import { RECIPES, ROOT } from "./helpers.js";
import { freePort } from "./servers/moto.js";
import { type SlurmCluster, slurmUnavailable, startSlurm } from "./servers/slurm.js";

const DEMO = join(RECIPES, "local-demo.yaml");
const readBeside = (rel: string) => { const p = join(RECIPES, rel); return existsSync(p) ? readFileSync(p, "utf8") : undefined; };

/** The local demo recipe with a Slurm target (and optional changes to its text). */
function demoText(workDir: string, slurm: Record<string, unknown> = {}, edit: (t: string) => string = (t) => t): string {
  return `${edit(readFileSync(DEMO, "utf8"))}\ntargets:\n  slurm: ${JSON.stringify({ workDir, ...slurm })}\n`;
}

function planText(text: string): Plan {
  return plan(parseRecipe(text, DEMO), { provider: "slurm", assets: bundledAssets(), readRecipeFile: readBeside });
}

const bodyOf = (p: Plan) => SlurmRequestBody.parse(p.request?.body);

/** A plan of the demo recipe whose bundle is just this launch.sh (request and job name derived as plan() does). */
function tinyPlan(workDir: string, launch: string, nodes = 1): Plan {
  const base = planText(demoText(workDir, {}, nodes === 1 ? undefined : (t) => t.replace(/resources: \{ nodes: 1,/, `resources: { nodes: ${nodes},`)));
  assert.equal(base.resources.nodes, nodes);
  const files = [{ path: "launch.sh", content: launch, executable: true }];
  const bundleDigest = sha256(canonicalJson(files.map((f) => [f.path, f.executable, sha256(f.content)])));
  const recipe = parseRecipe(demoText(workDir, {}, (t) => t.replace(/resources: \{ nodes: 1,/, `resources: { nodes: ${nodes},`)), DEMO).recipe;
  const issues: never[] = [];
  const named = buildNamedRequest(buildSlurmRequest, {
    recipe, provider: "slurm", bundleDigest, workDir: base.workDir,
    resources: { nodes, devicesPerNode: 1, accelerator: "cpu" }, secretEnvs: [],
  }, issues);
  assert.deepEqual(issues, []);
  return { ...base, files, bundleDigest, jobName: named.jobName, request: named.request };
}

const bashSyntaxOk = (script: string) => spawnSync("bash", ["-n"], { input: script, encoding: "utf8" });

// ------------------------------------------------------------------------------------------ the request

describe("slurm request", () => {
  it("plans a one-node sbatch script for the local demo: directives, content-addressed bundle dir, launch.sh run there", () => {
    const p = planText(demoText("/scratch/demo"));
    const body = bodyOf(p);
    assert.equal(p.request?.api, "sbatch");
    assert.equal(body.jobName, p.jobName);
    assert.match(p.jobName, /^local-demo-[0-9a-f]{8}$/);
    const dir = `/scratch/demo/.rlpipe/bundles/${p.bundleDigest.slice(0, 12)}`;
    assert.equal(body.bundleDir, dir);
    assert.equal(p.request?.bundle?.to, dir);
    assert.equal(body.scriptPath, `${dir}/${p.jobName}.sbatch`);
    assert.deepEqual(body.options, [
      `--job-name=${p.jobName}`, "--nodes=1", "--ntasks-per-node=1", `--output=${dir}/slurm-%j.out`, "--open-mode=append", `--chdir=${dir}`,
    ]);
    const lines = body.script.split("\n");
    assert.equal(lines[0], "#!/bin/bash");
    // sbatch reads directives only before the first command: all of them come right after the shebang.
    assert.deepEqual(lines.slice(1, 1 + body.options.length), body.options.map((o) => `#SBATCH ${o}`));
    assert.ok(body.script.includes(`RLPIPE_BUNDLE=${dir}\n`));
    assert.ok(body.script.includes('exec bash "$RLPIPE_BUNDLE/launch.sh"'));
    assert.ok(!body.script.includes("srun"), "one node needs no job steps");
    assert.equal(bashSyntaxOk(body.script).status, 0);
    assert.deepEqual(p.request?.unverified, []);
  });

  it("writes the target's partition, account, QOS, time, CPUs, GRES and extra options; GPUs per node by default", () => {
    const p = planText(demoText("/w", { partition: "gpu,debug", account: "proj-1", qos: "high", timeLimit: "2-00:00:00", cpusPerTask: 32, gresPerNode: "gpu:h100:8", extraSbatch: ["--exclusive", "--mem=0"], bundleDir: "/shared/bundles/" }));
    const body = bodyOf(p);
    assert.deepEqual(body.options.slice(6), ["--partition=gpu,debug", "--account=proj-1", "--qos=high", "--time=2-00:00:00", "--cpus-per-task=32", "--gres=gpu:h100:8", "--exclusive", "--mem=0"]);
    assert.equal(body.bundleDir, `/shared/bundles/${p.bundleDigest.slice(0, 12)}`);
    const gpu = planText(demoText("/w", {}, (t) => t.replace("accelerator: cpu", "accelerator: nvidia-gpu").replace("devicesPerNode: 1", "devicesPerNode: 8")));
    assert.ok(bodyOf(gpu).options.includes("--gpus-per-node=8"));
    assert.deepEqual(gpu.warnings.map((w) => `${w.code}@${w.path.join(".")}`), ["slurm_one_cpu@targets.slurm.cpusPerTask"]);
    const npu = planText(demoText("/w", { extraSbatch: ["--exclusive"] }, (t) => t.replace("accelerator: cpu", "accelerator: ascend-npu")));
    assert.ok(!bodyOf(npu).options.some((o) => /gpu|gres/.test(o)), "no guessed NPU GRES name");
    assert.deepEqual(npu.warnings.map((w) => w.code), ["slurm_npu_gres"]);
    assert.deepEqual(planText(demoText("/w")).warnings, []);
    // The request is part of the job name: another partition is another job.
    assert.notEqual(planText(demoText("/w", { partition: "a" })).jobName, planText(demoText("/w", { partition: "b" })).jobName);
  });

  it("rejects values an #SBATCH line cannot carry and options rlpipe sets itself, with recipe paths", () => {
    const codes = (slurm: Record<string, unknown>, workDir = "/w") => {
      try { planText(demoText(workDir, slurm)); return []; } catch (e) {
        assert.ok(e instanceof RecipeError);
        return e.issues.map((i) => `${i.code}@${i.path.join(".")}`);
      }
    };
    assert.deepEqual(codes({ partition: "a b" }), ["invalid_sbatch_value@targets.slurm.partition"]);
    assert.deepEqual(codes({ timeLimit: "two hours" }), ["invalid_sbatch_value@targets.slurm.timeLimit"]);
    assert.deepEqual(codes({ extraSbatch: ["--job-name=x", "--mem 0", "-N=2", "--array=1-3"] }), [
      "sbatch_option_reserved@targets.slurm.extraSbatch.0", "invalid_sbatch_option@targets.slurm.extraSbatch.1",
      "sbatch_option_reserved@targets.slurm.extraSbatch.2", "sbatch_option_reserved@targets.slurm.extraSbatch.3",
    ]);
    assert.deepEqual(codes({ bundleDir: "/my bundles" }), ["invalid_sbatch_path@targets.slurm.bundleDir"]);
    assert.deepEqual(codes({}, "/data/100%"), ["invalid_sbatch_path@targets.slurm.workDir"]);
    assert.deepEqual(codes({ login: "-oProxyCommand=x" }), ["invalid_login@targets.slurm.login"]);
    assert.deepEqual(codes({ partition: "gpu", timeLimit: "90", extraSbatch: ["--constraint=h100"] }), []);
  });

  it("plans two nodes as launch.sh on every node through srun, rank 0 on the allocation's first host", () => {
    const p = planText(demoText("/w", {}, (t) => t.replace(/resources: \{ nodes: 1,/, "resources: { nodes: 2,")));
    const body = bodyOf(p);
    assert.ok(body.options.includes("--nodes=2"));
    const s = body.script;
    assert.equal(bashSyntaxOk(s).status, 0, bashSyntaxOk(s).stderr);
    assert.ok(s.includes('scontrol show hostnames "$SLURM_JOB_NODELIST"'));
    assert.ok(s.includes('rlpipe_head="${rlpipe_nodes[0]}"'));
    assert.match(s, /srun --nodes=1 --ntasks=1 -w "\$rlpipe_head" bash -c /);
    assert.ok(s.includes('export RLPIPE_MASTER_ADDR="${rlpipe_head_ip:-$rlpipe_head}"'));
    assert.ok(s.includes("export RLPIPE_NNODES=2"));
    const last = s.trimEnd().split("\n").pop()!;
    assert.match(last, /^exec srun --nodes="\$RLPIPE_NNODES" --ntasks="\$RLPIPE_NNODES" --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c /);
    assert.ok(last.includes('RLPIPE_NODE_RANK="$SLURM_NODEID"') && last.endsWith('rlpipe-node "$RLPIPE_BUNDLE/launch.sh"'));
    const commands = s.split("\n").filter((l) => !l.startsWith("#"));
    assert.ok(!commands.some((l) => /\bray\b/.test(l)), "launch.sh starts Ray itself, not the batch script");
    assert.deepEqual(p.request?.unverified.map((u) => u.path), ["script"]);
  });
});

// ------------------------------------------------------------------------------------------ parsing and argv

describe("slurm adapter parts", () => {
  it("parses sbatch, squeue/sacct and scontrol output", () => {
    assert.equal(parseSbatchId("1234\n"), "1234");
    assert.equal(parseSbatchId("77;cluster-a\n"), "77");
    assert.equal(parseSbatchId("Submitted batch job 5\n"), undefined);
    assert.deepEqual(parseDelimited("12|job-a|FAILED|3:0|2026-01-02T03:04:05|2026-01-02T03:04:09\n12.batch|batch|FAILED|3:0||\n\n", ["id", "name", "state", "exitCode", "start", "end"]), [
      { id: "12", name: "job-a", state: "FAILED", exitCode: "3:0", start: "2026-01-02T03:04:05", end: "2026-01-02T03:04:09" },
    ]);
    const rec = parseScontrolJob("JobId=9 JobName=demo-1a2b3c4d UserId=root(0) GroupId=root(0) Priority=1 JobState=CANCELLED Reason=None Dependency=(null) ExitCode=0:15 StartTime=2026-11-22T13:35:05+0000 EndTime=2026-11-22T13:35:09+0000 AllocNode:Sid=localhost:1 CPUs/Task=1 StdOut=/w/slurm-9.out Power=");
    assert.deepEqual(rec, { id: "9", name: "demo-1a2b3c4d", state: "CANCELLED", exitCode: "0:15", start: "2026-11-22T13:35:05+0000", end: "2026-11-22T13:35:09+0000", reason: "None", user: "root(0)", stdout: "/w/slurm-9.out" });
    assert.equal(parseScontrolJob("slurm_load_jobs error: Invalid job id specified"), undefined);
  });

  it("maps Slurm states, exit codes and signals onto a normalized status", () => {
    assert.deepEqual(statusOf({ id: "1", name: "n", state: "FAILED", exitCode: "3:0", start: "2026-11-22T13:34:41+0100", end: "2026-11-22T13:34:42+0100", reason: "NonZeroExitCode" }),
      { phase: "FAILED", rawPhase: "FAILED", message: "NonZeroExitCode", startedAt: "2026-11-22T12:34:41.000Z", endedAt: "2026-11-22T12:34:42.000Z", exitCode: 3 });
    assert.deepEqual(statusOf({ id: "1", name: "n", state: "CANCELLED by 0", exitCode: "0:15", end: "2026-11-22T13:34:42" }),
      { phase: "STOPPED", rawPhase: "CANCELLED by 0", message: "ended by signal 15", endedAt: "2026-11-22T13:34:42", exitCode: 143 });
    // A pending job's StartTime is a forecast, and a running one has no exit code yet.
    assert.deepEqual(statusOf({ id: "1", name: "n", state: "PENDING", start: "2027-01-01T00:00:00+0000", exitCode: "0:0", reason: "Priority" }), { phase: "QUEUED", rawPhase: "PENDING", message: "Priority" });
    assert.deepEqual(statusOf({ id: "1", name: "n", state: "RUNNING", start: "2026-11-22T13:34:41+0000", end: "Unknown", exitCode: "0:0", reason: "None" }), { phase: "RUNNING", rawPhase: "RUNNING", startedAt: "2026-11-22T13:34:41.000Z" });
    assert.equal(statusOf({ id: "1", name: "n", state: "COMPLETED", exitCode: "0:0" }).phase, "SUCCEEDED");
    assert.equal(statusOf({ id: "1", name: "n", state: "TIMEOUT" }).phase, "FAILED");
    assert.equal(statusOf({ id: "1", name: "n", state: "COMPLETING" }).phase, "STOPPING");
    assert.equal(statusOf({ id: "1", name: "n", state: "SUSPENDED" }).phase, "UNKNOWN");
    assert.equal(slurmTime("None"), undefined);
    assert.equal(slurmTime("2026-11-22T13:34:41-0530"), "2026-11-22T19:04:41.000Z");
  });

  it("cuts log pages on whole UTF-8 characters", () => {
    const b = Buffer.from("ab€😀", "utf8"); // 2 + 3 + 4 bytes
    assert.equal(utf8CompleteLength(b), 9);
    for (const [cut, whole] of [[8, 5], [7, 5], [6, 5], [5, 5], [4, 2], [3, 2], [2, 2], [0, 0]] as const) assert.equal(utf8CompleteLength(b.subarray(0, cut)), whole, `cut at ${cut}`);
  });

  it("classifies failures: missing commands, ssh, controller trouble, bad requests", () => {
    const local = { where: "this machine", ssh: false };
    const ssh = { where: "login1 (ssh)", ssh: true };
    const f = (r: { ssh: boolean; where: string }, code: number, stderr: string) => { const e = commandFailure(r, "sbatch", { code, stdout: Buffer.alloc(0), stderr }); return `${e.kind}/${e.code}`; };
    assert.equal(f(local, 127, "sbatch: command not found"), "fatal/slurm_unavailable");
    assert.equal(f(ssh, 127, "bash: line 1: sbatch: command not found"), "fatal/slurm_unavailable");
    assert.equal(f(ssh, 255, "root@login1: Permission denied (publickey)."), "fatal/slurm_ssh_failed");
    assert.equal(f(ssh, 255, "ssh: connect to host login1 port 22: Connection refused"), "retryable/slurm_ssh_unreachable");
    assert.equal(f(ssh, 255, "Connection to login1 closed by remote host."), "ambiguous/slurm_ssh_failed");
    assert.equal(f(local, 1, "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)"), "retryable/slurm_controller_unavailable");
    assert.equal(f(local, 1, "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation"), "ambiguous/slurm_controller_timeout");
    assert.equal(f(local, 1, "sbatch: error: Batch job submission failed: Invalid partition name specified"), "fatal/slurm_command_failed");
  });

  it("builds ssh argv that never prompts and passes every word through the login shell unchanged", () => {
    const words = ["sh", "-c", 'echo "$1" | wc -c; printf %s "$2"', "sh", "it's a $HOME `x` test", "-oProxyCommand=evil"];
    const argv = sshArgv("alice@login1", words, { connectTimeoutS: 7 });
    assert.deepEqual(argv.slice(0, 11), ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=7", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=3", "-T", "--"]);
    assert.equal(argv[11], "alice@login1");
    assert.equal(argv.length, 13, "the remote command is one word: ssh joins its arguments with spaces");
    // What the remote login shell does with that word: run it; the awkward words arrive unchanged.
    const out = execFileSync("sh", ["-c", argv[12]!], { encoding: "utf8" });
    assert.equal(out, `${Buffer.byteLength("it's a $HOME `x` test\n")}\n-oProxyCommand=evil`);
    assert.equal(argv[12], shellJoin(words));
  });

  it("copies a bundle over ssh with one sh -s script: files, subdirectories and modes, atomically and repeatably", () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-slurm-remote-"));
    try {
      const target = join(dir, "b", "0123456789ab");
      const files = [
        { path: "launch.sh", content: "#!/usr/bin/env bash\necho 'hi' \"$@\"\n", executable: true },
        { path: "data/problems.jsonl", content: `${"{\"q\":\"ü€😀\"}\n".repeat(500)}`, executable: false },
        { path: "empty.txt", content: "", executable: false },
      ];
      const script = remoteInstallScript(target, files);
      for (let round = 0; round < 2; round++) {
        const r = spawnSync("sh", ["-s"], { input: script, encoding: "utf8" });
        assert.equal(r.status, 0, r.stderr);
        for (const f of files) {
          assert.equal(readFileSync(join(target, f.path), "utf8"), f.content);
          assert.equal(statSync(join(target, f.path)).mode & 0o777, f.executable ? 0o755 : 0o644);
        }
      }
      assert.deepEqual(execFileSync("find", [target, "-name", ".rlpipe-tmp.*"], { encoding: "utf8" }), "", "no temp files left");
      assert.throws(() => remoteInstallScript(target, [{ path: "../escape", content: "", executable: false }]), /not a plain relative path/);
    } finally { rmSync(dir, { recursive: true, force: true }); }
  });

  it("writes a bundle locally with modes, replacing changed files by rename and leaving identical ones alone", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-slurm-local-"));
    try {
      const files = [{ path: "launch.sh", content: "echo one\n", executable: true }, { path: "cfg/a.yaml", content: "a: 1\n", executable: false }];
      await writeBundleLocal(dir, files);
      const ino = (p: string) => statSync(join(dir, p)).ino;
      const before = { launch: ino("launch.sh"), cfg: ino("cfg/a.yaml") };
      assert.equal(statSync(join(dir, "launch.sh")).mode & 0o777, 0o755);
      assert.equal(statSync(join(dir, "cfg/a.yaml")).mode & 0o777, 0o644);
      await writeBundleLocal(dir, [files[0]!, { ...files[1]!, content: "a: 2\n" }]);
      assert.equal(ino("launch.sh"), before.launch, "identical file untouched");
      assert.notEqual(ino("cfg/a.yaml"), before.cfg, "changed file replaced by a new inode (rename)");
      assert.equal(readFileSync(join(dir, "cfg/a.yaml"), "utf8"), "a: 2\n");
      await assert.rejects(writeBundleLocal(dir, [{ path: "/etc/x", content: "", executable: false }]), /not a plain relative path/);
    } finally { rmSync(dir, { recursive: true, force: true }); }
  });

  it("runs commands with a timeout (ambiguous: the command may have acted) and an AbortSignal that kills them", async () => {
    const runner = localRunner(process.env, 60_000);
    const r = await runner.run(["sh", "-c", 'cat; echo "$X" >&2; exit 4'], { stdin: "in\n", env: { X: "from-env" } });
    assert.deepEqual([r.code, r.stdout.toString(), r.stderr], [4, "in\n", "from-env\n"]);
    await assert.rejects(runner.run(["sleep", "30"], { timeoutMs: 200 }), (e: unknown) => e instanceof ProviderError && e.code === "slurm_timeout" && e.kind === "ambiguous");
    const ac = new AbortController();
    const pending = runner.run(["sleep", "30"], { signal: ac.signal });
    ac.abort(new Error("user pressed ctrl-c"));
    await assert.rejects(pending, /user pressed ctrl-c/);
    assert.equal((await runner.run(["no-such-program-rlpipe"])).code, 127);
  });

  it("reports sbatch missing as slurm_unavailable with a hint", async () => {
    const work = mkdtempSync(join(tmpdir(), "rlpipe-slurm-nobin-"));
    try {
      const p = tinyPlan(work, "#!/bin/bash\necho hi\n");
      const recipe = parseRecipe(demoText(work), DEMO).recipe;
      const adapter = await createAdapter({ env: { PATH: "/nonexistent" }, recipe, cwd: work });
      await adapter.prepare(p);
      await assert.rejects(adapter.submit(p), (e: unknown) => e instanceof ProviderError && e.code === "slurm_unavailable" && e.kind === "fatal" && /apt-get install slurm-client|targets\.slurm\.login/.test(e.hint ?? ""));
    } finally { rmSync(work, { recursive: true, force: true }); }
  });
});

// ------------------------------------------------------------------------------------------ a real cluster

const unavailable = slurmUnavailable();

describe("slurm provider on a real cluster", { skip: unavailable ?? false }, () => {
  let cluster: SlurmCluster;
  let work: string;
  let env: Record<string, string>;
  const noWait = { sleep: async () => undefined, random: () => 0.5 };

  before(async () => {
    cluster = await startSlurm({ nodes: 2 });
    // Start-up time for the report (a figure, not an assertion).
    console.log(`# slurm test cluster (${cluster.nodes.join(", ")}) up in ${cluster.startMs.toFixed(0)} ms`);
    work = mkdtempSync(join(tmpdir(), "rlpipe-slurm-work-"));
    // Jobs inherit the submitting environment: the CLI for `rlpipe eval`/`rlpipe serve`, a free port for the
    // demo's reward function, and SLURM_CONF for this cluster.
    env = { ...cluster.env, RLPIPE_CLI: `node ${join(ROOT, "dist", "bin", "rlpipe.js")}`, RLPIPE_SANDBOX_PORT: String(await freePort()) };
  });
  after(async () => {
    await cluster?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  const adapterFor = (workDir: string, opts: Parameters<typeof createSlurmAdapter>[1] = {}, extraEnv: Record<string, string> = {}, slurm: Record<string, unknown> = {}) =>
    createSlurmAdapter({ env: { ...env, ...extraEnv }, recipe: parseRecipe(demoText(workDir, slurm), DEMO).recipe, cwd: workDir }, opts);

  async function waitTerminal(adapter: ProviderAdapter, ref: JobRef): Promise<JobStatus> {
    const deadline = Date.now() + 240_000;
    for (;;) {
      const s = await adapter.status(ref);
      if (["SUCCEEDED", "FAILED", "STOPPED"].includes(s.phase)) return s;
      if (Date.now() > deadline) throw new Error(`job ${ref.id} still ${s.rawPhase}`);
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  async function waitPhase(adapter: ProviderAdapter, ref: JobRef, phase: string): Promise<void> {
    const deadline = Date.now() + 120_000;
    while ((await adapter.status(ref)).phase !== phase) {
      if (Date.now() > deadline) throw new Error(`job ${ref.id} never reached ${phase}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Every page from cursor undefined on, until a page brings nothing new. */
  async function readAll(adapter: ProviderAdapter, ref: JobRef): Promise<{ text: string; pages: number }> {
    let cursor: string | undefined;
    let text = "";
    let pages = 0;
    for (;;) {
      const page = await adapter.logs(ref, cursor);
      if (page.text === "" && page.cursor === cursor) return { text, pages };
      text += page.text;
      cursor = page.cursor;
      pages++;
    }
  }

  const jobsNamed = (name: string) =>
    execFileSync("squeue", ["--noheader", "--states=all", `--name=${name}`, "--format=%i"], { env: cluster.env, encoding: "utf8" }).trim().split("\n").filter((s) => s !== "");

  let demoRef: JobRef;

  it("deploys the local demo: the job runs to COMPLETED and its log is read page by page with a byte cursor", async () => {
    const workDir = join(work, "demo");
    const p = planText(demoText(workDir));
    const adapter = adapterFor(workDir, { logPageBytes: 512 });
    const out = await deploy(adapter, p, noWait);
    assert.equal(out.outcome, "created");
    demoRef = out.ref;
    assert.equal(out.ref.name, p.jobName);
    assert.match(out.ref.id, /^\d+$/);
    const body = bodyOf(p);
    assert.equal(out.ref.extra?.output, `${body.bundleDir}/slurm-${out.ref.id}.out`);
    // prepare() put the bundle and the script where the request says.
    assert.equal(readFileSync(join(body.bundleDir, "launch.sh"), "utf8"), p.files.find((f) => f.path === "launch.sh")!.content);
    assert.equal(readFileSync(body.scriptPath, "utf8"), body.script);

    // Follow the log while the job runs: pages concatenate to exactly the file.
    let cursor: string | undefined;
    let followed = "";
    let status: JobStatus;
    for (const deadline = Date.now() + 240_000; ; ) {
      status = await adapter.status(out.ref);
      const page = await adapter.logs(out.ref, cursor);
      followed += page.text;
      assert.ok(Number(page.cursor) >= Number(cursor ?? 0), "the cursor never moves back");
      cursor = page.cursor;
      if (["SUCCEEDED", "FAILED", "STOPPED"].includes(status.phase) && page.text === "") break;
      if (Date.now() > deadline) throw new Error(`demo job still ${status.rawPhase}`);
      if (page.text === "") await new Promise((r) => setTimeout(r, 300));
    }
    const file = readFileSync(out.ref.extra!.output!, "utf8");
    assert.equal(status.phase, "SUCCEEDED", file);
    assert.equal(status.rawPhase, "COMPLETED");
    assert.equal(status.exitCode, 0);
    assert.ok(status.startedAt !== undefined && status.endedAt !== undefined && status.startedAt <= status.endedAt);
    assert.equal(followed, file);
    assert.equal(cursor, String(Buffer.byteLength(file)));
    assert.match(file, /stage check: complete/);
    assert.match(file, /all stages complete/);
    // The stage's own output: every reference solution passed, and the result file is in the work dir.
    assert.match(file, /rlpipe eval: 16 rows from data\/demo-problems\.jsonl: 16 passed \(pass rate 100\.0%\)/);
    assert.equal(typeof JSON.parse(readFileSync(join(workDir, ".rlpipe", "results", "check.json"), "utf8")), "object");
    // Reading again from the start pages through the same bytes (512-byte pages here).
    const again = await readAll(adapter, out.ref);
    assert.equal(again.text, file);
    assert.ok(again.pages >= Math.floor(Buffer.byteLength(file) / 512));
  });

  it("rlpipe report's gathering reads the finished demo job through this adapter: SUCCEEDED, its log's tail, on the page", async () => {
    const workDir = join(work, "demo");
    const text = demoText(workDir);
    const p = planText(text);
    const now = new Date().toISOString();
    const record: RunRecord = {
      version: 1, name: p.jobName, provider: "slurm", ref: { id: demoRef.id, ...(demoRef.extra === undefined ? {} : { extra: demoRef.extra }) },
      recipe: { name: "local-demo", file: DEMO, hash: "0123456789ab" }, recipeData: parseRecipe(text, DEMO).recipe, request: {},
      outcome: "created", createdAt: now, updatedAt: now, prices: [],
    };
    const asked: string[] = [];
    const data = await gatherRunPage(record, {
      io: { out: () => {}, err: () => {} } as unknown as Io, logLines: 5, env: { PATH: process.env["PATH"] },
      load: async (provider) => { asked.push(provider); return { adapter: adapterFor(workDir), close: async () => {} }; },
    });
    assert.ok(asked.length > 0 && asked.every((x) => x === "slurm"), asked.join(","));
    assert.ok(data.status.ok, JSON.stringify(data.status));
    assert.deepEqual([data.status.value.phase, data.status.value.rawPhase], ["SUCCEEDED", "COMPLETED"]);
    assert.ok(data.logs.ok, JSON.stringify(data.logs));
    assert.equal(data.logs.value.lines.at(-1), readFileSync(demoRef.extra!.output!, "utf8").trimEnd().split("\n").at(-1));
    const html = runPageHtml(data);
    assert.ok(html.includes(`<h1>${p.jobName} <span class="phase ok">SUCCEEDED</span></h1>`), html.slice(0, 400));
    assert.match(html, /all stages complete/);
  });

  it("a second deploy of the same plan finds the job by name: outcome existing, no second job queued", async () => {
    const workDir = join(work, "demo");
    const p = planText(demoText(workDir));
    const out = await deploy(adapterFor(workDir), p, noWait);
    assert.equal(out.outcome, "existing");
    assert.equal(out.ref.id, demoRef.id);
    assert.deepEqual(out.ref, demoRef);
    assert.deepEqual(jobsNamed(p.jobName), [demoRef.id]);
  });

  it("a failing job is FAILED with its exit code", async () => {
    const workDir = join(work, "fail");
    const p = tinyPlan(workDir, "#!/bin/bash\necho 'about to fail'\nexit 3\n");
    const adapter = adapterFor(workDir);
    const { ref } = await deploy(adapter, p, noWait);
    const s = await waitTerminal(adapter, ref);
    assert.equal(s.phase, "FAILED");
    assert.equal(s.rawPhase, "FAILED");
    assert.equal(s.exitCode, 3);
    assert.equal((await readAll(adapter, ref)).text, "about to fail\n");
  });

  it("stops a long job (STOPPED), and stopping it again succeeds", async () => {
    const workDir = join(work, "long");
    const p = tinyPlan(workDir, "#!/bin/bash\necho started\nsleep 600\n");
    const adapter = adapterFor(workDir);
    const { ref, outcome } = await deploy(adapter, p, noWait);
    assert.equal(outcome, "created");
    await waitPhase(adapter, ref, "RUNNING");
    await adapter.stop(ref);
    const s = await waitTerminal(adapter, ref);
    assert.equal(s.phase, "STOPPED");
    assert.match(s.rawPhase, /^CANCELLED/);
    await adapter.stop(ref);
    assert.equal((await adapter.status(ref)).phase, "STOPPED");
  });

  it("stop leaves a job alone whose id now belongs to another name", async () => {
    const workDir = join(work, "guard");
    const p = tinyPlan(workDir, "#!/bin/bash\nsleep 600\n");
    const adapter = adapterFor(workDir);
    const { ref } = await deploy(adapter, p, noWait);
    await waitPhase(adapter, ref, "RUNNING");
    await adapter.stop({ ...ref, name: "some-other-run-00000000" });
    assert.equal((await adapter.status(ref)).phase, "RUNNING");
    await assert.rejects(adapter.status({ ...ref, name: "some-other-run-00000000" }), (e: unknown) => e instanceof ProviderError && e.code === "slurm_job_unknown" && e.kind === "not_found");
    await adapter.stop(ref);
    assert.equal((await waitTerminal(adapter, ref)).phase, "STOPPED");
  });

  it("after sbatch's reply is lost (the command times out after submitting), deploy finds the job instead of submitting again", async () => {
    const workDir = join(work, "lost-reply");
    const bin = join(work, "slow-bin");
    mkdirSync(bin, { recursive: true });
    // The real sbatch submits, then the reply never comes back in time.
    writeFileSync(join(bin, "sbatch"), "#!/bin/sh\n/usr/bin/sbatch \"$@\" > /dev/null\nexec sleep 30\n");
    chmodSync(join(bin, "sbatch"), 0o755);
    const p = tinyPlan(workDir, "#!/bin/bash\necho recovered\n");
    const adapter = adapterFor(workDir, { commandTimeoutMs: 6000 }, { PATH: `${bin}:${env.PATH ?? "/usr/bin:/bin"}` });
    const events: string[] = [];
    const out = await deploy(adapter, p, { ...noWait, onEvent: (l) => events.push(l) });
    assert.equal(out.outcome, "recovered");
    assert.match(events.join("\n"), /did not finish within 6000 ms\); looking the job up/);
    assert.deepEqual(jobsNamed(p.jobName), [out.ref.id]);
    assert.equal((await waitTerminal(adapter, out.ref)).phase, "SUCCEEDED");
  });

  it("a request the cluster rejects fails at once (fatal), without retries or a job", async () => {
    const workDir = join(work, "bad-partition");
    const adapter = adapterFor(workDir, {}, {}, { partition: "nosuchpartition" });
    const p = planText(demoText(workDir, { partition: "nosuchpartition" }));
    await assert.rejects(deploy(adapter, p, noWait), (e: unknown) => e instanceof ProviderError && e.code === "slurm_command_failed" && e.kind === "fatal" && /Invalid partition/.test(e.message));
    assert.deepEqual(jobsNamed(p.jobName), []);
  });

  it("runs a two-node job: launch.sh on both nodes, rank 0 on the head, the head's address as master", async () => {
    const workDir = join(work, "two");
    const launch = [
      "#!/bin/bash",
      'echo "rank=$RLPIPE_NODE_RANK of $RLPIPE_NNODES on $SLURMD_NODENAME master=$RLPIPE_MASTER_ADDR"',
      'if [ "$RLPIPE_NODE_RANK" = 0 ]; then sleep 1; fi',
      "",
    ].join("\n");
    const p = tinyPlan(workDir, launch, 2);
    const adapter = adapterFor(workDir);
    const { ref } = await deploy(adapter, p, noWait);
    const s = await waitTerminal(adapter, ref);
    const log = (await readAll(adapter, ref)).text;
    assert.equal(s.phase, "SUCCEEDED", log);
    const head = /head (\S+) at (\S+)/.exec(log);
    assert.ok(head !== null, log);
    assert.equal(head[1], cluster.nodes[0]);
    assert.ok(head[2] !== "" && !head[2]!.startsWith("127."), `a non-loopback head address: ${head[2]}`);
    const ranks = [...log.matchAll(/^rank=(\d) of (\d) on (\S+) master=(\S+)$/gm)].map((m) => m.slice(1).join(" ")).sort();
    assert.deepEqual(ranks, [`0 2 ${cluster.nodes[0]} ${head[2]}`, `1 2 ${cluster.nodes[1]} ${head[2]}`]);
  });

  it("a two-node job fails as a whole when one node fails (the other is ended, not left waiting)", async () => {
    const workDir = join(work, "two-fail");
    const p = tinyPlan(workDir, '#!/bin/bash\nif [ "$RLPIPE_NODE_RANK" = 1 ]; then echo "rank 1 failing"; exit 5; fi\nsleep 600\n', 2);
    const adapter = adapterFor(workDir);
    const { ref } = await deploy(adapter, p, noWait);
    const s = await waitTerminal(adapter, ref);
    assert.equal(s.phase, "FAILED", (await readAll(adapter, ref)).text);
    assert.notEqual(s.exitCode, 0);
  });

  // On a shared workDir every node's launch.sh copies the bundle files into the same directory at once, and
  // plain cp fails with "File exists" (or lets a reader see a half-written file); launch.ts must copy to a
  // temp name and rename (reported to the lead). Until then this runs as a todo.
  const copyIsAtomic = (p: Plan) => !(p.files.find((f) => f.path === "launch.sh")?.content ?? "").includes('cp "$RLPIPE_BUNDLE_DIR/$f" "$RLPIPE_WORKDIR/$f"');
  it("runs the demo's real launch.sh on two nodes sharing a workDir: rank 0 scores, rank 1 finishes", {
    todo: copyIsAtomic(planText(demoText("/w"))) ? false : "launch.sh copies bundle files with plain cp, which races on a shared workDir",
  }, async () => {
    const workDir = join(work, "demo-two");
    // Without the colocated function (two "nodes" share this host's loopback): rlpipe eval scores in-process.
    const p = planText(demoText(workDir, {}, (t) => t.replace(/resources: \{ nodes: 1,/, "resources: { nodes: 2,").replace(/\nsandbox:\n(  .*\n)+/, "\n")));
    assert.equal(p.sandbox, undefined);
    const adapter = adapterFor(workDir);
    const { ref } = await deploy(adapter, p, noWait);
    const s = await waitTerminal(adapter, ref);
    const log = (await readAll(adapter, ref)).text;
    assert.equal(s.phase, "SUCCEEDED", log);
    assert.match(log, /all stages done on node 0/);
    assert.match(log, /all stages done on node 1/);
    assert.equal((log.match(/stage check: complete/g) ?? []).length, 1, "only rank 0 runs the score stage");
    assert.ok(existsSync(join(workDir, ".rlpipe", "results", "check.json")));
  });

  it("deploys, follows and stops through ssh to a login node (a stand-in ssh that runs the remote command here)", async () => {
    const workDir = join(work, "ssh");
    const bin = join(work, "fake-ssh");
    mkdirSync(bin, { recursive: true });
    const sshLog = join(bin, "calls.log");
    writeFileSync(join(bin, "ssh"), [
      "#!/bin/sh",
      "# Checks what rlpipe must pass to ssh, then runs the remote command as a login shell would (sh -c).",
      "batch=no",
      "while [ $# -gt 0 ]; do",
      '  case "$1" in',
      '    -o) case "$2" in BatchMode=yes) batch=yes ;; esac; shift 2 ;;',
      "    -T) shift ;;",
      "    --) shift; break ;;",
      '    *) echo "fake ssh: unexpected argument $1" >&2; exit 255 ;;',
      "  esac",
      "done",
      '[ "$batch" = yes ] || { echo "fake ssh: BatchMode=yes missing" >&2; exit 255; }',
      '[ "$#" -eq 2 ] || { echo "fake ssh: expected a destination and one command word, got $#" >&2; exit 255; }',
      `printf '%s %s\\n' "$1" "$2" >> ${shellJoin([sshLog])}`,
      'exec sh -c "$2"',
      "",
    ].join("\n"));
    chmodSync(join(bin, "ssh"), 0o755);
    const slurm = { login: "alice@login1" };
    const p = planText(demoText(workDir, slurm, (t) => t.replace(/\nsandbox:\n(  .*\n)+/, "\n")));
    const long = tinyPlan(join(workDir, "long"), "#!/bin/bash\necho waiting\nsleep 600\n");
    const recipe = parseRecipe(demoText(workDir, slurm), DEMO).recipe;
    const adapter = await createAdapter({ env: { ...env, RLPIPE_SSH: join(bin, "ssh") }, recipe, cwd: workDir });
    const out = await deploy(adapter, p, noWait);
    assert.equal(out.outcome, "created");
    assert.equal(out.ref.endpoint, "ssh://alice@login1");
    assert.equal(out.ref.extra?.login, "alice@login1");
    const s = await waitTerminal(adapter, out.ref);
    const log = await readAll(adapter, out.ref);
    assert.equal(s.phase, "SUCCEEDED", log.text);
    assert.equal(log.text, readFileSync(out.ref.extra!.output!, "utf8"));
    assert.equal((await deploy(adapter, p, noWait)).outcome, "existing");
    const calls = readFileSync(sshLog, "utf8").trim().split("\n");
    assert.ok(calls.every((l) => l.startsWith("alice@login1 ")));
    for (const cmd of ["sh -s", "sbatch --parsable", "squeue --noheader", "scontrol --oneliner", "sh -c "]) assert.ok(calls.some((l) => l.includes(` ${cmd}`)), `${cmd} went through ssh`);
    // Stop through ssh too (the long job runs under the same login target).
    const longRef = (await deploy(adapter, long, noWait)).ref;
    await waitPhase(adapter, longRef, "RUNNING");
    await adapter.stop(longRef);
    assert.equal((await waitTerminal(adapter, longRef)).phase, "STOPPED");
    assert.match(readFileSync(sshLog, "utf8"), /alice@login1 scancel /);
  });

  it("finds a finished job slurmctld has forgotten in the completion log, and never mistakes a reused id for it", async () => {
    // A controller that lost its state forgets every job and starts numbering again from 1.
    await cluster.restartController({ clearState: true });
    const workDir = join(work, "demo");
    const p = planText(demoText(workDir));
    const adapter = adapterFor(workDir);
    assert.deepEqual(jobsNamed(p.jobName), []);
    const found = await adapter.findExisting(p);
    assert.deepEqual(found, demoRef);
    const s = await adapter.status(demoRef);
    assert.equal(s.phase, "SUCCEEDED");
    assert.equal(s.exitCode, 0);
    // New jobs take the old ids again: the demo's id now names another job, which status must not report.
    for (let i = 0, id = 0; id < Number(demoRef.id); i++) {
      assert.ok(i < 50, "job ids did not reach the demo's id");
      id = Number((await deploy(adapter, tinyPlan(join(work, `reuse-${i}`), `#!/bin/bash\nexit 7 # ${i}\n`), noWait)).ref.id);
    }
    const holder = execFileSync("scontrol", ["--oneliner", "show", "job", demoRef.id], { env: cluster.env, encoding: "utf8" });
    assert.doesNotMatch(holder, new RegExp(`JobName=${demoRef.name} `), "the id was reused by another job");
    assert.equal((await adapter.status(demoRef)).phase, "SUCCEEDED");
    assert.equal((await adapter.findExisting(p))?.id, demoRef.id);
  });
});
