// What the recipe says about the work, for pricing: model sizes, dataset rows and steps per stage. Figures the
// recipe leaves out come from a small table of published facts about the seeds' datasets, or from a stated
// assumption — each returned with the sentence the report lists.
import { RlpipeError } from "../errors.js";
import type { Recipe, RlStage, SftStage, Stage } from "../recipe/schema.js";
import { exact, range } from "./range.js";
import type { Range } from "./types.js";

export interface Sourced<T> { readonly value: T; readonly basis: string }

// ---------------------------------------------------------------- models

export interface ModelSize {
  /** Parameters stored (checkpoint size). */
  readonly total: Range;
  /** Parameters active per token (compute); equal to total for dense models. */
  readonly active: Range;
  readonly basis: string;
}

const STAGE_OUTPUT = /^\$\{stages\.([A-Za-z][A-Za-z0-9_-]*)\.output\}$/;

/** The models key a stage's model resolves to, following ${stages.<id>.output} through merges and SFT stages. */
export function modelKeyOf(recipe: Recipe, stage: Stage, seen: ReadonlySet<string> = new Set()): string | undefined {
  const ref = "model" in stage ? stage.model : stage.type === "merge" ? `\${stages.${stage.from.stage}.output}` : undefined;
  if (ref === undefined) return undefined;
  const m = STAGE_OUTPUT.exec(ref);
  if (m === null) return ref;
  const from = recipe.stages.find((s) => s.id === m[1]);
  if (from === undefined || seen.has(from.id)) return undefined;
  return modelKeyOf(recipe, from, new Set([...seen, stage.id]));
}

/** Parameter count from a name such as Qwen3-1.7B, Qwen2.5-32B-Instruct or Qwen3-30B-A3B (MoE: 3B active). */
export function paramsFromName(name: string): { total: number; active: number } | undefined {
  const total = /(?:^|[-_/ ])(\d+(?:\.\d+)?)[Bb](?=$|[-_./ ])/.exec(name);
  if (total === null) return undefined;
  const active = /-A(\d+(?:\.\d+)?)[Bb](?=$|[-_./ ])/.exec(name);
  const t = Number(total[1]) * 1e9;
  return { total: t, active: active === null ? t : Number(active[1]) * 1e9 };
}

export const UNKNOWN_MODEL: Range = range(1e9, 7e9, 70e9);

export function modelSize(recipe: Recipe, stage: Stage): ModelSize {
  const key = modelKeyOf(recipe, stage);
  const model = key === undefined ? undefined : recipe.models[key];
  if (model?.params !== undefined) return { total: exact(model.params), active: exact(model.params), basis: `models.${key}.params = ${model.params}` };
  const name = model === undefined ? undefined : model.hf ?? model.path;
  const parsed = name === undefined ? undefined : paramsFromName(name);
  if (parsed !== undefined) {
    const moe = parsed.active !== parsed.total ? ` (MoE: ${parsed.active / 1e9}B active)` : "";
    return { total: exact(parsed.total), active: exact(parsed.active), basis: `${parsed.total / 1e9}B parameters, read from the model name ${name}${moe}` };
  }
  return {
    total: UNKNOWN_MODEL, active: UNKNOWN_MODEL,
    basis: `model size unknown for stage ${stage.id}: assumed 1–7–70B parameters (declare models.${key ?? "<key>"}.params)`,
  };
}

// ---------------------------------------------------------------- datasets

interface KnownDataset {
  readonly matches: (d: { readonly from?: string; readonly path: string }) => boolean;
  readonly rows: Range;
  readonly basis: string;
}

const pathText = (p: string | readonly string[]) => (typeof p === "string" ? p : p.join(" "));

/** Published facts about the seeds' datasets (shared/reference/recipes-and-verl.md §7–8, dataset cards). */
const KNOWN_DATASETS: readonly KnownDataset[] = [
  {
    matches: (d) => /DAPO-Math-17k/i.test(`${d.from ?? ""} ${d.path}`),
    rows: range(1_791_488, 1_791_744, 1_791_999),
    basis: "DAPO-Math-17k: 3499 steps per epoch at 512 prompts per step (seed 003) ⇒ 1,791,488–1,791,999 rows (≈17.9k problems repeated)",
  },
  {
    matches: (d) => /aime[_-]?202[45]/i.test(d.path),
    rows: exact(30),
    basis: "AIME 2024/2025: 30 problems each",
  },
  {
    matches: (d) => /PrimeIntellect\/verifiable-coding-problems/.test(d.from ?? "") && /valid/i.test(d.path),
    rows: range(89, 177, 354),
    basis: "verifiable-coding-problems validation split: 1% of the Python problems kept by build_dataset.py (≤35,735 Python problems per open-r1/verifiable-coding-problems-python; the ≥5-test-case filter keeps an assumed 25–50–100%)",
  },
  {
    matches: (d) => /PrimeIntellect\/verifiable-coding-problems/.test(d.from ?? ""),
    rows: range(8_845, 17_689, 35_378),
    basis: "verifiable-coding-problems train split: 99% of the Python problems kept by build_dataset.py (≤35,735 Python problems per open-r1/verifiable-coding-problems-python; the ≥5-test-case filter keeps an assumed 25–50–100%)",
  },
  {
    matches: (d) => /Open-AgentRL-SFT-3K/i.test(d.from ?? ""),
    rows: range(750, 1_500, 3_000),
    basis: "Open-AgentRL-SFT-3K: ≤3,000 rows (the dataset's name); filter_sft_data.py keeps an assumed 25–50–100%",
  },
];

