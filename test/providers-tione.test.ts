// The TI-ONE provider end to end: the planned CreateTrainingTask body of the seed's Ray task field by field, with
// every unverified field listed; the Ray runtime env carried through verl (composed by Hydra against verl 0.6.1 and
// expanded by Ray's own update_envs); then deploy() with the real tencentcloud-sdk-nodejs-common client against the strict
// loopback fake (TC3-HMAC-SHA256 checked on every request) and the bundle uploaded to a real S3-compatible server
// (moto on 127.0.0.1) standing in for COS; status phases, log tailing through the Context cursor, idempotent stop;
// seeded random fault trials that must each leave exactly one task; `rlpipe tione inspect`; configuration and
// request errors with codes, nothing created and no secret in any message.
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { parse as parseYaml } from "yaml";
import { type AdapterContext, type BundleSink, ProviderError, deploy } from "../adapters/providers/provider.js";
import { readRunRecord, runsDir } from "../adapters/providers/run-records.js";
import { TASK_NAME_RULE, type TioneAdapter, TioneApi, createTioneAdapter, kindOfTioneCode, parseIni, resolveTioneEndpoint, taskNameProblem } from "../adapters/providers/tione.js";
import { S3Store } from "../adapters/storage/s3.js";
import { parseStoreUri } from "../adapters/storage/store.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { PRIVATE_VALUE, inspectSnippet, runTione } from "../bin/commands/tione.js";
import { formatHelp } from "../bin/help.js";
import { RecipeError, type RecipeIssue, type RlpipeError, formatPath } from "../core/errors.js";
import { leaves } from "../core/cost/estimate.js";
import type { CostReport } from "../core/cost/types.js";
import { type Plan, plan } from "../core/plan.js";
import {
  type CreateTrainingTaskBody, DEFAULT_CODE_MOUNT, SECRET_ENV_PLACEHOLDER, TASK_NAME_MAX_CHARS, buildTioneRequest, decodeStartCmd, parseNodeSpec, rayEnvValue,
  taskNameProblem as coreTaskNameProblem, tioneRayRuntimeEnvOverrides,
} from "../core/providers/tione-request.js";
import { locateAll, parseRecipe } from "../core/recipe/load.js";
import { overrideWord } from "../core/render/hydra.js";
import { fakeE2bKey, fakeSecurityToken, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { JobRunner, stubContainerEnv, writeVerlStub } from "./fakes/job-runner.js";
import { type Fault, type FakeTask, type NameTakenCode, TioneFake } from "./fakes/tione-fake.js";
import { assertRunInStore, runnableSeed } from "./run-outputs.js";
import { ROOT, loadSeed, planSeed, recipeText, editYaml as edit, seededRandom as rng } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, freePort, startMoto } from "./servers/moto.js";

const SEED = "retool-qwen3-4b-tione-ags";
const SECRET_ID = fakeTencentSecretId();
const SECRET_KEY = fakeTencentSecretKey();
const TOKEN_ID = fakeTencentSecretId();
const TOKEN_KEY = fakeTencentSecretKey();
const TOKEN = fakeSecurityToken();
const E2B_KEY = fakeE2bKey();
// The COS key the task's checkpoint sidecar uses (passed as task variables, like every secret on TI-ONE).
const COS_ID = fakeTencentSecretId();
const COS_KEY = fakeTencentSecretKey();
const BUCKET = "rlpipe-bundles-1250000000";
const FILLED_BUCKET = "rlpipe-bundles-1251234567";
const PYTHON = join(ROOT, ".venv-test", "bin", "python");

const planOf = (text: string): Plan => plan(parseRecipe(text, "edited.yaml"), { provider: "tione", assets: bundledAssets() });
const bodyOf = (p: Plan) => p.request!.body as CreateTrainingTaskBody;


const errorText = (e: unknown) => `${(e as Error).message}\n${(e as RlpipeError).hint ?? ""}\n${String((e as Error).stack)}`;
const noSecrets = (text: string, where: string) => {
  for (const s of [SECRET_KEY, TOKEN_KEY, TOKEN, E2B_KEY, COS_KEY]) assert.ok(!text.includes(s), `${where} contains a secret`);
};

// ------------------------------------------------------------------------------------------ the request

