// The whole-run estimate: every seed recipe prices without error on each provider it can target; the step-time
// model reproduces its calibration points; scaling goes the right way; user rates win; a missing price is never
// a number; currencies convert only in the totals, explicitly; the same input gives the same report.
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CATALOG } from "../core/cost/catalog.js";
import { candidateProviders, estimateCost, leaves } from "../core/cost/estimate.js";
import { saveSteps, stageCheckpoints } from "../core/cost/checkpoint-retention.js";
import { CostReportSchema } from "../core/cost/report-schema.js";
import { CALIBRATION, paramsExponentFit, modelStepSeconds } from "../core/cost/step-time.js";
import type { CostLine, CostReport, Range, Rate } from "../core/cost/types.js";
import { RlpipeError } from "../core/errors.js";
import { parseRecipe } from "../core/recipe/load.js";
import type { Provider, Recipe } from "../core/recipe/schema.js";
import { ROOT, SEED_RECIPES, editYaml, loadSeed, planSeed, planText, recipeText } from "./helpers.js";

const now = new Date("2026-11-24T10:00:00Z");
const seed = (name: string): Recipe => loadSeed(name).recipe;
const edited = (name: string, edits: [(string | number)[], unknown][]): Recipe => parseRecipe(editYaml(recipeText(name), edits), `${name}.yaml`).recipe;
const line = (r: CostReport, id: string): CostLine => {
  const l = leaves(r.lines).find((x) => x.id === id) ?? r.lines.find((x) => x.id === id);
  assert.ok(l !== undefined, `line ${id} in ${leaves(r.lines).map((x) => x.id).join(", ")}`);
  return l;
};
const userRate = (id: string, value: number, currency: "CNY" | "USD", unit: string, more: Partial<Rate> = {}): Rate =>
  ({ id, value, currency, unit, source: "a --rates file", dateRead: "2026-11-20", confidence: "user", ...more });
const close = (a: number, b: number, rel = 1e-5) => assert.ok(Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b), 1e-12), `${a} ≈ ${b}`);

/** Every {low, expected, high} in a report, with its path. */
function ranges(v: unknown, path = "$"): [string, Range][] {
  if (v === null || typeof v !== "object") return [];
  if (Array.isArray(v)) return v.flatMap((x, i) => ranges(x, `${path}[${i}]`));
  const o = v as Record<string, unknown>;
  if (typeof o["low"] === "number" && typeof o["expected"] === "number" && typeof o["high"] === "number") return [[path, o as unknown as Range]];
  return Object.entries(o).flatMap(([k, x]) => ranges(x, `${path}.${k}`));
}

describe("cost estimate: seed recipes", () => {
  const recipes = readdirSync(join(ROOT, "recipes")).filter((f) => f.endsWith(".yaml")).map((f) => f.replace(/\.yaml$/, ""));

  it("every recipe in recipes/ estimates on every provider it can target; reports match the JSON schema and every range is ordered", () => {
    assert.ok(recipes.length >= SEED_RECIPES.length);
    for (const name of recipes) {
      const recipe = seed(name);
      for (const provider of [undefined, ...candidateProviders(recipe), "all"] as (Provider | "all" | undefined)[]) {
        const r = estimateCost(recipe, { now, ...(provider === undefined ? {} : { provider }) });
        const parsed = CostReportSchema.safeParse(r);
        assert.ok(parsed.success, `${name} ${provider}: ${parsed.success ? "" : JSON.stringify(parsed.error.issues.slice(0, 3))}`);
        for (const [path, x] of ranges(r)) {
          assert.ok(x.low <= x.expected && x.expected <= x.high, `${name} ${provider} ${path}: ${JSON.stringify(x)}`);
          assert.ok(x.low >= 0 && Number.isFinite(x.high), `${name} ${provider} ${path}: ${JSON.stringify(x)}`);
        }
        assert.equal(r.candidates.filter((c) => c.chosen).length, 1, `${name} ${provider}: one chosen candidate`);
        assert.ok(r.assumptions.length > 0 && r.exclusions.length > 0);
        if (provider === "all") assert.deepEqual(r.candidates.map((c) => c.provider), candidateProviders(recipe));
      }
    }
  });

  it("the chosen provider is the asked one, else the recipe's cloud target", () => {
    assert.equal(estimateCost(seed("qwen3-1.7b-code-toolcall"), { now }).chosen, "modelarts");
    assert.equal(estimateCost(seed("retool-qwen3-4b-tione-ags"), { now }).chosen, "tione");
    assert.equal(estimateCost(seed("retool-qwen2.5-32b-h200"), { now }).chosen, "ray");
    const docker = estimateCost(seed("qwen3-1.7b-code-toolcall"), { now, provider: "docker" });
    assert.equal(docker.chosen, "docker");
    assert.deepEqual(docker.candidates.map((c) => [c.provider, c.chosen]), [["docker", true], ["modelarts", false]]);
  });

  it("the same recipe and options give the same JSON", () => {
    for (const name of SEED_RECIPES) {
      const a = JSON.stringify(estimateCost(seed(name), { now, provider: "all" }));
      const b = JSON.stringify(estimateCost(seed(name), { now, provider: "all" }));
      assert.equal(a, b, name);
    }
  });
});

