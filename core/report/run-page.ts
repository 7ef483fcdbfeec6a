// One run as ONE self-contained HTML page (`rlpipe report <run>`): inline CSS and inline SVG, no script, nothing
// fetched, so it opens from a file or straight from object storage. Pure: the same data gives the same bytes.
// What could not be read is said in words ("no metrics yet", "no rates: cost unknown", "status unavailable: …"),
// never drawn as an empty chart.
import { actualRows } from "../cost/render/actual.js";
import { formatMoney, formatMoneyTriple, formatQuantityRange } from "../cost/render/format.js";
import type { CostLine, CostReport } from "../cost/types.js";
import { type MainSeries, type Series, latestValues, mainSeries, metricsPanels } from "../metrics.js";
import { type ChartPanel, layoutChart } from "../plot/chart.js";
import { sceneToSvg } from "../plot/svg.js";
import { isTerminal } from "../providers/phases.js";
import type { RunPageCost, RunPageData, RunPageOutputs, RunPageStatus, StoredRun } from "./run-page-data.js";

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const HEALTH_PREFIX = "sandbox/";

/** The sandbox health metrics rlpipe_health.py writes per step, in the order the page shows them. */
export const HEALTH_METRICS: readonly { readonly name: string; readonly label: string }[] = [
  { name: "sandbox/requests", label: "requests" },
  { name: "sandbox/infra_errors", label: "infrastructure errors" },
  { name: "sandbox/overloaded", label: "overload answers (429/503)" },
  { name: "sandbox/timeouts", label: "timeouts" },
  { name: "sandbox/latency_p50_ms", label: "latency p50 (ms)" },
  { name: "sandbox/latency_p99_ms", label: "latency p99 (ms)" },
];

/** Steps of sandbox health shown as numbers under its chart. */
const HEALTH_TABLE_STEPS = 10;

const asSeries = (r: StoredRun, keep: (name: string) => boolean): Series =>
  new Map(r.series.filter((s) => keep(s.name) && s.points.length > 0).map((s) => [s.name, s.points]));

const trainingSeries = (r: StoredRun): Series => asSeries(r, (n) => !n.startsWith(HEALTH_PREFIX));
const healthSeries = (r: StoredRun): Series => asSeries(r, (n) => n.startsWith(HEALTH_PREFIX));

/** A chart as inline SVG: no namespace URL (the HTML parser places <svg> in it), scaled down on narrow screens. */
function inlineChart(svg: string, label: string): string {
  return svg.trimEnd()
    .replace(/^<svg xmlns="[^"]*" /, "<svg ")
    .replace(/^<svg /, `<svg role="img" aria-label="${escapeHtml(label)}" preserveAspectRatio="xMinYMin meet" style="max-width:100%;height:auto" `);
}

function chart(title: string, run: string, panels: readonly ChartPanel[]): string {
  return inlineChart(sceneToSvg(layoutChart({ title, runs: [run], panels }).scene), title);
}

// ------------------------------------------------------------------------------------------------ formatting

/** A number as people read a metric: up to five significant digits, no exponent for everyday sizes. */
export function formatValue(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v !== 0 && Math.abs(v) < 1e-4) return v.toExponential(2);
  return String(Number(v.toPrecision(5)));
}

export function formatBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

