// rlpipe report <run>: one self-contained HTML page per run. The pure renderer on hand-made data (every section,
// what is unknown said in words, text escaped, the same bytes for the same data); then the command on a local run
// deployed for real (the demo with a rate, plus an RL stage's verl metrics and sandbox health synced into its store
// by rlpipe sync, as the sidecar does), rendered by headless Chromium with no network: a screenshot that is not
// blank, the run name, its phase and latest reward in the DOM, no request for anything but the page (net log), a
// secret in the log redacted; and a run with no metrics (a real, empty S3 store on moto) and no rates. Runs on Ray
// and Slurm: their records, gathered through an injected adapter loader, on the page and in the dashboard's table.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, appendFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { withActual } from "../core/cost/actual.js";
import type { CostReport } from "../core/cost/types.js";
import type { RunPageData, StoredRun } from "../core/report/run-page-data.js";
import { formatValue, runCommands, runPageHtml } from "../core/report/run-page.js";
import type { ProviderAdapter } from "../adapters/providers/provider.js";
import { type RunRecord, readRunRecord, runsDir, writeRunRecord } from "../adapters/providers/run-records.js";
import { MAX_LOG_PAGES, gatherRunPage } from "../bin/commands/report.js";
import { dashboardRow } from "../core/report/dashboard-row.js";
import { dashboardHtml } from "../core/report/dashboard-page.js";
import { normalizePhase } from "../core/providers/phases.js";
import type { Io } from "../bin/io.js";
import { loadRecipeFile } from "../core/recipe/load.js";
import { S3Store } from "../adapters/storage/s3.js";
import { makeCheckpoints } from "./checkpoint-helpers.js";
import { fixtureReport } from "./fixtures/cost-report.js";
import { recipePath } from "./helpers.js";
import { type Ran, runCliAsync, show } from "./cli-process.js";
import { fakeAwsAccessKeyId } from "./fakes/credentials.js";
import { decodePng } from "./png-decode.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";
import { chromium } from "./chromium.js";
import { deployPricedDemo } from "./local-demo-run.js";

const T = { timeout: 300_000 };

