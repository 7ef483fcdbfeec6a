// The triggers and identity part of `rlpipe functions deploy`: checks the agency / role before any function changes
// (a missing one is named with what to grant, exit 2), and after each function is deployed makes its triggers the
// wanted ones (core/packaging/triggers.ts plans from a fresh list each round, so a deploy that failed half-way, or a
// create whose reply was lost, converges on the next round or the next deploy, with no duplicate).
import { RlpipeError } from "../../core/errors.js";
import type { FunctionName } from "../../core/packaging/targets.js";
import { type TriggerAction, type TriggerSpec, type WantedTrigger, grantsNeeded, planTriggers } from "../../core/packaging/triggers.js";
import { type DeployedFunction, type FunctionsApi, FunctionsApiError } from "../../adapters/providers/functions-api.js";
import type { Io } from "../io.js";

type Env = Readonly<Record<string, string | undefined>>;

export interface TriggerResult {
  readonly trigger: string;
  /** created, updated, replaced (deleted and created: the platform cannot update it), unchanged. */
  readonly action: "created" | "updated" | "replaced" | "unchanged";
  /** Duplicates of this trigger that were deleted. */
  readonly duplicatesDeleted?: number;
}

// Listings per deploy: the first, one after the changes (which should show them), one more after a failed call.
const PASSES = 3;
type Change = Exclude<TriggerAction, { readonly kind: "unchanged" }>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mayRepeat = (e: unknown) => e instanceof FunctionsApiError && (e.kind === "retryable" || e.kind === "ambiguous" || e.kind === "busy" || e.kind === "exists" || e.kind === "not_found");

/** Refuses, before anything is sent, two functions that would share one APIG route. */
export function checkHttpRoutes(platform: "functiongraph" | "scf", wanted: readonly WantedTrigger[], group: string | undefined): void {
  if (platform !== "functiongraph") return;
  const http = wanted.filter((w) => w.kind === "http");
  const paths = new Map<string, string[]>();
  for (const w of http) paths.set(w.path, [...(paths.get(w.path) ?? []), w.function]);
  for (const [path, fns] of paths) {
    if (fns.length > 1) {
      throw new RlpipeError("apig_route_shared", `${fns.join(" and ")} would share the APIG route ANY ${path} in group ${group}: one route has one backend function`, {
        exitCode: 2, hint: "deploy them one at a time (--function NAME), each with its own RLPIPE_BASE_PATH (e.g. /rlpipe-reward and /rlpipe-runs)",
      });
    }
  }
}

/** The agency (FunctionGraph) or execution role (SCF) must exist and be one the platform can take. */
export async function checkRole(api: FunctionsApi, role: string, functions: readonly FunctionName[], env: Env): Promise<void> {
  const platform = api.platform as "functiongraph" | "scf";
  const r = await api.triggers.checkRole(role);
  const what = platform === "functiongraph" ? "FunctionGraph agency" : "SCF execution role";
  const grants = grantsNeeded(platform, functions, env);
  const grantText = grants.length === 0 ? "" : `; grant it: ${grants.join("; ")}`;
  if (!r.exists) {
    const create = platform === "functiongraph"
      ? `create it in IAM (Agencies → Create agency, type Cloud service, service FunctionGraph)`
      : `create it in CAM (Roles → Create role, role entity Tencent Cloud service, service SCF)`;
    throw new RlpipeError(`${platform}_role_missing`, `${what} ${role} (--role) does not exist`, { exitCode: 2, hint: `${create}${grantText}` });
  }
  if (r.problem !== undefined) throw new RlpipeError(`${platform}_role_unusable`, `${what} ${role} (--role): ${r.problem}`, { exitCode: 2, hint: `use a role made for the service${grantText}` });
}

/**
 * Make `fn`'s triggers the wanted ones; what each became. At most one change (an update, or a delete and a create
 * where the platform cannot update) per trigger per deploy, and at most PASSES listings: a trigger the service still
 * lists differently after its change, or one still not settled after the last pass, ends the deploy with an error
 * that names the trigger and the differing field (never a loop of writes).
 */
export async function reconcileTriggers(io: Io, api: FunctionsApi, fn: DeployedFunction, specs: readonly TriggerSpec[]): Promise<TriggerResult[]> {
  const done = new Map<string, { created: boolean; updated: boolean; deleted: number }>();
  const mark = (spec: TriggerSpec) => { const m = done.get(spec.label) ?? { created: false, updated: false, deleted: 0 }; done.set(spec.label, m); return m; };
  const changed = new Set<string>();
  const again = async (e: unknown, pass: number) => {
    if (!mayRepeat(e) || pass >= PASSES) throw e;
    io.err(`rlpipe: ${api.platform} triggers of ${fn.name}: ${(e as Error).message}; looking again (pass ${pass + 1} of ${PASSES})`);
    await sleep(500 * pass);
  };
  for (let pass = 1; ; pass++) {
    let deployed;
    try { deployed = await api.triggers.list(fn); } catch (e) { await again(e, pass); continue; }
    const todo = planTriggers(specs, deployed, (t) => api.triggers.canUpdate(t)).filter((a): a is Change => a.kind !== "unchanged");
    if (todo.length === 0) break;
    const unsettled = todo.find((a) => a.kind !== "delete" && changed.has(a.spec.label));
    if (unsettled !== undefined) {
      throw new RlpipeError("trigger_not_settled", `${api.platform} trigger ${unsettled.spec.label} of ${fn.name} does not settle: rlpipe changed it once in this deploy and the service still lists it differently (${unsettled.difference})`, {
        exitCode: 3, hint: `the service keeps this field in another form than rlpipe sets it; nothing more was sent. Look at the trigger in the console, and report the field with the listing so rlpipe compares it as the service normalizes it`,
      });
    }
    if (pass > PASSES) {
      const first = todo[0]!;
      throw new RlpipeError("trigger_not_settled", `${api.platform} trigger ${first.spec.label} of ${fn.name} is not settled after ${PASSES} passes (${first.difference})`, {
        exitCode: 3, hint: "run the deploy again; each deploy makes at most one change per trigger",
      });
    }
    try {
      for (const a of todo) {
        if (a.kind === "create") { await api.triggers.create(fn, a.spec); mark(a.spec).created = true; changed.add(a.spec.label); }
        else if (a.kind === "update") { await api.triggers.update(fn, a.deployed, a.spec); mark(a.spec).updated = true; changed.add(a.spec.label); }
        else if (a.kind === "delete") { await api.triggers.delete(fn, a.deployed); mark(a.spec).deleted++; }
      }
    } catch (e) {
      // Whatever happened (a lost reply, a refusal because it exists by now), the next pass lists and plans again.
      await again(e, pass);
    }
  }
  return specs.map((spec) => {
    const m = done.get(spec.label);
    if (m === undefined) return { trigger: spec.label, action: "unchanged" };
    const action = m.created ? (m.deleted > 0 ? "replaced" : "created") : m.updated ? "updated" : "unchanged";
    const dups = m.deleted - (action === "replaced" ? 1 : 0);
    return { trigger: spec.label, action, ...(dups > 0 ? { duplicatesDeleted: dups } : {}) };
  });
}
