// rlpipe deploy | status | logs | stop | list: one job per deploy, found again through its run record.
// Provider calls are retried here and only here (adapters make one attempt per call), within a time budget
// (RLPIPE_RETRY_BUDGET_MS), with a line on stderr before each retry.
import { resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { ExitCode, RecipeError, RlpipeError, formatIssue } from "../../core/errors.js";
import type { Plan } from "../../core/plan.js";
import { describePrices } from "../../core/prices.js";
import { type Phase, isTerminal } from "../../core/providers/phases.js";
import { loadRecipeFile } from "../../core/recipe/load.js";
import { PROVIDERS, type Provider, type Recipe } from "../../core/recipe/schema.js";
import { redactText } from "../../core/redact.js";
import { formatPlanSummary } from "../../core/summary.js";
import { sleep } from "../../core/util/retry.js";
import { type JobRef, type JobStatus, type ProviderAdapter, ProviderError, type RetryPolicy, formatRetryNotice, withRetry } from "../../adapters/providers/provider.js";
import { type RunRecord, type RunRecordStore, dirRunRecords, runsDir } from "../../adapters/providers/run-records.js";
import { budgetWarning, deployRefusal, executeDeploy, prepareDeploy, recordStatus, refuseOverBudget, withRecordAdapter } from "../../functions/deploy.js";
import type { BudgetCheck } from "../../core/cost/budget-check.js";
import { formatElapsed, startHeartbeat } from "../heartbeat.js";
import { COMMANDS, formatHelp } from "../help.js";
import { type Io, describeError } from "../io.js";
import { loadAdapter } from "../providers.js";
import { costLine, parseProvider, planDocument, planOptionsFor, usage } from "./plan.js";

const POLL_MS = Number(process.env["RLPIPE_POLL_MS"] ?? 2000);
function recordsDir(): string {
  return runsDir(process.cwd());
}

function recordStore(): RunRecordStore {
  return dirRunRecords(recordsDir());
}

/** A whole number of milliseconds from the environment, or the default. */
function envMs(name: string, fallback: number): number {
  const v = process.env[name]?.trim();
  if (v === undefined || v === "") return fallback;
  if (!/^\d{1,9}$/.test(v)) throw new RlpipeError("bad_environment", `${name} must be a whole number of milliseconds, got ${JSON.stringify(v)}`, { exitCode: ExitCode.invalidInput });
  return Number(v);
}

/** The CLI's one retry layer: bounded in time, saying on stderr what it retries. */
function cliRetry(io: Io, signal?: AbortSignal): RetryPolicy {
  return { budgetMs: envMs("RLPIPE_RETRY_BUDGET_MS", 20_000), onRetry: (n) => io.err(formatRetryNotice(n)), ...(signal === undefined ? {} : { signal }) };
}

export async function runDeploy(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.deploy.options });
  if (values.help) { io.out(formatHelp("deploy")); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe deploy takes exactly one recipe file");
  if (values.provider !== undefined) parseProvider(values.provider); // a bad flag is reported before the recipe
  const file = positionals[0]!;
  const loaded = loadRecipeFile(file);
  const provider = values.provider === undefined ? deployTarget(loaded.recipe) : parseProvider(values.provider);
  const records = recordStore();
  const prepared = await prepareDeploy({
    loaded, provider, planOptions: planOptionsFor(file, loaded, { provider, ...(values["verl-profile"] === undefined ? {} : { profile: values["verl-profile"] }) }),
    newRun: values.new === true, dryRun: values["dry-run"] === true, force: values.force === true,
  }, records);
  const { plan: p, prices, attempt, cost, budget } = prepared;
  const budgetHint = { force: "pass --force", breakdown: `rlpipe cost ${file} --provider ${provider}` };
  // A dry run shows what the deploy would do, its refusal included: it exits with the code the deploy would.
  const refused = values["dry-run"] ? deployRefusal(prepared, budgetHint) : undefined;
  if (values.json) {
    if (values["dry-run"]) {
      io.out(JSON.stringify({
        plan: planDocument(p), request: p.request, prices, cost: { totals: cost.totals, ...(budget === undefined ? {} : { budget: budgetDocument(budget) }) }, attempt,
        ...(refused === undefined ? {} : { error: describeError(refused) }),
      }, null, 2));
    }
  } else {
    io.out(formatPlanSummary(p, undefined, describePrices(prices), costLine(loaded.recipe, provider, file, cost)));
    io.out(describeRequest(p));
    if (attempt > 1) io.out(`  run        ${attempt} of this recipe (${values.new ? "--new" : "the latest, started with --new"})`);
  }
  if (values["dry-run"]) {
    if (refused instanceof RecipeError) {
      for (const issue of refused.issues) io.err(formatIssue(issue));
      io.err(`rlpipe deploy: a deploy would refuse: ${refused.issues.length} placeholder value${refused.issues.length === 1 ? "" : "s"} left in ${refused.file}`);
    } else if (refused !== undefined) {
      io.err(`rlpipe deploy: a deploy would refuse: ${budget?.message ?? refused.message} (--force creates it anyway)`);
    } else {
      const w = budgetWarning(prepared);
      if (w !== undefined) io.err(`rlpipe deploy: warning: ${w}`);
    }
    if (!values.json) io.out(`dry run: nothing was created${refused === undefined ? "" : "; the deploy would refuse it (exit 2)"}`);
    return refused?.exitCode ?? 0;
  }
  // Over the budget cap: refused before the prompt and before any provider is asked anything.
  refuseOverBudget(prepared, budgetHint);
  const warning = budgetWarning(prepared);
  if (warning !== undefined) io.err(`rlpipe deploy: warning: ${warning}`);
  if (!values.yes && !(await confirm(`Create job ${p.jobName} on ${provider}? [y/N] `))) {
    io.err("rlpipe deploy: not confirmed; nothing was created");
    return ExitCode.cancelled;
  }

  const { adapter, close } = await loadAdapter(provider, loaded.recipe, { log: (l) => io.err(l) });
  try {
    const deployed = await executeDeploy(prepared, adapter, {
      records, recipeFile: resolve(file), log: (l) => io.err(`rlpipe deploy: ${l}`), budgetHint,
      policy: { ...cliRetry(io), onEvent: (l) => io.err(`rlpipe deploy: ${l}`) }, statusPolicy: cliRetry(io),
    });
    const { ref, outcome, found } = deployed;
    if (deployed.statusError !== undefined) io.err(`rlpipe deploy: could not read the phase of ${ref.name}: ${describeError(deployed.statusError).message}`);
    // A job found rather than made: say what it is doing, and how to start a new run when it has ended.
    const ended = found !== undefined && isTerminal(found.phase);
    const newRun = `rlpipe deploy ${file} --provider ${provider} --new`;
    if (values.json && !values.wait) {
      io.out(JSON.stringify({
        name: ref.name, provider, id: ref.id, outcome, attempt: deployed.attempt,
        ...(found === undefined ? {} : { phase: found.phase, rawPhase: found.rawPhase }),
        ...(ended ? { hint: `this run has ended; ${newRun} starts a new one` } : {}),
      }));
    } else if (!values.json) {
      const said = outcome === "created" ? "created" : outcome === "existing" ? "already exists (an earlier deploy made it; nothing new was created)" : "created (its reply was lost; found by name)";
      io.out(`job ${ref.name} ${said}: ${provider} id ${ref.id}`);
      if (found !== undefined) io.out(`  it ${ended ? "has ended" : "is"}: ${found.phase} (${found.rawPhase})${found.message === undefined ? "" : `  ${found.message}`}`);
      if (outcome === "existing") io.out(`  to start a new run of this recipe: ${newRun}`);
      io.out(`  rlpipe status ${ref.name}   rlpipe logs ${ref.name} -f   rlpipe stop ${ref.name}`);
    }
    if (!values.wait) return 0;
    const final = await followToEnd(adapter, ref, io, values.json);
    await updateStatus(deployed.record, final);
    if (values.json) io.out(JSON.stringify({ name: ref.name, provider, id: ref.id, outcome, attempt: deployed.attempt, phase: final.phase, rawPhase: final.rawPhase, ...(final.exitCode === undefined ? {} : { exitCode: final.exitCode }) }));
    else io.out(`job ${ref.name}: ${final.phase}${final.message === undefined ? "" : ` (${final.message})`}`);
    return exitCodeOf(final);
  } finally {
    await close();
  }
}