describe("cost estimate: step time", () => {
  it("reproduces the calibration points it was fitted on, inside its stated range", () => {
    for (const c of CALIBRATION) {
      const t = modelStepSeconds({ phase: c.phase, params: c.params, tokensPerStep: c.tokensPerStep, devices: c.devices, nodes: 1, device: c.device });
      close(t.seconds.expected, c.seconds);
      assert.ok(t.seconds.low < c.seconds && c.seconds < t.seconds.high);
      assert.deepEqual(t.assumptions, [], "no extrapolation at the calibration point");
    }
    // The seed recipe itself: Qwen3-1.7B, 128 × 8 responses, 2048 + 16384 tokens, 8 Ascend NPUs.
    const r = estimateCost(seed("qwen3-1.7b-code-toolcall"), { now });
    close(r.secondsPerStep.expected, 3596.5);
    const sft = estimateCost(edited("retool-qwen2.5-32b-h200", []), { now }).stages!.find((s) => s.id === "sft")!;
    close(sft.secondsPerStep!.expected, 2627.97 / 372, 1e-4);
    assert.deepEqual(sft.steps, { low: 372, expected: 372, high: 372 }, "2000 rows ÷ 32 × 6 epochs, the step the seed merges");
  });

  it("states its fit: the parameter exponent makes the SFT point predict the RL update phase, which a linear model misses by ≈10×", () => {
    const fit = paramsExponentFit();
    assert.ok(fit.alpha > 0.15 && fit.alpha < 0.3, `alpha ${fit.alpha}`);
    close(fit.published, 3596.5 - 2816.6);
    assert.ok(fit.linearError > 9 && fit.linearError < 11, `linear model error ${fit.linearError}`);
  });

  it("scales the right way: 2× devices → fewer hours, a bigger model or longer responses → more, and ranges widen away from the calibration point", () => {
    const base = estimateCost(seed("qwen3-1.7b-code-toolcall"), { now });
    const twice = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["resources", "devicesPerNode"], 16]]), { now });
    const bigger = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["models", "qwen3-1_7b", "hf"], "Qwen/Qwen3-8B"]]), { now });
    const longer = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["stages", 2, "data", "maxResponseLength"], 32768]]), { now });
    const hours = (r: CostReport) => r.candidates.find((c) => c.chosen)!.hours;
    assert.ok(hours(twice).expected < hours(base).expected);
    close(twice.secondsPerStep.expected, base.secondsPerStep.expected / 2);
    assert.ok(hours(bigger).expected > hours(base).expected);
    assert.ok(hours(longer).expected > hours(base).expected);
    const width = (x: Range) => x.high / x.low;
    assert.ok(width(bigger.secondsPerStep) > width(base.secondsPerStep));
    const twoNodes = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["resources", "nodes"], 2]]), { now });
    assert.ok(twoNodes.secondsPerStep.expected < base.secondsPerStep.expected, "more devices, shorter steps");
    assert.ok(hours(twoNodes).expected >= hours(base).expected / 2, "no better than linear across nodes");
  });

  it("a measured step time (recipe cost.stages or the option) replaces the model and is marked measured", () => {
    const opt = estimateCost(seed("qwen3-1.7b-code-toolcall"), { now, stepSeconds: 1800 });
    assert.deepEqual(opt.secondsPerStep, { low: 1620, expected: 1800, high: 2340 });
    assert.equal(opt.stages!.find((s) => s.id === "rl")!.stepBasis, "measured");
    assert.equal(opt.stages!.find((s) => s.id === "sft")!.stepBasis, "model", "the option applies to RL stages");
    const rec = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["cost"], { stages: { rl: { stepSeconds: 1200, steps: 160 } } }]]), { now });
    assert.equal(rec.secondsPerStep.expected, 1200);
    assert.deepEqual(rec.steps, { low: 160, expected: 160, high: 160 });
    assert.ok(rec.assumptions.some((a) => a.includes("cost.stages.rl.steps = 160")));
  });

  it("steps: rows ÷ prompts per step × epochs, or verl's total_training_steps", () => {
    const rows = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["datasets", "coding-train", "rows"], 1000]]), { now });
    assert.deepEqual(rows.steps, { low: 7 * 15, expected: 7 * 15, high: 7 * 15 }, "⌊1000 / 128⌋ × 15 epochs");
    const capped = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["stages", 2, "overrides"], { "trainer.total_training_steps": 240 }]]), { now });
    assert.deepEqual(capped.steps, { low: 240, expected: 240, high: 240 });
    const unknown = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["datasets", "coding-train", "build", "from"], "hf:someone/else"]]), { now });
    assert.ok(unknown.assumptions.some((a) => /datasets\.coding-train has no row count: assumed 1k–10k–100k rows \(declare datasets\.coding-train\.rows\)/.test(a)));
    assert.throws(() => estimateCost(edited("qwen3-1.7b-code-toolcall", [[["cost"], { stages: { nope: { steps: 1 } } }]]), { now }),
      (e: Error) => e instanceof RlpipeError && e.exitCode === 2 && /cost\.stages\.nope: no stage has id nope/.test(e.message));
  });
});

