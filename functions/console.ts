// The console function: what a cloud console's JSON test event (or a storage notification) can ask of rlpipe,
// through the same code paths as the CLI — deploy (functions/deploy.ts: plan, refuse placeholders, one job per
// deploy, run record), status (the run record, then the provider), score (the reward function's handler and
// sandbox backend), cost (the whole run's cost estimate, core/cost: the CostReport as JSON), and a deploy for each recipe object
// uploaded under the configured prefix, exactly once per object version (functions/event-claims.ts).
// Every answer is JSON: {ok: true, action, …} or {ok: false, exitCode, error: {code, message, hint, where…,
// retryable?}}; over HTTP the report action may answer the page itself (functions/apps/console.ts).
import { posix } from "node:path";
import { type ErrorDocument, errorDocument } from "../core/error-document.js";
import { ExitCode, RecipeError, RlpipeError } from "../core/errors.js";
import type { PlanOptions } from "../core/plan.js";
import { checkBudget } from "../core/cost/budget-check.js";
import { estimateCost } from "../core/cost/estimate.js";
import { formatCostSummary } from "../core/cost/render/summary-line.js";
import { describePrices } from "../core/prices.js";
import { isTerminal } from "../core/providers/phases.js";
import { type LoadedRecipe, parseRecipe } from "../core/recipe/load.js";
import { PROVIDERS, type Provider, type Recipe } from "../core/recipe/schema.js";
import { formatPlanSummary } from "../core/summary.js";
import { type RetryPolicy, formatRetryNotice } from "../adapters/providers/provider.js";
import type { RunRecordStore } from "../adapters/providers/run-records.js";
import { presignRunPageFor, runPageKey } from "../adapters/storage/run-page-store.js";
import { type ObjectStore, StorageError, parseStoreUri } from "../adapters/storage/store.js";
import {
  type ConsoleEvent, type CostEvent, type DeployEvent, INLINE_RECIPE_FILE, type ObjectCreated, type ReportEvent, type ScoreEvent, type StatusEvent,
  badEvent, isEventBridgeS3, isNotification, parseConsoleEvent, parseEventBridgeS3, parseNotification,
} from "./console-events.js";
import { type AdapterLoader, budgetWarning, executeDeploy, prepareDeploy, refuseOverBudget, runStatusOf } from "./deploy.js";
import { isRetryable } from "./error-response.js";
import { type RunSummary, oncePerVersion } from "./event-claims.js";
import { type RewardDeps, handleRewards } from "./reward.js";

/** Providers the console deploys to (local and docker run jobs on the machine itself: not in a function). */
export const CONSOLE_PROVIDERS = ["modelarts", "tione", "ray", "slurm"] as const satisfies readonly Provider[];
/** Largest recipe object read from a store (as a recipe file: a page of YAML). */
const MAX_RECIPE_BYTES = 1 << 20;

export interface StateStore {
  /** Run records and event markers live here (RLPIPE_STATE_STORE). */
  readonly store: ObjectStore;
  readonly records: RunRecordStore;
}

/** Where uploaded recipes trigger deploys: RLPIPE_CONSOLE_RECIPE_PREFIX, a URI (s3|obs|cos://bucket/prefix) or a bare key prefix. */
export interface RecipeTrigger {
  readonly scheme?: "s3" | "obs" | "cos";
  readonly bucket?: string;
  /** Key prefix without a trailing slash ("" for the whole bucket). */
  readonly prefix: string;
  /** RLPIPE_CONSOLE_PROVIDER: the provider when the key does not end .<provider>.yaml. */
  readonly provider?: Provider;
}

export interface ConsoleDeps {
  /** State store; deploy and status need it (a dry run and cost do not). */
  readonly state?: StateStore;
  /** A store to read recipe objects and the files beside them (credentials from the function's environment). */
  readonly openStore: (uri: string) => Promise<ObjectStore>;
  readonly loadAdapter: AdapterLoader;
  /** The Python files shipped into bundles (functions/python-assets.ts). */
  readonly assets: () => Readonly<Record<string, string>>;
  /** The reward function's dependencies with the configured sandbox backend, built on first use. */
  readonly rewards?: () => Promise<RewardDeps>;
  readonly trigger?: RecipeTrigger;
  /** Time for the retries of one provider call (RLPIPE_RETRY_BUDGET_MS, default 20 s). */
  readonly retryBudgetMs?: number;
  /** How long a delivery waits for another one's claim of the same object version (RLPIPE_CONSOLE_CLAIM_WAIT_MS). */
  readonly claimWaitMs?: number;
  readonly claimPollMs?: number;
  readonly log: (line: string) => void;
  readonly now?: () => Date;
  /** The environment stores are opened with: a presigned URL's lifetime is capped by AWS_CREDENTIAL_EXPIRATION there. */
  readonly storeEnv?: Readonly<Record<string, string | undefined>>;
}

