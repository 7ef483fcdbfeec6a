// `rlpipe functions deploy` creates and keeps the triggers and checks the agency / role (issue 23 item 12h), against
// the strict FunctionGraph and SCF fakes (signatures verified, trigger bodies validated, duplicates refused with the
// documented codes, state kept): a first deploy creates each trigger once, a second changes nothing, a changed
// bucket prefix replaces the upload trigger (FunctionGraph and SCF cos have no update) and a changed function URL is
// updated in place (SCF), a create whose reply is lost or a deploy that failed half-way converges with no duplicate,
// and a missing agency / role is refused before any function changes, naming what to grant.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { FakeFunctionGraph } from "./fakes/functiongraph-fake.js";
import { FakeScf } from "./fakes/scf-fake.js";
import { ROOT } from "./helpers.js";
import { type Ran, runCliAsync, show } from "./cli-process.js";
import { FunctionsApiError } from "../adapters/providers/functions-api.js";
import { ScfFunctions } from "../adapters/providers/scf-functions.js";
import { functionGraphError } from "../adapters/providers/functiongraph-functions.js";

const T = { timeout: 120_000 };

/** The CLI in its own process (asynchronously: the fakes answer from this one). */
const rlpipe = (args: readonly string[], env: Record<string, string>, cwd: string): Promise<Ran> => runCliAsync(args, { env, cwd });
interface Result { function: string; action: string; triggers?: { trigger: string; action: string; duplicatesDeleted?: number }[]; error?: { code: string; message: string; hint?: string; exitCode: number } }
const results = (r: Ran) => (JSON.parse(r.out) as { functions: Result[] }).functions;
const triggerActions = (r: Ran) => results(r).map((f) => [f.function, (f.triggers ?? []).map((t) => t.action)]);

