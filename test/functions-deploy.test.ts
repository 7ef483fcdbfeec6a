// `rlpipe functions deploy` (item 4) against strict loopback fakes of the FunctionGraph and SCF APIs that verify
// every signature (test/fakes/functiongraph-fake.ts, test/fakes/scf-fake.ts): the first deploy creates, a second
// with the same zip changes nothing, a changed zip uploads code, a changed setting only the configuration, a create
// whose reply is lost makes no second function, bad credentials exit 3 with the platform's code, --dry-run sends
// nothing, and secrets reach the platform (encrypted on FunctionGraph) but never the terminal.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { markersOf } from "../core/packaging/deploy-spec.js";
import { zipFileName } from "../core/packaging/targets.js";
import { zipFiles } from "../core/util/zip.js";
import { fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { FakeFunctionGraph } from "./fakes/functiongraph-fake.js";
import { FakeScf } from "./fakes/scf-fake.js";
import { ROOT } from "./helpers.js";
import { type Ran, runCliAsync, show } from "./cli-process.js";

const T = { timeout: 120_000 };

/** The CLI in its own process (asynchronously: the fakes answer from this one). */
const rlpipe = (args: readonly string[], env: Record<string, string>, cwd: string): Promise<Ran> => runCliAsync(args, { env, cwd });

interface Result { function: string; name: string; action: string; codeUploaded?: boolean; settingsChanged?: boolean; error?: { code: string; message: string; exitCode: number } }
const results = (r: Ran) => (JSON.parse(r.out) as { functions: Result[] }).functions;

/** A zip that is a valid function package but not the one `rlpipe package` made (a changed build). */
function otherZip(handlerFile: string, exportName: string): Uint8Array {
  return zipFiles([{ path: handlerFile, data: `exports.${exportName} = async () => ({ statusCode: 200, body: "changed" });\n` }]);
}

describe("rlpipe functions deploy", () => {
  let tmp = "";
  const token = randomBytes(24).toString("hex");
  const runsSecret = randomBytes(24).toString("hex");

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), "rlpipe-deploy-"));
    for (const p of ["functiongraph", "scf"]) {
      const r = await rlpipe(["package", "--platform", p, "--function", "reward,runs", "--out", join(tmp, p)], {}, ROOT);
      assert.equal(r.code, 0, show(r));
    }
  });
  after(() => { if (tmp !== "") rmSync(tmp, { recursive: true, force: true }); });

  describe("FunctionGraph (strict SDK-HMAC-SHA256 fake)", () => {
    const ak = fakeHuaweiAk();
    const sk = fakeHuaweiSk();
    const projectId = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    let fake: FakeFunctionGraph;
    let env: Record<string, string>;
    let zipDir = "";
    const deploy = (extra: readonly string[] = [], e: Record<string, string> = env) =>
      rlpipe(["functions", "deploy", "--platform", "functiongraph", "--region", "cn-north-4", "--zip", zipDir, "--env", "RLPIPE_SANDBOX=e2b", "--secret", "RLPIPE_SANDBOX_TOKEN", "--json", ...extra], e, tmp);

    before(async () => {
      fake = await FakeFunctionGraph.start({ ak, sk, projectId, region: "cn-north-4" });
      env = { HUAWEICLOUD_SDK_AK: ak, HUAWEICLOUD_SDK_SK: sk, HUAWEICLOUD_SDK_PROJECT_ID: projectId, FUNCTIONGRAPH_ENDPOINT: fake.endpoint, RLPIPE_SANDBOX_TOKEN: token, RLPIPE_RUNS_SECRET: runsSecret };
      zipDir = join(tmp, "functiongraph");
    });
    after(async () => { await fake.close(); });

    it("--dry-run sends nothing and needs no credentials; code and secrets are masked", T, async () => {
      const r = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--zip", zipDir, "--secret", "RLPIPE_SANDBOX_TOKEN", "--dry-run", "--json"], { RLPIPE_SANDBOX_TOKEN: token }, tmp);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(fake.calls, [], "no request reached the API");
      const doc = JSON.parse(r.out) as { dryRun: boolean; functions: { name: string; create: Record<string, unknown> }[] };
      assert.equal(doc.dryRun, true);
      assert.deepEqual(doc.functions.map((f) => f.name), ["rlpipe-reward", "rlpipe-runs"]);
      const create = doc.functions[0]!.create;
      assert.equal(create["runtime"], "Node.js20.15");
      assert.equal(create["handler"], "index.handler");
      assert.equal(create["encrypted_user_data"], JSON.stringify({ RLPIPE_SANDBOX_TOKEN: "***" }));
      assert.match(String((create["func_code"] as { file: string }).file), /^<base64 of the \d+-byte zip>$/);
      assert.ok(!r.out.includes(token) && !r.err.includes(token));
      // Without RLPIPE_SANDBOX the reward function cannot start, nor runs without its store and secret: said on stderr.
      assert.match(r.err, /warning: reward will not start without RLPIPE_SANDBOX \(/);
      assert.match(r.err, /warning: runs will not start without RLPIPE_RUNS_STORE and RLPIPE_RUNS_SECRET/);
      const full = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--zip", zipDir, "--secret", "RLPIPE_SANDBOX_TOKEN", "--secret", "RLPIPE_RUNS_SECRET",
        "--env", "RLPIPE_SANDBOX=e2b", "--env", "RLPIPE_RUNS_STORE=obs://b/p", "--dry-run"], { RLPIPE_SANDBOX_TOKEN: token, RLPIPE_RUNS_SECRET: runsSecret }, tmp);
      assert.equal(full.code, 0, show(full));
      assert.doesNotMatch(full.err, /warning/);
    });

    it("creates each function once, with the environment in user_data and the secret in encrypted_user_data; never printed", T, async () => {
      const r = await deploy();
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(results(r).map((x) => [x.name, x.action]), [["rlpipe-reward", "created"], ["rlpipe-runs", "created"]]);
      assert.equal(fake.succeeded("CreateFunction"), 2);
      const reward = fake.byName("rlpipe-reward")[0]!;
      assert.deepEqual(reward.userData, { RLPIPE_SANDBOX: "e2b" });
      assert.deepEqual(reward.encryptedUserData, { RLPIPE_SANDBOX_TOKEN: token });
      assert.equal(reward.runtime, "Node.js20.15");
      assert.equal(reward.timeout, 300);
      assert.equal(fake.byName("rlpipe-runs")[0]!.timeout, 30);
      assert.ok(reward.code.equals(readFileSync(join(zipDir, zipFileName("functiongraph", "reward")))), "the packaged zip, byte for byte");
      assert.ok(markersOf(reward.description).codeSha256 !== undefined);
      assert.ok(!r.out.includes(token) && !r.err.includes(token) && !r.out.includes(sk) && !r.err.includes(sk));
    });

    it("a second deploy with the same zip and settings is unchanged: no create, no update", T, async () => {
      const before = fake.calls.length;
      const r = await deploy();
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(results(r).map((x) => x.action), ["unchanged", "unchanged"]);
      const ops = fake.calls.slice(before).map((c) => c.op);
      assert.deepEqual([...new Set(ops)].sort(), ["ListFunctions", "ShowFunctionConfig"]);
      assert.equal(fake.byName("rlpipe-reward").length, 1);
    });

    it("a changed setting updates only the configuration; a changed zip uploads the code of that function only", T, async () => {
      let before = fake.calls.length;
      const mem = await deploy(["--memory-mb", "1024", "--function", "runs"]);
      assert.equal(mem.code, 0, show(mem));
      assert.deepEqual(results(mem).map((x) => [x.action, x.codeUploaded, x.settingsChanged]), [["updated", false, true]]);
      assert.deepEqual(fake.calls.slice(before).filter((c) => c.op.startsWith("Update")).map((c) => c.op), ["UpdateFunctionConfig"]);
      assert.equal(fake.byName("rlpipe-runs")[0]!.memorySize, 1024);

      // Another build of reward beside the same runs zip (a directory without a manifest: --function says what to deploy).
      const changed = join(tmp, "fg-changed");
      mkdirSync(changed);
      copyFileSync(join(zipDir, zipFileName("functiongraph", "runs")), join(changed, zipFileName("functiongraph", "runs")));
      writeFileSync(join(changed, zipFileName("functiongraph", "reward")), otherZip("index.js", "handler"));
      before = fake.calls.length;
      const code = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--region", "cn-north-4", "--zip", changed, "--function", "reward,runs", "--env", "RLPIPE_SANDBOX=e2b", "--secret", "RLPIPE_SANDBOX_TOKEN", "--memory-mb", "1024", "--json"], env, tmp);
      assert.equal(code.code, 0, show(code));
      assert.deepEqual(results(code).map((x) => [x.function, x.action, x.codeUploaded]), [["reward", "updated", true], ["runs", "unchanged", false]]);
      assert.deepEqual(fake.calls.slice(before).filter((c) => c.op.startsWith("Update")).map((c) => c.op), ["UpdateFunctionCode", "UpdateFunctionConfig"]);
      assert.match(fake.byName("rlpipe-reward")[0]!.code.toString("latin1"), /PK/);
      assert.equal(fake.byName("rlpipe-reward").length, 1);
    });

    it("a create whose reply is lost is looked up, not repeated: one function", T, async () => {
      fake.createFaults.push("reset-after-create");
      const r = await deploy(["--name-prefix", "lost-"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(results(r).map((x) => [x.name, x.action]), [["lost-reward", "created"], ["lost-runs", "created"]]);
      assert.equal(fake.byName("lost-reward").length, 1, "exactly one function, though its create's reply never came");
      assert.equal(fake.calls.filter((c) => c.op === "CreateFunction" && c.code !== undefined).length, 1, "the fault happened");
    });

    it("bad credentials exit 3 with FunctionGraph's code (APIGW.0301) in the message; the secret key never appears", T, async () => {
      const r = await deploy([], { ...env, HUAWEICLOUD_SDK_SK: fakeHuaweiSk() });
      assert.equal(r.code, 3, show(r));
      const failed = results(r);
      assert.equal(failed.length, 2);
      for (const f of failed) {
        assert.equal(f.error?.exitCode, 3);
        assert.equal(f.error?.code, "functiongraph_auth_failed");
        assert.match(f.error!.message, /APIGW\.0301/);
      }
      const text = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--region", "cn-north-4", "--zip", zipDir, "--function", "reward"], { ...env, HUAWEICLOUD_SDK_SK: "wrong-secret-key-value-0123456789" }, tmp);
      assert.equal(text.code, 3);
      assert.match(text.out, /rlpipe-reward: FAILED: FunctionGraph ListFunctions failed: HTTP 401 APIGW\.0301/);
      assert.match(text.out, /hint: check HUAWEICLOUD_SDK_AK\/SK/);
      assert.ok(!text.out.includes("wrong-secret-key-value-0123456789") && !text.err.includes("wrong-secret-key-value-0123456789"));
    });

    it("input errors exit 2 before anything is sent: no zip, lambda, no credentials, a bad memory size, a --secret not set", T, async () => {
      const before = fake.calls.length;
      const noZip = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--zip", join(tmp, "nowhere")], env, tmp);
      assert.equal(noZip.code, 2);
      assert.match(noZip.err, /no reward zip for functiongraph at .*nowhere\/rlpipe-reward-functiongraph\.zip\n {2}hint: run rlpipe package --platform functiongraph --out/);
      const lambda = await rlpipe(["functions", "deploy", "--platform", "lambda"], env, tmp);
      assert.equal(lambda.code, 2);
      assert.match(lambda.err, /deployed by the CDK app/);
      const noCreds = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--region", "cn-north-4", "--zip", zipDir, "--json"], { FUNCTIONGRAPH_ENDPOINT: fake.endpoint }, tmp);
      assert.equal(noCreds.code, 2);
      assert.equal(JSON.parse(noCreds.out).error.code, "credentials_missing");
      const mem = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--zip", zipDir, "--memory-mb", "1000"], env, tmp);
      assert.equal(mem.code, 2);
      assert.match(mem.err, /--memory-mb 1000 is not a memory size functiongraph offers/);
      const secret = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--zip", zipDir, "--secret", "NOT_SET_ANYWHERE"], env, tmp);
      assert.equal(secret.code, 2);
      assert.match(secret.err, /\$NOT_SET_ANYWHERE is not set/);
      const calls = fake.calls.slice(before).filter((c) => !["ListFunctions", "ShowFunctionConfig"].includes(c.op));
      assert.deepEqual(calls, [], "no create or update");
    });
  });

  describe("SCF (strict TC3-HMAC-SHA256 fake)", () => {
    const secretId = fakeTencentSecretId();
    const secretKey = fakeTencentSecretKey();
    let fake: FakeScf;
    let env: Record<string, string>;
    let zipDir = "";
    const deploy = (extra: readonly string[] = [], e: Record<string, string> = env) =>
      rlpipe(["functions", "deploy", "--platform", "scf", "--region", "ap-shanghai", "--zip", zipDir, "--env", "RLPIPE_SANDBOX=e2b", "--secret", "RLPIPE_SANDBOX_TOKEN", "--json", ...extra], e, tmp);

    before(async () => {
      fake = await FakeScf.start([{ secretId, secretKey }]);
      env = { TENCENTCLOUD_SECRET_ID: secretId, TENCENTCLOUD_SECRET_KEY: secretKey, SCF_ENDPOINT: fake.endpoint, RLPIPE_SANDBOX_TOKEN: token };
      zipDir = join(tmp, "scf");
    });
    after(async () => { await fake.close(); });

    it("--dry-run sends nothing", T, async () => {
      const r = await rlpipe(["functions", "deploy", "--platform", "scf", "--zip", zipDir, "--secret", "RLPIPE_SANDBOX_TOKEN", "--dry-run"], { RLPIPE_SANDBOX_TOKEN: token }, tmp);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(fake.calls, []);
      assert.match(r.out, /nothing was sent/);
      assert.match(r.out, /"Runtime":"Nodejs18\.15"/);
      assert.match(r.out, /"Handler":"index\.main_handler"/);
      assert.ok(!r.out.includes(token));
    });

    it("creates each function once (waiting for Active), a second deploy is unchanged, a changed zip is a code update", T, async () => {
      const first = await deploy();
      assert.equal(first.code, 0, show(first));
      assert.deepEqual(results(first).map((x) => [x.name, x.action]), [["rlpipe-reward", "created"], ["rlpipe-runs", "created"]]);
      assert.equal(fake.succeeded("CreateFunction"), 2);
      const reward = fake.functions.get("default/rlpipe-reward")!;
      assert.equal(reward.status, "Active", "deploy waited for the function to become Active");
      assert.deepEqual(reward.env, { RLPIPE_SANDBOX: "e2b", RLPIPE_SANDBOX_TOKEN: token });
      assert.equal(reward.handler, "index.main_handler");
      assert.equal(reward.runtime, "Nodejs18.15");
      assert.ok(!first.out.includes(token) && !first.err.includes(token) && !first.out.includes(secretKey));

      const before = fake.calls.length;
      const second = await deploy();
      assert.equal(second.code, 0, show(second));
      assert.deepEqual(results(second).map((x) => x.action), ["unchanged", "unchanged"]);
      // Only looks: the function and its function URL (made by the first deploy) are as wanted.
      assert.deepEqual([...new Set(fake.calls.slice(before).map((c) => c.action))], ["GetFunction", "ListTriggers"]);

      const changed = join(tmp, "scf-changed");
      mkdirSync(changed);
      copyFileSync(join(zipDir, zipFileName("scf", "runs")), join(changed, zipFileName("scf", "runs")));
      writeFileSync(join(changed, zipFileName("scf", "reward")), otherZip("index.js", "main_handler"));
      const mark = fake.calls.length;
      const third = await rlpipe(["functions", "deploy", "--platform", "scf", "--region", "ap-shanghai", "--zip", changed, "--function", "reward,runs", "--env", "RLPIPE_SANDBOX=e2b", "--secret", "RLPIPE_SANDBOX_TOKEN", "--json"], env, tmp);
      assert.equal(third.code, 0, show(third));
      assert.deepEqual(results(third).map((x) => [x.function, x.action, x.codeUploaded]), [["reward", "updated", true], ["runs", "unchanged", false]]);
      const updates = fake.calls.slice(mark).filter((c) => c.action.startsWith("Update"));
      assert.deepEqual(updates, [{ action: "UpdateFunctionCode" }, { action: "UpdateFunctionConfiguration" }], "code, then (once Active again) the configuration; no refusal");
      assert.equal(fake.succeeded("CreateFunction"), 2, "still two creates");
    });

    it("a new runtime for an existing function is refused before any change (SCF fixes it at creation), exit 2", T, async () => {
      const before = fake.calls.length;
      const r = await deploy(["--runtime", "Nodejs16.13", "--function", "runs"]);
      assert.equal(r.code, 2, show(r));
      assert.equal(results(r)[0]!.error?.code, "scf_runtime_fixed");
      assert.match(results(r)[0]!.error!.message, /runs Nodejs18\.15, not Nodejs16\.13/);
      assert.deepEqual(fake.calls.slice(before).filter((c) => c.action !== "GetFunction"), []);
    });

    it("bad credentials exit 3 with SCF's code in the message", T, async () => {
      const r = await deploy([], { ...env, TENCENTCLOUD_SECRET_KEY: fakeTencentSecretKey() });
      assert.equal(r.code, 3, show(r));
      for (const f of results(r)) {
        assert.equal(f.error?.code, "scf_auth_failed");
        assert.match(f.error!.message, /AuthFailure\.SignatureFailure/);
      }
      const unknownId = await deploy(["--function", "reward"], { ...env, TENCENTCLOUD_SECRET_ID: fakeTencentSecretId() });
      assert.equal(unknownId.code, 3);
      assert.match(results(unknownId)[0]!.error!.message, /AuthFailure\.SecretIdNotFound/);
      const noRegion = await rlpipe(["functions", "deploy", "--platform", "scf", "--zip", zipDir], env, tmp);
      assert.equal(noRegion.code, 2);
      assert.match(noRegion.err, /SCF needs a region/);
    });
  });
});
