// Durable checkpoint commits and metrics, for real: moto on 127.0.0.1 behind a strict gateway, the Node sync
// (`rlpipe sync`), the runs function with its presigned URLs, and the standard-library Python sidecar.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { CheckpointSync } from "../adapters/storage/checkpoint-sync.js";
import { MetricsSync, readMetricChunks } from "../adapters/storage/metrics-sync.js";
import { S3Store } from "../adapters/storage/s3.js";
import { layout } from "../core/checkpoints.js";
import { latestValues, mergeMetrics, renderSvg, toSeries } from "../core/metrics.js";
import { type RunningServer, startHttpServer } from "../functions/platforms/http.js";
import { ResultCache } from "../functions/reward.js";
import { runToken } from "../functions/runs.js";
import { type Gateway, isUploadPart, startGateway } from "./fakes/s3-gateway.js";
import { assertCommittedIntact, makeCheckpoints, run } from "./checkpoint-helpers.js";
import { ROOT } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const MiB = 1024 * 1024;
const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
const SIDECAR = join(ROOT, "recipes", "python", "rlpipe_sync.py");
const SECRET = "runs-function-secret-for-tests-0123";



describe("checkpoints and metrics in object storage", () => {
  let moto: Moto;
  let gw: Gateway;
  let store: S3Store;
  let fn: RunningServer;
  let work: string;
  before(async () => {
    moto = await startMoto();
    gw = await startGateway(moto.endpoint, TEST_CREDENTIALS.secretAccessKey);
    store = new S3Store({ scheme: "s3", bucket: "ckpt", prefix: "team", region: "us-east-1", endpoint: gw.endpoint, credentials: TEST_CREDENTIALS });
    await store.client.send(new CreateBucketCommand({ Bucket: "ckpt" }));
    fn = await startHttpServer({ runs: { store, secret: SECRET, urlTtlS: 60 }, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
    work = mkdtempSync(join(tmpdir(), "rlpipe-ckpt-"));
  });
  after(async () => {
    await fn.close();
    await store.close();
    await gw.close();
    await moto.stop();
    rmSync(work, { recursive: true, force: true });
  });

  const storeEnv = () => ({ ...process.env, S3_ENDPOINT: gw.endpoint, AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, AWS_REGION: "us-east-1", RLPIPE_STORE: "s3://ckpt/team" });

  it("uploads only finished steps, writes each manifest last, and restores into verl's layout", async () => {
    const dir = join(work, "a");
    makeCheckpoints(dir, [10, 20, 30], 20); // step 30 is still being written (past the tracker)
    const before = gw.stats.requests;
    const puts: string[] = [];
    const sync = new CheckpointSync({ run: "run-a", store, partSizeBytes: 8 * MiB, log: (l) => puts.push(l) });
    const r = await sync.syncDir(dir);
    assert.deepEqual(r.committed, [10, 20]);
    assert.deepEqual(await sync.committedSteps(), [10, 20]);
    assert.ok(gw.stats.requests > before);
    await assertCommittedIntact(store, "run-a", dir);
    const again = await sync.syncDir(dir);
    assert.deepEqual(again.committed, [], "a second pass uploads nothing");
    // restore
    const into = join(work, "restored");
    const m = await sync.restore(into);
    assert.equal(m.step, 20);
    assert.equal(readFileSync(join(into, "latest_checkpointed_iteration.txt"), "utf8"), "20");
    assert.ok(readFileSync(join(into, "global_step_20", "actor", "model_world_size_1_rank_0.pt")).equals(readFileSync(join(dir, "global_step_20", "actor", "model_world_size_1_rank_0.pt"))));
    await assert.rejects(sync.restore(join(work, "nope"), 30), /no committed step 30/);
  });

  it("restore refuses a file whose stored bytes no longer match the manifest", async () => {
    const sync = new CheckpointSync({ run: "run-a", store });
    await store.client.send(new PutObjectCommand({ Bucket: "ckpt", Key: `team/${layout.file("run-a", 10, "data.pt")}`, Body: Buffer.from("tampered") }));
    await assert.rejects(sync.restore(join(work, "tampered"), 10), /does not match the manifest/);
  });

  it("a manifest is written only after every file, and a step past the tracker never appears", async () => {
    const dir = join(work, "order");
    makeCheckpoints(dir, [5], 5, 9 * MiB);
    const writes: string[] = [];
    const spy = new Proxy(store, { get: (t, p) => (p === "putBytes" || p === "putFile" ? (key: string, ...rest: unknown[]) => { writes.push(key); return (t[p] as (...a: unknown[]) => unknown).call(t, key, ...rest); } : (t as unknown as Record<string | symbol, unknown>)[p]) });
    await new CheckpointSync({ run: "run-order", store: spy as S3Store }).syncDir(dir);
    assert.equal(writes[writes.length - 1], layout.manifest("run-order", 5));
    assert.equal(writes.filter((k) => k.endsWith(".manifest.json")).length, 1);
  });

  it("bounds parts in flight across all files; multipart files hand out their parts one file at a time", async () => {
    const dir = join(work, "lanes");
    const d = join(dir, "global_step_1", "actor");
    mkdirSync(d, { recursive: true });
    for (let i = 0; i < 3; i++) writeFileSync(join(d, `model_world_size_3_rank_${i}.pt`), randomBytes(20 * MiB)); // 3 parts each
    for (let i = 0; i < 6; i++) writeFileSync(join(d, `small_${i}.json`), randomBytes(1000));
    writeFileSync(join(dir, "latest_checkpointed_iteration.txt"), "1");
    const lanes = new S3Store(store.opts);
    let parts = 0, maxParts = 0, issuing = 0, maxIssuing = 0, issuedEarly = 0;
    const uploadPart = lanes.uploadPart.bind(lanes);
    lanes.uploadPart = async (...a: Parameters<S3Store["uploadPart"]>) => {
      maxParts = Math.max(maxParts, ++parts);
      try { return await uploadPart(...a); } finally { parts--; }
    };
    const putFile = lanes.putFile.bind(lanes);
    lanes.putFile = async (key, path, o) => {
      const big = key.endsWith(".pt");
      if (!big) return putFile(key, path, o);
      // A multipart file is "issuing" from its start until it has handed out its last part.
      maxIssuing = Math.max(maxIssuing, ++issuing);
      let open = true;
      const issued = () => { if (open) { open = false; issuing--; } };
      try {
        return await putFile(key, path, { ...o, onPartsIssued: () => { issuedEarly++; issued(); o?.onPartsIssued?.(); } });
      } finally { issued(); }
    };
    try {
      const r = await new CheckpointSync({ run: "run-lanes", store: lanes, partSizeBytes: 8 * MiB, concurrency: 2, fileConcurrency: 4 }).syncDir(dir);
      assert.deepEqual(r.committed, [1]);
    } finally {
      await lanes.close();
    }
    assert.equal(maxParts, 2, "parts in flight: at most the shared slots, and the slots are used");
    assert.equal(maxIssuing, 1, "one multipart file hands out parts at a time");
    assert.equal(issuedEarly, 3, "each told the sync when its last part was out, so the next could start");
    await assertCommittedIntact(store, "run-lanes", dir);
  });

  it("retention keeps the last K and every M-th step, deleting manifests before files", async () => {
    const dir = join(work, "ret");
    makeCheckpoints(dir, [10, 20, 30, 40, 50], 50, 1024);
    const sync = new CheckpointSync({ run: "run-ret", store, retention: { keepLast: 2, keepEvery: 20 } });
    const r = await sync.syncDir(dir);
    assert.deepEqual(r.deleted, [10, 30]);
    assert.deepEqual(await sync.committedSteps(), [20, 40, 50]);
    assert.deepEqual(await store.list(layout.stepPrefix("run-ret", 10)), []);
  });

  it("metrics: chunks of whole lines, resumed after a restart, a rewritten file is a new generation", async () => {
    const file = join(work, "metrics.jsonl");
    const line = (step: number, score: number) => `${JSON.stringify({ step, data: { "critic/score/mean": score, "response_length/mean": 100 + step, "num_turns/mean": 4 } })}\n`;
    writeFileSync(file, line(1, 0.1) + line(2, 0.2) + '{"step": 3, "da');
    assert.ok(await new MetricsSync(store, "run-m").syncFile(file) > 0);
    appendFileSync(file, `ta": {"critic/score/mean": 0.3}}\n${line(4, 0.4)}`);
    assert.ok(await new MetricsSync(store, "run-m").syncFile(file) > 0, "a fresh syncer resumes from the stored offset");
    assert.equal(await new MetricsSync(store, "run-m").syncFile(file), 0);
    // verl restarts from step 2 and rewrites the file
    await new Promise((r) => setTimeout(r, 1100)); // a later first-chunk time for the new generation
    writeFileSync(file, line(3, 0.35) + line(4, 0.45) + line(5, 0.5));
    await new MetricsSync(store, "run-m").syncFile(file);
    const series = toSeries(mergeMetrics(await readMetricChunks(store, "run-m")));
    assert.deepEqual(series.get("critic/score/mean"), [[1, 0.1], [2, 0.2], [3, 0.35], [4, 0.45], [5, 0.5]]);
    const latest = latestValues(series);
    assert.deepEqual(latest.map((l) => [l.label, l.step, l.value]), [["reward (score mean)", 5, 0.5], ["response length (mean tokens)", 5, 105], ["tool calls per response", 5, 1]]);
    const svg = renderSvg(series, ["critic/score/mean"], "run-m");
    assert.match(svg, /^<svg /);
    assert.match(svg, /<path d="M[\d.]+,[\d.]+ L/);
  });

  it("rlpipe metrics and rlpipe checkpoints read the store", async () => {
    const env = storeEnv();
    const m = await run(process.execPath, [CLI, "metrics", "run-m", "--plot", join(work, "m.svg")], { env });
    assert.equal(m.status, 0, m.stderr);
    assert.match(m.stdout, /reward \(score mean\)\s+0\.5 {2}\(step 5, critic\/score\/mean\)/);
    assert.match(readFileSync(join(work, "m.svg"), "utf8"), /critic\/score\/mean/);
    const c = await run(process.execPath, [CLI, "checkpoints", "run-a", "--json"], { env });
    assert.equal(c.status, 0, c.stderr);
    assert.deepEqual(JSON.parse(c.stdout).map((x: { step: number }) => x.step), [10, 20]);
    assert.doesNotMatch(m.stderr + m.stdout + c.stderr + c.stdout, new RegExp(TEST_CREDENTIALS.secretAccessKey));
  });

  describe("runs function + Python sidecar (no credentials in the job)", () => {
    const sidecar = (name: string, dir: string, extra: string[] = []) =>
      run("/usr/bin/python3", [SIDECAR, "--url", fn.url, "--run", name, "--dir", dir, "--once", "--part-size-mb", "8", ...extra], {
        env: { PATH: "/usr/bin:/bin", RLPIPE_RUN_TOKEN: runToken(SECRET, name) },
      });

    it("uploads through presigned URLs, commits steps and metrics; the job holds only its run token", async () => {
      const dir = join(work, "side");
      makeCheckpoints(dir, [2, 4], 4);
      const metrics = join(work, "side-metrics.jsonl");
      writeFileSync(metrics, `${JSON.stringify({ step: 1, data: { "critic/score/mean": 0.25 } })}\n`);
      const r = await sidecar("run-side", dir, ["--metrics", metrics, "--keep-last", "5"]);
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(await assertCommittedIntact(store, "run-side", dir), [2, 4]);
      assert.deepEqual(toSeries(mergeMetrics(await readMetricChunks(store, "run-side"))).get("critic/score/mean"), [[1, 0.25]]);
      const state = await (await fetch(`${fn.url}/v1/runs/run-side/state`, { headers: { authorization: `Bearer ${runToken(SECRET, "run-side")}` } })).json() as { committed: number[] };
      assert.deepEqual(state.committed, [2, 4]);
    });

    it("renews presigned URLs that expire mid-upload", async () => {
      const short = await startHttpServer({ runs: { store, secret: SECRET, urlTtlS: 1 }, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
      try {
        const dir = join(work, "expiry");
        makeCheckpoints(dir, [1], 1, 6 * 8 * MiB);
        const before = gw.stats.expired;
        // Both workers' first parts stall past the 1 s TTL, so the URLs of the parts after them expire.
        gw.faults.push({ kind: "delay", ms: 2200, match: isUploadPart }, { kind: "delay", ms: 2200, match: isUploadPart });
        const r = await run("/usr/bin/python3", [SIDECAR, "--url", short.url, "--run", "run-exp", "--dir", dir, "--once", "--part-size-mb", "8", "--parallel", "2"], {
          env: { PATH: "/usr/bin:/bin", RLPIPE_RUN_TOKEN: runToken(SECRET, "run-exp") },
        });
        assert.equal(r.status, 0, r.stderr);
        assert.ok(gw.stats.expired > before, "some URLs expired at the server");
        assert.match(r.stderr, /presigned URL expired; asking for fresh ones/);
        assert.deepEqual(await assertCommittedIntact(store, "run-exp", dir), [1]);
      } finally {
        await short.close();
      }
    });

    it("authenticates per run and refuses paths outside the run's checkpoints", async () => {
      const post = (run: string, op: string, body: unknown, token = runToken(SECRET, run)) =>
        fetch(`${fn.url}/v1/runs/${run}/${op}`, { method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${token}` }, body: JSON.stringify(body) });
      const upload = { path: "checkpoints/global_step_1/x.bin", size: 3, sha256: "a".repeat(64), partSize: 8 * MiB, partMd5s: ["b".repeat(32)] };
      assert.equal((await post("run-x", "uploads", upload, runToken(SECRET, "run-y"))).status, 401, "a token opens only its own run");
      assert.equal((await post("run-x", "uploads", upload, "f".repeat(64))).status, 401);
      assert.equal((await post("run-x", "uploads", { ...upload, path: "checkpoints/global_step_1/../../run-y/x" })).status, 400);
      assert.equal((await post("run-x", "uploads", { ...upload, path: "other/x" })).status, 400);
      const missing = await post("run-x", "commit", { step: 1, files: [{ path: "x.bin", size: 3, sha256: "a".repeat(64) }] });
      assert.equal(missing.status, 409);
      assert.deepEqual(((await missing.json()) as { problems: string[] }).problems, ["x.bin: not uploaded"]);
      const noToken = await fetch(`${fn.url}/v1/runs/run-x/state`);
      assert.equal(noToken.status, 401);
    });
  });

  it("SIGKILL at random points (20 trials, both uploaders): committed steps stay intact, uncommitted ones stay invisible, a restart finishes", { timeout: 600_000 }, async () => {
    const rnd = (() => { let a = 20261122; return () => { a = (a * 1103515245 + 12345) % 2 ** 31; return a / 2 ** 31; }; })();
    let reused = 0;
    for (let trial = 0; trial < 20; trial++) {
      const name = `kill-${trial}`;
      const dir = join(work, name);
      makeCheckpoints(dir, [1, 2, 3], 3, 17 * MiB);
      const python = trial % 2 === 1;
      const args = python
        ? ["/usr/bin/python3", [SIDECAR, "--url", fn.url, "--run", name, "--dir", dir, "--once", "--part-size-mb", "8"]] as const
        : [process.execPath, [CLI, "sync", name, "--watch", dir, "--once"]] as const;
      const env = python ? { PATH: "/usr/bin:/bin", RLPIPE_RUN_TOKEN: runToken(SECRET, name) } : storeEnv();
      const child = spawn(args[0], [...args[1]], { env, stdio: "ignore" });
      const exited = new Promise((r) => child.once("exit", r)); // registered now: the child may finish before the kill
      const killAt = 100 + Math.floor(rnd() * 1400);
      await new Promise((r) => setTimeout(r, killAt));
      child.kill("SIGKILL");
      await exited;
      const visible = await assertCommittedIntact(store, name, dir);
      assert.ok(visible.every((s) => [1, 2, 3].includes(s)));
      const before = gw.stats.uploadParts;
      const again = await run(args[0], [...args[1]], { env });
      assert.equal(again.status, 0, `trial ${trial}: ${again.stderr}`);
      assert.deepEqual(await assertCommittedIntact(store, name, dir), [1, 2, 3], `trial ${trial} (${python ? "python" : "node"}, killed at ${killAt} ms)`);
      const partsAfterRestart = gw.stats.uploadParts - before;
      if (partsAfterRestart < 3 * 3 - visible.length * 3) reused++;
    }
    assert.ok(reused >= 1, "at least one restart reused parts an interrupted upload had already stored");
  });
});
