// deploy/status/logs/stop as a user runs them (child processes): exit codes that say what happened (the job's
// outcome, a declined prompt, Ctrl-C, an unreachable provider), a heartbeat and the final phase while following,
// one bounded retry layer with a line per retry, current endpoint variables over recorded ones, and re-running
// an unchanged recipe with --new without ever making a job twice.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { LocalAdapter } from "../adapters/providers/local.js";
import { createModelArtsAdapter } from "../adapters/providers/modelarts.js";
import type { JobRef } from "../adapters/providers/provider.js";
import { type RunRecord, runsDir, writeRunRecord } from "../adapters/providers/run-records.js";
import { S3Store } from "../adapters/storage/s3.js";
import { type Plan, bundleDigestOf } from "../core/plan.js";
import type { Provider } from "../core/recipe/schema.js";
import { fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { FakeModelArts } from "./fakes/modelarts-fake.js";
import { ROOT, loadSeed, planSeed, recipePath } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

/** script(1) (util-linux, in every Debian install) gives the CLI a terminal. */
function assertScriptAvailable(): void {
  assert.equal(spawnSync("script", ["--version"]).status, 0, "script(1) from util-linux is needed to run the CLI on a terminal");
}

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

interface Result { code: number | null; signal: NodeJS.Signals | null; out: string; err: string }

/** The CLI as a child process, without blocking this event loop (fakes live in this process). */
function start(args: string[], opts: { cwd: string; env?: Record<string, string | undefined>; mergeStderr?: boolean }): { child: ChildProcess; done: Promise<Result> } {
  const env = Object.fromEntries(Object.entries({ PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: opts.cwd, RLPIPE_POLL_MS: "150", ...opts.env }).filter((e): e is [string, string] => e[1] !== undefined));
  const child = opts.mergeStderr === true
    ? spawn("sh", ["-c", `exec "$0" "$@" 2>&1`, process.execPath, CLI, ...args], { cwd: opts.cwd, env, stdio: ["ignore", "pipe", "pipe"] })
    : spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => { out += d.toString(); });
  child.stderr!.on("data", (d: Buffer) => { err += d.toString(); });
  // A generous bound for the test, not a timing assertion: a command that has not ended by then is killed and
  // its null exit code fails the test.
  const t = setTimeout(() => child.kill("SIGKILL"), 120_000);
  const done = new Promise<Result>((resolve) => child.on("close", (code, signal) => { clearTimeout(t); resolve({ code, signal, out, err }); }));
  return { child, done };
}

const rlpipe = (args: string[], opts: Parameters<typeof start>[1]): Promise<Result> => start(args, opts).done;

function closedPort(): Promise<number> {
  return new Promise((res) => { const s = createServer(); s.listen(0, "127.0.0.1", () => { const p = (s.address() as { port: number }).port; s.close(() => res(p)); }); });
}

