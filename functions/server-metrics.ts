// What `rlpipe serve` is doing under RL load: request counts, 429 rejections, cancellations, sandbox infra errors,
// latency histograms, and gauges/counters owned by the server and the sandbox. Rendered as JSON (GET /v1/stats) and
// as Prometheus text exposition format 0.0.4 (GET /metrics). Pure: it holds and renders numbers; the server wires it.
// Memory is bounded whatever clients send: route labels come from a fixed list, statuses are 100..599 (else 0),
// and histograms have fixed buckets.

/** The route labels counted as themselves; any other path counts as "other", so a scanner cannot grow the label set. */
export const KNOWN_ROUTES: readonly string[] = Object.freeze([
  "/run_code", "/common_evaluate", "/common_evaluate_batch", "/run_jupyter", "/v1/rewards",
  "/v1/ping", "/v1/stats", "/metrics", "/v1/usage", "/v1/runs",
]);
const KNOWN = new Set(KNOWN_ROUTES);

/** Fixed log-spaced buckets in milliseconds (upper bounds), 1 ms .. 30 min, so percentiles are estimated in O(buckets) with bounded memory. The E6 series (x1.47 per step) keeps an estimate within about 47% of the truth. */
export const LATENCY_BUCKETS_MS: readonly number[] = Object.freeze((() => {
  const out: number[] = [];
  for (let decade = 1; decade <= 100_000; decade *= 10) for (const m of [10, 15, 22, 33, 47, 68]) out.push((m * decade) / 10);
  out.push(1_000_000, 1_500_000, 1_800_000);
  return out;
})());

/** Index of the first bucket whose upper bound is >= ms (le is inclusive), or LATENCY_BUCKETS_MS.length above the top. */
function bucketIndex(ms: number): number {
  let lo = 0;
  let hi = LATENCY_BUCKETS_MS.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ms <= LATENCY_BUCKETS_MS[mid]!) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

export class LatencyHistogram {
  /** Per-bucket (not cumulative) counts; the extra last slot holds values above the top bucket. */
  private readonly counts: number[] = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
  private n = 0;
  private sum = 0;
  private min = Infinity;
  private max = -Infinity;

  /** Record one latency. Negative values (a clock step) count as 0; non-finite ones are dropped so a bad timer cannot poison the sum. */
  observe(ms: number): void {
    if (!Number.isFinite(ms)) return;
    const v = Math.max(0, ms);
    this.counts[bucketIndex(v)]! += 1;
    this.n += 1;
    this.sum += v;
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
  }

  get count(): number { return this.n; }
  get sumMs(): number { return this.sum; }
  /** The largest value observed; undefined when empty. */
  get maxMs(): number | undefined { return this.n === 0 ? undefined : this.max; }

  /** The q-quantile (0<q<=1) estimated by linear interpolation inside the bucket that holds it, clamped to the observed min..max (so one value reports itself); undefined when empty. Values above the last bucket report the largest value observed. */
  quantileMs(q: number): number | undefined {
    if (!(q > 0 && q <= 1)) throw new RangeError(`quantile ${q} is not in (0, 1]`);
    if (this.n === 0) return undefined;
    const rank = q * this.n;
    let below = 0;
    for (let i = 0; i < LATENCY_BUCKETS_MS.length; i++) {
      const c = this.counts[i]!;
      if (c > 0 && below + c >= rank) {
        const lo = i === 0 ? 0 : LATENCY_BUCKETS_MS[i - 1]!;
        const hi = LATENCY_BUCKETS_MS[i]!;
        return Math.min(this.max, Math.max(this.min, lo + ((hi - lo) * (rank - below)) / c));
      }
      below += c;
    }
    return this.max;
  }

  /** Cumulative counts per upper bound (for Prometheus), plus +Inf. */
  buckets(): readonly { readonly leMs: number; readonly count: number }[] {
    let cum = 0;
    const out = LATENCY_BUCKETS_MS.map((leMs, i) => ({ leMs, count: (cum += this.counts[i]!) }));
    out.push({ leMs: Infinity, count: this.n });
    return out;
  }
}

export type CancelReason = "client_disconnected" | "deadline";
const CANCEL_REASONS: readonly CancelReason[] = ["client_disconnected", "deadline"];

interface RouteStats { count: number; readonly byStatus: Map<number, number>; readonly latency: LatencyHistogram }
interface Reader { readonly key: string; readonly help: string; readonly read: () => number }

