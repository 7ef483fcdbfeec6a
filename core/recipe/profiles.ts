// verl version profiles: what each pinned verl accepts, so rendering and checks follow the version a recipe runs.
// Facts come from flattening verl's trainer config at each commit and from its code (see
// ../shared/reference/recipes-and-verl.md §2); the conformance test composes every rendered override with
// verl's own Hydra config from the PyPI release named in `pypi`.

export interface VerlProfile {
  readonly name: string;
  /** Commit (or tag) this profile describes. */
  readonly commit: string;
  /** Other refs that select this profile (full SHAs, tags). */
  readonly aliases: readonly string[];
  readonly date: string;
  /**
   * PyPI release whose trainer config matches this commit's keys (the conformance test installs it).
   * Chosen by key set, not only by date: f50e5c2e lacks agent.default_agent_loop, as 0.5.0 does and 0.6.0 does not.
   */
  readonly pypi: string;
  /** `actor_rollout_ref.rollout.agent.default_agent_loop` exists. */
  readonly hasDefaultAgentLoop: boolean;
  /** `data.tool_config_path` exists (added in 11f536f0e, 2025-11-03). */
  readonly hasDataToolConfigPath: boolean;
  /** Default of `actor_rollout_ref.rollout.mode`. */
  readonly defaultRolloutMode: "sync" | "async";
  /** RolloutConfig raises on mode=sync (eb6991a62, 2025-12-28). */
  readonly rejectsSyncRollout: boolean;
  /** The agent-loop reward path has no `prime` manager ("Unknown reward loop manager"). */
  readonly primeUnavailableWithAgentLoop: boolean;
  /** With the agent loop only val_kwargs.temperature/top_p reach sampling (top_k is dropped). */
  readonly agentLoopIgnoresValTopK: boolean;
  /**
   * The agent-loop reward path calls compute_score with extra keywords (reward_router_address, …), so the
   * function must accept **kwargs. At f50e5c2e the classic manager passes only the four named arguments.
   */
  readonly rewardFnNeedsKwargs: boolean;
  /** The tool classes (for a tool config's class_name) this verl ships: its release's verl/tools, and recipe/retool's. */
  readonly toolClasses: readonly string[];
  /** verl/tools/function_tool.py: plain functions registered from multi_turn.function_tool_path (0.8.0 on). */
  readonly functionTools: boolean;
  /** recipe/retool is part of the verl tree (moved to verl-project/verl-recipe in eb6ef40eb, 2025-11-25). */
  readonly retoolInTree: boolean;
  /** SFT entry point and its config family. */
  readonly sft: {
    readonly module: "verl.trainer.fsdp_sft_trainer" | "verl.trainer.sft_trainer";
    readonly config: "sft_trainer" | "sft_trainer_engine";
  };
}

const base = {
  hasDefaultAgentLoop: true,
  hasDataToolConfigPath: true,
  defaultRolloutMode: "async",
  rejectsSyncRollout: false,
  primeUnavailableWithAgentLoop: true,
  agentLoopIgnoresValTopK: true,
  retoolInTree: false,
  functionTools: false,
  rewardFnNeedsKwargs: true,
  sft: { module: "verl.trainer.fsdp_sft_trainer", config: "sft_trainer" },
} as const;

// The native tool classes in verl/tools of each PyPI release (read off the releases the conformance test installs).
// 0.8.0 on keep only base_tool, function_tool, schemas and tool_registry: no tool a config can name.
const TOOLS_0_5 = ["geo3k_tool.Geo3kTool", "gsm8k_tool.Gsm8kTool", "mcp_base_tool.MCPBaseTool", "mcp_search_tool.MCPSearchTool",
  "sandbox_fusion_tools.SandboxFusionTool", "search_tool.SearchTool"].map((c) => `verl.tools.${c}`);
const TOOLS_0_6 = [...TOOLS_0_5, "verl.tools.image_zoom_in_tool.ImageZoomInTool"].sort();
/** recipe/retool's tool, importable while recipe/retool is in the verl tree (the job runs from its root). */
export const RETOOL_TOOL_CLASS = "recipe.retool.retool.CustomSandboxFusionTool";
export const STOCK_SANDBOX_FUSION_TOOL = "verl.tools.sandbox_fusion_tools.SandboxFusionTool";
const SFT_ENGINE = { module: "verl.trainer.sft_trainer", config: "sft_trainer_engine" } as const;

