// The ModelArts CreateTrainingJob (v2) body for a plan: a custom SWR image running launch.sh from the launch
// bundle, which ModelArts downloads from a content-addressed OBS code dir. Pure: the same plan gives the same
// body. Field names follow the SDK model classes (Job, JobAlgorithm, Spec…) and the documented custom-image
// example; what the stored docs do not confirm is listed in `unverified` with the recipe field that overrides it.
import type { RecipeIssue, RecipePath } from "../errors.js";
import { canonicalJson, sha256 } from "../recipe/load.js";
import type { Recipe } from "../recipe/schema.js";
import type { ProviderRequest, RequestBuilder, RequestInput, UnverifiedField } from "./request.js";

export const MODELARTS_CREATE_API = "POST /v2/{project_id}/training-jobs";
/** Where ModelArts puts downloaded code by default (the user guide's ${MA_JOB_DIR}); rlpipe leaves it to the platform. */
export const DEFAULT_LOCAL_CODE_DIR = "/home/ma-user/modelarts/user-job-dir";
/** The bundle's entry point: code_dir's boot_file (JobAlgorithm.boot_file "需要在代码目录下"). */
export const MODELARTS_BOOT_FILE = "launch.sh";
/**
 * Directories local_code_dir may not be, nor lie under (JobAlgorithm.local_code_dir, huaweicloudsdkmodelarts 3.1.219:
 * "必须为/home下的目录 … 不支持配置成/home/ma-user/modelarts，/home/ma-user/modelarts-dev，/home/ma-user/infer以及它们底下
 * 的目录，也不支持配置成/home/ma-user"). The platform's default is inside the first: a request never names it.
 */
export const RESERVED_CODE_DIRS = ["/home/ma-user/modelarts", "/home/ma-user/modelarts-dev", "/home/ma-user/infer"] as const;

/** Why ModelArts refuses `dir` as local_code_dir, or undefined. */
export function localCodeDirProblem(dir: string): string | undefined {
  const d = dir.replace(/\/+$/, "");
  if (!d.startsWith("/home/") || d.split("/").includes("..")) return "it must be a directory under /home";
  if (d === "/home/ma-user") return "it may not be /home/ma-user itself";
  const reserved = RESERVED_CODE_DIRS.find((r) => d === r || d.startsWith(`${r}/`));
  return reserved === undefined ? undefined : `${reserved} and the directories under it are ModelArts' own`;
}
/** JobAlgorithm.environments limits: pairs, key and value characters. */
export const ENV_LIMITS = { maxPairs: 100, maxKeyChars: 8192, maxValueChars: 4096 } as const;
export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Task environment a multi-node job reads its rank, size and hosts from (seen in public code, not in the docs). */
export const DEFAULT_PLATFORM_ENV = { nodeRank: "VC_TASK_INDEX", nnodes: "MA_NUM_HOSTS", hosts: "VC_WORKER_HOSTS" } as const;
/** metadata.name (1–64 of letters, digits, '_' and '-'). */
export const JOB_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_DESCRIPTION_CHARS = 256;

export interface ObsChannel {
  readonly name: string;
  readonly local_dir: string;
  readonly remote: { readonly obs: { readonly obs_url: string } };
}

/** The request body, exactly as sent. */
export interface ModelArtsJobBody {
  readonly kind: "job";
  readonly metadata: { readonly name: string; readonly description: string; readonly annotations?: Readonly<Record<string, string>> };
  readonly algorithm: {
    readonly engine: { readonly image_url: string };
    /** With boot_file, as the SDK pairs them ("应与boot_file一同出现"): the bundle's launch.sh in code_dir. */
    readonly code_dir: string;
    readonly boot_file: string;
    /** Only when the recipe names one (targets.modelarts.localCodeDir): otherwise the platform's default applies. */
    readonly local_code_dir?: string;
    readonly working_dir: string;
    readonly command: string;
    readonly inputs?: readonly ObsChannel[];
    readonly outputs?: readonly ObsChannel[];
    readonly environments?: Readonly<Record<string, string>>;
  };
  readonly spec: {
    readonly resource: { readonly flavor_id: string; readonly node_count: number; readonly pool_id?: string };
    readonly log_export_path: { readonly obs_url: string };
    readonly auto_stop?: { readonly time_unit: "HOURS"; readonly duration: number };
  };
}