/** 3 h 05 min, 12 min 04 s, 9 s. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${String(m).padStart(2, "0")} min`;
  if (m > 0) return `${m} min ${String(sec).padStart(2, "0")} s`;
  return `${sec} s`;
}

/** An ISO time as "2026-05-01 14:03:22 UTC" (the page is read anywhere: one zone, said). */
function formatTime(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : `${new Date(t).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

const PHASE_CLASS: Readonly<Record<string, string>> = {
  QUEUED: "wait", STARTING: "wait", RUNNING: "live", STOPPING: "wait", SUCCEEDED: "ok", FAILED: "bad", STOPPED: "off", UNKNOWN: "off",
};

function phaseBadge(phase: string): string {
  return `<span class="phase ${PHASE_CLASS[phase] ?? "off"}">${escapeHtml(phase)}</span>`;
}

const unknown = (text: string) => `<p class="unknown">${escapeHtml(text)}</p>`;

/** A table; `numeric` columns align right, `classes` gives other columns a class ("src": a source, small). */
function table(head: readonly string[], rows: readonly (readonly string[])[], numeric: ReadonlySet<number> = new Set(), classes: ReadonlyMap<number, string> = new Map()): string {
  const cls = (i: number) => (numeric.has(i) ? "num" : classes.get(i));
  const cell = (tag: "th" | "td", s: string, i: number) => `<${tag}${cls(i) === undefined ? "" : ` class="${cls(i)!}"`}>${escapeHtml(s)}</${tag}>`;
  return `<table>\n<thead><tr>${head.map((h, i) => cell("th", h, i)).join("")}</tr></thead>\n<tbody>\n${rows.map((r) => `<tr>${r.map((c, i) => cell("td", c, i)).join("")}</tr>`).join("\n")}\n</tbody>\n</table>`;
}

// ------------------------------------------------------------------------------------------------ sections

/** The phase the page leads with: the provider's answer now, else the last one rlpipe recorded. */
export function pagePhase(d: RunPageData): string {
  return d.status.ok ? d.status.value.phase : d.lastSeen?.phase ?? "UNKNOWN";
}

function runSection(d: RunPageData): string {
  const rows: [string, string][] = [
    ["recipe", `${d.recipe.name} (${d.recipe.file}, hash ${d.recipe.hash.slice(0, 12)})`],
    ["provider", `${d.provider}${d.region === undefined ? "" : ` (${d.region})`}, job ${d.jobId}`],
  ];
  if (d.outputs.ok) rows.push(["store", d.outputs.value.store]);
  const dl = (pairs: readonly (readonly [string, string])[]) => `<dl>\n${pairs.map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(v)}</dd>`).join("\n")}\n</dl>`;
  const times: [string, string][] = [["queued (submitted)", formatTime(d.submittedAt)]];
  let phase: string;
  if (d.status.ok) {
    const s: RunPageStatus = d.status.value;
    phase = `${phaseBadge(s.phase)} <span class="muted">${escapeHtml(`${d.provider} says ${s.rawPhase}${s.exitCode === undefined ? "" : `, exit code ${s.exitCode}`}`)}</span>${s.message === undefined ? "" : `<br><span class="muted">${escapeHtml(s.message)}</span>`}`;
    times.push(["started", s.startedAt === undefined ? "not yet" : formatTime(s.startedAt)]);
    times.push(["ended", s.endedAt === undefined ? (isTerminal(s.phase) ? "not reported" : "still running") : formatTime(s.endedAt)]);
    const start = s.startedAt === undefined ? Number.NaN : Date.parse(s.startedAt);
    const end = s.endedAt === undefined ? (isTerminal(s.phase) ? Number.NaN : Date.parse(d.generatedAt)) : Date.parse(s.endedAt);
    times.push(["duration", Number.isNaN(start) || Number.isNaN(end) ? "unknown" : `${formatDuration(end - start)}${s.endedAt === undefined ? " so far" : ""}`]);
  } else {
    const last = d.lastSeen;
    phase = `${phaseBadge(last?.phase ?? "UNKNOWN")} <span class="unknown">${escapeHtml(`status unavailable: ${d.status.why}`)}</span>${last === undefined ? "" : `<br><span class="muted">${escapeHtml(`last seen ${last.phase} (${last.rawPhase}) at ${formatTime(last.at)}`)}</span>`}`;
    times.push(["started", "unknown (status unavailable)"], ["ended", "unknown (status unavailable)"], ["duration", "unknown"]);
  }
  return `<section id="run">
<h2>Run</h2>
<div class="two">
${dl(rows)}
<div>
<p class="phaseline">${phase}</p>
${dl(times)}
</div>
</div>
</section>`;
}

function latestTable(series: readonly MainSeries[]): string {
  return table(["series", "latest", "at step", "metric"], series.map((m) => {
    const [step, value] = m.points[m.points.length - 1]!;
    return [m.label, formatValue(value), String(step), m.formula === undefined ? m.metric : `${m.metric} → ${m.formula}`];
  }), new Set([1, 2]));
}

