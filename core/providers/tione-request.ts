// TI-ONE (tione 2021-11-11) CreateTrainingTask for a plan: pure. The public API documents DDP/MPI/PS_WORKER
// tasks but not the console's Ray mode, so every Ray-mode literal has a best-known default that the recipe
// can override (targets.tione.*), and each default is listed as unverified with the reason and the override.
// TI-ONE has no RuntimeEnv field either: the Ray runtime env travels through verl's own ray.init
// (tioneRayRuntimeEnvOverrides) and the start command.
import type { RecipeIssue, RecipePath } from "../errors.js";
import type { Recipe } from "../recipe/schema.js";
import { shellQuote } from "../render/shell.js";
import type { ProviderRequest, RequestBuilder, RequestInput, UnverifiedField } from "./request.js";
import { tioneRayRuntimeEnvOverrides } from "./tione-ray-env.js";

export { type RayRuntimeEnvOverride, rayEnvValue, tioneRayRuntimeEnvOverrides } from "./tione-ray-env.js";

export type TioneTarget = NonNullable<NonNullable<Recipe["targets"]>["tione"]>;
type TioneNodes = NonNullable<TioneTarget["head"]>;

export const TIONE_VERSION = "2021-11-11";
export const TIONE_CREATE_API = "tione:CreateTrainingTask";
/** Tag every task carries: findExisting looks tasks up by it (CreateTrainingTask has no client token). */
export const RUN_TAG_KEY = "rlpipe-run";
export const DEFAULT_CODE_MOUNT = "/opt/ml/input/rlpipe-bundle";
export const DEFAULT_CFS_MOUNT = "/home/tione/notebook";
/** TI-ONE's limits (API reference): TuningParameters ≤ 2048 characters, DataConfigs ≤ 10. */
export const TUNING_PARAMETERS_MAX = 2048;
export const DATA_CONFIGS_MAX = 10;
/**
 * What the planned body carries as a secret's Value: the adapter puts the deploying shell's value there at deploy
 * time (a secret never enters a plan), so the plan shows each secret Env as it is sent, IsPrivate included.
 */
export const SECRET_ENV_PLACEHOLDER = "<secret: from the deploying shell at deploy>";

// ------------------------------------------------------------------------------------------ task names

/**
 * CreateTrainingTaskRequest.Name (the SDK's docstring): "不超过60个字符，仅支持中英文、数字、下划线"_"、短横"-"，只能以中英文、数字开头"
 * — at most 60 characters of Chinese (Han) or English letters, digits, '_' and '-', starting with a letter or digit.
 * One definition for the planner and the adapter.
 */
export const TASK_NAME_MAX_CHARS = 60;
const NAME_CHAR = /[A-Za-z0-9_\-\p{Script=Han}]/u;
const NAME_FIRST = /[A-Za-z0-9\p{Script=Han}]/u;
export const TASK_NAME_RULE = `at most ${TASK_NAME_MAX_CHARS} characters, only Chinese or English letters, digits, '_' and '-', starting with a letter or digit`;

/** What breaks TI-ONE's name rule in `name`, or undefined when it is a valid task name. */
export function taskNameProblem(name: string): string | undefined {
  const chars = [...name];
  if (chars.length === 0) return "it is empty";
  if (chars.length > TASK_NAME_MAX_CHARS) return `it has ${chars.length} characters`;
  if (!NAME_FIRST.test(chars[0]!)) return `it starts with ${JSON.stringify(chars[0])}`;
  const bad = chars.findIndex((c) => !NAME_CHAR.test(c));
  return bad < 0 ? undefined : `it has ${JSON.stringify(chars[bad])} at position ${bad + 1}`;
}

/** Best-known literals for what the public API does not document (reference: tione-and-prices.md A3). */
export const TIONE_DEFAULTS = {
  rayTrainingMode: "RAY",
  customTrainingMode: "DDP",
  headRole: "HEAD",
  workerRole: "WORKER",
  framework: "PYTORCH",
  /** A console spec's "1000G": read as GiB, i.e. 1000 × 1024 MB. */
  mbPerSpecG: 1024,
} as const;

// ------------------------------------------------------------------------------------------ body types

export interface TioneResourceConfig {
  readonly Role: string;
  readonly InstanceNum: number;
  readonly Cpu?: number;
  readonly Memory?: number;
  readonly Gpu?: number;
  readonly GpuType?: string;
  readonly InstanceType?: string;
  readonly RDMAConfig?: { readonly Enable: boolean };
}