describe("cost estimate: prices", () => {
  it("a row without a public price yields rate needed and an incomplete total, never a number", () => {
    const r = estimateCost(seed("qwen3-1.7b-code-toolcall"), { now });
    const rl = line(r, "compute.rl");
    assert.equal(rl.cost, undefined);
    assert.equal(rl.rate, undefined);
    assert.deepEqual(rl.rateNeeded, {
      item: "modelarts:modelarts.bm.npu.arm.8snt9b2.d", unit: "node-hour",
      howToSupply: "add { item: modelarts:modelarts.bm.npu.arm.8snt9b2.d, value: <price>, currency: CNY or USD, unit: node-hour } under prices: in the recipe, or to a --rates file",
    });
    assert.equal(r.totals.incomplete, true);
    assert.equal(r.candidates.find((c) => c.chosen)!.cost, undefined);
    assert.match(r.candidates.find((c) => c.chosen)!.note!, /rate needed: modelarts:modelarts\.bm\.npu\.arm\.8snt9b2\.d/);
    const noFlavor = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["targets", "modelarts", "flavor"], undefined]]), { now });
    assert.match(line(noFlavor, "compute.rl").rateNeeded!.howToSupply, /^set targets\.modelarts\.flavor, then add \{ item: modelarts:<flavor>/);
  });

  it("a user rate overrides the catalog row and is marked basis user; a --rates file wins over the recipe's prices:", () => {
    const recipe = edited("qwen3-1.7b-code-toolcall", [[["prices"], [{ item: "modelarts:modelarts.bm.npu.arm.8snt9b2.d", value: 180, currency: "CNY", unit: "node-hour", source: "console quote" }]]]);
    const r = estimateCost(recipe, { now });
    const rl = line(r, "compute.rl");
    assert.equal(rl.basis, "user");
    assert.equal(rl.rate!.confidence, "user");
    assert.equal(rl.rateNeeded, undefined);
    for (const k of ["low", "expected", "high"] as const) close(rl.cost![k], rl.quantity[k] * 180);
    assert.equal(rl.currency, "CNY");
    assert.ok(r.priceSources.some((s) => s.id === "modelarts:modelarts.bm.npu.arm.8snt9b2.d" && s.confidence === "user" && s.source === "console quote"));
    const f = estimateCost(recipe, { now, overrides: { user: [userRate("modelarts:modelarts.bm.npu.arm.8snt9b2.d", 3, "CNY", "node-second")] } });
    assert.equal(line(f, "compute.rl").rate!.value, 3 * 3600, "per node-second, converted to node-hour");
  });

  it("usage lines: E2B sandboxes priced per vCPU-second and GiB-second with pool idle time; AGS needs a rate", () => {
    const ags = estimateCost(seed("retool-qwen3-4b-tione-ags"), { now });
    assert.ok(line(ags, "sandbox.vcpu").rateNeeded !== undefined && line(ags, "sandbox.memory").rateNeeded !== undefined);
    assert.ok(ags.assumptions.some((a) => /billed until killed or timed out/.test(a) && /timeout 300 s/.test(a)));
    assert.match(line(ags, "compute.rl.worker").includedIn!, /prepaid resource group .* \(sunk cost\)/);
    const e2b = estimateCost(edited("retool-qwen3-4b-tione-ags", [[["sandbox", "managed", "provider"], "e2b"], [["cost"], { stages: { rl: { steps: 100 } } }]]), { now });
    const vcpu = line(e2b, "sandbox.vcpu");
    const mem = line(e2b, "sandbox.memory");
    assert.equal(vcpu.currency, "USD");
    assert.equal(vcpu.rate!.value, 0.000014);
    close(mem.quantity.expected, vcpu.quantity.expected / 4, 1e-5);
    assert.ok(vcpu.quantity.low < vcpu.quantity.expected, "idle 0 at low, half the sandbox lifetime expected");
    const noIdle = estimateCost(edited("retool-qwen3-4b-tione-ags", [[["sandbox", "managed", "provider"], "e2b"], [["cost"], { stages: { rl: { steps: 100 } }, usage: { sandboxIdleSecondsPerResponse: 0 } }]]), { now });
    assert.ok(line(noIdle, "sandbox.vcpu").quantity.expected < vcpu.quantity.expected);
  });

  it("a prepaid resource group's candidate is sunk cost: 0 marginal compute with a note saying so, never rate needed", () => {
    const r = estimateCost(seed("retool-qwen3-4b-tione-ags"), { now, provider: "all" });
    const tione = r.candidates.find((c) => c.provider === "tione")!;
    assert.equal(tione.chosen, true);
    assert.deepEqual([tione.cost, tione.currency, tione.unitPrice], [{ low: 0, expected: 0, high: 0 }, "CNY", undefined]);
    assert.equal(tione.includedIn, line(r, "compute.rl.worker").includedIn, "the candidate and the breakdown name the same prepaid group");
    assert.match(tione.includedIn!, /^prepaid resource group rsg-xxxxxxxx \(sunk cost\)$/);
    assert.match(tione.note!, /^prepaid \(sunk\): included in prepaid resource group rsg-xxxxxxxx \(sunk cost\); 0 marginal compute cost$/);
    assert.ok(CostReportSchema.safeParse(r).success);
    // Pay-as-you-go on the same nodes has no public price: that one does need a rate.
    const postpaid = estimateCost(edited("retool-qwen3-4b-tione-ags", [[["targets", "tione", "chargeType"], "POSTPAID_BY_HOUR"]]), { now, provider: "tione" });
    const c = postpaid.candidates.find((x) => x.provider === "tione")!;
    assert.deepEqual([c.cost, c.includedIn], [undefined, undefined]);
    assert.match(c.note!, /^rate needed: /);
  });

  it("co-located sandboxes are part of compute: quantity shown, no cost, not missing", () => {
    const r = estimateCost(seed("retool-qwen2.5-32b-h200"), { now });
    const sb = line(r, "sandbox");
    assert.equal(sb.includedIn, "compute");
    assert.equal(sb.cost, undefined);
    assert.equal(sb.rateNeeded, undefined);
    assert.equal(r.totals.incomplete, false, "H200 has a market anchor; nothing else is billed apart");
    assert.match(line(r, "compute.rl").note!, /anchor price/);
  });

  it("functions: rlpipe's reward function on Lambda is priced per request and per GB-second (arm64)", () => {
    const recipe = edited("retool-qwen3-4b-tione-ags", [
      [["sandbox"], { kind: "rlpipe", deploy: "external", url: "https://abc123.lambda-url.us-east-1.on.aws", managed: { provider: "e2b", template: "code-interpreter-v1", apiKey: { secret: "ags-api-key" } } }],
      [["cost"], { stages: { rl: { steps: 50 } } }],
      [["tools", 0, "preset"], "rlpipe"],
    ]);
    const r = estimateCost(recipe, { now, provider: "ray" });
    const req = line(r, "functions.requests");
    const dur = line(r, "functions.duration");
    assert.equal(req.resource, "lambda:requests");
    close(req.rate!.value, 0.2 / 1e6);
    assert.equal(dur.resource, "lambda:arm64:gb-second");
    assert.ok(dur.quantity.expected > 0 && req.quantity.expected > 0);
    assert.ok(r.assumptions.some((a) => a.includes("lambda-url") && a.includes("AWS Lambda")));
    assert.equal(line(r, "sandbox.vcpu").provider, "e2b", "the function's E2B backend is priced too");
  });

  it("storage and egress follow checkpoints.storage; S3 requests split into PUT and GET", () => {
    const r = estimateCost(edited("retool-qwen2.5-32b-h200", [[["checkpoints"], { storage: "s3://bucket/runs", keep: { last: 2 } }]]), { now });
    const cap = line(r, "storage.capacity");
    assert.equal(cap.resource, "s3:standard:storage");
    assert.match(cap.label, /GB retained/);
    assert.ok(line(r, "storage.put").cost!.expected > 0 && line(r, "storage.get").cost!.expected > 0);
    const egress = line(r, "egress");
    close(egress.quantity.expected, 32e9 * 2 / 1e9, 1e-6);
    assert.ok(egress.rateNeeded !== undefined, "S3 egress beyond the free tier has no captured rate");
    const all = estimateCost(edited("retool-qwen2.5-32b-h200", [[["checkpoints"], { storage: "s3://bucket/runs" }]]), { now });
    assert.ok(line(all, "storage.capacity").quantity.expected > cap.quantity.expected, "keeping every checkpoint stores more");
  });

  it("currencies: lines keep theirs; totals convert explicitly with the fx row, which a rates file can replace", () => {
    const recipe = edited("retool-qwen3-4b-tione-ags", [[["cost"], { stages: { rl: { steps: 100 } } }]]);
    const r = estimateCost(recipe, { now });
    const priced = leaves(r.lines).filter((l) => l.cost !== undefined);
    assert.ok(priced.some((l) => l.currency === "USD"), "COS is priced in USD");
    const sum = (c: "CNY" | "USD") => priced.filter((l) => l.currency === c).reduce((s, l) => s + l.cost!.expected, 0);
    close(r.totals.CNY.expected, sum("CNY") + sum("USD") * r.fx.cnyPerUsd, 1e-4);
    close(r.totals.USD.expected, sum("USD") + sum("CNY") / r.fx.cnyPerUsd, 1e-4);
    assert.equal(r.fx.cnyPerUsd, CATALOG.rows.find((x) => x.id === "fx:CNY/USD")!.value);
    assert.ok(r.assumptions[0]!.startsWith(`totals convert between currencies at ${r.fx.cnyPerUsd} CNY/USD`));
    const r2 = estimateCost(recipe, { now, overrides: { user: [userRate("fx:CNY/USD", 7.5, "CNY", "CNY/USD", { source: "bank" })] } });
    assert.deepEqual(r2.fx, { cnyPerUsd: 7.5, source: "bank", dateRead: "2026-11-20" });
    close(r2.totals.CNY.expected, sum("CNY") + sum("USD") * 7.5, 1e-4);
  });

  it("every priced leaf is quantity × its rate, and every rate is listed among the price sources", () => {
    for (const name of SEED_RECIPES) {
      const r = estimateCost(seed(name), { now, provider: "all" });
      const ids = new Set(r.priceSources.map((s) => s.id));
      for (const l of leaves(r.lines)) {
        if (l.cost === undefined) { assert.ok(l.rateNeeded !== undefined || l.includedIn !== undefined, `${name} ${l.id}: no cost needs a reason`); continue; }
        assert.ok(l.rate !== undefined && ids.has(l.rate.id), `${name} ${l.id}`);
        close(l.cost.expected, l.quantity.expected * l.rate.value, 1e-4);
      }
    }
  });

  it("cumulative cost rises with the steps and ends at the total; the budget cap is judged on the total's range", () => {
    const recipe = edited("retool-qwen2.5-32b-h200", [[["cost"], { stages: { rl: { steps: 400 } }, budget: { cap: 1e9, currency: "CNY" } }]]);
    const r = estimateCost(recipe, { now });
    for (let i = 1; i < r.cumulative.length; i++) {
      assert.ok(r.cumulative[i]!.step >= r.cumulative[i - 1]!.step);
      assert.ok(r.cumulative[i]!.cost.expected >= r.cumulative[i - 1]!.cost.expected);
    }
    close(r.cumulative.at(-1)!.cost.expected, r.totals.CNY.expected, 1e-4);
    assert.equal(r.cumulative.at(-1)!.step, 372 + 400);
    assert.equal(r.budget!.status, "within");
    const status = (cap: number) => estimateCost(edited("retool-qwen2.5-32b-h200", [[["cost"], { stages: { rl: { steps: 400 } }, budget: { cap, currency: "CNY" } }]]), { now }).budget!.status;
    assert.equal(status(r.totals.CNY.low / 2), "over");
    assert.equal(status((r.totals.CNY.expected + r.totals.CNY.high) / 2), "at-risk");
    assert.equal(status((r.totals.CNY.low + r.totals.CNY.expected) / 2), "over");
    const unknown = estimateCost(edited("qwen3-1.7b-code-toolcall", [[["cost"], { budget: { cap: 1e9, currency: "USD" } }]]), { now });
    assert.equal(unknown.budget!.status, "unknown", "an incomplete total cannot be judged within a cap");
  });

  it("cumulative cost accrues as it is incurred: storage held so far during the run, then one point after the run for retention and export", () => {
    // TI-ONE seed: compute is sunk, AGS needs a rate, so the priced lines are COS storage, its requests and egress.
    const r = estimateCost(seed("retool-qwen3-4b-tione-ags"), { now });
    const cny = (l: CostLine) => (l.currency === "USD" ? l.cost!.expected * r.fx.cnyPerUsd : l.cost!.expected);
    const capacity = line(r, "storage.capacity");
    const requests = line(r, "storage.requests");
    const egress = line(r, "egress");
    // 400 steps, saved every 30 and at the last: 14 checkpoints of 4B × 14 bytes, every one kept (no checkpoints.keep),
    // each billed from its save to the run's end, then 1 month (expected) after it.
    const rl = r.stages!.find((s) => s.id === "rl")!;
    const saves = [...Array.from({ length: 13 }, (_, i) => 30 * (i + 1)), 400];
    const heldSteps = saves.reduce((h, at) => h + (400 - at), 0);
    const gbMonthsDuring = (56 * heldSteps * (rl.hours.expected / 400)) / 730;
    const gbMonthsAfter = 14 * 56 * 1;
    close(capacity.quantity.expected, gbMonthsDuring + gbMonthsAfter, 1e-3);
    const during = gbMonthsDuring / (gbMonthsDuring + gbMonthsAfter);
    const after = r.cumulative.at(-1)!;
    const end = r.cumulative.at(-2)!;
    assert.equal(after.afterRun, true);
    assert.equal(after.step, end.step);
    assert.equal(end.afterRun, undefined);
    assert.equal(r.cumulative.filter((p) => p.afterRun === true).length, 1);
    close(after.cost.expected, r.totals.CNY.expected, 1e-4);
    close(end.cost.expected, cny(capacity) * during + cny(requests), 1e-3);
    close(after.cost.expected - end.cost.expected, cny(capacity) * (1 - during) + cny(egress), 1e-3);
    // Stored data grows through the run: by half the steps, a quarter of the run's GB-months and half its requests.
    const mid = r.cumulative.find((p) => p.step >= end.step / 2)!;
    const f = mid.step / end.step;
    assert.ok(mid.cost.expected > 0, "storage is paid for while it is held, not at the end");
    close(mid.cost.expected, cny(capacity) * during * f * f + cny(requests) * f, 2e-2);
    for (const p of r.cumulative) assert.ok(p.cost.low <= p.cost.expected && p.cost.expected <= p.cost.high, JSON.stringify(p));
    assert.match(capacity.note!, /; [\d.,–kM]+ GB-months while the run goes on \(each checkpoint from its save until retired or the end\), [\d.,–kM]+ after it \(kept 0–1–3 months\)/);
    assert.ok(CostReportSchema.safeParse(r).success);
  });
});

