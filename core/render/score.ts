// A score stage: `rlpipe eval` of a dataset's responses through rlpipe's reward function. With reference
// solutions it is a preflight of the test cases (every row must pass); with generated responses, offline scoring.
import type { RecipePath } from "../errors.js";
import type { ScoreStage } from "../recipe/schema.js";
import { type RenderContext, datasetFiles, report } from "./context.js";
import type { StageCommand } from "./stage-command.js";

/** Where `rlpipe eval` writes, relative to workDir (launch.sh runs in workDir). */
export const scoreOutputs = (id: string) => ({ results: `.rlpipe/results/${id}.json`, metrics: `.rlpipe/metrics/${id}.jsonl` });

export function renderScore(ctx: RenderContext, s: ScoreStage, at: RecipePath): StageCommand {
  const sb = ctx.recipe.sandbox;
  if (sb !== undefined && sb.kind !== "rlpipe") {
    report(ctx, "error", ["sandbox", "kind"], "score_needs_rlpipe", `a score stage calls rlpipe's /v1/rewards, but sandbox.kind is ${sb.kind}`,
      "set sandbox.kind: rlpipe (rlpipe serve runs next to the stage), or remove the sandbox block to score in-process");
  }
  const ds = ctx.recipe.datasets[s.data];
  if (ds !== undefined && ds.format !== "jsonl") {
    report(ctx, "error", [...at, "data"], "score_needs_jsonl", `rlpipe eval reads JSON lines, but dataset ${s.data} has format ${ds.format}`, "convert it to jsonl (one object per line)");
  }
  const files = datasetFiles(ctx, s.data, [...at, "data"]);
  const file = Array.isArray(files) ? files[0] ?? "" : files;
  if (Array.isArray(files) && files.length > 1) report(ctx, "error", [...at, "data"], "score_one_file", `a score stage reads one file, dataset ${s.data} lists ${files.length}`);
  const out = scoreOutputs(s.id);
  const argv = ["rlpipe", "eval", file, "--stage", s.id, "--out", out.results, "--metrics-file", out.metrics];
  if (s.responseField !== undefined) argv.push("--response-field", s.responseField);
  if (s.minPassRate !== undefined) argv.push("--min-pass-rate", String(s.minPassRate));
  if (s.batchSize !== undefined) argv.push("--batch", String(s.batchSize));
  // An external rlpipe function is named here; a colocated one is found through RLPIPE_REWARD_URL (launch.sh
  // exports it when it starts the function); without a sandbox block rlpipe eval scores in-process.
  if (sb !== undefined && sb.kind === "rlpipe" && sb.deploy === "external" && sb.url !== undefined) argv.push("--reward-url", sb.url.replace(/\/+$/, ""));
  if (sb === undefined) argv.push("--sandbox", "local");
  if (sb?.auth !== undefined) {
    const env = ctx.recipe.secrets?.[sb.auth.secret]?.env;
    if (env !== undefined) argv.push("--token-env", env);
  }
  const storage = ctx.recipe.checkpoints?.storage;
  if (storage !== undefined) argv.push("--store", ctx.interp.resolve(storage, ["checkpoints", "storage"]));
  return {
    id: s.id,
    type: s.type,
    argv,
    overrides: [],
    env: s.env ?? {},
    envPresets: s.envPresets ?? [],
    ...(s.logFile === undefined ? {} : { logFile: ctx.interp.resolve(s.logFile, [...at, "logFile"]) }),
    files: [],
  };
}
