// The pages `rlpipe dashboard` serves: the table of every run (one row each, core/report/dashboard-row.ts) and a
// run's own page (run-page.ts) with a way back to the table. Pages of live runs reload themselves with a meta
// refresh: no script anywhere, so every page reads the same with scripts off. Pure: the same rows, the same bytes.
import { formatMoney } from "../cost/render/format.js";
import type { Range } from "../cost/types.js";
import { type DashboardRow, ERROR_RATE_STEPS } from "./dashboard-row.js";
import { escapeHtml, formatValue } from "./run-page.js";

export interface DashboardView {
  readonly rows: readonly DashboardRow[];
  /** Damaged run records, a state store that could not be listed: said above the table (already redacted). */
  readonly problems: readonly string[];
  /** Where the runs come from: "this directory", each --store's run records. */
  readonly sources: readonly string[];
  readonly generatedAt: string;
  /** Seconds between reloads while a run is live. */
  readonly refreshSeconds: number;
}

const PHASE_CLASS: Readonly<Record<string, string>> = {
  QUEUED: "wait", STARTING: "wait", RUNNING: "live", STOPPING: "wait", SUCCEEDED: "ok", FAILED: "bad", STOPPED: "off", UNKNOWN: "off",
};

const badge = (phase: string) => `<span class="phase ${PHASE_CLASS[phase] ?? "off"}">${escapeHtml(phase)}</span>`;

/** The path of a run's page on the dashboard (run names are [a-z0-9-]: nothing to encode, encoded anyway). */
export const runPath = (run: string) => `/runs/${encodeURIComponent(run)}`;

const refreshMeta = (seconds: number) => `<meta http-equiv="refresh" content="${seconds}">`;

const formatTime = (iso: string) => {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : `${new Date(t).toISOString().slice(0, 16).replace("T", " ")} UTC`;
};

function progressCell(r: DashboardRow): string {
  const { step, total, stage } = r.progress;
  if (r.storeUnavailable !== undefined) return `<td class="na" title="${escapeHtml(r.storeUnavailable)}">store not read</td>`;
  if (step === undefined) return `<td class="na">${escapeHtml(total === undefined ? "no metrics yet" : `0 of ${total}`)}</td>`;
  if (total === undefined || total <= 0) return `<td class="num">${escapeHtml(`step ${step}`)}</td>`;
  const pct = Math.max(0, Math.min(100, (100 * step) / total));
  return `<td class="num" title="${escapeHtml(stage === undefined ? "" : `stage ${stage}`)}">${escapeHtml(`${step} of ${total}`)}<div class="bar"><div style="width:${pct.toFixed(1)}%"></div></div></td>`;
}

function sandboxCell(r: DashboardRow): string {
  const s = r.sandbox;
  if (s === undefined) return `<td class="na">—</td>`;
  const rate = s.requests === 0 ? (s.infraErrors === 0 ? "0%" : "—") : `${formatValue((100 * s.infraErrors) / s.requests)}%`;
  const cls = s.infraErrors > 0 ? "num warn" : "num";
  return `<td class="${cls}">${escapeHtml(rate)}<div class="sub">${escapeHtml(`${s.infraErrors} of ${s.requests} requests`)}</div></td>`;
}

const moneyRange = (r: Range) => `${formatMoney(r.low, "CNY")} – ${formatMoney(r.high, "CNY")}`;

function costCells(r: DashboardRow): string {
  const c = r.cost;
  if (c.estimate === undefined) return `<td class="na" colspan="2">${escapeHtml(c.why ?? "unknown")}</td>`;
  const soFar = c.soFar === undefined ? `<td class="na">unknown</td>` : `<td class="num">${escapeHtml(formatMoney(c.soFar, "CNY"))}</td>`;
  return `${soFar}<td class="num">${escapeHtml(formatMoney(c.estimate.expected, "CNY"))}<div class="sub">${escapeHtml(moneyRange(c.estimate))}</div></td>`;
}

function rowHtml(r: DashboardRow): string {
  const phase = r.statusUnavailable === undefined
    ? badge(r.phase)
    : `${badge(r.phase)}<div class="sub unavail" title="${escapeHtml(r.statusUnavailable)}">status unavailable${r.phase === "UNKNOWN" ? "" : " (last seen)"}</div>`;
  const reward = r.latestReward === undefined ? `<td class="na">—</td>` : `<td class="num">${escapeHtml(formatValue(r.latestReward.value))}<div class="sub">${escapeHtml(`step ${r.latestReward.step}`)}</div></td>`;
  return `<tr data-run="${escapeHtml(r.run)}" data-phase="${escapeHtml(r.phase)}">`
    + `<td class="run"><a href="${escapeHtml(runPath(r.run))}">${escapeHtml(r.run)}</a><div class="sub">${escapeHtml(r.recipe)}</div></td>`
    + `<td>${escapeHtml(r.provider)}${r.region === undefined ? "" : `<div class="sub">${escapeHtml(r.region)}</div>`}</td>`
    + `<td>${phase}</td>${progressCell(r)}${reward}${sandboxCell(r)}${costCells(r)}`
    + `<td class="nowrap">${escapeHtml(formatTime(r.submittedAt))}</td></tr>`;
}

