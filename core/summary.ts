// The plan as a person checks it at a glance: stages, resources, responses per step, the sandbox and where
// it runs, the files written, warnings.
import { formatIssue } from "./errors.js";
import type { Plan, PlannedStage } from "./plan.js";

/**
 * `outDir`: where the bundle was written (plan), or undefined when a deploy puts it where the request says.
 * `prices`: the prices line (core/prices.ts describePrices), shown under the resources.
 * `cost`: the cost estimate's one line (core/cost/render/summary-line.ts), under the prices.
 */
export function formatPlanSummary(plan: Plan, outDir: string | undefined, prices?: string, cost?: string): string {
  const L: string[] = [];
  const r = plan.resources;
  L.push(`rlpipe plan: ${plan.recipe.name} → ${plan.provider}   (job ${plan.jobName})`);
  L.push(`  recipe     ${plan.recipe.file}  sha256 ${plan.recipe.hash.slice(0, 12)}`);
  L.push(`  verl       ${plan.verl.ref.slice(0, 12)} (profile ${plan.verl.profile}, PyPI ${plan.verl.pypi})${plan.verl.patches.length > 0 ? ` + ${plan.verl.patches.length} patch${plan.verl.patches.length > 1 ? "es" : ""}` : ""}`);
  // "1 node × 1 cpu", not "= 1 devices": one node needs no total, and the total's noun follows its count (the
  // accelerator is an identifier: never pluralized).
  L.push(`  resources  ${r.nodes} node${r.nodes === 1 ? "" : "s"} × ${r.devicesPerNode} ${r.accelerator}${r.nodes === 1 ? "" : ` = ${r.totalDevices} device${r.totalDevices === 1 ? "" : "s"}`}`);
  if (prices !== undefined) L.push(`  prices     ${prices}`);
  if (cost !== undefined) L.push(`  cost       ${cost}`);
  (plan.capacity?.stages ?? []).forEach((c, i) => L.push(`  ${i === 0 ? "capacity " : "         "}  ${c.line}`));
  L.push(`  workdir    ${plan.workDir}`);
  if (plan.sandbox !== undefined) {
    L.push(`  sandbox    ${plan.sandbox.kind} (${plan.sandbox.deploy})${plan.sandbox.url === undefined ? "" : ` at ${plan.sandbox.url}`}: ${plan.sandbox.where}`);
  }
  if (plan.secrets.length > 0) L.push(`  secrets    ${plan.secrets.map((s) => `${s.env} (${s.name}${s.required ? "" : ", optional"})`).join(", ")} — read from the environment at run time`);
  const st = plan.storage;
  if (st !== undefined && st.stages.length > 0) {
    // A deploy names the run after the job (RLPIPE_RUN); a bundle started by hand uses launch.sh's default.
    const run = plan.request === undefined || plan.provider === "slurm" ? st.runBase : plan.jobName;
    L.push(`  storage    ${st.uri}${st.defaulted ? " (default: <codeDir>/runs)" : ""} via ${st.mechanism}; after a run: rlpipe checkpoints ${run}.${st.stages[st.stages.length - 1]!.stage} --store ${st.uri}`);
  }
  L.push("  stages");
  plan.stages.forEach((s, i) => L.push(`    ${i + 1}. ${s.id.padEnd(8)} ${describeStage(s)}`));
  L.push(`  files      ${outDir === undefined ? "(the launch bundle)" : `${outDir}/`}`);
  for (const f of plan.files) L.push(`               ${f.path}${f.executable ? "  (executable)" : ""}`);
  if (outDir !== undefined) L.push("               rlpipe-plan.json");
  if (plan.warnings.length > 0) {
    L.push(`  warnings (${plan.warnings.length})`);
    for (const w of plan.warnings) L.push(...formatIssue(w).split("\n").map((l) => `    ${l}`));
  } else {
    L.push("  warnings   none");
  }
  return L.join("\n");
}

function describeStage(s: PlannedStage): string {
  const f = s.facts;
  switch (s.type) {
    case "sft":
      return `sft    ${s.argv.slice(0, 3).join(" ")} -m ${s.argv[s.argv.indexOf("-m") + 1]}, ${f.epochs} epochs → ${s.output}`;
    case "score":
      return `score  rlpipe eval ${s.argv[2]}${s.argv.includes("--min-pass-rate") ? ` (min pass rate ${s.argv[s.argv.indexOf("--min-pass-rate") + 1]})` : ""}`;
    case "merge":
      return `merge  ${s.argv[s.argv.indexOf("--local_dir") + 1]} → ${s.output}`;
    case "rl": {
      const parts = [`rl     ${f.promptsPerStep} prompts × n=${f.n} = ${f.responsesPerStep} responses/step`];
      if (f.miniBatchPrompts !== undefined) parts.push(`mini-batch ${f.miniBatchPrompts} prompts (${f.optimizerStepsPerStep} optimizer steps/step)`);
      if (f.epochs !== undefined) parts.push(`${f.epochs} epoch${f.epochs > 1 ? "s" : ""}`);
      if (f.tools !== undefined && f.tools.length > 0) parts.push(`tools: ${f.tools.join(", ")}`);
      return parts.join(", ");
    }
    case "eval":
      return `eval   validation only, n=${f.n}`;
  }
}
