// `${...}` references in recipe strings: ${workDir}, ${name}, ${sandbox.url}, ${stages.<id>.output},
// ${models.<key>.path}, ${datasets.<key>.path}. `${oc.…}` is left for OmegaConf to resolve inside verl;
// `$${` writes a literal `${`.
import type { RecipeIssue, RecipePath } from "../errors.js";
import type { Recipe, Stage } from "./schema.js";
import { didYouMean } from "./suggest.js";

const REF = /\$\$\{|\$\{([^}]*)\}/g;

export interface Scope {
  readonly recipe: Recipe;
  readonly workDir: string;
  readonly sandboxUrl: string | undefined;
}

export class Interpolator {
  private readonly resolving = new Set<string>();
  constructor(private readonly scope: Scope, private readonly issues: RecipeIssue[]) {}

  /** Resolve every reference in `s`; unknown references become issues at `path` and resolve to "". */
  resolve(s: string, path: RecipePath): string {
    return s.replace(REF, (whole, inner: string | undefined) => {
      if (inner === undefined) return "${"; // $${ escape
      const ref = inner.trim();
      if (ref.startsWith("oc.")) return whole;
      const value = this.lookup(ref, path);
      return value ?? "";
    });
  }

  /** Like resolve, for optional values. */
  maybe(s: string | undefined, path: RecipePath): string | undefined {
    return s === undefined ? undefined : this.resolve(s, path);
  }

  /** The directory (or file) a stage produces, which later stages reference as ${stages.<id>.output}. */
  stageOutput(id: string, from: RecipePath): string | undefined {
    const stages = this.scope.recipe.stages;
    const index = stages.findIndex((s) => s.id === id);
    const stage = stages[index];
    if (stage === undefined) {
      this.issue(from, "unknown_reference", `unknown stage ${JSON.stringify(id)}`, didYouMean(id, stages.map((s) => s.id)));
      return undefined;
    }
    const key = `stages.${id}.output`;
    if (this.resolving.has(key)) {
      this.issue(from, "reference_cycle", `\${${key}} refers to itself`);
      return undefined;
    }
    this.resolving.add(key);
    try {
      return this.outputOf(stage, ["stages", index]);
    } finally {
      this.resolving.delete(key);
    }
  }

  private outputOf(stage: Stage, at: RecipePath): string | undefined {
    switch (stage.type) {
      case "sft":
        return this.resolve(stage.outputDir, [...at, "outputDir"]);
      case "merge": {
        if (stage.targetDir !== undefined) return this.resolve(stage.targetDir, [...at, "targetDir"]);
        const src = this.stageOutput(stage.from.stage, [...at, "from", "stage"]);
        return src === undefined ? undefined : `${src}/global_step_${stage.from.step}/huggingface`;
      }
      case "rl": {
        if (stage.outputDir !== undefined) return this.resolve(stage.outputDir, [...at, "outputDir"]);
        const logging = { ...this.scope.recipe.logging, ...stage.logging };
        const dir = this.scope.recipe.checkpoints?.dir;
        if (dir !== undefined) return `${this.resolve(dir, ["checkpoints", "dir"]).replace(/\/+$/, "")}/${logging.experiment ?? stage.id}`;
        // verl's default trainer.default_local_dir: checkpoints/${project}/${experiment}
        return `checkpoints/${logging.project ?? "verl_examples"}/${logging.experiment ?? "gsm8k"}`;
      }
      case "eval":
        this.issue(at, "no_output", `stage ${JSON.stringify(stage.id)} (eval) has no output to reference`);
        return undefined;
    }
  }

  private lookup(ref: string, path: RecipePath): string | undefined {
    const { recipe } = this.scope;
    if (ref === "workDir") return this.scope.workDir;
    if (ref === "name") return recipe.metadata.name;
    if (ref === "sandbox.url") {
      if (this.scope.sandboxUrl === undefined) {
        this.issue(path, "unknown_reference", "${sandbox.url} is used but the recipe has no sandbox with a URL", "add a `sandbox:` section (kind, deploy, url or server)");
      }
      return this.scope.sandboxUrl;
    }
    const m = /^(stages|models|datasets)\.([A-Za-z][A-Za-z0-9_-]*)\.(output|path)$/.exec(ref);
    if (m !== null) {
      const [, group, key, field] = m as unknown as [string, string, string, string];
      if (group === "stages" && field === "output") return this.stageOutput(key, path);
      if (group === "models" && field === "path") {
        const model = recipe.models[key];
        if (model === undefined) return this.unknownKey(path, "model", key, Object.keys(recipe.models));
        return this.resolve(model.path, ["models", key, "path"]);
      }
      if (group === "datasets" && field === "path") {
        const ds = recipe.datasets[key];
        if (ds === undefined) return this.unknownKey(path, "dataset", key, Object.keys(recipe.datasets));
        if (typeof ds.path !== "string") {
          this.issue(path, "invalid_reference", `\${datasets.${key}.path} is a list and cannot be used inside a string`);
          return undefined;
        }
        return this.resolve(ds.path, ["datasets", key, "path"]);
      }
    }
    const known = ["workDir", "name", "sandbox.url",
      ...recipe.stages.map((s) => `stages.${s.id}.output`),
      ...Object.keys(recipe.models).map((k) => `models.${k}.path`),
      ...Object.keys(recipe.datasets).map((k) => `datasets.${k}.path`)];
    this.issue(path, "unknown_reference", `unknown reference \${${ref}}`, didYouMean(ref, known) ?? `known references: ${known.map((k) => `\${${k}}`).join(", ")}`);
    return undefined;
  }

  private unknownKey(path: RecipePath, what: string, key: string, keys: string[]): undefined {
    this.issue(path, "unknown_reference", `unknown ${what} ${JSON.stringify(key)}`, didYouMean(key, keys));
    return undefined;
  }

  private issue(path: RecipePath, code: string, message: string, hint?: string): void {
    this.issues.push({ severity: "error", code, path, message, ...(hint === undefined ? {} : { hint }) });
  }
}
