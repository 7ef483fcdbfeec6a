// Seconds per training step, from the published step times of the seed recipes scaled to another recipe:
//   t = t0 × (P / P0)^α × (T / T0) × (D0 / D) × (F0 / F)
// P active parameters, T tokens per step at the length caps (RL: responses × (max prompt + max response); SFT:
// batch × max length), D devices, F the device's dense FP16/BF16 TFLOPS. One published point per phase gives
// t0: an RL step (seed 001, dominated by multi-turn rollout) and an SFT step (seed 003). α is fitted so that the
// SFT point also predicts the update (non-rollout) part of the RL point: small models leave accelerators
// under-used, so step time grows far slower than parameter count (α ≈ 0.22, see paramsExponentFit). The range
// widens with the distance from the calibration point; see docs/cost.md.
import { range } from "./range.js";
import type { Range } from "./types.js";

export type Phase = "rl" | "sft";

export interface DeviceSpec {
  readonly name: string;
  /** Dense FP16/BF16 TFLOPS per device (a die for Ascend A3). */
  readonly tflops: number;
  readonly source: string;
}

export const DEVICES = {
  "ascend-910b": { name: "Ascend 910B (one NPU die)", tflops: 280, source: "ai.gitee.com/docs/compute/clusters_gpu/ascend_gpu (FP16 280 TFLOPS; boardor.com quotes ≈320)" },
  h200: { name: "NVIDIA H200", tflops: 989, source: "itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html (dense FP16/BF16 ≈989 TFLOPS)" },
  h100: { name: "NVIDIA H100/H800", tflops: 989, source: "itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html (H200 shares the H100's GH100 compute)" },
  h20: { name: "NVIDIA H20 (TI-ONE HCCPNV6)", tflops: 148, source: "willitrunai.com/es/gpus/h20-96gb (148 TFLOPS FP16)" },
} as const satisfies Readonly<Record<string, DeviceSpec>>;

export type DeviceKey = keyof typeof DEVICES;

/** The device a free-text device type or card type names, if rlpipe knows its speed. */
export function deviceKeyOf(text: string | undefined, accelerator: string): DeviceKey | undefined {
  const t = (text ?? "").toLowerCase();
  if (/h200/.test(t)) return "h200";
  if (/h100|h800/.test(t)) return "h100";
  if (/\bh20\b|hccpnv6|pnv6/.test(t)) return "h20";
  if (/910|ascend|atlas|snt9/.test(t) || accelerator === "ascend-npu") return "ascend-910b";
  return undefined;
}

export interface CalibrationPoint {
  readonly id: string;
  readonly phase: Phase;
  readonly what: string;
  readonly source: string;
  readonly params: number;
  readonly tokensPerStep: number;
  readonly devices: number;
  readonly device: DeviceKey;
  readonly seconds: number;
  /** RL: the share of the step spent in rollout (generation with tool calls). */
  readonly rolloutShare?: number;
}

export const CALIBRATION: readonly CalibrationPoint[] = [
  {
    id: "seed-001-qwen3-1.7b-grpo",
    phase: "rl",
    what: "Qwen3-1.7B GRPO, 128 prompts × 8 responses, max prompt 2048 + response 16384, multi-turn ScaleBox tool calls, 8 Ascend NPUs (Atlas A2/A3)",
    source: "seed 001 (hicann/cann-recipes-train agent_rl/qwen3_code_toolcall README): rollout 2816.6 s of 3596.5 s per step (78.3%)",
    params: 1.7e9,
    tokensPerStep: 128 * 8 * (2048 + 16384),
    devices: 8,
    device: "ascend-910b",
    seconds: 3596.5,
    rolloutShare: 2816.6 / 3596.5,
  },
  {
    id: "seed-003-retool-sft-qwen2.5-32b",
    phase: "sft",
    what: "Qwen2.5-32B-Instruct multi-turn SFT, batch 32 × max length 16384, Ulysses SP 4, 8 × H200",
    source: "seed 003 (ReTool reproduction on 8×H200): \"Total time for train steps: 2627.97s\" for 372 steps (≈7 s/step)",
    params: 32e9,
    tokensPerStep: 32 * 16384,
    devices: 8,
    device: "h200",
    seconds: 2627.97 / 372,
  },
];

/** Step time saved by speculative decoding in the rollout (seed 001 SD extension: "25% reduction in training step time"). */
export const SPECULATIVE_FACTOR = 0.75;

export interface StepWorkload {
  readonly phase: Phase;
  /** Active parameters (MoE: the activated ones). */
  readonly params: number;
  readonly tokensPerStep: number;
  readonly devices: number;
  readonly nodes: number;
  readonly device: DeviceKey | undefined;
  readonly speculative?: boolean;
}

