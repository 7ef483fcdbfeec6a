// Provider local and the deploy algorithm: the local demo deployed through the CLI does real work end to end
// (rlpipe serve + rlpipe eval of the shipped problem set, metrics and results in the local store); a job is
// created exactly once however the create call fails; stop and failure are reported in normalized phases.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { type Plan, bundleDigestOf } from "../core/plan.js";
import { LocalAdapter } from "../adapters/providers/local.js";
import { type JobRef, type JobStatus, type LogPage, type ProviderAdapter, ProviderError, deploy } from "../adapters/providers/provider.js";
import { readRunRecord, runsDir } from "../adapters/providers/run-records.js";
import { ROOT, recipePath, seededRandom as mulberry32 } from "./helpers.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

function freePort(): Promise<number> {
  return new Promise((res) => { const s = createServer(); s.listen(0, "127.0.0.1", () => { const p = (s.address() as { port: number }).port; s.close(() => res(p)); }); });
}

/** The CLI as a child process, without blocking this event loop. */
function rlpipe(args: string[], opts: { cwd: string; env?: Record<string, string>; stdin?: "ignore" | "pipe" }): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: opts.cwd, stdio: [opts.stdin ?? "ignore", "pipe", "pipe"],
      env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: opts.cwd, RLPIPE_POLL_MS: "200", ...opts.env },
    });
    let out = "";
    let err = "";
    child.stdout!.on("data", (d: Buffer) => { out += d.toString(); });
    child.stderr!.on("data", (d: Buffer) => { err += d.toString(); });
    const t = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.on("close", (code) => { clearTimeout(t); resolve({ code, out, err }); });
  });
}

