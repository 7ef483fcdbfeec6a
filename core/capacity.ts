// Sandbox capacity per RL step, checked before a run: what a step asks of the sandbox (prompts × n responses ×
// tool calls per response, and each reward's test cases) against what the backend can do (a self-hosted server's
// measured rate per core × cores × servers; a managed account's concurrent sandboxes and creates per second), as a
// share of the step time the cost model assumes. Above SHARE_LIMIT, plan warns (sandbox_capacity) with the numbers
// and what to change. Pure: no I/O; the same recipe and provider give the same figures.
import type { RecipeIssue } from "./errors.js";
import { type UsageDefault, USAGE_DEFAULTS, rewardUsesSandbox, usageFigure } from "./cost/quantities.js";
import type { SandboxCapacity, SandboxDemand, SandboxSupply, StageCapacity } from "./cost/types.js";
import { workloadOf } from "./cost/workload.js";
import { parseNodeSpec } from "./providers/tione-request.js";
import type { Provider, Recipe, RlStage } from "./recipe/schema.js";
import { TIER_LIMITS } from "./sandbox-quota.js";

export type { SandboxCapacity, SandboxDemand, SandboxSupply, StageCapacity } from "./cost/types.js";

/**
 * Plan warns when the sandbox needs more than this share of a step. The sandbox's work overlaps generation only in
 * part (a trajectory waits for its tool call; rewards of a batch are scored together), so a quarter of the step is
 * already time the accelerators may spend waiting.
 */
export const SHARE_LIMIT = 0.25;

export interface ServerRates {
  readonly casesPerSPerCore: number;
  /** /run_code programs (one tool call each) per second per core. */
  readonly runCodePerSPerCore: number;
  readonly source: string;
}

/**
 * Self-hosted rates per core, all from one machine and one workload so that they compare: bench/sandbox-peer.mjs on a
 * 2-core AMD EPYC (README, bench/results/sandbox-peer.json; 10-case Python stdin/stdout a+b programs via
 * /common_evaluate_batch and `print(1)` via /run_code, 8 in flight). Real test suites are heavier: ScaleBox's own report
 * runs 21.7–39.3 coding problems/s on a 64-core node (scale-and-verl.md), so give cost.usage.testCaseSeconds and
 * toolCallSeconds when you have measured your workload.
 */
export const SERVER_RATES = {
  rlpipe: {
    casesPerSPerCore: 1059 / 2, runCodePerSPerCore: 346 / 2,
    source: "rlpipe serve, warm: 1059 test cases/s and 346 /run_code/s on 2 cores (bench/sandbox-peer.mjs, AMD EPYC)",
  },
  scalebox: {
    casesPerSPerCore: 452 / 2, runCodePerSPerCore: 79 / 2,
    source: "ScaleBox: 452 test cases/s and 79 /run_code/s on the same 2 cores (bench/sandbox-peer.mjs --peer)",
  },
  // Not measured here: ScaleBox's rates, test cases × 0.5 — SandboxFusion ran 13.6 and 14.9 tasks/s against
  // ScaleBox's 21.7 and 39.3 on one node in ScaleBox's report (ratios 0.63 and 0.38); /run_code as fast as
  // ScaleBox's (19.7 against 20.9 req/s on 2 vCPU, sandbox-apis.md §3.4).
  "sandbox-fusion": {
    casesPerSPerCore: (452 / 2) * 0.5, runCodePerSPerCore: 79 / 2,
    source: "SandboxFusion: ScaleBox's rates with test cases × 0.5 (13.6–14.9 against 21.7–39.3 tasks/s per node in ScaleBox's report; /run_code alike)",
  },
} as const satisfies Readonly<Record<string, ServerRates>>;

