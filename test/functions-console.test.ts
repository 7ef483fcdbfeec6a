// The console function (functions/console.ts, functions/apps/console.ts) through the real platform adapters: console
// JSON test events deploy a seed recipe to the strict ModelArts and TI-ONE fakes with run records in a real S3 server
// (moto on 127.0.0.1) — exactly once when the same event is delivered twice —, status reads the record from the
// store, dry runs create nothing, bad events get JSON errors that say what, where and what to do; recipe uploads
// (the documented S3, OBS and COS notification shapes in test/fixtures/functions/) deploy once per object version,
// also when a delivery repeats or two arrive together; score runs on the reward function's E2B backend (strict E2B
// fake); and the pieces under it: conditional creates on the stores, credentials taken as a set with their token,
// the shipped Python files embedded in a bundle. Over a Function URL (issue 33): a retryable store failure answers
// 503 with Retry-After and a refusal 502, a browser's GET of a run's report gets the page itself as HTML (JSON when
// asked for), and a presigned page URL never outlives the temporary credentials that sign it.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand, PutBucketVersioningCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { RunRecord } from "../adapters/providers/run-records.js";
import { FsStore } from "../adapters/storage/fs.js";
import { UNKNOWN_EXPIRY_TTL_S, presignRunPageFor, putRunPage, runPageKey } from "../adapters/storage/run-page-store.js";
import { S3Store, resolveS3Options } from "../adapters/storage/s3.js";
import { StorageError, parseStoreUri } from "../adapters/storage/store.js";
import { ExitCode, RlpipeError } from "../core/errors.js";
import type { FunctionAppFactory } from "../functions/app.js";
import { consoleEnv, makeConsoleApp } from "../functions/apps/console.js";
import type { ConsoleDeps } from "../functions/console.js";
import { parseEventBridgeS3, parseNotification } from "../functions/console-events.js";
import { RETRYABLE_RETRY_AFTER_S, thrownResponse } from "../functions/error-response.js";
import { markerKey } from "../functions/event-claims.js";
import { functionGraphHandler } from "../functions/platforms/functiongraph.js";
import type { PlatformHandler } from "../functions/platforms/handler.js";
import { lambdaHandler } from "../functions/platforms/lambda.js";
import { scfHandler } from "../functions/platforms/scf.js";
import { PYTHON_ASSET_FILES, pythonAssetsDefine } from "../functions/python-assets.js";
import { fakeE2bKey, fakeHuaweiAk, fakeHuaweiSk, fakeSecurityToken, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { FakeModelArts, SUCCESS_PHASES } from "./fakes/modelarts-fake.js";
import { lambdaEvent, loadEventFixture, parseResult } from "./fakes/platform-events.js";
import { startGateway } from "./fakes/s3-gateway.js";
import { TioneFake } from "./fakes/tione-fake.js";
import { ROOT, editYaml, planSeed, recipeText } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, freePort, startMoto } from "./servers/moto.js";

const T = { timeout: 120_000 };
const MA_SEED = "qwen3-1.7b-code-toolcall";
const TI_SEED = "retool-qwen3-4b-tione-ags";
const AK = fakeHuaweiAk();
const SK = fakeHuaweiSk();
const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const TI_ID = fakeTencentSecretId();
const TI_KEY = fakeTencentSecretKey();
const TI_TOKEN = fakeSecurityToken();
const E2B_KEY = fakeE2bKey();
const STATE = "rlpipe-state";
const RECIPES = "rlpipe-recipes";
const TI_BUNDLES = "rlpipe-bundles-1251234567";
const SECRETS = [SK, TI_KEY, TI_TOKEN, E2B_KEY];

type Reply = Record<string, any>;

function noSecrets(x: unknown, where: string): void {
  const text = JSON.stringify(x);
  for (const s of SECRETS) assert.ok(!text.includes(s), `${where} holds a secret`);
}

/** The TI-ONE seed with a user's own values in place of its template ones (deploy refuses those). */
function tioneRecipe(): string {
  return editYaml(recipeText(TI_SEED), [
    [["targets", "tione", "resourceGroupId"], "rsg-7k2p9q4m"], [["targets", "tione", "storage", "cfs"], "cfs-3fa9e2c1:/"],
    [["targets", "tione", "codeDir"], `cos://${TI_BUNDLES}/retool-qwen3-4b`],
  ]);
}

