// The ModelArts provider end to end: the planned CreateTrainingJob body field by field, then deploy() against the
// strict loopback fake (SDK-HMAC-SHA256 checked on every request) with the launch bundle uploaded to a real
// S3-compatible server (moto on 127.0.0.1) standing in for OBS; status through the phases, log tailing by cursor,
// idempotent stop; seeded random fault trials (timeouts after create, 5xx, 429, resets) that must each leave
// exactly one job; configuration and request errors with codes, nothing created and no secret in any message.
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { type ModelArtsAdapter, createModelArtsAdapter, resolveModelArtsConfig, statusOf, tailPage } from "../adapters/providers/modelarts.js";
import { signRequest } from "../adapters/providers/huawei-sign.js";
import { type AdapterContext, type BundleSink, type DeployOutcome, ProviderError, type RetryPolicy, deploy, withRetry } from "../adapters/providers/provider.js";
import { S3Store } from "../adapters/storage/s3.js";
import { parseStoreUri } from "../adapters/storage/store.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { RecipeError, RlpipeError } from "../core/errors.js";
import { type Plan, plan } from "../core/plan.js";
import type { ModelArtsJobBody } from "../core/providers/modelarts-request.js";
import { parseRecipe } from "../core/recipe/load.js";
import { fakeHuaweiAk, fakeHuaweiSk, fakeSecurityToken } from "./fakes/credentials.js";
import { JobRunner, stubContainerEnv, writeVerlStub } from "./fakes/job-runner.js";
import { CREATE_FAULTS, type CreateFault, FakeModelArts, PLATFORM_CODE_DIR } from "./fakes/modelarts-fake.js";
import { algorithmRuleProblem } from "./fakes/modelarts-model-check.js";
import { checkModel } from "./fakes/vendor-model.js";
import { assertRunInStore, runnableSeed } from "./run-outputs.js";
import { ROOT, planSeed, recipeText, seededRandom, editYaml as edit } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const SEED = "qwen3-1.7b-code-toolcall";
const AK = fakeHuaweiAk();
const SK = fakeHuaweiSk();
const STS_TOKEN = fakeSecurityToken();
const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const BUCKET = "rlpipe-runs";

const planOf = (text: string): Plan => plan(parseRecipe(text, "edited.yaml"), { provider: "modelarts", assets: bundledAssets() });
const bodyOf = (p: Plan) => p.request!.body as ModelArtsJobBody;


const noSecrets = (text: string, where: string) => {
  assert.ok(!text.includes(AK), `${where} contains the access key`);
  assert.ok(!text.includes(SK), `${where} contains the secret key`);
};
const errorText = (e: unknown) => `${(e as Error).message}\n${(e as RlpipeError).hint ?? ""}`;


/** A recipe's plan errors as [path, code] pairs; [] when it plans. */
const errs = (text: string) => {
  try { planOf(text); } catch (e) { if (e instanceof RecipeError) return e.issues.map((i) => [i.path.join("."), i.code]); throw e; }
  return [];
};

