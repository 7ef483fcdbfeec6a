// rlpipe deploy | status | logs | stop | list: one job per deploy, found again through its run record.
import { resolve } from "node:path";
import { createInterface } from "node:readline/promises";
import { parseArgs } from "node:util";
import { RlpipeError } from "../../core/errors.js";
import type { Plan } from "../../core/plan.js";
import { describePrices, estimatePrices } from "../../core/prices.js";
import { type Phase, isTerminal } from "../../core/providers/phases.js";
import { refusePlaceholders } from "../../core/recipe/placeholders.js";
import { type Provider, type Recipe, RecipeSchema } from "../../core/recipe/schema.js";
import { formatPlanSummary } from "../../core/summary.js";
import { sleep } from "../../core/util/retry.js";
import { type JobRef, type JobStatus, deploy, withRetry } from "../../adapters/providers/provider.js";
import { type RunRecord, listRunRecords, readRunRecord, runsDir, writeRunRecord } from "../../adapters/providers/run-records.js";
import type { Io } from "../io.js";
import { loadAdapter } from "../providers.js";
import { parseProvider, planDocument, planRecipeFile, usage } from "./plan.js";

export const DEPLOY_USAGE = `usage: rlpipe deploy <recipe.yaml> --provider local|ray|slurm|modelarts|tione [--dry-run] [--yes] [--wait] [--json]

Plans the recipe, shows what will be created (the provider request, where the bundle goes, unverified fields)
and asks before creating anything (--yes to skip; required when stdin is not a terminal). A deploy makes
exactly one job: a repeated deploy of the same plan finds the job it made. --wait follows the job to its end
(exit 0 when it succeeded). The run record goes to .rlpipe/runs/<name>.json.

  rlpipe status [run] [--json]        rlpipe logs <run> [-f] [--json]
  rlpipe stop <run> [--json]          rlpipe list [--json]`;

const POLL_MS = Number(process.env["RLPIPE_POLL_MS"] ?? 2000);

function recordsDir(): string {
  return runsDir(process.cwd());
}

export async function runDeploy(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv], allowPositionals: true, strict: true,
    options: {
      provider: { type: "string", short: "p" },
      "dry-run": { type: "boolean", default: false },
      yes: { type: "boolean", short: "y", default: false },
      wait: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      "verl-profile": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) { io.out(DEPLOY_USAGE); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe deploy takes exactly one recipe file");
  if (values.provider === undefined) throw usage("rlpipe deploy needs --provider (local, ray, slurm, modelarts or tione)");
  const provider = parseProvider(values.provider);
  const { loaded, plan: p } = planRecipeFile(positionals[0]!, { provider, ...(values["verl-profile"] === undefined ? {} : { profile: values["verl-profile"] }) });
  // A template value (rsg-xxxxxxxx, <bucket>) must never reach a provider; --dry-run only shows the warnings.
  if (!values["dry-run"]) refusePlaceholders(p.recipe.file, p.warnings);
  if (p.request === undefined) throw new RlpipeError("no_deploy_target", `provider ${provider} has no deploy API: run rlpipe plan --provider ${provider} and start the bundle by hand`, { exitCode: 2 });

  const prices = estimatePrices(loaded.recipe, provider);
  if (values.json) {
    if (values["dry-run"]) { io.out(JSON.stringify({ plan: planDocument(p), request: p.request, prices }, null, 2)); return 0; }
  } else {
    io.out(formatPlanSummary(p, undefined, describePrices(prices)));
    io.out(describeRequest(p));
  }
  if (values["dry-run"]) { if (!values.json) io.out("dry run: nothing was created"); return 0; }
  if (!values.yes && !(await confirm(`Create job ${p.jobName} on ${provider}? [y/N] `))) {
    io.err("rlpipe deploy: not confirmed; nothing was created");
    return 1;
  }

  const { adapter, close } = await loadAdapter(provider, loaded.recipe, { log: (l) => io.err(l) });
  try {
    const { ref, outcome } = await deploy(adapter, p, { onEvent: (l) => io.err(`rlpipe deploy: ${l}`) });
    const now = new Date().toISOString();
    let existing: RunRecord | undefined;
    try { existing = await readRunRecord(recordsDir(), ref.name); } catch { existing = undefined; }
    const record: RunRecord = {
      version: 1, name: ref.name, provider, ref: refFields(ref),
      recipe: { name: p.recipe.name, file: resolve(p.recipe.file), hash: p.recipe.hash },
      recipeData: loaded.recipe, request: p.request, outcome,
      createdAt: existing?.createdAt ?? now, updatedAt: now,
      // The rates assumed when the job was made; a later deploy that finds it keeps them.
      prices: existing !== undefined && existing.prices.length > 0 ? existing.prices : prices.assumed,
    };
    await writeRunRecord(recordsDir(), record);
    const said = outcome === "created" ? "created" : outcome === "existing" ? "already exists (an earlier deploy made it)" : "created (its reply was lost; found by name)";
    if (values.json && !values.wait) io.out(JSON.stringify({ name: ref.name, provider, id: ref.id, outcome }));
    else if (!values.json) io.out(`job ${ref.name} ${said}: ${provider} id ${ref.id}\n  rlpipe status ${ref.name}   rlpipe logs ${ref.name} -f   rlpipe stop ${ref.name}`);
    if (!values.wait) return 0;
    const final = await follow(adapter, ref, io, { printLogs: true, json: values.json });
    await updateStatus(record, final);
    if (values.json) io.out(JSON.stringify({ name: ref.name, provider, id: ref.id, outcome, phase: final.phase, rawPhase: final.rawPhase, ...(final.exitCode === undefined ? {} : { exitCode: final.exitCode }) }));
    else io.out(`job ${ref.name}: ${final.phase}${final.message === undefined ? "" : ` (${final.message})`}`);
    return final.phase === "SUCCEEDED" ? 0 : 1;
  } finally {
    await close();
  }
}

