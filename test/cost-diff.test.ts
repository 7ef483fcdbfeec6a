// rlpipe cost HEAD.yaml --diff BASE.yaml (issue 24 item 5): diffReports on two real estimates of a shipped seed
// recipe whose head changes something real — the node count, the device's rate under prices:, checkpoint storage
// added — with every expectation computed from the two reports; an added line without a rate keeps the total
// incomplete and is never shown as ¥0; the Markdown comment has its headline and table; the JSON parses and is
// the diff; then the built CLI on real files in a temp dir: both spellings, --fail-over, and a bad path.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { parseDocument } from "yaml";
import { type CostDiff, diffReports, type LineDiff } from "../core/cost/diff.js";
import { estimateCost } from "../core/cost/estimate.js";
import { diffHeadline, diffJson, diffMarkdown, diffTable, formatPercent } from "../core/cost/render/diff.js";
import { formatMoney } from "../core/cost/render/format.js";
import type { CostLine, CostReport, Range } from "../core/cost/types.js";
import { parseRecipe } from "../core/recipe/load.js";
import { runCli, show } from "./cli-process.js";
import { editYaml, recipeText } from "./helpers.js";

const SEED = "retool-qwen2.5-32b-h200";
const now = new Date("2026-12-01T00:00:00Z");
type Edits = [(string | number)[], unknown][];

/** The seed's text with `edits`; checkpoint storage removed first, so each case says for itself whether it has one. */
const seedText = (edits: Edits = []): string => {
  const text = recipeText(SEED);
  const store: Edits = parseDocument(text).hasIn(["checkpoints", "storage"]) ? [[["checkpoints", "storage"], undefined]] : [];
  return editYaml(text, [...store, ...edits]);
};
const estimate = (text: string, file: string): CostReport => {
  const r = estimateCost(parseRecipe(text, file).recipe, { provider: "ray", now });
  return { ...r, recipe: { ...r.recipe, file } };
};

