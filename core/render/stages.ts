// Recipe stages → the exact programs verl runs: torchrun … fsdp_sft_trainer, python3 -m verl.model_merger,
// python3 -m verl.trainer.main_ppo. Keys render in a fixed order and only when the recipe states them.
import type { RecipePath } from "../errors.js";
import type { EvalStage, MergeStage, RlStage, SftStage, Stage } from "../recipe/schema.js";
import type { StageCommand } from "./stage-command.js";
import { type RenderContext, OverrideList, datasetFiles, modelPath, report, stageLoggers } from "./context.js";
import { renderScore } from "./score.js";
import { tioneRayRuntimeEnvOverrides } from "../providers/tione-ray-env.js";
import { overrideWord } from "./hydra.js";
import { resolveRewardFn } from "./reward.js";
import { functionToolFileFor, toolConfigFor } from "./tools.js";

export type { StageCommand } from "./stage-command.js";

export function renderStage(ctx: RenderContext, stage: Stage, index: number): StageCommand {
  const at: RecipePath = ["stages", index];
  switch (stage.type) {
    case "sft": return renderSft(ctx, stage, at);
    case "merge": return renderMerge(ctx, stage, at);
    case "rl": return renderPpo(ctx, stage, at);
    case "eval": return renderPpo(ctx, stage, at);
    case "score": return renderScore(ctx, stage, at);
  }
}

function common(ctx: RenderContext, stage: Stage, at: RecipePath) {
  return {
    id: stage.id,
    type: stage.type,
    env: stage.env ?? {},
    envPresets: stage.envPresets ?? [],
    ...(stage.logFile === undefined ? {} : { logFile: ctx.interp.resolve(stage.logFile, [...at, "logFile"]) }),
  };
}

function loggingOf(ctx: RenderContext, stage: SftStage | RlStage | EvalStage) {
  const backends = stageLoggers(ctx, stage);
  return { ...ctx.recipe.logging, ...stage.logging, ...(backends === undefined ? {} : { backends }) };
}

/** trainer.device renders only for NPUs: verl's default is cuda, and the GPU scripts leave it unset. */
function device(ctx: RenderContext): string | undefined {
  return ctx.recipe.runtime.accelerator === "ascend-npu" ? "npu" : undefined;
}

// ------------------------------------------------------------------------------------------ SFT

