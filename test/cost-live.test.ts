// Live prices for `rlpipe cost --online`, against strict loopback fakes that verify every signature: ModelArts'
// flavor list (SDK-HMAC-SHA256) gives the flavor's billing code and unit count, Huawei BSS ListOnDemandResourceRatings
// (SDK-HMAC-SHA256) prices the code per hour; TI-ONE DescribeBillingSpecs / DescribeBillingSpecsPrice (TC3) price
// postpaid specs in fen. Units are converted (× unit_num per node; fen ÷ 100), answers are cached with their date
// and reused within the maximum age, refreshed after it; failures carry the API's error code (exit 3), missing
// credentials are invalid input (exit 2) with a hint.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, beforeEach, describe, it } from "node:test";
import { fetchLivePrices, livePriceProviders } from "../adapters/providers/live-prices.js";
import { PriceCache, pricesCachePath } from "../adapters/providers/price-cache.js";
import { ProviderError } from "../adapters/providers/provider.js";
import { RlpipeError } from "../core/errors.js";
import { parseRecipe } from "../core/recipe/load.js";
import type { Recipe } from "../core/recipe/schema.js";
import { FakeBss } from "./fakes/bss-fake.js";
import { fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { FakeModelArts } from "./fakes/modelarts-fake.js";
import { TioneFake } from "./fakes/tione-fake.js";
import { type Ran, runCliAsync } from "./cli-process.js";
import { editYaml, recipeText } from "./helpers.js";
import type { CostLine, CostReport } from "../core/cost/types.js";


/** The CLI as a child process (its own environment only: no credential of this machine leaks in). */
const rlpipe = (args: string[], env: Record<string, string>, cwd: string): Promise<Ran> => runCliAsync(args, { cwd, env, timeoutMs: 240_000 });

const allLines = (ls: readonly CostLine[]): CostLine[] => ls.flatMap((l) => [l, ...allLines(l.children ?? [])]);

const AK = fakeHuaweiAk();
const SK = fakeHuaweiSk();
const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
const SECRET_ID = fakeTencentSecretId();
const SECRET_KEY = fakeTencentSecretKey();
const REGION = "cn-southwest-2";
const MA_SERVICE = "hws.service.type.modelarts";
const MA_RESOURCE = "hws.resource.type.modelarts";

const recipeOf = (text: string): Recipe => parseRecipe(text, "edited.yaml").recipe;
const modelartsRecipe = (flavor = "modelarts.kat1.8xlarge", extra: [(string | number)[], unknown][] = []) =>
  recipeOf(editYaml(recipeText("qwen3-1.7b-code-toolcall"), [[["targets", "modelarts", "flavor"], flavor], ...extra]));
const tioneRecipe = (worker = "TI.GN7.8XLARGE128.POST") => recipeOf(editYaml(recipeText("retool-qwen3-4b-tione-ags"), [
  [["targets", "tione", "chargeType"], "POSTPAID_BY_HOUR"],
  [["targets", "tione", "resourceGroupId"], undefined],
  [["targets", "tione", "head"], { instanceType: "TI.S.MEDIUM.POST", count: 1 }],
  [["targets", "tione", "worker"], { instanceType: worker, count: 2 }],
]));

async function rejects(p: Promise<unknown>): Promise<RlpipeError> {
  try { await p; } catch (e) { assert.ok(e instanceof RlpipeError, `not an RlpipeError: ${String(e)}`); return e; }
  assert.fail("expected a failure");
}

describe("live prices: ModelArts flavors priced by Huawei BSS", () => {
  let dir: string;
  let ma: FakeModelArts;
  let bss: FakeBss;
  let env: Record<string, string>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-live-"));
    ma = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID }).start();
    bss = await new FakeBss({
      ak: AK, sk: SK, projectIds: [PID], discount: 0.2,
      products: [
        // the 8-card flavor is billed as 8 × the 1-card code (the reference's modelarts.kat1.8xlarge → kat1.xlarge × 8)
        { cloud_service_type: MA_SERVICE, resource_type: MA_RESOURCE, resource_spec: "modelarts.kat1.xlarge", region: REGION, yuanPerHour: 3.125 },
        { cloud_service_type: MA_SERVICE, resource_type: MA_RESOURCE, resource_spec: "modelarts.bm.npu.arm.8snt9b2.d", region: REGION, yuanPerHour: 41.5 },
      ],
    }).start();
    env = {
      HOME: dir, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID,
      MODELARTS_ENDPOINT: ma.endpoint, BSS_ENDPOINT: bss.endpoint, RLPIPE_PRICES_CACHE: join(dir, "prices-cache.json"),
    };
  });
  after(async () => {
    await ma.close();
    await bss.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => { rmSync(env["RLPIPE_PRICES_CACHE"]!, { force: true }); });

  it("prices the flavor's billing code per hour, × unit_num per node, after the account's discount, in CNY", async () => {
    const before = bss.inquiries.length;
    const live = await fetchLivePrices({ env, recipe: modelartsRecipe(), providers: ["modelarts"] });
    assert.equal(live.rates.length, 1);
    const r = live.rates[0]!;
    // 3.125 CNY/h list × (1 − 0.2) = 2.5 per card-code hour; the node is 8 of them.
    assert.deepEqual({ id: r.id, value: r.value, currency: r.currency, unit: r.unit, region: r.region, confidence: r.confidence },
      { id: "modelarts:modelarts.kat1.8xlarge", value: 20, currency: "CNY", unit: "node-hour", region: REGION, confidence: "live" });
    assert.match(r.source, /Huawei BSS ListOnDemandResourceRatings.*modelarts\.kat1\.xlarge × 8.*list price 25 CNY\/node-hour/);
    assert.match(r.dateRead, /^\d{4}-\d{2}-\d{2}$/);
    assert.equal(bss.inquiries.length, before + 1);
    const inquiry = bss.inquiries.at(-1)!;
    assert.equal(inquiry["project_id"], PID);
    assert.deepEqual(inquiry["product_infos"], [{
      id: "1", cloud_service_type: MA_SERVICE, resource_type: MA_RESOURCE, resource_spec: "modelarts.kat1.xlarge", region: REGION,
      usage_factor: "Duration", usage_value: 1, usage_measure_id: 4, subscription_num: 1, resource_size: 1, size_measure_id: 14,
    }]);
    assert.deepEqual(live.fetches.map((f) => [f.api, f.cached]), [["Huawei BSS ListOnDemandResourceRatings", false]]);
  });

  it("reuses the cached answer within its age (no request), and asks again after it", async () => {
    let clock = Date.parse("2026-11-20T08:00:00Z");
    const cache = () => new PriceCache(env["RLPIPE_PRICES_CACHE"]!, 24 * 3_600_000, () => new Date(clock));
    const recipe = modelartsRecipe("modelarts.bm.npu.arm.8snt9b2.d");
    const first = await fetchLivePrices({ env, recipe, providers: ["modelarts"], cache: cache() });
    assert.equal(first.rates[0]!.value, 33.2); // 41.5 × 0.8, unit_num 1
    const stored = JSON.parse(readFileSync(env["RLPIPE_PRICES_CACHE"]!, "utf8")) as { entries: Record<string, { fetchedAt: string }> };
    assert.deepEqual(Object.values(stored.entries).map((e) => e.fetchedAt), ["2026-11-20T08:00:00.000Z"]);
    assert.ok(!readFileSync(env["RLPIPE_PRICES_CACHE"]!, "utf8").includes(AK), "the cache names no access key");

    const flavorLists = ma.stats.flavorLists;
    const inquiries = bss.inquiries.length;
    clock += 23 * 3_600_000; // younger than 24 h
    const again = await fetchLivePrices({ env, recipe, providers: ["modelarts"], cache: cache() });
    assert.deepEqual(again.rates, first.rates);
    assert.deepEqual(again.fetches.map((f) => [f.cached, f.fetchedAt]), [[true, "2026-11-20T08:00:00.000Z"]]);
    assert.equal(ma.stats.flavorLists, flavorLists, "no flavor list");
    assert.equal(bss.inquiries.length, inquiries, "no price inquiry");

    clock += 2 * 3_600_000; // 25 h: stale
    const fresh = await fetchLivePrices({ env, recipe, providers: ["modelarts"], cache: cache() });
    assert.equal(fresh.fetches[0]!.cached, false);
    assert.equal(bss.inquiries.length, inquiries + 1);
    assert.equal(ma.stats.flavorLists, flavorLists + 1);

    // RLPIPE_PRICES_MAX_AGE_HOURS=0 always asks.
    await fetchLivePrices({ env: { ...env, RLPIPE_PRICES_MAX_AGE_HOURS: "0" }, recipe, providers: ["modelarts"] });
    assert.equal(bss.inquiries.length, inquiries + 2);
  });

  it("a damaged cache file is ignored and replaced", async () => {
    writeFileSync(env["RLPIPE_PRICES_CACHE"]!, "{not json");
    const live = await fetchLivePrices({ env, recipe: modelartsRecipe(), providers: ["modelarts"] });
    assert.equal(live.rates[0]!.value, 20);
    assert.equal(JSON.parse(readFileSync(env["RLPIPE_PRICES_CACHE"]!, "utf8")).schema, "rlpipe.prices-cache");
  });

  it("refused credentials at BSS: exit 3 naming the API and its code, no secret in the message", async () => {
    const strict = await new FakeBss({ ak: AK, sk: fakeHuaweiSk(), projectIds: [PID], products: [] }).start();
    try {
      const e = await rejects(fetchLivePrices({ env: { ...env, BSS_ENDPOINT: strict.endpoint }, recipe: modelartsRecipe(), providers: ["modelarts"] }));
      assert.equal(e.exitCode, 3);
      assert.equal(e.code, "bss_auth_failed");
      assert.equal((e as ProviderError).providerCode, "APIGW.0301");
      assert.match(e.message, /Huawei BSS ListOnDemandResourceRatings refused the credentials: HTTP 401 APIGW\.0301/);
      assert.match(e.hint ?? "", /without --online, rlpipe cost prices from the catalog/);
      assert.ok(!`${e.message}${e.hint}`.includes(SK));
      assert.deepEqual(strict.rejected.map((r) => r.code), ["APIGW.0301"]);
    } finally {
      await strict.close();
    }
  });

  it("refused credentials at ModelArts: exit 3 with APIGW.0301, before BSS is asked", async () => {
    const inquiries = bss.inquiries.length;
    const e = await rejects(fetchLivePrices({ env: { ...env, HUAWEICLOUD_SDK_SK: fakeHuaweiSk() }, recipe: modelartsRecipe(), providers: ["modelarts"] }));
    assert.equal(e.exitCode, 3);
    assert.equal((e as ProviderError).providerCode, "APIGW.0301");
    assert.match(e.message, /ModelArts list training flavors failed: HTTP 401 APIGW\.0301/);
    assert.equal(bss.inquiries.length, inquiries);
  });

  it("BSS's documented refusals: product not found (CBC.99006006), a project of another account (CBC.0151)", async () => {
    const elsewhere = await rejects(fetchLivePrices({ env, recipe: modelartsRecipe("modelarts.vm.cpu.8u"), providers: ["modelarts"] }));
    assert.deepEqual([elsewhere.exitCode, elsewhere.code, (elsewhere as ProviderError).providerCode], [3, "bss_product_not_found", "CBC.99006006"]);
    const other = await new FakeBss({ ak: AK, sk: SK, projectIds: ["ffffffffffffffffffffffffffffffff"], products: [] }).start();
    try {
      const e = await rejects(fetchLivePrices({ env: { ...env, BSS_ENDPOINT: other.endpoint }, recipe: modelartsRecipe(), providers: ["modelarts"] }));
      assert.deepEqual([e.exitCode, (e as ProviderError).providerCode], [3, "CBC.0151"]);
    } finally {
      await other.close();
    }
  });

  it("a flavor ModelArts does not list is a recipe problem (exit 2) naming the region", async () => {
    const e = await rejects(fetchLivePrices({ env, recipe: modelartsRecipe("modelarts.bm.gpu.nope"), providers: ["modelarts"] }));
    assert.deepEqual([e.exitCode, e.code], [2, "flavor_unknown"]);
    assert.match(e.message, /modelarts\.bm\.gpu\.nope is not among the 3 training flavors ModelArts lists in cn-southwest-2/);
  });

  it("no credentials: exit 2 with the hint, nothing asked", async () => {
    const requests = bss.requests;
    const e = await rejects(fetchLivePrices({ env: { HOME: dir, MODELARTS_ENDPOINT: ma.endpoint, BSS_ENDPOINT: bss.endpoint }, recipe: modelartsRecipe(), providers: ["modelarts"] }));
    assert.deepEqual([e.exitCode, e.code], [2, "credentials_missing"]);
    assert.match(`${e.message} ${e.hint}`, /HUAWEICLOUD_SDK_AK/);
    assert.equal(bss.requests, requests);
  });

  it("rlpipe cost --online prices the compute with the live rate end to end; offline it does not ask", async () => {
    const recipeFile = join(dir, "ma.yaml");
    writeFileSync(recipeFile, editYaml(recipeText("qwen3-1.7b-code-toolcall"), [[["targets", "modelarts", "flavor"], "modelarts.kat1.8xlarge"]]));
    const inquiries = bss.inquiries.length;
    const off = await rlpipe(["cost", recipeFile, "--provider", "modelarts", "--json"], env, dir);
    assert.equal(off.code, 0, off.err);
    assert.equal((JSON.parse(off.out) as CostReport).mode, "offline");
    assert.equal(bss.inquiries.length, inquiries, "offline asks nothing");

    const on = await rlpipe(["cost", recipeFile, "--provider", "modelarts", "--online", "--json"], env, dir);
    assert.equal(on.code, 0, on.err);
    const report = JSON.parse(on.out) as CostReport;
    assert.equal(report.mode, "online");
    assert.equal(bss.inquiries.length, inquiries + 1);
    const compute = allLines(report.lines).filter((l) => l.component === "compute" && l.children === undefined);
    assert.ok(compute.length > 0);
    for (const l of compute) {
      assert.deepEqual([l.basis, l.rate?.id, l.rate?.value, l.rate?.confidence, l.currency], ["live", "modelarts:modelarts.kat1.8xlarge", 20, "live", "CNY"]);
      // cost = quantity × 20 CNY/node-hour (both rounded to 6 significant digits by the estimate)
      for (const k of ["low", "expected", "high"] as const) assert.ok(Math.abs(l.cost![k] - l.quantity[k] * 20) <= 1e-5 * l.cost![k], `${l.id} ${k}: ${l.cost![k]} vs ${l.quantity[k]} × 20`);
    }
    assert.ok(report.priceSources.some((r) => r.confidence === "live" && /Huawei BSS ListOnDemandResourceRatings/.test(r.source)));
    assert.ok(report.assumptions.some((a) => /^live prices: Huawei BSS ListOnDemandResourceRatings for modelarts:modelarts\.kat1\.8xlarge fetched /.test(a)));
    assert.match(on.err, /live prices: Huawei BSS ListOnDemandResourceRatings/);

    // A second run within the cache's age asks nothing, and says the price was reused.
    const again = await rlpipe(["cost", recipeFile, "--provider", "modelarts", "--online", "--json"], env, dir);
    assert.equal(again.code, 0, again.err);
    assert.equal(bss.inquiries.length, inquiries + 1);
    assert.ok((JSON.parse(again.out) as CostReport).assumptions.some((a) => /reused from the price cache/.test(a)));
  });

  it("rlpipe cost --online with refused credentials exits 3 naming the API and its code; without credentials exits 2 with the hint", async () => {
    const recipeFile = join(dir, "ma2.yaml");
    writeFileSync(recipeFile, recipeText("qwen3-1.7b-code-toolcall"));
    const strict = await new FakeBss({ ak: AK, sk: fakeHuaweiSk(), projectIds: [PID], products: [] }).start();
    try {
      const bad = await rlpipe(["cost", recipeFile, "--provider", "modelarts", "--online"], { ...env, BSS_ENDPOINT: strict.endpoint }, dir);
      assert.equal(bad.code, 3, bad.err);
      assert.match(bad.err, /Huawei BSS ListOnDemandResourceRatings refused the credentials: HTTP 401 APIGW\.0301/);
      assert.match(bad.err, /without --online, rlpipe cost prices from the catalog/);
      assert.ok(!bad.err.includes(SK) && !bad.out.includes(SK));
      const json = await rlpipe(["cost", recipeFile, "--provider", "modelarts", "--online", "--json"], { ...env, BSS_ENDPOINT: strict.endpoint }, dir);
      assert.equal(json.code, 3);
      assert.equal((JSON.parse(json.out) as { error: { code: string } }).error.code, "bss_auth_failed");
    } finally {
      await strict.close();
    }
    const none = await rlpipe(["cost", recipeFile, "--provider", "modelarts", "--online"], { HOME: dir, MODELARTS_ENDPOINT: ma.endpoint, BSS_ENDPOINT: bss.endpoint, RLPIPE_PRICES_CACHE: env["RLPIPE_PRICES_CACHE"]! }, dir);
    assert.equal(none.code, 2, none.err);
    assert.match(none.err, /no Huawei Cloud credentials for ModelArts/);
    assert.match(none.err, /hint: .*~?\.huaweicloud\/credentials|HUAWEICLOUD_SDK_AK/);
  });

  it("a dedicated pool is billed by the pool: no price is asked, a note says why", async () => {
    const requests = bss.requests;
    const live = await fetchLivePrices({ env, recipe: modelartsRecipe(undefined, [[["targets", "modelarts", "poolId"], "pool-0123"]]), providers: ["modelarts"] });
    assert.deepEqual(live.rates, []);
    assert.match(live.notes.join("\n"), /dedicated pool pool-0123/);
    assert.equal(bss.requests, requests);
  });
});