describe("console function: deploy, status and uploads against the ModelArts and TI-ONE fakes, records on moto", () => {
  let moto: Moto;
  let ma: FakeModelArts;
  let tione: TioneFake;
  let admin: S3Store;
  let home: string;
  const logs: string[] = [];
  const handlers: PlatformHandler<any>[] = [];

  const maEnv = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    HOME: home, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: ma.endpoint, MODELARTS_TIMEOUT_MS: "2000",
    OBS_ENDPOINT: moto.endpoint, OBS_REGION: "cn-southwest-2", OBS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, OBS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
    S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
    RLPIPE_STATE_STORE: `s3://${STATE}/console`, RLPIPE_RETRY_BUDGET_MS: "2500", RLPIPE_CONSOLE_RECIPE_PREFIX: `s3://${RECIPES}/recipes`,
    ...extra,
  });
  const app = (overrides: Partial<ConsoleDeps> = {}): FunctionAppFactory => makeConsoleApp({ overrides: { claimPollMs: 50, ...overrides } });
  const lambda = (env: NodeJS.ProcessEnv, overrides: Partial<ConsoleDeps> = {}) => {
    const h = lambdaHandler(app(overrides), { env, log: (l) => logs.push(l) });
    handlers.push(h);
    return (event: unknown) => h(event, { awsRequestId: "req-1" }) as Promise<Reply>;
  };
  const readRecord = async (name: string) => RunRecord.parse(JSON.parse((await admin.get(`console/runs/${name}.json`)).toString("utf8")));
  const putRecipe = async (key: string, text: string): Promise<string> => {
    const r = await admin.client.send(new PutObjectCommand({ Bucket: RECIPES, Key: key, Body: text }));
    return r.VersionId!;
  };
  /** The documented S3 notification, for this bucket, key and version. */
  const s3Event = (key: string, versionId: string, sequencer = randomBytes(9).toString("hex").toUpperCase()) => {
    const ev = loadEventFixture("s3-object-created");
    const rec = ev["Records"][0];
    rec.s3.bucket.name = RECIPES;
    rec.s3.bucket.arn = `arn:aws:s3:::${RECIPES}`;
    rec.s3.object.key = encodeURIComponent(key).replace(/%2F/g, "/").replace(/%20/g, "+");
    rec.s3.object.versionId = versionId;
    rec.s3.object.sequencer = sequencer;
    return ev;
  };

  before(async () => {
    home = mkdtempSync(join(tmpdir(), "rlpipe-console-"));
    moto = await startMoto();
    ma = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID }).start();
    tione = await TioneFake.start([{ secretId: TI_ID, secretKey: TI_KEY, token: TI_TOKEN }]);
    admin = new S3Store({ scheme: "s3", bucket: STATE, prefix: "", region: "us-east-1", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    for (const b of [STATE, RECIPES, "rlpipe-runs", TI_BUNDLES, "rlpipe-state-1251234567"]) await admin.client.send(new CreateBucketCommand({ Bucket: b }));
    await admin.client.send(new PutBucketVersioningCommand({ Bucket: RECIPES, VersioningConfiguration: { Status: "Enabled" } }));
  });
  after(async () => {
    await admin.close();
    await ma.close();
    await tione.stop();
    await moto.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it("a deploy event delivered twice makes one ModelArts job: the second answer says existing, both are recorded in the store", T, async () => {
    const invoke = lambda(maEnv());
    const event = { action: "deploy", recipe: recipeText(MA_SEED), provider: "modelarts" };
    const before = ma.stats.creates;
    const first = await invoke(event);
    assert.equal(first["ok"], true, JSON.stringify(first));
    assert.equal(first["outcome"], "created");
    // The same job name the CLI plans for the file: one code path.
    assert.equal(first["name"], planSeed(MA_SEED, "modelarts").jobName);
    const second = await invoke(structuredClone(event));
    assert.equal(second["ok"], true, JSON.stringify(second));
    assert.deepEqual([second["name"], second["id"], second["outcome"]], [first["name"], first["id"], "existing"]);
    assert.ok(SUCCESS_PHASES.includes(second["rawPhase"]), `the found job's phase is said: ${JSON.stringify(second)}`);
    assert.equal(ma.stats.creates - before, 1, "exactly one create");
    assert.equal(ma.jobsNamed(first["name"]).length, 1);

    const record = await readRecord(first["name"]);
    assert.deepEqual([record.provider, record.ref.id, record.recipe.file, record.outcome], ["modelarts", first["id"], "<event>.recipe", "existing"]);
    assert.equal(record.lastStatus?.rawPhase, second["rawPhase"]);
    noSecrets([first, second, logs], "answers and logs");
  });

  it("on Lambda the ModelArts keys can live in the secret store (RLPIPE_SECRET_ARN JSON) instead of the environment", T, async () => {
    // No AWS role can sign a Huawei call, so the keys must come from somewhere: the function's secret.
    const env = maEnv({ HUAWEICLOUD_SDK_AK: "", HUAWEICLOUD_SDK_SK: "", HUAWEICLOUD_SDK_PROJECT_ID: "", OBS_ACCESS_KEY_ID: "", OBS_SECRET_ACCESS_KEY: "" });
    for (const k of ["HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_PROJECT_ID"]) delete env[k];
    const held: Record<string, string> = { HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID };
    const asked: string[] = [];
    const cold = (secrets: Record<string, string>) => ({ env, log: (l: string) => logs.push(l), secrets: { get: async (n: string) => { asked.push(n); return secrets[n]; } } });
    const event = { action: "deploy", recipe: recipeText(MA_SEED), provider: "modelarts" };

    const without = await (await app()(cold({}))).event!(structuredClone(event)) as Reply;
    assert.equal(without["ok"], false, JSON.stringify(without));
    assert.equal(without["exitCode"], 2, `no keys anywhere is a configuration error: ${JSON.stringify(without)}`);

    const before = ma.stats.authFailures;
    const r = await (await app()(cold(held))).event!(structuredClone(event)) as Reply;
    assert.equal(r["ok"], true, JSON.stringify(r));
    assert.ok(["created", "existing"].includes(r["outcome"]), JSON.stringify(r));
    assert.equal(r["name"], planSeed(MA_SEED, "modelarts").jobName);
    assert.equal(ma.stats.authFailures, before, "every ModelArts call was signed with the keys from the secret");
    assert.ok(asked.includes("HUAWEICLOUD_SDK_SK"));
    noSecrets([without, r, logs], "answers and logs");
  });

  it("status reads the run record from the store and asks the provider; an unknown run is exit 2", T, async () => {
    const invoke = lambda(maEnv());
    const { name, id } = await invoke({ action: "deploy", recipe: recipeText(MA_SEED), provider: "modelarts" });
    const s = await invoke({ action: "status", run: name });
    assert.equal(s["ok"], true, JSON.stringify(s));
    assert.deepEqual([s["action"], s["name"], s["provider"], s["id"]], ["status", name, "modelarts", id]);
    assert.ok(SUCCESS_PHASES.includes(s["rawPhase"]) && typeof s["phase"] === "string");
    assert.equal((await readRecord(name)).lastStatus?.rawPhase, s["rawPhase"], "the phase is kept in the record");

    const unknown = await invoke({ action: "status", run: "nothing-deployed-00000000" });
    assert.deepEqual([unknown["ok"], unknown["exitCode"], unknown["error"].code], [false, 2, "unknown_run"]);
    assert.match(unknown["error"].message, /no run named nothing-deployed-00000000 in s3:\/\/rlpipe-state\/console\/runs/);
  });

  it("a recipe by URI is the same job as the same recipe inline (job names hash the request)", T, async () => {
    const invoke = lambda(maEnv());
    await putRecipe("manual/qwen3.yaml", recipeText(MA_SEED));
    const r = await invoke({ action: "deploy", recipeUri: `s3://${RECIPES}/manual/qwen3.yaml`, provider: "modelarts" });
    assert.deepEqual([r["ok"], r["name"], r["outcome"]], [true, planSeed(MA_SEED, "modelarts").jobName, "existing"], JSON.stringify(r));
    assert.equal((await readRecord(r["name"])).recipe.file, `s3://${RECIPES}/manual/qwen3.yaml`);
    const missing = await invoke({ action: "deploy", recipeUri: `s3://${RECIPES}/manual/none.yaml`, provider: "modelarts" });
    assert.deepEqual([missing["exitCode"], missing["error"].code], [2, "recipe_not_found"]);
  });

  it("a dry run creates nothing and writes no record: it answers the plan summary and the request", T, async () => {
    const invoke = lambda(maEnv());
    const edited = editYaml(recipeText(MA_SEED), [[["resources", "nodes"], 2]]);
    const before = { creates: ma.stats.createAttempts, records: (await admin.list("console/runs/")).length };
    const r = await invoke({ action: "deploy", recipe: edited, provider: "modelarts", dryRun: true });
    assert.equal(r["ok"], true, JSON.stringify(r));
    assert.equal(r["dryRun"], true);
    assert.equal(r["request"].api, "POST /v2/{project_id}/training-jobs");
    assert.equal(r["request"].body.spec.resource.node_count, 2);
    assert.match(r["summary"][0], new RegExp(`→ modelarts {3}\\(job ${r["name"]}\\)`));
    assert.equal(ma.stats.createAttempts, before.creates, "no create was sent");
    assert.equal((await admin.list("console/runs/")).length, before.records, "no run record");
    // Without a state store a dry run still answers (it has no runs to number).
    const bare = await lambda(maEnv({ RLPIPE_STATE_STORE: "" }))({ action: "deploy", recipe: edited, provider: "modelarts", dryRun: true });
    assert.deepEqual([bare["ok"], bare["name"]], [true, r["name"]]);
  });

  it("bad events: JSON errors naming what, where and the hint, with exit code 2, and nothing sent", T, async () => {
    const invoke = lambda(maEnv());
    const requests = ma.stats.requests;
    const unknownAction = await invoke({ action: "deplyo", provider: "modelarts" });
    assert.deepEqual([unknownAction["ok"], unknownAction["exitCode"], unknownAction["error"].code], [false, 2, "bad_event"]);
    assert.match(unknownAction["error"].message, /event\.action: unknown action "deplyo"; expected one of deploy, status, score, cost, report/);
    assert.equal(unknownAction["error"].hint, 'did you mean "deploy"?');

    const noProvider = await invoke({ action: "deploy", recipe: recipeText(MA_SEED) });
    assert.equal(noProvider["error"].code, "bad_event");
    assert.match(noProvider["error"].message, /^event\.provider: expected one of local, docker, ray, slurm, modelarts, tione/);

    const local = await invoke({ action: "deploy", recipe: recipeText(MA_SEED), provider: "local" });
    assert.match(local["error"].message, /event\.provider: provider local runs jobs on the machine/);

    const both = await invoke({ action: "deploy", recipe: "x: 1", recipeUri: `s3://${RECIPES}/a.yaml`, provider: "modelarts" });
    assert.match(both["error"].message, /event\.recipeUri: give "recipe" or "recipeUri", not both/);

    const typo = await invoke({ action: "deploy", recipe: recipeText(MA_SEED), provider: "modelarts", dryrun: true });
    assert.match(typo["error"].message, /event\.dryrun: unknown field for action deploy/);
    assert.equal(typo["error"].hint, 'did you mean "dryRun"?');

    // A bad value in inline YAML: the error has the line in the event's recipe text.
    const bad = editYaml(recipeText(MA_SEED), [[["resources", "nodes"], "two"]]);
    const line = bad.split("\n").findIndex((l) => /^resources:.*nodes: two/.test(l) || /^\s+nodes: two/.test(l)) + 1;
    assert.ok(line > 0);
    const badYaml = await invoke({ action: "deploy", recipe: bad, provider: "modelarts" });
    assert.deepEqual([badYaml["exitCode"], badYaml["error"].file, badYaml["error"].line, badYaml["error"].path], [2, "<event>.recipe", line, "resources.nodes"]);
    assert.match(badYaml["error"].issues[0].message, /expected/);
    // The recipe as an object: located by its path (there are no lines to point at).
    const obj = JSON.parse(JSON.stringify((await import("yaml")).parse(bad))) as Record<string, unknown>;
    const badObj = await invoke({ action: "deploy", recipe: obj, provider: "modelarts" });
    assert.deepEqual([badObj["error"].path, badObj["error"].line], ["resources.nodes", undefined]);

    const tooMany = await invoke({ action: "score", samples: Array.from({ length: 65 }, () => ({ solution_str: "x", ground_truth: "" })) });
    assert.match(tooMany["error"].message, /event\.samples: at most 64 samples/);
    const noSandbox = await invoke({ action: "score", samples: [{ solution_str: "x", ground_truth: "" }] });
    assert.deepEqual([noSandbox["exitCode"], noSandbox["error"].code], [2, "sandbox_not_configured"]);
    const noState = await lambda(maEnv({ RLPIPE_STATE_STORE: "" }))({ action: "deploy", recipe: recipeText(MA_SEED), provider: "modelarts" });
    assert.equal(noState["error"].code, "state_store_missing");
    assert.match(noState["error"].hint, /RLPIPE_STATE_STORE/);
    const notObject = await invoke("deploy");
    assert.equal(notObject["error"].code, "bad_event");
    assert.equal(ma.stats.requests, requests, "no bad event reached ModelArts");
  });

  it("TI-ONE through SCF with the execution role's temporary keys: a deploy event delivered twice makes one task", T, async () => {
    const env: NodeJS.ProcessEnv = {
      HOME: home, TENCENTCLOUD_SECRETID: TI_ID, TENCENTCLOUD_SECRETKEY: TI_KEY, TENCENTCLOUD_SESSIONTOKEN: TI_TOKEN, TENCENTCLOUD_REGION: "ap-shanghai",
      TIONE_ENDPOINT: tione.endpoint, E2B_API_KEY: E2B_KEY, COS_ENDPOINT: moto.endpoint,
      RLPIPE_STATE_STORE: "cos://rlpipe-state-1251234567/console", RLPIPE_RETRY_BUDGET_MS: "2500",
    };
    const h = scfHandler(app(), { env, log: (l) => logs.push(l) });
    const event = { action: "deploy", recipe: tioneRecipe(), provider: "tione" };
    const first = await h(event, { request_id: "r1" }) as Reply;
    assert.equal(first["ok"], true, JSON.stringify(first));
    assert.equal(first["outcome"], "created");
    const second = await h(structuredClone(event), { request_id: "r2" }) as Reply;
    assert.deepEqual([second["name"], second["id"], second["outcome"]], [first["name"], first["id"], "existing"]);
    assert.equal(tione.tasksNamed(first["name"]).length, 1, "exactly one task");
    assert.equal(tione.callsOf("CreateTrainingTask").length, 1);
    const status = await h({ action: "status", run: first["name"] }, { request_id: "r3" }) as Reply;
    assert.deepEqual([status["ok"], status["provider"], status["id"]], [true, "tione", first["id"]], JSON.stringify(status));
    const cos = new S3Store({ scheme: "cos", bucket: "rlpipe-state-1251234567", prefix: "console", region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    try {
      assert.equal(RunRecord.parse(JSON.parse((await cos.get(`runs/${first["name"]}.json`)).toString("utf8"))).provider, "tione");
    } finally { await cos.close(); }
    noSecrets([first, second, status, logs], "TI-ONE answers and logs");
  });

  it("an upload delivered twice deploys once; a new version with other content deploys again, with the same bytes finds that job", T, async () => {
    const invoke = lambda(maEnv());
    const key = "recipes/upload one.modelarts.yaml";
    const text = editYaml(recipeText(MA_SEED), [[["stages", 2, "rollout", "n"], 4]]);
    const v1 = await putRecipe(key, text);
    const creates = ma.stats.creates;
    const first = await invoke(s3Event(key, v1, "00A1"));
    assert.equal(first["ok"], true, JSON.stringify(first));
    const r1 = first["results"][0];
    assert.deepEqual([r1.source, r1.version, r1.delivery, r1.outcome, r1.provider], [`s3://${RECIPES}/${key}`, v1, "first", "created", "modelarts"]);
    const again = await invoke(s3Event(key, v1, "00A1"));
    assert.deepEqual([again["results"][0].delivery, again["results"][0].name, again["results"][0].outcome], ["repeat", r1.name, "created"]);
    assert.equal(ma.stats.creates - creates, 1, "one job for one version delivered twice");
    assert.equal((await readRecord(r1.name)).recipe.file, `s3://${RECIPES}/${key}`);

    // A new version with other content is another recipe: another job (its name hashes the request).
    const v2 = await putRecipe(key, editYaml(text, [[["stages", 2, "rollout", "n"], 6]]));
    // Two deliveries of it at the same moment: one deploys, the other waits for it and answers from its marker.
    const both = await Promise.all([invoke(s3Event(key, v2, "00B2")), invoke(s3Event(key, v2, "00B2"))]);
    assert.deepEqual(both.map((b) => b["results"][0].delivery).sort(), ["first", "repeat"], JSON.stringify(both));
    assert.equal(both[0]["results"][0].name, both[1]["results"][0].name);
    assert.notEqual(both[0]["results"][0].name, r1.name);
    assert.equal(ma.stats.creates - creates, 2, "the new version made one more job");

    // The same bytes again as a third version: a new delivery, and the job the second version made.
    const v3 = await putRecipe(key, editYaml(text, [[["stages", 2, "rollout", "n"], 6]]));
    const third = await invoke(s3Event(key, v3, "00C3"));
    assert.deepEqual([third["results"][0].delivery, third["results"][0].outcome, third["results"][0].name], ["first", "existing", both[0]["results"][0].name]);
    assert.equal(ma.stats.creates - creates, 2, "no job for unchanged content");
    noSecrets([first, again, both, third, logs], "upload answers and logs");
  });

  it("an S3 upload through EventBridge (Object Created, key not encoded) deploys once per version", T, async () => {
    const invoke = lambda(maEnv());
    const key = "recipes/eb a+b.modelarts.yaml";
    const v = await putRecipe(key, editYaml(recipeText(MA_SEED), [[["stages", 2, "rollout", "n"], 10]]));
    const event = loadEventFixture("eventbridge-s3-object-created");
    event["detail"].bucket.name = RECIPES;
    event["detail"].object.key = key;
    event["detail"].object["version-id"] = v;
    const creates = ma.stats.creates;
    const first = await invoke(event);
    assert.equal(first["ok"], true, JSON.stringify(first));
    assert.deepEqual([first["results"][0].source, first["results"][0].delivery, first["results"][0].outcome], [`s3://${RECIPES}/${key}`, "first", "created"]);
    const again = await invoke(structuredClone(event));
    assert.equal(again["results"][0].delivery, "repeat");
    assert.equal(ma.stats.creates - creates, 1);
  });

  it("a claim left by a delivery that died is taken over; the job it may have made is found, not made twice", T, async () => {
    const key = "recipes/died.modelarts.yaml";
    const v = await putRecipe(key, recipeText(MA_SEED));
    const marker = markerKey({ scheme: "s3", bucket: RECIPES, key, version: v });
    await admin.putBytes(`console/${marker}`, JSON.stringify({ source: `s3://${RECIPES}/${key}`, version: v, state: "claimed", claim: "a-delivery-that-died", at: new Date(Date.now() - 3_600_000).toISOString() }));
    const creates = ma.stats.creates;
    const r = await lambda(maEnv())(s3Event(key, v));
    assert.deepEqual([r["results"][0].delivery, r["results"][0].outcome], ["takeover", "existing"], JSON.stringify(r));
    assert.equal(ma.stats.creates, creates);
    assert.equal(JSON.parse((await admin.get(`console/${marker}`)).toString("utf8")).state, "deployed");
  });

  it("an upload that cannot be deployed (no provider named) answers why, and a repeat answers the same without asking anyone", T, async () => {
    const invoke = lambda(maEnv());
    const key = "recipes/which-provider.yaml";
    const v = await putRecipe(key, recipeText(MA_SEED)); // targets docker and modelarts: which one is not said
    const requests = ma.stats.requests;
    const r = await invoke(s3Event(key, v));
    assert.deepEqual([r["ok"], r["exitCode"], r["error"].code], [false, 2, "provider_required"], JSON.stringify(r));
    assert.match(r["error"].hint, /<recipe>\.<provider>\.yaml.*RLPIPE_CONSOLE_PROVIDER/);
    const again = await invoke(s3Event(key, v));
    assert.deepEqual([again["results"][0].delivery, again["results"][0].error.code], ["repeat", "provider_required"]);
    assert.equal(ma.stats.requests, requests);
    // RLPIPE_CONSOLE_PROVIDER names it; objects outside the prefix or not YAML are skipped, not errors.
    const withProvider = lambda(maEnv({ RLPIPE_CONSOLE_PROVIDER: "modelarts" }));
    const v2 = await putRecipe(key, editYaml(recipeText(MA_SEED), [[["stages", 2, "rollout", "n"], 2]]));
    const ok = await withProvider(s3Event(key, v2));
    assert.deepEqual([ok["ok"], ok["results"][0].provider, ok["results"][0].outcome], [true, "modelarts", "created"], JSON.stringify(ok));
    const outside = await withProvider(s3Event("other/x.modelarts.yaml", "v"));
    assert.match(outside["results"][0].skipped, /not under recipes\//);
    const notYaml = await withProvider(s3Event("recipes/readme.md", "v"));
    assert.match(notYaml["results"][0].skipped, /not a \.yaml or \.yml recipe/);
  });

  it("an OBS upload through FunctionGraph (documented OBS trigger event) deploys once; the agency's keys sign ModelArts", T, async () => {
    const key = "recipes/fg.modelarts.yaml";
    const text = editYaml(recipeText(MA_SEED), [[["stages", 2, "rollout", "n"], 12]]);
    const v = await putRecipe(key, text);
    // FunctionGraph hands the agency's temporary keys to the code: as the OBS set, and so to ModelArts too.
    const agencyAk = fakeHuaweiAk();
    const agencySk = fakeHuaweiSk();
    const agencyToken = fakeSecurityToken();
    const fgMa = await new FakeModelArts({ ak: agencyAk, sk: agencySk, projectId: PID, securityToken: agencyToken }).start();
    try {
      const env: NodeJS.ProcessEnv = {
        HOME: home, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fgMa.endpoint, OBS_ENDPOINT: moto.endpoint, OBS_REGION: "cn-southwest-2",
        RLPIPE_STATE_STORE: `obs://${STATE}/fg`, RLPIPE_CONSOLE_RECIPE_PREFIX: `obs://${RECIPES}/recipes`, RLPIPE_RETRY_BUDGET_MS: "2500",
      };
      const h = functionGraphHandler(app(), { env, log: (l) => logs.push(l) });
      const ctx = { getRequestID: () => "r", getSecurityAccessKey: () => agencyAk, getSecuritySecretKey: () => agencySk, getSecurityToken: () => agencyToken, getUserData: () => undefined };
      const event = loadEventFixture("functiongraph-obs-v3-object-created");
      event["Records"][0].obs.bucket.name = RECIPES;
      event["Records"][0].obs.object.key = key;
      event["Records"][0].obs.object.versionId = v;
      const first = await h(event, ctx) as Reply;
      assert.equal(first["ok"], true, JSON.stringify(first));
      assert.deepEqual([first["results"][0].delivery, first["results"][0].outcome], ["first", "created"]);
      const again = await h(structuredClone(event), ctx) as Reply;
      assert.equal(again["results"][0].delivery, "repeat");
      assert.equal(fgMa.stats.creates, 1);
      assert.equal(fgMa.stats.authFailures, 0, "every request was signed with the agency's keys and token");
      noSecrets([first, again], "FunctionGraph answers");
      for (const s of [agencySk, agencyToken]) assert.ok(!JSON.stringify([first, again, logs]).includes(s), "agency secret in an answer or log");
    } finally {
      await fgMa.close();
    }
  });

  it("score runs a small batch on the reward function's sandbox backend (E2B fake)", T, async () => {
    const e2b = await FakeE2B.start({ apiKey: E2B_KEY });
    try {
      const invoke = lambda(maEnv({ RLPIPE_SANDBOX: "e2b", E2B_API_KEY: E2B_KEY, E2B_API_URL: e2b.apiUrl, E2B_SANDBOX_URL: e2b.sandboxUrl, E2B_DOMAIN: "localhost" }));
      const gt = JSON.stringify({ input: ["1 2", "5 5"], output: ["3", "10"], fn_name: null, type: "stdin_stdout" });
      const r = await invoke({
        action: "score", samples: [
          { data_source: "codecontests", solution_str: "```python\na, b = map(int, input().split())\nprint(a + b)\n```", ground_truth: gt },
          { data_source: "codecontests", solution_str: "```python\nprint(0)\n```", ground_truth: gt },
        ],
      });
      assert.equal(r["ok"], true, JSON.stringify(r));
      assert.deepEqual(r["results"].map((x: Reply) => [x.status, x.score]), [["ok", 1], ["ok", 0]]);
      const bad = await invoke({ action: "score", samples: [{ ground_truth: gt }] });
      assert.equal(bad["error"].code, "bad_event");
      assert.match(bad["error"].message, /^event\.samples\[0\]\.solution_str: /);
      noSecrets([r, bad, logs], "score answers and logs");
    } finally {
      await e2b.close();
    }
  });

  it("over HTTPS (a function URL) the console needs its bearer token; without RLPIPE_CONSOLE_TOKEN it is closed", T, async () => {
    const token = randomBytes(20).toString("hex");
    const post = (body: unknown, auth?: string) => lambdaEvent({ method: "POST", path: "/", body, headers: { "content-type": "application/json", ...(auth === undefined ? {} : { authorization: auth }) } });
    const event = { action: "deploy", recipe: recipeText(MA_SEED), provider: "modelarts", dryRun: true };
    const closed = lambdaHandler(app(), { env: maEnv(), log: () => {} });
    assert.equal(parseResult(await closed(post(event, `Bearer ${token}`), {})).status, 403);
    const open = lambdaHandler(app(), { env: maEnv({ RLPIPE_CONSOLE_TOKEN: token }), log: (l) => logs.push(l) });
    assert.equal(parseResult(await open(post(event), {})).status, 401);
    assert.equal(parseResult(await open(post(event, `Bearer ${token.slice(1)}x`), {})).status, 401);
    const ok = parseResult(await open(post(event, `Bearer ${token}`), {}));
    assert.deepEqual([ok.status, ok.body.ok, ok.body.dryRun], [200, true, true]);
    const bad = parseResult(await open(post({ action: "status" }, `Bearer ${token}`), {}));
    assert.deepEqual([bad.status, bad.body.error.code], [400, "bad_event"]);
    assert.ok(!JSON.stringify(logs).includes(token), "the token is never logged");
  });

  it("cost answers the whole run's estimate: the CostReport rlpipe cost --format json gives, across providers unless the event names one", T, async () => {
    const r = await lambda(maEnv())({ action: "cost", recipe: tioneRecipe() });
    assert.equal(r["ok"], true, JSON.stringify(r));
    assert.deepEqual([r["action"], r["recipe"], r["report"].schema, r["report"].version], ["cost", "retool-qwen3-4b-tione-ags", "rlpipe.cost-report", 1]);
    assert.equal(r["report"].recipe.file, "<event>.recipe");
    assert.equal(r["report"].candidates.filter((c: Reply) => c.chosen).length, 1, "one chosen candidate");
    assert.ok(new Set(r["report"].candidates.map((c: Reply) => c.provider)).size >= 2, "several providers side by side");
    assert.match(r["summary"], /^(≈ ¥[\d,.]+(–¥[\d,.]+)? \/ \$|unknown: )/);
    const one = await lambda(maEnv())({ action: "cost", recipe: recipeText(MA_SEED), provider: "modelarts" });
    assert.equal(one["ok"], true, JSON.stringify(one));
    assert.equal(one["report"].chosen, "modelarts");
    assert.deepEqual(one["report"].candidates.filter((c: Reply) => c.chosen).map((c: Reply) => c.provider), ["modelarts"]);
    // Named: the recipe's own targets side by side, not every provider that could run it.
    assert.deepEqual(one["report"].candidates.map((c: Reply) => c.provider).sort(), ["docker", "modelarts"]);
  });

  it("a deploy over the recipe's budget cap is refused with the figures and how to force it, nothing sent; with force it is made", T, async () => {
    const invoke = lambda(maEnv());
    const flavor = "modelarts:modelarts.bm.npu.arm.8snt9b2.d";
    const capped = editYaml(recipeText(MA_SEED), [
      [["stages", 2, "rollout", "n"], 14],
      [["prices"], [{ item: flavor, value: 90, currency: "CNY", unit: "node-hour", source: "test quote" }]],
      [["cost"], { budget: { cap: 1, currency: "CNY" } }],
    ]);
    const requests = ma.stats.requests;
    const records = (await admin.list("console/runs/")).length;
    const refused = await invoke({ action: "deploy", recipe: capped, provider: "modelarts" });
    assert.deepEqual([refused["ok"], refused["exitCode"], refused["error"].code], [false, 2, "over_budget"], JSON.stringify(refused));
    assert.match(refused["error"].message, /^refusing to create \S+: the estimated cost \(expected ¥[\d,]+; ¥[\d,]+–¥[\d,]+\) is above the budget cap of ¥1\.00/);
    assert.match(refused["error"].hint, /"force": true/);
    assert.equal(ma.stats.requests, requests, "nothing reached ModelArts");
    assert.equal((await admin.list("console/runs/")).length, records, "no run record");

    const dry = await invoke({ action: "deploy", recipe: capped, provider: "modelarts", dryRun: true });
    assert.equal(dry["ok"], true, JSON.stringify(dry));
    assert.equal(dry["cost"].budget.status, "over");
    assert.ok(dry["summary"].some((l: string) => /^ {2}cost {7}≈ ¥.*budget ¥1\.00: OVER/.test(l)), dry["summary"].join("\n"));

    const forced = await invoke({ action: "deploy", recipe: capped, provider: "modelarts", force: true });
    assert.equal(forced["ok"], true, JSON.stringify(forced));
    assert.equal(forced["outcome"], "created");
    assert.equal(forced["cost"].budget.status, "over");
    assert.match(forced["warning"], /above the budget cap of ¥1\.00.*creating it anyway \(forced\)/);
    assert.equal(ma.jobsNamed(forced["name"]).length, 1);
  });
});

describe("console function: documented storage notifications", () => {
  it("S3, OBS (both forms) and COS records give bucket, decoded key and the version that tells uploads apart", () => {
    assert.deepEqual(parseNotification(loadEventFixture("s3-object-created") as { Records: unknown[] }), [{
      scheme: "s3", bucket: "amzn-s3-demo-bucket", key: "recipes/my recipe.modelarts.yaml", version: "3HL4kqtJlcpXroDTDmjVBH40Nrjfkd", eventName: "ObjectCreated:Put", created: true,
    }]);
    // An unversioned OBS bucket says versionId "null": the sequencer tells uploads apart.
    assert.deepEqual(parseNotification(loadEventFixture("functiongraph-obs-object-created") as { Records: unknown[] }), [{
      scheme: "s3", bucket: "fg-sample-obs-go-runtime-sdk", key: "recipes/qwen3.modelarts.yaml", version: "0000000019386C6871FB059ED0000000", eventName: "ObjectCreated:Put", created: true,
    }]);
    assert.deepEqual(parseNotification(loadEventFixture("functiongraph-obs-v3-object-created") as { Records: unknown[] }), [{
      scheme: "obs", bucket: "developer-test-example", key: "recipes/qwen3.modelarts.yaml", version: "G00101A0F057D2A5FFFFCB8700806592null", eventName: "ObjectCreated:Put", created: true,
    }]);
    assert.deepEqual(parseNotification(loadEventFixture("scf-cos-object-created") as { Records: unknown[] }), [{
      scheme: "cos", bucket: "testpic-1253970026", key: "recipes/retool.tione.yaml", version: "MTg0NDUxNzcwMDg5NDg1NjgwOTU", eventName: "cos:ObjectCreated:*", created: true,
    }]);
    // EventBridge does not encode keys: '+' stays a plus.
    assert.deepEqual(parseEventBridgeS3(loadEventFixture("eventbridge-s3-object-created")), [{
      scheme: "s3", bucket: "amzn-s3-demo-bucket1", key: "recipes/a+b c.modelarts.yaml", version: "IYV3p45BhZA1E1OG3Yi1D6YMGTQn6PSx", eventName: "Object Created (PutObject)", created: true,
    }]);
    const broken = { Records: [{ s3: { bucket: {} } }] };
    assert.throws(() => parseNotification(broken), /event\.Records\[0\]: not an S3, OBS or COS object notification/);
  });

  it("a COS upload through SCF reaches the deploy path; an OBS record delivered in the S3 form needs the obs:// prefix to be read from OBS", async () => {
    const lines: string[] = [];
    const cosEvent = loadEventFixture("scf-cos-object-created");
    const h = scfHandler(makeConsoleApp(), { env: { RLPIPE_CONSOLE_RECIPE_PREFIX: "cos://testpic-1253970026/recipes" }, log: (l) => lines.push(l) });
    const r = await h(cosEvent, {}) as Reply;
    // No state store: the marker cannot be kept, so nothing is deployed, and the answer says what to set.
    assert.deepEqual([r["ok"], r["exitCode"], r["error"].code], [false, 2, "state_store_missing"], JSON.stringify(r));
    const fg = functionGraphHandler(makeConsoleApp(), { env: { RLPIPE_CONSOLE_RECIPE_PREFIX: "obs://fg-sample-obs-go-runtime-sdk/recipes", RLPIPE_STATE_STORE: `file://${mkdtempSync(join(tmpdir(), "rlpipe-fg-state-"))}` }, log: (l) => lines.push(l) });
    const skipped = await fg(loadEventFixture("functiongraph-obs-object-created"), { getUserData: () => undefined }) as Reply;
    assert.match(skipped["results"][0].skipped, /a s3 notification; RLPIPE_CONSOLE_RECIPE_PREFIX names obs:\/\//);
  });
});

describe("storage under the console function", () => {
  let moto: Moto;
  before(async () => { moto = await startMoto(); });
  after(async () => { await moto.stop(); });

  it("putBytesIfAbsent: S3 (If-None-Match) and file:// create once and say exists after", T, async () => {
    const s3 = new S3Store({ scheme: "s3", bucket: "cond", prefix: "p", region: "us-east-1", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-cond-"));
    try {
      await s3.client.send(new CreateBucketCommand({ Bucket: "cond" }));
      for (const store of [s3, new FsStore(dir)]) {
        assert.equal(store.conditionalCreate, "atomic");
        assert.equal(await store.putBytesIfAbsent("m/one.json", "first"), "created");
        assert.equal(await store.putBytesIfAbsent("m/one.json", "second"), "exists");
        assert.equal((await store.get("m/one.json")).toString(), "first", "the first write stays");
        const many = await Promise.all(Array.from({ length: 6 }, (_, i) => store.putBytesIfAbsent("m/race.json", `w${i}`)));
        assert.equal(many.filter((x) => x === "created").length, 1, `one of six concurrent creates wins (${store.url})`);
      }
      const obs = new S3Store({ scheme: "obs", bucket: "cond", prefix: "o", region: "cn-north-4", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
      try {
        assert.equal(obs.conditionalCreate, "checked");
        assert.deepEqual([await obs.putBytesIfAbsent("x", "1"), await obs.putBytesIfAbsent("x", "2")], ["created", "exists"]);
      } finally { await obs.close(); }
    } finally {
      await s3.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("OBS and COS keys are taken as a set with their own token; SCF's role variables work for cos://", () => {
    const cos = (env: Record<string, string>) => resolveS3Options(parseStoreUri("cos://b-1250000000/p"), { COS_REGION: "ap-shanghai", ...env }).credentials;
    // A permanent COS key is never sent with a token that belongs to other keys.
    assert.deepEqual(cos({ COS_SECRET_ID: "id1", COS_SECRET_KEY: "key1", TENCENTCLOUD_SESSION_TOKEN: "tok2" }), { accessKeyId: "id1", secretAccessKey: "key1" });
    assert.deepEqual(cos({ TENCENTCLOUD_SECRETID: "rid", TENCENTCLOUD_SECRETKEY: "rkey", TENCENTCLOUD_SESSIONTOKEN: "rtok" }), { accessKeyId: "rid", secretAccessKey: "rkey", sessionToken: "rtok" });
    const obs = (env: Record<string, string>) => resolveS3Options(parseStoreUri("obs://bkt/p"), { OBS_REGION: "cn-north-4", ...env }).credentials;
    assert.deepEqual(obs({ OBS_ACCESS_KEY_ID: "a", OBS_SECRET_ACCESS_KEY: "s", HUAWEICLOUD_SDK_SECURITY_TOKEN: "t" }), { accessKeyId: "a", secretAccessKey: "s" });
    assert.deepEqual(obs({ HUAWEICLOUD_SDK_AK: "a", HUAWEICLOUD_SDK_SK: "s", HUAWEICLOUD_SDK_SECURITY_TOKEN: "t" }), { accessKeyId: "a", secretAccessKey: "s", sessionToken: "t" });
    assert.throws(() => obs({ OBS_ACCESS_KEY_ID: "a", HUAWEICLOUD_SDK_SK: "s" }), /need both an access key id and a secret/);
  });

  it("the console's provider credentials: unset CLI variables are filled from the platform's set with its token", () => {
    const e = consoleEnv({ OBS_ACCESS_KEY_ID: "ak", OBS_SECRET_ACCESS_KEY: "sk", OBS_SECURITY_TOKEN: "tok", TENCENTCLOUD_SECRETID: "rid", TENCENTCLOUD_SECRETKEY: "rkey", TENCENTCLOUD_SESSIONTOKEN: "rtok" });
    assert.deepEqual([e["HUAWEICLOUD_SDK_AK"], e["HUAWEICLOUD_SDK_SK"], e["HUAWEICLOUD_SDK_SECURITY_TOKEN"]], ["ak", "sk", "tok"]);
    assert.deepEqual([e["TENCENTCLOUD_SECRET_ID"], e["TENCENTCLOUD_SECRET_KEY"], e["TENCENTCLOUD_SESSION_TOKEN"]], ["rid", "rkey", "rtok"]);
    const own = consoleEnv({ HUAWEICLOUD_SDK_AK: "mine", HUAWEICLOUD_SDK_SK: "mine-sk", OBS_ACCESS_KEY_ID: "ak", OBS_SECRET_ACCESS_KEY: "sk", OBS_SECURITY_TOKEN: "tok" });
    assert.deepEqual([own["HUAWEICLOUD_SDK_AK"], own["HUAWEICLOUD_SDK_SECURITY_TOKEN"]], ["mine", undefined], "configured keys win and get no foreign token");
    // A platform env that answers some names only when asked (FunctionGraph's user data): still asked, and the
    // credentials read from it survive a copy (the bundle sink copies the env).
    const asked = new Proxy({} as NodeJS.ProcessEnv, { get: (_t, k) => (k === "WANDB_API_KEY" ? "wandb-secret" : k === "OBS_ACCESS_KEY_ID" ? "ak" : k === "OBS_SECRET_ACCESS_KEY" ? "sk" : undefined) });
    const layered = consoleEnv(asked);
    assert.equal(layered["WANDB_API_KEY"], "wandb-secret");
    assert.deepEqual((({ OBS_ACCESS_KEY_ID, HUAWEICLOUD_SDK_AK, HUAWEICLOUD_SDK_SK }) => [OBS_ACCESS_KEY_ID, HUAWEICLOUD_SDK_AK, HUAWEICLOUD_SDK_SK])({ ...layered }), ["ak", "ak", "sk"]);
  });
});

describe("the console over a Function URL (issue 33): statuses, the page itself, URLs that live as long as their keys", () => {
  const RUN = "report-0a1b2c3d";
  const STATE_BUCKET = "console-url-state";
  const RUNS_BUCKET = "console-url-runs";
  // A page as a job's sidecar writes it, with a script a compromised job could have put there.
  const PAGE = `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>${RUN}</title></head><body><main><p>latest reward 0.4 at step 4 (${RUN}.rl)</p><script>alert(1)</script></main></body></html>\n`;
  const token = randomBytes(20).toString("hex");
  const bearer = { authorization: `Bearer ${token}` };
  const basic = (user: string, pass: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}` });
  let moto: Moto;
  let lines: string[];

  const env = (extra: Record<string, string> = {}): NodeJS.ProcessEnv => ({
    S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
    RLPIPE_STATE_STORE: `s3://${STATE_BUCKET}/console`, RLPIPE_CONSOLE_TOKEN: token, RLPIPE_STORE_RETRY_S: "0",
    ...extra,
  });
  /** The console on Lambda behind its Function URL; the raw platform result (bodies may be HTML). */
  const url = (e: NodeJS.ProcessEnv) => {
    const h = lambdaHandler(makeConsoleApp(), { env: e, log: (l) => lines.push(l) });
    return async (spec: { method: string; query?: Record<string, string>; headers?: Record<string, string>; body?: unknown }) => {
      const raw = await h(lambdaEvent({ path: "/", ...spec, headers: { ...(spec.body === undefined ? {} : { "content-type": "application/json" }), ...spec.headers } }), {}) as { statusCode: number; headers: Record<string, string>; body: string };
      const json = /^application\/json/.test(raw.headers["content-type"] ?? "") ? JSON.parse(raw.body) as Reply : undefined;
      return { status: raw.statusCode, headers: raw.headers, text: raw.body, json };
    };
  };
  const report = (extra: Record<string, unknown> = {}) => ({ method: "POST", headers: bearer, body: { action: "report", run: RUN, ...extra } });

  before(async () => {
    lines = [];
    moto = await startMoto();
    const admin = new S3Store({ scheme: "s3", bucket: STATE_BUCKET, prefix: "", region: "us-east-1", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    const runs = new S3Store({ scheme: "s3", bucket: RUNS_BUCKET, prefix: "runs", region: "us-east-1", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    try {
      for (const b of [STATE_BUCKET, RUNS_BUCKET]) await admin.client.send(new CreateBucketCommand({ Bucket: b }));
      const now = new Date().toISOString();
      const record = {
        version: 1, name: RUN, provider: "slurm", ref: { id: "4242" }, recipe: { name: "report", file: "report.yaml", hash: "0123456789abcdef" },
        recipeData: {}, request: {}, outcome: "created", createdAt: now, updatedAt: now, store: `s3://${RUNS_BUCKET}/runs`,
      };
      await admin.putBytes(`console/runs/${RUN}.json`, JSON.stringify(RunRecord.parse(record)));
      await putRunPage(runs, RUN, PAGE);
    } finally {
      await admin.close();
      await runs.close();
    }
  });
  after(async () => { await moto.stop(); });

  it("a retryable store failure answers 503 with Retry-After (and says retryable); a refusal stays 502 without it", T, async () => {
    const closed = await freePort();
    const down = await url(env({ S3_ENDPOINT: `http://127.0.0.1:${closed}` }))({ method: "POST", headers: bearer, body: { action: "status", run: RUN } });
    assert.deepEqual([down.status, down.json?.["error"].code, down.json?.["error"].retryable, down.json?.["exitCode"]], [503, "store_unreachable", true, 3], down.text);
    assert.equal(down.headers["retry-after"], String(RETRYABLE_RETRY_AFTER_S));
    // The credentials the store refuses (a strict SigV4 gateway in front of moto): 502, nothing to wait for.
    const gw = await startGateway(moto.endpoint, TEST_CREDENTIALS.secretAccessKey);
    try {
      const refused = await url(env({ S3_ENDPOINT: gw.endpoint, AWS_SECRET_ACCESS_KEY: randomBytes(20).toString("hex") }))({ method: "POST", headers: bearer, body: { action: "status", run: RUN } });
      assert.deepEqual([refused.status, refused.json?.["error"].code, refused.json?.["error"].retryable], [502, "store_auth_refused", undefined], refused.text);
      assert.equal(refused.headers["retry-after"], undefined);
      // The same store with the right keys through the same gateway: the record is read (so the 502 was the keys).
      const ok = await url(env({ S3_ENDPOINT: gw.endpoint }))({ ...report(), body: { action: "report", run: RUN } });
      assert.equal(ok.status, 200, ok.text);
    } finally {
      await gw.close();
    }
    // A direct invocation says the same in its JSON.
    const h = lambdaHandler(makeConsoleApp(), { env: env({ S3_ENDPOINT: `http://127.0.0.1:${closed}` }), log: () => {} });
    const direct = await h({ action: "status", run: RUN }, {}) as Reply;
    assert.deepEqual([direct["ok"], direct["error"].code, direct["error"].retryable], [false, "store_unreachable", true]);
  });

  it("a thrown retryable failure answers 503 with Retry-After; a configuration 503 and a refusal 502 carry none", () => {
    const r = thrownResponse(new StorageError("store_unavailable", "HTTP 503 SlowDown", { retryable: true }), (t) => t);
    assert.deepEqual([r.status, r.headers?.["retry-after"]], [503, String(RETRYABLE_RETRY_AFTER_S)]);
    const config = thrownResponse(new RlpipeError("config_invalid", "RLPIPE_X", { exitCode: ExitCode.invalidInput }), (t) => t);
    assert.deepEqual([config.status, config.headers], [503, undefined]);
    const refused = thrownResponse(new StorageError("store_auth_refused", "HTTP 403 AccessDenied"), (t) => t);
    assert.deepEqual([refused.status, refused.headers], [502, undefined]);
  });

  it("GET ?action=report&run=… answers the page itself as HTML with the dashboard's security headers; JSON when asked for", T, async () => {
    const get = url(env());
    const page = await get({ method: "GET", query: { action: "report", run: RUN }, headers: { ...bearer, accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" } });
    assert.equal(page.status, 200, page.text);
    assert.equal(page.headers["content-type"], "text/html; charset=utf-8");
    assert.equal(page.text, PAGE, "the stored page, byte for byte");
    assert.match(page.headers["content-security-policy"] ?? "", /default-src 'none'/, "no script of the page runs");
    assert.match(page.headers["content-security-policy"] ?? "", /frame-ancestors 'none'/);
    assert.deepEqual([page.headers["x-content-type-options"], page.headers["referrer-policy"], page.headers["cache-control"]], ["nosniff", "no-referrer", "no-store"]);
    // A browser has no bearer header: it answers the Basic challenge (any user, the token as password).
    const challenge = await get({ method: "GET", query: { action: "report", run: RUN } });
    assert.equal(challenge.status, 401);
    assert.match(challenge.headers["www-authenticate"] ?? "", /^Basic realm="rlpipe console"/);
    const prompted = await get({ method: "GET", query: { action: "report", run: RUN }, headers: basic("me", token) });
    assert.deepEqual([prompted.status, prompted.text], [200, PAGE]);
    assert.equal((await get({ method: "GET", query: { action: "report", run: RUN }, headers: basic(token, "wrong") })).status, 401);
    // Basic opens the read-only GET only: a POST (a deploy) needs the bearer header.
    assert.equal((await get({ ...report(), headers: basic("me", token) })).status, 401);
    // JSON for API callers: format=json, or an Accept preferring it; POST stays JSON.
    const jsonAsks: { query: Record<string, string>; headers: Record<string, string> }[] = [
      { query: { action: "report", run: RUN, format: "json" }, headers: bearer }, { query: { action: "report", run: RUN }, headers: { ...bearer, accept: "application/json" } },
    ];
    for (const asked of jsonAsks) {
      const j = await get({ method: "GET", ...asked });
      assert.deepEqual([j.status, j.json?.["ok"], j.json?.["page"], j.json?.["contentType"]], [200, true, PAGE, "text/html; charset=utf-8"], j.text);
    }
    const posted = await get(report());
    assert.deepEqual([posted.status, posted.json?.["page"]], [200, PAGE]);
    // What GET does not carry, and what a browser sees when the page is not there.
    const status = await get({ method: "GET", query: { action: "status", run: RUN }, headers: bearer });
    assert.deepEqual([status.status, status.headers["allow"]], [405, "POST"]);
    assert.equal((await get({ method: "GET", query: { action: "report", run: RUN, format: "xml" }, headers: bearer })).status, 400);
    const missing = await get({ method: "GET", query: { action: "report", run: "nothing-0000aaaa" }, headers: bearer });
    assert.deepEqual([missing.status, missing.headers["content-type"]], [400, "text/html; charset=utf-8"]);
    assert.match(missing.text, /<h1>unknown_run<\/h1>/);
    assert.match(missing.headers["content-security-policy"] ?? "", /default-src 'none'/);
    const bad = await get({ method: "GET", query: { action: "report", run: "<script>" }, headers: bearer });
    assert.equal(bad.status, 400);
    assert.ok(!bad.text.includes("<script>"), "the event's text is escaped in the page");
    assert.ok(!lines.some((l) => l.includes(token)), "the token is never logged");
  });

  it("a presigned page URL signed with temporary keys lives no longer than they do: expiresS is the real lifetime, cappedBy credentials", T, async () => {
    const sessionToken = fakeSecurityToken();
    const soon = new Date(Date.now() + 120_000).toISOString();
    const linkOf = async (extra: Record<string, string>, expiresS = 3600) => {
      const r = await url(env(extra))(report({ url: true, expiresS }));
      assert.equal(r.status, 200, r.text);
      return r.json!;
    };
    // Lambda-style role keys whose expiry is declared (AWS_CREDENTIAL_EXPIRATION): capped at it.
    const near = await linkOf({ AWS_SESSION_TOKEN: sessionToken, AWS_CREDENTIAL_EXPIRATION: soon });
    assert.ok(near["expiresS"] <= 120 && near["expiresS"] >= 100, String(near["expiresS"]));
    assert.deepEqual([near["cappedBy"], near["requestedExpiresS"], near["credentialsExpireAt"]], ["credentials", 3600, new Date(soon).toISOString()]);
    assert.match(near["notice"], /temporary credentials that expire at/);
    const signed = new URL(near["url"]);
    assert.equal(signed.searchParams.get("X-Amz-Expires"), String(near["expiresS"]), "the URL says the lifetime the answer says");
    assert.equal(signed.searchParams.get("X-Amz-Security-Token"), sessionToken, "the URL carries its session (it is the answer asked for: not redacted)");
    assert.equal(await (await fetch(near["url"])).text(), PAGE);
    // Shorter than the keys: as asked, nothing capped.
    const short = await linkOf({ AWS_SESSION_TOKEN: sessionToken, AWS_CREDENTIAL_EXPIRATION: soon }, 60);
    assert.deepEqual([short["expiresS"], short["cappedBy"], short["notice"]], [60, undefined, undefined]);
    // Role keys with no expiry anywhere (Lambda, FunctionGraph's agency, SCF's role): the documented bound, said so.
    const unknown = await linkOf({ AWS_SESSION_TOKEN: sessionToken });
    assert.deepEqual([unknown["expiresS"], unknown["cappedBy"], unknown["credentialsExpireAt"]], [UNKNOWN_EXPIRY_TTL_S, "credentials", undefined]);
    assert.match(unknown["notice"], /expiry is not known/);
    assert.equal(new URL(unknown["url"]).searchParams.get("X-Amz-Expires"), String(UNKNOWN_EXPIRY_TTL_S));
    // Permanent keys: the asked lifetime.
    const permanent = await linkOf({});
    assert.deepEqual([permanent["expiresS"], permanent["cappedBy"], permanent["notice"]], [3600, undefined, undefined]);
    // Keys already expired: nothing signed, 503 (the platform renews them).
    const expired = await url(env({ AWS_SESSION_TOKEN: sessionToken, AWS_CREDENTIAL_EXPIRATION: new Date(Date.now() - 1000).toISOString() }))(report({ url: true }));
    assert.deepEqual([expired.status, expired.json?.["error"].code, expired.headers["retry-after"]], [503, "store_credentials_expired", String(RETRYABLE_RETRY_AFTER_S)], expired.text);
    assert.ok(!lines.some((l) => l.includes(sessionToken) || l.includes("X-Amz-Signature=")), "no URL or session token in the log");
  });

  it("the credential provider's own expiry (the SDK chain's, an OBS/COS role's set) caps the URL too", T, async () => {
    const now = new Date();
    const store = new S3Store({
      scheme: "obs", bucket: RUNS_BUCKET, prefix: "runs", region: "cn-north-4", endpoint: moto.endpoint,
      credentials: { ...TEST_CREDENTIALS, sessionToken: fakeSecurityToken(), expiration: new Date(now.getTime() + 30_000) } as typeof TEST_CREDENTIALS,
    });
    try {
      const p = await presignRunPageFor(store, RUN, 3600, { now });
      assert.deepEqual([p.expiresS, p.cappedBy, p.credentialsExpireAt], [30, "credentials", new Date(now.getTime() + 30_000).toISOString()]);
      assert.equal(new URL(p.url).searchParams.get("X-Amz-Expires"), "30");
    } finally {
      await store.close();
    }
  });
});

describe("shipped Python files in a bundle", () => {
  it("esbuild with pythonAssetsDefine() embeds recipes/python: the bundle needs no recipes/ beside it", () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-assets-"));
    try {
      const entry = join(dir, "entry.ts");
      writeFileSync(entry, `import { bundledAssets } from ${JSON.stringify(join(ROOT, "functions", "python-assets.ts"))};\nprocess.stdout.write(JSON.stringify(bundledAssets()));\n`);
      const build = (out: string, define: Record<string, string>) => execFileSync(process.execPath, ["-e", `require(${JSON.stringify(join(ROOT, "node_modules", "esbuild"))}).buildSync(${JSON.stringify({
        entryPoints: [entry], outfile: out, bundle: true, platform: "node", format: "esm", define, logLevel: "silent",
      })})`]);
      // The CDK passes each define to esbuild as one shell argument, and Linux caps one argument at 128 KiB.
      const defined = pythonAssetsDefine();
      assert.ok(Buffer.byteLength(defined["__RLPIPE_PYTHON_ASSETS__"]!) < 96 * 1024, `${Buffer.byteLength(defined["__RLPIPE_PYTHON_ASSETS__"]!)} bytes in one argument`);
      build(join(dir, "with.mjs"), defined);
      const got = JSON.parse(execFileSync(process.execPath, [join(dir, "with.mjs")], { cwd: dir, encoding: "utf8" })) as Record<string, string>;
      assert.deepEqual(Object.keys(got), [...PYTHON_ASSET_FILES]);
      for (const f of PYTHON_ASSET_FILES) assert.equal(got[f], readFileSync(join(ROOT, "recipes", "python", f), "utf8"));
      // Without the define the bundle looks for recipes/python beside itself, which a function does not have.
      build(join(dir, "without.mjs"), {});
      const r = spawnSync(process.execPath, [join(dir, "without.mjs")], { cwd: dir, encoding: "utf8" });
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /ENOENT.*recipes\/python/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