describe("ModelArts request (plan)", () => {
  const p = planSeed(SEED, "modelarts");
  const body = bodyOf(p);
  const d12 = p.bundleDigest.slice(0, 12);

  it("is the CreateTrainingJob v2 body, field by field", () => {
    assert.equal(p.request!.provider, "modelarts");
    assert.equal(p.request!.api, "POST /v2/{project_id}/training-jobs");
    assert.match(p.jobName, /^qwen3-1-7b-code-toolcall-[0-9a-f]{8}$/);
    assert.deepEqual(Object.keys(body), ["kind", "metadata", "algorithm", "spec"]);
    assert.equal(body.kind, "job");
    assert.deepEqual(body.metadata, {
      name: p.jobName,
      description: `rlpipe recipe qwen3-1.7b-code-toolcall sha256:${p.recipe.hash.slice(0, 12)} bundle ${d12}`,
      annotations: { "fault-tolerance/job-retry-num": "3" },
    });
    assert.deepEqual(body.algorithm, {
      engine: { image_url: "rlpipe/verl_sandbox:main-c651b7b-py311-cann8.3.RC1" },
      // With boot_file, as the SDK pairs them; no local_code_dir: ModelArts' own directory is its default, not a value
      // a request may name (JobAlgorithm.local_code_dir).
      code_dir: `/${BUCKET}/qwen3-code-toolcall/code/${d12}/`,
      boot_file: `/${BUCKET}/qwen3-code-toolcall/code/${d12}/launch.sh`,
      working_dir: `/home/ma-user/modelarts/user-job-dir/${d12}`,
      command: `bash /home/ma-user/modelarts/user-job-dir/${d12}/launch.sh`,
      // Checkpoints and metrics persist by default: the sidecar stages the store's layout, one channel uploads it.
      outputs: [{ name: "rlpipe-store", local_dir: "/home/ma-user/modelarts/user-job-dir/qwen3-1.7b-code-toolcall/.rlpipe/store", remote: { obs: { obs_url: `/${BUCKET}/qwen3-code-toolcall/code/runs/` } } }],
      environments: { RLPIPE_RUN: p.jobName },
    });
    assert.deepEqual(body.spec, {
      resource: { flavor_id: "modelarts.bm.npu.arm.8snt9b2.d", node_count: 1 },
      log_export_path: { obs_url: `/${BUCKET}/qwen3-code-toolcall/logs/` },
      auto_stop: { time_unit: "HOURS", duration: 72 },
    });
    assert.deepEqual(p.request!.bundle, { to: `obs://${BUCKET}/qwen3-code-toolcall/code/${d12}/`, mountedAt: `/home/ma-user/modelarts/user-job-dir/${d12}` });
    assert.ok(p.files.some((f) => f.path === "launch.sh" && f.executable));
  });

  it("lists the unverified fields, and carries secrets by name only", () => {
    const un = p.request!.unverified;
    assert.deepEqual(un.map((u) => u.path), ["algorithm.boot_file", "algorithm.code_dir", "algorithm.environments", "algorithm.outputs", "spec.auto_stop", "spec.log_export_path.obs_url", "spec.resource.flavor_id"]);
    assert.match(un.find((u) => u.path === "algorithm.outputs")!.why, /upload order is not documented/);
    assert.equal(un.find((u) => u.path === "algorithm.code_dir")!.override, "targets.modelarts.localCodeDir");
    assert.equal(un.find((u) => u.path === "spec.log_export_path.obs_url")!.override, "targets.modelarts.obsPathStyle");
    const secrets = un.find((u) => u.path === "algorithm.environments")!;
    assert.deepEqual(secrets.value, ["WANDB_API_KEY"]);
    assert.match(secrets.why, /plain text/);
    assert.ok(!JSON.stringify(body).includes("WANDB"), "no secret name or value in the body");
  });

  it("is deterministic, and a changed recipe gives a new name and code dir", () => {
    const again = planSeed(SEED, "modelarts");
    assert.deepEqual(again.request, p.request);
    const changed = planOf(edit(recipeText(SEED), [[["stages", 2, "rollout", "n"], 16]]));
    assert.notEqual(changed.jobName, p.jobName);
    assert.notEqual(bodyOf(changed).algorithm.code_dir, body.algorithm.code_dir);
  });

  it("environments, inputs, checkpoint outputs, obs:// style and multi-node wiring", () => {
    const text = edit(recipeText(SEED), [
      [["runtime", "env"], { HCCL_BUFFSIZE: "200", DATA_HOME: "$HOME/data" }],
      [["resources", "nodes"], 2],
      [["checkpoints"], { storage: "obs://ckpt-bucket/runs" }],
      [["targets", "modelarts", "obsPathStyle"], "uri"],
      [["targets", "modelarts", "env"], { ASCEND_LOG_LEVEL: "3" }],
      [["targets", "modelarts", "inputs"], [{ name: "model", obs: "obs://models/Qwen3-1.7B", local: "/home/ma-user/modelarts/inputs/model" }]],
      [["targets", "modelarts", "envFromPlatform"], { hosts: "MY_HOSTS" }],
    ]);
    const q = planOf(text);
    const b = bodyOf(q);
    assert.deepEqual(b.algorithm.environments, { ASCEND_LOG_LEVEL: "3", HCCL_BUFFSIZE: "200", RLPIPE_RUN: q.jobName });
    const w = q.warnings.find((x) => x.code === "modelarts_env_not_passed");
    assert.deepEqual(w?.path, ["runtime", "env", "DATA_HOME"]);
    assert.match(w!.message, /may not contain '\$'; launch\.sh still sets it/);
    assert.deepEqual(b.algorithm.inputs, [{ name: "model", local_dir: "/home/ma-user/modelarts/inputs/model", remote: { obs: { obs_url: "obs://models/Qwen3-1.7B/" } } }]);
    assert.deepEqual(b.algorithm.outputs?.map((o) => [o.name, o.remote.obs.obs_url]), [["rlpipe-store", "obs://ckpt-bucket/runs/"]]);
    assert.deepEqual(q.storage?.modelartsOutputs?.map((o) => o.localDir), b.algorithm.outputs?.map((o) => o.local_dir));
    assert.match(b.algorithm.code_dir, /^obs:\/\/rlpipe-runs\/qwen3-code-toolcall\/code\/[0-9a-f]{12}\/$/);
    assert.equal(b.spec.resource.node_count, 2);
    const cmd = q.request!.unverified.find((u) => u.path === "algorithm.command");
    assert.deepEqual(cmd?.value, { nodeRank: "VC_TASK_INDEX", nnodes: "MA_NUM_HOSTS", hosts: "MY_HOSTS" });
    assert.equal(cmd?.override, "targets.modelarts.envFromPlatform");
  });

  it("the multi-node command maps the task environment onto launch.sh's variables, and fails loudly without it", () => {
    const q = planOf(edit(recipeText(SEED), [[["resources", "nodes"], 2]]));
    const b = bodyOf(q);
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-ma-cmd-"));
    try {
      const script = join(dir, "launch.sh");
      writeFileSync(script, 'echo "rank=$RLPIPE_NODE_RANK nnodes=$RLPIPE_NNODES master=$RLPIPE_MASTER_ADDR"\n');
      chmodSync(script, 0o755);
      const command = b.algorithm.command.replace(`${q.request!.bundle!.mountedAt}/launch.sh`, script);
      assert.notEqual(command, b.algorithm.command);
      const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", VC_TASK_INDEX: "1", MA_NUM_HOSTS: "2", VC_WORKER_HOSTS: "job-x-worker-0.job-x,job-x-worker-1.job-x" };
      assert.equal(execFileSync("sh", ["-c", command], { env, encoding: "utf8" }), "rank=1 nnodes=2 master=job-x-worker-0.job-x\n");
      const missing = spawnSync("sh", ["-c", command], { env: { PATH: env.PATH, MA_NUM_HOSTS: "2", VC_WORKER_HOSTS: "h0,h1" }, encoding: "utf8" });
      assert.notEqual(missing.status, 0);
      assert.match(missing.stderr, /VC_TASK_INDEX is not set in this ModelArts task; set targets\.modelarts\.envFromPlatform\.nodeRank/);
      assert.equal(missing.stdout, "");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reports missing or invalid target fields and environment values as recipe errors with paths", () => {
    assert.deepEqual(errs(edit(recipeText(SEED), [[["targets", "modelarts"], undefined]])), [["targets.modelarts", "missing_target"]]);
    assert.deepEqual(errs(edit(recipeText(SEED), [[["targets", "modelarts", "flavor"], undefined], [["targets", "modelarts", "codeDir"], undefined], [["targets", "modelarts", "image"], undefined]])),
      [["targets.modelarts.image", "missing_field"], ["targets.modelarts.flavor", "missing_field"], ["targets.modelarts.codeDir", "missing_field"]]);
    assert.deepEqual(errs(edit(recipeText(SEED), [[["targets", "modelarts", "env"], { GOOD: "x", BAD: "$PATH", WANDB_API_KEY: "x", LONG: "y".repeat(4097) }]])).filter(([, code]) => code !== "plain_secret"),
      [["targets.modelarts.env.BAD", "invalid_modelarts_env"], ["targets.modelarts.env.WANDB_API_KEY", "secret_in_request"], ["targets.modelarts.env.LONG", "invalid_modelarts_env"]]);
    assert.deepEqual(errs(edit(recipeText(SEED), [[["targets", "modelarts", "codeDir"], "s3://x/y"], [["targets", "modelarts", "localCodeDir"], "/opt/code"]])),
      [["targets.modelarts.codeDir", "invalid_obs_path"], ["targets.modelarts.localCodeDir", "invalid_local_code_dir"]]);
    assert.deepEqual(errs(edit(recipeText(SEED), [
      [["checkpoints"], { storage: "obs://ckpt-bucket/runs" }],
      [["targets", "modelarts", "outputs"], [{ name: "rlpipe-store", obs: "obs://ckpt-bucket/other", local: "/home/ma-user/out" }]],
      [["targets", "modelarts", "inputs"], [{ name: "data", obs: "obs://data-bucket/d", local: "data" }]],
    ])), [["targets.modelarts.inputs.0.local", "relative_path"], ["checkpoints.storage", "duplicate_channel"]]);
    const tooMany = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`V${i}`, "1"]));
    assert.deepEqual(errs(edit(recipeText(SEED), [[["targets", "modelarts", "env"], tooMany]])), [["targets.modelarts.env", "too_many_env"]]);
  });
});

