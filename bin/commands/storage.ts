// rlpipe sync | checkpoints | restore | metrics: a run's durable outputs in object storage.
import { chmodSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { RUN_NAME } from "../../core/checkpoints.js";
import { RlpipeError } from "../../core/errors.js";
import { type RunSeries, latestValues, mergeMetrics, metricsPanels, plotFormat, renderPlot, toSeries } from "../../core/metrics.js";
import { sleep } from "../../core/util/retry.js";
import { CheckpointSync, type TransferEvent, stageRuns, unknownRun } from "../../adapters/storage/checkpoint-sync.js";
import { MetricsSync, readMetricChunks } from "../../adapters/storage/metrics-sync.js";
import { putRunPage, readRunOutputs, runPageKey } from "../../adapters/storage/run-page-store.js";
import { jobPageData } from "../../core/report/job-page.js";
import { runPageHtml } from "../../core/report/run-page.js";
import { listRunRecords, runsDir } from "../../adapters/providers/run-records.js";
import { type ObjectStore, openStore, retryLines } from "../../adapters/storage/store.js";
import { fsError } from "../../adapters/storage/object-store.js";
import { runToken } from "../../functions/runs.js";
import type { Io } from "../io.js";
import { usage } from "./plan.js";
import { StatusLine, TransferMeter } from "./transfer-meter.js";

export const STORAGE_USAGE = `usage:
  rlpipe sync <run> --watch DIR [--metrics FILE ...] [--store URI] [--interval-s 30] [--once] [--keep-last K] [--keep-every M] [--recipe-hash H]
             [--page JOB [--page-interval-s 60] [--page-recipe NAME] [--page-provider P]]
  rlpipe checkpoints <run> [--store URI] [--json]
  rlpipe restore <run> DIR [--step N] [--store URI]
  rlpipe metrics <run> [<run> ...] [--store URI] [--plot FILE.svg|FILE.png] [--smooth 0.6] [--series a,b,...] [--json]

--store defaults to $RLPIPE_STORE: s3://bucket/prefix, obs://…, cos://…, file:///dir or /dir. Credentials come from
the environment (AWS_*, HUAWEICLOUD_SDK_AK/SK or OBS_*, TENCENTCLOUD_SECRET_ID/KEY or COS_*), never from flags;
endpoints from S3_ENDPOINT / AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL, OBS_ENDPOINT, COS_ENDPOINT (https:// when no
scheme is given). Failed requests are retried for up to RLPIPE_STORE_RETRY_S seconds (default 60).
sync and restore show bytes, rate and ETA on stderr (a line every RLPIPE_PROGRESS_S seconds, default 10, when stderr
is not a terminal; none with --json). restore [--force] [--json] refuses a directory that is not empty unless
--force: then it replaces global_step_N and latest_checkpointed_iteration.txt there.`;

const common = {
  store: { type: "string" },
  json: { type: "boolean", default: false },
  help: { type: "boolean", short: "h", default: false },
} as const;

function runName(v: string | undefined): string {
  if (v === undefined) throw usage("a run name is required");
  if (!RUN_NAME.test(v)) throw usage(`invalid run name ${JSON.stringify(v)} (lower-case letters, digits, '.', '_', '-')`);
  return v;
}

/**
 * The store, saying on stderr (through `line`) when it retries a request: --store, else $RLPIPE_STORE, else — for
 * runs deployed from this directory — the store their run record names (a deployed job's stage S is the run
 * `<job>.S` there).
 */
async function store(flag: string | undefined, line: (text: string) => void, runs: readonly string[] = []): Promise<ObjectStore> {
  const given = flag ?? process.env["RLPIPE_STORE"];
  const uri = given === undefined || given === "" ? await recordedStore(runs, line) : given;
  return openStore(uri.includes("://") ? uri : resolve(uri), process.env, { onRetry: retryLines(line) });
}

async function recordedStore(runs: readonly string[], line: (text: string) => void): Promise<string> {
  const { records } = await listRunRecords(runsDir(process.cwd()));
  const found = runs.map((run) => records.find((r) => r.store !== undefined && (run === r.name || run.startsWith(`${r.name}.`))));
  const stores = [...new Set(found.map((r) => r?.store))];
  if (runs.length > 0 && stores.length === 1 && stores[0] !== undefined) {
    line(`rlpipe: store ${stores[0]} (from the run record of ${found[0]!.name}; --store chooses another)`);
    return stores[0];
  }
  const deployed = records.filter((r) => r.store !== undefined).map((r) => r.name).sort();
  throw new RlpipeError("store_missing", stores.length > 1 ? `the runs ${runs.join(", ")} are kept in different stores: name one with --store` : "no store given", {
    exitCode: 2,
    hint: `pass --store s3://bucket/prefix (or set RLPIPE_STORE)${deployed.length === 0 ? "" : `; runs deployed from here find their store themselves: ${deployed.slice(0, 3).map((n) => `${n}.<stage>`).join(", ")}`}`,
  });
}

/**
 * A run the store holds nothing for is an error (exit 2: `no run named X in <store>`), not an empty listing; its
 * hint names the runs the store keeps of that job (`<job>.rl` for a mistyped `<job>.rll`, or a job's stages).
 */
export async function requireRun(s: ObjectStore, run: string): Promise<void> {
  if (await new CheckpointSync({ run, store: s }).runExists()) return;
  const dot = run.lastIndexOf(".");
  const known = await stageRuns(s, run);
  throw unknownRun(run, s.url, known.length > 0 || dot < 0 ? known : await stageRuns(s, run.slice(0, dot)));
}

/**
 * stderr for a transfer command: log lines, and — unless --json — a progress line per step (redrawn on a terminal,
 * periodic otherwise). Raw terminal writes are redacted like everything else printed.
 */
function transferOutput(io: Io, json: boolean): { line: (text: string) => void; onTransfer?: (e: TransferEvent) => void } {
  const plainSeconds = Number(process.env["RLPIPE_PROGRESS_S"] ?? "10");
  const status = new StatusLine({ io, plainIntervalMs: Number.isFinite(plainSeconds) && plainSeconds >= 0 ? plainSeconds * 1000 : 10_000 });
  if (json || (io.status === undefined && plainSeconds === 0)) return { line: (t) => io.err(t) };
  const meters = new Map<number, TransferMeter>();
  return {
    line: (t) => status.line(t),
    onTransfer: (e) => {
      if (e.kind === "start") meters.set(e.step, new TransferMeter(`${e.direction} step ${e.step}`, e.totalBytes, status));
      else if (e.kind === "bytes") meters.get(e.step)?.add(e.bytes);
      else { meters.get(e.step)?.finish(); meters.delete(e.step); }
    },
  };
}

function posInt(name: string, v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw usage(`--${name} must be a non-negative integer, got ${v}`);
  return n;
}

export async function runSync(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv], allowPositionals: true, strict: true,
    options: { ...common, watch: { type: "string" }, metrics: { type: "string", multiple: true }, "interval-s": { type: "string", default: "30" }, once: { type: "boolean", default: false },
      "keep-last": { type: "string" }, "keep-every": { type: "string" }, "recipe-hash": { type: "string" },
      page: { type: "string" }, "page-interval-s": { type: "string", default: "60" }, "page-recipe": { type: "string" }, "page-provider": { type: "string" } },
  });
  if (values.help) { io.out(STORAGE_USAGE); return 0; }
  const run = runName(positionals[0]);
  if (values.watch === undefined) throw usage("rlpipe sync needs --watch DIR (the checkpoint directory verl writes)");
  const interval = posInt("interval-s", values["interval-s"]) ?? 30;
  const keepLast = posInt("keep-last", values["keep-last"]);
  const keepEvery = posInt("keep-every", values["keep-every"]);
  const pageJob = values.page === undefined ? undefined : runName(values.page);
  const pageIntervalS = posInt("page-interval-s", values["page-interval-s"]) ?? 60;
  const watched = resolve(values.watch);
  // A mistyped --watch must not pass for "nothing to upload": --once needs the directory (checked before the store
  // is opened); a watch beside a job waits for verl's first save to make it, and says so once.
  let waiting = watchedDirMissing(watched);
  if (waiting && values.once) {
    throw new RlpipeError("watch_dir_missing", `--watch ${values.watch}: ${watched} does not exist`, {
      exitCode: 2, hint: "name verl's checkpoint directory (trainer.default_local_dir, where latest_checkpointed_iteration.txt is written)",
    });
  }
  const out = transferOutput(io, values.json);
  if (waiting) out.line(`[rlpipe sync] ${watched} does not exist yet; waiting for verl's first checkpoint there`);
  const s = await store(values.store, out.line);
  const abort = new AbortController();
  const stop = () => abort.abort(new Error("stopping"));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  const ckpt = new CheckpointSync({
    run, store: s, log: (l) => out.line(`[rlpipe sync] ${l}`),
    ...(out.onTransfer === undefined ? {} : { onTransfer: out.onTransfer }),
    ...(values["recipe-hash"] === undefined ? {} : { recipeHash: values["recipe-hash"] }),
    ...(keepLast === undefined && keepEvery === undefined ? {} : { retention: { ...(keepLast === undefined ? {} : { keepLast }), ...(keepEvery === undefined ? {} : { keepEvery }) } }),
  });
  const metrics = new MetricsSync(s, run);
  const page = pageJob === undefined ? undefined : new PageWriter({
    store: s, job: pageJob, intervalMs: pageIntervalS * 1000, recipe: { name: values["page-recipe"] ?? "unknown", hash: values["recipe-hash"] ?? "unknown" },
    provider: values["page-provider"] ?? "unknown", log: (l) => out.line(`[rlpipe sync] ${l}`),
  });
  const pass = async (final = false) => {
    if (waiting && !watchedDirMissing(watched)) { waiting = false; out.line(`[rlpipe sync] ${watched} exists now`); }
    const r = await ckpt.syncDir(watched);
    let m = 0;
    for (const file of values.metrics ?? []) m += await metrics.syncFile(resolve(file));
    if (values.json) io.out(JSON.stringify({ ...r, metricsBytes: m }));
    await page?.maybeWrite(final);
    return r;
  };
  try {
    for (;;) {
      try {
        await pass(values.once);
      } catch (e) {
        // Watching beside a training job, a store that is down for longer than the retries is no reason to stop
        // syncing for the rest of the run: say so and try again next pass. --once and the last pass fail.
        if (values.once || abort.signal.aborted || !(e instanceof RlpipeError) || e.exitCode !== 3) throw e;
        out.line(`[rlpipe sync] pass failed, next one in ${interval} s: ${e.message}`);
      }
      if (values.once) break;
      if (abort.signal.aborted) { await page?.maybeWrite(true); break; } // stopped during a pass: the page's last rewrite
      // sleep() removes its abort listener when the interval ends: a long watch adds none per pass.
      await sleep(interval * 1000, abort.signal).catch(() => undefined);
      if (abort.signal.aborted) { await pass(true); break; } // a last pass on shutdown
    }
  } finally {
    process.removeListener("SIGTERM", stop);
    process.removeListener("SIGINT", stop);
    await s.close();
  }
  return 0;
}

