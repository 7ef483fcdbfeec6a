// TI-ONE's Ray runtime env as verl Hydra overrides. Its own module so that the stage renderer can use it without
// importing the request builder (core/render must not depend on what depends on it).
import type { RecipeIssue, RecipePath } from "../errors.js";
import type { Recipe } from "../recipe/schema.js";

export interface RayRuntimeEnvOverride {
  /** Hydra key with its `+` (the keys are absent from verl's ppo_trainer config). */
  readonly key: string;
  readonly value: string | readonly string[];
  readonly origin: RecipePath;
}

/**
 * One runtime_env value as verl 0.6.1 must receive it so that Ray expands `$NAME` on each node.
 *
 * verl's main_ppo merges ray_kwargs.ray_init.runtime_env into ray.init() through
 * `OmegaConf.to_container(ray_init_kwargs)` WITHOUT resolve, and Ray's update_envs() then runs
 * os.path.expandvars on each env_vars value in the worker's environment. So:
 * - `${NAME}` is an OmegaConf interpolation: the config fails to resolve (verl resolves it later) — not usable;
 * - the escaped `\${NAME}` resolves to `${NAME}` for OmegaConf, but the unresolved container keeps the
 *   backslash, and expandvars turns `a:\${X}` into `a:\/x/…` — a broken path (checked with verl 0.6.1's code
 *   path and Ray 2.60's update_envs in test/providers-tione.test.ts);
 * - the bare `$NAME` is no interpolation for OmegaConf and expandvars expands it: this is the form sent.
 * `${NAME}` is therefore rewritten to `$NAME`; that is only equivalent when no letter, digit or `_` follows.
 * Unverified on TI-ONE itself: the verl image ships Ray 2.49.2, and an unset `$NAME` stays literal.
 */
export function rayEnvValue(value: string): { readonly value: string } | { readonly problem: string } {
  let out = "";
  let i = 0;
  while (i < value.length) {
    const j = value.indexOf("${", i);
    if (j < 0) { out += value.slice(i); break; }
    out += value.slice(i, j);
    const end = value.indexOf("}", j + 2);
    if (end < 0) return { problem: "has an unclosed ${" };
    const name = value.slice(j + 2, end);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) return { problem: `uses \${${name}}, which Ray does not expand (only $NAME and \${NAME} references are supported)` };
    if (/^[A-Za-z0-9_]/.test(value.slice(end + 1))) return { problem: `\${${name}} is followed by a name character, so it cannot be passed as $${name}` };
    out += `$${name}`;
    i = end + 1;
  }
  return { value: out };
}

/**
 * targets.tione.runtimeEnv as verl Hydra overrides (`+ray_kwargs.ray_init.runtime_env.pip=[…]`,
 * `+ray_kwargs.ray_init.runtime_env.env_vars.K=V`), for every verl stage that starts Ray on provider tione.
 * workingDir is not among them: the start command changes into it (a Ray working_dir would upload the
 * directory). Issues are returned, not reported, so that a caller rendering several stages reports nothing
 * twice (the request builder reports them once).
 */
export function tioneRayRuntimeEnvOverrides(recipe: Recipe): { readonly overrides: readonly RayRuntimeEnvOverride[]; readonly issues: readonly RecipeIssue[] } {
  const env = recipe.targets?.tione?.runtimeEnv;
  const at: RecipePath = ["targets", "tione", "runtimeEnv"];
  const overrides: RayRuntimeEnvOverride[] = [];
  const issues: RecipeIssue[] = [];
  if (env?.pip !== undefined && env.pip.length > 0) overrides.push({ key: "+ray_kwargs.ray_init.runtime_env.pip", value: [...env.pip], origin: [...at, "pip"] });
  for (const name of Object.keys(env?.envVars ?? {}).sort()) {
    const r = rayEnvValue(env!.envVars![name]!);
    const origin: RecipePath = [...at, "envVars", name];
    if ("problem" in r) {
      issues.push({ severity: "error", code: "ray_env_value", path: origin, message: `the value ${r.problem}`, hint: "write $NAME (or ${NAME} followed by ':' or '/')" });
      continue;
    }
    overrides.push({ key: `+ray_kwargs.ray_init.runtime_env.env_vars.${name}`, value: r.value, origin });
  }
  return { overrides, issues };
}