/** Cores per node when neither the recipe nor its target says: a training node has more, but training uses many. */
export const DEFAULT_CORES_PER_NODE = 32;
/** uvicorn workers of ScaleBox's/SandboxFusion's `make run-online` when sandbox.server.workers is unset (WORKERS default). */
export const DEFAULT_SERVER_WORKERS = 32;
/**
 * A managed sandbox call: create, run, kill. verl's tool agent loop calls create → execute → release per tool call
 * (tool_agent_loop.py _call_tool), and E2BCodeTool holds no pool, so each call creates a sandbox (recipes-and-verl.md).
 */
export const MANAGED_TOOL_CALL_SECONDS: UsageDefault = USAGE_DEFAULTS.toolCallSeconds;

/** `stepSeconds`: a measured step time for the RL stages that set none in cost.stages (rlpipe cost --step-seconds). */
export function sandboxCapacity(recipe: Recipe, provider: Provider, opts: { readonly stepSeconds?: number } = {}): SandboxCapacity | undefined {
  const rl = recipe.stages.filter((s): s is RlStage => s.type === "rl");
  if (rl.length === 0 || (recipe.sandbox === undefined && !rl.some((s) => (s.agent?.tools?.length ?? 0) > 0))) return undefined;
  const usage = { testCasesPerReward: usageFigure(recipe, "testCasesPerReward").value, testCaseSeconds: usageFigure(recipe, "testCaseSeconds").value };
  const work = workloadOf(recipe, provider, { ...usage, ...(opts.stepSeconds === undefined ? {} : { stepSeconds: opts.stepSeconds }) });
  const stages = rl.map((stage) => {
    const w = work.stages.find((s) => s.id === stage.id)!;
    const demand = demandOf(recipe, stage);
    const supply = supplyOf(recipe, provider);
    return stageCapacity(stage.id, demand, supply, w.secondsPerStep!.expected, w.stepBasis ?? "model");
  });
  return { shareLimit: SHARE_LIMIT, stages };
}

/** A stage's demand: responses × tool calls (the turn limit unless measured) and responses × test cases. */
export function demandOf(recipe: Recipe, stage: RlStage): SandboxDemand {
  const responsesPerStep = stage.data.promptsPerStep * (stage.rollout.n ?? 1);
  const tools = (stage.agent?.tools?.length ?? 0) > 0;
  const calls = tools ? toolCallsPerResponse(recipe, stage) : { value: 0, basis: "no tools" };
  const reward = recipe.sandbox !== undefined && rewardUsesSandbox(recipe);
  const cases = usageFigure(recipe, "testCasesPerReward");
  const given = recipe.cost?.usage?.testCasesPerReward !== undefined;
  const testCasesPerReward = reward ? cases.value.high : 0;
  return {
    responsesPerStep,
    toolCallsPerResponse: calls.value, toolCallsBasis: calls.basis, toolCallsPerStep: responsesPerStep * calls.value,
    testCasesPerReward,
    ...(reward ? { testCasesBasis: given ? "cost.usage.testCasesPerReward" : "assumed: the high end of 5–10–20" } : {}),
    testCasesPerStep: responsesPerStep * testCasesPerReward,
  };
}

function toolCallsPerResponse(recipe: Recipe, stage: RlStage): { value: number; basis: string } {
  const given = recipe.cost?.usage?.toolCallsPerResponse;
  if (given !== undefined) return { value: typeof given === "number" ? given : given.high, basis: "cost.usage.toolCallsPerResponse" };
  // Each tool call is answered by one user turn and made by one assistant turn: the smaller limit bounds the calls.
  const a = stage.agent?.maxAssistantTurns;
  const u = stage.agent?.maxUserTurns;
  if (a !== undefined && (u === undefined || a <= u)) return { value: a, basis: "agent.maxAssistantTurns" };
  if (u !== undefined) return { value: u, basis: "agent.maxUserTurns" };
  return { value: USAGE_DEFAULTS.toolCallsPerResponse.value.high, basis: "no turn limit: the high end of published means 1.7–2.3–4" };
}

