// `rlpipe metrics --plot`: what the plot draws agrees with what the text prints.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { MetricsSync } from "../adapters/storage/metrics-sync.js";
import { openStore } from "../adapters/storage/store.js";
import { ROOT } from "./helpers.js";

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
  const inBand = (y: number) => y > title.y && y < bottom;
  const near = (x: number) => x > title.x - 100 && x < title.x + 1000;
  const ticks = texts
    .filter((t) => t.anchor === "end" && /^-?[\d.]+[kM]?$/.test(t.text.replace("−", "-")) && inBand(t.y) && near(t.x) && Math.abs(t.x - title.x) < 80)
    .map((t) => ({ y: t.middle ? t.y : t.y - 0.35 * t.size, v: tickValue(t.text) }))
    .sort((a, b) => a.y - b.y);
  assert.ok(ticks.length >= 2, `panel ${metric} has fewer than two y tick labels`);
  const [a, b] = [ticks[0]!, ticks[ticks.length - 1]!];
  const value = (py: number) => a.v + ((py - a.y) / (b.y - a.y)) * (b.v - a.v);
  const lines = svgPaths(svg).filter((p) => p.length > 0 && p.every(([x, y]) => inBand(y) && x > title.x - 20 && x < title.x + 1000));
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
});