/** Every URL in markup and every construct that would fetch: none is allowed on a run page (no SVG namespace either). */
function externalReferences(html: string): string[] {
  const found: string[] = [];
  for (const tag of html.matchAll(/<[^>]*>/g)) for (const m of tag[0].matchAll(/\b(?:https?|ftp|wss?):\/\/[^\s"'<>)]*/gi)) found.push(m[0]);
  for (const m of (/<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? "").matchAll(/\b(?:https?|ftp):\/\/\S*/gi)) found.push(m[0]);
  for (const re of [/<script\b/gi, /<link\b/gi, /<iframe\b/gi, /<img\b/gi, /<object\b/gi, /<embed\b/gi, /\bsrc\s*=/gi, /\bhref\s*=/gi, /url\(/gi, /@import/gi, /@font-face/gi]) {
    for (const m of html.matchAll(re)) found.push(m[0]);
  }
  return found;
}

const svgCount = (html: string) => (html.match(/<svg\b/g) ?? []).length;

/** A verl step's metrics, and the sandbox health line rlpipe_health.py writes for it. */
function verlRow(step: number): Record<string, number> {
  return {
    "critic/score/mean": 0.2 + 0.03 * step, "response_length/mean": 600 + 10 * step, "response_length/clip_ratio": 0.05 - 0.002 * step,
    "num_turns/mean": 4 + 0.1 * step, "timing_s/step": 90 + step, ...(step % 5 === 0 ? { "val-core/aime/acc/mean@1": 0.1 + 0.01 * step } : {}),
  };
}
function healthRow(step: number): Record<string, number> {
  const infra = step === 7 ? 3 : 0;
  const overloaded = step >= 8 ? 2 : 0;
  const timeouts = step === 9 ? 1 : 0;
  return {
    "sandbox/requests": 512, "sandbox/infra_errors": infra, "sandbox/overloaded": overloaded, "sandbox/timeouts": timeouts,
    "sandbox/failures": infra + overloaded + timeouts, "sandbox/latency_p50_ms": 40 + step, "sandbox/latency_p99_ms": 300 + 20 * step, "sandbox/unreachable_polls": 0,
  };
}
const series = (rows: (step: number) => Record<string, number>, steps: readonly number[]) => {
  const byName = new Map<string, [number, number][]>();
  for (const s of steps) for (const [k, v] of Object.entries(rows(s))) byName.set(k, [...(byName.get(k) ?? []), [s, v]]);
  return [...byName.entries()].map(([name, points]) => ({ name, points }));
};

const STEPS = Array.from({ length: 10 }, (_, i) => i + 1);

function handMade(over: Partial<RunPageData> = {}): RunPageData {
  const rl: StoredRun = {
    run: "grpo-qwen-1a2b3c4d.rl",
    series: [...series(verlRow, STEPS), ...series(healthRow, STEPS)],
    checkpoints: [{ step: 5, files: 14, bytes: 8_200_000_000, committedAt: "2026-07-01T10:40:00Z" }, { step: 10, files: 14, bytes: 8_200_000_000, committedAt: "2026-07-01T11:20:00Z" }],
  };
  const report: CostReport = withActual(fixtureReport(), {
    run: "grpo-qwen-1a2b3c4d", compute: { hours: 10, running: true, source: "ModelArts status.duration" }, usageSource: "no usage recorded",
  });
  return {
    schema: "rlpipe.run-page", version: 1, generatedAt: "2026-07-01T12:00:00Z",
    run: "grpo-qwen-1a2b3c4d", provider: "modelarts", jobId: "job-7f3e", region: "cn-southwest-2",
    recipe: { name: "grpo-qwen", file: "recipes/grpo-qwen.yaml", hash: "0123456789abcdef0123" },
    submittedAt: "2026-07-01T09:55:00Z",
    status: { ok: true, value: { phase: "RUNNING", rawPhase: "Running", startedAt: "2026-07-01T10:00:00Z" } },
    outputs: { ok: true, value: { store: "obs://bucket/runs", runs: [rl] } },
    cost: { ok: true, value: { report, estimateFrom: "recorded" } },
    logs: { ok: true, value: { lines: ["step 10: reward 0.5", "<script>alert(1)</script> & done"], totalLines: 1200 } },
    ...over,
  };
}

describe("the run page renderer (pure)", () => {
  it("every section, from hand-made data: phase, times, curves, sandbox health, cost with its range, checkpoints, log, commands", () => {
    const d = handMade();
    const html = runPageHtml(d);
    assert.match(html, /^<!DOCTYPE html>\n<html lang="en">/);
    assert.deepEqual(externalReferences(html), []);
    assert.ok(!/https?:\/\//.test(html), "no URL anywhere in the page");
    assert.equal((html.match(/<style>/g) ?? []).length, 1, "the CSS is inline");
    assert.match(html, /<h1>grpo-qwen-1a2b3c4d <span class="phase live">RUNNING<\/span><\/h1>/);
    assert.match(html, /<dt>queued \(submitted\)<\/dt><dd>2026-07-01 09:55:00 UTC<\/dd>/);
    assert.match(html, /<dt>started<\/dt><dd>2026-07-01 10:00:00 UTC<\/dd>/);
    assert.match(html, /<dt>ended<\/dt><dd>still running<\/dd>/);
    assert.match(html, /<dt>duration<\/dt><dd>2 h 00 min so far<\/dd>/);
    // The latest reward (step 10: 0.2 + 0.3), in the header and the latest-values table.
    assert.ok(html.includes(`latest reward ${formatValue(0.5)} at step 10`), "the header names the latest reward");
    assert.match(html, /<td>reward \(score mean\)<\/td><td class="num">0\.5<\/td><td class="num">10<\/td>/);
    assert.match(html, /<td>tool calls per response<\/td><td class="num">1\.5<\/td>/, "(num_turns − 2) / 2 at step 10: (5 − 2) / 2");
    const labels = [...html.matchAll(/<svg [^>]*aria-label="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(labels, ["grpo-qwen-1a2b3c4d.rl: training", "grpo-qwen-1a2b3c4d.rl: sandbox"]);
    assert.ok(!html.includes("xmlns="), "inline SVG needs no namespace URL");
    for (const t of ["reward (score mean)", "response length (mean tokens)", "response clip ratio", "tool calls per response", "step time (s)", "val-core/aime/acc/mean@1"]) assert.ok(html.includes(`>${t}<`), `a panel for ${t}`);
    for (const t of ["sandbox requests", "sandbox infrastructure errors", "sandbox overload answers (429/503)", "sandbox timeouts", "sandbox latency p50 (ms)", "sandbox latency p99 (ms)"]) assert.ok(html.includes(`>${t}<`), `a panel for ${t}`);
    // Sandbox health per step: step 9 had 2 overload answers and a timeout of 512 requests.
    assert.match(html, /<tr><td class="num">9<\/td><td class="num">512<\/td><td class="num">0<\/td><td class="num">2<\/td><td class="num">1<\/td><td class="num">0\.58594%<\/td><td class="num">49<\/td><td class="num">480<\/td><\/tr>/);
    // Cost: the estimate's range per line next to the cost so far.
    assert.match(html, /Training compute<div class="src">ModelArts status\.duration: 10 h billable so far[^<]*<\/div><\/td><td class="nowrap">node-hour<\/td><td class="num">36–52<\/td><td class="num">10<\/td><td class="num">¥4,320 – ¥5,280 – ¥6,240<\/td><td class="num">¥1,200<\/td>/);
    assert.match(html, /estimate recorded at deploy/);
    assert.match(html, /<div class="gauge"/);
    // Checkpoints, the log (escaped, never markup), the commands.
    assert.match(html, /<tr><td>grpo-qwen-1a2b3c4d\.rl<\/td><td class="num">10<\/td><td class="num">14<\/td><td class="num">7\.6 GiB<\/td><td>2026-07-01 11:20:00 UTC<\/td><\/tr>/);
    assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt; &amp; done") && !html.includes("<script>"));
    assert.match(html, /the last 2 of 1200 lines/);
    const commands = runCommands(d).map((c) => c.command);
    for (const c of ["rlpipe logs grpo-qwen-1a2b3c4d --follow", "rlpipe stop grpo-qwen-1a2b3c4d", "rlpipe restore grpo-qwen-1a2b3c4d.rl ./grpo-qwen-1a2b3c4d.rl-ckpt --step 10", "rlpipe cost --run grpo-qwen-1a2b3c4d"]) {
      assert.ok(commands.includes(c), c);
      assert.ok(html.includes(`<code>${c}</code>`), c);
    }
    assert.equal(runPageHtml(handMade()), html, "deterministic: the same data, the same bytes");
  });

  it("says what is unknown instead of drawing it: no metrics yet, no rates, status and log unavailable; an ended run has no stop command", () => {
    const noRates: CostReport = withActual(fixtureReport({
      lines: fixtureReport().lines.map((l) => ({ ...l, cost: undefined, rate: undefined, children: l.children?.map((c) => ({ ...c, cost: undefined, rate: undefined })) })),
      totals: { ...fixtureReport().totals, incomplete: true },
    }), { run: "x", usageSource: "none" });
    const d = handMade({
      status: { ok: false, why: "modelarts: network error (ECONNREFUSED)" },
      lastSeen: { phase: "SUCCEEDED", rawPhase: "Completed", at: "2026-07-01T11:59:00Z" },
      outputs: { ok: true, value: { store: "obs://bucket/runs", runs: [] } },
      cost: { ok: true, value: { report: noRates, estimateFrom: "recorded" } },
      logs: { ok: false, why: "modelarts: network error (ECONNREFUSED)" },
    });
    const html = runPageHtml(d);
    assert.equal(svgCount(html), 0, "no chart without metrics");
    assert.ok(!html.includes('class="gauge"'));
    assert.match(html, /no metrics yet: the store holds no metrics for this run or its stages yet \(obs:\/\/bucket\/runs\)/);
    assert.match(html, /no sandbox health recorded/);
    assert.match(html, /no rates: cost unknown/);
    assert.match(html, /status unavailable: modelarts: network error \(ECONNREFUSED\)/);
    assert.match(html, /last seen SUCCEEDED \(Completed\) at 2026-07-01 11:59:00 UTC/);
    assert.match(html, /log unavailable: modelarts: network error/);
    assert.match(html, /no committed checkpoints in obs:\/\/bucket\/runs yet/);
    assert.ok(!runCommands(d).some((c) => c.command.startsWith("rlpipe stop")), "an ended run is not offered a stop");
    const unread = runPageHtml(handMade({ outputs: { ok: false, why: "no store given" }, cost: { ok: false, why: "the provider could not be asked" } }));
    assert.match(unread, /no metrics: the store could not be read \(no store given\)/);
    assert.match(unread, /cost unavailable: the provider could not be asked/);
    assert.equal(svgCount(unread), 0);
  });
});

// ------------------------------------------------------------------------------------------------ Chromium

/**
 * The URLs a page made Chromium request, from its net log: every request started on behalf of a page (an origin
 * or "null", a file page's opaque origin), not the browser's own background requests ("not an origin").
 */
function pageRequests(netLog: string): string[] {
  const log = JSON.parse(readFileSync(netLog, "utf8")) as { constants: { logEventTypes: Record<string, number> }; events: { type: number; params?: { url?: string; initiator?: string } }[] };
  const start = log.constants.logEventTypes["URL_REQUEST_START_JOB"];
  return log.events.filter((e) => e.type === start && e.params?.url !== undefined && e.params.initiator !== "not an origin").map((e) => e.params!.url!);
}

const SECRET = "s3cr3t-Report-Value-0042";
const AWS_KEY_ID = fakeAwsAccessKeyId();

describe("rlpipe report on a local run, in headless Chromium", () => {
  let dir: string;
  let name: string;
  let moto: Moto;
  const rlpipe = (args: string[], env: Record<string, string> = {}): Promise<Ran> => runCliAsync(args, { cwd: dir, env: { RLPIPE_POLL_MS: "200", ...env }, timeoutMs: 240_000 });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-report-"));
    // The demo with a rate for this machine's time, so the page has a cost so far against a priced estimate.
    name = await deployPricedDemo(dir);
    // An RL stage's outputs in the run's store, uploaded as the sync sidecar does: verl's metrics, the sandbox's
    // health stream beside them, a committed checkpoint.
    const work = join(dir, "rl-work");
    mkdirSync(work);
    writeFileSync(join(work, "rl.jsonl"), STEPS.map((s) => `${JSON.stringify({ step: s, data: verlRow(s) })}\n`).join(""));
    writeFileSync(join(work, "rl.sandbox.jsonl"), STEPS.map((s) => `${JSON.stringify({ step: s, data: healthRow(s) })}\n`).join(""));
    makeCheckpoints(join(work, "ckpt"), [5, 10], 10, 64 * 1024);
    const store = `file://${join(dir, ".rlpipe", "work", "local-demo", "store")}`;
    const sync = await rlpipe(["sync", `${name}.rl`, "--watch", join(work, "ckpt"), "--metrics", join(work, "rl.jsonl"), "--metrics", join(work, "rl.sandbox.jsonl"), "--once", "--store", store]);
    assert.equal(sync.code, 0, show(sync));
    // A line with secrets in the job's log: a secret environment variable's value and a key that looks like one.
    appendFileSync(join(dir, ".rlpipe", "local", name, "job.log"), `connecting with token ${SECRET} and key ${AWS_KEY_ID}\n`);
    moto = await startMoto();
  });
  after(async () => {
    await moto?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("writes one page (path printed) that Chromium renders: not blank, the run, its phase and latest reward in the DOM, nothing requested but the page, secrets redacted", T, async () => {
    assert.equal(spawnSync("chromium", ["--version"]).status, 0, "chromium (Debian package chromium, scripts/setup.sh --test) is needed to render the page");
    const r = await rlpipe(["report", name], { REPORT_SERVICE_TOKEN: SECRET });
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.trim(), `${name}.html`, "the path is printed");
    const file = join(dir, `${name}.html`);
    const html = readFileSync(file, "utf8");
    assert.deepEqual(externalReferences(html), []);
    assert.ok(!html.includes(SECRET) && !html.includes(AWS_KEY_ID), "the log's secrets are redacted");
    assert.match(html, /connecting with token \*\*\* and key \*\*\*/);
    assert.match(html, /stage check: complete/, "the job's own log lines are there");
    assert.equal(svgCount(html), 3, "the check stage's curves, the RL stage's curves, its sandbox health");
    assert.match(html, new RegExp(`<td>${name}\\.rl</td><td class="num">10</td>`), "the RL stage's committed checkpoint");
    assert.match(html, /Training compute: stage check: 1 node \(local\)<div class="src">local runner start\/exit times \(wall time\)/);
    assert.ok(html.includes(`<code>rlpipe logs ${name} --follow</code>`) && html.includes(`<code>rlpipe restore ${name}.rl ./${name}.rl-ckpt --step 10</code>`));

    const png = join(dir, "page.png");
    const netLog = join(dir, "net.json");
    const shot = chromium([`--screenshot=${png}`, "--window-size=1280,2400", `--log-net-log=${netLog}`, pathToFileURL(file).href], dir);
    assert.equal(shot.status, 0, shot.stderr.toString());
    const image = decodePng(readFileSync(png));
    let ink = 0;
    const colours = new Set<number>();
    for (let i = 0; i < image.rgb.length; i += 3) {
      const [red, g, b] = [image.rgb[i]!, image.rgb[i + 1]!, image.rgb[i + 2]!];
      if (red < 230 || g < 230 || b < 230) ink++;
      colours.add(((red >> 4) << 8) | ((g >> 4) << 4) | (b >> 4));
    }
    assert.ok(ink / (image.width * image.height) > 0.03, `not blank: ${(100 * ink / (image.width * image.height)).toFixed(1)}% ink`);
    assert.ok(colours.size >= 16, `several distinct colours (${colours.size})`);
    assert.deepEqual(pageRequests(netLog), [], "the page requests nothing");
    // The same check sees a page that does fetch: an image from a URL (loopback, a closed port) is a request of the page.
    writeFileSync(join(dir, "fetching.html"), '<!DOCTYPE html><p>x</p><img src="http://127.0.0.1:9/x.png">');
    const control = chromium(["--screenshot=" + join(dir, "control.png"), "--window-size=400,300", `--log-net-log=${join(dir, "control.json")}`, pathToFileURL(join(dir, "fetching.html")).href], dir);
    assert.equal(control.status, 0, control.stderr.toString());
    assert.deepEqual(pageRequests(join(dir, "control.json")), ["http://127.0.0.1:9/x.png"]);

    const dom = chromium(["--dump-dom", pathToFileURL(file).href], dir).stdout.toString("utf8");
    assert.ok(dom.includes(`<h1>${name} <span class="phase ok">SUCCEEDED</span></h1>`), "the run's name and phase");
    assert.ok(dom.includes(`latest reward ${formatValue(verlRow(10)["critic/score/mean"]!)} at step 10 (${name}.rl)`), "the latest reward");
    assert.equal((dom.match(/<svg /g) ?? []).length, 3);

    const json = await rlpipe(["report", name, "--json"]);
    assert.equal(json.code, 0, show(json));
    const data = JSON.parse(json.out) as RunPageData;
    assert.equal(data.schema, "rlpipe.run-page");
    assert.equal(data.status.ok && data.status.value.phase, "SUCCEEDED");
    assert.deepEqual(data.outputs.ok && data.outputs.value.runs.map((x) => x.run), [`${name}.check`, `${name}.rl`]);
  });

  it("a run with no metrics (an empty S3 store) and no rates: no chart, says so; a job the provider does not know: status unavailable", T, async () => {
    const bucket = "rlpipe-report";
    const admin = new S3Store({ scheme: "s3", bucket, prefix: "", region: "us-east-1", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: bucket }));
    await admin.close();
    const deployed = await readRunRecord(runsDir(dir), name);
    const recipeData = { ...(deployed.recipeData as Record<string, unknown>), prices: [] };
    const other = "local-demo-0badc0de";
    const { cost: _estimate, ...rest } = deployed;
    await writeRunRecord(runsDir(dir), { ...rest, name: other, ref: { ...deployed.ref, id: other }, recipeData, prices: [], store: `s3://${bucket}/runs`, lastStatus: undefined });
    const env = { S3_ENDPOINT: moto.endpoint, AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, AWS_REGION: "us-east-1", RLPIPE_RETRY_BUDGET_MS: "1000" };
    const r = await rlpipe(["report", other, "--out", "pages/empty.html"], env);
    assert.equal(r.code, 0, show(r));
    assert.equal(r.out.trim(), "pages/empty.html");
    assert.match(r.err, /rlpipe report: status not read: /);
    const html = readFileSync(join(dir, "pages", "empty.html"), "utf8");
    assert.deepEqual(externalReferences(html), []);
    assert.equal(svgCount(html), 0, "no <svg>: nothing to draw");
    assert.match(html, new RegExp(`no metrics yet: the store holds no metrics for this run or its stages yet \\(s3://${bucket}/runs\\)`));
    assert.match(html, /no rates: cost unknown/);
    assert.match(html, /status unavailable: /);
    assert.match(html, /<h1>local-demo-0badc0de <span class="phase off">UNKNOWN<\/span><\/h1>/);
    assert.ok(!existsSync(join(dir, "pages", "empty.html.tmp")), "written whole");
    const dom = chromium(["--dump-dom", pathToFileURL(join(dir, "pages", "empty.html")).href], dir);
    assert.equal(dom.status, 0, dom.stderr.toString());
    assert.ok(dom.stdout.toString("utf8").includes("no metrics yet"));
  });

  it("an unknown run is exit 2; a bad --log-lines is exit 2", async () => {
    const r = await rlpipe(["report", "no-such-run-12345678"]);
    assert.equal(r.code, 2, show(r));
    assert.match(r.err, /no run named no-such-run-12345678/);
    const bad = await rlpipe(["report", name, "--log-lines", "-3"]);
    assert.equal(bad.code, 2, show(bad));
  });
});

describe("rlpipe report's gathering against a provider whose log never ends", () => {
  it("a live job's log that grows as fast as it is read: the page keeps a bounded tail and the gathering ends", async () => {
    const recipeData = loadRecipeFile(recipePath("local-demo")).recipe;
    const now = new Date("2026-11-28T12:00:00Z").toISOString();
    const record: RunRecord = {
      version: 1, name: "endless-log", provider: "local", ref: { id: "job-1" }, recipe: { name: "local-demo", file: "demo.yaml", hash: "0123456789ab" },
      recipeData, request: {}, outcome: "created", createdAt: now, updatedAt: now, prices: [],
    };
    let reads = 0;
    const adapter = {
      status: async () => ({ phase: "RUNNING", rawPhase: "running", startedAt: now }),
      // Every read has one more line and a new cursor, as a job printing faster than it is read.
      logs: async (_ref: unknown, cursor: string | undefined) => { reads++; return { text: `line ${reads} token=secret-${reads}\n`, cursor: String(Number(cursor ?? 0) + 1) }; },
    } as unknown as ProviderAdapter;
    const lines: string[] = [];
    const data = await gatherRunPage(record, {
      io: { out: (l: string) => lines.push(l), err: (l: string) => lines.push(l) } as unknown as Io, logLines: 5,
      env: { PATH: process.env["PATH"] }, load: async () => ({ adapter, close: async () => {} }),
    });
    assert.equal(reads, MAX_LOG_PAGES, "one read per page, up to the bound");
    assert.ok(data.logs.ok);
    assert.equal(data.logs.value.totalLines, MAX_LOG_PAGES);
    assert.deepEqual(data.logs.value.lines.map((l) => l.replace(/ token=.*/, "")), [196, 197, 198, 199, 200].map((n) => `line ${n}`));
  });
});

describe("rlpipe report and the dashboard for runs on Ray and Slurm (run records, the adapters' loader injected)", () => {
  it("each page and each row shows its provider and the phase its provider's raw state normalizes to", async () => {
    const recipeData = loadRecipeFile(recipePath("local-demo")).recipe;
    const now = "2026-11-28T12:00:00.000Z";
    const jobs = [
      { provider: "ray" as const, name: "ray-run-0a1b2c3d", id: "raysubmit_8f2k", raw: "RUNNING", phase: "RUNNING", log: "ray: step 3 done" },
      { provider: "slurm" as const, name: "slurm-run-0a1b2c3d", id: "41877", raw: "COMPLETED", phase: "SUCCEEDED", log: "slurm: verl finished" },
    ];
    const asked: string[] = [];
    const rows = [];
    for (const j of jobs) {
      const record: RunRecord = {
        version: 1, name: j.name, provider: j.provider, ref: { id: j.id }, recipe: { name: "local-demo", file: "demo.yaml", hash: "0123456789ab" },
        recipeData, request: {}, outcome: "created", createdAt: now, updatedAt: now, prices: [],
      };
      // As the Ray and Slurm adapters answer: the raw state normalized by core/providers/phases.ts, and the job's log.
      const adapter = {
        status: async (ref: { id: string }) => { asked.push(`${j.provider}:${ref.id}`); return { phase: normalizePhase(j.provider, j.raw), rawPhase: j.raw, startedAt: now }; },
        logs: async () => ({ text: `${j.log}\n`, cursor: "end" }),
      } as unknown as ProviderAdapter;
      const data = await gatherRunPage(record, {
        io: { out: () => undefined, err: () => undefined } as unknown as Io, logLines: 20, env: { PATH: process.env["PATH"] },
        load: async (provider) => { assert.equal(provider, j.provider, "the record's provider is the adapter asked for"); return { adapter, close: async () => {} }; },
        now: () => new Date(now),
      });
      assert.ok(data.status.ok, JSON.stringify(data.status));
      assert.equal(data.status.value.phase, j.phase);
      const html = runPageHtml(data);
      assert.ok(html.includes(`<h1>${j.name} <span class="phase`), "the run heads its page");
      assert.ok(html.includes(`local-demo on ${j.provider}`), "the page names the provider");
      assert.match(html, new RegExp(`<span class="phase \\w+">${j.phase}</span>`), "the phase badge");
      assert.ok(html.includes(j.log), "its log");
      const row = dashboardRow(data);
      assert.deepEqual([row.run, row.provider, row.phase, row.live], [j.name, j.provider, j.phase, j.phase === "RUNNING"]);
      rows.push(row);
    }
    // Asked for each job's own ID (the page's status and the cost so far each ask once).
    assert.deepEqual([...new Set(asked)].sort(), ["ray:raysubmit_8f2k", "slurm:41877"]);
    const table = dashboardHtml({ rows, problems: [], sources: ["this directory"], generatedAt: now, refreshSeconds: 10 });
    for (const j of jobs) {
      const tr = table.split("<tr").find((r) => r.includes(j.name));
      assert.ok(tr !== undefined, `${j.name} has a row`);
      assert.ok(tr.includes(j.provider) && tr.includes(`>${j.phase}</span>`), `${j.name}'s row: ${tr}`);
    }
  });
});
