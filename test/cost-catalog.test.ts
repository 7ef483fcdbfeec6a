// The price catalog (prices/*.yaml): every row loads, is sourced and dated, nothing without a public source has a
// value; the compiled copy and the report's JSON Schema are current; rates files and unit conversions.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CATALOG, FX_ROW_ID, catalogFx, catalogRow } from "../core/cost/catalog.js";
import { catalogModuleText, parseCatalogFiles } from "../core/cost/catalog-source.js";
import { priceFor, recipeRates } from "../core/cost/rates.js";
import type { Rate } from "../core/cost/types.js";
import { costReportJsonSchema } from "../core/cost/report-schema.js";
import { convertPrice } from "../core/cost/units.js";
import { RlpipeError } from "../core/errors.js";
import { REFERENCE_RATES } from "../core/prices.js";
import { loadSeed, ROOT } from "./helpers.js";

const files = () => readdirSync(join(ROOT, "prices")).filter((f) => f.endsWith(".yaml")).sort()
  .map((name) => ({ name, text: readFileSync(join(ROOT, "prices", name), "utf8") }));

const ROW = (over: Record<string, unknown> = {}) => ({
  id: "x:test", item: "a test row", value: 1, currency: "CNY", unit: "node-hour", source: "https://example.com/prices (test)", dateRead: "2026-11-22", confidence: "official", ...over,
});
const yamlOf = (rows: readonly Record<string, unknown>[], withFx = true) =>
  JSON.stringify({ version: 1, rows: [...rows, ...(withFx ? [ROW({ id: FX_ROW_ID, unit: "CNY/USD", value: 7 })] : [])] });
const rejects = (rows: readonly Record<string, unknown>[], pattern: RegExp, withFx = true) =>
  assert.throws(() => parseCatalogFiles([{ name: "t.yaml", text: yamlOf(rows, withFx) }]), (e: Error) => {
    assert.ok(e instanceof RlpipeError);
    assert.equal(e.exitCode, 2);
    assert.match(e.message, pattern);
    return true;
  });

