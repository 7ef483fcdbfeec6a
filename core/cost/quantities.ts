// Usage-billed quantities of a run beyond training compute: sandbox seconds (tool calls, reward test cases, pool
// idle time), function requests and GB-seconds, checkpoint storage, requests and egress. Each figure the recipe
// does not give comes from a default below, stated with its source in the report's assumptions.
import type { Provider, Recipe } from "../recipe/schema.js";
import { retentionOf, saveSteps, stageCheckpoints } from "./checkpoint-retention.js";
import { add, exact, fromInput, mul, range } from "./range.js";
import type { Range } from "./types.js";
import type { StageWork, Workload } from "./workload.js";

export interface UsageDefault { readonly value: Range; readonly basis: string }

export const USAGE_DEFAULTS = {
  toolCallsPerResponse: {
    value: range(1.7, 2.3, 4),
    basis: "tool calls per response ≈ (num_turns − 2) / 2 from published num_turns means: 5.4 and 7.0 (seed 002, AIME 2025 validation), 6.59 (seed 003), 10 (volcengine/verl recipe/retool README, GRPO at 150 steps) ⇒ 1.7–2.3–4",
  },
  toolCallSeconds: {
    value: range(0.1, 1, 5),
    basis: "sandbox seconds per tool call 0.1–1–5 (assumed; most calls finish in milliseconds per seed 003's SandboxFusion log, plus the round trip)",
  },
  testCasesPerReward: {
    value: range(5, 10, 20),
    basis: "test cases per reward 5–10–20 (assumed; build_dataset.py keeps problems with at least 5, seed 000)",
  },
  testCaseSeconds: { value: range(0.05, 0.5, 2), basis: "seconds per test case 0.05–0.5–2 (assumed)" },
  sandboxIdleShare: {
    value: range(0, 0.5, 1),
    basis: "a managed sandbox opened by a trajectory's first tool call is billed until killed or timed out: alive 0–50–100% of min(sandbox timeout, rollout time) beyond its calls (assumed)",
  },
  storageMonths: { value: range(0, 1, 3), basis: "checkpoints kept in object storage 0–1–3 months after the run (assumed)" },
  checkpointBytesPerParam: {
    value: range(12, 14, 16),
    basis: "a checkpoint with optimizer state holds 12–14–16 bytes per parameter (mixed-precision Adam: fp32 master weights and two moments 12 B + bf16 weights 2 B, ZeRO paper §3.1: 16 B with gradients)",
  },
} as const satisfies Record<string, UsageDefault>;

/** E2B's default sandbox (e2b.dev/docs/faq/calculate-sandbox-price: 2 vCPU + 0.5 GiB ≈ $0.109/h). */
export const DEFAULT_SANDBOX = { vcpus: 2, memoryGiB: 0.5 } as const;
/** Function memory: the CDK app's reward function (cdk/lib/reward-function.ts), `rlpipe functions deploy`'s default elsewhere. */
export const FUNCTION_MEMORY_MB = { lambda: 1024, functiongraph: 512, scf: 512 } as const;
/** Seconds a function spends on a request besides the sandbox work it waits for (assumed). */
export const FUNCTION_OVERHEAD_SECONDS = range(0.02, 0.05, 0.2);
/** rlpipe sync's multipart part size (adapters/storage/object-store.ts DEFAULT_PART_BYTES). */
export const PART_BYTES = 8 * 1024 * 1024;
const HOURS_PER_MONTH = 730;

export type FunctionPlatform = keyof typeof FUNCTION_MEMORY_MB;
export type StorageService = "s3" | "obs" | "cos";

export interface Usage {
  /** Sandbox seconds (all of them; where it is billed depends on where the sandbox runs). */
  readonly sandboxSeconds: Range;
  readonly sandbox?: {
    readonly billing: "compute" | "managed" | "self-hosted";
    readonly provider?: "e2b" | "tencent-ags";
    readonly vcpus: number; readonly memoryGiB: number;
  };
  readonly functions?: { readonly platform: FunctionPlatform; readonly requests: Range; readonly gbSeconds: Range; readonly memoryMB: number };
  readonly storage?: {
    readonly service: StorageService; readonly gbMonths: Range; readonly storedGB: Range;
    /** gbMonths split: held while the run goes on (growing), and kept after it (the retention months). */
    readonly gbMonthsDuringRun: Range; readonly gbMonthsAfterRun: Range; readonly retentionMonths: Range;
    readonly putRequests: Range; readonly getRequests: Range; readonly egressGB: Range;
    /** Checkpoints written, and those left in storage at the run's end under `retention` (which the label names). */
    readonly checkpointsSaved: Range; readonly checkpointsRetained: Range; readonly retention: string; readonly retentionText: string;
  };
  readonly assumptions: readonly string[];
  readonly exclusions: readonly string[];
}

