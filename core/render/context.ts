// What every renderer needs: the recipe, the verl profile, where the job runs, reference resolution and
// a place to report issues.
import type { RecipeIssue, RecipePath } from "../errors.js";
import type { Interpolator } from "../recipe/interpolate.js";
import type { VerlProfile } from "../recipe/profiles.js";
import type { EvalStage, Provider, Recipe, RlStage, SftStage } from "../recipe/schema.js";
import { didYouMean } from "../recipe/suggest.js";
import { HydraFloat, type Override, type RenderValue } from "./hydra.js";

export interface RenderContext {
  readonly recipe: Recipe;
  readonly profile: VerlProfile;
  readonly provider: Provider;
  /** Absolute directory the stages run in, inside the job. */
  readonly workDir: string;
  readonly interp: Interpolator;
  readonly issues: RecipeIssue[];
  /** RL stages also log to verl's `file` backend (their metrics are persisted: see render/storage.ts). */
  readonly metricsToFile?: boolean;
}

/** verl's own trainer.logger default, which an RL stage that states none gets (plus `file` when metrics persist). */
const VERL_DEFAULT_LOGGERS = ["console", "wandb"] as const;

/**
 * The logger backends a stage renders (trainer.logger): the stage's, else the recipe's, as written; for an RL stage
 * whose metrics persist, with `file` added (to verl's default list when none is stated). Undefined: not rendered.
 */
export function stageLoggers(ctx: RenderContext, stage: SftStage | RlStage | EvalStage): readonly string[] | undefined {
  const stated = stage.logging?.backends ?? ctx.recipe.logging?.backends;
  if (stage.type !== "rl" || ctx.metricsToFile !== true) return stated;
  const list: readonly string[] = stated ?? VERL_DEFAULT_LOGGERS;
  return list.includes("file") ? list : [...list, "file"];
}

export function report(ctx: RenderContext, severity: "error" | "warning", path: RecipePath, code: string, message: string, hint?: string): void {
  ctx.issues.push({ severity, code, path, message, ...(hint === undefined ? {} : { hint }) });
}

/** A stage's `model`: a key of `models` or a `${…}` reference such as ${stages.merge.output}. */
export function modelPath(ctx: RenderContext, model: string, path: RecipePath): string {
  if (model.includes("${")) return ctx.interp.resolve(model, path);
  const m = ctx.recipe.models[model];
  if (m === undefined) {
    const keys = Object.keys(ctx.recipe.models);
    report(ctx, "error", path, "unknown_model", `unknown model ${JSON.stringify(model)}`,
      didYouMean(model, keys) ?? (keys.length > 0 ? `models defined: ${keys.join(", ")}; or use \${stages.<id>.output}` : "define it under `models:` or use ${stages.<id>.output}"));
    return "";
  }
  return ctx.interp.resolve(m.path, ["models", model, "path"]);
}

/** A dataset's path as verl's data.*_files value: a plain string, or a list when the recipe gives one. */
export function datasetFiles(ctx: RenderContext, key: string, path: RecipePath): string | string[] {
  const ds = ctx.recipe.datasets[key];
  if (ds === undefined) {
    const keys = Object.keys(ctx.recipe.datasets);
    report(ctx, "error", path, "unknown_dataset", `unknown dataset ${JSON.stringify(key)}`,
      didYouMean(key, keys) ?? (keys.length > 0 ? `datasets defined: ${keys.join(", ")}` : "define it under `datasets:`"));
    return "";
  }
  const at: RecipePath = ["datasets", key, "path"];
  return typeof ds.path === "string" ? ctx.interp.resolve(ds.path, at) : ds.path.map((p, i) => ctx.interp.resolve(p, [...at, i]));
}

/** Ordered Hydra overrides; undefined values are skipped so only what the recipe states is rendered. */
export class OverrideList {
  readonly items: Override[] = [];
  /** Recipe path each key came from, for messages about conflicts. */
  readonly origins = new Map<string, RecipePath>();

  set(key: string, value: RenderValue | undefined, origin: RecipePath): void {
    if (value === undefined) return;
    const i = this.items.findIndex((o) => bareKey(o.key) === bareKey(key));
    if (i >= 0) this.items[i] = { key, value };
    else this.items.push({ key, value });
    this.origins.set(bareKey(key), origin);
  }

  float(key: string, value: number | undefined, origin: RecipePath): void {
    this.set(key, value === undefined ? undefined : new HydraFloat(value), origin);
  }

  has(key: string): boolean {
    return this.items.some((o) => bareKey(o.key) === bareKey(key));
  }

  /**
   * Apply a stage's raw `overrides` map, sorted by key. A key rlpipe already renders is replaced in place
   * (Hydra would reject the duplicate) and reported, so the author sees which recipe field lost.
   */
  applyRaw(ctx: RenderContext, raw: Readonly<Record<string, RenderValue>> | undefined, at: RecipePath): void {
    if (raw === undefined) return;
    for (const key of Object.keys(raw).sort()) {
      const value = raw[key]!;
      const origin = this.origins.get(bareKey(key));
      if (origin !== undefined) {
        report(ctx, "warning", [...at, key], "override_replaces", `replaces the value rlpipe renders from ${formatOrigin(origin)}`,
          "set the recipe field instead of overriding it, unless the raw value is intended");
      }
      if (key.startsWith("~")) {
        const i = this.items.findIndex((o) => bareKey(o.key) === bareKey(key));
        if (i >= 0) this.items.splice(i, 1);
        this.items.push({ key, value: null });
        continue;
      }
      this.set(key, value, [...at, key]);
    }
  }

  words(format: (o: Override) => string): string[] {
    return this.items.map((o) => (o.key.startsWith("~") ? o.key : format(o)));
  }
}

export function bareKey(key: string): string {
  return key.replace(/^(\+\+|\+|~)/, "");
}

function formatOrigin(path: RecipePath): string {
  return path.map((p) => (typeof p === "number" ? `[${p}]` : `.${p}`)).join("").replace(/^\./, "");
}
