// What a cloud function answers when the service behind it fails: the runs function whose store refuses its
// credentials (the strict SigV4 gateway, test/fakes/s3-gateway.ts) or cannot be reached answers the classified
// error — its stable code and hint, 502 or 503 — not 500 "internal error", on every platform and in `rlpipe serve`;
// a bug still answers 500 with nothing but "internal error"; a console event whose provider could not be reached
// fails with the error's code (what Lambda's on-failure destination records), never "internal error".
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { ExitCode, RlpipeError } from "../core/errors.js";
import type { FunctionAppFactory } from "../functions/app.js";
import { runsApp } from "../functions/apps/runs.js";
import { functionGraphHandler } from "../functions/platforms/functiongraph.js";
import type { HandlerOptions, PlatformHandler } from "../functions/platforms/handler.js";
import { startHttpServer } from "../functions/platforms/http.js";
import { lambdaHandler } from "../functions/platforms/lambda.js";
import { scfHandler } from "../functions/platforms/scf.js";
import { ResultCache } from "../functions/reward.js";
import { runToken } from "../functions/runs.js";
import { S3Store } from "../adapters/storage/s3.js";
import { type Gateway, startGateway } from "./fakes/s3-gateway.js";
import { type Platform, eventFor, parseResult } from "./fakes/platform-events.js";
import { freePort } from "./servers/moto.js";

const PLATFORMS: readonly Platform[] = ["lambda", "functiongraph", "scf"];
const RUNS_SECRET = randomBytes(24).toString("hex");
const RUN = "errors-0123abcd.grpo";
/** The store's real secret (the gateway's) and the one the function was given: they differ. */
const STORE_SECRET = randomBytes(20).toString("hex");
const WRONG_SECRET = randomBytes(20).toString("hex");
const AKID = "rlpipe-test-akid";

function handlerFor(platform: Platform, factory: FunctionAppFactory, opts: HandlerOptions): PlatformHandler<any> {
  switch (platform) {
    case "lambda": return lambdaHandler(factory, opts);
    case "functiongraph": return functionGraphHandler(factory, opts);
    case "scf": return scfHandler(factory, opts);
  }
}

/** The runs function on `platform` against `endpoint`, signing with `secretKey` (the platform's role credentials). */
function runsOn(platform: Platform, endpoint: string, secretKey: string, log: (l: string) => void): { handler: PlatformHandler<any>; context: unknown } {
  const env: NodeJS.ProcessEnv = { RLPIPE_STORE_RETRY_S: "0", RLPIPE_RUNS_SECRET: RUNS_SECRET };
  let context: unknown = {};
  if (platform === "lambda") {
    Object.assign(env, { RLPIPE_RUNS_STORE: "s3://runs/p", S3_ENDPOINT: endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: AKID, AWS_SECRET_ACCESS_KEY: secretKey, AWS_SESSION_TOKEN: "role-session" });
  } else if (platform === "functiongraph") {
    Object.assign(env, { RLPIPE_RUNS_STORE: "obs://runs/p", OBS_ENDPOINT: endpoint, OBS_REGION: "cn-north-4" });
    context = { getUserData: () => undefined, getSecurityAccessKey: () => AKID, getSecuritySecretKey: () => secretKey, getSecurityToken: () => "agency-token" };
  } else {
    Object.assign(env, { RLPIPE_RUNS_STORE: "cos://runs/p", COS_ENDPOINT: endpoint, COS_REGION: "ap-guangzhou", TENCENTCLOUD_SECRETID: AKID, TENCENTCLOUD_SECRETKEY: secretKey, TENCENTCLOUD_SESSIONTOKEN: "role-token" });
  }
  return { handler: handlerFor(platform, runsApp, { env, log }), context };
}

const stateRequest = { method: "GET", path: `/v1/runs/${RUN}/state`, headers: { authorization: `Bearer ${runToken(RUNS_SECRET, RUN)}` } } as const;