export async function runStatus(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.status.options });
  if (values.help) { io.out(formatHelp("status")); return 0; }
  if (positionals.length > 1) throw usage("rlpipe status takes at most one run name (see rlpipe list)");
  const named = positionals[0];
  const listed = named === undefined ? await recordStore().list() : { records: [await recordStore().read(named)], problems: [] };
  for (const p of listed.problems) io.err(`rlpipe status: ${p}`);
  // Every run is asked at once, so the whole command takes one retry budget however many runs are unreachable.
  const rows: { record: RunRecord; status?: JobStatus; error?: string; exitCode?: number }[] = await Promise.all(listed.records.map(async (record) => {
    try {
      const status = await withAdapter(record, io, (a, ref) => withRetry({ provider: record.provider, op: "status" }, (s) => a.status(ref, s), cliRetry(io)));
      await updateStatus(record, status);
      return { record, status };
    } catch (e) {
      if (named !== undefined) throw e;
      const d = describeError(e);
      return { record, error: d.message, exitCode: d.exitCode };
    }
  }));
  if (values.json) io.out(JSON.stringify(rows.map((r) => ({ name: r.record.name, provider: r.record.provider, id: r.record.ref.id, ...(r.status === undefined ? { error: r.error } : r.status) })), null, 2));
  else if (rows.length === 0 && listed.problems.length === 0) io.out("no runs deployed from this directory (rlpipe deploy <recipe> --provider …)");
  else {
    for (const line of columns([["RUN", "PROVIDER", "ID", "PHASE", "PROVIDER'S PHASE / DETAIL"], ...rows.map((r) => [r.record.name, r.record.provider, r.record.ref.id,
      ...(r.status === undefined ? ["unknown", r.error ?? ""] : [r.status.phase, `${r.status.rawPhase}${r.status.message === undefined ? "" : `  ${r.status.message}`}`])])])) io.out(line);
  }
  // Every run is shown; the exit code says whether every lookup was answered (the first failure's code).
  const failed = rows.find((r) => r.exitCode !== undefined);
  if (failed !== undefined) return failed.exitCode!;
  return listed.problems.length > 0 ? ExitCode.invalidInput : 0;
}

