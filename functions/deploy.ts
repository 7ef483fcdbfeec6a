// One deploy, the same code path for `rlpipe deploy` and the console function: plan a recipe for a provider, refuse
// template placeholders and providers without a deploy API, pick which run of the recipe this is, create the job
// exactly once (deploy() finds a job made earlier by its deterministic name before it creates one), keep the run
// record, and ask what a job found rather than made is doing. The status of a recorded run goes through here too.
// The cost estimate is made here too, and the recipe's budget cap is enforced here (checkBudget): no caller can
// create a job whose expected cost is above the cap without asking for it (force).
// Printing, prompts and following a job stay with the caller.
import { type BudgetCheck, checkBudget } from "../core/cost/budget-check.js";
import { estimateCost } from "../core/cost/estimate.js";
import type { CostReport } from "../core/cost/types.js";
import { ExitCode, RlpipeError } from "../core/errors.js";
import { type Plan, type PlanOptions, plan } from "../core/plan.js";
import { type PriceEstimate, pricesOfReport } from "../core/prices.js";
import { attemptName } from "../core/providers/request.js";
import type { LoadedRecipe } from "../core/recipe/load.js";
import { refusePlaceholders } from "../core/recipe/placeholders.js";
import { type Provider, type Recipe, RecipeSchema } from "../core/recipe/schema.js";
import { type DeployOutcome, type JobRef, type JobStatus, type ProviderAdapter, type RetryPolicy, deploy, withRetry } from "../adapters/providers/provider.js";
import { type RunRecord, type RunRecordStore, attemptOf } from "../adapters/providers/run-records.js";
import type { LoadedAdapter } from "./providers.js";

/** At most this many attempts are skipped when a new run finds the next names taken by runs made elsewhere. */
export const MAX_SKIPPED_ATTEMPTS = 20;

export interface DeployRequest {
  readonly loaded: LoadedRecipe;
  readonly provider: Provider;
  /** How to plan the recipe (its files, the shipped assets, a verl profile); the attempt is chosen here. */
  readonly planOptions: PlanOptions;
  /** Start the next run of the recipe rather than find its latest (CLI --new). */
  readonly newRun?: boolean;
  /** Only show what would be sent: template placeholders are then warnings, not errors. */
  readonly dryRun?: boolean;
  /** Create the job even though the estimate's expected total is above the recipe's budget cap (CLI --force). */
  readonly force?: boolean;
  /** The estimate's clock (default now). */
  readonly now?: () => Date;
}

export interface PreparedDeploy {
  readonly request: DeployRequest;
  /** The job name of run 1 of this recipe on this provider. */
  readonly base: string;
  /** Which run: the latest one, or with newRun the next one (or one started but never recorded). */
  readonly attempt: number;
  /** A new run whose number was never started from here: a job found under that name was made elsewhere. */
  readonly fresh: boolean;
  readonly plan: Plan;
  readonly prices: PriceEstimate;
  /** The whole run's cost estimate for this provider (offline: catalog and recipe prices); the run record keeps it
   *  for `rlpipe cost --run`. */
  readonly cost: CostReport;
  /** The estimate against the recipe's cost.budget, when it has one. */
  readonly budget?: BudgetCheck;
}

export function planAttempt(request: DeployRequest, attempt: number): Plan {
  return plan(request.loaded, { ...request.planOptions, provider: request.provider, attempt });
}

/** Plan, refuse what must never reach a provider, and choose the run; nothing is created. */
export async function prepareDeploy(request: DeployRequest, records: RunRecordStore): Promise<PreparedDeploy> {
  const { provider } = request;
  const first = planAttempt(request, 1);
  // A template value (rsg-xxxxxxxx, <bucket>) must never reach a provider; a dry run only shows the warnings.
  if (request.dryRun !== true) refusePlaceholders(first.recipe.file, first.warnings);
  if (first.request === undefined) throw new RlpipeError("no_deploy_target", `provider ${provider} has no deploy API: run rlpipe plan --provider ${provider} and start the bundle by hand`, { exitCode: 2 });

  // Which run of this recipe: the latest one, or for a new run the next one. A new run whose create was started
  // but never recorded (its reply lost, the caller killed) is that run, not a reason for another.
  const base = first.jobName;
  const started = await records.readStartedAttempt(base);
  const recorded = Math.max(0, ...(await records.list()).records.map((r) => attemptOf(base, r.name) ?? 0));
  const newRun = request.newRun === true;
  const attempt = newRun ? (started > recorded ? started : recorded + 1) : Math.max(1, started, recorded);
  const recipe = request.loaded.recipe;
  const cost = estimateCost(recipe, { provider, now: request.now?.() ?? new Date() });
  const cap = recipe.cost?.budget;
  return {
    request, base, attempt,
    fresh: newRun && started <= recorded,
    plan: attempt === 1 ? first : planAttempt(request, attempt),
    prices: pricesOfReport(cost),
    cost,
    ...(cap === undefined ? {} : { budget: checkBudget(cost, cap) }),
  };
}

