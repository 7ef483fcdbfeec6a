// Durable checkpoint commits and metrics, for real: moto on 127.0.0.1 behind a strict gateway, the Node sync
// (`rlpipe sync`), the runs function with its presigned URLs, and the standard-library Python sidecar.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { CheckpointSync, listFiles } from "../adapters/storage/checkpoint-sync.js";
import { MetricsSync, readMetricChunks } from "../adapters/storage/metrics-sync.js";
import { S3Store } from "../adapters/storage/s3.js";
import { layout, retiredRecord } from "../core/checkpoints.js";
import { latestValues, mergeMetrics, renderSvg, toSeries } from "../core/metrics.js";
import { type RunningServer, startHttpServer } from "../functions/platforms/http.js";
import { ResultCache } from "../functions/reward.js";
import { runToken } from "../functions/runs.js";
import { type Gateway, isUploadPart, startGateway } from "./fakes/s3-gateway.js";
import { assertCommittedIntact, isThirdShardPart, killWhileThirdShardHeld, makeCheckpoints, makeThreeShardStep, passesKeepingEveryStep, run, uploadsPerStep } from "./checkpoint-helpers.js";
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
    const { manifest: m } = await sync.restore(into);
    assert.equal(m.step, 20);
    assert.equal(readFileSync(join(into, "latest_checkpointed_iteration.txt"), "utf8"), "20");
    assert.ok(readFileSync(join(into, "global_step_20", "actor", "model_world_size_1_rank_0.pt")).equals(readFileSync(join(dir, "global_step_20", "actor", "model_world_size_1_rank_0.pt"))));
    await assert.rejects(sync.restore(join(work, "nope"), 30), /no committed step 30/);
  });

  it("restore refuses a file whose stored bytes no longer match the manifest", async () => {
    const sync = new CheckpointSync({ run: "run-a", store });
    await store.client.send(new PutObjectCommand({ Bucket: "ckpt", Key: `team/${layout.file("run-a", 10, "data.pt")}`, Body: Buffer.from("tampered") }));
    await assert.rejects(sync.restore(join(work, "tampered"), 10), /does not match the manifest/);
    assert.equal(existsSync(join(work, "tampered")), false, "nothing left behind, not even the directory the restore made");
  });

  for (const which of ["small", "large"] as const) {
    it(`rlpipe restore of a step with a corrupted ${which} file exits 1 at once and leaves no partial file`, async () => {
      const name = `run-corrupt-${which}`;
      const dir = join(work, name);
      makeCheckpoints(dir, [1], 1, 40 * MiB); // the shard: three 16 MiB ranges, still downloading when the small file fails
      await new CheckpointSync({ run: name, store }).syncDir(dir);
      const rel = which === "small" ? "actor/huggingface/config.json" : "actor/model_world_size_1_rank_0.pt";
      await store.client.send(new PutObjectCommand({ Bucket: "ckpt", Key: `team/${layout.file(name, 1, rel)}`, Body: which === "small" ? Buffer.from("{}") : randomBytes(40 * MiB) }));
      const into = join(work, `${name}-into`);
      const r = await run(process.execPath, [CLI, "restore", name, into], { env: storeEnv(), timeoutMs: 60_000 });
      assert.equal(r.status, 1, `exits 1 (a file that does not verify), not killed by the test's timeout: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`${rel.replace(/\./g, "\\.")}: sha256 [0-9a-f]{64} does not match the manifest's`));
      assert.match(r.stderr, /hint: /);
      assert.equal(existsSync(into), false, "DIR was new: no partial file, no .rlpipe-tmp-*, no half-restored step, not even DIR");
    });
  }

  it("rlpipe restore interrupted (Ctrl-C) exits 130 and leaves the directory as it was", async () => {
    const name = "run-interrupt";
    const dir = join(work, name);
    makeCheckpoints(dir, [1], 1, 40 * MiB);
    await new CheckpointSync({ run: name, store }).syncDir(dir);
    const into = join(work, `${name}-into`);
    const hold = (r: IncomingMessage) => r.method === "GET" && (r.url ?? "").includes("model_world_size_1_rank_0.pt");
    for (let i = 0; i < 3; i++) gw.faults.push({ kind: "hold", match: hold }); // the shard's ranges hang
    const child = spawn(process.execPath, [CLI, "restore", name, into], { env: storeEnv(), stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (b: Buffer) => { stderr += b.toString(); });
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const heldBefore = gw.stats.held;
    for (let waited = 0; gw.stats.held < heldBefore + 3; waited += 50) {
      assert.ok(waited < 60_000, "the shard's ranges are in flight");
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill("SIGINT");
    assert.equal(await exited, 130, stderr);
    assert.match(stderr, /restore interrupted/);
    gw.faults.splice(0, gw.faults.length);
    assert.equal(existsSync(into), false, "DIR was new: nothing of the step, no staging directory, no temporary file, not even DIR");
  });

  it("rlpipe restore refuses a directory that is not empty; --force replaces the step as a whole and says what it changed", async () => {
    const into = join(work, "occupied");
    mkdirSync(join(into, "global_step_20", "actor"), { recursive: true });
    mkdirSync(join(into, "global_step_55"), { recursive: true });
    writeFileSync(join(into, "global_step_20", "actor", "model_world_size_2_rank_1.pt"), "a shard of another run");
    writeFileSync(join(into, "global_step_20", "data.pt"), "old");
    writeFileSync(join(into, "latest_checkpointed_iteration.txt"), "55");
    const refused = await run(process.execPath, [CLI, "restore", "run-a", into, "--step", "20"], { env: storeEnv() });
    assert.equal(refused.status, 2, refused.stderr);
    assert.match(refused.stderr, /is not empty \(global_step_20, global_step_55, latest_checkpointed_iteration\.txt\)/);
    assert.match(refused.stderr, /hint: .*--force/);
    assert.equal(readFileSync(join(into, "latest_checkpointed_iteration.txt"), "utf8"), "55", "nothing touched");
    assert.equal(readFileSync(join(into, "global_step_20", "data.pt"), "utf8"), "old");

    const forced = await run(process.execPath, [CLI, "restore", "run-a", into, "--step", "20", "--force"], { env: storeEnv() });
    assert.equal(forced.status, 0, forced.stderr);
    const manifest = await new CheckpointSync({ run: "run-a", store }).manifest(20);
    assert.deepEqual(await listFiles(join(into, "global_step_20")), manifest.files.map((f) => f.path), "exactly the step's files: no foreign shard inside it");
    assert.equal(readFileSync(join(into, "latest_checkpointed_iteration.txt"), "utf8"), "20");
    assert.match(forced.stderr, /latest_checkpointed_iteration\.txt: 55 → 20 \(--force\)/);
    assert.match(forced.stderr, /still holds newer steps \(55\)/);
    assert.ok(existsSync(join(into, "global_step_55")), "other steps are left alone");
    assert.deepEqual(readdirSync(into).filter((n) => n.startsWith(".rlpipe")), []);
  });

  it("rlpipe checkpoints, metrics and restore of a run the store does not know: exit 2, 'no run named …'", async () => {
    for (const args of [["checkpoints", "no-such-run"], ["checkpoints", "no-such-run", "--json"], ["metrics", "no-such-run"], ["restore", "no-such-run", join(work, "nothing")]]) {
      const r = await run(process.execPath, [CLI, ...args], { env: storeEnv() });
      assert.equal(r.status, 2, `${args.join(" ")}: ${r.stderr}`);
      assert.match(r.stderr, /no run named no-such-run in s3:\/\/ckpt\/team\n {2}hint: check the run name/);
    }
    // A run that exists but has nothing committed yet is no error.
    await store.putBytes(layout.file("run-pending", 1, "data.pt"), "x");
    const known = await run(process.execPath, [CLI, "checkpoints", "run-pending"], { env: storeEnv() });
    assert.equal(known.status, 0, known.stderr);
    assert.match(known.stdout, /run run-pending: no committed checkpoints/);
  });

  it("rlpipe sync --watch: many passes add no listener each (no MaxListenersExceededWarning), and stop cleanly on SIGTERM", async () => {
    const dir = join(work, "watch");
    makeCheckpoints(dir, [1], 1, 1024);
    const storeDir = join(work, "watch-store");
    const child = spawn(process.execPath, [CLI, "sync", "run-watch", "--watch", dir, "--interval-s", "0", "--json", "--store", storeDir], { env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (b: Buffer) => { stdout += b.toString(); });
    child.stderr.on("data", (b: Buffer) => { stderr += b.toString(); });
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    for (let waited = 0; stdout.split("\n").length < 30; waited += 50) {
      assert.ok(waited < 60_000, `30 passes: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill("SIGTERM");
    assert.equal(await exited, 0, stderr);
    assert.doesNotMatch(stderr, /MaxListenersExceededWarning|memory leak/);
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

  it("retention keeps the last K and every M-th step; a step it would delete at once is not uploaded at all", async () => {
    const dir = join(work, "ret");
    makeCheckpoints(dir, [10, 20, 30, 40, 50], 50, 1024);
    const sync = new CheckpointSync({ run: "run-ret", store, retention: { keepLast: 2, keepEvery: 20 } });
    const r = await sync.syncDir(dir);
    assert.deepEqual(r.committed, [20, 40, 50]);
    assert.deepEqual(r.retired, [10, 30]);
    assert.deepEqual(r.deleted, []);
    assert.deepEqual(await sync.committedSteps(), [20, 40, 50]);
    assert.deepEqual(await sync.retiredSteps(), [10, 30]);
    assert.deepEqual(await store.list(layout.stepPrefix("run-ret", 10)), []);
    // Newer steps: 50 falls out of the newest two (and is no multiple of 20): it is deleted — marker first, then the manifest, then its files.
    makeCheckpoints(dir, [60, 70], 70, 1024);
    const deletes: string[][] = [];
    const spy = new Proxy(store, { get: (t, p) => (p === "delete" || p === "putBytes" ? (...a: unknown[]) => { deletes.push(p === "delete" ? a[0] as string[] : [`put ${String(a[0])}`]); return (t[p] as (...x: unknown[]) => unknown).apply(t, a); } : (t as unknown as Record<string | symbol, unknown>)[p]) });
    const r2 = await new CheckpointSync({ run: "run-ret", store: spy as S3Store, retention: { keepLast: 2, keepEvery: 20 } }).syncDir(dir);
    assert.deepEqual([r2.committed, r2.deleted], [[60, 70], [50]]);
    const order = deletes.flat().filter((k) => k.includes("global_step_50"));
    assert.equal(order[0], `put ${layout.retired("run-ret", 50)}`, "the decision is recorded first");
    assert.equal(order[1], layout.manifest("run-ret", 50), "then the step disappears for readers");
    assert.deepEqual(await store.list(layout.stepPrefix("run-ret", 50)), []);
  });

  it("--keep-last with verl keeping every step on disk: several passes upload each step at most once (retired steps are remembered in the store)", async () => {
    const dir = join(work, "keep");
    const { results: [p1, p2, p3, p4], from, lastFrom: before4 } = await passesKeepingEveryStep(gw, dir, async () => {
      const r = await run(process.execPath, [CLI, "sync", "run-keep", "--watch", dir, "--once", "--keep-last", "2", "--json"], { env: storeEnv() });
      assert.equal(r.status, 0, r.stderr);
      return JSON.parse(r.stdout) as { committed: number[]; deleted: number[]; retired: number[] };
    });
    assert.deepEqual([p1.committed, p2.committed, p3.committed, p4.committed], [[2, 3], [4], [5], []]);
    assert.deepEqual([p1.deleted, p2.deleted, p3.deleted, p4.deleted], [[], [2], [3], []]);
    assert.deepEqual(p4.retired, [1, 2, 3]);
    assert.deepEqual(uploadsPerStep(gw.log.slice(from), "run-keep"), [[2, 1], [3, 1], [4, 1], [5, 1]], "each step's files went up once at most (step 1 never)");
    assert.deepEqual(gw.log.slice(before4).filter((r) => r.method === "PUT" || r.method === "POST"), [], "a pass with nothing new writes nothing");
    assert.deepEqual(await assertCommittedIntact(store, "run-keep", dir), [4, 5]);
  });

  it("an interrupted step resumes without re-sending the files already stored (only the one in flight, from its stored parts)", async () => {
    const dir = join(work, "resume");
    makeThreeShardStep(dir);
    // The third shard's parts never get an answer: the uploader is killed while they are in flight.
    await killWhileThirdShardHeld(gw, () => spawn(process.execPath, [CLI, "sync", "run-resume", "--watch", dir, "--once"], { env: storeEnv(), stdio: "ignore" }), { match: isThirdShardPart, count: 6 });
    assert.deepEqual(await new CheckpointSync({ run: "run-resume", store }).committedSteps(), [], "nothing committed: the step is invisible");
    const restartFrom = gw.log.length;
    const bytesBefore = gw.stats.bytesIn;
    const again = await run(process.execPath, [CLI, "sync", "run-resume", "--watch", dir, "--once", "--json"], { env: storeEnv() });
    assert.equal(again.status, 0, again.stderr);
    const sent = gw.stats.bytesIn - bytesBefore;
    const resent = gw.log.slice(restartFrom).filter((r) => r.method === "PUT" && /rank_[01]\.pt$/.test(r.path));
    assert.deepEqual(resent, [], "the shards stored before the kill were not sent again");
    assert.ok(sent <= 20 * MiB + 64 * 1024, `the restart sent ${sent} bytes: the shard in flight and the small files, no more`);
    const report = JSON.parse(again.stdout) as { bytesReused: number; bytesUploaded: number };
    assert.ok(report.bytesReused >= 40 * MiB, `reported as reused: ${report.bytesReused}`);
    assert.deepEqual(await assertCommittedIntact(store, "run-resume", dir), [1]);
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

    it("retention through the runs function remembers what it retired (the same markers rlpipe sync writes and honours)", async () => {
      const dir = join(work, "side-keep");
      makeCheckpoints(dir, [2, 4], 4, 1024);
      const r = await sidecar("run-side-keep", dir, ["--keep-last", "1"]);
      assert.equal(r.status, 0, r.stderr);
      const state = await (await fetch(`${fn.url}/v1/runs/run-side-keep/state`, { headers: { authorization: `Bearer ${runToken(SECRET, "run-side-keep")}` } })).json() as { committed: number[]; retired: number[] };
      assert.deepEqual([state.committed, state.retired], [[4], [2]]);
      // rlpipe sync on the same run and directory uploads nothing: step 2 is retired, step 4 committed.
      const from = gw.log.length;
      const again = await run(process.execPath, [CLI, "sync", "run-side-keep", "--watch", dir, "--once", "--keep-last", "1", "--json"], { env: storeEnv() });
      assert.equal(again.status, 0, again.stderr);
      assert.deepEqual(JSON.parse(again.stdout).retired, [2]);
      assert.deepEqual(gw.log.slice(from).filter((x) => x.method === "PUT" || x.method === "POST"), []);
    });

    it("--keep-last with verl keeping every step on disk: several passes upload each step at most once (the function remembers retired steps)", async () => {
      const dir = join(work, "side-passes");
      const { from, lastFrom: before4 } = await passesKeepingEveryStep(gw, dir, async () => {
        const r = await sidecar("run-side-passes", dir, ["--keep-last", "2"]);
        assert.equal(r.status, 0, r.stderr);
      });
      assert.deepEqual(uploadsPerStep(gw.log.slice(from), "run-side-passes"), [[2, 1], [3, 1], [4, 1], [5, 1]], "each step's files went up once at most (step 1 never)");
      assert.deepEqual(gw.log.slice(before4).filter((r) => r.method !== "GET" && r.method !== "HEAD"), [], "a pass with nothing new writes nothing");
      const state = await (await fetch(`${fn.url}/v1/runs/run-side-passes/state`, { headers: { authorization: `Bearer ${runToken(SECRET, "run-side-passes")}` } })).json() as { committed: number[]; retired: number[] };
      assert.deepEqual([state.committed, state.retired], [[4, 5], [1, 2, 3]]);
      assert.deepEqual(await new CheckpointSync({ run: "run-side-passes", store }).retiredSteps(), [1, 2, 3]);
      assert.deepEqual(await assertCommittedIntact(store, "run-side-passes", dir), [4, 5]);
    });

    it("a step rlpipe sync retired is not uploaded by the sidecar (the function's state lists it)", async () => {
      const dir = join(work, "side-node-retired");
      makeCheckpoints(dir, [1, 2], 2, 1024);
      const node = await new CheckpointSync({ run: "run-side-nr", store, retention: { keepLast: 1 } }).syncDir(dir);
      assert.deepEqual([node.committed, node.retired], [[2], [1]]);
      const from = gw.log.length;
      const r = await sidecar("run-side-nr", dir); // no retention of its own: only the marker keeps step 1 out
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(gw.log.slice(from).filter((x) => x.method !== "GET" && x.method !== "HEAD"), [], "nothing written");
      assert.deepEqual(await assertCommittedIntact(store, "run-side-nr", dir), [2]);
    });

    it("killed (SIGKILL) in the middle of an uncommitted step, restarted: the files already stored are not sent again", async () => {
      const dir = join(work, "side-resume");
      makeThreeShardStep(dir);
      // The third shard's parts never get an answer: the sidecar is killed while they are in flight.
      await killWhileThirdShardHeld(gw, () => spawn("/usr/bin/python3", [SIDECAR, "--url", fn.url, "--run", "run-side-resume", "--dir", dir, "--once", "--part-size-mb", "8"], {
        env: { PATH: "/usr/bin:/bin", RLPIPE_RUN_TOKEN: runToken(SECRET, "run-side-resume") }, stdio: "ignore",
      }), { match: isThirdShardPart, count: 3 });
      assert.deepEqual(await new CheckpointSync({ run: "run-side-resume", store }).committedSteps(), [], "nothing committed: the step is invisible");
      const restartFrom = gw.log.length;
      const again = await sidecar("run-side-resume", dir);
      assert.equal(again.status, 0, again.stderr);
      const puts = gw.log.slice(restartFrom).filter((r) => r.method === "PUT");
      assert.deepEqual(puts.filter((r) => /rank_[01]\.pt$/.test(r.path) || r.path.endsWith("extra_state.pt")), [], "the files stored before the kill were not sent again");
      const sent = puts.reduce((n, r) => n + r.bytes, 0);
      assert.ok(sent <= 20 * MiB + 64 * 1024, `the restart sent ${sent} bytes: the shard in flight and the manifest, no more`);
      assert.match(again.stderr, /3 files already stored/);
      assert.deepEqual(await assertCommittedIntact(store, "run-side-resume", dir), [1]);
    });

    it("the runs function's protocol: state lists the stored files of uncommitted steps (this run's only), retire checks retention's decision, a retired step is never committed again", async () => {
      const headers = (run: string, token = runToken(SECRET, run)) => ({ "content-type": "application/json", authorization: `Bearer ${token}` });
      const post = (run: string, op: string, body: unknown, token?: string) => fetch(`${fn.url}/v1/runs/${run}/${op}`, { method: "POST", headers: headers(run, token), body: JSON.stringify(body) });
      type State = { committed: number[]; retired: number[]; uncommitted: { step: number; files: { path: string; size: number; etag: string }[] }[] };
      const state = async (run: string) => await (await fetch(`${fn.url}/v1/runs/${run}/state`, { headers: headers(run) })).json() as State;
      const dir = join(work, "proto");
      makeCheckpoints(dir, [5, 7], 7, 1024);
      await new CheckpointSync({ run: "run-proto", store }).commitStep(join(dir, "global_step_5"), 5);
      const data7 = join(dir, "global_step_7", "data.pt");
      await store.putFile(layout.file("run-proto", 7, "data.pt"), data7); // step 7: one file stored, no manifest
      await store.putFile(layout.file("run-proto2", 7, "other.pt"), data7); // another run whose name extends this one
      const md5 = createHash("md5").update(readFileSync(data7)).digest("hex");
      assert.deepEqual(await state("run-proto"), { run: "run-proto", committed: [5], retired: [], uncommitted: [{ step: 7, files: [{ path: "data.pt", size: 100, etag: md5 }] }], metrics: {} });

      assert.equal((await post("run-proto", "retire", { step: 3, keep: { last: 1 } }, runToken(SECRET, "run-proto2"))).status, 401, "a token opens only its own run");
      assert.equal((await post("run-proto", "retire", { step: 3, keep: {} })).status, 422, "a policy is needed");
      const committed = await post("run-proto", "retire", { step: 5, keep: { last: 1 } });
      assert.equal(committed.status, 409);
      assert.match(((await committed.json()) as { detail: string }).detail, /step 5 is committed/);
      const kept = await post("run-proto", "retire", { step: 9, keep: { last: 1 } });
      assert.equal(kept.status, 409, "keep-last 1 keeps a step newer than the committed one");
      assert.match(((await kept.json()) as { detail: string }).detail, /keeps step 9; upload it instead/);
      const retired = await post("run-proto", "retire", { step: 3, keep: { last: 1 } });
      assert.equal(retired.status, 200);
      const marker = (await store.get(layout.retired("run-proto", 3))).toString("utf8");
      assert.equal(marker, retiredRecord(3, { keepLast: 1 }, new Date((JSON.parse(marker) as { retiredAt: string }).retiredAt), false), "the marker rlpipe sync writes");
      assert.equal((await post("run-proto", "retire", { step: 3, keep: { last: 1 } })).status, 200, "retiring again is no error");

      await store.putFile(layout.file("run-proto", 3, "data.pt"), data7);
      const again = await post("run-proto", "commit", { step: 3, files: [{ path: "data.pt", size: 100, sha256: createHash("sha256").update(readFileSync(data7)).digest("hex") }] });
      assert.equal(again.status, 409);
      assert.equal(((await again.json()) as { retired?: boolean }).retired, true);
      assert.equal(await store.head(layout.manifest("run-proto", 3)), undefined, "no manifest for the retired step");
      const after = await state("run-proto");
      assert.deepEqual([after.committed, after.retired, after.uncommitted.map((u) => u.step)], [[5], [3], [7]], "a retired step's leftovers are not offered for resuming");
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
    for (let trial = 0; trial < 20; trial++) {
      const name = `kill-${trial}`;
      const dir = join(work, name);
      makeCheckpoints(dir, [1, 2, 3], 3, 17 * MiB);
      const python = trial % 2 === 1;
      const args = python
        ? ["/usr/bin/python3", [SIDECAR, "--url", fn.url, "--run", name, "--dir", dir, "--once", "--part-size-mb", "8"]] as const
        : [process.execPath, [CLI, "sync", name, "--watch", dir, "--once", "--json"]] as const;
      const env = python ? { PATH: "/usr/bin:/bin", RLPIPE_RUN_TOKEN: runToken(SECRET, name) } : storeEnv();
      const logFrom = gw.log.length;
      // Kill points are events at the server, not times (a busy machine must not move them): half the trials die as
      // their k-th request of any kind reaches the gateway, the other half as the server stores their k-th part (of
      // 9: three steps of 8 + 8 + 1 MiB) before they hear of it, which always leaves an upload with a stored part.
      const onStoredPart = trial % 4 === 1 || trial % 4 === 2;
      const k = 1 + Math.floor(rnd() * (onStoredPart ? 9 : 30));
      const mark = gw.connectionsAccepted();
      const child = spawn(args[0], [...args[1]], { env, stdio: "ignore" });
      const exited = new Promise((r) => child.once("exit", r)); // registered now: the child may finish before the kill
      let seen = 0;
      const killAt = (hit: boolean) => { if (hit && ++seen === k) child.kill("SIGKILL"); };
      // (While the child runs, every request the gateway gets is the child's, or the function's on its behalf.)
      if (onStoredPart) gw.onUpstreamAnswer = (_, status, req) => killAt(isUploadPart(req) && status === 200);
      else gw.onRequest = () => killAt(true);
      await exited;
      gw.onRequest = gw.onUpstreamAnswer = undefined;
      await gw.settled(mark); // what reached the server before the kill is stored before anything is checked
      const where = `${python ? "python" : "node"}, killed at ${onStoredPart ? "its stored part" : "its request"} ${k}`;
      const visible = await assertCommittedIntact(store, name, dir);
      assert.ok(visible.every((s) => [1, 2, 3].includes(s)));
      const again = await run(args[0], [...args[1]], { env });
      assert.equal(again.status, 0, `trial ${trial} (${where}): ${again.stderr}`);
      assert.deepEqual(await assertCommittedIntact(store, name, dir), [1, 2, 3], `trial ${trial} (${where})`);
      // Across the kill, every file went up once, plus at most the parts that were in flight: rlpipe sync's 8 × 8 MiB;
      // for the sidecar, a part the server received whole is kept (the function resumes from it), so one at most.
      const sent = gw.log.slice(logFrom).filter((r) => r.method === "PUT" && r.path.includes(`/${name}/`)).reduce((n, r) => n + r.bytes, 0);
      const stepBytes = 3 * (17 * MiB + 4096 + 100) + 64 * 1024;
      assert.ok(sent <= stepBytes + (python ? 8 : 8 * 8) * MiB, `trial ${trial} (${where}): ${(sent / MiB).toFixed(1)} MiB sent for ${(stepBytes / MiB).toFixed(1)} MiB of checkpoints`);
      // A kill on a stored part left that part's upload unfinished: the restart resumes it and says so.
      if (onStoredPart && python) assert.match(again.stderr, /resuming an interrupted upload \([1-3] of 3 parts stored\)/, `trial ${trial} (${where})`);
      if (onStoredPart && !python) assert.ok((JSON.parse(again.stdout) as { bytesReused: number }).bytesReused >= MiB, `trial ${trial} (${where}): the restart reports the stored parts as reused: ${again.stdout}`);
    }
  });
});