describe("TI-ONE request (plan)", () => {
  const p = planSeed(SEED, "tione");
  const body = bodyOf(p);

  it("renders the seed's Ray task: name, charge, image, head and worker in the API's units", () => {
    assert.equal(p.request?.api, "tione:CreateTrainingTask");
    assert.equal(body.Name, p.jobName);
    assert.ok(body.Name.length <= 60);
    assert.match(body.Name, /^retool-qwen3-4b-tione-ags-[0-9a-f]{8}$/);
    assert.equal(body.ChargeType, "PREPAID");
    assert.equal(body.ResourceGroupId, "rsg-xxxxxxxx");
    assert.equal(body.TrainingMode, "RAY");
    assert.equal(body.FrameworkName, "PYTORCH");
    assert.equal(body.FrameworkEnvironment, "verl0.6.1-vllm0.11.0-torch2.8-py312-cuda12.8-gpu");
    assert.equal(body.ImageInfo, undefined);
    assert.deepEqual(body.ResourceConfigInfos, [
      { Role: "HEAD", InstanceNum: 1, Cpu: 128_000, Memory: 1_024_000, Gpu: 0 },
      { Role: "WORKER", InstanceNum: 1, Cpu: 128_000, Memory: 1_024_000, Gpu: 400, GpuType: "HCCPNV6" },
    ]);
    assert.deepEqual(body.Tags, [{ TagKey: "rlpipe-run", TagValue: p.jobName }]);
  });

  it("starts the bundle from COS in the working directory, with the CFS mounted where the dev machine has it", () => {
    assert.deepEqual(decodeStartCmd(body), { StartCmd: `cd /home/tione/notebook/verl && bash ${DEFAULT_CODE_MOUNT}/launch.sh`, PsStartCmd: "", WorkerStartCmd: "" });
    assert.equal(p.request?.bundle?.to, `cos://${BUCKET}/retool-qwen3-4b/${p.bundleDigest}`);
    assert.equal(p.request?.bundle?.mountedAt, DEFAULT_CODE_MOUNT);
    assert.equal(body.DataSource, "CFS");
    assert.deepEqual(body.DataConfigs, [
      { MappingPath: "/home/tione/notebook", DataSourceType: "CFS", CFSSource: { Id: "cfs-xxxxxxxx", Path: "/" } },
      { MappingPath: DEFAULT_CODE_MOUNT, DataSourceType: "COS", COSSource: { Bucket: BUCKET, Region: "ap-shanghai", Paths: [`/retool-qwen3-4b/${p.bundleDigest}/`] } },
    ]);
  });

  it("task Envs are literal, carry the run name, mark each secret private with a placeholder (never its value), and no $ value", () => {
    // The plan shows each secret Env as the adapter sends it (IsPrivate); its value is filled in only at deploy.
    assert.deepEqual(body.Envs, [
      ...["COS_SECRET_ID", "COS_SECRET_KEY", "COS_SESSION_TOKEN", "E2B_API_KEY"].map((Name) => ({ Name, Value: SECRET_ENV_PLACEHOLDER, IsPrivate: true })),
      { Name: "RLPIPE_RUN", Value: p.jobName },
    ]);
    const w = p.warnings.find((x) => x.code === "env_not_expanded");
    assert.ok(w !== undefined, "the $ value in runtimeEnv.envVars is flagged");
    assert.deepEqual(w.path, ["targets", "tione", "runtimeEnv", "envVars", "LD_LIBRARY_PATH"]);
    assert.match(w.message, /no \$ expansion is documented/);
    assert.equal(typeof w.line, "number", "the warning points at the recipe line");
    const secretWarning = p.warnings.find((x) => x.code === "tione_secret_envs");
    assert.ok(secretWarning !== undefined && secretWarning.message.includes("E2B_API_KEY"));
    // They go as private Envs now: the warning says what IsPrivate does and does not promise, not "anyone can describe".
    assert.doesNotMatch(secretWarning.message, /anyone who can describe the task/);
    assert.match(secretWarning.message, /private task environment variables \(IsPrivate/);
    assert.match(secretWarning.message, /which views hide the value is not documented/);
    const literal = planOf(edit(recipeText(SEED), [[["targets", "tione", "envs"], { NCCL_DEBUG: "WARN", EXTRA: "$HOME/x" }]]));
    assert.deepEqual(bodyOf(literal).Envs.filter((e) => e.IsPrivate !== true).map((e) => e.Name), ["EXTRA", "NCCL_DEBUG", "RLPIPE_RUN"]);
    assert.ok(literal.warnings.some((x) => x.code === "env_not_expanded" && x.path.join(".") === "targets.tione.envs.EXTRA"));
  });

  it("secretsAsEnvs: false plans no private Env; a recipe's tiProjectId is in the planned body, none without it", () => {
    const off = bodyOf(planOf(edit(recipeText(SEED), [[["targets", "tione", "secretsAsEnvs"], false]])));
    assert.deepEqual(off.Envs, [{ Name: "RLPIPE_RUN", Value: off.Name }]);
    assert.equal("TiProjectId" in body, false, "the default workspace names none");
    const inWorkspace = bodyOf(planOf(edit(recipeText(SEED), [[["targets", "tione", "tiProjectId"], "tiproj-4e7a1c90"]])));
    assert.equal(inWorkspace.TiProjectId, "tiproj-4e7a1c90");
  });

  it("the planner checks the whole TI-ONE name rule (shared with the adapter): an error at metadata.name, exit 2", () => {
    assert.equal(coreTaskNameProblem, taskNameProblem, "one definition: the adapter re-exports core's");
    const loaded = parseRecipe(recipeText(SEED), "seed.yaml");
    const input = {
      recipe: loaded.recipe, provider: "tione" as const, bundleDigest: p.bundleDigest, workDir: p.workDir,
      resources: { nodes: p.resources.nodes, devicesPerNode: p.resources.devicesPerNode, accelerator: p.resources.accelerator }, secretEnvs: p.secrets.map((x) => x.env),
    };
    const issuesOf = (jobName: string) => {
      const issues: RecipeIssue[] = [];
      buildTioneRequest({ ...input, jobName }, issues);
      return issues.filter((i) => i.severity === "error");
    };
    assert.deepEqual(issuesOf(p.jobName), [], "the planned name is valid");
    assert.deepEqual(issuesOf("训练任务-0a1b2c3d"), [], "Chinese letters are within the rule");
    for (const [name, code, problem] of [
      ["retool.qwen3-0a1b2c3d", "tione_bad_task_name", 'it has "." at position 7'],
      ["_retool-0a1b2c3d", "tione_bad_task_name", 'it starts with "_"'],
      ["café-0a1b2c3d", "tione_bad_task_name", 'it has "é" at position 4'],
      ["x".repeat(TASK_NAME_MAX_CHARS + 1), "tione_name_too_long", `it has ${TASK_NAME_MAX_CHARS + 1} characters`],
    ] as const) {
      const errors = issuesOf(name);
      assert.deepEqual(errors.map((e) => [e.code, formatPath(e.path)]), [[code, "metadata.name"]], name);
      assert.ok(errors[0]!.message.includes(problem) && errors[0]!.message.includes(TASK_NAME_RULE), name);
      // As plan() reports its errors: a RecipeError pointing at the recipe's line, exit code 2.
      const e = new RecipeError(loaded.file, locateAll(errors, loaded.source, loaded.file));
      assert.equal(e.exitCode, 2);
      assert.match(e.message, /seed\.yaml:\d+:\d+: metadata\.name: /);
    }
  });

  it("lists every field that rests on an inference, with why and the recipe field that overrides it", () => {
    const paths = p.request!.unverified.map((u) => u.path).sort();
    assert.deepEqual(paths, [
      "DataConfigs[].COSSource.Paths", "DataSource", "EncodedStartCmdInfo.StartCmdInfo", "FrameworkName",
      "ResourceConfigInfos[0].Memory", "ResourceConfigInfos[0].Role", "ResourceConfigInfos[1].GpuType", "ResourceConfigInfos[1].Memory", "ResourceConfigInfos[1].Role",
      "RuntimeEnv", "TrainingMode",
    ]);
    for (const u of p.request!.unverified) {
      assert.ok(u.why.length > 20, `${u.path} explains why`);
      assert.match(u.override ?? "", /^targets\.tione\./, `${u.path} names its override`);
    }
    const byPath = Object.fromEntries(p.request!.unverified.map((u) => [u.path, u]));
    assert.equal(byPath["TrainingMode"]!.value, "RAY");
    assert.equal(byPath["ResourceConfigInfos[0].Role"]!.override, "targets.tione.head.role");
    assert.equal(byPath["ResourceConfigInfos[1].GpuType"]!.override, "targets.tione.worker.gpuType");
    assert.deepEqual(byPath["RuntimeEnv"]!.value, ["+ray_kwargs.ray_init.runtime_env.pip=[e2b_code_interpreter]", "+ray_kwargs.ray_init.runtime_env.env_vars.LD_LIBRARY_PATH=/usr/local/cuda/compat:$LD_LIBRARY_PATH"]);
  });

  it("values read back from a console task replace the defaults and leave the unverified list", () => {
    const text = edit(recipeText(SEED), [
      [["targets", "tione", "trainingMode"], "Ray"],
      [["targets", "tione", "head", "role"], "MASTER"],
      [["targets", "tione", "head", "memoryMB"], 1_000_000],
      [["targets", "tione", "worker", "role"], "WORKER"],
      [["targets", "tione", "worker", "memoryMB"], 1_000_000],
      [["targets", "tione", "worker", "gpuType"], "H20"],
      [["targets", "tione", "image", "framework"], "PYTORCH"],
      [["targets", "tione", "image", "frameworkVersion"], "2.8.0"],
    ]);
    const q = planOf(text);
    const b = bodyOf(q);
    assert.equal(b.TrainingMode, "Ray");
    assert.equal(b.FrameworkVersion, "2.8.0");
    assert.deepEqual(b.ResourceConfigInfos.map((r) => [r.Role, r.Memory, r.GpuType]), [["MASTER", 1_000_000, undefined], ["WORKER", 1_000_000, "H20"]]);
    assert.deepEqual(q.request!.unverified.map((u) => u.path).sort(), ["DataConfigs[].COSSource.Paths", "DataSource", "EncodedStartCmdInfo.StartCmdInfo", "RuntimeEnv"]);
    assert.notEqual(q.jobName, p.jobName, "a different request is a different job");
  });

  it("postpaid nodes send instance types, a custom image sends ImageInfo, custom mode runs DDP on every node", () => {
    const q = planOf(edit(recipeText(SEED), [
      [["targets", "tione", "resourceGroupId"], undefined],
      [["targets", "tione", "chargeType"], undefined],
      [["targets", "tione", "mode"], "custom"],
      [["targets", "tione", "head"], undefined],
      [["targets", "tione", "worker"], { count: 2, instanceType: "TI.GN7.20XLARGE320.POST" }],
      [["targets", "tione", "image"], { url: "ccr.ccs.tencentyun.com/me/verl:0.6.1", imageType: "CCR" }],
      [["resources", "nodes"], 2],
    ]));
    const b = bodyOf(q);
    assert.equal(b.ChargeType, "POSTPAID_BY_HOUR");
    assert.equal(b.ResourceGroupId, undefined);
    assert.equal(b.TrainingMode, "DDP");
    assert.deepEqual(b.ResourceConfigInfos, [{ Role: "WORKER", InstanceNum: 2, InstanceType: "TI.GN7.20XLARGE320.POST" }]);
    assert.deepEqual(b.ImageInfo, { ImageType: "CCR", ImageUrl: "ccr.ccs.tencentyun.com/me/verl:0.6.1" });
    assert.match(decodeStartCmd(b).StartCmd, /^export RLPIPE_NODE_RANK="\$\{INDEX:-0\}" RLPIPE_MASTER_ADDR="\$\{MASTER_ADDR:-\}" && cd /);
    assert.ok(!q.request!.unverified.some((u) => u.path === "TrainingMode" || u.path.endsWith(".Role")), "DDP and WORKER are documented");
  });

  it("a recipe without targets.tione still plans (warnings), and bad target values are errors with their paths", () => {
    const bare = planSeed("retool-qwen2.5-32b-h200", "tione");
    assert.ok(bare.warnings.some((w) => w.code === "tione_target_incomplete" && w.path.join(".") === "targets.tione"));
    const gaps = planOf(edit(recipeText(SEED), [[["targets", "tione", "resourceGroupId"], undefined], [["targets", "tione", "codeDir"], undefined]]));
    assert.deepEqual(gaps.warnings.filter((w) => w.code === "tione_target_incomplete").map((w) => w.path.join(".")).sort(), ["targets.tione.codeDir", "targets.tione.resourceGroupId"]);
    assert.throws(() => planOf(edit(recipeText(SEED), [[["targets", "tione", "worker", "spec"], "lots of GPUs"]])), (e: unknown) => {
      assert.ok(e instanceof RecipeError);
      const i = e.issues.find((x) => x.code === "tione_bad_spec");
      assert.deepEqual(i?.path, ["targets", "tione", "worker", "spec"]);
      return true;
    });
    assert.throws(() => planOf(edit(recipeText(SEED), [[["targets", "tione", "codeDir"], "s3://bucket/x"]])), /expected a COS URI/);
    assert.throws(() => planOf(edit(recipeText(SEED), [[["targets", "tione", "tuningParameters"], "x".repeat(2049)]])), /at most 2048 characters/);
    assert.throws(() => planOf(edit(recipeText(SEED), [[["targets", "tione", "runtimeEnv", "envVars", "P"], "${oc.env:P}"]])), (e: unknown) =>
      e instanceof RecipeError && e.issues.some((i) => i.code === "ray_env_value" && i.path.join(".") === "targets.tione.runtimeEnv.envVars.P"));
  });

  it("reads node sizes in the API's units", () => {
    assert.deepEqual(parseNodeSpec("128C1000G"), { cpuMilli: 128_000, memoryMB: 1_024_000 });
    assert.deepEqual(parseNodeSpec("128C1000G GPU-HCCPNV6*4"), { cpuMilli: 128_000, memoryMB: 1_024_000, gpuType: "HCCPNV6", gpuCenti: 400 });
    assert.deepEqual(parseNodeSpec("8c32gb T4*0.5"), { cpuMilli: 8_000, memoryMB: 32_768, gpuType: "T4", gpuCenti: 50 });
    assert.equal(parseNodeSpec("128 cores"), undefined);
  });
});

// ------------------------------------------------------------------------------------------ the Ray runtime env

describe("TI-ONE Ray runtime env through verl", () => {
  const recipe = loadSeed(SEED).recipe;
  const { overrides, issues } = tioneRayRuntimeEnvOverrides(recipe);
  const words = overrides.map((o) => overrideWord({ key: o.key, value: o.value }));

  it("turns targets.tione.runtimeEnv into verl Hydra overrides", () => {
    assert.deepEqual(issues, []);
    assert.deepEqual(words, [
      "+ray_kwargs.ray_init.runtime_env.pip=[e2b_code_interpreter]",
      "+ray_kwargs.ray_init.runtime_env.env_vars.LD_LIBRARY_PATH='/usr/local/cuda/compat:$LD_LIBRARY_PATH'",
    ]);
    assert.deepEqual(overrides.map((o) => o.origin.join(".")), ["targets.tione.runtimeEnv.pip", "targets.tione.runtimeEnv.envVars.LD_LIBRARY_PATH"]);
    assert.deepEqual(rayEnvValue("/a:${LD_LIBRARY_PATH}"), { value: "/a:$LD_LIBRARY_PATH" });
    assert.deepEqual(rayEnvValue("${A}/${B}:plain"), { value: "$A/$B:plain" });
    assert.ok("problem" in rayEnvValue("${A}b"));
    assert.ok("problem" in rayEnvValue("${oc.env:HOME}"));
    assert.ok("problem" in rayEnvValue("x${A"));
  });

  it("verl 0.6.1's Hydra composes them and Ray expands $NAME on a worker (the escaped \\${NAME} form would leave a backslash)", { skip: !existsSync(PYTHON) && "the test virtualenv is missing" }, () => {
    // verl 0.6.1 main_ppo's own merge (lines 61-74) and Ray's update_envs, applied in a worker-like environment.
    const script = String.raw`
import json, os, sys
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from ray._private.utils import update_envs
job = json.load(sys.stdin)
out = {}
for name, overrides in job["cases"].items():
    with initialize_config_dir(config_dir=job["configDir"], version_base=None):
        config = compose(config_name="ppo_trainer", overrides=overrides)
    OmegaConf.to_container(config, resolve=True)
    ray_init_kwargs = config.ray_kwargs.get("ray_init", {})
    runtime_env = OmegaConf.merge(OmegaConf.create({"env_vars": {"TOKENIZERS_PARALLELISM": "true"}}), ray_init_kwargs.get("runtime_env", {}))
    kwargs = OmegaConf.to_container(OmegaConf.create({**ray_init_kwargs, "runtime_env": runtime_env}))
    os.environ["LD_LIBRARY_PATH"] = "/usr/lib/worker"
    update_envs(kwargs["runtime_env"]["env_vars"])
    out[name] = {"pip": kwargs["runtime_env"].get("pip"), "LD_LIBRARY_PATH": os.environ["LD_LIBRARY_PATH"]}
json.dump(out, sys.stdout)
`;
    const configDir = join(ROOT, ".venv-test", "verl", "0.6.1", "verl", "trainer", "config");
    const rl = planSeed(SEED, "tione").stages.find((s) => s.id === "rl")!;
    const escaped = "+ray_kwargs.ray_init.runtime_env.env_vars.LD_LIBRARY_PATH='/usr/local/cuda/compat:\\${LD_LIBRARY_PATH}'";
    const r = spawnSync(PYTHON, ["-c", script], {
      input: JSON.stringify({ configDir, cases: { rendered: [...rl.overrides.filter((o) => !o.startsWith("+ray_kwargs.")), ...words], escaped: [escaped] } }),
      encoding: "utf8", timeout: 300_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as Record<string, { pip: string[] | null; LD_LIBRARY_PATH: string }>;
    assert.deepEqual(out["rendered"], { pip: ["e2b_code_interpreter"], LD_LIBRARY_PATH: "/usr/local/cuda/compat:/usr/lib/worker" });
    assert.equal(out["escaped"]!.LD_LIBRARY_PATH, "/usr/local/cuda/compat:\\/usr/lib/worker");
  });

  it("the planned rl stage carries them (core/render/stages.ts calls tioneRayRuntimeEnvOverrides for provider tione)", () => {
    const rl = planSeed(SEED, "tione").stages.find((s) => s.id === "rl")!;
    for (const w of words) assert.ok(rl.overrides.includes(w), `rl overrides include ${w}`);
    const other = planSeed(SEED, "local").stages.find((s) => s.id === "rl");
    assert.ok(other === undefined || !other.overrides.some((o) => o.startsWith("+ray_kwargs.ray_init.runtime_env")), "only provider tione");
  });
});

// ------------------------------------------------------------------------------------------ against the fake

describe("TI-ONE adapter: deploy, status, logs, stop against the strict fake, bundle on moto", () => {
  let fake: TioneFake;
  let moto: Moto;
  const stores: S3Store[] = [];
  const p = planSeed(SEED, "tione");
  const recipe = loadSeed(SEED).recipe;
  const noSleep = async () => undefined;
  const logs: string[] = [];
  let env: Record<string, string>;

  const sink = (uri: string): BundleSink => {
    const u = parseStoreUri(uri);
    const s = new S3Store({ scheme: "cos", bucket: u.bucket, prefix: u.prefix, region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    stores.push(s);
    return s;
  };
  const ctxOf = (over: Partial<AdapterContext> = {}): AdapterContext => ({ env, recipe, cwd: tmpdir(), bundleSink: sink, log: (l) => logs.push(l), ...over });
  const adapter = (over: Partial<AdapterContext> = {}, timeoutMs = 5_000): TioneAdapter =>
    createTioneAdapter(ctxOf(over), { timeoutMs, logPageLimit: 3, logPagesPerCall: 4 });
  const cli = (args: string[], over: Record<string, string> = {}) => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, "dist", "bin", "rlpipe.js"), ...args], {
      cwd: env["HOME"]!, stdio: ["ignore", "pipe", "pipe"],
      env: {
        PATH: process.env["PATH"] ?? "/usr/bin:/bin", ...env, COS_ENDPOINT: moto.endpoint,
        COS_SECRET_ID: TEST_CREDENTIALS.accessKeyId, COS_SECRET_KEY: TEST_CREDENTIALS.secretAccessKey, ...over,
      },
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => { out += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { err += d.toString(); });
    child.on("close", (code) => resolve({ code, out, err }));
  });
  // A user's copy of the shipped template (rsg-xxxxxxxx…, which deploy refuses) with their own values.
  const filledText = () => edit(recipeText(SEED), [
    [["targets", "tione", "resourceGroupId"], "rsg-7k2p9q4m"], [["targets", "tione", "storage", "cfs"], "cfs-3fa9e2c1:/"],
    [["targets", "tione", "codeDir"], `cos://${FILLED_BUCKET}/retool-qwen3-4b`],
  ]);
  const listBundle = async (prefix: string) => {
    const s = new S3Store({ scheme: "cos", bucket: BUCKET, prefix: "", region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    stores.push(s);
    return (await s.list(prefix)).map((o) => o.key).sort();
  };

  before(async () => {
    fake = await TioneFake.start([{ secretId: SECRET_ID, secretKey: SECRET_KEY }, { secretId: TOKEN_ID, secretKey: TOKEN_KEY, token: TOKEN }]);
    moto = await startMoto();
    env = {
      TENCENTCLOUD_SECRET_ID: SECRET_ID, TENCENTCLOUD_SECRET_KEY: SECRET_KEY, TIONE_ENDPOINT: fake.endpoint, E2B_API_KEY: E2B_KEY,
      COS_SECRET_ID: COS_ID, COS_SECRET_KEY: COS_KEY, HOME: mkdtempSync(join(tmpdir(), "rlpipe-tione-home-")),
    };
    const s = new S3Store({ scheme: "cos", bucket: BUCKET, prefix: "", region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await s.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    await s.client.send(new CreateBucketCommand({ Bucket: FILLED_BUCKET }));
    stores.push(s);
  });
  after(async () => {
    for (const s of stores) await s.close();
    await fake.stop();
    await moto.stop();
    rmSync(env["HOME"]!, { recursive: true, force: true });
    assert.deepEqual(fake.replyProblems, [], "every reply the fake gave is in the SDK's reply model");
  });

  it("deploy uploads the bundle to COS, creates one signed task with the secrets as Envs, and a second deploy finds it", async () => {
    fake.reset();
    const a = adapter();
    try {
      const first = await deploy(a, p, { sleep: noSleep });
      assert.equal(first.outcome, "created");
      const tasks = fake.tasksNamed(p.jobName);
      assert.equal(tasks.length, 1);
      assert.equal(first.ref.id, tasks[0]!.id);
      assert.deepEqual(first.ref, { provider: "tione", name: p.jobName, id: tasks[0]!.id, region: "ap-shanghai", endpoint: fake.endpoint });
      const sent = tasks[0]!.request as unknown as CreateTrainingTaskBody;
      assert.deepEqual(sent.Envs, [
        { Name: "COS_SECRET_ID", Value: COS_ID, IsPrivate: true }, { Name: "COS_SECRET_KEY", Value: COS_KEY, IsPrivate: true },
        { Name: "E2B_API_KEY", Value: E2B_KEY, IsPrivate: true }, { Name: "RLPIPE_RUN", Value: p.jobName },
      ]);
      assert.deepEqual({ ...sent, Envs: [] }, { ...bodyOf(p), Envs: [] }, "everything else is sent exactly as planned");
      // The Envs too: each planned private Env with the shell's value; the optional COS_SESSION_TOKEN is not set here.
      const values: Record<string, string> = { COS_SECRET_ID: COS_ID, COS_SECRET_KEY: COS_KEY, E2B_API_KEY: E2B_KEY };
      assert.deepEqual(sent.Envs, bodyOf(p).Envs.filter((e) => e.IsPrivate !== true || e.Name in values).map((e) => (e.IsPrivate === true ? { ...e, Value: values[e.Name]! } : e)));
      assert.deepEqual(await listBundle(`retool-qwen3-4b/${p.bundleDigest}/`), p.files.map((f) => `retool-qwen3-4b/${p.bundleDigest}/${f.path}`).sort());
      const launch = await stores.at(-1)!.get(`retool-qwen3-4b/${p.bundleDigest}/launch.sh`);
      assert.equal(launch.toString("utf8"), p.files.find((f) => f.path === "launch.sh")!.content);
      assert.ok(fake.calls.every((c) => c.outcome === undefined), "every request passed the signature check and validation");

      const second = await deploy(a, p, { sleep: noSleep });
      assert.deepEqual(second, { ref: first.ref, outcome: "existing" });
      assert.equal(fake.callsOf("CreateTrainingTask").length, 1);
      assert.ok(logs.some((l) => l.includes(`(0 of ${p.files.length} files uploaded)`)), "the content-addressed bundle is not uploaded twice");
    } finally {
      await a.close();
    }
  });

  it("status walks QUEUED → STARTING → RUNNING → SUCCEEDED (raw phase kept); a failed task carries its reason", async () => {
    fake.reset();
    const a = adapter();
    try {
      const { ref } = await deploy(a, p, { sleep: noSleep });
      const seen: [string, string][] = [];
      for (let i = 0; i < 10; i++) {
        const s = await a.status(ref);
        seen.push([s.phase, s.rawPhase]);
        if (s.phase === "SUCCEEDED") { assert.ok(s.startedAt !== undefined && s.endedAt !== undefined); break; }
      }
      assert.deepEqual(seen, [["STARTING", "STARTING"], ["RUNNING", "RUNNING"], ["SUCCEEDED", "SUCCEED"]]);
      fake.reset();
      fake.outcome = "FAILED";
      const failed = await deploy(a, p, { sleep: noSleep });
      let last = await a.status(failed.ref);
      while (last.phase !== "FAILED") last = await a.status(failed.ref);
      assert.equal(last.rawPhase, "FAILED");
      assert.equal(last.message, "launch.sh exited with code 1");
      await assert.rejects(a.status({ ...ref, id: "train-999999999999999999" }), (e: unknown) => e instanceof ProviderError && e.kind === "not_found" && /ResourceNotFound/.test(e.message));
    } finally {
      await a.close();
    }
  });

  it("logs tail through the Context cursor: every line exactly once and in order, across pages and late arrivals", async () => {
    fake.reset();
    const a = adapter();
    try {
      const { ref } = await deploy(a, p, { sleep: noSleep });
      let cursor: string | undefined;
      let text = "";
      let task: FakeTask | undefined;
      for (let round = 0; round < 12; round++) {
        const s = await a.status(ref);
        task ??= fake.tasks.get(ref.id);
        // Lines that arrive at the instant the last page ended (same timestamp) must not be lost or repeated.
        if (round % 2 === 1) fake.appendLogs(task!, `${ref.id}-worker-0`, [`late ${round}.a`, `late ${round}.b`, `late ${round}.c`, `late ${round}.d`]);
        const page = await a.logs(ref, cursor);
        text += page.text;
        cursor = page.cursor;
        if (s.phase === "SUCCEEDED" && round > 6) break;
      }
      // A logs() call reads a bounded number of pages; the CLI calls again. Drain what is left.
      for (let i = 0; i < 12; i++) {
        const page = await a.logs(ref, cursor);
        text += page.text;
        cursor = page.cursor;
      }
      const expected = [...task!.logs].sort((x, y) => Date.parse(x.Timestamp) - Date.parse(y.Timestamp) || x.seq - y.seq).map((l) => `[${l.PodName}] ${l.Message}\n`).join("");
      assert.ok(task!.logs.length > 20);
      assert.equal(text, expected);
      const described = fake.callsOf("DescribeLogs");
      assert.ok(described.some((c) => typeof c.params?.["Context"] === "string"), "pages were followed with Context");
      assert.ok(described.every((c) => c.params?.["Order"] === "ASC" && c.params?.["Service"] === "TRAIN" && c.params?.["ServiceId"] === `${ref.id}-1`));
      const again = await a.logs(ref, cursor);
      assert.equal(again.text, "", "a caught-up cursor returns nothing new");
      // A page cursor TI-ONE no longer accepts: a fresh window from the newest timestamp, still nothing repeated.
      const state = JSON.parse(Buffer.from(again.cursor, "base64url").toString("utf8")) as Record<string, unknown>;
      const stale = Buffer.from(JSON.stringify({ ...state, c: Buffer.from("not-a-context").toString("base64url"), w: state["s"] })).toString("base64url");
      assert.equal((await a.logs(ref, stale)).text, "");
      assert.ok(fake.callsOf("DescribeLogs").some((c) => c.outcome === "InvalidParameterValue"), "the stale Context was refused");
    } finally {
      await a.close();
    }
  });

  it("stop is idempotent: a running task goes STOPPING → STOPPED; stopping it again, or a missing task, succeeds", async () => {
    fake.reset();
    fake.holdAtRunning = true;
    const a = adapter();
    try {
      const { ref } = await deploy(a, p, { sleep: noSleep });
      let s = await a.status(ref);
      while (s.phase !== "RUNNING") s = await a.status(ref);
      assert.equal((await a.status(ref)).phase, "RUNNING", "held at RUNNING");
      await a.stop(ref);
      assert.equal(fake.tasks.get(ref.id)!.status, "STOPPING");
      assert.equal((await a.status(ref)).phase, "STOPPED");
      await a.stop(ref);
      await a.stop({ ...ref, id: "train-999999999999999999" });
      assert.equal(fake.callsOf("StopTrainingTask").length, 1, "a stopped task is not stopped again");
    } finally {
      await a.close();
    }
  });

  it("through the CLI: a create acted on whose connection then dropped is reported as that one task; status and a second deploy find it", async () => {
    fake.reset();
    fake.inject("CreateTrainingTask", "reset-after");
    const recipeFile = join(env["HOME"]!, `${SEED}.yaml`);
    writeFileSync(recipeFile, filledText());
    const p = planOf(filledText());
    const r = await cli(["deploy", recipeFile, "--provider", "tione", "--yes", "--json"]);
    assert.equal(r.code, 0, r.err);
    const tasks = fake.tasksNamed(p.jobName);
    assert.equal(tasks.length, 1, "exactly one task");
    assert.deepEqual(JSON.parse(r.out.trim()), { name: p.jobName, provider: "tione", id: tasks[0]!.id, outcome: "recovered", attempt: 1 });
    for (const secret of [SECRET_KEY, E2B_KEY]) assert.ok(!(r.out + r.err).includes(secret), "no secret in the CLI's output");
    // The run record keeps the rates its own estimate priced the run with: compute prepaid (no card rate), AGS
    // rate needed (no E2B rate), COS's storage, requests and egress.
    const record = await readRunRecord(runsDir(env["HOME"]!), p.jobName);
    const estimate = record.cost as unknown as CostReport;
    const rated = leaves(estimate.lines).filter((l) => l.rate !== undefined);
    assert.deepEqual(record.prices.map((x) => [x.item, x.value, x.currency, x.unit]), rated.map((l) => [l.rate!.id, l.rate!.value, l.rate!.currency, l.rate!.unit]));
    assert.deepEqual(record.prices.map((x) => x.item), ["cos:standard:storage", "cos:requests", "cos:egress"]);
    assert.match(estimate.candidates.find((c) => c.chosen)!.includedIn ?? "", /rsg-7k2p9q4m/);
    const st = await cli(["status", p.jobName, "--json"]);
    assert.equal(st.code, 0, st.err);
    assert.equal(JSON.parse(st.out)[0].id, tasks[0]!.id);
    const again = await cli(["deploy", recipeFile, "--provider", "tione", "--yes", "--json"]);
    assert.equal(JSON.parse(again.out.trim()).outcome, "existing");
    assert.equal(fake.tasksNamed(p.jobName).length, 1);
  });

  it("60 seeded fault trials (timeouts after create, InternalError, 502, throttling, resets): exactly one task each, and deploy returns it", async () => {
    const CREATE: Fault[] = ["timeout-after-create", "internal-before", "internal-after", "throttle", "reset-before", "reset-after", "bad-gateway-after"];
    const LOOKUP: Fault[] = ["throttle", "internal-before", "reset-before", "bad-gateway-after"];
    const exercised = new Map<string, number>();
    const a = adapter({}, 800);
    try {
      for (let trial = 0; trial < 60; trial++) {
        const r = rng(1000 + trial);
        fake.reset();
        const preexisting = r() < 0.15;
        if (preexisting) await deploy(a, p, { sleep: noSleep });
        const createFaults = Array.from({ length: Math.floor(r() * 4) }, () => CREATE[Math.floor(r() * CREATE.length)]!);
        const lookupFaults = Array.from({ length: Math.floor(r() * 3) }, () => LOOKUP[Math.floor(r() * LOOKUP.length)]!);
        fake.inject("CreateTrainingTask", ...createFaults);
        fake.inject("DescribeTrainingTasks", ...lookupFaults);
        const out = await deploy(a, p, { sleep: noSleep, random: r });
        const tasks = fake.tasksNamed(p.jobName);
        const label = `trial ${trial} (seed ${1000 + trial}): create faults [${createFaults.join(", ")}], lookup faults [${lookupFaults.join(", ")}]${preexisting ? ", task existed" : ""}`;
        assert.equal(tasks.length, 1, `${label}: ${tasks.length} tasks`);
        assert.equal(out.ref.id, tasks[0]!.id, label);
        if (preexisting) assert.equal(out.outcome, "existing", label);
        for (const c of fake.calls) if (c.outcome?.startsWith("fault:")) exercised.set(`${c.action} ${c.outcome}`, (exercised.get(`${c.action} ${c.outcome}`) ?? 0) + 1);
      }
    } finally {
      await a.close();
    }
    for (const f of CREATE) assert.ok((exercised.get(`CreateTrainingTask fault:${f}`) ?? 0) > 0, `create fault ${f} was exercised`);
    for (const f of LOOKUP) assert.ok((exercised.get(`DescribeTrainingTasks fault:${f}`) ?? 0) > 0, `lookup fault ${f} was exercised`);
  });

  it("a search whose items omit Tags or return them as null never causes a second task (found by name, confirmed through DescribeTrainingTask)", async () => {
    const a = adapter({}, 800);
    try {
      for (const listTags of ["omitted", "null"] as const) {
        for (const detailTags of ["present", "omitted", "null"] as const) {
          for (const faults of [[], ["timeout-after-create"], ["internal-after"], ["reset-after"]] as Fault[][]) {
            const label = `list Tags ${listTags}, detail Tags ${detailTags}, create faults [${faults.join(", ")}]`;
            fake.reset();
            fake.listTags = listTags;
            fake.detailTags = detailTags;
            fake.inject("CreateTrainingTask", ...faults);
            const first = await deploy(a, p, { sleep: noSleep });
            assert.equal(fake.tasksNamed(p.jobName).length, 1, `${label}: one task after the first deploy`);
            assert.equal(first.outcome, faults.length === 0 ? "created" : "recovered", label);
            const second = await deploy(a, p, { sleep: noSleep });
            assert.deepEqual(second, { ref: first.ref, outcome: "existing" }, label);
            assert.equal(fake.tasksNamed(p.jobName).length, 1, `${label}: still one task after a second deploy`);
            assert.equal(fake.callsOf("CreateTrainingTask").length, 1, label);
            const searches = fake.callsOf("DescribeTrainingTasks");
            assert.ok(searches.every((c) => c.params?.["TagFilters"] === undefined), "the lookup does not depend on tag filtering");
          }
        }
      }
    } finally {
      await a.close();
    }
  });

  it("a task named like the run but tagged for another run is not taken for it", async () => {
    fake.reset();
    const other = fake.seedTask({ ...(bodyOf(p) as unknown as Record<string, unknown>), Tags: [{ TagKey: "rlpipe-run", TagValue: "someone-else" }] }, "RUNNING");
    const a = adapter();
    try {
      assert.equal(await a.findExisting(p), undefined);
      fake.listTags = "null";
      assert.equal(await a.findExisting(p), undefined, "an item without tags is confirmed by its detail");
      assert.ok(fake.callsOf("DescribeTrainingTask").length > 0);
      fake.detailTags = "null";
      assert.equal((await a.findExisting(p))?.id, other.id, "with tags nowhere, the deterministic name decides");
    } finally {
      await a.close();
    }
  });

  it("a request TI-ONE rejects (InvalidParameter) fails once with the code and request id: nothing created, no retry, no secret", async () => {
    fake.reset();
    const body = bodyOf(p);
    const bad: Plan = { ...p, request: { ...p.request!, body: { ...body, ResourceConfigInfos: [{ ...body.ResourceConfigInfos[0]!, Cpu: "128" as unknown as number }, body.ResourceConfigInfos[1]!] } } };
    const a = adapter();
    try {
      await assert.rejects(deploy(a, bad, { sleep: noSleep }), (e: unknown) => {
        assert.ok(e instanceof ProviderError);
        assert.equal(e.kind, "fatal");
        assert.equal(e.code, "tione_invalid_request");
        assert.equal(e.providerCode, "InvalidParameter");
        assert.match(e.message, /CreateTrainingTask failed: InvalidParameter: .*ResourceConfigInfos\[0\]\.Cpu.*\(RequestId [0-9a-f-]{36}\)/);
        noSecrets(errorText(e), "the error");
        return true;
      });
      assert.equal(fake.tasks.size, 0);
      assert.equal(fake.callsOf("CreateTrainingTask").length, 1);
    } finally {
      await a.close();
    }
  });

  it("missing credentials, an incomplete target, a missing secret, a plain-http remote endpoint: clear errors before anything is uploaded or sent", async () => {
    fake.reset();
    const other = planOf(edit(recipeText(SEED), [[["targets", "tione", "codeDir"], `cos://${BUCKET}/never-uploaded`]]));
    const otherRecipe = parseRecipe(edit(recipeText(SEED), [[["targets", "tione", "codeDir"], `cos://${BUCKET}/never-uploaded`]]), "x.yaml").recipe;
    const cases: [string, Partial<AdapterContext>, string, RegExp][] = [
      ["no credentials", { env: { TIONE_ENDPOINT: fake.endpoint, E2B_API_KEY: E2B_KEY, COS_SECRET_ID: COS_ID, COS_SECRET_KEY: COS_KEY, HOME: env["HOME"]! } }, "tione_credentials_missing", /TENCENTCLOUD_SECRET_ID/],
      ["half the credentials", { env: { ...env, TENCENTCLOUD_SECRET_KEY: "" } }, "tione_credentials_incomplete", /only the id/],
      ["no secret", { env: { ...env, E2B_API_KEY: "" } }, "secret_missing", /E2B_API_KEY/],
      ["no store credentials for the checkpoint sidecar", { env: { ...env, COS_SECRET_KEY: "" } }, "secret_missing", /COS_SECRET_KEY/],
      ["plain http off loopback", { env: { ...env, TIONE_ENDPOINT: "http://10.1.2.3:8080" } }, "insecure_endpoint", /plain http is allowed only for loopback/],
      ["incomplete target", { recipe: parseRecipe(edit(recipeText(SEED), [[["targets", "tione", "resourceGroupId"], undefined]]), "x.yaml").recipe }, "tione_target_incomplete", /resourceGroupId/],
    ];
    for (const [what, over, code, message] of cases) {
      const a = adapter({ recipe: otherRecipe, ...over });
      try {
        await assert.rejects(deploy(a, other, { sleep: noSleep }), (e: unknown) => {
          assert.ok(e instanceof ProviderError, what);
          assert.equal(e.code, code, what);
          assert.equal(e.exitCode, 2, what);
          assert.match(errorText(e), message, what);
          noSecrets(errorText(e), what);
          return true;
        });
      } finally {
        await a.close();
      }
    }
    assert.equal(fake.calls.length, 0, "no request reached TI-ONE");
    assert.deepEqual(await listBundle("never-uploaded/"), [], "nothing was uploaded");
  });

  it("the fake holds every call to the SDK's models: an unknown field, a missing required one, a wrong type, a value off the enum, a bad name are refused with TI-ONE's codes", async () => {
    fake.reset();
    const api = new TioneApi({ env, region: "ap-shanghai", timeoutMs: 5_000 });
    const refusal = async (action: string, params: object): Promise<[string | undefined, string]> => {
      try { await api.call(action, params); return [undefined, ""]; } catch (e) { return [(e as ProviderError).providerCode, (e as Error).message]; }
    };
    const body = { ...(bodyOf(p) as unknown as Record<string, unknown>), Envs: [{ Name: "RLPIPE_RUN", Value: p.jobName }] };
    const resources = bodyOf(p).ResourceConfigInfos;
    const dataConfigs = bodyOf(p).DataConfigs!;
    try {
      const cases: [string, string, object, string, RegExp][] = [
        ["an unknown field", "CreateTrainingTask", { ...body, Colour: "red" }, "UnknownParameter", /`Colour`/],
        ["a nested unknown field", "CreateTrainingTask", { ...body, Envs: [{ Name: "A", Value: "b", Secret: true }] }, "UnknownParameter", /`Envs\[0\]\.Secret`/],
        ["no ChargeType (required in the API reference)", "CreateTrainingTask", { ...body, ChargeType: undefined }, "MissingParameter", /`ChargeType`/],
        ["a resource without its Role", "CreateTrainingTask", { ...body, ResourceConfigInfos: [{ ...resources[0]!, Role: undefined }, resources[1]!] }, "MissingParameter", /`ResourceConfigInfos\[0\]\.Role`/],
        ["a CFS source without its Path", "CreateTrainingTask", { ...body, DataConfigs: [{ ...dataConfigs[0]!, CFSSource: { Id: "cfs-xxxxxxxx" } }, dataConfigs[1]!] }, "MissingParameter", /`DataConfigs\[0\]\.CFSSource\.Path`/],
        ["IsPrivate as text", "CreateTrainingTask", { ...body, Envs: [{ Name: "A", Value: "b", IsPrivate: "yes" }] }, "InvalidParameter", /Envs\[0\]\.IsPrivate/],
        ["a DataSourceUsage off the SDK's list", "CreateTrainingTask", { ...body, DataConfigs: [{ ...dataConfigs[0]!, DataSourceUsage: "CODE" }, dataConfigs[1]!] }, "InvalidParameterValue", /DataSourceUsage/],
        ["a name with a dot", "CreateTrainingTask", { ...body, Name: "retool.qwen3" }, "InvalidParameterValue.BadName", /`Name`/],
        ["LogEnable without LogConfig", "CreateTrainingTask", { ...body, LogEnable: true }, "InvalidParameterValue.ClsConfigRequired", /LogConfig/],
        ["DescribeTrainingTask without Id", "DescribeTrainingTask", {}, "MissingParameter", /`Id`/],
        ["DescribeTrainingTask with a stray field", "DescribeTrainingTask", { Id: "train-1", Name: "x" }, "UnknownParameter", /`Name`/],
        ["DescribeTrainingTasks in an order not documented", "DescribeTrainingTasks", { Order: "UP" }, "InvalidParameterValue", /Order/],
        ["DescribeTrainingTasks with Limit as text", "DescribeTrainingTasks", { Limit: "50" }, "InvalidParameter", /Limit/],
        ["DescribeTrainingTasks over the page size", "DescribeTrainingTasks", { Limit: 51 }, "InvalidParameterValue.PageLimitExceeded", /Limit/],
        ["StopTrainingTask without Id", "StopTrainingTask", {}, "MissingParameter", /`Id`/],
        ["DescribeLogs without Service", "DescribeLogs", { ServiceId: "train-1-1" }, "MissingParameter", /`Service`/],
        ["DescribeLogs of a stream not documented", "DescribeLogs", { Service: "TRAIN", LogStream: "both" }, "InvalidParameterValue", /LogStream/],
      ];
      for (const [what, action, params, code, where] of cases) {
        const [got, message] = await refusal(action, params);
        assert.equal(got, code, what);
        assert.match(message, where, what);
        assert.equal(kindOfTioneCode(code)[0], "fatal", what);
      }
      assert.equal(fake.tasks.size, 0, "nothing was created");
      // A Chinese name is within the documented rule: the fake takes it, as the adapter's check does.
      assert.equal(taskNameProblem("训练任务-1"), undefined);
      assert.deepEqual(await refusal("CreateTrainingTask", { ...body, Name: "训练任务-1" }), [undefined, ""]);
      // Replies carry what the service adds, in the reply models: the detail has no Envs (TrainingTaskDetail has none).
      const id = [...fake.tasks.keys()][0]!;
      const { TrainingTaskDetail: d } = await api.call<{ TrainingTaskDetail: Record<string, unknown> }>("DescribeTrainingTask", { Id: id });
      assert.equal(d["Id"], id);
      assert.equal(d["Status"], "STARTING");
      assert.match(String(d["CreateTime"]), /^\d{4}-\d{2}-\d{2}T/);
      assert.ok(!("Envs" in d) && !("EncodedStartCmdInfo" in d), "no request field the detail model lacks");
      assert.deepEqual(d["StartCmdInfo"], decodeStartCmd(bodyOf(p)), "the start command as the model has it (StartCmdInfo), not as sent");
      assert.deepEqual(fake.replyProblems, []);
    } finally {
      api.close();
    }
  });

  it("every secret goes to the task as a private Env (IsPrivate), plain variables without it; no listing, error or CLI output shows a secret value", async () => {
    fake.reset();
    const a = adapter();
    try {
      const { ref } = await deploy(a, p, { sleep: noSleep });
      const sent = fake.tasks.get(ref.id)!.request["Envs"] as { Name: string; Value: string; IsPrivate?: boolean }[];
      const secretNames = p.secrets.map((s) => s.env).sort();
      assert.deepEqual(secretNames, ["COS_SECRET_ID", "COS_SECRET_KEY", "COS_SESSION_TOKEN", "E2B_API_KEY"], "what rlpipe treats as secret (COS_SESSION_TOKEN is optional and not set here)");
      for (const e of sent) {
        if (secretNames.includes(e.Name)) assert.equal(e.IsPrivate, true, `${e.Name} is sent as private`);
        else assert.equal("IsPrivate" in e, false, `${e.Name} is a plain variable`);
      }
      assert.deepEqual(sent.map((e) => e.Name), ["COS_SECRET_ID", "COS_SECRET_KEY", "E2B_API_KEY", "RLPIPE_RUN"]);
      // What TI-ONE shows of the task (DescribeTrainingTasks, the only reply with Envs) keeps private values out.
      const listed = await a.api().call<{ TrainingTaskSet: { Envs: { Name: string; Value: string | null }[] }[] }>("DescribeTrainingTasks", { Filters: [{ Name: "Id", Values: [ref.id] }] });
      assert.deepEqual(listed.TrainingTaskSet[0]!.Envs.map((e) => [e.Name, e.Value]), [["COS_SECRET_ID", null], ["COS_SECRET_KEY", null], ["E2B_API_KEY", null], ["RLPIPE_RUN", p.jobName]]);
    } finally {
      await a.close();
    }
    // A refusal that quotes the request back: the adapter's error hides the task's secrets, not only the API keys.
    fake.reset();
    fake.inject("CreateTrainingTask", "refuse-echoing");
    const b = adapter();
    try {
      await assert.rejects(deploy(b, p, { sleep: noSleep }), (e: unknown) => {
        assert.ok(e instanceof ProviderError);
        assert.equal(e.providerCode, "InvalidParameterValue");
        assert.match(e.message, /RLPIPE_RUN/, "the echoed request is there");
        noSecrets(errorText(e), "the echoed refusal");
        assert.ok(!errorText(e).includes(COS_ID), "the COS key id is hidden too");
        return true;
      });
    } finally {
      await b.close();
    }
    // Through the CLI: plan --json, and a deploy --json whose create is refused with the request quoted back.
    fake.reset();
    fake.inject("CreateTrainingTask", "refuse-echoing");
    const recipeFile = join(env["HOME"]!, "secrets-check.yaml");
    writeFileSync(recipeFile, filledText());
    const planned = await cli(["plan", recipeFile, "--provider", "tione", "--json", "--out", join(env["HOME"]!, "secrets-bundle")]);
    assert.equal(planned.code, 0, planned.err);
    const deployed = await cli(["deploy", recipeFile, "--provider", "tione", "--yes", "--json"]);
    assert.equal(deployed.code, 3, deployed.err);
    assert.equal((JSON.parse(deployed.out.trim()) as { error: { code: string } }).error.code, "tione_invalid_request");
    for (const [what, text] of [["plan", planned.out + planned.err], ["deploy", deployed.out + deployed.err]] as const) {
      for (const secret of [SECRET_KEY, E2B_KEY, TEST_CREDENTIALS.secretAccessKey]) assert.ok(!text.includes(secret), `no secret in the CLI's ${what} output`);
    }
  });

  it("a non-default workspace (TENCENTCLOUD_TIONE_PROJECT_ID) reaches CreateTrainingTask and every call about the task; the JobRef keeps it", async () => {
    fake.reset();
    fake.holdAtRunning = true;
    const project = "tiproj-4e7a1c90";
    const a = adapter({ env: { ...env, TENCENTCLOUD_TIONE_PROJECT_ID: project } });
    const later = adapter(); // another shell, without the variable: the run record's JobRef says where the task is
    try {
      const first = await deploy(a, p, { sleep: noSleep });
      assert.equal(first.outcome, "created");
      assert.deepEqual(first.ref.extra, { tiProjectId: project });
      assert.equal(fake.tasks.get(first.ref.id)!.project, project, "created in the workspace");
      assert.deepEqual(await deploy(a, p, { sleep: noSleep }), { ref: first.ref, outcome: "existing" }, "found again in the workspace");
      assert.equal(await later.findExisting(p), undefined, "the default workspace has no such task");
      let s = await later.status(first.ref);
      while (s.phase !== "RUNNING") s = await later.status(first.ref);
      assert.match((await later.logs(first.ref, undefined)).text, /step 1/);
      await later.stop(first.ref);
      assert.equal((await later.status(first.ref)).phase, "STOPPED");
      for (const action of ["CreateTrainingTask", "DescribeTrainingTasks", "DescribeTrainingTask", "DescribeLogs", "StopTrainingTask"]) {
        assert.ok(fake.calls.some((c) => c.action === action && c.params?.["TiProjectId"] === project), `${action} names the workspace`);
      }
      const unscoped = fake.calls.filter((c) => c.params?.["TiProjectId"] !== project).map((c) => c.action);
      assert.deepEqual(unscoped, ["DescribeTrainingTasks"], "only the lookup made without the variable names no workspace");
      // rlpipe tione inspect's client takes the workspace from the same variable.
      const api = new TioneApi({ env: { ...env, TENCENTCLOUD_TIONE_PROJECT_ID: project }, region: "ap-shanghai" });
      try {
        const { TrainingTaskDetail: d } = await api.call<{ TrainingTaskDetail: { Id: string } }>("DescribeTrainingTask", { Id: first.ref.id });
        assert.equal(d.Id, first.ref.id);
        assert.equal(fake.calls.at(-1)?.params?.["TiProjectId"], project);
      } finally {
        api.close();
      }
    } finally {
      await a.close();
      await later.close();
    }
  });

  it("the planned private Envs are what is sent: values from the shell, an unset optional one left out, never the placeholder; secretsAsEnvs: false sends none", async () => {
    fake.reset();
    const token = fakeSecurityToken();
    const a = adapter({ env: { ...env, COS_SESSION_TOKEN: token } });
    try {
      const { ref } = await deploy(a, p, { sleep: noSleep });
      const sent = fake.tasks.get(ref.id)!.request as unknown as CreateTrainingTaskBody;
      const values: Record<string, string> = { COS_SECRET_ID: COS_ID, COS_SECRET_KEY: COS_KEY, COS_SESSION_TOKEN: token, E2B_API_KEY: E2B_KEY };
      assert.deepEqual(sent.Envs, bodyOf(p).Envs.map((e) => (e.IsPrivate === true ? { ...e, Value: values[e.Name]! } : e)), "name for name and IsPrivate as planned");
    } finally {
      await a.close();
    }
    fake.reset();
    logs.length = 0;
    const b = adapter();
    try {
      const { ref } = await deploy(b, p, { sleep: noSleep });
      const sent = fake.tasks.get(ref.id)!.request as unknown as CreateTrainingTaskBody;
      assert.ok(!sent.Envs.some((e) => e.Value === SECRET_ENV_PLACEHOLDER), "no placeholder is sent");
      assert.ok(!sent.Envs.some((e) => e.Name === "COS_SESSION_TOKEN"), "an optional secret not set is left out");
      assert.ok(logs.some((l) => /COS_SESSION_TOKEN not set here: left out/.test(l)), "and the deploy says so");
    } finally {
      await b.close();
    }
    fake.reset();
    const text = edit(recipeText(SEED), [[["targets", "tione", "secretsAsEnvs"], false]]);
    const off = planOf(text);
    const c = adapter({ recipe: parseRecipe(text, "x.yaml").recipe });
    try {
      const { ref } = await deploy(c, off, { sleep: noSleep });
      const sent = fake.tasks.get(ref.id)!.request as unknown as CreateTrainingTaskBody;
      assert.deepEqual(sent.Envs, bodyOf(off).Envs);
      assert.deepEqual(sent.Envs.map((e) => e.Name), ["RLPIPE_RUN"]);
    } finally {
      await c.close();
    }
  });

  it("targets.tione.tiProjectId wins over TENCENTCLOUD_TIONE_PROJECT_ID: plan --json shows it, the create sends the planned body, every call names it, inspect --recipe uses it", async () => {
    fake.reset();
    fake.holdAtRunning = true;
    const project = "tiproj-recipe01";
    const text = edit(filledText(), [[["targets", "tione", "tiProjectId"], project], [["targets", "tione", "codeDir"], `cos://${BUCKET}/workspace-test`]]);
    const recipeFile = join(env["HOME"]!, "workspace.yaml");
    writeFileSync(recipeFile, text);
    const planned = await cli(["plan", recipeFile, "--provider", "tione", "--json", "--out", join(env["HOME"]!, "workspace-bundle")]);
    assert.equal(planned.code, 0, planned.err);
    assert.equal((JSON.parse(planned.out) as { request: { body: CreateTrainingTaskBody } }).request.body.TiProjectId, project, "the plan prints it in the request body");
    const q = planOf(text);
    const shellEnv = { ...env, TENCENTCLOUD_TIONE_PROJECT_ID: "tiproj-fromenv" };
    const a = adapter({ env: shellEnv, recipe: parseRecipe(text, "x.yaml").recipe });
    try {
      const first = await deploy(a, q, { sleep: noSleep });
      assert.equal(first.outcome, "created");
      assert.deepEqual(first.ref.extra, { tiProjectId: project });
      assert.equal(fake.tasks.get(first.ref.id)!.project, project);
      const create = fake.callsOf("CreateTrainingTask")[0]!.params!;
      assert.deepEqual({ ...create, Envs: [] }, { ...bodyOf(q), Envs: [] }, "sent as planned, TiProjectId included");
      assert.ok(logs.some((l) => l.includes(`workspace ${project} (TiProjectId, from targets.tione.tiProjectId)`)));
      assert.deepEqual(await deploy(a, q, { sleep: noSleep }), { ref: first.ref, outcome: "existing" });
      await a.status(first.ref);
      await a.stop(first.ref);
      assert.deepEqual(fake.calls.filter((c) => c.params?.["TiProjectId"] !== project).map((c) => c.action), [], "no call goes to the variable's workspace");

      const out: string[] = [];
      const err: string[] = [];
      const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
      assert.equal(await runTione(["inspect", first.ref.id, "--recipe", recipeFile, "--json"], io, shellEnv), 0, err.join("\n"));
      assert.equal((JSON.parse(out.join("\n")) as { task: { Id: string } }).task.Id, first.ref.id);
      assert.ok(fake.calls.slice(-3).every((c) => c.action === "DescribeTrainingFrameworks" || c.params?.["TiProjectId"] === project), "inspect asked the recipe's workspace");
    } finally {
      await a.close();
    }
  });

  it("a task name that breaks TI-ONE's rule is refused before anything is uploaded or sent: exit code 2, the name, the rule, what to do", async () => {
    assert.deepEqual(
      ["retool-qwen3-4b-0a1b2c3d", "训练-1", "run_1", "retool.qwen3-0a1b2c3d", "_run", "-run", "café-run", "run 1", "x".repeat(61), ""].map((n) => taskNameProblem(n)),
      [undefined, undefined, undefined, 'it has "." at position 7', 'it starts with "_"', 'it starts with "-"', 'it has "é" at position 4', 'it has " " at position 4', "it has 61 characters", "it is empty"],
    );
    fake.reset();
    const text = edit(recipeText(SEED), [[["targets", "tione", "codeDir"], `cos://${BUCKET}/never-uploaded-name`]]);
    const good = planOf(text);
    const a = adapter({ recipe: parseRecipe(text, "x.yaml").recipe });
    try {
      for (const name of ["retool.qwen3-0a1b2c3d", "café-0a1b2c3d"]) {
        const bad: Plan = { ...good, jobName: name, request: { ...good.request!, body: { ...bodyOf(good), Name: name, Tags: [{ TagKey: "rlpipe-run", TagValue: name }] } } };
        await assert.rejects(deploy(a, bad, { sleep: noSleep }), (e: unknown) => {
          assert.ok(e instanceof ProviderError);
          assert.equal(e.code, "tione_bad_task_name");
          assert.equal(e.exitCode, 2);
          assert.ok(e.message.includes(JSON.stringify(name)), "names the name");
          assert.match(e.message, /metadata\.name/, "says where it comes from");
          assert.ok(e.message.includes(TASK_NAME_RULE), "states the rule");
          assert.match(e.hint ?? "", /rename the recipe \(metadata\.name\)/);
          return true;
        });
      }
    } finally {
      await a.close();
    }
    assert.equal(fake.calls.length, 0, "no request reached TI-ONE");
    assert.deepEqual(await listBundle("never-uploaded-name/"), [], "nothing was uploaded");
  });

  it("FailedOperation.DuplicateName means the task exists: a create whose reply was lost, retried while the listing lags, takes that task (exactly one)", async () => {
    assert.deepEqual(["FailedOperation.DuplicateName", "FailedOperation.DuplicateNameTaskIsCreating", "InvalidParameterValue.DuplicateName"].map((c) => kindOfTioneCode(c)),
      [["exists", "tione_name_taken"], ["exists", "tione_name_taken"], ["exists", "tione_name_taken"]]);
    const a = adapter({}, 800);
    try {
      for (const code of ["FailedOperation.DuplicateName", "FailedOperation.DuplicateNameTaskIsCreating"] as NameTakenCode[]) {
        fake.reset();
        fake.refuseTakenNames = code;
        fake.listingLag = 2;
        fake.inject("CreateTrainingTask", "reset-after");
        const out = await deploy(a, p, { sleep: noSleep });
        const tasks = fake.tasksNamed(p.jobName);
        assert.equal(tasks.length, 1, code);
        assert.equal(out.ref.id, tasks[0]!.id, code);
        assert.deepEqual(fake.callsOf("CreateTrainingTask").map((c) => c.outcome), ["fault:reset-after", code], "the retried create was refused as a duplicate");
      }
      // Seeded trials: names refused when taken, a lagging listing, faults on the create: one task each time.
      for (let trial = 0; trial < 24; trial++) {
        const r = rng(2000 + trial);
        fake.reset();
        fake.refuseTakenNames = "FailedOperation.DuplicateName";
        fake.listingLag = Math.floor(r() * 4);
        const faults: Fault[] = Array.from({ length: Math.floor(r() * 4) }, () => (["internal-before", "internal-after", "throttle", "reset-before", "reset-after", "bad-gateway-after"] as Fault[])[Math.floor(r() * 6)]!);
        fake.inject("CreateTrainingTask", ...faults);
        const label = `trial ${trial} (seed ${2000 + trial}): lag ${fake.listingLag}, create faults [${faults.join(", ")}]`;
        const out = await deploy(a, p, { sleep: noSleep, random: r });
        assert.equal(fake.tasksNamed(p.jobName).length, 1, label);
        assert.equal(out.ref.id, fake.tasksNamed(p.jobName)[0]!.id, label);
      }
      // The name taken by another run's task: no second task, and the error says what to do.
      fake.reset();
      fake.refuseTakenNames = "FailedOperation.DuplicateName";
      fake.seedTask({ ...(bodyOf(p) as unknown as Record<string, unknown>), Tags: [{ TagKey: "rlpipe-run", TagValue: "someone-else" }] });
      await assert.rejects(deploy(a, p, { sleep: noSleep }), (e: unknown) => {
        assert.ok(e instanceof ProviderError);
        assert.equal(e.kind, "exists");
        assert.equal(e.code, "tione_name_taken");
        assert.match(e.hint ?? "", /--new/);
        noSecrets(errorText(e), "the name-taken error");
        return true;
      });
      assert.equal(fake.tasksNamed(p.jobName).length, 1, "the other run's task only");
      assert.equal(fake.callsOf("CreateTrainingTask").length, 1, "one create, refused; then only lookups");
    } finally {
      await a.close();
    }
  });

  it("signatures are really checked: a wrong key, a skewed clock and a missing session token are refused", async () => {
    fake.reset();
    const attempt = async (over: Record<string, string>) => {
      const a = adapter({ env: { ...env, ...over } });
      try { await a.findExisting(p); return undefined; } catch (e) { return e as ProviderError; } finally { await a.close(); }
    };
    const wrong = await attempt({ TENCENTCLOUD_SECRET_KEY: fakeTencentSecretKey() });
    assert.equal(wrong?.providerCode, "AuthFailure.SignatureFailure");
    assert.equal(wrong?.kind, "fatal");
    noSecrets(errorText(wrong), "auth error");
    fake.clockOffsetMs = 400_000;
    const skewed = await attempt({});
    fake.clockOffsetMs = 0;
    assert.equal(skewed?.providerCode, "AuthFailure.SignatureExpire");
    assert.equal((await attempt({ TENCENTCLOUD_SECRET_ID: TOKEN_ID, TENCENTCLOUD_SECRET_KEY: TOKEN_KEY }))?.providerCode, "AuthFailure.TokenFailure");
    assert.equal(await attempt({ TENCENTCLOUD_SECRET_ID: TOKEN_ID, TENCENTCLOUD_SECRET_KEY: TOKEN_KEY, TENCENTCLOUD_SESSION_TOKEN: TOKEN }), undefined, "temporary keys with their token work");
  });

  it("reads credentials from a credentials file profile", async () => {
    fake.reset();
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-tione-cred-"));
    try {
      const file = join(dir, "credentials");
      writeFileSync(file, `# test\n[default]\nsecret_id = nobody\nsecret_key = nothing\n\n[ci]\nsecret_id = ${SECRET_ID}\nsecret_key = ${SECRET_KEY}\n`);
      assert.deepEqual(parseIni("[a]\nk = v = w\n; c\n"), { a: { k: "v = w" } });
      const a = adapter({ env: { TIONE_ENDPOINT: fake.endpoint, TENCENTCLOUD_CREDENTIALS_FILE: file, TENCENTCLOUD_PROFILE: "ci", E2B_API_KEY: E2B_KEY } });
      try {
        assert.equal(await a.findExisting(p), undefined);
        assert.deepEqual(fake.calls.map((c) => [c.action, c.outcome]), [["DescribeTrainingTasks", undefined]]);
      } finally {
        await a.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("rlpipe tione inspect prints the console task's fields as a targets.tione snippet that plans without inferences", async () => {
    fake.reset();
    const consoleTask = fake.seedTask({
      Name: "verl-ray-console", ChargeType: "PREPAID", ResourceGroupId: "rsg-console1", TrainingMode: "RAY",
      FrameworkName: "PYTORCH", FrameworkVersion: "2.8.0", FrameworkEnvironment: "verl0.6.1-vllm0.11.0-torch2.8-py312-cuda12.8-gpu",
      ResourceConfigInfos: [
        { Role: "HEAD", InstanceNum: 1, Cpu: 126_000, Memory: 990_000, Gpu: 0 },
        { Role: "WORKER", InstanceNum: 1, Cpu: 126_000, Memory: 990_000, Gpu: 400, GpuType: "H20" },
      ],
      StartCmdInfo: { StartCmd: "bash recipe/retool/run_qwen3-4b-instruct_dapo_e2b_code_tool.sh", PsStartCmd: "", WorkerStartCmd: "" },
      DataSource: "CFS",
      DataConfigs: [{ MappingPath: "/home/tione/notebook", DataSourceType: "CFS", CFSSource: { Id: "cfs-9a8b7c6d", Path: "/notebook" } }],
      TuningParameters: '{"pip":["e2b_code_interpreter"],"working_dir":"/home/tione/notebook/verl"}',
      Envs: [{ Name: "E2B_API_KEY", Value: E2B_KEY }, { Name: "NCCL_DEBUG", Value: "WARN" }],
      Tags: [],
    });
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    assert.equal(await runTione(["inspect", consoleTask.id, "--region", "ap-shanghai"], io, env), 0, err.join("\n"));
    const text = out.join("\n");
    noSecrets(text, "inspect output");
    assert.match(text, /# DescribeTrainingFrameworks: PYTORCH 2\.8\.0 verl0\.6\.1-vllm0\.11\.0-torch2\.8-py312-cuda12\.8-gpu training modes: DDP, MPI, RAY/);
    assert.match(text, /# the console's StartCmd: bash recipe\/retool\/run_qwen3-4b-instruct_dapo_e2b_code_tool\.sh/);
    const snippet = (parseYaml(text) as { targets: { tione: Record<string, unknown> } }).targets.tione;
    assert.deepEqual(snippet, {
      mode: "ray", trainingMode: "RAY", chargeType: "PREPAID", resourceGroupId: "rsg-console1",
      image: { builtin: "verl0.6.1-vllm0.11.0-torch2.8-py312-cuda12.8-gpu", framework: "PYTORCH", frameworkVersion: "2.8.0" },
      head: { role: "HEAD", count: 1, cpuMilli: 126_000, memoryMB: 990_000, gpuCenti: 0 },
      worker: { role: "WORKER", count: 1, cpuMilli: 126_000, memoryMB: 990_000, gpuCenti: 400, gpuType: "H20" },
      storage: { cfs: "cfs-9a8b7c6d:/notebook", mountPath: "/home/tione/notebook" },
      envs: { E2B_API_KEY: "***", NCCL_DEBUG: "WARN" },
      tuningParameters: '{"pip":["e2b_code_interpreter"],"working_dir":"/home/tione/notebook/verl"}',
      region: "ap-shanghai",
    });

    // Pasted into the seed (keeping its runtime env, bundle location and secrets), nothing rests on an inference
    // but what has no API field at all.
    const { envs: _secretish, ...pasted } = snippet;
    const seedTarget = (parseYaml(recipeText(SEED)) as { targets: { tione: Record<string, unknown> } }).targets.tione;
    const merged = planOf(edit(recipeText(SEED), [[["targets", "tione"], { ...pasted, codeDir: seedTarget["codeDir"], runtimeEnv: seedTarget["runtimeEnv"] }]]));
    assert.deepEqual(merged.request!.unverified.map((u) => u.path).sort(), ["DataConfigs[].COSSource.Paths", "DataSource", "EncodedStartCmdInfo.StartCmdInfo", "RuntimeEnv"]);

    out.length = 0;
    assert.equal(await runTione(["inspect", consoleTask.id, "--region", "ap-shanghai", "--json"], io, env), 0);
    const doc = JSON.parse(out.join("\n")) as { task: { Id: string }; targets: { tione: Record<string, unknown> }; frameworks: unknown[] };
    assert.equal(doc.task.Id, consoleTask.id);
    assert.deepEqual(doc.targets.tione, snippet);
    assert.equal(doc.frameworks.length, 1);

    err.length = 0;
    assert.equal(await runTione(["inspect", "train-404", "--region", "ap-shanghai"], io, env), 3, "the provider refused: external");
    assert.match(err.join("\n"), /DescribeTrainingTask failed: ResourceNotFound/);
    assert.equal(await runTione(["inspect", consoleTask.id], io, { ...env, TENCENTCLOUD_REGION: "" }), 2, "no region is a usage error");
    assert.equal(await runTione(["list"], io, env), 2);
    err.length = 0;
    assert.equal(await runTione(["inspect", consoleTask.id, "--region", "ap-shanghai"], io, { ...env, TENCENTCLOUD_SECRET_KEY: fakeTencentSecretKey() }), 3, "an auth failure is external");
    assert.match(err.join("\n"), /AuthFailure\.SignatureFailure/);
    noSecrets(err.join("\n"), "inspect errors");
  });

  it("rlpipe tione inspect shows a private Env as (private), never a value, and says to declare it a secret", async () => {
    fake.reset();
    const hidden = "hf_private_0123456789abcdef";
    const task = fake.seedTask({
      Name: "console-private-env", ChargeType: "PREPAID", ResourceGroupId: "rsg-console1", TrainingMode: "DDP",
      ResourceConfigInfos: [{ Role: "WORKER", InstanceNum: 1, Cpu: 8_000, Memory: 32_768, Gpu: 100, GpuType: "T4" }],
      StartCmdInfo: { StartCmd: "python train.py", PsStartCmd: "", WorkerStartCmd: "" },
      Envs: [{ Name: "HF_READ", Value: hidden, IsPrivate: true }, { Name: "NCCL_DEBUG", Value: "WARN", IsPrivate: false }],
      Tags: [],
    });
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
    assert.equal(await runTione(["inspect", task.id, "--region", "ap-shanghai"], io, env), 0, err.join("\n"));
    const text = out.join("\n");
    assert.ok(!text.includes(hidden));
    assert.deepEqual((parseYaml(text) as { targets: { tione: { envs: unknown } } }).targets.tione.envs, { HF_READ: PRIVATE_VALUE, NCCL_DEBUG: "WARN" });
    assert.match(text, /# HF_READ is private \(IsPrivate\): declare it under secrets:/);
    // Even a listing that did return a private value (the model allows one) never shows it.
    const r = inspectSnippet({ Id: "train-1", TrainingMode: "DDP" }, [], [{ Name: "HF_READ", Value: hidden, IsPrivate: true }, { Name: "PLAIN", Value: null }]);
    assert.deepEqual(r.tione["envs"], { HF_READ: "(private)", PLAIN: "" });
    assert.ok(!JSON.stringify(r).includes(hidden));
  });

  it("rlpipe tione --help names the workspace settings (TENCENTCLOUD_TIONE_PROJECT_ID, targets.tione.tiProjectId)", () => {
    const help = formatHelp("tione");
    assert.match(help, /TENCENTCLOUD_TIONE_PROJECT_ID/);
    assert.match(help, /targets\.tione\.tiProjectId/);
  });

  it("maps Tencent Cloud error codes to failure kinds; a refused connection is retryable, never ambiguous", async () => {
    const table: [string, string][] = [
      ["RequestLimitExceeded", "retryable"], ["RequestLimitExceeded.UinLimitExceeded", "retryable"], ["InternalError", "ambiguous"],
      ["ResourceNotFound", "not_found"], ["AuthFailure.SignatureFailure", "fatal"], ["InvalidParameterValue", "fatal"],
      ["MissingParameter", "fatal"], ["LimitExceeded", "fatal"], ["FailedOperation.QueryTaskFailed", "fatal"], ["UnknownParameter", "fatal"],
    ];
    assert.deepEqual(table.map(([c]) => [c, kindOfTioneCode(c)[0]]), table);
    assert.deepEqual(resolveTioneEndpoint({}, undefined), { display: "https://tione.tencentcloudapi.com", host: "tione.tencentcloudapi.com", protocol: "https://" });
    assert.equal(resolveTioneEndpoint({}, "tione.ap-shanghai.tencentcloudapi.com").host, "tione.ap-shanghai.tencentcloudapi.com");
    assert.deepEqual(resolveTioneEndpoint({ TIONE_ENDPOINT: "http://127.0.0.1:9" }, "https://elsewhere.example.com"), { display: "http://127.0.0.1:9", host: "tione.tencentcloudapi.com:9", protocol: "http://", loopback: { address: "127.0.0.1", family: 4 } });
    // The caller's own cancellation is not a failure that may have reached TI-ONE: it is reported as such.
    fake.reset();
    fake.inject("DescribeTrainingTasks", "timeout-after-create");
    const cancelling = adapter();
    try {
      const ac = new AbortController();
      const pending = cancelling.findExisting(p, ac.signal);
      setTimeout(() => ac.abort(), 50);
      await assert.rejects(pending, (e: unknown) => e instanceof ProviderError && e.code === "aborted" && e.kind === "fatal");
    } finally {
      await cancelling.close();
    }
    const closed = await freePort();
    const api = new TioneApi({ env: { ...env, TIONE_ENDPOINT: `http://127.0.0.1:${closed}` }, region: "ap-shanghai", timeoutMs: 5_000 });
    try {
      await assert.rejects(api.call("DescribeTrainingTasks", {}), (e: unknown) => e instanceof ProviderError && e.kind === "retryable" && e.code === "tione_unreachable");
    } finally {
      api.close();
    }
  });
});

// ------------------------------------------------------------------------------------------ lazy, narrow SDK import

describe("TI-ONE adapter loads only the SDK's common client, and only when it calls TI-ONE", () => {
  it("importing the adapter loads no SDK; a call loads common_client.js, not the package index", async () => {
    const fake = await TioneFake.start([{ secretId: SECRET_ID, secretKey: SECRET_KEY }]);
    try {
      const script = `
        import { createRequire } from "node:module";
        const require = createRequire(import.meta.url);
        const sdk = () => Object.keys(require.cache).filter((k) => k.includes("/tencentcloud-sdk-nodejs")).map((k) => k.slice(k.lastIndexOf("/tencentcloud-sdk-nodejs") + 1));
        const { TioneApi } = await import(${JSON.stringify(join(ROOT, "dist", "adapters", "providers", "tione.js"))});
        const before = sdk();
        const api = new TioneApi({ env: { TENCENTCLOUD_SECRET_ID: ${JSON.stringify(SECRET_ID)}, TENCENTCLOUD_SECRET_KEY: ${JSON.stringify(SECRET_KEY)}, TIONE_ENDPOINT: ${JSON.stringify(fake.endpoint)} }, region: "ap-shanghai" });
        await api.call("DescribeTrainingTasks", { Limit: 1 });
        const after = sdk();
        api.close();
        console.log(JSON.stringify({ before, after }));`;
      // Asynchronously: the fake answers from this process's event loop.
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
        child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
        const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
        child.on("close", (status) => { clearTimeout(timer); resolve({ status, stdout, stderr }); });
      });
      assert.equal(r.status, 0, r.stderr);
      const { before, after } = JSON.parse(r.stdout) as { before: string[]; after: string[] };
      assert.deepEqual(before, []);
      assert.ok(after.includes("tencentcloud-sdk-nodejs-common/tencentcloud/common/common_client.js"), after.join(", "));
      const own = after.filter((k) => !k.includes("/node_modules/")); // the package's own dependencies (tslib) aside
      assert.ok(own.every((k) => k.startsWith("tencentcloud-sdk-nodejs-common/tencentcloud/common/")), `only the common client's modules: ${own.join(", ")}`);
      assert.ok(!after.includes("tencentcloud-sdk-nodejs-common/tencentcloud/index.js"), "the package index is not loaded");
    } finally {
      await fake.stop();
    }
  });
});

describe("TI-ONE: a seed recipe's checkpoints and metrics reach COS by default (the task really runs launch.sh)", () => {
  let moto: Moto;
  let fake: TioneFake;
  let runner: JobRunner;
  let dir: string;
  const stores: S3Store[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-tione-run-"));
    moto = await startMoto();
    const admin = new S3Store({ scheme: "cos", bucket: BUCKET, prefix: "", region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    stores.push(admin);
    writeVerlStub(join(dir, "stub"));
    // The task's container: TI-ONE's mounts under a temporary root, python3 with the verl stub, COS on loopback
    // (the region's endpoint as the task would see it); the credentials come only from the task's Envs.
    runner = new JobRunner({
      storeEndpoint: moto.endpoint, storeCredentials: TEST_CREDENTIALS, root: join(dir, "container"), platformPrefixes: ["/opt/ml", "/home/tione"],
      env: stubContainerEnv(dir, { COS_ENDPOINT: moto.endpoint }),
    });
    fake = await TioneFake.start([{ secretId: SECRET_ID, secretKey: SECRET_KEY }], runner);
  });
  after(async () => {
    await fake.stop();
    await runner.close();
    for (const s of stores) await s.close();
    await moto.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("deploy → the start command runs launch.sh, verl writes global_step_2 and _4 → rlpipe checkpoints lists both, restore verifies, metrics has every step", async () => {
    const work = join(dir, "work");
    mkdirSync(work); // the start command's working directory is on the task's (CFS) storage, which exists
    const text = edit(runnableSeed(recipeText(SEED), "tione", work), [[["targets", "tione", "runtimeEnv", "workingDir"], work]]);
    const p = planOf(text);
    assert.equal(p.storage?.mechanism, "sidecar-store");
    assert.equal(p.storage?.defaulted, true, "the recipe sets no checkpoints.storage");
    const store = `cos://${BUCKET}/retool-qwen3-4b/runs`;
    assert.equal(p.storage?.uri, store);
    const sink = (uri: string): BundleSink => {
      const u = parseStoreUri(uri);
      const s = new S3Store({ scheme: "cos", bucket: u.bucket, prefix: u.prefix, region: "ap-shanghai", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
      stores.push(s);
      return s;
    };
    const env = {
      TENCENTCLOUD_SECRET_ID: SECRET_ID, TENCENTCLOUD_SECRET_KEY: SECRET_KEY, TIONE_ENDPOINT: fake.endpoint, HOME: dir,
      COS_SECRET_ID: TEST_CREDENTIALS.accessKeyId, COS_SECRET_KEY: TEST_CREDENTIALS.secretAccessKey,
    };
    const a = createTioneAdapter({ env, recipe: parseRecipe(text, "r.yaml").recipe, cwd: dir, bundleSink: sink }, { timeoutMs: 5000 });
    try {
      const { ref } = await deploy(a, p, { sleep: async () => undefined });
      let status = await a.status(ref);
      for (let i = 0; i < 600 && !["SUCCEEDED", "FAILED", "STOPPED"].includes(status.phase); i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = await a.status(ref);
      }
      const task = fake.tasksNamed(p.jobName)[0]!;
      assert.equal(status.phase, "SUCCEEDED", `the task ended ${status.phase}:\n${task.run?.output ?? task.runError}`);
      assert.match(task.run!.output, /stage rl: complete/);
      const ckptDir = join(work, "checkpoints", "e2b_code_retool", "qwen3-4b_dapo");
      await assertRunInStore({
        run: `${p.jobName}.rl`, store, ckptDir, steps: [2, 4], metricSteps: 4, restoreInto: join(dir, "restore"),
        env: { COS_ENDPOINT: moto.endpoint, COS_REGION: "ap-shanghai", COS_SECRET_ID: TEST_CREDENTIALS.accessKeyId, COS_SECRET_KEY: TEST_CREDENTIALS.secretAccessKey },
      });
    } finally {
      await a.close();
    }
  });
});