// ------------------------------------------------------------------------------------------------ run length (issue 24)

/** The run length each seed published for its RL stage (seed 004 publishes none: 400 as its ReTool sibling, seed 003). */
const PUBLISHED_RL_STEPS: Record<(typeof SEED_RECIPES)[number], number> = {
  "qwen3-1.7b-code-toolcall": 240, "qwen3-1.7b-code-toolcall-sd": 240, "retool-qwen3-4b-ascend": 130,
  "retool-qwen2.5-32b-h200": 400, "retool-qwen3-4b-tione-ags": 400,
};
const rlSteps = (r: CostReport, id = "rl") => r.runLength!.stages.find((s) => s.stage === id)!;
const H200_RL = 2;
const H200_SFT = 0;

describe("cost estimate: steps are what verl will run (run length)", () => {
  it("schedule.totalTrainingSteps caps the steps at min(it, epochs × ⌊rows / batch⌋) and renders to trainer.total_training_steps", () => {
    const capped = edited("retool-qwen2.5-32b-h200", [[["stages", H200_RL, "schedule", "totalTrainingSteps"], 100], [["cost"], {}]]);
    const r = estimateCost(capped, { now });
    assert.deepEqual(rlSteps(r), { stage: "rl", steps: { low: 100, expected: 100, high: 100 }, source: "trainer.total_training_steps in the recipe" });
    assert.equal(r.stages!.find((s) => s.id === "rl")!.steps!.expected, 100);
    // Beyond the epochs, verl ends with the data: 3,499 steps per epoch of DAPO-Math-17k at 512 prompts.
    const beyond = estimateCost(edited("retool-qwen2.5-32b-h200", [[["stages", H200_RL, "schedule", "totalTrainingSteps"], 10_000], [["cost"], {}]]), { now });
    assert.equal(rlSteps(beyond).steps.expected, 3499);
    assert.match(rlSteps(beyond).source, /⌊rows \/ batch⌋ × epochs/);
    // cost.stages.<id>.steps still wins over it.
    const priced = estimateCost(edited("retool-qwen2.5-32b-h200", [[["stages", H200_RL, "schedule", "totalTrainingSteps"], 100], [["cost"], { stages: { rl: { steps: 77 } } }]]), { now });
    assert.deepEqual(rlSteps(priced).steps, { low: 77, expected: 77, high: 77 });
    assert.equal(rlSteps(priced).source, "cost.stages.rl.steps");
    // Rendered for verl, RL (ppo_trainer) and SFT (sft_trainer) alike.
    const text = editYaml(recipeText("retool-qwen2.5-32b-h200"), [[["stages", H200_RL, "schedule", "totalTrainingSteps"], 100], [["stages", H200_SFT, "schedule", "totalTrainingSteps"], 50]]);
    const p = planText(text, "ray");
    assert.ok(p.stages.find((s) => s.id === "rl")!.overrides.includes("trainer.total_training_steps=100"));
    assert.ok(p.stages.find((s) => s.id === "sft")!.overrides.includes("trainer.total_training_steps=50"));
    const sft = estimateCost(parseRecipe(text, "x.yaml").recipe, { now, steps: { stages: { rl: 100 } } });
    assert.deepEqual(rlSteps(sft, "sft").steps, { low: 50, expected: 50, high: 50 }, "SFT: 50 < 62 steps per epoch × 6");
    assert.ok(!planSeed("retool-qwen2.5-32b-h200", "ray").stages.find((s) => s.id === "sft")!.overrides.some((o) => o.startsWith("trainer.total_training_steps")), "unset: not rendered");
  });

  it("--steps (EstimateOptions.steps) changes the steps, the hours and the totals; STAGE=N names a stage; a wrong stage is an error", () => {
    const base = estimateCost(seed("retool-qwen2.5-32b-h200"), { now });
    const longer = estimateCost(seed("retool-qwen2.5-32b-h200"), { now, steps: { training: 800 } });
    assert.deepEqual(rlSteps(longer), { stage: "rl", steps: { low: 800, expected: 800, high: 800 }, source: "--steps" });
    assert.equal(longer.steps.expected, 800);
    assert.ok(longer.runLength!.hours.expected > base.runLength!.hours.expected);
    assert.ok(longer.totals.CNY.expected > base.totals.CNY.expected, `${longer.totals.CNY.expected} > ${base.totals.CNY.expected}`);
    const sft = estimateCost(seed("retool-qwen2.5-32b-h200"), { now, steps: { training: 800, stages: { sft: 10 } } });
    assert.equal(rlSteps(sft, "sft").steps.expected, 10);
    assert.equal(rlSteps(sft).steps.expected, 800);
    const err = (steps: Parameters<typeof estimateCost>[1]["steps"]) => { try { estimateCost(seed("retool-qwen2.5-32b-h200"), { now, steps }); } catch (e) { return e as RlpipeError; } return undefined; };
    assert.equal(err({ stages: { nope: 5 } })?.code, "cost_unknown_stage");
    assert.equal(err({ stages: { merge: 5 } })?.code, "cost_steps_not_training");
  });

  it("every shipped seed recipe: the expected run is at most 60 days and its RL steps within 3× of the length its seed published", () => {
    for (const name of SEED_RECIPES) {
      const r = estimateCost(seed(name), { now });
      const rl = rlSteps(r);
      assert.equal(r.runLength!.maxDays, 60);
      assert.ok(r.runLength!.days.expected <= 60, `${name}: ${r.runLength!.days.expected} days`);
      close(r.runLength!.days.expected, r.runLength!.hours.expected / 24, 1e-4);
      const published = PUBLISHED_RL_STEPS[name];
      assert.ok(rl.steps.expected <= 3 * published && rl.steps.expected >= published / 3, `${name}: ${rl.steps.expected} steps vs ${published} published`);
      assert.equal(rl.source, "trainer.total_training_steps in the recipe");
      assert.deepEqual(r.runLength!.flags, [], name);
      assert.ok(CostReportSchema.safeParse(r).success, name);
    }
  });

  it("a long run is flagged with its step count and what to set; so is a stage priced far past its published length", () => {
    const r = estimateCost(seed("retool-qwen2.5-32b-h200"), { now, steps: { training: 3499 } });
    assert.ok(r.runLength!.days.expected > 60);
    const [long, published] = r.runLength!.flags;
    assert.match(long!, /beyond 60 days: stage rl runs 3,499 steps \(--steps\)/);
    const fit = Number(/(\d+) steps fit in 60 days/.exec(long!)![1]);
    assert.ok(fit > 0 && fit < 3499);
    assert.ok(long!.includes(`set schedule.totalTrainingSteps: ${fit} on stage rl`) && long!.includes(`--steps ${fit}`), long);
    // The suggested length does fit.
    assert.ok(estimateCost(seed("retool-qwen2.5-32b-h200"), { now, steps: { training: fit } }).runLength!.days.expected <= 60);
    assert.match(published!, /^stage rl: 3,499 steps priced, 8\.7× the 400 its published run went \(seed 003: .*\) — set schedule\.totalTrainingSteps: 400 on stage rl .* --steps 400$/);
    // Three times the published length is not flagged; a little more is.
    assert.deepEqual(estimateCost(seed("retool-qwen2.5-32b-h200"), { now, steps: { training: 1200 } }).runLength!.flags.filter((f) => f.includes("published")), []);
    assert.equal(estimateCost(seed("retool-qwen2.5-32b-h200"), { now, steps: { training: 1201 } }).runLength!.flags.filter((f) => f.includes("published")).length, 1);
  });
});