describe("ModelArts provider against the loopback fake", () => {
  let moto: Moto;
  let fake: FakeModelArts;
  let home: string;
  const p = planSeed(SEED, "modelarts");
  const recipe = parseRecipe(recipeText(SEED), "seed.yaml").recipe;
  const puts: string[] = [];
  const events: string[] = [];
  const fastRetry: RetryPolicy = { baseDelayMs: 1, maxDelayMs: 4, sleep: () => Promise.resolve() };
  const sinks: S3Store[] = [];

  const bundleSink = (uri: string): BundleSink => {
    const u = parseStoreUri(uri);
    const store = new S3Store({ scheme: "obs", bucket: u.bucket, prefix: u.prefix, region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    sinks.push(store);
    return {
      head: (key, signal) => store.head(key, signal),
      putBytes: async (key, data, opts) => { puts.push(key); return store.putBytes(key, data, opts); },
    };
  };
  const env = (extra: Record<string, string | undefined> = {}) => ({
    HOME: home, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fake.endpoint, ...extra,
  });
  const ctx = (extra: Record<string, string | undefined> = {}): AdapterContext => ({ env: env(extra), recipe, cwd: home, bundleSink, log: (l) => events.push(l) });
  const adapter = (opts: Parameters<typeof createModelArtsAdapter>[1] = {}, extra: Record<string, string | undefined> = {}): ModelArtsAdapter =>
    createModelArtsAdapter(ctx(extra), { timeoutMs: 5000, ...opts });
  const run = (a: ModelArtsAdapter, pl: Plan = p, policy: RetryPolicy = {}): Promise<DeployOutcome> =>
    deploy(a, pl, { ...fastRetry, onEvent: (l) => events.push(l), ...policy });

  before(async () => {
    home = mkdtempSync(join(tmpdir(), "rlpipe-ma-home-"));
    moto = await startMoto();
    const admin = new S3Store({ scheme: "obs", bucket: BUCKET, prefix: "", region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    sinks.push(admin);
    fake = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID }).start();
  });
  after(async () => {
    await fake.close();
    for (const s of sinks) await s.close();
    await moto.stop();
    rmSync(home, { recursive: true, force: true });
    for (const e of events) noSecrets(e, "a progress line");
  });

  it("deploys once: bundle in OBS, the planned body (as the SDK documents it) created; a second deploy finds it and uploads nothing", async () => {
    fake.reset();
    puts.length = 0;
    const a = adapter();
    const first = await run(a);
    assert.equal(first.outcome, "created");
    const jobs = fake.jobsNamed(p.jobName);
    assert.equal(jobs.length, 1);
    assert.deepEqual(first.ref, { provider: "modelarts", name: p.jobName, id: jobs[0]!.id, region: "cn-southwest-2", endpoint: fake.endpoint, extra: { projectId: PID } });
    assert.deepEqual(jobs[0]!.body, JSON.parse(JSON.stringify(bodyOf(p))), "the body sent is the plan's");
    assert.equal(fake.stats.authFailures, 0);
    assert.deepEqual(fake.stats.unknown, []);

    const code = new S3Store({ scheme: "obs", ...(({ bucket, prefix }) => ({ bucket, prefix }))(parseStoreUri(p.request!.bundle!.to)), region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    sinks.push(code);
    assert.deepEqual([...puts].sort(), p.files.map((f) => f.path).sort());
    for (const f of p.files) assert.equal((await code.get(f.path)).toString("utf8"), f.content, f.path);
    const listed = (await code.list("")).map((o) => o.key).sort();
    assert.deepEqual(listed, p.files.map((f) => f.path).sort());

    puts.length = 0;
    const second = await run(adapter());
    assert.deepEqual(second, { ref: first.ref, outcome: "existing" });
    assert.deepEqual(puts, [], "a content-addressed bundle already in OBS is not uploaded again");
    assert.equal(fake.stats.createAttempts, 1);
  });

  it("a search that does not say how many jobs match still reads every page: the job is found, never created twice", async () => {
    fake.reset();
    const a = adapter();
    const first = await run(a);
    // 60 newer jobs whose names contain this one's ("like" matches substrings): the job is on the second page.
    for (let i = 0; i < 60; i++) {
      const id = `other-${i}`;
      const body = JSON.parse(JSON.stringify(p.request!.body)) as Record<string, Record<string, unknown>>;
      body["metadata"]!["name"] = `${p.jobName}-v${i}`;
      fake.jobs.set(id, { id, name: `${p.jobName}-v${i}`, body, createTime: 1_900_000_000_000 + i, phases: ["Running"], step: 0, phase: "Running", log: Buffer.alloc(0), logCalls: 0, acknowledged: true });
    }
    fake.searchOmitsCounts = true;
    const second = await run(adapter());
    assert.deepEqual(second, { ref: first.ref, outcome: "existing" });
    assert.equal(fake.stats.createAttempts, 1);
  });

  it("status walks Creating → Pending → Running → Completed, with times and exit code", async () => {
    fake.reset();
    const a = adapter();
    const { ref } = await run(a);
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      const s = await a.status(ref);
      seen.push(`${s.phase}/${s.rawPhase}`);
      if (s.phase === "SUCCEEDED") {
        assert.equal(s.exitCode, 0);
        assert.equal(s.startedAt, new Date(fake.jobsNamed(p.jobName)[0]!.createTime + 30_000).toISOString());
        assert.equal(s.endedAt, new Date(fake.jobsNamed(p.jobName)[0]!.createTime + 30_000 + 3_600_000).toISOString());
        break;
      }
    }
    assert.deepEqual(seen, ["QUEUED/Creating", "QUEUED/Pending", "RUNNING/Running", "RUNNING/Running", "SUCCEEDED/Completed"]);
  });

  it("a failed job reports FAILED with the task's exit code and message; read errors are retried (by the caller's one retry layer)", async () => {
    fake.reset();
    fake.nextPhases = ["Creating", "Running", "Failed"];
    const a = adapter();
    const { ref } = await run(a);
    fake.readFaults.push(503);
    await assert.rejects(a.status(ref), (e: unknown) => e instanceof ProviderError && e.kind === "ambiguous" && e.httpStatus === 503, "the adapter makes one attempt");
    fake.readFaults.push(503, 429);
    const status = () => withRetry({ provider: "modelarts", op: "status" }, (s) => a.status(ref, s), fastRetry);
    const phases = [await status(), await status(), await status()];
    assert.deepEqual(phases.map((s) => s.phase), ["QUEUED", "RUNNING", "FAILED"]);
    assert.equal(phases[2]!.exitCode, 137);
    assert.equal(phases[2]!.message, "worker-0 exit 137: Process exited abnormally: NPU out of memory");
    assert.equal(fake.readFaults.length, 0, "both injected read faults were met and retried");
  });

  it("logs: nothing before the job runs, then the log tailed by cursor with no byte lost or repeated", async () => {
    fake.reset();
    const a = adapter();
    const { ref } = await run(a);
    // Each show moves the fake's job one phase on; logs() shows the job to learn its task until it has one.
    fake.logNotReady = "2818";
    assert.deepEqual(await a.logs(ref, undefined), { text: "", cursor: "0" }); // Creating: 400 ModelArts.2818
    fake.logNotReady = "2776";
    assert.deepEqual(await a.logs(ref, "0"), { text: "", cursor: "0" }); // Pending: 204 ModelArts.2776
    assert.deepEqual(fake.stats.rejected.map((r) => r.code), ["ModelArts.2818"]);
    let text = "";
    let cursor: string | undefined;
    for (let i = 0; i < 25; i++) {
      const page = await a.logs(ref, cursor);
      text += page.text;
      assert.ok(Number(page.cursor) >= Number(cursor ?? 0));
      cursor = page.cursor;
      if (i % 7 === 3) { // a reader that asks twice with the same cursor gets the same bytes, plus what was appended
        const again = await a.logs(ref, undefined);
        assert.ok(again.text.startsWith(text.slice(0, 64)));
      }
    }
    const job = fake.jobsNamed(p.jobName)[0]!;
    assert.equal(Buffer.byteLength(text), Number(cursor));
    assert.equal(text, job.log.subarray(0, Number(cursor)).toString("utf8"));
    assert.match(text, /step 0: .* 训练 ✓\n/);
    await assert.rejects(a.logs(ref, "abc"), (e: unknown) => e instanceof RlpipeError && e.code === "bad_log_cursor");
  });

  it("logs: a reader slower than the 5 MB preview window is told how many bytes it missed", async () => {
    fake.reset();
    const a = adapter();
    const { ref } = await run(a);
    for (let i = 0; i < 3; i++) await a.status(ref);
    const window = 1000;
    (fake.opts as { previewMaxBytes?: number }).previewMaxBytes = window;
    const saved = fake.logChunk;
    fake.logChunk = (_job, call) => `${String(call).padStart(4, "0")}:${"é".repeat(300)}\n`; // 606 bytes each
    try {
      const p1 = await a.logs(ref, undefined);
      assert.equal(p1.text, `0000:${"é".repeat(300)}\n`);
      assert.equal(p1.cursor, "606");
      const p2 = await a.logs(ref, p1.cursor); // log 1212 bytes, window 1000: nothing missed yet
      assert.equal(p2.text, `0001:${"é".repeat(300)}\n`);
      await a.logs(ref, p2.cursor); // appended, never read: the reader falls behind
      const p4 = await a.logs(ref, p2.cursor); // log 2424 bytes: the window starts at 1424, the reader is at 1212
      // The window would start inside an "é"; the preview starts at the next character (999 bytes, 213 missed).
      assert.match(p4.text, /^\[rlpipe: 213 bytes of this log are not shown: the ModelArts preview holds only the newest 999 bytes/);
      assert.equal(p4.cursor, "2424");
      assert.ok(p4.text.endsWith(`0003:${"é".repeat(300)}\n`));
    } finally {
      fake.logChunk = saved;
      delete (fake.opts as { previewMaxBytes?: number }).previewMaxBytes;
    }
    assert.deepEqual(tailPage("abc", 10, 12), { text: "abc", cursor: "10" }, "a log that shrank (restarted) is shown from its start");
  });

  it("stop is idempotent: terminate, terminate again, stop a finished job and an unknown one", async () => {
    fake.reset();
    const a = adapter();
    const { ref } = await run(a);
    await a.status(ref);
    await a.status(ref); // Pending
    await a.stop(ref);
    assert.equal(fake.stats.terminates, 1);
    await a.stop(ref); // Terminating: 409 ModelArts.2796, then the job is shown (Terminating): success
    assert.equal(fake.stats.terminates, 2);
    assert.deepEqual(fake.stats.rejected.map((r) => r.code), ["ModelArts.2796"]);
    assert.deepEqual(await a.status(ref), { phase: "STOPPED", rawPhase: "Terminated", message: "worker-0 exit 143", startedAt: new Date(fake.jobsNamed(p.jobName)[0]!.createTime + 30_000).toISOString(), endedAt: new Date(fake.jobsNamed(p.jobName)[0]!.createTime + 30_000 + 3_600_000).toISOString(), exitCode: 143 });
    await a.stop(ref); // Terminated
    await a.stop({ ...ref, id: "00000000-0000-0000-0000-000000000000" }); // ModelArts.2775
    // MODELARTS_ENDPOINT set now wins over the endpoint a run record holds; without it the record's is used, checked.
    assert.equal((await a.status({ ...ref, endpoint: "http://127.0.0.1:9" })).phase, "STOPPED", "the current MODELARTS_ENDPOINT is asked, not the recorded one");
    const noOverride = adapter({}, { MODELARTS_ENDPOINT: undefined });
    await assert.rejects(noOverride.status({ ...ref, endpoint: "http://modelarts.example.com" }), (e: unknown) => e instanceof RlpipeError && e.code === "insecure_endpoint", "a run record's endpoint is checked too");
    assert.equal(fake.jobsNamed(p.jobName)[0]!.phase, "Terminated");
    assert.equal(fake.stats.authFailures, 0);
  });

  describe("requests and replies as huaweicloudsdkmodelarts 3.1.219 models them (issue 33)", () => {
    /** One signed call, its raw reply: the fake's error shape and reply models are what is under test. */
    const signed = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
      const text = body === undefined ? undefined : JSON.stringify(body);
      const s = signRequest({ method, endpoint: fake.endpoint, path: `/v2/${PID}/${path}`, headers: { "Content-Type": "application/json", "X-Project-Id": PID }, ...(text === undefined ? {} : { body: text }) }, { ak: AK, sk: SK });
      const res = await fetch(s.url, { method, headers: s.headers, ...(text === undefined ? {} : { body: text }) });
      const raw = await res.text();
      return { status: res.status, json: raw === "" ? {} : JSON.parse(raw) as Record<string, unknown> };
    };
    const wire = () => JSON.parse(JSON.stringify(bodyOf(p))) as { metadata: Record<string, unknown>; algorithm: Record<string, unknown> & { engine: Record<string, unknown>; outputs: Record<string, unknown>[] }; spec: { resource: Record<string, unknown> } } & Record<string, unknown>;

    it("the create body has code_dir with boot_file (launch.sh in it), no local_code_dir, and fits the SDK's Job model", async () => {
      fake.reset();
      const { ref } = await run(adapter());
      const sent = fake.jobs.get(ref.id)!.body as { algorithm: Record<string, unknown> };
      assert.equal(checkModel("modelarts", "Job", sent), undefined);
      assert.equal(algorithmRuleProblem(sent.algorithm), undefined);
      assert.ok(!("local_code_dir" in sent.algorithm), "ModelArts' own code directory is its default, not something a request may name");
      const codeDir = bodyOf(p).algorithm.code_dir;
      assert.equal(sent.algorithm["code_dir"], codeDir);
      assert.equal(sent.algorithm["boot_file"], `${codeDir}launch.sh`);
      const code = new S3Store({ scheme: "obs", ...(({ bucket, prefix }) => ({ bucket, prefix }))(parseStoreUri(p.request!.bundle!.to)), region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
      sinks.push(code);
      assert.notEqual(await code.head("launch.sh"), undefined, "the boot_file is in code_dir");
      // The custom image's command still starts launch.sh where the platform's default puts code_dir.
      assert.equal(sent.algorithm["command"], `bash ${PLATFORM_CODE_DIR}/${p.bundleDigest.slice(0, 12)}/launch.sh`);
    });

    it("the fake refuses what the SDK model and its docstrings refuse: HTTP 400 ModelArts.2788 naming the field, nothing created", async () => {
      fake.reset();
      const cases: [string, (b: ReturnType<typeof wire>) => void, string][] = [
        ["code_dir with command but no boot_file (what rlpipe sent before)", (b) => { delete b.algorithm["boot_file"]; }, "algorithm.boot_file"],
        ["boot_file without code_dir", (b) => { delete b.algorithm["code_dir"]; }, "algorithm.code_dir"],
        ["boot_file outside code_dir", (b) => { b.algorithm["boot_file"] = `/${BUCKET}/elsewhere/launch.sh`; }, "algorithm.boot_file"],
        ["local_code_dir in /home/ma-user/modelarts (what rlpipe sent before)", (b) => { b.algorithm["local_code_dir"] = "/home/ma-user/modelarts/user-job-dir"; }, "algorithm.local_code_dir"],
        ["local_code_dir /home/ma-user", (b) => { b.algorithm["local_code_dir"] = "/home/ma-user"; }, "algorithm.local_code_dir"],
        ["local_code_dir under /home/ma-user/infer", (b) => { b.algorithm["local_code_dir"] = "/home/ma-user/infer/code"; }, "algorithm.local_code_dir"],
        ["local_code_dir /home/ma-user/modelarts-dev", (b) => { b.algorithm["local_code_dir"] = "/home/ma-user/modelarts-dev"; }, "algorithm.local_code_dir"],
        ["local_code_dir outside /home", (b) => { b.algorithm["local_code_dir"] = "/opt/code"; }, "algorithm.local_code_dir"],
        ["two ways of naming the engine", (b) => { b.algorithm.engine["engine_id"] = "pytorch-2.1"; }, "algorithm.engine"],
        ["an unknown field", (b) => { b.algorithm["local_code_path"] = "/home/ma-user/code"; }, "algorithm.local_code_path"],
        ["a missing required field", (b) => { delete b.spec.resource["node_count"]; }, "spec.resource.node_count"],
        ["a missing required name", (b) => { delete b.metadata["name"]; }, "metadata.name"],
        ["a wrong type", (b) => { b.spec.resource["node_count"] = "1"; }, "spec.resource.node_count"],
        ["a value outside the documented enum", (b) => { b["kind"] = "jobs"; }, "kind"],
        ["an output channel's access_method outside its enum", (b) => { b.algorithm.outputs[0]!["access_method"] = "mount"; }, "algorithm.outputs[0].access_method"],
      ];
      for (const [what, mutate, field] of cases) {
        const b = wire();
        mutate(b);
        const r = await signed("POST", "training-jobs", b);
        assert.equal(r.status, 400, what);
        assert.deepEqual(Object.keys(r.json).sort(), ["error_code", "error_msg"], what);
        assert.equal(r.json["error_code"], "ModelArts.2788", what);
        assert.ok(String(r.json["error_msg"]).startsWith(`Invalid parameter(${field})`), `${what}: ${String(r.json["error_msg"])}`);
      }
      assert.equal(fake.jobs.size, 0);
      // The other calls rlpipe makes are checked against their models too.
      const search = await signed("POST", "training-job-searches", { offset: 0, limit: 10, page: 1 });
      assert.deepEqual([search.status, search.json["error_code"]], [400, "ModelArts.2788"]);
      assert.match(String(search.json["error_msg"]), /^Invalid parameter\(page\)/);
      const ok = wire();
      ok.algorithm["local_code_dir"] = "/home/ma-user/code";
      const created = await signed("POST", "training-jobs", ok);
      assert.equal(created.status, 201, JSON.stringify(created.json));
      const id = (created.json["metadata"] as { id: string }).id;
      const stop = await signed("POST", `training-jobs/${id}/actions`, { action: "terminate" });
      assert.deepEqual([stop.status, stop.json["error_code"]], [400, "ModelArts.2788"]);
      assert.equal(fake.stats.terminates, 0);
    });

    it("a localCodeDir in ModelArts' own directories is refused at plan, naming the recipe field; one elsewhere under /home is sent and used", async () => {
      fake.reset();
      puts.length = 0;
      for (const dir of ["/home/ma-user/modelarts/code", "/home/ma-user", "/home/ma-user/infer", "/home/ma-user/modelarts-dev/x"]) {
        assert.deepEqual(errs(edit(recipeText(SEED), [[["targets", "modelarts", "localCodeDir"], dir]])), [["targets.modelarts.localCodeDir", "invalid_local_code_dir"]], dir);
      }
      assert.equal(fake.stats.requests, 0);
      assert.deepEqual(puts, []);
      const own = planOf(edit(recipeText(SEED), [[["targets", "modelarts", "localCodeDir"], "/home/ma-user/code"]]));
      const { ref } = await run(adapter(), own);
      const alg = fake.jobs.get(ref.id)!.body["algorithm"] as Record<string, unknown>;
      assert.equal(alg["local_code_dir"], "/home/ma-user/code");
      assert.equal(alg["command"], `bash /home/ma-user/code/${own.bundleDigest.slice(0, 12)}/launch.sh`);
    });

    it("replies are the SDK's response models with what the service adds, never the request echoed", async () => {
      fake.reset();
      const sent = wire();
      const created = await signed("POST", "training-jobs", sent);
      assert.equal(created.status, 201);
      const id = (created.json["metadata"] as { id: string }).id;
      const shown = await signed("GET", `training-jobs/${id}`);
      const found = await signed("POST", "training-job-searches", { offset: 0, limit: 50, filters: [{ key: "name", operator: "like", value: [p.jobName] }] });
      await signed("GET", `training-jobs/${id}`);
      await signed("GET", `training-jobs/${id}`); // Running: a log to preview
      const preview = await signed("GET", `training-jobs/${id}/tasks/worker-0/logs/preview`);
      const flavors = await signed("GET", "training-job-flavors");
      const stopped = await signed("POST", `training-jobs/${id}/actions`, { action_type: "terminate" });
      for (const [model, r] of [["JobResponse", created], ["JobResponse", shown], ["ListTrainingJobsResponse", found], ["ShowTrainingJobLogsPreviewResponse", preview], ["ShowTrainingJobFlavorsResponse", flavors], ["JobResponse", stopped]] as const) {
        assert.ok(r.status >= 200 && r.status < 300, `${model}: HTTP ${r.status} ${JSON.stringify(r.json)}`);
        assert.equal(checkModel("modelarts", model, r.json), undefined, model);
      }
      for (const job of [created.json, shown.json, (found.json["items"] as Record<string, unknown>[])[0]!, stopped.json]) {
        const md = job["metadata"] as Record<string, unknown>;
        assert.equal(md["id"], id);
        assert.equal(typeof md["create_time"], "number");
        assert.equal(typeof md["user_name"], "string");
        assert.equal(typeof (job["status"] as Record<string, unknown>)["phase"], "string");
        const alg = job["algorithm"] as Record<string, unknown>;
        assert.notDeepEqual(alg, sent.algorithm, "not the request's algorithm");
        assert.deepEqual(alg["environments"], [{ RLPIPE_RUN: p.jobName }], "JobAlgorithmResponse.environments is a list of maps");
        assert.equal(alg["local_code_dir"], PLATFORM_CODE_DIR, "the code directory in effect, which the request left out");
        assert.equal(alg["boot_file"], sent.algorithm["boot_file"]);
        const spec = job["spec"] as Record<string, unknown>;
        assert.ok(!("auto_stop" in spec), "SpecResponse has no auto_stop");
        assert.equal((spec["resource"] as Record<string, unknown>)["flavor_name"], sent.spec.resource["flavor_id"]);
      }
      assert.equal((stopped.json["status"] as Record<string, unknown>)["phase"], "Terminating");
    });
  });

  describe("fault trials: exactly one job, whatever fails", () => {
    const seed = Number(process.env["RLPIPE_TRIAL_SEED"] ?? 5_2026);
    const r = seededRandom(seed);
    const AFTER = new Set<CreateFault>(["timeout-after-create", "5xx-after-create", "reset-after-create"]);
    const trials = Array.from({ length: 60 }, (_, i) => {
      const x = r();
      const kind: "faults" | "existing" | "lagging-search" = x < 0.12 ? "existing" : x < 0.24 ? "lagging-search" : "faults";
      const faults = kind === "faults" ? Array.from({ length: Math.floor(r() * 4) }, () => CREATE_FAULTS[Math.floor(r() * CREATE_FAULTS.length)]!) : [];
      const searchFaults = Array.from({ length: r() < 0.3 ? 1 + Math.floor(r() * 2) : 0 }, () => (["5xx", "429", "reset"] as const)[Math.floor(r() * 3)]!);
      return { i, kind, faults, searchFaults };
    });

    for (const t of trials) {
      it(`trial ${t.i} (seed ${seed}): ${t.kind}${t.faults.length > 0 ? ` [${t.faults.join(", ")}]` : ""}${t.searchFaults.length > 0 ? ` search [${t.searchFaults.join(", ")}]` : ""}`, async () => {
        fake.reset();
        const a = adapter({ timeoutMs: 600 });
        let expected: DeployOutcome["outcome"];
        let expectedAttempts: number;
        if (t.kind === "existing" || t.kind === "lagging-search") {
          await run(adapter());
          fake.stats = { ...fake.stats, createAttempts: 0 };
          if (t.kind === "lagging-search") fake.searchFaults.push("hide");
          expected = "existing";
          expectedAttempts = t.kind === "existing" ? 0 : 1; // the lagging listing lets one create through: ModelArts.2751
        } else {
          const firstAfter = t.faults.findIndex((f) => AFTER.has(f));
          expected = firstAfter >= 0 ? "recovered" : "created";
          expectedAttempts = firstAfter >= 0 ? firstAfter + 1 : t.faults.length + 1;
          fake.createFaults.push(...t.faults);
        }
        fake.searchFaults.push(...t.searchFaults);
        let result: DeployOutcome;
        try {
          result = await run(a);
        } catch (e) {
          noSecrets(errorText(e), "a deploy error");
          throw e;
        }
        const jobs = fake.jobsNamed(p.jobName);
        assert.equal(jobs.length, 1, "exactly one job with the plan's name");
        assert.equal(fake.jobs.size, 1);
        assert.equal(result.ref.id, jobs[0]!.id);
        assert.equal(result.outcome, expected);
        assert.equal(fake.stats.createAttempts, expectedAttempts);
        if (expected === "created") assert.equal(jobs[0]!.acknowledged, true);
        assert.equal(fake.searchFaults.length, 0, "every injected search fault was met");
        assert.equal(fake.stats.authFailures, 0);
      });
    }
  });

  describe("through the CLI (rlpipe deploy/status/stop as a user runs them)", () => {
    /** The CLI as a child process; the fake and moto live in this process, so never block its event loop. */
    const cli = (args: string[], extra: Record<string, string> = {}) => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const child = spawn(process.execPath, [join(ROOT, "dist", "bin", "rlpipe.js"), ...args], {
        cwd: home, stdio: ["ignore", "pipe", "pipe"],
        env: {
          PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: home, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID,
          MODELARTS_ENDPOINT: fake.endpoint, MODELARTS_TIMEOUT_MS: "800", OBS_ENDPOINT: moto.endpoint, OBS_REGION: "cn-southwest-2",
          OBS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, OBS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, ...extra,
        },
      });
      let out = "";
      let err = "";
      child.stdout.on("data", (d: Buffer) => { out += d.toString(); });
      child.stderr.on("data", (d: Buffer) => { err += d.toString(); });
      child.on("close", (code) => resolve({ code, out, err }));
    });

    it("a create whose reply is lost (timeout after create) is reported as that one job; status and stop find it", async () => {
      fake.reset();
      fake.createFaults.push("timeout-after-create", "5xx-before-create");
      const r = await cli(["deploy", join(ROOT, "recipes", `${SEED}.yaml`), "--provider", "modelarts", "--yes", "--json"]);
      assert.equal(r.code, 0, r.err);
      const jobs = fake.jobsNamed(p.jobName);
      assert.equal(jobs.length, 1, "exactly one job");
      assert.deepEqual(JSON.parse(r.out.trim()), { name: p.jobName, provider: "modelarts", id: jobs[0]!.id, outcome: "recovered", attempt: 1 });
      assert.match(r.err, /looking the job up before any retry/);
      noSecrets(r.out + r.err, "CLI output");
      const st = await cli(["status", p.jobName, "--json"]);
      assert.equal(st.code, 0, st.err);
      assert.equal(JSON.parse(st.out)[0].id, jobs[0]!.id);
      const again = await cli(["deploy", join(ROOT, "recipes", `${SEED}.yaml`), "--provider", "modelarts", "--yes", "--json"]);
      assert.equal(JSON.parse(again.out.trim()).outcome, "existing");
      const stop = await cli(["stop", p.jobName, "--json"]);
      assert.equal(stop.code, 0, stop.err);
      assert.equal(fake.jobsNamed(p.jobName).length, 1);
      assert.equal(fake.stats.createAttempts, 1, "the second create never happened: the first one was found");
    });

    it("missing credentials: exit 2 with the variables named, nothing created", async () => {
      fake.reset();
      const r = await cli(["deploy", join(ROOT, "recipes", `${SEED}.yaml`), "--provider", "modelarts", "--yes"], { HUAWEICLOUD_SDK_SK: "" });
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, /HUAWEICLOUD_SDK_SK/);
      assert.equal(fake.jobs.size, 0);
      noSecrets(r.out + r.err, "CLI output");
    });
  });

  describe("errors: clear codes, nothing created, no secret in any message", () => {
    const expectError = async (fn: () => unknown, check: (e: RlpipeError) => void) => {
      const before = fake.stats.creates;
      let caught: unknown;
      try { await fn(); } catch (e) { caught = e; }
      assert.ok(caught instanceof RlpipeError, `expected an RlpipeError, got ${String(caught)}`);
      noSecrets(errorText(caught), "the error");
      check(caught);
      assert.equal(fake.stats.creates, before, "nothing created");
    };

    it("missing or partial credentials name the variables (exit code 2)", async () => {
      fake.reset();
      await expectError(() => adapter({}, { HUAWEICLOUD_SDK_AK: undefined, HUAWEICLOUD_SDK_SK: undefined }), (e) => {
        assert.equal(e.code, "credentials_missing");
        assert.equal(e.exitCode, 2);
        assert.match(e.message, /HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK/);
        assert.match(e.hint ?? "", /HUAWEICLOUD_CREDENTIALS_FILE/);
      });
      await expectError(() => adapter({}, { HUAWEICLOUD_SDK_SK: undefined }), (e) => assert.equal(e.code, "credentials_incomplete"));
      await expectError(() => adapter({}, { HUAWEICLOUD_SDK_PROJECT_ID: undefined }), (e) => {
        assert.equal(e.code, "project_id_missing");
        assert.match(e.hint ?? "", /HUAWEICLOUD_SDK_PROJECT_ID or targets\.modelarts\.projectId/);
      });
      assert.equal(fake.stats.requests, 0);
    });

    it("a credentials file works in place of the variables", async () => {
      fake.reset();
      const file = join(home, "hw-credentials");
      writeFileSync(file, `# test\n[other]\nak = wrong\nsk = wrong\n\n[ci]\nak = ${AK}\nsk = ${SK}\nproject_id = ${PID}\n`, { mode: 0o600 });
      const a = adapter({}, { HUAWEICLOUD_SDK_AK: undefined, HUAWEICLOUD_SDK_SK: undefined, HUAWEICLOUD_SDK_PROJECT_ID: undefined, HUAWEICLOUD_CREDENTIALS_FILE: file, HUAWEICLOUD_PROFILE: "ci" });
      assert.equal((await run(a)).outcome, "created");
      await expectError(() => adapter({}, { HUAWEICLOUD_SDK_AK: undefined, HUAWEICLOUD_SDK_SK: undefined, HUAWEICLOUD_CREDENTIALS_FILE: file, HUAWEICLOUD_PROFILE: "nope" }), (e) => assert.equal(e.code, "credentials_profile_missing"));
      writeFileSync(file, `[default]\naccess_key = ${AK}\n`);
      await expectError(() => adapter({}, { HUAWEICLOUD_SDK_AK: undefined, HUAWEICLOUD_SDK_SK: undefined, HUAWEICLOUD_CREDENTIALS_FILE: file }), (e) => {
        assert.equal(e.code, "credentials_file_invalid");
        assert.match(e.message, /hw-credentials:2: unknown key access_key/);
      });
    });

    it("plain http to a non-loopback endpoint is refused before anything is sent", async () => {
      fake.reset();
      await expectError(() => adapter({}, { MODELARTS_ENDPOINT: "http://modelarts.cn-southwest-2.myhuaweicloud.com" }), (e) => {
        assert.equal(e.code, "insecure_endpoint");
        assert.equal(e.exitCode, 2);
      });
      await expectError(() => adapter({}, { MODELARTS_ENDPOINT: "https://modelarts.example.com/v2" }), (e) => assert.equal(e.code, "bad_endpoint"));
      assert.equal(fake.stats.requests, 0);
    });

    it("a request ModelArts rejects (unknown flavor, too many nodes) fails once with the provider code, never retried", async () => {
      for (const [edits, code] of [
        [[[["targets", "modelarts", "flavor"], "modelarts.no.such.flavor"]], "ModelArts.2763"],
        [[[["resources", "nodes"], 8]], "ModelArts.2793"],
      ] as [[(string | number)[], unknown][], string][]) {
        fake.reset();
        const bad = planOf(edit(recipeText(SEED), edits));
        await expectError(() => run(adapter(), bad), (e) => {
          assert.ok(e instanceof ProviderError);
          assert.equal(e.kind, "fatal");
          assert.equal(e.providerCode, code);
          assert.equal(e.httpStatus, 400);
          assert.equal(e.code, "modelarts_request_rejected");
          assert.match(e.message, new RegExp(`^ModelArts create training job failed: HTTP 400 ${code.replace(".", "\\.")}: `));
        });
        assert.equal(fake.stats.createAttempts, 1);
        assert.equal(fake.jobs.size, 0);
      }
    });

    it("a wrong secret key, a skewed clock or a missing security token get APIGW.0301 (auth failed, with a hint)", async () => {
      fake.reset();
      await expectError(() => run(adapter({}, { HUAWEICLOUD_SDK_SK: `${SK}x` })), (e) => {
        assert.ok(e instanceof ProviderError);
        assert.equal(e.code, "modelarts_auth_failed");
        assert.equal(e.providerCode, "APIGW.0301");
        assert.equal(e.httpStatus, 401);
        assert.match(e.hint ?? "", /clock/);
      });
      const otherAk = fakeHuaweiAk();
      await expectError(() => run(adapter({}, { HUAWEICLOUD_SDK_AK: otherAk })), (e) => {
        assert.equal(e.code, "modelarts_auth_failed");
        assert.match(e.message, /access key \*\*\* not found/);
        assert.ok(!e.message.includes(otherAk));
      });
      await expectError(() => run(adapter({ now: () => new Date(Date.now() - 16 * 60_000) })), (e) => {
        assert.equal(e.code, "modelarts_auth_failed");
        assert.match(e.message, /request expired/);
      });
      assert.equal(fake.stats.authFailures, 3);
      const tokenFake = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID, securityToken: STS_TOKEN }).start();
      try {
        const withToken = createModelArtsAdapter({ ...ctx({ MODELARTS_ENDPOINT: tokenFake.endpoint, HUAWEICLOUD_SDK_SECURITY_TOKEN: STS_TOKEN }) });
        assert.equal((await run(withToken)).outcome, "created");
        const without = createModelArtsAdapter({ ...ctx({ MODELARTS_ENDPOINT: tokenFake.endpoint }) });
        await assert.rejects(run(without), (e: unknown) => e instanceof ProviderError && e.providerCode === "APIGW.0301");
        assert.equal(tokenFake.stats.creates, 1);
      } finally {
        await tokenFake.close();
      }
    });

    it("a plan for another provider is refused", async () => {
      fake.reset();
      await expectError(() => run(adapter(), planSeed(SEED, "docker")), (e) => assert.equal(e.code, "plan_provider_mismatch"));
    });
  });
});

