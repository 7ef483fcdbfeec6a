// Sandbox capacity per RL step, checked before a run: what a step asks of the sandbox (prompts × n responses ×
// tool calls per response, and each reward's test cases) against what the backend can do (a self-hosted server's
// measured rate per core × cores × servers, at most what verl's and the tools' own limits let run at once; a managed
// account's concurrent sandboxes and creates per second), as a share of the step time the cost model assumes, and the
// tool calls in flight against the places a server admits. Past either limit, plan warns (sandbox_capacity,
// sandbox_concurrency) with the numbers and only the recipe edits that, checked by running this again, bring the stage
// within them. Pure: no I/O; the same recipe and provider give the same figures.
import { type ClientLimit, clientLimitOf } from "./capacity-clients.js";
import { type Edits, capacityFixes, editsText, withEdits } from "./capacity-fixes.js";
import type { LocatedIssue, RecipeIssue } from "./errors.js";
import { type UsageDefault, USAGE_DEFAULTS, rewardUsesSandbox, usageFigure } from "./cost/quantities.js";
import type { CapacityFix, SandboxCapacity, SandboxDemand, SandboxInFlight, SandboxSupply, StageCapacity } from "./cost/types.js";
import { type Workload, workloadOf } from "./cost/workload.js";
import { parseNodeSpec } from "./providers/tione-request.js";
import type { Provider, Recipe, RlStage } from "./recipe/schema.js";
import { TIER_LIMITS } from "./sandbox-quota.js";

export type { CapacityFix, SandboxCapacity, SandboxDemand, SandboxInFlight, SandboxSupply, StageCapacity } from "./cost/types.js";

/** The codes of the capacity warnings (`rlpipe validate --strict` refuses them). */
export const CAPACITY_CODES = ["sandbox_capacity", "sandbox_concurrency"] as const;

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

/**
 * rlpipe serve's admission capacity with its defaults (functions/admission.ts defaultCapacity: 16 requests per slot,
 * at least 64), a slot per core: the launch script starts it without --max-requests.
 */
export function admittedPlaces(slots: number): number {
  return Math.max(64, slots * 16);
}

export interface CapacityOptions {
  /** A measured step time for the RL stages that set none in cost.stages (rlpipe cost --step-seconds). */
  readonly stepSeconds?: number;
}

export function sandboxCapacity(recipe: Recipe, provider: Provider, opts: CapacityOptions = {}): SandboxCapacity | undefined {
  const rl = rlStages(recipe);
  if (rl.length === 0 || (recipe.sandbox === undefined && !rl.some((s) => (s.agent?.tools?.length ?? 0) > 0))) return undefined;
  const work = workOf(recipe, provider, opts);
  const stages = rl.map((stage) => {
    const cap = checkStage(recipe, provider, stage, work);
    if (!flagged(cap)) return cap;
    // Each edit is kept only when the check, run again on the edited recipe, finds the stage within every limit.
    const works = (edits: Edits) => {
      const edited = withEdits(recipe, edits);
      const again = rlStages(edited).find((s) => s.id === stage.id)!;
      return !flagged(checkStage(edited, provider, again, workOf(edited, provider, opts)));
    };
    const fixes = capacityFixes({ recipe, stage, cap, clients: clientLimitOf(recipe, stage), works });
    return { ...cap, fixes, hint: hintText(cap, fixes) };
  });
  return { shareLimit: SHARE_LIMIT, stages };
}

const rlStages = (recipe: Recipe) => recipe.stages.filter((s): s is RlStage => s.type === "rl");

function workOf(recipe: Recipe, provider: Provider, opts: CapacityOptions): Workload {
  const usage = { testCasesPerReward: usageFigure(recipe, "testCasesPerReward").value, testCaseSeconds: usageFigure(recipe, "testCaseSeconds").value };
  return workloadOf(recipe, provider, { ...usage, ...(opts.stepSeconds === undefined ? {} : { stepSeconds: opts.stepSeconds }) });
}

function checkStage(recipe: Recipe, provider: Provider, stage: RlStage, work: Workload): StageCapacity {
  const w = work.stages.find((s) => s.id === stage.id)!;
  const clients = clientLimitOf(recipe, stage);
  return stageCapacity(stage.id, demandOf(recipe, stage), supplyOf(recipe, provider), w.secondsPerStep!.expected, w.stepBasis ?? "model", {
    ...(w.rolloutSecondsPerStep === undefined ? {} : { rolloutSeconds: w.rolloutSecondsPerStep.expected }),
    ...(clients === undefined ? {} : { clients }),
  });
}

/** Over the share limit, or more requests in flight than the sandbox admits. */
const flagged = (c: StageCapacity) => c.over || c.inFlight?.over === true;

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

export interface StageOptions {
  readonly shareLimit?: number;
  /** Seconds of the step spent in rollout, when trajectories make their tool calls (default: the whole step). */
  readonly rolloutSeconds?: number;
  /** What verl and the stage's tools let run at once (absent: nothing known bounds them but the trajectories). */
  readonly clients?: ClientLimit;
}

