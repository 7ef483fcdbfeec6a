// Seconds per training step, scaled from published step times (CALIBRATION) to another recipe. A step is two parts
// that hit different limits:
//   rollout (generation, decode) = r0 × (P / P0)^α × (T / T0) × (D0 / D) × (B0 / B)   — memory-bandwidth-bound
//   update (log-probs, training) = u0 × (P / P0)^α × (T / T0) × (D0 / D) × (F0 / F)   — compute-bound
// P active parameters, T tokens per step at the length caps (RL: responses × (max prompt + max response); SFT:
// batch × max length), D devices, B the device's memory bandwidth, F its dense FP16/BF16 TFLOPS. r0 and u0 come from
// the nearest published point of the same phase (an SFT step has no rollout; with no SFT point it is the RL update
// part ÷ RL_UPDATE_WORK). α is fitted over all points (exponentFit). Every point is checked with itself held out
// (leaveOneOut); the table in docs/cost.md is that function's output. The range widens with the distance from the
// anchor point; see docs/cost.md.
import { range } from "./range.js";
import type { Range } from "./types.js";

export type Phase = "rl" | "sft";

export interface DeviceSpec {
  readonly name: string;
  /** Dense FP16/BF16 TFLOPS per device (a die for Ascend A3). */
  readonly tflops: number;
  readonly source: string;
  /** Memory (HBM) bandwidth per device: what decode is bound by. */
  readonly bandwidthTBps: number;
  readonly bandwidthSource: string;
}

export const DEVICES = {
  "ascend-910b": {
    name: "Ascend 910B (one NPU die)", tflops: 280, source: "ai.gitee.com/docs/compute/clusters_gpu/ascend_gpu (FP16 280 TFLOPS; boardor.com quotes ≈320)",
    bandwidthTBps: 1.2,
    bandwidthSource: "oryoy.com 910B article (\"HBM2E … 带宽高达1.2TB/s\", read 2026-11-28); sources disagree: boardor.com says 400 GB/s, and the ≈1.6 TB/s often quoted was not found in a source",
  },
  h200: {
    name: "NVIDIA H200", tflops: 989, source: "itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html (dense FP16/BF16 ≈989 TFLOPS)",
    bandwidthTBps: 4.8, bandwidthSource: "aiminingco.com/gpu/h200/specs and openmetal.io H200 article (141 GB HBM3e, 4.8 TB/s; read 2026-11-28)",
  },
  h100: {
    name: "NVIDIA H100/H800", tflops: 989, source: "itkb.uw.cz/2026/06/nvidia-h200-vs-b300-precisions-cores.html (H200 shares the H100's GH100 compute)",
    bandwidthTBps: 3.35, bandwidthSource: "openmetal.io and acecloud.ai H200 articles (H100 SXM 80 GB HBM3, 3.35 TB/s, \"as per NVIDIA's spec sheet\"; read 2026-11-28)",
  },
  h20: {
    name: "NVIDIA H20 (TI-ONE HCCPNV6)", tflops: 148, source: "willitrunai.com/es/gpus/h20-96gb (148 TFLOPS FP16)",
    bandwidthTBps: 4.0, bandwidthSource: "willitrunai.com/es/gpus/h20-96gb (\"96 GB HBM3 — 4,000 GB/s\"; read 2026-11-28)",
  },
} as const satisfies Readonly<Record<string, DeviceSpec>>;

