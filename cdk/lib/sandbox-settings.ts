// The remote sandbox a function uses (the reward/tool API, and the console's `score` action): E2B or Tencent AGS,
// or a hosted ScaleBox — bubblewrap cannot run inside Lambda. Checked at synth, turned into the environment the
// apps read (functions/apps/reward.ts sandboxConfig).
import { RlpipeError } from "../../core/errors.js";
import { FUNCTION_ENV } from "./function.js";

/** Sandbox backends a function can use (the embedded bubblewrap one needs a machine, not a function). */
export type FunctionSandbox = "e2b" | "scalebox";

export interface SandboxSettings {
  /**
   * The sandbox backend: "e2b" (E2B, or Tencent AGS with `e2bDomain`) or "scalebox" (hosted ScaleBox/SandboxFusion).
   * @default "e2b"
   */
  readonly sandbox?: FunctionSandbox;
  /**
   * ScaleBox/SandboxFusion endpoints (https URLs); required with sandbox "scalebox", refused otherwise.
   * @default none
   */
  readonly scaleboxUrls?: readonly string[];
  /**
   * E2B-protocol domain: `<region>.tencentags.com` for Tencent AGS.
   * @default E2B's own domain
   */
  readonly e2bDomain?: string;
  /**
   * E2B sandbox template (Tencent AGS: the sandbox tool's name).
   * @default the app's default, code-interpreter-v1
   */
  readonly e2bTemplate?: string;
  /**
   * Sandbox jobs at once per function instance (E2B: sandboxes in its pool).
   * @default the backend's default
   */
  readonly sandboxConcurrency?: number;
  /**
   * The E2B plan whose limits the account has (each instance keeps to its share of them).
   * @default "hobby" (the function's default: 20 sandboxes, 1 create/s)
   */
  readonly e2bTier?: "hobby" | "pro";
}

/** The environment variables of `settings`, after checking them (RlpipeError naming the prop otherwise). */
export function sandboxEnvironment(settings: SandboxSettings): Record<string, string> {
  const sandbox = settings.sandbox ?? "e2b";
  if (sandbox !== "e2b" && sandbox !== "scalebox") throw new RlpipeError("cdk_invalid_prop", `sandbox must be "e2b" or "scalebox", got ${JSON.stringify(sandbox)}`, { exitCode: 2 });
  const urls = settings.scaleboxUrls ?? [];
  if (sandbox === "scalebox" && urls.length === 0) throw new RlpipeError("cdk_invalid_prop", "sandbox \"scalebox\" needs scaleboxUrls (the hosted ScaleBox endpoints)", { exitCode: 2 });
  if (sandbox !== "scalebox" && urls.length > 0) throw new RlpipeError("cdk_invalid_prop", `scaleboxUrls are used by sandbox "scalebox" only, but sandbox is ${JSON.stringify(sandbox)}`, { exitCode: 2 });
  for (const u of urls) {
    if (!/^https:\/\/[^\s,]+$/.test(u)) throw new RlpipeError("cdk_invalid_prop", `scaleboxUrls: ${JSON.stringify(u)} is not an https URL`, { exitCode: 2, hint: "the function reaches the sandbox over the internet: use https" });
  }
  for (const [prop, value] of [["e2bDomain", settings.e2bDomain], ["e2bTemplate", settings.e2bTemplate], ["e2bTier", settings.e2bTier]] as const) {
    if (sandbox !== "e2b" && value !== undefined) throw new RlpipeError("cdk_invalid_prop", `${prop} is used by sandbox "e2b" only, but sandbox is ${JSON.stringify(sandbox)}`, { exitCode: 2 });
  }
  const concurrency = settings.sandboxConcurrency;
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1)) {
    throw new RlpipeError("cdk_invalid_prop", `sandboxConcurrency must be a positive integer, got ${concurrency}`, { exitCode: 2 });
  }
  return {
    [FUNCTION_ENV.sandbox]: sandbox,
    ...(urls.length === 0 ? {} : { [FUNCTION_ENV.scaleboxUrls]: urls.join(",") }),
    ...(settings.e2bDomain === undefined ? {} : { [FUNCTION_ENV.e2bDomain]: settings.e2bDomain }),
    ...(settings.e2bTemplate === undefined ? {} : { [FUNCTION_ENV.e2bTemplate]: settings.e2bTemplate }),
    ...(settings.e2bTier === undefined ? {} : { [FUNCTION_ENV.e2bTier]: settings.e2bTier }),
    ...(concurrency === undefined ? {} : { [FUNCTION_ENV.sandboxConcurrency]: String(concurrency) }),
  };
}
