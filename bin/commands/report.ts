// rlpipe report <run>: one self-contained HTML page per run (core/report/run-page.ts), from its run record, its
// provider (status, the last log lines), its store (metrics, sandbox health, checkpoints) and the cost so far
// against the estimate. Each source may fail on its own: the page says what could not be read and why, and the
// command still writes it (exit 0); only a bad argument or an unknown run fails the command.
import { open, mkdir, rename, rm } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { estimateCost } from "../../core/cost/estimate.js";
import { ExitCode, RlpipeError } from "../../core/errors.js";
import { Redactor } from "../../core/redact.js";
import type { Readout, RunPageCost, RunPageData, RunPageLogs, RunPageOutputs, RunPageStatus } from "../../core/report/run-page-data.js";
import { runPageHtml } from "../../core/report/run-page.js";
import { type JobStatus, type RetryPolicy, formatRetryNotice, withRetry } from "../../adapters/providers/provider.js";
import { type RunRecord, checkRunName, dirRunRecords, runsDir } from "../../adapters/providers/run-records.js";
import { PAGE_URL_MAX_TTL_S, PAGE_URL_TTL_S, presignRunPageFor, readRunOutputs } from "../../adapters/storage/run-page-store.js";
import { openStore, retryLines } from "../../adapters/storage/store.js";
import { type AdapterLoader, recordStatus, withRecordAdapter } from "../../functions/deploy.js";
import { costOfRun } from "../../functions/run-cost.js";
import { COMMANDS, formatHelp } from "../help.js";
import { type Io, describeError } from "../io.js";
import { loadAdapter } from "../providers.js";
import { usage } from "./plan.js";

/** Log pages one page read asks for at most (rlpipe logs --follow reads the rest). */
export const MAX_LOG_PAGES = 200;

const DEFAULT_LOG_LINES = 50;
const MAX_LOG_LINES = 10_000;

/** The CLI's one retry layer for provider calls (as status and logs use it): bounded in time, said on stderr. */
function cliRetry(io: Io): RetryPolicy {
  const raw = process.env["RLPIPE_RETRY_BUDGET_MS"]?.trim();
  const budgetMs = raw !== undefined && /^\d{1,9}$/.test(raw) ? Number(raw) : 20_000;
  return { budgetMs, onRetry: (n) => io.err(formatRetryNotice(n)) };
}

export async function runReport(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], allowPositionals: true, strict: true, options: COMMANDS.report.options });
  if (values.help) { io.out(formatHelp("report")); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe report takes one run name (see rlpipe list)");
  const logLines = values["log-lines"] === undefined ? DEFAULT_LOG_LINES : Number(values["log-lines"]);
  if (!Number.isInteger(logLines) || logLines < 0 || logLines > MAX_LOG_LINES) throw usage(`--log-lines must be a whole number from 0 to ${MAX_LOG_LINES}, got ${values["log-lines"]}`);
  const records = dirRunRecords(runsDir(process.cwd()));
  const record = await records.read(checkRunName(positionals[0]!));
  if (values.url) return printPageUrl(record, values, io);
  const data = await gatherRunPage(record, { io, logLines, ...(values.store === undefined ? {} : { store: values.store }) });
  // Keep the phase just read in the record, as rlpipe status does (rlpipe list shows it).
  if (data.status.ok) await recordStatus(records, record, data.status.value as JobStatus).catch((e: unknown) => io.err(`rlpipe report: could not update the run record: ${describeError(e).message}`));
  if (values.json) { io.out(JSON.stringify(data, null, 2)); return 0; }
  const target = resolve(values.out ?? `${record.name}.html`);
  await writeAtomically(target, runPageHtml(data));
  for (const [part, r] of [["status", data.status], ["log", data.logs], ["store", data.outputs], ["cost", data.cost]] as const) {
    if (!r.ok) io.err(`rlpipe report: ${part} not read: ${r.why}`);
  }
  io.out(values.out ?? `${record.name}.html`);
  return 0;
}

/**
 * --url: a presigned GET URL of the page the job's sidecar keeps in the run's store. The URL is a bearer secret
 * until it expires: it goes to stdout because it was asked for, and nowhere else.
 */
async function printPageUrl(record: RunRecord, values: { store?: string | undefined; "expires-s"?: string | undefined }, io: Io): Promise<number> {
  const raw = values["expires-s"];
  const ttl = raw === undefined ? PAGE_URL_TTL_S : Number(raw);
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > PAGE_URL_MAX_TTL_S) throw usage(`--expires-s must be a whole number of seconds from 1 to ${PAGE_URL_MAX_TTL_S} (7 days), got ${raw}`);
  const uri = values.store ?? nonEmpty(process.env["RLPIPE_STORE"]) ?? record.store;
  if (uri === undefined) throw usage("the run has no store (its recipe sets no checkpoints.storage): give one with --store");
  const store = await openStore(uri.includes("://") ? uri : resolve(uri), process.env, { onRetry: retryLines((l) => io.err(l)) });
  try {
    // Capped by the signing credentials' expiry: a URL signed with temporary keys dies with them (said on stderr).
    const page = await presignRunPageFor(store, record.name, ttl, { env: process.env });
    if (page.notice !== undefined) io.err(`rlpipe report: note: ${page.notice}`);
    // Asked for: a redacted signature would be a dead link (an Io without a bearer channel gets it redacted).
    if (io.bearer !== undefined) io.bearer(page.url);
    else io.out(page.url);
  } finally {
    await store.close();
  }
  return 0;
}