export type DeviceKey = keyof typeof DEVICES;
export type DeviceTable = Readonly<Record<DeviceKey, DeviceSpec>>;

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
  /** When the figure was published (or, if undated, read). */
  readonly date: string;
  readonly model: string;
  readonly hardware: string;
  /** Responses (RL) or sequences (SFT) per step. */
  readonly batch: string;
  readonly lengths: string;
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
    date: "undated README, read 2026-11-28",
    model: "Qwen3-1.7B", hardware: "8 × Ascend NPU (Atlas A2/A3)", batch: "128 × 8 = 1024 responses", lengths: "2048 + 16384",
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
    date: "run logs dated 2025-10-01",
    model: "Qwen2.5-32B-Instruct", hardware: "8 × H200", batch: "32 sequences", lengths: "max 16384",
    params: 32e9,
    tokensPerStep: 32 * 16384,
    devices: 8,
    device: "h200",
    seconds: 2627.97 / 372,
  },
  {
    id: "verl-6747-qwen2.5-0.5b-grpo",
    phase: "rl",
    what: "Qwen2.5-0.5B-Instruct GRPO on GSM8K, 16 prompts × 1 response, max prompt 256 + response 1024, vLLM-Ascend, 1 Ascend 910B",
    source: "verl-project/verl issue #6747 (verl 0.7.1): step 94 \"timing_s/step: 43.64\", \"timing_s/gen: 31.27 (72%)\"",
    date: "2026-06-16",
    model: "Qwen2.5-0.5B-Instruct", hardware: "1 × Ascend 910B", batch: "16 × 1 = 16 responses", lengths: "256 + 1024",
    params: 0.5e9,
    tokensPerStep: 16 * 1 * (256 + 1024),
    devices: 1,
    device: "ascend-910b",
    seconds: 43.64,
    rolloutShare: 31.27 / 43.64,
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
  /** The published point the step was scaled from. */
  readonly calibration: CalibrationPoint;
  /** RL: seconds of the step spent in rollout (validation and sandbox lifetimes scale from it). */
  readonly rolloutSeconds?: Range;
  readonly assumptions: readonly string[];
}

/** Work per token of an RL update relative to an SFT step: old log-probs (2), reference log-probs (2), forward and backward (6) over 6. */
export const RL_UPDATE_WORK = 10 / 6;

/** Base spread at a calibration point: run-to-run variation and response-length drift during RL. */
export const BASE_SPREAD = 1.5;

const lnRatio = (a: number, b: number) => Math.abs(Math.log(a / b));
const rolloutOf = (c: CalibrationPoint) => c.seconds * (c.rolloutShare ?? 0);
const updateOf = (c: CalibrationPoint) => c.seconds - rolloutOf(c);

/** How far a workload is from a point, in the units of the range's σ (so the nearest point is the one with the tightest range). */
function distance(w: StepWorkload, c: CalibrationPoint): number {
  return 0.15 * lnRatio(w.params, c.params) + 0.1 * lnRatio(w.tokensPerStep, c.tokensPerStep) + 0.1 * lnRatio(w.devices, c.devices)
    + (w.device !== undefined && w.device !== c.device ? Math.log(2) : 0);
}

export interface ExponentFit {
  readonly alpha: number;
  /** The least-squares slope before clamping to [0, 1] (undefined when the points cannot identify it). */
  readonly unclamped: number | undefined;
  readonly points: readonly string[];
}

/**
 * The parameter exponent α, by least squares in log space over every part of every point: each RL point gives a
 * rollout and an update observation, each SFT point an update one; tokens, devices, bandwidth (rollout) or TFLOPS
 * and RL_UPDATE_WORK (update) are divided out, and rollout and update each get their own constant, so α is the
 * slope shared within the two groups. Clamped to [0, 1]: a bigger model is never faster, and never slower than
 * in proportion to its parameters.
 */
export function exponentFit(points: readonly CalibrationPoint[] = CALIBRATION, devices: DeviceTable = DEVICES): ExponentFit {
  const groups: { x: number; y: number }[][] = [[], []];
  for (const c of points) {
    const d = devices[c.device];
    const x = Math.log(c.params);
    if (c.phase === "rl") groups[0]!.push({ x, y: Math.log(rolloutOf(c) / (c.tokensPerStep / (c.devices * d.bandwidthTBps))) });
    const work = c.phase === "rl" ? RL_UPDATE_WORK : 1;
    groups[1]!.push({ x, y: Math.log(updateOf(c) / (work * c.tokensPerStep / (c.devices * d.tflops))) });
  }
  let sxy = 0;
  let sxx = 0;
  for (const g of groups) {
    if (g.length === 0) continue;
    const mx = g.reduce((s, o) => s + o.x, 0) / g.length;
    const my = g.reduce((s, o) => s + o.y, 0) / g.length;
    for (const o of g) { sxy += (o.x - mx) * (o.y - my); sxx += (o.x - mx) ** 2; }
  }
  const unclamped = sxx > 1e-12 ? sxy / sxx : undefined;
  return { alpha: Math.min(1, Math.max(0, unclamped ?? 0)), unclamped, points: points.map((c) => c.id) };
}