export async function runStatus(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: { json: { type: "boolean", default: false }, help: { type: "boolean", short: "h", default: false } } });
  if (values.help) { io.out(DEPLOY_USAGE); return 0; }
  const records = positionals.length > 0 ? [await readRunRecord(recordsDir(), positionals[0]!)] : (await listRunRecords(recordsDir())).records;
  const rows: { record: RunRecord; status?: JobStatus; error?: string }[] = [];
  for (const record of records) {
    try {
      const status = await withAdapter(record, (a, ref) => withRetry(() => a.status(ref)));
      await updateStatus(record, status);
      rows.push({ record, status });
    } catch (e) {
      if (positionals.length > 0) throw e;
      rows.push({ record, error: (e as Error).message });
    }
  }
  if (values.json) io.out(JSON.stringify(rows.map((r) => ({ name: r.record.name, provider: r.record.provider, id: r.record.ref.id, ...(r.status === undefined ? { error: r.error } : r.status) })), null, 2));
  else if (rows.length === 0) io.out("no runs deployed from this directory (rlpipe deploy <recipe> --provider …)");
  else for (const r of rows) io.out(`${r.record.name}  ${r.record.provider}  ${r.record.ref.id}  ${r.status === undefined ? `unknown: ${r.error}` : `${r.status.phase} (${r.status.rawPhase})${r.status.message === undefined ? "" : `  ${r.status.message}`}`}`);
  return 0;
}

export async function runLogs(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: { follow: { type: "boolean", short: "f", default: false }, json: { type: "boolean", default: false }, help: { type: "boolean", short: "h", default: false } } });
  if (values.help) { io.out(DEPLOY_USAGE); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe logs takes one run name (see rlpipe list)");
  const record = await readRunRecord(recordsDir(), positionals[0]!);
  return withAdapter(record, async (adapter, ref) => {
    if (values.follow) {
      const final = await follow(adapter, ref, io, { printLogs: true, json: values.json });
      await updateStatus(record, final);
      return 0;
    }
    let cursor: string | undefined;
    for (;;) {
      const page = await withRetry(() => adapter.logs(ref, cursor));
      emitLog(io, page.text, values.json);
      if (page.cursor === cursor || page.text === "") break;
      cursor = page.cursor;
    }
    return 0;
  });
}

export async function runStop(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: { json: { type: "boolean", default: false }, help: { type: "boolean", short: "h", default: false } } });
  if (values.help) { io.out(DEPLOY_USAGE); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe stop takes one run name (see rlpipe list)");
  const record = await readRunRecord(recordsDir(), positionals[0]!);
  const status = await withAdapter(record, async (adapter, ref) => {
    await withRetry(() => adapter.stop(ref));
    return withRetry(() => adapter.status(ref));
  });
  await updateStatus(record, status);
  if (values.json) io.out(JSON.stringify({ name: record.name, phase: status.phase, rawPhase: status.rawPhase }));
  else io.out(`job ${record.name}: stop requested; now ${status.phase} (${status.rawPhase})`);
  return 0;
}