/** The fixed label of a request path: itself if known (query string ignored), else "other". */
function routeLabel(route: string): string {
  const path = route.split(/[?#]/, 1)[0]!;
  return KNOWN.has(path) ? path : "other";
}

const inc = <K>(m: Map<K, number>, k: K, by = 1): void => { m.set(k, (m.get(k) ?? 0) + by); };
const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const round3 = (x: number | undefined): number | null => (x !== undefined && Number.isFinite(x) ? Math.round(x * 1000) / 1000 : null);

/** Escape a Prometheus label value: backslash, double quote and newline (exposition format 0.0.4). */
export function escapeLabelValue(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`));
}
const escapeHelp = (v: string): string => v.replace(/[\\\n]/g, (c) => (c === "\n" ? "\\n" : "\\\\"));
const fmtValue = (v: number): string => (Number.isNaN(v) ? "NaN" : v === Infinity ? "+Inf" : v === -Infinity ? "-Inf" : String(v));
/** Milliseconds as a seconds label, without float noise (2.2 ms -> "0.0022"). */
const fmtSeconds = (ms: number): string => (ms === Infinity ? "+Inf" : String(Number((ms / 1000).toPrecision(12))));

function sample(name: string, labels: readonly (readonly [string, string])[], value: number): string {
  const l = labels.length === 0 ? "" : `{${labels.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(",")}}`;
  return `${name}${l} ${fmtValue(value)}`;
}

/** Sort object keys recursively, so JSON output is stable. */
function sortKeys(v: unknown): unknown {
  if (v === null || typeof v !== "object" || Array.isArray(v)) return v;
  return Object.fromEntries(Object.entries(v).sort(([a], [b]) => byCodeUnits(a, b)).map(([k, x]) => [k, sortKeys(x)]));
}

const BUILTIN_NAMES = new Set(["rlpipe_requests_total", "rlpipe_rejected_total", "rlpipe_cancelled_total", "rlpipe_infra_errors_total",
  ...["", "_bucket", "_sum", "_count"].map((s) => `rlpipe_request_duration_seconds${s}`)]);

export class ServerMetrics {
  private readonly requests = new Map<string, RouteStats>();
  private readonly rejections = new Map<string, number>();
  private readonly cancellations = new Map<string, Map<CancelReason, number>>();
  private readonly infra = new Map<string, number>();
  /** Registered readers by their Prometheus name. */
  private readonly gauges = new Map<string, Reader>();
  private readonly counters = new Map<string, Reader>();

  /** A request answered on `route` (a fixed route label, e.g. "/run_code"; unknown paths are counted under "other") with `status`, after `ms`. A status outside 100..599 counts as 0. */
  requestDone(route: string, status: number, ms: number): void {
    const r = routeLabel(route);
    let s = this.requests.get(r);
    if (s === undefined) this.requests.set(r, (s = { count: 0, byStatus: new Map(), latency: new LatencyHistogram() }));
    s.count += 1;
    inc(s.byStatus, Number.isInteger(status) && status >= 100 && status <= 599 ? status : 0);
    s.latency.observe(ms);
  }

  /** A request answered 429 at admission (overload); counted apart from requestDone, which the server may also call. */
  rejected(route: string): void { inc(this.rejections, routeLabel(route)); }

  /** Work abandoned because the client went away or its deadline passed. */
  cancelled(route: string, reason: CancelReason): void {
    const r = routeLabel(route);
    let m = this.cancellations.get(r);
    if (m === undefined) this.cancellations.set(r, (m = new Map()));
    inc(m, reason);
  }

  /** A request or job whose sandbox failed (not the program under test): the signal to page on, unlike wrong answers. */
  infraError(route: string): void { inc(this.infra, routeLabel(route)); }

  /** Gauges read when a snapshot is taken: set once by the server (e.g. admission queue depth, in flight, the sandbox's busy slots). */
  gauge(name: string, help: string, read: () => number): void { this.register(this.gauges, metricName(name, false), name, help, read); }

  /** Counters owned elsewhere, read at snapshot time (e.g. the sandbox's zygotesRetired). */
  counterFrom(name: string, help: string, read: () => number): void { this.register(this.counters, metricName(name, true), name, help, read); }

  private register(into: Map<string, Reader>, prom: string, key: string, help: string, read: () => number): void {
    const taken = BUILTIN_NAMES.has(prom) || this.gauges.has(prom) || this.counters.has(prom)
      || [...this.gauges.values(), ...this.counters.values()].some((r) => r.key === key);
    if (taken) throw new TypeError(`metric ${JSON.stringify(key)} (${prom}) is already registered`);
    into.set(prom, { key, help, read });
  }

  /** JSON for GET /v1/stats: {requests: {<route>: {count, byStatus: {"200": n,...}, latencyMs: {p50, p90, p99, max}}}, rejected: {<route>: n}, cancelled: {client_disconnected: n, deadline: n, byRoute: {...}}, infraErrors: {<route>: n}, gauges: {<name>: value}, counters: {<name>: value}} - keys sorted, numbers rounded to 3 decimals (a reader that throws or is not finite reports null). */
  snapshot(): Readonly<Record<string, unknown>> {
    const requests = [...this.requests].map(([route, s]) => [route, {
      count: s.count,
      byStatus: Object.fromEntries([...s.byStatus].map(([k, n]) => [String(k), n])),
      latencyMs: { p50: round3(s.latency.quantileMs(0.5)), p90: round3(s.latency.quantileMs(0.9)), p99: round3(s.latency.quantileMs(0.99)), max: round3(s.latency.maxMs) },
    }]);
    const cancelled: Record<string, unknown> = Object.fromEntries(CANCEL_REASONS.map((why) => [why, [...this.cancellations.values()].reduce((a, m) => a + (m.get(why) ?? 0), 0)]));
    cancelled.byRoute = Object.fromEntries([...this.cancellations].map(([route, m]) => [route, Object.fromEntries(CANCEL_REASONS.map((why) => [why, m.get(why) ?? 0]))]));
    const read = (m: Map<string, Reader>) => Object.fromEntries([...m.values()].map((r) => [r.key, round3(safeRead(r))]));
    return sortKeys({
      requests: Object.fromEntries(requests), rejected: Object.fromEntries(this.rejections), cancelled,
      infraErrors: Object.fromEntries(this.infra), gauges: read(this.gauges), counters: read(this.counters),
    }) as Readonly<Record<string, unknown>>;
  }

  /** Prometheus text format 0.0.4: every metric prefixed rlpipe_, with # HELP and # TYPE lines, label values escaped, families sorted by name and samples by label values, so equal state renders byte-identical text. */
  prometheus(): string {
    const families: { name: string; type: string; help: string; lines: string[] }[] = [];
    const routes = <V>(m: Map<string, V>): [string, V][] => [...m].sort(([a], [b]) => byCodeUnits(a, b));
    const perRoute = (name: string, help: string, m: Map<string, number>) =>
      families.push({ name, type: "counter", help, lines: routes(m).map(([r, n]) => sample(name, [["route", r]], n)) });
    const reqs = routes(this.requests);
    families.push({ name: "rlpipe_requests_total", type: "counter", help: "Requests answered, by route and HTTP status.",
      lines: reqs.flatMap(([r, s]) => [...s.byStatus].sort(([a], [b]) => a - b).map(([st, n]) => sample("rlpipe_requests_total", [["route", r], ["status", String(st)]], n))) });
    const h = "rlpipe_request_duration_seconds";
    families.push({ name: h, type: "histogram", help: "Time from request to answer, by route.", lines: reqs.flatMap(([r, s]) => [
      ...s.latency.buckets().map((b) => sample(`${h}_bucket`, [["route", r], ["le", fmtSeconds(b.leMs)]], b.count)),
      sample(`${h}_sum`, [["route", r]], s.latency.sumMs / 1000), sample(`${h}_count`, [["route", r]], s.latency.count)]) });
    perRoute("rlpipe_rejected_total", "Requests answered 429 at admission (overload), by route.", this.rejections);
    families.push({ name: "rlpipe_cancelled_total", type: "counter", help: "Requests cancelled because the client disconnected or the deadline passed, by route and reason.",
      lines: routes(this.cancellations).flatMap(([r, m]) => CANCEL_REASONS.filter((why) => m.has(why)).map((why) => sample("rlpipe_cancelled_total", [["route", r], ["reason", why]], m.get(why)!))) });
    perRoute("rlpipe_infra_errors_total", "Requests or jobs whose sandbox failed (not the program), by route.", this.infra);
    for (const [type, m] of [["gauge", this.gauges], ["counter", this.counters]] as const) {
      for (const [name, r] of m) families.push({ name, type, help: r.help, lines: [sample(name, [], safeRead(r))] });
    }
    families.sort((a, b) => byCodeUnits(a.name, b.name));
    return families.map((f) => [`# HELP ${f.name} ${escapeHelp(f.help)}`, `# TYPE ${f.name} ${f.type}`, ...f.lines].join("\n") + "\n").join("");
  }
}

/** The Prometheus name of a registered metric: rlpipe_ + the name with [^a-zA-Z0-9_] as _, counters ending in _total. */
function metricName(name: string, counter: boolean): string {
  const base = name.replace(/[^a-zA-Z0-9_]/g, "_").replace(/^rlpipe_/, "");
  if (base === "") throw new TypeError(`metric name ${JSON.stringify(name)} is empty`);
  return `rlpipe_${base}${counter && !base.endsWith("_total") ? "_total" : ""}`;
}

/** A reader's value now; one that throws or returns a non-number reports NaN rather than failing the whole scrape. */
function safeRead(r: Reader): number {
  try {
    const v = r.read();
    return typeof v === "number" ? v : NaN;
  } catch {
    return NaN;
  }
}
