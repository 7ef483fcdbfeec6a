// Where a run's checkpoints and metrics go, per provider: a sync sidecar next to training (self-hosted, local,
// docker), ModelArts' own output channel (uploaded every 30 s), or TI-ONE's persistent storage mount.
import { posix } from "node:path";
import { sha256 } from "../recipe/load.js";
import { type RenderContext, report } from "./context.js";
import type { StageCommand } from "./stage-command.js";

export type StorageMechanism = "sidecar-direct" | "sidecar-function" | "modelarts-output" | "tione-mount";

export interface StoragePlan {
  readonly mechanism: StorageMechanism;
  readonly uri: string;
  /** Run name in the store; launch.sh uses $RLPIPE_RUN when the deploy sets one. Stages sync as <run>.<stage>. */
  readonly runBase: string;
  readonly stages: readonly { readonly stage: string; readonly dir: string; readonly metrics?: string }[];
  readonly keep?: { readonly last?: number; readonly every?: number };
  readonly intervalS: number;
  readonly functionUrl?: string;
  /** ModelArts output channels: the platform uploads local_dir to obs_url periodically and at exit. */
  readonly modelartsOutputs?: readonly { readonly name: string; readonly localDir: string; readonly obsUrl: string }[];
  readonly note: string;
}

export const SYNC_SIDECAR = "rlpipe_sync.py";

export function storagePlan(ctx: RenderContext, recipeHash: string, stages: readonly StageCommand[]): StoragePlan | undefined {
  const ck = ctx.recipe.checkpoints;
  if (ck?.storage === undefined) return undefined;
  const uri = ctx.interp.resolve(ck.storage, ["checkpoints", "storage"]).replace(/\/+$/, "");
  const runBase = `${ctx.recipe.metadata.name.replace(/[^a-z0-9._-]/g, "-")}-${sha256(`${recipeHash}|${ctx.provider}`).slice(0, 8)}`;
  const abs = (p: string) => (p.startsWith("/") ? p : posix.join(ctx.workDir, p));
  const synced = stages.filter((s) => (s.type === "sft" || s.type === "rl") && s.output !== undefined).map((s) => {
    const idx = ctx.recipe.stages.findIndex((x) => x.id === s.id);
    const st = ctx.recipe.stages[idx]!;
    const backends = [...(ctx.recipe.logging?.backends ?? []), ...("logging" in st ? st.logging?.backends ?? [] : [])];
    const logsToFile = s.type === "rl" && backends.includes("file");
    if (s.type === "rl" && !logsToFile) {
      report(ctx, "warning", ["stages", idx, "logging", "backends"], "metrics_not_synced", "checkpoints.storage is set but this stage does not log to verl's `file` backend, so its metrics are not uploaded",
        "add file to logging.backends (rlpipe points VERL_FILE_LOGGER_PATH at a file it syncs)");
    }
    return { stage: s.id, dir: abs(s.output!), ...(logsToFile ? { metrics: posix.join(ctx.workDir, ".rlpipe", "metrics", `${s.id}.jsonl`) } : {}) };
  });
  const keep = ck.keep === undefined ? undefined : { ...(ck.keep.last === undefined ? {} : { last: ck.keep.last }), ...(ck.keep.every === undefined ? {} : { every: ck.keep.every }) };
  const base = { uri, runBase, stages: synced, ...(keep === undefined ? {} : { keep }), intervalS: ck.intervalS ?? 30 };

  if (ctx.provider === "modelarts") {
    if (!uri.startsWith("obs://")) {
      report(ctx, "error", ["checkpoints", "storage"], "storage_provider_mismatch", "ModelArts output channels upload to OBS; checkpoints.storage must be an obs:// URI for provider modelarts");
    }
    return {
      ...base, mechanism: "modelarts-output",
      modelartsOutputs: synced.map((s) => ({ name: `ckpt-${s.stage}`.slice(0, 64), localDir: s.dir, obsUrl: `${uri}/${runBase}.${s.stage}/` })),
      note: "ModelArts uploads each checkpoint directory through an output channel (every 30 s and at exit); no sidecar runs in the job",
    };
  }
  if (ctx.provider === "tione") {
    return { ...base, mechanism: "tione-mount", note: `checkpoints stay on the task's storage mount (${ctx.recipe.targets?.tione?.storage?.mountPath ?? "/home/tione/notebook"}), which TI-ONE persists` };
  }
  const via = ck.via ?? (ck.functionUrl !== undefined ? "function" : "direct");
  if (via === "function") {
    if (ck.functionUrl === undefined) report(ctx, "error", ["checkpoints", "functionUrl"], "missing_field", "checkpoints.via: function needs functionUrl (the rlpipe function with the runs routes)");
    return {
      ...base, mechanism: "sidecar-function", ...(ck.functionUrl === undefined ? {} : { functionUrl: ck.functionUrl.replace(/\/+$/, "") }),
      note: "rlpipe_sync.py (Python standard library) uploads through the runs function's presigned URLs; the job holds only RLPIPE_RUN_TOKEN",
    };
  }
  return { ...base, mechanism: "sidecar-direct", note: "rlpipe sync runs next to training with the storage credentials of the node" };
}
