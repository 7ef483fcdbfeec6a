// Secrets for the Lambda functions: GetSecretValue signed with SigV4 over fetch (functions/platforms/aws-secrets.ts),
// against moto's Secrets Manager behind the strict SigV4 gateway (test/fakes/s3-gateway.ts, verifier in
// test/fakes/sigv4.ts: a request whose signature does not match the key is refused before moto sees it).
// Then the reward function on Lambda reading its token and E2B key from Secrets Manager at cold start, once.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, it } from "node:test";
import { RlpipeError } from "../core/errors.js";
import { rewardApp } from "../functions/apps/reward.js";
import { awsSecretReader, getSecretValue, regionOfArn } from "../functions/platforms/aws-secrets.js";
import { signV4 } from "../functions/platforms/aws-sigv4.js";
import { lambdaHandler } from "../functions/platforms/lambda.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { lambdaEvent, parseResult } from "./fakes/platform-events.js";
import { type Gateway, startGateway } from "./fakes/s3-gateway.js";
import { verifySigV4 } from "./fakes/sigv4.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const T = { timeout: 120_000 };
const REGION = "us-east-1";

/** A Secrets Manager call straight to moto (test setup). */
async function sm(endpoint: string, target: string, body: unknown): Promise<any> {
  const url = new URL(`${endpoint}/`);
  const text = JSON.stringify(body);
  const headers = signV4({ method: "POST", url, body: text, region: REGION, service: "secretsmanager", credentials: TEST_CREDENTIALS, now: new Date(), headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": `secretsmanager.${target}` } });
  delete headers["host"];
  const res = await fetch(url, { method: "POST", headers, body: text });
  const out = await res.json() as any;
  if (!res.ok) throw new Error(`${target}: ${res.status} ${JSON.stringify(out)}`);
  return out;
}

describe("AWS Secrets Manager for Lambda functions (moto behind a strict SigV4 gateway)", () => {
  let moto: Moto;
  let gw: Gateway;
  let fake: FakeE2B;
  const TOKEN = randomBytes(24).toString("hex");
  const E2B_KEY = `e2b_${randomBytes(20).toString("hex")}`;
  const arns: Record<string, string> = {};
  const getCalls = () => gw.log.filter((r) => r.method === "POST").length;

  before(async () => {
    moto = await startMoto();
    gw = await startGateway(moto.endpoint, TEST_CREDENTIALS.secretAccessKey);
    fake = await FakeE2B.start({ apiKey: E2B_KEY });
    const create = async (name: string, value: string) => { arns[name] = (await sm(moto.endpoint, "CreateSecret", { Name: name, SecretString: value })).ARN; };
    await create("rlpipe/bundle", JSON.stringify({ RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY }));
    await create("rlpipe/e2b-key", E2B_KEY);
    await create("rlpipe/token-json", JSON.stringify({ RLPIPE_SANDBOX_TOKEN: TOKEN, username: "x" }));
    await create("rlpipe/plain", "just-a-string-value");
  });
  after(async () => {
    await fake.close();
    await gw.close();
    await moto.stop();
  });

  const base = (over: Partial<Record<string, string>> = {}) => ({
    credentials: { ...TEST_CREDENTIALS, sessionToken: "session-token-from-lambda" }, region: REGION, endpoint: gw.endpoint, retryBaseDelayMs: 10, ...over,
  });

  it("signs GetSecretValue so that a strict SigV4 verifier accepts it (with the session token signed) and reads SecretString", T, async () => {
    const before = gw.stats.rejectedSignature;
    assert.equal(await getSecretValue(arns["rlpipe/e2b-key"]!, base()), E2B_KEY);
    assert.equal(gw.stats.rejectedSignature, before);
    assert.equal(regionOfArn(arns["rlpipe/e2b-key"]!), REGION);
  });

  it("the signature covers the target, the token, the date and the body's hash: any change is refused by the verifier", () => {
    const url = new URL("https://secretsmanager.us-east-1.amazonaws.com/");
    const body = JSON.stringify({ SecretId: "x" });
    const headers = signV4({ method: "POST", url, body, region: REGION, service: "secretsmanager", credentials: { ...TEST_CREDENTIALS, sessionToken: "tok" }, now: new Date(), headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": "secretsmanager.GetSecretValue" } });
    assert.match(headers["authorization"]!, /SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token;x-amz-target, /);
    const ok = verifySigV4({ method: "POST", url: "/", headers }, TEST_CREDENTIALS.secretAccessKey);
    assert.equal(ok.ok, true, ok.reason);
    for (const [name, value] of [["x-amz-target", "secretsmanager.PutSecretValue"], ["x-amz-security-token", "other"], ["x-amz-date", "20200101T000000Z"], ["x-amz-content-sha256", "0".repeat(64)]] as const) {
      assert.equal(verifySigV4({ method: "POST", url: "/", headers: { ...headers, [name]: value } }, TEST_CREDENTIALS.secretAccessKey).ok, false, name);
    }
    assert.equal(verifySigV4({ method: "POST", url: "/", headers }, "another-secret-key").ok, false);
  });

  it("a wrong secret key is refused (access denied, a configuration error, not retried)", T, async () => {
    const n = gw.stats.requests;
    await assert.rejects(getSecretValue(arns["rlpipe/e2b-key"]!, base({ credentials: { accessKeyId: TEST_CREDENTIALS.accessKeyId, secretAccessKey: "wrong-secret" } } as never)),
      (e: RlpipeError) => e.code === "secret_access_denied" && e.exitCode === 2 && /grant the function's role secretsmanager:GetSecretValue/.test(e.hint ?? ""));
    assert.equal(gw.stats.requests, n + 1, "not retried");
  });

  it("a missing secret says so with a hint; a server error is retried", T, async () => {
    await assert.rejects(getSecretValue("arn:aws:secretsmanager:us-east-1:123456789012:secret:nope-abcdef", base()),
      (e: RlpipeError) => e.code === "secret_not_found" && /ResourceNotFoundException/.test(e.message) && /RLPIPE_SECRET_ARN/.test(e.hint ?? ""));
    gw.faults.push({ kind: "status", status: 503, code: "ServiceUnavailable" });
    assert.equal(await getSecretValue(arns["rlpipe/e2b-key"]!, base()), E2B_KEY);
  });

  it("looks names up in <NAME>_SECRET_ARN, then RLPIPE_SECRET_ARN's JSON, then the environment; each ARN is fetched once", T, async () => {
    const env: NodeJS.ProcessEnv = {
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, AWS_SESSION_TOKEN: "tok", AWS_REGION: REGION,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: gw.endpoint,
      E2B_API_KEY_SECRET_ARN: arns["rlpipe/e2b-key"], RLPIPE_SANDBOX_TOKEN_SECRET_ARN: arns["rlpipe/token-json"], RLPIPE_SECRET_ARN: arns["rlpipe/bundle"],
      RLPIPE_RUNS_SECRET: "from-the-environment",
    };
    const read = awsSecretReader(env, fetch);
    const n = getCalls();
    assert.deepEqual(await Promise.all([read("E2B_API_KEY"), read("RLPIPE_SANDBOX_TOKEN"), read("RLPIPE_RUNS_SECRET"), read("RLPIPE_SCALEBOX_TOKEN"), read("E2B_API_KEY")]),
      [E2B_KEY, TOKEN, "from-the-environment", undefined, E2B_KEY]);
    assert.equal(getCalls() - n, 3, "one GetSecretValue per ARN (per-name key, per-name token, bundle)");
    const plain = awsSecretReader({ ...env, RLPIPE_SECRET_ARN: arns["rlpipe/plain"], E2B_API_KEY_SECRET_ARN: undefined }, fetch);
    await assert.rejects(plain("E2B_API_KEY"), (e: RlpipeError) => e.code === "secret_invalid" && /must be a JSON object/.test(e.message) && /E2B_API_KEY_SECRET_ARN/.test(e.hint ?? ""));
    const noCreds = awsSecretReader({ RLPIPE_SECRET_ARN: arns["rlpipe/bundle"] }, fetch);
    await assert.rejects(noCreds("E2B_API_KEY"), (e: RlpipeError) => e.code === "aws_credentials_missing" && e.exitCode === 2);
  });

  it("the reward function on Lambda reads its token and E2B key from Secrets Manager at cold start, once, and never logs them", T, async () => {
    const lines: string[] = [];
    const env: NodeJS.ProcessEnv = {
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, AWS_SESSION_TOKEN: "lambda-session-token-value", AWS_REGION: REGION,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: gw.endpoint, RLPIPE_SECRET_ARN: arns["rlpipe/bundle"],
      RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost",
    };
    const handler = lambdaHandler(rewardApp, { env, log: (l) => lines.push(l) });
    const n = getCalls();
    const call = (headers: Record<string, string>) => handler(lambdaEvent({ method: "POST", path: "/run_code", headers: { "content-type": "application/json", ...headers }, body: { code: "print('from lambda')", language: "python" } }), { awsRequestId: "r" }).then(parseResult);
    const [a, b] = await Promise.all([call({ authorization: `Bearer ${TOKEN}` }), call({ authorization: `Bearer ${TOKEN}` })]);
    assert.deepEqual([a.status, a.body.run_result.stdout, b.status], [200, "from lambda\n", 200]);
    assert.equal((await call({})).status, 401);
    assert.equal(getCalls() - n, 1, "the bundle secret is fetched once for both names and every invocation");
    assert.ok(lines.length >= 4);
    for (const l of lines) for (const s of [TOKEN, E2B_KEY, TEST_CREDENTIALS.secretAccessKey, "lambda-session-token-value"]) assert.ok(!l.includes(s), `secret in log: ${l}`);
  });
});