export async function runLogs(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.logs.options });
  if (values.help) { io.out(formatHelp("logs")); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe logs takes one run name (see rlpipe list)");
  const record = await recordStore().read(positionals[0]!);
  return withAdapter(record, io, async (adapter, ref) => {
    if (values.follow) {
      const final = await followToEnd(adapter, ref, io, values.json);
      await updateStatus(record, final);
      if (values.json) io.out(JSON.stringify({ name: ref.name, phase: final.phase, rawPhase: final.rawPhase, ...(final.exitCode === undefined ? {} : { exitCode: final.exitCode }) }));
      return exitCodeOf(final);
    }
    let cursor: string | undefined;
    for (;;) {
      const page = await withRetry({ provider: record.provider, op: "logs" }, (s) => adapter.logs(ref, cursor, s), cliRetry(io));
      emitLog(io, page.text, values.json);
      if (page.cursor === cursor || page.text === "") break;
      cursor = page.cursor;
    }
    return 0;
  });
}

export async function runStop(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.stop.options });
  if (values.help) { io.out(formatHelp("stop")); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe stop takes one run name (see rlpipe list)");
  const record = await recordStore().read(positionals[0]!);
  // A job that has ended is not asked to stop: saying "stop requested" of it would be untrue.
  const { status, requested } = await withAdapter(record, io, async (adapter, ref) => {
    const before = await withRetry({ provider: record.provider, op: "status" }, (s) => adapter.status(ref, s), cliRetry(io));
    if (isTerminal(before.phase)) return { status: before, requested: false };
    await withRetry({ provider: record.provider, op: "stop" }, (s) => adapter.stop(ref, s), cliRetry(io));
    return { status: await withRetry({ provider: record.provider, op: "status" }, (s) => adapter.status(ref, s), cliRetry(io)), requested: true };
  });
  await updateStatus(record, status);
  if (values.json) io.out(JSON.stringify({ name: record.name, stopRequested: requested, phase: status.phase, rawPhase: status.rawPhase }));
  else if (requested) io.out(`job ${record.name}: stop requested; now ${status.phase} (${status.rawPhase})`);
  else io.out(`job ${record.name} has already ended: ${status.phase} (${status.rawPhase}); nothing to stop`);
  return 0;
}

