// The recipe edits the capacity check may advise, each kept only when the check, run again on the edited recipe,
// finds the stage within every limit: advice that does not work when followed is never printed (issue 34). No edit
// touches resources.nodes or the batch: a co-located sandbox gains supply and demand alike from more nodes, and the
// step time scales with prompts × n as the demand does. Pure.
import type { ClientLimit } from "./capacity-clients.js";
import type { CapacityFix, StageCapacity } from "./cost/types.js";
import { type RecipePath, formatPath } from "./errors.js";
import type { Recipe, RlStage } from "./recipe/schema.js";
import { TIER_LIMITS } from "./sandbox-quota.js";

/** No advice past this many cores per node (or behind one URL): few machines have more. */
export const MAX_CORES = 256;
/** A client limit is raised at most this many times over. */
const MAX_KNOB_FACTOR = 64;

export type Edits = CapacityFix["set"];

export interface FixInputs {
  readonly recipe: Recipe;
  readonly stage: RlStage;
  readonly cap: StageCapacity;
  readonly clients: ClientLimit | undefined;
  /** Whether the stage is within every limit once the edits are made (the check run again). */
  readonly works: (edits: Edits) => boolean;
}

/** A copy of the recipe with each path set (objects made on the way). */
export function withEdits(recipe: Recipe, edits: Edits): Recipe {
  const out = structuredClone(recipe) as Record<string, unknown>;
  for (const { path, value } of edits) {
    let at: Record<string | number, unknown> = out;
    path.slice(0, -1).forEach((k, i) => {
      if (at[k] === undefined || at[k] === null) at[k] = typeof path[i + 1] === "number" ? [] : {};
      at = at[k] as Record<string | number, unknown>;
    });
    at[path[path.length - 1]!] = value;
  }
  return out as unknown as Recipe;
}

/** "resources.cpusPerNode: 64, sandbox.server.workers: 64". */
export function editsText(edits: Edits): string {
  return edits.map((e) => `${formatPath(e.path)}: ${e.value}`).join(", ");
}

/** The smallest integer in [lo, hi] that works, when working is monotone in it. */
function smallest(lo: number, hi: number, works: (v: number) => boolean): number | undefined {
  if (lo > hi || !works(hi)) return undefined;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (works(mid)) hi = mid; else lo = mid + 1;
  }
  return hi;
}

/** The largest integer in [lo, hi] that works, when working falls as it grows. */
function largest(lo: number, hi: number, works: (v: number) => boolean): number | undefined {
  if (lo > hi || !works(lo)) return undefined;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (works(mid)) lo = mid; else hi = mid - 1;
  }
  return lo;
}

export function capacityFixes(x: FixInputs): CapacityFix[] {
  const supply = x.cap.supply;
  const fixes: (CapacityFix | undefined)[] = [];
  if (supply.kind === "self-hosted") fixes.push(workersFix(x), coresFix(x));
  if (supply.kind === "managed") fixes.push(tierFix(x), quotaFix(x));
  if (x.cap.limitedBy === "concurrency" && x.clients !== undefined) fixes.push(...x.clients.knobs.map((k) => knobFix(x, k)));
  fixes.push(turnsFix(x));
  return fixes.filter((f): f is CapacityFix => f !== undefined);
}

/** Fewer tool calls per response, through the turn limit that bounds them (not when they are a measured figure). */
function turnsFix(x: FixInputs): CapacityFix | undefined {
  const d = x.cap.demand;
  if (d.toolCallsPerStep === 0 || d.toolCallsBasis.startsWith("cost.usage")) return undefined;
  const si = x.recipe.stages.indexOf(x.stage);
  const field = d.toolCallsBasis === "agent.maxUserTurns" ? "maxUserTurns" : "maxAssistantTurns";
  const edits = (k: number): Edits => [{ path: ["stages", si, "agent", field], value: k }];
  const k = largest(1, Math.ceil(d.toolCallsPerResponse) - 1, (v) => x.works(edits(v)));
  return k === undefined ? undefined : { kind: "turns", says: `at most ${k} tool call${k === 1 ? "" : "s"} per response`, set: edits(k) };
}

/** More ScaleBox/SandboxFusion workers, up to the cores they may use (a worker is one process, one core at most). */
function workersFix(x: FixInputs): CapacityFix | undefined {
  const s = x.cap.supply;
  const server = x.recipe.sandbox?.server;
  if (s.workers === undefined || server === undefined) return undefined;
  const edits = (w: number): Edits => [{ path: ["sandbox", "server", "workers"], value: w }];
  const w = smallest(s.workers + 1, s.coresPerNode ?? MAX_CORES, (v) => x.works(edits(v)));
  const where = s.coresPerNode === undefined ? "behind sandbox.url, on as many cores" : "per node";
  return w === undefined ? undefined : { kind: "workers", says: `${w} sandbox workers ${where}`, set: edits(w) };
}

