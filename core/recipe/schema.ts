// The recipe: the single source of rlpipe's recipe types. Everything else infers from these schemas.
// Neutral parts say what to train; `targets.<provider>` says where and how. Optional fields render only when
// set, so a recipe reproduces a published script key for key and verl's defaults apply to everything else.
import { z } from "zod";
import {
  type JsonValue, bool, envName, httpUrl, port, fraction, hydraValue, ident, jsonValue, nonNegInt, nonNegNumber, oneOf, posInt, posNumber, slug, text,
} from "./fields.js";

export const ACCELERATORS = ["ascend-npu", "nvidia-gpu", "cpu"] as const;
export const SANDBOX_KINDS = ["scalebox", "sandbox-fusion", "e2b", "rlpipe"] as const;
export const SANDBOX_DEPLOYS = ["colocated", "external", "managed"] as const;
export const REWARD_MANAGERS = ["naive", "dapo", "prime", "batch", "rate_limited"] as const;
export const TOOL_PRESETS = ["scalebox", "sandbox-fusion", "retool-sandbox-fusion", "e2b", "rlpipe"] as const;
export const DATASET_FORMATS = ["verl-rl", "multiturn-sft", "hf-dir", "parquet", "jsonl"] as const;
export const PROVIDERS = ["local", "docker", "ray", "slurm", "modelarts", "tione"] as const;
export const ENV_PRESETS = ["ascend-toolkit", "ascend-hccl", "cuda-compat"] as const;
export const LOGGERS = ["console", "wandb", "tensorboard", "mlflow", "swanlab", "file", "vemlp_wandb", "clearml", "trackio"] as const;

export type Provider = (typeof PROVIDERS)[number];

const envMap = () =>
  z.record(envName(), z.string({ error: "expected a string value (quote numbers, e.g. \"1\")" }))
    .describe("Environment variables. Values may reference other variables as $NAME or ${NAME}; command substitution is not allowed.");

const envPresets = () => z.array(oneOf(ENV_PRESETS)).describe(`Named environment sets: ${ENV_PRESETS.join(", ")}.`);

const overrides = () =>
  z.record(z.string().regex(/^(\+\+|\+|~)?[A-Za-z_][A-Za-z0-9_.\-]*$/, { error: "expected a Hydra key such as actor_rollout_ref.rollout.n or +a.b" }), hydraValue())
    .describe("Raw Hydra overrides appended after everything rlpipe renders (escape hatch). Use '+' for keys absent from verl's config.");

// ---------------------------------------------------------------- metadata, runtime, resources

const Provenance = z.strictObject({
  repo: text().describe("owner/name of the public repository the recipe reproduces"),
  ref: text().optional(),
  path: text().optional(),
  note: text().optional(),
});

const Metadata = z.strictObject({
  name: slug().describe("Recipe name; used for bundle directories and job names."),
  description: text().optional(),
  provenance: z.array(Provenance).optional(),
});

const Patch = z.strictObject({
  file: text().describe("Patch file, relative to the recipe's working directory in the job."),
  apply: oneOf(["git-apply", "git-am"] as const).default("git-apply"),
  repo: oneOf(["verl", "vllm", "vllm-ascend"] as const).default("verl").describe("Which checkout the patch applies to."),
});

const ExtraRepo = z.strictObject({
  name: ident(),
  repo: text(),
  ref: text(),
  path: text().describe("Where the checkout lives in the job (relative to workDir or absolute)."),
});

const Verl = z.strictObject({
  repo: text().default("https://github.com/volcengine/verl"),
  ref: text().describe("Commit or tag of verl the recipe was written for; selects the version profile."),
  profile: text().optional().describe("Version profile name when `ref` is not a known commit (e.g. a fork): c651b7b, v0.6.1, …"),
  path: text().optional().describe("Checkout location in the job; patches are applied there. Omit when verl is installed in the image."),
  patches: z.array(Patch).optional(),
  provides: z.array(text()).optional().describe("Tool classes (class_name) the recipe's verl checkout adds beyond its release: a fork's, a patch's or the image's own, e.g. verl.tools.scalebox_tool.ScaleBoxTool."),
});

const Inference = z.strictObject({
  engine: oneOf(["vllm", "sglang"] as const),
  version: text().optional(),
  vllmAscend: text().optional(),
  cann: text().optional(),
  torch: text().optional(),
  torchNpu: text().optional(),
});

const Conda = z.strictObject({
  activate: text().optional().describe("Path of conda's activate script, e.g. /home/ma-user/miniconda3/bin/activate"),
  env: text().describe("Environment the training stages run in."),
  create: z.strictObject({ python: text() }).optional().describe("Create the environment in setup-env.sh when it does not exist."),
});

const Runtime = z.strictObject({
  accelerator: oneOf(ACCELERATORS),
  workDir: text().optional().describe("Directory the stages run in, in the job. Providers have defaults (ModelArts /home/ma-user/modelarts/user-job-dir/<name>, TI-ONE /home/tione/notebook/<name>)."),
  verl: Verl,
  extraRepos: z.array(ExtraRepo).optional(),
  inference: Inference.optional(),
  conda: Conda.optional(),
  pip: z.array(text()).optional().describe("Packages installed (pip install) before the stages run."),
  pipUninstall: z.array(text()).optional(),
  env: envMap().optional(),
  envPresets: envPresets().optional(),
});

