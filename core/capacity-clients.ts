// What verl and a stage's tools let run at once against the sandbox (the client side of the capacity check): verl's
// agent loop runs every trajectory of a step together, so the tools' own limits, not the batch, bound the tool calls
// in flight. Figures mirror what core/render/tools.ts renders. Pure.
import { RLPIPE_TOOL_CLASS } from "./render/tools.js";
import { RETOOL_TOOL_CLASS, STOCK_SANDBOX_FUSION_TOOL, type VerlProfile, profileByName, profileForRef } from "./recipe/profiles.js";
import type { RecipePath } from "./errors.js";
import type { Recipe, RlStage, Tool } from "./recipe/schema.js";

/** verl's rollout.agent.num_workers default: AgentLoopWorker processes, each with its own tool instances. */
export const DEFAULT_AGENT_WORKERS = 8;
/** recipes/python/rlpipe_tool.py: calls in flight per process (config max_concurrency). */
export const RLPIPE_TOOL_MAX_CONCURRENCY = 32;
/** verl's SandboxFusionTool defaults when its config sets none (num_workers, rate_limit). */
export const SANDBOX_FUSION_TOOL_DEFAULT = 10;

/** One knob that raises a client limit: where it is in the recipe and its value now. */
export interface ClientKnob {
  readonly kind: "tool-concurrency" | "agent-workers";
  readonly path: RecipePath;
  readonly value: number;
  /** Set to the same value with the knob (SandboxFusionTool: num_workers with rate_limit, as the retool seeds do). */
  readonly with?: RecipePath;
  readonly what: string;
}

export interface ClientLimit {
  /** Tool calls in flight at most, cluster-wide. */
  readonly requests: number;
  readonly basis: string;
  readonly knobs: readonly ClientKnob[];
}

/** The stage's sandbox tools with their index in `tools` (agent.tools, or every tool when multi-turn lists none). */
function stageTools(recipe: Recipe, stage: RlStage): { tool: Tool; index: number }[] {
  const all = recipe.tools ?? [];
  const names = stage.agent?.tools ?? (stage.agent?.multiTurn === true ? all.map((t) => t.name) : []);
  return names.flatMap((n) => {
    const index = all.findIndex((t) => t.name === n);
    return index < 0 ? [] : [{ tool: all[index]!, index }];
  });
}

function profileOf(recipe: Recipe): VerlProfile | undefined {
  const v = recipe.runtime.verl;
  return (v.profile === undefined ? undefined : profileByName(v.profile)) ?? profileForRef(v.ref);
}

/** The class verl loads for a tool, as core/render/tools.ts picks it. */
function toolClass(tool: Tool, profile: VerlProfile | undefined): string | undefined {
  if (tool.impl !== undefined) return tool.impl;
  const has = (c: string) => profile?.toolClasses.includes(c) ?? false;
  switch (tool.preset) {
    case "rlpipe": return RLPIPE_TOOL_CLASS;
    case "sandbox-fusion": return has(STOCK_SANDBOX_FUSION_TOOL) ? STOCK_SANDBOX_FUSION_TOOL : RLPIPE_TOOL_CLASS;
    case "retool-sandbox-fusion": return has(RETOOL_TOOL_CLASS) ? RETOOL_TOOL_CLASS : RLPIPE_TOOL_CLASS;
    default: return undefined;
  }
}

const numberIn = (config: Tool["config"], key: string): number | undefined => {
  const v = config?.[key];
  return typeof v === "number" && v > 0 ? v : undefined;
};

/**
 * Tool calls the stage's tools can have in flight at once, or undefined when one of them has no limit rlpipe knows
 * (ScaleBoxTool, E2BCodeTool, a custom class): then the trajectories bound them.
 */
export function clientLimitOf(recipe: Recipe, stage: RlStage): ClientLimit | undefined {
  const tools = stageTools(recipe, stage);
  if (tools.length === 0) return undefined;
  const profile = profileOf(recipe);
  const si = recipe.stages.indexOf(stage);
  const processes = stage.agent?.workers ?? DEFAULT_AGENT_WORKERS;
  const workersText = `${processes} agent-loop workers (${stage.agent?.workers === undefined ? "verl's default; " : ""}agent.workers)`;
  const workersKnob: ClientKnob = { kind: "agent-workers", path: ["stages", si, "agent", "workers"], value: processes, what: "agent-loop workers" };
  let requests = 0;
  const basis: string[] = [];
  const knobs: ClientKnob[] = [];
  for (const { tool, index } of tools) {
    const cls = toolClass(tool, profile);
    const retool = tool.preset === "retool-sandbox-fusion" && tool.impl === undefined;
    const at: RecipePath = ["tools", index, "config"];
    if (cls === RLPIPE_TOOL_CLASS) {
      const per = numberIn(tool.config, "max_concurrency") ?? RLPIPE_TOOL_MAX_CONCURRENCY;
      requests += per * processes;
      basis.push(`${tool.name}: ${per} per process (tools[${index}].config.max_concurrency) × ${workersText}`);
      knobs.push({ kind: "tool-concurrency", path: [...at, "max_concurrency"], value: per, what: `calls in flight per process in tool ${tool.name}` });
      if (!knobs.includes(workersKnob)) knobs.push(workersKnob);
    } else if (cls === STOCK_SANDBOX_FUSION_TOOL || cls === RETOOL_TOOL_CLASS) {
      // verl's SandboxFusionTool: a pool of num_workers per process under one cluster-wide rate limiter (a named Ray actor).
      const preset = retool ? 128 : SANDBOX_FUSION_TOOL_DEFAULT;
      const workers = numberIn(tool.config, "num_workers") ?? preset;
      const rate = numberIn(tool.config, "rate_limit") ?? preset;
      const global = tool.config?.["enable_global_rate_limit"] !== false;
      const n = global ? Math.min(rate, workers * processes) : workers * processes;
      requests += n;
      basis.push(`${tool.name}: verl's SandboxFusionTool, ${global ? `rate_limit ${rate} cluster-wide (tools[${index}].config.rate_limit), ` : ""}num_workers ${workers} per process × ${workersText}`);
      knobs.push({ kind: "tool-concurrency", path: [...at, "rate_limit"], value: rate, with: [...at, "num_workers"], what: `calls in flight in tool ${tool.name}, its rate limit and pool` });
    } else {
      return undefined;
    }
  }
  return { requests, basis: basis.join("; "), knobs };
}
