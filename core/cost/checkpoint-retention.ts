// Which checkpoints a training stage leaves in object storage, and for how long each is held while the stage runs:
// verl saves every save_freq steps and at the last step (the SFT trainer always at the last), and the recipe's
// checkpoints.keep retires the older ones as rlpipe sync does (core/checkpoints.ts stepsToDelete). Pure.
import type { Recipe } from "../recipe/schema.js";

export interface RetentionPolicyText {
  readonly last?: number;
  readonly every?: number;
  /** Which retention is assumed: short, for the storage line's label ("keep all", "keep last 5"), and in full. */
  readonly label: string;
  readonly text: string;
}

/** The recipe's retention, as rlpipe renders it (verl's max_*_ckpt_to_keep and rlpipe sync --keep-last/--keep-every). */
export function retentionOf(recipe: Recipe): RetentionPolicyText {
  const keep = recipe.checkpoints?.keep;
  if (keep?.last === undefined) {
    // stepsToDelete deletes nothing without keepLast: keep.every alone keeps every checkpoint too.
    return { ...(keep?.every === undefined ? {} : { every: keep.every }), label: "retention: keep all", text: "every checkpoint kept: no checkpoints.keep.last, so verl's max_actor_ckpt_to_keep is unset (verl keeps all) and rlpipe sync deletes none" };
  }
  const every = keep.every === undefined ? "" : ` and every step divisible by ${keep.every} (checkpoints.keep.every)`;
  const label = `retention: keep last ${keep.last}${keep.every === undefined ? "" : ` + every ${keep.every}th step`}`;
  return { last: keep.last, ...(keep.every === undefined ? {} : { every: keep.every }), label, text: `the newest ${keep.last} kept (checkpoints.keep.last: verl's max_actor_ckpt_to_keep, rlpipe sync --keep-last)${every}` };
}

export interface StageCheckpoints {
  /** Checkpoints the stage writes. */
  readonly saved: number;
  /** Checkpoints still in storage when the stage ends. */
  readonly retained: number;
  /** Σ over checkpoints of the steps each is held before the stage ends (× hours per step = checkpoint-hours). */
  readonly heldSteps: number;
}

/** The steps at which a stage of `steps` steps saves: every saveEvery, and the last (always for SFT, with saveEvery for RL). */
export function saveSteps(steps: number, saveEvery: number | undefined, type: "rl" | "sft"): number[] {
  const out: number[] = [];
  if (saveEvery !== undefined && saveEvery > 0) for (let s = saveEvery; s <= steps; s += saveEvery) out.push(s);
  if ((saveEvery !== undefined || type === "sft") && steps > 0 && out[out.length - 1] !== steps) out.push(steps);
  return out;
}

export function stageCheckpoints(steps: number, saveEvery: number | undefined, type: "rl" | "sft", policy: Pick<RetentionPolicyText, "last" | "every">): StageCheckpoints {
  const saves = saveSteps(Math.round(steps), saveEvery, type);
  const end = Math.round(steps);
  let retained = 0;
  let heldSteps = 0;
  saves.forEach((at, i) => {
    const kept = policy.last === undefined || (policy.every !== undefined && at % policy.every === 0);
    // Retired when the policy's last-th newer checkpoint is committed, as rlpipe sync retires after each commit.
    const retiredAt = kept ? undefined : saves[i + policy.last!];
    if (retiredAt === undefined) retained += 1;
    heldSteps += (retiredAt ?? end) - at;
  });
  return { saved: saves.length, retained, heldSteps };
}
