// rlpipe_sync.py's store mode, as managed targets run it: straight to an S3 API behind a strict gateway (SigV4 and
// Content-MD5 checked, faults injected) with the job's credentials, and into a directory an output channel
// uploads. The result must be what `rlpipe checkpoints` / `restore` / `metrics` read: the same layout and manifests
// as the Node sync, each manifest written after its files, retention applied, a retired step never uploaded again.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { type Dirent, appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { CheckpointSync, listFiles } from "../adapters/storage/checkpoint-sync.js";
import { FsStore } from "../adapters/storage/fs.js";
import { readMetricChunks } from "../adapters/storage/metrics-sync.js";
import { S3Store } from "../adapters/storage/s3.js";
import { layout, retiredRecord, stepsToDelete } from "../core/checkpoints.js";
import { mergeMetrics } from "../core/metrics.js";
import { assertCommittedIntact, isThirdShardPart, killWhileThirdShardHeld, makeCheckpoints, makeThreeShardStep, passesKeepingEveryStep, run, uploadsPerStep } from "./checkpoint-helpers.js";
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

  it("--keep-last with verl keeping every step on disk: several passes upload each step at most once, newest first, retired steps remembered in the store", async () => {
    const dir = join(work, "keep");
    const { from, lastFrom: before4 } = await passesKeepingEveryStep(gw, dir, async () => {
      const r = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-keep.rl", "--dir", dir, "--once", "--keep-last", "2", "--part-size-mb", "8"]);
      assert.equal(r.status, 0, r.stderr);
    });
    assert.deepEqual(uploadsPerStep(gw.log.slice(from), "job-keep.rl"), [[2, 1], [3, 1], [4, 1], [5, 1]], "each step's files went up once at most (step 1 never: retention would have deleted it at once)");
    assert.deepEqual(gw.log.slice(before4).filter((r) => r.method === "PUT" || r.method === "POST" || r.method === "DELETE"), [], "a pass with nothing new writes nothing");
    const sync = new CheckpointSync({ run: "job-keep.rl", store });
    assert.deepEqual(await sync.retiredSteps(), [1, 2, 3], "rlpipe's reader sees the sidecar's retirement markers");
    assert.deepEqual(await assertCommittedIntact(store, "job-keep.rl", dir), [4, 5]);
    // The markers are byte for byte what rlpipe sync writes.
    for (const [step, committed] of [[1, false], [2, true], [3, true]] as const) {
      const text = (await store.get(layout.retired("job-keep.rl", step))).toString("utf8");
      const m = JSON.parse(text) as { retiredAt: string };
      assert.equal(text, retiredRecord(step, { keepLast: 2 }, new Date(m.retiredAt), committed), `step ${step}'s marker`);
    }
  });

  it("killed (SIGKILL) in the middle of an uncommitted step, restarted: the files already stored are not sent again, the one in flight resumes from its parts", async () => {
    const dir = join(work, "resume");
    makeThreeShardStep(dir);
    const args = ["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-resume.rl", "--dir", dir, "--once", "--part-size-mb", "8"];
    // The second part of the third shard to arrive (parts go in parallel) never gets an answer: the sidecar is killed while it is in flight.
    let thirdParts = 0;
    const from = await killWhileThirdShardHeld(gw, () => spawn("python3", [SIDECAR, ...args], { env: jobEnv(), stdio: "ignore" }), { match: (r) => isThirdShardPart(r) && ++thirdParts === 2, count: 1 });
    assert.deepEqual(await new CheckpointSync({ run: "job-resume.rl", store }).committedSteps(), [], "nothing committed: the step is invisible");
    // What the server holds of the third shard when the sidecar died (its other parts go in parallel with the held
    // one, so one may or may not have landed): the restart must send exactly the rest.
    const partOfThird = gw.log.slice(from).find((r) => r.method === "PUT" && r.path.endsWith("rank_2.pt") && /uploadId=/.test(r.query))!;
    const thirdKey = partOfThird.path.slice(partOfThird.path.indexOf("/runs/") + "/runs/".length);
    const uploadId = new URLSearchParams(partOfThird.query).get("uploadId")!;
    const storedOfThird = (await store.listParts(thirdKey, uploadId)).reduce((n, part) => n + part.size, 0);
    assert.ok(storedOfThird < 20 * MiB, "the held part was not stored");
    const restartFrom = gw.log.length;
    const again = await sidecar(args);
    assert.equal(again.status, 0, again.stderr);
    const puts = gw.log.slice(restartFrom).filter((r) => r.method === "PUT");
    assert.deepEqual(puts.filter((r) => /rank_[01]\.pt$/.test(r.path) || r.path.endsWith("extra_state.pt")), [], "the files stored before the kill were not sent again");
    const sent = puts.reduce((n, r) => n + r.bytes, 0);
    const unsent = 20 * MiB - storedOfThird;
    assert.ok(sent >= unsent && sent <= unsent + 64 * 1024, `the restart sent ${sent} bytes: the third shard's ${unsent} bytes not yet stored and the manifest, no more`);
    assert.match(again.stderr, /3 files already stored/);
    assert.match(again.stderr, /rank_2.pt: resuming an interrupted upload \(\d of 3 parts stored\)/);
    assert.deepEqual(await assertCommittedIntact(store, "job-resume.rl", dir), [1]);
  });

  it("retirement markers are shared: one the Node uploader wrote stops the sidecar from uploading that step, and one the sidecar wrote stops rlpipe sync", async () => {
    // rlpipe sync retires step 1 (keep-last 1: it would delete it at once) and commits step 2.
    const dir = join(work, "shared");
    makeCheckpoints(dir, [1, 2], 2, 1024);
    const node = await new CheckpointSync({ run: "job-shared.rl", store, retention: { keepLast: 1 } }).syncDir(dir);
    assert.deepEqual([node.committed, node.retired], [[2], [1]]);
    // The sidecar, without any retention of its own, on the same directory: nothing to upload.
    const from = gw.log.length;
    const py = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-shared.rl", "--dir", dir, "--once"]);
    assert.equal(py.status, 0, py.stderr);
    assert.deepEqual(gw.log.slice(from).filter((r) => r.method !== "GET" && r.method !== "HEAD"), [], "step 1 is retired and step 2 committed: nothing written");
    // The sidecar retires steps 2 and 3 (keep-last 1, steps 3 and 4 new); rlpipe sync then uploads nothing of them.
    makeCheckpoints(dir, [3, 4], 4, 1024);
    const py2 = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-shared.rl", "--dir", dir, "--once", "--keep-last", "1"]);
    assert.equal(py2.status, 0, py2.stderr);
    const sync = new CheckpointSync({ run: "job-shared.rl", store });
    assert.deepEqual([await sync.committedSteps(), await sync.retiredSteps()], [[4], [1, 2, 3]]);
    const from2 = gw.log.length;
    const again = await sync.syncDir(dir); // no retention: only the markers keep it from uploading 1, 2 and 3
    assert.deepEqual([again.committed, again.retired], [[], [1, 2, 3]]);
    assert.deepEqual(gw.log.slice(from2).filter((r) => r.method === "PUT" || r.method === "POST"), []);
  });

  it("an uncommitted step one uploader left is finished by the other without re-sending its files (either part size's ETag, or the stored SHA-256)", async () => {
    const stepFiles = (dir: string) => listFiles(join(dir, "global_step_1"));
    const stepPuts = (from: number, runName: string) => gw.log.slice(from).filter((r) => r.method === "PUT" && r.path.includes(`/${runName}/checkpoints/global_step_1/`));
    // rlpipe sync stored every file of step 1 (8 MiB parts: the 20 MiB shard has a 3-part ETag) and was killed
    // before the manifest; the sidecar, with its default 16 MiB parts, commits the step without sending them again.
    const a = join(work, "cross-a");
    makeCheckpoints(a, [1], 1, 20 * MiB);
    for (const rel of await stepFiles(a)) await store.putFile(layout.file("job-cross-a.rl", 1, rel), join(a, "global_step_1", ...rel.split("/")));
    const fromA = gw.log.length;
    const py = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-cross-a.rl", "--dir", a, "--once"]);
    assert.equal(py.status, 0, py.stderr);
    assert.deepEqual(stepPuts(fromA, "job-cross-a.rl"), [], "nothing of step 1 sent again");
    assert.match(py.stderr, /step 1: 4 files already stored/);
    assert.deepEqual(await assertCommittedIntact(store, "job-cross-a.rl", a), [1]);
    // The other way: the sidecar's 2-part upload matches no ETag rlpipe sync would produce, but the SHA-256 it
    // stored with the object does.
    const b = join(work, "cross-b");
    makeCheckpoints(b, [1], 1, 20 * MiB);
    const first = await sidecar(["--store", "cos://ckpt-1251234567/runs", "--region", "ap-shanghai", "--run", "job-cross-b.rl", "--dir", b, "--once"]);
    assert.equal(first.status, 0, first.stderr);
    await store.delete([layout.manifest("job-cross-b.rl", 1)]); // as if killed before the manifest
    const fromB = gw.log.length;
    const node = await new CheckpointSync({ run: "job-cross-b.rl", store }).syncDir(b);
    assert.deepEqual(node.committed, [1]);
    assert.deepEqual(stepPuts(fromB, "job-cross-b.rl"), [], "nothing of step 1 sent again");
    assert.equal(node.bytesUploaded, 0);
    assert.deepEqual(await assertCommittedIntact(store, "job-cross-b.rl", b), [1]);
  });

  it("decides retention as rlpipe does (random policies and step sets) and parses as Python 3.8", async () => {
    const rnd = (() => { let a = 7; return () => { a = (a * 1103515245 + 12345) % 2 ** 31; return a / 2 ** 31; }; })();
    const cases = Array.from({ length: 300 }, () => {
      const committed = Array.from({ length: Math.floor(rnd() * 12) }, () => Math.floor(rnd() * 40));
      const last = rnd() < 0.7 ? 1 + Math.floor(rnd() * 5) : undefined;
      const every = rnd() < 0.4 ? 1 + Math.floor(rnd() * 10) : undefined;
      return { committed, keep: { ...(last === undefined ? {} : { last }), ...(every === undefined ? {} : { every }) } };
    });
    const script = [
      "import ast, json, sys",
      `sys.path.insert(0, ${JSON.stringify(join(ROOT, "recipes", "python"))})`,
      `ast.parse(open(${JSON.stringify(SIDECAR)}).read(), feature_version=(3, 8))`,
      "import rlpipe_sync",
      "print(json.dumps([rlpipe_sync.steps_to_delete(c['committed'], c['keep']) for c in json.load(sys.stdin)]))",
    ].join("\n");
    const child = spawn("python3", ["-c", script], { stdio: ["pipe", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => { out += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { err += d.toString(); });
    child.stdin.end(JSON.stringify(cases));
    assert.equal(await new Promise((r) => child.once("close", r)), 0, err);
    const python = JSON.parse(out) as number[][];
    cases.forEach((c, i) => assert.deepEqual(python[i], stepsToDelete(c.committed, { ...(c.keep.last === undefined ? {} : { keepLast: c.keep.last }), ...(c.keep.every === undefined ? {} : { keepEvery: c.keep.every }) }), JSON.stringify(c)));
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

  it("into a directory, killed before the manifest: on restart the hard links already in place count as stored (not linked again)", async () => {
    const dir = join(work, "relink");
    const staging = join(work, "staging-relink");
    makeCheckpoints(dir, [7], 7, 2 * MiB);
    const args = ["--store", `file://${staging}`, "--settle-s", "3600", "--run", "job-relink.rl", "--dir", dir, "--interval", "0.2"];
    const child = spawn("python3", [SIDECAR, ...args], { env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    const exited = new Promise((r) => child.once("exit", r));
    for (let waited = 0; !/committing after/.test(stderr); waited += 50) {
      assert.ok(waited < 60_000, stderr);
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill("SIGKILL"); // the held-back manifest is lost with the process
    await exited;
    const stepDir = join(staging, "job-relink.rl", "checkpoints", "global_step_7");
    const staged = listTree(stepDir).map((rel) => ({ rel, st: statSync(join(stepDir, rel), { bigint: true }) }));
    assert.equal(staged.length, 4);
    assert.ok(!existsSync(join(staging, "job-relink.rl", "checkpoints", "global_step_7.manifest.json")));
    const r = await run("python3", [SIDECAR, ...args, "--once"], { env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" } });
    assert.equal(r.status, 0, r.stderr);
    for (const { rel, st } of staged) {
      const now = statSync(join(stepDir, rel), { bigint: true });
      assert.equal(now.ino, statSync(join(dir, "global_step_7", rel), { bigint: true }).ino, `${rel}: still the training file's inode`);
      assert.equal(now.ctimeNs, st.ctimeNs, `${rel}: not linked again (a new link changes the inode's ctime)`);
    }
    assert.match(r.stderr, /4 files already stored/);
    const fs = new FsStore(staging);
    try {
      assert.deepEqual(await new CheckpointSync({ run: "job-relink.rl", store: fs }).committedSteps(), [7]);
    } finally {
      await fs.close();
    }
  });
});

function listTree(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as Dirent[]).filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name))).sort();
}

function writeMetrics(file: string, from: number, to: number): void {
  mkdirSync(join(file, ".."), { recursive: true });
  for (let s = from; s <= to; s++) appendFileSync(file, `${JSON.stringify({ step: s, data: { "critic/score/mean": s / 10, "actor/pg_loss": 1 / s } })}\n`);
}