/** Cores a co-located sandbox has on each node: the recipe's, the target's, else the default. */
export function coresPerNode(recipe: Recipe, provider: Provider): { cores: number; basis: string } {
  if (recipe.resources.cpusPerNode !== undefined) return { cores: recipe.resources.cpusPerNode, basis: "resources.cpusPerNode" };
  if (provider === "tione") {
    const w = recipe.targets?.tione?.worker;
    const milli = w?.cpuMilli ?? (w?.spec === undefined ? undefined : parseNodeSpec(w.spec)?.cpuMilli);
    if (milli !== undefined) return { cores: Math.floor(milli / 1000), basis: `the TI-ONE worker's ${w?.cpuMilli !== undefined ? "cpuMilli" : `spec ${w!.spec!.split(/\s+/)[0]}`}` };
  }
  if (provider === "slurm" && recipe.targets?.slurm?.cpusPerTask !== undefined) return { cores: recipe.targets.slurm.cpusPerTask, basis: "targets.slurm.cpusPerTask" };
  return { cores: DEFAULT_CORES_PER_NODE, basis: "assumed; set resources.cpusPerNode" };
}

/** What the recipe's sandbox can do per second, or why that is not known. */
export function supplyOf(recipe: Recipe, provider: Provider): SandboxSupply {
  const sb = recipe.sandbox;
  if (sb === undefined) return { kind: "unknown", backend: "none", basis: ["the recipe names no sandbox: its tools call something plan cannot size"] };
  const given = (key: "toolCallSeconds" | "testCaseSeconds") => {
    const v = recipe.cost?.usage?.[key];
    return v === undefined ? undefined : typeof v === "number" ? v : v.expected;
  };
  const callS = given("toolCallSeconds");
  const caseS = given("testCaseSeconds");

  if (sb.kind === "e2b" || (sb.kind === "rlpipe" && sb.deploy !== "colocated" && sb.managed !== undefined)) {
    const m = sb.managed;
    const tier = m?.account?.tier ?? "hobby";
    const limits = TIER_LIMITS[tier];
    const maxSandboxes = m?.account?.maxSandboxes ?? limits.maxSandboxes;
    const createsPerS = m?.account?.createsPerS ?? limits.createsPerS;
    const name = m?.provider === "tencent-ags" ? "Tencent AGS" : "E2B";
    const fromTier = m?.account?.maxSandboxes === undefined || m?.account?.createsPerS === undefined;
    const accountBasis = m?.account === undefined
      ? `E2B Hobby's limits, assumed${m?.provider === "tencent-ags" ? " as AGS publishes no quota" : ""}; set sandbox.managed.account`
      : fromTier ? `sandbox.managed.account over E2B ${tier === "pro" ? "Pro" : "Hobby"}'s limits` : "sandbox.managed.account";
    // rlpipe's function keeps a pool of long-lived sandboxes (adapters/sandboxes/e2b-pool.ts): no create per call.
    const pool = sb.kind === "rlpipe";
    const toolCallSeconds = callS ?? MANAGED_TOOL_CALL_SECONDS.value.expected;
    const testCaseSeconds = caseS ?? 1 / SERVER_RATES.rlpipe.casesPerSPerCore;
    return {
      kind: "managed", backend: pool ? `rlpipe's function on ${name}` : name, maxSandboxes, createsPerS, accountBasis,
      createsPerToolCall: pool ? 0 : 1, toolCallSeconds, testCaseSeconds,
      basis: [
        `${name}: ${maxSandboxes} concurrent sandboxes, ${createsPerS} creates/s (${accountBasis})`,
        pool ? "rlpipe's function reuses a pool of sandboxes: no create per call" : "a sandbox created and killed per tool call (verl's tool agent loop: create → execute → release per call)",
        callS === undefined ? `${toolCallSeconds} s of a sandbox per tool call (${MANAGED_TOOL_CALL_SECONDS.basis})` : `${toolCallSeconds} s per tool call (cost.usage.toolCallSeconds)`,
        caseS === undefined ? `a test case as fast as on one core of rlpipe serve (${SERVER_RATES.rlpipe.source})` : `${caseS} s per test case (cost.usage.testCaseSeconds)`,
      ],
    };
  }
  if (sb.kind === "rlpipe" && sb.deploy !== "colocated") {
    return { kind: "unknown", backend: "rlpipe's function", basis: [`rlpipe's function${sb.url === undefined ? "" : ` at ${sb.url}`} runs the backend its own configuration names (set sandbox.managed to size E2B/AGS behind it)`] };
  }

  const rates: ServerRates = SERVER_RATES[sb.kind === "rlpipe" ? "rlpipe" : sb.kind === "scalebox" ? "scalebox" : "sandbox-fusion"];
  const backend = sb.kind === "rlpipe" ? "rlpipe serve (local sandbox)" : sb.kind === "scalebox" ? "ScaleBox" : "SandboxFusion";
  const colocated = sb.deploy === "colocated";
  // Co-located: one server per node (launch.sh, or one Ray actor per node). External: the one URL the recipe names.
  const servers = colocated ? recipe.resources.nodes : 1;
  const node = colocated ? coresPerNode(recipe, provider) : undefined;
  const workers = sb.kind === "rlpipe" ? undefined : sb.server?.workers ?? DEFAULT_SERVER_WORKERS;
  // rlpipe serve runs a slot per core; a uvicorn worker is one process, so it uses at most one core.
  const coresPerServer = node === undefined ? workers ?? DEFAULT_CORES_PER_NODE : workers === undefined ? node.cores : Math.min(workers, node.cores);
  const coresBasis = node === undefined ? (workers === undefined ? "assumed" : "one core per worker, assumed") : node.basis;
  const runCodePerSPerCore = callS === undefined ? rates.runCodePerSPerCore : 1 / callS;
  const casesPerSPerCore = caseS === undefined ? rates.casesPerSPerCore : 1 / caseS;
  return {
    kind: "self-hosted", backend, servers, ...(node === undefined ? {} : { coresPerNode: node.cores }), coresPerServer, coresBasis,
    ...(workers === undefined ? {} : { workers }),
    toolCallsPerS: runCodePerSPerCore * coresPerServer * servers,
    testCasesPerS: casesPerSPerCore * coresPerServer * servers,
    basis: [
      callS === undefined && caseS === undefined ? rates.source
        : `${callS === undefined ? `tool calls: ${rates.source}` : `${callS} core-s per tool call (cost.usage.toolCallSeconds)`}; ${caseS === undefined ? `test cases: ${rates.source}` : `${caseS} core-s per test case (cost.usage.testCaseSeconds)`}`,
      `${servers} server${servers === 1 ? "" : "s"} (${colocated ? "one per node" : "the URL sandbox.url names"}) × ${coresPerServer} cores${workers === undefined ? "" : ` (${workers} workers, one core each at most)`}${node === undefined ? "" : ` of ${node.cores} per node`} (${coresBasis})`,
    ],
  };
}