export const UNKNOWN_ROWS: Range = range(1_000, 10_000, 100_000);

export function datasetRows(recipe: Recipe, key: string): Sourced<Range> {
  const ds = recipe.datasets[key];
  if (ds === undefined) return { value: UNKNOWN_ROWS, basis: `dataset ${key} is not declared: assumed 1k–10k–100k rows` };
  if (ds.rows !== undefined) return { value: exact(ds.rows), basis: `datasets.${key}.rows = ${ds.rows}` };
  const known = KNOWN_DATASETS.find((k) => k.matches({ ...(ds.build?.from === undefined ? {} : { from: ds.build.from }), path: pathText(ds.path) }));
  if (known !== undefined) return { value: known.rows, basis: `datasets.${key}: ${known.basis}` };
  return { value: UNKNOWN_ROWS, basis: `datasets.${key} has no row count: assumed 1k–10k–100k rows (declare datasets.${key}.rows)` };
}

// ---------------------------------------------------------------- steps

const floorDiv = (r: Range, d: number): Range => range(Math.floor(r.low / d), Math.floor(r.expected / d), Math.floor(r.high / d));

/** The step cap verl gets: schedule.totalTrainingSteps, else a trainer.total_training_steps override. */
function stepCap(stage: RlStage | SftStage): { steps: number; field: string } | undefined {
  const own = stage.schedule?.totalTrainingSteps;
  if (own !== undefined) return { steps: own, field: "schedule.totalTrainingSteps" };
  for (const key of ["trainer.total_training_steps", "+trainer.total_training_steps", "++trainer.total_training_steps"]) {
    const v = stage.overrides?.[key];
    if (typeof v === "number" && Number.isInteger(v) && v > 0) return { steps: v, field: `overrides.${key}` };
    if (typeof v === "string" && /^\d+$/.test(v) && Number(v) > 0) return { steps: Number(v), field: `overrides.${key}` };
  }
  return undefined;
}

/** A training stage's steps, where the figure comes from in a few words (RunLength.stages[].source), and the sentence the report lists. */
export interface StageSteps extends Sourced<Range> { readonly source: string }

/**
 * Steps a training stage runs, as verl runs it: ⌊rows / batch⌋ (verl's loaders drop the last partial batch) × epochs,
 * stopped early at trainer.total_training_steps when the recipe sets it. A step count given for pricing wins:
 * `forced` (rlpipe cost --steps), then cost.stages.<id>.steps.
 */
export function stageSteps(recipe: Recipe, stage: RlStage | SftStage, forced?: number): StageSteps {
  if (forced !== undefined) return { value: exact(forced), source: "--steps", basis: `stage ${stage.id}: ${forced} steps (rlpipe cost --steps)` };
  const priced = recipe.cost?.stages?.[stage.id]?.steps;
  if (priced !== undefined) return { value: exact(priced), source: `cost.stages.${stage.id}.steps`, basis: `cost.stages.${stage.id}.steps = ${priced}` };
  const rows = datasetRows(recipe, stage.data.train);
  const batch = stage.type === "sft" ? stage.batch.global : stage.data.promptsPerStep;
  const epochs = stage.type === "sft" ? stage.schedule.epochs : stage.schedule?.epochs ?? 1;
  const steps = floorDiv(rows.value, batch);
  const total = range(steps.low * epochs, steps.expected * epochs, steps.high * epochs);
  if (total.low < 1) {
    throw new RlpipeError("cost_no_steps", `stage ${stage.id}: ${rows.value.low} rows at ${batch} per step give no full step`, {
      exitCode: 2, hint: `check datasets.${stage.data.train}.rows or set cost.stages.${stage.id}.steps`,
    });
  }
  const epochText = `⌊rows / ${batch}⌋ × ${epochs} epoch${epochs === 1 ? "" : "s"} = ${fmtRange(total)} steps (${rows.basis})`;
  const cap = stepCap(stage);
  if (cap === undefined) return { value: total, source: "⌊rows / batch⌋ × epochs", basis: `stage ${stage.id}: ${epochText}` };
  const capped = range(Math.min(cap.steps, total.low), Math.min(cap.steps, total.expected), Math.min(cap.steps, total.high));
  const binds = capped.expected === cap.steps;
  return {
    value: capped,
    source: binds ? "trainer.total_training_steps in the recipe" : "⌊rows / batch⌋ × epochs (before trainer.total_training_steps)",
    basis: `stage ${stage.id}: ${fmtRange(capped)} steps — verl stops at trainer.total_training_steps = ${cap.steps} (${cap.field}) or at the end of the epochs, whichever comes first; ${epochText}`,
  };
}

export function fmtRange(r: Range, digits = 4): string {
  const f = (v: number) => (Number.isInteger(v) ? String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ",") : Number(v.toPrecision(digits)).toString());
  return r.low === r.high ? f(r.expected) : `${f(r.low)}–${f(r.expected)}–${f(r.high)}`;
}
