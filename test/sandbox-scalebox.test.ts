// The ScaleBox/SandboxFusion HTTP adapter against real servers on 127.0.0.1: rlpipe's own function (which
// speaks the same contract), a ScaleBox-like server with ScaleBox's lenient stdio comparator (to prove
// client-side re-judging), and a fault-injecting proxy (429, 5xx, SandboxError, resets, a dead endpoint,
// a plain SandboxFusion without the batch endpoint).
import assert from "node:assert/strict";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { ScaleBoxSandbox } from "../adapters/sandboxes/scalebox.js";
import type { EvalJob, TestCase } from "../core/grading/types.js";
import { type RunningServer, startHttpServer } from "../functions/platforms/http.js";
import { ResultCache } from "../functions/reward.js";

const stdio = (stdin: string, expectedStdout: string): TestCase => ({ kind: "stdio", stdin, expectedStdout });
const job = (id: string, code: string, tests: TestCase[], extra: Partial<EvalJob> = {}): EvalJob => ({ id, language: "python", code, tests, limits: { runTimeoutMs: 5000 }, ...extra });

type Fault = "429" | "503" | "sandbox-error" | "reset" | "404-batch";

/** A proxy in front of a real server that injects the next scripted faults, and counts requests per path. */
async function faultProxy(target: string): Promise<{ url: string; faults: Fault[]; hits: Map<string, number>; close: () => Promise<void>; persistent?: Fault }> {
  const state: { faults: Fault[]; hits: Map<string, number>; persistent?: Fault } = { faults: [], hits: new Map() };
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // client gone
    }
    const path = req.url ?? "/";
    state.hits.set(path, (state.hits.get(path) ?? 0) + 1);
    const fault = path === "/v1/ping" ? undefined : state.persistent ?? state.faults.shift();
    if (fault === "404-batch" && path === "/common_evaluate_batch") { res.writeHead(404, { "content-type": "application/json" }); res.end('{"detail":"Not Found"}'); return; }
    if (fault === "429") { res.writeHead(429, { "retry-after": "0", "content-type": "application/json" }); res.end('{"detail":"slow down"}'); return; }
    if (fault === "503") { res.writeHead(503, { "content-type": "application/json" }); res.end('{"detail":"unavailable"}'); return; }
    if (fault === "reset") { req.socket.destroy(); return; }
    if (fault === "sandbox-error") {
      const body = path === "/run_code"
        ? { status: "SandboxError", message: "runner crashed", compile_result: null, run_result: null, executor_pod_name: null, files: {} }
        : { id: 0, accepted: false, extracted_code: "", tests: [{ passed: false, exec_info: { status: "SandboxError", message: "failed to request sandbox" }, test_info: null }] };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
      return;
    }
    const upstream = await fetch(`${target}${path}`, { method: req.method ?? "GET", headers: { "content-type": "application/json" }, ...(req.method === "POST" ? { body: Buffer.concat(chunks) } : {}) });
    res.writeHead(upstream.status, { "content-type": "application/json" });
    res.end(await upstream.text());
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(state, { url, close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }) });
}

/**
 * A ScaleBox-like /common_evaluate_batch: runs the code for real (through rlpipe's /run_code) but judges
 * stdio the way ScaleBox does — zip() over lines, no line-count check — so prefix output is "passed".
 */
async function lenientScaleBox(runCodeUrl: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
    const send = (status: number, payload: unknown) => { res.writeHead(status, { "content-type": "application/json" }); res.end(JSON.stringify(payload)); };
    if (req.url === "/v1/ping") return send(200, "pong");
    if (req.url !== "/common_evaluate_batch") return send(404, { detail: "Not Found" });
    const code = /```\w*\n([\s\S]*?)```/.exec(body.completion)?.[1] ?? "";
    const tc = body.config.provided_data.test_cases;
    const tests = [];
    for (let i = 0; i < tc.input.length; i++) {
      const r = await (await fetch(runCodeUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ code, language: body.config.language, stdin: tc.input[i] }) })).json() as { status: string; run_result?: { stdout?: string } };
      const out = (r.run_result?.stdout ?? "").trim().split("\n");
      const exp = String(tc.output[i]).trim().split("\n");
      const n = Math.min(out.length, exp.length); // ScaleBox: zip() stops at the shorter side
      let passed = r.status === "Success";
      for (let k = 0; k < n && passed; k++) passed = out[k]!.trim().toLowerCase() === exp[k]!.trim().toLowerCase();
      tests.push({ passed, exec_info: r, test_info: { input: { stdin: tc.input[i] }, output: { stdout: tc.output[i] } } });
    }
    send(200, { id: 0, accepted: tests.every((t) => t.passed), extracted_code: code, tests });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }) };
}

