// Golden tests: each seed recipe renders to the arguments of its published script, compared as sets of
// key=value (values parsed, so 'True'/true and ['a']/["a"] agree; relative paths resolved against the
// working directory, where the script runs). Where rlpipe deliberately differs, the deviation is listed
// below with the reason, and the test checks rlpipe's value instead.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { describe, it } from "node:test";
import { parse } from "yaml";
import type { Plan, PlannedStage } from "../core/plan.js";
import { parseValue, splitOverride } from "../core/render/hydra.js";
import { FIXTURES, SEED_PROVIDER, planSeed } from "./helpers.js";

interface Fixture {
  recipe: string;
  sft?: { argv: string[]; env: Record<string, string> };
  rl?: { argv: string[]; env: Record<string, string> };
  merge?: { argv: string[] };
  docker?: { argv: string[] };
}

interface Deviation {
  /** Hydra key (without +), or a torchrun flag. */
  readonly key: string;
  /** The value rlpipe renders, as an override word's value; undefined when rlpipe drops the key. */
  readonly rlpipe: string | undefined;
  readonly why: string;
}

const RESUME: Deviation = {
  key: "trainer.resume_mode", rlpipe: "auto",
  why: "launch.sh reruns after a failure or a platform retry; resume_mode=auto (verl's default, stated explicitly) continues from the newest checkpoint",
};

const PATH_KEYS = new Set([
  "data.train_files", "data.val_files", "actor_rollout_ref.model.path", "model.partial_pretrain", "model.path",
  "trainer.default_local_dir", "data.tool_config_path", "actor_rollout_ref.rollout.multi_turn.tool_config_path",
  "data.custom_cls.path", "custom_reward_function.path",
]);

/** The run length the seed published (recipes set it as schedule.totalTrainingSteps; the scripts run whole epochs). */
const PUBLISHED_LENGTH = (steps: number, why: string): Deviation => ({ key: "trainer.total_training_steps", rlpipe: String(steps), why });

function fixture(name: string): Fixture {
  return JSON.parse(readFileSync(join(FIXTURES, "seeds", `${name}.json`), "utf8")) as Fixture;
}

/** key=value words → canonical set entries, with ${PWD} bound to the plan's working directory. */
function canonical(words: readonly string[], workDir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const w of words) {
    const { key, value } = splitOverride(w.replaceAll("${PWD}", workDir));
    const bare = key.replace(/^\+{1,2}/, "");
    let v = parseValue(value);
    if (PATH_KEYS.has(bare)) {
      const abs = (p: unknown) => (typeof p === "string" && !p.startsWith("/") ? posix.join(workDir, p) : p);
      v = Array.isArray(v) ? (v.map(abs) as typeof v) : (abs(v) as typeof v);
    }
    assert.ok(!out.has(bare), `duplicate key ${bare}`);
    out.set(bare, `${key.startsWith("+") ? "+" : ""}${JSON.stringify(v)}`);
  }
  return out;
}

/** Words after the program (and `-m module`): Hydra overrides for verl entry points. */
function hydraWords(argv: readonly string[]): string[] {
  const m = argv.indexOf("-m");
  return argv.slice(m + 2);
}

/**
 * The one standing deviation from every seed: the published scripts and tool configs reach the co-located sandbox at
 * `localhost`, which resolves to ::1 first on Debian and in Docker while the sandbox listens on 127.0.0.1 (and
 * launch.sh checks there); rlpipe renders the literal 127.0.0.1 instead (issue 34), so the calls go where the checks
 * looked.
 */
const oneLoopback = (text: string): string => text.replace(/:\/\/localhost(?=[:/])/g, "://127.0.0.1");

function expectSameOverrides(actualArgv: readonly string[], scriptArgv: readonly string[], workDir: string, deviations: readonly Deviation[]): void {
  const actual = canonical(hydraWords(actualArgv), workDir);
  const expected = canonical(hydraWords(scriptArgv.map(oneLoopback)), workDir);
  for (const d of deviations) {
    const key = d.key.replace(/^\+/, ""); // canonical() keys drop Hydra's append marker
    expected.delete(key);
    if (d.rlpipe !== undefined) expected.set(key, canonical([`${d.key}=${d.rlpipe}`], workDir).get(key)!);
  }
  const show = (m: Map<string, string>) => [...m.entries()].map(([k, v]) => `${k}=${v}`).sort();
  assert.deepEqual(show(actual), show(expected));
}

function stage(plan: Plan, type: PlannedStage["type"]): PlannedStage {
  const s = plan.stages.find((x) => x.type === type);
  assert.ok(s !== undefined, `plan has no ${type} stage`);
  return s;
}

