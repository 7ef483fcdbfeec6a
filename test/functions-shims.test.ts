// The in-job Python shims (recipes/python, standard library only) against the cloud functions as a training job
// reaches them: through a function URL / API Gateway stage / APIG or SCF service path with a path prefix
// (test/fakes/function-gateway.ts turns each HTTP request into the platform's documented trigger event).
// rlpipe_reward.py → the reward function on the E2B backend (strict E2B fakes), bearer token from the environment;
// rlpipe_sync.py → the runs function whose store (moto behind the strict SigV4 gateway) signs with the platform's
// own temporary credentials: the Lambda role, the FunctionGraph agency, the SCF execution role.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { S3Store } from "../adapters/storage/s3.js";
import type { FunctionAppFactory } from "../functions/app.js";
import { rewardApp } from "../functions/apps/reward.js";
import { runsApp } from "../functions/apps/runs.js";
import { functionGraphHandler } from "../functions/platforms/functiongraph.js";
import type { PlatformHandler } from "../functions/platforms/handler.js";
import { lambdaHandler } from "../functions/platforms/lambda.js";
import { scfHandler } from "../functions/platforms/scf.js";
import { runToken } from "../functions/runs.js";
import { assertCommittedIntact, makeCheckpoints, run } from "./checkpoint-helpers.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { type FunctionGateway, startFunctionGateway } from "./fakes/function-gateway.js";
import type { Platform } from "./fakes/platform-events.js";
import { type Gateway, startGateway } from "./fakes/s3-gateway.js";
import { ROOT } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const T = { timeout: 180_000 };
const PY = "/usr/bin/python3";
const SHIMS = join(ROOT, "recipes", "python");
const PLATFORMS: readonly Platform[] = ["lambda", "functiongraph", "scf"];
const PREFIX: Record<Platform, string> = { lambda: "/prod", functiongraph: "/rlpipe", scf: "/rlpipe" };
const TOKEN = randomBytes(24).toString("hex");
const E2B_KEY = `e2b_${randomBytes(20).toString("hex")}`;
const RUNS_SECRET = randomBytes(24).toString("hex");
const A_PLUS_B = "```python\na, b = map(int, input().split())\nprint(a + b)\n```";
const GT = JSON.stringify({ input: ["1 2", "5 5"], output: ["3", "10"], fn_name: null, type: "stdin_stdout" });

function handlerFor(p: Platform, factory: FunctionAppFactory, env: NodeJS.ProcessEnv, log: (l: string) => void): PlatformHandler<any> {
  return p === "lambda" ? lambdaHandler(factory, { env, log }) : p === "functiongraph" ? functionGraphHandler(factory, { env, log }) : scfHandler(factory, { env, log });
}

/** The Python job: score two samples and run one tool call the way verl's SandboxFusionTool does (/t/<token>/ URL). */
const SCORE_SCRIPT = [
  "import json, sys, urllib.request",
  "import rlpipe_reward",
  "base = sys.argv[1]",
  "samples = [dict(data_source='code', solution_str=s, ground_truth=sys.argv[2]) for s in (sys.argv[3], '```python\\nprint(0)\\n```')]",
  "out = {'scores': [r['score'] for r in rlpipe_reward.score_samples(samples, url=base + '/v1/rewards', retries=1, backoff_s=0.1)]}",
  "req = urllib.request.Request(base + '/t/' + sys.argv[4] + '/run_code', data=json.dumps({'code': 'print(7)', 'language': 'python'}).encode(), headers={'Content-Type': 'application/json'})",
  "out['tool'] = json.load(urllib.request.urlopen(req, timeout=60))['run_result']['stdout']",
  "try:",
  "    rlpipe_reward.score_samples(samples, url=base + '/v1/rewards', token_env='NO_SUCH_TOKEN_VAR', retries=0)",
  "except rlpipe_reward.RewardServiceError as e:",
  "    out['without_token'] = str(e)[:40]",
  "print(json.dumps(out))",
].join("\n");