export interface TioneCosPath {
  readonly Bucket: string;
  readonly Region: string;
  readonly Paths: readonly string[];
}

export interface TioneDataConfig {
  readonly MappingPath: string;
  readonly DataSourceType: "CFS" | "COS";
  readonly CFSSource?: { readonly Id: string; readonly Path: string };
  readonly COSSource?: TioneCosPath;
}

export interface CreateTrainingTaskBody {
  readonly Name: string;
  readonly ChargeType: "PREPAID" | "POSTPAID_BY_HOUR";
  readonly ResourceGroupId?: string;
  readonly TrainingMode: string;
  readonly FrameworkName?: string;
  readonly FrameworkVersion?: string;
  readonly FrameworkEnvironment?: string;
  readonly ImageInfo?: { readonly ImageType: string; readonly ImageUrl: string; readonly RegistryRegion?: string; readonly RegistryId?: string };
  readonly ResourceConfigInfos: readonly TioneResourceConfig[];
  /** base64 of {"StartCmd","PsStartCmd","WorkerStartCmd"}: the API's recommended form for commands with quotes. */
  readonly EncodedStartCmdInfo: { readonly StartCmdInfo: string };
  readonly DataSource?: "CFS" | "COS";
  readonly DataConfigs?: readonly TioneDataConfig[];
  readonly Output?: TioneCosPath;
  /** Secrets are private (IsPrivate: true) with SECRET_ENV_PLACEHOLDER as the Value until the adapter sends them. */
  readonly Envs: readonly TioneEnv[];
  readonly Tags: readonly { readonly TagKey: string; readonly TagValue: string }[];
  readonly LogEnable?: boolean;
  readonly LogConfig?: { readonly LogsetId: string; readonly TopicId: string };
  readonly TuningParameters?: string;
  readonly VpcId?: string;
  readonly SubnetId?: string;
  /** The workspace, when the recipe names one (targets.tione.tiProjectId). */
  readonly TiProjectId?: string;
}

export interface TioneEnv {
  readonly Name: string;
  readonly Value: string;
  readonly IsPrivate?: true;
}

// ------------------------------------------------------------------------------------------ small parsers

export interface NodeSize {
  readonly cpuMilli: number;
  readonly memoryMB: number;
  readonly gpuCenti?: number;
  readonly gpuType?: string;
}

const SPEC = /^\s*(\d+(?:\.\d+)?)\s*C\s*(\d+(?:\.\d+)?)\s*GB?(?:\s+(?:GPU-)?([A-Za-z0-9][A-Za-z0-9_.-]*)\s*\*\s*(\d+(?:\.\d+)?))?\s*$/i;

/** "128C1000G" / "128C1000G GPU-HCCPNV6*4" in the API's units (1/1000 core, MB, 1/100 card). */
export function parseNodeSpec(spec: string): NodeSize | undefined {
  const m = SPEC.exec(spec);
  if (m === null) return undefined;
  const size: NodeSize = { cpuMilli: Math.round(Number(m[1]) * 1000), memoryMB: Math.round(Number(m[2]) * TIONE_DEFAULTS.mbPerSpecG) };
  return m[3] === undefined ? size : { ...size, gpuType: m[3], gpuCenti: Math.round(Number(m[4]) * 100) };
}

/** cos://bucket-appid/prefix → bucket and prefix (no leading or trailing slash). */
export function parseCosUri(uri: string): { readonly bucket: string; readonly prefix: string } | undefined {
  const m = /^cos:\/\/([a-z0-9][a-z0-9-]*-\d+)(?:\/(.*))?$/.exec(uri);
  if (m === null) return undefined;
  return { bucket: m[1]!, prefix: (m[2] ?? "").split("/").filter((p) => p !== "").join("/") };
}

/** "cfs-abcd1234:/team" → id and path (default "/"). */
export function parseCfs(value: string): { readonly id: string; readonly path: string } {
  const i = value.indexOf(":");
  return i < 0 ? { id: value, path: "/" } : { id: value.slice(0, i), path: value.slice(i + 1) || "/" };
}

/** COS paths as the API takes them: "/prefix/…/" (leading and trailing slash). */
function cosPath(...parts: string[]): string {
  const joined = parts.filter((p) => p !== "").join("/");
  return joined === "" ? "/" : `/${joined}/`;
}

