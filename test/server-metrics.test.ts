// The numbers `rlpipe serve` shows under load (functions/server-metrics.ts): latency quantiles from fixed buckets,
// bounded route labels, gauges read at scrape time, and Prometheus text checked by a strict exposition-format parser.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KNOWN_ROUTES, LATENCY_BUCKETS_MS, LatencyHistogram, ServerMetrics, escapeLabelValue } from "../functions/server-metrics.js";

interface Sample { readonly name: string; readonly labels: Readonly<Record<string, string>>; readonly value: number }
interface Family { readonly name: string; help: string; type: string; readonly samples: Sample[] }

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const VALUE = /^(?:[+-]?Inf|NaN|[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)$/;

function unescapeHelp(s: string, at: string): string {
  return s.replace(/\\(.?)/g, (_, c: string) => {
    if (c === "\\") return "\\";
    if (c === "n") return "\n";
    throw new Error(`${at}: bad escape \\${c} in HELP`);
  });
}

/** One sample line `name{k="v",...} value` (no timestamp: the server never sends one). */
function parseSample(line: string, at: string): Sample {
  const name = NAME.exec(line)?.[0];
  if (name === undefined) throw new Error(`${at}: no metric name`);
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === "{") {
    i++;
    while (line[i] !== "}") {
      const key = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(line.slice(i))?.[0];
      if (key === undefined || line.slice(i + key.length, i + key.length + 2) !== '="') throw new Error(`${at}: bad label at ${i}`);
      if (key in labels) throw new Error(`${at}: label ${key} repeated`);
      i += key.length + 2;
      let value = "";
      for (;;) {
        const c = line[i++];
        if (c === undefined) throw new Error(`${at}: unterminated label value`);
        if (c === '"') break;
        if (c === "\\") {
          const e = line[i++];
          if (e === "\\" || e === '"') value += e;
          else if (e === "n") value += "\n";
          else throw new Error(`${at}: bad escape \\${e ?? ""} in a label value`);
        } else value += c;
      }
      labels[key] = value;
      if (line[i] === ",") i++;
      else if (line[i] !== "}") throw new Error(`${at}: expected , or } at ${i}`);
    }
    i++;
  }
  if (line[i] !== " ") throw new Error(`${at}: expected one space before the value`);
  const raw = line.slice(i + 1);
  if (!VALUE.test(raw)) throw new Error(`${at}: bad value ${JSON.stringify(raw)}`);
  return { name, labels, value: raw.endsWith("Inf") ? (raw.startsWith("-") ? -Infinity : Infinity) : Number(raw) };
}

/** A strict reader of text exposition format 0.0.4 as this server writes it: each family is `# HELP`, `# TYPE`, then its samples. */
function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith("\n")) throw new Error("the text must end with a newline");
  const families = new Map<string, Family>();
  const series = new Set<string>();
  let cur: Family | undefined;
  text.slice(0, -1).split("\n").forEach((line, n) => {
    const at = `line ${n + 1} ${JSON.stringify(line)}`;
    let m: RegExpExecArray | null;
    if ((m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line))) {
      if (families.has(m[1]!)) throw new Error(`${at}: family ${m[1]} appears twice`);
      cur = { name: m[1]!, help: unescapeHelp(m[2]!, at), type: "", samples: [] };
      families.set(cur.name, cur);
    } else if ((m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line))) {
      if (cur === undefined || cur.name !== m[1] || cur.type !== "" || cur.samples.length > 0) throw new Error(`${at}: TYPE must follow its HELP, before samples`);
      cur.type = m[2]!;
    } else if (line.startsWith("#") || line === "") {
      throw new Error(`${at}: unexpected comment or blank line`);
    } else {
      const s = parseSample(line, at);
      if (cur === undefined || cur.type === "") throw new Error(`${at}: sample before HELP and TYPE`);
      const family = cur.name;
      const names = cur.type === "histogram" ? ["_bucket", "_sum", "_count"].map((x) => family + x) : [family];
      if (!names.includes(s.name)) throw new Error(`${at}: sample of another family than ${cur.name}`);
      if (cur.type === "counter" && !(s.value >= 0)) throw new Error(`${at}: counter below 0`);
      const key = `${s.name}${JSON.stringify(Object.entries(s.labels).sort())}`;
      if (series.has(key)) throw new Error(`${at}: series repeated`);
      series.add(key);
      cur.samples.push(s);
    }
  });
  return families;
}

