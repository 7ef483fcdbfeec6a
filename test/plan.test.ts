// Plan-level behaviour beyond the seeds: optional fields, provider defaults, determinism, sandbox wiring.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parseDocument } from "yaml";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { FIXTURES, planSeed, recipeText, editYaml as edit } from "./helpers.js";

const sink = () => readFileSync(join(FIXTURES, "recipes", "kitchen-sink.yaml"), "utf8");
const planOf = (text: string, provider: Parameters<typeof plan>[1] extends infer O ? O extends { provider?: infer P } ? P : never : never = "local") =>
  plan(parseRecipe(text, "t.yaml"), { provider, localWorkDir: "/tmp/w" });


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
    assert.match(q.files.find((f) => f.path === "tool_config/rl_tools.yaml")!.content, /sandbox_fusion_url: http:\/\/localhost:8080\/run_code/);
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
    const ma = plan(parseRecipe(withStorage({ storage: "obs://ckpt-bucket/runs" }), "t.yaml"), { provider: "modelarts", assets: bundledAssets() });
    assert.equal(ma.storage?.mechanism, "modelarts-output");
    assert.deepEqual(ma.storage?.modelartsOutputs?.map((o) => [o.localDir, o.obsUrl.replace(/-[0-9a-f]{8}\./, "-H.")]), [["/job/ckpt/sft", "obs://ckpt-bucket/runs/kitchen-sink-H.sft/"], ["/job/ckpt/rl", "obs://ckpt-bucket/runs/kitchen-sink-H.rl/"]]);
    assert.doesNotMatch(ma.files.find((f) => f.path === "launch.sh")!.content, /rlpipe sync|rlpipe_sync/);
    assert.throws(() => plan(parseRecipe(withStorage({}), "t.yaml"), { provider: "modelarts", assets: bundledAssets() }), /must be an obs:\/\/ URI for provider modelarts/);
    assert.equal(plan(parseRecipe(withStorage({}), "t.yaml"), { provider: "tione", assets: bundledAssets() }).storage?.mechanism, "tione-mount");
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
    const changed = plan(parseRecipe(edit(recipeText("retool-qwen3-4b-ascend"), [[["stages", 2, "rollout", "n"], 8]]), "x.yaml"), { provider: "docker" });
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
    const b = plan(parseRecipe(doc.toString(), "x.yaml"), { provider: "tione" });
    assert.deepEqual(b.files, a.files);
  });

  it("tione refuses an Ascend recipe; ray without a workDir asks for one", () => {
    assert.throws(() => planSeed("retool-qwen3-4b-ascend", "tione"), /provider tione offers NVIDIA GPUs/);
    assert.throws(() => planSeed("qwen3-1.7b-code-toolcall", "ray"), /provider ray has no default working directory/);
  });
});