function renderSft(ctx: RenderContext, s: SftStage, at: RecipePath): StageCommand {
  const { resources } = ctx.recipe;
  const engine = ctx.profile.sft.config === "sft_trainer_engine";
  const o = new OverrideList();
  const train = datasetFiles(ctx, s.data.train, [...at, "data", "train"]);
  o.set("data.train_files", train, [...at, "data", "train"]);
  if (s.data.val !== undefined) o.set("data.val_files", datasetFiles(ctx, s.data.val, [...at, "data", "val"]), [...at, "data", "val"]);
  o.set("data.max_length", s.data.maxLength, [...at, "data", "maxLength"]);
  o.set("data.train_batch_size", s.batch.global, [...at, "batch", "global"]);
  if (s.data.multiturn !== undefined) {
    const mt = [...at, "data", "multiturn"];
    if (engine) {
      // The engine trainer always reads multi-turn messages; keys moved up one level.
      o.set("data.messages_key", s.data.multiturn.messagesKey, mt);
      o.set("data.tools_key", s.data.multiturn.toolsKey, mt);
    } else {
      o.set("data.multiturn.enable", true, mt);
      o.set("data.multiturn.messages_key", s.data.multiturn.messagesKey, mt);
      o.set("data.multiturn.tools_key", s.data.multiturn.toolsKey, mt);
    }
  }
  o.set("data.micro_batch_size_per_gpu", s.batch.microPerDevice, [...at, "batch", "microPerDevice"]);
  if (engine) {
    // Dynamic batching is on by default there with 8192 tokens per device; a longer sample would not fit.
    const tokens = s.batch.maxTokensPerDevice ?? (s.data.maxLength > 8192 ? s.data.maxLength : undefined);
    o.set("data.max_token_len_per_gpu", tokens, [...at, "batch", "maxTokensPerDevice"]);
  } else if (s.batch.maxTokensPerDevice !== undefined) {
    report(ctx, "warning", [...at, "batch", "maxTokensPerDevice"], "ignored_for_version",
      `has no effect with ${ctx.profile.sft.module} (verl ${ctx.profile.name})`);
  }
  const model = modelPath(ctx, s.model, [...at, "model"]);
  o.set(engine ? "model.path" : "model.partial_pretrain", model, [...at, "model"]);
  o.set(engine ? "engine.strategy" : "model.strategy", s.parallel?.strategy, [...at, "parallel", "strategy"]);
  const output = ctx.interp.resolve(s.outputDir, [...at, "outputDir"]);
  o.set("trainer.default_local_dir", output, [...at, "outputDir"]);
  const log = loggingOf(ctx, s);
  o.set("trainer.project_name", log.project, [...at, "logging", "project"]);
  o.set("trainer.experiment_name", log.experiment, [...at, "logging", "experiment"]);
  o.set("trainer.logger", log.backends === undefined ? undefined : [...log.backends], [...at, "logging", "backends"]);
  o.set("trainer.total_epochs", s.schedule.epochs, [...at, "schedule", "epochs"]);
  // verl stops at total_training_steps when it comes before the end of the epochs.
  o.set("trainer.total_training_steps", s.schedule.totalTrainingSteps, [...at, "schedule", "totalTrainingSteps"]);
  o.set("trainer.save_freq", s.schedule.saveEvery ?? ctx.recipe.checkpoints?.saveEvery, [...at, "schedule", "saveEvery"]);
  o.set("trainer.max_ckpt_to_keep", ctx.recipe.checkpoints?.keep?.last, ["checkpoints", "keep", "last"]);
  o.set("trainer.device", device(ctx), ["runtime", "accelerator"]);
  o.set(engine ? "engine.ulysses_sequence_parallel_size" : "ulysses_sequence_parallel_size", s.parallel?.ulyssesSP, [...at, "parallel", "ulyssesSP"]);
  o.set(engine ? "model.use_remove_padding" : "use_remove_padding", s.parallel?.removePadding, [...at, "parallel", "removePadding"]);
  // A restarted job continues from the newest complete checkpoint instead of starting over.
  o.set("trainer.resume_mode", "auto", at);
  o.applyRaw(ctx, s.overrides, [...at, "overrides"]);

  const launcher = ["torchrun", `--nnodes=${resources.nodes}`];
  if (s.launcher?.standalone === true) {
    if (resources.nodes > 1) report(ctx, "error", [...at, "launcher", "standalone"], "standalone_multinode", "torchrun --standalone runs on one node, but resources.nodes > 1");
    launcher.push("--standalone");
  }
  launcher.push(`--nproc_per_node=${resources.devicesPerNode}`, "-m", ctx.profile.sft.module);
  const overrides = o.words(overrideWord);
  return {
    ...common(ctx, s, at),
    argv: [...launcher, ...overrides],
    overrides,
    hydraConfig: ctx.profile.sft.config,
    output,
    files: [],
  };
}

// ------------------------------------------------------------------------------------------ merge

function renderMerge(ctx: RenderContext, s: MergeStage, at: RecipePath): StageCommand {
  const src = ctx.interp.stageOutput(s.from.stage, [...at, "from", "stage"]) ?? "";
  const from = ctx.recipe.stages.find((x) => x.id === s.from.stage);
  const actor = from?.type === "rl" ? "/actor" : ""; // RL checkpoints keep the policy under actor/
  const localDir = `${src}/global_step_${s.from.step}${actor}`;
  const target = ctx.interp.stageOutput(s.id, at) ?? "";
  return {
    ...common(ctx, s, at),
    argv: ["python3", "-m", "verl.model_merger", "merge", "--backend", s.backend, "--local_dir", localDir, "--target_dir", target],
    overrides: [],
    output: target,
    files: [],
  };
}

// ------------------------------------------------------------------------------------------ RL / eval