/** Where a co-located sandbox's core count is set, when it is the recipe's to set (not a TI-ONE instance type). */
function coresField(x: FixInputs): RecipePath | undefined {
  const basis = x.cap.supply.coresBasis ?? "";
  if (basis === "targets.slurm.cpusPerTask") return ["targets", "slurm", "cpusPerTask"];
  if (basis === "resources.cpusPerNode" || basis.startsWith("assumed")) return ["resources", "cpusPerNode"];
  return undefined;
}

/** Nodes with more cores for the sandbox (and as many workers): a per-node figure, so it holds on any node count. */
function coresFix(x: FixInputs): CapacityFix | undefined {
  const s = x.cap.supply;
  const field = coresField(x);
  // Fewer workers than cores: the workers are the limit (workersFix), not the cores.
  if (s.coresPerNode === undefined || field === undefined || (s.workers !== undefined && s.workers < s.coresPerNode)) return undefined;
  const edits = (c: number): Edits => [
    { path: field, value: c },
    ...(s.workers !== undefined && s.workers < c && x.recipe.sandbox?.server !== undefined ? [{ path: ["sandbox", "server", "workers"], value: c }] : []),
  ];
  const c = smallest(s.coresPerNode + 1, MAX_CORES, (v) => x.works(edits(v)));
  if (c === undefined) return undefined;
  const assumed = (s.coresBasis ?? "").startsWith("assumed");
  return { kind: "cores", says: `${c} cores per node for the sandbox${assumed ? ", if the nodes have them" : ""}`, set: edits(c) };
}

/** Raise one client limit (the tool's calls per process, its rate limit, or verl's agent-loop workers). */
function knobFix(x: FixInputs, k: ClientLimit["knobs"][number]): CapacityFix | undefined {
  const edits = (v: number): Edits => [{ path: k.path, value: v }, ...(k.with === undefined ? [] : [{ path: k.with, value: v }])];
  const v = smallest(k.value + 1, k.value * MAX_KNOB_FACTOR, (n) => x.works(edits(n)));
  return v === undefined ? undefined : { kind: k.kind, says: `${v} ${k.what}`, set: edits(v) };
}

/** E2B Pro, when the account states no limits of its own and Pro's are enough. */
function tierFix(x: FixInputs): CapacityFix | undefined {
  const m = x.recipe.sandbox?.managed;
  if (m === undefined || m.provider !== "e2b" || m.account?.tier === "pro" || m.account?.maxSandboxes !== undefined || m.account?.createsPerS !== undefined) return undefined;
  const edits: Edits = [{ path: ["sandbox", "managed", "account", "tier"], value: "pro" }];
  return x.works(edits) ? { kind: "tier", says: `E2B Pro: ${TIER_LIMITS.pro.maxSandboxes} sandboxes, ${TIER_LIMITS.pro.createsPerS} creates/s`, set: edits } : undefined;
}

/** Two significant digits, rounded up: 6.87 → 6.9. */
function roundUp2(v: number): number {
  const p = 10 ** (Math.floor(Math.log10(v)) - 1);
  return Number((Math.ceil(v / p - 1e-9) * p).toPrecision(2));
}

/** The account's quota: the concurrent sandboxes and creates per second the step needs (raised on request). */
function quotaFix(x: FixInputs): CapacityFix | undefined {
  const { demand: d, supply: s, stepSeconds, shareLimit } = x.cap;
  if (x.recipe.sandbox?.managed === undefined) return undefined;
  const budget = stepSeconds * shareLimit;
  const needSandboxes = Math.ceil((d.toolCallsPerStep * s.toolCallSeconds! + d.testCasesPerStep * s.testCaseSeconds!) / budget);
  const needCreates = (d.toolCallsPerStep * s.createsPerToolCall!) / budget;
  for (let grow = 1; grow < 4; grow *= 1.25) {
    const sandboxes = Math.max(s.maxSandboxes!, Math.ceil(needSandboxes * grow));
    const creates = needCreates === 0 ? s.createsPerS! : Math.max(s.createsPerS!, roundUp2(needCreates * grow));
    const edits: Edits = [
      ...(sandboxes > s.maxSandboxes! ? [{ path: ["sandbox", "managed", "account", "maxSandboxes"], value: sandboxes }] : []),
      ...(creates > s.createsPerS! ? [{ path: ["sandbox", "managed", "account", "createsPerS"], value: creates }] : []),
    ];
    if (edits.length > 0 && x.works(edits)) {
      const what = [...(sandboxes > s.maxSandboxes! ? [`${sandboxes} concurrent sandboxes`] : []), ...(creates > s.createsPerS! ? [`${creates} creates/s`] : [])];
      return { kind: "quota", says: `an account quota of ${what.join(" and ")}, once the provider grants it`, set: edits };
    }
  }
  return undefined;
}
