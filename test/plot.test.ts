// `rlpipe metrics --plot`: round ticks, smoothing, overlaid runs, SVG and PNG. What the plot draws agrees with
// what the text prints; the SVG rendered by a real renderer (rsvg-convert) and rlpipe's own PNG both show a
// non-blank chart with a line in every panel, in the same places; our PNG is valid for an independent reader
// (Python's zlib) and the same metrics always give the same bytes.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as zlib from "node:zlib";
import { MetricsSync } from "../adapters/storage/metrics-sync.js";
import { openStore } from "../adapters/storage/store.js";
import { PNG_SCALE, type RunSeries, latestValues, mainSeries, metricsChart, metricsPanels, renderPlot, toSeries } from "../core/metrics.js";
import type { ChartLayout } from "../core/plot/chart.js";
import { GLYPH_CHARS, measureText } from "../core/plot/font.js";
import { crc32, encodePng } from "../core/plot/png.js";
import { rasterize } from "../core/plot/raster.js";
import { parseColor } from "../core/plot/scene.js";
import { emaSmooth } from "../core/plot/smooth.js";
import { sceneToSvg } from "../core/plot/svg.js";
import { formatTicks, niceTicks } from "../core/plot/ticks.js";
import { ROOT, seededRandom } from "./helpers.js";
import { type DecodedPng, decodePng } from "./png-decode.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

function rlpipe(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", timeout: 30_000, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** verl `file` logger lines for steps 1..n. */
function metricsLines(n: number, row: (step: number) => Record<string, number>): string {
  return Array.from({ length: n }, (_, i) => `${JSON.stringify({ step: i + 1, data: row(i + 1) })}\n`).join("");
}

async function putRun(storeDir: string, work: string, run: string, text: string): Promise<void> {
  const file = join(work, `${run}.jsonl`);
  writeFileSync(file, text);
  const store = await openStore(storeDir);
  try { await new MetricsSync(store, run).syncFile(file); } finally { await store.close(); }
}

// ---- reading values back from what an SVG draws (independent of how it was built)

interface SvgText { readonly x: number; readonly y: number; readonly size: number; readonly anchor: string; readonly middle: boolean; readonly text: string }

const attr = (tag: string, name: string): string | undefined => new RegExp(`\\s${name}="([^"]*)"`).exec(tag)?.[1];
const unesc = (s: string) => s.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&amp;/g, "&");

function svgTexts(svg: string, defaultSize: number): SvgText[] {
  return [...svg.matchAll(/<text([^>]*)>([^<]*)<\/text>/g)].map((m) => ({
    x: Number(attr(m[1]!, "x")), y: Number(attr(m[1]!, "y")), size: Number(attr(m[1]!, "font-size") ?? defaultSize),
    anchor: attr(m[1]!, "text-anchor") ?? "start", middle: attr(m[1]!, "dominant-baseline") === "middle", text: unesc(m[2]!),
  }));
}

function svgPaths(svg: string): [number, number][][] {
  return [...svg.matchAll(/<path([^>]*)\/>/g)].map((m) => [...attr(m[1]!, "d")!.matchAll(/[ML]\s*(-?[\d.]+)[ ,](-?[\d.]+)/g)].map((p) => [Number(p[1]), Number(p[2])] as [number, number]));
}

/** A tick label's number ("1.5", "20k", "-0.25"). */
function tickValue(s: string): number {
  const m = /^(-?[\d.]+)(k|M)?$/.exec(s.trim().replace("−", "-"));
  assert.ok(m, `not a tick label: ${s}`);
  return Number(m[1]) * (m[2] === "k" ? 1e3 : m[2] === "M" ? 1e6 : 1);
}

/**
 * The values the panel titled with `metric` draws: its y tick labels (right-aligned numbers left of the plot)
 * give the pixel→value map, its line's points are mapped back through it. The label's y is its tick's y when
 * it is vertically centred, else its baseline sits 0.35 em below the tick.
 */