const Resources = z.strictObject({
  nodes: posInt().describe("Number of nodes."),
  devicesPerNode: posInt().describe("Accelerator devices per node (NPU dies or GPUs); trainer.n_gpus_per_node."),
  deviceType: text().optional().describe("Informational: Ascend910B3, A3, H200, …"),
  cpusPerNode: posInt().optional().describe("CPU cores per node, for the sandbox capacity `plan` checks (a co-located sandbox runs on them). Default: the TI-ONE worker's spec or targets.slurm.cpusPerTask, else 32 (assumed)."),
});

// ---------------------------------------------------------------- models, datasets

const Model = z.strictObject({
  path: text().describe("Where the weights are in the job (relative to workDir or absolute)."),
  hf: text().optional().describe("Hugging Face repo id the weights come from."),
  params: posNumber().optional().describe("Parameter count (e.g. 1.7e9), for the cost estimate; default: read from the name (…-1.7B, …-32B-…)."),
});

const DatasetBuild = z.strictObject({
  command: text().describe("Shell command that produces the dataset (run in workDir when a `creates` path is missing)."),
  from: text().optional().describe("Source, e.g. hf:PrimeIntellect/verifiable-coding-problems"),
  creates: z.array(text()).min(1, { error: "expected at least one path" }).describe("Paths the command writes; the step is skipped when all exist."),
});

const Dataset = z.strictObject({
  path: z.union([text(), z.array(text()).min(1)], { error: "expected a path or a non-empty list of paths" })
    .describe("A path renders as a plain value; a list renders in Hydra list syntax ['a','b'], as the published scripts do."),
  format: oneOf(DATASET_FORMATS),
  rows: posInt().optional().describe("Row count, when known; lets rlpipe check SFT step arithmetic (merge step)."),
  build: DatasetBuild.optional(),
  ship: text().optional().describe("A file next to the recipe that rlpipe copies into the launch bundle at `path` (relative to workDir): small datasets such as a demo or preflight problem set."),
});

// ---------------------------------------------------------------- sandbox, tools, reward, secrets

const SecretRef = z.strictObject({ secret: ident().describe("Name of an entry under `secrets`.") });

const Health = z.strictObject({
  path: text().default("/run_code"),
  body: jsonValue().optional(),
  expect: text().default("\"status\":\"Success\"").describe("Substring the response body must contain."),
  timeoutS: posInt().default(300).describe("Give up (and fail the job) after this many seconds."),
  intervalS: posInt().default(2),
});

const SandboxServer = z.strictObject({
  dir: text().describe("Server checkout in the job, e.g. ScaleBox or /root/sandbox"),
  condaEnv: text().optional(),
  host: text().default("0.0.0.0"),
  port: port().default(8080),
  workers: posInt().optional(),
  maxMemKB: z.union([posInt(), z.literal("unlimited")]).optional().describe("ScaleBox MAX_MEM (KB, applied with ulimit -Sv)."),
  start: text().default("make run-online"),
  env: envMap().optional(),
  log: text().optional().describe("Log file; default deploy_<host>:<port>.log in the server dir."),
});

const ManagedSandbox = z.strictObject({
  provider: oneOf(["e2b", "tencent-ags"] as const),
  domain: text().optional().describe("E2B domain (E2B_DOMAIN), e.g. ap-shanghai.tencentags.com for AGS"),
  template: text().describe("Sandbox template / AGS tool name, e.g. code-interpreter-v1"),
  apiKey: SecretRef,
  sandboxTimeoutS: posInt().optional(),
  account: z.strictObject({
    tier: oneOf(["hobby", "pro"] as const).optional().describe("The E2B plan: hobby 20 sandboxes and 1 create/s, pro 100 and 5 creates/s (e2b.dev/docs/sandbox/rate-limits)."),
    maxSandboxes: posInt().optional().describe("Concurrent sandboxes the account allows (a Pro add-on, an AGS quota); default the tier's."),
    createsPerS: posNumber().optional().describe("Sandbox creates per second the account allows; default the tier's."),
  }).optional().describe("The account's limits, for the sandbox capacity `plan` checks. Default: E2B Hobby's (AGS publishes no quota)."),
});

const Sandbox = z.strictObject({
  kind: oneOf(SANDBOX_KINDS),
  deploy: oneOf(SANDBOX_DEPLOYS),
  url: httpUrl().optional().describe("Base URL; ${sandbox.url} in tools and reward kwargs. Default for colocated: http://127.0.0.1:<port> (localhost is written as 127.0.0.1: it may resolve to ::1)."),
  server: SandboxServer.optional(),
  health: Health.optional(),
  managed: ManagedSandbox.optional(),
  auth: SecretRef.optional().describe("kind rlpipe: the token the function requires (a secret); tools send it as a /t/<token>/ path prefix, the reward shim as a bearer header."),
});

const ToolParam = z.strictObject({
  type: oneOf(["string", "integer", "number", "boolean", "array", "object"] as const),
  description: text().optional(),
  enum: z.array(z.string()).optional(),
});

const ToolSchema = z.strictObject({
  description: text(),
  parameters: z.strictObject({
    properties: z.record(z.string(), ToolParam),
    required: z.array(z.string()).default([]),
  }),
});