/** A Plan-shaped object around a hand-written launch.sh (the local adapter reads name, digest and files). */
function scriptPlan(name: string, script: string): Plan {
  const files = [{ path: "launch.sh", content: `#!/usr/bin/env bash\n${script}\n`, executable: true }];
  return { jobName: name, bundleDigest: bundleDigestOf(files), files } as unknown as Plan;
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("provider local: the demo through the CLI", () => {
  let dir: string;
  let port: number;
  before(async () => { dir = mkdtempSync(join(tmpdir(), "rlpipe-local-")); port = await freePort(); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("rlpipe deploy --wait runs the local demo to SUCCEEDED, with metrics and results in the local store", async () => {
    const env = { RLPIPE_SANDBOX_PORT: String(port) };
    const r = await rlpipe(["deploy", recipePath("local-demo"), "--provider", "local", "--yes", "--wait", "--json"], { cwd: dir, env });
    assert.equal(r.code, 0, r.err);
    const res = JSON.parse(r.out.trim().split("\n").pop()!);
    assert.equal(res.phase, "SUCCEEDED");
    assert.equal(res.outcome, "created");
    assert.match(res.name, /^local-demo-[0-9a-f]{8}$/);
    assert.match(r.out, /"log":"rlpipe eval: 16 rows from data\/demo-problems\.jsonl: 16 passed \(pass rate 100\.0%\)/);

    const record = await readRunRecord(runsDir(dir), res.name);
    assert.equal(record.provider, "local");
    assert.equal(record.lastStatus?.phase, "SUCCEEDED");
    assert.equal((record.request as { api: string }).api.startsWith("bash launch.sh"), true);

    // The store holds the result file and the metrics, read back through the CLI.
    const store = `file://${join(dir, ".rlpipe", "work", "local-demo", "store")}`;
    const result = JSON.parse(readFileSync(join(dir, ".rlpipe", "work", "local-demo", "store", `${res.name}.check`, "artifacts", "check.json"), "utf8"));
    assert.equal(result.rows.length, 16);
    assert.equal(result.passed, 16);
    const m = await rlpipe(["metrics", `${res.name}.check`, "--store", store, "--json"], { cwd: dir });
    assert.equal(m.code, 0, m.err);
    const latest = JSON.parse(m.out) as { latest: { label: string; value: number }[] };
    assert.equal(latest.latest.find((x) => x.label === "pass rate")?.value, 1);
    // Without --store the run record names the store: a deployed run's outputs are found from where it was deployed.
    const found = await rlpipe(["metrics", `${res.name}.check`, "--json"], { cwd: dir, env: { ...env, RLPIPE_STORE: "" } });
    assert.equal(found.code, 0, found.err);
    assert.deepEqual(JSON.parse(found.out), latest);
    assert.match(found.err, new RegExp(`store ${store.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} \\(from the run record of ${res.name}`));
    const elsewhere = await rlpipe(["checkpoints", "other-run.rl"], { cwd: dir, env: { ...env, RLPIPE_STORE: "" } });
    assert.equal(elsewhere.code, 2);
    assert.match(elsewhere.err, new RegExp(`no store given[\\s\\S]*runs deployed from here find their store themselves: ${res.name}\\.<stage>`));

    // status, logs, list read the run record; a second deploy finds the job instead of making another.
    const st = await rlpipe(["status", res.name, "--json"], { cwd: dir });
    assert.equal(JSON.parse(st.out)[0].phase, "SUCCEEDED");
    const logs = await rlpipe(["logs", res.name], { cwd: dir });
    assert.match(logs.out, /stage check: complete/);
    const again = await rlpipe(["deploy", recipePath("local-demo"), "--provider", "local", "--yes", "--json"], { cwd: dir, env });
    assert.equal(again.code, 0, again.err);
    assert.deepEqual(JSON.parse(again.out.trim()), {
      name: res.name, provider: "local", id: res.id, outcome: "existing", attempt: 1, phase: "SUCCEEDED", rawPhase: "SUCCEEDED",
      hint: `this run has ended; rlpipe deploy ${recipePath("local-demo")} --provider local --new starts a new one`,
    });
    assert.deepEqual(readdirSync(join(dir, ".rlpipe", "local")), [res.name], "one job on this machine");
    const list = JSON.parse((await rlpipe(["list", "--json"], { cwd: dir })).out) as { name: string }[];
    assert.deepEqual(list.map((x) => x.name), [res.name]);
  });

  it("refuses to create without confirmation when stdin is not a terminal, and --dry-run creates nothing", async () => {
    const fresh = mkdtempSync(join(tmpdir(), "rlpipe-local-confirm-"));
    try {
      const r = await rlpipe(["deploy", recipePath("local-demo"), "--provider", "local"], { cwd: fresh, stdin: "pipe" });
      assert.equal(r.code, 2);
      assert.match(r.err, /refusing to create a job without confirmation/);
      assert.match(r.err, /hint: pass --yes/);
      const d = await rlpipe(["deploy", recipePath("local-demo"), "--provider", "local", "--dry-run"], { cwd: fresh });
      assert.equal(d.code, 0, d.err);
      assert.match(d.out, /request {4}bash launch\.sh/);
      assert.match(d.out, /dry run: nothing was created/);
      assert.equal(existsSync(join(fresh, ".rlpipe", "local")), false);
      assert.equal(existsSync(join(fresh, ".rlpipe", "runs")), false);
      const bad = await rlpipe(["status", "no-such-run-12345678"], { cwd: fresh });
      assert.equal(bad.code, 2);
      assert.match(bad.err, /no run named no-such-run-12345678/);
    } finally {
      rmSync(fresh, { recursive: true, force: true });
    }
  });
});

describe("provider local: lifecycle", () => {
  let dir: string;
  let adapter: LocalAdapter;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-local-life-"));
    adapter = new LocalAdapter({ cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stopGraceMs: 5000 });
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("stop ends the whole process group and reports STOPPED; stopping again is harmless", async () => {
    const plan = scriptPlan("sleeper-00000001", "echo started; sleep 300 & wait");
    const { ref } = await deploy(adapter, plan);
    const running = await until(() => adapter.logs(ref, undefined), (p) => p.text.includes("started"));
    assert.match(running.text, /started/);
    assert.equal((await adapter.status(ref)).phase, "RUNNING");
    const child = readFileSync(`/proc/${ref.id}/task/${ref.id}/children`, "utf8").trim();
    await adapter.stop(ref);
    const s = await until(() => adapter.status(ref), (x) => x.phase === "STOPPED");
    assert.equal(s.phase, "STOPPED");
    assert.equal(existsSync(`/proc/${ref.id}`), false, "the runner is gone");
    for (const pid of child.split(/\s+/).filter(Boolean)) assert.equal(existsSync(`/proc/${pid}/stat`) && !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "), false, `child ${pid} is gone`);
    await adapter.stop(ref); // idempotent
    assert.equal((await adapter.status(ref)).phase, "STOPPED");
  });

  it("stop ends what left the group too (a sandbox in a session of its own), even when the grace runs out before launch.sh's clean-up", async () => {
    // The job ignores SIGTERM (its clean-up never runs) and has started something in a new session, as launch.sh
    // starts its sandbox: the group's SIGKILL cannot reach it.
    const quick = new LocalAdapter({ cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stopGraceMs: 300 });
    const plan = scriptPlan("escaper-00000004", "setsid sleep 301 < /dev/null > /dev/null 2>&1 & echo $! > escaped.pid; trap '' TERM; echo started; sleep 300 & wait");
    const { ref } = await deploy(quick, plan);
    await until(() => quick.logs(ref, undefined), (p) => p.text.includes("started"));
    const escaped = Number((await until(async () => { try { return readFileSync(join(dir, ".rlpipe", "local", ref.name, "escaped.pid"), "utf8"); } catch { return ""; } }, (t) => t.trim() !== "")).trim());
    assert.ok(existsSync(`/proc/${escaped}`), "the escaped process runs");
    const sid = (pid: number) => { const st = readFileSync(`/proc/${pid}/stat`, "utf8"); return Number(st.slice(st.lastIndexOf(")") + 2).split(" ")[3]); };
    assert.notEqual(sid(escaped), sid(Number(ref.id)), "it is in another session than the job");
    await quick.stop(ref);
    const alive = () => existsSync(`/proc/${escaped}/stat`) && !readFileSync(`/proc/${escaped}/stat`, "utf8").includes(") Z ");
    assert.equal(alive(), false, "nothing of the run outlives stop");
  });

  it("a failing launch.sh is FAILED with its exit code; logs page by byte cursor without gaps or repeats", async () => {
    const plan = scriptPlan("failer-00000002", "for i in 1 2 3; do echo \"line $i ✓\"; done; exit 3");
    const { ref, outcome } = await deploy(adapter, plan);
    assert.equal(outcome, "created");
    const s = await until(() => adapter.status(ref), (x) => x.phase === "FAILED");
    assert.equal(s.phase, "FAILED");
    assert.equal(s.exitCode, 3);
    let text = "";
    let cursor: string | undefined;
    for (;;) {
      const page = await adapter.logs(ref, cursor);
      if (page.text === "") break;
      text += page.text;
      cursor = page.cursor;
    }
    assert.equal(text, "line 1 ✓\nline 2 ✓\nline 3 ✓\n");
    assert.equal((await adapter.logs(ref, cursor)).text, "");
  });

  it("two deploys racing on one machine make one job", async () => {
    const plan = scriptPlan("racer-00000003", "sleep 1");
    const other = new LocalAdapter({ cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" } });
    const fast = { baseDelayMs: 20, maxDelayMs: 100 };
    const [a, b] = await Promise.all([deploy(adapter, plan, fast), deploy(other, plan, fast)]);
    assert.equal(a.ref.id, b.ref.id);
    assert.deepEqual([a.outcome, b.outcome].sort(), ["created", "existing"]);
    await until(() => adapter.status(a.ref), (x) => x.phase === "SUCCEEDED");
  });
});

/** A provider whose create may act and then lose its reply, or fail before acting; it counts jobs by name. */
class FlakyProvider implements ProviderAdapter {
  readonly provider = "ray" as const;
  readonly jobs = new Map<string, number>();
  creates = 0;
  constructor(private readonly rnd: () => number, private readonly visibleAfterLookups = 0) {}
  private lookups = new Map<string, number>();
  async prepare(): Promise<void> {
    if (this.rnd() < 0.2) throw new ProviderError("ray", "retryable", "throttled", "429 upload");
  }
  async findExisting(plan: Plan): Promise<JobRef | undefined> {
    if (this.rnd() < 0.15) throw new ProviderError("ray", "ambiguous", "lookup_5xx", "500 on lookup");
    const n = (this.lookups.get(plan.jobName) ?? 0) + 1;
    this.lookups.set(plan.jobName, n);
    // Eventual consistency: a job may be listed only some lookups after it was created.
    return this.jobs.has(plan.jobName) && n > this.visibleAfterLookups ? { provider: "ray", name: plan.jobName, id: String(this.jobs.get(plan.jobName)) } : undefined;
  }
  async submit(plan: Plan): Promise<JobRef> {
    this.creates++;
    const r = this.rnd();
    if (r < 0.15) throw new ProviderError("ray", "retryable", "throttled", "429 before acting");
    if (r < 0.3) throw new ProviderError("ray", "ambiguous", "reset_before", "reset before acting");
    if (this.jobs.has(plan.jobName)) throw new ProviderError("ray", "exists", "duplicate", "name taken");
    this.jobs.set(plan.jobName, this.jobs.size + 1);
    this.lookups.set(plan.jobName, 0);
    if (r < 0.55) throw new ProviderError("ray", "ambiguous", "timeout_after", "timed out after acting");
    return { provider: "ray", name: plan.jobName, id: String(this.jobs.get(plan.jobName)) };
  }
  async status(): Promise<JobStatus> { return { phase: "RUNNING", rawPhase: "RUNNING" }; }
  async logs(): Promise<LogPage> { return { text: "", cursor: "0" }; }
  async stop(): Promise<void> { /* not used */ }
}


describe("deploy(): exactly one job per deploy", () => {
  const noWait = { sleep: async () => undefined, attempts: 8 };

  it("200 randomized trials (throttling, resets, lost replies, delayed listing): one job, and deploy returns it", async () => {
    for (let seed = 1; seed <= 200; seed++) {
      const provider = new FlakyProvider(mulberry32(seed), seed % 3);
      const plan = { jobName: `trial-${seed}` } as Plan;
      let out;
      try {
        out = await deploy(provider, plan, { ...noWait, random: mulberry32(seed * 7) });
      } catch (e) {
        // Only when every attempt was refused before acting may a deploy give up — and then nothing exists.
        assert.ok(e instanceof ProviderError, `seed ${seed}: ${String(e)}`);
        assert.equal(provider.jobs.size, 0, `seed ${seed}: gave up although a job exists`);
        continue;
      }
      assert.equal(provider.jobs.size, 1, `seed ${seed}: ${provider.jobs.size} jobs`);
      assert.equal(out.ref.id, "1", `seed ${seed}`);
      // A second deploy of the same plan never creates.
      const creates = provider.creates;
      const second = await deploy(provider, plan, { ...noWait, random: mulberry32(seed * 13) });
      assert.equal(provider.jobs.size, 1, `seed ${seed}: second deploy made a job`);
      assert.equal(second.ref.id, "1");
      assert.ok(provider.creates === creates || second.outcome !== "created", `seed ${seed}`);
    }
  });

  it("a fatal create error is thrown at once, without retrying", async () => {
    let creates = 0;
    const p: ProviderAdapter = {
      provider: "ray", prepare: async () => undefined, findExisting: async () => undefined,
      submit: async () => { creates++; throw new ProviderError("ray", "fatal", "bad_request", "400 invalid runtime_env"); },
      status: async () => ({ phase: "UNKNOWN", rawPhase: "" }), logs: async () => ({ text: "", cursor: "" }), stop: async () => undefined,
    };
    await assert.rejects(deploy(p, { jobName: "x" } as Plan, noWait), /400 invalid runtime_env/);
    assert.equal(creates, 1);
  });
});