describe("price catalog", () => {
  it("loads every row of prices/*.yaml; each has a source and a date; only rows with a public source have a value", () => {
    const catalog = parseCatalogFiles(files());
    assert.ok(catalog.rows.length >= 30, `${catalog.rows.length} rows`);
    for (const row of catalog.rows) {
      assert.ok(row.source.length > 10, `${row.id}: source`);
      assert.match(row.dateRead, /^20\d\d-\d\d-\d\d$/, `${row.id}: dateRead`);
      assert.ok(!Number.isNaN(Date.parse(row.dateRead)), `${row.id}: a real date`);
      if (row.value === null) assert.match(`${row.note ?? ""}`, /rate needed/, `${row.id}: a row without a price says "rate needed"`);
      else {
        assert.notEqual(row.confidence, "user", `${row.id}: only the user can price it`);
        assert.match(row.source, /[a-z0-9-]+\.[a-z]{2,}\S*\//i, `${row.id}: a value needs a public source`);
        assert.ok(row.value > 0);
      }
    }
  });

  it("has the rows issue 11 names: ModelArts flavors and TI-ONE specs without a public price, HCCPNV6 as an anchor, sandboxes, functions, storage, egress, fx", () => {
    const value = (id: string) => { const r = catalogRow(CATALOG, id); assert.ok(r !== undefined, `row ${id}`); return r; };
    for (const id of ["modelarts:modelarts.bm.npu.arm.8snt9b2.d", "device:Ascend910B", "tione:spec:128C1000G", "sandbox:ags", "sandbox:ags:memory", "obs:standard:storage", "obs:requests", "obs:egress", "s3:egress", "self-hosted:node-hour", "sandbox:self-hosted"]) {
      assert.equal(value(id).value, null, `${id} has no public price`);
    }
    assert.equal(value("device:HCCPNV6").confidence, "anchor");
    assert.deepEqual([value("sandbox:e2b").value, value("sandbox:e2b").unit, value("sandbox:e2b:memory").value], [0.000014, "vcpu-second", 0.0000045]);
    assert.deepEqual([value("lambda:requests").value, value("lambda:requests").unit], [0.2, "1m-requests"]);
    assert.ok(value("lambda:arm64:gb-second").value! < value("lambda:x86:gb-second").value!, "arm64 is cheaper than x86");
    for (const id of ["functiongraph:requests", "functiongraph:gb-second", "scf:requests", "scf:gb-second", "s3:standard:storage", "s3:put", "s3:get", "cos:standard:storage", "cos:requests", "cos:egress"]) {
      assert.ok(value(id).value! > 0, id);
    }
    assert.equal(value("self-hosted:node-hour").confidence, "user");
    const fx = catalogFx(CATALOG);
    assert.ok(fx.cnyPerUsd > 5 && fx.cnyPerUsd < 9);
    assert.match(fx.dateRead, /^\d{4}-\d{2}-\d{2}$/);
  });

  it("no row's note or source, shown to users, cites a file outside the repository (issue 35: an internal reference file)", () => {
    for (const row of CATALOG.rows) {
      const text = JSON.stringify(row);
      assert.doesNotMatch(text, /\b(?:tione-and-prices|provider-apis|sandbox-apis|recipes-and-verl|anchors-and-style|independent-truth|scale-and-verl|infra)\.md\b/, row.id);
    }
  });

  it("the compiled catalog (core/cost/catalog-data.ts) and schema/cost-report.schema.json are current", () => {
    assert.equal(readFileSync(join(ROOT, "core", "cost", "catalog-data.ts"), "utf8"), catalogModuleText(parseCatalogFiles(files())),
      "run `npm run build && npm run cost-files`");
    assert.deepEqual(JSON.parse(readFileSync(join(ROOT, "schema", "cost-report.schema.json"), "utf8")), costReportJsonSchema(),
      "run `npm run build && npm run cost-files`");
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { files: string[] };
    assert.ok(pkg.files.includes("prices") && pkg.files.includes("schema/cost-report.schema.json"), "the installed CLI ships the catalog sources and the schema");
  });

  it("rejects a value without a public source, a priced user-only row, a duplicate id, a value cut short by an unquoted #, and a catalog without fx", () => {
    rejects([ROW({ source: "a blog somewhere" })], /t\.yaml: rows\[0\]\.source \(x:test\): a row with a value must name a public source/);
    rejects([ROW({ confidence: "user" })], /rows\[0\]\.value \(x:test\): a row only the user can price must have value null/);
    rejects([ROW(), ROW()], /row x:test is also in t\.yaml/);
    rejects([ROW({ value: -1 })], /rows\[0\]\.value \(x:test\): expected a positive number or null/);
    rejects([ROW({ dateRead: "22.11.2026" })], /dateRead \(x:test\): expected a date YYYY-MM-DD/);
    rejects([ROW({ unit: "per-hour" })], /unit \(x:test\): expected one of node-hour/);
    rejects([ROW()], /no fx:CNY\/USD row/, false);
    // YAML reads " #" as the start of a comment: the e2b rows once lost the end of their source that way.
    const cut = `version: 1\nrows:\n  - id: x:test\n    item: t\n    value: 1\n    currency: USD\n    unit: gb\n    source: https://e2b.dev/docs (docs PR #330, merged)\n    dateRead: "2026-11-22"\n    confidence: official\n  - id: fx:CNY/USD\n    item: fx\n    value: 7\n    currency: CNY\n    unit: CNY/USD\n    source: https://example.com/fx\n    dateRead: "2026-11-22"\n    confidence: official\n`;
    assert.throws(() => parseCatalogFiles([{ name: "cut.yaml", text: cut }]), /cut\.yaml: rows\[0\]\.source \(x:test\): unbalanced brackets/);
  });

  it("converts prices between units of one kind, and refuses units of different kinds", () => {
    assert.equal(convertPrice(0.000014, "vcpu-second", "vcpu-hour"), 0.000014 * 3600);
    assert.equal(convertPrice(0.2, "1m-requests", "request"), 0.2 / 1e6);
    assert.equal(convertPrice(0.0133, "10k-requests", "request"), 0.0133 / 1e4);
    assert.equal(convertPrice(36, "node-hour", "node-second"), 0.01);
    assert.equal(convertPrice(1, "node-hour", "device-hour"), undefined);
    assert.equal(convertPrice(1, "gb", "gb-month"), undefined);
  });

  it("the deploy record's reference rates come from the catalog, per hour", () => {
    assert.deepEqual([REFERENCE_RATES["sandbox:e2b"]!.value, REFERENCE_RATES["sandbox:e2b"]!.unit], [0.0504, "vcpu-hour"]);
    assert.equal(REFERENCE_RATES["device:HCCPNV6"]!.confidence, "anchor");
    assert.equal(REFERENCE_RATES["modelarts:modelarts.bm.npu.arm.8snt9b2.d"], undefined, "no public price: no reference rate");
    assert.match(REFERENCE_RATES["sandbox:e2b"]!.source, /PR #330, merged 2026-08-06\)/);
  });
});

describe("user rates", () => {
  const now = new Date("2026-11-24T10:00:00Z");

  it("a user rate wins over the catalog, is converted to the asked unit, and is marked basis user; a unit of another kind is an error", () => {
    const user: Rate[] = [{ id: "sandbox:e2b", value: 0.036, currency: "USD", unit: "vcpu-hour", source: "quote", dateRead: "2026-11-20", confidence: "user" }];
    const ctx = { catalog: CATALOG, overrides: { user }, used: new Map() };
    const p = priceFor(ctx, "sandbox:e2b", "vcpu-second");
    assert.equal(p.basis, "user");
    assert.equal(p.rate!.confidence, "user");
    assert.ok(Math.abs(p.rate!.value - 0.00001) < 1e-15);
    assert.equal(priceFor(ctx, "sandbox:e2b:memory", "gib-second").basis, "catalog");
    const wrong = { catalog: CATALOG, overrides: { user: [{ ...user[0]!, unit: "node-hour" }] }, used: new Map() };
    assert.throws(() => priceFor(wrong, "sandbox:e2b", "vcpu-second"), (e: Error) => e instanceof RlpipeError && e.exitCode === 2 && /per node-hour, which cannot price vcpu-second/.test(e.message));
  });

  it("the recipe's prices: are user rates, dated the day of the estimate unless they say", () => {
    const r = loadSeed("retool-qwen3-4b-tione-ags").recipe;
    const rates = recipeRates({ ...r, prices: [
      { item: "sandbox:ags", value: 0.00002, currency: "CNY", unit: "vcpu-second", source: "AGS quote" },
      { item: "device:HCCPNV6", value: 6, currency: "CNY", unit: "device-hour", dateRead: "2026-11-01", region: "ap-shanghai" },
    ] }, now);
    assert.deepEqual(rates, [
      { id: "sandbox:ags", value: 0.00002, currency: "CNY", unit: "vcpu-second", source: "AGS quote", dateRead: "2026-11-24", confidence: "user" },
      { id: "device:HCCPNV6", value: 6, currency: "CNY", unit: "device-hour", region: "ap-shanghai", source: "recipe prices:", dateRead: "2026-11-01", confidence: "user" },
    ]);
  });
});
