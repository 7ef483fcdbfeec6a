// recipe × provider → Plan: every file and command a deploy would use, computed without network or
// credentials. Pure: the same recipe, provider and options give byte-identical output.
import { type SandboxCapacity, capacityIssues, sandboxCapacity } from "./capacity.js";
import { type LocatedIssue, RecipeError, type RecipeIssue, RlpipeError } from "./errors.js";
import { checkRecipe } from "./recipe/check.js";
import { Interpolator } from "./recipe/interpolate.js";
import { findPlaceholders } from "./recipe/placeholders.js";
import { type LoadedRecipe, canonicalJson, locateAll, sha256 } from "./recipe/load.js";
import { type ProviderRequest, buildNamedRequest } from "./providers/request.js";
import { REQUEST_BUILDERS } from "./providers/requests.js";
import { type VerlProfile, PROFILES, profileByName, profileForRef } from "./recipe/profiles.js";
import type { Provider, Recipe, SandboxSpec } from "./recipe/schema.js";
import { didYouMean } from "./recipe/suggest.js";
import { type RenderContext, report } from "./render/context.js";
import { envBlock } from "./render/env.js";
import { renderDockerRun } from "./render/docker.js";
import { HEALTH_ASSET, HEALTH_POLLER, type LaunchInputs, NODE_SANDBOX_ASSET, NODE_SANDBOX_HELPER, NODE_SANDBOX_SPEC, type SandboxLaunch, platformRunsRay, renderLaunchScript, sandboxStartScript } from "./render/launch.js";
import type { EnvBlock } from "./render/env.js";
import { SHIM_FILE, resolveRewardFn } from "./render/reward.js";
import { RLPIPE_TOOL_CLASS, RLPIPE_TOOL_FILES } from "./render/tools.js";
import { shellQuote } from "./render/shell.js";
import { SYNC_SIDECAR, type StoragePlan, metricsToFile, storagePlan } from "./render/storage.js";
import { type StageCommand, renderStage } from "./render/stages.js";

export interface PlanOptions {
  readonly provider?: Provider;
  /** Force a verl profile (e.g. to check a recipe against the newest verl). */
  readonly profile?: string;
  /** Working directory for provider "local" when the recipe sets none (absolute). */
  readonly localWorkDir?: string;
  /** Reads files next to the recipe (reward function signature check). */
  readonly readRecipeFile?: (relativePath: string) => string | undefined;
  /** Files rlpipe ships into bundles (the reward shim), by name; the CLI reads them from recipes/python/. */
  readonly assets?: Readonly<Record<string, string>>;
  /**
   * Which run of this recipe on this provider (default 1). Run 1 is named <recipe>-<hash8>; run k > 1 (a deliberate
   * re-run, `rlpipe deploy --new`) is <recipe>-<hash8>-r<k>: a new job with the same bundle.
   */
  readonly attempt?: number;
}

export interface BundleFile {
  /** Relative to the bundle root. */
  readonly path: string;
  readonly content: string;
  readonly executable: boolean;
}

export interface StageFacts {
  readonly promptsPerStep?: number;
  readonly n?: number;
  /** prompts × n: the samples generated and scored per step. */
  readonly responsesPerStep?: number;
  readonly miniBatchPrompts?: number;
  readonly optimizerStepsPerStep?: number;
  readonly epochs?: number;
  readonly tools?: readonly string[];
}

export interface PlannedStage extends StageCommand {
  readonly facts: StageFacts;
  /** Every variable the stage exports, in order (runtime env and presets, then the stage's), values as written. */
  readonly environment: readonly (readonly [string, string])[];
}