/**
 * The run's page in its store, rewritten by the sidecar from what it has (the store's metrics and checkpoints of the
 * job and its stages, the run name, the recipe facts launch.sh passes): at most once per interval, and on the last
 * pass. A page that cannot be written is said and tried again next time: it never stops the checkpoint sync.
 */
class PageWriter {
  private lastMs = Number.NEGATIVE_INFINITY;
  constructor(private readonly o: { store: ObjectStore; job: string; intervalMs: number; recipe: { name: string; hash: string }; provider: string; log: (l: string) => void }) {}

  async maybeWrite(final: boolean): Promise<void> {
    const now = Date.now();
    if (!final && now - this.lastMs < this.o.intervalMs) return;
    this.lastMs = now;
    try {
      const outputs = await readRunOutputs(this.o.store, this.o.job);
      const html = runPageHtml(jobPageData({ run: this.o.job, provider: this.o.provider, recipe: this.o.recipe, outputs: { ok: true, value: outputs }, generatedAt: new Date(now).toISOString() }));
      await putRunPage(this.o.store, this.o.job, html);
    } catch (e) {
      this.o.log(`the run's page (${runPageKey(this.o.job)}) was not written: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}

/** Whether the directory `sync --watch` names is missing (a file there is an error: exit 2). */
function watchedDirMissing(dir: string): boolean {
  let st;
  try { st = statSync(dir); } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return true;
    throw fsError(e, dir);
  }
  if (!st.isDirectory()) throw new RlpipeError("watch_dir_not_directory", `--watch ${dir}: a file, not a directory`, { exitCode: 2, hint: "name verl's checkpoint directory (trainer.default_local_dir)" });
  return false;
}

export async function runCheckpoints(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: common });
  if (values.help) { io.out(STORAGE_USAGE); return 0; }
  const run = runName(positionals[0]);
  const s = await store(values.store, (l) => io.err(l), [run]);
  try {
    const sync = new CheckpointSync({ run, store: s });
    const manifests = await Promise.all((await sync.committedSteps()).map((step) => sync.manifest(step)));
    if (manifests.length === 0) await requireRun(s, run);
    if (values.json) { io.out(JSON.stringify(manifests.map((m) => ({ step: m.step, files: m.files.length, bytes: m.totalBytes, committedAt: m.committedAt, recipeHash: m.recipeHash ?? null })), null, 2)); return 0; }
    if (manifests.length === 0) {
      const stages = await stageRuns(s, run);
      io.out(`run ${run}: no committed checkpoints in ${s.url}${stages.length === 0 ? "" : ` (its stages are runs of their own: ${stages.join(", ")})`}`);
      return 0;
    }
    io.out(`run ${run} in ${s.url}`);
    io.out(`${"step".padStart(8)}  ${"files".padStart(6)}  ${"size".padStart(10)}  committed`);
    for (const m of manifests) io.out(`${String(m.step).padStart(8)}  ${String(m.files.length).padStart(6)}  ${humanBytes(m.totalBytes).padStart(10)}  ${m.committedAt}`);
    return 0;
  } finally {
    await s.close();
  }
}

export async function runRestore(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: { ...common, step: { type: "string" }, force: { type: "boolean", default: false } } });
  if (values.help) { io.out(STORAGE_USAGE); return 0; }
  const run = runName(positionals[0]);
  if (positionals[1] === undefined) throw usage("rlpipe restore needs the directory to restore into");
  const step = posInt("step", values.step);
  const dir = resolve(positionals[1]);
  const out = transferOutput(io, values.json);
  const s = await store(values.store, out.line, [run]);
  // Ctrl-C or SIGTERM: stop the downloads, remove what they wrote, exit 130 with DIR as it was.
  const abort = new AbortController();
  const stop = () => abort.abort(new RlpipeError("interrupted", `restore interrupted; ${dir} is as it was`, { exitCode: 130 }));
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    const r = await new CheckpointSync({ run, store: s, signal: abort.signal, ...(out.onTransfer === undefined ? {} : { onTransfer: out.onTransfer }) }).restore(dir, step, { force: values.force });
    const m = r.manifest;
    if (values.json) {
      io.out(JSON.stringify({ run, step: m.step, files: m.files.length, bytes: m.totalBytes, dir, previousTracker: r.previousTracker ?? null, replacedStep: r.replacedStep, newerSteps: r.newerSteps }, null, 2));
      return 0;
    }
    if (r.replacedStep) out.line(`rlpipe: replaced the global_step_${m.step} that was in ${dir} (--force)`);
    if (r.previousTracker !== undefined && r.previousTracker !== m.step) out.line(`rlpipe: latest_checkpointed_iteration.txt: ${r.previousTracker} → ${m.step} (--force)`);
    if (r.newerSteps.length > 0) out.line(`rlpipe: warning: ${dir} still holds newer steps (${r.newerSteps.join(", ")}); verl resumes from step ${m.step}, the one the tracker names`);
    io.out(`restored ${run} step ${m.step}: ${m.files.length} files, ${humanBytes(m.totalBytes)}, every SHA-256 verified → ${dir}/global_step_${m.step}`);
    return 0;
  } catch (e) {
    throw abort.signal.aborted ? abort.signal.reason : e;
  } finally {
    process.removeListener("SIGINT", stop);
    process.removeListener("SIGTERM", stop);
    await s.close();
  }
}

export async function runMetrics(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...argv], allowPositionals: true, strict: true,
    options: { ...common, plot: { type: "string" }, series: { type: "string" }, smooth: { type: "string" } },
  });
  if (values.help) { io.out(STORAGE_USAGE); return 0; }
  if (positionals.length === 0) throw usage("a run name is required");
  const runs = positionals.map(runName);
  const twice = runs.find((r, i) => runs.indexOf(r) !== i);
  if (twice !== undefined) throw usage(`run ${twice} is named twice`);
  // Everything about the plot is checked before the store is opened: a bad flag never costs a download.
  const format = values.plot === undefined ? undefined : plotFormat(values.plot);
  if (values.plot !== undefined && format === undefined) {
    throw new RlpipeError("plot_format", `--plot ${values.plot}: rlpipe writes .svg and .png plots`, { exitCode: 2, hint: "end the file name in .svg (vector, opens in a browser) or .png (an image)" });
  }
  const smoothing = smoothWeight(values.smooth);
  if ((smoothing !== undefined || values.series !== undefined) && values.plot === undefined) throw usage(`--${smoothing !== undefined ? "smooth" : "series"} applies to a plot; add --plot FILE.svg or FILE.png`);
  const s = await store(values.store, (l) => io.err(l), runs);
  try {
    const loaded: RunSeries[] = [];
    const notes = new Map<string, string>();
    const add = (r: RunSeries) => { if (!loaded.some((l) => l.run === r.run)) loaded.push(r); };
    for (const run of runs) {
      const series = toSeries(mergeMetrics(await readMetricChunks(s, run)));
      if (series.size > 0) { add({ run, series }); continue; }
      // The name `rlpipe list` shows is a job; the store keeps each of its stages as the run <job>.<stage>.
      const stages = await stageRuns(s, run);
      const withMetrics: RunSeries[] = [];
      for (const st of stages) {
        const ss = toSeries(mergeMetrics(await readMetricChunks(s, st)));
        if (ss.size > 0) withMetrics.push({ run: st, series: ss });
      }
      if (withMetrics.length > 0) {
        io.err(`rlpipe: ${run} is a deployed job; its metrics are in its stage run${withMetrics.length === 1 ? "" : "s"} ${withMetrics.map((r) => r.run).join(", ")}`);
        withMetrics.forEach(add);
        continue;
      }
      if (stages.length > 0) notes.set(run, ` (nor in its stage runs ${stages.join(", ")})`);
      else await requireRun(s, run);
      add({ run, series });
    }
    const reports = loaded.map(({ run, series }) => ({ run, steps: Math.max(0, ...[...series.values()].map((p) => p.length)), latest: latestValues(series) }));
    if (values.json) io.out(JSON.stringify(reports.length === 1 ? reports[0] : reports, null, 2));
    else {
      for (const [i, r] of reports.entries()) {
        if (i > 0) io.out("");
        if (r.latest.length === 0 && loaded[i]!.series.size === 0) { io.out(`run ${r.run}: no metrics in ${s.url}${notes.get(r.run) ?? ""}`); continue; }
        io.out(`run ${r.run}: latest values`);
        for (const l of r.latest) io.out(`  ${l.label.padEnd(34)} ${Number(l.value.toPrecision(5)).toString().padStart(12)}  (step ${l.step}, ${l.metric})`);
      }
    }
    if (values.plot !== undefined && format !== undefined) {
      const names = values.series?.split(",").map((x) => x.trim()).filter((x) => x !== "");
      if (names !== undefined) {
        const unknown = names.filter((n) => !loaded.some((r) => r.series.has(n)));
        const have = [...new Set(loaded.flatMap((r) => [...r.series.keys()]))].sort();
        if (unknown.length > 0) throw usage(`no such series: ${unknown.join(", ")}${have.length > 0 ? ` (have: ${have.slice(0, 12).join(", ")}${have.length > 12 ? ", …" : ""})` : ""}`);
      }
      const empty = loaded.filter((r) => r.series.size === 0).map((r) => r.run);
      if (empty.length === loaded.length) throw new RlpipeError("no_metrics", `nothing to plot: ${empty.join(", ")} ${empty.length === 1 ? "has" : "have"} no metrics in ${s.url}`, { exitCode: 2, hint: "metrics arrive while the job runs (rlpipe sync --metrics FILE uploads verl's file logger)" });
      if (names === undefined && metricsPanels(loaded).length === 0) {
        const have = [...new Set(loaded.flatMap((r) => [...r.series.keys()]))].sort();
        throw new RlpipeError("no_main_series", `nothing to plot by default: ${runs.join(", ")} ${runs.length === 1 ? "has" : "have"} none of the main series (reward, response length, pass rate, tool calls, step time)`, { exitCode: 2, hint: `name the series to plot: --series ${have.slice(0, 3).join(",")}` });
      }
      const shown = loaded.map((r) => r.run); // a job's name stands for its stage runs
      const title = shown.length === 1 ? shown[0]! : shown.join(" vs ");
      const bytes = renderPlot(loaded, format, { title, ...(names === undefined ? {} : { names }), ...(smoothing === undefined ? {} : { smoothing }) });
      writeAtomically(values.plot, bytes);
      const panels = names?.length ?? metricsPanels(loaded).length;
      io.err(`wrote ${values.plot} (${format.toUpperCase()}, ${panels} panel${panels === 1 ? "" : "s"}${shown.length > 1 ? `, ${shown.length} runs` : ""}${smoothing === undefined ? "" : `, smoothing ${smoothing}`})`);
    }
    return 0;
  } finally {
    await s.close();
  }
}

/** --smooth W: the EMA weight, in [0, 1) like TensorBoard's slider. */
function smoothWeight(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const w = Number(v);
  if (v.trim() === "" || !Number.isFinite(w) || w < 0 || w >= 1) throw usage(`--smooth must be a number from 0 to below 1 (e.g. 0.6), got ${v}`);
  return w;
}

/** Write a file so a reader sees the old file or the whole new one, never a partial plot. */
function writeAtomically(path: string, bytes: Uint8Array): void {
  const target = resolve(path);
  const tmp = join(dirname(target), `.${basename(target)}.rlpipe-tmp-${process.pid}`);
  try {
    writeFileSync(tmp, bytes);
    renameSync(tmp, target);
  } catch (e) {
    rmSync(tmp, { force: true });
    const code = (e as NodeJS.ErrnoException).code;
    throw new RlpipeError("plot_write_failed", `cannot write ${path}: ${code ?? (e instanceof Error ? e.message : String(e))}`, { exitCode: 2, cause: e, hint: "check that the directory exists and is writable" });
  }
}

function humanBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

/**
 * rlpipe run-token <run> --secret-env NAME --out FILE: writes the token a job presents to the runs function to a
 * file only its owner can read (it is a credential, so it is never printed).
 */
export function runRunToken(argv: readonly string[], io: Io): number {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: { "secret-env": { type: "string" }, out: { type: "string" }, help: { type: "boolean", short: "h", default: false } } });
  if (values.help) { io.out("usage: rlpipe run-token <run> --secret-env NAME --out FILE"); return 0; }
  const run = runName(positionals[0]);
  const env = values["secret-env"];
  if (env === undefined) throw usage("rlpipe run-token needs --secret-env NAME");
  const secret = process.env[env];
  if (secret === undefined || secret.length < 16) throw new RlpipeError("secret_missing", `environment variable ${env} must hold a secret of at least 16 characters`, { exitCode: 2 });
  if (values.out === undefined) throw usage("rlpipe run-token needs --out FILE (the token is a credential and is not printed)");
  // `-` is not stdout here: the token is a credential and rlpipe prints none (nor a file named "-").
  if (values.out === "-" || values.out.trim() === "") throw usage(`rlpipe run-token --out ${JSON.stringify(values.out)}: give a file to write the token to (mode 600); it is a credential and is never printed`);
  writeFileSync(values.out, `${runToken(secret, run)}\n`, { mode: 0o600 });
  chmodSync(values.out, 0o600);
  io.out(`wrote the run token for ${run} to ${values.out} (mode 600); give it to the job as RLPIPE_RUN_TOKEN`);
  return 0;
}