describe("ModelArts configuration", () => {
  const creds = { HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK };
  const none = () => undefined;

  it("endpoint: MODELARTS_ENDPOINT, else the target's, else the region's; project id: the variable, else the target", () => {
    const target = { region: "cn-southwest-2", projectId: "from-target" };
    const c = resolveModelArtsConfig({ ...creds }, target, none);
    assert.deepEqual(c, { endpoint: "https://modelarts.cn-southwest-2.myhuaweicloud.com", region: "cn-southwest-2", projectId: "from-target", credentials: { ak: AK, sk: SK } });
    assert.equal(resolveModelArtsConfig({ ...creds, HUAWEICLOUD_REGION: "ap-southeast-1", HUAWEICLOUD_SDK_PROJECT_ID: "p" }, undefined, none).endpoint, "https://modelarts.ap-southeast-1.myhuaweicloud.cn");
    const overridden = resolveModelArtsConfig({ ...creds, HUAWEICLOUD_SDK_PROJECT_ID: "from-env", MODELARTS_ENDPOINT: "https://ma.internal.example:8443/" }, { ...target, endpoint: "https://ignored.example" }, none);
    assert.equal(overridden.endpoint, "https://ma.internal.example:8443");
    assert.equal(overridden.projectId, "from-env");
    assert.equal(resolveModelArtsConfig({ ...creds, HUAWEICLOUD_SDK_PROJECT_ID: "p" }, { endpoint: "https://ma.example" }, none).endpoint, "https://ma.example");
    assert.equal(resolveModelArtsConfig({ ...creds, HUAWEICLOUD_SDK_PROJECT_ID: "p", HUAWEICLOUD_SDK_SECURITY_TOKEN: "tok" }, target, none).credentials.securityToken, "tok");
    assert.throws(() => resolveModelArtsConfig({ ...creds, HUAWEICLOUD_SDK_PROJECT_ID: "p" }, undefined, none), (e: unknown) => e instanceof RlpipeError && e.code === "region_missing" && e.exitCode === 2);
    assert.throws(() => resolveModelArtsConfig({ ...creds, HUAWEICLOUD_SDK_PROJECT_ID: "p" }, { region: "southwest" }, none), (e: unknown) => e instanceof RlpipeError && e.code === "region_invalid");
  });
});

