// Plan-level behaviour beyond the seeds: optional fields, provider defaults, determinism, sandbox wiring.
import { SECRET_ENV_PLACEHOLDER } from "../core/providers/tione-request.js";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseDocument } from "yaml";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { PLACEHOLDER_CODE, placeholderReason } from "../core/recipe/placeholders.js";
import { RecipeError, formatPath } from "../core/errors.js";
import { bundledAssets, planRecipeFile } from "../bin/commands/plan.js";
import { runDeploy } from "../bin/commands/runs.js";
import { runValidate } from "../bin/commands/validate.js";
import { reportError } from "../bin/io.js";
import { FIXTURES, RECIPES, planSeed, recipeText, editYaml as edit } from "./helpers.js";

const sink = () => readFileSync(join(FIXTURES, "recipes", "kitchen-sink.yaml"), "utf8");
const planOf = (text: string, provider: Parameters<typeof plan>[1] extends infer O ? O extends { provider?: infer P } ? P : never : never = "local") =>
  plan(parseRecipe(text, "t.yaml"), { provider, localWorkDir: "/tmp/w", assets: bundledAssets() });


describe("plan: optional recipe fields", () => {
  const p = planOf(sink());
  const words = (id: string) => p.stages.find((s) => s.id === id)!.argv;

  it("checkpoints.dir, saveEvery and keep.last render into verl's keys", () => {
    assert.ok(words("rl").includes("trainer.default_local_dir=/job/ckpt/rl"));
    assert.ok(words("rl").includes("trainer.save_freq=10"));
    assert.ok(words("rl").includes("trainer.max_actor_ckpt_to_keep=3"));
    assert.ok(words("sft").includes("trainer.max_ckpt_to_keep=3"));
    assert.ok(words("sft").includes("model.strategy=fsdp2"));
  });

  it("a merge of an RL checkpoint reads global_step_N/actor", () => {
    assert.deepEqual(words("merge").slice(-4), ["--local_dir", "/job/ckpt/rl/global_step_10/actor", "--target_dir", "/job/ckpt/rl/global_step_10/huggingface"]);
  });

  it("an eval stage is a validation-only main_ppo run on the merged model", () => {
    const w = words("eval");
    for (const x of ["trainer.val_only=True", "trainer.val_before_train=True", "actor_rollout_ref.model.path=/job/ckpt/rl/global_step_10/huggingface",
      "data.val_files=[data/val_a.parquet,data/val_b.parquet]", "actor_rollout_ref.rollout.multi_turn.tool_config_path=tool_config/eval_tools.yaml"]) assert.ok(w.includes(x), x);
    assert.ok(!w.some((x) => x.startsWith("trainer.resume_mode")));
  });

  it("raw overrides replace a rendered key in place (with a warning) and keep + and ~", () => {
    const w = words("rl");
    assert.equal(w.filter((x) => x.startsWith("actor_rollout_ref.rollout.agent.num_workers=")).length, 1);
    assert.ok(w.includes("actor_rollout_ref.rollout.agent.num_workers=2"));
    assert.ok(w.includes("~trainer.esi_redundant_time"));
    assert.ok(words("sft").includes("+trainer.rlpipe_note=hello"));
    assert.ok(p.warnings.some((x) => x.code === "override_replaces"));
  });

  it("reward kwargs render with + and list values in Hydra syntax; ${sandbox.url} is the external URL", () => {
    assert.ok(words("rl").includes("+custom_reward_function.reward_kwargs.url=http://sandbox.internal:8080/v1/rewards"));
    assert.ok(words("rl").includes("+custom_reward_function.reward_kwargs.languages=[python,cpp]"));
  });

  it("an external sandbox is health-checked, not started", () => {
    const launch = p.files.find((f) => f.path === "launch.sh")!.content;
    // rlpipe's own function: the public GET /v1/ping (no body) must answer "pong"
    assert.match(launch, /rlpipe_wait_healthy http:\/\/sandbox\.internal:8080\/v1\/ping '' pong /);
    assert.doesNotMatch(launch, /^rlpipe_start_sandbox$/m);
  });

  it("a colocated rlpipe sandbox without a server block runs rlpipe serve on loopback", () => {
    const q = planOf(edit(sink(), [[["sandbox"], { kind: "rlpipe", deploy: "colocated" }]]));
    const launch = q.files.find((f) => f.path === "launch.sh")!.content;
    assert.match(launch, /exec rlpipe serve --sandbox local --host 127\.0\.0\.1 --port 8080/);
    assert.match(q.files.find((f) => f.path === "tool_config/rl_tools.yaml")!.content, /class_name: rlpipe_tool\.RlpipeCodeTool\n[^]*sandbox_url: http:\/\/127\.0\.0\.1:8080\/run_code\n/);
  });

  it("one loopback address: a co-located sandbox's localhost is rendered as 127.0.0.1 everywhere its checks look (localhost may be ::1)", () => {
    for (const sandbox of [
      { kind: "rlpipe", deploy: "colocated", url: "http://localhost:8080" },
      { kind: "rlpipe", deploy: "colocated", url: "http://[::1]:8080" },
      { kind: "rlpipe", deploy: "colocated" },
      { kind: "sandbox-fusion", deploy: "colocated", url: "http://LOCALHOST:8080/", server: { dir: "/sf", port: 8080, host: "127.0.0.1", start: "make run-online" } },
    ]) {
      const q = planOf(edit(sink(), [[["sandbox"], sandbox]]));
      for (const f of q.files) assert.doesNotMatch(f.content, /localhost|\[::1\]/i, `${JSON.stringify(sandbox)}: ${f.path} names another address than the checks use`);
      const launch = q.files.find((f) => f.path === "launch.sh")!.content;
      // rlpipe's own function is checked at $RLPIPE_REWARD_URL, which launch.sh sets to 127.0.0.1 too.
      assert.match(launch, sandbox.kind === "rlpipe" ? /RLPIPE_REWARD_URL="http:\/\/127\.0\.0\.1:[^]*rlpipe_wait_healthy "\$RLPIPE_REWARD_URL/ : /rlpipe_wait_healthy '?http:\/\/127\.0\.0\.1:8080\/run_code/, JSON.stringify(sandbox));
      assert.match(q.files.find((f) => f.path === "tool_config/rl_tools.yaml")!.content, /_url: http:\/\/127\.0\.0\.1:8080\/run_code\n/, JSON.stringify(sandbox));
    }
    // A server the recipe starts may be asked for [::1]: then its checks look there too.
    const v6 = planOf(edit(sink(), [[["sandbox"], { kind: "sandbox-fusion", deploy: "colocated", url: "http://[::1]:8080", server: { dir: "/sf", port: 8080, host: "::1", start: "make run-online" } }]]));
    const launch6 = v6.files.find((f) => f.path === "launch.sh")!.content;
    assert.match(launch6, /http:\/\/\[::1\]:8080\/run_code/);
    assert.doesNotMatch(launch6, /127\.0\.0\.1:8080/);
  });

  it("checkpoints.storage picks the persistence mechanism per provider", () => {
    const withStorage = (extra: Record<string, unknown>) => edit(sink(), [[["checkpoints"], { dir: "${workDir}/ckpt", keep: { last: 3, every: 50 }, storage: "s3://bucket/runs", ...extra }]]);
    const direct = plan(parseRecipe(withStorage({}), "t.yaml"), { provider: "ray", assets: bundledAssets() });
    assert.equal(direct.storage?.mechanism, "sidecar-direct");
    assert.deepEqual(direct.storage?.stages.map((s) => [s.stage, s.dir, s.metrics ?? null]), [["sft", "/job/ckpt/sft", null], ["rl", "/job/ckpt/rl", "/job/.rlpipe/metrics/rl.jsonl"]]);
    const launch = direct.files.find((f) => f.path === "launch.sh")!.content;
    assert.match(launch, /rlpipe sync "\$RLPIPE_RUN\.rl" --watch \/job\/ckpt\/rl --metrics \/job\/\.rlpipe\/metrics\/rl\.jsonl --store s3:\/\/bucket\/runs --interval-s 30 --keep-last 3 --keep-every 50/);
    assert.ok(direct.stages.find((s) => s.id === "rl")!.environment.some(([k, v]) => k === "VERL_FILE_LOGGER_PATH" && v === "/job/.rlpipe/metrics/rl.jsonl"));
    const fn = plan(parseRecipe(withStorage({ functionUrl: "https://fn.example.com" }), "t.yaml"), { provider: "slurm", assets: bundledAssets() });
    assert.equal(fn.storage?.mechanism, "sidecar-function");
    assert.ok(fn.files.some((f) => f.path === ".rlpipe/rlpipe_sync.py"));
    assert.ok(fn.secrets.some((s) => s.env === "RLPIPE_RUN_TOKEN" && s.required));
    assert.match(fn.files.find((f) => f.path === "launch.sh")!.content, /python3 \.rlpipe\/rlpipe_sync\.py --url https:\/\/fn\.example\.com --run "\$RLPIPE_RUN\.rl"/);
    // ModelArts: the sidecar lays the store's layout out in a directory one output channel uploads (no credentials).
    const ma = plan(parseRecipe(withStorage({ storage: "obs://ckpt-bucket/runs" }), "t.yaml"), { provider: "modelarts", assets: bundledAssets() });
    assert.equal(ma.storage?.mechanism, "modelarts-output");
    assert.deepEqual(ma.storage?.modelartsOutputs?.map((o) => [o.name, o.localDir, o.obsUrl]), [["rlpipe-store", "/job/.rlpipe/store", "obs://ckpt-bucket/runs/"]]);
    const maLaunch = ma.files.find((f) => f.path === "launch.sh")!.content;
    assert.match(maLaunch, /python3 \.rlpipe\/rlpipe_sync\.py --store file:\/\/\/job\/\.rlpipe\/store --settle-s 90 --run "\$RLPIPE_RUN\.rl" --dir \/job\/ckpt\/rl --metrics \/job\/\.rlpipe\/metrics\/rl\.jsonl/);
    assert.doesNotMatch(maLaunch, /rlpipe sync /);
    assert.equal((ma.request!.body as { algorithm: { environments: Record<string, string> } }).algorithm.environments["RLPIPE_RUN"], ma.jobName, "the store names the run after the job");
    assert.deepEqual(ma.secrets.map((x) => x.env).filter((e) => /OBS|HUAWEI/.test(e)), [], "the job holds no OBS credential");
    assert.throws(() => plan(parseRecipe(withStorage({}), "t.yaml"), { provider: "modelarts", assets: bundledAssets() }), /must be an obs:\/\/ URI for provider modelarts/);
    // TI-ONE: straight to the store, with its credentials passed as task variables (secrets, never in the request).
    const ti = plan(parseRecipe(withStorage({ storage: "cos://ckpt-1251234567/runs" }), "t.yaml"), { provider: "tione", assets: bundledAssets() });
    assert.equal(ti.storage?.mechanism, "sidecar-store");
    assert.deepEqual(ti.secrets.filter((x) => x.env.startsWith("COS_")).map((x) => [x.env, x.required]), [["COS_SECRET_ID", true], ["COS_SECRET_KEY", true], ["COS_SESSION_TOKEN", false]]);
    assert.match(ti.files.find((f) => f.path === "launch.sh")!.content, /python3 \.rlpipe\/rlpipe_sync\.py --store cos:\/\/ckpt-1251234567\/runs --run "\$RLPIPE_RUN\.rl" --dir \/job\/ckpt\/rl/);
    assert.match(ti.files.find((f) => f.path === "launch.sh")!.content, /rlpipe_require_secret COS_SECRET_KEY/);
    // Named in the request as private Envs with a placeholder: the value comes from the deploying shell at deploy.
    const envs = (ti.request!.body as { Envs: { Name: string; Value: string; IsPrivate?: boolean }[] }).Envs.filter((e) => e.Name.startsWith("COS_"));
    assert.ok(envs.length > 0 && envs.every((e) => e.IsPrivate === true && e.Value === SECRET_ENV_PLACEHOLDER), JSON.stringify(envs));
  });
});

describe("plan: providers and determinism", () => {
  it("each provider has its working directory convention", () => {
    assert.equal(planSeed("qwen3-1.7b-code-toolcall", "modelarts").workDir, "/home/ma-user/modelarts/user-job-dir/qwen3-1.7b-code-toolcall");
    const noWorkDir = edit(sink(), [[["runtime", "workDir"], undefined]]);
    assert.equal(planOf(noWorkDir, "tione").workDir, "/home/tione/notebook/kitchen-sink");
    assert.equal(planSeed("retool-qwen2.5-32b-h200", "tione").workDir, "/root/verl", "runtime.workDir wins over the provider default");
    assert.equal(planSeed("qwen3-1.7b-code-toolcall", "docker").workDir, "/workspace/qwen3-1.7b-code-toolcall");
    assert.equal(planSeed("qwen3-1.7b-code-toolcall", "local").workDir, "/tmp/rlpipe-test-work");
  });

  it("ModelArts paths: the tool config lands under /home/ma-user/modelarts/…", () => {
    const p = planSeed("qwen3-1.7b-code-toolcall", "modelarts");
    const rl = p.stages.find((s) => s.type === "rl")!;
    assert.ok(rl.argv.includes("actor_rollout_ref.rollout.multi_turn.tool_config_path=/home/ma-user/modelarts/user-job-dir/qwen3-1.7b-code-toolcall/tool_config/scalebox_tool_config.yaml"));
  });

  it("the same recipe plans to identical bytes; a changed recipe changes the job name", () => {
    const a = planSeed("retool-qwen3-4b-ascend", "docker");
    const b = planSeed("retool-qwen3-4b-ascend", "docker");
    assert.deepEqual(a.files, b.files);
    assert.equal(a.jobName, b.jobName);
    const changed = plan(parseRecipe(edit(recipeText("retool-qwen3-4b-ascend"), [[["stages", 2, "rollout", "n"], 8]]), "x.yaml"), { provider: "docker", assets: bundledAssets() });
    assert.notEqual(changed.jobName, a.jobName);
    assert.match(a.jobName, /^retool-qwen3-4b-ascend-[0-9a-f]{8}$/);
  });

  it("key order in the YAML does not change the plan", () => {
    const text = recipeText("retool-qwen3-4b-tione-ags");
    const doc = parseDocument(text);
    const resources = doc.get("resources");
    doc.delete("resources");
    doc.set("resources", resources);
    const a = planSeed("retool-qwen3-4b-tione-ags", "tione");
    const b = plan(parseRecipe(doc.toString(), "x.yaml"), { provider: "tione", assets: bundledAssets() });
    assert.deepEqual(b.files, a.files);
  });

  it("tione refuses an Ascend recipe; ray without a workDir asks for one", () => {
    assert.throws(() => planSeed("retool-qwen3-4b-ascend", "tione"), /provider tione offers NVIDIA GPUs/);
    assert.throws(() => planSeed("qwen3-1.7b-code-toolcall", "ray"), /provider ray has no default working directory/);
  });
});

describe("plan: placeholder values (template fields left for the user)", () => {
  it("recognizes placeholder shapes, and leaves real values alone", () => {
    for (const [v, key] of [
      ["rsg-xxxxxxxx", "resourceGroupId"], ["cfs-XXXX:/", "cfs"], ["obs://<bucket>/runs", "codeDir"], ["<flavor_id>", "flavor"],
      ["CHANGE_ME", "image"], ["TODO", "region"], ["change-me", "x"], ["your-project-id", "projectId"], ["obs://your_bucket/x", "codeDir"],
      ["https://sandbox.example.com", "url"], ["http://api.example.org:8080/v1", "functionUrl"], ["cos://ckpt-1250000000/runs", "storage"],
      ["100000000000", "accountId"], ["000000000000", "projectId"],
    ] as const) assert.notEqual(placeholderReason(v, key), undefined, `${key}: ${v}`);
    for (const [v, key] of [
      ["rsg-7k2p9q4m", "resourceGroupId"], ["cfs-3fa9e2c1:/team", "cfs"], ["cos://ckpt-1251234567/runs", "storage"], ["obs://rlpipe-runs/code", "codeDir"],
      ["modelarts.bm.npu.arm.8snt9b2.d", "flavor"], ["http://127.0.0.1:8080", "url"], ["128C1000G GPU-HCCPNV6*4", "spec"], ["16000000", "NCCL_BUFFSIZE"],
      ["verl0.6.1-vllm0.11.0-torch2.8-py312-cuda12.8-gpu", "builtin"], ["/usr/local/cuda/compat:$LD_LIBRARY_PATH", "LD_LIBRARY_PATH"], ["xformers", "x"],
    ] as const) assert.equal(placeholderReason(v, key), undefined, `${key}: ${v}`);
  });

  it("plan warns with the field's path and line; only the planned target's fields count; prose is not a setting", () => {
    const p = planSeed("retool-qwen3-4b-tione-ags", "tione");
    const found = p.warnings.filter((w) => w.code === PLACEHOLDER_CODE).map((w) => [formatPath(w.path), w.line]);
    assert.deepEqual(found, [["targets.tione.resourceGroupId", 127], ["targets.tione.storage.cfs", 132], ["targets.tione.codeDir", 133]]);
    const other = edit(sink(), [[["targets", "tione"], { region: "ap-shanghai", resourceGroupId: "rsg-xxxxxxxx" }], [["metadata", "description"], "TODO: describe <this>"]]);
    assert.deepEqual(planOf(other).warnings.filter((w) => w.code === PLACEHOLDER_CODE), [], "a local plan ignores targets.tione and descriptions");
    assert.deepEqual(planOf(edit(sink(), [[["runtime", "env", "BUCKET"], "<your-bucket>"]])).warnings.filter((w) => w.code === PLACEHOLDER_CODE).map((w) => formatPath(w.path)), ["runtime.env.BUCKET"]);
    for (const [name, provider] of [["qwen3-1.7b-code-toolcall", "modelarts"], ["retool-qwen3-4b-ascend", "docker"], ["retool-qwen2.5-32b-h200", "ray"], ["local-demo", "local"]] as const) {
      assert.deepEqual(planRecipeFile(join(RECIPES, `${name}.yaml`), { provider }).plan.warnings.filter((w) => w.code === PLACEHOLDER_CODE), [], `${name} has no placeholder`);
    }
  });

  it("deploy refuses them (exit 2, each field named with file:line:col) before any credential or network is needed; --dry-run shows them", async () => {
    const file = join(RECIPES, "retool-qwen3-4b-tione-ags.yaml");
    const err: string[] = [];
    const io = { out: () => undefined, err: (t: string) => { err.push(t); } };
    await assert.rejects(runDeploy([file, "--provider", "tione", "--yes"], io), (e: unknown) => {
      assert.ok(e instanceof RecipeError);
      assert.equal(e.exitCode, 2);
      assert.equal(reportError(io, e), 2);
      return true;
    });
    const text = err.join("\n");
    for (const [line, field] of [[127, "targets.tione.resourceGroupId"], [132, "targets.tione.storage.cfs"], [133, "targets.tione.codeDir"]] as const) {
      assert.match(text, new RegExp(`retool-qwen3-4b-tione-ags\\.yaml:${line}:\\d+: ${field.replace(/\./g, "\\.")}: .*looks like a placeholder.*refusing to deploy it`));
    }
  });

  it("deploy --dry-run shows the request and reports the refusal with the deploy's exit code (2); --json carries both", async () => {
    const file = join(RECIPES, "retool-qwen3-4b-tione-ags.yaml");
    const out: string[] = [];
    const err: string[] = [];
    assert.equal(await runDeploy([file, "--provider", "tione", "--dry-run"], { out: (t) => { out.push(t); }, err: (t) => { err.push(t); } }), 2);
    assert.match(out.join("\n"), /targets\.tione\.resourceGroupId.*looks like a placeholder/);
    assert.match(out.join("\n"), /\n  request    tione:CreateTrainingTask\n/, "the request is still shown");
    assert.match(out.join("\n"), /dry run: nothing was created; the deploy would refuse it \(exit 2\)$/);
    assert.match(err.join("\n"), /retool-qwen3-4b-tione-ags\.yaml:127:\d+: targets\.tione\.resourceGroupId: .*refusing to deploy it/);
    assert.match(err.join("\n"), /rlpipe deploy: a deploy would refuse: 3 placeholder values left in \S+retool-qwen3-4b-tione-ags\.yaml$/);
    const json: string[] = [];
    assert.equal(await runDeploy([file, "--provider", "tione", "--dry-run", "--json"], { out: (t) => { json.push(t); }, err: () => undefined }), 2);
    const doc = JSON.parse(json.join("\n")) as { request: { api: string }; error: { code: string; exitCode: number; issues: { path: string; line: number }[] } };
    assert.match(doc.request.api, /CreateTrainingTask/);
    assert.deepEqual([doc.error.code, doc.error.exitCode], [PLACEHOLDER_CODE, 2]);
    assert.deepEqual(doc.error.issues.map((i) => `${i.path}:${i.line}`), ["targets.tione.resourceGroupId:127", "targets.tione.storage.cfs:132", "targets.tione.codeDir:133"]);
  });

  it("validate warns about them (exit 0); validate --strict fails on them (exit 2) with the deploy's errors, for CI", async () => {
    const file = join(RECIPES, "retool-qwen3-4b-tione-ags.yaml");
    const run = (args: string[]) => { const out: string[] = []; const err: string[] = []; const code = runValidate(args, { out: (t) => { out.push(t); }, err: (t) => { err.push(t); } }); return { code, out: out.join("\n"), err: err.join("\n") }; };
    assert.equal(run([file]).code, 0);
    const strict = run([file, "--strict"]);
    assert.equal(strict.code, 2);
    assert.match(strict.err, /^invalid \S+retool-qwen3-4b-tione-ags\.yaml\n {2}\S+:127:22: targets\.tione\.resourceGroupId: .*refusing to deploy it/);
    assert.match(strict.out, /warning: targets\.tione\.secretsAsEnvs/, "other warnings stay warnings");
    const j = run([file, "--strict", "--json"]);
    const [r] = JSON.parse(j.out) as { ok: boolean; issues: { severity: string; code: string; path: string[] }[] }[];
    assert.equal(r!.ok, false);
    assert.deepEqual(r!.issues.filter((i) => i.severity === "error").map((i) => `${i.code} ${formatPath(i.path)}`), ["placeholder_value targets.tione.resourceGroupId", "placeholder_value targets.tione.storage.cfs", "placeholder_value targets.tione.codeDir", "sandbox_capacity sandbox", "sandbox_concurrency sandbox"]);
    assert.ok(r!.issues.some((i) => i.severity === "warning" && i.code !== PLACEHOLDER_CODE));
    // A recipe without placeholders passes --strict.
    assert.equal(run([join(RECIPES, "retool-qwen2.5-32b-h200.yaml"), "--strict"]).code, 0);
  });
});