function drawnValues(svg: string, metric: string): number[][] {
  const defaultSize = Number(/<svg[^>]*font-size="([\d.]+)"/.exec(svg)?.[1] ?? 11);
  const texts = svgTexts(svg, defaultSize);
  const titles = texts.filter((t) => t.anchor === "start" && !/^-?[\d.]+[kM]?$/.test(t.text)).sort((a, b) => a.y - b.y);
  const title = titles.find((t) => t.text.includes(metric));
  assert.ok(title, `no panel mentions ${metric}: ${titles.map((t) => t.text).join(" | ")}`);
  // The panel's band: below its title, above the next title further down in the same column.
  const next = titles.find((t) => t.y > title.y + 1 && Math.abs(t.x - title.x) < 1 && !t.text.includes(metric));
  const bottom = next?.y ?? Infinity;
  // …and left of the next panel in the same row, if any.
  const right = Math.min(...titles.filter((t) => Math.abs(t.y - title.y) < 20 && t.x > title.x + 1).map((t) => t.x), Infinity);
  const inBand = (y: number) => y > title.y && y < bottom;
  const near = (x: number) => x > title.x - 100 && x < right;
  const ticks = texts
    .filter((t) => t.anchor === "end" && /^-?[\d.]+[kM]?$/.test(t.text.replace("−", "-")) && inBand(t.y) && near(t.x) && Math.abs(t.x - title.x) < 80)
    .map((t) => ({ y: t.middle ? t.y : t.y - 0.35 * t.size, v: tickValue(t.text) }))
    .sort((a, b) => a.y - b.y);
  assert.ok(ticks.length >= 2, `panel ${metric} has fewer than two y tick labels`);
  const [a, b] = [ticks[0]!, ticks[ticks.length - 1]!];
  const value = (py: number) => a.v + ((py - a.y) / (b.y - a.y)) * (b.v - a.v);
  const lines = svgPaths(svg).filter((p) => p.length > 0 && p.every(([x, y]) => inBand(y) && near(x)));
  assert.ok(lines.length > 0, `panel ${metric} draws no line`);
  return lines.map((p) => p.map(([, y]) => value(y)));
}