export interface Plan {
  readonly recipe: { readonly name: string; readonly file: string; readonly hash: string };
  readonly provider: Provider;
  readonly jobName: string;
  readonly verl: { readonly repo: string; readonly ref: string; readonly profile: string; readonly pypi: string; readonly patches: readonly string[] };
  readonly workDir: string;
  readonly resources: { readonly nodes: number; readonly devicesPerNode: number; readonly totalDevices: number; readonly accelerator: string };
  readonly sandbox?: { readonly kind: string; readonly deploy: string; readonly url?: string; readonly where: string };
  readonly stages: readonly PlannedStage[];
  readonly secrets: readonly { readonly name: string; readonly env: string; readonly required: boolean }[];
  readonly docker?: { readonly argv: readonly string[] };
  /** Checkpoint and metrics persistence, when checkpoints.storage is set. */
  readonly storage?: StoragePlan;
  /** What a deploy sends to the provider (absent for docker: docker-run.sh is run by hand). */
  readonly request?: ProviderRequest;
  /** sha256 over the bundle files: content-addressed upload locations. */
  readonly bundleDigest: string;
  readonly files: readonly BundleFile[];
  /** The sandbox's work per RL step against its capacity (core/capacity.ts); over the limit it is also a warning. */
  readonly capacity?: SandboxCapacity;
  readonly warnings: readonly LocatedIssue[];
}

const DEFAULT_WORKDIR: Partial<Record<Provider, (name: string) => string>> = {
  docker: (name) => `/workspace/${name}`,
  modelarts: (name) => `/home/ma-user/modelarts/user-job-dir/${name}`,
  tione: (name) => `/home/tione/notebook/${name}`,
};

const DEFAULT_HEALTH_BODY = JSON.stringify({ code: 'print("Hello, world!")', language: "python" });

