// The cost report as ONE self-contained HTML file: inline CSS, inline SVG charts, no script, no font, image or
// stylesheet from anywhere else, so it opens offline, prints, and can be attached to an issue as is. The same
// content as the terminal table (reportView), plus three charts.
import type { CostReport, Currency } from "../types.js";
import { COMPONENT_COLORS, breakdownChart, chartsToDraw, cumulativeChart, inlineSvg, providersChart } from "./charts.js";
import { formatQuantity } from "./format.js";
import { HOW_TO_SUPPLY, type ReportView, reportView } from "./view.js";

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

const CSS = `
:root { --ink:#1f2328; --muted:#59636e; --line:#d1d9e0; --soft:#f6f8fa; --accent:#1f77b4; --warn:#9a3412; --warnbg:#fff7ed; --ok:#116329; --okbg:#dafbe1; --bad:#a40e26; --badbg:#ffebe9; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff; font: 14px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 28px 32px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.mode { color: var(--muted); margin: 0 0 16px; }
.cards { display: grid; grid-template-columns: 1.1fr 1fr 1.5fr 0.9fr; gap: 12px; margin: 16px 0; }
.card { border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; background: var(--soft); }
.card .k { color: var(--muted); font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card .v { font-size: 22px; font-weight: bold; font-variant-numeric: tabular-nums; }
.card .s { color: var(--muted); font-size: 12px; }
.card .v2 { font-size: 15px; font-weight: bold; color: var(--muted); font-variant-numeric: tabular-nums; }
.card .v.name { font-size: 17px; }
.card .mono { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12px; color: var(--ink); overflow-wrap: anywhere; }
.card.flagged { border-color: #d97706; background: var(--warnbg); }
.lead { font-size: 16px; margin: 4px 0 14px; }
.flag { border-left: 4px solid var(--bad); background: var(--badbg); padding: 8px 12px; margin: 8px 0; font-weight: bold; }
.cta { border: 2px solid #d97706; border-radius: 8px; background: var(--warnbg); padding: 4px 18px 14px; margin: 20px 0; }
.cta h2 { border-bottom: none; margin-top: 14px; }
pre.snippet { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; font: 12.5px/1.5 "DejaVu Sans Mono", Menlo, Consolas, monospace; white-space: pre-wrap; overflow-wrap: anywhere; margin: 8px 0; }
code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; background: var(--soft); padding: 0 3px; border-radius: 3px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; font-weight: bold; }
.badge.within { color: var(--ok); background: var(--okbg); } .badge.over { color: var(--bad); background: var(--badbg); }
.badge.at-risk, .badge.unknown { color: var(--warn); background: var(--warnbg); }
.note { border-left: 4px solid #d97706; background: var(--warnbg); padding: 8px 12px; margin: 10px 0; }
.charts { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 6px; background: #fff; break-inside: avoid; }
figure.wide { grid-column: 1 / -1; }
table { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 5px 6px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--soft); font-size: 12px; text-transform: uppercase; letter-spacing: .03em; color: var(--muted); white-space: nowrap; }
td.num { text-align: right; white-space: nowrap; } td.money, td.nowrap { white-space: nowrap; }
tr.chosen td { background: #eaf3fb; font-weight: bold; }
tr.total td { font-weight: bold; border-top: 2px solid var(--ink); background: var(--soft); }
td.tree { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; white-space: pre; color: var(--muted); padding-right: 0; }
td.need { color: var(--warn); font-weight: bold; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 6px; vertical-align: baseline; }
ul { margin: 6px 0; padding-left: 22px; } li { margin: 2px 0; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; }
@media (max-width: 900px) { .cards { grid-template-columns: 1fr 1fr; } .charts { grid-template-columns: 1fr; } }
@media print { main { max-width: none; padding: 0; } .charts { grid-template-columns: 1fr 1fr; } h2 { break-after: avoid; } tr, figure { break-inside: avoid; } @page { margin: 14mm; } }
`;