const Tool = z.strictObject({
  name: ident().describe("Function name the model calls (tool_schema.function.name)."),
  preset: oneOf(TOOL_PRESETS).optional().describe("Fills class, config and schema for a sandbox kind; fields below override it."),
  impl: text().optional().describe("Python class (class_name), importable in the job, e.g. verl.tools.scalebox_tool.ScaleBoxTool"),
  type: oneOf(["native", "mcp", "function"] as const).default("native")
    .describe("native: a BaseTool class in the tool config (tool_config_path). function: verl >= 0.8.0's function-tool registry (multi_turn.function_tool_path), for rlpipe's own tool."),
  config: z.record(z.string(), jsonValue()).optional(),
  schema: ToolSchema.optional(),
});

const RewardFn = z.strictObject({
  path: text().optional().describe("Python file with the reward function (custom_reward_function.path), relative to workDir. Default with sandbox.kind rlpipe: the bundled shim rlpipe_reward.py."),
  name: ident().default("compute_score"),
  kwargs: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "expected a Python identifier" }), jsonValue()).optional()
    .describe("Rendered as +custom_reward_function.reward_kwargs.<k> (the + is required: the key is not in verl's schema)."),
  acceptsKwargs: bool().optional().describe("Whether the function accepts **kwargs (required with the agent loop). Checked from the file when it is available."),
});

const Reward = z.strictObject({
  fn: RewardFn.optional(),
  manager: oneOf(REWARD_MANAGERS).optional().describe("reward_model.reward_manager; verl's default (naive) applies when unset."),
});

const Secret = z.strictObject({
  env: envName().describe("Environment variable that holds the secret at run time."),
  description: text().optional(),
  required: bool().default(true),
});

// ---------------------------------------------------------------- stages

const Logging = z.strictObject({
  backends: z.array(oneOf(LOGGERS)).optional(),
  project: text().optional(),
  experiment: text().optional(),
});

const StageCommon = {
  id: ident(),
  env: envMap().optional(),
  envPresets: envPresets().optional(),
  logFile: text().optional().describe("Also tee the stage's output to this file (relative to workDir)."),
};

const SftStage = z.strictObject({
  ...StageCommon,
  type: z.literal("sft"),
  model: text().describe("A key of `models`, or ${stages.<id>.output}."),
  data: z.strictObject({
    train: ident().describe("A key of `datasets`."),
    val: ident().optional(),
    maxLength: posInt(),
    multiturn: z.strictObject({ messagesKey: text().default("messages"), toolsKey: text().optional() }).optional(),
  }),
  batch: z.strictObject({ global: posInt(), microPerDevice: posInt(), maxTokensPerDevice: posInt().optional() }),
  parallel: z.strictObject({
    strategy: oneOf(["fsdp", "fsdp2"] as const).optional(),
    ulyssesSP: posInt().optional(),
    removePadding: bool().optional(),
  }).optional(),
  schedule: z.strictObject({ epochs: posInt(), saveEvery: posInt().optional(),
    totalTrainingSteps: posInt().optional().describe("trainer.total_training_steps: verl stops after this many steps (or at the end of the epochs, whichever comes first).") }),
  logging: Logging.optional(),
  outputDir: text().describe("trainer.default_local_dir; checkpoints land in <outputDir>/global_step_N."),
  launcher: z.strictObject({ standalone: bool().optional() }).optional(),
  overrides: overrides().optional(),
});

const MergeStage = z.strictObject({
  ...StageCommon,
  type: z.literal("merge"),
  from: z.strictObject({
    stage: ident(),
    step: posInt().describe("The SFT checkpoint to merge (global_step_N)."),
  }),
  backend: oneOf(["fsdp", "megatron"] as const).default("fsdp"),
  targetDir: text().optional().describe("Default: <sft outputDir>/global_step_N/huggingface"),
});

const RlData = z.strictObject({
  train: ident(),
  val: ident().optional(),
  promptsPerStep: posInt().describe("data.train_batch_size: prompts per step (responses = prompts × rollout.n)."),
  maxPromptLength: posInt(),
  maxResponseLength: posInt(),
  filterOverlong: bool().optional(),
  truncation: oneOf(["error", "left", "right", "middle"] as const).optional(),
  returnRawChat: bool().optional(),
  customClass: z.strictObject({ path: text(), name: ident() }).optional(),
});

