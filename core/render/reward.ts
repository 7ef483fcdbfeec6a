// The reward function a recipe uses: its own (reward.fn.path), or — with sandbox.kind rlpipe — the bundled
// standard-library shim that calls rlpipe's /v1/rewards.
import type { JsonValue } from "../recipe/fields.js";
import { type RenderContext, report } from "./context.js";

export const SHIM_FILE = "rlpipe_reward.py";

export interface RewardFn {
  readonly path: string;
  readonly name: string;
  readonly kwargs: Readonly<Record<string, JsonValue>>;
  readonly acceptsKwargs: boolean | undefined;
  /** The bundle must carry the shim. */
  readonly shim: boolean;
}

export function resolveRewardFn(ctx: RenderContext): RewardFn | undefined {
  const fn = ctx.recipe.reward?.fn;
  const sb = ctx.recipe.sandbox;
  if (fn?.path !== undefined) {
    return { path: fn.path, name: fn.name, kwargs: fn.kwargs ?? {}, acceptsKwargs: fn.acceptsKwargs, shim: false };
  }
  if (sb?.kind !== "rlpipe") {
    if (fn !== undefined) report(ctx, "error", ["reward", "fn", "path"], "missing_field", "missing required field \"path\"", "the bundled reward shim is the default only with sandbox.kind: rlpipe");
    return undefined;
  }
  const tokenEnv = sb.auth === undefined ? undefined : ctx.recipe.secrets?.[sb.auth.secret]?.env;
  return {
    path: SHIM_FILE,
    name: fn?.name ?? "compute_score",
    // Only the variable's name goes into the config; the shim reads the token from the environment.
    kwargs: { url: "${sandbox.url}/v1/rewards", ...(tokenEnv === undefined ? {} : { token_env: tokenEnv }), ...fn?.kwargs },
    acceptsKwargs: true,
    shim: true,
  };
}