function row(cells: readonly string[], cls = ""): string {
  return `<tr${cls === "" ? "" : ` class="${cls}"`}>${cells.join("")}</tr>`;
}
const td = (text: string, cls = "") => `<td${cls === "" ? "" : ` class="${cls}"`}>${escapeHtml(text)}</td>`;
const th = (text: string) => `<th>${escapeHtml(text)}</th>`;

function list(items: readonly string[]): string {
  return items.length === 0 ? "<p>none</p>" : `<ul>${items.map((i) => `<li>${escapeHtml(i)}</li>`).join("")}</ul>`;
}

const card = (k: string, body: string, cls = "") => `<div class="card${cls === "" ? "" : ` ${cls}`}"><div class="k">${escapeHtml(k)}</div>${body}</div>`;
const div = (cls: string, text: string) => `<div class="${cls}">${escapeHtml(text)}</div>`;

/** Four cards: the expected total (CNY, then USD), how long the run goes, what runs it, the budget. Each a few short lines. */
function cards(v: ReportView): string {
  const budget = v.budget === undefined
    ? `<div class="v">—</div><div class="s">no cost.budget in the recipe</div>`
    : `<div class="v"><span class="badge ${v.budget.status}">${escapeHtml(v.budget.status.toUpperCase())}</span></div><div class="s">${escapeHtml(v.budgetText!.replace(/\s+Status:.*$/, ""))}</div>`;
  const total = v.nothingPriced
    ? `${div("v", "unknown")}${div("s", `no line has a rate: ${v.ratesNeeded.length} price${v.ratesNeeded.length === 1 ? "" : "s"} to add (below)`)}`
    : `${div("v", v.total.expected.CNY)}${div("s", v.total.range.CNY)}${div("v2", v.total.expected.USD)}${div("s", v.total.range.USD)}`;
  const rl = v.runLength;
  const length = rl === undefined
    ? `${div("v", `${formatQuantity(v.steps.total)} steps`)}${div("s", v.run)}`
    : `${div("v", rl.headline)}${div("s", rl.headline.endsWith("days") ? `${rl.headlineRange} (${rl.expectedHours})` : rl.headlineRange)}${v.steps.stages.length === 0 && v.steps.total === 0 ? "" : div("s", v.steps.text)}${rl.flags.length === 0 ? "" : div("s", `flagged: ${rl.flags.length === 1 ? "see below" : `${rl.flags.length} flags below`}`)}`;
  const c = v.candidates.find((x) => x.chosen);
  const chosen = c === undefined
    ? div("v name", v.target)
    : [
      div("v name", [c.provider, c.region].filter((x) => x !== "—").join(" · ")),
      ...(c.flavor === "—" ? [] : [div("mono", c.flavor)]),
      div("s", `${c.accelerators === "—" ? "" : `${c.accelerators} × `}${c.nodes} node${c.nodes === "1" ? "" : "s"}`),
    ].join("");
  return `<div class="cards">
${card(`Expected total${v.total.incomplete ? ", incomplete" : ""}`, total)}
${card("Run length", length, (rl?.flags.length ?? 0) > 0 ? "flagged" : "")}
${card("Chosen", chosen)}
${card("Budget", budget)}
</div>`;
}

/** The run's length: days and hours, each stage's steps with where the count comes from (its flags are at the top). */
function runLengthSection(v: ReportView): string {
  const rl = v.runLength;
  // The source column only when the report says where its counts come from (runLength does).
  const sourced = v.steps.stages.some((s) => s.source !== undefined);
  const stages = v.steps.stages.map((s) => row([td(s.stage), td(s.steps, "num"), td(s.secondsPerStep ?? "—", "num"), td(s.hours ?? "—", "num"), ...(sourced ? [td(s.source ?? "—")] : [])]));
  const head = rl === undefined ? "" : `<p><strong>${escapeHtml(rl.headline)}</strong> ${escapeHtml(`wall-clock (${rl.headlineRange}${rl.headline.endsWith("days") ? `; ${rl.hours}` : ""})${rl.derived ? ", the stages' hours summed" : ""}${rl.maxDays === undefined ? "" : `; runs beyond ${formatQuantity(rl.maxDays)} days are flagged`}.`)}</p>`;
  return `<h2>Run length</h2>
${head}
${stages.length === 0 ? "" : `<table>
<thead>${row(["Stage", "Steps", "Seconds per step", "Hours", ...(sourced ? ["Where the step count comes from"] : [])].map(th))}</thead>
<tbody>
${stages.join("\n")}
</tbody>
</table>`}`;
}