type ModelArtsTarget = NonNullable<NonNullable<Recipe["targets"]>["modelarts"]>;
type ObsStyle = "path" | "uri";

/** An OBS location: bucket and key prefix (no leading or trailing slash). */
export interface ObsLocation {
  readonly bucket: string;
  readonly prefix: string;
}

/** obs://bucket/prefix or /bucket/prefix; undefined when neither. */
export function parseObsLocation(value: string): ObsLocation | undefined {
  const m = /^(?:obs:\/\/|\/)([^/]+)(?:\/(.*))?$/.exec(value.trim());
  if (m === null) return undefined;
  const bucket = m[1]!;
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) return undefined;
  const prefix = (m[2] ?? "").split("/").filter((p) => p !== "").join("/");
  if (prefix.split("/").some((p) => p === "." || p === "..")) return undefined;
  return { bucket, prefix };
}

/** A directory in the body's OBS path format ("/bucket/dir/" or "obs://bucket/dir/"), always ending with '/'. */
export function formatObsDir(loc: ObsLocation, style: ObsStyle): string {
  const tail = loc.prefix === "" ? "" : `${loc.prefix}/`;
  return style === "uri" ? `obs://${loc.bucket}/${tail}` : `/${loc.bucket}/${tail}`;
}

const obsJoin = (loc: ObsLocation, ...parts: string[]): ObsLocation => ({ bucket: loc.bucket, prefix: [loc.prefix, ...parts].filter((p) => p !== "").join("/") });

/** Single-quote a word for sh unless it is plainly safe. */
function shWord(word: string): string {
  return /^[A-Za-z0-9_./:=@+,%-]+$/.test(word) ? word : `'${word.replace(/'/g, `'"'"'`)}'`;
}