/** Demand against supply for one stage, and the line to print (the edits to advise need the recipe: sandboxCapacity). */
export function stageCapacity(stage: string, demand: SandboxDemand, supply: SandboxSupply, stepSeconds: number, stepBasis: "model" | "measured", opts: StageOptions = {}): StageCapacity {
  const shareLimit = opts.shareLimit ?? SHARE_LIMIT;
  const base = { stage, demand, supply, stepSeconds, stepBasis, shareLimit };
  const load = loadOf(demand, supply, opts.clients);
  if (load === undefined) return { ...base, over: false, line: `${stage}: ${demandText(demand)}; ${supplyText(supply, demand)}` };
  const share = load.seconds / stepSeconds;
  const over = share > shareLimit;
  const inFlight = inFlightOf(demand, supply, load, opts.rolloutSeconds ?? stepSeconds, opts.clients);
  const line = `${stage}: ${demandText(demand)}; ${supplyText(supply, demand)}${load.capText} → ${fmtSeconds(load.seconds)} per step${load.detail}, ${fmtPct(share)} of the ≈${fmtSeconds(stepSeconds)} step (${stepBasis === "measured" ? "measured" : "model"}); ${over ? "over" : "within"} the ${fmtPct(shareLimit)} limit${inFlight === undefined ? "" : `; ${inFlightText(inFlight, supply)}`}`;
  return { ...base, sandboxSecondsPerStep: load.seconds, limitedBy: load.limitedBy, share, over, line, ...(inFlight === undefined ? {} : { inFlight }) };
}

interface Load {
  /** Sandbox seconds per step, and of them the tool calls' (creates included). */
  readonly seconds: number;
  readonly toolSeconds: number;
  /** Seconds one tool call holds its place. */
  readonly holdSeconds: number;
  readonly limitedBy: NonNullable<StageCapacity["limitedBy"]>;
  readonly servers: number;
  readonly places: number;
  readonly placesBasis: string;
  readonly capText: string;
  readonly detail: string;
}

/** Seconds per step at the rate the sandbox and its clients allow; undefined when the capacity is unknown. */
function loadOf(d: SandboxDemand, s: SandboxSupply, clients: ClientLimit | undefined): Load | undefined {
  const clientCap = clients?.requests ?? Infinity;
  if (s.kind === "self-hosted") {
    const cores = s.coresPerServer! * s.servers!;
    const holdSeconds = cores / s.toolCallsPerS!;
    // Little's law: at most clientCap calls in flight, each holding its place holdSeconds, bound the rate.
    const capped = clientCap < cores && d.toolCallsPerStep > 0;
    const toolSeconds = d.toolCallsPerStep / Math.min(s.toolCallsPerS!, clientCap / holdSeconds);
    const rlpipe = s.workers === undefined;
    return {
      seconds: toolSeconds + d.testCasesPerStep / s.testCasesPerS!, toolSeconds, holdSeconds, limitedBy: capped ? "concurrency" : "throughput",
      servers: s.servers!, places: rlpipe ? admittedPlaces(s.coresPerServer!) : s.workers!,
      placesBasis: rlpipe ? "rlpipe serve admits 16 per slot, a slot per core, at least 64" : `${s.backend} workers, sandbox.server.workers`,
      capText: capped ? ` (at most ${fmtCount(clientCap)} at once: ${fmtRate(clientCap / holdSeconds)} tool calls/s)` : "",
      detail: "",
    };
  }
  if (s.kind !== "managed") return undefined;
  const parallel = Math.min(s.maxSandboxes!, clientCap);
  const toolBusy = (d.toolCallsPerStep * s.toolCallSeconds!) / parallel;
  const busy = toolBusy + (d.testCasesPerStep * s.testCaseSeconds!) / parallel;
  const creates = (d.toolCallsPerStep * s.createsPerToolCall!) / s.createsPerS!;
  return {
    seconds: Math.max(busy, creates), toolSeconds: Math.max(toolBusy, creates), holdSeconds: s.toolCallSeconds!,
    limitedBy: creates > busy ? "creates" : "concurrency", servers: 1, places: s.maxSandboxes!, placesBasis: `the account's concurrent sandboxes: ${s.accountBasis}`,
    capText: clientCap < s.maxSandboxes! ? ` (at most ${fmtCount(clientCap)} at once)` : "",
    detail: s.createsPerToolCall! > 0
      ? ` (${fmtCount(d.toolCallsPerStep * s.createsPerToolCall!)} creates at ${fmtRate(s.createsPerS!)}/s: ${fmtSeconds(creates)}; sandbox time over ${fmtCount(parallel)} sandboxes: ${fmtSeconds(busy)})`
      : "",
  };
}

/**
 * Tool calls in flight per server: every trajectory of the step runs at once, each waiting on a call for the share
 * of the rollout its calls hold a place (Little's law), or all of them when the sandbox cannot keep up; at most what
 * the clients let run.
 */
