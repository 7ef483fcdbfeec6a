// The cloud-function adapters (functions/platforms/{lambda,functiongraph,scf}.ts) with each platform's documented
// trigger events (test/fixtures/functions/, source named in each) around the real reward function on the E2B
// backend, which talks to the strict loopback E2B fakes (test/fakes/e2b-fake.ts, the real e2b SDK): success,
// base64 bodies, bad JSON, oversized bodies, authentication, routes, the response shape each platform expects,
// the base path, cold start (once per process, retried after a failure), the sandbox warm-up after the cold start
// (ping never waits for it; failures answer 503 with their code and are retried after a hold), non-HTTP events and
// redacted logs.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { FunctionApp, FunctionAppFactory } from "../functions/app.js";
import { makeRewardApp, rewardApp } from "../functions/apps/reward.js";
import { json } from "../functions/http-types.js";
import { route } from "../functions/router.js";
import { functionGraphHandler } from "../functions/platforms/functiongraph.js";
import type { HandlerOptions, PlatformHandler } from "../functions/platforms/handler.js";
import { lambdaHandler } from "../functions/platforms/lambda.js";
import { scfHandler } from "../functions/platforms/scf.js";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { startHttpServer } from "../functions/platforms/http.js";
import { ResultCache } from "../functions/reward.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { type Platform, type RequestSpec, eventFor, functionGraphEvent, lambdaEvent, loadEventFixture, parseResult, scfEvent } from "./fakes/platform-events.js";

const T = { timeout: 90_000 };
const E2B_KEY = `ark_${randomBytes(16).toString("hex")}`;
const TOKEN = randomBytes(24).toString("hex");
const A_PLUS_B = "```python\na, b = map(int, input().split())\nprint(a + b)\n```";
const GT = JSON.stringify({ input: ["1 2", "5 5"], output: ["3", "10"], fn_name: null, type: "stdin_stdout" });
const PLATFORMS: readonly Platform[] = ["lambda", "functiongraph", "scf"];
const SIX_MB = 6 * 1024 * 1024;

function handlerFor(platform: Platform, factory: FunctionAppFactory, opts: HandlerOptions): PlatformHandler<any> {
  switch (platform) {
    case "lambda": return lambdaHandler(factory, opts);
    case "functiongraph": return functionGraphHandler(factory, opts);
    case "scf": return scfHandler(factory, opts);
  }
}

/** What each platform passes as context (FunctionGraph's carries methods). */
function contextFor(platform: Platform, userData: Record<string, string> = {}): unknown {
  switch (platform) {
    case "lambda": return { awsRequestId: "req-1", functionName: "rlpipe-reward" };
    case "functiongraph": return { getRequestID: () => "req-1", getUserData: (k: string) => userData[k] };
    case "scf": return { request_id: "req-1", function_name: "rlpipe-reward" };
  }
}

const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