function curvesSection(d: RunPageData): string {
  const head = "<h2>Training curves</h2>";
  if (!d.outputs.ok) return `<section id="curves">\n${head}\n${unknown(`no metrics: the store could not be read (${d.outputs.why})`)}\n</section>`;
  const withCurves = d.outputs.value.runs.filter((r) => trainingSeries(r).size > 0);
  if (withCurves.length === 0) return `<section id="curves">\n${head}\n${unknown(`no metrics yet: ${noMetricsWhere(d.outputs.value)}`)}\n</section>`;
  const parts = withCurves.map((r) => {
    const series = trainingSeries(r);
    const main = mainSeries(series).filter((m) => !m.metric.startsWith(HEALTH_PREFIX));
    const panels = metricsPanels([{ run: r.run, series }]);
    const steps = new Set(r.series.flatMap((s) => s.points.map(([step]) => step)));
    const latest = main.length === 0 ? unknown(`none of the series rlpipe plots is among its ${series.size} metrics`) : latestTable(main);
    return `<h3>${escapeHtml(r.run)} <span class="muted">${steps.size} step${steps.size === 1 ? "" : "s"} recorded</span></h3>\n${latest}\n${panels.length === 0 ? "" : `<figure>${chart(`${r.run}: training`, r.run, panels)}</figure>`}`;
  });
  return `<section id="curves">\n${head}\n${parts.join("\n")}\n</section>`;
}

function noMetricsWhere(o: RunPageOutputs): string {
  return o.runs.length === 0 ? `the store holds no metrics for this run or its stages yet (${o.store})` : `no metrics in ${o.store} for ${o.runs.map((r) => r.run).join(", ")}`;
}

function healthSection(d: RunPageData): string {
  const head = "<h2>Sandbox health per step</h2>";
  if (!d.outputs.ok) return `<section id="sandbox">\n${head}\n${unknown(`unknown: the store could not be read (${d.outputs.why})`)}\n</section>`;
  const withHealth = d.outputs.value.runs.filter((r) => healthSeries(r).size > 0);
  if (withHealth.length === 0) {
    return `<section id="sandbox">\n${head}\n${unknown("no sandbox health recorded: an RL stage with rlpipe's sandbox writes it per step beside verl's metrics (<metrics>.sandbox.jsonl)")}\n</section>`;
  }
  const parts = withHealth.map((r) => {
    const series = healthSeries(r);
    const present = HEALTH_METRICS.filter((m) => (series.get(m.name)?.length ?? 0) > 0);
    const panels: ChartPanel[] = present.map((m) => ({ title: `sandbox ${m.label}`, subtitle: m.name, lines: [{ run: r.run, points: series.get(m.name)! }] }));
    const byStep = new Map<number, Map<string, number>>();
    for (const [name, pts] of series) for (const [step, v] of pts) byStep.set(step, (byStep.get(step) ?? new Map<string, number>()).set(name, v));
    const steps = [...byStep.keys()].sort((a, b) => a - b).slice(-HEALTH_TABLE_STEPS);
    const v = (step: number, name: string) => byStep.get(step)!.get(name);
    const rows = steps.map((step) => {
      const req = v(step, "sandbox/requests");
      const failed = (["sandbox/infra_errors", "sandbox/overloaded", "sandbox/timeouts"] as const).map((n) => v(step, n));
      const failures = failed.every((x) => x === undefined) ? v(step, "sandbox/failures") : failed.reduce<number>((t, x) => t + (x ?? 0), 0);
      const rate = req === undefined || failures === undefined ? "—" : req === 0 ? (failures === 0 ? "0%" : "—") : `${formatValue((100 * failures) / req)}%`;
      const show = (x: number | undefined) => (x === undefined ? "—" : formatValue(x));
      return [String(step), show(req), ...failed.map(show), rate, show(v(step, "sandbox/latency_p50_ms")), show(v(step, "sandbox/latency_p99_ms"))];
    });
    const all = [...byStep.keys()].length;
    return `<h3>${escapeHtml(r.run)}</h3>
${table(["step", "requests", "infra errors", "overload answers", "timeouts", "failed", "p50 ms", "p99 ms"], rows, new Set([0, 1, 2, 3, 4, 5, 6, 7]))}
<p class="muted">${escapeHtml(`${steps.length === all ? `all ${all}` : `the last ${steps.length} of ${all}`} steps; failed = (infrastructure errors + overload answers + timeouts) / requests`)}</p>
${panels.length === 0 ? "" : `<figure>${chart(`${r.run}: sandbox`, r.run, panels)}</figure>`}`;
  });
  return `<section id="sandbox">\n${head}\n${parts.join("\n")}\n</section>`;
}