describe("rlpipe functions deploy: triggers and agency / role", () => {
  let tmp = "";
  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), "rlpipe-triggers-"));
    for (const p of ["functiongraph", "scf"]) {
      const r = await rlpipe(["package", "--platform", p, "--function", "reward,runs,console", "--out", join(tmp, p)], {}, ROOT);
      assert.equal(r.code, 0, show(r));
    }
  });
  after(() => { if (tmp !== "") rmSync(tmp, { recursive: true, force: true }); });

  describe("FunctionGraph: APIG and OBS triggers, the agency in IAM", () => {
    const INSTANCE = "eddc4d25480b4cd6b512f270a1b8b341";
    const ak = fakeHuaweiAk();
    const sk = fakeHuaweiSk();
    const projectId = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
    let fake: FakeFunctionGraph;
    let env: Record<string, string>;
    const deploy = (extra: readonly string[], vars: readonly string[] = ["RLPIPE_CONSOLE_RECIPE_PREFIX=obs://rlpipe-recipes/recipes/"]) =>
      rlpipe(["functions", "deploy", "--platform", "functiongraph", "--region", "cn-north-4", "--zip", join(tmp, "functiongraph"), "--json",
        "--env", "RLPIPE_SANDBOX=e2b", "--env", "RLPIPE_BASE_PATH=/rlpipe", "--env", "RLPIPE_STATE_STORE=obs://rlpipe-state/state", ...vars.flatMap((v) => ["--env", v]), ...extra], env, tmp);

    before(async () => {
      fake = await FakeFunctionGraph.start({ ak, sk, projectId, region: "cn-north-4" });
      fake.apigGroups.add("c77f5e81d9cb4424bf704ef2b0ac7600");
      fake.apigInstances.add(INSTANCE);
      fake.agencies.push({ name: "rlpipe-functions", trust_domain_name: "op_svc_cff" }, { name: "ops-account", trust_domain_name: "partner-account" });
      // The SDKs' own name for the IAM endpoint wins over IAM_ENDPOINT (here a closed loopback port: were it used, the
      // agency checks below would fail).
      env = { HUAWEICLOUD_SDK_AK: ak, HUAWEICLOUD_SDK_SK: sk, HUAWEICLOUD_SDK_PROJECT_ID: projectId, FUNCTIONGRAPH_ENDPOINT: fake.endpoint, HUAWEICLOUD_SDK_IAM_ENDPOINT: fake.endpoint, IAM_ENDPOINT: "http://127.0.0.1:9" };
    });
    after(async () => { await fake.close(); });

    const group = ["--apig-group", "c77f5e81d9cb4424bf704ef2b0ac7600", "--apig-instance", INSTANCE];

    it("a missing agency, or one not delegated to FunctionGraph, exits 2 before any function changes, naming what to grant", T, async () => {
      const missing = await deploy(["--function", "reward,console", ...group, "--role", "no-such-agency"]);
      assert.equal(missing.code, 2, show(missing));
      const err = (JSON.parse(missing.out) as { error: { code: string; message: string; hint: string } }).error;
      assert.equal(err.code, "functiongraph_role_missing");
      assert.match(err.message, /FunctionGraph agency no-such-agency \(--role\) does not exist/);
      assert.match(err.hint, /service FunctionGraph/);
      assert.match(err.hint, /OBS read on obs:\/\/rlpipe-recipes\/recipes\/ \(console: recipe uploads\)/);
      assert.match(err.hint, /OBS read and write on obs:\/\/rlpipe-state\/state \(console: run records\)/);
      const wrong = await deploy(["--function", "reward", ...group, "--role", "ops-account"]);
      assert.equal(wrong.code, 2, show(wrong));
      assert.match(wrong.out, /functiongraph_role_unusable/);
      assert.deepEqual(fake.calls.filter((c) => !c.op.startsWith("IAM ")), [], "nothing but IAM was asked");
    });

    it("two functions on one APIG route are refused before anything is sent (exit 2)", T, async () => {
      const before = fake.calls.length;
      const r = await deploy(["--function", "reward,runs", ...group]);
      assert.equal(r.code, 2, show(r));
      assert.match(r.out, /apig_route_shared/);
      assert.equal(fake.calls.length, before);
    });

    it("creates the APIG trigger for reward and the OBS trigger for console once, the functions running as the agency", T, async () => {
      const r = await deploy(["--function", "reward,console", ...group, "--role", "rlpipe-functions"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(triggerActions(r), [["reward", ["created"]], ["console", ["created"]]]);
      const [apig, ...moreApig] = fake.triggersOf("rlpipe-reward");
      assert.deepEqual(moreApig, []);
      assert.equal(apig!.type, "DEDICATEDGATEWAY");
      assert.equal(apig!.eventData["instance_id"], INSTANCE);
      assert.deepEqual([apig!.eventData["group_id"], apig!.eventData["path"], apig!.eventData["req_method"], apig!.eventData["match_mode"], apig!.eventData["auth"]],
        ["c77f5e81d9cb4424bf704ef2b0ac7600", "/rlpipe", "ANY", "SWA", "NONE"]);
      const obs = fake.triggersOf("rlpipe-console");
      assert.deepEqual(obs.map((t) => [t.type, t.eventData["bucket"], t.eventData["prefix"], t.eventData["events"]]), [["OBS", "rlpipe-recipes", "recipes/", ["s3:ObjectCreated:*"]]]);
      assert.deepEqual([fake.byName("rlpipe-reward")[0]!.xrole, fake.byName("rlpipe-console")[0]!.xrole], ["rlpipe-functions", "rlpipe-functions"]);
    });

    it("a second deploy changes nothing: no trigger created or deleted", T, async () => {
      const before = fake.calls.length;
      const r = await deploy(["--function", "reward,console", ...group, "--role", "rlpipe-functions"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(triggerActions(r), [["reward", ["unchanged"]], ["console", ["unchanged"]]]);
      assert.deepEqual(fake.calls.slice(before).filter((c) => /Trigger$/.test(c.op) && c.op !== "ListFunctionTriggers"), []);
      assert.equal(fake.triggers.size, 2);
    });

    it("a changed recipe prefix replaces the OBS trigger (no update in the API): still one", T, async () => {
      const before = fake.calls.length;
      const r = await deploy(["--function", "console", "--role", "rlpipe-functions"], ["RLPIPE_CONSOLE_RECIPE_PREFIX=obs://rlpipe-recipes/uploads/"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(triggerActions(r), [["console", ["replaced"]]]);
      assert.deepEqual(fake.calls.slice(before).filter((c) => c.op === "DeleteFunctionTrigger" || c.op === "CreateFunctionTrigger").map((c) => c.op), ["DeleteFunctionTrigger", "CreateFunctionTrigger"]);
      assert.deepEqual(fake.triggersOf("rlpipe-console").map((t) => t.eventData["prefix"]), ["uploads/"]);
    });

    it("a trigger create whose reply is lost is found by the next look, not made twice", T, async () => {
      fake.triggerFaults.push("reset-after-create");
      const r = await deploy(["--function", "reward", ...group, "--name-prefix", "lost-", "--env", "RLPIPE_BASE_PATH=/lost"]);
      assert.equal(r.code, 0, show(r));
      assert.equal(fake.triggersOf("lost-reward").length, 1);
      assert.equal(fake.calls.filter((c) => c.code === "fault:reset-after-create").length, 1, "the fault happened");
    });

    it("a deploy whose trigger creates keep failing exits 3; the next deploy converges to one trigger", T, async () => {
      fake.triggerFaults.push("503-before-create", "503-before-create", "503-before-create");
      const failed = await deploy(["--function", "console", "--name-prefix", "retry-"]);
      assert.equal(failed.code, 3, show(failed));
      assert.match(results(failed)[0]!.error!.message, /FSS\.0503/);
      assert.equal(fake.byName("retry-console").length, 1, "the function itself was deployed");
      assert.deepEqual(fake.triggersOf("retry-console"), []);
      const again = await deploy(["--function", "console", "--name-prefix", "retry-"]);
      assert.equal(again.code, 0, show(again));
      assert.deepEqual(triggerActions(again), [["console", ["created"]]]);
      assert.equal(fake.triggersOf("retry-console").length, 1);
    });

    it("a route another function holds is refused by the platform (FSS.0409): exit 3 with its code", T, async () => {
      const r = await deploy(["--function", "runs", ...group]);
      assert.equal(r.code, 3, show(r));
      assert.match(results(r)[0]!.error!.message, /FSS\.0409/);
      assert.deepEqual(fake.triggersOf("rlpipe-runs"), []);
    });

    it("the listing is the service's (func_info extended, api_name, s3: events, reordered): a deploy after it changes nothing", T, async () => {
      // (console's prefix is uploads/ since the test above that changed it)
      const r = await deploy(["--function", "reward,console", ...group, "--role", "rlpipe-functions"], ["RLPIPE_CONSOLE_RECIPE_PREFIX=obs://rlpipe-recipes/uploads/"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(triggerActions(r), [["reward", ["unchanged"]], ["console", ["unchanged"]]]);
      // The fake lists what the service adds: were the comparison exact, this deploy would have replaced both.
      const listed = (fake as unknown as { served(t: unknown): Record<string, unknown> }).served(fake.triggersOf("rlpipe-reward")[0]);
      assert.deepEqual(Object.keys(listed["func_info"] as object).sort(), ["function_urn", "invocation_type", "timeout", "version"]);
      assert.equal(listed["api_name"], "rlpipe_reward");
    });

    it("--apig-group without the dedicated gateway's instance exits 2 before anything is sent, naming --apig-instance and --apig-shared", T, async () => {
      const before = fake.calls.length;
      const r = await deploy(["--function", "reward", "--apig-group", "c77f5e81d9cb4424bf704ef2b0ac7600"]);
      assert.equal(r.code, 2, show(r));
      const err = (JSON.parse(r.out) as { error: { message: string; hint: string } }).error;
      assert.match(err.message, /needs the dedicated API gateway it belongs to: --apig-instance ID/);
      assert.match(err.hint, /--apig-shared/);
      assert.equal(fake.calls.length, before);
    });

    it("--apig-shared makes a route on the shared gateway (APIG, no instance); an account without one refuses it (exit 3, its message)", T, async () => {
      fake.sharedGateway = false;
      const refused = await deploy(["--function", "reward", "--apig-group", "c77f5e81d9cb4424bf704ef2b0ac7600", "--apig-shared", "--name-prefix", "shared-", "--env", "RLPIPE_BASE_PATH=/shared"]);
      assert.equal(refused.code, 3, show(refused));
      assert.match(results(refused)[0]!.error!.message, /FSS\.0400.*no shared API gateway/);
      fake.sharedGateway = true;
      const r = await deploy(["--function", "reward", "--apig-group", "c77f5e81d9cb4424bf704ef2b0ac7600", "--apig-shared", "--name-prefix", "shared-", "--env", "RLPIPE_BASE_PATH=/shared"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(fake.triggersOf("shared-reward").map((t) => [t.type, t.eventData["instance_id"]]), [["APIG", undefined]]);
    });

    it("a user who may not list agencies gets what to grant, not a key-and-clock hint (exit 3)", T, async () => {
      fake.mayListAgencies = false;
      try {
        const r = await deploy(["--function", "reward", ...group, "--role", "rlpipe-functions"]);
        assert.equal(r.code, 3, show(r));
        const err = (JSON.parse(r.out) as { error: { code: string; message: string; hint: string } }).error;
        assert.equal(err.code, "functiongraph_iam_forbidden");
        assert.match(err.message, /403 IAM\.0003/);
        assert.match(err.hint, /iam:agencies:listAgencies/);
        assert.doesNotMatch(err.hint, /clock \(requests more than/);
      } finally { fake.mayListAgencies = true; }
    });

    it("more than 20 variables, or more than 4 KB of them, exit 2 before any call (user_data's documented limits)", T, async () => {
      const before = fake.calls.length;
      const many = Array.from({ length: 21 }, (_, i) => `RLPIPE_X${String(i).padStart(2, "0")}=v`);
      const r = await deploy(["--function", "reward", ...group], many);
      assert.equal(r.code, 2, show(r));
      assert.match(r.out, /functiongraph_user_data_limit/);
      assert.match(r.out, /at most 20 environment variables of at most 4096 bytes in all \(user_data/);
      const big = await deploy(["--function", "reward", ...group], [`RLPIPE_BIG=${"x".repeat(4100)}`]);
      assert.equal(big.code, 2, show(big));
      assert.match(big.out, /largest: RLPIPE_BIG 4100 B/);
      assert.equal(fake.calls.length, before, "nothing was sent");
    });

    it("--dry-run shows the triggers' bodies and sends nothing", T, async () => {
      const before = fake.calls.length;
      const r = await rlpipe(["functions", "deploy", "--platform", "functiongraph", "--zip", join(tmp, "functiongraph"), "--function", "console", "--dry-run",
        "--env", "RLPIPE_CONSOLE_RECIPE_PREFIX=obs://rlpipe-recipes/recipes/"], {}, tmp);
      assert.equal(r.code, 0, show(r));
      assert.match(r.out, /trigger OBS s3:ObjectCreated:\* obs:\/\/rlpipe-recipes\/recipes\/: \{"name":"rlpipe-console-recipes","bucket":"rlpipe-recipes","events":\["s3:ObjectCreated:\*"\],"prefix":"recipes\/"\}/);
      assert.equal(fake.calls.length, before);
    });
  });

  describe("SCF: function URL and COS triggers, the role in CAM", () => {
    const secretId = fakeTencentSecretId();
    const secretKey = fakeTencentSecretKey();
    let fake: FakeScf;
    let env: Record<string, string>;
    const cosName = "rlpipe-recipes-1250000000.cos.ap-shanghai.myqcloud.com";
    const deploy = (extra: readonly string[], prefix = "cos://rlpipe-recipes-1250000000/recipes/") =>
      rlpipe(["functions", "deploy", "--platform", "scf", "--region", "ap-shanghai", "--zip", join(tmp, "scf"), "--json",
        "--env", "RLPIPE_SANDBOX=e2b", "--env", `RLPIPE_CONSOLE_RECIPE_PREFIX=${prefix}`, ...extra], env, tmp);

    before(async () => {
      fake = await FakeScf.start([{ secretId, secretKey }]);
      fake.settleLooks = 0;
      fake.roles.set("rlpipe-scf", JSON.stringify({ version: "2.0", statement: [{ action: "name/sts:AssumeRole", effect: "allow", principal: { service: ["scf.qcloud.com"] } }] }));
      fake.roles.set("audit-role", JSON.stringify({ version: "2.0", statement: [{ action: "name/sts:AssumeRole", effect: "allow", principal: { service: ["cloudaudit.cloud.tencent.com"] } }] }));
      env = { TENCENTCLOUD_SECRET_ID: secretId, TENCENTCLOUD_SECRET_KEY: secretKey, SCF_ENDPOINT: fake.endpoint, CAM_ENDPOINT: fake.endpoint };
    });
    after(async () => { await fake.close(); });

    it("a missing role, or one SCF cannot take, exits 2 before any function changes", T, async () => {
      const missing = await deploy(["--function", "console", "--role", "no-such-role"]);
      assert.equal(missing.code, 2, show(missing));
      const err = (JSON.parse(missing.out) as { error: { code: string; message: string; hint: string } }).error;
      assert.equal(err.code, "scf_role_missing");
      assert.match(err.message, /SCF execution role no-such-role \(--role\) does not exist/);
      assert.match(err.hint, /COS read on cos:\/\/rlpipe-recipes-1250000000\/recipes\/ \(console: recipe uploads\)/);
      const audit = await deploy(["--function", "console", "--role", "audit-role"]);
      assert.equal(audit.code, 2, show(audit));
      assert.match(audit.out, /does not trust the service scf\.qcloud\.com/);
      assert.deepEqual(fake.calls.filter((c) => c.action !== "GetRole"), []);
      const obs = await deploy(["--function", "console"], "obs://b/recipes/");
      assert.equal(obs.code, 2, show(obs));
      assert.match(obs.out, /recipe_prefix_wrong_store/);
    });

    it("creates the function URL for reward and the COS trigger for console once; a second deploy changes nothing", T, async () => {
      const r = await deploy(["--function", "reward,console", "--role", "rlpipe-scf"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(triggerActions(r), [["reward", ["created"]], ["console", ["created"]]]);
      // As the service keeps them: the URLs it made and the bucket's domain added (so a listing never equals the request).
      const url = fake.triggersOf("rlpipe-reward").map((t) => [t.type, t.name, JSON.parse(t.desc)]);
      assert.deepEqual(url.map(([type, name, d]) => [type, name, d.AuthType, d.NetConfig.EnableIntranet, d.NetConfig.EnableExtranet, d.NetConfig.IntranetUrl]), [["http", "rlpipe-url", "NONE", false, true, ""]]);
      assert.match(url[0]![2].NetConfig.ExtranetUrl, /^https:\/\/1250000000-[0-9a-f]{8}\.ap-shanghai\.tencentscf\.com$/);
      assert.deepEqual(fake.triggersOf("rlpipe-console").map((t) => [t.type, t.name, JSON.parse(t.desc)]), [["cos", cosName, { bucketUrl: cosName, event: "cos:ObjectCreated:*", filter: { Prefix: "recipes/", Suffix: "" } }]]);
      assert.equal(fake.functions.get("default/rlpipe-console")!.role, "rlpipe-scf");
      const before = fake.calls.length;
      const again = await deploy(["--function", "reward,console", "--role", "rlpipe-scf"]);
      assert.equal(again.code, 0, show(again));
      assert.deepEqual(triggerActions(again), [["reward", ["unchanged"]], ["console", ["unchanged"]]]);
      assert.deepEqual([...new Set(fake.calls.slice(before).map((c) => c.action))].sort(), ["GetFunction", "GetRole", "ListTriggers"]);
    });

    it("a function URL changed by hand is updated in place; a changed prefix replaces the COS trigger (no update for cos)", T, async () => {
      fake.triggersOf("rlpipe-reward")[0]!.desc = JSON.stringify({ AuthType: "CAM", NetConfig: { EnableIntranet: true, EnableExtranet: false } });
      const before = fake.calls.length;
      const r = await deploy(["--function", "reward,console", "--role", "rlpipe-scf"], "cos://rlpipe-recipes-1250000000/uploads/");
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(triggerActions(r), [["reward", ["updated"]], ["console", ["replaced"]]]);
      assert.deepEqual(fake.calls.slice(before).filter((c) => /Trigger$/.test(c.action) && c.action !== "ListTriggers").map((c) => c.action), ["UpdateTrigger", "DeleteTrigger", "CreateTrigger"]);
      assert.equal(JSON.parse(fake.triggersOf("rlpipe-reward")[0]!.desc).AuthType, "NONE");
      assert.deepEqual(fake.triggersOf("rlpipe-console").map((t) => JSON.parse(t.desc).filter.Prefix), ["uploads/"]);
    });

    it("a function URL made in the console under another name is the function's URL: updated in place, none created; one bound to a domain is never deleted", T, async () => {
      const f = "hand-reward";
      const first = await deploy(["--function", "reward", "--name-prefix", "hand-"]);
      assert.equal(first.code, 0, show(first));
      const list = fake.triggersOf(f);
      assert.equal(list.length, 1);
      // Replace it by one "made in the console": another name, CAM auth, bound to a custom domain.
      list.splice(0, 1, { name: "console-url-7f3a", type: "http", desc: JSON.stringify({ NetConfig: { EnableExtranet: true, EnableIntranet: false, ExtranetUrl: "https://u.example", IntranetUrl: "" }, AuthType: "CAM" }), enable: "OPEN", boundToDomain: true });
      const before = fake.calls.length;
      const r = await deploy(["--function", "reward", "--name-prefix", "hand-"]);
      assert.equal(r.code, 0, show(r));
      assert.deepEqual(triggerActions(r), [["reward", ["updated"]]]);
      assert.deepEqual(fake.calls.slice(before).filter((c) => /Trigger$/.test(c.action) && c.action !== "ListTriggers").map((c) => [c.action, c.outcome]), [["UpdateTrigger", undefined]]);
      assert.deepEqual(fake.triggersOf(f).map((t) => [t.name, JSON.parse(t.desc).AuthType]), [["console-url-7f3a", "NONE"]]);
      const again = await deploy(["--function", "reward", "--name-prefix", "hand-"]);
      assert.deepEqual(triggerActions(again), [["reward", ["unchanged"]]]);
    });

    it("a CreateTrigger acted on but answered InternalError converges: one trigger, no ResourceInUse left over", T, async () => {
      fake.faultAfter.push("CreateTrigger");
      const r = await deploy(["--function", "console", "--name-prefix", "fault-"]);
      assert.equal(r.code, 0, show(r));
      assert.equal(fake.triggersOf("fault-console").length, 1);
      assert.ok(fake.calls.some((c) => c.action === "CreateTrigger" && c.outcome === "InternalError"), "the fault happened");
      assert.match(r.err, /InternalError.*looking again/);
    });

    it("a second CreateTrigger of the same name is refused with ResourceInUse.Trigger (kind exists)", T, async () => {
      const api = new ScfFunctions({ env, region: "ap-shanghai" });
      try {
        const fn = { name: "rlpipe-reward", id: "rlpipe-reward" };
        const spec = api.triggers.spec(fn, { kind: "http", function: "reward", path: "/" });
        await assert.rejects(api.triggers.create(fn, spec), (e: unknown) => e instanceof FunctionsApiError && e.kind === "exists" && e.platformCode === "ResourceInUse.Trigger");
        assert.equal(fake.triggersOf("rlpipe-reward").length, 1);
      } finally { api.close(); }
    });
  });
});

describe("FunctionGraph errors, classified by what they mean", () => {
  it("FSS.0401 (a function URN FunctionGraph no longer has) is not_found, not bad credentials; the gateway's APIGW.0301 is", () => {
    const gone = functionGraphError("UpdateFunctionCode rlpipe-reward", 401, JSON.stringify({ error_code: "FSS.0401", error_msg: "function not found" }));
    assert.equal(gone.kind, "not_found");
    assert.equal(gone.code, "functiongraph_not_found");
    assert.equal(gone.hint, undefined);
    const auth = functionGraphError("ListFunctions", 401, JSON.stringify({ error_code: "APIGW.0301", error_msg: "Incorrect IAM authentication information" }));
    assert.equal(auth.code, "functiongraph_auth_failed");
    assert.match(auth.hint ?? "", /clock/);
  });
});
