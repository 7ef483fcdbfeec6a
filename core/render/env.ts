// Environment for the job: named presets (the Ascend set the seed scripts export) plus the recipe's own maps.
import type { RecipePath } from "../errors.js";
import type { Recipe } from "../recipe/schema.js";
import { type RenderContext, report } from "./context.js";
import { isPlainEnvValue } from "./shell.js";

/** One line of environment setup: export a variable, or source a vendor script (which may read earlier exports). */
export type EnvStep = { readonly export: readonly [string, string] } | { readonly source: string };

export interface EnvBlock {
  readonly steps: readonly EnvStep[];
}

interface Preset {
  readonly sources: readonly string[];
  readonly vars: readonly (readonly [string, string])[];
  /** Variables the recipe's env may set to change the preset (exported before it runs). */
  readonly inputs?: readonly string[];
}

type PresetName = NonNullable<Recipe["runtime"]["envPresets"]>[number];

export function presetEnv(name: PresetName, recipe: Recipe): Preset {
  switch (name) {
    case "ascend-toolkit":
      // CANN's own setup scripts; ASCEND_HOME_PATH may be overridden to a non-default CANN install.
      return {
        vars: [["ASCEND_HOME_PATH", "${ASCEND_HOME_PATH:-/usr/local/Ascend/ascend-toolkit}"]],
        inputs: ["ASCEND_HOME_PATH"],
        sources: ["$ASCEND_HOME_PATH/set_env.sh", "$(dirname \"$ASCEND_HOME_PATH\")/nnal/atb/set_env.sh"],
      };
    case "ascend-hccl":
      // run_toolcall_sft_demo.sh / run_qwen3_4b_*_npu.sh in hicann/cann-recipes-train
      return {
        sources: [],
        vars: [
          ["HYDRA_FULL_ERROR", "1"],
          ["ASCEND_LAUNCH_BLOCKING", "0"],
          ["RAY_DEDUP_LOGS", "1"],
          ["ASCEND_RT_VISIBLE_DEVICES", Array.from({ length: recipe.resources.devicesPerNode }, (_, i) => String(i)).join(",")],
          ["ASCEND_GLOBAL_EVENT_ENABLE", "0"],
          ["ASCEND_SLOG_PRINT_TO_STDOUT", "0"],
          ["ASCEND_GLOBAL_LOG_LEVEL", "3"],
          ["HCCL_CONNECT_TIMEOUT", "360"],
          ["HCCL_EXEC_TIMEOUT", "360"],
          ["HCCL_IF_BASE_PORT", "64033"],
          ["CUDA_DEVICE_MAX_CONNECTIONS", "1"],
        ],
      };
    case "cuda-compat":
      // TI-ONE's image needs the CUDA forward-compat libraries first ("force cuda12.8", seed 004).
      return { sources: [], vars: [["LD_LIBRARY_PATH", "/usr/local/cuda/compat:$LD_LIBRARY_PATH"]] };
  }
}

/**
 * Presets then explicit variables, in script order. A recipe variable a preset takes as input (such as
 * ASCEND_HOME_PATH for a non-default CANN) is exported before that preset; every other one after all presets.
 */
export function envBlock(ctx: RenderContext, presets: readonly PresetName[] | undefined, env: Readonly<Record<string, string>> | undefined, at: RecipePath): EnvBlock {
  const own = new Map<string, string>();
  for (const [k, v] of Object.entries(env ?? {})) {
    if (!isPlainEnvValue(v)) {
      report(ctx, "error", [...at, k], "unsafe_env_value", "environment values may reference $NAME or ${NAME} but not run commands ($(…), backticks) or use ${…} operators",
        "compute the value in the dataset build step or in the image instead");
      continue;
    }
    own.set(k, v);
  }
  const steps: EnvStep[] = [];
  const done = new Set<string>();
  for (const p of presets ?? []) {
    const b = presetEnv(p, ctx.recipe);
    for (const k of b.inputs ?? []) {
      const v = own.get(k);
      if (v !== undefined && !done.has(k)) { steps.push({ export: [k, v] }); done.add(k); }
    }
    for (const kv of b.vars) if (!done.has(kv[0]) && !own.has(kv[0])) steps.push({ export: kv });
    for (const src of b.sources) steps.push({ source: src });
  }
  for (const [k, v] of own) if (!done.has(k)) steps.push({ export: [k, v] });
  return { steps };
}