type UsageKey = "toolCallsPerResponse" | "toolCallSeconds" | "testCasesPerReward" | "testCaseSeconds" | "storageMonths";

export function usageFigure(recipe: Recipe, key: UsageKey): { value: Range; basis: string } {
  const given = recipe.cost?.usage?.[key];
  if (given !== undefined) return { value: fromInput(given, exact(0)), basis: `cost.usage.${key} = ${typeof given === "number" ? given : `${given.low}–${given.expected}–${given.high}`}` };
  return USAGE_DEFAULTS[key];
}

/** Whether the reward function calls the sandbox: rlpipe's own shim, or kwargs that name ${sandbox.url}. */
export function rewardUsesSandbox(recipe: Recipe): boolean {
  if (recipe.sandbox === undefined) return false;
  if (recipe.sandbox.kind === "rlpipe") return true;
  return Object.values(recipe.reward?.fn?.kwargs ?? {}).some((v) => typeof v === "string" && v.includes("${sandbox.url}"));
}

function toolsUseSandbox(recipe: Recipe, stage: StageWork): boolean {
  const s = recipe.stages.find((x) => x.id === stage.id);
  return recipe.sandbox !== undefined && s !== undefined && (s.type === "rl" || s.type === "eval") && (s.agent?.tools?.length ?? 0) > 0;
}

export function functionPlatform(recipe: Recipe, provider: Provider): { platform: FunctionPlatform; basis: string } {
  const host = (() => { try { return new URL(recipe.sandbox?.url ?? "").hostname; } catch { return ""; } })();
  if (/lambda-url\.|amazonaws\.com$|on\.aws$/.test(host)) return { platform: "lambda", basis: `the sandbox URL ${host} is an AWS Lambda endpoint` };
  if (/functiongraph|huaweicloud/.test(host)) return { platform: "functiongraph", basis: `the sandbox URL ${host} is a FunctionGraph endpoint` };
  if (/scf|tencentcs|tencent/.test(host)) return { platform: "scf", basis: `the sandbox URL ${host} is an SCF endpoint` };
  const platform: FunctionPlatform = provider === "modelarts" ? "functiongraph" : provider === "tione" ? "scf" : "lambda";
  return { platform, basis: `rlpipe's functions assumed on ${platform} (the ${provider} provider's own platform${platform === "lambda" ? ": the CDK app, arm64" : ""}); the sandbox URL does not say` };
}

export function storageServiceOf(recipe: Recipe, provider: Provider): StorageService | undefined {
  const uri = recipe.checkpoints?.storage;
  if (uri !== undefined) {
    const scheme = uri.slice(0, uri.indexOf(":"));
    return scheme === "s3" || scheme === "obs" || scheme === "cos" ? scheme : undefined;
  }
  if (provider === "modelarts" && recipe.targets?.modelarts?.codeDir !== undefined) return "obs";
  if (provider === "tione" && recipe.targets?.tione?.codeDir !== undefined) return "cos";
  return undefined;
}

