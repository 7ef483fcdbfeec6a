// Semantic checks a schema cannot express: contradictions between fields, version traps, secrets written
// in plain text. Each finding names the recipe field it is about.
import type { RecipeIssue, RecipePath } from "../errors.js";
import type { VerlProfile } from "./profiles.js";
import type { EvalStage, Recipe, RlStage, SftStage, Stage } from "./schema.js";
import { didYouMean } from "./suggest.js";

export interface CheckOptions {
  /** Reads a file next to the recipe (for the reward function's signature); undefined when unavailable. */
  readonly readRecipeFile?: (relativePath: string) => string | undefined;
}

export function checkRecipe(recipe: Recipe, profile: VerlProfile, opts: CheckOptions = {}): RecipeIssue[] {
  const issues: RecipeIssue[] = [];
  const err = (path: RecipePath, code: string, message: string, hint?: string) =>
    issues.push({ severity: "error", code, path, message, ...(hint === undefined ? {} : { hint }) });
  const warn = (path: RecipePath, code: string, message: string, hint?: string) =>
    issues.push({ severity: "warning", code, path, message, ...(hint === undefined ? {} : { hint }) });

  const { resources, stages } = recipe;
  const totalDevices = resources.nodes * resources.devicesPerNode;

  // ---- stage ids and ordering
  const seen = new Map<string, number>();
  stages.forEach((s, i) => {
    const prev = seen.get(s.id);
    if (prev !== undefined) err(["stages", i, "id"], "duplicate_stage", `stage id ${JSON.stringify(s.id)} is already used by stages[${prev}]`);
    else seen.set(s.id, i);
  });
  const earlier = (i: number, id: string): Stage | undefined => stages.slice(0, i).find((s) => s.id === id);
  const checkModelRef = (i: number, model: string) => {
    const m = /^\$\{stages\.([A-Za-z][A-Za-z0-9_-]*)\.output\}$/.exec(model.trim());
    if (m === null) return;
    const id = m[1]!;
    if (stages.some((s) => s.id === id) && earlier(i, id) === undefined) {
      err(["stages", i, "model"], "stage_order", `\${stages.${id}.output} refers to a stage that runs later`, "stages run in the order listed; move the producing stage first");
    }
  };

  stages.forEach((s, i) => {
    const at: RecipePath = ["stages", i];
    if (s.type === "sft") checkSft(s, at);
    if (s.type === "merge") {
      const src = earlier(i, s.from.stage);
      if (src === undefined) {
        const later = stages.find((x) => x.id === s.from.stage);
        err([...at, "from", "stage"], later === undefined ? "unknown_stage" : "stage_order",
          later === undefined ? `unknown stage ${JSON.stringify(s.from.stage)}` : `stage ${JSON.stringify(s.from.stage)} runs after this merge`,
          later === undefined ? didYouMean(s.from.stage, stages.map((x) => x.id)) : "list the training stage before the merge");
      } else if (src.type === "sft") {
        checkMergeStep(src, s.from.step, [...at, "from", "step"]);
      } else if (src.type === "rl") {
        const every = src.schedule?.saveEvery;
        if (every !== undefined && every > 0 && s.from.step % every !== 0) {
          warn([...at, "from", "step"], "merge_step_not_saved", `global_step_${s.from.step} is not a multiple of the RL stage's save interval (${every})`);
        }
      } else {
        err([...at, "from", "stage"], "merge_source", `a merge needs an sft or rl stage, but ${JSON.stringify(s.from.stage)} is ${src.type}`);
      }
    }
    if (s.type === "rl" || s.type === "eval") {
      checkModelRef(i, s.model);
      checkPpo(s, at);
    }
    if (s.type === "sft") checkModelRef(i, s.model);
  });

  function checkSft(s: SftStage, at: RecipePath): void {
    const sp = s.parallel?.ulyssesSP ?? 1;
    if (resources.devicesPerNode % sp !== 0) {
      err([...at, "parallel", "ulyssesSP"], "sp_not_divisor", `Ulysses SP ${sp} does not divide the ${resources.devicesPerNode} devices per node`, `use one of ${divisors(resources.devicesPerNode).join(", ")}`);
      return;
    }
    const dp = totalDevices / sp;
    if (s.batch.global % dp !== 0) {
      err([...at, "batch", "global"], "batch_not_divisible", `global batch ${s.batch.global} is not divisible by the data-parallel size ${dp} (${totalDevices} devices / SP ${sp})`, `use a multiple of ${dp}, such as ${nearMultiples(s.batch.global, dp)}`);
    } else if ((s.batch.global / dp) % s.batch.microPerDevice !== 0 && s.batch.global / dp > s.batch.microPerDevice) {
      warn([...at, "batch", "microPerDevice"], "micro_batch", `per-rank batch ${s.batch.global / dp} is not a multiple of the micro-batch ${s.batch.microPerDevice}`);
    }
    if (s.data.val === undefined) warn([...at, "data", "val"], "no_validation", "no validation set; verl's SFT trainer expects data.val_files", "the published scripts validate on the training file");
  }

  /** SFT saves at every multiple of saveEvery and at its last step (floor(rows / global batch) × epochs). */
  function checkMergeStep(sft: SftStage, step: number, at: RecipePath): void {
    const rows = recipe.datasets[sft.data.train]?.rows;
    const every = sft.schedule.saveEvery;
    const total = rows === undefined ? undefined : Math.floor(rows / sft.batch.global) * sft.schedule.epochs;
    if (total !== undefined && total === 0) {
      err(at, "sft_no_steps", `the SFT stage makes no steps: ${rows} rows < global batch ${sft.batch.global}`);
      return;
    }
    if (total !== undefined && step > total) {
      err(at, "merge_past_last_step", `global_step_${step} is past the last SFT step ${total} (${rows} rows / batch ${sft.batch.global} = ${Math.floor(rows! / sft.batch.global)} steps × ${sft.schedule.epochs} epochs)`,
        `merge global_step_${total}${every !== undefined && every > 0 ? ` or a multiple of ${every} up to ${total}` : ""}`);
      return;
    }
    const onInterval = every !== undefined && every > 0 && step % every === 0;
    if (onInterval || step === total) return;
    if (total === undefined) {
      if (every === undefined || every <= 0) {
        warn(at, "merge_step_unverified", `cannot verify global_step_${step}: the SFT stage saves only its last step, and datasets.${sft.data.train}.rows is not set`, "set datasets.<name>.rows so rlpipe can compute the last step");
      } else {
        err(at, "merge_step_not_saved", `global_step_${step} is not saved: the SFT stage saves every ${every} steps (and at its last step, which is unknown without datasets.${sft.data.train}.rows)`);
      }
      return;
    }
    err(at, "merge_step_not_saved", `global_step_${step} is never saved: SFT saves ${every !== undefined && every > 0 ? `every ${every} steps and ` : ""}at its last step ${total}`);
  }

  function checkPpo(s: RlStage | EvalStage, at: RecipePath): void {
    const r = s.rollout;
    const tp = r.tensorParallel ?? 1;
    if (resources.devicesPerNode % tp !== 0) {
      err([...at, "rollout", "tensorParallel"], "tp_not_divisor", `rollout tensor parallel ${tp} does not divide the ${resources.devicesPerNode} devices per node`, `use one of ${divisors(resources.devicesPerNode).join(", ")}`);
    }
    const prompt = s.data.maxPromptLength;
    const response = s.data.maxResponseLength;
    if (r.maxModelLen !== undefined && r.maxModelLen < prompt + response) {
      err([...at, "rollout", "maxModelLen"], "max_model_len", `maxModelLen ${r.maxModelLen} is below maxPromptLength + maxResponseLength = ${prompt + response}`, `raise it to at least ${prompt + response}`);
    }
    const agentLoop = usesAgentLoop(s);
    if (r.mode === "sync" && profile.rejectsSyncRollout) {
      err([...at, "rollout", "mode"], "sync_rejected", `verl ${profile.name} rejects rollout.mode=sync (removed in eb6991a62, 2025-12-28)`, "use mode: async");
    } else if (r.mode === undefined && agentLoop && profile.defaultRolloutMode === "sync") {
      warn([...at, "rollout", "mode"], "sync_default", `verl ${profile.name} defaults to rollout.mode=sync, but multi-turn tool calls run in the async agent loop`, "set rollout.mode: async, as every tool-call seed does");
    } else if (r.mode === "sync" && agentLoop) {
      err([...at, "rollout", "mode"], "sync_agent_loop", "multi-turn tool calls run only with rollout.mode=async");
    }
    if (agentLoop && r.val?.topK !== undefined && profile.agentLoopIgnoresValTopK) {
      warn([...at, "rollout", "val", "topK"], "ignored_with_agent_loop", "has no effect: with the agent loop only val temperature and top_p reach sampling", "remove it, or expect it to be ignored (seed 002's top_k=20 is)");
    }
    if (r.n !== undefined && r.n > 1 && r.temperature === 0) {
      warn([...at, "rollout", "temperature"], "greedy_group", `temperature 0 makes all ${r.n} responses of a group identical (no GRPO signal)`);
    }
    const ag = s.agent;
    if (ag?.tools !== undefined && ag.multiTurn !== true) {
      warn([...at, "agent", "multiTurn"], "tools_without_multiturn", "agent.tools is set but multi-turn is not enabled, so verl will not call tools", "set agent.multiTurn: true");
    }
    if (s.type !== "rl") return;

    const alg = s.algorithm;
    const prompts = s.data.promptsPerStep;
    const n = r.n ?? 1;
    if (alg?.miniBatchPrompts !== undefined) {
      if (alg.miniBatchPrompts > prompts) {
        err([...at, "algorithm", "miniBatchPrompts"], "mini_batch_too_large", `PPO mini-batch ${alg.miniBatchPrompts} prompts is larger than the batch of ${prompts} prompts (data.promptsPerStep)`, `use at most ${prompts} (a divisor of it, such as ${prompts}), or raise data.promptsPerStep`);
      } else if (prompts % alg.miniBatchPrompts !== 0) {
        warn([...at, "algorithm", "miniBatchPrompts"], "mini_batch_remainder", `${prompts} prompts per step are not a multiple of the mini-batch ${alg.miniBatchPrompts}; the remainder is not an optimizer step`);
      }
      const sp = s.train?.ulyssesSP ?? 1;
      const dp = totalDevices / sp;
      if (Number.isInteger(dp) && (alg.miniBatchPrompts * n) % dp !== 0) {
        err([...at, "algorithm", "miniBatchPrompts"], "mini_batch_not_divisible", `mini-batch ${alg.miniBatchPrompts} prompts × n=${n} = ${alg.miniBatchPrompts * n} responses is not divisible by the data-parallel size ${dp}`, `use a mini-batch whose responses (prompts × ${n}) are a multiple of ${dp}, such as ${nearMultiples(alg.miniBatchPrompts, dp / gcd(dp, n))} prompts`);
      }
    }
    const sp = s.train?.ulyssesSP ?? 1;
    if (totalDevices % sp !== 0) err([...at, "train", "ulyssesSP"], "sp_not_divisor", `Ulysses SP ${sp} does not divide the ${totalDevices} devices`, `use one of ${divisors(totalDevices).join(", ")}`);
    const maxTok = s.train?.maxTokensPerDevice;
    if (maxTok !== undefined && s.train?.dynamicBsz === true && maxTok * sp < prompt + response) {
      err([...at, "train", "maxTokensPerDevice"], "token_budget", `maxTokensPerDevice ${maxTok} × SP ${sp} cannot hold one sample of ${prompt + response} tokens`, `raise it to at least ${Math.ceil((prompt + response) / sp)}`);
    }
    const save = s.schedule?.saveEvery;
    if (save !== undefined && save <= 0 && s.schedule?.epochs !== undefined) {
      warn([...at, "schedule", "saveEvery"], "no_checkpoints", "the RL stage saves no intermediate checkpoints; a restarted job starts over");
    }
    if (s.speculative !== undefined) {
      const patches = (recipe.runtime.verl.patches ?? []).map((p) => basename(p.file));
      s.speculative.requiresPatches.forEach((p, k) => {
        if (!patches.includes(basename(p))) {
          err([...at, "speculative", "requiresPatches", k], "missing_patch", `speculative decoding needs patch ${p}, which runtime.verl.patches does not list`);
        }
      });
      if (s.speculative.method === "eagle3" && s.speculative.draftModel === undefined) {
        err([...at, "speculative", "draftModel"], "missing_field", "EAGLE3 needs a draft model (a key of `models`)");
      } else if (s.speculative.draftModel !== undefined && recipe.models[s.speculative.draftModel] === undefined) {
        err([...at, "speculative", "draftModel"], "unknown_model", `unknown model ${JSON.stringify(s.speculative.draftModel)}`, didYouMean(s.speculative.draftModel, Object.keys(recipe.models)));
      }
    }
    checkReward(agentLoop);
  }

  function checkReward(agentLoop: boolean): void {
    const reward = recipe.reward;
    if (reward?.manager === "prime" && agentLoop && profile.primeUnavailableWithAgentLoop) {
      err(["reward", "manager"], "prime_with_agent_loop", `the prime reward manager cannot run with the agent loop at verl ${profile.name} ("Unknown reward loop manager")`,
        "use naive (or dapo / rate_limited to bound sandbox load)");
    }
    const fn = reward?.fn;
    // Without a path the bundled rlpipe shim is used, and it accepts **kwargs.
    if (fn?.path === undefined || !agentLoop || !profile.rewardFnNeedsKwargs) return;
    const fnPath = fn.path;
    let accepts = fn.acceptsKwargs;
    if (accepts === undefined) {
      const text = opts.readRecipeFile?.(fnPath);
      if (text !== undefined) accepts = signatureAcceptsKwargs(text, fn.name);
    }
    if (accepts === false) {
      err(["reward", "fn", fn.acceptsKwargs === undefined ? "path" : "acceptsKwargs"], "reward_needs_kwargs",
        `${fn.name}() must accept **kwargs: with the agent loop verl ${profile.name} calls it with extra keywords (reward_router_address, …)`,
        `change the signature to def ${fn.name}(data_source, solution_str, ground_truth, extra_info=None, **kwargs)`);
    } else if (accepts === undefined) {
      warn(["reward", "fn", "acceptsKwargs"], "reward_kwargs_unverified", `cannot check that ${fn.name}() in ${fnPath} accepts **kwargs (the file is not next to the recipe)`,
        "set reward.fn.acceptsKwargs: true once you have checked the signature");
    }
  }

  // ---- tools and sandbox
  const sb = recipe.sandbox;
  if (sb !== undefined) {
    if (sb.deploy === "colocated" && sb.server === undefined && sb.kind !== "rlpipe") {
      err(["sandbox", "server"], "missing_field", `a colocated ${sb.kind} sandbox needs \`server\` (dir, start command, port)`);
    }
    if (sb.auth !== undefined && sb.kind !== "rlpipe") warn(["sandbox", "auth"], "unused_field", `ignored: only rlpipe's own function takes a token (kind is ${sb.kind})`);
    if (sb.auth !== undefined && recipe.secrets?.[sb.auth.secret] === undefined) {
      err(["sandbox", "auth", "secret"], "unknown_secret", `unknown secret ${JSON.stringify(sb.auth.secret)}`, didYouMean(sb.auth.secret, Object.keys(recipe.secrets ?? {})) ?? "declare it under `secrets:`");
    }
    if (sb.deploy === "external" && sb.url === undefined) err(["sandbox", "url"], "missing_field", "an external sandbox needs its `url`");
    if (sb.deploy === "managed" && sb.managed === undefined) err(["sandbox", "managed"], "missing_field", "a managed sandbox needs `managed` (provider, template, apiKey)");
    if (sb.kind === "e2b" && sb.deploy !== "managed") err(["sandbox", "deploy"], "invalid_value", "an e2b sandbox is always managed (E2B or Tencent AGS)", "set deploy: managed");
    if (sb.deploy !== "managed" && sb.managed !== undefined) warn(["sandbox", "managed"], "unused_field", `ignored: the sandbox is ${sb.deploy}, not managed`);
    if (sb.managed !== undefined && recipe.secrets?.[sb.managed.apiKey.secret] === undefined) {
      err(["sandbox", "managed", "apiKey", "secret"], "unknown_secret", `unknown secret ${JSON.stringify(sb.managed.apiKey.secret)}`,
        didYouMean(sb.managed.apiKey.secret, Object.keys(recipe.secrets ?? {})) ?? "declare it under `secrets:` with the environment variable that holds it");
    }
  }
  const toolNames = new Map<string, number>();
  (recipe.tools ?? []).forEach((t, i) => {
    const prev = toolNames.get(t.name);
    if (prev !== undefined) err(["tools", i, "name"], "duplicate_tool", `tool ${JSON.stringify(t.name)} is already defined by tools[${prev}]`);
    toolNames.set(t.name, i);
    if (t.preset === "e2b" && sb?.kind !== "e2b") err(["tools", i, "preset"], "sandbox_mismatch", "the e2b tool needs sandbox.kind: e2b (managed E2B or AGS)");
  });

  // ---- logging backends that need credentials
  const backends = new Set<string>([...(recipe.logging?.backends ?? []), ...stages.flatMap((s) => ("logging" in s ? s.logging?.backends ?? [] : []))]);
  if (backends.has("wandb") && !Object.values(recipe.secrets ?? {}).some((s) => s.env === "WANDB_API_KEY")) {
    warn(["secrets"], "wandb_key", "a stage logs to wandb but no secret maps WANDB_API_KEY", "add secrets: {wandb: {env: WANDB_API_KEY}} so launch.sh checks it before training starts");
  }

  // ---- provider-neutral sanity
  if (recipe.runtime.accelerator === "ascend-npu" && recipe.targets?.tione !== undefined) {
    err(["targets", "tione"], "accelerator_mismatch", "TI-ONE offers NVIDIA GPUs, but runtime.accelerator is ascend-npu");
  }
  checkPlainSecrets(recipe, err);
  return issues;
}