async function until(what: string, ok: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A run record for a job made outside the CLI (the fields status/logs/stop read). */
async function recordRun(dir: string, provider: Provider, ref: JobRef, recipeData: unknown): Promise<void> {
  const now = new Date().toISOString();
  const record: RunRecord = {
    version: 1, name: ref.name, provider,
    ref: { id: ref.id, ...(ref.region === undefined ? {} : { region: ref.region }), ...(ref.endpoint === undefined ? {} : { endpoint: ref.endpoint }), ...(ref.extra === undefined ? {} : { extra: ref.extra }) },
    recipe: { name: "test", file: "test.yaml", hash: "0".repeat(64) }, recipeData, request: {}, outcome: "created", createdAt: now, updatedAt: now, prices: [],
  };
  await writeRunRecord(runsDir(dir), record);
}

/** A Plan-shaped object around a hand-written launch.sh (the local adapter reads name, digest and files). */
function scriptPlan(name: string, script: string): Plan {
  const files = [{ path: "launch.sh", content: `#!/usr/bin/env bash\n${script}\n`, executable: true }];
  return { jobName: name, bundleDigest: bundleDigestOf(files), files } as unknown as Plan;
}

const RETRY_LINE = (provider: string, op: string) => new RegExp(`^rlpipe: ${provider} ${op}: .+; retrying in \\d+\\.\\d s \\(attempt 2\\)$`, "m");

describe("following a run (provider local): the job's outcome is the exit code, a heartbeat, the final phase, Ctrl-C", () => {
  let dir: string;
  let adapter: LocalAdapter;
  const recipeData = loadSeed("qwen3-1.7b-code-toolcall-sd").recipe;
  const job = async (name: string, script: string): Promise<JobRef> => {
    const p = scriptPlan(name, script);
    await adapter.prepare(p);
    const ref = await adapter.submit(p);
    await recordRun(dir, "local", ref, recipeData);
    return ref;
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-follow-"));
    adapter = new LocalAdapter({ cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stopGraceMs: 3000 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("logs -f: exit 0 when the job succeeded, 1 when it failed or was stopped; the final phase comes after the last log line", async () => {
    await job("ok-00000001", "echo first; sleep 2; echo last");
    const ok = await rlpipe(["logs", "ok-00000001", "-f"], { cwd: dir, env: { RLPIPE_HEARTBEAT_MS: "300" }, mergeStderr: true });
    assert.equal(ok.code, 0, ok.out);
    const lines = ok.out.trimEnd().split("\n");
    // A heartbeat may come between the last log line and the end on a busy machine (they share the terminal).
    const heartbeat = /^\[rlpipe\] ok-00000001: RUNNING, \d+s since it started$/;
    assert.deepEqual(lines.filter((l) => !heartbeat.test(l)).slice(-2), ["last", "[rlpipe] ok-00000001: SUCCEEDED (SUCCEEDED), exit code 0"], ok.out);
    assert.ok(lines.some((l) => /^\[rlpipe\] ok-00000001: RUNNING, \d+s since it started$/.test(l)), `a heartbeat line while it ran:\n${ok.out}`);

    const failing = await job("fails-00000001", "echo boom; exit 3");
    await until("the failing job to end", async () => (await adapter.status(failing)).phase === "FAILED");
    const failed = await rlpipe(["logs", "fails-00000001", "-f"], { cwd: dir });
    assert.equal(failed.code, 1, failed.err);
    assert.equal(failed.out, "boom\n");
    assert.match(failed.err, /\[rlpipe\] fails-00000001: FAILED \(FAILED\), exit code 3: launch\.sh exited with code 3/);

    const stopped = await job("stopped-00000001", "echo started; sleep 300 & wait");
    await until("the job to run", async () => (await adapter.status(stopped)).phase === "RUNNING");
    await adapter.stop(stopped);
    const s = await rlpipe(["logs", "stopped-00000001", "-f"], { cwd: dir });
    assert.equal(s.code, 1, "a STOPPED job is not a success");
    assert.match(s.err, /\[rlpipe\] stopped-00000001: STOPPED/);
    const plain = await rlpipe(["logs", "stopped-00000001"], { cwd: dir });
    assert.equal(plain.code, 0, "reading a log (without -f) worked, whatever the job did");
  });

  it("on a terminal the heartbeat is one line refreshed in place, cleared before other output", async () => {
    assertScriptAvailable();
    await job("tty-00000001", "echo first; sleep 3; echo last");
    const r = spawnSync("script", ["-qec", `${process.execPath} ${CLI} logs tty-00000001 -f`, "/dev/null"], {
      cwd: dir, encoding: "utf8", timeout: 60_000, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir, RLPIPE_POLL_MS: "150" },
    });
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout, /\r\x1b\[2K\[rlpipe\] tty-00000001: RUNNING, \ds since it started/, "a status line drawn in place");
    assert.match(r.stdout, /\r\x1b\[2Klast\r?\n/, "the status line is cleared before the next log line");
    assert.doesNotMatch(r.stdout, /since it started\r?\n/, "never left as a line of its own");
  });

  it("with --json: log lines and a last {name, phase} line on stdout, no heartbeat", async () => {
    await job("quiet-00000001", "echo one; sleep 1; echo two");
    const r = await rlpipe(["logs", "quiet-00000001", "-f", "--json"], { cwd: dir, env: { RLPIPE_HEARTBEAT_MS: "100" } });
    assert.equal(r.code, 0, r.err);
    const docs = r.out.trim().split("\n").map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(docs.slice(0, 2), [{ log: "one" }, { log: "two" }]);
    assert.deepEqual(docs.at(-1), { name: "quiet-00000001", phase: "SUCCEEDED", rawPhase: "SUCCEEDED", exitCode: 0 });
    assert.doesNotMatch(r.err, /since it started|following$/m);
  });

  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    it(`${sig === "SIGINT" ? "Ctrl-C" : "SIGTERM"} stops following, says the job keeps running and how to stop it (exit 130); the job is untouched`, async () => {
      const name = sig === "SIGINT" ? "long-00000001" : "long-00000002";
      const ref = await job(name, "echo started; sleep 300 & wait");
      const run = start(["logs", name, "-f"], { cwd: dir });
      let seen = "";
      run.child.stderr!.on("data", (d: Buffer) => { seen += d.toString(); });
      await until("the RUNNING line", () => new RegExp(`${name}: RUNNING`).test(seen));
      run.child.kill(sig);
      const r = await run.done;
      assert.equal(r.code, 130, r.err);
      assert.match(r.err, new RegExp(`rlpipe: stopped following ${name} \\(RUNNING\\); the job keeps running on local`));
      assert.match(r.err, new RegExp(`hint: rlpipe logs ${name} -f follows it again; rlpipe stop ${name} stops it`));
      assert.equal((await adapter.status(ref)).phase, "RUNNING", "the job was not stopped");
      const stop = await rlpipe(["stop", name], { cwd: dir });
      assert.equal(stop.code, 0, stop.err);
    });
  }

  it("a damaged run record is invalid input (exit 2): status names it, list lists the rest", async () => {
    mkdirSync(runsDir(dir), { recursive: true });
    writeFileSync(join(runsDir(dir), "damaged-00000001.json"), "{ not json");
    const st = await rlpipe(["status", "damaged-00000001"], { cwd: dir });
    assert.equal(st.code, 2, st.err);
    assert.match(st.err, /damaged-00000001\.json is not valid JSON\n {2}hint: restore the file from a backup, or remove it/);
    const list = await rlpipe(["list"], { cwd: dir });
    assert.equal(list.code, 2, list.err);
    if (existsSync(join(runsDir(dir), "ok-00000001.json"))) assert.match(list.out, /^ok-00000001 +local/m);
    rmSync(join(runsDir(dir), "damaged-00000001.json"));
  });

  it("status of every run shows each one, and exits 3 when a lookup failed", async () => {
    const gone = await job("gone-00000001", "true");
    await until("the job to end", async () => (await adapter.status(gone)).phase === "SUCCEEDED");
    rmSync(join(dir, ".rlpipe", "local", "gone-00000001"), { recursive: true, force: true });
    const r = await rlpipe(["status"], { cwd: dir });
    assert.equal(r.code, 3, r.err);
    assert.match(r.out, /^gone-00000001 +local +\d+ +unknown +no local job gone-00000001/m);
    assert.match(r.out, /^ok-00000001 +local +\d+ +SUCCEEDED +SUCCEEDED$/m);
    const j = await rlpipe(["status", "--json"], { cwd: dir });
    assert.equal(j.code, 3);
    assert.match((JSON.parse(j.out) as { name: string; error?: string }[]).find((x) => x.name === "gone-00000001")!.error!, /no local job/);
  });

  it("stop of an ended job says it has ended, not 'stop requested'; list and status print column headers and when a phase was seen", async () => {
    const done = await job("done-00000001", "true");
    await until("the job to end", async () => (await adapter.status(done)).phase === "SUCCEEDED");
    const stop = await rlpipe(["stop", "done-00000001"], { cwd: dir });
    assert.equal(stop.code, 0, stop.err);
    assert.equal(stop.out, "job done-00000001 has already ended: SUCCEEDED (SUCCEEDED); nothing to stop\n");
    const stopJson = await rlpipe(["stop", "done-00000001", "--json"], { cwd: dir });
    assert.deepEqual(JSON.parse(stopJson.out), { name: "done-00000001", stopRequested: false, phase: "SUCCEEDED", rawPhase: "SUCCEEDED" });
    // A running job is asked to stop, and once stopped a second stop says it has ended.
    const running = await job("running-00000001", "sleep 300");
    await until("the job to run", async () => (await adapter.status(running)).phase === "RUNNING");
    const first = await rlpipe(["stop", "running-00000001"], { cwd: dir });
    assert.equal(first.code, 0, first.err);
    assert.match(first.out, /^job running-00000001: stop requested; now (STOPPING|STOPPED) /);
    await until("the job to stop", async () => (await adapter.status(running)).phase === "STOPPED");
    assert.match((await rlpipe(["stop", "running-00000001"], { cwd: dir })).out, /^job running-00000001 has already ended: STOPPED /);

    const list = await rlpipe(["list"], { cwd: dir });
    const [listHead, ...listRows] = list.out.trimEnd().split("\n");
    assert.match(listHead!, /^RUN +PROVIDER +ID +CREATED +LAST PHASE SEEN +SEEN AT$/);
    const doneRow = listRows.find((l) => l.startsWith("done-00000001 "))!;
    assert.match(doneRow, /^done-00000001 +local +\d+ +\d{4}-\d\d-\d\dT\S+Z +SUCCEEDED +\d{4}-\d\d-\d\dT\S+Z$/);
    assert.doesNotMatch(list.out, / at \d{4}-/, "no 'SUCCEEDED at <time>': the time is when rlpipe last looked");
    // Every column starts where its header does.
    const at = (line: string, word: string) => line.indexOf(word);
    assert.equal(doneRow.indexOf("SUCCEEDED"), at(listHead!, "LAST PHASE SEEN"));
    const status = await rlpipe(["status", "done-00000001"], { cwd: dir });
    const [statusHead, statusRow] = status.out.trimEnd().split("\n");
    assert.match(statusHead!, /^RUN +PROVIDER +ID +PHASE +PROVIDER'S PHASE \/ DETAIL$/);
    assert.equal(statusRow!.indexOf("SUCCEEDED"), at(statusHead!, "PHASE"));
  });

  it("a declined confirmation exits 130 and creates nothing", () => {
    assertScriptAvailable();
    const fresh = mkdtempSync(join(tmpdir(), "rlpipe-decline-"));
    try {
      const r = spawnSync("script", ["-qec", `${process.execPath} ${CLI} deploy ${recipePath("local-demo")} --provider local`, "/dev/null"], {
        cwd: fresh, input: "n\n", encoding: "utf8", timeout: 60_000, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: fresh },
      });
      assert.equal(r.status, 130, r.stdout);
      assert.match(r.stdout, /Create job local-demo-[0-9a-f]{8} on local\? \[y\/N\]/);
      assert.match(r.stdout, /not confirmed; nothing was created/);
      assert.equal(existsSync(join(fresh, ".rlpipe", "local")), false);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});

describe("re-running an unchanged recipe (provider local)", () => {
  let dir: string;
  let port: number;
  before(async () => { dir = mkdtempSync(join(tmpdir(), "rlpipe-rerun-")); port = await closedPort(); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a deploy of an ended run says so and how to start another; --new makes run 2; a repeated --new whose record was lost finds its run", async () => {
    const env = { RLPIPE_SANDBOX_PORT: String(port) };
    const deploy = (...extra: string[]) => rlpipe(["deploy", recipePath("local-demo"), "--provider", "local", "--yes", ...extra], { cwd: dir, env });
    const jobs = () => readdirSync(join(dir, ".rlpipe", "local")).sort();

    const first = await deploy("--wait", "--json");
    assert.equal(first.code, 0, first.err);
    const base = (JSON.parse(first.out.trim().split("\n").pop()!) as { name: string }).name;

    const again = await deploy();
    assert.equal(again.code, 0, again.err);
    assert.match(again.out, new RegExp(`job ${base} already exists \\(an earlier deploy made it; nothing new was created\\)`));
    assert.match(again.out, /it has ended: SUCCEEDED \(SUCCEEDED\)/);
    assert.match(again.out, /to start a new run of this recipe: rlpipe deploy \S+local-demo\.yaml --provider local --new/);
    assert.deepEqual(jobs(), [base]);

    const second = await deploy("--new", "--wait", "--json");
    assert.equal(second.code, 0, second.err);
    const r2 = JSON.parse(second.out.trim().split("\n").pop()!) as Record<string, unknown>;
    assert.deepEqual({ name: r2["name"], outcome: r2["outcome"], attempt: r2["attempt"], phase: r2["phase"] }, { name: `${base}-r2`, outcome: "created", attempt: 2, phase: "SUCCEEDED" });
    assert.deepEqual(jobs(), [base, `${base}-r2`]);
    // Run 2 did the work again (run 1's completed-stage marker in the shared workDir is run 1's): its own results.
    const store = join(dir, ".rlpipe", "work", "local-demo", "store");
    assert.ok(existsSync(join(store, `${base}-r2.check`, "artifacts", "check.json")), "run 2 wrote its own results");
    const m2 = await rlpipe(["metrics", `${base}-r2.check`, "--json"], { cwd: dir });
    assert.equal(m2.code, 0, m2.err);
    assert.match(m2.out, /eval\/pass_rate/);

    // A --new whose job was created but whose command died before writing the run record: repeating it finds
    // that run (the attempt number was recorded before the create) instead of making a third.
    const third = await deploy("--new", "--json");
    assert.equal(third.code, 0, third.err);
    assert.equal(JSON.parse(third.out.trim()).name, `${base}-r3`);
    rmSync(join(runsDir(dir), `${base}-r3.json`));
    const repeated = await deploy("--new", "--json");
    assert.equal(repeated.code, 0, repeated.err);
    assert.deepEqual((({ name, outcome, attempt }) => ({ name, outcome, attempt }))(JSON.parse(repeated.out.trim()) as Record<string, unknown>), { name: `${base}-r3`, outcome: "existing", attempt: 3 });
    assert.deepEqual(jobs(), [base, `${base}-r2`, `${base}-r3`], "no fourth job");
    const plain = await deploy("--json");
    assert.equal(JSON.parse(plain.out.trim()).name, `${base}-r3`, "a plain deploy goes to the latest run");
    const follow = await rlpipe(["logs", `${base}-r3`, "-f"], { cwd: dir });
    assert.equal(follow.code, 0, follow.err);

    // Without this directory's records (deployed from elsewhere), --new skips the runs that already exist.
    rmSync(runsDir(dir), { recursive: true });
    const elsewhere = await deploy("--new", "--json");
    assert.equal(elsewhere.code, 0, elsewhere.err);
    assert.equal(JSON.parse(elsewhere.out.trim()).name, `${base}-r4`);
    assert.match(elsewhere.err, new RegExp(`${base}-r3 already exists \\(not deployed from this directory\\); trying ${base}-r4`));
    assert.equal((await rlpipe(["logs", `${base}-r4`, "-f"], { cwd: dir })).code, 0);
  });
});

describe("provider calls through the CLI against the ModelArts fake", () => {
  const AK = fakeHuaweiAk();
  const SK = fakeHuaweiSk();
  const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
  const SEED = "qwen3-1.7b-code-toolcall";
  let fake: FakeModelArts;
  let moto: Moto;
  let home: string;
  let ref: JobRef;
  let closed: number;
  const recipeData = loadSeed(SEED).recipe;
  const env = (extra: Record<string, string | undefined> = {}) => ({
    HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fake.endpoint, MODELARTS_TIMEOUT_MS: "2000",
    RLPIPE_RETRY_BUDGET_MS: "2500", OBS_ENDPOINT: moto.endpoint, OBS_REGION: "cn-southwest-2",
    OBS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, OBS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, ...extra,
  });
  const cli = (args: string[], extra: Record<string, string | undefined> = {}) => rlpipe(args, { cwd: home, env: env(extra) });

  before(async () => {
    home = mkdtempSync(join(tmpdir(), "rlpipe-cli-ma-"));
    closed = await closedPort();
    fake = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID }).start();
    moto = await startMoto();
    const admin = new S3Store({ scheme: "obs", bucket: "rlpipe-runs", prefix: "", region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: "rlpipe-runs" }));
    await admin.close();
    const adapter = createModelArtsAdapter({ env: { HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fake.endpoint, HOME: home }, recipe: recipeData, cwd: home });
    ref = await adapter.submit(planSeed(SEED, "modelarts"));
    await recordRun(home, "modelarts", ref, recipeData);
  });
  after(async () => {
    await fake.close();
    await moto.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it("an unreachable endpoint: a line on stderr per retry, then exit 3 within the budget (status, stop, logs -f)", async () => {
    // stop asks the job's phase first (an ended job is not asked to stop), so its first call is a status.
    for (const [args, op] of [[["status", ref.name], "status"], [["stop", ref.name], "status"], [["logs", ref.name, "-f"], "status"]] as const) {
      const r = await cli([...args], { MODELARTS_ENDPOINT: `http://127.0.0.1:${closed}` });
      assert.equal(r.code, 3, `${args.join(" ")} ended by itself with exit 3:\n${r.err}`);
      assert.match(r.err, RETRY_LINE("modelarts", op));
      assert.match(r.err, /network error \(ECONNREFUSED\)/);
      assert.match(r.err, /gave up after \d+ attempts in [\d.]+ s \(retry budget 2.5 s: RLPIPE_RETRY_BUDGET_MS\)/);
      assert.equal((r.err.match(/retrying in/g) ?? []).length, (r.err.match(/^rlpipe: modelarts/gm) ?? []).length, "one retry layer: every retry line is the CLI's");
    }
  });

  it("a server that answers 503: retried with a line each time, then exit 3", async () => {
    fake.readFaults.push(...Array.from({ length: 500 }, () => 503));
    try {
      const r = await cli(["status", ref.name]);
      assert.equal(r.code, 3, r.err);
      assert.match(r.err, RETRY_LINE("modelarts", "status"));
      assert.match(r.err, /HTTP 503 ModelArts\.0010/);
    } finally {
      fake.readFaults.length = 0;
    }
  });

  it("the current MODELARTS_ENDPOINT (host:port, no scheme) wins over the endpoint in the run record", async () => {
    const moved = { ...ref, name: `${ref.name}-moved`, endpoint: `http://127.0.0.1:${closed}` };
    await recordRun(home, "modelarts", moved, recipeData);
    const r = await cli(["status", moved.name, "--json"], { MODELARTS_ENDPOINT: fake.endpoint.replace("http://", "") });
    assert.equal(r.code, 0, r.err);
    assert.equal(JSON.parse(r.out)[0].id, ref.id);
    rmSync(join(runsDir(home), `${moved.name}.json`));
  });

  it("https:// to a plain-http server fails at once and in words (exit 3, no retries, no OpenSSL text)", async () => {
    const r = await cli(["status", ref.name], { MODELARTS_ENDPOINT: fake.endpoint.replace("http://", "https://") });
    assert.equal(r.code, 3, r.err);
    assert.match(r.err, /the TLS handshake failed: the server does not speak https/);
    assert.doesNotMatch(r.err, /retrying|SSL routines|wrong version number|internal error/);
  });

  it("refused credentials exit 3 with a hint; missing ones exit 2; with --json the error is on stdout", async () => {
    const wrong = await cli(["status", ref.name, "--json"], { HUAWEICLOUD_SDK_SK: fakeHuaweiSk() });
    assert.equal(wrong.code, 3, wrong.err);
    const e = JSON.parse(wrong.out).error;
    assert.equal(e.code, "modelarts_auth_failed");
    assert.equal(e.exitCode, 3);
    assert.match(e.hint, /HUAWEICLOUD_SDK_AK\/SK/);
    const missing = await cli(["status", ref.name], { HUAWEICLOUD_SDK_AK: undefined, HUAWEICLOUD_SDK_SK: undefined });
    assert.equal(missing.code, 2, missing.err);
    assert.match(missing.err, /no Huawei Cloud credentials/);
  });

  it("status of every run with every lookup failing shows each run and exits 3", async () => {
    await recordRun(home, "modelarts", { ...ref, name: `${ref.name}-two`, id: "00000000-0000-0000-0000-000000000002" }, recipeData);
    const r = await cli(["status"], { MODELARTS_ENDPOINT: `http://127.0.0.1:${closed}`, RLPIPE_RETRY_BUDGET_MS: "800" });
    assert.equal(r.code, 3, r.err);
    const [head, ...rows] = r.out.trim().split("\n");
    assert.match(head!, /^RUN +PROVIDER +ID +PHASE +PROVIDER'S PHASE \/ DETAIL$/);
    assert.equal(rows.length, 2);
    for (const row of rows) assert.match(row, /modelarts +\S+ +unknown +ModelArts show training job .*ECONNREFUSED/);
    rmSync(join(runsDir(home), `${ref.name}-two.json`));
  });

  it("deploy --new whose create reply was lost and whose command died: repeating it finds that run, never a third job", async () => {
    const seed = recipePath(SEED);
    const base = planSeed(SEED, "modelarts").jobName;
    const first = await cli(["deploy", seed, "--provider", "modelarts", "--yes", "--json"]);
    assert.equal(first.code, 0, first.err);
    assert.deepEqual(JSON.parse(first.out.trim()).outcome, "existing", "the job made in before() is run 1 of this recipe");

    fake.createFaults.push("timeout-after-create");
    const dying = start(["deploy", seed, "--provider", "modelarts", "--yes", "--new", "--json"], { cwd: home, env: env({ MODELARTS_TIMEOUT_MS: "60000" }) });
    await until("the --new create to reach ModelArts", () => fake.jobsNamed(`${base}-r2`).length === 1);
    dying.child.kill("SIGKILL");
    assert.equal((await dying.done).signal, "SIGKILL");
    assert.equal(existsSync(join(runsDir(home), `${base}-r2.json`)), false, "no run record: the command died before writing it");

    const repeated = await cli(["deploy", seed, "--provider", "modelarts", "--yes", "--new", "--json"]);
    assert.equal(repeated.code, 0, repeated.err);
    assert.deepEqual((({ name, outcome, attempt }) => ({ name, outcome, attempt }))(JSON.parse(repeated.out.trim()) as Record<string, unknown>), { name: `${base}-r2`, outcome: "existing", attempt: 2 });
    assert.equal(fake.jobsNamed(`${base}-r2`).length, 1);
    assert.equal(fake.jobsNamed(`${base}-r3`).length, 0, "no third job");

    const next = await cli(["deploy", seed, "--provider", "modelarts", "--yes", "--new", "--json"]);
    assert.equal(next.code, 0, next.err);
    assert.deepEqual((({ name, outcome }) => ({ name, outcome }))(JSON.parse(next.out.trim()) as Record<string, unknown>), { name: `${base}-r3`, outcome: "created" });
    assert.deepEqual([base, `${base}-r2`, `${base}-r3`].map((n) => fake.jobsNamed(n).length), [1, 1, 1]);
  });
});

describe("endpoint variables set now win over a run record's (Ray, TI-ONE)", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-cli-override-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("RAY_ADDRESS and TIONE_ENDPOINT are asked, not the recorded endpoint", async () => {
    const recorded = await closedPort();
    let current = await closedPort();
    while (current === recorded) current = await closedPort();
    await recordRun(dir, "ray", { provider: "ray", name: "ray-run-00000001", id: "ray-run-00000001", endpoint: `http://127.0.0.1:${recorded}` }, loadSeed("retool-qwen2.5-32b-h200").recipe);
    const ray = await rlpipe(["status", "ray-run-00000001"], { cwd: dir, env: { RAY_ADDRESS: `http://127.0.0.1:${current}`, RLPIPE_RETRY_BUDGET_MS: "800" } });
    assert.equal(ray.code, 3, ray.err);
    assert.match(ray.err, new RegExp(`at 127\\.0\\.0\\.1:${current}: ECONNREFUSED`));
    assert.doesNotMatch(ray.err, new RegExp(`:${recorded}\\b`));

    await recordRun(dir, "tione", { provider: "tione", name: "tione-run-00000001", id: "train-000000000000000001", region: "ap-shanghai", endpoint: `http://127.0.0.1:${recorded}` }, loadSeed("retool-qwen3-4b-tione-ags").recipe);
    const tione = await rlpipe(["status", "tione-run-00000001"], {
      cwd: dir, env: { TIONE_ENDPOINT: `127.0.0.1:${current}`, TENCENTCLOUD_SECRET_ID: fakeTencentSecretId(), TENCENTCLOUD_SECRET_KEY: fakeTencentSecretKey(), RLPIPE_RETRY_BUDGET_MS: "800" },
    });
    assert.equal(tione.code, 3, tione.err);
    assert.match(tione.err, RETRY_LINE("tione", "status"));
    assert.match(tione.err, new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${current}`));
    assert.doesNotMatch(tione.err, new RegExp(`:${recorded}\\b`));
  });
});
