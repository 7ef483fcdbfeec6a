// Where a run's checkpoints and metrics go, per provider, always in the store's layout that `rlpipe checkpoints`,
// `restore` and `metrics` read (<run>/checkpoints/global_step_N/… committed by a manifest written last):
// - self-hosted (local, docker, ray, slurm): `rlpipe sync` next to training, with the node's storage credentials;
// - any provider with checkpoints.functionUrl: rlpipe_sync.py through the runs function (no credentials in the job);
// - ModelArts: rlpipe_sync.py lays the store's layout out in a directory (hard links, no credentials) that an output
//   channel uploads to OBS — ModelArts holds the OBS access (the job's agency), the job holds none;
// - TI-ONE: rlpipe_sync.py straight to COS through the S3 API, with COS credentials the deploy passes as task
//   environment variables (TI-ONE documents no output channel that uploads while the task runs).
// Managed targets (ModelArts, TI-ONE) persist by default: without checkpoints.storage the store is <codeDir>/runs,
// and RL stages log to verl's `file` backend so their metrics are uploaded too.
import { posix } from "node:path";
import { sha256 } from "../recipe/load.js";
import type { Provider, Recipe } from "../recipe/schema.js";
import { type RenderContext, report, stageLoggers } from "./context.js";
import type { StageCommand } from "./stage-command.js";

export type StorageMechanism = "sidecar-direct" | "sidecar-function" | "sidecar-store" | "modelarts-output";

export interface StoragePlan {
  readonly mechanism: StorageMechanism;
  readonly uri: string;
  /** True when checkpoints.storage is unset and the managed target's default (<codeDir>/runs) is used. */
  readonly defaulted: boolean;
  /** Run name in the store; launch.sh uses $RLPIPE_RUN when the deploy sets one. Stages sync as <run>.<stage>. */
  readonly runBase: string;
  readonly stages: readonly { readonly stage: string; readonly dir: string; readonly metrics?: string }[];
  readonly keep?: { readonly last?: number; readonly every?: number };
  readonly intervalS: number;
  readonly functionUrl?: string;
  /** sidecar-store: the store's region (when the provider knows it). */
  readonly region?: string;
  /** sidecar-store: the variables the job reads the store's credentials from (secrets: never in a request). */
  readonly credentialEnvs?: readonly { readonly env: string; readonly required: boolean }[];
  /** modelarts-output: the directory the sidecar lays the store out in, and the output channel uploading it. */
  readonly stagingDir?: string;
  readonly modelartsOutputs?: readonly { readonly name: string; readonly localDir: string; readonly obsUrl: string }[];
  readonly note: string;
}

export const SYNC_SIDECAR = "rlpipe_sync.py";
/** The ModelArts output channel that uploads the staging directory. */
export const STORE_CHANNEL = "rlpipe-store";
/** How long a staged manifest waits after its files (ModelArts uploads a channel every 30 s, in its own order). */
export const STAGING_SETTLE_S = 90;

const MANAGED: ReadonlySet<Provider> = new Set(["modelarts", "tione"]);

/** Credential variables per store scheme, in the names `rlpipe sync`, the S3 store and rlpipe_sync.py all read. */
const CREDENTIAL_ENVS: Readonly<Record<string, readonly { env: string; required: boolean }[]>> = {
  cos: [{ env: "COS_SECRET_ID", required: true }, { env: "COS_SECRET_KEY", required: true }, { env: "COS_SESSION_TOKEN", required: false }],
  obs: [{ env: "OBS_ACCESS_KEY_ID", required: true }, { env: "OBS_SECRET_ACCESS_KEY", required: true }, { env: "OBS_SECURITY_TOKEN", required: false }],
  s3: [{ env: "AWS_ACCESS_KEY_ID", required: true }, { env: "AWS_SECRET_ACCESS_KEY", required: true }, { env: "AWS_SESSION_TOKEN", required: false }],
  file: [],
};

/**
 * The store a recipe's checkpoints go to for `provider` (uninterpolated): checkpoints.storage, else for a managed
 * target <codeDir>/runs, next to the launch bundles and logs it already writes there.
 */
export function storageUriOf(recipe: Recipe, provider: Provider): { readonly uri: string; readonly defaulted: boolean } | undefined {
  const set = recipe.checkpoints?.storage;
  if (set !== undefined) return { uri: set, defaulted: false };
  if (!MANAGED.has(provider)) return undefined;
  const base = provider === "modelarts" ? recipe.targets?.modelarts?.codeDir : recipe.targets?.tione?.codeDir ?? recipe.targets?.tione?.storage?.cos;
  if (base === undefined) return undefined;
  // ModelArts also takes /bucket/prefix for OBS directories; a codeDir that is neither is reported by the request.
  const uri = provider === "modelarts" && base.startsWith("/") ? `obs:/${base}` : base;
  if (!/^(obs|cos):\/\/[^/]/.test(uri)) return undefined;
  return { uri: `${uri.replace(/\/+$/, "")}/runs`, defaulted: true };
}