const flatLines = (ls: readonly CostLine[], depth = 0): { line: CostLine; depth: number }[] => ls.flatMap((l) => [{ line: l, depth }, ...flatLines(l.children ?? [], depth + 1)]);

/** Whether any line of the estimate has a price: without one, the cost is unknown (never ¥0). */
function hasRates(report: CostReport): boolean {
  return flatLines(report.lines).some(({ line }) => line.cost !== undefined);
}

function costSection(d: RunPageData): string {
  const title = "<h2>Cost so far against the estimate</h2>";
  if (!d.cost.ok) return `<section id="cost">\n${title}\n${unknown(`cost unavailable: ${d.cost.why}`)}\n</section>`;
  const { report, estimateFrom }: RunPageCost = d.cost.value;
  const from = estimateFrom === "recorded" ? `estimate recorded at deploy (${report.generatedAt.slice(0, 10)})` : "estimate made again from the recorded recipe and prices (the record predates recorded estimates)";
  const rated = hasRates(report);
  const actual = report.actual?.total;
  const summary = !rated
    ? unknown("no rates: cost unknown. No line of the estimate has a price; add the rates to the recipe's prices: (or rlpipe cost --rates FILE) to price the next deploy")
    : `<div class="cards">
<div class="card"><div class="k">estimate, low – expected – high</div><div class="v">${escapeHtml(formatMoneyTriple(report.totals.CNY, "CNY"))}</div><div class="muted">${escapeHtml(formatMoneyTriple(report.totals.USD, "USD"))}${report.totals.incomplete ? " · some lines need a rate" : ""}</div></div>
<div class="card"><div class="k">so far (measured lines)</div><div class="v">${escapeHtml(actual === undefined ? "unknown" : formatMoney(actual.CNY, "CNY"))}</div><div class="muted">${escapeHtml(actual === undefined ? "no measured line has a rate" : formatMoney(actual.USD, "USD"))}</div></div>
</div>${actual === undefined ? "" : gauge(actual.CNY, report.totals.CNY)}`;
  const rows = actualRows(report);
  const lines = flatLines(report.lines);
  const td = (text: string, cls?: string) => `<td${cls === undefined ? "" : ` class="${cls}"`}>${escapeHtml(text)}</td>`;
  // Where each actual figure comes from goes under its line's name: the table stays as wide as the page.
  const body = rows.map((r, i) => {
    const { line, depth } = lines[i]!;
    const range = line.cost === undefined || line.currency === undefined ? r.estCost : formatMoneyTriple(line.cost, line.currency);
    return `<tr><td class="line" style="padding-left:${8 + 16 * depth}px">${escapeHtml(line.label)}<div class="src">${escapeHtml(r.source)}</div></td>${td(line.unit, "nowrap")}${td(formatQuantityRange(line.quantity), "num")}${td(r.quantity, "num")}${td(range, "num")}${td(r.cost, "num")}${td(r.diff, "num")}</tr>`;
  });
  const head = ["line (where the figure so far comes from)", "unit", "est. quantity", "so far", "est. cost (low – expected – high)", "cost so far", "difference"];
  return `<section id="cost">
${title}
<p class="muted">${escapeHtml(`${from}; actual costs use the rates the estimate used, and only measured lines count in the total so far`)}</p>
${summary}
<table class="cost">
<thead><tr>${head.map((h, i) => `<th${i >= 2 ? ' class="num"' : ""}>${escapeHtml(h)}</th>`).join("")}</tr></thead>
<tbody>
${body.join("\n")}
</tbody>
</table>
</section>`;
}