export async function runList(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.list.options });
  if (values.help) { io.out(formatHelp("list")); return 0; }
  if (positionals.length > 0) throw usage("rlpipe list takes no arguments");
  const { records, problems } = await recordStore().list();
  for (const p of problems) io.err(`rlpipe list: ${p}`);
  if (values.json) {
    io.out(JSON.stringify(records.map((r) => ({ name: r.name, provider: r.provider, id: r.ref.id, recipe: r.recipe.name, createdAt: r.createdAt, lastStatus: r.lastStatus ?? null })), null, 2));
  } else if (records.length === 0) {
    io.out("no runs deployed from this directory");
  } else {
    // The phase last seen, and when it was seen (not when the job reached it): list asks no provider.
    const table = [["RUN", "PROVIDER", "ID", "CREATED", "LAST PHASE SEEN", "SEEN AT"], ...records.map((r) => [r.name, r.provider, r.ref.id, r.createdAt, r.lastStatus?.phase ?? "-", r.lastStatus?.at ?? "-"])];
    for (const line of columns(table)) io.out(line);
  }
  // A damaged run record is bad local input: every readable one is listed, and the exit code says one was not.
  return problems.length > 0 ? ExitCode.invalidInput : 0;
}

// ------------------------------------------------------------------------------------------------ helpers

/**
 * Without --provider: the recipe's only target, as plan takes it (docker aside when another is declared: it has no
 * deploy API). None or several: the user says where (exit 2); a deploy runs something, so where is never guessed.
 */
function deployTarget(recipe: Recipe): Provider {
  const declared = PROVIDERS.filter((p) => recipe.targets?.[p] !== undefined);
  const deployable = declared.filter((p) => p !== "docker");
  if (deployable.length === 1) return deployable[0]!;
  if (declared.length === 1) return declared[0]!; // docker: prepareDeploy says it has no deploy API
  const message = deployable.length > 1 ? `the recipe has ${deployable.length} targets (${deployable.join(", ")}): say which one to deploy to` : "the recipe declares no targets: say where to deploy it";
  const choices = deployable.length > 1 ? deployable : PROVIDERS.filter((p) => p !== "docker");
  throw new RlpipeError("provider_required", message, { exitCode: ExitCode.invalidInput, hint: `pass --provider ${choices.join("|")}` });
}

/** The budget verdict as JSON: status, cap, the total it was checked against, and the sentence. */
export function budgetDocument(b: BudgetCheck): Record<string, unknown> {
  return { status: b.status, cap: b.cap, currency: b.currency, total: b.total, ratesNeeded: b.ratesNeeded, message: b.message };
}

/** Rows as columns two spaces apart, each as wide as its longest cell (the last one unpadded). */
function columns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? "").length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  "));
}

/** 0 when the job succeeded; 1 when it failed or was stopped (the job's outcome, not rlpipe's). */
function exitCodeOf(s: JobStatus): number {
  return s.phase === "SUCCEEDED" ? ExitCode.ok : ExitCode.failed;
}

function withAdapter<T>(record: RunRecord, io: Io, fn: (adapter: ProviderAdapter, ref: JobRef) => Promise<T>): Promise<T> {
  return withRecordAdapter(record, (provider, recipe) => loadAdapter(provider, recipe, { log: (l) => io.err(l) }), fn);
}

function updateStatus(record: RunRecord, s: JobStatus): Promise<RunRecord> {
  return recordStatus(recordStore(), record, s);
}

function emitLog(io: Io, text: string, json: boolean | undefined): void {
  if (text === "") return;
  const lines = text.endsWith("\n") ? text.slice(0, -1) : text;
  // --json: redacted before the lines are quoted one by one (io.out redacts again, with this shell's values): a
  // private key spans lines, and quoting escapes the quotes of a "name": "value".
  if (json) for (const l of redactText(lines).split("\n")) io.out(JSON.stringify({ log: l }));
  else io.out(lines);
}

function heartbeatLine(name: string, s: JobStatus | undefined, followedSinceMs: number): string {
  const startedMs = s?.startedAt === undefined ? Number.NaN : Date.parse(s.startedAt);
  const since = Number.isNaN(startedMs) ? `${formatElapsed(Date.now() - followedSinceMs)} following` : `${formatElapsed(Date.now() - startedMs)} since it started`;
  return `[rlpipe] ${name}: ${s?.phase ?? "asking"}, ${since}`;
}