const Algorithm = z.strictObject({
  advEstimator: oneOf(["grpo", "gae", "rloo", "reinforce_plus_plus", "remax", "opo", "grpo_passk", "gpg"] as const).optional(),
  klInReward: bool().optional(),
  klCoef: nonNegNumber().optional(),
  klLoss: z.strictObject({
    enabled: bool(),
    coef: nonNegNumber().optional(),
    type: oneOf(["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "full"] as const).optional(),
  }).optional(),
  clip: z.strictObject({
    ratio: posNumber().optional(),
    low: posNumber().optional(),
    high: posNumber().optional(),
    dual: posNumber().optional().describe("Dual-clip constant c (clip_ratio_c)."),
  }).optional(),
  lr: posNumber().optional(),
  miniBatchPrompts: posInt().optional().describe("actor.ppo_mini_batch_size, in prompts (verl multiplies by rollout.n)."),
});

const Rollout = z.strictObject({
  engine: oneOf(["vllm", "sglang", "hf"] as const),
  mode: oneOf(["async", "sync"] as const).optional(),
  n: posInt().optional().describe("Responses sampled per prompt (GRPO group size)."),
  temperature: nonNegNumber().optional(),
  tensorParallel: posInt().optional(),
  gpuMemoryUtilization: fraction().optional(),
  maxModelLen: posInt().optional(),
  maxNumBatchedTokens: posInt().optional(),
  val: z.strictObject({
    n: posInt().optional(),
    temperature: nonNegNumber().optional(),
    topP: fraction().optional(),
    topK: z.number().int().optional(),
  }).optional(),
  trace: z.strictObject({ backend: oneOf(["mlflow", "weave"] as const), token2text: bool().optional() }).optional(),
});

const Agent = z.strictObject({
  loop: text().optional().describe("rollout.agent.default_agent_loop, e.g. tool_agent. Leave unset when the dataset has an agent_name column."),
  workers: posInt().optional(),
  multiTurn: bool().optional(),
  maxUserTurns: posInt().optional(),
  maxAssistantTurns: posInt().optional(),
  format: text().optional(),
  maxToolResponseLength: posInt().optional(),
  tools: z.array(ident()).optional().describe("Names from `tools`; rendered into the stage's tool config YAML."),
  toolConfig: text().optional().describe("Where the tool config YAML is written, relative to workDir or absolute under it. Default tool_config/<stage>_tools.yaml"),
  toolSchemasInPromptLength: bool().optional().describe("Also set data.tool_config_path (verl ≥ 11f536f0e) so prompt-length filtering counts tool schemas."),
});

const Train = z.strictObject({
  removePadding: bool().optional(),
  gradientCheckpointing: bool().optional(),
  dynamicBsz: bool().optional(),
  maxTokensPerDevice: posInt().optional(),
  refLogProbMaxTokensPerDevice: posInt().optional(),
  ulyssesSP: posInt().optional(),
  offload: z.strictObject({ actorParams: bool().optional(), actorOptimizer: bool().optional(), refParams: bool().optional() }).optional(),
  torchCompile: z.strictObject({ actor: bool().optional(), ref: bool().optional() }).optional(),
});

const RlSchedule = z.strictObject({
  epochs: posInt().optional(),
  totalTrainingSteps: posInt().optional().describe("trainer.total_training_steps: verl stops after this many steps (or at the end of the epochs, whichever comes first)."),
  saveEvery: z.number().int().optional(),
  testEvery: z.number().int().optional(),
  valBeforeTrain: bool().optional(),
  logValGenerations: nonNegInt().optional(),
  criticWarmup: nonNegInt().optional(),
});

const Speculative = z.strictObject({
  method: oneOf(["eagle3", "suffix"] as const),
  draftModel: ident().optional().describe("A key of `models` (EAGLE3 drafter)."),
  requiresPatches: z.array(text()).min(1).describe("Patch files (from runtime.verl.patches) that implement it."),
  note: text().optional(),
});

const RlStage = z.strictObject({
  ...StageCommon,
  type: z.literal("rl"),
  model: text().describe("A key of `models`, or ${stages.<id>.output}."),
  data: RlData,
  algorithm: Algorithm.optional(),
  rollout: Rollout,
  agent: Agent.optional(),
  train: Train.optional(),
  schedule: RlSchedule.optional(),
  logging: Logging.optional(),
  outputDir: text().optional().describe("trainer.default_local_dir; default checkpoints/<project>/<experiment>."),
  speculative: Speculative.optional(),
  overrides: overrides().optional(),
});

const EvalStage = z.strictObject({
  ...StageCommon,
  type: z.literal("eval"),
  model: text(),
  data: z.strictObject({ val: ident(), maxPromptLength: posInt(), maxResponseLength: posInt(), promptsPerStep: posInt().optional() }),
  rollout: Rollout,
  agent: Agent.optional(),
  logging: Logging.optional(),
  overrides: overrides().optional(),
});

const ScoreStage = z.strictObject({
  ...StageCommon,
  type: z.literal("score"),
  data: ident().describe("A key of `datasets` (jsonl): rows with ground_truth test cases and a response to score."),
  responseField: text().optional().describe("Row field holding the response (default solution): reference solutions make this a preflight of the test cases."),
  minPassRate: fraction().optional().describe("The stage fails when fewer rows pass (1: every row must pass)."),
  batchSize: posInt().optional().describe("Rows per /v1/rewards request (default 64)."),
}).describe("Scores a dataset's responses with `rlpipe eval` through the reward function (sandbox.kind rlpipe), writing metrics and a result file (and both to checkpoints.storage when set).");

const Stage = z.discriminatedUnion("type", [SftStage, MergeStage, RlStage, EvalStage, ScoreStage], {
  error: "expected a stage with type sft, merge, rl, eval or score",
});

// ---------------------------------------------------------------- checkpoints, targets

const Checkpoints = z.strictObject({
  dir: text().optional().describe("Directory RL stages without an outputDir save under: <dir>/<experiment>."),
  saveEvery: posInt().optional().describe("Default save interval (steps) for stages that set none."),
  storage: text().regex(/^(s3|obs|cos|file):\/\/./, { error: "expected a URI such as s3://bucket/prefix, obs://…, cos://… or file://…" }).optional()
    .describe("Object storage the checkpoints and metrics are synced to (by the checkpoint sync, not by verl). Default for ModelArts and TI-ONE: <codeDir>/runs; rlpipe checkpoints <run>.<stage> --store <this> lists them."),
  keep: z.strictObject({
    last: posInt().optional().describe("Keep the newest N checkpoints (locally through verl's max_*_ckpt_to_keep, and in storage)."),
    every: posInt().optional().describe("Also keep every M-th step in storage (checkpoint sync retention)."),
  }).optional(),
  via: oneOf(["direct", "function"] as const).optional()
    .describe("How a sidecar uploads: direct (rlpipe sync, storage credentials on the node) or function (rlpipe_sync.py through the runs function's presigned URLs; no credentials in the job). Default: function when functionUrl is set."),
  functionUrl: text().optional().describe("Base URL of the rlpipe function with the runs routes (the job authenticates with RLPIPE_RUN_TOKEN)."),
  intervalS: posInt().optional().describe("Seconds between sync passes (default 30)."),
});

const Mount = z.string().regex(/^[^:]+(:[^:]+)?(:(ro|rw))?$/, { error: "expected host[:container][:ro|rw]" });

const DockerTarget = z.strictObject({
  image: text(),
  workDir: text().optional(),
  workspace: text().optional().describe("Container path where the host workspace ($HOST_WORKSPACE) is mounted; default the workDir."),
  devicePreset: oneOf(["ascend", "nvidia", "none"] as const).optional().describe("Default from runtime.accelerator."),
  mounts: z.array(Mount).optional().describe("Replaces the preset's driver mounts when given."),
  extraMounts: z.array(Mount).optional(),
  shmSize: text().optional(),
  privileged: bool().optional(),
  network: text().optional(),
  user: text().optional(),
  name: text().optional(),
});

const RayTarget = z.strictObject({
  address: text().optional().describe("Ray dashboard URL (Jobs REST API), e.g. http://127.0.0.1:8265. RAY_API_SERVER_ADDRESS, or RAY_ADDRESS when it is an http(s) URL, overrides it. Plain http only for loopback addresses."),
  workDir: text().optional().describe("Absolute directory on the Ray node where launch.sh copies the bundle and runs the stages."),
  tokenEnv: envName().optional().describe("Variable holding the dashboard's bearer token (Ray token auth). Default: RAY_AUTH_TOKEN, then the file named by RAY_AUTH_TOKEN_PATH, then ~/.ray/auth_token."),
  runtimeEnv: z.strictObject({
    workingDir: text().optional().describe("Not sent: rlpipe ships the launch bundle as the job's working_dir (use workDir)."),
    envVars: z.record(envName(), z.string()).optional().describe("runtime_env.env_vars for the job and its Ray workers (Ray expands ${VAR} from the cluster's environment). Never secrets."),
    pip: z.array(text()).optional().describe("runtime_env.pip: packages Ray installs into the job's environment."),
  }).optional(),
  entrypointNumCpus: posNumber().optional().describe("CPUs reserved for launch.sh (entrypoint_num_cpus); the node Ray picks must have them."),
  entrypointNumGpus: posNumber().optional().describe("GPUs reserved for launch.sh (entrypoint_num_gpus): places the driver on a GPU node."),
  entrypointMemoryBytes: posInt().optional().describe("Memory reserved for launch.sh in bytes (entrypoint_memory)."),
  entrypointResources: z.record(text(), posNumber()).optional().describe("Custom resources reserved for launch.sh (entrypoint_resources), e.g. { head: 1 }."),
  metadata: z.record(text(), z.string()).optional().describe("Extra job metadata (string values); keys starting with rlpipe_ are reserved."),
});

const SlurmTarget = z.strictObject({
  workDir: text().optional().describe("Absolute directory the stages run in on the compute nodes (on a shared filesystem when nodes > 1)."),
  partition: text().optional().describe("Partition(s) to submit to (sbatch --partition), e.g. gpu or gpu,debug."),
  gresPerNode: text().optional().describe("Generic resources per node (sbatch --gres), e.g. gpu:8 or npu:8. Default for nvidia-gpu: --gpus-per-node=<devicesPerNode>."),
  cpusPerTask: posInt().optional().describe("CPUs for each node's one task (sbatch --cpus-per-task). Slurm's default is 1: set it, or --exclusive in extraSbatch, for training."),
  timeLimit: text().optional().describe("Wall-clock limit (sbatch --time): minutes, H:M:S or D-H:M:S."),
  login: text().optional().describe("ssh destination of a login node; sbatch runs locally when unset."),
  account: text().optional().describe("Account the job is charged to (sbatch --account)."),
  qos: text().optional().describe("Quality of service (sbatch --qos)."),
  bundleDir: text().optional()
    .describe("Absolute directory on a filesystem every node sees; each launch bundle goes to its own <bundleDir>/<bundle digest 12>/ with the job's output file. Default <workDir>/.rlpipe/bundles."),
  extraSbatch: z.array(text()).optional()
    .describe("Further sbatch options, one per item in --name=value form (e.g. --exclusive, --mem=0, --constraint=h100), written as #SBATCH lines."),
});

const ModelArtsChannel = z.strictObject({
  name: ident(),
  obs: text().describe("OBS directory: obs://bucket/prefix (or /bucket/prefix)."),
  local: text().describe("Absolute directory in the job."),
});

const ModelArtsTarget = z.strictObject({
  workDir: text().optional(),
  image: text().optional().describe("Custom image in SWR of the job's region: organization/image:tag (algorithm.engine.image_url)."),
  flavor: text().optional().describe("flavor_id, from GET /v2/{project_id}/training-job-flavors (or a dedicated pool's flavor)."),
  poolId: text().optional().describe("Dedicated resource pool id (spec.resource.pool_id); flavor is then the pool's flavor."),
  region: text().optional().describe("Region, e.g. cn-southwest-2 (default: HUAWEICLOUD_REGION)."),
  projectId: text().optional().describe("Project id of the region (HUAWEICLOUD_SDK_PROJECT_ID wins when set)."),
  endpoint: text().optional().describe("API endpoint (default https://modelarts.<region>.myhuaweicloud.com; MODELARTS_ENDPOINT wins). Plain http only for loopback."),
  codeDir: text().optional().describe("OBS directory launch bundles are uploaded to: each bundle goes to <codeDir>/<bundle digest 12>/ (algorithm.code_dir)."),
  localCodeDir: text().optional().describe("Where ModelArts downloads the code dir in the job: a directory under /home, not /home/ma-user nor in /home/ma-user/modelarts, modelarts-dev or infer (ModelArts' own). Unset: not sent, ModelArts' default (/home/ma-user/modelarts/user-job-dir) applies."),
  outputs: z.array(ModelArtsChannel).optional().describe("Output channels: ModelArts uploads local to obs periodically and at exit."),
  inputs: z.array(ModelArtsChannel).optional().describe("Input channels: ModelArts downloads obs to local before the command runs."),
  logExportPath: text().optional().describe("OBS directory the job's logs are exported to (default <codeDir>/logs/); Ascend jobs need one."),
  obsPathStyle: oneOf(["path", "uri"] as const).optional().describe("How OBS paths are written in the request: path (/bucket/dir/, default) or uri (obs://bucket/dir/)."),
  env: z.record(envName(), z.string()).optional()
    .describe("Variables set through the job's environments (plain text, visible in the console: no secrets). Values are literal: no '$', at most 4096 characters."),
  autoStopHours: posInt().optional().describe("Stop the job after this many hours (spec.auto_stop)."),
  annotations: z.record(text(), z.string()).optional()
    .describe("metadata.annotations, e.g. fault-tolerance/job-retry-num: \"3\" (a retry re-runs launch.sh, which resumes)."),
  envFromPlatform: z.strictObject({
    nodeRank: envName().optional().describe("Variable holding this node's index (default VC_TASK_INDEX)."),
    nnodes: envName().optional().describe("Variable holding the node count (default MA_NUM_HOSTS)."),
    hosts: envName().optional().describe("Variable holding the comma-separated hosts, rank 0 first (default VC_WORKER_HOSTS)."),
  }).optional().describe("Multi-node: the ModelArts task variables launch.sh's RLPIPE_NODE_RANK, RLPIPE_NNODES and RLPIPE_MASTER_ADDR come from."),
});

// TI-ONE's public API (tione 2021-11-11) does not document Ray mode: every Ray-mode literal has a best-known
// default and a field here to override it with what `rlpipe tione inspect <task-id>` reads back from a task
// created once in the console.
const TioneCosUri = () => z.string().regex(/^cos:\/\/[a-z0-9][a-z0-9-]*-\d+(\/.*)?$/, { error: "expected a COS URI such as cos://bucket-1250000000/prefix" });

const TioneNodes = (defaultRole: string) => z.strictObject({
  spec: text().optional().describe('Node size as the console writes it: "128C1000G" (cores, GB of memory) or "128C1000G GPU-HCCPNV6*4" (plus card type and count). The explicit fields below win over it.'),
  count: posInt().describe("Nodes with this role (InstanceNum)."),
  role: text().optional().describe(`ResourceConfigInfos[].Role literal (default ${defaultRole}; unverified for Ray mode).`),
  instanceType: text().optional().describe("Postpaid spec id such as TI.GN7.8XLARGE128.POST (selects ChargeType POSTPAID_BY_HOUR unless chargeType says otherwise)."),
  cpuMilli: posInt().optional().describe("Cpu in the API's unit, 1/1000 core (128 cores = 128000)."),
  memoryMB: posInt().optional().describe("Memory in the API's unit, MB (a spec's G is read as 1024 MB, which is unverified)."),
  gpuCenti: nonNegInt().optional().describe("Gpu in the API's unit, 1/100 card (4 cards = 400)."),
  gpuType: text().optional().describe("GpuType literal: the resource group's card type, e.g. HCCPNV6, H20, A800."),
  rdma: bool().optional().describe("RDMAConfig.Enable."),
});

const TioneTarget = z.strictObject({
  workDir: text().optional(),
  mode: oneOf(["ray", "custom"] as const).default("ray").describe("ray: a Ray-mode task (head + workers; the start command runs the launch bundle as the Ray driver). custom: every node runs the start command (DDP mode)."),
  trainingMode: text().optional().describe("TrainingMode literal (default RAY for mode ray, unverified; DDP for mode custom)."),
  chargeType: oneOf(["PREPAID", "POSTPAID_BY_HOUR"] as const).optional().describe("Default: PREPAID with resourceGroupId, POSTPAID_BY_HOUR when the nodes name an instanceType."),
  resourceGroupId: text().optional().describe("Prepaid resource group (DescribeBillingResourceGroups), e.g. rsg-… or ersg-…."),
  image: z.strictObject({
    builtin: text().optional().describe("Built-in image name, sent as FrameworkEnvironment, e.g. verl0.6.1-vllm0.11.0-torch2.8-py312-cuda12.8-gpu."),
    framework: text().optional().describe("FrameworkName for a built-in image (default PYTORCH, unverified for the verl image)."),
    frameworkVersion: text().optional().describe("FrameworkVersion, from DescribeTrainingFrameworks (omitted when unset)."),
    url: text().optional().describe("Image URL for ImageInfo (a custom or TCR image) instead of a built-in image."),
    imageType: oneOf(["TCR", "CCR", "PRESET", "CUSTOM"] as const).optional().describe("ImageInfo.ImageType (default TCR)."),
    registryRegion: text().optional(),
    registryId: text().optional(),
  }).optional(),
  head: TioneNodes("HEAD").optional().describe("Ray head nodes (mode ray)."),
  worker: TioneNodes("WORKER").optional().describe("Worker nodes (the GPU nodes)."),
  storage: z.strictObject({
    cfs: z.string().regex(/^cfs-[A-Za-z0-9]+(:\/.*)?$/, { error: "expected a CFS instance id with an optional path, e.g. cfs-abcd1234:/ or cfs-abcd1234:/team/notebook" }).optional()
      .describe("CFS mounted at mountPath: <cfs-id>[:<path in the file system>] (default path /)."),
    cos: TioneCosUri().optional().describe("COS location the launch bundle is uploaded to when codeDir is unset."),
    mountPath: text().optional().describe("Where the CFS appears in the task (default /home/tione/notebook, as on a dev machine)."),
  }).optional(),
  codeDir: TioneCosUri().optional().describe("COS URI the launch bundle is uploaded to (content-addressed: <codeDir>/<bundle digest>/); mounted into the task."),
  codeMountPath: text().optional().describe("Where the task sees the bundle (default /opt/ml/input/rlpipe-bundle)."),
  startCmd: text().optional().describe("Replaces the start command rlpipe renders (cd to runtimeEnv.workingDir, run the bundle's launch.sh)."),
  envs: z.record(envName(), z.string()).optional().describe("Task environment variables (TI-ONE Envs). Values are literal: TI-ONE documents no $ expansion."),
  secretsAsEnvs: bool().optional().describe("Pass the recipe's secrets to the task as private Envs (IsPrivate), read from the deploying shell at deploy time (default true; TI-ONE has no secret store: which views hide a private value is not documented, and the task's own code can read it)."),
  output: TioneCosUri().optional().describe("COS training output (Output)."),
  logConfig: z.strictObject({ logsetId: text(), topicId: text() }).optional().describe("CLS log set and topic; sets LogEnable."),
  tuningParameters: text().optional().describe("TuningParameters, a JSON string of at most 2048 characters (copy it from rlpipe tione inspect)."),
  vpcId: text().optional(),
  subnetId: text().optional(),
  tags: z.record(text(), z.string()).optional().describe("Extra task tags; rlpipe always adds rlpipe-run=<job name>."),
  runtimeEnv: z.strictObject({
    workingDir: text().optional().describe("The start command changes into it before launch.sh runs."),
    envVars: z.record(envName(), z.string()).optional().describe("Ray runtime_env env_vars, passed through verl (+ray_kwargs.ray_init.runtime_env.env_vars.*); $NAME is expanded by Ray on each node."),
    pip: z.array(text()).optional().describe("Ray runtime_env pip packages, passed through verl (+ray_kwargs.ray_init.runtime_env.pip)."),
  }).optional().describe("The console's RuntimeEnv JSON. TI-ONE's API has no such field: rlpipe carries it through verl's ray.init."),
  region: text().optional().describe("Region (X-TC-Region), e.g. ap-shanghai; also the region of the COS buckets. Default TENCENTCLOUD_REGION."),
  endpoint: text().optional().describe("API endpoint (default https://tione.tencentcloudapi.com); TIONE_ENDPOINT wins."),
  tiProjectId: text().optional().describe("TI-ONE workspace (TiProjectId) for a non-default workspace; default: the env TENCENTCLOUD_TIONE_PROJECT_ID, else the default workspace"),
});

const LocalTarget = z.strictObject({ workDir: text().optional() });

/** Units a rate may be given in; rlpipe converts between those of one kind (e.g. vcpu-hour ↔ vcpu-second, 1m-requests ↔ request). */
export const PRICE_UNITS = [
  "node-hour", "node-second", "device-hour", "device-second", "vcpu-hour", "vcpu-second", "gib-hour", "gib-second",
  "gb-second", "request", "1k-requests", "10k-requests", "1m-requests", "gb-month", "gb", "CNY/USD",
] as const;

/** A rate the user knows (a console quote, a contract): it wins over rlpipe's reference table for the same item. */
const PriceRate = z.strictObject({
  item: text().describe("What is priced: a price catalog row id (rlpipe cost lists them), e.g. modelarts:<flavor>, tione:<instanceType>, device:<deviceType> (device:H20), sandbox:e2b, lambda:arm64:gb-second, fx:CNY/USD."),
  value: posNumber(),
  currency: oneOf(["CNY", "USD"] as const),
  unit: oneOf(PRICE_UNITS),
  source: text().optional().describe("Where the figure comes from (a quote, a price page and its date)."),
  region: text().optional(),
  dateRead: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { error: "expected a date YYYY-MM-DD" }).optional().describe("When the figure was read or quoted."),
});

/** A figure the cost estimate assumes, given as one number or as a range. */
const RangeInput = () => z.union([
  nonNegNumber(),
  z.strictObject({ low: nonNegNumber(), expected: nonNegNumber(), high: nonNegNumber() })
    .refine((r) => r.low <= r.expected && r.expected <= r.high, { error: "expected low ≤ expected ≤ high" }),
], { error: "expected a number or { low, expected, high }" });

/** Inputs of `rlpipe cost` beyond what the recipe already says; every field overrides an assumption the report lists. */
const CostInputs = z.strictObject({
  budget: z.strictObject({ cap: posNumber(), currency: oneOf(["CNY", "USD"] as const) }).optional()
    .describe("The most the whole run may cost; rlpipe deploy refuses to submit above it unless --force."),
  stages: z.record(ident(), z.strictObject({
    stepSeconds: posNumber().optional().describe("A step time you measured (seconds); replaces the step-time model for this stage."),
    steps: posInt().optional().describe("Steps to price (e.g. when you will stop early); default: schedule.totalTrainingSteps capped by the dataset rows, batch and epochs."),
    publishedSteps: posInt().optional().describe("How many steps the run this recipe reproduces went (its publication); rlpipe cost flags a priced length more than 3× it."),
    publishedSource: text().optional().describe("Where publishedSteps comes from (a quote and its source)."),
  })).optional().describe("Per stage id."),
  usage: z.strictObject({
    toolCallsPerResponse: RangeInput().optional(),
    toolCallSeconds: RangeInput().optional().describe("Sandbox time of one tool call."),
    testCasesPerReward: RangeInput().optional(),
    testCaseSeconds: RangeInput().optional(),
    sandboxIdleSecondsPerResponse: RangeInput().optional().describe("Managed sandbox kept alive while the model generates (billed though idle)."),
    sandboxVcpus: posNumber().optional(),
    sandboxMemoryGiB: posNumber().optional(),
    functionMemoryMB: posInt().optional(),
    storageMonths: RangeInput().optional().describe("How long checkpoints stay in object storage after the run."),
    checkpointExports: nonNegInt().optional().describe("Downloads of the final model out of the cloud (egress); default 1."),
  }).optional(),
});

const Targets = z.strictObject({
  local: LocalTarget.optional(),
  docker: DockerTarget.optional(),
  ray: RayTarget.optional(),
  slurm: SlurmTarget.optional(),
  modelarts: ModelArtsTarget.optional(),
  tione: TioneTarget.optional(),
});

// ---------------------------------------------------------------- the recipe

export const RecipeSchema = z.strictObject({
  apiVersion: z.literal("rlpipe/v1", { error: "expected rlpipe/v1" }),
  kind: z.literal("Recipe", { error: "expected Recipe" }),
  metadata: Metadata,
  runtime: Runtime,
  resources: Resources,
  models: z.record(ident(), Model).default({}),
  datasets: z.record(ident(), Dataset).default({}),
  sandbox: Sandbox.optional(),
  tools: z.array(Tool).optional(),
  reward: Reward.optional(),
  stages: z.array(Stage).min(1, { error: "expected at least one stage" }),
  logging: Logging.optional().describe("Defaults for every stage's logging."),
  checkpoints: Checkpoints.optional(),
  secrets: z.record(ident(), Secret).optional(),
  targets: Targets.optional(),
  prices: z.array(PriceRate).optional().describe("Rates for the cost estimate and the run record (prices assumed); they win over rlpipe's reference rates."),
  cost: CostInputs.optional().describe("Budget cap, measured step times and usage figures for `rlpipe cost` (docs/cost.md)."),
});

/** Deeply readonly view: recipes are values, never mutated after loading. */
export type DeepReadonly<T> = T extends JsonValue ? T : T extends (infer E)[] ? readonly DeepReadonly<E>[]
  : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

export type Recipe = DeepReadonly<z.output<typeof RecipeSchema>>;
export type Stage = Recipe["stages"][number];
export type SftStage = Extract<Stage, { type: "sft" }>;
export type MergeStage = Extract<Stage, { type: "merge" }>;
export type RlStage = Extract<Stage, { type: "rl" }>;
export type EvalStage = Extract<Stage, { type: "eval" }>;
export type ScoreStage = Extract<Stage, { type: "score" }>;
export type Tool = NonNullable<Recipe["tools"]>[number];
export type SandboxSpec = NonNullable<Recipe["sandbox"]>;
export type Targets = NonNullable<Recipe["targets"]>;