describe("ModelArts phases and status", () => {
  it("every documented status.phase maps to its normalized phase; anything else is UNKNOWN with the raw value kept", () => {
    const table = { Creating: "QUEUED", Pending: "QUEUED", Running: "RUNNING", Terminating: "STOPPING", Completed: "SUCCEEDED", Failed: "FAILED", Abnormal: "FAILED", Terminated: "STOPPED" };
    for (const [raw, want] of Object.entries(table)) {
      const s = statusOf({ metadata: { id: "i", name: "n" }, status: { phase: raw } });
      assert.equal(s.phase, want, raw);
      assert.equal(s.rawPhase, raw);
    }
    assert.deepEqual(statusOf({ metadata: { id: "i", name: "n" }, status: { phase: "Hibernating", secondary_phase: "Lost" } }), { phase: "UNKNOWN", rawPhase: "Hibernating", message: "Lost" });
    assert.deepEqual(statusOf({ metadata: { id: "i", name: "n" } }), { phase: "UNKNOWN", rawPhase: "(none)" });
  });
});

describe("ModelArts: a seed recipe's checkpoints and metrics reach OBS by default (the job really runs launch.sh)", () => {
  let moto: Moto;
  let fake: FakeModelArts;
  let runner: JobRunner;
  let dir: string;
  const sinks: S3Store[] = [];
  const OBS_ENV = () => ({ OBS_ENDPOINT: moto.endpoint, OBS_REGION: "cn-southwest-2", OBS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, OBS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-ma-run-"));
    moto = await startMoto();
    const admin = new S3Store({ scheme: "obs", bucket: BUCKET, prefix: "", region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    sinks.push(admin);
    writeVerlStub(join(dir, "stub"));
    // The container: ModelArts' /home/ma-user under a temporary root, python3 with the verl stub, and no OBS credential.
    runner = new JobRunner({
      storeEndpoint: moto.endpoint, storeCredentials: TEST_CREDENTIALS, root: join(dir, "container"), platformPrefixes: ["/home/ma-user"],
      env: stubContainerEnv(dir), uploadPeriodMs: 200,
    });
    fake = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID, runner }).start();
  });
  after(async () => {
    await fake.close();
    await runner.close();
    for (const s of sinks) await s.close();
    await moto.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("deploy → launch.sh runs, verl writes global_step_2 and _4 → rlpipe checkpoints lists both, restore verifies, metrics has every step", async () => {
    const work = join(dir, "work");
    const p = planOf(runnableSeed(recipeText(SEED), "modelarts", work));
    assert.equal(p.storage?.mechanism, "modelarts-output");
    assert.equal(p.storage?.defaulted, true, "the recipe sets no checkpoints.storage");
    const store = `obs://${BUCKET}/qwen3-code-toolcall/code/runs`;
    assert.equal(p.storage?.uri, store);
    const uploads = (uri: string): BundleSink => {
      const u = parseStoreUri(uri);
      const s = new S3Store({ scheme: "obs", bucket: u.bucket, prefix: u.prefix, region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
      sinks.push(s);
      return s;
    };
    const a = createModelArtsAdapter({ env: { HOME: dir, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fake.endpoint }, recipe: parseRecipe(runnableSeed(recipeText(SEED), "modelarts", work), "r.yaml").recipe, cwd: dir, bundleSink: uploads }, { timeoutMs: 5000 });
    const { ref } = await deploy(a, p, { sleep: () => Promise.resolve() });
    let status = await a.status(ref);
    for (let i = 0; i < 600 && !["SUCCEEDED", "FAILED", "STOPPED"].includes(status.phase); i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await a.status(ref);
    }
    const job = fake.jobsNamed(p.jobName)[0]!;
    assert.equal(status.phase, "SUCCEEDED", `the job ended ${status.phase}:\n${job.run?.output ?? job.runError}`);
    assert.match(job.run!.output, /stage rl: complete/);
    assert.match(job.run!.output, /final checkpoint and metrics sync/);
    const ckptDir = join(work, "checkpoints", "verl_sandbox_code_rl", "1.5B_L16k-huggingface-bs128-minibs32-gs8-temp0.9-1nodes");
    await assertRunInStore({ run: `${p.jobName}.rl`, store, env: OBS_ENV(), ckptDir, steps: [2, 4], metricSteps: 4, restoreInto: join(dir, "restore") });
  });
});
