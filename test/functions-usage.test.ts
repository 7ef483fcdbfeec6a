// The reward function as a cloud function counts per-run usage like `rlpipe serve --usage-store` and, with
// RLPIPE_USAGE_STORE, writes this instance's record to the store before it answers: through the Lambda adapter
// (role credentials AWS_*, s3://) and the SCF adapter (role credentials TENCENTCLOUD_* become COS_*, cos://) against
// moto on 127.0.0.1, with the sandbox on the strict E2B fakes. The reader `rlpipe cost --run` uses sums it with
// another instance's record. Without the variable nothing is written and the meter has no store.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { S3Store } from "../adapters/storage/s3.js";
import { parseStoreUri } from "../adapters/storage/store.js";
import { type UsageRecord, usageLayout } from "../core/run-usage.js";
import { makeRewardApp } from "../functions/apps/reward.js";
import { lambdaHandler } from "../functions/platforms/lambda.js";
import { scfHandler } from "../functions/platforms/scf.js";
import { readRunUsage } from "../functions/run-cost.js";
import type { UsageMeter } from "../functions/usage-meter.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { eventFor, parseResult } from "./fakes/platform-events.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const T = { timeout: 90_000 };
const E2B_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const TOKEN = randomBytes(24).toString("hex");
const GT = JSON.stringify({ input: ["1 2", "5 5"], output: ["3", "10"], fn_name: null, type: "stdin_stdout" });
const A_PLUS_B = "```python\na, b = map(int, input().split())\nprint(a + b)\n```";
const BUCKET = "rlpipe-usage-1250000000";

