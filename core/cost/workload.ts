// The run as work: for each stage its steps, seconds per step and wall hours (with validation passes), plus the
// per-step counts usage is priced from (responses, rollout seconds). Pure arithmetic over the recipe.
import type { EvalStage, Provider, Recipe, RlStage, SftStage, Stage } from "../recipe/schema.js";
import { parseNodeSpec } from "../providers/tione-request.js";
import { add, exact, mul, range } from "./range.js";
import { type ModelSize, datasetRows, fmtRange, modelSize, stageSteps } from "./recipe-facts.js";
import { type DeviceKey, DEVICES, type StepWorkload, deviceKeyOf, measuredStepSeconds, modelStepSeconds } from "./step-time.js";
import type { Range } from "./types.js";

export interface StageWork {
  readonly id: string;
  readonly type: Stage["type"];
  readonly steps?: Range;
  /** Where steps comes from, in a few words ("trainer.total_training_steps in the recipe", "--steps", …). */
  readonly stepsSource?: string;
  readonly secondsPerStep?: Range;
  readonly stepBasis?: "model" | "measured";
  /** Seconds per step spent generating (RL and eval): how long trajectories, and sandboxes held by them, live. */
  readonly rolloutSecondsPerStep?: Range;
  /** Responses generated (and scored) per training step. */
  readonly responsesPerStep?: number;
  readonly validations?: Range;
  readonly responsesPerValidation?: Range;
  /** Wall hours of the stage, validation included. */
  readonly hours: Range;
  readonly saveEvery?: number;
  readonly model?: ModelSize;
  /** Responses generated in the whole stage (training and validation). */
  readonly responses: Range;
}

export interface Workload {
  readonly stages: readonly StageWork[];
  readonly hours: Range;
  readonly device: DeviceKey | undefined;
  readonly assumptions: readonly string[];
}

/** Card type of the job: the TI-ONE worker's, a ModelArts Ascend flavor's, else the recipe's device type. */
export function deviceOf(recipe: Recipe, provider: Provider): DeviceKey | undefined {
  const acc = recipe.runtime.accelerator;
  if (acc === "cpu") return undefined;
  if (provider === "tione") {
    const w = recipe.targets?.tione?.worker;
    const gpu = w?.gpuType ?? (w?.spec === undefined ? undefined : parseNodeSpec(w.spec)?.gpuType);
    if (gpu !== undefined) return deviceKeyOf(gpu, acc);
  }
  if (provider === "modelarts" && recipe.targets?.modelarts?.flavor !== undefined && acc === "ascend-npu") return "ascend-910b";
  return deviceKeyOf(recipe.resources.deviceType, acc);
}

export interface WorkloadOptions {
  /** A measured step time for the RL stages (else the SFT stages) without their own cost.stages.<id>.stepSeconds. */
  readonly stepSeconds?: number;
  readonly testCaseSeconds: Range;
  readonly testCasesPerReward: Range;
  /** Steps to price per training stage id (rlpipe cost --steps), over the recipe's. */
  readonly steps?: Readonly<Record<string, number>>;
}

const MERGE_HOURS = range(0.05, 0.15, 0.5);

