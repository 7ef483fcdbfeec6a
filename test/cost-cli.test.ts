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
import { ROOT, editYaml, recipePath, recipeText } from "./helpers.js";
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
    assert.ok(lines.includes(" priced lines only: 1 rate is needed (below)"));
  });

  it("rate needed rows say what to supply and how (recipe prices: or --rates FILE); exclusions, assumptions and dated sources follow", () => {
    const i = lines.indexOf("Rates needed (1):");
    assert.ok(i > 0);
    assert.match(lines[i + 1]!, /^ {2}- obs:egress-internet \[GB\], for Egress \(checkpoint export\): add .* under prices: in the recipe, or in a --rates file\.yaml$/);
    assert.match(lines[i + 2]!, /To supply a rate: add it under prices: in the recipe, or in a YAML file passed with --rates FILE/);
    assert.ok(lines.includes("Excluded: idle time before the first step; image pulls; taxes and discounts"));
    assert.ok(lines.includes("  - 240 steps (200–280): 7,680 rows × 4 epochs ÷ 128 prompts per step"));
    const src = lines.indexOf("Price sources:");
    assert.deepEqual(lines.slice(src + 1, src + 6).map((l) => l.trim().split(/\s+/)[0]), ["e2b:gib-second", "e2b:vcpu-second", "lambda:requests", "modelarts:ascend-snt9b-8", "obs:standard-gb-month"]);
    assert.match(lines[src + 4]!, /modelarts:ascend-snt9b-8 +¥120\.00\/node-hour +cn-southwest-2 +official +read 2026-07-01 +fixture: ModelArts price page$/);
  });

  it("a line paid for elsewhere says where, not 'rate needed'; notes are listed once for the lines that share them; nothing priced says so", () => {
    const colocated: CostLine = { id: "sandbox.colocated", component: "sandbox", label: "Sandbox (co-located)", provider: "modelarts", resource: "sandbox:colocated", unit: "sandbox-second", quantity: { low: 10, expected: 20, high: 30 }, basis: "usage-estimate", includedIn: "compute", note: "runs on the training nodes" };
    const noted = report.lines.map((l) => (l.component === "compute" || l.component === "storage" ? { ...l, note: "anchor price" } : l));
    const t = costTable({ ...report, lines: [...noted, colocated] }).split("\n");
    assert.match(t.find((l) => l.includes("Sandbox (co-located)"))!, / — +included in compute +usage-estimate$/);
    const n = t.indexOf("Notes:");
    assert.deepEqual(t.slice(n + 1, n + 3), ["  - Training compute; Checkpoints (OBS): anchor price", "  - Sandbox (co-located): runs on the training nodes"]);
    assert.ok(t.includes("Rates needed (1):"), "an included line needs no rate");
    const unpriced: CostReport = { ...report, lines: [report.lines[4]!], totals: { CNY: { low: 0, expected: 0, high: 0 }, USD: { low: 0, expected: 0, high: 0 }, incomplete: true } };
    const u = costTable(unpriced);
    assert.match(u, /\n TOTAL \(CNY\) +no line has a rate\n TOTAL \(USD\) +no line has a rate\n/);
    assert.equal(formatCostSummary(unpriced, { command: "rlpipe cost x.yaml" }), "unknown: no line has a rate (1 rate needed, not included — rlpipe cost x.yaml for the breakdown)");
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

// ------------------------------------------------------------------------------------------------ the CLI

/** Priced in part (TI-ONE compute has no public rate; COS does), several providers can run it. */
const SEED = "retool-qwen3-4b-tione-ags";
/** Its Ascend flavor has no public price: rate needed until a rate is given. */
const MA_SEED = "qwen3-1.7b-code-toolcall";
const FLAVOR_RATE = "modelarts:modelarts.bm.npu.arm.8snt9b2.d";

describe("rlpipe cost on a seed recipe (the real estimate)", () => {
  let dir: string;
  let report: CostReport;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-cost-cli-"));
    const r = await rlpipe(["cost", recipePath(SEED), "--format", "json"], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    report = JSON.parse(r.out) as CostReport;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("json: the versioned report as is, for every provider by default, with exactly one chosen candidate", () => {
    assert.deepEqual([report.schema, report.version, report.mode, report.recipe.name], ["rlpipe.cost-report", 1, "offline", SEED]);
    assert.equal(report.recipe.file, recipePath(SEED));
    assert.ok(new Set(report.candidates.map((c) => c.provider)).size >= 2, "--provider all (the default) sets providers side by side");
    assert.equal(report.candidates.filter((c) => c.chosen).length, 1);
    assert.ok(report.priceSources.length > 0 && report.assumptions.length > 0 && report.exclusions.length > 0);
  });

  it("table (default): header, candidates with one ✔, the breakdown tree, TOTAL in CNY and USD as the JSON says, exchange rate, sources", async () => {
    const r = await rlpipe(["cost", recipePath(SEED)], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split("\n");
    assert.match(lines[0]!, new RegExp(`^Plan: ${SEED} {2}\\(offline; catalog .*@\\d{4}-\\d{2}-\\d{2}.*; no credentials used\\)$`));
    assert.match(lines[1]!, /^Target: \S+/);
    assert.ok(lines.some((l) => l.startsWith(`Exchange rate: USD and CNY converted at ¥`) && l.includes(report.fx.dateRead)));
    const head = lines.findIndex((l) => l.startsWith(" PROVIDER "));
    const rows = lines.slice(head + 1, head + 1 + report.candidates.length);
    assert.equal(rows.filter((l) => l.endsWith("✔")).length, 1, r.out);
    assert.ok(rows.find((l) => l.endsWith("✔"))!.trim().startsWith(report.chosen));
    assert.ok(lines.some((l) => /^ ├─ /.test(l)) && lines.some((l) => /^ └─ /.test(l)), "a tree");
    assert.ok(r.out.includes(`TOTAL (CNY)`) && r.out.includes(formatMoneyTriple(report.totals.CNY, "CNY")), "the CNY total");
    assert.ok(r.out.includes(formatMoneyTriple(report.totals.USD, "USD")), "the USD total");
    assert.ok(lines.some((l) => l.startsWith("Excluded: ")));
    assert.ok(lines.includes("Price sources:"));
    for (const s of report.priceSources) assert.ok(r.out.includes(s.id) && r.out.includes(`read ${s.dateRead}`), s.id);
  });

  it("a prepaid resource group (the TI-ONE seed) is sunk cost in the candidates, as in the breakdown: table, Markdown and JSON agree", async () => {
    const tione = report.candidates.find((c) => c.provider === "tione")!;
    assert.equal(tione.chosen, true);
    assert.deepEqual(tione.cost, { low: 0, expected: 0, high: 0 });
    assert.match(tione.note!, /^prepaid \(sunk\): included in prepaid resource group rsg-xxxxxxxx \(sunk cost\)/);
    const r = await rlpipe(["cost", recipePath(SEED)], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    const row = r.out.split("\n").find((l) => /^ tione /.test(l))!;
    const hours = tione.hours;
    assert.ok(row.includes(` prepaid (sunk)  `) && row.includes(`${formatQuantity(hours.low)}–${formatQuantity(hours.high)}`), row);
    assert.match(row, / prepaid \(sunk\) +[\d.,k]+–[\d.,k]+ +¥0 \(sunk\) +\$0 \(sunk\) +✔$/, row);
    assert.ok(!row.includes("rate needed"), row);
    assert.match(r.out, /\n │ {2}├─ stage rl: 1 × head 128C1000G .* included in prepaid resource group rsg-xxxxxxxx \(sunk cost\) /, "the breakdown says the same");
    const md = renderMarkdown(reportView(report));
    const mdRow = md.split("\n").find((l) => l.startsWith("| tione |"))!;
    assert.match(mdRow, /\| prepaid \(sunk\) \| [\d.,k]+–[\d.,k]+ \| ¥0 \(sunk\) \| \$0 \(sunk\) \| ✔ \|$/, mdRow);
    // The candidates' sunk note is listed with the other notes, so the ✔ row's reason is on the page.
    assert.ok(md.includes("- chosen candidate tione: prepaid (sunk): included in prepaid resource group rsg-xxxxxxxx (sunk cost); 0 marginal compute cost"), md);
  });

  it("storage capacity says how much is held during the run and how much after it (the split the cumulative chart draws)", () => {
    const capacity = allLines(report.lines).find((l) => l.id === "storage.capacity")!;
    const m = /; (\S+) GB-months while the run goes on \(each checkpoint from its save until retired or the end\), (\S+) after it \(kept (.+) months\)/.exec(capacity.note ?? "");
    assert.ok(m !== null, capacity.note);
    const table = costTable(report);
    assert.ok(table.includes(`  - ${capacity.label}: ${capacity.note}`), table);
    assert.ok(renderMarkdown(reportView(report)).includes(`- ${capacity.label}: ${capacity.note}`));
  });

  it("rate needed rows name the item and how to supply it (recipe prices: or --rates)", async () => {
    assert.ok(allLines(report.lines).some((l) => l.rateNeeded !== undefined), "the TI-ONE seed's compute has no public price either");
    const r = await rlpipe(["cost", recipePath(MA_SEED), "--provider", "modelarts"], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /\nRates needed \(\d+\):\n/);
    const flavor = FLAVOR_RATE.replace(/\./g, "\\.");
    assert.match(r.out, new RegExp(`\\n {2}- ${flavor} \\[node-hour\\], for stage sft: .*; stage rl: .*: add \\{ item: ${flavor}, .* \\} under prices: in the recipe, or to a --rates file\\n`));
    assert.match(r.out, /To supply a rate: add it under prices: in the recipe, or in a YAML file passed with --rates FILE/);
  });

  it("--rates FILE overrides the catalog: the rate shows with basis user and its source, the total moves", async () => {
    const rates = join(dir, "rates.yaml");
    writeFileSync(rates, `prices:\n  - {item: "${FLAVOR_RATE}", value: 43.21, currency: CNY, unit: node-hour, source: "quote 2026-11", dateRead: "2026-11-20"}\n`);
    const j = await rlpipe(["cost", recipePath(MA_SEED), "--provider", "modelarts", "--rates", rates, "--json"], { cwd: dir });
    assert.equal(j.code, 0, j.err);
    const withRate = JSON.parse(j.out) as CostReport;
    const line = allLines(withRate.lines).find((l) => l.rate?.id === FLAVOR_RATE);
    assert.ok(line !== undefined, "the flavor's line has the user's rate");
    assert.deepEqual([line.basis, line.rate!.value, line.rate!.confidence, line.rateNeeded], ["user", 43.21, "user", undefined]);
    assert.ok(withRate.priceSources.some((s) => s.id === FLAVOR_RATE && s.confidence === "user" && s.source.includes("quote 2026-11") && s.dateRead === "2026-11-20"));
    const t = await rlpipe(["cost", recipePath(MA_SEED), "--provider", "modelarts", "--rates", rates], { cwd: dir });
    assert.equal(t.code, 0, t.err);
    assert.match(t.out, /¥43\.21\/node-hour .* user\n/);
    assert.ok(!t.out.includes(`item: ${FLAVOR_RATE},`), "the flavor needs no rate any more");
    assert.ok(t.out.includes(formatMoneyTriple(withRate.totals.CNY, "CNY")));
    assert.doesNotMatch(t.err, /priced nothing/, "a rate that was used draws no warning");
  });

  it("a --rates entry that prices nothing (a mistyped flavor id) is named on stderr with the closest id", async () => {
    const rates = join(dir, "typo-rates.yaml");
    const typo = FLAVOR_RATE.replace("8snt9b2", "8snt9b3");
    writeFileSync(rates, `prices:\n  - {item: "${typo}", value: 43.21, currency: CNY, unit: node-hour, source: "quote 2026-11"}\n`);
    const r = await rlpipe(["cost", recipePath(MA_SEED), "--provider", "modelarts", "--rates", rates], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    assert.ok(r.err.includes(`rate "${typo}" priced nothing in this estimate; did you mean "${FLAVOR_RATE}"?`), r.err);
    assert.match(r.out, /rate needed/, "the typo priced nothing: the flavor still needs a rate");
  });

  it("md and html to --out: the file is written whole and its path printed; html goes to .rlpipe/cost/<recipe>.html by default", async () => {
    const md = await rlpipe(["cost", recipePath(SEED), "--format", "md", "--out", "report.md"], { cwd: dir });
    assert.equal(md.code, 0, md.err);
    assert.equal(md.out, "report.md\n");
    const text = readFileSync(join(dir, "report.md"), "utf8");
    assert.match(text, new RegExp(`^## Plan: ${SEED}\\n`));
    assert.ok(text.includes("| Provider | Region |") && text.includes(`**${formatMoneyTriple(report.totals.CNY, "CNY")}**`));
    assert.match(md.err, new RegExp(`^rlpipe cost: ${SEED} (≈ ¥|unknown)`));
    const html = await rlpipe(["cost", recipePath(SEED), "--format", "html"], { cwd: dir });
    assert.equal(html.code, 0, html.err);
    assert.equal(html.out, `${join(".rlpipe", "cost", `${SEED}.html`)}\n`);
    assert.ok(readFileSync(join(dir, ".rlpipe", "cost", `${SEED}.html`), "utf8").includes(formatMoneyTriple(report.totals.USD, "USD")));
  });

  it("--step-seconds replaces the step-time model", async () => {
    const r = await rlpipe(["cost", recipePath(SEED), "--step-seconds", "123", "--json"], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    const measured = JSON.parse(r.out) as CostReport;
    assert.equal(measured.secondsPerStep.expected, 123);
    assert.ok(measured.secondsPerStep.low <= 123 && measured.secondsPerStep.high >= 123);
    assert.ok(measured.assumptions.some((a) => /measured step time 123 s/.test(a)), "the assumption says the step time was measured");
    assert.notDeepEqual(measured.totals, report.totals);
  });

  it("bad flags and files: exit 2 with what and where (file:line:col), nothing written; --json errors are {error} on stdout", async () => {
    const fmt = await rlpipe(["cost", recipePath(SEED), "--format", "htlm"], { cwd: dir });
    assert.equal(fmt.code, 2);
    assert.match(fmt.err, /--format "htlm": expected one of table, md, html, json \(did you mean "html"\?\)/);
    const prov = await rlpipe(["cost", recipePath(SEED), "--provider", "modelart", "--json"], { cwd: dir });
    assert.equal(prov.code, 2);
    const doc = JSON.parse(prov.out) as { error: Record<string, unknown> };
    assert.deepEqual([doc.error["code"], doc.error["exitCode"]], ["usage", 2]);
    assert.match(String(doc.error["message"]), /--provider "modelart": expected one of all, local, docker, ray, slurm, modelarts, tione \(did you mean "modelarts"\?\)/);
    for (const v of ["0", "abc", "-5"]) {
      const secs = await rlpipe(["cost", recipePath(SEED), `--step-seconds=${v}`], { cwd: dir });
      assert.equal(secs.code, 2);
      assert.match(secs.err, new RegExp(`--step-seconds "${v}": expected a positive number`));
    }
    const unknown = await rlpipe(["cost", recipePath(SEED), "--rate", "x.yaml"], { cwd: dir });
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /unknown option --rate; did you mean --rates\?/);

    const badRecipe = join(dir, "bad.yaml");
    writeFileSync(badRecipe, editYaml(recipeText(SEED), [[["resources", "nodes"], "two"]]));
    const line = readFileSync(badRecipe, "utf8").split("\n").findIndex((l) => /nodes: two/.test(l)) + 1;
    const bad = await rlpipe(["cost", badRecipe, "--json"], { cwd: dir });
    assert.equal(bad.code, 2);
    assert.match(bad.err, new RegExp(`bad\\.yaml:${line}:\\d+: resources\\.nodes: expected`));
    const err = (JSON.parse(bad.out) as { error: Record<string, unknown> }).error;
    assert.deepEqual([err["exitCode"], err["line"], err["path"]], [2, line, "resources.nodes"]);

    const rates = join(dir, "bad-rates.yaml");
    writeFileSync(rates, "- item: x\n  value: 1\n  currency: CNY\n  unit: node-hours\n");
    const badRates = await rlpipe(["cost", recipePath(SEED), "--rates", rates, "--format", "html", "--out", "never.html"], { cwd: dir });
    assert.equal(badRates.code, 2);
    assert.match(badRates.err, /bad-rates\.yaml:4:9: \[0\]\.unit: /);
    assert.equal(existsSync(join(dir, "never.html")), false, "nothing written");
    const missing = await rlpipe(["cost", join(dir, "nope.yaml")], { cwd: dir });
    assert.equal(missing.code, 2);
    assert.match(missing.err, /nope\.yaml: cannot read recipe \(ENOENT\)/);
    const two = await rlpipe(["cost"], { cwd: dir });
    assert.equal(two.code, 2);
    assert.match(two.err, /rlpipe cost takes exactly one recipe file/);
  });

  it("--online without credentials and --run misused are invalid input (exit 2) with a hint (LIVE: test/cost-live and test/cost-actual cover them working)", async () => {
    const online = await rlpipe(["cost", recipePath(MA_SEED), "--provider", "modelarts", "--online", "--json"], { cwd: dir });
    assert.equal(online.code, 2, online.err);
    const e = (JSON.parse(online.out) as { error: Record<string, unknown> }).error;
    assert.equal(e["code"], "credentials_missing");
    assert.match(String(e["message"]), /no Huawei Cloud credentials for ModelArts/);
    const withRecipe = await rlpipe(["cost", recipePath(SEED), "--run", "x-00000001"], { cwd: dir });
    assert.equal(withRecipe.code, 2);
    assert.match(withRecipe.err, /rlpipe cost --run NAME reads the recipe from the run's record: give no recipe file/);
    const unknown = await rlpipe(["cost", "--run", "x-00000001", "--json"], { cwd: dir });
    assert.equal(unknown.code, 2);
    assert.equal((JSON.parse(unknown.out) as { error: Record<string, unknown> }).error["code"], "unknown_run");
  });
});

describe("plan and deploy show the estimate's range", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-cost-plan-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("rlpipe plan: one cost line with the range in CNY and USD, the expected figure, rates needed and where the breakdown is", async () => {
    const j = await rlpipe(["cost", recipePath(MA_SEED), "--provider", "modelarts", "--json"], { cwd: dir });
    const report = JSON.parse(j.out) as CostReport;
    const r = await rlpipe(["plan", recipePath(MA_SEED), "--provider", "modelarts", "--out", "bundle"], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    const line = r.out.split("\n").find((l) => l.startsWith("  cost       "));
    assert.ok(line !== undefined, r.out);
    assert.equal(line, `  cost       ${formatCostSummary(report, { command: `rlpipe cost ${recipePath(MA_SEED)} --provider modelarts` })}`);
    assert.match(line, /rates? needed, not included — rlpipe cost .* for the breakdown\)$/);
    // The bundle's plan file stays as it was: deterministic, no estimate (it has a clock) in it.
    assert.ok(!/rlpipe\.cost-report|generatedAt/.test(readFileSync(join(dir, "bundle", "rlpipe-plan.json"), "utf8")));
  });

  it("rlpipe deploy --dry-run: the same line and, in JSON, the totals", async () => {
    const r = await rlpipe(["deploy", recipePath("local-demo"), "--provider", "local", "--dry-run"], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /\n {2}cost {7}(≈ ¥|unknown: ).* — rlpipe cost \S+local-demo\.yaml --provider local for the breakdown\)\n/);
    const j = await rlpipe(["deploy", recipePath("local-demo"), "--provider", "local", "--dry-run", "--json"], { cwd: dir });
    assert.equal(j.code, 0, j.err);
    const doc = JSON.parse(j.out) as { cost: { totals: CostReport["totals"] } };
    assert.equal(typeof doc.cost.totals.CNY.expected, "number");
  });
});

describe("rlpipe deploy and the recipe's budget cap (ModelArts fake)", () => {
  const AK = fakeHuaweiAk();
  const SK = fakeHuaweiSk();
  const PID = "0a1b2c3d4e5f60718293a4b5c6d7e8f9";
  let fake: FakeModelArts;
  let moto: Moto;
  let home: string;
  const env = () => ({
    HUAWEICLOUD_SDK_AK: AK, HUAWEICLOUD_SDK_SK: SK, HUAWEICLOUD_SDK_PROJECT_ID: PID, MODELARTS_ENDPOINT: fake.endpoint, MODELARTS_TIMEOUT_MS: "2000",
    RLPIPE_RETRY_BUDGET_MS: "2500", OBS_ENDPOINT: moto.endpoint, OBS_REGION: "cn-southwest-2",
    OBS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, OBS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
  });
  /** The seed with rates for its flavor and OBS (so every line is priced) and a cap. */
  const capped = (cap: number, currency = "CNY") => {
    const file = join(home, `capped-${cap}-${currency}.yaml`);
    writeFileSync(file, editYaml(recipeText(MA_SEED), [
      [["prices"], [
        { item: FLAVOR_RATE, value: 90, currency: "CNY", unit: "node-hour", source: "test quote" },
        { item: "obs:standard:storage", value: 0.099, currency: "CNY", unit: "gb-month", source: "test quote" },
        { item: "obs:requests", value: 0.01, currency: "CNY", unit: "10k-requests", source: "test quote" },
        { item: "obs:egress", value: 0.5, currency: "CNY", unit: "gb", source: "test quote" },
      ]],
      [["cost"], { budget: { cap, currency } }],
    ]));
    return file;
  };

  before(async () => {
    home = mkdtempSync(join(tmpdir(), "rlpipe-cost-budget-"));
    fake = await new FakeModelArts({ ak: AK, sk: SK, projectId: PID }).start();
    moto = await startMoto();
    const admin = new S3Store({ scheme: "obs", bucket: "rlpipe-runs", prefix: "", region: "cn-southwest-2", endpoint: moto.endpoint, credentials: TEST_CREDENTIALS });
    await admin.client.send(new CreateBucketCommand({ Bucket: "rlpipe-runs" }));
    await admin.close();
  });
  after(async () => {
    await fake.close();
    await moto.stop();
    rmSync(home, { recursive: true, force: true });
  });

  it("above the cap: refused before anything is sent (exit 2, the figures, the hint); --force creates the job", T, async () => {
    const file = capped(1);
    const refused = await rlpipe(["deploy", file, "--provider", "modelarts", "--yes"], { cwd: home, env: env() });
    assert.equal(refused.code, 2, refused.err);
    assert.match(refused.out, /\n {2}cost {7}≈ ¥.*budget ¥1\.00: OVER/);
    assert.match(refused.err, /^rlpipe: refusing to create \S+: the estimated cost \(expected ¥[\d,.]+; ¥[\d,.]+–¥[\d,.]+\) is above the budget cap of ¥1\.00\n {2}hint: rlpipe cost \S+ --provider modelarts shows the breakdown; raise cost\.budget\.cap in the recipe, make the run smaller, or pass --force to create it anyway$/m);
    assert.equal(fake.stats.requests, 0, "nothing reached ModelArts");
    assert.equal(existsSync(join(home, ".rlpipe", "runs")), false, "no run record");
    const json = await rlpipe(["deploy", file, "--provider", "modelarts", "--yes", "--json"], { cwd: home, env: env() });
    assert.equal(json.code, 2);
    assert.equal((JSON.parse(json.out.trim().split("\n").pop()!) as { error: { code: string } }).error.code, "over_budget");
    // A dry run reports the refusal and exits as the deploy would.
    const dry = await rlpipe(["deploy", file, "--provider", "modelarts", "--dry-run"], { cwd: home, env: env() });
    assert.equal(dry.code, 2, dry.err);
    assert.match(dry.err, /a deploy would refuse: the estimated cost .* above the budget cap of ¥1\.00 \(--force creates it anyway\)/);
    assert.equal(fake.stats.requests, 0);

    const forced = await rlpipe(["deploy", file, "--provider", "modelarts", "--yes", "--force", "--json"], { cwd: home, env: env() });
    assert.equal(forced.code, 0, forced.err);
    assert.match(forced.err, /warning: the estimated cost .* above the budget cap of ¥1\.00.*; creating it anyway \(forced\)/);
    const made = JSON.parse(forced.out.trim().split("\n").pop()!) as { name: string; outcome: string };
    assert.equal(made.outcome, "created");
    assert.equal(fake.jobsNamed(made.name).length, 1);
  });

  it("within the cap the deploy goes on; a cap in USD is checked against the USD total", T, async () => {
    const j = await rlpipe(["cost", capped(1), "--provider", "modelarts", "--json"], { cwd: home });
    const report = JSON.parse(j.out) as CostReport;
    assert.equal(report.totals.incomplete, false, "every line priced once the flavor has a rate");
    const within = await rlpipe(["deploy", capped(Math.ceil(report.totals.USD.high) + 1, "USD"), "--provider", "modelarts", "--dry-run"], { cwd: home, env: env() });
    assert.equal(within.code, 0, within.err);
    assert.match(within.out, /budget \$[\d,]+: WITHIN/);
    assert.equal(within.err.includes("budget"), false, "no warning");
    const risky = await rlpipe(["deploy", capped(Math.floor((report.totals.USD.expected + report.totals.USD.high) / 2), "USD"), "--provider", "modelarts", "--dry-run"], { cwd: home, env: env() });
    assert.match(risky.err, /warning: the expected cost \$[\d,.]+ is within the budget cap of \$[\d,]+, but the high end of the estimate/);
  });

  it("when a rate is missing the cap cannot be checked: a warning, not a refusal", T, async () => {
    const file = join(home, "unpriced.yaml");
    writeFileSync(file, editYaml(recipeText(MA_SEED), [[["cost"], { budget: { cap: 1_000_000_000, currency: "CNY" } }]]));
    const r = await rlpipe(["deploy", file, "--provider", "modelarts", "--dry-run"], { cwd: home, env: env() });
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, /warning: the budget cap of ¥1,000,000,000 cannot be checked: the estimate is incomplete \(\d+ rates? needed/);
  });
});

describe("rlpipe cost --steps and the run's wall time", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-cost-steps-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const json = async (...args: string[]) => {
    const r = await rlpipe(["cost", recipePath(SEED), "--format", "json", ...args], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    return JSON.parse(r.out) as CostReport;
  };

  it("--steps N prices N steps of the RL stage (and STAGE=N the same), changing the hours and the totals", T, async () => {
    const [base, n, named] = await Promise.all([json(), json("--steps", "1000"), json("--steps", "rl=1000")]);
    assert.deepEqual(base.runLength!.stages, [{ stage: "rl", steps: { low: 400, expected: 400, high: 400 }, source: "trainer.total_training_steps in the recipe" }]);
    assert.deepEqual(n.runLength!.stages, [{ stage: "rl", steps: { low: 1000, expected: 1000, high: 1000 }, source: "--steps" }]);
    assert.deepEqual(named.runLength, n.runLength);
    assert.ok(n.runLength!.hours.expected > 2 * base.runLength!.hours.expected);
    assert.ok(n.totals.CNY.expected > base.totals.CNY.expected, "more steps hold more checkpoints for longer");
  });

  it("a bad --steps is a usage error (exit 2) naming the value; an unknown stage names the stage ids", T, async () => {
    const bad = await rlpipe(["cost", recipePath(SEED), "--steps", "many"], { cwd: dir });
    assert.equal(bad.code, 2);
    assert.match(bad.err, /--steps "many": expected a positive whole number of steps/);
    const unknown = await rlpipe(["cost", recipePath(SEED), "--steps", "nope=3"], { cwd: dir });
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /--steps nope=3: no stage has id nope[\s\S]*stage ids: rl/);
  });

  it("the table and Markdown show the wall time in days and hours; a run past 60 days is flagged with its steps and what to set", T, async () => {
    const r = await rlpipe(["cost", recipePath(SEED), "--steps", "14000"], { cwd: dir });
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /\nRun: 14k steps × .* s\/step, wall time [\d,.]+ \([\d,.]+–[\d,.]+\) days = [\d,.k]+ \([\d,.k]+–[\d,.k]+\) h\n/);
    assert.match(r.out, /\nflag: the run is expected to take [\d,]+ days .* beyond 60 days: stage rl runs 14,000 steps \(--steps\); [\d,]+ steps fit in 60 days — set schedule\.totalTrainingSteps: \d+ on stage rl .* --steps \d+\n/);
    const md = await rlpipe(["cost", recipePath(SEED), "--format", "md"], { cwd: dir });
    assert.match(md.out, /\n- \*\*Run:\*\* 400 steps × .*, wall time [\d,.]+ \(.*\) days = [\d,.]+ \(.*\) h\n/);
    assert.ok(!md.out.includes("**Flag:**"), "400 steps: nothing to flag");
  });

  it("the one-line summary (plan, deploy) says the run's length in days and hours", T, async () => {
    const report = await json();
    const line = formatCostSummary(report, { command: false });
    assert.ok(line.includes(`run ≈ ${formatQuantity(report.runLength!.days.expected)} days / ${formatQuantity(report.runLength!.hours.expected)} h`), line);
    const long = formatCostSummary(await json("--steps", "14000"), { command: false });
    assert.match(long, /run ≈ [\d,.]+ days \/ [\d,.k]+ h, over 60 days/);
  });
});