export interface GatherOptions {
  readonly io: Io;
  readonly logLines: number;
  /** The store to read instead of the run record's (--store, else $RLPIPE_STORE). */
  readonly store?: string;
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly now?: () => Date;
  /** The provider adapters (default: the CLI's, with its credentials). */
  readonly load?: AdapterLoader;
}

/** Everything the page shows, each source read on its own (a failure is kept as its reason, redacted). */
export async function gatherRunPage(record: RunRecord, opts: GatherOptions): Promise<RunPageData> {
  const env = opts.env ?? process.env;
  const redactor = new Redactor(env);
  const redact = (s: string) => redactor.redact(s);
  const why = (e: unknown) => redact(describeError(e).message);
  const load: AdapterLoader = opts.load ?? ((provider, recipe) => loadAdapter(provider, recipe, { log: (l) => opts.io.err(l) }));
  const policy = cliRetry(opts.io);
  const generatedAt = (opts.now?.() ?? new Date()).toISOString();

  const statusRead = async (): Promise<Readout<RunPageStatus>> => {
    try {
      const s = await withRecordAdapter(record, load, (a, ref) => withRetry({ provider: record.provider, op: "status" }, (sig) => a.status(ref, sig), policy));
      return { ok: true, value: { ...s, ...(s.message === undefined ? {} : { message: redact(s.message) }) } };
    } catch (e) {
      return { ok: false, why: why(e) };
    }
  };
  const logsRead = async (): Promise<Readout<RunPageLogs>> => {
    try {
      return { ok: true, value: await withRecordAdapter(record, load, async (adapter, ref) => {
        const tail = new LineTail(opts.logLines);
        let cursor: string | undefined;
        // A live job's log can grow as fast as it is read: the page shows the tail as of a bounded number of pages.
        for (let pages = 0; pages < MAX_LOG_PAGES; pages++) {
          const page = await withRetry({ provider: record.provider, op: "logs" }, (s) => adapter.logs(ref, cursor, s), policy);
          tail.add(page.text);
          if (page.text === "" || page.cursor === cursor) break;
          cursor = page.cursor;
        }
        const t = tail.done();
        // Redacted as one text, not line by line: a private key's base64 lines sit between its BEGIN and END lines.
        return { lines: t.lines.length === 0 ? [] : redact(t.lines.join("\n")).split("\n"), totalLines: t.total };
      }) };
    } catch (e) {
      return { ok: false, why: why(e) };
    }
  };
  const storeUri = opts.store ?? nonEmpty(env["RLPIPE_STORE"]) ?? record.store;
  const outputsRead = async (): Promise<Readout<RunPageOutputs>> => {
    if (storeUri === undefined) return { ok: false, why: "the run has no store (its recipe sets no checkpoints.storage) and none was given (--store or RLPIPE_STORE)" };
    try {
      const store = await openStore(storeUri.includes("://") ? storeUri : resolve(storeUri), env, { onRetry: retryLines((l) => opts.io.err(l)) });
      try {
        const o = await readRunOutputs(store, record.name);
        return { ok: true, value: { ...o, store: redact(o.store) } };
      } finally {
        await store.close();
      }
    } catch (e) {
      return { ok: false, why: why(e) };
    }
  };
  const costRead = async (): Promise<Readout<RunPageCost>> => {
    try {
      const c = await costOfRun({
        record, load, env, statusPolicy: policy, billingFailure: "unmeasured",
        ...(opts.store === undefined ? {} : { usageStore: opts.store }),
        estimate: (recipe, provider, user, now) => estimateCost(recipe, { provider, now, overrides: { user } }),
      });
      return { ok: true, value: { report: c.report, estimateFrom: c.estimateFrom } };
    } catch (e) {
      return { ok: false, why: why(e) };
    }
  };
  // Every source at once: the slowest one (a store or provider being retried) bounds the command.
  const [status, logs, outputs, cost] = await Promise.all([statusRead(), logsRead(), outputsRead(), costRead()]);
  return {
    schema: "rlpipe.run-page", version: 1, generatedAt,
    run: record.name, provider: record.provider, jobId: record.ref.id,
    ...(record.ref.region === undefined ? {} : { region: record.ref.region }),
    recipe: record.recipe, submittedAt: record.createdAt,
    ...(record.lastStatus === undefined ? {} : { lastSeen: { ...record.lastStatus } }),
    status, logs, outputs, cost,
  };
}

const nonEmpty = (v: string | undefined) => (v === undefined || v.trim() === "" ? undefined : v);

/** The last `keep` lines of a text read in pages, and how many lines it had (a line may span two pages). */
class LineTail {
  private readonly lines: string[] = [];
  private partial = "";
  private total = 0;
  constructor(private readonly keep: number) {}

  add(text: string): void {
    const parts = (this.partial + text).split("\n");
    this.partial = parts.pop()!;
    for (const l of parts) this.push(l);
  }

  done(): { lines: string[]; total: number } {
    if (this.partial !== "") { this.push(this.partial); this.partial = ""; }
    return { lines: [...this.lines], total: this.total };
  }

  private push(line: string): void {
    this.total++;
    if (this.keep === 0) return;
    this.lines.push(line);
    if (this.lines.length > this.keep) this.lines.shift();
  }
}

/** The page whole or not at all: a temporary file beside it, synced, renamed over it. */
async function writeAtomically(file: string, content: string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  try {
    await mkdir(dirname(file), { recursive: true });
    const fh = await open(tmp, "w", 0o644);
    try {
      await fh.writeFile(content);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, file);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new RlpipeError("report_write_failed", `cannot write the page to ${file}: ${(e as NodeJS.ErrnoException).code ?? String(e)}`, {
      exitCode: ExitCode.invalidInput, hint: "choose another --out (a file in a directory you can write)",
    });
  }
}