/** Demand against supply for one stage, the line to print, and what to change when over the limit. */
export function stageCapacity(stage: string, demand: SandboxDemand, supply: SandboxSupply, stepSeconds: number, stepBasis: "model" | "measured", shareLimit = SHARE_LIMIT): StageCapacity {
  let seconds: number | undefined;
  let limitedBy: StageCapacity["limitedBy"];
  let detail = "";
  if (supply.kind === "self-hosted") {
    seconds = demand.toolCallsPerStep / supply.toolCallsPerS! + demand.testCasesPerStep / supply.testCasesPerS!;
    limitedBy = "throughput";
  } else if (supply.kind === "managed") {
    const busy = (demand.toolCallsPerStep * supply.toolCallSeconds! + demand.testCasesPerStep * supply.testCaseSeconds!) / supply.maxSandboxes!;
    const creates = (demand.toolCallsPerStep * supply.createsPerToolCall!) / supply.createsPerS!;
    seconds = Math.max(busy, creates);
    limitedBy = creates > busy ? "creates" : "concurrency";
    detail = supply.createsPerToolCall! > 0
      ? ` (${fmtCount(demand.toolCallsPerStep * supply.createsPerToolCall!)} creates at ${fmtRate(supply.createsPerS!)}/s: ${fmtSeconds(creates)}; sandbox time over ${supply.maxSandboxes} sandboxes: ${fmtSeconds(busy)})`
      : "";
  }
  const share = seconds === undefined ? undefined : seconds / stepSeconds;
  const over = share !== undefined && share > shareLimit;
  const base = { stage, demand, supply, stepSeconds, stepBasis, shareLimit };
  const line = `${stage}: ${demandText(demand)}; ${supplyText(supply, demand)}${seconds === undefined ? ""
    : ` → ${fmtSeconds(seconds)} per step${detail}, ${fmtPct(share!)} of the ≈${fmtSeconds(stepSeconds)} step (${stepBasis === "measured" ? "measured" : "model"}); ${over ? "over" : "within"} the ${fmtPct(shareLimit)} limit`}`;
  const hint = over ? hintFor(demand, supply, seconds!, stepSeconds, shareLimit) : undefined;
  return {
    ...base, ...(seconds === undefined ? {} : { sandboxSecondsPerStep: seconds, limitedBy: limitedBy!, share: share! }), over, line,
    ...(hint === undefined ? {} : { hint }),
  };
}