describe("ScaleBox adapter", () => {
  let local: LocalSandbox;
  let fn: RunningServer;
  let fn2: RunningServer;
  before(async () => {
    local = await LocalSandbox.create();
    fn = await startHttpServer({ backend: local, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
    fn2 = await startHttpServer({ backend: local, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
  });
  after(async () => { await fn.close(); await fn2.close(); await local.close(); });

  it("evaluates stdio, function-call and assert jobs through /common_evaluate_batch, and runs tool calls", async () => {
    const sb = await ScaleBoxSandbox.create({ endpoints: [fn.url] });
    try {
      const [a, b, c] = await sb.evaluate([
        job("stdio", "a, b = map(int, input().split())\nprint(a + b)", [stdio("1 2", "3"), stdio("2 2", "5")]),
        job("call", "def add(a, b):\n    return a + b", [{ kind: "call", fnName: "add", args: [1, 2], expected: 3 }, { kind: "call", fnName: "add", args: [1, 1], expected: 3 }]),
        job("assert", "def inc(x):\n    return x + 1", [{ kind: "assert", testCode: "assert inc(1) == 2" }]),
      ]);
      assert.deepEqual(a!.cases.map((x) => x.status), ["passed", "wrong_answer"]);
      assert.deepEqual(b!.cases.map((x) => x.status), ["passed", "wrong_answer"]);
      assert.equal(c!.passed, 1);
      const run = await sb.run({ language: "python", code: "print(input()[::-1])", stdin: "abc", limits: { runTimeoutMs: 5000 } });
      assert.equal(run.status, "ok");
      assert.equal(run.stdout, "cba\n");
    } finally {
      await sb.close();
    }
  });

  it("re-judges stdio from the returned stdout: ScaleBox's missing/extra-line leniency is not inherited", async () => {
    const lenient = await lenientScaleBox(`${fn.url}/run_code`);
    const sb = await ScaleBoxSandbox.create({ endpoints: [lenient.url] });
    try {
      const [r] = await sb.evaluate([job("lenient", "print(1)\nprint(2)", [stdio("", "1\n2\n3"), stdio("", "1"), stdio("", "1\n2")])]);
      assert.deepEqual(r!.cases.map((x) => x.status), ["wrong_answer", "wrong_answer", "passed"]);
      assert.match(r!.cases[0]!.detail!, /expected 3 lines, got 2/);
    } finally {
      await sb.close();
      await lenient.close();
    }
  });

  it("retries 429 (Retry-After), 503, connection resets and SandboxError, then succeeds", async () => {
    const proxy = await faultProxy(fn.url);
    const sb = await ScaleBoxSandbox.create({ endpoints: [proxy.url], retryBaseDelayMs: 5, attempts: 5 });
    try {
      proxy.faults.push("429", "503", "reset", "sandbox-error");
      const [r] = await sb.evaluate([job("retry", "print(input())", [stdio("x", "x")])]);
      assert.equal(r!.status, "ok");
      assert.equal(r!.passed, 1);
      assert.equal(proxy.hits.get("/common_evaluate_batch"), 5);
    } finally {
      await sb.close();
      await proxy.close();
    }
  });

  it("a persistent sandbox failure is an infra_error, never a wrong answer", async () => {
    const proxy = await faultProxy(fn.url);
    const sb = await ScaleBoxSandbox.create({ endpoints: [proxy.url], retryBaseDelayMs: 1, attempts: 3 });
    try {
      proxy.persistent = "sandbox-error";
      const [r] = await sb.evaluate([job("broken", "print(1)", [stdio("", "1")])]);
      assert.equal(r!.status, "infra_error");
      assert.equal(r!.cases[0]!.status, "infra_error");
      const run = await sb.run({ language: "python", code: "print(1)", limits: { runTimeoutMs: 1000 } });
      assert.equal(run.status, "infra_error");
    } finally {
      await sb.close();
      await proxy.close();
    }
  });

  it("balances over several endpoints by load and routes around a dead one", async () => {
    const p1 = await faultProxy(fn.url);
    const p2 = await faultProxy(fn2.url);
    const dead = await faultProxy(fn.url);
    dead.persistent = "reset";
    const sb = await ScaleBoxSandbox.create({ endpoints: [p1.url, p2.url, dead.url], retryBaseDelayMs: 1 });
    try {
      const jobs = Array.from({ length: 8 }, (_, i) => job(`j${i}`, "import time\ntime.sleep(0.2)\nprint(input())", [stdio(String(i), String(i))]));
      const rs = await sb.evaluate(jobs);
      assert.ok(rs.every((r) => r.status === "ok" && r.passed === 1), JSON.stringify(rs.map((r) => r.status)));
      assert.ok((p1.hits.get("/common_evaluate_batch") ?? 0) >= 2 && (p2.hits.get("/common_evaluate_batch") ?? 0) >= 2, `p1 ${p1.hits.get("/common_evaluate_batch")}, p2 ${p2.hits.get("/common_evaluate_batch")}`);
      assert.ok((dead.hits.get("/common_evaluate_batch") ?? 0) <= 2, "the dead endpoint is dropped after failing");
    } finally {
      await sb.close();
      await Promise.all([p1.close(), p2.close(), dead.close()]);
    }
  });

  it("plain SandboxFusion (no batch endpoint): one /run_code per case, function calls and asserts wrapped", async () => {
    const sf = await faultProxy(fn.url);
    sf.persistent = "404-batch";
    const sb = await ScaleBoxSandbox.create({ endpoints: [sf.url] });
    try {
      const [a, b, c] = await sb.evaluate([
        job("stdio", "print(int(input()) + 1)", [stdio("1", "2"), stdio("2", "4"), stdio("3", "4")]),
        job("call", "class Solution:\n    def twice(self, x):\n        return [x, x]", [{ kind: "call", fnName: "twice", args: [3], expected: [3, 3] }]),
        job("assert", "def inc(x):\n    return x + 1", [{ kind: "assert", testCode: "def check(f):\n    assert f(2) == 4", entryPoint: "inc" }]),
      ]);
      assert.deepEqual(a!.cases.map((x) => x.status), ["passed", "wrong_answer", "passed"]);
      assert.equal(b!.passed, 1);
      assert.equal(c!.cases[0]!.status, "wrong_answer");
      assert.equal(sf.hits.get("/run_code"), 5);
    } finally {
      await sb.close();
      await sf.close();
    }
  });

  it("a special judge runs as /run_code with stdin.txt, stdout.txt and answer.txt", async () => {
    const sb = await ScaleBoxSandbox.create({ endpoints: [fn.url] });
    try {
      const judge = "a = int(open('stdin.txt').read())\nx, y = map(int, open('answer.txt').read().split())\nraise SystemExit(0 if x + y == a else 1)";
      const [r] = await sb.evaluate([job("judge", "n = int(input())\nprint(1, n - 1)", [stdio("5", "2 3"), stdio("1", "0 1")], { checker: { kind: "special", language: "python", program: judge } })]);
      assert.deepEqual(r!.cases.map((c) => c.status), ["passed", "passed"]);
    } finally {
      await sb.close();
    }
  });

  it("refuses to start when no endpoint answers", async () => {
    await assert.rejects(ScaleBoxSandbox.create({ endpoints: ["http://127.0.0.1:9"] }), /no ScaleBox\/SandboxFusion endpoint answered GET \/v1\/ping/);
    await assert.rejects(ScaleBoxSandbox.create({ endpoints: ["ftp://x"] }), /unsupported scheme/);
  });
});