/** Where the cost so far sits in the estimate's low–high range (CSS boxes: no chart, no script). */
function gauge(actualCny: number, est: { low: number; expected: number; high: number }): string {
  const max = Math.max(est.high, actualCny) * 1.05;
  if (!(max > 0)) return "";
  const pct = (v: number) => `${((100 * v) / max).toFixed(2)}%`;
  return `<div class="gauge" aria-label="cost so far against the estimate's range">
<div class="band" style="left:${pct(est.low)};width:${pct(est.high - est.low)}"></div>
<div class="tick" style="left:${pct(est.expected)}"></div>
<div class="bar" style="width:${pct(actualCny)}"></div>
</div>
<p class="muted legend"><span class="sw bar"></span> so far ${escapeHtml(formatMoney(actualCny, "CNY"))} <span class="sw band"></span> estimate low–high <span class="sw tick"></span> expected</p>`;
}

function checkpointsSection(d: RunPageData): string {
  const head = "<h2>Checkpoints</h2>";
  if (!d.outputs.ok) return `<section id="checkpoints">\n${head}\n${unknown(`unknown: the store could not be read (${d.outputs.why})`)}\n</section>`;
  const rows = d.outputs.value.runs.flatMap((r) => r.checkpoints.map((c) => [r.run, String(c.step), String(c.files), formatBytes(c.bytes), formatTime(c.committedAt)]));
  if (rows.length === 0) return `<section id="checkpoints">\n${head}\n${unknown(`no committed checkpoints in ${d.outputs.value.store} yet`)}\n</section>`;
  return `<section id="checkpoints">\n${head}\n${table(["run", "step", "files", "size", "committed at"], rows, new Set([1, 2, 3]))}\n</section>`;
}

function logsSection(d: RunPageData): string {
  const head = "<h2>Last log lines</h2>";
  if (!d.logs.ok) return `<section id="logs">\n${head}\n${unknown(`log unavailable: ${d.logs.why}`)}\n</section>`;
  const { lines, totalLines } = d.logs.value;
  if (lines.length === 0) return `<section id="logs">\n${head}\n${unknown("the log is empty so far")}\n</section>`;
  const note = lines.length === totalLines ? `all ${totalLines} lines` : `the last ${lines.length} of ${totalLines} lines`;
  return `<section id="logs">\n${head}\n<p class="muted">${escapeHtml(`${note}, secrets redacted; rlpipe logs ${d.run} prints all of it`)}</p>\n<pre class="log">${escapeHtml(lines.join("\n"))}</pre>\n</section>`;
}

/** The commands to follow, stop or restore the run, with what each does. */
export function runCommands(d: RunPageData): { readonly what: string; readonly command: string }[] {
  const out: { what: string; command: string }[] = [
    { what: "follow its log to the end", command: `rlpipe logs ${d.run} --follow` },
    { what: "its phase now", command: `rlpipe status ${d.run}` },
  ];
  const phase = pagePhase(d);
  if (!(phase === "SUCCEEDED" || phase === "FAILED" || phase === "STOPPED")) out.push({ what: "stop it", command: `rlpipe stop ${d.run}` });
  if (d.outputs.ok) {
    for (const r of d.outputs.value.runs) {
      const last = r.checkpoints[r.checkpoints.length - 1];
      if (last !== undefined) out.push({ what: `restore ${r.run}'s newest checkpoint (into an empty directory)`, command: `rlpipe restore ${r.run} ./${r.run}-ckpt --step ${last.step}` });
    }
    const plotted = d.outputs.value.runs.filter((r) => r.series.length > 0).map((r) => r.run);
    if (plotted.length > 0) out.push({ what: "the curves as an image", command: `rlpipe metrics ${plotted.join(" ")} --plot ${d.run}.png` });
  }
  out.push({ what: "the cost per line", command: `rlpipe cost --run ${d.run}` }, { what: "this page again", command: `rlpipe report ${d.run}` });
  return out;
}

function commandsSection(d: RunPageData): string {
  const rows = runCommands(d).map((c) => `<tr><td>${escapeHtml(c.what)}</td><td><code>${escapeHtml(c.command)}</code></td></tr>`).join("\n");
  return `<section id="commands">
<h2>Commands</h2>
<p class="muted">Run them where the run was deployed from: its run record there names the provider and the store.</p>
<table class="commands">\n<tbody>\n${rows}\n</tbody>\n</table>
</section>`;
}