/** Histogram rules per series: buckets cumulative and non-decreasing, le increasing and ending at +Inf = _count, a _sum. */
function checkHistogram(f: Family): Map<string, { les: number[]; counts: number[]; sum: number; count: number }> {
  const out = new Map<string, { les: number[]; counts: number[]; sum: number; count: number }>();
  const get = (labels: Readonly<Record<string, string>>) => {
    const { le: _le, ...rest } = labels;
    const k = JSON.stringify(rest);
    if (!out.has(k)) out.set(k, { les: [], counts: [], sum: NaN, count: NaN });
    return out.get(k)!;
  };
  for (const s of f.samples) {
    const g = get(s.labels);
    if (s.name.endsWith("_bucket")) {
      assert.ok(Number.isNaN(g.count), "buckets come before _count");
      const le = s.labels.le;
      assert.ok(le !== undefined && VALUE.test(le), `bucket le ${le}`);
      g.les.push(le === "+Inf" ? Infinity : Number(le));
      g.counts.push(s.value);
    } else if (s.name.endsWith("_sum")) g.sum = s.value;
    else g.count = s.value;
  }
  for (const [k, g] of out) {
    assert.ok(g.les.length > 0 && !Number.isNaN(g.sum) && !Number.isNaN(g.count), `${k}: buckets, _sum and _count`);
    for (let i = 1; i < g.les.length; i++) {
      assert.ok(g.les[i]! > g.les[i - 1]!, `${k}: le increasing`);
      assert.ok(g.counts[i]! >= g.counts[i - 1]!, `${k}: buckets cumulative`);
    }
    assert.equal(g.les.at(-1), Infinity, `${k}: last bucket is +Inf`);
    assert.equal(g.counts.at(-1), g.count, `${k}: +Inf bucket equals _count`);
  }
  return out;
}

const widthOfBucketHolding = (ms: number): number => {
  const i = LATENCY_BUCKETS_MS.findIndex((b) => ms <= b);
  return LATENCY_BUCKETS_MS[i]! - (i === 0 ? 0 : LATENCY_BUCKETS_MS[i - 1]!);
};

describe("LatencyHistogram", () => {
  it("has fixed log-spaced buckets from 1 ms to 30 min", () => {
    assert.equal(LATENCY_BUCKETS_MS[0], 1);
    assert.equal(LATENCY_BUCKETS_MS.at(-1), 30 * 60 * 1000);
    for (let i = 1; i < LATENCY_BUCKETS_MS.length; i++) {
      const ratio = LATENCY_BUCKETS_MS[i]! / LATENCY_BUCKETS_MS[i - 1]!;
      assert.ok(ratio > 1.1 && ratio <= 1.5, `ratio ${ratio} at ${LATENCY_BUCKETS_MS[i]}`);
    }
  });

  it("estimates quantiles of 1000 values uniform on 1..1000 ms within one bucket", () => {
    const h = new LatencyHistogram();
    for (let i = 0; i < 1000; i++) h.observe(((i * 379) % 1000) + 1); // a permutation of 1..1000
    assert.equal(h.count, 1000);
    assert.equal(h.sumMs, 500_500);
    for (const [q, want] of [[0.5, 500], [0.9, 900], [0.99, 990]] as const) {
      const got = h.quantileMs(q)!;
      assert.ok(Math.abs(got - want) <= widthOfBucketHolding(want), `p${q * 100} = ${got}, want ${want}`);
      // Uniform data fills each bucket evenly, so linear interpolation should be all but exact.
      assert.ok(Math.abs(got - want) <= 1, `p${q * 100} = ${got}, want ${want} (interpolated)`);
    }
    assert.equal(h.quantileMs(1), 1000);
    assert.ok(h.quantileMs(0.001)! <= 1.5, `p0.1 = ${h.quantileMs(0.001)}`);
  });

  it("interpolates linearly inside a bucket and clamps to the observed range", () => {
    const h = new LatencyHistogram();
    for (const v of [11, 12, 13, 14]) h.observe(v); // all in (10, 15]
    assert.equal(h.quantileMs(0.5), 12.5);
    assert.equal(h.quantileMs(0.25), 11.25);
    assert.equal(h.quantileMs(1), 14);
  });

  it("reports a single value as itself and nothing when empty", () => {
    const empty = new LatencyHistogram();
    assert.equal(empty.quantileMs(0.5), undefined);
    assert.equal(empty.count, 0);
    assert.deepEqual(empty.buckets().at(-1), { leMs: Infinity, count: 0 });
    const one = new LatencyHistogram();
    one.observe(42);
    for (const q of [0.01, 0.5, 0.99, 1]) assert.equal(one.quantileMs(q), 42);
    assert.throws(() => one.quantileMs(0), RangeError);
    assert.throws(() => one.quantileMs(1.5), RangeError);
    assert.throws(() => one.quantileMs(Number.NaN), RangeError);
  });

  it("reports the largest value observed for quantiles above the top bucket", () => {
    const h = new LatencyHistogram();
    for (let i = 0; i < 99; i++) h.observe(5);
    h.observe(3_600_000);
    const p99 = h.quantileMs(0.99)!;
    assert.ok(p99 > 4.7 && p99 <= 6.8, `p99 = ${p99}`);
    assert.equal(h.quantileMs(1), 3_600_000);
    const b = h.buckets();
    assert.equal(b.length, LATENCY_BUCKETS_MS.length + 1);
    assert.equal(b.at(-2)!.count, 99);
    assert.equal(b.at(-1)!.count, 100);
    const above = new LatencyHistogram();
    above.observe(2_000_000);
    above.observe(3_000_000);
    assert.equal(above.quantileMs(0.5), 3_000_000);
  });

  it("counts a negative latency as 0 and drops a non-finite one", () => {
    const h = new LatencyHistogram();
    h.observe(-3);
    h.observe(Number.NaN);
    h.observe(Infinity);
    assert.equal(h.count, 1);
    assert.equal(h.sumMs, 0);
    assert.equal(h.buckets()[0]!.count, 1);
  });
});