export interface StepTime {
  readonly seconds: Range;
  readonly calibration: CalibrationPoint;
  /** RL: seconds of the step spent in rollout (validation and sandbox lifetimes scale from it). */
  readonly rolloutSeconds?: Range;
  readonly assumptions: readonly string[];
}

const lnRatio = (a: number, b: number) => Math.abs(Math.log(a / b));

/** Base spread at a calibration point: run-to-run variation and response-length drift during RL. */
export const BASE_SPREAD = 1.5;

export function modelStepSeconds(w: StepWorkload): StepTime {
  const cal = CALIBRATION.find((c) => c.phase === w.phase)!;
  const assumptions: string[] = [];
  const f0 = DEVICES[cal.device].tflops;
  const f = w.device === undefined ? f0 : DEVICES[w.device].tflops;
  let expected = cal.seconds * (w.params / cal.params) ** PARAMS_EXPONENT * (w.tokensPerStep / cal.tokensPerStep) * (cal.devices / w.devices) * (f0 / f);
  let sigma = Math.log(BASE_SPREAD) + 0.15 * lnRatio(w.params, cal.params) + 0.1 * lnRatio(w.tokensPerStep, cal.tokensPerStep) + 0.1 * lnRatio(w.devices, cal.devices);
  if (w.device === undefined) {
    sigma += Math.log(2);
    assumptions.push(`device speed unknown: assumed equal to the calibration device (${DEVICES[cal.device].name}), range widened ×2`);
  } else if (w.device !== cal.device) {
    sigma += Math.log(2);
    assumptions.push(`${DEVICES[w.device].name} scaled from ${DEVICES[cal.device].name} by dense FP16/BF16 TFLOPS ${f}/${f0} (${DEVICES[w.device].source}); rollout is memory-bound, so the range is widened ×2`);
  }
  if (w.nodes > 1) {
    expected /= 0.9;
    sigma += 0.1 * Math.log2(w.nodes);
    assumptions.push(`${w.nodes} nodes: 90% scaling efficiency assumed across nodes`);
  }
  if (w.speculative === true) {
    expected *= SPECULATIVE_FACTOR;
    assumptions.push("speculative decoding: step time × 0.75 (seed 001 SD extension: 25% shorter steps)");
  }
  const k = Math.exp(sigma);
  const seconds = range(expected / k, expected, expected * k);
  const share = cal.rolloutShare;
  return {
    seconds,
    calibration: cal,
    ...(share === undefined ? {} : { rolloutSeconds: range(seconds.low * share, seconds.expected * share, seconds.high * share) }),
    assumptions,
  };
}

/** A measured step time: ±10% run to run, and up to +30% as responses grow longer during RL. */
export function measuredStepSeconds(seconds: number): Range {
  return range(seconds * 0.9, seconds, seconds * 1.3);
}

/** Work per token of an RL update relative to an SFT step: old log-probs (2), reference log-probs (2), forward and backward (6) over 6. */
export const RL_UPDATE_WORK = 10 / 6;

/**
 * The parameter exponent α, fitted on the two published points: the update part of the RL step (seed 001: 3596.5 s
 * less 2816.6 s of rollout = 779.9 s, 1.7B on 8 Ascend NPUs) and the SFT step (seed 003: 7.06 s, 32B on 8 × H200),
 * after scaling tokens, devices, TFLOPS and RL_UPDATE_WORK. With α = 1 (step time proportional to parameters) the
 * SFT point would predict the RL update ≈10× too short: that is the error of the naive model on the one published
 * figure it was not built from, and why α is fitted rather than assumed. No other step time is published in the
 * seeds, so no held-out point remains; the range (docs/cost.md) reflects that.
 */
export function paramsExponentFit(): { readonly alpha: number; readonly published: number; readonly predictedLinear: number; readonly linearError: number } {
  const rl = CALIBRATION.find((c) => c.phase === "rl")!;
  const sft = CALIBRATION.find((c) => c.phase === "sft")!;
  const published = rl.seconds * (1 - rl.rolloutShare!);
  const rest = sft.seconds * (rl.tokensPerStep / sft.tokensPerStep) * (sft.devices / rl.devices) * (DEVICES[sft.device].tflops / DEVICES[rl.device].tflops) * RL_UPDATE_WORK;
  const alpha = Math.log(published / rest) / Math.log(rl.params / sft.params);
  const predictedLinear = rest * (rl.params / sft.params);
  return { alpha, published, predictedLinear, linearError: published / predictedLinear };
}

export const PARAMS_EXPONENT = paramsExponentFit().alpha;
