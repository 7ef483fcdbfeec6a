// The cost report's shapes: the shared contract of issue 11 (estimate, renderers, live prices, estimate vs actual).
// Fields may be added, never renamed. Lines keep their own currency; only totals convert (explicitly, via fx).

export type Currency = "CNY" | "USD";
export interface Range { readonly low: number; readonly expected: number; readonly high: number }
export type Confidence = "user" | "live" | "official" | "third-party" | "doc-example" | "anchor";
/** One sourced rate. */
export interface Rate { readonly value: number; readonly currency: Currency; readonly unit: string; readonly region?: string;
  readonly source: string; readonly dateRead: string /* YYYY-MM-DD */; readonly confidence: Confidence; readonly id: string }
export type Basis = "catalog" | "live" | "user" | "usage-estimate";
export type Component = "compute" | "sandbox" | "functions" | "storage" | "egress";
export interface CostLine { readonly id: string; readonly component: Component; readonly label: string; readonly provider: string;
  readonly resource: string; readonly unit: string; readonly quantity: Range; readonly rate?: Rate; readonly cost?: Range;
  readonly currency?: Currency; readonly basis: Basis;
  /** No usable price: the report shows "rate needed" and how to supply it (recipe `prices:` or --rates file.yaml). */
  readonly rateNeeded?: { readonly item: string; readonly unit: string; readonly howToSupply: string };
  readonly children?: readonly CostLine[];
  /** Addition: the usage is already paid for elsewhere (e.g. "compute": a co-located sandbox; a prepaid group, sunk) — no cost, not missing. */
  readonly includedIn?: string;
  /** Addition: what the reader should know about this line (free tier not deducted, anchor price …). */
  readonly note?: string }
export interface Candidate { readonly provider: string; readonly region?: string; readonly flavor?: string; readonly accelerators?: string;
  readonly nodes: number; readonly unitPrice?: Rate; readonly hours: Range; readonly cost?: Range; readonly currency?: Currency;
  readonly chosen: boolean; readonly note?: string;
  /** Addition: the candidate's compute is paid for already (a prepaid group or pool, sunk): cost 0 marginal, no unit price, not missing. */
  readonly includedIn?: string }
export interface FxRate { readonly cnyPerUsd: number; readonly source: string; readonly dateRead: string }
export interface CostReport {
  readonly schema: "rlpipe.cost-report"; readonly version: 1; readonly generatedAt: string;
  readonly recipe: { readonly name: string; readonly hash: string; readonly file?: string };
  readonly mode: "offline" | "online"; readonly chosen: string; readonly candidates: readonly Candidate[];
  readonly lines: readonly CostLine[]; readonly fx: FxRate;
  /** Totals in both currencies (converted with fx), and whether any line lacks a rate. */
  readonly totals: { readonly CNY: Range; readonly USD: Range; readonly incomplete: boolean };
  readonly budget?: { readonly cap: number; readonly currency: Currency; readonly status: "within" | "over" | "unknown" | "at-risk" };
  readonly steps: Range; readonly secondsPerStep: Range;
  /** In CNY, for the chart: cost incurred by each step of the run; a last point with afterRun (at the last step) adds what is billed after it. */
  readonly cumulative: readonly { readonly step: number; readonly cost: Range;
    /** Addition: this point is after the run (storage kept for the retention months, the final model's export); its cost is the whole total. */
    readonly afterRun?: boolean }[];
  readonly assumptions: readonly string[]; readonly exclusions: readonly string[];
  readonly priceSources: readonly Rate[];
  /** Addition: per stage, the work the compute lines price. */
  readonly stages?: readonly StageSummary[];
  /** Addition: the sandbox's work per RL step against its capacity, as `rlpipe plan` prints it (core/capacity.ts). */
  readonly capacity?: SandboxCapacity;
  /** Addition (issue 24): how long the run goes as verl will run it, in hours and days, and what is flagged about it. */
  readonly runLength?: RunLength;
  /** After a run (rlpipe cost --run): actual per line, with the prices recorded at deploy time. */
  readonly actual?: { readonly run: string; readonly lines: readonly { readonly id: string; readonly quantity?: number; readonly cost?: number; readonly currency?: Currency; readonly source: string }[]; readonly total?: { readonly CNY: number; readonly USD: number } };
}
/** Addition (issue 24): the run's wall-clock length, shown on every surface (table, Markdown, HTML, JSON, plan, deploy). */
export interface RunLength {
  /** The whole run (every stage), wall-clock. */
  readonly hours: Range;
  readonly days: Range;
  /** Per stage with steps: how many, and where the count comes from ("trainer.total_training_steps in the recipe",
   * "⌊rows / batch⌋ × epochs", "--steps", "cost.stages.<id>.steps"). */
  readonly stages: readonly { readonly stage: string; readonly steps: Range; readonly source: string }[];
  /** Each flag names the step count and what to set: beyond maxDays, or far past what the recipe's seed published. */
  readonly flags: readonly string[];
  /** The bound a run is flagged beyond (days, expected figure). */
  readonly maxDays: number;
}
/** User rates (recipe `prices:` and --rates FILE) and live rates override catalog rows by id. */
export interface RateOverrides { readonly user?: readonly Rate[]; readonly live?: readonly Rate[] }