/** An error answer's document; `retryable` when the same event may pass later (a store or provider that could not be reached or was overloaded). */
export type ConsoleError = ErrorDocument & { readonly retryable?: true };

export type ConsoleReply =
  | ({ readonly ok: true; readonly exitCode: 0; readonly action: string } & Record<string, unknown>)
  | { readonly ok: false; readonly exitCode: number; readonly error: ConsoleError; readonly results?: readonly Record<string, unknown>[] };

const CONSOLE_BUG_HINT = "this is a bug in rlpipe; please report it with the event you sent (the function log has the details)";

export function errorReply(e: unknown): ConsoleReply & { ok: false } {
  const doc = errorDocument(e, { internalHint: CONSOLE_BUG_HINT });
  // Only an external failure (exit 3) may pass on a later try; bad input stays bad.
  const error: ConsoleError = doc.exitCode === ExitCode.external && isRetryable(e) ? { ...doc, retryable: true } : doc;
  return { ok: false, exitCode: error.exitCode, error };
}

/**
 * Answer one event. Console events always get an answer (errors as JSON). A storage notification throws when a
 * store or provider failed (exit 3) so that the platform delivers it again; its other answers are JSON too.
 */
export async function handleConsoleEvent(event: unknown, deps: ConsoleDeps): Promise<ConsoleReply> {
  if (isNotification(event) || isEventBridgeS3(event)) return handleNotification(event, deps);
  try {
    const ev = parseConsoleEvent(event);
    return await dispatch(ev, deps);
  } catch (e) {
    if (errorDocument(e).code === "internal_error") deps.log(`console: internal error: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    return errorReply(e);
  }
}

function dispatch(ev: ConsoleEvent, deps: ConsoleDeps): Promise<ConsoleReply> {
  switch (ev.action) {
    case "deploy": return deployAction(ev, deps);
    case "status": return statusAction(ev, deps);
    case "score": return scoreAction(ev, deps);
    case "cost": return costAction(ev, deps);
    case "report": return reportAction(ev, deps);
  }
}

// ------------------------------------------------------------------------------------------ recipes in events

interface EventRecipe {
  readonly loaded: LoadedRecipe;
  /** Where the record says the recipe came from: the URI, or the inline marker. */
  readonly file: string;
  readonly planOptions: Omit<PlanOptions, "provider" | "attempt">;
}

/** A recipe given as text (line numbers count from its first line) or as an object (located by recipe path). */
export function parseInlineRecipe(recipe: string | Record<string, unknown>): LoadedRecipe {
  if (typeof recipe === "string") return parseRecipe(recipe, INLINE_RECIPE_FILE);
  try {
    return parseRecipe(JSON.stringify(recipe), INLINE_RECIPE_FILE);
  } catch (e) {
    // Positions in JSON made from the object would point nowhere the user wrote: the recipe path says where.
    if (e instanceof RecipeError) throw new RecipeError(e.file, e.issues.map(({ line: _l, col: _c, ...rest }) => rest));
    throw e;
  }
}

/** Files a recipe names beside itself: shipped datasets and a custom reward function (read for the signature check). */
function besideFiles(recipe: Recipe): string[] {
  const out = new Set<string>();
  for (const ds of Object.values(recipe.datasets)) if (typeof ds.ship === "string") out.add(ds.ship);
  const fn = recipe.reward?.fn?.path;
  if (typeof fn === "string") out.add(fn);
  return [...out].filter((rel) => !rel.startsWith("/") && !rel.includes("${")).sort();
}

async function readRecipeObject(uri: string, deps: ConsoleDeps): Promise<EventRecipe> {
  const parsed = parseStoreUri(uri);
  const root = `${parsed.scheme}://${parsed.bucket}`;
  const store = await deps.openStore(root);
  try {
    const key = parsed.prefix;
    const head = await store.head(key);
    if (head === undefined) throw new RlpipeError("recipe_not_found", `${uri}: no such object`, { exitCode: ExitCode.invalidInput, hint: "check the bucket and key; the function reads it with its own credentials (role, agency or keys)" });
    if (head.size > MAX_RECIPE_BYTES) throw new RlpipeError("recipe_too_large", `${uri}: ${head.size} bytes; a recipe is at most ${MAX_RECIPE_BYTES} bytes`, { exitCode: ExitCode.invalidInput });
    const loaded = parseRecipe((await store.get(key)).toString("utf8"), uri);
    // The files it names beside itself, read now (planning reads them synchronously); a missing one is the
    // planner's clear error, as for a file on disk.
    const beside = new Map<string, string>();
    const dir = posix.dirname(key);
    for (const rel of besideFiles(loaded.recipe)) {
      const k = posix.normalize(posix.join(dir === "." ? "" : dir, rel));
      if (k.startsWith("../") || k === "..") continue;
      try { beside.set(rel, (await store.get(k)).toString("utf8")); } catch (e) { if (!(e instanceof StorageError && e.code === "not_found")) throw e; }
    }
    return { loaded, file: uri, planOptions: { readRecipeFile: (rel) => beside.get(rel), assets: deps.assets() } };
  } finally {
    await store.close();
  }
}

async function eventRecipe(ev: { recipe?: string | Record<string, unknown> | undefined; recipeUri?: string | undefined }, deps: ConsoleDeps): Promise<EventRecipe> {
  if (ev.recipeUri !== undefined) return readRecipeObject(ev.recipeUri, deps);
  const loaded = parseInlineRecipe(ev.recipe!);
  // Nothing is beside an inline recipe: shipped files need recipeUri (the planner says which is missing).
  return { loaded, file: INLINE_RECIPE_FILE, planOptions: { readRecipeFile: () => undefined, assets: deps.assets() } };
}

// ------------------------------------------------------------------------------------------ actions

function requireState(deps: ConsoleDeps, what: string): StateStore {
  if (deps.state === undefined) {
    throw new RlpipeError("state_store_missing", `${what} needs a state store for run records, and RLPIPE_STATE_STORE is not set`, {
      exitCode: ExitCode.invalidInput, hint: "set RLPIPE_STATE_STORE to s3://bucket/prefix, obs://bucket/prefix or cos://bucket-appid/prefix (the function's role, agency or keys must read and write it)",
    });
  }
  return deps.state;
}

function retryPolicy(deps: ConsoleDeps): RetryPolicy {
  return { budgetMs: deps.retryBudgetMs ?? 20_000, onRetry: (n) => deps.log(formatRetryNotice(n)) };
}

function consoleProvider(p: Provider): (typeof CONSOLE_PROVIDERS)[number] {
  if ((CONSOLE_PROVIDERS as readonly string[]).includes(p)) return p as (typeof CONSOLE_PROVIDERS)[number];
  throw badEvent("provider", `provider ${p} runs jobs on the machine rlpipe runs on, not from a cloud function`, `deploy from the console to ${CONSOLE_PROVIDERS.join(", ")}; use the CLI for ${p}`);
}

/** Records nobody keeps, for a dry run without a state store (it only reads them to number the run). */
const NO_RECORDS: RunRecordStore = {
  label: "nowhere (no state store)",
  read: async (name) => { throw new RlpipeError("unknown_run", `no run named ${name}`, { exitCode: 2 }); },
  write: async () => undefined,
  list: async () => ({ records: [], problems: [] }),
  readStartedAttempt: async () => 0,
  writeStartedAttempt: async () => undefined,
};

interface DeployArgs {
  readonly recipe: EventRecipe;
  readonly provider: Provider;
  readonly dryRun: boolean;
  readonly newRun: boolean;
  /** Create the job even over the recipe's budget cap. */
  readonly force: boolean;
}

/** The same rule as the CLI's deploy, with the console's words for forcing it. */
const CONSOLE_BUDGET_HINT = { force: "send the deploy event with \"force\": true", breakdown: "a {\"action\": \"cost\"} event with this recipe" };

async function deployRecipe(a: DeployArgs, deps: ConsoleDeps): Promise<ConsoleReply & { ok: true }> {
  const provider = consoleProvider(a.provider);
  const records = a.dryRun && deps.state === undefined ? NO_RECORDS : requireState(deps, "deploy").records;
  const { loaded } = a.recipe;
  const prepared = await prepareDeploy({
    loaded, provider, planOptions: a.recipe.planOptions, newRun: a.newRun, dryRun: a.dryRun, force: a.force, ...(deps.now === undefined ? {} : { now: deps.now }),
  }, records);
  const { plan: p, prices, attempt, cost, budget } = prepared;
  const costText = formatCostSummary(cost, { ...(budget === undefined ? {} : { budget }), command: "a cost event" });
  const budgetDoc = budget === undefined ? {} : { budget: { status: budget.status, cap: budget.cap, currency: budget.currency, total: budget.total, ratesNeeded: budget.ratesNeeded, message: budget.message } };
  if (a.dryRun) {
    return {
      ok: true, exitCode: 0, action: "deploy", dryRun: true, name: p.jobName, provider, attempt,
      summary: formatPlanSummary(p, undefined, describePrices(prices), costText).split("\n"),
      request: p.request, prices, cost: { totals: cost.totals, ...budgetDoc },
      warnings: p.warnings.map((w) => ({ code: w.code, path: w.path, message: w.message, ...(w.line === undefined ? {} : { line: w.line, col: w.col }), ...(w.hint === undefined ? {} : { hint: w.hint }) })),
      note: "dry run: nothing was created",
    };
  }
  // Over the cap: refused before the provider's adapter (and its credentials) is even loaded.
  refuseOverBudget(prepared, CONSOLE_BUDGET_HINT);
  const { adapter, close } = await deps.loadAdapter(provider, loaded.recipe);
  try {
    const policy = retryPolicy(deps);
    const r = await executeDeploy(prepared, adapter, {
      records, recipeFile: a.recipe.file, log: (l) => deps.log(`deploy: ${l}`), budgetHint: CONSOLE_BUDGET_HINT,
      policy: { ...policy, onEvent: (l) => deps.log(`deploy: ${l}`) }, statusPolicy: policy,
      ...(deps.now === undefined ? {} : { now: deps.now }),
    });
    if (r.statusError !== undefined) deps.log(`deploy: could not read the phase of ${r.ref.name}: ${errorDocument(r.statusError).message}`);
    const ended = r.found !== undefined && isTerminal(r.found.phase);
    const warning = budgetWarning(prepared);
    if (warning !== undefined) deps.log(`deploy: budget: ${warning}`);
    return {
      ok: true, exitCode: 0, action: "deploy", name: r.ref.name, provider, id: r.ref.id, outcome: r.outcome, attempt: r.attempt,
      cost: { totals: cost.totals, ...budgetDoc }, ...(warning === undefined ? {} : { warning }),
      ...(r.found === undefined ? {} : { phase: r.found.phase, rawPhase: r.found.rawPhase, ...(r.found.message === undefined ? {} : { message: r.found.message }) }),
      ...(ended ? { hint: "this run has ended; a deploy event with \"new\": true starts a new one" } : {}),
    };
  } finally {
    await close();
  }
}

async function deployAction(ev: DeployEvent, deps: ConsoleDeps): Promise<ConsoleReply> {
  const recipe = await eventRecipe(ev, deps);
  return deployRecipe({ recipe, provider: ev.provider, dryRun: ev.dryRun, newRun: ev.new, force: ev.force }, deps);
}

async function statusAction(ev: StatusEvent, deps: ConsoleDeps): Promise<ConsoleReply> {
  const state = requireState(deps, "status");
  const record = await state.records.read(ev.run);
  const { status } = await runStatusOf(record, state.records, deps.loadAdapter, retryPolicy(deps), deps.now);
  return {
    ok: true, exitCode: 0, action: "status", name: record.name, provider: record.provider, id: record.ref.id,
    phase: status.phase, rawPhase: status.rawPhase, ...(status.message === undefined ? {} : { message: status.message }),
    ...(status.startedAt === undefined ? {} : { startedAt: status.startedAt }), ...(status.endedAt === undefined ? {} : { endedAt: status.endedAt }),
  };
}

/**
 * The run's page, as the job's sync sidecar keeps it in the run's store (<store>/<run>/report.html, rewritten while
 * the job runs and at its end), or with `url: true` a presigned GET URL of it (a bearer link, never logged) whose
 * `expiresS` is its real lifetime: capped by the signing credentials' expiry (`cappedBy: "credentials"`, `notice`).
 */
async function reportAction(ev: ReportEvent, deps: ConsoleDeps): Promise<ConsoleReply> {
  const state = requireState(deps, "report");
  const record = await state.records.read(ev.run);
  if (record.store === undefined) {
    throw new RlpipeError("store_missing", `run ${record.name} keeps nothing in a store (its recipe sets no checkpoints.storage), so it has no page`, {
      exitCode: ExitCode.invalidInput, hint: "set checkpoints.storage in the recipe (ModelArts and TI-ONE default to <codeDir>/runs)",
    });
  }
  const store = await deps.openStore(record.store);
  try {
    const base = { ok: true as const, exitCode: 0 as const, action: "report", name: record.name, provider: record.provider, key: runPageKey(record.name) };
    if (ev.url) {
      const signed = await presignRunPageFor(store, record.name, ev.expiresS, {
        ...(deps.storeEnv === undefined ? {} : { env: deps.storeEnv }), ...(deps.now === undefined ? {} : { now: deps.now() }),
      });
      return { ...base, ...signed, ...(signed.cappedBy === undefined ? {} : { requestedExpiresS: ev.expiresS }) };
    }
    let page: Buffer;
    try {
      page = await store.get(runPageKey(record.name));
    } catch (e) {
      if (!(e instanceof StorageError && e.code === "not_found")) throw e;
      throw new RlpipeError("page_missing", `no page for ${record.name} in ${record.store} yet (${runPageKey(record.name)})`, {
        exitCode: ExitCode.invalidInput, hint: "the job's sync sidecar writes it after its first pass; ask again in a minute",
      });
    }
    return { ...base, contentType: "text/html; charset=utf-8", page: page.toString("utf8") };
  } finally {
    await store.close();
  }
}

async function scoreAction(ev: ScoreEvent, deps: ConsoleDeps): Promise<ConsoleReply> {
  if (deps.rewards === undefined) {
    throw new RlpipeError("sandbox_not_configured", "score needs a sandbox backend and none is configured", {
      exitCode: ExitCode.invalidInput, hint: "set RLPIPE_SANDBOX (e2b or scalebox) and its settings as for the reward function (E2B_API_KEY, or RLPIPE_SCALEBOX_URL)",
    });
  }
  const rewardDeps = await deps.rewards();
  const res = await handleRewards({ method: "POST", path: "/v1/rewards", headers: {}, body: { samples: ev.samples, ...(ev.config === undefined ? {} : { config: ev.config }) } }, rewardDeps);
  if (res.status === 422) {
    const d = (res.body as { detail?: { loc?: (string | number)[]; msg?: string }[] }).detail?.[0];
    const where = (d?.loc ?? []).slice(1).map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("").replace(/^\./, "");
    throw badEvent(where === "" ? "samples" : where, d?.msg ?? "not a valid sample", "a sample is {data_source, solution_str, ground_truth, extra_info}, as verl passes them to compute_score");
  }
  return { ok: true, exitCode: 0, action: "score", ...(res.body as Record<string, unknown>) };
}

/**
 * The whole run's cost estimate as the CLI's `rlpipe cost --format json` gives it (a CostReport, schema
 * rlpipe.cost-report v1): across every provider unless the event names one; offline (catalog and recipe prices).
 */
async function costAction(ev: CostEvent, deps: ConsoleDeps): Promise<ConsoleReply> {
  const { loaded, file } = await eventRecipe(ev, deps);
  const recipe = loaded.recipe;
  const estimate = estimateCost(recipe, { provider: ev.provider ?? "all", now: deps.now?.() ?? new Date() });
  const report = { ...estimate, recipe: { ...estimate.recipe, file } };
  const budget = recipe.cost?.budget;
  return {
    ok: true, exitCode: 0, action: "cost", recipe: recipe.metadata.name,
    summary: formatCostSummary(report, { ...(budget === undefined ? {} : { budget }), command: false }),
    ...(budget === undefined ? {} : { budget: checkBudget(report, budget) }),
    report,
  };
}

// ------------------------------------------------------------------------------------------ uploads

/** The provider of an uploaded recipe: a key ending .<provider>.yaml, else RLPIPE_CONSOLE_PROVIDER, else the recipe's only target. */
export function providerOfUpload(key: string, trigger: RecipeTrigger, recipe: Recipe | undefined): Provider | undefined {
  const m = /\.([a-z]+)\.ya?ml$/.exec(key);
  if (m !== null && (PROVIDERS as readonly string[]).includes(m[1]!)) return m[1] as Provider;
  if (trigger.provider !== undefined) return trigger.provider;
  const targets = recipe === undefined ? [] : PROVIDERS.filter((p) => recipe.targets?.[p] !== undefined);
  return targets.length === 1 ? targets[0] : undefined;
}

/** Why an uploaded object is not a recipe this function deploys, or undefined when it is. */
function notForUs(o: ObjectCreated, t: RecipeTrigger): string | undefined {
  if (!o.created) return `not an object-created event (${o.eventName})`;
  if (t.scheme !== undefined && t.scheme !== o.scheme) return `a ${o.scheme} notification; RLPIPE_CONSOLE_RECIPE_PREFIX names ${t.scheme}://`;
  if (t.bucket !== undefined && t.bucket !== o.bucket) return `bucket ${o.bucket} is not ${t.bucket} (RLPIPE_CONSOLE_RECIPE_PREFIX)`;
  if (t.prefix !== "" && !o.key.startsWith(`${t.prefix}/`)) return `${o.key} is not under ${t.prefix}/ (RLPIPE_CONSOLE_RECIPE_PREFIX)`;
  if (!/\.ya?ml$/.test(o.key)) return `${o.key} is not a .yaml or .yml recipe`;
  return undefined;
}

async function handleNotification(event: unknown, deps: ConsoleDeps): Promise<ConsoleReply> {
  let objects: ObjectCreated[];
  try {
    objects = isNotification(event) ? parseNotification(event) : parseEventBridgeS3(event);
  } catch (e) {
    return errorReply(e);
  }
  const trigger = deps.trigger;
  if (trigger === undefined) {
    return errorReply(new RlpipeError("config_missing", "RLPIPE_CONSOLE_RECIPE_PREFIX is not set: it says which uploaded objects are recipes to deploy", {
      exitCode: ExitCode.invalidInput, hint: "set it to s3://bucket/recipes, obs://bucket/recipes or cos://bucket-appid/recipes (or a key prefix such as recipes)",
    }));
  }
  let state: StateStore;
  try { state = requireState(deps, "a deploy on upload"); } catch (e) { return errorReply(e); }
  const results: Record<string, unknown>[] = [];
  for (const o of objects) {
    const uri = `${o.scheme}://${o.bucket}/${o.key}`;
    const skip = notForUs(o, trigger);
    if (skip !== undefined) { results.push({ source: uri, skipped: skip }); continue; }
    try {
      const done = await oncePerVersion(o, {
        store: state.store, log: deps.log,
        ...(deps.claimWaitMs === undefined ? {} : { waitMs: deps.claimWaitMs }), ...(deps.claimPollMs === undefined ? {} : { pollMs: deps.claimPollMs }),
        ...(deps.now === undefined ? {} : { now: deps.now }),
      }, async (): Promise<RunSummary> => {
        const recipe = await readRecipeObject(uri, deps);
        const provider = providerOfUpload(o.key, trigger, recipe.loaded.recipe);
        if (provider === undefined) {
          throw new RlpipeError("provider_required", `${uri}: which provider to deploy it to is not said`, {
            exitCode: ExitCode.invalidInput, hint: `name the object <recipe>.<provider>.yaml (${CONSOLE_PROVIDERS.join(", ")}), set RLPIPE_CONSOLE_PROVIDER, or give the recipe one target`,
          });
        }
        const r = await deployRecipe({ recipe, provider, dryRun: false, newRun: false, force: false }, deps);
        return { name: String(r["name"]), provider: String(r["provider"]), id: String(r["id"]), outcome: r["outcome"] as RunSummary["outcome"] };
      }, (e) => errorDocument(e));
      if ("failed" in done) results.push({ source: uri, version: o.version, delivery: done.delivery, error: done.failed });
      else results.push({ source: uri, version: o.version, delivery: done.delivery, ...done.run });
    } catch (e) {
      const doc = errorDocument(e, { internalHint: CONSOLE_BUG_HINT });
      // A store or provider that failed: the platform's retry of this delivery may pass (done records answer from their markers).
      if (doc.exitCode !== ExitCode.invalidInput) throw e;
      results.push({ source: uri, version: o.version, error: doc });
    }
  }
  const failed = results.find((r) => r["error"] !== undefined);
  if (failed !== undefined) {
    const error = failed["error"] as ErrorDocument;
    return { ok: false, exitCode: error.exitCode, error, results };
  }
  return { ok: true, exitCode: 0, action: "object-created", results };
}