export function usageOf(recipe: Recipe, provider: Provider, work: Workload): Usage {
  const assumptions: string[] = [];
  const exclusions: string[] = [];
  const sb = recipe.sandbox;
  const calls = usageFigure(recipe, "toolCallsPerResponse");
  const callSeconds = usageFigure(recipe, "toolCallSeconds");
  const cases = usageFigure(recipe, "testCasesPerReward");
  const caseSeconds = usageFigure(recipe, "testCaseSeconds");
  const reward = rewardUsesSandbox(recipe);
  const managed = sb?.deploy === "managed" && sb.kind === "e2b" ? sb.managed : undefined;
  const viaFunctions = sb?.kind === "rlpipe" && sb.deploy !== "colocated";

  // Per stage: sandbox seconds = responses × (tool calls × call seconds + test cases × case seconds) + idle.
  let sandboxSeconds = exact(0);
  let toolRequests = exact(0);
  let rewardRequests = exact(0);
  let usedTools = false;
  for (const st of work.stages) {
    if (st.type === "score") {
      if (sb !== undefined) { sandboxSeconds = add(sandboxSeconds, mul(st.responses, cases.value, caseSeconds.value)); rewardRequests = add(rewardRequests, st.responses); }
      continue;
    }
    if (st.responses.high === 0) continue;
    const tools = toolsUseSandbox(recipe, st);
    usedTools ||= tools;
    const perResponse = add(tools ? mul(calls.value, callSeconds.value) : exact(0), reward ? mul(cases.value, caseSeconds.value) : exact(0));
    let idle = exact(0);
    if (tools && managed !== undefined && st.rolloutSecondsPerStep !== undefined) {
      const given = recipe.cost?.usage?.sandboxIdleSecondsPerResponse;
      const timeout = managed.sandboxTimeoutS ?? 300;
      const life = range(Math.min(timeout, st.rolloutSecondsPerStep.low), Math.min(timeout, st.rolloutSecondsPerStep.expected), Math.min(timeout, st.rolloutSecondsPerStep.high));
      idle = given === undefined ? mul(life, USAGE_DEFAULTS.sandboxIdleShare.value) : fromInput(given, exact(0));
      if (given === undefined) assumptions.push(`stage ${st.id}: ${USAGE_DEFAULTS.sandboxIdleShare.basis}; timeout ${timeout} s${managed.sandboxTimeoutS === undefined ? " (default)" : ""}`);
      else assumptions.push(`stage ${st.id}: cost.usage.sandboxIdleSecondsPerResponse given`);
    }
    sandboxSeconds = add(sandboxSeconds, mul(st.responses, add(perResponse, idle)));
    if (tools) toolRequests = add(toolRequests, mul(st.responses, calls.value));
    if (reward) rewardRequests = add(rewardRequests, st.responses);
  }
  if (sb !== undefined && (usedTools || reward || work.stages.some((s) => s.type === "score"))) {
    if (usedTools) assumptions.push(calls.basis, callSeconds.basis);
    if (reward || work.stages.some((s) => s.type === "score")) assumptions.push(cases.basis, caseSeconds.basis);
  }

  let sandbox: Usage["sandbox"];
  const vcpus = recipe.cost?.usage?.sandboxVcpus ?? DEFAULT_SANDBOX.vcpus;
  const memoryGiB = recipe.cost?.usage?.sandboxMemoryGiB ?? DEFAULT_SANDBOX.memoryGiB;
  if (sb !== undefined && sandboxSeconds.high > 0) {
    if (sb.deploy === "colocated") sandbox = { billing: "compute", vcpus, memoryGiB };
    else if (managed !== undefined) sandbox = { billing: "managed", provider: managed.provider, vcpus, memoryGiB };
    else if (viaFunctions && sb.managed !== undefined) sandbox = { billing: "managed", provider: sb.managed.provider, vcpus, memoryGiB };
    else if (!viaFunctions) sandbox = { billing: "self-hosted", vcpus, memoryGiB };
    if (sandbox?.billing === "managed" || sandbox?.billing === "self-hosted") {
      assumptions.push(recipe.cost?.usage?.sandboxVcpus === undefined && recipe.cost?.usage?.sandboxMemoryGiB === undefined
        ? `sandbox size ${vcpus} vCPU, ${memoryGiB} GiB (E2B's default sandbox, e2b.dev/docs/faq/calculate-sandbox-price)`
        : `sandbox size ${vcpus} vCPU, ${memoryGiB} GiB (cost.usage)`);
    }
    if (viaFunctions && sb.managed === undefined) exclusions.push("the sandbox backend behind rlpipe's reward function (E2B, AGS or a hosted ScaleBox, chosen by the function's configuration): set sandbox.managed to price it");
  }

  let functions: Usage["functions"];
  if (viaFunctions && sandboxSeconds.high > 0) {
    const { platform, basis } = functionPlatform(recipe, provider);
    const memoryMB = recipe.cost?.usage?.functionMemoryMB ?? FUNCTION_MEMORY_MB[platform];
    const requests = add(toolRequests, rewardRequests);
    const seconds = add(sandboxSeconds, mul(requests, FUNCTION_OVERHEAD_SECONDS));
    functions = { platform, requests, gbSeconds: mul(seconds, memoryMB / 1024), memoryMB };
    assumptions.push(basis, `functions: one request per tool call and per reward, each lasting its sandbox work plus 0.02–0.05–0.2 s, at ${memoryMB} MB`);
  }

  const storage = storageOf(recipe, provider, work, assumptions, exclusions);
  return { sandboxSeconds, ...(sandbox === undefined ? {} : { sandbox }), ...(functions === undefined ? {} : { functions }), ...(storage === undefined ? {} : { storage }), assumptions, exclusions };
}