export function workloadOf(recipe: Recipe, provider: Provider, opts: WorkloadOptions): Workload {
  const assumptions: string[] = [];
  const device = deviceOf(recipe, provider);
  const { nodes, devicesPerNode } = recipe.resources;
  const devices = nodes * devicesPerNode;
  const hasRl = recipe.stages.some((s) => s.type === "rl");
  const optionTarget = hasRl ? "rl" : "sft";
  const stages: StageWork[] = [];
  const note = (s: string) => { if (!assumptions.includes(s)) assumptions.push(s); };
  if (device !== undefined) note(`devices: ${devices} × ${DEVICES[device].name} (${recipe.resources.nodes} node${nodes === 1 ? "" : "s"} × ${devicesPerNode})`);

  for (const stage of recipe.stages) {
    if (stage.type === "rl" || stage.type === "sft") {
      const model = modelSize(recipe, stage);
      note(`stage ${stage.id}: ${model.basis}`);
      const steps = stageSteps(recipe, stage, opts.steps?.[stage.id]);
      note(steps.basis);
      const measured = recipe.cost?.stages?.[stage.id]?.stepSeconds ?? (stage.type === optionTarget ? opts.stepSeconds : undefined);
      const w = trainingWorkload(stage, model, devices, nodes, device);
      const modeled = modelStepSeconds(w);
      let seconds: Range;
      let rollout: Range | undefined;
      if (measured !== undefined) {
        seconds = measuredStepSeconds(measured);
        // The rollout share the model gives on this device: decode is memory-bound, so it differs by hardware.
        const share = modeled.rolloutSeconds === undefined ? 0 : modeled.rolloutSeconds.expected / modeled.seconds.expected;
        rollout = stage.type === "rl" ? mul(seconds, share) : undefined;
        note(`stage ${stage.id}: measured step time ${measured} s (range −10%/+30%: run-to-run variation and longer responses later in RL)${stage.type === "rl" ? `; rollout share ${(share * 100).toFixed(1)}% as the step-time model gives for this device (from ${modeled.calibration.id})` : ""}`);
      } else {
        seconds = modeled.seconds;
        rollout = modeled.rolloutSeconds;
        for (const a of modeled.assumptions) note(`stage ${stage.id}: ${a}`);
        note(`stage ${stage.id}: ${fmtRange(seconds)} s per step from the ${stage.type === "rl" ? "RL" : "SFT"} calibration point (${modeled.calibration.source}), scaled by ${fmtRange(mul(model.active, 1e-9))}B active parameters, ${fmtTokens(w.tokensPerStep)} tokens per step at the length caps and ${devices} devices; responses assumed to fill the length caps in the same proportion as in the calibration run`);
      }
      if (stage.type === "sft") {
        stages.push({ id: stage.id, type: stage.type, steps: steps.value, stepsSource: steps.source, secondsPerStep: seconds, stepBasis: measured === undefined ? "model" : "measured",
          hours: mul(steps.value, seconds, 1 / 3600), ...(saveEvery(recipe, stage) === undefined ? {} : { saveEvery: saveEvery(recipe, stage)! }), model, responses: exact(0) });
        continue;
      }
      const responsesPerStep = stage.data.promptsPerStep * (stage.rollout.n ?? 1);
      const val = validation(recipe, stage, steps.value, responsesPerStep, rollout!);
      if (val.basis !== undefined) note(val.basis);
      const trainSeconds = mul(steps.value, seconds);
      const hours = mul(add(trainSeconds, val.seconds), 1 / 3600);
      stages.push({
        id: stage.id, type: stage.type, steps: steps.value, stepsSource: steps.source, secondsPerStep: seconds, stepBasis: measured === undefined ? "model" : "measured",
        rolloutSecondsPerStep: rollout!, responsesPerStep, validations: val.count, responsesPerValidation: val.responses, hours,
        ...(saveEvery(recipe, stage) === undefined ? {} : { saveEvery: saveEvery(recipe, stage)! }), model,
        responses: add(mul(steps.value, responsesPerStep), mul(val.count, val.responses)),
      });
    } else if (stage.type === "merge") {
      stages.push({ id: stage.id, type: stage.type, hours: MERGE_HOURS, responses: exact(0), model: modelSize(recipe, stage) });
      note(`stage ${stage.id}: merging a checkpoint takes 0.05–0.15–0.5 h (assumed)`);
    } else if (stage.type === "eval") {
      stages.push(evalWork(recipe, stage, devices, nodes, device, note));
    } else {
      const rows = datasetRows(recipe, stage.data);
      note(`stage ${stage.id}: ${rows.basis}`);
      const hours = mul(rows.value, opts.testCasesPerReward, opts.testCaseSeconds, 1 / 3600);
      stages.push({ id: stage.id, type: stage.type, hours, responses: rows.value });
      note(`stage ${stage.id}: scoring runs every row's test cases one after another (an upper bound for its wall time)`);
    }
  }
  return { stages, hours: add(...stages.map((s) => s.hours)), device, assumptions };
}

