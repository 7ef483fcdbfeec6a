// The HTML cost report: one self-contained file (no script, nothing fetched: no URL but the SVG namespace), the
// same content as the table, three inline SVG charts (breakdown, candidates, cumulative cost with its low–high
// band), text escaped; the band's filled area in rlpipe's own rasterizer; and the page as a browser shows it —
// `rlpipe cost --format html` on a seed recipe rendered by headless Chromium (Debian package chromium, no network:
// no proxy, every host name unresolvable, a fresh profile) to a PNG that is not blank and has the charts' colours,
// with the totals, as the report formats them, in the rendered DOM.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { estimateCost } from "../core/cost/estimate.js";
import { parse as parseYaml } from "yaml";
import { ratesNeeded } from "../core/cost/budget-check.js";
import { breakdownChart, cumulativeChart, providersChart, wrapText } from "../core/cost/render/charts.js";
import { convertRange, formatMoney, formatMoneyTriple, formatQuantity } from "../core/cost/render/format.js";
import { costHtml } from "../core/cost/render/html.js";
import { dominantSentence, reportView } from "../core/cost/render/view.js";
import type { CostReport, RunLength } from "../core/cost/types.js";
import type { Scene } from "../core/plot/scene.js";
import { fillPolygon, rasterize } from "../core/plot/raster.js";
import { parseColor } from "../core/plot/scene.js";
import { sceneToSvg } from "../core/plot/svg.js";
import { fixtureReport } from "./fixtures/cost-report.js";
import { ROOT, SEED_RECIPES, loadSeed, recipePath } from "./helpers.js";
import { decodePng } from "./png-decode.js";
import { chromium } from "./chromium.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
const T = { timeout: 120_000 };

/**
 * Every URL in markup and every construct that fetches (the SVG namespace is a name, not a fetch). A price
 * source's address in the text is content, shown as plain text: not a link, nothing a browser loads.
 */
