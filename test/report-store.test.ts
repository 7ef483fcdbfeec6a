// The run's page lives with the run (issue 25 items 2 and 4): on the TI-ONE and ModelArts fakes the job really runs
// launch.sh, a gated verl stub writes its steps, and the real sync sidecar (rlpipe_sync.py) keeps
// <store>/<job>/report.html current on moto: it exists with the run name and the latest reward, it is rewritten
// when a new step is written (waited for as a condition, never a fixed sleep), a metric name carrying markup is
// escaped. `rlpipe report --url` prints a presigned GET URL (SigV4 query auth) that fetches the page on loopback; the
// console's report action answers with the page or that URL; a fetched page renders in headless Chromium. Then the
// same page from `rlpipe sync --page` (the Node sidecar of self-hosted providers), its rewrite bound, and a
// presigned URL's limits (no page yet, a file store).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { type BundleSink, deploy } from "../adapters/providers/provider.js";
import { createModelArtsAdapter } from "../adapters/providers/modelarts.js";
import { dirRunRecords, runsDir } from "../adapters/providers/run-records.js";
import { presignRunPageFor, runPageKey } from "../adapters/storage/run-page-store.js";

/** The page's presigned URL, as `rlpipe report --url` makes it (capped by the signing keys' expiry; these are static). */
const presignRunPage = async (store: Parameters<typeof presignRunPageFor>[0], job: string, s: number) => (await presignRunPageFor(store, job, s, { env: {} })).url;
import { S3Store } from "../adapters/storage/s3.js";
import { openStore, parseStoreUri } from "../adapters/storage/store.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { MAIN_SERIES } from "../core/metrics.js";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { handleConsoleEvent } from "../functions/console.js";
import { fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { JobRunner, stubContainerEnv, writeVerlStub } from "./fakes/job-runner.js";
import { FakeModelArts } from "./fakes/modelarts-fake.js";
import { TioneFake } from "./fakes/tione-fake.js";
import { makeCheckpoints } from "./checkpoint-helpers.js";
import { CLI, type Ran, runCliAsync } from "./cli-process.js";
import { runnableSeed } from "./run-outputs.js";
import { ROOT, recipeText, editYaml as edit } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";
import { chromium } from "./chromium.js";

const T = { timeout: 600_000 };
/** A metric name a job could write: it must reach the page as text, never as markup. */
const EVIL = `<script>alert("m")</script><img src=x onerror=alert(1)>/x`;
const BOUND_MS = 240_000;
/** A validation metric carrying that name: the job's page draws it, so the name is text inside an <svg>. */
const EVIL_VAL = `val-core/${EVIL}/acc/mean@1`;
const EVIL_ESCAPED = "&lt;script&gt;alert(&quot;m&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;/x";
const SIDECAR = join(ROOT, "recipes", "python", "rlpipe_sync.py");

/** Poll `probe` until it returns a value (a condition, not a delay): fail after a generous bound with what was seen. */
async function waitFor<V>(what: string, probe: () => Promise<V | undefined>, boundMs = BOUND_MS): Promise<V> {
  const end = Date.now() + boundMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what} after ${boundMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The page in the store when it matches `re`. */
const pageMatching = (store: S3Store, job: string, re: RegExp) => async (): Promise<string | undefined> => {
  try {
    const html = (await store.get(runPageKey(job))).toString("utf8");
    return re.test(html) ? html : undefined;
  } catch {
    return undefined;
  }
};

const cli = (args: string[], cwd: string, env: Record<string, string>): Promise<Ran> => runCliAsync(args, { cwd, env, timeoutMs: 240_000 });

/** No markup from a metric's name; where the page lists every metric (the job's page), its name shown as text. */
function assertEscaped(html: string, listed = true): void {
  assert.ok(!/<script\b/i.test(html), "no <script> in the page");
  assert.ok(!/<img\b/i.test(html), "no <img> in the page");
  if (listed) assert.ok(html.includes(EVIL_ESCAPED), "the metric's name is shown as text");
}

/** The job page's charts (rlpipe_sync.py): each <svg> by its aria-label. */
function jobCharts(html: string): Map<string, string> {
  return new Map([...html.matchAll(/<svg\b[^>]*aria-label="([^"]*)"[\s\S]*?<\/svg>/g)].map((m) => [m[1]!, m[0]]));
}

/**
 * The job's page at step `step` of the verl stub (reward step/10, response length 100+step, the validation metric
 * EVIL_VAL = step; actor/pg_loss is no main series): one chart per main series with ≥ 2 points, the latest reward
 * in its chart, the hostile name escaped inside the validation chart.
 */
function assertJobCharts(html: string, step: number): void {
  const charts = jobCharts(html);
  const training = ["reward (score mean)", "response length (mean tokens)", "validation"];
  const health = [...charts.keys()].filter((k) => k.startsWith("sandbox "));
  assert.deepEqual([...charts.keys()].filter((k) => !k.startsWith("sandbox ")), training, "one chart per main series with ≥ 2 points");
  assert.equal(html.split("<svg").length - 1, training.length + health.length, "nothing else is drawn");
  assert.ok(charts.get("reward (score mean)")!.includes(`latest <tspan font-weight="bold">${step / 10}</tspan> at step ${step}`), "the latest reward in its chart");
  const val = charts.get("validation")!;
  assert.ok(val.includes(EVIL_ESCAPED), "the hostile name, escaped, inside the SVG");
  assert.ok(!/<(script|img)\b/i.test(val), "no markup from it");
}

// ------------------------------------------------------------------------------------------------ TI-ONE

describe("TI-ONE: the job's sidecar keeps the run's page in COS; report --url and the console's report action serve it", () => {
  const SEED = "retool-qwen3-4b-tione-ags";
  const BUCKET = "rlpipe-bundles-1251234567";
  const SECRET_ID = fakeTencentSecretId();
  const SECRET_KEY = fakeTencentSecretKey();
  let moto: Moto;
  let fake: TioneFake;
  let runner: JobRunner;
  let dir: string;
  let admin: S3Store;
  const gate = () => join(dir, "gate");
  const cosEnv = () => ({ COS_ENDPOINT: moto.endpoint, COS_REGION: "ap-shanghai", COS_SECRET_ID: TEST_CREDENTIALS.accessKeyId, COS_SECRET_KEY: TEST_CREDENTIALS.secretAccessKey });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-page-tione-"));
    mkdirSync(gate());
    moto = await startMoto();
    admin = new S3Store({ scheme: "cos", bucket: BUCKET, prefix: "", region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    writeVerlStub(join(dir, "stub"));
    runner = new JobRunner({
      storeEndpoint: moto.endpoint, storeCredentials: TEST_CREDENTIALS, root: join(dir, "container"), platformPrefixes: ["/opt/ml", "/home/tione"],
      env: stubContainerEnv(dir, { COS_ENDPOINT: moto.endpoint, VERL_STUB_GATE: gate(), VERL_STUB_EXTRA_METRIC: EVIL_VAL, RLPIPE_PAGE_INTERVAL_S: "0" }),
    });
    fake = await TioneFake.start([{ secretId: SECRET_ID, secretKey: SECRET_KEY }], runner);
  });
  after(async () => {
    await fake.stop();
    await runner.close();
    await admin.close();
    await moto.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("deployed with the CLI: the page appears with the run and latest reward, is rewritten per step, stays after the end; --url fetches it; the console answers report", T, async () => {
    const work = join(dir, "work");
    mkdirSync(work);
    const text = edit(runnableSeed(recipeText(SEED), "tione", work), [
      [["targets", "tione", "runtimeEnv", "workingDir"], work],
      [["targets", "tione", "resourceGroupId"], "rsg-7k2p9q4m"], [["targets", "tione", "storage", "cfs"], "cfs-3fa9e2c1:/"],
      [["targets", "tione", "codeDir"], `cos://${BUCKET}/retool-qwen3-4b`], [["checkpoints", "intervalS"], 1],
    ]);
    const recipeFile = join(dir, "recipe.yaml");
    writeFileSync(recipeFile, text);
    const env = { HOME: dir, TENCENTCLOUD_SECRET_ID: SECRET_ID, TENCENTCLOUD_SECRET_KEY: SECRET_KEY, TIONE_ENDPOINT: fake.endpoint, ...cosEnv() };
    const d = await cli(["deploy", recipeFile, "--provider", "tione", "--yes", "--json"], dir, env);
    assert.equal(d.code, 0, d.err);
    const job = (JSON.parse(d.out.trim()) as { name: string }).name;
    const runs = new S3Store({ scheme: "cos", bucket: BUCKET, prefix: "retool-qwen3-4b/runs", region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    try {
      // Steps 1 and 2 are written; the stub waits at step 3 until the test has seen the page of step 2.
      const two = await waitFor("the page with step 2's reward", pageMatching(runs, job, /latest reward 0\.2 at step 2 /));
      assert.ok(two.includes(`<h1>${job} `), "the run name heads the page");
      assert.match(two, /phase is not known inside the job/, "it says what it cannot know");
      assertEscaped(two);
      assertJobCharts(two, 2);
      writeFileSync(join(gate(), "step-3"), "");
      const three = await waitFor("the page rewritten with step 3", pageMatching(runs, job, /latest reward 0\.3 at step 3 /));
      assert.match(three, /3 steps recorded/);
      writeFileSync(join(gate(), "step-4"), "");
      const st = await waitFor("the task to end", async () => {
        const r = await cli(["status", job, "--json"], dir, env);
        const phase = r.code === 0 ? (JSON.parse(r.out) as { phase: string }[])[0]?.phase : undefined;
        return phase === "SUCCEEDED" || phase === "FAILED" ? phase : undefined;
      });
      assert.equal(st, "SUCCEEDED", fake.tasksNamed(job)[0]?.run?.output);
      // After the end: the final pass wrote step 4 and both committed checkpoints.
      const last = await waitFor("the final page", pageMatching(runs, job, /latest reward 0\.4 at step 4 /), 30_000);
      assert.match(last, new RegExp(`<td>${job}\\.rl</td><td class="num">4</td>`), "the newest committed checkpoint");
      assertJobCharts(last, 4);

      // rlpipe report --url: a presigned GET that fetches the page on loopback, printed on stdout only.
      const u = await cli(["report", job, "--url", "--expires-s", "600"], dir, env);
      assert.equal(u.code, 0, u.err);
      const url = u.out.trim();
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/.*X-Amz-Signature=/);
      assert.match(url, /X-Amz-Expires=600/);
      assert.ok(!u.err.includes("X-Amz-Signature"), "the URL is not on stderr");
      const got = await fetch(url);
      assert.equal(got.status, 200);
      assert.match(got.headers.get("content-type") ?? "", /^text\/html; charset=utf-8/, "served as HTML (the sidecar's PUT set it)");
      const fetched = await got.text();
      assert.equal(fetched, last, "the page itself");
      const noUrl = await cli(["report", job, "--url", "--expires-s", "0"], dir, env);
      assert.equal(noUrl.code, 2, noUrl.err);

      // The full page from here (the provider's phase, the log) still renders this run.
      const full = await cli(["report", job, "--out", "full.html"], dir, env);
      assert.equal(full.code, 0, full.err);
      const fullHtml = readFileSync(join(dir, "full.html"), "utf8");
      assert.match(fullHtml, /<span class="phase ok">SUCCEEDED<\/span>/);
      assert.ok(fullHtml.includes(`latest reward 0.4 at step 4 (${job}.rl)`));
      assertEscaped(fullHtml, false);

      // The fetched page, as a user opens it: Chromium renders it, with nothing fetched.
      const file = join(dir, "fetched.html");
      writeFileSync(file, fetched);
      const png = join(dir, "fetched.png");
      const shot = chromium([`--screenshot=${png}`, "--window-size=1280,1400", pathToFileURL(file).href], dir);
      assert.equal(shot.status, 0, shot.stderr.toString());
      assert.ok(existsSync(png));
      if (process.env["RLPIPE_KEEP_SCREENSHOT"]) {
        writeFileSync(process.env["RLPIPE_KEEP_SCREENSHOT"], readFileSync(png));
        writeFileSync(`${process.env["RLPIPE_KEEP_SCREENSHOT"]}.html`, fetched);
      }
      const dom = chromium(["--dump-dom", pathToFileURL(file).href], dir).stdout.toString("utf8");
      assert.ok(dom.includes(`latest reward 0.4 at step 4 (${job}.rl)`), "the latest reward in the DOM");
      assert.ok(!/<script\b/i.test(dom), "no script in the DOM");

      // The console's report action: the page, or its presigned URL; bad events are refused with a code.
      const store = await openStore(`cos://${BUCKET}`, { ...env }, {});
      const deps = {
        state: { store, records: dirRunRecords(runsDir(dir)) }, openStore: (uri: string) => openStore(uri, { ...env }, {}),
        loadAdapter: () => { throw new Error("the report action asks no provider"); }, assets: () => ({}), log: () => undefined,
      };
      try {
        const page = await handleConsoleEvent({ action: "report", run: job }, deps as never) as Record<string, unknown>;
        assert.equal(page["ok"], true, JSON.stringify(page).slice(0, 500));
        assert.equal(page["page"], last);
        assert.equal(page["key"], `${job}/report.html`);
        const link = await handleConsoleEvent({ action: "report", run: job, url: true, expiresS: 300 }, deps as never) as Record<string, unknown>;
        assert.equal(link["ok"], true, JSON.stringify(link));
        assert.equal(await (await fetch(link["url"] as string)).text(), last);
        const bad = await handleConsoleEvent({ action: "report", run: job, expiresS: 0 }, deps as never) as { ok: boolean; error: { code: string } };
        assert.deepEqual([bad.ok, bad.error.code], [false, "bad_event"]);
        const unknown = await handleConsoleEvent({ action: "report", run: "nothing-deployed-00000000" }, deps as never) as { ok: boolean; exitCode: number };
        assert.deepEqual([unknown.ok, unknown.exitCode], [false, 2]);
      } finally {
        await store.close();
      }
    } finally {
      await runs.close();
    }
  });
});

// ------------------------------------------------------------------------------------------------ ModelArts

describe("ModelArts: the page goes up through the output channel (the job holds no OBS credential)", () => {
  const SEED = "qwen3-1.7b-code-toolcall";
  const BUCKET = "rlpipe-runs";
  const AK = fakeHuaweiAk();
  const SK = fakeHuaweiSk();
  const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
  let moto: Moto;
  let fake: FakeModelArts;
  let runner: JobRunner;
  let dir: string;
  const sinks: S3Store[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-page-ma-"));
    mkdirSync(join(dir, "gate"));
    moto = await startMoto();
    const admin = new S3Store({ scheme: "obs", bucket: BUCKET, prefix: "", region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    sinks.push(admin);
    writeVerlStub(join(dir, "stub"));
    runner = new JobRunner({
      storeEndpoint: moto.endpoint, storeCredentials: TEST_CREDENTIALS, root: join(dir, "container"), platformPrefixes: ["/home/ma-user"],
      env: stubContainerEnv(dir, { VERL_STUB_GATE: join(dir, "gate"), VERL_STUB_EXTRA_METRIC: EVIL, RLPIPE_PAGE_INTERVAL_S: "0" }),
      uploadPeriodMs: 200,
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

  it("the page appears in OBS with the run and latest reward, and is rewritten after the next step", T, async () => {
    const work = join(dir, "work");
    const text = edit(runnableSeed(recipeText(SEED), "modelarts", work), [[["checkpoints", "intervalS"], 1]]);
    const p = plan(parseRecipe(text, "r.yaml"), { provider: "modelarts", assets: bundledAssets() });
    assert.equal(p.storage?.mechanism, "modelarts-output");
    const uploads = (uri: string): BundleSink => {
      const u = parseStoreUri(uri);
      const s = new S3Store({ scheme: "obs", bucket: u.bucket, prefix: u.prefix, region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
      sinks.push(s);
      return s;
    };
    const a = createModelArtsAdapter({ env: { HOME: dir, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fake.endpoint }, recipe: parseRecipe(text, "r.yaml").recipe, cwd: dir, bundleSink: uploads }, { timeoutMs: 5000 });
    const runs = new S3Store({ scheme: "obs", bucket: BUCKET, prefix: "qwen3-code-toolcall/code/runs", region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    sinks.push(runs);
    {
      await deploy(a, p, { sleep: () => Promise.resolve() });
      const two = await waitFor("the page with step 2's reward", pageMatching(runs, p.jobName, /latest reward 0\.2 at step 2 /));
      assert.ok(two.includes(`<h1>${p.jobName} `));
      assert.match(two, /modelarts/);
      assertEscaped(two);
      writeFileSync(join(dir, "gate", "step-3"), "");
      await waitFor("the page rewritten with step 3", pageMatching(runs, p.jobName, /latest reward 0\.3 at step 3 /));
      writeFileSync(join(dir, "gate", "step-4"), "");
      await waitFor("the page after the job's end", pageMatching(runs, p.jobName, /latest reward 0\.4 at step 4 /));
      // A presigned URL of it (OBS speaks SigV4 query auth too), fetched on loopback.
      const url = await presignRunPage(runs, p.jobName, 120);
      assert.match(await (await fetch(url)).text(), /latest reward 0\.4 at step 4 /);
    }
  });
});

// ------------------------------------------------------------------------------------------------ rlpipe sync --page

describe("rlpipe sync --page (the Node sidecar of local, Ray and Slurm jobs)", () => {
  let moto: Moto;
  let dir: string;
  let admin: S3Store;
  const BUCKET = "rlpipe-page-sync";
  const env = () => ({ HOME: dir, S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-page-sync-"));
    moto = await startMoto();
    admin = new S3Store({ scheme: "s3", bucket: BUCKET, prefix: "runs", region: "us-east-1", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  });
  after(async () => {
    await admin.close();
    await moto.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes the full renderer's page from the store's metrics and checkpoints, says the phase is unknown in the job, escapes a metric name", T, async () => {
    const metrics = join(dir, "rl.jsonl");
    // A validation metric is drawn (its name is a panel's subtitle): the name a job wrote, as text in the SVG.
    const evilVal = `val-core/${EVIL}/acc/mean@1`;
    writeFileSync(metrics, [1, 2, 3].map((s) => `${JSON.stringify({ step: s, data: { "critic/score/mean": s / 10, [EVIL]: s, [evilVal]: s / 5 } })}\n`).join(""));
    makeCheckpoints(join(dir, "ckpt"), [2], 2, 1024);
    const r = await cli(["sync", "job-0a1b2c3d.rl", "--watch", join(dir, "ckpt"), "--metrics", metrics, "--store", `s3://${BUCKET}/runs`, "--once",
      "--page", "job-0a1b2c3d", "--page-recipe", "grpo", "--page-provider", "slurm", "--recipe-hash", "0123456789abcdef"], dir, env());
    assert.equal(r.code, 0, r.err);
    const html = (await admin.get(runPageKey("job-0a1b2c3d"))).toString("utf8");
    assert.ok(html.includes("latest reward 0.3 at step 3 (job-0a1b2c3d.rl)"));
    assert.match(html, /provider phase not known inside the job/);
    assert.match(html, /<td>job-0a1b2c3d\.rl<\/td><td class="num">2<\/td>/);
    assert.match(html, /Written into the run&#39;s store by the job&#39;s sync sidecar/);
    assertEscaped(html, false);
    assert.ok(html.includes("val-core/&lt;script&gt;alert(&quot;m&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;/x/acc/mean@1"), "the drawn metric's name, escaped");
    assert.match((await fetch(await presignRunPage(admin, "job-0a1b2c3d", 60))).headers.get("content-type") ?? "", /^text\/html; charset=utf-8/);
  });

  it("rewrites the page at most once per --page-interval-s while watching, and once more on the last pass", T, async () => {
    const metrics = join(dir, "watch.jsonl");
    writeFileSync(metrics, `${JSON.stringify({ step: 1, data: { "critic/score/mean": 0.1 } })}\n`);
    mkdirSync(join(dir, "ckpt2"));
    const child = spawn(process.execPath, [CLI, "sync", "job-1a1b2c3d.rl", "--watch", join(dir, "ckpt2"), "--metrics", metrics, "--store", `s3://${BUCKET}/runs`,
      "--interval-s", "0", "--page", "job-1a1b2c3d", "--page-interval-s", "3600"], { cwd: dir, stdio: ["ignore", "ignore", "pipe"], env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", ...env() } });
    let err = "";
    child.stderr.on("data", (d: Buffer) => { err += d.toString(); });
    const exited = new Promise<number | null>((res) => child.on("close", res));
    try {
      await waitFor("the first page", pageMatching(admin, "job-1a1b2c3d", /latest reward 0\.1 at step 1 /));
      writeFileSync(metrics, `${JSON.stringify({ step: 2, data: { "critic/score/mean": 0.2 } })}\n`, { flag: "a" });
      // The step reaches the store (metrics are synced every pass) while the page, inside its interval, is not rewritten.
      await waitFor("step 2's metrics in the store", async () => ((await admin.list("job-1a1b2c3d.rl/metrics/")).length >= 2 ? true : undefined));
      assert.match((await admin.get(runPageKey("job-1a1b2c3d"))).toString("utf8"), /latest reward 0\.1 at step 1 /, "not rewritten within the interval");
    } finally {
      child.kill("SIGTERM");
    }
    assert.equal(await exited, 0, err);
    assert.match((await admin.get(runPageKey("job-1a1b2c3d"))).toString("utf8"), /latest reward 0\.2 at step 2 /, "the last pass rewrites it");
  });

  it("a presigned URL of the page: fetched on loopback before it expires; a file store has none (a clear error)", T, async () => {
    const url = await presignRunPage(admin, "job-0a1b2c3d", 1);
    assert.equal((await fetch(url)).status, 200);
    await assert.rejects(presignRunPage(admin, "no-page-00000000", 60), (e: { code?: string }) => e.code === "page_missing");
    const fileStore = await openStore(`file://${join(dir, "fs-store")}`, {}, {});
    try {
      await assert.rejects(presignRunPage(fileStore, "job-0a1b2c3d", 60), (e: { code?: string }) => e.code === "presign_unsupported");
    } finally {
      await fileStore.close();
    }
  });
});

// ------------------------------------------------------------------------------------------------ the job's page's series

describe("the job's page (rlpipe_sync.py, no Node in the job) draws what core/metrics.ts calls the main series", () => {
  it("its MAIN_SERIES mirrors core/metrics.ts MAIN_SERIES: labels, metric names in order, formulas and derived values", () => {
    const probe = [0, 2, 7.5, -3];
    const py = spawnSync("python3", ["-c", [
      "import json, sys",
      `sys.path.insert(0, ${JSON.stringify(join(ROOT, "recipes", "python"))})`,
      "import rlpipe_sync as s",
      `probe = ${JSON.stringify(probe)}`,
      "print(json.dumps([{'label': l, 'names': list(n), 'formula': d[0] if d else None, 'derived': [d[1](v) for v in probe] if d else None} for l, n, d in s.MAIN_SERIES]))",
    ].join("\n")], { encoding: "utf8", timeout: 60_000 });
    assert.equal(py.status, 0, py.stderr);
    const ts = MAIN_SERIES.map((m) => ({ label: m.label, names: [...m.names], formula: m.formula ?? null, derived: m.derive === undefined ? null : probe.map(m.derive) }));
    assert.deepEqual(JSON.parse(py.stdout), ts);
    assert.ok(readFileSync(SIDECAR, "utf8").includes("Mirrors MAIN_SERIES in core/metrics.ts"), "the Python list names its source");
  });

  it("passes its pytest suite (charts, ticks, a value for one point, escaping, determinism)", { timeout: 120_000 }, () => {
    const r = spawnSync(join(ROOT, ".venv-test", "bin", "python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", join(ROOT, "test", "python", "test_rlpipe_sync_page.py")], {
      cwd: ROOT, encoding: "utf8", timeout: 110_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /\d+ passed/);
    assert.doesNotMatch(r.stdout, /skipped|xfail/);
  });
});