describe("ServerMetrics", () => {
  it("counts requests per route and status, with percentiles", () => {
    const m = new ServerMetrics();
    for (let i = 1; i <= 100; i++) m.requestDone("/run_code", i % 10 === 0 ? 500 : 200, i);
    m.requestDone("/v1/rewards", 200, 7);
    m.requestDone("/v1/rewards", 1000, 7); // not an HTTP status
    const s = m.snapshot() as { requests: Record<string, { count: number; byStatus: Record<string, number>; latencyMs: Record<string, number | null> }> };
    assert.deepEqual(Object.keys(s.requests), ["/run_code", "/v1/rewards"]);
    assert.equal(s.requests["/run_code"]!.count, 100);
    assert.deepEqual(s.requests["/run_code"]!.byStatus, { 200: 90, 500: 10 });
    assert.deepEqual(s.requests["/v1/rewards"]!.byStatus, { 0: 1, 200: 1 });
    const lat = s.requests["/run_code"]!.latencyMs;
    assert.deepEqual(Object.keys(lat), ["max", "p50", "p90", "p99"]);
    assert.equal(lat.max, 100);
    assert.ok(Math.abs(lat.p50! - 50) <= widthOfBucketHolding(50), `p50 ${lat.p50}`);
    assert.ok(Math.abs(lat.p90! - 90) <= widthOfBucketHolding(90), `p90 ${lat.p90}`);
    assert.equal(lat.p50, Math.round(lat.p50! * 1000) / 1000, "rounded to 3 decimals");
  });

  it("counts unknown paths under \"other\", so clients cannot grow the label set", () => {
    const m = new ServerMetrics();
    for (let i = 0; i < 5000; i++) m.requestDone(`/probe/${i}`, 404, 1);
    for (const p of ["/run_code/", "/RUN_CODE", "", "/v1/stats/x"]) m.rejected(p);
    m.requestDone("/run_code?trace=1", 200, 1);
    for (const r of KNOWN_ROUTES) m.infraError(r);
    const s = m.snapshot() as { requests: Record<string, { count: number }>; rejected: Record<string, number>; infraErrors: Record<string, number> };
    assert.deepEqual(Object.keys(s.requests), ["/run_code", "other"]);
    assert.equal(s.requests.other!.count, 5000);
    assert.deepEqual(s.rejected, { other: 4 });
    assert.deepEqual(Object.keys(s.infraErrors), [...KNOWN_ROUTES].sort());
    assert.ok(Object.values(s.infraErrors).every((n) => n === 1));
  });

  it("reports rejections, cancellations by reason and route, and infra errors", () => {
    const m = new ServerMetrics();
    m.rejected("/run_code");
    m.rejected("/run_code");
    m.cancelled("/run_code", "deadline");
    m.cancelled("/common_evaluate_batch", "client_disconnected");
    m.cancelled("/common_evaluate_batch", "client_disconnected");
    m.infraError("/v1/rewards");
    const s = m.snapshot();
    assert.deepEqual(s.rejected, { "/run_code": 2 });
    assert.deepEqual(s.cancelled, {
      byRoute: { "/common_evaluate_batch": { client_disconnected: 2, deadline: 0 }, "/run_code": { client_disconnected: 0, deadline: 1 } },
      client_disconnected: 2, deadline: 1,
    });
    assert.deepEqual(s.infraErrors, { "/v1/rewards": 1 });
    assert.deepEqual(s.requests, {});
  });

  it("reads gauges and counters when a snapshot is taken", () => {
    const m = new ServerMetrics();
    let depth = 3;
    let retired = 0;
    m.gauge("queue_depth", "Requests waiting for admission.", () => depth);
    m.gauge("ratio", "A fraction.", () => 1 / 3);
    m.gauge("broken", "A reader that throws.", () => { throw new Error("gone"); });
    m.counterFrom("zygotesRetired", "Zygotes retired.", () => retired);
    assert.deepEqual(m.snapshot().gauges, { broken: null, queue_depth: 3, ratio: 0.333 });
    assert.deepEqual(m.snapshot().counters, { zygotesRetired: 0 });
    depth = 7;
    retired = 4;
    assert.deepEqual(m.snapshot().gauges, { broken: null, queue_depth: 7, ratio: 0.333 });
    assert.deepEqual(m.snapshot().counters, { zygotesRetired: 4 });
    const f = parseExposition(m.prometheus());
    assert.equal(f.get("rlpipe_queue_depth")!.samples[0]!.value, 7);
    assert.equal(f.get("rlpipe_zygotesRetired_total")!.samples[0]!.value, 4);
    assert.ok(Number.isNaN(f.get("rlpipe_broken")!.samples[0]!.value));
    depth = 9;
    assert.equal(parseExposition(m.prometheus()).get("rlpipe_queue_depth")!.samples[0]!.value, 9);
    assert.throws(() => m.gauge("queue-depth", "Same Prometheus name.", () => 0), TypeError);
    assert.throws(() => m.counterFrom("requests", "Clashes with rlpipe_requests_total.", () => 0), TypeError);
  });

  it("sorts snapshot keys at every level", () => {
    const m = new ServerMetrics();
    m.gauge("z", "z", () => 1);
    m.gauge("a", "a", () => 2);
    m.requestDone("/v1/ping", 200, 1);
    m.requestDone("/run_code", 503, 1);
    m.requestDone("/run_code", 200, 1);
    const check = (v: unknown, path: string): void => {
      if (v === null || typeof v !== "object") return;
      const keys = Object.keys(v);
      assert.deepEqual(keys, [...keys].sort(), `keys at ${path}`);
      for (const [k, x] of Object.entries(v)) check(x, `${path}.${k}`);
    };
    const s = m.snapshot();
    assert.deepEqual(Object.keys(s), ["cancelled", "counters", "gauges", "infraErrors", "rejected", "requests"]);
    check(s, "$");
  });
});