/** Waits (polling) until `cond` holds; fails with `what` after 30 s. */
async function waitFor(what: string, cond: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Collects unhandled rejections while a test runs (a warm-up that fails with nobody waiting must not make one). */
function watchUnhandledRejections(): { readonly seen: unknown[]; stop(): Promise<void> } {
  const seen: unknown[] = [];
  const listener = (reason: unknown) => { seen.push(reason); };
  process.on("unhandledRejection", listener);
  return {
    seen,
    // Node reports an unhandled rejection after the microtask queue drains: give it two turns of the loop first.
    async stop() {
      await new Promise((r) => setImmediate(r));
      await new Promise((r) => setTimeout(r, 10));
      process.off("unhandledRejection", listener);
    },
  };
}

describe("cloud-function adapters: the reward function on the E2B backend (strict E2B fakes)", () => {
  let fake: FakeE2B;
  const logs: string[] = [];
  const handlers = new Map<Platform, PlatformHandler<any>>();
  const builds = new Map<Platform, number>();

  before(async () => {
    fake = await FakeE2B.start({ apiKey: E2B_KEY });
    for (const p of PLATFORMS) {
      builds.set(p, 0);
      const counted: FunctionAppFactory = async (cold) => { builds.set(p, builds.get(p)! + 1); return rewardApp(cold); };
      const env: NodeJS.ProcessEnv = {
        RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost", RLPIPE_SANDBOX_CONCURRENCY: "2",
        // FunctionGraph and SCF sit behind a gateway path; Lambda's prefix is the API stage (see the stage test).
        ...(p === "lambda" ? {} : { RLPIPE_BASE_PATH: "/rlpipe/" }),
      };
      // Where each platform keeps secrets: Lambda and SCF environment variables (Secrets Manager has its own
      // test), FunctionGraph encrypted variables through context.getUserData only.
      if (p !== "functiongraph") Object.assign(env, { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY });
      handlers.set(p, handlerFor(p, counted, { env, log: (l) => logs.push(`${p}: ${l}`) }));
    }
  });
  after(async () => {
    await fake.close();
  });

  async function invoke(p: Platform, spec: RequestSpec | Record<string, unknown>, raw = false) {
    const ev = raw ? spec : eventFor(p, spec as RequestSpec);
    return parseResult(await handlers.get(p)!(ev, contextFor(p, { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY })));
  }
  const prefix = (p: Platform) => (p === "lambda" ? "" : "/rlpipe");

  for (const p of PLATFORMS) {
    describe(p, () => {
      it("builds the app once under concurrent first invocations, then runs code: POST /run_code", T, async () => {
        const pings = await Promise.all(Array.from({ length: 5 }, () => invoke(p, { method: "GET", path: `${prefix(p)}/v1/ping` })));
        assert.deepEqual(pings.map((r) => [r.status, r.body]), Array(5).fill([200, "pong"]));
        assert.equal(builds.get(p), 1, "one cold start for five concurrent first invocations");
        const r = await invoke(p, { method: "POST", path: `${prefix(p)}/run_code`, headers: auth, body: { code: "print(6 * 7)", language: "python" } });
        assert.equal(r.status, 200);
        assert.equal(r.body.status, "Success");
        assert.equal(r.body.run_result.stdout, "42\n");
        assert.equal(builds.get(p), 1);
        assert.deepEqual(fake.stats.unknown, []);
      });

      it("scores /v1/rewards through E2B (a base64-encoded body)", T, async () => {
        const samples = [
          { data_source: "code", solution_str: A_PLUS_B, ground_truth: GT },
          { data_source: "code", solution_str: "```python\nprint(0)\n```", ground_truth: GT },
        ];
        const r = await invoke(p, { method: "POST", path: `${prefix(p)}/v1/rewards`, headers: auth, body: { samples }, base64: true });
        assert.equal(r.status, 200);
        assert.deepEqual(r.body.results.map((x: { score: number; status: string }) => [x.score, x.status]), [[1, "ok"], [0, "ok"]]);
        assert.deepEqual(r.body.results[0].cases, ["passed", "passed"]);
      });

      it("answers bad JSON 400, a non-JSON content type 415 and an oversized body 413, in http.ts's error shape", T, async () => {
        const bad = await invoke(p, { method: "POST", path: `${prefix(p)}/run_code`, headers: auth, body: "{nope" });
        assert.deepEqual([bad.status, bad.body], [400, { detail: "request body is not valid JSON" }]);
        const badB64 = await invoke(p, { method: "POST", path: `${prefix(p)}/run_code`, headers: auth, body: "{nope", base64: true });
        assert.equal(badB64.status, 400);
        const text = await invoke(p, { method: "POST", path: `${prefix(p)}/run_code`, headers: { ...auth, "content-type": "text/plain" }, body: "print(1)" });
        assert.deepEqual([text.status, text.body], [415, { detail: "content-type must be application/json" }]);
        const big = await invoke(p, { method: "POST", path: `${prefix(p)}/run_code`, headers: auth, body: { code: "x".repeat(SIX_MB), language: "python" } });
        assert.equal(big.status, 413);
        assert.match(big.body.detail, new RegExp(`larger than ${SIX_MB} bytes`));
      });

      it("needs the token on every call but /v1/ping: missing or wrong 401; bearer in any header case, or the /t/<token>/ prefix", T, async () => {
        const req = { code: "print(1)", language: "python" };
        const missing = await invoke(p, { method: "POST", path: `${prefix(p)}/run_code`, headers: { "content-type": "application/json" }, body: req });
        assert.deepEqual([missing.status, missing.body, missing.headers["www-authenticate"]], [401, { detail: "missing or invalid token" }, "Bearer"]);
        const wrong = await invoke(p, { method: "POST", path: `${prefix(p)}/v1/rewards`, headers: { ...auth, authorization: `Bearer ${TOKEN.slice(1)}x` }, body: { samples: [] } });
        assert.equal(wrong.status, 401);
        const titleCase = await invoke(p, { method: "POST", path: `${prefix(p)}/run_code`, headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" }, body: req });
        assert.equal(titleCase.status, 200);
        const viaPath = await invoke(p, { method: "POST", path: `${prefix(p)}/t/${TOKEN}/run_code`, headers: { "content-type": "application/json" }, body: req });
        assert.equal(viaPath.status, 200);
        assert.equal(viaPath.body.run_result.stdout, "1\n");
      });

      it("answers unknown routes 404 and wrong methods 405", T, async () => {
        const nowhere = await invoke(p, { method: "POST", path: `${prefix(p)}/nowhere`, headers: auth, body: {} });
        assert.deepEqual([nowhere.status, nowhere.body], [404, { detail: "Not Found" }]);
        const get = await invoke(p, { method: "GET", path: `${prefix(p)}/run_code`, headers: auth });
        assert.deepEqual([get.status, get.headers["allow"]], [405, "POST"]);
        const runs = await invoke(p, { method: "GET", path: `${prefix(p)}/v1/runs/r1/state`, headers: auth });
        assert.equal(runs.status, 404, "the reward function serves no runs routes");
      });
    });
  }

  it("Lambda: an API Gateway HTTP API stage in rawPath is stripped; query strings and cookies do not disturb routing", T, async () => {
    const ev = lambdaEvent({ method: "POST", path: "/run_code", headers: auth, body: { code: "print('staged')", language: "python" }, query: { a: "1" } }, { fixture: "lambda-http-api-v2", stage: "prod" });
    assert.equal(ev["rawPath"], "/prod/run_code");
    const r = parseResult(await handlers.get("lambda")!(ev, contextFor("lambda")));
    assert.equal(r.status, 200);
    assert.equal(r.body.run_result.stdout, "staged\n");
  });

  it("FunctionGraph and SCF: a path outside RLPIPE_BASE_PATH is routed as it is", T, async () => {
    for (const p of ["functiongraph", "scf"] as const) {
      const r = await invoke(p, { method: "POST", path: "/run_code", headers: auth, body: { code: "print(2)", language: "python" } });
      assert.equal(r.status, 200, p);
    }
  });

  it("answers each platform's documented example event as it is (shape checked by parseResult)", T, async () => {
    // Lambda's examples POST "Hello from client!" (not JSON) to /my/path.
    for (const fixture of ["lambda-function-url", "lambda-http-api-v2"]) {
      const r = parseResult(await handlers.get("lambda")!(loadEventFixture(fixture), contextFor("lambda")));
      assert.deepEqual([r.status, r.body], [400, { detail: "request body is not valid JSON" }], fixture);
    }
    // FunctionGraph's: GET /apig-event-template (empty body) and GET / with a base64 JSON body (ignored for GET).
    for (const fixture of ["functiongraph-apig", "functiongraph-apig-base64"]) {
      const r = parseResult(await handlers.get("functiongraph")!(loadEventFixture(fixture), contextFor("functiongraph", { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY })));
      assert.deepEqual([r.status, r.body], [404, { detail: "Not Found" }], fixture);
    }
    // SCF's: POST /test/value with {"test":"body"}.
    const r = parseResult(await handlers.get("scf")!(loadEventFixture("scf-apigw"), contextFor("scf")));
    assert.deepEqual([r.status, r.body], [404, { detail: "Not Found" }]);
  });

  it("a non-HTTP event to the reward function answers an HTTP-shaped 400 saying what it got", T, async () => {
    const timer = parseResult(await handlers.get("scf")!(loadEventFixture("scf-timer"), contextFor("scf")));
    assert.equal(timer.status, 400);
    assert.match(timer.body.detail, /answers SCF HTTP trigger events only; got an object with keys Message, Time, TriggerName, Type/);
    const console = parseResult(await handlers.get("lambda")!({ deploy: "x" }, contextFor("lambda")));
    assert.equal(console.status, 400);
    const nothing = parseResult(await handlers.get("functiongraph")!(null, contextFor("functiongraph", { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY })));
    assert.match(nothing.body.detail, /got null/);
  });

  it("rejects broken and unsupported HTTP event shapes with a clear 400", T, async () => {
    const rest = { resource: "/{proxy+}", path: "/run_code", httpMethod: "POST", headers: {}, requestContext: { stage: "prod" }, body: "{}" };
    const v1 = parseResult(await handlers.get("lambda")!(rest, contextFor("lambda")));
    assert.equal(v1.status, 400);
    assert.match(v1.body.detail, /payload format 1\.0 .* not supported.*version 2\.0/);
    const noPath = parseResult(await handlers.get("scf")!({ httpMethod: "POST", requestContext: { serviceId: "s" }, body: "{}" }, contextFor("scf")));
    assert.deepEqual([noPath.status, noPath.body.detail], [400, "a SCF API Gateway event needs path"]);
    const noMethod = parseResult(await handlers.get("lambda")!({ version: "2.0", rawPath: "/run_code", requestContext: {} }, contextFor("lambda")));
    assert.match(noMethod.body.detail, /needs requestContext\.http\.method/);
  });

  it("never logs the token or the E2B key; a /t/<token>/ path is logged as /t/***", () => {
    assert.ok(logs.length > 20, `a request log was written (${logs.length} lines)`);
    assert.ok(logs.some((l) => l.includes("/t/***/run_code")), "the prefixed request is in the log, masked");
    for (const l of logs) {
      assert.ok(!l.includes(TOKEN), `token in log line: ${l}`);
      assert.ok(!l.includes(E2B_KEY), `E2B key in log line: ${l}`);
      assert.doesNotMatch(l, /\n\s+at /, "no stack traces");
    }
  });
});

describe("the reward function on a hosted ScaleBox (RLPIPE_SANDBOX=scalebox)", () => {
  it("scores and runs code through the ScaleBox URLs (comma-separated) with the ScaleBox's own bearer token", T, async () => {
    // A SandboxFusion-compatible server stands in for the hosted ScaleBox: rlpipe's own, on the local sandbox, with a token.
    const sbToken = randomBytes(20).toString("hex");
    const sandbox = await LocalSandbox.create();
    const servers = [
      await startHttpServer({ backend: sandbox, cache: new ResultCache(), token: sbToken }, { host: "127.0.0.1", port: 0 }),
      await startHttpServer({ backend: sandbox, cache: new ResultCache(), token: sbToken }, { host: "127.0.0.1", port: 0 }),
    ];
    try {
      const lines: string[] = [];
      const env = { RLPIPE_SANDBOX: "scalebox", RLPIPE_SCALEBOX_URL: servers.map((s) => s.url).join(", "), RLPIPE_SANDBOX_TOKEN: TOKEN, RLPIPE_SCALEBOX_TOKEN: sbToken };
      const h = scfHandler(rewardApp, { env, log: (l) => lines.push(l) });
      const run = parseResult(await h(scfEvent({ method: "POST", path: "/run_code", headers: auth, body: { code: "print(5)", language: "python" } }), {}));
      assert.deepEqual([run.status, run.body.run_result.stdout], [200, "5\n"]);
      const samples = [{ data_source: "code", solution_str: A_PLUS_B, ground_truth: GT }];
      const rewards = parseResult(await h(scfEvent({ method: "POST", path: "/v1/rewards", headers: auth, body: { samples } }), {}));
      assert.deepEqual(rewards.body.results.map((x: { score: number }) => x.score), [1]);
      assert.ok(lines.some((l) => /^reward function: sandbox scalebox/.test(l)), lines.join("\n"));
      assert.ok(lines.every((l) => !l.includes(sbToken) && !l.includes(TOKEN)));
      // Without its token the ScaleBox refuses the health check: the cold start fails and says so.
      const noToken = scfHandler(rewardApp, { env: { ...env, RLPIPE_SCALEBOX_TOKEN: undefined, RLPIPE_SCALEBOX_URL: undefined, SCALEBOX_URL: servers[0]!.url }, log: () => {} });
      const refused = parseResult(await noToken(scfEvent({ method: "POST", path: "/run_code", headers: auth, body: { code: "print(5)", language: "python" } }), {}));
      assert.equal(refused.status, 200, "SCALEBOX_URL is read too; /v1/ping is public, so the health check passes");
      assert.equal(refused.body.status, "SandboxError", "…but the ScaleBox refuses the run without its token, and that is never reported as success");
    } finally {
      for (const s of servers) await s.close();
      await sandbox.close();
    }
  });
});

describe("the reward function's sandbox warm-up: the cold start does not wait for the sandbox", () => {
  const runCode = { method: "POST", path: "/run_code", headers: auth, body: { code: "print(6 * 7)", language: "python" } } as const;
  const e2bEnv = (fake: FakeE2B, key: string): NodeJS.ProcessEnv => ({
    RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost", RLPIPE_SANDBOX_CONCURRENCY: "2",
    RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: key,
  });

  for (const p of PLATFORMS) {
    it(`${p}: GET /v1/ping answers while the sandbox is still being created; /run_code waits for the warm-up and runs on the sandbox it made`, T, async () => {
      const fake = await FakeE2B.start({ apiKey: E2B_KEY });
      const release = fake.holdCreates();
      const watch = watchUnhandledRejections();
      try {
        const lines: string[] = [];
        const env = e2bEnv(fake, E2B_KEY);
        const h = handlerFor(p, rewardApp, { env: p === "functiongraph" ? { ...env, RLPIPE_SANDBOX_TOKEN: undefined, E2B_API_KEY: undefined } : env, log: (l) => lines.push(l) });
        const ctx = contextFor(p, { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY });
        const ping = parseResult(await h(eventFor(p, { method: "GET", path: "/v1/ping" }), ctx));
        assert.deepEqual([ping.status, ping.body], [200, "pong"], "the first invocation (the cold start) answers before any sandbox exists");
        await waitFor("the warm-up's create to reach the fake", () => fake.createsHeld === 1);
        const again = parseResult(await h(eventFor(p, { method: "GET", path: "/v1/ping" }), ctx));
        assert.deepEqual([again.status, again.body], [200, "pong"]);
        assert.deepEqual([fake.createsHeld, fake.stats.creates.length], [1, 0], "ping answered while the sandbox creation was still held");

        let settled = false;
        const pending = h(eventFor(p, runCode), ctx).then((r) => { settled = true; return parseResult(r); });
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(settled, false, "/run_code waits for the warm-up instead of answering without a sandbox");
        release();
        const r = await pending;
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual([r.body.status, r.body.run_result.stdout], ["Success", "42\n"]);
        assert.equal(fake.stats.creates.length, 1, "the job ran on the sandbox the warm-up created and checked");
        assert.ok(lines.some((l) => /^reward function: sandbox e2b ready after \d+ms \(python, cpp, nodejs; concurrency 2\)$/.test(l)), lines.join("\n"));
        assert.deepEqual(fake.stats.unknown, []);
      } finally {
        release();
        await watch.stop();
        await fake.close();
      }
      assert.deepEqual(watch.seen, []);
    });
  }

  it("a warm-up refused by E2B (bad key) answers /run_code 503 with its code and hint, is tried again after the hold (one attempt however many requests), and succeeds once the key is accepted; no unhandled rejection", T, async () => {
    const key = `ark_${randomBytes(16).toString("hex")}`;
    const fake = await FakeE2B.start({ apiKey: `ark_${randomBytes(16).toString("hex")}` });
    const watch = watchUnhandledRejections();
    try {
      const lines: string[] = [];
      let nowMs = 1_000_000;
      const h = lambdaHandler(makeRewardApp({ now: () => nowMs, retryHoldMs: 1000 }), { env: e2bEnv(fake, key), log: (l) => lines.push(l) });
      const call = (spec: RequestSpec) => h(lambdaEvent(spec), {}).then(parseResult);

      const ping = await call({ method: "GET", path: "/v1/ping" });
      assert.deepEqual([ping.status, ping.body], [200, "pong"], "a bad key does not fail the cold start: ping needs no sandbox");
      // The warm-up started at cold start fails with nobody waiting for it.
      await waitFor("the warm-up to fail", () => lines.some((l) => l.startsWith("sandbox warm-up failed")));
      const perAttempt = fake.stats.authFailures;
      assert.ok(perAttempt > 0, "the fake refused the key");
      assert.ok(lines.some((l) => /^sandbox warm-up failed: SandboxError e2b_auth_failed: .*\(check E2B_API_KEY.*\); the next request that needs the sandbox tries again/.test(l)), lines.join("\n"));

      const refused = await call(runCode);
      assert.equal(refused.status, 503);
      assert.equal(refused.body.code, "e2b_auth_failed");
      assert.equal(refused.body.hint, "check E2B_API_KEY (and E2B_DOMAIN for AGS)");
      assert.match(refused.body.detail, /^the e2b sandbox backend is not available \(e2b_auth_failed\): the E2B\/AGS service rejected the credentials/);
      assert.equal(refused.headers["retry-after"], "1");
      assert.equal(fake.stats.authFailures, perAttempt, "within the hold the failure is answered from memory: no new attempt");
      const noToken = await call({ ...runCode, headers: { "content-type": "application/json" } });
      assert.equal(noToken.status, 401, "the token is checked before the backend: no failure details without it");
      assert.equal((await call({ method: "GET", path: "/v1/ping" })).status, 200);

      nowMs += 1000;
      const burst = await Promise.all(Array.from({ length: 5 }, () => call(runCode)));
      assert.deepEqual(burst.map((r) => [r.status, r.body.code]), Array(5).fill([503, "e2b_auth_failed"]));
      assert.equal(fake.stats.authFailures, 2 * perAttempt, "after the hold the key is tried again (not cached for good), once for five concurrent requests");

      fake.acceptApiKey(key);
      const stillHeld = await call(runCode);
      assert.equal(stillHeld.status, 503, "the hold applies to the new failure too");
      nowMs += 1000;
      const ok = await call(runCode);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.equal(ok.body.run_result.stdout, "42\n");
      assert.equal((await call(runCode)).status, 200, "a ready backend is kept");
      assert.equal(fake.stats.creates.length, 1);
      assert.ok(lines.every((l) => !l.includes(key) && !l.includes(TOKEN)));
      assert.ok(!JSON.stringify(refused.body).includes(key));
    } finally {
      await watch.stop();
      await fake.close();
    }
    assert.deepEqual(watch.seen, [], "a failed warm-up is never an unhandled rejection");
  });

  it("ScaleBox the same way: an unreachable ScaleBox does not fail the cold start; /run_code answers 503 scalebox_unreachable, then runs once the server is up", T, async () => {
    const sandbox = await LocalSandbox.create();
    // A free loopback port: a server takes one and is closed, so nothing listens there until the test starts it again.
    const probe = await startHttpServer({ backend: sandbox, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
    const url = probe.url;
    await probe.close();
    const watch = watchUnhandledRejections();
    let server: Awaited<ReturnType<typeof startHttpServer>> | undefined;
    try {
      const lines: string[] = [];
      let nowMs = 0;
      const h = scfHandler(makeRewardApp({ now: () => nowMs }), { env: { RLPIPE_SANDBOX: "scalebox", RLPIPE_SCALEBOX_URL: url, RLPIPE_SANDBOX_TOKEN: TOKEN }, log: (l) => lines.push(l) });
      const call = (spec: RequestSpec) => h(scfEvent(spec), {}).then(parseResult);
      assert.deepEqual((await call({ method: "GET", path: "/v1/ping" })).body, "pong");
      await waitFor("the warm-up to fail", () => lines.some((l) => l.startsWith("sandbox warm-up failed: SandboxError scalebox_unreachable")));
      const refused = await call(runCode);
      assert.deepEqual([refused.status, refused.body.code], [503, "scalebox_unreachable"]);
      assert.match(refused.body.hint, /check the URL/);
      const port = Number(new URL(url).port);
      server = await startHttpServer({ backend: sandbox, cache: new ResultCache() }, { host: "127.0.0.1", port });
      nowMs += 1000;
      const ok = await call(runCode);
      assert.deepEqual([ok.status, ok.body.run_result?.stdout], [200, "42\n"], JSON.stringify(ok.body));
      assert.ok(lines.some((l) => /^reward function: sandbox scalebox ready after/.test(l)), lines.join("\n"));
    } finally {
      await watch.stop();
      await server?.close();
      await sandbox.close();
    }
    assert.deepEqual(watch.seen, []);
  });
});

describe("cloud-function adapters: cold start, errors and limits (small apps)", () => {
  const echo: FunctionApp = { http: async (req) => json(200, { path: req.path, method: req.method, body: req.body ?? null, query: req.query ?? {}, auth: req.headers["authorization"] ?? null }) };

  for (const p of PLATFORMS) {
    it(`${p}: a failed cold start is not cached: the next invocation builds again`, async () => {
      let attempts = 0;
      const lines: string[] = [];
      const h = handlerFor(p, async () => { attempts++; if (attempts === 1) throw new Error("network down"); return echo; }, { env: {}, log: (l) => lines.push(l) });
      const ev = eventFor(p, { method: "GET", path: "/x" });
      const first = parseResult(await h(ev, contextFor(p)));
      assert.deepEqual([first.status, first.body], [500, { detail: "internal error" }]);
      const second = parseResult(await h(ev, contextFor(p)));
      assert.deepEqual([second.status, second.body.path], [200, "/x"]);
      const third = parseResult(await h(ev, contextFor(p)));
      assert.equal(third.status, 200);
      assert.equal(attempts, 2);
      assert.ok(lines.some((l) => l === "cold start failed: Error: network down"), lines.join("\n"));
    });

    it(`${p}: base64 bodies decode, header names are lower-cased, query strings arrive`, async () => {
      const h = handlerFor(p, async () => echo, { env: {}, log: () => {} });
      const r = parseResult(await h(eventFor(p, { method: "POST", path: "/echo", headers: { "Content-Type": "application/json; charset=utf-8", Authorization: "Bearer abc" }, body: { "ü": "ß" }, base64: true, query: { n: "3" } }), contextFor(p)));
      assert.deepEqual(r.body, { path: "/echo", method: "POST", body: { "ü": "ß" }, query: { n: "3" }, auth: "Bearer abc" });
      const plain = parseResult(await h(eventFor(p, { method: "POST", path: "/echo", headers: { "content-type": "application/json" }, body: { a: 1 }, base64: false }), contextFor(p)));
      assert.deepEqual(plain.body.body, { a: 1 });
    });

    it(`${p}: a response above the platform's 6 MB limit becomes a clear 502`, async () => {
      const h = handlerFor(p, async () => ({ http: async () => json(200, { blob: "x".repeat(SIX_MB) }) }), { env: {}, log: () => {} });
      const r = parseResult(await h(eventFor(p, { method: "GET", path: "/big" }), contextFor(p)));
      assert.equal(r.status, 502);
      assert.match(r.body.detail, /larger than the (Lambda|FunctionGraph|SCF) response limit of 6291456 bytes/);
    });

    it(`${p}: an exception answers 500 {detail:"internal error"}: no stack, no secret, one redacted log line`, async () => {
      const secret = `s3cr3t-${randomBytes(12).toString("hex")}`;
      const lines: string[] = [];
      const h = handlerFor(p, async (cold) => {
        const s = await cold.secrets.get("RLPIPE_SANDBOX_TOKEN");
        return { http: async () => { throw new Error(`backend refused key ${s}`); } };
      }, { env: { RLPIPE_SANDBOX_TOKEN: secret }, log: (l) => lines.push(l) });
      const ctx = p === "functiongraph" ? contextFor(p, { RLPIPE_SANDBOX_TOKEN: secret }) : contextFor(p);
      const raw = await h(eventFor(p, { method: "GET", path: "/boom" }), ctx);
      assert.ok(!JSON.stringify(raw).includes(secret));
      const r = parseResult(raw);
      assert.deepEqual([r.status, r.body], [500, { detail: "internal error" }]);
      assert.ok(lines.includes("error Error: backend refused key ***"), lines.join("\n"));
      assert.ok(lines.every((l) => !l.includes(secret) && !/\n\s+at /.test(l)));
    });

    it(`${p}: non-HTTP events go to app.event; its failure is thrown without details`, async () => {
      const seen: unknown[] = [];
      const h = handlerFor(p, async () => ({ event: async (e) => { seen.push(e); if ((e as { fail?: boolean }).fail === true) throw new Error("disk full at /secret/path"); return { ok: true }; } }), { env: {}, log: () => {} });
      assert.deepEqual(await h({ action: "status", run: "r1" }, contextFor(p)), { ok: true });
      assert.deepEqual(seen, [{ action: "status", run: "r1" }]);
      await assert.rejects(h({ fail: true }, contextFor(p)), (e: Error) => e.message === "internal error (see the function log)");
      // An app with events only answers HTTP with 404.
      const r = parseResult(await h(eventFor(p, { method: "GET", path: "/v1/ping" }), contextFor(p)));
      assert.equal(r.status, 404);
    });
  }

  it("a cold start that fails on configuration says which variable, as 503 to HTTP callers and as the thrown error to direct invocations", async () => {
    const lines: string[] = [];
    const h = lambdaHandler(rewardApp, { env: { RLPIPE_SANDBOX: "e2b" }, log: (l) => lines.push(l) });
    const r = parseResult(await h(lambdaEvent({ method: "GET", path: "/v1/ping" }), {}));
    assert.equal(r.status, 503);
    assert.match(r.body.detail, /RLPIPE_SANDBOX_TOKEN is not set/);
    await assert.rejects(h({ console: "event" }, {}), /RLPIPE_SANDBOX_TOKEN is not set/);
    const local = lambdaHandler(rewardApp, { env: { RLPIPE_SANDBOX: "local", RLPIPE_SANDBOX_TOKEN: TOKEN }, log: () => {} });
    const lr = parseResult(await local(lambdaEvent({ method: "GET", path: "/v1/ping" }), {}));
    assert.match(lr.body.detail, /RLPIPE_SANDBOX=local cannot work in a cloud function: the local sandbox needs bubblewrap/);
    const short = scfHandler(rewardApp, { env: { RLPIPE_SANDBOX: "e2b", RLPIPE_SANDBOX_TOKEN: "short" }, log: () => {} });
    assert.match(parseResult(await short(scfEvent({ method: "GET", path: "/v1/ping" }), {})).body.detail, /RLPIPE_SANDBOX_TOKEN must be at least 16 characters/);
    const noKey = scfHandler(rewardApp, { env: { RLPIPE_SANDBOX: "e2b", RLPIPE_SANDBOX_TOKEN: TOKEN }, log: () => {} });
    assert.match(parseResult(await noKey(scfEvent({ method: "GET", path: "/v1/ping" }), {})).body.detail, /E2B_API_KEY is not set/);
    const noUrl = functionGraphHandler(rewardApp, { env: {}, log: () => {} });
    const fgCtx = { getUserData: (k: string) => ({ RLPIPE_SANDBOX: "scalebox", RLPIPE_SANDBOX_TOKEN: TOKEN } as Record<string, string>)[k] };
    assert.match(parseResult(await noUrl(functionGraphEvent({ method: "GET", path: "/v1/ping" }), fgCtx)).body.detail, /RLPIPE_SCALEBOX_URL is not set/);
    const badUrl = functionGraphHandler(rewardApp, { env: { RLPIPE_SANDBOX: "scalebox", RLPIPE_SCALEBOX_URL: "ftp://x", RLPIPE_SANDBOX_TOKEN: TOKEN }, log: () => {} });
    assert.match(parseResult(await badUrl(functionGraphEvent({ method: "GET", path: "/v1/ping" }), {})).body.detail, /RLPIPE_SCALEBOX_URL entry 1 is not an http\(s\) URL/);
    const badBase = lambdaHandler(async () => echo, { env: { RLPIPE_BASE_PATH: "no-slash" }, log: () => {} });
    assert.match(parseResult(await badBase(lambdaEvent({ method: "GET", path: "/x" }), {})).body.detail, /RLPIPE_BASE_PATH must be a path/);
    assert.ok(lines.some((l) => l.startsWith("cold start failed: RlpipeError secret_missing: RLPIPE_SANDBOX_TOKEN is not set")), lines.join("\n"));
  });

  it("every platform stops a request's programs shortly before the invocation's time is up, and answers 504", async () => {
    for (const p of PLATFORMS) {
      let sawAbort = false;
      // A backend whose program never ends by itself: only the abort signal ends it.
      const stuck = {
        name: "stuck", capabilities: async () => ({ backend: "stuck", languages: ["python"], maxConcurrency: 1, specialJudge: false }),
        run: (_req: unknown, signal?: AbortSignal) => new Promise<never>((_, reject) => signal?.addEventListener("abort", () => { sawAbort = true; reject(signal.reason); }, { once: true })),
        evaluate: async () => [], close: async () => {},
      };
      const app: FunctionAppFactory = async () => ({ http: (req) => route(req, { backend: stuck as never, cache: new ResultCache() }) });
      const lines: string[] = [];
      const h = handlerFor(p, app, { env: {}, log: (l) => lines.push(l) });
      // 2.5 s left: the programs are stopped 2 s before the platform would end the invocation.
      const ctx = p === "lambda" ? { getRemainingTimeInMillis: () => 2500 } : p === "functiongraph" ? { getRemainingTimeInMilliSeconds: () => 2500 } : { time_limit_in_ms: 2500 };
      const r = parseResult(await h(eventFor(p, { method: "POST", path: "/run_code", headers: { "content-type": "application/json" }, body: JSON.stringify({ language: "python", code: "while True: pass" }) }), ctx as never));
      assert.equal(r.status, 504, `${p}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.status, "SandboxError");
      assert.ok(sawAbort, `${p}: the backend was told to stop`);
      assert.ok(lines.some((l) => /^cancelled POST \/run_code: the invocation's time was nearly up/.test(l)), `${p}: ${lines.join("\n")}`);
    }
  });

  it("FunctionGraph: the app's env falls back to context.getUserData, and changed agency credentials rebuild the app", async () => {
    let builds = 0;
    const seen: (string | undefined)[] = [];
    const h = functionGraphHandler(async (cold) => {
      builds++;
      seen.push(cold.env["RLPIPE_SANDBOX"], cold.env["OBS_ACCESS_KEY_ID"], cold.env["OBS_SECURITY_TOKEN"]);
      return echo;
    }, { env: {}, log: () => {} });
    const ctx = (ak: string) => ({
      getUserData: (k: string) => (k === "RLPIPE_SANDBOX" ? "e2b" : undefined),
      getSecurityAccessKey: () => ak, getSecuritySecretKey: () => "agency-sk", getSecurityToken: () => "agency-token",
    });
    const ev = functionGraphEvent({ method: "GET", path: "/x" });
    await h(ev, ctx("AK1"));
    await h(ev, ctx("AK1"));
    assert.equal(builds, 1);
    await h(ev, ctx("AK2"));
    assert.equal(builds, 2);
    assert.deepEqual(seen, ["e2b", "AK1", "agency-token", "e2b", "AK2", "agency-token"]);
  });

  it("SCF: the execution role's temporary credentials become the COS variables", async () => {
    let env: NodeJS.ProcessEnv | undefined;
    const h = scfHandler(async (cold) => { env = cold.env; return echo; }, { env: { TENCENTCLOUD_SECRETID: "AKIDrole", TENCENTCLOUD_SECRETKEY: "role-key", TENCENTCLOUD_SESSIONTOKEN: "role-token" }, log: () => {} });
    await h(scfEvent({ method: "GET", path: "/x" }), {});
    assert.deepEqual([env!["COS_SECRET_ID"], env!["COS_SECRET_KEY"], env!["COS_SESSION_TOKEN"]], ["AKIDrole", "role-key", "role-token"]);
  });
});