/** Where the bundle goes: <codeDir>/<bundle digest>/ (content-addressed, so re-uploading is harmless). */
export function bundleLocation(t: TioneTarget | undefined, bundleDigest: string): string | undefined {
  const base = t?.codeDir ?? t?.storage?.cos;
  return base === undefined ? undefined : `${base.replace(/\/+$/, "")}/${bundleDigest}`;
}

// ------------------------------------------------------------------------------------------ what a deploy needs

/**
 * Target fields a deploy cannot do without. Planning without them is fine (plans are also for cost reports and
 * review), so the builder reports them as warnings and the adapter refuses to deploy while any remain.
 */
export function tioneDeployGaps(recipe: Recipe): RecipeIssue[] {
  const t = recipe.targets?.tione;
  const T: RecipePath = ["targets", "tione"];
  const gap = (path: RecipePath, message: string, hint?: string): RecipeIssue => ({ severity: "warning", code: "tione_target_incomplete", path, message, ...(hint === undefined ? {} : { hint }) });
  if (t === undefined) {
    return [gap(T, "a TI-ONE deploy needs targets.tione (image, head/worker nodes, resource group or instance types, codeDir, region)", "read the fields of a task created once in the console with: rlpipe tione inspect <task-id>")];
  }
  const out: RecipeIssue[] = [];
  if (t.image?.builtin === undefined && t.image?.url === undefined) out.push(gap([...T, "image"], "no image: set image.builtin (a built-in image name) or image.url"));
  const charge = chargeTypeOf(t);
  const nodes: [string, TioneNodes | undefined][] = [...(t.mode === "ray" ? [["head", t.head] as [string, TioneNodes | undefined]] : []), ["worker", t.worker]];
  for (const [which, n] of nodes) {
    if (n === undefined) { out.push(gap([...T, which], `no ${which} nodes: set ${which}.spec (e.g. "128C1000G") and ${which}.count`)); continue; }
    if (charge === "PREPAID" && n.cpuMilli === undefined && n.spec === undefined) out.push(gap([...T, which, "spec"], `a prepaid task needs the ${which} size: set ${which}.spec or ${which}.cpuMilli and memoryMB`));
    else if (charge === "PREPAID" && n.memoryMB === undefined && n.spec === undefined) out.push(gap([...T, which, "memoryMB"], `a prepaid task needs the ${which} memory: set ${which}.spec or ${which}.memoryMB`));
    if (charge === "POSTPAID_BY_HOUR" && n.instanceType === undefined) out.push(gap([...T, which, "instanceType"], `a postpaid task needs ${which}.instanceType (a spec id from DescribeBillingSpecs)`));
  }
  if (charge === "PREPAID" && t.resourceGroupId === undefined) out.push(gap([...T, "resourceGroupId"], "a prepaid task needs resourceGroupId", "or set chargeType: POSTPAID_BY_HOUR with instanceType on each node"));
  if (bundleLocation(t, "x") === undefined) out.push(gap([...T, "codeDir"], "no COS location for the launch bundle: set codeDir (cos://bucket-appid/prefix)"));
  if (t.region === undefined && (bundleLocation(t, "x") !== undefined || t.output !== undefined)) out.push(gap([...T, "region"], "the COS locations need the region: set targets.tione.region"));
  return out;
}

function chargeTypeOf(t: TioneTarget): "PREPAID" | "POSTPAID_BY_HOUR" {
  if (t.chargeType !== undefined) return t.chargeType;
  if (t.resourceGroupId !== undefined) return "PREPAID";
  return t.worker?.instanceType !== undefined || t.head?.instanceType !== undefined ? "POSTPAID_BY_HOUR" : "PREPAID";
}

/** The decoded start command of a request body (for display and tests). */
export function decodeStartCmd(body: CreateTrainingTaskBody): { StartCmd: string; PsStartCmd: string; WorkerStartCmd: string } {
  return JSON.parse(Buffer.from(body.EncodedStartCmdInfo.StartCmdInfo, "base64").toString("utf8")) as { StartCmd: string; PsStartCmd: string; WorkerStartCmd: string };
}

// ------------------------------------------------------------------------------------------ the builder