/** Multi-turn tool calls run in verl's agent loop (which changes how rewards are called). */
export function usesAgentLoop(s: RlStage | EvalStage): boolean {
  return s.agent?.multiTurn === true || s.agent?.loop !== undefined || (s.agent?.tools?.length ?? 0) > 0;
}

/** Whether `def name(...)` in Python source takes **kwargs (a regex over the parameter list, comments stripped). */
export function signatureAcceptsKwargs(source: string, name: string): boolean | undefined {
  const re = new RegExp(`^\\s*(?:async\\s+)?def\\s+${name}\\s*\\(([^)]*)\\)`, "m");
  const m = re.exec(source.replace(/#[^\n]*/g, ""));
  return m === null ? undefined : /\*\*\s*[A-Za-z_]/.test(m[1]!);
}

const SECRET_PATTERNS: readonly [RegExp, string][] = [
  [/\bark_[A-Za-z0-9]{8,}/, "a Tencent AGS API key"],
  [/\bAKID[0-9A-Za-z]{16,}/, "a Tencent Cloud SecretId"],
  [/\bAKIA[0-9A-Z]{16}\b/, "an AWS access key id"],
  [/\be2b_[0-9a-f]{20,}/, "an E2B API key"],
  [/\bsk-[A-Za-z0-9_-]{20,}/, "an API secret key"],
  [/-----BEGIN [A-Z ]*PRIVATE KEY/, "a private key"],
  [/[?&](?:q-signature|X-Amz-Signature|Signature)=/i, "a pre-signed URL"],
];
const SECRETISH_KEY = /(api_?key|secret|token|password|passwd|access_?key)$/i;

/** Secrets belong under `secrets:` as references; a literal one anywhere in the recipe is an error. */
function checkPlainSecrets(recipe: Recipe, err: (p: RecipePath, c: string, m: string, h?: string) => void): void {
  const visit = (v: unknown, path: RecipePath): void => {
    if (typeof v === "string") {
      for (const [re, what] of SECRET_PATTERNS) {
        if (re.test(v)) {
          err(path, "plain_secret", `looks like ${what}; secrets must not be written in a recipe`, "declare it under `secrets:` (an environment variable name) and reference it");
          return;
        }
      }
      const key = path[path.length - 1];
      const isReference = recipe.secrets?.[v] !== undefined || /^\$\{oc\.env:[A-Za-z_][A-Za-z0-9_]*\}$/.test(v);
      if (typeof key === "string" && SECRETISH_KEY.test(key) && v !== "" && !isReference && path[0] !== "secrets") {
        err(path, "plain_secret", `${key} holds a literal value; secrets must not be written in a recipe`, "declare it under `secrets:` and let the tool read it from the environment (${oc.env:NAME})");
      }
      return;
    }
    if (Array.isArray(v)) v.forEach((x, i) => visit(x, [...path, i]));
    else if (v !== null && typeof v === "object") for (const [k, x] of Object.entries(v)) visit(x, [...path, k]);
  };
  visit(recipe, []);
}

/** The multiples of `m` nearest `x` from below and above ("64 or 72"; one when `x` is below `m`). */
function nearMultiples(x: number, m: number): string {
  const below = Math.floor(x / m) * m;
  const above = below + m;
  return below === 0 ? String(above) : `${below} or ${above}`;
}

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

function divisors(n: number): number[] {
  return Array.from({ length: n }, (_, i) => i + 1).filter((d) => n % d === 0);
}

function basename(p: string): string {
  return p.slice(p.lastIndexOf("/") + 1);
}
