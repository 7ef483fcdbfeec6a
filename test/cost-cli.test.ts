// `rlpipe cost`, and the estimate's total in plan and deploy: money and ranges formatted with a currency symbol and
// a precision that fits; the budget verdict (over refuses, at-risk and unknown warn); the terminal table and the
// Markdown report of a hand-made report (structure, sorting, tree, totals, rate-needed rows, sources, the exchange
// rate); then the CLI on the seed recipes with the real estimate: every format, --provider all with one chosen
// candidate, a --rates override shown with basis user, rate-needed rows saying how to supply a rate, bad flags and
// files (exit 2, file:line:col, --json error shape), plan and deploy showing the range, and a deploy over the
// recipe's budget cap refused with nothing sent to the ModelArts fake — and made with --force.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { S3Store } from "../adapters/storage/s3.js";
import { checkBudget } from "../core/cost/budget-check.js";
import { parseRatesFile } from "../core/cost/rates-file.js";
import { formatMoney, formatMoneyRange, formatMoneyTriple, formatQuantity, formatRate } from "../core/cost/render/format.js";
import { renderMarkdown } from "../core/cost/render/markdown.js";
import { formatCostSummary } from "../core/cost/render/summary-line.js";
import { costTable } from "../core/cost/render/table.js";
import { reportView } from "../core/cost/render/view.js";
import type { CostLine, CostReport } from "../core/cost/types.js";
import { RecipeError } from "../core/errors.js";
import { fakeHuaweiAk, fakeHuaweiSk } from "./fakes/credentials.js";
import { FakeModelArts } from "./fakes/modelarts-fake.js";
import { fixtureReport } from "./fixtures/cost-report.js";
import { ROOT, editYaml, planSeed, recipePath, recipeText } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
const T = { timeout: 120_000 };

interface Result { code: number | null; out: string; err: string }