function externalReferences(html: string): string[] {
  const found: string[] = [];
  for (const tag of html.matchAll(/<[^>]*>/g)) {
    for (const m of tag[0].matchAll(/\b(?:https?|ftp|wss?):\/\/[^\s"'<>)]*/gi)) if (m[0] !== "http://www.w3.org/2000/svg") found.push(m[0]);
  }
  for (const m of (/<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? "").matchAll(/\b(?:https?|ftp):\/\/\S*/gi)) found.push(m[0]);
  for (const re of [/<script\b/gi, /<link\b/gi, /<iframe\b/gi, /<img\b/gi, /\bsrc\s*=/gi, /\bhref\s*=/gi, /url\(/gi, /@import/gi, /@font-face/gi]) {
    for (const m of html.matchAll(re)) found.push(m[0]);
  }
  return found;
}

describe("HTML cost report: one self-contained page", () => {
  const report = fixtureReport();
  const html = costHtml(report, { budget: { cap: 5000, currency: "CNY" } });

  it("has no script and fetches nothing: no URL in markup but the SVG namespace, no link, image, src, url() or @import", () => {
    assert.match(html, /^<!DOCTYPE html>\n<html lang="en">/);
    assert.deepEqual(externalReferences(html), []);
    assert.equal((html.match(/<style>/g) ?? []).length, 1, "the CSS is inline");
    assert.match(html, /@media print/);
  });

  it("the same content as the table: header, candidates with one chosen row, the tree, both totals, rates needed, assumptions, exclusions, sources", () => {
    const v = reportView(report, { budget: { cap: 5000, currency: "CNY" } });
    for (const text of [v.mode, v.fx, v.run, v.total.CNY, v.total.USD, v.total.note, ...v.ratesNeeded, ...v.assumptions, v.exclusions.join("; ")]) {
      assert.ok(html.includes(text.replace(/&/g, "&amp;")), `the page says ${text}`);
    }
    assert.equal((html.match(/<tr class="chosen">/g) ?? []).length, 1);
    assert.match(html, /<tr class="chosen"><td>modelarts<\/td><td>cn-southwest-2<\/td>/);
    assert.match(html, /<td class="tree">│ {2}├─ <\/td><td>vCPU time<\/td>/);
    assert.match(html, /<tr class="total"><td class="tree"><\/td><td>TOTAL \(CNY\)<\/td>.*<td class="money">¥4,594 – ¥5,626 – ¥6,657<\/td>/);
    assert.match(html, /<span class="badge over">OVER<\/span>/);
    for (const s of report.priceSources) assert.ok(html.includes(`<td>${s.id}</td>`) && html.includes(`<td class="nowrap">${s.dateRead}</td>`), s.id);
  });

  it("three inline SVG charts: the breakdown's lines, every candidate, the cumulative cost's expected line inside its band, the budget cap", () => {
    const svgs = [...html.matchAll(/<svg [^>]*aria-label="([^"]+)"/g)].map((m) => m[1]);
    assert.deepEqual(svgs, ["cost breakdown of the chosen candidate", "candidates side by side", "cumulative cost over the steps"]);
    const v = reportView(report, { budget: { cap: 5000, currency: "CNY" } });
    const breakdown = sceneToSvg(breakdownChart(v));
    for (const l of ["Training compute", "Checkpoints (OBS)", "rate needed"]) assert.ok(breakdown.includes(`>${l}<`), l);
    const providers = sceneToSvg(providersChart(v));
    assert.ok(providers.includes(">▸ modelarts ascend-snt9b-8<") && providers.includes(">ray<") && providers.includes(">rate needed<"));
    const cumulative = cumulativeChart(report, v);
    const band = cumulative.shapes.find((s) => s.kind === "area");
    assert.ok(band !== undefined && band.kind === "area");
    // The band runs along the high curve and back along the low one: above (smaller y) the expected line everywhere.
    const line = cumulative.shapes.find((s) => s.kind === "line" && s.role === "series" && s.width === 2);
    assert.ok(line !== undefined && line.kind === "line");
    const n = line.points.length;
    assert.equal(band.points.length, 2 * n);
    for (let i = 0; i < n; i++) {
      assert.ok(band.points[i]![1] <= line.points[i]![1] + 1e-9 && band.points[2 * n - 1 - i]![1] >= line.points[i]![1] - 1e-9, `step ${i}: low ≤ expected ≤ high`);
    }
    assert.ok(sceneToSvg(cumulative).includes(">budget cap ¥5,000<"));
    assert.match(sceneToSvg(cumulative), /<polygon points="[^"]+" fill="#1f77b4" fill-rule="evenodd" fill-opacity="0\.18"\/>/);
  });

  it("a prepaid (sunk) candidate: the candidates chart and table say prepaid, ¥0 marginal, not rate needed", () => {
    const prepaid = estimateCost(loadSeed("retool-qwen3-4b-tione-ags").recipe, { now: new Date("2026-11-24T10:00:00Z"), provider: "all" });
    const v = reportView(prepaid);
    const providers = sceneToSvg(providersChart(v));
    assert.ok(providers.includes(">prepaid (sunk): ¥0 marginal<"), providers);
    assert.ok(!providers.includes(">rate needed<"), "no candidate of this recipe lacks a rate");
    const page = costHtml(prepaid);
    const row = /<tr class="chosen">.*?<\/tr>/.exec(page)![0];
    assert.match(row, /<td>tione<\/td>.*<td class="money">prepaid \(sunk\)<\/td>.*<td class="money">¥0 \(sunk\)<\/td><td class="money">\$0 \(sunk\)<\/td>/);
    assert.ok(!row.includes("rate needed") && !row.includes('class="need"'), row);
  });

  it("the cumulative chart: the line ends at the run's end; storage kept and the export after the run are a separate, labelled step", () => {
    const r = estimateCost(loadSeed("retool-qwen3-4b-tione-ags").recipe, { now: new Date("2026-11-24T10:00:00Z") });
    const during = r.cumulative.filter((p) => p.afterRun !== true);
    const after = r.cumulative.find((p) => p.afterRun === true)!;
    const scene = cumulativeChart(r, reportView(r));
    const svg = sceneToSvg(scene);
    const texts = scene.shapes.filter((s) => s.kind === "text").map((s) => s.text);
    assert.ok(texts.includes("after the run"), texts.join(" | "));
    assert.ok(texts.some((t) => t.includes(formatMoney(after.cost.expected, "CNY"))), "the total, with what comes after the run");
    assert.ok(texts.some((t) => t.includes(formatMoney(during.at(-1)!.cost.expected, "CNY")) && t.includes("end of the run")), texts.join(" | "));
    // The expected line has one point per step of the run (and the origin), none for after the run.
    const line = scene.shapes.find((s) => s.kind === "line" && s.role === "series" && s.width === 2);
    assert.ok(line !== undefined && line.kind === "line");
    assert.equal(line.points.length, during.length + (during[0]!.step > 0 ? 1 : 0));
    // Not flat until the last step: by the middle of the run the line has risen off the axis.
    const ys = line.points.map((p) => p[1]);
    // (At 400 steps most of this run's storage is billed after it, so the rise during the run is a few pixels.)
    const mid = ys[Math.floor(ys.length / 2)]!;
    assert.ok(mid < ys[0]! - 1 && ys.at(-1)! < mid - 1, `the line rises through the run: ${ys.join(",")}`);
    assert.match(svg, /after the run/);
  });

  it("text from a recipe or a source is escaped, never markup", () => {
    const hostile: CostReport = { ...report, recipe: { ...report.recipe, name: "x<script>alert(1)</script>" }, assumptions: ["<b>bold</b> & more"] };
    const page = costHtml(hostile);
    assert.ok(!page.includes("<script>") && page.includes("x&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert.ok(page.includes("<li>&lt;b&gt;bold&lt;/b&gt; &amp; more</li>"));
    assert.deepEqual(externalReferences(page), []);
    // A source's address is text, not a link.
    const linked = costHtml({ ...report, priceSources: [{ ...report.priceSources[0]!, source: "https://example.com/prices" }] });
    assert.ok(linked.includes("<td>https://example.com/prices</td>"));
    assert.deepEqual(externalReferences(linked), []);
  });
});

// ------------------------------------------------------------------------------------------------ a page a person reads (issue 24 item 4)

const NOW = new Date("2026-11-24T10:00:00Z");
const seedReport = (name: string) => estimateCost(loadSeed(name).recipe, { now: NOW });
const texts = (scene: Scene) => scene.shapes.flatMap((s) => (s.kind === "text" ? [s.text] : []));
const range = (low: number, expected: number, high: number) => ({ low, expected, high });
/** The page above its first section heading: what a reader sees first. */
const top = (page: string) => page.slice(page.indexOf("<main>"), page.indexOf("<h2"));

describe("HTML cost report: without rates, one call to action instead of empty charts", () => {
  // ModelArts Ascend: no public price for the flavor, OBS storage or egress — no line of the estimate has a rate.
  const report = seedReport("qwen3-1.7b-code-toolcall");
  const page = costHtml(report);
  const needed = ratesNeeded(report.lines).map((n) => n.need);

  it("the seed has no priced line (the case under test)", () => {
    assert.ok(needed.length > 0 && report.totals.incomplete);
    assert.ok(!JSON.stringify(report.lines).includes('"cost"'), "no line has a cost");
  });

  it("no chart at all: no <svg>, no flat ¥0 curve, no 'step 2,990' the text does not say", () => {
    assert.equal((page.match(/<svg\b/g) ?? []).length, 0);
    assert.ok(!page.includes("<h2>Charts</h2>"));
    assert.doesNotMatch(page, /¥0 at step/);
  });

  it("one call to action with the prices: block for the recipe's own missing items: ids, <price> placeholders, units", () => {
    assert.equal((page.match(/<section class="cta"/g) ?? []).length, 1);
    assert.equal((page.match(/<pre class="snippet">/g) ?? []).length, 1, "the block once on the page");
    const v = reportView(report);
    assert.ok(v.pricesSnippet !== undefined);
    for (const n of needed) assert.ok(page.includes(`- item: ${n.item}`), n.item);
    // The block is YAML a rates file or a recipe's prices: reads: each entry an item with its unit, the value to fill in.
    const parsed = parseYaml(v.pricesSnippet) as { prices: { item: string; value: string; currency: string; unit: string }[] };
    assert.deepEqual(parsed.prices.map((e) => [e.item, e.unit]), needed.map((n) => [n.item, n.unit]));
    for (const e of parsed.prices) {
      assert.equal(e.value, "<price>", "a placeholder, never 0");
      assert.ok(e.currency === "CNY" || e.currency === "USD");
    }
    // The call to action comes before the tables, where the charts would be.
    assert.ok(page.indexOf('<section class="cta"') < page.indexOf("<h2>Candidates considered"));
  });

  it("the totals say unknown, not ¥0", () => {
    assert.match(top(page), /<div class="v">unknown<\/div>/);
    assert.doesNotMatch(top(page), /¥0\b/);
  });

  it("a partly priced report keeps the block in its rates-needed section, and only the charts with something to draw", () => {
    const tione = seedReport("retool-qwen3-4b-tione-ags");
    const p = costHtml(tione);
    for (const n of ratesNeeded(tione.lines)) assert.ok(p.includes(`- item: ${n.need.item}`), n.need.item);
    assert.ok(!p.includes('<section class="cta"'));
    assert.ok(p.indexOf('<pre class="snippet">') > p.indexOf("<h2>Rates needed"));
    assert.ok((p.match(/<svg\b/g) ?? []).length >= 2, "the breakdown and the cumulative cost are drawn");
  });
});

describe("HTML cost report: charts on a priced report", () => {
  it("keeps its three charts; the cumulative chart ends at the report's steps", () => {
    const report = fixtureReport();
    const html = costHtml(report);
    assert.equal((html.match(/<svg\b/g) ?? []).length, 3);
    const v = reportView(report);
    assert.equal(v.steps.total, report.steps.expected);
    assert.ok(texts(cumulativeChart(report, v)).some((t) => t.startsWith(formatMoney(report.cumulative.at(-1)!.cost.expected, "CNY")) && t.includes(`at step ${formatQuantity(report.steps.expected)}`)));
  });

  it("with runLength: the step axis is the runLength stages' sum, and the page's run line says the same count", () => {
    const h200 = seedReport("retool-qwen2.5-32b-h200");
    assert.ok(!h200.totals.incomplete, "every line of the H200 seed is priced");
    // Stages as verl will run them (a shorter RL stage than the series was made for): the series is laid on that count.
    const runLength: RunLength = {
      hours: range(100, 200, 400), days: range(100 / 24, 200 / 24, 400 / 24), maxDays: 60, flags: [],
      stages: [{ stage: "sft", steps: range(372, 372, 372), source: "⌊rows / batch⌋ × epochs" }, { stage: "rl", steps: range(400, 400, 400), source: "trainer.total_training_steps in the recipe" }],
    };
    const report: CostReport = { ...h200, runLength };
    const v = reportView(report);
    assert.equal(v.steps.total, 772);
    const scene = cumulativeChart(report, v);
    const line = scene.shapes.find((s) => s.kind === "line" && s.role === "series" && s.width === 2);
    assert.ok(line !== undefined && line.kind === "line");
    const end = texts(scene).find((t) => / at step /.test(t))!;
    assert.match(end, /at step 772$/);
    assert.ok(texts(scene).includes("sft 372") && texts(scene).includes("rl 400"), "each stage named on the axis");
    const page = costHtml(report);
    assert.match(page, /<strong>Run:<\/strong> 772 steps \(sft 372 \+ rl 400\)/);
    // Without runLength: the stages' steps, summed — the same count in the text and at the chart's end.
    const plain = reportView(h200);
    const stageSum = h200.stages!.reduce((t, s) => t + Math.round(s.steps?.expected ?? 0), 0);
    assert.equal(plain.steps.total, stageSum);
    assert.ok(texts(cumulativeChart(h200, plain)).some((t) => t.endsWith(`at step ${formatQuantity(stageSum)}`)));
    assert.ok(costHtml(h200).includes(`<strong>Run:</strong> ${formatQuantity(stageSum)} steps`));
  });

  it("no chart label is cut: no ellipsis in any chart of any seed or the fixture; long labels wrap into lines that fit", () => {
    const reports = [fixtureReport(), ...SEED_RECIPES.map(seedReport)];
    for (const r of reports) {
      const v = reportView(r);
      for (const scene of [breakdownChart(v), providersChart(v), cumulativeChart(r, v)]) {
        for (const t of texts(scene)) assert.ok(!t.includes("…"), `${r.recipe.name}: ${t}`);
      }
    }
    // A flavor id longer than the label column: split at its dots, nothing lost.
    const long = "▸ modelarts modelarts.bm.npu.arm.8snt9b2.d.with-a-much-longer-suffix";
    const lines = wrapText(long, 11, 188);
    assert.ok(lines.length >= 2);
    assert.equal(lines.join(" ").replace(/\s+/g, ""), long.replace(/\s+/g, ""));
    const report = fixtureReport();
    const withLong: CostReport = { ...report, candidates: report.candidates.map((c) => (c.chosen ? { ...c, flavor: "modelarts.bm.npu.arm.8snt9b2.d.with-a-much-longer-suffix" } : c)) };
    const shown = texts(providersChart(reportView(withLong)));
    assert.ok(shown.some((t) => t.startsWith("▸ modelarts")) && shown.some((t) => t.endsWith("longer-suffix")), shown.join(" | "));
  });

  it("the chosen card reads in a few short lines: provider and region, the flavor, accelerators × nodes", () => {
    const page = costHtml(seedReport("qwen3-1.7b-code-toolcall"));
    const card = /<div class="card"><div class="k">Chosen<\/div>(.*?)<\/div><\/div>\n/.exec(page)![1]!;
    assert.deepEqual([...card.matchAll(/<div class="([^"]+)">([^<]*)/g)].map((m) => [m[1], m[2]]), [
      ["v name", "modelarts · cn-southwest-2"], ["mono", "modelarts.bm.npu.arm.8snt9b2.d"], ["s", "8 × Ascend 910B (one NPU die) × 1 node"],
    ]);
  });
});

describe("what dominates the total: one sentence, near the top of the page", () => {
  it("names the biggest line with its share; says what is prepaid and what has no rate", () => {
    const r = seedReport("retool-qwen3-4b-tione-ags");
    const priced = r.lines.filter((l) => l.cost !== undefined).map((l) => ({ l, cny: convertRange(l.cost!, l.currency!, "CNY", r.fx).expected })).sort((a, b) => b.cny - a.cny);
    const sum = priced.reduce((t, p) => t + p.cny, 0);
    const pct = (100 * priced[0]!.cny) / sum;
    const share = pct >= 99.5 ? "over 99%" : `${Math.round(pct)}%`;
    const sentence = dominantSentence(r);
    assert.ok(sentence.startsWith(`${priced[0]!.l.label} is ${share} of the expected total`), sentence);
    assert.match(sentence, /training compute is prepaid/);
    const unpriced = r.lines.find((l) => l.cost === undefined && l.includedIn === undefined)!;
    assert.ok(sentence.includes(`no rate yet for ${unpriced.label[0]!.toLowerCase()}${unpriced.label.slice(1)}`), sentence);
    const page = costHtml(r);
    assert.ok(top(page).includes(`<p class="lead">${sentence.replace(/&/g, "&amp;")}</p>`));
  });

  it("the fixture: compute is most of it, with the share computed from the lines", () => {
    const r = fixtureReport();
    const compute = r.lines.find((l) => l.id === "compute")!;
    const cny = r.lines.flatMap((l) => (l.cost === undefined ? [] : [convertRange(l.cost, l.currency!, "CNY", r.fx).expected]));
    const pct = Math.round((100 * compute.cost!.expected) / cny.reduce((t, x) => t + x, 0));
    assert.ok(dominantSentence(r).startsWith(`Training compute is ${pct}% of the expected total (${formatMoney(compute.cost!.expected, "CNY")} of`), dominantSentence(r));
  });

  it("nothing priced: the sentence says the total is unknown and how many prices are needed", () => {
    const r = seedReport("qwen3-1.7b-code-toolcall");
    const n = ratesNeeded(r.lines).length;
    assert.match(dominantSentence(r), new RegExp(`^No line has a rate yet, so the total is unknown: ${n} prices are needed`));
  });
});

describe("the run length on the page", () => {
  it("days and hours, each stage's steps with where the count comes from, and the flags at the top", () => {
    const report: CostReport = {
      ...fixtureReport(),
      runLength: {
        hours: range(1000, 2088, 6344), days: range(1000 / 24, 87, 6344 / 24), maxDays: 60,
        stages: [{ stage: "rl", steps: range(2070, 2070, 2070), source: "⌊rows / batch⌋ × epochs" }],
        flags: ["2,070 RL steps run 87 days, beyond 60: set trainer.total_training_steps (the seed published ~240 steps)"],
      },
    };
    const page = costHtml(report);
    assert.match(top(page), /<div class="card flagged"><div class="k">Run length<\/div><div class="v">87 days<\/div>/);
    assert.ok(top(page).includes('<p class="flag">2,070 RL steps run 87 days, beyond 60: set trainer.total_training_steps (the seed published ~240 steps)</p>'));
    const section = page.slice(page.indexOf("<h2>Run length</h2>"), page.indexOf("<h2>Candidates"));
    assert.match(section, /<strong>87 days<\/strong> wall-clock \(41\.7–264 days; 2,088 \(1,000–6,344\) h\)/);
    assert.match(section, /<td>rl<\/td><td class="num">2,070<\/td>.*<td>⌊rows \/ batch⌋ × epochs<\/td>/);
    assert.match(section, /runs beyond 60 days are flagged/);
  });

  it("an older report without runLength: its stages' hours, summed, in days", () => {
    const r = seedReport("retool-qwen2.5-32b-h200");
    const hours = r.stages!.reduce((t, s) => t + s.hours.expected, 0);
    const v = reportView({ ...r, runLength: undefined });
    assert.equal(v.runLength?.headline, `${formatQuantity(hours / 24)} days`);
  });
});

describe("filled areas in rlpipe's rasterizer (the cumulative chart's band)", () => {
  it("fills inside by the even-odd rule with anti-aliased edges, nothing outside; an SVG polygon in the writer", () => {
    const r = { width: 20, height: 20, rgb: new Uint8Array(20 * 20 * 3).fill(255) };
    fillPolygon(r, [[2, 2], [12.5, 2], [12.5, 12], [2, 12]], "#000000");
    const px = (x: number, y: number) => r.rgb[(y * 20 + x) * 3]!;
    assert.equal(px(5, 5), 0, "inside is filled");
    assert.equal(px(15, 5), 255, "outside is untouched");
    assert.equal(px(12, 5), 128, "a pixel half covered is half blended");
    assert.equal(px(5, 1), 255);
    // A triangle: coverage falls off along the slanted edge.
    const t = { width: 20, height: 20, rgb: new Uint8Array(20 * 20 * 3).fill(255) };
    fillPolygon(t, [[0, 0], [20, 20], [0, 20]], "#000000", 0.5);
    assert.equal(t.rgb[(15 * 20 + 2) * 3], 128, "alpha 0.5 inside");
    assert.equal(t.rgb[(2 * 20 + 15) * 3], 255, "above the diagonal: nothing");
    const scene = { width: 10, height: 10, background: "#ffffff", shapes: [{ kind: "area" as const, points: [[1, 1], [9, 1], [9, 9]] as [number, number][], fill: "#ff0000", opacity: 0.5 }] };
    const drawn = rasterize(scene);
    assert.deepEqual([...drawn.rgb.slice((2 * 10 + 7) * 3, (2 * 10 + 7) * 3 + 3)], [255, 128, 128]);
    assert.match(sceneToSvg(scene), /<polygon points="1,1 9,1 9,9" fill="#ff0000" fill-rule="evenodd" fill-opacity="0\.5"\/>/);
  });
});

// ------------------------------------------------------------------------------------------------ Chromium

describe("HTML cost report in headless Chromium", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-cost-html-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("rlpipe cost --format html on a seed recipe renders to a screenshot that is not blank, with the charts, and the totals on the page", T, () => {
    assert.equal(spawnSync("chromium", ["--version"]).status, 0, "chromium (Debian package chromium, scripts/setup.sh --test) is needed to render the report");
    const seed = recipePath("retool-qwen3-4b-tione-ags");
    const made = spawnSync(process.execPath, [CLI, "cost", seed, "--format", "html"], { cwd: dir, encoding: "utf8", env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir } });
    assert.equal(made.status, 0, made.stderr);
    const file = join(dir, ".rlpipe", "cost", "retool-qwen3-4b-tione-ags.html");
    assert.equal(made.stdout.trim(), join(".rlpipe", "cost", "retool-qwen3-4b-tione-ags.html"), "the path is printed");
    assert.ok(existsSync(file));
    const json = spawnSync(process.execPath, [CLI, "cost", seed, "--json"], { cwd: dir, encoding: "utf8", env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir } });
    assert.equal(json.status, 0, json.stderr);
    const report = JSON.parse(json.stdout) as CostReport;
    const html = readFileSync(file, "utf8");
    assert.deepEqual(externalReferences(html), []);

    const png = join(dir, "report.png");
    const shot = chromium([`--screenshot=${png}`, "--window-size=1280,2000", pathToFileURL(file).href], dir);
    assert.equal(shot.status, 0, shot.stderr.toString());
    const image = decodePng(readFileSync(png));
    assert.deepEqual([image.width, image.height], [1280, 2000]);
    let ink = 0;
    const colours = new Set<number>();
    for (let i = 0; i < image.rgb.length; i += 3) {
      const [r, g, b] = [image.rgb[i]!, image.rgb[i + 1]!, image.rgb[i + 2]!];
      if (r < 230 || g < 230 || b < 230) ink++;
      colours.add(((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4));
    }
    const pixels = image.width * image.height;
    assert.ok(ink / pixels > 0.03, `not blank: ${(100 * ink / pixels).toFixed(1)}% of the pixels are ink`);
    assert.ok(colours.size >= 24, `several distinct colours (${colours.size})`);
    // The charts' blue (compute, the chosen candidate, the cumulative line) is drawn.
    const [br, bg, bb] = parseColor("#1f77b4");
    let blue = 0;
    for (let i = 0; i < image.rgb.length; i += 3) if (Math.abs(image.rgb[i]! - br) < 8 && Math.abs(image.rgb[i + 1]! - bg) < 8 && Math.abs(image.rgb[i + 2]! - bb) < 8) blue++;
    assert.ok(blue > 500, `the charts' bars and line are on the screenshot (${blue} blue pixels)`);

    const dom = chromium(["--dump-dom", pathToFileURL(file).href], dir);
    assert.equal(dom.status, 0, dom.stderr.toString());
    const text = dom.stdout.toString("utf8");
    for (const total of [formatMoneyTriple(report.totals.CNY, "CNY"), formatMoneyTriple(report.totals.USD, "USD")]) {
      assert.ok(text.includes(total), `the rendered page shows the total ${total}`);
    }
    assert.equal((text.match(/<svg /g) ?? []).length, 3, "three charts in the rendered page");
  });

  it("every seed recipe's page renders to a screenshot that is not blank: charts where a rate exists, the call to action where none does", T, () => {
    const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir };
    for (const seed of SEED_RECIPES) {
      const file = join(dir, `${seed}.html`);
      const made = spawnSync(process.execPath, [CLI, "cost", recipePath(seed), "--format", "html", "--out", file], { cwd: dir, encoding: "utf8", env });
      assert.equal(made.status, 0, `${seed}: ${made.stderr}`);
      const json = spawnSync(process.execPath, [CLI, "cost", recipePath(seed), "--json"], { cwd: dir, encoding: "utf8", env });
      const report = JSON.parse(json.stdout) as CostReport;
      const png = join(dir, `${seed}.png`);
      const shot = chromium([`--screenshot=${png}`, "--window-size=1280,2400", pathToFileURL(file).href], dir);
      assert.equal(shot.status, 0, `${seed}: ${shot.stderr.toString()}`);
      const image = decodePng(readFileSync(png));
      let ink = 0;
      for (let i = 0; i < image.rgb.length; i += 3) if (image.rgb[i]! < 230 || image.rgb[i + 1]! < 230 || image.rgb[i + 2]! < 230) ink++;
      assert.ok(ink / (image.width * image.height) > 0.03, `${seed}: not blank (${(100 * ink / (image.width * image.height)).toFixed(1)}% ink)`);
      const dom = chromium(["--dump-dom", pathToFileURL(file).href], dir).stdout.toString("utf8");
      const nothingPriced = !JSON.stringify(report.lines).includes('"cost"');
      if (nothingPriced) {
        assert.equal((dom.match(/<svg /g) ?? []).length, 0, `${seed}: no empty chart`);
        assert.match(dom, /<section class="cta" id="add-prices">/, seed);
      } else {
        assert.ok((dom.match(/<svg /g) ?? []).length >= 1, `${seed}: its charts`);
      }
      for (const svg of dom.match(/<svg [\s\S]*?<\/svg>/g) ?? []) assert.ok(!svg.includes("…"), `${seed}: a chart label is cut`);
    }
  });
});