/** Without a single rate there is nothing to chart: one call to action with the prices: block for this recipe. */
function callToAction(v: ReportView): string {
  const file = v.recipe.file ?? `${v.recipe.name}.yaml`;
  return `<section class="cta" id="add-prices">
<h2>${escapeHtml(`Add ${v.ratesNeeded.length === 1 ? "a price" : `${v.ratesNeeded.length} prices`} to see what this run costs`)}</h2>
<p>${escapeHtml("No line of this estimate has a rate, so there is no total and nothing to chart. Paste this under ")}<code>prices:</code>${escapeHtml(` in ${file} (or save it as a file and pass `)}<code>--rates FILE</code>${escapeHtml("), replace each ")}<code>&lt;price&gt;</code>${escapeHtml(" with your rate, and run ")}<code>${escapeHtml(`rlpipe cost ${file} --format html`)}</code>${escapeHtml(" again.")}</p>
<pre class="snippet">${escapeHtml(v.pricesSnippet ?? "")}</pre>
</section>`;
}

function chartsSection(report: CostReport, v: ReportView): string {
  const draw = chartsToDraw(report, v);
  const figures = [
    ...(draw.breakdown ? [`<figure>${inlineSvg(breakdownChart(v), "cost breakdown of the chosen candidate")}</figure>`] : []),
    ...(draw.providers ? [`<figure>${inlineSvg(providersChart(v), "candidates side by side")}</figure>`] : []),
    ...(draw.cumulative ? [`<figure class="wide">${inlineSvg(cumulativeChart(report, v), "cumulative cost over the steps")}</figure>`] : []),
  ];
  if (figures.length === 0) return "";
  // A lone half-width chart takes the row.
  if (figures.length === 1 || (figures.length === 2 && draw.cumulative)) figures[0] = figures[0]!.replace(/^<figure>/, '<figure class="wide">');
  return `<h2>Charts</h2>\n<div class="charts">\n${figures.join("\n")}\n</div>`;
}

export function renderHtml(report: CostReport, v: ReportView): string {
  const candidates = v.candidates.map((c) => row([
    td(c.provider), td(c.region), td(c.flavor), td(c.accelerators), td(c.nodes, "num"), td(c.unitPrice, c.unitPrice === "rate needed" ? "need" : "money"),
    td(c.hours, "num"), td(c.costCNY, c.costCNY === "rate needed" ? "need" : "money"), td(c.costUSD, c.costUSD === "rate needed" ? "need" : "money"), td(c.chosen ? "✔" : c.note === "" ? "" : `(${c.note})`),
  ], c.chosen ? "chosen" : ""));
  const breakdown = v.breakdown.map((b) => row([
    `<td class="tree">${escapeHtml(b.prefix)}</td>`,
    `<td>${b.depth === 0 ? `<span class="swatch" style="background:${COMPONENT_COLORS[b.component] ?? "#7f7f7f"}"></span>` : ""}${escapeHtml(b.label)}</td>`,
    td(b.quantity, "num"), td(b.unit), td(b.unitPrice, b.rateNeeded ? "need" : "money"), td(b.cost, b.rateNeeded ? "need" : "money"), td(b.basis),
  ]));
  const total = (label: string, value: string) => row([`<td class="tree"></td>`, td(label), td(""), td(""), td(""), td(value, "money"), td("")], "total");
  const sources = v.sources.map((s) => row([td(s.id), td(s.price, "money"), td(s.region), td(s.confidence), td(s.date, "nowrap"), td(s.source)]));
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`Cost estimate: ${v.recipe.name}`)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
<h1>${escapeHtml(`Cost estimate: ${v.recipe.name}`)}</h1>
<p class="mode">${escapeHtml(v.title)} (${escapeHtml(v.mode)})</p>
${cards(v)}
<p class="lead">${escapeHtml(v.dominant)}</p>
${(v.runLength?.flags ?? []).map((f) => `<p class="flag">${escapeHtml(f)}</p>`).join("\n")}
<p><strong>Target:</strong> ${escapeHtml(v.target)}${v.budgetText === undefined ? "" : ` &nbsp; <strong>${escapeHtml(v.budgetText.replace(/\s{2,}/g, " · "))}</strong>`}<br>
<strong>Run:</strong> ${escapeHtml(runText(report, v))}<br>
<strong>Exchange rate:</strong> ${escapeHtml(v.fx)}${v.capacity.map((c) => `<br>\n<strong>Sandbox capacity:</strong> ${escapeHtml(c)}`).join("")}</p>
${v.warnings.map((w) => `<p class="note">${escapeHtml(w)}</p>`).join("\n")}
${v.budget !== undefined && v.budget.status !== "within" ? `<p class="note"><strong>Budget:</strong> ${escapeHtml(v.budget.message)}</p>` : ""}
${v.nothingPriced ? callToAction(v) : `${v.total.incomplete ? `<p class="note"><strong>Incomplete:</strong> ${escapeHtml(v.total.note)}.</p>\n` : ""}${chartsSection(report, v)}`}
${runLengthSection(v)}
<h2>Candidates considered (${v.candidates.length})</h2>
<table>
<thead>${row(["Provider", "Region", "Flavor/instance", "Accel", "Nodes", "Unit price", "Est. hours", "Est. cost (CNY)", "Est. cost (USD)", "Chosen"].map(th))}</thead>
<tbody>
${candidates.join("\n")}
</tbody>
</table>
<h2>${escapeHtml(`Cost breakdown (chosen: ${v.target})`)}</h2>
<table>
<thead>${row([`<th></th>`, th("Line"), th("Qty (low–high)"), th("Unit"), th("Unit price"), th("Cost (low – exp – high)"), th("Basis")])}</thead>
<tbody>
${breakdown.join("\n")}
${total("TOTAL (CNY)", v.total.CNY)}
${total("TOTAL (USD)", v.total.USD)}
</tbody>
</table>
<p>${escapeHtml(v.total.note)}</p>
${v.notes.length === 0 ? "" : `<p><strong>Notes:</strong></p>\n${list(v.notes)}`}
${v.ratesNeeded.length === 0 ? "" : `<h2>Rates needed (${v.ratesNeeded.length})</h2>\n${list(v.ratesNeeded)}\n<p>${escapeHtml(`To supply a rate: ${HOW_TO_SUPPLY}.`)}</p>${v.nothingPriced || v.pricesSnippet === undefined ? "" : `\n<p>${escapeHtml("For this recipe, under prices: (each <price> replaced):")}</p>\n<pre class="snippet">${escapeHtml(v.pricesSnippet)}</pre>`}`}
<h2>Assumptions</h2>
${list(v.assumptions)}
<p><strong>Excluded:</strong> ${escapeHtml(v.exclusions.length === 0 ? "nothing listed" : v.exclusions.join("; "))}</p>
<h2>Price sources</h2>
<table>
<thead>${row(["Id", "Price", "Region", "Confidence", "Read", "Source"].map(th))}</thead>
<tbody>
${sources.join("\n")}
</tbody>
</table>
<footer>${escapeHtml(`Generated ${v.generatedAt} by rlpipe cost for ${v.recipe.file ?? v.recipe.name} (recipe sha256 ${v.recipe.hash.slice(0, 12)}). Estimates, not quotes: every figure traces to a price source, a user rate or an assumption above.`)}</footer>
</main>
</body>
</html>
`;
}

/** The run line: all stages' steps when there are several, then the stage the report's steps and s/step describe. */
function runText(report: CostReport, v: ReportView): string {
  if (v.steps.stages.length <= 1) return v.run;
  const main = v.steps.stages.find((s) => s.expected === Math.round(report.steps.expected));
  return `${v.steps.text}; ${main === undefined ? "" : `${main.stage}: `}${v.run}`;
}

export function costHtml(report: CostReport, opts: { budget?: { cap: number; currency: Currency } } = {}): string {
  return renderHtml(report, reportView(report, opts));
}