function demandText(d: SandboxDemand): string {
  const parts: string[] = [];
  if (d.toolCallsPerStep > 0) parts.push(`${fmtCount(d.responsesPerStep)} responses × ${fmtRate(d.toolCallsPerResponse)} tool calls (${d.toolCallsBasis}) = ${fmtCount(d.toolCallsPerStep)} tool calls`);
  if (d.testCasesPerStep > 0) parts.push(`${fmtCount(d.responsesPerStep)} rewards × ${fmtRate(d.testCasesPerReward)} test cases (${d.testCasesBasis}) = ${fmtCount(d.testCasesPerStep)} test cases`);
  if (parts.length === 0) return "no sandbox work per step (no tools; the reward does not call the sandbox)";
  return `${parts.join(" + ")} per step${d.testCasesPerStep === 0 ? " (the reward does not call the sandbox)" : ""}`;
}

function supplyText(s: SandboxSupply, d: SandboxDemand): string {
  if (s.kind === "unknown") return `capacity unknown: ${s.basis.join("; ")}`;
  if (s.kind === "managed") {
    return `${s.backend}, ${s.maxSandboxes} sandboxes and ${fmtRate(s.createsPerS!)} create${s.createsPerS === 1 ? "" : "s"}/s (${s.accountBasis}), ${s.createsPerToolCall! > 0 ? "one sandbox created per tool call" : "sandboxes reused"}, ${fmtRate(s.toolCallSeconds!)} s per tool call`;
  }
  const workers = s.workers === undefined ? "" : `${s.workers} workers, `;
  const where = s.coresPerNode !== undefined
    ? `on each of ${s.servers} node${s.servers === 1 ? "" : "s"}: ${workers}${s.coresPerNode} cores per node (${s.coresBasis})`
    : `at sandbox.url: ${workers}${s.coresPerServer} cores (${s.coresBasis})`;
  const rates = [...(d.toolCallsPerStep > 0 ? [`${fmtCount(s.toolCallsPerS!)} tool calls/s`] : []), ...(d.testCasesPerStep > 0 ? [`${fmtCount(s.testCasesPerS!)} test cases/s`] : [])];
  return `${s.backend} ${where}${rates.length === 0 ? "" : ` = ${rates.join(", ")}`}`;
}