export const buildTioneRequest: RequestBuilder = (input: RequestInput, issues: RecipeIssue[]): ProviderRequest => {
  const { recipe, jobName } = input;
  const t = recipe.targets?.tione;
  const T: RecipePath = ["targets", "tione"];
  const unverified: UnverifiedField[] = [];
  const err = (path: RecipePath, code: string, message: string, hint?: string) => issues.push({ severity: "error", code, path, message, ...(hint === undefined ? {} : { hint }) });
  const warn = (path: RecipePath, code: string, message: string, hint?: string) => issues.push({ severity: "warning", code, path, message, ...(hint === undefined ? {} : { hint }) });
  issues.push(...tioneDeployGaps(recipe));

  const mode = t?.mode ?? "ray";
  const region = t?.region ?? "";
  const chargeType = t === undefined ? "PREPAID" : chargeTypeOf(t);

  // Training mode: DDP is documented; the Ray literal is inferred from the upper-case tokens of
  // DescribeTrainingFrameworks (DDP, MPI, HOROVOD).
  const trainingMode = t?.trainingMode ?? (mode === "ray" ? TIONE_DEFAULTS.rayTrainingMode : TIONE_DEFAULTS.customTrainingMode);
  if (t?.trainingMode === undefined && mode === "ray") {
    unverified.push({ path: "TrainingMode", value: trainingMode, why: "the public API documents PS_WORKER, DDP, MPI and HOROVOD only; the console's Ray mode literal is inferred from those upper-case tokens", override: "targets.tione.trainingMode" });
  }

  // Nodes: the head (Ray mode) first, then the workers.
  const resources: TioneResourceConfig[] = [];
  const roles: ["head" | "worker", TioneNodes | undefined, string][] = [
    ...(mode === "ray" ? [["head", t?.head, TIONE_DEFAULTS.headRole] as ["head", TioneNodes | undefined, string]] : []),
    ["worker", t?.worker, TIONE_DEFAULTS.workerRole],
  ];
  for (const [which, n, defaultRole] of roles) {
    if (n === undefined) continue;
    const at: RecipePath = [...T, which];
    const i = resources.length;
    const role = n.role ?? defaultRole;
    if (n.role === undefined && mode === "ray") {
      unverified.push({
        path: `ResourceConfigInfos[${i}].Role`, value: role, override: `targets.tione.${which}.role`,
        why: which === "head" ? "no HEAD role is documented (roles: PS, WORKER, DRIVER, EXECUTOR); inferred from the console's Head/Worker wording" : "WORKER is documented for other modes; its use in Ray mode is inferred from the console's Head/Worker wording",
      });
    }
    let size: NodeSize | undefined;
    if (n.spec !== undefined) {
      size = parseNodeSpec(n.spec);
      if (size === undefined) err([...at, "spec"], "tione_bad_spec", `cannot read the node size ${JSON.stringify(n.spec)}`, 'write it as the console does: "128C1000G" or "128C1000G GPU-HCCPNV6*4", or set cpuMilli/memoryMB/gpuCenti/gpuType');
    }
    const base = { Role: role, InstanceNum: n.count };
    const rdma = n.rdma === undefined ? {} : { RDMAConfig: { Enable: n.rdma } };
    if (chargeType === "POSTPAID_BY_HOUR") {
      resources.push({ ...base, ...(n.instanceType === undefined ? {} : { InstanceType: n.instanceType }), ...rdma });
      continue;
    }
    const cpu = n.cpuMilli ?? size?.cpuMilli;
    const memory = n.memoryMB ?? size?.memoryMB;
    const gpu = n.gpuCenti ?? size?.gpuCenti ?? 0;
    const gpuType = n.gpuType ?? size?.gpuType;
    if (n.memoryMB === undefined && size !== undefined) {
      unverified.push({ path: `ResourceConfigInfos[${i}].Memory`, value: memory, why: `the API takes MB; whether the console's "${n.spec}" means GiB (×1024, used here) or GB (×1000) is not documented`, override: `targets.tione.${which}.memoryMB` });
    }
    if (n.gpuType === undefined && size?.gpuType !== undefined) {
      unverified.push({ path: `ResourceConfigInfos[${i}].GpuType`, value: gpuType, why: "GpuType is the resource group's card-type label; the console's spec name is used (the card inside HCCPNV6 is an H20)", override: `targets.tione.${which}.gpuType` });
    }
    resources.push({
      ...base,
      ...(cpu === undefined ? {} : { Cpu: cpu }),
      ...(memory === undefined ? {} : { Memory: memory }),
      Gpu: gpu,
      ...(gpu > 0 && gpuType !== undefined ? { GpuType: gpuType } : {}),
      ...rdma,
    });
  }
  checkShape(recipe, t, mode, warn);

  // Image: a built-in image is chosen by FrameworkName + FrameworkEnvironment (tccli's CreateTrainingTask example).
  const image = t?.image;
  let imageFields: Partial<CreateTrainingTaskBody> = {};
  if (image?.builtin !== undefined && image.url !== undefined) err([...T, "image"], "tione_image_conflict", "set either image.builtin or image.url, not both");
  if (image?.builtin !== undefined) {
    const framework = image.framework ?? TIONE_DEFAULTS.framework;
    if (image.framework === undefined) {
      unverified.push({ path: "FrameworkName", value: framework, why: "built-in images are selected by FrameworkName + FrameworkEnvironment; PYTORCH for the verl image is inferred from its preset-image listing", override: "targets.tione.image.framework" });
    }
    imageFields = { FrameworkName: framework, ...(image.frameworkVersion === undefined ? {} : { FrameworkVersion: image.frameworkVersion }), FrameworkEnvironment: image.builtin };
  } else if (image?.url !== undefined) {
    imageFields = { ImageInfo: { ImageType: image.imageType ?? "TCR", ImageUrl: image.url, ...(image.registryRegion === undefined ? {} : { RegistryRegion: image.registryRegion }), ...(image.registryId === undefined ? {} : { RegistryId: image.registryId }) } };
  }

  // Storage: the CFS (the dev machine's storage) and the bundle on COS.
  const dataConfigs: TioneDataConfig[] = [];
  if (t?.storage?.cfs !== undefined) {
    const cfs = parseCfs(t.storage.cfs);
    dataConfigs.push({ MappingPath: t.storage.mountPath ?? DEFAULT_CFS_MOUNT, DataSourceType: "CFS", CFSSource: { Id: cfs.id, Path: cfs.path } });
  }
  const codeMount = t?.codeMountPath ?? DEFAULT_CODE_MOUNT;
  const bundleUri = bundleLocation(t, input.bundleDigest);
  if (bundleUri !== undefined) {
    const cos = parseCosUri(bundleUri);
    if (cos === undefined) err([...T, t?.codeDir !== undefined ? "codeDir" : "storage"], "tione_bad_cos_uri", `not a COS URI: ${bundleUri}`);
    else dataConfigs.push({ MappingPath: codeMount, DataSourceType: "COS", COSSource: { Bucket: cos.bucket, Region: region, Paths: [cosPath(cos.prefix)] } });
  }
  if (dataConfigs.length > DATA_CONFIGS_MAX) err([...T, "storage"], "tione_too_many_data_configs", `TI-ONE takes at most ${DATA_CONFIGS_MAX} data configs`);
  if (dataConfigs.length > 1) {
    unverified.push({ path: "DataSource", value: dataConfigs[0]!.DataSourceType, why: "the API says DataConfigs depend on DataSource but documents no value for a task that mounts both CFS and COS; each DataConfig carries its own DataSourceType", override: "targets.tione.storage" });
  }
  if (dataConfigs.some((d) => d.DataSourceType === "COS")) {
    unverified.push({ path: "DataConfigs[].COSSource.Paths", value: dataConfigs.filter((d) => d.COSSource !== undefined).map((d) => d.COSSource!.Paths[0]), why: "the path format (leading and trailing '/', no bucket) follows the API's Output examples; a COS data config mounting a prefix as a directory is not documented in detail", override: "targets.tione.codeDir" });
  }

  // Start command: into the working directory, then the bundle's launch.sh (which copies the bundle into workDir).
  const startCmd = t?.startCmd ?? renderStartCmd(t, mode, codeMount);
  unverified.push({
    path: "EncodedStartCmdInfo.StartCmdInfo", value: startCmd, override: "targets.tione.startCmd",
    why: mode === "ray"
      ? "in Ray mode the console takes one start command; that it runs once on the head as the Ray driver (after TI-ONE has started the Ray cluster) is inferred, not documented"
      : "DDP mode runs the start command on every node; the node index and master address are read from INDEX and MASTER_ADDR, which the distributed-training guide names but whose exact semantics are not documented",
  });
  const encoded = Buffer.from(JSON.stringify({ StartCmd: startCmd, PsStartCmd: "", WorkerStartCmd: "" }), "utf8").toString("base64");

  // Environment: literal values; a secret's value never enters the plan (the adapter fills it in at deploy time).
  const envs = new Map<string, string>([["RLPIPE_RUN", jobName]]);
  const secretEnvs = new Set(input.secretEnvs);
  for (const [name, value] of Object.entries(t?.envs ?? {})) {
    if (secretEnvs.has(name)) { err([...T, "envs", name], "secret_in_recipe", `${name} is a secret's environment variable; its value must not be written in the recipe`); continue; }
    if (value.includes("$")) {
      warn([...T, "envs", name], "env_not_expanded", `TI-ONE sets task environment variables literally (no $ expansion is documented): the task sees ${JSON.stringify(value)} as written`, "write the final value; for Ray workers use targets.tione.runtimeEnv.envVars, which Ray expands");
    }
    envs.set(name, value);
  }
  for (const [name, value] of Object.entries(t?.runtimeEnv?.envVars ?? {})) {
    if (value.includes("$")) {
      // A literal "$LD_LIBRARY_PATH" in the task environment would replace the node's own value.
      warn([...T, "runtimeEnv", "envVars", name], "env_not_expanded", `not sent as a TI-ONE task variable: TI-ONE sets Envs literally (no $ expansion is documented), so ${JSON.stringify(value)} would replace the node's own ${name}; Ray expands it on each node through verl's runtime_env instead (+ray_kwargs.ray_init.runtime_env.env_vars.${name})`,
        "the head's launch.sh gets it only from runtime.env or an envPreset (e.g. cuda-compat)");
      continue;
    }
    if (!envs.has(name)) envs.set(name, value);
  }
  // The same rule as the adapter's submit(): every secret goes as a private Env unless secretsAsEnvs is false.
  const privateEnvs = (t?.secretsAsEnvs ?? true) ? [...new Set(input.secretEnvs)] : [];
  if (privateEnvs.length > 0 && t !== undefined) {
    // EnvVar.IsPrivate is documented only as "是否对外不可见,true 表示该环境变量的 Value 为敏感值": which views hide the
    // value is not stated, and the task's own processes (its start command, its logs) always see it.
    warn([...T, "secretsAsEnvs"], "tione_secret_envs", `TI-ONE has no secret store: a deploy passes ${privateEnvs.join(", ")} from the deploying shell as private task environment variables (IsPrivate: "not visible externally", per the SDK; which views hide the value is not documented), readable by the task's own code and anything it logs; an optional one not set at deploy is left out`,
      "set secretsAsEnvs: false to provide them another way (the variables must then exist in the image or be set by the start command)");
  }

  // Ray runtime env: carried by verl (rendered into the stages by tioneRayRuntimeEnvOverrides).
  const rt = tioneRayRuntimeEnvOverrides(recipe);
  issues.push(...rt.issues);
  if (rt.overrides.length > 0) {
    unverified.push({
      path: "RuntimeEnv", value: rt.overrides.map((o) => `${o.key}=${Array.isArray(o.value) ? `[${(o.value as string[]).join(",")}]` : o.value as string}`),
      why: "the API has no RuntimeEnv field (not a request field): the runtime env reaches Ray through verl's ray.init (these overrides on every verl stage) and the start command's cd; how TI-ONE's own job-level runtime env, if any, merges with it is not documented; $NAME expansion by Ray is checked against Ray 2.60 (the image has Ray 2.49.2)",
      override: "targets.tione.runtimeEnv",
    });
  }

  const tuning = t?.tuningParameters;
  if (tuning !== undefined && tuning.length > TUNING_PARAMETERS_MAX) err([...T, "tuningParameters"], "tione_tuning_too_long", `TuningParameters takes at most ${TUNING_PARAMETERS_MAX} characters, got ${tuning.length}`);
  const nameProblem = taskNameProblem(jobName);
  if (nameProblem !== undefined) {
    const tooLong = [...jobName].length > TASK_NAME_MAX_CHARS;
    err(["metadata", "name"], tooLong ? "tione_name_too_long" : "tione_bad_task_name", `the TI-ONE task name ${JSON.stringify(jobName)} (made from metadata.name) breaks TI-ONE's rule for CreateTrainingTask.Name: ${nameProblem}; the rule: ${TASK_NAME_RULE}`,
      tooLong ? "shorten metadata.name" : "rename the recipe (metadata.name) with English letters, digits and '-'");
  }

  const output = t?.output === undefined ? undefined : parseCosUri(t.output);
  const tags = [
    { TagKey: RUN_TAG_KEY, TagValue: jobName },
    ...Object.keys(t?.tags ?? {}).filter((k) => k !== RUN_TAG_KEY).sort().map((k) => ({ TagKey: k, TagValue: t!.tags![k]! })),
  ];
  const body: CreateTrainingTaskBody = {
    Name: jobName,
    ChargeType: chargeType,
    ...(chargeType === "PREPAID" && t?.resourceGroupId !== undefined ? { ResourceGroupId: t.resourceGroupId } : {}),
    TrainingMode: trainingMode,
    ...imageFields,
    ResourceConfigInfos: resources,
    EncodedStartCmdInfo: { StartCmdInfo: encoded },
    ...(dataConfigs.length === 0 ? {} : { DataSource: dataConfigs[0]!.DataSourceType, DataConfigs: dataConfigs }),
    ...(output === undefined ? {} : { Output: { Bucket: output.bucket, Region: region, Paths: [cosPath(output.prefix)] } }),
    Envs: sortEnvs([
      ...[...envs.entries()].filter(([name]) => !privateEnvs.includes(name)).map(([Name, Value]) => ({ Name, Value })),
      ...privateEnvs.map((Name) => ({ Name, Value: SECRET_ENV_PLACEHOLDER, IsPrivate: true as const })),
    ]),
    Tags: tags,
    ...(t?.logConfig === undefined ? {} : { LogEnable: true, LogConfig: { LogsetId: t.logConfig.logsetId, TopicId: t.logConfig.topicId } }),
    ...(tuning === undefined ? {} : { TuningParameters: tuning }),
    ...(t?.vpcId === undefined ? {} : { VpcId: t.vpcId }),
    ...(t?.subnetId === undefined ? {} : { SubnetId: t.subnetId }),
    ...(t?.tiProjectId === undefined ? {} : { TiProjectId: t.tiProjectId }),
  };
  return {
    provider: "tione",
    api: TIONE_CREATE_API,
    body,
    ...(bundleUri === undefined ? {} : { bundle: { to: bundleUri, mountedAt: codeMount } }),
    unverified,
  };
};