function storageOf(recipe: Recipe, provider: Provider, work: Workload, assumptions: string[], exclusions: string[]): Usage["storage"] {
  const service = storageServiceOf(recipe, provider);
  if (service === undefined) {
    exclusions.push(recipe.checkpoints?.storage?.startsWith("file:") === true
      ? "checkpoints on a local or shared file system (checkpoints.storage file://)"
      : "checkpoint storage: no object storage is set (checkpoints.storage), so checkpoints stay on the job's disks");
    return undefined;
  }
  const bytesPerParam = USAGE_DEFAULTS.checkpointBytesPerParam;
  const retention = retentionOf(recipe);
  const bounds = ["low", "expected", "high"] as const;
  const zero = () => ({ low: 0, expected: 0, high: 0 });
  const stored = zero(), saved = zero(), retained = zero(), gbHoursDuringRun = zero();
  let putRequests = exact(0);
  work.stages.forEach((st, i) => {
    if (st.steps === undefined || st.model === undefined || (st.type !== "rl" && st.type !== "sft")) return;
    const perSave = mul(st.model.total, bytesPerParam.value);
    for (const b of bounds) {
      const ck = stageCheckpoints(st.steps[b], st.saveEvery, st.type, retention);
      const hoursPerStep = st.steps[b] > 0 ? st.hours[b] / st.steps[b] : 0;
      // A stage's checkpoints stay through the stages after it (an SFT checkpoint while RL runs).
      const laterHours = work.stages.slice(i + 1).reduce((h, x) => h + x.hours[b], 0);
      const gb = perSave[b] * 1e-9;
      saved[b] += ck.saved;
      retained[b] += ck.retained;
      stored[b] += ck.retained * gb;
      gbHoursDuringRun[b] += gb * (ck.heldSteps * hoursPerStep + ck.retained * laterHours);
    }
    // Every saved checkpoint is uploaded once, retired later or not.
    const n = range(...bounds.map((b) => saveSteps(Math.round(st.steps![b]), st.saveEvery, st.type as "rl" | "sft").length) as [number, number, number]);
    putRequests = add(putRequests, mul(n, perSave, 1 / PART_BYTES));
  });
  const months = usageFigure(recipe, "storageMonths");
  const gbMonthsDuringRun = mul(gbHoursDuringRun, 1 / HOURS_PER_MONTH);
  const gbMonthsAfterRun = mul(stored, months.value);
  const gbMonths = add(gbMonthsDuringRun, gbMonthsAfterRun);
  const passes = mul(work.hours, 3600 / (recipe.checkpoints?.intervalS ?? 30));
  putRequests = add(putRequests, mul(passes, 2));
  const getRequests = passes;
  const exports = recipe.cost?.usage?.checkpointExports ?? 1;
  const last = [...work.stages].reverse().find((s) => s.model !== undefined && s.steps !== undefined) ?? [...work.stages].reverse().find((s) => s.model !== undefined);
  const egressGB = last?.model === undefined ? exact(0) : mul(last.model.total, 2 * exports * 1e-9);
  assumptions.push(
    `checkpoints: ${bytesPerParam.basis}; saved every saveEvery steps and at the last step; retention: ${retention.text}; each checkpoint is billed from its save until it is retired, a kept one through the rest of the run and after it: ${months.basis}`,
    `storage requests: one PUT per ${PART_BYTES / 1048576} MiB part of each checkpoint, and per sync pass (every ${recipe.checkpoints?.intervalS ?? 30} s) one LIST and two PUTs of metrics`,
    `egress: ${exports} download${exports === 1 ? "" : "s"} of the final model's bf16 weights (2 bytes per parameter)`,
  );
  return {
    service, gbMonths, storedGB: stored, gbMonthsDuringRun, gbMonthsAfterRun, retentionMonths: months.value, putRequests, getRequests, egressGB,
    checkpointsSaved: saved, checkpointsRetained: retained, retention: retention.label, retentionText: retention.text,
  };
}
