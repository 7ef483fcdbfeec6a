// Every shipped recipe through validate, plan and deploy --dry-run, for each target it declares: the three share
// one planning context (the recipe's directory for shipped files, the bundled assets), so they must reach the same
// verdict with the same issues. A recipe a user copies from recipes/ must never pass one command and fail another.
import assert from "node:assert/strict";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { runPlan } from "../bin/commands/plan.js";
import { runDeploy } from "../bin/commands/runs.js";
import { runValidate } from "../bin/commands/validate.js";
import { CAPACITY_CODES } from "../core/capacity.js";
import type { Io } from "../bin/io.js";
import { type LocatedIssue, RecipeError, RlpipeError, formatPath } from "../core/errors.js";
import { loadRecipeFile } from "../core/recipe/load.js";
import type { Provider } from "../core/recipe/schema.js";
import { RECIPES } from "./helpers.js";

interface Verdict {
  readonly exitCode: number;
  /** "severity code path line:col", sorted. */
  readonly issues: readonly string[];
}

interface JsonIssue { readonly severity?: string; readonly code: string; readonly path: readonly (string | number)[]; readonly line?: number; readonly col?: number }

const key = (severity: string, i: JsonIssue) => `${severity} ${i.code} ${formatPath(i.path)} ${i.line ?? "-"}:${i.col ?? "-"}`;

function capture(): Io & { readonly outText: () => string } {
  const out: string[] = [];
  return { out: (t) => { out.push(t); }, err: () => undefined, outText: () => out.join("\n") };
}

/** A command's verdict: its exit code and issues, whether it returned or threw (as the CLI would report). */
async function verdictOf(run: (io: ReturnType<typeof capture>) => Promise<number> | number, issuesOf: (json: unknown) => { severity: string; issue: JsonIssue }[]): Promise<Verdict> {
  const io = capture();
  try {
    const exitCode = await run(io);
    const issues = issuesOf(JSON.parse(io.outText())).map((x) => key(x.severity, x.issue));
    return { exitCode, issues: issues.sort() };
  } catch (e) {
    if (e instanceof RecipeError) return { exitCode: e.exitCode, issues: e.issues.map((i: LocatedIssue) => key(i.severity, i)).sort() };
    if (e instanceof RlpipeError) return { exitCode: e.exitCode, issues: [`error ${e.code}`] };
    throw e;
  }
}

const shipped = readdirSync(RECIPES).filter((f) => f.endsWith(".yaml")).sort();