function renderPpo(ctx: RenderContext, s: RlStage | EvalStage, at: RecipePath): StageCommand {
  const { recipe, profile } = ctx;
  const o = new OverrideList();
  const rl = s.type === "rl" ? s : undefined;
  const alg = rl?.algorithm;
  const A = (...p: (string | number)[]): RecipePath => [...at, ...p];

  o.set("algorithm.adv_estimator", alg?.advEstimator, A("algorithm", "advEstimator"));
  o.set("algorithm.use_kl_in_reward", alg?.klInReward, A("algorithm", "klInReward"));
  o.float("algorithm.kl_ctrl.kl_coef", alg?.klCoef, A("algorithm", "klCoef"));
  o.set("reward_model.reward_manager", recipe.reward?.manager, ["reward", "manager"]);

  // data
  if (s.type === "rl") {
    o.set("data.train_files", datasetFiles(ctx, s.data.train, A("data", "train")), A("data", "train"));
    if (s.data.val !== undefined) o.set("data.val_files", datasetFiles(ctx, s.data.val, A("data", "val")), A("data", "val"));
  } else {
    // Validation-only runs still build a train loader; point it at the validation set.
    const val = datasetFiles(ctx, s.data.val, A("data", "val"));
    o.set("data.train_files", val, A("data", "val"));
    o.set("data.val_files", val, A("data", "val"));
  }
  o.set("data.return_raw_chat", rl?.data.returnRawChat, A("data", "returnRawChat"));
  o.set("data.train_batch_size", s.data.promptsPerStep, A("data", "promptsPerStep"));
  o.set("data.max_prompt_length", s.data.maxPromptLength, A("data", "maxPromptLength"));
  o.set("data.max_response_length", s.data.maxResponseLength, A("data", "maxResponseLength"));
  o.set("data.filter_overlong_prompts", rl?.data.filterOverlong, A("data", "filterOverlong"));
  o.set("data.truncation", rl?.data.truncation, A("data", "truncation"));
  if (rl?.data.customClass !== undefined) {
    o.set("data.custom_cls.path", ctx.interp.resolve(rl.data.customClass.path, A("data", "customClass", "path")), A("data", "customClass", "path"));
    o.set("data.custom_cls.name", rl.data.customClass.name, A("data", "customClass", "name"));
  }

  // tools
  const tools = toolConfigFor(ctx, s, at);
  const functionTools = functionToolFileFor(ctx, s, at);
  if (tools !== undefined && s.agent?.toolSchemasInPromptLength === true) {
    if (profile.hasDataToolConfigPath) {
      o.set("data.tool_config_path", tools.value, A("agent", "toolSchemasInPromptLength"));
    } else {
      report(ctx, "warning", A("agent", "toolSchemasInPromptLength"), "dropped_for_version",
        `data.tool_config_path does not exist at verl ${profile.name} (added in 11f536f0e, 2025-11-03); not rendered`,
        "prompt-length filtering will not count the tool schemas; leave room in data.maxPromptLength");
    }
  }

  // reward
  const fn = resolveRewardFn(ctx);
  if (fn !== undefined) {
    o.set("custom_reward_function.path", ctx.interp.resolve(fn.path, ["reward", "fn", "path"]), ["reward", "fn", "path"]);
    o.set("custom_reward_function.name", fn.name, ["reward", "fn", "name"]);
    for (const [k, v] of Object.entries(fn.kwargs ?? {})) {
      const p: RecipePath = ["reward", "fn", "kwargs", k];
      if (v !== null && typeof v === "object" && !Array.isArray(v)) {
        report(ctx, "error", p, "invalid_type", "expected a string, number, boolean or a list of those (nested mappings cannot be passed as a Hydra override)");
        continue;
      }
      if (Array.isArray(v) && v.some((x) => x !== null && typeof x === "object")) {
        report(ctx, "error", p, "invalid_type", "expected a list of strings, numbers or booleans");
        continue;
      }
      const value = typeof v === "string" ? ctx.interp.resolve(v, p) : v;
      // reward_kwargs is absent from verl's config schema at every known commit: the `+` is required.
      o.set(`+custom_reward_function.reward_kwargs.${k}`, value as string | number | boolean | null | (string | number | boolean)[], p);
    }
  }

  // model
  o.set("actor_rollout_ref.model.path", modelPath(ctx, s.model, A("model")), A("model"));
  const tr = rl?.train;
  o.set("actor_rollout_ref.model.use_remove_padding", tr?.removePadding, A("train", "removePadding"));
  o.set("actor_rollout_ref.model.enable_gradient_checkpointing", tr?.gradientCheckpointing, A("train", "gradientCheckpointing"));

  // actor
  const kl = alg?.klLoss;
  o.set("actor_rollout_ref.actor.use_kl_loss", kl?.enabled, A("algorithm", "klLoss", "enabled"));
  o.float("actor_rollout_ref.actor.kl_loss_coef", kl?.coef, A("algorithm", "klLoss", "coef"));
  o.set("actor_rollout_ref.actor.kl_loss_type", kl?.type, A("algorithm", "klLoss", "type"));
  o.float("actor_rollout_ref.actor.clip_ratio", alg?.clip?.ratio, A("algorithm", "clip", "ratio"));
  o.float("actor_rollout_ref.actor.clip_ratio_low", alg?.clip?.low, A("algorithm", "clip", "low"));
  o.float("actor_rollout_ref.actor.clip_ratio_high", alg?.clip?.high, A("algorithm", "clip", "high"));
  o.float("actor_rollout_ref.actor.clip_ratio_c", alg?.clip?.dual, A("algorithm", "clip", "dual"));
  o.float("actor_rollout_ref.actor.optim.lr", alg?.lr, A("algorithm", "lr"));
  o.set("actor_rollout_ref.actor.use_dynamic_bsz", tr?.dynamicBsz, A("train", "dynamicBsz"));
  o.set("actor_rollout_ref.actor.ppo_mini_batch_size", alg?.miniBatchPrompts, A("algorithm", "miniBatchPrompts"));
  o.set("actor_rollout_ref.actor.ppo_max_token_len_per_gpu", tr?.maxTokensPerDevice, A("train", "maxTokensPerDevice"));
  o.set("actor_rollout_ref.actor.ulysses_sequence_parallel_size", tr?.ulyssesSP, A("train", "ulyssesSP"));
  o.set("actor_rollout_ref.actor.fsdp_config.param_offload", tr?.offload?.actorParams, A("train", "offload", "actorParams"));
  o.set("actor_rollout_ref.actor.fsdp_config.optimizer_offload", tr?.offload?.actorOptimizer, A("train", "offload", "actorOptimizer"));
  o.set("actor_rollout_ref.actor.use_torch_compile", tr?.torchCompile?.actor, A("train", "torchCompile", "actor"));

  // ref
  o.set("actor_rollout_ref.ref.log_prob_max_token_len_per_gpu", tr?.refLogProbMaxTokensPerDevice, A("train", "refLogProbMaxTokensPerDevice"));
  o.set("actor_rollout_ref.ref.fsdp_config.param_offload", tr?.offload?.refParams, A("train", "offload", "refParams"));
  o.set("actor_rollout_ref.ref.use_torch_compile", tr?.torchCompile?.ref, A("train", "torchCompile", "ref"));

  // rollout
  const r = s.rollout;
  const R = (...p: string[]) => A("rollout", ...p);
  o.set("actor_rollout_ref.rollout.name", r.engine, R("engine"));
  o.set("actor_rollout_ref.rollout.mode", r.mode, R("mode"));
  o.set("actor_rollout_ref.rollout.tensor_model_parallel_size", r.tensorParallel, R("tensorParallel"));
  o.float("actor_rollout_ref.rollout.gpu_memory_utilization", r.gpuMemoryUtilization, R("gpuMemoryUtilization"));
  o.set("actor_rollout_ref.rollout.max_num_batched_tokens", r.maxNumBatchedTokens, R("maxNumBatchedTokens"));
  o.set("actor_rollout_ref.rollout.max_model_len", r.maxModelLen, R("maxModelLen"));
  o.set("actor_rollout_ref.rollout.n", r.n, R("n"));
  o.float("actor_rollout_ref.rollout.temperature", r.temperature, R("temperature"));
  o.float("actor_rollout_ref.rollout.val_kwargs.top_p", r.val?.topP, R("val", "topP"));
  o.set("actor_rollout_ref.rollout.val_kwargs.top_k", r.val?.topK, R("val", "topK"));
  o.float("actor_rollout_ref.rollout.val_kwargs.temperature", r.val?.temperature, R("val", "temperature"));
  o.set("actor_rollout_ref.rollout.val_kwargs.n", r.val?.n, R("val", "n"));
  o.set("actor_rollout_ref.rollout.trace.backend", r.trace?.backend, R("trace", "backend"));
  o.set("actor_rollout_ref.rollout.trace.token2text", r.trace?.token2text, R("trace", "token2text"));

  // agent loop and multi-turn tools
  const ag = s.agent;
  const G = (...p: string[]) => A("agent", ...p);
  o.set("actor_rollout_ref.rollout.agent.num_workers", ag?.workers, G("workers"));
  if (ag?.loop !== undefined) {
    if (profile.hasDefaultAgentLoop) o.set("actor_rollout_ref.rollout.agent.default_agent_loop", ag.loop, G("loop"));
    else report(ctx, "error", G("loop"), "unsupported_for_version",
      `actor_rollout_ref.rollout.agent.default_agent_loop does not exist at verl ${profile.name}`,
      "remove agent.loop and give the dataset an agent_name column (the retool CustomRLHFDataset does), or use a newer verl");
  }
  o.set("actor_rollout_ref.rollout.multi_turn.enable", ag?.multiTurn, G("multiTurn"));
  o.set("actor_rollout_ref.rollout.multi_turn.max_user_turns", ag?.maxUserTurns, G("maxUserTurns"));
  o.set("actor_rollout_ref.rollout.multi_turn.max_assistant_turns", ag?.maxAssistantTurns, G("maxAssistantTurns"));
  o.set("actor_rollout_ref.rollout.multi_turn.tool_config_path", tools?.value, G("tools"));
  o.set("actor_rollout_ref.rollout.multi_turn.function_tool_path", functionTools?.value, G("tools"));
  o.set("actor_rollout_ref.rollout.multi_turn.format", ag?.format, G("format"));
  o.set("actor_rollout_ref.rollout.multi_turn.max_tool_response_length", ag?.maxToolResponseLength, G("maxToolResponseLength"));

  // trainer
  const sch = rl?.schedule;
  const S = (...p: string[]) => A("schedule", ...p);
  const log = loggingOf(ctx, s);
  o.set("trainer.critic_warmup", sch?.criticWarmup, S("criticWarmup"));
  o.set("trainer.logger", log.backends === undefined ? undefined : [...log.backends], A("logging", "backends"));
  o.set("trainer.project_name", log.project, A("logging", "project"));
  o.set("trainer.experiment_name", log.experiment, A("logging", "experiment"));
  o.set("trainer.n_gpus_per_node", recipe.resources.devicesPerNode, ["resources", "devicesPerNode"]);
  o.set("trainer.val_before_train", s.type === "eval" ? true : sch?.valBeforeTrain, S("valBeforeTrain"));
  o.set("trainer.log_val_generations", sch?.logValGenerations, S("logValGenerations"));
  o.set("trainer.nnodes", recipe.resources.nodes, ["resources", "nodes"]);
  o.set("trainer.save_freq", sch?.saveEvery ?? (rl === undefined ? undefined : recipe.checkpoints?.saveEvery), S("saveEvery"));
  if (rl !== undefined) o.set("trainer.max_actor_ckpt_to_keep", recipe.checkpoints?.keep?.last, ["checkpoints", "keep", "last"]);
  const output = rl === undefined ? undefined : ctx.interp.stageOutput(rl.id, at);
  const explicitDir = rl !== undefined && (rl.outputDir !== undefined || recipe.checkpoints?.dir !== undefined);
  o.set("trainer.default_local_dir", explicitDir ? output : undefined, A("outputDir"));
  o.set("trainer.test_freq", sch?.testEvery, S("testEvery"));
  o.set("trainer.total_epochs", sch?.epochs, S("epochs"));
  o.set("trainer.total_training_steps", sch?.totalTrainingSteps, S("totalTrainingSteps"));
  o.set("trainer.device", device(ctx), ["runtime", "accelerator"]);
  if (s.type === "eval") o.set("trainer.val_only", true, at);
  else o.set("trainer.resume_mode", "auto", at); // a restarted job continues from the newest checkpoint
  // TI-ONE's API has no RuntimeEnv field: the Ray runtime env travels through verl's own ray.init().
  if (ctx.provider === "tione") for (const ov of tioneRayRuntimeEnvOverrides(ctx.recipe).overrides) o.set(ov.key, ov.value, ov.origin);
  o.applyRaw(ctx, s.overrides, A("overrides"));

  const overrides = o.words(overrideWord);
  const base = common(ctx, s, at);
  let env = base.env;
  if (rl?.speculative !== undefined) {
    // The SD scripts read these at their top; the Hydra keys patch 0004 adds are not public.
    const sp = rl.speculative;
    const draft = sp.draftModel === undefined ? undefined : ctx.recipe.models[sp.draftModel];
    env = {
      MODEL_PATH: modelPath(ctx, s.model, A("model")),
      ...(draft === undefined ? {} : { DRAFT_MODEL_PATH: ctx.interp.resolve(draft.path, ["models", sp.draftModel!, "path"]) }),
      DATA_PATH: [datasetFiles(ctx, rl.data.train, A("data", "train"))].flat().join(","),
      ...env,
    };
    if (!Object.keys(rl.overrides ?? {}).some((k) => /spec|draft|eagle/i.test(k))) {
      report(ctx, "warning", A("speculative"), "speculative_keys_unknown",
        `${sp.method} runs through ${sp.requiresPatches.join(" + ")}, whose Hydra keys are not public; rlpipe exports MODEL_PATH, DRAFT_MODEL_PATH and DATA_PATH as the seed's SD scripts read them`,
        "add the patch's settings under this stage's `overrides` (with a + prefix for new keys)");
    }
  }
  return {
    ...base,
    env,
    argv: ["python3", "-m", "verl.trainer.main_ppo", ...overrides],
    overrides,
    hydraConfig: "ppo_trainer",
    ...(output === undefined ? {} : { output }),
    files: [...(tools === undefined ? [] : [tools.file]), ...(functionTools === undefined ? [] : [functionTools.file])],
  };
}