function flat(lines: readonly CostLine[]): CostLine[] {
  return lines.flatMap((l) => [l, ...flat(l.children ?? [])]);
}
const minus = (a: Range, b: Range): Range => ({ low: a.low - b.low, expected: a.expected - b.expected, high: a.high - b.high });
const near = (a: number, b: number, what: string) => assert.ok(Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
const nearRange = (a: Range | undefined, b: Range, what: string) => {
  assert.ok(a !== undefined, `${what}: missing`);
  near(a.low, b.low, `${what} low`); near(a.expected, b.expected, `${what} expected`); near(a.high, b.high, `${what} high`);
};
const byId = (d: CostDiff, id: string): LineDiff => {
  const l = d.lines.find((x) => x.id === id);
  assert.ok(l !== undefined, `line ${id} in the diff`);
  return l;
};

/** Every line in both reports: changed exactly when its cost, quantity or pricing state differs, with head − base. */
function assertLinesFollowReports(d: CostDiff, base: CostReport, head: CostReport): void {
  const b = new Map(flat(base.lines).map((l) => [l.id, l]));
  const h = new Map(flat(head.lines).map((l) => [l.id, l]));
  assert.deepEqual(d.lines.map((l) => l.id).sort(), [...new Set([...b.keys(), ...h.keys()])].sort(), "every line of either report, once");
  for (const l of d.lines) {
    const bl = b.get(l.id);
    const hl = h.get(l.id);
    if (bl === undefined) { assert.equal(l.status, "added", l.id); continue; }
    if (hl === undefined) { assert.equal(l.status, "removed", l.id); continue; }
    const differs = JSON.stringify([bl.cost, bl.currency, bl.quantity, bl.rate?.value, bl.rateNeeded?.item, bl.includedIn])
      !== JSON.stringify([hl.cost, hl.currency, hl.quantity, hl.rate?.value, hl.rateNeeded?.item, hl.includedIn]);
    assert.equal(l.status, differs ? "changed" : "unchanged", l.id);
    if (bl.cost !== undefined && hl.cost !== undefined && bl.currency === hl.currency) {
      nearRange(l.change, minus(hl.cost, bl.cost), `${l.id} change`);
      if (bl.cost.expected > 0) near(l.changeRatio!, (hl.cost.expected - bl.cost.expected) / bl.cost.expected, `${l.id} ratio`);
    }
  }
}

describe("cost diff: two estimates of a seed recipe", () => {
  const base = estimate(seedText(), "base.yaml");

  it("more nodes: the compute lines change by head − base, the co-located sandbox does not; the total and its percent follow the reports", () => {
    const head = estimate(seedText([[["resources", "nodes"], 2]]), "head.yaml");
    const d = diffReports(base, head);
    assertLinesFollowReports(d, base, head);
    for (const id of ["compute", "compute.rl"]) assert.equal(byId(d, id).status, "changed", id);
    assert.equal(byId(d, "sandbox").status, "unchanged");
    assert.equal(byId(d, "sandbox").head?.kind, "included");
    nearRange(d.totals.change.CNY, minus(head.totals.CNY, base.totals.CNY), "total CNY");
    nearRange(d.totals.change.USD, minus(head.totals.USD, base.totals.USD), "total USD");
    near(d.totals.changeRatio!, (head.totals.CNY.expected - base.totals.CNY.expected) / base.totals.CNY.expected, "total ratio");
    assert.equal(d.totals.incomplete, false);
    assert.equal(d.chosenChanged, true, "1 node → 2 nodes is another candidate");
    assert.equal(d.head.chosen.nodes, 2);
    // The headline says the direction, the amount and the percent of the reports' expected totals.
    const change = head.totals.CNY.expected - base.totals.CNY.expected;
    const headline = diffHeadline(d);
    assert.match(headline, new RegExp(`will ${change > 0 ? "increase" : "decrease"} by`));
    assert.ok(headline.includes(formatMoney(Math.abs(change), "CNY")), headline);
    assert.ok(headline.includes(formatPercent(d.totals.changeRatio!)), headline);
    assert.match(diffTable(d), /^Chosen: ray .*× 1 node → ray .*× 2 nodes$/m);
    assert.deepEqual(diffReports(base, head), d, "deterministic");
  });

  it("a higher device rate under prices:: compute changes by the rate's ratio, priced storage and the rest do not", () => {
    const withStore = seedText([[["checkpoints", "storage"], "s3://bucket/runs"]]);
    const b = estimate(withStore, "base.yaml");
    const rl = flat(b.lines).find((l) => l.id === "compute.rl");
    assert.ok(rl?.rate !== undefined, "the seed's RL compute has a catalog rate");
    const rate = rl.rate;
    const h = estimate(editYaml(withStore, [[["prices"], [{ item: rate.id, value: rate.value * 1.5, currency: rate.currency, unit: rate.unit, source: "test quote" }]]]), "head.yaml");
    const d = diffReports(b, h);
    assertLinesFollowReports(d, b, h);
    // The estimate rounds costs to 6 significant digits: the ratio is 0.5 to about that.
    assert.ok(Math.abs(byId(d, "compute.rl").changeRatio! - 0.5) < 1e-4, `compute.rl at 1.5× the rate: ${byId(d, "compute.rl").changeRatio}`);
    const storage = d.lines.filter((l) => l.component === "storage");
    assert.ok(storage.length > 0 && storage.some((l) => l.base?.kind === "priced"), "the s3 store is priced");
    for (const l of storage) assert.equal(l.status, "unchanged", l.id);
    assert.equal(d.stepsChanged, false);
    assert.equal(d.hoursChanged, false);
    nearRange(d.totals.change.CNY, minus(h.totals.CNY, b.totals.CNY), "total CNY");
    // The unchanged lines are in the comment's details, not its table.
    const md = diffMarkdown(d);
    assert.match(md, /<details><summary>\d+ unchanged lines?<\/summary>/);
  });

  it("checkpoint storage added without rates: the added lines say rate needed (never ¥0) and the total change is incomplete", () => {
    const head = estimate(seedText([[["checkpoints", "storage"], "obs://bucket/runs"]]), "head.yaml");
    const needing = flat(head.lines).filter((l) => l.rateNeeded !== undefined).map((l) => l.id);
    assert.ok(needing.length > 0, "OBS on Ray has lines without a rate (precondition)");
    const d = diffReports(base, head);
    assertLinesFollowReports(d, base, head);
    for (const id of needing) {
      const l = byId(d, id);
      assert.equal(l.status, "added", id);
      assert.equal(l.head?.kind, "rate-needed", id);
      assert.equal(l.change, undefined, `${id}: no amount for an unpriced line`);
    }
    assert.equal(d.totals.incomplete, true);
    assert.match(diffHeadline(d), /priced lines only.*incomplete: \d+ rates? needed/);
    for (const text of [diffTable(d), diffMarkdown(d)]) {
      for (const id of needing) {
        const row = text.split("\n").find((r) => r.includes(byId(d, id).label) && r.includes("added"));
        assert.ok(row !== undefined && /rate needed/.test(row) && !/[¥$]0(?![.,\d])/.test(row), `${id}'s row says rate needed, not 0: ${row}`);
      }
      assert.match(text, /priced lines only/);
    }
    // The other way round the lines are removed, and stay where they stood in the base.
    const back = diffReports(head, base);
    assert.deepEqual(back.lines.map((l) => l.id), flat(head.lines).map((l) => l.id));
    for (const id of needing) assert.equal(byId(back, id).status, "removed");
    assert.equal(back.totals.incomplete, true);
  });

  it("Markdown is a pull-request comment: the headline, a per-line table with base, head and change, the totals; JSON parses back to the diff", () => {
    const head = estimate(seedText([[["resources", "nodes"], 2]]), "head.yaml");
    const d = diffReports(base, head);
    const md = diffMarkdown(d);
    assert.ok(md.includes(`**${diffHeadline(d)}**`), md);
    assert.match(md, /^\| Line \| Base \(low – exp – high\) \| Head \(low – exp – high\) \| Change \(expected\) \|$/m);
    assert.match(md, /^\| \*\*Total \(CNY\)\*\* \|/m);
    assert.match(md, /^\| \*\*Total \(USD\)\*\* \|/m);
    assert.ok(md.includes(byId(d, "compute.rl").label));
    const parsed = JSON.parse(diffJson(d)) as CostDiff;
    assert.deepEqual(parsed, JSON.parse(JSON.stringify(d)));
    assert.equal(parsed.schema, "rlpipe.cost-diff");
    assert.equal(parsed.version, 1);
  });
});

describe("cost diff: the CLI", () => {
  let dir: string;
  let cheaper: string;
  let dearer: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-cost-diff-"));
    const one = seedText();
    const two = seedText([[["resources", "nodes"], 2]]);
    // Which is dearer is the estimate's to say; the test names the files after it.
    const up = estimate(two, "two.yaml").totals.CNY.expected > estimate(one, "one.yaml").totals.CNY.expected;
    writeFileSync(join(dir, "one.yaml"), one);
    writeFileSync(join(dir, "two.yaml"), two);
    [cheaper, dearer] = up ? ["one.yaml", "two.yaml"] : ["two.yaml", "one.yaml"];
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("cost HEAD --diff BASE --json is the diff of the two estimates; exit 0", () => {
    const r = runCli(["cost", dearer, "--diff", cheaper, "--provider", "ray", "--json"], { cwd: dir });
    assert.equal(r.code, 0, show(r));
    const got = JSON.parse(r.out) as CostDiff;
    const want = diffReports(estimate(readText(dir, cheaper), cheaper), estimate(readText(dir, dearer), dearer));
    assert.equal(got.schema, "rlpipe.cost-diff");
    assert.deepEqual(got.base.recipe, want.base.recipe);
    assert.deepEqual(got.head.recipe, want.head.recipe);
    assert.deepEqual(got.lines, JSON.parse(JSON.stringify(want.lines)));
    assert.deepEqual(got.totals, JSON.parse(JSON.stringify(want.totals)));
    assert.ok(got.totals.change.CNY.expected > 0);
  });

  it("cost diff BASE HEAD --format md prints the comment; --out writes it and says the headline on stderr", () => {
    const r = runCli(["cost", "diff", cheaper, dearer, "--provider", "ray", "--format", "md"], { cwd: dir });
    assert.equal(r.code, 0, show(r));
    assert.match(r.out, /^### rlpipe cost diff: /);
    assert.match(r.out, /\*\*Expected run cost will increase by ¥[\d,]+ \(\+[\d.]+%\)/);
    const w = runCli(["cost", "diff", cheaper, dearer, "--provider", "ray", "--format", "md", "--out", "comment.md"], { cwd: dir });
    assert.equal(w.code, 0, show(w));
    assert.equal(w.out.trim(), "comment.md");
    assert.match(w.err, /will increase by/);
    assert.equal(readText(dir, "comment.md").trimEnd(), r.out.trimEnd());
  });

  it("--fail-over: exit 1 above the limit, 0 within it", () => {
    const over = runCli(["cost", dearer, "--diff", cheaper, "--provider", "ray", "--fail-over", "0.01%"], { cwd: dir });
    assert.equal(over.code, 1, show(over));
    assert.match(over.err, /rose by more than --fail-over/);
    const within = runCli(["cost", cheaper, "--diff", dearer, "--provider", "ray", "--fail-over", "1"], { cwd: dir });
    assert.equal(within.code, 0, show(within));
    const bad = runCli(["cost", dearer, "--diff", cheaper, "--fail-over", "lots"], { cwd: dir });
    assert.equal(bad.code, 2, show(bad));
  });

  it("a bad path names the file and exits 2 (invalid input); with --json the error is the documented document", () => {
    const r = runCli(["cost", dearer, "--diff", "missing-base.yaml", "--provider", "ray"], { cwd: dir });
    assert.equal(r.code, 2, show(r));
    assert.match(r.err, /missing-base\.yaml: cannot read recipe/);
    assert.equal(r.out, "");
    const j = runCli(["cost", "diff", cheaper, "nope/head.yaml", "--json"], { cwd: dir });
    assert.equal(j.code, 2, show(j));
    const doc = JSON.parse(j.out) as { error: { code: string; message: string; exitCode: number } };
    assert.equal(doc.error.exitCode, 2);
    assert.match(doc.error.message, /nope\/head\.yaml/);
    const usage = runCli(["cost", "diff", cheaper], { cwd: dir });
    assert.equal(usage.code, 2, show(usage));
    assert.match(usage.err, /takes two recipe files/);
  });
});

function readText(dir: string, file: string): string {
  return readFileSync(join(dir, file), "utf8");
}