describe("live prices: TI-ONE DescribeBillingSpecs / DescribeBillingSpecsPrice", () => {
  let dir: string;
  let fake: TioneFake;
  let env: Record<string, string>;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-live-tione-"));
    fake = await TioneFake.start([{ secretId: SECRET_ID, secretKey: SECRET_KEY }]);
    env = { HOME: dir, TENCENTCLOUD_SECRET_ID: SECRET_ID, TENCENTCLOUD_SECRET_KEY: SECRET_KEY, TIONE_ENDPOINT: fake.endpoint, RLPIPE_PRICES_CACHE: join(dir, "prices-cache.json") };
  });
  after(async () => {
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    fake.reset();
    rmSync(env["RLPIPE_PRICES_CACHE"]!, { force: true });
  });

  it("converts fen per hour to CNY per node-hour (the doc example: TI.S.MEDIUM.POST 70 fen = 0.70 CNY) and applies the discount", async () => {
    fake.discount = 0.1;
    const live = await fetchLivePrices({ env, recipe: tioneRecipe(), providers: ["tione"] });
    assert.deepEqual(live.rates.map((r) => [r.id, r.value, r.currency, r.unit, r.region, r.confidence]), [
      ["tione:TI.GN7.8XLARGE128.POST", 11.11, "CNY", "node-hour", "ap-shanghai", "live"], // round(1234 × 0.9) = 1111 fen
      ["tione:TI.S.MEDIUM.POST", 0.63, "CNY", "node-hour", "ap-shanghai", "live"], // round(70 × 0.9) = 63 fen
    ]);
    assert.match(live.rates[1]!.source, /TI-ONE DescribeBillingSpecsPrice: RealTotalCost 63 fen for 1 × TI\.S\.MEDIUM\.POST per hour.*list price 70 fen; fen ÷ 100 = CNY/);
    assert.deepEqual(fake.callsOf("DescribeBillingSpecs").map((c) => [c.outcome, c.params]), [[undefined, { ChargeType: "POSTPAID_BY_HOUR", TaskType: "TRAIN" }]]);
    assert.deepEqual(fake.callsOf("DescribeBillingSpecsPrice").map((c) => [c.outcome, c.params]),
      [[undefined, { SpecsParam: [{ SpecName: "TI.GN7.8XLARGE128.POST", SpecCount: 1 }, { SpecName: "TI.S.MEDIUM.POST", SpecCount: 1 }] }]]);
  });

  it("reuses the cached answer within its age and asks again after it", async () => {
    let clock = Date.parse("2026-11-20T08:00:00Z");
    const cache = () => new PriceCache(env["RLPIPE_PRICES_CACHE"]!, 6 * 3_600_000, () => new Date(clock));
    const first = await fetchLivePrices({ env, recipe: tioneRecipe(), providers: ["tione"], cache: cache() });
    clock += 5 * 3_600_000;
    const second = await fetchLivePrices({ env, recipe: tioneRecipe(), providers: ["tione"], cache: cache() });
    assert.deepEqual(second.rates, first.rates);
    assert.equal(fake.callsOf("DescribeBillingSpecsPrice").length, 1);
    clock += 2 * 3_600_000;
    fake.discount = 0.5; // prices changed meanwhile: the refreshed answer shows it
    const third = await fetchLivePrices({ env, recipe: tioneRecipe(), providers: ["tione"], cache: cache() });
    assert.equal(fake.callsOf("DescribeBillingSpecsPrice").length, 2);
    assert.equal(third.rates.find((r) => r.id === "tione:TI.S.MEDIUM.POST")!.value, 0.35);
  });

  it("a wrong secret key: exit 3 with AuthFailure.SignatureFailure, naming the action", async () => {
    const e = await rejects(fetchLivePrices({ env: { ...env, TENCENTCLOUD_SECRET_KEY: fakeTencentSecretKey() }, recipe: tioneRecipe(), providers: ["tione"] }));
    assert.equal(e.exitCode, 3);
    assert.equal((e as ProviderError).providerCode, "AuthFailure.SignatureFailure");
    assert.match(e.message, /TI-ONE DescribeBillingSpecs failed: AuthFailure\.SignatureFailure/);
    assert.ok(!`${e.message}${e.hint}`.includes(SECRET_KEY));
  });

  it("a spec TI-ONE does not sell is a recipe problem (exit 2); a sold-out one is priced with a note", async () => {
    const e = await rejects(fetchLivePrices({ env, recipe: tioneRecipe("TI.GN99.NOPE.POST"), providers: ["tione"] }));
    assert.deepEqual([e.exitCode, e.code], [2, "spec_unknown"]);
    assert.equal(fake.callsOf("DescribeBillingSpecsPrice").length, 0);
    const soldOut = await fetchLivePrices({ env, recipe: tioneRecipe("TI.GN7.20XLARGE320.POST"), providers: ["tione"] });
    assert.equal(soldOut.rates.find((r) => r.id === "tione:TI.GN7.20XLARGE320.POST")!.value, 45.67);
    assert.match(soldOut.notes.join("\n"), /TI\.GN7\.20XLARGE320\.POST is sold out in ap-shanghai/);
  });

  it("a prepaid resource group has no marginal price: nothing is asked; no credentials is exit 2", async () => {
    const prepaid = recipeOf(recipeText("retool-qwen3-4b-tione-ags"));
    const live = await fetchLivePrices({ env, recipe: prepaid, providers: ["tione"] });
    assert.deepEqual(live.rates, []);
    assert.match(live.notes.join("\n"), /prepaid resource group rsg-xxxxxxxx/);
    assert.equal(fake.calls.length, 0);
    const e = await rejects(fetchLivePrices({ env: { HOME: dir, TIONE_ENDPOINT: fake.endpoint }, recipe: tioneRecipe(), providers: ["tione"] }));
    assert.deepEqual([e.exitCode, e.code], [2, "tione_credentials_missing"]);
    assert.match(e.hint ?? "", /TENCENTCLOUD_SECRET_ID/);
  });

  it("rlpipe cost --online --provider tione prices postpaid specs live (fen → CNY per node-hour)", async () => {
    const recipeFile = join(dir, "tione.yaml");
    writeFileSync(recipeFile, editYaml(recipeText("retool-qwen3-4b-tione-ags"), [
      [["targets", "tione", "chargeType"], "POSTPAID_BY_HOUR"], [["targets", "tione", "resourceGroupId"], undefined],
      [["targets", "tione", "head"], { instanceType: "TI.S.MEDIUM.POST", count: 1 }], [["targets", "tione", "worker"], { instanceType: "TI.GN7.8XLARGE128.POST", count: 2 }],
    ]));
    const r = await rlpipe(["cost", recipeFile, "--provider", "tione", "--online", "--json"], env, dir);
    assert.equal(r.code, 0, r.err);
    const report = JSON.parse(r.out) as CostReport;
    const byRate = new Map(allLines(report.lines).filter((l) => l.rate?.confidence === "live").map((l) => [l.rate!.id, l.rate!.value]));
    assert.deepEqual([...byRate.entries()].sort(), [["tione:TI.GN7.8XLARGE128.POST", 12.34], ["tione:TI.S.MEDIUM.POST", 0.7]]);
    assert.equal(fake.callsOf("DescribeBillingSpecsPrice").length, 1);
  });

  it("which providers --online asks: only those with a price API that the recipe targets", () => {
    assert.deepEqual(livePriceProviders("all", tioneRecipe()), ["tione"]);
    assert.deepEqual(livePriceProviders("all", modelartsRecipe()), ["modelarts"]);
    assert.deepEqual(livePriceProviders("local", tioneRecipe()), []);
    assert.equal(pricesCachePath({ HOME: "/home/u" }), "/home/u/.cache/rlpipe/prices-cache.json");
    assert.equal(pricesCachePath({ HOME: "/home/u", XDG_CACHE_HOME: "/c" }), "/c/rlpipe/prices-cache.json");
  });
});

describe("live prices: errors keep their type", () => {
  it("a ProviderError stays one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-live-x-"));
    try {
      // Nothing listens on port 9 of loopback: the refused connection is retried, then reported (exit 3).
      const e = await rejects(fetchLivePrices({
        env: { HOME: dir, HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: "http://127.0.0.1:9", RLPIPE_PRICES_CACHE: join(dir, "c.json") },
        recipe: modelartsRecipe(), providers: ["modelarts"], policy: { attempts: 2, baseDelayMs: 1, maxDelayMs: 2 },
      }));
      assert.ok(e instanceof ProviderError);
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /ModelArts list training flavors: network error/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