/**
 * Refuse (exit 2) a deploy whose estimated expected total is above the recipe's budget cap, unless forced. Only
 * "over" refuses: at-risk (the high end above the cap) and unknown (a rate missing, the priced lines within the
 * cap) are for the caller to warn about.
 */
export function refuseOverBudget(prepared: PreparedDeploy, how: { force: string; breakdown: string }): void {
  const b = prepared.budget;
  if (b === undefined || b.status !== "over" || prepared.request.force === true) return;
  throw new RlpipeError("over_budget", `refusing to create ${prepared.plan.jobName}: ${b.message}`, {
    exitCode: ExitCode.invalidInput,
    hint: `${how.breakdown} shows the breakdown; raise cost.budget.cap in the recipe, make the run smaller, or ${how.force} to create it anyway`,
  });
}

/**
 * What a real deploy of `prepared` would refuse before asking a provider anything — the template placeholders left
 * in the recipe, then a cost above the budget cap — or undefined. A dry run reports it and exits with its code.
 */
export function deployRefusal(prepared: PreparedDeploy, how: { force: string; breakdown: string }): RlpipeError | undefined {
  try {
    refusePlaceholders(prepared.plan.recipe.file, prepared.plan.warnings);
    refuseOverBudget(prepared, how);
    return undefined;
  } catch (e) {
    if (e instanceof RlpipeError) return e;
    throw e;
  }
}

/** What to warn about before a deploy goes on: over with force, at-risk, unknown; nothing when within. */
export function budgetWarning(prepared: PreparedDeploy): string | undefined {
  const b = prepared.budget;
  if (b === undefined || b.status === "within") return undefined;
  if (b.status === "over") return prepared.request.force === true ? `${b.message}; creating it anyway (forced)` : undefined;
  return b.message;
}

export interface DeployContext {
  readonly records: RunRecordStore;
  /** deploy()'s retries, budget and progress lines (onEvent). */
  readonly policy: RetryPolicy;
  /** Retries of the status asked of a job found rather than made. */
  readonly statusPolicy: RetryPolicy;
  /** Lines about choices made on the way (a run number taken elsewhere). */
  readonly log: (line: string) => void;
  /** The recipe as the run record names it: an absolute path, an object URI, or where in an event. */
  readonly recipeFile: string;
  readonly now?: () => Date;
  /** How the caller's user forces a deploy over the budget cap and sees the breakdown (for the over_budget hint). */
  readonly budgetHint?: { readonly force: string; readonly breakdown: string };
}

export interface DeployResult {
  readonly ref: JobRef;
  readonly outcome: DeployOutcome["outcome"];
  readonly attempt: number;
  readonly plan: Plan;
  readonly record: RunRecord;
  /** What a job found rather than made is doing, when the provider said. */
  readonly found?: JobStatus;
  /** Why it did not say. */
  readonly statusError?: unknown;
}

