// How long the run goes as verl will run it (steps per training stage and wall-clock hours and days), and what is
// flagged about it: a run beyond MAX_RUN_DAYS, or a stage priced far past the length its published run went.
// Also the steps rlpipe cost --steps asks for, resolved to stage ids. Pure.
import { RlpipeError } from "../errors.js";
import type { Recipe } from "../recipe/schema.js";
import { mul, roundRange } from "./range.js";
import { fmtRange } from "./recipe-facts.js";
import type { RunLength } from "./types.js";
import type { Workload } from "./workload.js";

/** A run expected to take longer than this is flagged (days, expected figure). */
export const MAX_RUN_DAYS = 60;
/** A stage priced at more than this many times its published length is flagged. */
export const PUBLISHED_STEPS_FACTOR = 3;

/** rlpipe cost --steps: `training` for the RL stages (else the SFT stages, as --step-seconds), `stages` by id (wins). */
export interface StepsOverride {
  readonly training?: number;
  readonly stages?: Readonly<Record<string, number>>;
}

/** The stages a bare --steps N prices: the RL stages, else the SFT stages. */
function defaultStepStages(recipe: Recipe): string[] {
  const rl = recipe.stages.filter((s) => s.type === "rl").map((s) => s.id);
  return rl.length > 0 ? rl : recipe.stages.filter((s) => s.type === "sft").map((s) => s.id);
}

/** --steps resolved to training stage ids; a named stage must exist and train (RL or SFT). */
export function stepsByStage(recipe: Recipe, override: StepsOverride | undefined): Record<string, number> {
  const out: Record<string, number> = {};
  if (override === undefined) return out;
  if (override.training !== undefined) {
    const ids = defaultStepStages(recipe);
    if (ids.length === 0) {
      throw new RlpipeError("cost_steps_no_training_stage", `--steps ${override.training}: recipe ${recipe.metadata.name} has no RL or SFT stage to price it for`, { exitCode: 2, hint: "--steps prices training steps; remove it" });
    }
    for (const id of ids) out[id] = override.training;
  }
  for (const [id, steps] of Object.entries(override.stages ?? {})) {
    const stage = recipe.stages.find((s) => s.id === id);
    if (stage === undefined) {
      throw new RlpipeError("cost_unknown_stage", `--steps ${id}=${steps}: no stage has id ${id}`, { exitCode: 2, hint: `stage ids: ${recipe.stages.map((s) => s.id).join(", ")}` });
    }
    if (stage.type !== "rl" && stage.type !== "sft") {
      throw new RlpipeError("cost_steps_not_training", `--steps ${id}=${steps}: stage ${id} is a ${stage.type} stage, which has no training steps`, { exitCode: 2, hint: "name an RL or SFT stage" });
    }
    out[id] = steps;
  }
  return out;
}

const count = (n: number) => String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ",");

/** What to set for `steps` on a stage: the recipe field, or the --steps form that reaches it. */
function whatToSet(recipe: Recipe, stageId: string, steps: number): string {
  const bare = defaultStepStages(recipe);
  const flag = bare.length === 1 && bare[0] === stageId ? `--steps ${steps}` : `--steps ${stageId}=${steps}`;
  return `set schedule.totalTrainingSteps: ${steps} on stage ${stageId} (verl stops there), or price that length with ${flag}`;
}

export function runLengthOf(recipe: Recipe, work: Workload, maxDays = MAX_RUN_DAYS): RunLength {
  const hours = roundRange(work.hours);
  const days = roundRange(mul(work.hours, 1 / 24));
  const trained = work.stages.filter((s) => s.steps !== undefined);
  const stages = trained.map((s) => ({ stage: s.id, steps: roundRange(s.steps!), source: s.stepsSource ?? "⌊rows / batch⌋ × epochs" }));
  const flags: string[] = [];
  const main = [...trained].sort((a, b) => b.hours.expected - a.hours.expected)[0];
  if (days.expected > maxDays && main !== undefined && main.steps!.expected > 0) {
    const otherHours = work.hours.expected - main.hours.expected;
    // Steps of the longest stage that fit the bound with the other stages as they are (time ∝ steps).
    const fit = Math.floor((main.steps!.expected * (maxDays * 24 - otherHours)) / main.hours.expected);
    const why = `the run is expected to take ${count(days.expected)} days (${fmtRange(days)}), beyond ${maxDays} days: stage ${main.id} runs ${count(main.steps!.expected)} steps (${main.stepsSource ?? "⌊rows / batch⌋ × epochs"})`;
    flags.push(fit >= 1
      ? `${why}; ${count(fit)} steps fit in ${maxDays} days — ${whatToSet(recipe, main.id, fit)}`
      : `${why}; the other stages alone take ${count(otherHours / 24)} days — shorten them (schedule.totalTrainingSteps, epochs) or check the step time (cost.stages.<id>.stepSeconds)`);
  }
  for (const s of trained) {
    const published = recipe.cost?.stages?.[s.id]?.publishedSteps;
    if (published === undefined || s.steps!.expected <= PUBLISHED_STEPS_FACTOR * published) continue;
    const source = recipe.cost?.stages?.[s.id]?.publishedSource;
    flags.push(`stage ${s.id}: ${count(s.steps!.expected)} steps priced, ${Number((s.steps!.expected / published).toPrecision(2))}× the ${count(published)} its published run went${source === undefined ? "" : ` (${source})`} — ${whatToSet(recipe, s.id, published)}`);
  }
  return { hours, days, stages, flags, maxDays };
}
