// rlpipe_sync.py's store mode, as managed targets run it: straight to an S3 API behind a strict gateway (SigV4 and
// Content-MD5 checked, faults injected) with the job's credentials, and into a directory an output channel
// uploads. The result must be what `rlpipe checkpoints` / `restore` / `metrics` read: the same layout and manifests
// as the Node sync, each manifest written after its files, retention applied, a retired step never uploaded again.
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { CheckpointSync } from "../adapters/storage/checkpoint-sync.js";
import { FsStore } from "../adapters/storage/fs.js";
import { readMetricChunks } from "../adapters/storage/metrics-sync.js";
import { S3Store } from "../adapters/storage/s3.js";
import { layout } from "../core/checkpoints.js";
import { mergeMetrics } from "../core/metrics.js";
import { assertCommittedIntact, makeCheckpoints, run } from "./checkpoint-helpers.js";
import { type Gateway, isUploadPart, startGateway } from "./fakes/s3-gateway.js";
import { ROOT } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const MiB = 1024 * 1024;
const SIDECAR = join(ROOT, "recipes", "python", "rlpipe_sync.py");

describe("rlpipe_sync.py --store: the sidecar managed targets run", () => {
  let moto: Moto;
  let gw: Gateway;
  let store: S3Store;
  let work: string;
  before(async () => {
    moto = await startMoto();
    gw = await startGateway(moto.endpoint, TEST_CREDENTIALS.secretAccessKey);
    store = new S3Store({ scheme: "cos", bucket: "ckpt-1251234567", prefix: "runs", region: "ap-shanghai", endpoint: gw.endpoint, credentials: TEST_CREDENTIALS });
    await store.client.send(new CreateBucketCommand({ Bucket: "ckpt-1251234567" }));
    work = mkdtempSync(join(tmpdir(), "rlpipe-sidecar-store-"));
  });
  after(async () => {
    await store.close();
    await gw.close();
    await moto.stop();
    rmSync(work, { recursive: true, force: true });
  });

  // The job's environment: the COS key the deploy passed, the region's endpoint (here the gateway on loopback).
  const jobEnv = (over: Record<string, string> = {}) => ({ PATH: process.env["PATH"] ?? "/usr/bin:/bin", COS_ENDPOINT: gw.endpoint, COS_SECRET_ID: TEST_CREDENTIALS.accessKeyId, COS_SECRET_KEY: TEST_CREDENTIALS.secretAccessKey, ...over });
  const sidecar = (args: string[], env = jobEnv()) => run("python3", [SIDECAR, ...args], { env, timeoutMs: 120_000 });

  it("commits finished steps (multipart shards included) with signed requests, manifests last, readable by rlpipe's own reader", async () => {
    const dir = join(work, "a");
    makeCheckpoints(dir, [10, 20, 30], 20, 18 * MiB); // step 30 is past the tracker: still being written
    writeMetrics(join(work, "a.jsonl"), 1, 20);
    const before = { parts: gw.stats.uploadParts, rejected: gw.stats.rejectedSignature };
    const r = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-a.rl", "--dir", dir, "--metrics", join(work, "a.jsonl"), "--once", "--part-size-mb", "8", "--recipe-hash", "abc123"]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(gw.stats.rejectedSignature, before.rejected, "every request carried a valid SigV4 signature");
    assert.ok(gw.stats.uploadParts - before.parts >= 6, "the 18 MiB shards went up in parts");
    assert.deepEqual(await assertCommittedIntact(store, "job-a.rl", dir), [10, 20]);
    const m = await new CheckpointSync({ run: "job-a.rl", store }).manifest(20);
    assert.equal(m.recipeHash, "abc123");
    assert.equal(m.format, "rlpipe-checkpoint/v1");
    const rows = mergeMetrics(await readMetricChunks(store, "job-a.rl"));
    assert.deepEqual([...rows.keys()].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i + 1));
    // Every manifest was written after every file of its step.
    const objects = await store.list("job-a.rl/checkpoints/");
    for (const step of [10, 20]) {
      const manifestAt = objects.find((o) => o.key === layout.manifest("job-a.rl", step))!.lastModified!.getTime();
      for (const o of objects.filter((x) => x.key.startsWith(layout.stepPrefix("job-a.rl", step)))) assert.ok(o.lastModified!.getTime() <= manifestAt, o.key);
    }
  });

  it("a failed upload is retried, damage in transit is refused (Content-MD5), and nothing is committed half-way", async () => {
    const dir = join(work, "b");
    makeCheckpoints(dir, [5], 5, 18 * MiB);
    gw.faults.push({ kind: "reset", match: isUploadPart }, { kind: "corrupt", match: isUploadPart }, { kind: "status", status: 503, code: "SlowDown" });
    const r = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--run", "job-b.rl", "--dir", dir, "--once", "--part-size-mb", "8"], jobEnv({ COS_REGION: "ap-shanghai" }));
    assert.equal(r.status, 0, r.stderr);
    assert.equal(gw.faults.length, 0, "every fault was met");
    assert.deepEqual(await assertCommittedIntact(store, "job-b.rl", dir), [5]);
  });

  it("retention deletes old steps (manifest first), and a retired step still on disk is never uploaded again", async () => {
    const dir = join(work, "c");
    makeCheckpoints(dir, [1, 2], 2, 1024);
    const args = ["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-c.rl", "--dir", dir, "--once", "--keep-last", "1"];
    assert.equal((await sidecar(args)).status, 0);
    assert.deepEqual(await new CheckpointSync({ run: "job-c.rl", store }).committedSteps(), [2]);
    makeCheckpoints(dir, [3], 3, 1024);
    const puts = gw.stats.requests;
    const again = await sidecar(args);
    assert.equal(again.status, 0, again.stderr);
    assert.deepEqual(await new CheckpointSync({ run: "job-c.rl", store }).committedSteps(), [3]);
    assert.doesNotMatch(again.stderr, /step 1: committed/, "step 1 was retired: not uploaded again");
    assert.deepEqual((await store.list(layout.stepPrefix("job-c.rl", 1))).map((o) => o.key), []);
    assert.ok(gw.stats.requests - puts < 40);
  });

  it("without credentials it says which variables it needs, and uploads nothing", async () => {
    const dir = join(work, "d");
    makeCheckpoints(dir, [1], 1, 10);
    const r = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-d.rl", "--dir", dir, "--once"], jobEnv({ COS_SECRET_ID: "", COS_SECRET_KEY: "" }));
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /COS_SECRET_ID and COS_SECRET_KEY/);
    assert.doesNotMatch(r.stderr, /Traceback/);
    assert.deepEqual(await store.list("job-d.rl/"), []);
  });

  it("into a directory (ModelArts' output channel): hard links, no copy; a manifest waits --settle-s, and the last pass commits it", async () => {
    const dir = join(work, "e");
    const staging = join(work, "staging");
    makeCheckpoints(dir, [4], 4, 2 * MiB);
    writeMetrics(join(work, "e.jsonl"), 1, 4);
    const args = ["--store", `file://${staging}`, "--settle-s", "3600", "--run", "job-e.rl", "--dir", dir, "--metrics", join(work, "e.jsonl"), "--interval", "0.2"];
    // A periodic pass (the sidecar is stopped by SIGTERM after a moment): files staged, the manifest held back.
    const child = await import("node:child_process").then(({ spawn }) => spawn("python3", [SIDECAR, ...args], { env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stdio: ["ignore", "ignore", "pipe"] }));
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    for (let i = 0; i < 100 && !/committing after/.test(stderr); i++) await new Promise((r) => setTimeout(r, 50));
    const shard = join(staging, "job-e.rl", "checkpoints", "global_step_4", "actor", "model_world_size_1_rank_0.pt");
    assert.ok(existsSync(shard), stderr);
    assert.equal(statSync(shard).ino, statSync(join(dir, "global_step_4", "actor", "model_world_size_1_rank_0.pt")).ino, "hard-linked, not copied");
    assert.ok(!existsSync(join(staging, "job-e.rl", "checkpoints", "global_step_4.manifest.json")), "held back while the platform may still be uploading the files");
    // Stopping it (launch.sh's end) is the last pass: the manifest is committed.
    const exited = new Promise<number | null>((r) => child.on("close", r));
    child.kill("SIGTERM");
    assert.equal(await exited, 0, stderr);
    const fs = new FsStore(staging);
    try {
      assert.deepEqual(await new CheckpointSync({ run: "job-e.rl", store: fs }).committedSteps(), [4]);
      const restored = join(work, "restored-e");
      await new CheckpointSync({ run: "job-e.rl", store: fs }).restore(restored);
      assert.ok(readFileSync(join(restored, "global_step_4", "data.pt")).equals(readFileSync(join(dir, "global_step_4", "data.pt"))));
      assert.equal(mergeMetrics(await readMetricChunks(fs, "job-e.rl")).size, 4);
    } finally {
      await fs.close();
    }
  });
});

function writeMetrics(file: string, from: number, to: number): void {
  mkdirSync(join(file, ".."), { recursive: true });
  for (let s = from; s <= to; s++) appendFileSync(file, `${JSON.stringify({ step: s, data: { "critic/score/mean": s / 10, "actor/pg_loss": 1 / s } })}\n`);
}
