// Prices a deploy assumes: items from the recipe's resources and target, the recipe's own rates before the
// reference table, nothing guessed, and an hourly figure only when every hourly item is priced in one currency.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { REFERENCE_RATES, describePrices, estimatePrices, jobPriceItems } from "../core/prices.js";
import { loadRecipeFile, parseRecipe } from "../core/recipe/load.js";
import type { Recipe } from "../core/recipe/schema.js";
import { ROOT, editYaml } from "./helpers.js";

const seed = (name: string): Recipe => loadRecipeFile(join(ROOT, "recipes", `${name}.yaml`)).recipe;
const withEdits = (name: string, edit: (doc: Record<string, unknown>) => void): Recipe => {
  const r = structuredClone(seed(name)) as unknown as Record<string, unknown>;
  edit(r);
  return r as unknown as Recipe;
};

describe("prices assumed", () => {
  it("TI-ONE: the worker's cards from its console spec, priced by the public anchor; the sandbox by use", () => {
    const e = estimatePrices(seed("retool-qwen3-4b-tione-ags"), "tione");
    assert.deepEqual(e.assumed.map((a) => [a.item, a.value, a.currency, a.unit, a.quantity, a.confidence]), [
      ["device:HCCPNV6", 7.5, "CNY", "device-hour", 4, "anchor"],
      ["sandbox:e2b", 0.0504, "USD", "vcpu-hour", undefined, "high"],
    ]);
    assert.deepEqual(e.missing, []);
    assert.deepEqual(e.perHour, { value: 30, currency: "CNY" }, "4 cards × 7.5; the usage-billed sandbox is not in the hourly figure");
    assert.match(describePrices(e), /device:HCCPNV6 7\.5 CNY\/device-hour × 4 \(anchor\).*≈ 30 CNY\/hour of compute/);
  });

  it("ModelArts: a flavor has no public price — missing, not guessed — until the recipe states one, which wins", () => {
    const flavored = withEdits("retool-qwen3-4b-ascend", (r) => {
      const targets = ((r as { targets?: Record<string, unknown> }).targets ??= {});
      targets["modelarts"] = { ...(targets["modelarts"] as object | undefined), flavor: "modelarts.bm.snt9.xlarge.8" };
    });
    const none = estimatePrices(flavored, "modelarts");
    assert.deepEqual(none.assumed, []);
    assert.deepEqual(none.missing.map((m) => [m.item, m.quantity]), [["modelarts:modelarts.bm.snt9.xlarge.8", flavored.resources.nodes]]);
    assert.equal(none.perHour, undefined);
    assert.match(describePrices(none), /no price known for modelarts:modelarts\.bm\.snt9\.xlarge\.8 .*add it under prices: in the recipe/);
    const quoted = { ...flavored, prices: [{ item: "modelarts:modelarts.bm.snt9.xlarge.8", value: 180, currency: "CNY" as const, unit: "node-hour" as const, source: "console quote 2026-11" }] };
    const e = estimatePrices(quoted, "modelarts");
    assert.deepEqual(e.assumed, [{ item: "modelarts:modelarts.bm.snt9.xlarge.8", value: 180, currency: "CNY", unit: "node-hour", quantity: flavored.resources.nodes, source: "console quote 2026-11", confidence: "recipe" }]);
    assert.deepEqual(e.perHour, { value: 180 * flavored.resources.nodes, currency: "CNY" });
  });

  it("the recipe's rate beats the reference one; a rate in another unit is not used; mixed currencies give no total", () => {
    const base = seed("retool-qwen3-4b-tione-ags");
    const own = estimatePrices({ ...base, prices: [{ item: "device:HCCPNV6", value: 6, currency: "CNY", unit: "device-hour" }] }, "tione");
    assert.equal(own.assumed[0]!.value, 6);
    assert.equal(own.assumed[0]!.confidence, "recipe");
    const wrongUnit = estimatePrices({ ...base, prices: [{ item: "device:HCCPNV6", value: 6, currency: "CNY", unit: "node-hour" }] }, "tione");
    assert.equal(wrongUnit.assumed[0]!.value, REFERENCE_RATES["device:HCCPNV6"]!.value, "a node-hour rate cannot price device-hours");
    const mixed = withEdits("retool-qwen3-4b-tione-ags", (r) => {
      const t = (r as { targets: { tione: { head: Record<string, unknown> } } }).targets.tione;
      t.head.instanceType = "TI.S.MEDIUM.POST";
    });
    const m = estimatePrices({ ...mixed, prices: [{ item: "device:HCCPNV6", value: 1, currency: "USD", unit: "device-hour" }] }, "tione");
    assert.deepEqual(m.assumed.map((a) => [a.item, a.currency]), [["tione:TI.S.MEDIUM.POST", "CNY"], ["device:HCCPNV6", "USD"], ["sandbox:e2b", "USD"]]);
    assert.equal(m.perHour, undefined, "CNY and USD are never added without an exchange rate");
  });

  it("self-hosted clusters price the recipe's device type; free-text device types and CPU runs price nothing", () => {
    const h200 = seed("retool-qwen2.5-32b-h200");
    assert.deepEqual(jobPriceItems(h200, "slurm").map((i) => [i.item, i.quantity]), [["device:H200", h200.resources.nodes * h200.resources.devicesPerNode]]);
    assert.deepEqual(jobPriceItems(seed("retool-qwen3-4b-ascend"), "ray"), [], "\"Atlas A3: 8 cards = 16 dies\" is a note, not a price key");
    const demo = estimatePrices(seed("local-demo"), "local");
    assert.deepEqual([demo.assumed, demo.missing], [[], []]);
    assert.match(describePrices(demo), /^none assumed/);
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