/** The environment a stage sees, with ${X:-default} taken at its default (nothing set beforehand). */
function effectiveEnv(s: PlannedStage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of s.environment) {
    env[k] = v.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}/g, (_, n: string, d: string) => env[n] ?? d)
      .replace(/\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?/g, (_, n: string) => env[n] ?? "");
  }
  return env;
}

function launcherFlags(argv: readonly string[]): string[] {
  return argv.slice(1, argv.indexOf("-m")).sort();
}

describe("golden: qwen3-1.7b-code-toolcall (seeds 000/001, run_toolcall_sft_demo.sh + run_code_rl_demo.sh)", () => {
  const fx = fixture("qwen3-1.7b-code-toolcall");
  const plan = planSeed("qwen3-1.7b-code-toolcall", "docker");

  it("SFT renders the script's torchrun launcher and overrides", () => {
    const s = stage(plan, "sft");
    assert.deepEqual(launcherFlags(s.argv), launcherFlags(fx.sft!.argv));
    assert.equal(s.argv[s.argv.indexOf("-m") + 1], "verl.trainer.fsdp_sft_trainer");
    expectSameOverrides(s.argv, fx.sft!.argv, plan.workDir, [RESUME]);
  });

  it("SFT exports the script's Ascend/HCCL environment", () => {
    assert.deepEqual(effectiveEnv(stage(plan, "sft")), fx.sft!.env);
  });

  it("merge is the README's model_merger command for global_step_50", () => {
    assert.deepEqual(stage(plan, "merge").argv, fx.merge!.argv);
  });

  it("RL renders every argument of run_code_rl_demo.sh", () => {
    expectSameOverrides(stage(plan, "rl").argv, fx.rl!.argv, plan.workDir, [RESUME, PUBLISHED_LENGTH(240, "LiveCodeBench is reported at steps 20–240 (seed 001)")]);
    assert.ok(stage(plan, "rl").argv.includes("trainer.total_training_steps=240"));
  });

  it("RL exports the script's environment", () => {
    assert.deepEqual(effectiveEnv(stage(plan, "rl")), fx.rl!.env);
  });

  it("the ScaleBox tool config equals the published scalebox_tool_config.yaml", () => {
    const file = plan.files.find((f) => f.path === "tool_config/scalebox_tool_config.yaml");
    assert.ok(file !== undefined);
    assert.deepEqual(parse(file.content), parse(oneLoopback(readFileSync(join(FIXTURES, "seeds", "scalebox_tool_config.yaml"), "utf8"))));
  });

  it("docker run has the seed's devices, driver mounts, shm size and flags", () => {
    const ours = plan.docker!.argv;
    const seed = fx.docker!.argv;
    const pick = (argv: readonly string[]) => {
      const flags: string[] = [];
      for (let i = 0; i < argv.length; i++) {
        const a = argv[i]!;
        if (a === "-v" || a === "--device" || a === "--user" || a === "--network" || a === "--shm-size") flags.push(`${a}=${argv[++i]}`);
        else if (a.startsWith("--")) flags.push(a.startsWith("--device=") ? `--device=${a.slice(9)}` : a);
      }
      return flags.map((f) => f.replace(/^--device=/, "--device=")).sort();
    };
    // Deviations: rlpipe runs launch.sh instead of an interactive shell (no -it, /bin/bash), removes the
    // container when it exits (--rm), and mounts the host workspace at the working directory (-v, -w).
    const expected = pick(seed).filter((f) => f !== "-it");
    const actual = pick(ours).filter((f) => f !== "--rm" && !f.startsWith("-v=$HOST_WORKSPACE:"));
    assert.deepEqual(actual, expected);
    assert.equal(ours[ours.length - 3], "verl_sandbox:main-c651b7b-py311-cann8.3.RC1");
  });
});