describe("ServerMetrics.prometheus", () => {
  const busy = () => {
    const m = new ServerMetrics();
    m.requestDone("/run_code", 200, 500);
    m.requestDone("/run_code", 200, 1500);
    m.requestDone("/run_code", 429, 0.2);
    m.requestDone("/nowhere", 404, 3);
    m.requestDone("/common_evaluate_batch", 200, 2_000_000);
    m.rejected("/run_code");
    m.cancelled("/run_jupyter", "client_disconnected");
    m.cancelled("/run_jupyter", "deadline");
    m.infraError("/v1/rewards");
    m.gauge("sandbox.busy-slots", "Busy sandbox slots.\nA second line with a back\\slash.", () => 2);
    m.counterFrom("zygotes_retired_total", "Zygotes retired.", () => 5);
    return m;
  };

  it("writes valid exposition text with every family typed and prefixed rlpipe_", () => {
    const f = parseExposition(busy().prometheus());
    assert.deepEqual([...f.keys()], [...f.keys()].sort(), "families sorted by name");
    assert.deepEqual(Object.fromEntries([...f.values()].map((x) => [x.name, x.type])), {
      rlpipe_cancelled_total: "counter", rlpipe_infra_errors_total: "counter", rlpipe_rejected_total: "counter",
      rlpipe_request_duration_seconds: "histogram", rlpipe_requests_total: "counter", rlpipe_sandbox_busy_slots: "gauge",
      rlpipe_zygotes_retired_total: "counter",
    });
    assert.equal(f.get("rlpipe_sandbox_busy_slots")!.help, "Busy sandbox slots.\nA second line with a back\\slash.");
    const rows = (name: string) => f.get(name)!.samples.map((s) => [JSON.stringify(s.labels), s.value]);
    assert.deepEqual(rows("rlpipe_requests_total"), [
      ['{"route":"/common_evaluate_batch","status":"200"}', 1], ['{"route":"/run_code","status":"200"}', 2],
      ['{"route":"/run_code","status":"429"}', 1], ['{"route":"other","status":"404"}', 1],
    ]);
    assert.deepEqual(rows("rlpipe_rejected_total"), [['{"route":"/run_code"}', 1]]);
    assert.deepEqual(rows("rlpipe_cancelled_total"), [
      ['{"route":"/run_jupyter","reason":"client_disconnected"}', 1], ['{"route":"/run_jupyter","reason":"deadline"}', 1],
    ]);
    assert.deepEqual(rows("rlpipe_infra_errors_total"), [['{"route":"/v1/rewards"}', 1]]);
    assert.deepEqual(rows("rlpipe_zygotes_retired_total"), [["{}", 5]]);
  });

  it("writes cumulative histogram buckets in seconds, ending at +Inf = _count, with _sum in seconds", () => {
    const f = parseExposition(busy().prometheus());
    const h = checkHistogram(f.get("rlpipe_request_duration_seconds")!);
    assert.deepEqual([...h.keys()], ['{"route":"/common_evaluate_batch"}', '{"route":"/run_code"}', '{"route":"other"}']);
    const rc = h.get('{"route":"/run_code"}')!;
    assert.deepEqual(rc.les, [...LATENCY_BUCKETS_MS.map((ms) => ms / 1000), Infinity].map((x) => Number(x.toPrecision(12))));
    const at = (le: number) => rc.counts[rc.les.indexOf(le)];
    assert.equal(at(0.001), 1); // 0.2 ms
    assert.equal(at(0.47), 1);
    assert.equal(at(0.68), 2); // 500 ms
    assert.equal(at(1), 2);
    assert.equal(at(1.5), 3); // 1500 ms: le is inclusive
    assert.equal(rc.count, 3);
    assert.ok(Math.abs(rc.sum - 2.0002) < 1e-9, `sum ${rc.sum}`);
    const slow = h.get('{"route":"/common_evaluate_batch"}')!;
    assert.equal(slow.counts.at(-2), 0, "2000 s is above the top bucket");
    assert.equal(slow.counts.at(-1), 1);
    assert.equal(slow.sum, 2000);
  });

  it("round-trips label values with a quote, a backslash and a newline", () => {
    const weird = 'say "hi"\\ then\nbye';
    const escaped = escapeLabelValue(weird);
    assert.ok(!escaped.includes("\n"));
    const f = parseExposition(`# HELP t_total t\n# TYPE t_total counter\nt_total{v="${escaped}",w="x"} 1\n`);
    assert.deepEqual(f.get("t_total")!.samples[0]!.labels, { v: weird, w: "x" });
    // The parser is strict: the raw value is not valid exposition text.
    assert.throws(() => parseExposition(`# HELP t_total t\n# TYPE t_total counter\nt_total{v="${weird.replace("\n", "")}"} 1\n`));
    // Rendered route labels round-trip to the known routes.
    const m = new ServerMetrics();
    for (const r of KNOWN_ROUTES) m.rejected(r);
    const labels = parseExposition(m.prometheus()).get("rlpipe_rejected_total")!.samples.map((s) => s.labels.route);
    assert.deepEqual(labels, [...KNOWN_ROUTES].sort());
  });

  it("renders the same state byte-identically, whatever the order events and registrations came in", () => {
    const a = busy();
    assert.equal(a.prometheus(), a.prometheus());
    assert.equal(JSON.stringify(a.snapshot()), JSON.stringify(a.snapshot()));
    const b = new ServerMetrics();
    b.counterFrom("zygotes_retired_total", "Zygotes retired.", () => 5);
    b.gauge("sandbox.busy-slots", "Busy sandbox slots.\nA second line with a back\\slash.", () => 2);
    b.infraError("/v1/rewards");
    b.cancelled("/run_jupyter", "deadline");
    b.cancelled("/run_jupyter", "client_disconnected");
    b.rejected("/run_code");
    b.requestDone("/common_evaluate_batch", 200, 2_000_000);
    b.requestDone("/elsewhere", 404, 3);
    b.requestDone("/run_code", 429, 0.2);
    b.requestDone("/run_code", 200, 1500);
    b.requestDone("/run_code", 200, 500);
    assert.equal(b.prometheus(), a.prometheus());
    assert.equal(JSON.stringify(b.snapshot()), JSON.stringify(a.snapshot()));
    b.requestDone("/run_code", 200, 1);
    assert.notEqual(b.prometheus(), a.prometheus());
  });
});
