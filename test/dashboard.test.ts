// rlpipe dashboard: the pure row summary and table; then the command itself, as a process on loopback (port 0),
// over real runs: a local run deployed for real with an RL stage's metrics synced into its store by rlpipe sync (as
// the sidecar does), a job on the ModelArts fake (running, with metrics in its store), a task on the TI-ONE fake
// (ended), and a TI-ONE record the provider does not know (status unavailable). Every run is listed with its phase;
// a page updates after sync writes a new step; HTML in a log line, a metric name and a recipe name is escaped; no
// secret is in any page; a non-loopback --host is refused; Chromium renders the table.
import assert from "node:assert/strict";
import { type ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import { request } from "node:http";
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { createModelArtsAdapter } from "../adapters/providers/modelarts.js";
import type { JobRef } from "../adapters/providers/provider.js";
import { type RunRecord, runsDir, writeRunRecord } from "../adapters/providers/run-records.js";
import { isLoopbackHost } from "../bin/dashboard-server.js";
import { dashboardHtml, servedRunPage } from "../core/report/dashboard-page.js";
import { dashboardRow } from "../core/report/dashboard-row.js";
import type { RunPageData } from "../core/report/run-page-data.js";
import { parseRecipe } from "../core/recipe/load.js";
import { CLI, type Ran, runCliAsync, show } from "./cli-process.js";
import { fakeAwsAccessKeyId, fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { FakeModelArts } from "./fakes/modelarts-fake.js";
import { TioneFake } from "./fakes/tione-fake.js";
import { loadSeed, planSeed, recipeText } from "./helpers.js";
import { deployPricedDemo } from "./local-demo-run.js";
import { decodePng } from "./png-decode.js";
import { waitFor } from "./serve-process.js";

const T = { timeout: 300_000 };
const execFileP = promisify(execFile);
const SECRET = "s3cr3t-Dashboard-Value-0077";
const AWS_KEY_ID = fakeAwsAccessKeyId();
const AK = fakeHuaweiAk();
const SK = fakeHuaweiSk();
const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const TI_ID = fakeTencentSecretId();
const TI_KEY = fakeTencentSecretKey();
const HOSTILE = "<script>alert(1)</script>";
const HOSTILE_RECIPE = "<img src=x onerror=alert(2)>";

const reward = (step: number) => 0.2 + 0.03 * step;
const verlRow = (step: number) => ({ "critic/score/mean": reward(step), "response_length/mean": 600 + step, "timing_s/step": 90, [`val-core/${HOSTILE}/acc`]: 0.1 });
const healthRow = (step: number) => ({ "sandbox/requests": 500, "sandbox/infra_errors": step === 9 ? 5 : 0, "sandbox/overloaded": 0, "sandbox/timeouts": 0 });
const jsonl = (steps: readonly number[], row: (s: number) => Record<string, number>) => steps.map((s) => `${JSON.stringify({ step: s, data: row(s) })}\n`).join("");
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

function handMade(over: Partial<RunPageData> = {}): RunPageData {
  return {
    schema: "rlpipe.run-page", version: 1, generatedAt: "2026-07-01T12:00:00Z", run: "grpo-1a2b3c4d", provider: "modelarts", jobId: "j",
    recipe: { name: HOSTILE_RECIPE, file: "r.yaml", hash: "0".repeat(64) }, submittedAt: "2026-07-01T10:00:00Z",
    status: { ok: true, value: { phase: "RUNNING", rawPhase: "Running" } },
    outputs: { ok: true, value: { store: "obs://b/runs", runs: [{ run: "grpo-1a2b3c4d.rl", checkpoints: [], series: [
      { name: "critic/score/mean", points: [[1, 0.1], [2, 0.25]] },
      { name: "sandbox/requests", points: range(1, 12).map((s) => [s, 100] as const) },
      { name: "sandbox/infra_errors", points: range(1, 12).map((s) => [s, s === 1 ? 50 : s === 12 ? 3 : 0] as const) },
    ] }] } },
    cost: { ok: false, why: "no provider" },
    logs: { ok: true, value: { lines: [], totalLines: 0 } },
    ...over,
  };
}

describe("the dashboard's rows and pages (pure)", () => {
  it("a row: phase, progress, latest reward, infra errors over the last 10 steps; escaped; live pages reload", () => {
    const row = dashboardRow(handMade());
    assert.equal(row.phase, "RUNNING");
    assert.equal(row.live, true);
    assert.deepEqual(row.progress, { step: 12 }, "no estimate: the step, no total");
    assert.deepEqual(row.latestReward, { value: 0.25, step: 2, run: "grpo-1a2b3c4d.rl" });
    assert.deepEqual(row.sandbox, { infraErrors: 3, requests: 1000, steps: 10 }, "step 1's 50 errors are older than the last 10 steps");
    assert.equal(row.cost.why, "cost unavailable: no provider");
    const html = dashboardHtml({ rows: [row], problems: [`bad record ${HOSTILE}`], sources: ["this directory"], generatedAt: "2026-07-01T12:00:00Z", refreshSeconds: 7 });
    assert.ok(!html.includes("<script") && !html.includes("<img"), "nothing of the data is markup");
    assert.ok(html.includes("&lt;img src=x onerror=alert(2)&gt;") && html.includes("bad record &lt;script&gt;"));
    assert.match(html, /<meta http-equiv="refresh" content="7">/);
    assert.match(html, /<a href="\/runs\/grpo-1a2b3c4d">grpo-1a2b3c4d<\/a>/);
    assert.match(html, /<td class="num warn">0\.3%<div class="sub">3 of 1000 requests<\/div><\/td>/);
    const ended = dashboardRow(handMade({ status: { ok: false, why: "ECONNREFUSED" }, lastSeen: { phase: "SUCCEEDED", rawPhase: "Completed", at: "2026-07-01T11:00:00Z" } }));
    assert.deepEqual([ended.phase, ended.live, ended.statusUnavailable], ["SUCCEEDED", false, "ECONNREFUSED"]);
    const still = dashboardHtml({ rows: [ended], problems: [], sources: ["x"], generatedAt: "2026-07-01T12:00:00Z", refreshSeconds: 7 });
    assert.match(still, /<meta http-equiv="refresh" content="30">/, "nothing live: it still looks for new runs, more slowly");
    assert.match(still, /no run is live: looks for new runs every 30 s/);
    assert.match(still, /status unavailable \(last seen\)/);
    const page = servedRunPage("<html><head><title>x</title></head><body><main>\n<h1>x</h1></main></body></html>", { live: true, refreshSeconds: 5 });
    assert.match(page, /<meta http-equiv="refresh" content="5">\n<\/head>/);
    assert.match(page, /<main>\n<nav [^>]*><a href="\/">← all runs<\/a>/);
  });

  it("loopback is 127.0.0.0/8, ::1 and localhost; nothing else", () => {
    for (const h of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"]) assert.ok(isLoopbackHost(h), h);
    for (const h of ["0.0.0.0", "::", "192.168.1.10", "10.0.0.1", "example.com", "127.0.0.1.nip.io", ""]) assert.ok(!isLoopbackHost(h), h);
  });
});

// ------------------------------------------------------------------------------------------------ the command

interface Dashboard { readonly url: string; readonly child: ChildProcess; readonly err: () => string; stop(): Promise<void> }

/** rlpipe dashboard as a process of its own on 127.0.0.1, port 0; stopped by its pid (SIGTERM). */
async function startDashboard(cwd: string, env: Record<string, string>, args: readonly string[] = []): Promise<Dashboard> {
  const child = spawn(process.execPath, [CLI, "dashboard", "--port", "0", ...args], { cwd, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => { err += d.toString(); });
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rlpipe dashboard did not start:\n${err}`)), 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /^rlpipe dashboard: (http:\/\/127\.0\.0\.1:\d+\/) /m.exec(out);
      if (m !== null) { clearTimeout(timer); resolve(m[1]!); }
    });
    void exited.then(() => { clearTimeout(timer); reject(new Error(`rlpipe dashboard exited:\n${err}`)); });
  });
  return {
    url, child, err: () => err,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) { process.kill(child.pid!, "SIGTERM"); await exited; }
    },
  };
}

const get = async (url: string): Promise<{ status: number; html: string; headers: Headers }> => {
  const r = await fetch(url);
  return { status: r.status, html: await r.text(), headers: r.headers };
};

/** A table row of the dashboard by its run (data-run). */
const rowOf = (html: string, run: string) => new RegExp(`<tr data-run="${run}" data-phase="([A-Z]+)">(.*?)</tr>`).exec(html);

describe("rlpipe dashboard on loopback, over runs on local, the ModelArts fake and the TI-ONE fake", () => {
  let dir: string;
  let local: string;
  let ma: FakeModelArts;
  let maRef: JobRef;
  let ti: TioneFake;
  let tiRun: string;
  let lostRun: string;
  let dash: Dashboard;
  let work: string;
  let localStore: string;
  const env = (): Record<string, string> => ({
    HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: ma.endpoint, MODELARTS_TIMEOUT_MS: "20000",
    TENCENTCLOUD_SECRET_ID: TI_ID, TENCENTCLOUD_SECRET_KEY: TI_KEY, TIONE_ENDPOINT: ti.endpoint,
    RLPIPE_RETRY_BUDGET_MS: "60000", REPORT_SERVICE_TOKEN: SECRET,
  });
  const rlpipe = (args: string[], extra: Record<string, string> = {}): Promise<Ran> => runCliAsync(args, { cwd: dir, env: { RLPIPE_POLL_MS: "200", ...extra }, timeoutMs: 240_000 });
  const record = (name: string, provider: RunRecord["provider"], ref: RunRecord["ref"], recipeData: unknown, over: Partial<RunRecord> = {}): RunRecord => ({
    version: 1, name, provider, ref, recipe: { name: "test", file: "test.yaml", hash: "0".repeat(64) }, recipeData, request: {}, outcome: "created",
    createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), prices: [], ...over,
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-dashboard-"));
    // A local run deployed for real, an RL stage's metrics (with a hostile metric name) synced into its store.
    local = await deployPricedDemo(dir);
    work = join(dir, "rl-work");
    mkdirSync(join(work, "ckpt"), { recursive: true });
    writeFileSync(join(work, "rl.jsonl"), jsonl(range(1, 10), verlRow));
    writeFileSync(join(work, "rl.sandbox.jsonl"), jsonl(range(1, 10), healthRow));
    localStore = `file://${join(dir, ".rlpipe", "work", "local-demo", "store")}`;
    const sync = await rlpipe(["sync", `${local}.rl`, "--watch", join(work, "ckpt"), "--metrics", join(work, "rl.jsonl"), "--metrics", join(work, "rl.sandbox.jsonl"), "--once", "--store", localStore]);
    assert.equal(sync.code, 0, show(sync));
    appendFileSync(join(dir, ".rlpipe", "local", local, "job.log"), `token ${SECRET} key ${AWS_KEY_ID} ${HOSTILE}\n`);

    // A job on the ModelArts fake that keeps running, its log holding the secret key and markup; three RL steps in its store.
    ma = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID }).start();
    ma.nextPhases = ["Running"];
    // The fake appends to a running job's log on every read: three lines, then the log stays as it is.
    ma.logChunk = (job, call) => (call < 3 ? `[${job.name}] step ${call} sk=${SK} ${HOSTILE}\n` : "");
    const seed = loadSeed("qwen3-1.7b-code-toolcall").recipe;
    const adapter = createModelArtsAdapter({ env: { HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: ma.endpoint, HOME: dir }, recipe: seed, cwd: dir });
    maRef = await adapter.submit(planSeed("qwen3-1.7b-code-toolcall", "modelarts"));
    const maStore = `file://${join(dir, "ma-store")}`;
    await writeRunRecord(runsDir(dir), record(maRef.name, "modelarts", { id: maRef.id, ...(maRef.region === undefined ? {} : { region: maRef.region }) }, seed, { store: maStore, createdAt: "2026-09-01T00:00:00.000Z" }));
    writeFileSync(join(work, "ma.jsonl"), jsonl(range(1, 3), verlRow));
    const maSync = await rlpipe(["sync", `${maRef.name}.rl`, "--watch", join(work, "ckpt"), "--metrics", join(work, "ma.jsonl"), "--once", "--store", maStore]);
    assert.equal(maSync.code, 0, show(maSync));

    // A TI-ONE task that succeeded (its record's recipe name is markup), and a record of a task TI-ONE does not know.
    ti = await TioneFake.start([{ secretId: TI_ID, secretKey: TI_KEY }]);
    const tiRecipe = parseRecipe(recipeText("retool-qwen3-4b-tione-ags"), "t.yaml").recipe;
    const task = ti.seedTask({ Name: "retool-tione-0a1b2c3d", ChargeType: "POSTPAID_BY_HOUR", ResourceConfigInfos: [] }, "SUCCEED");
    task.endMs = task.startMs! + 3_600_000;
    tiRun = "retool-tione-0a1b2c3d";
    await writeRunRecord(runsDir(dir), record(tiRun, "tione", { id: task.id, region: "ap-shanghai" }, tiRecipe, { recipe: { name: HOSTILE_RECIPE, file: "t.yaml", hash: "1".repeat(64) }, createdAt: "2026-09-02T00:00:00.000Z" }));
    lostRun = "retool-tione-0badc0de";
    await writeRunRecord(runsDir(dir), record(lostRun, "tione", { id: "train-000000000000", region: "ap-shanghai" }, tiRecipe, {
      createdAt: "2026-09-03T00:00:00.000Z", lastStatus: { phase: "RUNNING", rawPhase: "RUNNING", at: "2026-09-03T01:00:00.000Z" },
    }));
    dash = await startDashboard(dir, env(), ["--refresh-s", "1"]);
  });
  after(async () => {
    await dash?.stop();
    await ma?.close();
    await ti?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("lists every run with its phase, newest first; a provider that fails is 'status unavailable', not a failed page", T, async () => {
    const { status, html, headers } = await get(dash.url);
    assert.equal(status, 200);
    assert.match(headers.get("content-security-policy") ?? "", /default-src 'none'/);
    const order = [...html.matchAll(/<tr data-run="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(order, [local, lostRun, tiRun, maRef.name], "newest deploy first");
    assert.equal(rowOf(html, local)![1], "SUCCEEDED");
    assert.equal(rowOf(html, maRef.name)![1], "RUNNING");
    assert.equal(rowOf(html, tiRun)![1], "SUCCEEDED");
    const lost = rowOf(html, lostRun)!;
    assert.equal(lost[1], "RUNNING", "the phase last seen");
    assert.match(lost[2]!, /status unavailable \(last seen\)/);
    // Progress of the ModelArts job: its RL stage's latest step of the steps the estimate counts for it.
    assert.match(rowOf(html, maRef.name)![2]!, /<td class="num" title="stage rl">3 of \d+<div class="bar">/);
    const localRow = rowOf(html, local)![2]!;
    assert.match(localRow, /<td class="num">step 10<\/td>/);
    assert.match(localRow, new RegExp(`<td class="num">${reward(10)}<div class="sub">step 10</div></td>`));
    assert.match(localRow, /<td class="num warn">0\.1%<div class="sub">5 of 5000 requests<\/div><\/td>/);
    assert.match(localRow, /<td class="num">¥[\d.,]+<\/td><td class="num">¥[\d.,]+<div class="sub">/, "cost so far and the estimate (the demo has a rate)");
    assert.match(html, /<meta http-equiv="refresh" content="1">/, "a run is live: the table reloads");
    // Each row opens the run's page.
    for (const run of [local, maRef.name, tiRun, lostRun]) {
      assert.ok(html.includes(`<a href="/runs/${run}">${run}</a>`), run);
      const page = await get(`${dash.url}runs/${run}`);
      assert.equal(page.status, 200, run);
      assert.match(page.html, new RegExp(`<h1>${run} <span class="phase`), run);
    }
    const maPage = await get(`${dash.url}runs/${maRef.name}`);
    assert.match(maPage.html, /<meta http-equiv="refresh" content="1">/, "a live run's page reloads");
    assert.ok(!(await get(`${dash.url}runs/${local}`)).html.includes("http-equiv"), "an ended run's page does not");
    const missing = await get(`${dash.url}runs/nothing-here-12345678`);
    assert.equal(missing.status, 404);
    assert.equal((await fetch(dash.url, { method: "POST" })).status, 405);
  });

  it("--store adds the runs a console function keeps in its state store (<URI>/runs/), beside this directory's", T, async () => {
    const fromConsole = "retool-console-0c0ffee0";
    mkdirSync(join(dir, "state", "runs"), { recursive: true });
    const theirs = JSON.parse(readFileSync(join(runsDir(dir), `${tiRun}.json`), "utf8")) as RunRecord;
    writeFileSync(join(dir, "state", "runs", `${fromConsole}.json`), JSON.stringify({ ...theirs, name: fromConsole, recipe: { ...theirs.recipe, name: "from-the-console" }, createdAt: "2026-09-04T00:00:00.000Z" }));
    const both = await startDashboard(dir, env(), ["--store", `file://${join(dir, "state")}`]);
    try {
      const { html } = await get(both.url);
      assert.deepEqual([...html.matchAll(/<tr data-run="([^"]+)"/g)].map((m) => m[1]), [local, fromConsole, lostRun, tiRun, maRef.name]);
      assert.equal(rowOf(html, fromConsole)![1], "SUCCEEDED", "its task, asked on TI-ONE with the CLI's credentials");
      assert.match(html, new RegExp(`from this directory \\(\\.rlpipe/runs\\), file://${join(dir, "state")}/runs`));
      assert.equal((await get(`${both.url}runs/${fromConsole}`)).status, 200);
    } finally {
      await both.stop();
    }
  });

  it("a page updates after sync writes a new step to the store", T, async () => {
    const before = await get(`${dash.url}runs/${local}`);
    assert.ok(!before.html.includes("at step 11"));
    appendFileSync(join(work, "rl.jsonl"), jsonl([11], verlRow));
    const sync = await rlpipe(["sync", `${local}.rl`, "--watch", join(work, "ckpt"), "--metrics", join(work, "rl.jsonl"), "--once", "--store", localStore]);
    assert.equal(sync.code, 0, show(sync));
    let table = "";
    await waitFor("the table to show step 11", async () => {
      table = (await get(dash.url)).html;
      return rowOf(table, local)?.[2]?.includes(`${reward(11)}<div class="sub">step 11</div>`) === true;
    }, 60_000);
    assert.match(rowOf(table, local)![2]!, /<td class="num">step 11<\/td>/);
    const page = await get(`${dash.url}runs/${local}`);
    assert.ok(page.html.includes(`latest reward ${reward(11)} at step 11`), "the run's page too");
  });

  it("markup in a log line, a metric name or a recipe name is text; no secret is in any page", T, async () => {
    const pages = [await get(dash.url), ...(await Promise.all([local, maRef.name, tiRun, lostRun].map((r) => get(`${dash.url}runs/${r}`))))];
    for (const { html } of pages) {
      assert.ok(!/<script/i.test(html) && !/<img/i.test(html), "no markup from the data");
      for (const s of [SECRET, SK, AK, TI_KEY, TI_ID, AWS_KEY_ID]) assert.ok(!html.includes(s), "a secret is in a page");
    }
    const [table, localPage, maPage, tiPage] = pages.map((p) => p.html);
    assert.ok(table!.includes("&lt;img src=x onerror=alert(2)&gt;"), "the recipe name, as text");
    assert.ok(localPage!.includes("val-core/&lt;script&gt;alert(1)&lt;/script&gt;/acc"), "the metric name, as text");
    assert.ok(localPage!.includes("token *** key *** &lt;script&gt;alert(1)&lt;/script&gt;"), "the log line, redacted and escaped");
    assert.ok(maPage!.includes("sk=*** &lt;script&gt;"), "the ModelArts log line, redacted and escaped");
    assert.ok(tiPage!.includes("&lt;img src=x"));
  });

  it("answers only to loopback host names (no DNS rebinding)", async () => {
    const port = new URL(dash.url).port;
    const r = await new Promise<number>((resolve, reject) => {
      // fetch() sets Host from the URL: a raw request names another host.
      request({ host: "127.0.0.1", port, path: "/", headers: { host: `attacker.example:${port}` } }, (res) => { res.resume(); resolve(res.statusCode!); }).on("error", reject).end();
    });
    assert.equal(r, 421);
  });

  it("renders in headless Chromium: not blank, every run in the DOM with its phase", T, async () => {
    assert.equal(spawnSync("chromium", ["--version"]).status, 0, "chromium (scripts/setup.sh --test) is needed");
    // Asynchronously: the fakes answer from this process while Chromium loads the page.
    const chromium = (extra: string[]) => execFileP("chromium", [
      "--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server", `--user-data-dir=${join(dir, "profile")}`, "--no-first-run",
      "--disable-background-networking", "--disable-extensions", "--hide-scrollbars", ...extra,
    ], { timeout: 90_000, maxBuffer: 16 << 20, encoding: "utf8", env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir } });
    const png = join(dir, "dashboard.png");
    await chromium([`--screenshot=${png}`, "--window-size=1280,1000", dash.url]);
    const image = decodePng(readFileSync(png));
    let ink = 0;
    for (let i = 0; i < image.rgb.length; i += 3) if (image.rgb[i]! < 230 || image.rgb[i + 1]! < 230 || image.rgb[i + 2]! < 230) ink++;
    assert.ok(ink / (image.width * image.height) > 0.02, `not blank: ${(100 * ink / (image.width * image.height)).toFixed(1)}% ink`);
    const dom = (await chromium(["--dump-dom", dash.url])).stdout;
    for (const [run, phase] of [[local, "SUCCEEDED"], [maRef.name, "RUNNING"], [tiRun, "SUCCEEDED"], [lostRun, "RUNNING"]] as const) {
      assert.ok(dom.includes(`<tr data-run="${run}" data-phase="${phase}">`), `${run} ${phase}`);
    }
  });
});

describe("rlpipe dashboard refuses what it should", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-dashboard-bad-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a non-loopback --host is refused (exit 2) unless --allow-remote; bad --port and --refresh-s are usage errors", async () => {
    for (const host of ["0.0.0.0", "192.168.1.10", "::"]) {
      const r = await runCliAsync(["dashboard", "--host", host, "--port", "0"], { cwd: dir });
      assert.equal(r.code, 2, show(r));
      assert.match(r.err, /refusing to serve the dashboard on .*: it is not a loopback address/);
      assert.match(r.err, /--allow-remote/);
    }
    for (const args of [["--port", "70000"], ["--port", "x"], ["--refresh-s", "0"]]) {
      const r = await runCliAsync(["dashboard", ...args], { cwd: dir });
      assert.equal(r.code, 2, show(r));
    }
  });

  it("with no runs yet it says how to make one; stopped by its pid", async () => {
    const d = await startDashboard(dir, {});
    try {
      const { status, html } = await get(d.url);
      assert.equal(status, 200);
      assert.match(html, /no runs yet: rlpipe deploy &lt;recipe&gt; records each run/);
      assert.match(html, /<meta http-equiv="refresh" content="\d+">/, "no runs yet: it reloads to find the first one");
    } finally {
      await d.stop();
    }
    assert.match(d.err(), /rlpipe dashboard: stopped/);
  });
});