export const buildModelArtsRequest: RequestBuilder = (input: RequestInput, issues: RecipeIssue[]): ProviderRequest => {
  const target: ModelArtsTarget = input.recipe.targets?.modelarts ?? {};
  const at = (...p: (string | number)[]): RecipePath => ["targets", "modelarts", ...p];
  const error = (path: RecipePath, code: string, message: string, hint?: string) => issues.push({ severity: "error", code, path, message, ...(hint === undefined ? {} : { hint }) });
  const warn = (path: RecipePath, code: string, message: string, hint?: string) => issues.push({ severity: "warning", code, path, message, ...(hint === undefined ? {} : { hint }) });
  const unverified: UnverifiedField[] = [];
  const style: ObsStyle = target.obsPathStyle ?? "path";

  if (input.recipe.targets?.modelarts === undefined) {
    error(["targets", "modelarts"], "missing_target", "provider modelarts needs targets.modelarts (image, flavor, codeDir)",
      "add targets.modelarts with image: <SWR organization/image:tag>, flavor: <flavor_id> and codeDir: obs://<bucket>/<prefix>");
  } else {
    if (target.image === undefined) error(at("image"), "missing_field", "targets.modelarts.image is required: the custom image the job runs", "push the image to SWR in the job's region and set image: organization/image:tag");
    if (target.flavor === undefined) error(at("flavor"), "missing_field", "targets.modelarts.flavor is required", "read the flavor ids of your region: GET /v2/{project_id}/training-job-flavors?flavor_type=Ascend (for a dedicated pool, also set poolId and use the pool's flavor)");
    if (target.codeDir === undefined) error(at("codeDir"), "missing_field", "targets.modelarts.codeDir is required: the OBS directory launch bundles are uploaded to", "set codeDir: obs://<bucket>/<prefix> (rlpipe writes each bundle under <codeDir>/<digest>/)");
  }
  if (!JOB_NAME.test(input.jobName)) error(["metadata", "name"], "invalid_job_name", `job name ${JSON.stringify(input.jobName)} is not a valid ModelArts name (1–64 letters, digits, '_' or '-')`);

  const obsAt = (value: string | undefined, path: RecipePath): ObsLocation | undefined => {
    if (value === undefined) return undefined;
    const loc = parseObsLocation(value);
    if (loc === undefined) error(path, "invalid_obs_path", `expected an OBS directory such as obs://bucket/prefix, got ${JSON.stringify(value)}`, "bucket names are 3–63 lower-case letters, digits, '.' or '-'");
    return loc;
  };
  const absDir = (value: string, path: RecipePath): string => {
    if (!value.startsWith("/")) error(path, "relative_path", `expected an absolute directory in the job, got ${JSON.stringify(value)}`);
    return value.replace(/\/+$/, "") || "/";
  };

  // Content-addressed code dir: a changed bundle gets a new directory, a repeated deploy reuses the same one.
  const digest12 = input.bundleDigest.slice(0, 12);
  const codeBase = obsAt(target.codeDir, at("codeDir"));
  const codeDir = codeBase === undefined ? undefined : obsJoin(codeBase, digest12);
  const localCodeDir = absDir(target.localCodeDir ?? DEFAULT_LOCAL_CODE_DIR, at("localCodeDir"));
  const localProblem = target.localCodeDir === undefined ? undefined : localCodeDirProblem(localCodeDir);
  if (localProblem !== undefined) {
    error(at("localCodeDir"), "invalid_local_code_dir", `ModelArts does not accept local_code_dir ${localCodeDir}: ${localProblem}`, "leave it unset (ModelArts' own code directory) or use another directory under /home, e.g. /home/ma-user/code");
  }
  const mountedAt = `${localCodeDir}/${digest12}`;
  const logBase = target.logExportPath === undefined ? (codeBase === undefined ? undefined : obsJoin(codeBase, "logs")) : obsAt(target.logExportPath, at("logExportPath"));

  // Inputs and outputs: the target's own channels, then the checkpoint channels of the storage plan.
  const names = new Map<string, RecipePath>();
  const channel = (name: string, obs: string, local: string, where: (field: "name" | "obs" | "local") => RecipePath): ObsChannel | undefined => {
    const prev = names.get(name);
    if (prev !== undefined) error(where("name"), "duplicate_channel", `channel name ${JSON.stringify(name)} is already used by ${prev.join(".")}`, "give every input and output its own name");
    names.set(name, where("name"));
    const loc = obsAt(obs, where("obs"));
    const dir = absDir(local, where("local"));
    return loc === undefined ? undefined : { name, local_dir: dir, remote: { obs: { obs_url: formatObsDir(loc, style) } } };
  };
  const inputs = (target.inputs ?? []).flatMap((c, i) => channel(c.name, c.obs, c.local, (f) => at("inputs", i, f)) ?? []);
  const outputs = (target.outputs ?? []).flatMap((c, i) => channel(c.name, c.obs, c.local, (f) => at("outputs", i, f)) ?? []);
  // Checkpoint channels (storagePlan already reports a checkpoints.storage that is not obs://).
  for (const o of (input.storage?.modelartsOutputs ?? []).filter((x) => x.obsUrl.startsWith("obs://"))) {
    const c = channel(o.name, o.obsUrl, o.localDir, () => ["checkpoints", "storage"]);
    if (c !== undefined) outputs.push(c);
  }

  // RLPIPE_RUN names the run: the store names its checkpoints after the job (launch.sh syncs stage S as
  // $RLPIPE_RUN.S), and launch.sh keeps its completed-stage markers per run in the fixed workDir.
  const environments = sortedRecord({ ...buildEnvironments(input, target, error, warn), RLPIPE_RUN: input.jobName });

  const nodes = input.resources.nodes;
  const command = launchCommand(mountedAt, nodes, target);
  if (nodes > 1) {
    const pe = { ...DEFAULT_PLATFORM_ENV, ...target.envFromPlatform };
    unverified.push({
      path: "algorithm.command", value: pe,
      why: `launch.sh takes RLPIPE_NODE_RANK, RLPIPE_NNODES and RLPIPE_MASTER_ADDR from the ModelArts task environment (${pe.nodeRank}, ${pe.nnodes}, first host of the comma-separated ${pe.hosts}); these names come from public training scripts, not from the API docs`,
      override: "targets.modelarts.envFromPlatform",
    });
  }

  const recipeHash = sha256(canonicalJson(input.recipe));
  const description = `rlpipe recipe ${input.recipe.metadata.name} sha256:${recipeHash.slice(0, 12)} bundle ${digest12}`.slice(0, MAX_DESCRIPTION_CHARS);
  const annotations = target.annotations === undefined ? undefined : sortedRecord(target.annotations);

  const codeDirText = codeDir === undefined ? "" : formatObsDir(codeDir, style);
  const body: ModelArtsJobBody = {
    kind: "job",
    metadata: { name: input.jobName, description, ...(annotations === undefined ? {} : { annotations }) },
    algorithm: {
      engine: { image_url: target.image ?? "" },
      code_dir: codeDirText,
      boot_file: codeDirText === "" ? "" : `${codeDirText.replace(/\/+$/, "")}/${MODELARTS_BOOT_FILE}`,
      ...(target.localCodeDir === undefined ? {} : { local_code_dir: localCodeDir }),
      working_dir: mountedAt,
      command,
      ...(inputs.length === 0 ? {} : { inputs }),
      ...(outputs.length === 0 ? {} : { outputs }),
      ...(Object.keys(environments).length === 0 ? {} : { environments }),
    },
    spec: {
      resource: { flavor_id: target.flavor ?? "", node_count: nodes, ...(target.poolId === undefined ? {} : { pool_id: target.poolId }) },
      log_export_path: { obs_url: logBase === undefined ? "" : formatObsDir(logBase, style) },
      ...(target.autoStopHours === undefined ? {} : { auto_stop: { time_unit: "HOURS" as const, duration: target.autoStopHours } }),
    },
  };

  unverified.push({
    path: "algorithm.code_dir", value: codeDirText,
    why: `ModelArts is expected to download code_dir to ${mountedAt} (${target.localCodeDir === undefined ? "the platform's default code directory, ${MA_JOB_DIR} in the user guide," : "local_code_dir"} plus the code dir's last path segment, as in the documented custom-image example) before the command runs; not confirmed for custom-image jobs`,
    override: "targets.modelarts.localCodeDir",
  });
  unverified.push({
    path: "algorithm.boot_file", value: body.algorithm.boot_file,
    why: "the SDK pairs code_dir with boot_file (JobAlgorithm: \"应与boot_file一同出现\"); the user guide describes custom-image jobs as a code directory and a boot command, so whether the service runs boot_file or the command on a custom image is not confirmed (the command starts the same launch.sh)",
  });
  unverified.push({
    path: "spec.log_export_path.obs_url", value: body.spec.log_export_path.obs_url,
    why: "the docs write OBS paths both as /bucket/path/ (code_dir, inputs, outputs examples) and obs://bucket/path (log_export_path); rlpipe writes one format everywhere",
    override: "targets.modelarts.obsPathStyle",
  });
  if (outputs.length > 0) {
    const store = input.storage?.mechanism === "modelarts-output" ? input.storage : undefined;
    unverified.push({
      path: "algorithm.outputs", value: outputs.map((o) => o.name),
      why: `outputs are expected to upload local_dir to OBS periodically (response mode upload_periodically, period 30 s) and at exit; access_method is not set because its values are undocumented${store === undefined ? "" : `. The upload order is not documented either: launch.sh's sidecar stages each checkpoint's manifest ${store.stagingDir === undefined ? "" : `in ${store.stagingDir} `}only after its files have been in place for a while (and at the end), and restore verifies every file's SHA-256; whether a deletion (checkpoints.keep) reaches OBS is not documented`}`,
    });
  }
  if (target.flavor !== undefined) {
    unverified.push({
      path: "spec.resource.flavor_id", value: target.flavor,
      why: "flavor ids differ by region and change over time; check it against GET /v2/{project_id}/training-job-flavors",
      override: "targets.modelarts.flavor",
    });
  }
  if (input.secretEnvs.length > 0) {
    unverified.push({
      path: "algorithm.environments", value: [...input.secretEnvs].sort(),
      why: "secrets are never put in the request: ModelArts job environments are plain text, shown in the console and returned by the job API, and the ModelArts API docs rlpipe follows describe no secret store for training jobs. The job must get these variables another way that rlpipe does not set up or verify (e.g. a private image in SWR, or an entrypoint that reads them from a store the job's agency may access); launch.sh stops at start, naming any required one that is missing",
    });
  }
  if (target.autoStopHours !== undefined) {
    unverified.push({ path: "spec.auto_stop", value: body.spec.auto_stop, why: "auto_stop comes from the SDK model (AutoStop); the stored API docs do not describe it", override: "targets.modelarts.autoStopHours" });
  }

  return {
    provider: "modelarts",
    api: MODELARTS_CREATE_API,
    body,
    ...(codeDir === undefined ? {} : { bundle: { to: formatObsDir(codeDir, "uri"), mountedAt } }),
    unverified: unverified.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  };
};