function inFlightOf(d: SandboxDemand, s: SandboxSupply, load: Load, rolloutSeconds: number, clients: ClientLimit | undefined): SandboxInFlight | undefined {
  if (d.toolCallsPerStep === 0) return undefined;
  const saturated = load.toolSeconds >= rolloutSeconds;
  const wanted = saturated ? d.responsesPerStep : Math.min(d.responsesPerStep, (d.toolCallsPerStep * load.holdSeconds) / rolloutSeconds);
  const total = Math.min(wanted, clients?.requests ?? Infinity);
  const perServer = total / load.servers;
  return {
    perServer, places: load.places, placesBasis: load.placesBasis,
    ...(clients === undefined ? {} : { clientLimit: clients.requests, clientBasis: clients.basis }),
    over: perServer > load.places,
  };
}

function inFlightText(f: SandboxInFlight, s: SandboxSupply): string {
  return `≈${fmtRate(f.perServer)} tool calls in flight ${where(s)} against ${fmtCount(f.places)} places`;
}

const where = (s: SandboxSupply) => (s.kind === "managed" ? "at the account" : "per server");

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

/** The hint: the edits that were checked to work, field first; none is advice that would not. */
function hintText(c: StageCapacity, fixes: readonly CapacityFix[]): string {
  const within = `${c.over ? `within ${fmtPct(c.shareLimit)} of the step` : ""}${c.over && c.inFlight?.over ? " and " : ""}${c.inFlight?.over ? "within the places the sandbox admits" : ""}`;
  if (fixes.length === 0) {
    return `rlpipe found no recipe edit that brings it ${within}${colocated(c.supply) ? " (more nodes would not: each adds a server and its share of the demand)" : ""}`;
  }
  return `to stay ${within}, set one of: ${fixes.map((f) => `${editsText(f.set)} (${f.says})`).join("; or ")}`;
}

const colocated = (s: SandboxSupply) => s.kind === "self-hosted" && s.coresPerNode !== undefined;

/** Why resources.nodes and the batch size cannot change the verdict, for a co-located sandbox. */
const COLOCATED_NOTE = "co-located, one server per node: more nodes add supply and demand alike, and the step time scales with prompts × n as the demand does, so neither resources.nodes nor the batch size changes the share";

/** The warnings plan adds: past the share limit (sandbox_capacity), more in flight than admitted (sandbox_concurrency). */
export function capacityIssues(cap: SandboxCapacity | undefined): RecipeIssue[] {
  return (cap?.stages ?? []).flatMap((s) => {
    const hint = s.hint === undefined ? {} : { hint: s.hint };
    const out: RecipeIssue[] = [];
    if (s.over) {
      out.push({
        severity: "warning", code: "sandbox_capacity", path: ["sandbox"],
        message: `stage ${s.stage}: the sandbox would take ≈${fmtSeconds(s.sandboxSecondsPerStep!)} per step, ${fmtPct(s.share!)} of the ≈${fmtSeconds(s.stepSeconds)} step (more than ${fmtPct(s.shareLimit)}; ${LIMITED_BY[s.limitedBy!]}${colocated(s.supply) ? `; ${COLOCATED_NOTE}` : ""}): ${demandText(s.demand)}; ${supplyText(s.supply, s.demand)}`,
        ...hint,
      });
    }
    const f = s.inFlight;
    if (f?.over === true) {
      out.push({
        severity: "warning", code: "sandbox_concurrency", path: ["sandbox"],
        message: `stage ${s.stage}: ≈${fmtCount(f.perServer)} tool calls in flight ${where(s.supply)} (${fmtCount(s.demand.responsesPerStep)} trajectories at once${s.supply.servers === undefined || s.supply.servers === 1 ? "" : ` over ${s.supply.servers} servers`}, the sandbox too slow to keep up with them${f.clientLimit === undefined ? "" : `; at most ${fmtCount(f.clientLimit)}: ${f.clientBasis}`}) against the ${fmtCount(f.places)} it admits (${f.placesBasis}): ${f.perServer - f.places >= 1 ? fmtCount(f.perServer - f.places) : "the rest"} ${REFUSED[s.supply.kind === "managed" ? "managed" : s.supply.workers === undefined ? "rlpipe" : "uvicorn"]}`,
        ...hint,
      });
    }
    return out;
  });
}

const REFUSED = {
  rlpipe: "would be refused with 429 and retried after Retry-After (rlpipe's tool waits; other tools see an error)",
  uvicorn: "would queue behind the workers",
  managed: "would be refused by the account (429) until sandboxes are released",
} as const;

const LIMITED_BY: Readonly<Record<NonNullable<StageCapacity["limitedBy"]>, string>> = {
  throughput: "set by the servers' throughput", creates: "set by the account's creates per second", concurrency: "set by the calls that may run at once",
};

/** `rlpipe validate --strict`: the capacity warnings as errors, naming the fields to change (their hints). */
export function strictCapacityErrors(issues: readonly LocatedIssue[]): LocatedIssue[] {
  return issues.filter((i) => (CAPACITY_CODES as readonly string[]).includes(i.code)).map((i) => ({ ...i, severity: "error" }));
}

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
