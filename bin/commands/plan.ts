// rlpipe plan <recipe> [--provider P] [--out DIR] [--json] [--verl-profile NAME]
import { join } from "node:path";
import { parseArgs } from "node:util";
import { estimateCost } from "../../core/cost/estimate.js";
import { formatCostSummary } from "../../core/cost/render/summary-line.js";
import type { CostReport } from "../../core/cost/types.js";
import { RlpipeError } from "../../core/errors.js";
import { type Plan, plan } from "../../core/plan.js";
import { type LoadedRecipe, canonicalJson, loadRecipeFile, sha256 } from "../../core/recipe/load.js";
import { PROVIDERS, type Provider, type Recipe } from "../../core/recipe/schema.js";
import { didYouMean } from "../../core/recipe/suggest.js";
import { describePrices, pricesOfReport } from "../../core/prices.js";
import { formatPlanSummary } from "../../core/summary.js";
import { PLAN_FILE, writeBundle } from "../bundle-writer.js";
import type { Io } from "../io.js";
import { VERSION } from "../version.js";
import { type RecipeFilePlanOptions, planOptionsFor } from "../../functions/recipe-files.js";

// The planning context and the shipped Python files are shared with the console function (functions/).
export { type RecipeFilePlanOptions, planOptionsFor, readBeside } from "../../functions/recipe-files.js";
export { bundledAssets } from "../../functions/python-assets.js";

export const PLAN_USAGE = `usage: rlpipe plan <recipe.yaml> [--provider ${PROVIDERS.join("|")}] [--out DIR] [--json] [--verl-profile NAME]

Validates the recipe and writes the launch bundle (launch.sh, tool configs, provider files, rlpipe-plan.json)
into DIR (default .rlpipe/bundles/<job name>). Needs no network and no credentials.`;

export function runPlan(argv: readonly string[], io: Io): number {
  const { values, positionals } = parseArgs({
    args: [...argv],
    options: {
      provider: { type: "string", short: "p" },
      out: { type: "string", short: "o" },
      json: { type: "boolean", default: false },
      "verl-profile": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) { io.out(PLAN_USAGE); return 0; }
  if (positionals.length !== 1) throw usage("rlpipe plan takes exactly one recipe file");
  if (values.provider !== undefined) parseProvider(values.provider); // a bad flag is reported before the recipe
  const file = positionals[0]!;
  const loaded = loadRecipeFile(file);
  const provider = values.provider === undefined ? targetOf(loaded.recipe, io) : parseProvider(values.provider);
  const p = plan(loaded, planOptionsFor(file, loaded, { provider, ...(values["verl-profile"] === undefined ? {} : { profile: values["verl-profile"] }) }));
  const outDir = values.out ?? join(".rlpipe", "bundles", p.jobName);
  const planJson = `${JSON.stringify(planDocument(p), null, 2)}\n`;
  writeBundle(outDir, [...p.files, { path: PLAN_FILE, content: planJson, executable: false }]);
  if (values.json) io.out(planJson.trimEnd());
  else {
    // The prices line and the cost line come from one estimate: the rates rlpipe cost prices the chosen candidate with.
    const report = estimateCost(loaded.recipe, { provider, now: new Date() });
    io.out(formatPlanSummary(p, outDir, describePrices(pricesOfReport(report)), costLine(loaded.recipe, provider, file, report)));
  }
  return 0;
}

/** The whole run's estimate for this provider in one line (offline catalog; `rlpipe cost` has the breakdown). */
export function costLine(recipe: Recipe, provider: Provider, file: string, report: CostReport = estimateCost(recipe, { provider, now: new Date() })): string {
  const budget = recipe.cost?.budget;
  return formatCostSummary(report, { ...(budget === undefined ? {} : { budget }), command: `rlpipe cost ${file} --provider ${provider}` });
}

/** The machine-readable plan: everything but file contents (listed with their sha256). Deterministic. */
export function planDocument(p: Plan): unknown {
  return {
    generatedBy: `rlpipe ${VERSION}`,
    recipe: p.recipe,
    provider: p.provider,
    jobName: p.jobName,
    verl: p.verl,
    workDir: p.workDir,
    resources: p.resources,
    ...(p.sandbox === undefined ? {} : { sandbox: p.sandbox }),
    secrets: p.secrets,
    stages: p.stages.map((s) => ({
      id: s.id, type: s.type, argv: s.argv, ...(s.hydraConfig === undefined ? {} : { hydraConfig: s.hydraConfig }),
      ...(s.output === undefined ? {} : { output: s.output }), facts: s.facts,
    })),
    ...(p.docker === undefined ? {} : { docker: p.docker }),
    ...(p.request === undefined ? {} : { request: p.request }),
    bundleDigest: p.bundleDigest,
    files: p.files.map((f) => ({ path: f.path, sha256: sha256(f.content), executable: f.executable })),
    ...(p.capacity === undefined ? {} : { capacity: p.capacity }),
    warnings: p.warnings.map((w) => ({ code: w.code, path: w.path, message: w.message, ...(w.line === undefined ? {} : { line: w.line, col: w.col }), ...(w.hint === undefined ? {} : { hint: w.hint }) })),
    planHash: sha256(canonicalJson(p.files.map((f) => [f.path, f.content]))),
  };
}

export function parseProvider(v: string | undefined): Provider {
  if (v === undefined) return "local";
  if ((PROVIDERS as readonly string[]).includes(v)) return v as Provider;
  throw usage(`unknown provider ${JSON.stringify(v)}; expected one of ${PROVIDERS.join(", ")}${(() => { const s = didYouMean(v, PROVIDERS); return s === undefined ? "" : ` (${s})`; })()}`);
}

/** Load and plan a recipe file with planOptionsFor: what validate, plan and deploy all call. */
export function planRecipeFile(file: string, opts: RecipeFilePlanOptions = {}): { readonly loaded: LoadedRecipe; readonly plan: Plan } {
  const loaded = loadRecipeFile(file);
  return { loaded, plan: plan(loaded, planOptionsFor(file, loaded, opts)) };
}

/** Without --provider: the recipe's only target; several need a choice (exit 2); none means local (said so). */
export function targetOf(recipe: Recipe, io: Io): Provider {
  const targets = PROVIDERS.filter((p) => recipe.targets?.[p] !== undefined);
  if (targets.length === 1) return targets[0]!;
  if (targets.length > 1) {
    throw new RlpipeError("provider_required", `the recipe has ${targets.length} targets (${targets.join(", ")}): say which one to plan for`, { exitCode: 2, hint: `pass --provider ${targets.join("|")}` });
  }
  io.err("rlpipe plan: the recipe has no targets; planning for provider local (--provider chooses another)");
  return "local";
}

export function usage(message: string): RlpipeError {
  return new RlpipeError("usage", message, { exitCode: 2, hint: "run rlpipe --help" });
}