/** Envs by name (code-unit order), as the planner and the adapter both send them. */
export function sortEnvs<E extends { readonly Name: string }>(envs: readonly E[]): E[] {
  return [...envs].sort((a, b) => (a.Name < b.Name ? -1 : a.Name > b.Name ? 1 : 0));
}

function renderStartCmd(t: TioneTarget | undefined, mode: "ray" | "custom", codeMount: string): string {
  const steps: string[] = [];
  // DDP mode runs on every node: launch.sh reads the node rank and master address from its own variables.
  if (mode === "custom" && (t?.worker?.count ?? 1) > 1) steps.push('export RLPIPE_NODE_RANK="${INDEX:-0}" RLPIPE_MASTER_ADDR="${MASTER_ADDR:-}"');
  const wd = t?.runtimeEnv?.workingDir;
  if (wd !== undefined) steps.push(`cd ${shellQuote(wd)}`);
  steps.push(`bash ${shellQuote(`${codeMount.replace(/\/+$/, "")}/launch.sh`)}`);
  return steps.join(" && ");
}

/** The recipe's resources against the nodes TI-ONE will give (a mismatch leaves GPUs idle or verl waiting). */
function checkShape(recipe: Recipe, t: TioneTarget | undefined, mode: "ray" | "custom", warn: (path: RecipePath, code: string, message: string, hint?: string) => void): void {
  const w = t?.worker;
  if (w === undefined) return;
  const { nodes, devicesPerNode } = recipe.resources;
  if (w.count !== nodes) {
    warn(["targets", "tione", "worker", "count"], "tione_shape_mismatch", `${w.count} worker node(s), but resources.nodes is ${nodes} (verl's trainer.nnodes)`, "make them equal");
  }
  const gpuCenti = w.gpuCenti ?? (w.spec === undefined ? undefined : parseNodeSpec(w.spec)?.gpuCenti);
  if (gpuCenti !== undefined && gpuCenti !== devicesPerNode * 100) {
    warn(["targets", "tione", "worker"], "tione_shape_mismatch", `each worker has ${gpuCenti / 100} GPU(s), but resources.devicesPerNode is ${devicesPerNode}`, "make them equal");
  }
}