/** Create the job (or find the one made before), record the run, and for a found job read its phase. */
export async function executeDeploy(prepared: PreparedDeploy, adapter: ProviderAdapter, ctx: DeployContext): Promise<DeployResult> {
  // Checked again here, so no path creates a job over the cap without force (the CLI checks before its prompt).
  refuseOverBudget(prepared, ctx.budgetHint ?? { force: "force the deploy", breakdown: "the cost estimate" });
  const { request, base, fresh } = prepared;
  const { provider, loaded } = request;
  let { attempt, plan: p } = prepared;
  let result: DeployOutcome;
  for (let skipped = 0; ; skipped++) {
    if (request.newRun === true) await ctx.records.writeStartedAttempt(base, attempt);
    result = await deploy(adapter, p, ctx.policy);
    // A fresh attempt number whose job already exists was made elsewhere (another directory, machine or store):
    // it is not this new run, so take the next number.
    if (!(fresh && result.outcome === "existing") || skipped >= MAX_SKIPPED_ATTEMPTS) break;
    ctx.log(`${p.jobName} already exists (not deployed from ${ctx.records.label}); trying ${attemptName(base, attempt + 1)}`);
    attempt++;
    p = planAttempt(request, attempt);
  }
  const { ref, outcome } = result;
  const now = (ctx.now?.() ?? new Date()).toISOString();
  let existing: RunRecord | undefined;
  try { existing = await ctx.records.read(ref.name); } catch { existing = undefined; }
  let record: RunRecord = {
    version: 1, name: ref.name, provider, ref: refFields(ref),
    recipe: { name: p.recipe.name, file: ctx.recipeFile, hash: p.recipe.hash },
    recipeData: loaded.recipe, request: p.request, outcome,
    createdAt: existing?.createdAt ?? now, updatedAt: now,
    // The rates assumed when the job was made; a later deploy that finds it keeps them.
    prices: existing !== undefined && existing.prices.length > 0 ? existing.prices : prepared.prices.assumed,
    // Likewise the estimate: estimate vs actual compares with what was expected when the job was made.
    cost: existing?.cost ?? (prepared.cost as unknown as NonNullable<RunRecord["cost"]>),
    ...(p.storage === undefined ? {} : { store: p.storage.uri }),
    ...(existing?.lastStatus === undefined ? {} : { lastStatus: existing.lastStatus }),
  };
  await ctx.records.write(record);

  // A job found rather than made: say what it is doing (the caller says how to start a new run when it has ended).
  if (outcome !== "existing") return { ref, outcome, attempt, plan: p, record };
  try {
    const found = await withRetry({ provider, op: "status" }, (s) => adapter.status(ref, s), ctx.statusPolicy);
    record = await recordStatus(ctx.records, record, found, ctx.now);
    return { ref, outcome, attempt, plan: p, record, found };
  } catch (e) {
    return { ref, outcome, attempt, plan: p, record, statusError: e };
  }
}

/** The record with the phase just read, written back. */
export async function recordStatus(records: RunRecordStore, record: RunRecord, s: JobStatus, now?: () => Date): Promise<RunRecord> {
  const at = (now?.() ?? new Date()).toISOString();
  const next: RunRecord = { ...record, updatedAt: at, lastStatus: { phase: s.phase, rawPhase: s.rawPhase, at, ...(s.message === undefined ? {} : { message: s.message }) } };
  await records.write(next);
  return next;
}

export function refFields(ref: JobRef): RunRecord["ref"] {
  return { id: ref.id, ...(ref.region === undefined ? {} : { region: ref.region }), ...(ref.endpoint === undefined ? {} : { endpoint: ref.endpoint }), ...(ref.extra === undefined ? {} : { extra: ref.extra }) };
}

export function refOf(record: RunRecord): JobRef {
  return { provider: record.provider, name: record.name, ...record.ref };
}

/** The recipe a run was deployed with, as this rlpipe reads it (status, logs and stop use its targets). */
export function recipeOfRecord(record: RunRecord): Recipe {
  const parsed = RecipeSchema.safeParse(record.recipeData);
  if (!parsed.success) {
    throw new RlpipeError("bad_run_record", `the run record of ${record.name} holds a recipe this rlpipe cannot read (${parsed.error.issues[0]?.path.join(".") ?? ""}: ${parsed.error.issues[0]?.message ?? ""})`, {
      exitCode: ExitCode.invalidInput, hint: "use the rlpipe version that deployed it, or the provider's console",
    });
  }
  return parsed.data as Recipe;
}

export type AdapterLoader = (provider: Provider, recipe: Recipe) => Promise<LoadedAdapter>;

/** Run `fn` with the adapter of a recorded run, closed afterwards. */
export async function withRecordAdapter<T>(record: RunRecord, load: AdapterLoader, fn: (adapter: ProviderAdapter, ref: JobRef) => Promise<T>): Promise<T> {
  const { adapter, close } = await load(record.provider as Provider, recipeOfRecord(record));
  try { return await fn(adapter, refOf(record)); } finally { await close(); }
}

/** Ask the provider the phase of a recorded run and keep it in the record. */
export async function runStatusOf(record: RunRecord, records: RunRecordStore, load: AdapterLoader, policy: RetryPolicy, now?: () => Date): Promise<{ record: RunRecord; status: JobStatus }> {
  const status = await withRecordAdapter(record, load, (a, ref) => withRetry({ provider: record.provider, op: "status" }, (s) => a.status(ref, s), policy));
  return { record: await recordStatus(records, record, status, now), status };
}