describe("cost estimate: storage follows the checkpoint retention", () => {
  it("saves and retention: every saveEvery steps and the last; keep.last retires the older ones, keep.every keeps its multiples", () => {
    assert.deepEqual(saveSteps(100, 30, "rl"), [30, 60, 90, 100]);
    assert.deepEqual(saveSteps(90, 30, "rl"), [30, 60, 90]);
    assert.deepEqual(saveSteps(100, undefined, "rl"), []);
    assert.deepEqual(saveSteps(100, undefined, "sft"), [100]);
    assert.deepEqual(stageCheckpoints(400, 30, "rl", {}), { saved: 14, retained: 14, heldSteps: 2470 });
    // keep last 2 and every 100th step: 390 and 400 (newest), 300 (a multiple of 100).
    const kept = stageCheckpoints(400, 30, "rl", { last: 2, every: 100 });
    assert.deepEqual([kept.saved, kept.retained], [14, 3]);
    // A retired checkpoint is held until the second newer one is saved: 60 steps for 30…330 but 300 (kept: 100 steps to
    // the end), 40 for 360 (retired at 400); 390 and 400 are held to the end (10 and 0).
    assert.equal(kept.heldSteps, 10 * 60 + 100 + 40 + 10 + 0);
  });

  it("keep.last K prices K checkpoints, not every one saved, and the storage line names the retention it assumed", () => {
    const all = estimateCost(seed("retool-qwen3-4b-tione-ags"), { now, steps: { training: 3000 } });
    const kept = estimateCost(edited("retool-qwen3-4b-tione-ags", [[["checkpoints"], { keep: { last: 3 } }]]), { now, steps: { training: 3000 } });
    const capAll = line(all, "storage.capacity");
    const capKept = line(kept, "storage.capacity");
    // 3,000 steps saved every 30: 100 checkpoints of 4B parameters × 14 bytes = 56 GB each.
    assert.match(capAll.label, /^capacity \(4,800–5,600–6,400 GB retained: 100 of 100 checkpoints, retention: keep all\)$/);
    assert.match(capKept.label, /^capacity \(144–168–192 GB retained: 3 of 100 checkpoints, retention: keep last 3\)$/);
    assert.match(capAll.note!, /^every checkpoint kept: no checkpoints\.keep\.last, so verl's max_actor_ckpt_to_keep is unset/);
    assert.match(capKept.note!, /^the newest 3 kept \(checkpoints\.keep\.last: verl's max_actor_ckpt_to_keep, rlpipe sync --keep-last\)/);
    // After the run: 3 × 56 GB for a month against 100 × 56 GB; during it, each retired one only until 3 newer exist.
    const hoursPerStep = all.stages!.find((s) => s.id === "rl")!.hours.expected / 3000;
    const duringKept = (56 * (97 * 90 + (3000 - 2940) + (3000 - 2970) + 0) * hoursPerStep) / 730;
    close(capKept.quantity.expected, duringKept + 3 * 56, 2e-3);
    assert.ok(capKept.quantity.expected * 10 < capAll.quantity.expected, `${capKept.quantity.expected} vs ${capAll.quantity.expected}`);
    assert.ok(kept.totals.CNY.expected < all.totals.CNY.expected);
    // Every checkpoint is still uploaded once: the same PUTs.
    close(line(kept, "storage.requests").quantity.expected, line(all, "storage.requests").quantity.expected, 1e-6);
  });
});