describe("validate, plan and deploy --dry-run agree on every shipped recipe", () => {
  let out: string;
  before(() => { out = mkdtempSync(join(tmpdir(), "rlpipe-agree-")); });
  after(() => rmSync(out, { recursive: true, force: true }));

  it("recipes/ holds the recipes this test covers", () => {
    assert.ok(shipped.length >= 6, shipped.join(", "));
    assert.ok(shipped.includes("local-demo.yaml"));
  });

  for (const name of shipped) {
    const file = join(RECIPES, name);
    const declared = Object.keys(loadRecipeFile(file).recipe.targets ?? {}) as Provider[];
    const providers: Provider[] = declared.length > 0 ? declared.sort() : ["local"];
    for (const provider of providers) {
      it(`${name} → ${provider}`, async () => {
        const validate = await verdictOf((io) => runValidate([file, "--provider", provider, "--json"], io), (json) => {
          const [r] = json as { issues: (JsonIssue & { severity: string })[] }[];
          return r!.issues.map((i) => ({ severity: i.severity, issue: i }));
        });
        const plan = await verdictOf((io) => runPlan([file, "--provider", provider, "--json", "--out", join(out, `${name}-${provider}`)], io), (json) =>
          (json as { warnings: JsonIssue[] }).warnings.map((w) => ({ severity: "warning", issue: w })));
        assert.equal(validate.exitCode, 0, `validate rejects the shipped ${name} for ${provider}: ${validate.issues.join("; ")}`);
        assert.deepEqual(plan, validate, "plan and validate disagree");
        if (provider === "docker") {
          // docker has no deploy API: deploy refuses after planning, whatever the recipe says.
          const deploy = await verdictOf((io) => runDeploy([file, "--provider", provider, "--dry-run", "--json"], io), () => []);
          assert.deepEqual(deploy, { exitCode: 2, issues: ["error no_deploy_target"] });
          return;
        }
        // deploy --dry-run reaches the deploy's verdict: what it refuses (placeholders) are errors, as with validate --strict.
        const strict = await verdictOf((io) => runValidate([file, "--provider", provider, "--strict", "--json"], io), (json) => {
          const [r] = json as { issues: (JsonIssue & { severity: string })[] }[];
          return r!.issues.map((i) => ({ severity: i.severity, issue: i }));
        });
        const deploy = await verdictOf((io) => runDeploy([file, "--provider", provider, "--dry-run", "--json"], io), (json) => {
          const j = json as { plan: { warnings: JsonIssue[] }; error?: { issues?: { code: string; path: string; line?: number; col?: number }[] } };
          const refused = new Set((j.error?.issues ?? []).map((i) => `${i.code} ${i.path} ${i.line ?? "-"}:${i.col ?? "-"}`));
          return j.plan.warnings.map((w) => ({ severity: refused.has(`${w.code} ${formatPath(w.path)} ${w.line ?? "-"}:${w.col ?? "-"}`) ? "error" : "warning", issue: w }));
        });
        // validate --strict also refuses the sandbox capacity warnings, which deploy only warns about.
        const capacity = deploy.issues.filter((i) => CAPACITY_CODES.some((c) => i.startsWith(`warning ${c} `)));
        const strictDeploy = { exitCode: capacity.length > 0 ? 2 : deploy.exitCode, issues: deploy.issues.map((i) => (capacity.includes(i) ? i.replace(/^warning/, "error") : i)).sort() };
        assert.deepEqual(strictDeploy, strict, "deploy --dry-run and validate --strict disagree");
      });
    }
  }

  it("validate without --provider checks every target a recipe declares: it finds what each target's plan finds", async () => {
    const issuesOf = (json: unknown) => (json as { issues: (JsonIssue & { severity: string })[] }[])[0]!.issues.map((i) => ({ severity: i.severity, issue: i }));
    for (const name of shipped) {
      const file = join(RECIPES, name);
      const declared = Object.keys(loadRecipeFile(file).recipe.targets ?? {}) as Provider[];
      const all = await verdictOf((io) => runValidate([file, "--json"], io), issuesOf);
      const each = await Promise.all((declared.length > 0 ? declared : ["local" as Provider]).map((p) => verdictOf((io) => runValidate([file, "--provider", p, "--json"], io), issuesOf)));
      assert.deepEqual(all, { exitCode: 0, issues: [...new Set(each.flatMap((v) => v.issues))].sort() }, name);
    }
    // The TI-ONE seed's template values are found by a plain `rlpipe validate`, as CI runs it.
    const tione = await verdictOf((io) => runValidate([join(RECIPES, "retool-qwen3-4b-tione-ags.yaml"), "--json"], io), issuesOf);
    assert.ok(tione.issues.some((i) => i.startsWith("warning placeholder_value targets.tione.resourceGroupId")), tione.issues.join("; "));
  });

  it("a broken recipe is refused by all three with the same located errors", async () => {
    // The demo recipe's shipped file is looked up next to the recipe: a copy elsewhere without it fails in all three.
    const { writeFileSync, readFileSync } = await import("node:fs");
    const copy = join(out, "copied-demo.yaml");
    writeFileSync(copy, readFileSync(join(RECIPES, "local-demo.yaml"), "utf8"));
    const errs = (json: unknown) => (json as { issues: (JsonIssue & { severity: string })[] }[])[0]!.issues.map((i) => ({ severity: i.severity, issue: i }));
    const validate = await verdictOf((io) => runValidate([copy, "--provider", "local", "--json"], io), errs);
    const plan = await verdictOf((io) => runPlan([copy, "--provider", "local", "--json", "--out", join(out, "copied")], io), () => []);
    const deploy = await verdictOf((io) => runDeploy([copy, "--provider", "local", "--dry-run", "--json"], io), () => []);
    assert.deepEqual(validate, { exitCode: 2, issues: ["error ship_file_missing datasets.problems.ship 23:11"] });
    assert.deepEqual(plan, validate);
    assert.deepEqual(deploy, validate);
  });
});
