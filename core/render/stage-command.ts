// What a rendered stage is: the program verl (or rlpipe) runs and the files it needs. A module of its own so that
// the renderers (stages, score) and their consumers (storage, launch) share it without importing one another.
import type { Stage } from "../recipe/schema.js";

export interface StageCommand {
  readonly id: string;
  readonly type: Stage["type"];
  /** argv as the program receives it (after shell quote removal). */
  readonly argv: readonly string[];
  /** Hydra overrides (a suffix of argv) for verl stages: what the conformance test composes. */
  readonly overrides: readonly string[];
  /** verl config the overrides compose against (ppo_trainer, sft_trainer, …); undefined for merge. */
  readonly hydraConfig?: string;
  /** Where the stage writes its output (checkpoint dir, merged model dir). */
  readonly output?: string;
  readonly env: Readonly<Record<string, string>>;
  readonly envPresets: readonly string[];
  readonly logFile?: string;
  /** Generated files this stage needs (tool config YAML), relative to workDir. */
  readonly files: readonly { readonly path: string; readonly content: string }[];
}