/** The CLI as a child process (fakes live in this process, so it must not block the event loop). */
function rlpipe(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Result> {
  const child = spawn(process.execPath, [CLI, ...args], { cwd: opts.cwd, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: opts.cwd, ...opts.env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => { out += d.toString(); });
  child.stderr.on("data", (d: Buffer) => { err += d.toString(); });
  // A bound for the test, not a timing assertion.
  const t = setTimeout(() => child.kill("SIGKILL"), 90_000);
  return new Promise((resolve) => child.on("close", (code) => { clearTimeout(t); resolve({ code, out, err }); }));
}

function allLines(lines: readonly CostLine[]): CostLine[] {
  return lines.flatMap((l) => [l, ...allLines(l.children ?? [])]);
}

// ------------------------------------------------------------------------------------------------ formatting

describe("cost report: money, quantities and ranges", () => {
  it("money has its currency symbol and a precision that fits the amount; ranges share the larger one's", () => {
    assert.equal(formatMoney(1650, "CNY"), "¥1,650");
    assert.equal(formatMoney(1234567.4, "USD"), "$1,234,567");
    assert.equal(formatMoney(118.8, "CNY"), "¥119");
    assert.equal(formatMoney(12.3, "USD"), "$12.30");
    assert.equal(formatMoney(0.42, "CNY"), "¥0.42");
    assert.equal(formatMoney(0.0042, "USD"), "$0.0042");
    assert.equal(formatMoney(0, "CNY"), "¥0");
    assert.equal(formatMoney(-25, "CNY"), "−¥25.00");
    assert.equal(formatRate(7.5, "CNY"), "¥7.50");
    assert.equal(formatRate(0.000014, "USD"), "$0.000014");
    assert.equal(formatRate(0.0504, "USD"), "$0.0504");
    assert.equal(formatMoneyRange({ low: 89.1, expected: 118.8, high: 148.5 }, "CNY"), "¥89–¥149");
    assert.equal(formatMoneyRange({ low: 5, expected: 5, high: 5 }, "USD"), "$5.00");
    assert.equal(formatMoneyTriple({ low: 0.4, expected: 0.48, high: 0.56 }, "USD"), "$0.40 – $0.48 – $0.56");
    assert.equal(formatMoneyTriple({ low: 4320, expected: 5280, high: 6240 }, "CNY"), "¥4,320 – ¥5,280 – ¥6,240");
    assert.equal(formatQuantity(1_350_000), "1.35M");
    assert.equal(formatQuantity(45_300), "45.3k");
    assert.equal(formatQuantity(1234), "1,234");
    assert.equal(formatQuantity(36.44), "36.4");
  });
});

describe("cost report: the budget cap", () => {
  const complete = (): CostReport => {
    const r = fixtureReport();
    const priced = r.lines.filter((l) => l.rateNeeded === undefined);
    return { ...r, lines: priced, totals: { ...r.totals, incomplete: false } };
  };
  it("over when the expected total is above the cap, at-risk when only the high end is, within below; in the cap's currency", () => {
    const r = complete();
    const { CNY, USD } = r.totals;
    assert.equal(checkBudget(r, { cap: CNY.expected - 1, currency: "CNY" }).status, "over");
    assert.equal(checkBudget(r, { cap: (CNY.expected + CNY.high) / 2, currency: "CNY" }).status, "at-risk");
    assert.equal(checkBudget(r, { cap: CNY.high + 1, currency: "CNY" }).status, "within");
    assert.equal(checkBudget(r, { cap: USD.expected - 1, currency: "USD" }).status, "over");
    assert.equal(checkBudget(r, { cap: USD.high + 1, currency: "USD" }).status, "within");
    const over = checkBudget(r, { cap: 1000, currency: "CNY" });
    assert.match(over.message, new RegExp(`expected ${formatMoney(CNY.expected, "CNY")}.*above the budget cap of ¥1,000`));
  });
  it("an incomplete estimate cannot be checked (unknown), unless its priced lines alone are already over the cap", () => {
    const r = fixtureReport();
    assert.equal(r.totals.incomplete, true);
    const unknown = checkBudget(r, { cap: r.totals.CNY.high * 10, currency: "CNY" });
    assert.equal(unknown.status, "unknown");
    assert.match(unknown.message, /cannot be checked: the estimate is incomplete \(1 rate needed/);
    const over = checkBudget(r, { cap: r.totals.CNY.expected / 2, currency: "CNY" });
    assert.equal(over.status, "over");
    assert.match(over.message, /and that is without the 1 rate needed/);
  });
  it("the one-line summary gives the range in CNY and USD, the expected figure, the rates needed and the verdict", () => {
    const r = fixtureReport();
    const line = formatCostSummary(r, { budget: { cap: 100_000, currency: "CNY" }, command: "rlpipe cost x.yaml" });
    assert.equal(line, `≈ ${formatMoneyRange(r.totals.CNY, "CNY")} / ${formatMoneyRange(r.totals.USD, "USD")} (expected ${formatMoney(r.totals.CNY.expected, "CNY")}; 1 rate needed, not included; budget ¥100,000: UNKNOWN — rlpipe cost x.yaml for the breakdown)`);
  });
});

// ------------------------------------------------------------------------------------------------ renderers

describe("cost report: terminal table and Markdown of a hand-made report", () => {
  const report = fixtureReport();
  const table = costTable(report, { budget: { cap: 5000, currency: "CNY" } });
  const lines = table.split("\n");

  it("the plan header: recipe, offline, catalog dates, no credentials; target, budget and status; run; exchange rate with its date", () => {
    assert.equal(lines[0], "Plan: qwen3-1.7b-code-toolcall  (offline; catalog e2b@2026-07-15, lambda@2026-07-10, modelarts@2026-07-01, obs@2025-11-02; no credentials used)");
    assert.match(lines[1]!, /^Target: modelarts \/ cn-southwest-2 \/ ascend-snt9b-8 \(Ascend:8\) × 1 node +Budget cap: ¥5,000 {3}Status: OVER$/);
    assert.equal(lines[2], "Run: 240 steps (200–280) × 650–670 s/step");
    assert.equal(lines[3], "Exchange rate: USD and CNY converted at ¥7.20 per $1 (test fixture rate, read 2026-06-30)");
    assert.ok(lines.includes("warning: 1 catalog price was read more than 180 days ago (obs:standard-gb-month): check them, or supply current rates with --rates"));
    assert.ok(lines.some((l) => l.startsWith("Budget: the estimated cost (expected ¥5,626;")));
  });

  it("candidates: cheapest first in CNY (USD converted), unpriced last, CNY and USD columns, exactly one ✔ on the chosen row", () => {
    const head = lines.findIndex((l) => /^ PROVIDER +REGION +FLAVOR\/INSTANCE +ACCEL +NODES +UNIT PRICE +EST\. HOURS +EST\. COST \(CNY\) +EST\. COST \(USD\) +CHOSEN$/.test(l));
    assert.ok(head > 0, table);
    const rows = lines.slice(head + 1, head + 4);
    assert.deepEqual(rows.map((r) => r.trim().split(/\s+/)[0]), ["ray", "modelarts", "tione"]);
    assert.match(rows[0]!, /\$1\.50\/device-hour +28–40 +¥2,419–¥3,456 +\$336–\$480 +\(user rate\)$/);
    assert.match(rows[1]!, /¥120\.00\/node-hour +36–52 +¥4,320–¥6,240 +\$600–\$867 +✔$/);
    assert.match(rows[2]!, /rate needed +30–44 +rate needed +rate needed/);
    assert.equal(table.split("✔").length - 1, 1, "one chosen mark");
    // The same report with its candidates and lines in another order prints the same.
    const shuffled: CostReport = { ...report, candidates: [...report.candidates].reverse(), priceSources: [...report.priceSources].reverse() };
    assert.equal(costTable(shuffled, { budget: { cap: 5000, currency: "CNY" } }), table);
  });

  it("the breakdown is a tree with quantity, unit, unit price, cost low – exp – high and basis; TOTAL in CNY and in USD", () => {
    const at = (label: string) => lines.find((l) => l.includes(label))!;
    assert.match(at("Training compute"), /^ ├─ Training compute +36–52 +node-hour +¥120\.00\/node-hour +¥4,320 – ¥5,280 – ¥6,240 +catalog$/);
    assert.match(at("Reward sandboxes"), /^ ├─ Reward sandboxes \(E2B\) .* \(lines below\) +\$25\.30 – \$31\.05 – \$36\.80 +usage-estimate$/);
    assert.match(at("vCPU time"), /^ │  ├─ vCPU time +1\.1M–1\.6M +vcpu-second +\$0\.000014\/vcpu-second +\$15\.40 – \$18\.90 – \$22\.40 +usage-estimate$/);
    assert.match(at("Memory"), /^ │  └─ Memory /);
    assert.match(at("Egress (checkpoint"), /^ └─ Egress \(checkpoint export\) +40–80 +GB +rate needed +rate needed +catalog$/);
    assert.ok(lines.includes(` TOTAL (CNY)${" ".repeat(at("TOTAL (CNY)").indexOf("¥") - 12)}${formatMoneyTriple(report.totals.CNY, "CNY")}`), table);
    assert.match(at("TOTAL (USD)"), new RegExp(`${formatMoneyTriple(report.totals.USD, "USD").replace(/\$/g, "\\$")}$`));
    assert.ok(lines.includes(" priced lines only: 1 line has no rate (below)"));
  });

  it("rate needed rows say what to supply and how (recipe prices: or --rates FILE); exclusions, assumptions and dated sources follow", () => {
    const i = lines.indexOf("Rates needed (1):");
    assert.ok(i > 0);
    assert.match(lines[i + 1]!, /^ {2}- Egress \(checkpoint export\): rate needed for obs:egress-internet per GB — add .* under prices: in the recipe, or in a --rates file\.yaml$/);
    assert.match(lines[i + 2]!, /To supply a rate: add it under prices: in the recipe, or in a YAML file passed with --rates FILE/);
    assert.ok(lines.includes("Excluded: idle time before the first step; image pulls; taxes and discounts"));
    assert.ok(lines.includes("  - 240 steps (200–280): 7,680 rows × 4 epochs ÷ 128 prompts per step"));
    const src = lines.indexOf("Price sources:");
    assert.deepEqual(lines.slice(src + 1, src + 6).map((l) => l.trim().split(/\s+/)[0]), ["e2b:gib-second", "e2b:vcpu-second", "lambda:requests", "modelarts:ascend-snt9b-8", "obs:standard-gb-month"]);
    assert.match(lines[src + 4]!, /modelarts:ascend-snt9b-8 +¥120\.00\/node-hour +cn-southwest-2 +official +read 2026-07-01 +fixture: ModelArts price page$/);
  });

  it("Markdown: the same content as GitHub tables (tree kept with non-breaking spaces, pipes escaped, totals bold)", () => {
    const piped = { ...report.priceSources[0]!, id: "zz:piped", source: "page | table 2" };
    const md = renderMarkdown(reportView({ ...report, exclusions: [...report.exclusions, "a | b"], priceSources: [...report.priceSources, piped] }, { budget: { cap: 5000, currency: "CNY" } }));
    assert.ok(md.includes("| `zz:piped` | ¥120.00/node-hour | cn-southwest-2 | official | 2026-07-01 | page \\| table 2 |"), "a pipe in a cell is escaped");
    assert.match(md, /^## Plan: qwen3-1\.7b-code-toolcall\n\n\*offline; catalog e2b@2026-07-15, .*; no credentials used\*\n/);
    assert.match(md, /\n\| Provider \| Region \| Flavor\/instance \| Accel \| Nodes \| Unit price \| Est\. hours \| Est\. cost \(CNY\) \| Est\. cost \(USD\) \| Chosen \|\n\|---\|---\|---\|---\|---:\|---\|---:\|---\|---\|---\|\n\| ray \|/);
    assert.match(md, /\| modelarts \| cn-southwest-2 \| ascend-snt9b-8 \| Ascend:8 \| 1 \| ¥120\.00\/node-hour \| 36–52 \| ¥4,320–¥6,240 \| \$600–\$867 \| ✔ \|/);
    assert.ok(md.includes("| │\u00a0\u00a0├─\u00a0vCPU time | 1.1M–1.6M |"), "the tree survives Markdown's space folding");
    assert.ok(md.includes(`| **TOTAL (CNY)** |  |  |  | **${formatMoneyTriple(report.totals.CNY, "CNY")}** |  |`));
    assert.ok(md.includes(`| **TOTAL (USD)** |  |  |  | **${formatMoneyTriple(report.totals.USD, "USD")}** |  |`));
    assert.ok(md.includes("| └─\u00a0Egress (checkpoint export) | 40–80 | GB | rate needed | **rate needed** | catalog |"));
    assert.ok(md.includes("**Excluded:** idle time before the first step; image pulls; taxes and discounts; a | b"));
    assert.ok(md.includes("| `modelarts:ascend-snt9b-8` | ¥120.00/node-hour | cn-southwest-2 | official | 2026-07-01 | fixture: ModelArts price page |"));
    assert.ok(md.includes("- **Exchange rate:** USD and CNY converted at ¥7.20 per $1 (test fixture rate, read 2026-06-30)"));
  });
});

describe("cost report: --rates files", () => {
  it("the recipe's prices: entries, as a list or under prices:; errors carry file:line:col", () => {
    const entry = "{item: modelarts:x, value: 12.5, currency: CNY, unit: node-hour, source: quote}";
    assert.deepEqual(parseRatesFile(`- ${entry}\n`, "r.yaml").map((e) => [e.item, e.value]), [["modelarts:x", 12.5]]);
    assert.deepEqual(parseRatesFile(`prices:\n  - ${entry}\n`, "r.yaml").map((e) => e.unit), ["node-hour"]);
    const fail = (text: string): RecipeError => {
      try { parseRatesFile(text, "rates.yaml"); } catch (e) { assert.ok(e instanceof RecipeError); return e; }
      assert.fail("no error");
    };
    const bad = fail("prices:\n  - item: modelarts:x\n    value: -3\n    currency: CNY\n    unit: node-hour\n");
    assert.deepEqual([bad.issues[0]!.file, bad.issues[0]!.line, bad.issues[0]!.col], ["rates.yaml", 3, 12]);
    assert.match(bad.message, /^rates\.yaml:3:12: prices\[0\]\.value: .*got -3/);
    const unit = fail("- {item: x, value: 1, currency: EUR, unit: node-hour}\n");
    assert.match(unit.message, /^rates\.yaml:1:\d+: \[0\]\.currency: /);
    const key = fail("- {item: x, value: 1, currency: CNY, unit: node-hour, price: 2}\n");
    assert.match(key.message, /^rates\.yaml:1:\d+: \[0\]\.price: unknown key "price"/);
    const extra = fail("prices: []\nrates: []\n");
    assert.match(extra.message, /^rates\.yaml:2:1: rates: unknown key "rates"/);
    assert.match(fail("prices: {a: 1}\n").message, /^rates\.yaml:1:9: prices: expected a list of rates, got a mapping/);
    assert.match(fail("- [\n").message, /^rates\.yaml:\d+:\d+: \(recipe\): /);
  });
});