describe("rlpipe metrics --plot: the plot and the text agree", () => {
  let work: string;
  let storeDir: string;
  before(async () => {
    work = mkdtempSync(join(tmpdir(), "rlpipe-plot-"));
    storeDir = join(work, "store");
    // num_turns/mean 4, 6, …: 1, 2, … tool calls per response (verl: user + assistant turns + 1).
    await putRun(storeDir, work, "run-a", metricsLines(12, (s) => ({ "critic/score/mean": s / 20, "response_length/mean": 300 + 10 * s, "num_turns/mean": 2 + 2 * (1 + (s % 4)) })));
    await putRun(storeDir, work, "run-custom", metricsLines(3, (s) => ({ "actor/entropy": 1 / s })));
    await putRun(storeDir, work, "run-b", metricsLines(20, (s) => ({ "critic/score/mean": s / 30, "response_length/mean": 280 + 12 * s, "timing_s/step": 50 + (s % 3) })));
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  it("tool calls per response: the plotted series is the derived value the text prints", () => {
    const svgFile = join(work, "a.svg");
    const r = rlpipe(["metrics", "run-a", "--store", storeDir, "--plot", svgFile], work);
    assert.equal(r.code, 0, r.err);
    const m = /tool calls per response\s+(-?[\d.]+)\s+\(step (\d+), num_turns\/mean\)/.exec(r.out);
    assert.ok(m, r.out);
    assert.equal(Number(m[1]), 1 + (12 % 4)); // step 12: num_turns 8 → 3 tool calls
    const drawn = drawnValues(readFileSync(svgFile, "utf8"), "num_turns/mean");
    assert.equal(drawn.length, 1);
    const expected = Array.from({ length: 12 }, (_, i) => 1 + ((i + 1) % 4));
    assert.equal(drawn[0]!.length, expected.length);
    drawn[0]!.forEach((v, i) => assert.ok(Math.abs(v - expected[i]!) < 0.05, `step ${i + 1}: drawn ${v.toFixed(3)}, text/derived ${expected[i]}`));
    assert.ok(Math.abs(drawn[0]![11]! - Number(m[1])) < 0.05, "the last drawn point is the value the text prints");
  });

  it("--plot FILE.png writes a PNG, not SVG bytes", () => {
    const png = join(work, "a.png");
    const r = rlpipe(["metrics", "run-a", "--store", storeDir, "--plot", png], work);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual([...readFileSync(png).subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  });

  it("same metrics, same bytes: two runs of the CLI write identical SVG and PNG files, atomically", () => {
    for (const ext of ["svg", "png"]) {
      const [f1, f2] = [join(work, `d1.${ext}`), join(work, `d2.${ext}`)];
      for (const f of [f1, f2]) assert.equal(rlpipe(["metrics", "run-a", "run-b", "--store", storeDir, "--plot", f, "--smooth", "0.6"], work).code, 0);
      assert.ok(readFileSync(f1).equals(readFileSync(f2)), ext);
    }
    assert.deepEqual(readdirSync(work).filter((f) => f.includes("rlpipe-tmp")), [], "no temporary file left");
  });

  it("several runs: a block of latest values each, a legend naming them, JSON as a list", () => {
    const svg = join(work, "cmp.svg");
    const r = rlpipe(["metrics", "run-a", "run-b", "--store", storeDir, "--plot", svg], work);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /run run-a: latest values[\s\S]*run run-b: latest values/);
    assert.match(r.err, /wrote .*cmp\.svg \(SVG, 4 panels, 2 runs\)/);
    const text = readFileSync(svg, "utf8");
    assert.match(text, />run-a<\/text>/);
    assert.match(text, />run-b<\/text>/);
    // run-b has no num_turns: the tool-calls panel holds run-a's line only.
    assert.deepEqual(drawnValues(text, "num_turns/mean").length, 1);
    const j = rlpipe(["metrics", "run-a", "run-b", "--store", storeDir, "--json"], work);
    assert.equal(j.code, 0, j.err);
    assert.deepEqual((JSON.parse(j.out) as { run: string }[]).map((x) => x.run), ["run-a", "run-b"]);
    const one = JSON.parse(rlpipe(["metrics", "run-a", "--store", storeDir, "--json"], work).out) as { run: string; steps: number };
    assert.deepEqual([one.run, one.steps], ["run-a", 12], "one run keeps the single-object JSON");
  });

  it("bad plot flags exit 2 with a hint before anything is read or written", () => {
    const cases: [string[], RegExp][] = [
      [["--plot", join(work, "x.jpg")], /rlpipe writes \.svg and \.png plots[\s\S]*hint: end the file name in \.svg/],
      [["--plot", join(work, "noext")], /rlpipe writes \.svg and \.png plots/],
      [["--plot", join(work, "x.svg"), "--smooth", "1"], /--smooth must be a number from 0 to below 1/],
      [["--plot", join(work, "x.svg"), "--smooth", "abc"], /--smooth must be a number/],
      [["--smooth", "0.5"], /--smooth applies to a plot/],
      [["--plot", join(work, "x.svg"), "--series", "nope/metric"], /no such series: nope\/metric \(have: critic\/score\/mean/],
      [["--plot", join(work, "missing-dir", "x.png")], /cannot write .*x\.png: ENOENT[\s\S]*hint: check that the directory exists/],
    ];
    for (const [flags, msg] of cases) {
      const r = rlpipe(["metrics", "run-a", "--store", storeDir, ...flags], work);
      assert.equal(r.code, 2, `${flags.join(" ")}: ${r.err}`);
      assert.match(r.err, msg, flags.join(" "));
      assert.doesNotMatch(r.err, /internal error/);
    }
    assert.ok(!existsSync(join(work, "x.jpg")) && !existsSync(join(work, "noext")) && !existsSync(join(work, "x.svg")));
    assert.deepEqual(readdirSync(work).filter((f) => f.includes("rlpipe-tmp")), []);
  });

  it("a run with none of the main series: exit 2 naming what it has; --series plots it", () => {
    const r = rlpipe(["metrics", "run-custom", "--store", storeDir, "--plot", join(work, "c.png")], work);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /none of the main series[\s\S]*hint: name the series to plot: --series actor\/entropy/);
    assert.ok(!existsSync(join(work, "c.png")));
    assert.equal(rlpipe(["metrics", "run-custom", "--store", storeDir, "--plot", join(work, "c.png"), "--series", "actor/entropy"], work).code, 0);
    assert.ok(decodePng(readFileSync(join(work, "c.png"))).width > 0);
  });

  it("--series plots raw metrics by name, one panel each", () => {
    const svg = join(work, "raw.svg");
    const r = rlpipe(["metrics", "run-a", "--store", storeDir, "--plot", svg, "--series", "num_turns/mean,critic/score/mean"], work);
    assert.equal(r.code, 0, r.err);
    const text = readFileSync(svg, "utf8");
    // Asked for by its raw name, num_turns is drawn raw (4, 6, 8, 10) under that name.
    const drawn = drawnValues(text, "num_turns/mean")[0]!;
    assert.ok(Math.abs(drawn[0]! - 6) < 0.05 && Math.abs(drawn[11]! - 4) < 0.05, drawn.join(", "));
  });
});

// ---------------------------------------------------------------------------------------------- ticks

/** Whether `step` is 1, 2 or 5 × 10^k. */
function isNiceStep(step: number): boolean {
  const k = Math.floor(Math.log10(step) + 1e-9);
  const m = Number((step / 10 ** k).toPrecision(6));
  return m === 1 || m === 2 || m === 5;
}

describe("nice ticks", () => {
  it("round steps, an axis from tick to tick, labels with just enough decimals", () => {
    const cases: [number, number, boolean, string[]][] = [
      [0.12, 0.57, false, ["0.1", "0.2", "0.3", "0.4", "0.5", "0.6"]],
      [1, 137, true, ["0", "50", "100", "150"]],
      [300, 1500, false, ["0", "500", "1000", "1500"]],
      [0, 1, false, ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]],
      [-0.3, 0.2, false, ["−0.3", "−0.2", "−0.1", "0.0", "0.1", "0.2"]],
      [12000, 48000, false, ["10k", "20k", "30k", "40k", "50k"]],
      [1.5e6, 2.2e6, false, ["1.4M", "1.6M", "1.8M", "2.0M", "2.2M"]],
      [0.0001, 0.00035, false, ["0.00010", "0.00015", "0.00020", "0.00025", "0.00030", "0.00035"]],
      [0.5, 0.5, false, ["0.40", "0.45", "0.50", "0.55", "0.60"]], // a constant gets a range around it
      [5, 5, true, ["4", "5", "6"]],
      [1, 20, true, ["0", "5", "10", "15", "20"]],
    ];
    for (const [lo, hi, integer, want] of cases) assert.deepEqual(formatTicks(niceTicks(lo, hi, { integer })), want, `[${lo}, ${hi}]`);
  });

  it("on 20 000 random ranges: 1/2/5 steps, cover the data, distinct labels, 4–6 ticks (7 at most, and rarely)", () => {
    const rnd = seededRandom(9);
    let outside = 0;
    for (let i = 0; i < 20_000; i++) {
      const scale = 10 ** Math.floor(rnd() * 14 - 7);
      const a = (rnd() * 2 - 1) * scale * 10;
      const b = a + (0.01 + rnd()) * scale;
      const t = niceTicks(a, b);
      const where = `[${a}, ${b}] → ${t.values.join(", ")}`;
      assert.ok(isNiceStep(t.step), where);
      assert.ok(t.lo <= a + Math.abs(t.step) * 1e-9 && t.hi >= b - Math.abs(t.step) * 1e-9, `does not cover ${where}`);
      assert.ok(t.values.length >= 4 && t.values.length <= 7, where);
      if (t.values.length === 7) outside++;
      t.values.forEach((v, k) => k > 0 && assert.ok(Math.abs(v - t.values[k - 1]! - t.step) <= t.step * 1e-6, `uneven ${where}`));
      const labels = formatTicks(t);
      assert.equal(new Set(labels).size, labels.length, `duplicate labels ${labels.join(" ")} for ${where}`);
    }
    assert.ok(outside < 20_000 * 0.03, `${outside} of 20000 ranges got 7 ticks`);
  });

  it("training steps: integer ticks, 4–6 of them for any run longer than 10 steps", () => {
    const rnd = seededRandom(10);
    for (let i = 0; i < 5_000; i++) {
      const a = Math.floor(rnd() * 100);
      const b = a + 10 + Math.floor(rnd() * 10 ** (1 + rnd() * 5));
      const t = niceTicks(a, b, { integer: true });
      assert.ok(Number.isInteger(t.step) && isNiceStep(t.step), `[${a}, ${b}] step ${t.step}`);
      assert.ok(t.values.length >= 4 && t.values.length <= 7, `[${a}, ${b}] → ${t.values.join(", ")}`);
      assert.ok(formatTicks(t).every((l) => /^\d+(\.\d+)?[kM]?$/.test(l)) && t.values.every(Number.isInteger), formatTicks(t).join(" "));
    }
  });
});

// ---------------------------------------------------------------------------------------------- smoothing

describe("smoothing (TensorBoard's debiased EMA)", () => {
  it("weight 0 is the raw series; a constant stays constant; the first point is the first value", () => {
    const pts: [number, number][] = [[1, 0.3], [2, 0.9], [5, 0.1]];
    assert.deepEqual(emaSmooth(pts, 0), pts);
    for (const [, v] of emaSmooth([[1, 2], [2, 2], [3, 2], [4, 2]], 0.9)) assert.ok(Math.abs(v - 2) < 1e-12);
    assert.deepEqual(emaSmooth([[1, 0], [2, 1], [3, 1]], 0.5).map(([s, v]) => [s, Number(v.toFixed(6))]), [[1, 0], [2, 0.666667], [3, 0.857143]]);
    assert.throws(() => emaSmooth(pts, 1), RangeError);
    assert.throws(() => emaSmooth(pts, -0.1), RangeError);
  });
});

// ---------------------------------------------------------------------------------------------- synthetic runs

/** Three runs of a GRPO-like training: rising reward and pass rate, growing responses, noisy step times. */
function syntheticRuns(): RunSeries[] {
  const rnd = seededRandom(42);
  return [["grpo-base", 137, 0], ["grpo-lr2e-6", 110, 30], ["dapo", 150, 15]].map(([run, steps, shift]) => {
    const rows = new Map<number, Record<string, number>>();
    for (let s = 1; s <= (steps as number); s++) {
      const p = 1 - Math.exp(-s / (40 + (shift as number)));
      rows.set(s, {
        "critic/score/mean": -0.8 + 1.4 * p + (rnd() - 0.5) * 0.3,
        "response_length/mean": 900 + 700 * p + (rnd() - 0.5) * 200,
        "reward_extra_info/pass_rate/mean": 0.2 + 0.5 * p + (rnd() - 0.5) * 0.1,
        "num_turns/mean": 4 + 3 * p + (rnd() - 0.5),
        "timing_s/step": 95 + rnd() * 20 + (shift as number) / 2,
        ...(s % 20 === 0 ? { "val-core/code/reward/mean@1": 0.3 + 0.4 * p } : {}),
      });
    }
    return { run: run as string, series: toSeries(rows) };
  });
}

// ---------------------------------------------------------------------------------------------- looking at pixels

const WHITE_ENOUGH = 248;
const isBackground = (img: DecodedPng, p: number) => img.rgb[p * 3]! >= WHITE_ENOUGH && img.rgb[p * 3 + 1]! >= WHITE_ENOUGH && img.rgb[p * 3 + 2]! >= WHITE_ENOUGH;

function colourDistance(img: DecodedPng, p: number, [r, g, b]: readonly [number, number, number]): number {
  return Math.hypot(img.rgb[p * 3]! - r, img.rgb[p * 3 + 1]! - g, img.rgb[p * 3 + 2]! - b);
}

/** Pixels of a run's colour inside a box (layout pixels × scale): how many, and their centre. */
function linePixels(img: DecodedPng, box: { x: number; y: number; w: number; h: number }, scale: number, colour: string) {
  const c = parseColor(colour);
  let n = 0, sx = 0, sy = 0;
  for (let y = Math.ceil(box.y * scale); y < Math.floor((box.y + box.h) * scale); y++) {
    for (let x = Math.ceil(box.x * scale); x < Math.floor((box.x + box.w) * scale); x++) {
      if (colourDistance(img, y * img.width + x, c) < 48) { n++; sx += x; sy += y; }
    }
  }
  return { n, cx: n === 0 ? NaN : sx / n, cy: n === 0 ? NaN : sy / n };
}

/**
 * Not blank, and a chart: enough ink, several distinct colours, dark text in the header, and in every panel's
 * plot area a line of every run drawn in it, at least as long as the area is wide.
 */
function assertChart(img: DecodedPng, layout: ChartLayout, scale: number, runsByPanel: readonly (readonly string[])[], what: string) {
  assert.equal(img.width, Math.round(layout.scene.width * scale), `${what}: width`);
  assert.equal(img.height, Math.round(layout.scene.height * scale), `${what}: height`);
  let ink = 0;
  const colours = new Set<number>();
  for (let p = 0; p < img.width * img.height; p++) {
    if (!isBackground(img, p)) ink++;
    colours.add(((img.rgb[p * 3]! >> 4) << 8) | ((img.rgb[p * 3 + 1]! >> 4) << 4) | (img.rgb[p * 3 + 2]! >> 4));
  }
  const inkShare = ink / (img.width * img.height);
  assert.ok(inkShare > 0.03 && inkShare < 0.5, `${what}: ${(inkShare * 100).toFixed(1)}% of the pixels are not background`);
  assert.ok(colours.size >= 12, `${what}: only ${colours.size} distinct colours`);
  let dark = 0;
  for (let y = 0; y < Math.round(40 * scale); y++) for (let x = 0; x < img.width; x++) if (img.rgb[(y * img.width + x) * 3]! < 100) dark++;
  assert.ok(dark > 30 * scale * scale, `${what}: no title text (${dark} dark pixels in the header)`);
  assert.equal(layout.panels.length, runsByPanel.length);
  layout.panels.forEach((panel, i) => {
    for (const run of runsByPanel[i]!) {
      const { n } = linePixels(img, panel.plot, scale, layout.colors.get(run)!);
      assert.ok(n >= panel.plot.w * scale * 0.4, `${what}: panel "${panel.title}" has ${n} pixels of ${run}'s line`);
    }
  });
}

const rsvgMissing = spawnSync("rsvg-convert", ["--version"], { encoding: "utf8" }).status === 0 ? undefined : "rsvg-convert is not installed (scripts/setup.sh --test installs librsvg2-bin)";

describe("the plot as an image", () => {
  let work: string;
  const runs = syntheticRuns();
  const panelsRuns = metricsPanels(runs).map((p) => p.lines.map((l) => l.run));
  before(() => { work = mkdtempSync(join(tmpdir(), "rlpipe-plot-img-")); });
  after(() => rmSync(work, { recursive: true, force: true }));

  it("lays out one panel per main series, derived values included, runs in legend order", () => {
    const layout = metricsChart(runs, { title: "cmp" });
    assert.deepEqual(layout.panels.map((p) => p.title), ["reward (score mean)", "response length (mean tokens)", "pass rate", "tool calls per response", "step time (s)", "val-core/code/reward/mean@1"]);
    assert.deepEqual([...layout.colors.keys()], ["grpo-base", "grpo-lr2e-6", "dapo"]);
    // The legend names every run; the x axis is shared, 0 … 150 by 50.
    const texts = layout.scene.shapes.filter((s) => s.kind === "text").map((s) => s.text);
    for (const r of ["grpo-base", "grpo-lr2e-6", "dapo", "step", "150"]) assert.ok(texts.includes(r), r);
    // Every glyph the chart uses exists in the stroke font (no missing-glyph boxes in the PNG).
    const used = new Set(texts.join(""));
    assert.deepEqual([...used].filter((ch) => !GLYPH_CHARS.includes(ch) && ch !== " "), []);
  });

  it("tool calls per response: every plotted point is (num_turns − 2) / 2, the last is the printed value", () => {
    for (const r of runs) {
      const tools = metricsPanels([r]).find((p) => p.title === "tool calls per response")!;
      const raw = r.series.get("num_turns/mean")!;
      assert.deepEqual(tools.lines[0]!.points, raw.map(([s, v]) => [s, (v - 2) / 2]));
      const printed = latestValues(r.series).find((l) => l.label === "tool calls per response")!;
      assert.deepEqual(tools.lines[0]!.points.at(-1), [printed.step, printed.value]);
      assert.deepEqual(mainSeries(r.series).find((m) => m.label === "tool calls per response")!.points, tools.lines[0]!.points);
    }
  });

  it("our PNG: valid, not blank, a line of every run in every panel; deterministic", () => {
    const layout = metricsChart(runs, { title: "grpo-base vs grpo-lr2e-6 vs dapo", smoothing: 0.6 });
    const png = renderPlot(runs, "png", { title: "grpo-base vs grpo-lr2e-6 vs dapo", smoothing: 0.6 });
    writeFileSync(join(work, "ours.png"), png);
    const img = decodePng(png);
    assert.deepEqual(img.chunks, ["IHDR", "IDAT", "IEND"]);
    assertChart(img, layout, PNG_SCALE, panelsRuns, "our PNG");
    assert.deepEqual(renderPlot(runs, "png", { title: "grpo-base vs grpo-lr2e-6 vs dapo", smoothing: 0.6 }), png, "same metrics, same bytes");
  });

  it("the SVG rendered by rsvg-convert: not blank, a line of every run in every panel, where our PNG draws it", () => {
    assert.equal(rsvgMissing, undefined, rsvgMissing);
    const layout = metricsChart(runs, { title: "grpo-base vs grpo-lr2e-6 vs dapo" });
    const svgFile = join(work, "cmp.svg");
    writeFileSync(svgFile, renderPlot(runs, "svg", { title: "grpo-base vs grpo-lr2e-6 vs dapo" }));
    const out = join(work, "cmp-rsvg.png");
    const r = spawnSync("rsvg-convert", ["--zoom", String(PNG_SCALE), "--format", "png", "--output", out, svgFile], { encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const theirs = decodePng(readFileSync(out));
    assertChart(theirs, layout, PNG_SCALE, panelsRuns, "rsvg-convert's rendering");
    // Our rasterizer draws each run's line in the same place as a real SVG renderer (centres within 3 px).
    const ours = decodePng(renderPlot(runs, "png", { title: "grpo-base vs grpo-lr2e-6 vs dapo" }));
    layout.panels.forEach((panel, i) => {
      for (const run of panelsRuns[i]!) {
        const a = linePixels(theirs, panel.plot, PNG_SCALE, layout.colors.get(run)!);
        const b = linePixels(ours, panel.plot, PNG_SCALE, layout.colors.get(run)!);
        const where = `panel "${panel.title}", ${run}: rsvg (${a.cx.toFixed(1)}, ${a.cy.toFixed(1)}) n=${a.n}, ours (${b.cx.toFixed(1)}, ${b.cy.toFixed(1)}) n=${b.n}`;
        assert.ok(Math.abs(a.cx - b.cx) <= 3 && Math.abs(a.cy - b.cy) <= 3, where);
        assert.ok(b.n > a.n * 0.6 && b.n < a.n * 1.6, where);
      }
    });
  });

  it("a PNG an independent reader accepts: Python's zlib checks every CRC, inflates and unfilters the same pixels", () => {
    // One small panel at scale 1, so the pure-Python unfiltering stays quick.
    const one = [{ run: "grpo-base", series: runs[0]!.series }];
    const layout = metricsChart(one, { title: "grpo-base", names: ["critic/score/mean"] });
    const raster = rasterize(layout.scene, 1);
    const file = join(work, "small.png");
    writeFileSync(file, encodePng(raster));
    const py = `
import sys, zlib, struct, hashlib, json
b = open(sys.argv[1], 'rb').read()
assert b[:8] == b'\\x89PNG\\r\\n\\x1a\\n', 'signature'
off, idat, types = 8, b'', []
while off < len(b):
    n, = struct.unpack('>I', b[off:off + 4]); t = b[off + 4:off + 8]; d = b[off + 8:off + 8 + n]
    crc, = struct.unpack('>I', b[off + 8 + n:off + 12 + n])
    assert zlib.crc32(t + d) & 0xffffffff == crc, 'CRC of ' + t.decode()
    types.append(t.decode())
    if t == b'IHDR': w, h, depth, ct, comp, flt, il = struct.unpack('>IIBBBBB', d)
    if t == b'IDAT': idat += d
    off += 12 + n
raw = zlib.decompress(idat)
stride = w * 3
assert len(raw) == h * (stride + 1), 'IDAT length'
prev, out, filters = bytearray(stride), bytearray(), set()
for y in range(h):
    f = raw[y * (stride + 1)]; filters.add(f)
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - 3] if i >= 3 else 0; up = prev[i]; c = prev[i - 3] if i >= 3 else 0
        if f == 0: p = 0
        elif f == 1: p = a
        elif f == 2: p = up
        elif f == 3: p = (a + up) >> 1
        elif f == 4:
            q = a + up - c; pa, pb, pc = abs(q - a), abs(q - up), abs(q - c)
            p = a if pa <= pb and pa <= pc else (up if pb <= pc else c)
        else: raise AssertionError('filter %d' % f)
        line[i] = (line[i] + p) & 0xff
    out += line; prev = line
print(json.dumps({'types': types, 'w': w, 'h': h, 'depth': depth, 'colorType': ct, 'interlace': il, 'filters': sorted(filters), 'sha256': hashlib.sha256(out).hexdigest()}))
`;
    const r = spawnSync("/usr/bin/python3", ["-c", py, file], { encoding: "utf8", timeout: 120_000 });
    assert.equal(r.status, 0, r.stderr);
    const got = JSON.parse(r.stdout) as { types: string[]; w: number; h: number; depth: number; colorType: number; interlace: number; filters: number[]; sha256: string };
    assert.deepEqual([got.types, got.w, got.h, got.depth, got.colorType, got.interlace], [["IHDR", "IDAT", "IEND"], raster.width, raster.height, 8, 2, 0]);
    assert.ok(got.filters.length >= 2, `adaptive filtering uses several filters, got ${got.filters.join(",")}`);
    assert.equal(got.sha256, createHash("sha256").update(raster.rgb).digest("hex"), "the pixels Python reads are the raster's");
    assertChart(decodePng(readFileSync(file)), layout, 1, [["grpo-base"]], "a one-panel PNG");
  });

  it("CRC-32: the standard check value, and zlib's where this Node has zlib.crc32", () => {
    assert.equal(crc32(new TextEncoder().encode("123456789")), 0xcbf43926);
    assert.equal(crc32(new Uint8Array(0)), 0);
    assert.equal(crc32(new TextEncoder().encode("56789"), crc32(new TextEncoder().encode("1234"))), 0xcbf43926, "continues a running CRC");
    const native = (zlib as unknown as { crc32?: (b: Uint8Array) => number }).crc32;
    if (native !== undefined) {
      const rnd = seededRandom(3);
      for (let n = 0; n < 50; n++) {
        const bytes = Uint8Array.from({ length: Math.floor(rnd() * 4000) }, () => Math.floor(rnd() * 256));
        assert.equal(crc32(bytes), native(bytes) >>> 0);
      }
    }
  });

  it("the SVG: text as text, a path per line, and the same for the same metrics", () => {
    const a = sceneToSvg(metricsChart(runs, { title: "cmp" }).scene);
    assert.equal(a, sceneToSvg(metricsChart(syntheticRuns(), { title: "cmp" }).scene));
    assert.match(a, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg" width="\d+" height="\d+"/);
    assert.equal((a.match(/<path /g) ?? []).length, panelsRuns.flat().length);
    assert.match(a, />tool calls per response<\/text>/);
    assert.ok(measureText("grpo-base", 12) > 40);
  });
});