describe("the runs function when its store fails: the classified error, not 500", () => {
  let gw: Gateway;
  let closedPort: number;

  before(async () => {
    // Nothing behind the gateway: a request it lets through would fail differently (connection refused upstream).
    gw = await startGateway(`http://127.0.0.1:${await freePort()}`, STORE_SECRET);
    closedPort = await freePort();
  });
  after(async () => { await gw.close(); });

  for (const p of PLATFORMS) {
    it(`${p}: credentials the store refuses answer 502 store_auth_refused with a hint naming the credential variables; no secret in the answer`, async () => {
      const lines: string[] = [];
      const { handler, context } = runsOn(p, gw.endpoint, WRONG_SECRET, (l) => lines.push(l));
      const rejected = gw.stats.rejectedSignature;
      const raw = await handler(eventFor(p, stateRequest), context);
      const r = parseResult(raw);
      assert.equal(r.status, 502, JSON.stringify(r.body));
      assert.equal(r.body.code, "store_auth_refused");
      assert.match(r.body.detail, /HTTP 403 SignatureDoesNotMatch: the store refused the credentials/);
      assert.match(r.body.hint, /check .*(AWS_|OBS_|COS_)/);
      assert.ok(gw.stats.rejectedSignature > rejected, "the gateway checked the signature and refused it");
      for (const s of [WRONG_SECRET, RUNS_SECRET]) assert.ok(!JSON.stringify(raw).includes(s) && lines.every((l) => !l.includes(s)), "no secret in the answer or the log");
    });

    it(`${p}: a store that cannot be reached answers 503 store_unreachable (worth a retry)`, async () => {
      const { handler, context } = runsOn(p, `http://127.0.0.1:${closedPort}`, WRONG_SECRET, () => {});
      const r = parseResult(await handler(eventFor(p, stateRequest), context));
      assert.deepEqual([r.status, r.body.code], [503, "store_unreachable"], JSON.stringify(r.body));
      assert.match(r.body.hint, /ENDPOINT/);
    });
  }

  it("rlpipe serve's runs routes answer the same", async () => {
    const store = new S3Store({ scheme: "s3", bucket: "runs", prefix: "p", region: "us-east-1", endpoint: gw.endpoint, credentials: { accessKeyId: AKID, secretAccessKey: WRONG_SECRET } });
    const server = await startHttpServer({ runs: { store, secret: RUNS_SECRET }, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
    try {
      const res = await fetch(`${server.url}${stateRequest.path}`, { headers: stateRequest.headers });
      const body = await res.json() as { code?: string; detail?: string };
      assert.deepEqual([res.status, body.code], [502, "store_auth_refused"], JSON.stringify(body));
      assert.ok(!JSON.stringify(body).includes(WRONG_SECRET));
    } finally {
      await server.close();
      await store.close();
    }
  });
});

describe("errors a function app throws, by kind", () => {
  const secret = `s3cr3t-${randomBytes(12).toString("hex")}`;
  const throwing = (e: unknown): FunctionAppFactory => async (cold) => {
    await cold.secrets.get("RLPIPE_SANDBOX_TOKEN"); // read: from now on the log's redaction knows it
    return { http: async () => { throw e; }, event: async () => { throw e; } };
  };
  const env = { RLPIPE_SANDBOX_TOKEN: secret };

  for (const p of PLATFORMS) {
    const ctx = p === "functiongraph" ? { getUserData: (k: string) => (env as Record<string, string>)[k] } : {};
    it(`${p}: HTTP: configuration 503 with its code, an external failure 502, a retryable one 503, a bug 500 "internal error"; secrets redacted`, async () => {
      const cases: [unknown, number, Record<string, unknown>][] = [
        [new RlpipeError("config_invalid", "RLPIPE_X must be a number", { exitCode: ExitCode.invalidInput, hint: "set RLPIPE_X" }), 503, { detail: "RLPIPE_X must be a number", code: "config_invalid", hint: "set RLPIPE_X" }],
        [new RlpipeError("provider_auth_refused", `the provider refused key ${secret}`, { hint: "check the key" }), 502, { detail: "the provider refused key ***", code: "provider_auth_refused", hint: "check the key" }],
        [Object.assign(new RlpipeError("store_unavailable", "HTTP 503 SlowDown"), { retryable: true }), 503, { detail: "HTTP 503 SlowDown", code: "store_unavailable" }],
        [new Error(`bug near ${secret}`), 500, { detail: "internal error" }],
      ];
      for (const [error, status, body] of cases) {
        const h = handlerFor(p, throwing(error), { env: p === "functiongraph" ? {} : env, log: () => {} });
        const r = parseResult(await h(eventFor(p, { method: "GET", path: "/x" }), ctx));
        assert.deepEqual([r.status, r.body], [status, body], String((error as Error).message));
      }
    });

    it(`${p}: a console event whose provider could not be reached fails with the error's code and hint (not "internal error"); a bug does not say more`, async () => {
      const unreachable = new RlpipeError("provider_unreachable", `ModelArts at http://127.0.0.1:9 could not be reached (key ${secret})`, { hint: "check MODELARTS_ENDPOINT" });
      const h = handlerFor(p, throwing(unreachable), { env: p === "functiongraph" ? {} : env, log: () => {} });
      await assert.rejects(h({ action: "status", run: "r1" }, ctx), (e: Error) => e.message === "provider_unreachable: ModelArts at http://127.0.0.1:9 could not be reached (key ***) (check MODELARTS_ENDPOINT)");
      const bug = handlerFor(p, throwing(new Error("boom")), { env: p === "functiongraph" ? {} : env, log: () => {} });
      await assert.rejects(bug({ action: "status", run: "r1" }, ctx), (e: Error) => e.message === "internal error (see the function log)");
    });
  }
});
