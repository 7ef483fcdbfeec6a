// The `rlpipe dashboard` web server (node:http): GET / is the table of every run, GET /runs/<name> a run's page.
// A run's data is gathered once per refresh interval whoever asks (a page's reload, another tab): concurrent
// requests share one gathering, and a provider that fails makes its row say "status unavailable", never a failed
// page. Every byte served passes the redactor; pages allow no script and fetch nothing (Content-Security-Policy).
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { isIP } from "node:net";
import { type DashboardRow, dashboardRow, sortRows } from "../core/report/dashboard-row.js";
import { dashboardHtml, messagePage, servedRunPage } from "../core/report/dashboard-page.js";
import type { RunPageData } from "../core/report/run-page-data.js";
import { isTerminal } from "../core/providers/phases.js";
import { runPageHtml } from "../core/report/run-page.js";
import { Redactor } from "../core/redact.js";
import type { RunRecord } from "../adapters/providers/run-records.js";

/** Where runs come from: the run records of this directory, or those a console function keeps in a state store. */
export interface RunSource {
  readonly label: string;
  list(): Promise<{ readonly records: readonly RunRecord[]; readonly problems: readonly string[] }>;
}

export interface DashboardOptions {
  readonly sources: readonly RunSource[];
  /** Everything a run's page shows (bin/commands/report.ts gatherRunPage). */
  readonly gather: (record: RunRecord) => Promise<RunPageData>;
  /** How long a run's data (and the list of runs) is kept before it is read again; also the pages' reload interval. */
  readonly refreshSeconds: number;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Accept any Host header (the server was bound beyond loopback on purpose). */
  readonly anyHost?: boolean;
  readonly now?: () => Date;
  readonly log?: (line: string) => void;
}

/** Loopback: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || h === "0:0:0:0:0:0:0:1" || /^::ffff:127\./.test(h);
  return false;
}

const SECURITY_HEADERS = {
  // No script runs and nothing is fetched, whatever a page holds; no other site may frame it.
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
} as const;

interface Cached<T> { readonly promise: Promise<T>; done?: number; value?: T }

/**
 * Values by key, each read again once it is older than ttlMs; one read in flight per key. While a key is read
 * again, the value read before is answered (a provider being retried does not hold up every page).
 */
class TtlCache<T> {
  private readonly entries = new Map<string, Cached<T>>();
  constructor(private readonly ttlMs: number, private readonly clock: () => number) {}

  get(key: string, read: () => Promise<T>): Promise<T> {
    const e = this.entries.get(key);
    if (e !== undefined && e.done === undefined) return e.value !== undefined ? Promise.resolve(e.value) : e.promise;
    if (e !== undefined && this.clock() - e.done! < this.ttlMs) return e.promise;
    const entry: Cached<T> = { promise: read(), ...(e?.value === undefined ? {} : { value: e.value }) };
    void entry.promise.then((v) => { entry.value = v; entry.done = this.clock(); }, () => { entry.done = this.clock(); });
    this.entries.set(key, entry);
    return entry.value !== undefined ? Promise.resolve(entry.value) : entry.promise;
  }

  /** Forget the keys not in `keep` (runs no longer listed): the cache holds at most the runs listed. */
  retain(keep: ReadonlySet<string>): void {
    for (const k of this.entries.keys()) if (!keep.has(k)) this.entries.delete(k);
  }
}

type Gathered = { readonly ok: true; readonly data: RunPageData } | { readonly ok: false; readonly record: RunRecord; readonly why: string };
interface Listing { readonly records: readonly { readonly key: string; readonly record: RunRecord }[]; readonly problems: readonly string[] }

export class DashboardServer {
  private readonly server: Server;
  private readonly redactor: Redactor;
  private readonly runs: TtlCache<Gathered>;
  private readonly lists: TtlCache<Listing>;
  private readonly now: () => Date;

  constructor(private readonly opts: DashboardOptions) {
    this.redactor = new Redactor(opts.env);
    this.now = opts.now ?? (() => new Date());
    const clock = () => Date.now();
    this.runs = new TtlCache(opts.refreshSeconds * 1000, clock);
    this.lists = new TtlCache(opts.refreshSeconds * 1000, clock);
    this.server = createServer((req, res) => { void this.handle(req, res); });
  }