/**
 * The job's `environments`: literal runtime.env values (launch.sh sets them again, so one the platform cannot
 * carry is only reported) and targets.modelarts.env (carried only here, so a violation is an error).
 */
function buildEnvironments(input: RequestInput, target: ModelArtsTarget, error: (p: RecipePath, c: string, m: string, h?: string) => void, warn: (p: RecipePath, c: string, m: string, h?: string) => void): Record<string, string> {
  const out = new Map<string, string>();
  const problem = (key: string, value: string): string | undefined => {
    if (!ENV_KEY.test(key)) return "keys must match [A-Za-z_][A-Za-z0-9_]*";
    if (key.length > ENV_LIMITS.maxKeyChars) return `keys may have at most ${ENV_LIMITS.maxKeyChars} characters`;
    if (value.includes("$")) return "values may not contain '$'";
    if (value.length > ENV_LIMITS.maxValueChars) return `values may have at most ${ENV_LIMITS.maxValueChars} characters (this one has ${value.length})`;
    return undefined;
  };
  const secret = new Set(input.secretEnvs);
  for (const [k, v] of Object.entries(input.recipe.runtime.env ?? {})) {
    const why = problem(k, v);
    if (why !== undefined) {
      warn(["runtime", "env", k], "modelarts_env_not_passed", `not passed as a ModelArts job environment variable: ${why}; launch.sh still sets it when the job starts`);
      continue;
    }
    out.set(k, v);
  }
  for (const [k, v] of Object.entries(target.env ?? {})) {
    const path: RecipePath = ["targets", "modelarts", "env", k];
    if (secret.has(k)) {
      error(path, "secret_in_request", `${k} is a secret's variable; ModelArts environments are plain text and rlpipe never puts secrets in a request`, "remove it here; see the plan's unverified notes for how secrets reach a ModelArts job");
      continue;
    }
    const why = problem(k, v);
    if (why !== undefined) {
      error(path, "invalid_modelarts_env", `ModelArts job environment rule: ${why}`, "set a literal value; shell expansion happens only in launch.sh (runtime.env)");
      continue;
    }
    if (out.has(k) && out.get(k) !== v) warn(path, "env_shadowed", `runtime.env also sets ${k}; launch.sh exports the runtime.env value when the job starts, so that one wins`);
    out.set(k, v);
  }
  if (out.size > ENV_LIMITS.maxPairs) {
    error(["targets", "modelarts", "env"], "too_many_env", `a ModelArts job takes at most ${ENV_LIMITS.maxPairs} environment variables; runtime.env and targets.modelarts.env give ${out.size}`, "move variables that launch.sh can set into stage env blocks");
  }
  return sortedRecord(Object.fromEntries(out));
}

/** The command every node runs: multi-node runs map the task environment onto launch.sh's variables first. */
function launchCommand(mountedAt: string, nodes: number, target: ModelArtsTarget): string {
  const run = `bash ${shWord(`${mountedAt}/launch.sh`)}`;
  if (nodes <= 1) return run;
  const pe = { ...DEFAULT_PLATFORM_ENV, ...target.envFromPlatform };
  const need = (name: string, field: string) => `\${${name}:?rlpipe: ${name} is not set in this ModelArts task; set targets.modelarts.envFromPlatform.${field}}`;
  // ${hosts%%,*}: the first host of the comma-separated list is rank 0, where launch.sh starts the Ray head.
  return [
    `RLPIPE_NODE_RANK="${need(pe.nodeRank, "nodeRank")}"`,
    `RLPIPE_NNODES="\${${pe.nnodes}:-${nodes}}"`,
    `RLPIPE_HOSTS="${need(pe.hosts, "hosts")}"`,
    `RLPIPE_MASTER_ADDR="\${RLPIPE_HOSTS%%,*}"`,
    "export RLPIPE_NODE_RANK RLPIPE_NNODES RLPIPE_MASTER_ADDR",
    `exec ${run}`,
  ].join("; ");
}

function sortedRecord(r: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