const CSS = `
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; --accent:#1f77b4; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; font: 14px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 22px; margin: 0 0 4px; }
.muted, .sub { color: var(--muted); }
.sub { font-size: 11.5px; margin-top: 2px; white-space: nowrap; }
.unknown { color: #7c4a03; background: #fff8e5; border: 1px solid #f0d58c; border-radius: 6px; padding: 8px 12px; margin: 6px 0; }
table { border-collapse: collapse; width: 100%; margin: 14px 0 10px; font-size: 13px; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--soft); font-weight: 600; vertical-align: bottom; }
th.num, td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.na { color: var(--muted); font-style: italic; white-space: nowrap; }
td.warn { color: #a40e26; font-weight: 600; }
td.run { white-space: nowrap; }
td.run a { font-weight: 600; color: #0550ae; text-decoration: none; }
td.run a:hover { text-decoration: underline; }
.nowrap { white-space: nowrap; }
.unavail { color: #7c4a03; }
.phase { display: inline-block; font-weight: bold; font-size: 12px; padding: 1px 9px; border-radius: 12px; letter-spacing: .03em; }
.phase.live { background: #ddf4ff; color: #0550ae; } .phase.ok { background: #dafbe1; color: #116329; }
.phase.bad { background: #ffebe9; color: #a40e26; } .phase.wait { background: #fff8c5; color: #7d4e00; }
.phase.off { background: #eaeef2; color: #424a53; }
.bar { height: 5px; background: var(--soft); border: 1px solid var(--line); border-radius: 3px; margin-top: 4px; min-width: 80px; }
.bar div { height: 100%; background: var(--accent); }
footer { margin-top: 20px; color: var(--muted); font-size: 12px; }
`;

/** How often the table looks for new runs when none is live (a run deployed after it was opened must appear). */
export const idleRefreshSeconds = (refreshSeconds: number): number => Math.max(30, refreshSeconds * 3);

/** The table of every run. It reloads every refreshSeconds while any run is live (or could not be asked), and
 * more slowly when none is, so a run deployed meanwhile appears. */
export function dashboardHtml(v: DashboardView): string {
  const live = v.rows.filter((r) => r.live).length;
  const every = live > 0 ? v.refreshSeconds : idleRefreshSeconds(v.refreshSeconds);
  const head = ["run (recipe)", "provider", "phase", "progress (step)", "latest reward", `sandbox infra errors, last ${ERROR_RATE_STEPS} steps`, "cost so far", "estimate (low – high)", "deployed"];
  const numeric = new Set([3, 4, 5, 6, 7]);
  const table = v.rows.length === 0
    ? `<p class="unknown">${escapeHtml("no runs yet: rlpipe deploy <recipe> records each run it creates here (.rlpipe/runs/)")}</p>`
    : `<table>
<thead><tr>${head.map((h, i) => `<th${numeric.has(i) ? ' class="num"' : ""}>${escapeHtml(h)}</th>`).join("")}</tr></thead>
<tbody>
${v.rows.map(rowHtml).join("\n")}
</tbody>
</table>`;
  const summary = `${v.rows.length} run${v.rows.length === 1 ? "" : "s"}, ${live} live · from ${v.sources.join(", ")}`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refreshMeta(every)}
<title>${escapeHtml(`rlpipe runs (${v.rows.length})`)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<h1>rlpipe runs</h1>
<p class="muted">${escapeHtml(summary)}</p>
${v.problems.map((p) => `<p class="unknown">${escapeHtml(p)}</p>`).join("\n")}
${table}
<footer>${escapeHtml(`gathered ${formatTime(v.generatedAt)}; ${live > 0 ? `reloads every ${every} s while a run is live` : `no run is live: looks for new runs every ${every} s`}. Each run's row opens its page (as rlpipe report writes it).`)}</footer>
</main>
</body>
</html>
`;
}

/**
 * A run's page (runPageHtml's output) as the dashboard serves it: a link back to the table and, while the run is
 * live, a meta refresh. The page's own text is escaped, so its first </head> and <main> are the page's.
 */
export function servedRunPage(html: string, opts: { readonly live: boolean; readonly refreshSeconds: number }): string {
  const back = `<nav style="margin:0 0 8px;font-size:13px"><a href="/">← all runs</a>${opts.live ? ` <span class="muted">· reloads every ${opts.refreshSeconds} s while the run is live</span>` : ""}</nav>`;
  return html.replace("</head>", `${opts.live ? `${refreshMeta(opts.refreshSeconds)}\n` : ""}</head>`).replace("<main>", `<main>\n${back}`);
}

/** A page that says what is wrong (an unknown run, a failure), escaped. */
export function messagePage(title: string, message: string): string {
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<nav style="font-size:13px"><a href="/">← all runs</a></nav>
<h1>${escapeHtml(title)}</h1>
<p class="unknown">${escapeHtml(message)}</p>
</main>
</body>
</html>
`;
}
