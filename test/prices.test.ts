// Prices a deploy assumes: the rates and gaps of the chosen candidate's lines in rlpipe cost's estimate (one price
// story across plan, deploy, the run record and cost --run), nothing guessed, prepaid compute as prepaid, and an
// hourly figure only when every hourly item is priced in one currency.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import type { RunRecord } from "../adapters/providers/run-records.js";
import { estimateCost, leaves } from "../core/cost/estimate.js";
import { describePrices, pricesOfReport } from "../core/prices.js";
import { ratesOfRecord } from "../functions/run-cost.js";
import { loadRecipeFile, parseRecipe } from "../core/recipe/load.js";
import type { Recipe } from "../core/recipe/schema.js";
import { ROOT, editYaml } from "./helpers.js";

const seed = (name: string): Recipe => loadRecipeFile(join(ROOT, "recipes", `${name}.yaml`)).recipe;

const NOW = new Date("2026-11-28T00:00:00Z");
const SEEDS = readdirSync(join(ROOT, "recipes")).filter((f) => f.endsWith(".yaml")).map((f) => f.replace(/\.yaml$/, "")).sort();

describe("prices assumed: the rates rlpipe cost prices the chosen candidate with", () => {
  it("every seed recipe: plan's and deploy's prices are exactly the chosen lines' rates and gaps, prepaid compute as prepaid", () => {
    assert.ok(SEEDS.length >= 5, SEEDS.join(", "));
    for (const name of SEEDS) {
      const report = estimateCost(seed(name), { now: NOW });
      const e = pricesOfReport(report);
      const rated = leaves(report.lines).filter((l) => l.rate !== undefined);
      assert.deepEqual(e.assumed.map((a) => a.item).sort(), [...new Set(rated.map((l) => l.rate!.id))].sort(), name);
      for (const a of e.assumed) assert.equal(a.value, rated.find((l) => l.rate!.id === a.item)!.rate!.value, `${name}: ${a.item}`);
      const needed = leaves(report.lines).filter((l) => l.rateNeeded !== undefined && l.includedIn === undefined).map((l) => l.rateNeeded!.item);
      assert.deepEqual(e.missing.map((m) => m.item).sort(), [...new Set(needed)].sort(), name);
      assert.equal(e.prepaid, report.candidates.find((c) => c.chosen)!.includedIn, name);
    }
  });

  it("TI-ONE: the prepaid group is prepaid and AGS is AGS (no H20 anchor, no E2B rate), storage at COS's rates", () => {
    const e = pricesOfReport(estimateCost(seed("retool-qwen3-4b-tione-ags"), { now: NOW }));
    assert.match(e.prepaid ?? "", /rsg-/);
    assert.deepEqual(e.assumed.map((a) => a.item), ["cos:standard:storage", "cos:requests", "cos:egress"]);
    assert.deepEqual(e.missing.map((m) => [m.item, m.unit]), [["sandbox:ags", "vcpu-second"], ["sandbox:ags:memory", "gib-second"]]);
    assert.equal(e.perHour, undefined, "prepaid compute has no hourly rate");
    const line = describePrices(e);
    assert.match(line, /^compute prepaid \(prepaid resource group rsg-xxxxxxxx/);
    assert.match(line, /rate needed for sandbox:ags \[vcpu-second\]/);
    assert.doesNotMatch(line, /HCCPNV6|e2b|anchor/);
  });

  it("a self-hosted H200 cluster: the anchor rate × the cards the job holds, and the hourly figure", () => {
    const r = seed("retool-qwen2.5-32b-h200");
    const e = pricesOfReport(estimateCost(r, { provider: "slurm", now: NOW }));
    const cards = r.resources.nodes * r.resources.devicesPerNode;
    const h200 = e.assumed.find((a) => a.item === "device:H200")!;
    assert.deepEqual([h200.unit, h200.quantity, h200.confidence], ["device-hour", cards, "anchor"]);
    assert.deepEqual(e.perHour, { value: Math.round(h200.value * cards * 100) / 100, currency: h200.currency });
    assert.match(describePrices(e), new RegExp(`device:H200 ${h200.value} ${h200.currency}/device-hour × ${cards} \\(anchor\\).*≈ ${e.perHour!.value} ${h200.currency}/hour of compute`));
  });

  it("ModelArts: a flavor has no public price — rate needed, not guessed — until the recipe states one, which wins", () => {
    const r = seed("qwen3-1.7b-code-toolcall");
    const flavor = r.targets!.modelarts!.flavor!;
    const none = pricesOfReport(estimateCost(r, { provider: "modelarts", now: NOW }));
    assert.deepEqual(none.missing.find((m) => m.item === `modelarts:${flavor}`)?.quantity, r.resources.nodes);
    assert.match(describePrices(none), new RegExp(`rate needed for modelarts:${flavor.replaceAll(".", "\\.")} \\[node-hour\\].*add it under prices: in the recipe`));
    const quoted: Recipe = { ...r, prices: [{ item: `modelarts:${flavor}`, value: 180, currency: "CNY", unit: "node-hour", source: "console quote 2026-11" }] };
    const e = pricesOfReport(estimateCost(quoted, { provider: "modelarts", now: NOW }));
    const mine = e.assumed.find((a) => a.item === `modelarts:${flavor}`)!;
    assert.deepEqual([mine.value, mine.currency, mine.unit, mine.quantity, mine.confidence], [180, "CNY", "node-hour", r.resources.nodes, "recipe"]);
    assert.match(mine.source, /console quote 2026-11/);
    assert.deepEqual(e.perHour, { value: 180 * r.resources.nodes, currency: "CNY" });
    assert.equal(e.missing.some((m) => m.item === `modelarts:${flavor}`), false);
  });

  it("the run record's prices give rlpipe cost --run the deploy's estimate again: same totals from the recorded rates", () => {
    for (const name of ["retool-qwen2.5-32b-h200", "retool-qwen3-4b-tione-ags"]) {
      const r = seed(name);
      const report = estimateCost(r, { now: NOW });
      const record = { prices: pricesOfReport(report).assumed, createdAt: NOW.toISOString() } as unknown as RunRecord;
      const again = estimateCost(r, { now: NOW, overrides: { user: ratesOfRecord(record) } });
      assert.deepEqual(again.totals, report.totals, name);
      assert.equal(again.chosen, report.chosen, name);
    }
  });

  it("none assumed: a run billed for nothing says so", () => {
    const e = pricesOfReport({ ...estimateCost(seed("local-demo"), { now: NOW }), lines: [] });
    assert.deepEqual([e.assumed, e.missing], [[], []]);
    assert.match(describePrices(e), /^none assumed/);
  });

  it("the recipe's prices: are validated with their paths and lines", () => {
    const file = join(ROOT, "recipes", "local-demo.yaml");
    const text = editYaml(readFileSync(file, "utf8"), [[["prices"], [{ item: "device:H20", value: -1, currency: "EUR", unit: "device-hour" }]]]);
    assert.throws(() => parseRecipe(text, "demo.yaml"), (e: Error) => {
      assert.match(e.message, /demo\.yaml:\d+:\d+: prices\[0\]\.value: expected a positive number, got -1/);
      assert.match(e.message, /demo\.yaml:\d+:\d+: prices\[0\]\.currency: expected one of CNY, USD, got "EUR"/);
      return true;
    });
  });
});