export const PARAMS_EXPONENT = exponentFit().alpha;

/** Step time of a workload scaled from the given published points (pure; the CLI uses CALIBRATION and DEVICES). */
export function predictStepSeconds(w: StepWorkload, points: readonly CalibrationPoint[] = CALIBRATION, devices: DeviceTable = DEVICES): StepTime {
  const samePhase = points.filter((c) => c.phase === w.phase);
  const pool = samePhase.length > 0 ? samePhase : points.filter((c) => c.phase === "rl");
  if (pool.length === 0) throw new Error(`no calibration point can scale a ${w.phase} step`);
  const cal = pool.reduce((best, c) => (distance(w, c) < distance(w, best) ? c : best));
  const alpha = exponentFit(points, devices).alpha;
  const assumptions: string[] = [];
  const d0 = devices[cal.device];
  const d = w.device === undefined ? d0 : devices[w.device];
  const scale = (w.params / cal.params) ** alpha * (w.tokensPerStep / cal.tokensPerStep) * (cal.devices / w.devices);
  // An SFT step scaled from an RL point takes the RL update part without the extra log-prob passes.
  const work = cal.phase === w.phase ? 1 : w.phase === "sft" ? 1 / RL_UPDATE_WORK : RL_UPDATE_WORK;
  const update = updateOf(cal) * work * scale * (d0.tflops / d.tflops);
  let rollout = w.phase === "rl" ? rolloutOf(cal) * scale * (d0.bandwidthTBps / d.bandwidthTBps) : 0;
  let sigma = Math.log(BASE_SPREAD) + 0.15 * lnRatio(w.params, cal.params) + 0.1 * lnRatio(w.tokensPerStep, cal.tokensPerStep) + 0.1 * lnRatio(w.devices, cal.devices);
  if (cal.phase !== w.phase) {
    sigma += Math.log(2);
    assumptions.push(`no ${w.phase.toUpperCase()} point: scaled from the update part of the RL point ${cal.id} ÷ ${RL_UPDATE_WORK.toFixed(2)} (no old/reference log-prob passes), range widened ×2`);
  }
  if (w.device === undefined) {
    sigma += Math.log(2);
    assumptions.push(`device speed unknown: assumed equal to the calibration device (${d0.name}), range widened ×2`);
  } else if (w.device !== cal.device) {
    sigma += Math.log(2);
    assumptions.push(`${d.name} scaled from ${d0.name}: rollout (decode, memory-bound) by memory bandwidth ${d.bandwidthTBps}/${d0.bandwidthTBps} TB/s (${d.bandwidthSource}), update (training, compute-bound) by dense FP16/BF16 TFLOPS ${d.tflops}/${d0.tflops} (${d.source}); spec ratios leave out the software stack's efficiency, so the range is widened ×2`);
  }
  let expected = update + rollout;
  if (w.nodes > 1) {
    expected /= 0.9;
    rollout /= 0.9;
    sigma += 0.1 * Math.log2(w.nodes);
    assumptions.push(`${w.nodes} nodes: 90% scaling efficiency assumed across nodes`);
  }
  if (w.speculative === true) {
    expected *= SPECULATIVE_FACTOR;
    rollout *= SPECULATIVE_FACTOR;
    assumptions.push("speculative decoding: step time × 0.75 (seed 001 SD extension: 25% shorter steps)");
  }
  const k = Math.exp(sigma);
  const seconds = range(expected / k, expected, expected * k);
  const share = rollout / expected;
  return {
    seconds,
    calibration: cal,
    ...(w.phase === "rl" ? { rolloutSeconds: range(seconds.low * share, seconds.expected * share, seconds.high * share) } : {}),
    assumptions,
  };
}