describe("the reward function as a cloud function writes per-run usage to RLPIPE_USAGE_STORE", () => {
  let moto: Moto;
  let fake: FakeE2B;
  const sandboxEnv = () => ({
    RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost", RLPIPE_SANDBOX_CONCURRENCY: "2",
    RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY,
  });
  const reader = (prefix: string) => S3Store.fromUri(parseStoreUri(`s3://${BUCKET}/${prefix}`), {
    S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
  });
  const rewards = (run: string | undefined, samples: unknown[]) => ({
    method: "POST", path: "/v1/rewards", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...(run === undefined ? {} : { "x-rlpipe-run": run }) }, body: { samples },
  });
  const samples = [
    { data_source: "code", solution_str: A_PLUS_B, ground_truth: GT },
    { data_source: "code", solution_str: A_PLUS_B, ground_truth: GT },
    { data_source: "code", solution_str: "```python\nprint(0)\n```", ground_truth: GT },
  ];

  before(async () => {
    moto = await startMoto();
    assert.equal((await fetch(`${moto.endpoint}/${BUCKET}`, { method: "PUT" })).status, 200);
    fake = await FakeE2B.start({ apiKey: E2B_KEY });
  });
  after(async () => {
    await fake?.close();
    await moto?.stop();
  });

  it("Lambda: each counted /v1/rewards is in the store when it answers (samples, programs, sandbox seconds, memory); cost --run's reader sums it with another instance's record", T, async () => {
    const run = "usage-fn-lambda-1";
    const meters: UsageMeter[] = [];
    const lines: string[] = [];
    const h = lambdaHandler(makeRewardApp({ onMeter: (m) => meters.push(m) }), {
      env: {
        ...sandboxEnv(), RLPIPE_USAGE_STORE: `s3://${BUCKET}/lambda-usage`, AWS_LAMBDA_FUNCTION_MEMORY_SIZE: "1024",
        S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
      },
      log: (l) => lines.push(l),
    });
    const ctx = { awsRequestId: "req-1", functionName: "rlpipe-reward" };
    const ping = parseResult(await h(eventFor("lambda", { method: "GET", path: "/v1/ping" }), ctx));
    assert.equal(ping.status, 200);
    assert.equal(meters.length, 1);
    const meter = meters[0]!;
    assert.match(meter.instance, /^lambda-\d+-[0-9a-f]{12}$/, "a random instance id per cold start");
    assert.ok(lines.some((l) => l.includes(`usage → s3://${BUCKET}/lambda-usage/<run>/usage/${meter.instance}.json`)), lines.join("\n"));
    const store = reader("lambda-usage");
    try {
      assert.deepEqual(await store.list(usageLayout.prefix(run)), [], "nothing written before a counted request");

      const first = parseResult(await h(eventFor("lambda", rewards(run, samples)), ctx));
      assert.equal(first.status, 200, JSON.stringify(first.body));
      // Read right after the answer, with no flush: the write finished before the answer went out.
      const listed = await store.list(usageLayout.prefix(run));
      assert.deepEqual(listed.map((o) => o.key), [usageLayout.object(run, meter.instance)]);
      const rec = JSON.parse((await store.get(listed[0]!.key)).toString("utf8")) as UsageRecord;
      assert.equal(rec.platform, "lambda");
      assert.equal(rec.sandbox, "e2b");
      assert.equal(rec.memoryMb, 1024);
      assert.equal(rec.counters.requests, 1);
      assert.equal(rec.counters.rewardRequests, 1);
      assert.equal(rec.counters.samples, 3);
      assert.equal(rec.counters.evaluated, 2, "the repeated answer runs once");
      assert.equal(rec.counters.cacheHits, 1);
      assert.ok(rec.counters.sandboxSeconds > 0, "sandbox time of the programs run");
      assert.equal(rec.counters.sandboxSeconds, Math.round(first.body.stats.sandboxSeconds * 1000) / 1000);
      assert.ok(rec.counters.functionSeconds > 0);

      // Cumulative in the same object; an unnamed request is not counted.
      const second = parseResult(await h(eventFor("lambda", rewards(run, samples.slice(0, 1))), ctx));
      assert.equal(second.status, 200);
      const unnamed = parseResult(await h(eventFor("lambda", rewards(undefined, samples.slice(0, 1))), ctx));
      assert.equal(unnamed.status, 200);
      const after2 = JSON.parse((await store.get(usageLayout.object(run, meter.instance))).toString("utf8")) as UsageRecord;
      assert.equal(after2.counters.requests, 2);
      assert.equal(after2.counters.samples, 4);
      assert.equal(after2.counters.cacheHits, 2, "the second batch's answer was cached");
      assert.equal(after2.counters.evaluated, 2);
      assert.deepEqual(after2, meter.snapshot(run));

      // Another instance of the same function (another cold start) has its own object; the reader sums both.
      const other: UsageRecord = { ...after2, instance: "lambda-7-0123456789ab", firstAt: "2026-01-01T00:00:00.000Z", counters: { ...after2.counters, samples: 10, sandboxSeconds: 2.5, requests: 5 } };
      await store.putBytes(usageLayout.object(run, other.instance), JSON.stringify(other));
      const { usage, problems } = await readRunUsage(store, run);
      assert.deepEqual(problems, []);
      assert.equal(usage?.instances, 2);
      assert.equal(usage?.counters.samples, 14);
      assert.equal(usage?.counters.requests, 7);
      assert.equal(usage?.counters.sandboxSeconds, Math.round((after2.counters.sandboxSeconds + 2.5) * 1000) / 1000);
      assert.equal(usage?.gbSeconds, Math.round(((after2.counters.functionSeconds + other.counters.functionSeconds) * 1024 / 1024) * 1000) / 1000);
      assert.deepEqual(usage?.sandboxes, ["e2b"]);
    } finally {
      await store.close();
    }
  });

  it("SCF: the role's temporary credentials (TENCENTCLOUD_*) write to a cos:// usage store", T, async () => {
    const run = "usage-fn-scf-1";
    const meters: UsageMeter[] = [];
    const h = scfHandler(makeRewardApp({ onMeter: (m) => meters.push(m) }), {
      env: {
        ...sandboxEnv(), RLPIPE_USAGE_STORE: `cos://${BUCKET}/scf-usage`, COS_ENDPOINT: moto.endpoint, COS_REGION: "ap-guangzhou",
        TENCENTCLOUD_SECRETID: TEST_CREDENTIALS.accessKeyId, TENCENTCLOUD_SECRETKEY: TEST_CREDENTIALS.secretAccessKey, TENCENTCLOUD_SESSIONTOKEN: "scf-role-session",
      },
      log: () => {},
    });
    const r = parseResult(await h(eventFor("scf", rewards(run, samples.slice(0, 1))), { request_id: "req-1", memory_limit_in_mb: 512 }));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const store = reader("scf-usage");
    try {
      const rec = JSON.parse((await store.get(usageLayout.object(run, meters[0]!.instance))).toString("utf8")) as UsageRecord;
      assert.equal(rec.platform, "scf");
      assert.equal(rec.memoryMb, 512);
      assert.equal(rec.counters.samples, 1);
      assert.equal(rec.counters.evaluated, 1);
    } finally {
      await store.close();
    }
  });

  it("without RLPIPE_USAGE_STORE: counted in memory (GET /v1/usage/<run>), nothing written, no store", T, async () => {
    const run = "usage-fn-nostore-1";
    const meters: UsageMeter[] = [];
    const h = lambdaHandler(makeRewardApp({ onMeter: (m) => meters.push(m) }), {
      env: { ...sandboxEnv(), S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey },
      log: () => {},
    });
    const r = parseResult(await h(eventFor("lambda", rewards(run, samples.slice(0, 1))), {}));
    assert.equal(r.status, 200);
    assert.equal(meters[0]!.sinkUrl, undefined, "no store configured");
    const live = parseResult(await h(eventFor("lambda", { method: "GET", path: `/v1/usage/${run}`, headers: { authorization: `Bearer ${TOKEN}` } }), {}));
    assert.equal(live.status, 200);
    assert.equal(live.body.counters.samples, 1);
    const store = reader("");
    try {
      assert.deepEqual((await store.list("")).filter((o) => o.key.includes(run)), [], "nothing in the bucket for the run");
    } finally {
      await store.close();
    }
  });

  it("a bad RLPIPE_USAGE_STORE fails the cold start naming the variable; file:// is refused", T, async () => {
    for (const [uri, why] of [["file:///tmp/usage", /RLPIPE_USAGE_STORE: must be s3:\/\/, obs:\/\/ or cos:\/\//], ["s3://B/x", /RLPIPE_USAGE_STORE: invalid bucket name/], ["gs://b/x", /RLPIPE_USAGE_STORE: unsupported store URI/]] as const) {
      const h = lambdaHandler(makeRewardApp(), { env: { ...sandboxEnv(), RLPIPE_USAGE_STORE: uri }, log: () => {} });
      const r = parseResult(await h(eventFor("lambda", { method: "GET", path: "/v1/ping" }), {}));
      assert.equal(r.status, 503, uri);
      assert.match(r.body.detail, why);
    }
  });

  it("a store that refuses the write costs a log line, never the reward", T, async () => {
    const run = "usage-fn-refused-1";
    const lines: string[] = [];
    const h = lambdaHandler(makeRewardApp(), {
      env: { ...sandboxEnv(), RLPIPE_USAGE_STORE: "s3://no-such-bucket-rlpipe/usage", S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey },
      log: (l) => lines.push(l),
    });
    const r = parseResult(await h(eventFor("lambda", rewards(run, samples.slice(0, 1))), {}));
    assert.equal(r.status, 200);
    assert.equal(r.body.results[0].score, 1);
    assert.ok(lines.some((l) => l.startsWith(`rlpipe: usage of run ${run} not written to s3://no-such-bucket-rlpipe/usage`)), lines.join("\n"));
  });
});