const CSS = `
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; --accent:#1f77b4; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; font: 14px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 22px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 17px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 16px 0 8px; }
.muted { color: var(--muted); font-weight: normal; }
.unknown { color: #7c4a03; background: #fff8e5; border: 1px solid #f0d58c; border-radius: 6px; padding: 8px 12px; margin: 6px 0; }
span.unknown { display: inline-block; padding: 2px 8px; }
.phase { display: inline-block; font-weight: bold; font-size: 13px; padding: 2px 10px; border-radius: 12px; letter-spacing: .03em; }
.phase.live { background: #ddf4ff; color: #0550ae; } .phase.ok { background: #dafbe1; color: #116329; }
.phase.bad { background: #ffebe9; color: #a40e26; } .phase.wait { background: #fff8c5; color: #7d4e00; }
.phase.off { background: #eaeef2; color: #424a53; }
header .phase { font-size: 15px; vertical-align: middle; margin-left: 8px; }
.two { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
.phaseline { margin: 0 0 8px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; margin: 0; }
dt { color: var(--muted); } dd { margin: 0; word-break: break-word; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 10px; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--soft); font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.nowrap { white-space: nowrap; }
td .src { font-size: 11.5px; color: var(--muted); margin-top: 2px; }
table.cost td.line { min-width: 240px; }
figure { margin: 10px 0 18px; }
.cards { display: grid; grid-template-columns: repeat(2, 1fr); gap: 12px; margin: 10px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.card .k { color: var(--muted); font-size: 12px; } .card .v { font-size: 20px; font-weight: bold; }
.gauge { position: relative; height: 22px; background: var(--soft); border: 1px solid var(--line); border-radius: 4px; margin: 12px 0 4px; }
.gauge .band, .sw.band { position: absolute; top: 0; bottom: 0; background: #c6dbef; }
.gauge .bar, .sw.bar { position: absolute; top: 6px; height: 10px; left: 0; background: var(--accent); }
.gauge .tick, .sw.tick { position: absolute; top: -3px; bottom: -3px; width: 2px; background: #08306b; }
.legend .sw { position: relative; display: inline-block; top: 1px; width: 14px; height: 10px; margin: 0 4px 0 10px; }
.legend .sw.tick { width: 2px; height: 14px; top: 3px; }
pre.log { background: #0d1117; color: #e6edf3; padding: 10px 12px; border-radius: 6px; font-size: 12px; line-height: 1.4; white-space: pre-wrap; word-break: break-all; max-height: none; }
code { font-family: "DejaVu Sans Mono", Consolas, monospace; font-size: 12.5px; background: var(--soft); padding: 1px 5px; border-radius: 4px; }
table.commands td:first-child { color: var(--muted); width: 40%; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; }
@media print { pre.log { background: #fff; color: #000; border: 1px solid var(--line); } }
@media (max-width: 760px) { .two, .cards { grid-template-columns: 1fr; } }
`;

/** The page. Deterministic: everything time-dependent comes from `d.generatedAt`. */
export function runPageHtml(d: RunPageData): string {
  const phase = pagePhase(d);
  const latestReward = d.outputs.ok
    ? d.outputs.value.runs.flatMap((r) => latestValues(trainingSeries(r)).filter((l) => l.label.startsWith("reward")).map((l) => ({ run: r.run, ...l })))
    : [];
  const sub = [`${d.recipe.name} on ${d.provider}`, ...latestReward.map((l) => `latest reward ${formatValue(l.value)} at step ${l.step} (${l.run})`)];
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`${d.run}: ${phase}`)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<header>
<h1>${escapeHtml(d.run)} ${phaseBadge(phase)}</h1>
<p class="muted">${escapeHtml(sub.join(" · "))}</p>
</header>
${runSection(d)}
${curvesSection(d)}
${healthSection(d)}
${costSection(d)}
${checkpointsSection(d)}
${logsSection(d)}
${commandsSection(d)}
<footer>${escapeHtml(`${d.writtenBy === "job" ? "Written into the run's store by the job's sync sidecar" : `rlpipe report ${d.run}`}, gathered ${formatTime(d.generatedAt)}. One self-contained page: no script, nothing fetched.`)}</footer>
</main>
</body>
</html>
`;
}
