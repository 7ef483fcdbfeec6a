// Estimate vs actual after a run (`rlpipe cost --run`): the per-line arithmetic (compute scaled by the provider's
// billable time, sandbox seconds × size, requests, unit conversions, parents summing children, unmeasured lines
// saying why); usage counted per run by a real `rlpipe serve` on 127.0.0.1 (reward batches named by X-Rlpipe-Run,
// tool calls by a /r/<run>/ prefix) and written to its usage store, one object per instance, summed by the reader.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { billingOf, createModelArtsAdapter } from "../adapters/providers/modelarts.js";
import { billingFromStatus } from "../adapters/providers/provider.js";
import { TioneAdapter } from "../adapters/providers/tione.js";
import { dirRunRecords, readRunRecord, runsDir } from "../adapters/providers/run-records.js";
import { FsStore } from "../adapters/storage/fs.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { executeDeploy, prepareDeploy } from "../functions/deploy.js";
import { normalUnit, withActual } from "../core/cost/actual.js";
import { actualHtml, actualMarkdown, actualTable, actualTotals } from "../core/cost/render/actual.js";
import type { CostLine, CostReport, Rate } from "../core/cost/types.js";
import { type UsageRecord, usageLayout } from "../core/run-usage.js";
import { costOfRun, readRunUsage } from "../functions/run-cost.js";
import { UsageMeter } from "../functions/usage-meter.js";
import { fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { TioneFake } from "./fakes/tione-fake.js";
import { FakeModelArts } from "./fakes/modelarts-fake.js";
import { type Ran, runCliAsync } from "./cli-process.js";
import { deployPricedDemo } from "./local-demo-run.js";
import { ROOT, editYaml, recipeText } from "./helpers.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
const range = (low: number, expected: number, high: number) => ({ low, expected, high });
const rate = (id: string, value: number, currency: "CNY" | "USD", unit: string): Rate => ({ id, value, currency, unit, source: `test rate ${id}`, dateRead: "2026-11-01", confidence: "official" });

/** A small report whose figures are consistent: 10 expected hours on a 2-node flavor, E2B-like sandboxes, Lambda-like requests. */
function report(): CostReport {
  const nodeRate = rate("modelarts:flavor", 30, "CNY", "node-hour");
  const cpu = rate("sandbox:e2b", 0.000014, "USD", "vcpu-second");
  const mem = rate("sandbox:e2b:memory", 0.0162, "USD", "gib-hour");
  const req = rate("lambda:requests", 0.2, "USD", "1m-requests");
  const lines: CostLine[] = [
    { id: "compute", component: "compute", label: "training", provider: "modelarts", resource: "flavor", unit: "node-hour", quantity: range(16, 20, 24), rate: nodeRate, cost: range(480, 600, 720), currency: "CNY", basis: "catalog" },
    {
      id: "sandbox", component: "sandbox", label: "sandboxes", provider: "e2b", resource: "sandbox", unit: "sandbox", quantity: range(1, 1, 1), basis: "usage-estimate", currency: "USD", cost: range(1, 2, 3),
      children: [
        { id: "sandbox.cpu", component: "sandbox", label: "vCPU", provider: "e2b", resource: "vcpu", unit: "vcpu-second", quantity: range(1e5, 2e5, 3e5), rate: cpu, cost: range(1.4, 2.8, 4.2), currency: "USD", basis: "usage-estimate" },
        { id: "sandbox.mem", component: "sandbox", label: "memory", provider: "e2b", resource: "memory", unit: "GiB-hour", quantity: range(10, 20, 30), rate: mem, cost: range(0.162, 0.324, 0.486), currency: "USD", basis: "usage-estimate" },
      ],
    },
    { id: "functions", component: "functions", label: "requests", provider: "lambda", resource: "requests", unit: "request", quantity: range(1000, 2000, 3000), rate: req, cost: range(0.0002, 0.0004, 0.0006), currency: "USD", basis: "usage-estimate" },
    { id: "storage", component: "storage", label: "checkpoints", provider: "obs", resource: "standard", unit: "gb-month", quantity: range(10, 20, 30), rate: rate("obs:standard:storage", 0.099, "CNY", "gb-month"), cost: range(0.99, 1.98, 2.97), currency: "CNY", basis: "catalog" },
    { id: "egress", component: "egress", label: "export", provider: "obs", resource: "egress", unit: "gb", quantity: range(4, 4, 4), basis: "catalog", rateNeeded: { item: "obs:egress", unit: "gb", howToSupply: "prices:" } },
  ];
  return {
    schema: "rlpipe.cost-report", version: 1, generatedAt: "2026-11-01T00:00:00.000Z", recipe: { name: "t", hash: "ab".repeat(32) }, mode: "offline", chosen: "modelarts",
    candidates: [{ provider: "modelarts", nodes: 2, hours: range(8, 10, 12), chosen: true }, { provider: "tione", nodes: 1, hours: range(5, 6, 7), chosen: false }],
    // Totals as the estimate sums them: CNY lines plus USD lines at 7 (the egress line has no rate).
    lines, fx: { cnyPerUsd: 7, source: "test", dateRead: "2026-11-01" }, totals: { CNY: range(501.0014, 615.9828, 730.9642), USD: range(71.5716, 87.9975, 104.4235), incomplete: true },
    steps: range(1, 1, 1), secondsPerStep: range(1, 1, 1), cumulative: [], assumptions: [], exclusions: [], priceSources: [],
  };
}

const usage = (sandboxSeconds: number, requests: number, functionSeconds = 10) => ({
  run: "r", instances: 1, sandboxes: ["e2b"],
  counters: { requests, rewardRequests: requests, toolCalls: 0, samples: requests * 8, evaluated: requests * 3, cacheHits: requests * 5, sandboxSeconds, functionSeconds },
});

describe("estimate vs actual: the per-line arithmetic", () => {
  it("compute scales with the billable time; sandbox seconds × size; requests; rates in other units are converted", () => {
    const r = withActual(report(), {
      run: "r", compute: { hours: 12.5, running: false, source: "ModelArts job status.duration" },
      usage: usage(50_000, 1500), usageSource: "store", sandbox: { vcpus: 2, memoryGiB: 0.5, source: "test" },
    });
    const a = new Map(r.actual!.lines.map((l) => [l.id, l]));
    // 20 node-hours expected in 10 hours = 2 nodes; 12.5 billable hours → 25 node-hours at 30 CNY.
    assert.deepEqual([a.get("compute")!.quantity, a.get("compute")!.cost, a.get("compute")!.currency], [25, 750, "CNY"]);
    assert.match(a.get("compute")!.source, /ModelArts job status\.duration: 12\.5 h billable × 2 nodes \(this line's share/);
    // 50,000 sandbox-s × 2 vCPU = 100,000 vCPU-s at 0.000014 USD; × 0.5 GiB = 25,000 GiB-s = 6.944… GiB-h at 0.0162.
    assert.deepEqual([a.get("sandbox.cpu")!.quantity, a.get("sandbox.cpu")!.cost], [100_000, 1.4]);
    assert.equal(a.get("sandbox.mem")!.quantity, 6.944444);
    assert.equal(a.get("sandbox.mem")!.cost, 0.1125);
    assert.deepEqual([a.get("sandbox")!.cost, a.get("sandbox")!.currency, a.get("sandbox")!.source], [1.5125, "USD", "sum of its lines"]);
    // 1,500 requests at 0.2 USD per 1M requests.
    assert.deepEqual([a.get("functions")!.quantity, a.get("functions")!.cost], [1500, 0.0003]);
    assert.match(a.get("storage")!.source, /^not measured: storage is not measured by rlpipe/);
    assert.equal(a.get("storage")!.cost, undefined);
    assert.match(a.get("egress")!.source, /^not measured/);
    // Total of the measured top-level lines: 750 CNY + (1.5125 + 0.0003) USD × 7.
    assert.deepEqual(r.actual!.total, { CNY: 760.5896, USD: 108.655657 }); // 750 + 1.5128 × 7 CNY; ÷ 7 USD (6 decimals)
    assert.deepEqual(r.actual!.lines.map((l) => l.id), ["compute", "sandbox", "sandbox.cpu", "sandbox.mem", "functions", "storage", "egress"]);
  });

  it("what was not measured says why; a running job is so far; a parent with an unmeasured child has no sum", () => {
    const r = withActual(report(), { run: "r", computeMissing: "modelarts says the job has not started", usageSource: "no usage recorded under file:///x/r/usage/" });
    const a = new Map(r.actual!.lines.map((l) => [l.id, l]));
    assert.equal(a.get("compute")!.source, "not measured: modelarts says the job has not started");
    assert.equal(a.get("sandbox.cpu")!.source, "not measured: no usage recorded under file:///x/r/usage/");
    assert.equal(a.get("sandbox")!.source, "not every line under it was measured and priced");
    assert.equal(r.actual!.total, undefined);
    const running = withActual(report(), { run: "r", compute: { hours: 1, running: true, source: "Ray job start_time/end_time (running: until now)" }, usageSource: "none" });
    assert.match(running.actual!.lines[0]!.source, /1 h billable so far/);
  });

  it("a run whose lines have no rate: the totals say unknown (N lines without a rate) in table, Markdown and HTML, never ¥0 / $0, and the prices: block to add", () => {
    const unpriced = (l: CostLine): CostLine => {
      const { rate: _r, cost: _c, currency: _cur, ...rest } = l;
      return { ...rest, rateNeeded: { item: `${l.provider}:${l.resource}`, unit: l.unit, howToSupply: "prices:" }, ...(l.children === undefined ? {} : { children: l.children.map(unpriced) }) };
    };
    const base = report();
    const bare = { ...base, lines: base.lines.map(unpriced), totals: { CNY: range(0, 0, 0), USD: range(0, 0, 0), incomplete: true } };
    const r = withActual(bare, { run: "r", compute: { hours: 5, running: false, source: "test" }, usageSource: "test", usage: usage(100, 10) });
    assert.equal(r.actual!.total, undefined);
    // Every line needs a rate: 7 of them (the sandbox's parent and its two children count each).
    const n = 7;
    const total = (text: string) => text.split("\n").find((l) => /TOTAL \(CNY \/ USD\)/i.test(l))!;
    for (const row of [total(actualTable(r)), total(actualMarkdown(r)), total(actualHtml(r))]) {
      assert.equal((row.match(new RegExp(`unknown \\(${n} lines without a rate\\)`, "g")) ?? []).length, 2, row);
      assert.doesNotMatch(row, /¥0|\$0/);
    }
    assert.deepEqual(actualTotals(r), { est: `unknown (${n} lines without a rate)`, actual: `unknown (${n} lines without a rate)`, missing: n });
    // The block to paste under prices:, with every item that needs a rate, in each format.
    for (const text of [actualTable(r), actualMarkdown(r), actualHtml(r)]) {
      assert.match(text, /add this under prices: in the recipe/);
      for (const item of ["modelarts:flavor", "e2b:sandbox", "e2b:vcpu", "e2b:memory", "lambda:requests", "obs:standard", "obs:egress"]) assert.ok(text.includes(`- item: ${item}`), item);
    }
    assert.match(actualMarkdown(r), /```yaml\nprices:\n/);
    // Within the cost page the block is the page's own (once), not the section's.
    assert.doesNotMatch(actualHtml(r, { snippet: false }), /<pre class="snippet">/);
  });

  it("some lines priced, some not: at least the priced sum, with the count left out; a ¥0 priced sum is unknown, not ¥0", () => {
    const r = withActual(report(), { run: "r", compute: { hours: 5, running: false, source: "test" }, usageSource: "test", usage: usage(100, 10) });
    const t = actualTotals(r);
    assert.equal(t.missing, 1);
    assert.equal(t.est, "at least ¥616 / $88.00 (1 line without a rate)");
    assert.match(t.actual, /^at least ¥\d[\d,.]* \/ \$\d[\d,.]* \(1 line without a rate\)$/);
    // A run that used nothing billable yet (0 hours, no usage): the priced lines come to ¥0, and a line has no rate.
    const idle = withActual(report(), { run: "r", compute: { hours: 0, running: true, source: "test" }, usageSource: "none" });
    assert.equal(idle.actual!.total!.CNY, 0);
    assert.equal(actualTotals(idle).actual, "unknown (1 line without a rate)");
    for (const text of [actualTable(idle), actualMarkdown(idle), actualHtml(idle)]) {
      const row = text.split("\n").find((l) => /TOTAL \(CNY \/ USD\)/i.test(l))!;
      assert.doesNotMatch(row, /¥0(?![.,\d])|\$0(?![.,\d])/, row);
    }
    // Every line priced: plain figures, no block to add.
    const { rateNeeded: _n, ...egress } = report().lines.find((l) => l.id === "egress")!;
    const full = report();
    const complete: CostReport = { ...full, totals: { ...full.totals, incomplete: false }, lines: full.lines.map((l) => (l.id === "egress" ? { ...egress, rate: rate("obs:egress", 0.5, "CNY", "gb"), cost: range(2, 2, 2), currency: "CNY" as const } : l)) };
    const done = withActual(complete, { run: "r", compute: { hours: 5, running: false, source: "test" }, usageSource: "test", usage: usage(100, 10) });
    assert.doesNotMatch(actualTotals(done).actual, /unknown|at least/);
    assert.doesNotMatch(actualTable(done), /under prices:/);
  });

  it("units are read as the catalog spells them", () => {
    assert.deepEqual(["1M requests", "GiB-second", "GB-month", "node-hour"].map(normalUnit), ["1m-requests", "gib-second", "gb-month", "node-hour"]);
  });
});

describe("usage counted per run", () => {
  it("instances write their own records; the reader sums them and skips what is not a record of the run", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-usage-"));
    const store = new FsStore(dir);
    try {
      const a = new UsageMeter({ platform: "lambda", instance: "a", memoryMb: 1024, sandbox: "e2b", sink: store });
      const b = new UsageMeter({ platform: "lambda", instance: "b", memoryMb: 512, sandbox: "e2b", sink: store });
      await Promise.all([a.record("run-1", { requests: 1, sandboxSeconds: 1.5, functionSeconds: 2 }), b.record("run-1", { requests: 1, sandboxSeconds: 0.25, functionSeconds: 4 })]);
      await a.record("run-1", { requests: 1, sandboxSeconds: 1, functionSeconds: 2 });
      await a.record("run-2", { requests: 5 });
      await a.record("../escape", { requests: 1 }); // not a run name: not counted, nothing written
      await store.putBytes(usageLayout.object("run-1", "junk"), "{}");
      const { usage: u, problems } = await readRunUsage(store, "run-1");
      assert.deepEqual(u!.counters, { requests: 3, rewardRequests: 0, toolCalls: 0, samples: 0, evaluated: 0, cacheHits: 0, sandboxSeconds: 2.75, functionSeconds: 8 });
      assert.equal(u!.gbSeconds, 4 * 1 + 4 * 0.5); // a: 4 s × 1 GB, b: 4 s × 0.5 GB
      assert.equal(u!.instances, 2);
      assert.deepEqual(problems, ["run-1/usage/junk.json: not a usage record of run-1"]);
      assert.deepEqual((await readRunUsage(store, "run-3")).usage, undefined);
      assert.deepEqual(readdirSync(dir).sort(), ["run-1", "run-2"]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** `rlpipe serve` as a child on 127.0.0.1 (port 0), its URL read from its first line. */
export async function startServe(args: string[], env: Record<string, string> = {}): Promise<{ url: string; child: ChildProcess; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [CLI, "serve", "--sandbox", "local", "--host", "127.0.0.1", "--port", "0", "--quiet", ...args], {
    stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: tmpdir(), ...env },
  });
  let err = "";
  child.stderr!.on("data", (d: Buffer) => { err += d.toString(); });
  const url = await new Promise<string>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /rlpipe serve: (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m !== null) resolve(m[1]!);
    });
    child.on("exit", (code) => reject(new Error(`rlpipe serve exited (${code}): ${err}`)));
  });
  return {
    url, child,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) { resolve(); return; }
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    }),
  };
}

const GT = { input: ["1 2", "5 5"], output: ["3", "10"], fn_name: null, type: "stdin_stdout" };
const sample = (code: string) => ({ data_source: "t", solution_str: `\`\`\`python\n${code}\n\`\`\``, ground_truth: JSON.stringify(GT), extra_info: null });

describe("usage counted per run by a real rlpipe serve", () => {
  let dir: string;
  let serve: Awaited<ReturnType<typeof startServe>>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-serve-usage-"));
    serve = await startServe(["--usage-store", `file://${dir}`]);
  });
  after(async () => {
    await serve.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("counts reward batches (X-Rlpipe-Run) and tool calls (/r/<run>/), writes them to the usage store, and counts nothing unnamed", async () => {
    const run = "usage-run-0a1b2c3d";
    const post = (path: string, body: unknown, headers: Record<string, string> = {}) => fetch(`${serve.url}${path}`, { method: "POST", body: JSON.stringify(body), headers: { "content-type": "application/json", ...headers } });
    const batch = [sample("a, b = map(int, input().split())\nprint(a + b)"), sample("print(3)"), sample("a, b = map(int, input().split())\nprint(a + b)")];
    const r1 = await post("/v1/rewards", { samples: batch }, { "x-rlpipe-run": run });
    assert.equal(r1.status, 200);
    const body = await r1.json() as { stats: { sandboxSeconds: number; evaluated: number } };
    assert.equal(body.stats.evaluated, 2);
    assert.ok(body.stats.sandboxSeconds > 0, "the batch's sandbox time is in its stats");
    const tool = await post(`/r/${run}/run_code`, { code: "print(6 * 7)", language: "python" });
    assert.equal(tool.status, 200);
    assert.match(JSON.stringify(await tool.json()), /42/);
    await post("/v1/rewards", { samples: [sample("print(1)")] }); // no run named: not counted
    assert.equal((await post("/v1/rewards", { samples: batch }, { "x-rlpipe-run": "../../etc" })).status, 400);

    const store = new FsStore(dir);
    try {
      const { usage: u, problems } = await readRunUsage(store, run);
      assert.deepEqual(problems, []);
      const c = u!.counters;
      assert.deepEqual([c.requests, c.rewardRequests, c.toolCalls, c.samples, c.evaluated, c.cacheHits], [2, 1, 1, 3, 3, 1]);
      assert.ok(c.sandboxSeconds >= body.stats.sandboxSeconds, "tool call time is added to the batch's");
      assert.ok(c.functionSeconds > 0);
      assert.deepEqual(u!.sandboxes, ["local"]);
      const live = await (await fetch(`${serve.url}/v1/usage/${run}`)).json() as UsageRecord;
      assert.deepEqual(live.counters, c);
      assert.deepEqual(readdirSync(dir), [run], "only the named run has usage in the store");
    } finally {
      await store.close();
    }
  });
});

// ------------------------------------------------------------------------------------------ after real runs

/** The CLI as a child process, without blocking this event loop. */
const rlpipe = (args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Ran> =>
  runCliAsync(args, { cwd: opts.cwd, env: { RLPIPE_POLL_MS: "200", ...opts.env }, timeoutMs: 180_000 });

const flatLines = (ls: readonly CostLine[]): CostLine[] => ls.flatMap((l) => [l, ...flatLines(l.children ?? [])]);

describe("rlpipe cost --run after a local run (real wall time, usage counted by the run's own reward function)", () => {
  let dir: string;
  let name: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-cost-run-"));
    // The demo with a rate for this machine's time, so the compute line has a cost to compare.
    name = await deployPricedDemo(dir);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("compares per line: compute from the runner's wall time at the recorded rate, sandbox seconds from the function's count", async () => {
    const record = await readRunRecord(runsDir(dir), name);
    assert.equal((record.cost as unknown as CostReport | undefined)?.schema, "rlpipe.cost-report", "the deploy kept its estimate in the run record");
    const r = await rlpipe(["cost", "--run", name, "--json"], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    const report = JSON.parse(r.out) as CostReport;
    assert.equal(report.actual!.run, name);
    assert.deepEqual(report.generatedAt, (record.cost as unknown as CostReport).generatedAt, "the estimate is the one recorded at deploy");
    const actual = new Map(report.actual!.lines.map((l) => [l.id, l]));

    // Wall time as the local runner recorded it: from its start to the exit code file.
    const jobDir = join(dir, ".rlpipe", "local", name);
    const state = JSON.parse(readFileSync(join(jobDir, "state.json"), "utf8")) as { startedAt: string };
    const wallHours = (statSync(join(jobDir, "exit_code")).mtime.getTime() - Date.parse(state.startedAt)) / 3_600_000;
    const compute = actual.get("compute")!;
    assert.ok(Math.abs(compute.quantity! - wallHours) < 1e-5, `${compute.quantity} node-hours vs ${wallHours} h of wall time on 1 node`);
    assert.equal(compute.currency, "CNY");
    assert.ok(Math.abs(compute.cost! - compute.quantity! * 36) < 1e-5);
    assert.match(compute.source, /local runner start\/exit times \(wall time\)/);

    // The job's own rlpipe serve wrote the run's usage into the run's store; rlpipe eval named the run.
    const store = new FsStore(join(dir, ".rlpipe", "work", "local-demo", "store"));
    try {
      const { usage: u } = await readRunUsage(store, name);
      assert.ok(u !== undefined, "usage recorded in the run's store");
      assert.deepEqual([u.counters.rewardRequests, u.counters.samples, u.instances], [1, 16, 1]);
      assert.ok(u.counters.sandboxSeconds > 0);
      const sandbox = actual.get("sandbox")!;
      assert.equal(sandbox.quantity, u.counters.sandboxSeconds);
      assert.match(sandbox.source, new RegExp(`function usage at file://.*/${name}/usage/ \\(1 instance\\): ${u.counters.sandboxSeconds} sandbox-s of 16 programs`));
    } finally {
      await store.close();
    }
    assert.equal(report.actual!.total!.CNY, compute.cost, "the sandbox is part of the compute: only the compute line is priced");
    assert.match(actual.get("sandbox")!.source, /priced as part of compute/);

    // The same comparison as a table, and as a section of the HTML page.
    const table = await rlpipe(["cost", "--run", name], { cwd: dir });
    assert.equal(table.code, 0, table.err);
    assert.match(table.out, new RegExp(`Estimate vs actual: run ${name}`));
    assert.match(table.out, /estimate recorded at deploy/);
    assert.match(table.out, /LINE +UNIT +EST\. QTY +ACTUAL QTY +EST\. COST +ACTUAL COST +DIFFERENCE/);
    const html = await rlpipe(["cost", "--run", name, "--format", "html", "--out", "run.html"], { cwd: dir });
    assert.equal(html.code, 0, html.err);
    const page = readFileSync(join(dir, "run.html"), "utf8");
    assert.match(page, /<section id="actual">/);
    assert.ok(page.indexOf('<section id="actual">') < page.indexOf("<h2>Price sources</h2>"));
  });

  it("a record from before recorded estimates is still read: the estimate is made again with the recorded prices", async () => {
    const path = join(runsDir(dir), `${name}.json`);
    const saved = readFileSync(path, "utf8");
    try {
      const old = JSON.parse(saved) as Record<string, unknown>;
      delete old["cost"];
      writeFileSync(path, JSON.stringify(old));
      const r = await rlpipe(["cost", "--run", name], { cwd: dir });
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /estimate made again from the recorded recipe and prices/);
      assert.match(r.out, /local runner start\/exit times/);
    } finally {
      writeFileSync(path, saved);
    }
  });

  it("a recorded estimate without rates: cost --run says unknown (N lines without a rate) and the prices: block, never a ¥0 total", async () => {
    const path = join(runsDir(dir), `${name}.json`);
    const saved = readFileSync(path, "utf8");
    try {
      const rec = JSON.parse(saved) as { cost: CostReport };
      const strip = (l: CostLine): CostLine => {
        const { rate: _r, cost: _c, currency: _cur, ...rest } = l;
        const need = l.rate !== undefined || l.cost !== undefined ? { rateNeeded: { item: "self-hosted:node-hour", unit: l.unit, howToSupply: "prices:" } } : {};
        return { ...rest, ...need, ...(l.children === undefined ? {} : { children: l.children.map(strip) }) };
      };
      const zero = { low: 0, expected: 0, high: 0 };
      rec.cost = { ...rec.cost, lines: rec.cost.lines.map(strip), totals: { CNY: zero, USD: zero, incomplete: true }, candidates: rec.cost.candidates.map(({ cost: _c, currency: _cur, unitPrice: _u, ...c }) => c) };
      writeFileSync(path, JSON.stringify(rec));
      const missing = rec.cost.lines.filter((l) => l.rateNeeded !== undefined).length;
      assert.ok(missing > 0);
      const table = await rlpipe(["cost", "--run", name], { cwd: dir });
      assert.equal(table.code, 0, table.err);
      const row = table.out.split("\n").find((l) => /TOTAL \(CNY \/ USD\)/.test(l))!;
      assert.match(row, new RegExp(`unknown \\(${missing} lines? without a rate\\).*unknown \\(${missing} lines? without a rate\\)`));
      assert.doesNotMatch(row, /¥0|\$0/);
      assert.match(table.out, /add this under prices: in the recipe[\s\S]*- item: self-hosted:node-hour\n +value: <price>/);
      const html = await rlpipe(["cost", "--run", name, "--format", "html", "--out", "unpriced.html"], { cwd: dir });
      assert.equal(html.code, 0, html.err);
      assert.match(html.err, new RegExp(`actual unknown \\(${missing} lines? without a rate\\)`));
      assert.doesNotMatch(html.err, /¥0|\$0/);
      const page = readFileSync(join(dir, "unpriced.html"), "utf8");
      assert.equal((page.match(/<pre class="snippet">/g) ?? []).length, 1, "the block once on the page");
      assert.equal((page.match(/<svg\b/g) ?? []).length, 0, "no empty chart");
    } finally {
      writeFileSync(path, saved);
    }
  });

  it("bad input: an unknown run is exit 2; a recipe file or --online with --run is a usage error", async () => {
    const unknown = await rlpipe(["cost", "--run", "no-such-run-12345678"], { cwd: dir });
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /no run named no-such-run-12345678/);
    const both = await rlpipe(["cost", "demo.yaml", "--run", name], { cwd: dir });
    assert.equal(both.code, 2);
    assert.match(both.err, /reads the recipe from the run's record/);
    const online = await rlpipe(["cost", "--run", name, "--online"], { cwd: dir });
    assert.equal(online.code, 2);
  });
});

describe("estimate vs actual of a run deployed to the ModelArts fake (billable time from status.duration, usage counted by a real reward function)", () => {
  const AK = fakeHuaweiAk();
  const SK = fakeHuaweiSk();
  const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
  let dir: string;
  let fake: FakeModelArts;
  let serve: Awaited<ReturnType<typeof startServe>>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-cost-ma-"));
    fake = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID }).start();
    serve = await startServe(["--usage-store", `file://${join(dir, "usage")}`]);
  });
  after(async () => {
    await serve.stop();
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("per line: the job's billed hour at the recorded flavor rate, the sandbox seconds the function counted", async () => {
    const flavor = "modelarts.bm.npu.arm.8snt9b2.d";
    const text = editYaml(recipeText("qwen3-1.7b-code-toolcall"), [[["prices"], [{ item: `modelarts:${flavor}`, value: 40, currency: "CNY", unit: "node-hour", source: "test quote" }]]]);
    const loaded = parseRecipe(text, join(dir, "ma.yaml"));
    const env = { HOME: dir, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fake.endpoint };
    const uploaded = new Map<string, number>();
    const adapter = createModelArtsAdapter({
      env, recipe: loaded.recipe, cwd: dir,
      bundleSink: () => ({ putBytes: async (key, data) => { uploaded.set(key, data.length); }, head: async (key) => (uploaded.has(key) ? { size: uploaded.get(key)! } : undefined) }),
    });
    const records = dirRunRecords(join(dir, "runs"));
    const prepared = await prepareDeploy({ loaded, provider: "modelarts", planOptions: { assets: bundledAssets() } }, records);
    const deployed = await executeDeploy(prepared, adapter, { records, policy: { baseDelayMs: 1 }, statusPolicy: {}, log: () => undefined, recipeFile: loaded.file });
    const name = deployed.ref.name;

    // The job's reward shim, as verl calls it in the job: it names the run from RLPIPE_RUN.
    const py = spawnSync(join(ROOT, ".venv-test", "bin", "python"), ["-c", [
      "import json, sys", `sys.path.insert(0, ${JSON.stringify(join(ROOT, "recipes", "python"))})`, "import rlpipe_reward as s",
      `gt = ${JSON.stringify(JSON.stringify(GT))}`,
      "codes = ['```python\\na, b = map(int, input().split())\\nprint(a + b)\\n```', '```python\\nprint(3)\\n```']",
      "print(json.dumps(s.compute_score_batch(['t'] * 4, codes * 2, [gt] * 4, [None] * 4, return_dict=False)))",
    ].join("\n")], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", RLPIPE_RUN: name, RLPIPE_REWARD_URL: `${serve.url}/v1/rewards` }, timeout: 60_000 });
    assert.equal(py.status, 0, py.stderr);
    assert.deepEqual(JSON.parse(py.stdout), [1, 0.5, 1, 0.5]); // print(3) passes "1 2" only

    for (let i = 0; i < 10 && (await adapter.status(deployed.ref)).phase !== "SUCCEEDED"; i++);
    const record = await records.read(name);
    const result = await costOfRun({
      record, usageStore: `file://${join(dir, "usage")}`,
      load: async () => ({ adapter, close: async () => undefined }),
      estimate: () => assert.fail("the recorded estimate is used"),
    });
    assert.equal(result.estimateFrom, "recorded");
    const actual = new Map(result.report.actual!.lines.map((l) => [l.id, l]));
    // The fake bills 3,600,000 ms for the finished job: one node-hour, split over the stages as estimated, at 40 CNY.
    const compute = actual.get("compute")!;
    assert.deepEqual([compute.quantity, compute.currency, compute.source], [1, "CNY", "sum of its lines"]);
    assert.ok(Math.abs(compute.cost! - 40) < 1e-3, `${compute.cost} ≈ 40 (the stages' shares are rounded to 6 significant digits)`);
    const stages = flatLines(result.report.lines).filter((l) => l.id.startsWith("compute."));
    assert.ok(stages.length >= 2);
    for (const l of stages) assert.match(actual.get(l.id)!.source, /^ModelArts job status\.duration: 1 h billable × /);
    const sandbox = actual.get("sandbox")!;
    assert.ok(sandbox.quantity! > 0);
    assert.match(sandbox.source, /\(1 instance\): .* sandbox-s of 2 programs/);
    assert.match(actual.get("storage.capacity")!.source, /^not measured: storage is not measured by rlpipe/);
    assert.ok(Math.abs(result.report.actual!.total!.CNY - 40) < 1e-3);
    assert.equal(fake.stats.authFailures, 0);
  });
});

describe("billable time as each provider states it", () => {
  it("ModelArts: status.duration from start_time (running: so far); TI-ONE: RuntimeInSeconds; others: status start and end", async () => {
    const done = billingOf({ metadata: { id: "j", name: "n" }, status: { phase: "Completed", start_time: 1_790_000_000_000, duration: 5_400_000 } });
    assert.deepEqual(done, { seconds: 5400, running: false, startedAt: new Date(1_790_000_000_000).toISOString(), endedAt: new Date(1_790_005_400_000).toISOString(), source: "ModelArts job status.duration" });
    const running = billingOf({ metadata: { id: "j", name: "n" }, status: { phase: "Running", start_time: 1_790_000_000, duration: 60_000 } }); // start_time in seconds
    assert.deepEqual([running!.seconds, running!.running, running!.endedAt, running!.source], [60, true, undefined, "ModelArts job status.duration (running: so far)"]);
    assert.equal(billingOf({ metadata: { id: "j", name: "n" }, status: { phase: "Pending" } }), undefined);

    const ray = billingFromStatus({ phase: "SUCCEEDED", rawPhase: "SUCCEEDED", startedAt: "2026-11-20T08:00:00.000Z", endedAt: "2026-11-20T09:30:00.000Z" }, "Ray job start_time/end_time");
    assert.deepEqual([ray!.seconds, ray!.running, ray!.source], [5400, false, "Ray job start_time/end_time"]);
    const live = billingFromStatus({ phase: "RUNNING", rawPhase: "RUNNING", startedAt: "2026-11-20T08:00:00.000Z" }, "Ray job start_time/end_time", new Date("2026-11-20T08:10:00.000Z"));
    assert.deepEqual([live!.seconds, live!.running, live!.source], [600, true, "Ray job start_time/end_time (running: until now)"]);
    assert.equal(billingFromStatus({ phase: "QUEUED", rawPhase: "PENDING" }, "x"), undefined);

    const secretId = fakeTencentSecretId();
    const secretKey = fakeTencentSecretKey();
    const fake = await TioneFake.start([{ secretId, secretKey }]);
    try {
      const t = fake.seedTask({ Name: "run-tione-0a1b2c3d", ChargeType: "POSTPAID_BY_HOUR", ResourceConfigInfos: [] }, "SUCCEED");
      t.endMs = t.startMs! + 5_400_000;
      const adapter = new TioneAdapter({ env: { TENCENTCLOUD_SECRET_ID: secretId, TENCENTCLOUD_SECRET_KEY: secretKey, TIONE_ENDPOINT: fake.endpoint, HOME: tmpdir() }, recipe: parseRecipe(recipeText("retool-qwen3-4b-tione-ags"), "t.yaml").recipe, cwd: tmpdir() });
      try {
        const b = await adapter.billing({ provider: "tione", name: "run-tione-0a1b2c3d", id: t.id, region: "ap-shanghai", endpoint: fake.endpoint });
        assert.deepEqual([b!.seconds, b!.running, b!.source], [5400, false, "TI-ONE DescribeTrainingTask RuntimeInSeconds"]);
        assert.deepEqual(fake.callsOf("DescribeTrainingTask").map((c) => c.outcome), [undefined], "one signed call, accepted");
      } finally {
        await adapter.close();
      }
    } finally {
      await fake.stop();
    }
  });
});