describe("golden: qwen3-1.7b-code-toolcall-sd (seed 001 part 2; SD scripts unpublished)", () => {
  const base = fixture("qwen3-1.7b-code-toolcall");
  const plan = planSeed("qwen3-1.7b-code-toolcall-sd", SEED_PROVIDER["qwen3-1.7b-code-toolcall-sd"]);

  it("RL keeps the shared base script's arguments, on the public Qwen3-1.7B (no SFT)", () => {
    // spec_rl_run.sh / no_spec_rl_run.sh are not public; the seed says the SD extension shares
    // run_code_rl_demo.sh's setup and uses the public weights, so the model path (and the experiment
    // name the base script derives from its basename) change; everything else is the base script.
    expectSameOverrides(stage(plan, "rl").argv, base.rl!.argv, plan.workDir, [
      RESUME, PUBLISHED_LENGTH(240, "the base recipe's published run (seed 001)"),
      { key: "actor_rollout_ref.model.path", rlpipe: "Qwen/Qwen3-1.7B", why: "SD runs on the public Qwen3-1.7B weights" },
      { key: "trainer.experiment_name", rlpipe: "1.5B_L16k-Qwen3-1.7B-bs128-minibs32-gs8-temp0.9-1nodes", why: "the base script's EXP_NAME formula with MODEL_NAME=Qwen3-1.7B" },
    ]);
  });

  it("exports the SD scripts' MODEL_PATH / DRAFT_MODEL_PATH / DATA_PATH and CANN 8.5.0's toolkit path", () => {
    const env = effectiveEnv(stage(plan, "rl"));
    assert.equal(env["MODEL_PATH"], "Qwen/Qwen3-1.7B");
    assert.equal(env["DRAFT_MODEL_PATH"], "models/eagle3-qwen3-1.7b");
    assert.equal(env["DATA_PATH"], "train.parquet");
    assert.equal(env["ASCEND_HOME_PATH"], "/usr/local/Ascend/CANN_8.5.0/ascend-toolkit");
    for (const [k, v] of Object.entries(base.rl!.env)) assert.equal(env[k], v, k);
  });

  it("has no SFT or merge stage and applies patches 0001+0002+0004 and the vLLM patch", () => {
    assert.deepEqual(plan.stages.map((s) => s.type), ["rl"]);
    const launch = plan.files.find((f) => f.path === "launch.sh")!.content;
    for (const p of ["0001-verl-feature-improve_rl_usability", "0002-enable-tool-agent-loop", "0004-enable-specrl-clean"]) {
      assert.match(launch, new RegExp(`rlpipe_apply_patch verl patches/verl/${p}\\.patch git-apply`));
    }
    assert.match(launch, /rlpipe_apply_patch vllm patches\/vllm\/0001-enable-eagle-sprl\.patch git-apply/);
    assert.doesNotMatch(launch, /0003-toolcall-reward/);
    assert.match(launch, /conda create -y -n verl-specrl python=3\.11/);
    assert.match(launch, /python3 -m pip uninstall -y triton-ascend triton/);
  });
});

describe("golden: retool-qwen3-4b-ascend (seed 002, run_qwen3_4b_{sft,dapo}_npu.sh)", () => {
  const fx = fixture("retool-qwen3-4b-ascend");
  const plan = planSeed("retool-qwen3-4b-ascend", "docker");
  const DATE_STAMP = "the script stamps $(date +%m%d_%H%M) into the experiment name and checkpoint dir, so a restarted job would start a new run instead of resuming; the recipe uses a fixed name";

  it("SFT renders the script's arguments", () => {
    const s = stage(plan, "sft");
    assert.deepEqual(launcherFlags(s.argv), launcherFlags(fx.sft!.argv));
    expectSameOverrides(s.argv, fx.sft!.argv, plan.workDir, [RESUME]);
    assert.deepEqual(effectiveEnv(s), fx.sft!.env);
  });

  it("merge is the README's command for global_step_186", () => {
    assert.deepEqual(stage(plan, "merge").argv, fx.merge!.argv);
  });

  it("RL renders the script's arguments", () => {
    expectSameOverrides(stage(plan, "rl").argv, fx.rl!.argv, plan.workDir, [
      RESUME, PUBLISHED_LENGTH(130, "130个step训练后 (seed 002)"),
      { key: "trainer.experiment_name", rlpipe: "qwen3-4b_dapo", why: DATE_STAMP },
      { key: "trainer.default_local_dir", rlpipe: `${plan.workDir}/checkpoint/qwen3-4b_dapo`, why: DATE_STAMP },
    ]);
    assert.deepEqual(effectiveEnv(stage(plan, "rl")), fx.rl!.env);
  });

  it("the SandboxFusion tool config equals retool's sandbox_fusion_tool_config.yaml", () => {
    const file = plan.files.find((f) => f.path === "sandbox_fusion_tool_config.yaml");
    assert.ok(file !== undefined);
    assert.deepEqual(parse(file.content), parse(oneLoopback(readFileSync(join(FIXTURES, "seeds", "sandbox_fusion_tool_config.yaml"), "utf8"))));
  });

  it("warns that val top_k=20 does not reach sampling with the agent loop", () => {
    assert.ok(plan.warnings.some((w) => w.code === "ignored_with_agent_loop" && w.path.join(".") === "stages.2.rollout.val.topK"));
  });
});