export const PROFILES: readonly VerlProfile[] = [
  {
    ...base, name: "f50e5c2e", commit: "f50e5c2e", aliases: [], date: "2025-09-29", pypi: "0.5.0",
    hasDefaultAgentLoop: false, hasDataToolConfigPath: false, defaultRolloutMode: "sync",
    primeUnavailableWithAgentLoop: false, retoolInTree: true, rewardFnNeedsKwargs: false, toolClasses: [...TOOLS_0_5, RETOOL_TOOL_CLASS],
  },
  {
    ...base, name: "95470480", commit: "95470480", aliases: [], date: "2025-10-25", pypi: "0.6.0",
    hasDataToolConfigPath: false, defaultRolloutMode: "sync", primeUnavailableWithAgentLoop: false, retoolInTree: true,
    toolClasses: [...TOOLS_0_6, RETOOL_TOOL_CLASS],
  },
  {
    ...base, name: "v0.6.1", commit: "d62da495", aliases: ["0.6.1", "d62da4950573d7a4b7ef2362337952e7ab59e78d"], date: "2025-11-14", pypi: "0.6.1",
    defaultRolloutMode: "sync", primeUnavailableWithAgentLoop: false, retoolInTree: true, toolClasses: [...TOOLS_0_6, RETOOL_TOOL_CLASS],
  },
  {
    ...base, name: "c651b7b", commit: "c651b7b4207e408875f132c4226969ef3495d408", aliases: [], date: "2025-11-26", pypi: "0.7.0", toolClasses: TOOLS_0_6,
  },
  {
    ...base, name: "v0.7.0", commit: "v0.7.0", aliases: ["0.7.0"], date: "2026-01-05", pypi: "0.7.0", rejectsSyncRollout: true, toolClasses: TOOLS_0_6,
  },
  {
    // fsdp_sft_trainer and sft_trainer.yaml are gone from 0.7.1 on; SFT runs through the engine trainer.
    ...base, name: "v0.7.1", commit: "v0.7.1", aliases: ["0.7.1"], date: "2026-03-16", pypi: "0.7.1", rejectsSyncRollout: true, toolClasses: TOOLS_0_6, sft: SFT_ENGINE,
  },
  {
    // verl/tools keeps only base_tool, function_tool, schemas and tool_registry from 0.8.0 on: the function-tool
    // registry (multi_turn.function_tool_path) arrives, every named tool class goes.
    ...base, name: "v0.8.0", commit: "v0.8.0", aliases: ["0.8.0"], date: "2026-06-01", pypi: "0.8.0", rejectsSyncRollout: true, toolClasses: [], functionTools: true, sft: SFT_ENGINE,
  },
  {
    ...base, name: "v0.9.0", commit: "v0.9.0", aliases: ["0.9.0"], date: "2026-08-14", pypi: "0.9.0", rejectsSyncRollout: true, toolClasses: [], functionTools: true, sft: SFT_ENGINE,
  },
  {
    ...base, name: "v0.9.1", commit: "v0.9.1", aliases: ["0.9.1"], date: "2026-09-20", pypi: "0.9.1", rejectsSyncRollout: true, toolClasses: [], functionTools: true, sft: SFT_ENGINE,
  },
];

/** The newest verl release rlpipe knows. */
export const NEWEST_PROFILE = PROFILES[PROFILES.length - 1]!;

export function profileByName(name: string): VerlProfile | undefined {
  return PROFILES.find((p) => p.name === name || p.aliases.includes(name));
}

/** The profile a ref selects: exact name/alias, or a commit prefix of at least 7 hex digits either way. */
export function profileForRef(ref: string): VerlProfile | undefined {
  const byName = profileByName(ref) ?? profileByName(ref.replace(/^v/, ""));
  if (byName !== undefined) return byName;
  if (!/^[0-9a-f]{7,40}$/i.test(ref)) return undefined;
  const r = ref.toLowerCase();
  return PROFILES.find((p) => [p.commit, ...p.aliases].some((c) => /^[0-9a-f]+$/.test(c) && (c.startsWith(r) || r.startsWith(c))));
}