export function modelStepSeconds(w: StepWorkload): StepTime {
  return predictStepSeconds(w);
}

/** A measured step time: ±10% run to run, and up to +30% as responses grow longer during RL. */
export function measuredStepSeconds(seconds: number): Range {
  return range(seconds * 0.9, seconds, seconds * 1.3);
}

export interface HeldOut {
  readonly point: CalibrationPoint;
  readonly measured: number;
  /** Predicted from the other points only. */
  readonly predicted: Range;
  /** measured ÷ predicted (expected). */
  readonly ratio: number;
  readonly inside: boolean;
  readonly anchor: string;
  readonly alpha: number;
}

/** Each point predicted from the others (its own hardware, one node): the model's error on figures it was not built from. */
export function leaveOneOut(points: readonly CalibrationPoint[] = CALIBRATION, devices: DeviceTable = DEVICES): readonly HeldOut[] {
  return points.map((p) => {
    const rest = points.filter((c) => c !== p);
    const t = predictStepSeconds({ phase: p.phase, params: p.params, tokensPerStep: p.tokensPerStep, devices: p.devices, nodes: 1, device: p.device }, rest, devices);
    return {
      point: p, measured: p.seconds, predicted: t.seconds, ratio: p.seconds / t.seconds.expected,
      inside: t.seconds.low <= p.seconds && p.seconds <= t.seconds.high, anchor: t.calibration.id, alpha: exponentFit(rest, devices).alpha,
    };
  });
}

const fmtSeconds = (s: number) => (s >= 100 ? s.toFixed(0) : s >= 10 ? s.toFixed(1) : s.toFixed(2));

/** The calibration table of docs/cost.md, as Markdown (the test checks the docs carry exactly this). */
export function calibrationTableMarkdown(points: readonly CalibrationPoint[] = CALIBRATION, devices: DeviceTable = DEVICES): string {
  const rows = leaveOneOut(points, devices).map((h) => {
    const p = h.point;
    const measured = `${fmtSeconds(p.seconds)}${p.rolloutShare === undefined ? "" : ` (rollout ${(p.rolloutShare * 100).toFixed(0)}%)`}`;
    const predicted = `${fmtSeconds(h.predicted.expected)} (${fmtSeconds(h.predicted.low)}–${fmtSeconds(h.predicted.high)})`;
    return `| ${p.id} | ${p.phase.toUpperCase()} | ${p.model} | ${p.hardware} | ${p.batch} | ${p.lengths} | ${measured} | ${predicted} from ${h.anchor}, α ${h.alpha.toFixed(2)} | ${h.ratio.toFixed(2)} | ${h.inside ? "yes" : "**no**"} | ${p.source}; ${p.date} |`;
  });
  return [
    "| point | phase | model | hardware | batch per step | prompt + response (tokens) | measured s/step | held-out prediction s/step (range) | measured ÷ predicted | in range | source; date |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
}

/**
 * The two-point derivation the model started from (seed 001's RL update part against seed 003's SFT step): the α that
 * makes the SFT point predict the RL update, and how far a linear model (α = 1) misses it (≈10×). Kept as evidence that
 * step time grows far slower than parameter count; the model itself uses exponentFit over all points.
 */
export function paramsExponentFit(): { readonly alpha: number; readonly published: number; readonly predictedLinear: number; readonly linearError: number } {
  const rl = CALIBRATION.find((c) => c.id === "seed-001-qwen3-1.7b-grpo")!;
  const sft = CALIBRATION.find((c) => c.phase === "sft")!;
  const published = updateOf(rl);
  const rest = sft.seconds * (rl.tokensPerStep / sft.tokensPerStep) * (sft.devices / rl.devices) * (DEVICES[sft.device].tflops / DEVICES[rl.device].tflops) * RL_UPDATE_WORK;
  const alpha = Math.log(published / rest) / Math.log(rl.params / sft.params);
  const predictedLinear = rest * (rl.params / sft.params);
  return { alpha, published, predictedLinear, linearError: published / predictedLinear };
}