export function plan(loaded: LoadedRecipe, opts: PlanOptions = {}): Plan {
  const { recipe } = loaded;
  const provider = opts.provider ?? "local";
  const issues: RecipeIssue[] = [];
  const fail = (): never => { throw new RecipeError(loaded.file, locateAll(issues.filter((i) => i.severity === "error"), loaded.source, loaded.file)); };

  const profile = selectProfile(recipe, opts.profile, issues);
  const workDir = selectWorkDir(recipe, provider, opts.localWorkDir, issues);
  if (profile === undefined || workDir === undefined) fail();

  issues.push(...checkRecipe(recipe, profile!, opts.readRecipeFile === undefined ? {} : { readRecipeFile: opts.readRecipeFile }));
  issues.push(...findPlaceholders(recipe, provider));
  const sandboxUrl = sandboxBaseUrl(recipe.sandbox);
  const interp = new Interpolator({ recipe, workDir: workDir!, sandboxUrl }, issues);
  const ctx: RenderContext = { recipe, profile: profile!, provider, workDir: workDir!, interp, issues, metricsToFile: metricsToFile(recipe, provider) };

  const runtimeEnv = envBlock(ctx, recipe.runtime.envPresets, recipe.runtime.env, ["runtime", "env"]);
  const commands = recipe.stages.map((s, i) => renderStage(ctx, s, i));
  const storage = storagePlan(ctx, loaded.hash, commands);
  const stages = recipe.stages.map((s, i) => {
    const rendered = commands[i]!;
    // verl's file logger writes where the sync sidecar reads.
    const metrics = storage?.stages.find((x) => x.stage === s.id)?.metrics;
    const cmd = metrics === undefined ? rendered : { ...rendered, env: { ...rendered.env, VERL_FILE_LOGGER_PATH: metrics } };
    const own = envBlock(ctx, cmd.envPresets as Recipe["runtime"]["envPresets"], cmd.env, ["stages", i, "env"]);
    const environment = [...runtimeEnv.steps, ...own.steps].flatMap((st) => ("export" in st ? [st.export] : []));
    return { ...cmd, facts: stageFacts(recipe, s), environment, envSteps: own };
  });

  // Generated files the stages need, placed relative to workDir; two stages may share one file only if identical.
  const overlay = new Map<string, string>();
  stages.forEach((st, i) => {
    for (const f of st.files) {
      const prev = overlay.get(f.path);
      if (prev !== undefined && prev !== f.content) {
        issues.push({ severity: "error", code: "file_conflict", path: ["stages", i, "agent", "toolConfig"], message: `${f.path} is written by two stages with different tools`, hint: "give each stage its own agent.toolConfig path" });
      }
      overlay.set(f.path, f.content);
    }
  });

  for (const [key, ds] of Object.entries(recipe.datasets)) {
    if (ds.ship === undefined) continue;
    const at = ["datasets", key];
    if (typeof ds.path !== "string" || ds.path.startsWith("/") || ds.path.split("/").includes("..") || ds.path.includes("${")) {
      issues.push({ severity: "error", code: "ship_needs_relative_path", path: [...at, "path"], message: "a shipped dataset needs one path relative to workDir (it is copied into the launch bundle there)" });
      continue;
    }
    const content = opts.readRecipeFile?.(ds.ship);
    if (content === undefined) {
      issues.push({ severity: "error", code: "ship_file_missing", path: [...at, "ship"], message: `${ds.ship} was not found next to the recipe`, hint: "ship names a file relative to the recipe's directory" });
      continue;
    }
    overlay.set(ds.path, content);
  }

  // rlpipe's own verl tool: its file, and the reward shim whose HTTP client it uses.
  if ([...overlay.values()].some((content) => content.includes(`class_name: ${RLPIPE_TOOL_CLASS}`) || content.includes("from rlpipe_tool import register_function_tool"))) {
    for (const f of RLPIPE_TOOL_FILES) {
      const text = opts.assets?.[f];
      if (text === undefined) throw new RlpipeError("asset_missing", `${f}, which rlpipe's verl tool needs, was not provided to the planner`);
      overlay.set(f, text);
    }
  }

  const reward = resolveRewardFn(ctx);
  if (reward?.shim === true && recipe.stages.some((s) => s.type === "rl" || s.type === "eval")) {
    const shim = opts.assets?.[SHIM_FILE];
    if (shim === undefined) throw new RlpipeError("asset_missing", `the reward shim ${SHIM_FILE} was not provided to the planner`);
    overlay.set(SHIM_FILE, shim);
  }

  if (storage !== undefined && storage.mechanism !== "sidecar-direct" && storage.stages.length > 0) {
    const sidecar = opts.assets?.[SYNC_SIDECAR];
    if (sidecar === undefined) throw new RlpipeError("asset_missing", `the sync sidecar ${SYNC_SIDECAR} was not provided to the planner`);
    overlay.set(`.rlpipe/${SYNC_SIDECAR}`, sidecar);
  }

  const secrets = [
    ...Object.entries(recipe.secrets ?? {}).map(([name, s]) => ({ name, env: s.env, required: s.required })),
    // The sidecar's only credential: the per-run token for the runs function.
    ...(storage?.mechanism === "sidecar-function" && !Object.values(recipe.secrets ?? {}).some((s) => s.env === "RLPIPE_RUN_TOKEN") ? [{ name: "run-token", env: "RLPIPE_RUN_TOKEN", required: true }] : []),
    // The store's credentials, for a sidecar that uploads straight to it (TI-ONE passes them as task variables).
    ...(storage?.mechanism === "sidecar-store" && storage.stages.length > 0 ? (storage.credentialEnvs ?? [])
      .filter((c) => !Object.values(recipe.secrets ?? {}).some((s) => s.env === c.env))
      .map((c) => ({ name: `store-${c.env.toLowerCase().replace(/_/g, "-")}`, env: c.env, required: c.required })) : []),
  ].sort((a, b) => a.name.localeCompare(b.name));
  let sandbox = recipe.sandbox === undefined ? undefined : withUsageStore(sandboxLaunch(ctx, recipe.sandbox, sandboxUrl), storage);
  if (sandbox?.start !== undefined && platformRunsRay(provider, recipe) && recipe.stages.some((st) => st.type === "rl" || st.type === "eval")) {
    sandbox = { ...sandbox, perRayNode: true };
    const helper = opts.assets?.[NODE_SANDBOX_ASSET];
    if (helper === undefined) throw new RlpipeError("asset_missing", `${NODE_SANDBOX_ASSET}, which starts the sandbox on every Ray node, was not provided to the planner`);
    overlay.set(NODE_SANDBOX_HELPER, helper);
    overlay.set(NODE_SANDBOX_SPEC, nodeSandboxSpec(ctx, sandbox, runtimeEnv, secrets.map((x) => x.env)));
    checkReachableFromEveryNode(ctx, sandboxUrl);
  }
  // rlpipe serve's health per verl step goes beside the stage's metrics (only rlpipe serve has /metrics).
  const verlStages = new Set(recipe.stages.filter((st) => st.type === "rl" || st.type === "eval").map((st) => st.id));
  const sandboxHealth = sandbox?.start !== undefined && sandbox.rlpipeFunction !== undefined
    ? (storage?.stages ?? []).flatMap((s) => (s.metrics !== undefined && verlStages.has(s.stage) ? [{ stage: s.stage, metrics: s.metrics }] : []))
    : [];
  if (sandboxHealth.length > 0) {
    const poller = opts.assets?.[HEALTH_ASSET];
    if (poller === undefined) throw new RlpipeError("asset_missing", `${HEALTH_ASSET}, which writes the sandbox's health beside the metrics, was not provided to the planner`);
    overlay.set(HEALTH_POLLER, poller);
  }
  const launchInputs: LaunchInputs = {
    recipeHash: loaded.hash,
    stages,
    runtimeEnv,
    ...(sandbox === undefined ? {} : { sandbox }),
    overlay: [...overlay.keys()].sort(),
    secrets,
    patches: patchSteps(ctx),
    datasetBuilds: datasetBuilds(ctx),
    ...(storage === undefined ? {} : { storage }),
    ...(sandboxHealth.length === 0 ? {} : { sandboxHealth }),
  };
  const launch = renderLaunchScript(ctx, launchInputs);
  const docker = provider === "docker" ? renderDockerRun(ctx, secrets.map((s) => s.env)) : undefined;
  if (provider === "docker" && docker === undefined) {
    issues.push({ severity: "error", code: "missing_target", path: ["targets", "docker"], message: "provider docker needs targets.docker (image, shm size, devices)" });
  }
  if (provider === "tione" && recipe.runtime.accelerator === "ascend-npu") {
    issues.push({ severity: "error", code: "accelerator_mismatch", path: ["runtime", "accelerator"], message: "provider tione offers NVIDIA GPUs, but the recipe needs ascend-npu", hint: "use --provider modelarts (Ascend) or docker" });
  }
  if (recipe.resources.nodes > 1 && (provider === "local" || provider === "docker")) {
    issues.push({ severity: "warning", code: "multinode_local", path: ["resources", "nodes"], message: `${recipe.resources.nodes} nodes on provider ${provider}: launch.sh must be started on every node with RLPIPE_NODE_RANK and RLPIPE_MASTER_ADDR set` });
  }
  const files: BundleFile[] = [
    { path: "launch.sh", content: launch, executable: true },
    ...[...overlay.entries()].map(([path, content]) => ({ path, content, executable: false })),
    ...(docker === undefined ? [] : [{ path: "docker-run.sh", content: docker.script, executable: true }]),
  ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const bundleDigest = bundleDigestOf(files);

  const builder = REQUEST_BUILDERS[provider];
  const named = builder === undefined ? undefined : buildNamedRequest(builder, {
    recipe, provider, bundleDigest, workDir: workDir!,
    resources: { nodes: recipe.resources.nodes, devicesPerNode: recipe.resources.devicesPerNode, accelerator: recipe.runtime.accelerator },
    secretEnvs: secrets.map((s) => s.env),
    ...(storage === undefined ? {} : { storage }),
  }, issues, opts.attempt);
  if (issues.some((i) => i.severity === "error")) fail();
  const capacity = sandboxCapacity(recipe, provider);
  issues.push(...capacityIssues(capacity));
  const jobName = named?.jobName ?? `${recipe.metadata.name.replace(/[^a-z0-9-]/g, "-").slice(0, 40)}-${sha256(canonicalJson({ provider, bundleDigest })).slice(0, 8)}`;
  return {
    recipe: { name: recipe.metadata.name, file: loaded.file, hash: loaded.hash },
    provider,
    jobName,
    verl: {
      repo: recipe.runtime.verl.repo, ref: recipe.runtime.verl.ref, profile: profile!.name, pypi: profile!.pypi,
      patches: (recipe.runtime.verl.patches ?? []).map((p) => p.file),
    },
    workDir: workDir!,
    resources: {
      nodes: recipe.resources.nodes, devicesPerNode: recipe.resources.devicesPerNode,
      totalDevices: recipe.resources.nodes * recipe.resources.devicesPerNode, accelerator: recipe.runtime.accelerator,
    },
    ...(recipe.sandbox === undefined ? {} : { sandbox: { kind: recipe.sandbox.kind, deploy: recipe.sandbox.deploy, ...(sandboxUrl === undefined ? {} : { url: sandboxUrl }), where: sandboxWhere(recipe.sandbox, provider, recipe) } }),
    stages: stages.map(({ envSteps: _, ...rest }) => rest),
    secrets,
    ...(storage === undefined ? {} : { storage }),
    ...(docker === undefined ? {} : { docker: { argv: docker.argv } }),
    ...(named === undefined ? {} : { request: named.request }),
    bundleDigest,
    files,
    ...(capacity === undefined ? {} : { capacity }),
    warnings: locateAll(issues.filter((i) => i.severity === "warning"), loaded.source, loaded.file),
  };
}

/** sha256 over a bundle's paths, modes and contents: what content-addressed upload locations are named by. */
export function bundleDigestOf(files: readonly BundleFile[]): string {
  return sha256(canonicalJson(files.map((f) => [f.path, f.executable, sha256(f.content)])));
}

function selectProfile(recipe: Recipe, forced: string | undefined, issues: RecipeIssue[]): VerlProfile | undefined {
  const names = PROFILES.map((p) => p.name);
  const name = forced ?? recipe.runtime.verl.profile;
  if (name !== undefined) {
    const p = profileByName(name);
    if (p === undefined) {
      issues.push({ severity: "error", code: "unknown_profile", path: ["runtime", "verl", "profile"], message: `unknown verl profile ${JSON.stringify(name)}`, hint: didYouMean(name, names) ?? `known profiles: ${names.join(", ")}` });
    }
    return p;
  }
  const p = profileForRef(recipe.runtime.verl.ref);
  if (p === undefined) {
    issues.push({ severity: "error", code: "unknown_verl_ref", path: ["runtime", "verl", "ref"], message: `rlpipe has no version profile for verl ref ${JSON.stringify(recipe.runtime.verl.ref)}`, hint: `set runtime.verl.profile to the closest known one: ${names.join(", ")}` });
  }
  return p;
}

function selectWorkDir(recipe: Recipe, provider: Provider, localWorkDir: string | undefined, issues: RecipeIssue[]): string | undefined {
  const name = recipe.metadata.name;
  const fromTarget = recipe.targets?.[provider]?.workDir;
  const raw = fromTarget ?? recipe.runtime.workDir ?? (provider === "local" ? localWorkDir : DEFAULT_WORKDIR[provider]?.(name));
  const path = fromTarget !== undefined ? ["targets", provider, "workDir"] : ["runtime", "workDir"];
  if (raw === undefined) {
    issues.push({ severity: "error", code: "missing_workdir", path: ["targets", provider, "workDir"], message: `provider ${provider} has no default working directory`, hint: `set targets.${provider}.workDir (or runtime.workDir) to the absolute directory the job runs in` });
    return undefined;
  }
  const dir = raw.replace(/\$\{\s*name\s*\}/g, name).replace(/\/+$/, "");
  if (!dir.startsWith("/")) {
    issues.push({ severity: "error", code: "relative_workdir", path, message: `the working directory must be an absolute path, got ${JSON.stringify(raw)}` });
    return undefined;
  }
  return dir === "" ? "/" : dir;
}

/**
 * The sandbox's base URL as every rendered file names it. A co-located sandbox is reached at one literal loopback
 * address, the one launch.sh's port and health checks use: `localhost` may resolve to ::1 (Debian's and Docker's
 * hosts files), where a foreign server would take the calls while the checks looked at 127.0.0.1.
 */
function sandboxBaseUrl(sb: SandboxSpec | undefined): string | undefined {
  if (sb === undefined) return undefined;
  if (sb.url !== undefined) {
    const url = sb.url.replace(/\/+$/, "");
    if (sb.deploy !== "colocated") return url;
    // rlpipe's own function listens on 127.0.0.1 only; a server the recipe starts may be asked for [::1].
    const names = sb.server === undefined ? "localhost|\\[::1\\]" : "localhost";
    return url.replace(new RegExp(`^(https?://)(?:${names})(?=[:/]|$)`, "i"), (_all, scheme: string) => `${scheme}127.0.0.1`);
  }
  if (sb.deploy === "colocated") return `http://127.0.0.1:${sb.server?.port ?? 8080}`;
  return undefined;
}

/** The loopback host a co-located sandbox's checks use: the one its URL names ([::1] or 127.0.0.1). */
function loopbackOf(url: string | undefined): string {
  return url !== undefined && new URL(url).hostname === "[::1]" ? "[::1]" : "127.0.0.1";
}

/**
 * What each node's sandbox actor runs (rlpipe_node_sandbox.py reads it): the start script, its log, the health check
 * (with a nonce for rlpipe serve), and which of the driver's variables to forward — never a secret's: those come from
 * each node's own environment, since actor arguments are stored in the Ray cluster.
 */
function nodeSandboxSpec(ctx: RenderContext, sb: SandboxLaunch, runtimeEnv: EnvBlock, secretEnvs: readonly string[]): string {
  const start = sb.start!;
  const h = sb.health!;
  const exported = runtimeEnv.steps.flatMap((st) => ("export" in st ? [st.export[0]] : []));
  const forward = [...new Set(["PATH", "PYTHONPATH", "RLPIPE_CLI", "RLPIPE_RUN", "RLPIPE_STATE_DIR", "RLPIPE_WORKDIR", "RLPIPE_NNODES", ...exported])]
    .filter((k) => !secretEnvs.includes(k)).sort();
  const portField = ctx.recipe.sandbox?.server === undefined ? "the port of sandbox.url" : "sandbox.server.port and the URLs that name it";
  return `${JSON.stringify({
    script: sandboxStartScript(start),
    log: start.log,
    port: Number(new URL(h.url).port),
    portField,
    health: { path: new URL(h.url).pathname, ...(h.body === undefined ? {} : { body: h.body }), expect: h.expect, timeoutS: h.timeoutS, intervalS: h.intervalS },
    nonce: sb.rlpipeFunction !== undefined,
    ...(sb.rlpipeFunction?.tokenEnv === undefined ? {} : { tokenEnv: sb.rlpipeFunction.tokenEnv }),
    restarts: 5,
    namespace: "rlpipe",
    forwardEnv: forward,
    secretEnvs: [...secretEnvs].sort(),
  }, null, 2)}\n`;
}

/** A co-located sandbox is reached at each node's loopback; a URL naming one host would send every node to it. */
function checkReachableFromEveryNode(ctx: RenderContext, url: string | undefined): void {
  if (url === undefined) return;
  const host = new URL(url).hostname;
  if (host === "localhost" || host === "127.0.0.1" || host === "[::1]") return;
  report(ctx, "error", ["sandbox", "url"], "sandbox_not_on_every_node",
    `sandbox.url names the host ${host}, but on provider ${ctx.provider} rlpipe starts the co-located sandbox on every Ray node, where verl's workers call it; every node would send its tool and reward calls to ${host} instead of its own sandbox`,
    `write http://127.0.0.1:${new URL(url).port || 80} (each node's own sandbox), or use deploy: external for one shared sandbox service`);
}

function sandboxWhere(sb: SandboxSpec, provider: Provider, recipe?: Recipe): string {
  if (sb.deploy === "colocated" && recipe !== undefined && platformRunsRay(provider, recipe) && recipe.stages.some((st) => st.type === "rl" || st.type === "eval")) {
    return `started on every Ray node of the ${provider} job by one actor per node (each node's workers call their own)`;
  }
  if (sb.deploy === "colocated") return `started by launch.sh inside the ${provider} job, next to training`;
  if (sb.deploy === "external") return "an external service (launch.sh waits for its health check)";
  return `managed by ${sb.managed?.provider ?? "the sandbox provider"} (template ${sb.managed?.template ?? "?"})`;
}

/**
 * rlpipe's own function in the job writes each run's usage (what `rlpipe cost --run` reads) into the run's store,
 * where the node can write: the store itself (self-hosted, TI-ONE's COS credentials), or ModelArts' staging
 * directory, which the output channel uploads. Through the runs function the job holds no store access: not written.
 */
function withUsageStore(launch: SandboxLaunch, storage: StoragePlan | undefined): SandboxLaunch {
  if (launch.start === undefined || launch.rlpipeFunction === undefined || !launch.start.command.startsWith("rlpipe serve ") || storage === undefined) return launch;
  const uri = storage.mechanism === "modelarts-output" ? (storage.stagingDir === undefined ? undefined : `file://${storage.stagingDir}`)
    : storage.mechanism === "sidecar-function" ? undefined : storage.uri;
  return uri === undefined ? launch : { ...launch, start: { ...launch.start, command: `${launch.start.command} --usage-store ${shellQuote(uri)}` } };
}

function tokenEnvOf(ctx: RenderContext, sb: SandboxSpec): string | undefined {
  return sb.auth === undefined ? undefined : ctx.recipe.secrets?.[sb.auth.secret]?.env;
}

function sandboxLaunch(ctx: RenderContext, sb: SandboxSpec, url: string | undefined): SandboxLaunch {
  // rlpipe's function has a public GET /v1/ping; ScaleBox/SandboxFusion are checked with the seed's /run_code call.
  const health = sb.health ?? (sb.kind === "rlpipe"
    ? { path: "/v1/ping", expect: "pong", timeoutS: 300, intervalS: 2 }
    : { path: "/run_code", expect: "\"status\":\"Success\"", timeoutS: 300, intervalS: 2 });
  const body = health.body === undefined ? (health.path === "/v1/ping" ? undefined : DEFAULT_HEALTH_BODY) : typeof health.body === "string" ? health.body : JSON.stringify(health.body);
  if (sb.deploy === "managed") return {};
  if (sb.deploy === "external") {
    return url === undefined ? {} : { health: { url: `${url}${health.path}`, ...(body === undefined ? {} : { body }), expect: health.expect, timeoutS: health.timeoutS, intervalS: health.intervalS } };
  }
  const server = sb.server;
  const urlPort = url === undefined ? undefined : Number(new URL(url).port || NaN);
  const port = server?.port ?? (urlPort !== undefined && Number.isInteger(urlPort) ? urlPort : 8080);
  const env: [string, string][] = [];
  let command: string;
  let dir: string;
  if (server === undefined) {
    // kind rlpipe without a server block: rlpipe's own function, bound to loopback inside the job.
    dir = ".";
    const tokenEnv = tokenEnvOf(ctx, sb);
    // Strict: no reward of a shipped run comes from the exit status of a process that ran the policy's code.
    command = `rlpipe serve --sandbox local --host 127.0.0.1 --port ${port}${tokenEnv === undefined ? "" : ` --token-env ${tokenEnv}`} --strict-verdicts`;
  } else {
    dir = ctx.interp.resolve(server.dir, ["sandbox", "server", "dir"]);
    command = server.start;
    // ScaleBox/SandboxFusion Makefiles read these (run-online: uvicorn --host $HOST --port $PORT --workers $WORKERS)
    env.push(["HOST", server.host], ["PORT", String(port)]);
    if (server.workers !== undefined) env.push(["WORKERS", String(server.workers)]);
    if (server.maxMemKB !== undefined) env.push(["MAX_MEM", String(server.maxMemKB)]);
    for (const [k, v] of Object.entries(server.env ?? {})) env.push([k, v]);
  }
  const log = server?.log ?? `${dir === "." ? "" : `${dir}/`}deploy_${server?.host ?? "127.0.0.1"}:${port}.log`;
  if (server === undefined) {
    // Only score stages talk to it: nothing has the port baked in, so a deploy may move it (RLPIPE_SANDBOX_PORT).
    const portOverridable = ctx.recipe.stages.every((st) => st.type === "score");
    command = `rlpipe serve --sandbox local --host 127.0.0.1 --port ${portOverridable ? '"$RLPIPE_SANDBOX_PORT"' : port}${command.slice(command.indexOf(" --port ") + ` --port ${port}`.length)}`;
    const host = "127.0.0.1"; // rlpipe serve listens there (sandboxBaseUrl writes its URLs so)
    return {
      start: { dir, env, command, log: portOverridable ? `deploy_127.0.0.1.log` : log },
      health: { url: `http://${host}:${port}${health.path}`, ...(body === undefined ? {} : { body }), expect: health.expect, timeoutS: health.timeoutS, intervalS: health.intervalS },
      rlpipeFunction: { port, portOverridable, ...(tokenEnvOf(ctx, sb) === undefined ? {} : { tokenEnv: tokenEnvOf(ctx, sb)! }) },
    };
  }
  return {
    start: {
      dir,
      ...(server?.condaEnv === undefined ? {} : { condaEnv: server.condaEnv, ...(ctx.recipe.runtime.conda?.activate === undefined ? {} : { condaActivate: ctx.recipe.runtime.conda.activate }) }),
      env,
      command,
      log,
    },
    health: { url: `http://${loopbackOf(url)}:${port}${health.path}`, ...(body === undefined ? {} : { body }), expect: health.expect, timeoutS: health.timeoutS, intervalS: health.intervalS },
  };
}

function patchSteps(ctx: RenderContext): LaunchInputs["patches"] {
  const verl = ctx.recipe.runtime.verl;
  const out: { dir: string; file: string; apply: "git-apply" | "git-am" }[] = [];
  (verl.patches ?? []).forEach((p, i) => {
    const dir = p.repo === "verl" ? verl.path : ctx.recipe.runtime.extraRepos?.find((r) => r.name === p.repo)?.path;
    if (dir === undefined) {
      ctx.issues.push({
        severity: "warning", code: "patch_not_applied", path: ["runtime", "verl", "patches", i],
        message: `launch.sh does not apply ${p.file}: no ${p.repo === "verl" ? "runtime.verl.path" : `runtime.extraRepos entry named ${p.repo}`} says where the checkout is`,
        hint: "the image must already contain the patched code; set the checkout path to let launch.sh apply it (idempotently)",
      });
      return;
    }
    out.push({ dir: ctx.interp.resolve(dir, ["runtime", "verl", "path"]), file: ctx.interp.resolve(p.file, ["runtime", "verl", "patches", i, "file"]), apply: p.apply });
  });
  return out;
}

function datasetBuilds(ctx: RenderContext): LaunchInputs["datasetBuilds"] {
  const byCommand = new Map<string, Set<string>>();
  for (const [key, ds] of Object.entries(ctx.recipe.datasets)) {
    if (ds.build === undefined) continue;
    const creates = byCommand.get(ds.build.command) ?? new Set<string>();
    ds.build.creates.forEach((c, i) => creates.add(ctx.interp.resolve(c, ["datasets", key, "build", "creates", i])));
    byCommand.set(ds.build.command, creates);
  }
  return [...byCommand.entries()].map(([command, creates]) => ({ command, creates: [...creates].sort() }));
}

function stageFacts(recipe: Recipe, s: Recipe["stages"][number]): StageFacts {
  if (s.type === "rl") {
    const n = s.rollout.n ?? 1;
    const mini = s.algorithm?.miniBatchPrompts;
    return {
      promptsPerStep: s.data.promptsPerStep, n, responsesPerStep: s.data.promptsPerStep * n,
      ...(mini === undefined ? {} : { miniBatchPrompts: mini, optimizerStepsPerStep: Math.floor(s.data.promptsPerStep / mini) }),
      ...(s.schedule?.epochs === undefined ? {} : { epochs: s.schedule.epochs }),
      ...(s.agent?.tools !== undefined ? { tools: s.agent.tools } : s.agent?.multiTurn === true ? { tools: (recipe.tools ?? []).map((t) => t.name) } : {}),
    };
  }
  if (s.type === "sft") return { epochs: s.schedule.epochs };
  if (s.type === "eval") return { n: s.rollout.val?.n ?? 1 };
  if (s.type === "score") return {};
  return {};
}