function hintFor(d: SandboxDemand, s: SandboxSupply, seconds: number, stepSeconds: number, shareLimit: number): string {
  const budget = stepSeconds * shareLimit;
  const factor = seconds / budget;
  if (s.kind === "managed") {
    const creates = d.toolCallsPerStep * s.createsPerToolCall!;
    const needCreates = creates / budget;
    const needSandboxes = Math.ceil((d.toolCallsPerStep * s.toolCallSeconds! + d.testCasesPerStep * s.testCaseSeconds!) / budget);
    return [
      `to stay within ${fmtPct(shareLimit)} the account needs ${creates > 0 ? `≥ ${fmtRate(needCreates)} creates/s and ` : ""}≥ ${needSandboxes} concurrent sandboxes: a larger tier or quota (sandbox.managed.account: tier pro is ${TIER_LIMITS.pro.maxSandboxes} sandboxes and ${TIER_LIMITS.pro.createsPerS} creates/s)`,
      ...(creates > 0 ? ["or rlpipe's function with its pool of reused sandboxes (sandbox.kind rlpipe, deploy external, sandbox.managed)"] : []),
      "or a self-hosted sandbox on the training nodes (deploy colocated)",
      `or fewer tool calls per response (${d.toolCallsBasis})`,
    ].join(", ");
  }
  const servers = s.servers!;
  const colocated = s.coresPerNode !== undefined;
  return [
    `to stay within ${fmtPct(shareLimit)} the sandbox needs ${factor < 10 ? factor.toFixed(2) : fmtRate(factor)}× its capacity: ≥ ${Math.ceil(servers * factor)} ${colocated ? "nodes (resources.nodes)" : "servers behind sandbox.url"} at ${s.coresPerServer} cores each`,
    ...(s.workers !== undefined && (!colocated || s.workers < s.coresPerNode!) ? ["or more workers (sandbox.server.workers, up to the cores)"] : []),
    ...(colocated ? [(s.coresBasis ?? "").includes("assumed") ? "or the real core count if the nodes have more (resources.cpusPerNode)" : "or nodes with more cores"] : []),
    "or a managed backend (sandbox.deploy managed: E2B/AGS)",
    `or fewer tool calls per response (${d.toolCallsBasis})`,
  ].join(", ");
}

/** The warnings plan adds: one per stage whose sandbox needs more than the share limit of a step. */
export function capacityIssues(cap: SandboxCapacity | undefined): RecipeIssue[] {
  return (cap?.stages ?? []).filter((s) => s.over).map((s) => ({
    severity: "warning", code: "sandbox_capacity", path: ["sandbox"],
    message: `stage ${s.stage}: the sandbox would take ≈${fmtSeconds(s.sandboxSecondsPerStep!)} per step, ${fmtPct(s.share!)} of the ≈${fmtSeconds(s.stepSeconds)} step (more than ${fmtPct(s.shareLimit)}; ${LIMITED_BY[s.limitedBy!]}): ${demandText(s.demand)}; ${supplyText(s.supply, s.demand)}`,
    ...(s.hint === undefined ? {} : { hint: s.hint }),
  }));
}

const LIMITED_BY: Readonly<Record<NonNullable<StageCapacity["limitedBy"]>, string>> = {
  throughput: "set by the servers' throughput", creates: "set by the account's creates per second", concurrency: "set by the account's concurrent sandboxes",
};

/** The capacity lines as plan and cost print them (one per RL stage). */
export function capacityLines(cap: SandboxCapacity | undefined): string[] {
  return (cap?.stages ?? []).map((s) => s.line);
}

// ---------------------------------------------------------------- numbers, locale-independent

function group(int: string): string {
  return int.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Whole counts and rates from 100 up: "16,384". */
function fmtCount(v: number): string {
  return group(String(Math.round(v)));
}

/** Small figures to three significant digits: "0.5", "1", "17.3", "1,264". */
function fmtRate(v: number): string {
  if (v >= 100) return fmtCount(v);
  return String(Number(v.toPrecision(3)));
}

function fmtSeconds(v: number): string {
  return `${v >= 100 ? fmtCount(v) : String(Number(v.toPrecision(3)))} s`;
}

function fmtPct(v: number): string {
  const p = v * 100;
  return `${p >= 10 ? String(Math.round(p)) : String(Number(p.toPrecision(2)))}%`;
}