/**
 * Poll status (with jitter) and print phase changes and new log text until the job ends; the final phase is
 * printed after the last log lines. A heartbeat shows the wait is alive. Ctrl-C or SIGTERM stops following (exit
 * 130, with what to run next) and leaves the job alone.
 */
async function followToEnd(adapter: ProviderAdapter, ref: JobRef, io: Io, json: boolean): Promise<JobStatus> {
  const interrupt = new AbortController();
  // Ctrl-C or a SIGTERM (a CI step's timeout, a supervisor): either stops following the same way, saying what to
  // run next (exit 130, cancelled); the job itself is left alone.
  const onSigint = () => interrupt.abort(new RlpipeError("interrupted", "interrupted", { exitCode: ExitCode.cancelled }));
  process.once("SIGINT", onSigint);
  process.once("SIGTERM", onSigint);
  const retry = cliRetry(io, interrupt.signal);
  const followed = Date.now();
  let current: JobStatus | undefined;
  const heartbeat = startHeartbeat(io, () => heartbeatLine(ref.name, current, followed), { plainEveryMs: envMs("RLPIPE_HEARTBEAT_MS", 30_000), quiet: json });
  let cursor: string | undefined;
  let last: Phase | undefined;
  const drain = async () => {
    for (;;) {
      const page = await withRetry({ provider: ref.provider, op: "logs" }, (s) => adapter.logs(ref, cursor, s), retry);
      emitLog(io, page.text, json);
      if (page.text === "" || page.cursor === cursor) return;
      cursor = page.cursor;
    }
  };
  try {
    for (;;) {
      const s = await withRetry({ provider: ref.provider, op: "status" }, (sig) => adapter.status(ref, sig), retry);
      current = s;
      const ended = isTerminal(s.phase);
      if (s.phase !== last && !ended) io.err(`[rlpipe] ${ref.name}: ${s.phase} (${s.rawPhase}) after ${formatElapsed(Date.now() - followed)}`);
      last = s.phase;
      await drain();
      if (ended) {
        io.err(`[rlpipe] ${ref.name}: ${s.phase} (${s.rawPhase})${s.exitCode === undefined ? "" : `, exit code ${s.exitCode}`}${s.message === undefined ? "" : `: ${s.message}`}`);
        return s;
      }
      await sleep(POLL_MS * (0.75 + Math.random() * 0.5), interrupt.signal);
    }
  } catch (e) {
    if (interrupt.signal.aborted) {
      throw new RlpipeError("interrupted", `stopped following ${ref.name}${current === undefined ? "" : ` (${current.phase})`}; the job keeps running on ${ref.provider}`, {
        exitCode: ExitCode.cancelled, hint: `rlpipe logs ${ref.name} -f follows it again; rlpipe stop ${ref.name} stops it`,
      });
    }
    if (e instanceof ProviderError) io.err(`rlpipe: stopped following ${ref.name}: the job itself was not touched (rlpipe logs ${ref.name} -f follows it again)`);
    throw e;
  } finally {
    heartbeat.stop();
    process.removeListener("SIGINT", onSigint);
    process.removeListener("SIGTERM", onSigint);
  }
}

async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) throw new RlpipeError("confirmation_needed", "refusing to create a job without confirmation: stdin is not a terminal", { exitCode: 2, hint: "pass --yes (or --dry-run to only show the request)" });
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  const cancel = new AbortController();
  rl.on("SIGINT", () => cancel.abort()); // Ctrl-C at the prompt declines it
  try { return /^y(es)?$/i.test((await rl.question(question, { signal: cancel.signal })).trim()); } catch { return false; } finally { rl.close(); }
}

function describeRequest(p: Plan): string {
  const r = p.request!;
  const L = [`  request    ${r.api}`];
  if (r.bundle !== undefined) L.push(`  bundle     → ${r.bundle.to}${r.bundle.mountedAt === undefined ? "" : ` (seen at ${r.bundle.mountedAt})`}`);
  if (r.unverified.length > 0) {
    L.push(`  unverified (${r.unverified.length}: inferred, not documented; confirm once with a real account)`);
    for (const u of r.unverified) L.push(`    ${u.path} = ${JSON.stringify(u.value)}: ${u.why}${u.override === undefined ? "" : ` (override: ${u.override})`}`);
  }
  return L.join("\n");
}