describe("golden: retool-qwen2.5-32b-h200 (seed 003, bojieli/verl run_qwen2-32b_{sft,dapo}.sh)", () => {
  const fx = fixture("retool-qwen2.5-32b-h200");
  const plan = planSeed("retool-qwen2.5-32b-h200", "ray");

  it("SFT renders the script's torchrun --standalone launcher and overrides", () => {
    const s = stage(plan, "sft");
    assert.deepEqual(launcherFlags(s.argv), launcherFlags(fx.sft!.argv));
    expectSameOverrides(s.argv, fx.sft!.argv, plan.workDir, [RESUME]);
  });

  it("merge is the seed's command for global_step_372 (the last SFT step)", () => {
    assert.deepEqual(stage(plan, "merge").argv, fx.merge!.argv);
  });

  it("RL renders the fork's script (max response 10240, save every 5), not the seed text's upstream values", () => {
    const s = stage(plan, "rl");
    expectSameOverrides(s.argv, fx.rl!.argv, plan.workDir, [RESUME, PUBLISHED_LENGTH(400, "实际上只需要约 400 个训练步骤 (seed 003)")]);
    assert.ok(s.argv.includes("trainer.total_training_steps=400"));
    assert.equal(s.facts.responsesPerStep, 8192);
  });

  it("renders no agent.default_agent_loop (absent at f50e5c2e) and no data.tool_config_path", () => {
    const words = stage(plan, "rl").argv.join(" ");
    assert.doesNotMatch(words, /default_agent_loop|data\.tool_config_path/);
  });

  it("the tool config equals the fork's sandbox_fusion_tool_config.yaml", () => {
    const file = plan.files.find((f) => f.path === "recipe/retool/sandbox_fusion_tool_config.yaml");
    assert.ok(file !== undefined);
    assert.deepEqual(parse(file.content), parse(oneLoopback(readFileSync(join(FIXTURES, "seeds", "sandbox_fusion_tool_config.yaml"), "utf8"))));
  });
});

describe("golden: retool-qwen3-4b-tione-ags (seed 004, inline run_qwen3-4b-instruct_dapo_e2b_code_tool.sh)", () => {
  const fx = fixture("retool-qwen3-4b-tione-ags");
  const plan = planSeed("retool-qwen3-4b-tione-ags", "tione");

  it("RL renders the inline script's arguments", () => {
    // The seed's console RuntimeEnv (pip, LD_LIBRARY_PATH) has no TI-ONE API field; it rides on verl's ray.init().
    expectSameOverrides(stage(plan, "rl").argv, fx.rl!.argv, plan.workDir, [RESUME, PUBLISHED_LENGTH(400, "no published length: seed 003's ~400 steps for the same ReTool recipe"),
      { key: "+ray_kwargs.ray_init.runtime_env.pip", rlpipe: "[e2b_code_interpreter]", why: "the seed's console RuntimeEnv.pip: TI-ONE's API has no RuntimeEnv field" },
      { key: "+ray_kwargs.ray_init.runtime_env.env_vars.LD_LIBRARY_PATH", rlpipe: "'/usr/local/cuda/compat:$LD_LIBRARY_PATH'", why: "the seed's console RuntimeEnv.env_vars, expanded by Ray on each node" },
      { key: "trainer.logger", rlpipe: "[console,tensorboard,file]", why: "a managed target keeps a run's metrics in its object storage by default: verl's file backend writes them where the sync sidecar uploads them" }]);
  });

  it("exports PYTHONUNBUFFERED and the CUDA compat library path the seed sets before the script", () => {
    const env = effectiveEnv(stage(plan, "rl"));
    assert.equal(env["PYTHONUNBUFFERED"], fx.rl!.env["PYTHONUNBUFFERED"]);
    assert.equal(env["LD_LIBRARY_PATH"], "/usr/local/cuda/compat:");
  });

  it("the E2B/AGS tool config matches the seed's (fixed) YAML and holds no key, only ${oc.env:E2B_API_KEY}", () => {
    const file = plan.files.find((f) => f.path === "recipe/retool/e2b_code_tool_config.yaml");
    assert.ok(file !== undefined);
    assert.deepEqual(parse(file.content), parse(readFileSync(join(FIXTURES, "seeds", "e2b_code_tool_config.yaml"), "utf8")));
    assert.doesNotMatch(file.content, /ark_/);
  });

  it("runs the dataset preprocessing step and needs the AGS key from the environment", () => {
    const launch = plan.files.find((f) => f.path === "launch.sh")!.content;
    assert.match(launch, /dapo_multiturn_w_tool\.py --local_dataset_path/);
    assert.match(launch, /rlpipe_require_secret E2B_API_KEY ags-api-key/);
    assert.deepEqual(plan.stages.map((s) => s.type), ["rl"]);
  });
});