// ---------------------------------------------------------------- additions (CORE): the price catalog

/** One catalog row: a public price with its source, or value null when none is public ("rate needed"). */
export interface CatalogRow {
  readonly id: string; readonly item: string; readonly value: number | null; readonly currency: Currency; readonly unit: string;
  readonly region?: string; readonly source: string; readonly dateRead: string; readonly confidence: Confidence; readonly note?: string;
}
/** The whole catalog (prices/*.yaml, embedded at build into core/cost/catalog-data.ts). */
export interface Catalog { readonly version: 1; readonly rows: readonly CatalogRow[] }

/** Addition: one stage's work (steps × seconds per step, or a fixed duration), hours in wall-clock time. */
export interface StageSummary {
  readonly id: string; readonly type: "sft" | "merge" | "rl" | "eval" | "score";
  readonly steps?: Range; readonly secondsPerStep?: Range; readonly stepBasis?: "model" | "measured";
  readonly validations?: Range; readonly responses?: Range; readonly hours: Range;
}

// ---------------------------------------------------------------- additions: sandbox capacity per step (core/capacity.ts)

/** What one RL step asks of the sandbox: prompts × n responses, each with its tool calls and its reward's test cases. */
export interface SandboxDemand {
  readonly responsesPerStep: number;
  readonly toolCallsPerResponse: number;
  /** Where toolCallsPerResponse comes from: the turn limit (agent.maxAssistantTurns …), cost.usage.toolCallsPerResponse or a default. */
  readonly toolCallsBasis: string;
  readonly toolCallsPerStep: number;
  /** 0 when the reward does not call the sandbox. */
  readonly testCasesPerReward: number;
  readonly testCasesBasis?: string;
  readonly testCasesPerStep: number;
}

/** What the sandbox can do: a self-hosted server's rates (per core × cores × servers), or a managed account's limits. */
export interface SandboxSupply {
  readonly kind: "self-hosted" | "managed" | "unknown";
  /** "rlpipe serve (local sandbox)", "ScaleBox", "SandboxFusion", "E2B", "Tencent AGS", … */
  readonly backend: string;
  /** Self-hosted: servers (one per node when co-located, else the URLs), cores each gets and where that figure comes from. */
  readonly servers?: number;
  /** Co-located: the cores of a node; each server uses coresPerServer of them (fewer when its workers are fewer). */
  readonly coresPerNode?: number;
  readonly coresPerServer?: number;
  readonly coresBasis?: string;
  readonly workers?: number;
  readonly toolCallsPerS?: number;
  readonly testCasesPerS?: number;
  /** Managed: the account's limits and what a tool call holds. */
  readonly maxSandboxes?: number;
  readonly createsPerS?: number;
  readonly accountBasis?: string;
  /** Sandboxes created per tool call: 1 for a tool that creates and kills one per call, 0 for a pool. */
  readonly createsPerToolCall?: number;
  readonly toolCallSeconds?: number;
  readonly testCaseSeconds?: number;
  /** Why the capacity is unknown, or the sources of the rates. */
  readonly basis: readonly string[];
}

/** One RL stage: demand against supply, as a share of the step. */
export interface StageCapacity {
  readonly stage: string;
  readonly demand: SandboxDemand;
  readonly supply: SandboxSupply;
  /** Seconds of the step the sandbox needs at full parallelism (absent when the capacity is unknown). */
  readonly sandboxSecondsPerStep?: number;
  /** What sets sandboxSecondsPerStep: "throughput", "creates" or "concurrency". */
  readonly limitedBy?: "throughput" | "creates" | "concurrency";
  readonly stepSeconds: number;
  readonly stepBasis: "model" | "measured";
  readonly share?: number;
  readonly shareLimit: number;
  readonly over: boolean;
  /** The line plan and cost print. */
  readonly line: string;
  /** What to change, when over. */
  readonly hint?: string;
  /** Addition (issue 34): tool calls in flight per sandbox server against the places it admits. */
  readonly inFlight?: SandboxInFlight;
  /** Addition (issue 34): recipe edits that bring the stage within the limits, each checked by running the check on the edited recipe. */
  readonly fixes?: readonly CapacityFix[];
}

export interface SandboxInFlight {
  /** Requests in flight per server: responses × the share of the rollout a trajectory waits on the sandbox, at most the clients' limit. */
  readonly perServer: number;
  /** Requests a server admits at once: rlpipe serve's admission capacity, ScaleBox's/SandboxFusion's workers, the account's sandboxes. */
  readonly places: number;
  readonly placesBasis: string;
  /** Tool calls verl and the stage's tools let run at once, cluster-wide (absent when nothing known bounds them). */
  readonly clientLimit?: number;
  readonly clientBasis?: string;
  readonly over: boolean;
}

/** One recipe edit (one or more fields set together) and what it means. */
export interface CapacityFix {
  readonly kind: "turns" | "cores" | "workers" | "tool-concurrency" | "agent-workers" | "tier" | "quota";
  readonly says: string;
  readonly set: readonly { readonly path: readonly (string | number)[]; readonly value: number | string }[];
}

export interface SandboxCapacity {
  /** The share of a step above which plan warns (sandbox_capacity). */
  readonly shareLimit: number;
  readonly stages: readonly StageCapacity[];
}