export async function runList(argv: readonly string[], io: Io): Promise<number> {
  const { values } = parseArgs({ args: [...argv], allowPositionals: false, strict: true, options: { json: { type: "boolean", default: false }, help: { type: "boolean", short: "h", default: false } } });
  if (values.help) { io.out(DEPLOY_USAGE); return 0; }
  const { records, problems } = await listRunRecords(recordsDir());
  for (const p of problems) io.err(`rlpipe list: ${p}`);
  if (values.json) {
    io.out(JSON.stringify(records.map((r) => ({ name: r.name, provider: r.provider, id: r.ref.id, recipe: r.recipe.name, createdAt: r.createdAt, lastStatus: r.lastStatus ?? null })), null, 2));
  } else if (records.length === 0) {
    io.out("no runs deployed from this directory");
  } else {
    for (const r of records) io.out(`${r.name}  ${r.provider}  ${r.ref.id}  ${r.createdAt}  ${r.lastStatus === undefined ? "-" : `${r.lastStatus.phase} at ${r.lastStatus.at}`}`);
  }
  return problems.length > 0 ? 1 : 0;
}

// ------------------------------------------------------------------------------------------------ helpers

function refFields(ref: JobRef): RunRecord["ref"] {
  return { id: ref.id, ...(ref.region === undefined ? {} : { region: ref.region }), ...(ref.endpoint === undefined ? {} : { endpoint: ref.endpoint }), ...(ref.extra === undefined ? {} : { extra: ref.extra }) };
}

function refOf(record: RunRecord): JobRef {
  return { provider: record.provider, name: record.name, ...record.ref };
}

async function withAdapter<T>(record: RunRecord, fn: (adapter: Awaited<ReturnType<typeof loadAdapter>>["adapter"], ref: JobRef) => Promise<T>): Promise<T> {
  const recipe = RecipeSchema.parse(record.recipeData) as Recipe;
  const { adapter, close } = await loadAdapter(record.provider as Provider, recipe);
  try { return await fn(adapter, refOf(record)); } finally { await close(); }
}

async function updateStatus(record: RunRecord, s: JobStatus): Promise<void> {
  const now = new Date().toISOString();
  await writeRunRecord(recordsDir(), { ...record, updatedAt: now, lastStatus: { phase: s.phase, rawPhase: s.rawPhase, at: now, ...(s.message === undefined ? {} : { message: s.message }) } });
}

function emitLog(io: Io, text: string, json: boolean | undefined): void {
  if (text === "") return;
  const lines = text.endsWith("\n") ? text.slice(0, -1) : text;
  if (json) for (const l of lines.split("\n")) io.out(JSON.stringify({ log: l }));
  else io.out(lines);
}

/** Poll status (with jitter) and print phase changes, and new log text, until the job ends. */
async function follow(adapter: Awaited<ReturnType<typeof loadAdapter>>["adapter"], ref: JobRef, io: Io, opts: { printLogs: boolean; json?: boolean }): Promise<JobStatus> {
  let cursor: string | undefined;
  let last: Phase | undefined;
  const started = Date.now();
  const drain = async () => {
    if (!opts.printLogs) return;
    for (;;) {
      const page = await withRetry(() => adapter.logs(ref, cursor));
      emitLog(io, page.text, opts.json);
      if (page.text === "" || page.cursor === cursor) return;
      cursor = page.cursor;
    }
  };
  for (;;) {
    const s = await withRetry(() => adapter.status(ref));
    if (s.phase !== last) {
      io.err(`[rlpipe] ${ref.name}: ${s.phase} (${s.rawPhase}) after ${Math.round((Date.now() - started) / 1000)} s`);
      last = s.phase;
    }
    await drain();
    if (isTerminal(s.phase)) return s;
    await sleep(POLL_MS * (0.75 + Math.random() * 0.5));
  }
}

async function confirm(question: string): Promise<boolean> {
  if (!process.stdin.isTTY) throw new RlpipeError("confirmation_needed", "refusing to create a job without confirmation: stdin is not a terminal", { exitCode: 2, hint: "pass --yes (or --dry-run to only show the request)" });
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try { return /^y(es)?$/i.test((await rl.question(question)).trim()); } finally { rl.close(); }
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