describe("the Python shims against the functions behind a path prefix", () => {
  let fake: FakeE2B;
  let moto: Moto;
  let gw: Gateway;
  let admin: S3Store;
  let work: string;
  const logs: string[] = [];
  const gateways: FunctionGateway[] = [];

  before(async () => {
    fake = await FakeE2B.start({ apiKey: E2B_KEY });
    moto = await startMoto();
    gw = await startGateway(moto.endpoint, TEST_CREDENTIALS.secretAccessKey);
    admin = new S3Store({ scheme: "s3", bucket: "runs", prefix: "", region: "us-east-1", endpoint: gw.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: "runs" }));
    work = mkdtempSync(join(tmpdir(), "rlpipe-fn-shims-"));
  });
  after(async () => {
    for (const g of gateways) await g.close();
    await admin.close();
    await fake.close();
    await gw.close();
    await moto.stop();
    rmSync(work, { recursive: true, force: true });
  });

  for (const p of PLATFORMS) {
    it(`${p}: rlpipe_reward.py scores through the reward function at ${PREFIX[p]}/v1/rewards with its bearer token; the tool URL form works too`, T, async () => {
      const env: NodeJS.ProcessEnv = { RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost", ...(p === "lambda" ? {} : { RLPIPE_BASE_PATH: PREFIX[p] }) };
      const secrets = { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY };
      if (p !== "functiongraph") Object.assign(env, secrets);
      const handler = handlerFor(p, rewardApp, env, (l) => logs.push(l));
      const fn = await startFunctionGateway(p, handler, { prefix: PREFIX[p], context: () => (p === "functiongraph" ? { getUserData: (k: string) => (secrets as Record<string, string>)[k] } : {}) });
      gateways.push(fn);
      const r = await run(PY, ["-c", SCORE_SCRIPT, fn.url, GT, A_PLUS_B, TOKEN], { env: { PATH: "/usr/bin:/bin", PYTHONPATH: SHIMS, PYTHONDONTWRITEBYTECODE: "1", RLPIPE_SANDBOX_TOKEN: TOKEN } });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { scores: [1, 0], tool: "7\n", without_token: `HTTP 401 from ${fn.url}/v1/rewards`.slice(0, 40) });
    });

    it(`${p}: rlpipe_sync.py --url <function>${PREFIX[p]} commits checkpoints through the runs function; the store signs with the platform's own credentials`, T, async () => {
      const scheme = p === "lambda" ? "s3" : p === "functiongraph" ? "obs" : "cos";
      const env: NodeJS.ProcessEnv = { RLPIPE_RUNS_STORE: `${scheme}://runs/${p}`, RLPIPE_RUNS_URL_TTL_S: "120", ...(p === "lambda" ? {} : { RLPIPE_BASE_PATH: PREFIX[p] }) };
      let context: () => unknown = () => ({});
      if (p === "lambda") {
        // Lambda: the role's credentials in AWS_* variables; the secret as an environment variable (Secrets Manager: functions-secrets.test.ts).
        Object.assign(env, { S3_ENDPOINT: gw.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, AWS_SESSION_TOKEN: "role-session", RLPIPE_RUNS_SECRET: RUNS_SECRET });
      } else if (p === "functiongraph") {
        // FunctionGraph: the agency's temporary credentials and the encrypted secret, both from the context.
        Object.assign(env, { OBS_ENDPOINT: gw.endpoint, OBS_REGION: "cn-north-4" });
        context = () => ({
          getUserData: (k: string) => (k === "RLPIPE_RUNS_SECRET" ? RUNS_SECRET : undefined),
          getSecurityAccessKey: () => TEST_CREDENTIALS.accessKeyId, getSecuritySecretKey: () => TEST_CREDENTIALS.secretAccessKey, getSecurityToken: () => "agency-token",
        });
      } else {
        // SCF: the execution role's temporary credentials as SCF sets them.
        Object.assign(env, { COS_ENDPOINT: gw.endpoint, COS_REGION: "ap-guangzhou", TENCENTCLOUD_SECRETID: TEST_CREDENTIALS.accessKeyId, TENCENTCLOUD_SECRETKEY: TEST_CREDENTIALS.secretAccessKey, TENCENTCLOUD_SESSIONTOKEN: "role-token", RLPIPE_RUNS_SECRET: RUNS_SECRET });
      }
      const handler = handlerFor(p, runsApp, env, (l) => logs.push(l));
      const fn = await startFunctionGateway(p, handler, { prefix: PREFIX[p], context });
      gateways.push(fn);
      const dir = join(work, p);
      makeCheckpoints(dir, [2, 4], 4, 9 * 1024 * 1024); // a 9 MiB shard: a two-part multipart upload
      const name = `run-${p}`;
      const rejected = gw.stats.rejectedSignature;
      const r = await run(PY, [join(SHIMS, "rlpipe_sync.py"), "--url", fn.url, "--run", name, "--dir", dir, "--once", "--part-size-mb", "8"], { env: { PATH: "/usr/bin:/bin", RLPIPE_RUN_TOKEN: runToken(RUNS_SECRET, name) } });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(gw.stats.rejectedSignature, rejected, "every store request was signed with the platform's credentials");
      const store = new S3Store({ scheme: "s3", bucket: "runs", prefix: p, region: "us-east-1", endpoint: gw.endpoint, credentials: TEST_CREDENTIALS });
      try {
        assert.deepEqual(await assertCommittedIntact(store, name, dir), [2, 4]);
      } finally {
        await store.close();
      }
      const wrong = await run(PY, [join(SHIMS, "rlpipe_sync.py"), "--url", fn.url, "--run", name, "--dir", dir, "--once"], { env: { PATH: "/usr/bin:/bin", RLPIPE_RUN_TOKEN: runToken("another-secret-entirely", name) } });
      assert.notEqual(wrong.status, 0);
      assert.match(wrong.stderr, /401/);
    });
  }

  it("no secret reached any function log", () => {
    assert.ok(logs.length > 10);
    for (const l of logs) for (const s of [TOKEN, E2B_KEY, RUNS_SECRET, TEST_CREDENTIALS.secretAccessKey]) assert.ok(!l.includes(s), `secret in log: ${l}`);
  });
});