  /** Listens; resolves with the URL to open. */
  async listen(host: string, port: number): Promise<string> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => { this.server.off("error", reject); resolve(); });
    });
    const a = this.server.address() as AddressInfo;
    return `http://${a.family === "IPv6" ? `[${a.address}]` : a.address}:${a.port}/`;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      if (req.method !== "GET" && req.method !== "HEAD") return this.send(res, 405, messagePage("method not allowed", "the dashboard only answers GET"), { allow: "GET, HEAD" });
      // A loopback server answers only to loopback names: a web page cannot reach it through a rebound DNS name.
      const host = (req.headers.host ?? "").replace(/:\d+$/, "");
      if (this.opts.anyHost !== true && !isLoopbackHost(host)) return this.send(res, 421, messagePage("wrong host", "this dashboard answers only at a loopback address (127.0.0.1, localhost, [::1])"));
      const path = new URL(req.url ?? "/", "http://dashboard.invalid").pathname;
      if (path === "/") return this.send(res, 200, await this.table());
      const m = /^\/runs\/([a-z0-9][a-z0-9-]{0,62})\/?$/.exec(path);
      if (m !== null) return await this.runPage(res, m[1]!);
      return this.send(res, 404, messagePage("not found", `nothing at ${path}: the table of runs is at /`));
    } catch (e) {
      this.opts.log?.(`rlpipe dashboard: ${this.redactor.redact(String((e as Error)?.stack ?? e))}`);
      if (!res.headersSent) this.send(res, 500, messagePage("internal error", (e as Error)?.message ?? String(e)));
      else res.destroy();
    }
  }

  private async table(): Promise<string> {
    const listing = await this.listing();
    const gathered = await Promise.all(listing.records.map(({ key, record }) => this.gathered(key, record)));
    const rows = sortRows(gathered.map(rowOf));
    return dashboardHtml({
      rows, problems: listing.problems, sources: this.opts.sources.map((s) => s.label),
      generatedAt: this.now().toISOString(), refreshSeconds: this.opts.refreshSeconds,
    });
  }

  private async runPage(res: ServerResponse, name: string): Promise<void> {
    const listing = await this.listing();
    const found = listing.records.find((r) => r.record.name === name);
    if (found === undefined) return this.send(res, 404, messagePage(`no run named ${name}`, `no run named ${name} among the runs this dashboard reads (${this.opts.sources.map((s) => s.label).join(", ")})`));
    const g = await this.gathered(found.key, found.record);
    if (!g.ok) return this.send(res, 200, messagePage(`${name}: page unavailable`, `the run's data could not be gathered: ${g.why}`));
    const row = dashboardRow(g.data);
    return this.send(res, 200, servedRunPage(runPageHtml(g.data), { live: row.live, refreshSeconds: this.opts.refreshSeconds }));
  }

  /** Every source's records (first source wins a name two share), listed at most once per interval. */
  private listing(): Promise<Listing> {
    return this.lists.get("", async () => {
      const problems: string[] = [];
      const records: { key: string; record: RunRecord }[] = [];
      const seen = new Set<string>();
      const lists = await Promise.all(this.opts.sources.map(async (s) => {
        try { return { s, ...(await s.list()) }; } catch (e) { return { s, records: [], problems: [`${s.label}: run records could not be listed: ${(e as Error)?.message ?? String(e)}`] }; }
      }));
      for (const l of lists) {
        problems.push(...l.problems.map((p) => this.redactor.redact(p)));
        for (const r of l.records) {
          if (seen.has(r.name)) { problems.push(`${l.s.label}: run ${r.name} is also in ${lists.find((x) => x.records.some((y) => y.name === r.name))!.s.label}; that one is shown`); continue; }
          seen.add(r.name);
          records.push({ key: `${l.s.label}\u0000${r.name}`, record: r });
        }
      }
      this.runs.retain(new Set(records.map((r) => r.key)));
      return { records, problems };
    });
  }

  private gathered(key: string, record: RunRecord): Promise<Gathered> {
    return this.runs.get(key, async () => {
      try {
        return { ok: true, data: await this.opts.gather(record) };
      } catch (e) {
        return { ok: false, record, why: this.redactor.redact((e as Error)?.message ?? String(e)) };
      }
    });
  }

  private send(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}): void {
    const body = Buffer.from(this.redactor.redact(html), "utf8");
    res.writeHead(status, { "content-type": "text/html; charset=utf-8", "content-length": String(body.length), ...SECURITY_HEADERS, ...headers });
    res.end(res.req.method === "HEAD" ? undefined : body);
  }
}

/** A run whose data could not be gathered at all: its row from the record alone. */
function rowOf(g: Gathered): DashboardRow {
  if (g.ok) return dashboardRow(g.data);
  const r = g.record;
  const phase = r.lastStatus?.phase ?? "UNKNOWN";
  return {
    run: r.name, provider: r.provider, ...(r.ref.region === undefined ? {} : { region: r.ref.region }), recipe: r.recipe.name, submittedAt: r.createdAt,
    phase, statusUnavailable: g.why, live: !isTerminal(phase),
    progress: {}, cost: { why: `unavailable: ${g.why}` }, storeUnavailable: g.why,
  };
}