function trainingWorkload(stage: RlStage | SftStage, model: ModelSize, devices: number, nodes: number, device: DeviceKey | undefined): StepWorkload {
  const tokensPerStep = stage.type === "sft"
    ? stage.batch.global * stage.data.maxLength
    : stage.data.promptsPerStep * (stage.rollout.n ?? 1) * (stage.data.maxPromptLength + stage.data.maxResponseLength);
  return { phase: stage.type, params: model.active.expected, tokensPerStep, devices, nodes, device, ...(stage.type === "rl" && stage.speculative !== undefined ? { speculative: true } : {}) };
}

function saveEvery(recipe: Recipe, stage: RlStage | SftStage): number | undefined {
  const own = stage.schedule?.saveEvery;
  if (own !== undefined) return own > 0 ? own : undefined;
  return recipe.checkpoints?.saveEvery;
}

/** verl validates before training (val_before_train, default true) and every test_freq steps (default off). */
function validation(recipe: Recipe, stage: RlStage, steps: Range, responsesPerStep: number, rolloutPerStep: Range) {
  const none = { count: exact(0), responses: exact(0), seconds: exact(0), basis: undefined as string | undefined };
  if (stage.data.val === undefined) return none;
  const before = stage.schedule?.valBeforeTrain ?? true;
  const every = stage.schedule?.testEvery ?? -1;
  const periodic = (s: number) => (every > 0 ? Math.floor(s / every) : 0);
  const count = range(periodic(steps.low) + (before ? 1 : 0), periodic(steps.expected) + (before ? 1 : 0), periodic(steps.high) + (before ? 1 : 0));
  if (count.high === 0) return none;
  const rows = datasetRows(recipe, stage.data.val);
  const n = stage.rollout.val?.n ?? 1;
  const responses = mul(rows.value, n);
  // A validation pass generates like a rollout, at the same length caps, and trains nothing.
  const seconds = mul(count, rolloutPerStep, range(responses.low / responsesPerStep, responses.expected / responsesPerStep, responses.high / responsesPerStep));
  return {
    count, responses, seconds,
    basis: `stage ${stage.id}: ${fmtRange(count)} validation passes (${before ? "before training, " : ""}${every > 0 ? `every ${every} steps` : "no periodic test"}) of ${fmtRange(responses)} responses (${rows.basis}; val n ${n}), each taking rollout time in proportion to its responses`,
  };
}

function evalWork(recipe: Recipe, stage: EvalStage, devices: number, nodes: number, device: DeviceKey | undefined, note: (s: string) => void): StageWork {
  const model = modelSize(recipe, stage);
  note(`stage ${stage.id}: ${model.basis}`);
  const rows = datasetRows(recipe, stage.data.val);
  note(`stage ${stage.id}: ${rows.basis}`);
  const n = stage.rollout.n ?? 1;
  const responses = mul(rows.value, n);
  const perResponse = modelStepSeconds({
    phase: "rl", params: model.active.expected, tokensPerStep: stage.data.maxPromptLength + stage.data.maxResponseLength, devices, nodes, device,
  }).rolloutSeconds!;
  note(`stage ${stage.id}: generation time from the RL calibration point's rollout share, per response at the length caps`);
  return { id: stage.id, type: stage.type, hours: mul(responses, perResponse, 1 / 3600), responses, model };
}

const fmtTokens = (t: number) => (t >= 1e6 ? `${Number((t / 1e6).toPrecision(4))}M` : t >= 1e3 ? `${Number((t / 1e3).toPrecision(4))}k` : String(t));