/** Whether RL stages must log to verl's file backend: a managed target persists their metrics by default. */
export function metricsToFile(recipe: Recipe, provider: Provider): boolean {
  return MANAGED.has(provider) && storageUriOf(recipe, provider) !== undefined;
}

export function storagePlan(ctx: RenderContext, recipeHash: string, stages: readonly StageCommand[]): StoragePlan | undefined {
  const ck = ctx.recipe.checkpoints;
  const where = storageUriOf(ctx.recipe, ctx.provider);
  if (where === undefined) return undefined;
  const uri = ctx.interp.resolve(where.uri, ["checkpoints", "storage"]).replace(/\/+$/, "");
  const runBase = `${ctx.recipe.metadata.name.replace(/[^a-z0-9._-]/g, "-")}-${sha256(`${recipeHash}|${ctx.provider}`).slice(0, 8)}`;
  const abs = (p: string) => (p.startsWith("/") ? p : posix.join(ctx.workDir, p));
  const synced = stages.filter((s) => (s.type === "sft" || s.type === "rl") && s.output !== undefined).map((s) => {
    const idx = ctx.recipe.stages.findIndex((x) => x.id === s.id);
    const st = ctx.recipe.stages[idx]!;
    const logsToFile = s.type === "rl" && (st.type === "rl" && stageLoggers(ctx, st)?.includes("file") === true);
    if (s.type === "rl" && !logsToFile) {
      report(ctx, "warning", ["stages", idx, "logging", "backends"], "metrics_not_synced", "checkpoints.storage is set but this stage does not log to verl's `file` backend, so its metrics are not uploaded",
        "add file to logging.backends (rlpipe points VERL_FILE_LOGGER_PATH at a file it syncs)");
    }
    return { stage: s.id, dir: abs(s.output!), ...(logsToFile ? { metrics: posix.join(ctx.workDir, ".rlpipe", "metrics", `${s.id}.jsonl`) } : {}) };
  });
  // A default store only when there is something to keep (a score-only recipe writes its results itself).
  if (where.defaulted && synced.length === 0) return undefined;
  const keep = ck?.keep === undefined ? undefined : { ...(ck.keep.last === undefined ? {} : { last: ck.keep.last }), ...(ck.keep.every === undefined ? {} : { every: ck.keep.every }) };
  const base = { uri, defaulted: where.defaulted, runBase, stages: synced, ...(keep === undefined ? {} : { keep }), intervalS: ck?.intervalS ?? 30 };
  const storagePath = ["checkpoints", "storage"];

  const via = ck?.via ?? (ck?.functionUrl !== undefined ? "function" : undefined);
  if (via === "function") {
    if (ck?.functionUrl === undefined) report(ctx, "error", ["checkpoints", "functionUrl"], "missing_field", "checkpoints.via: function needs functionUrl (the rlpipe function with the runs routes)");
    return {
      ...base, mechanism: "sidecar-function", ...(ck?.functionUrl === undefined ? {} : { functionUrl: ck.functionUrl.replace(/\/+$/, "") }),
      note: "rlpipe_sync.py (Python standard library) uploads through the runs function's presigned URLs; the job holds only RLPIPE_RUN_TOKEN",
    };
  }
  if (ctx.provider === "modelarts") {
    if (!uri.startsWith("obs://")) {
      report(ctx, "error", where.defaulted ? ["targets", "modelarts", "codeDir"] : storagePath, "storage_provider_mismatch", "ModelArts output channels upload to OBS; checkpoints.storage must be an obs:// URI for provider modelarts");
    }
    if (via === "direct") report(ctx, "warning", ["checkpoints", "via"], "via_ignored", "provider modelarts persists through an output channel (the job holds no OBS credentials); checkpoints.via: direct is not used");
    const stagingDir = posix.join(ctx.workDir, ".rlpipe", "store");
    return {
      ...base, mechanism: "modelarts-output", stagingDir,
      modelartsOutputs: [{ name: STORE_CHANNEL, localDir: stagingDir, obsUrl: `${uri}/` }],
      note: `rlpipe_sync.py lays committed steps (hard links) and metrics out in ${stagingDir}, the manifest last; the output channel ${STORE_CHANNEL} uploads it to ${uri}/ (every 30 s and at exit)`,
    };
  }
  if (ctx.provider === "tione") {
    const scheme = uri.slice(0, uri.indexOf(":"));
    const region = scheme === "cos" ? ctx.recipe.targets?.tione?.region : undefined;
    return {
      ...base, mechanism: "sidecar-store", ...(region === undefined ? {} : { region }), credentialEnvs: CREDENTIAL_ENVS[scheme] ?? [],
      note: `rlpipe_sync.py uploads committed steps and metrics straight to ${uri} through the S3 API, with ${(CREDENTIAL_ENVS[scheme] ?? []).filter((c) => c.required).map((c) => c.env).join(" and ") || "no credentials"} from the task's environment`,
    };
  }
  return { ...base, mechanism: "sidecar-direct", note: "rlpipe sync runs next to training with the storage credentials of the node" };
}
