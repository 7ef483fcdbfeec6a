// The reward/tool API on Lambda: SandboxFusion-compatible /run_code and /common_evaluate_batch, /v1/rewards, backed
// by E2B (or Tencent AGS) or hosted ScaleBox — bubblewrap cannot run inside Lambda. It reads the secret only.
import { Duration } from "aws-cdk-lib";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import { RlpipeError } from "../../core/errors.js";
import { type EndpointAuth, FUNCTION_ENV, RlpipeFunction, type RlpipeFunctionOptions } from "./function.js";

/** Sandbox backends a function can use (the embedded bubblewrap one needs a machine, not a function). */
export type FunctionSandbox = "e2b" | "scalebox";

export interface RewardFunctionProps extends RlpipeFunctionOptions {
  /** The secret with E2B_API_KEY (sandbox e2b) and RLPIPE_SANDBOX_TOKEN (the API's token). */
  readonly secret: ISecret;
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
   * How callers authenticate: "token" (the function checks RLPIPE_SANDBOX_TOKEN as a bearer or path token — what
   * verl's stock SandboxFusion tool can do) or "aws-iam" (SigV4, for callers that can sign).
   * @default "token"
   */
  readonly auth?: EndpointAuth;
}

/** The reward/tool API as a Lambda function with an HTTPS endpoint. */
export class RewardFunction extends RlpipeFunction {
  constructor(scope: Construct, id: string, props: RewardFunctionProps) {
    const sandbox = props.sandbox ?? "e2b";
    const urls = props.scaleboxUrls ?? [];
    if (sandbox === "scalebox" && urls.length === 0) throw new RlpipeError("cdk_invalid_prop", "sandbox \"scalebox\" needs scaleboxUrls (the hosted ScaleBox endpoints)", { exitCode: 2 });
    if (sandbox !== "scalebox" && urls.length > 0) throw new RlpipeError("cdk_invalid_prop", `scaleboxUrls are used by sandbox "scalebox" only, but sandbox is ${JSON.stringify(sandbox)}`, { exitCode: 2 });
    for (const u of urls) {
      if (!/^https:\/\/[^\s,]+$/.test(u)) throw new RlpipeError("cdk_invalid_prop", `scaleboxUrls: ${JSON.stringify(u)} is not an https URL`, { exitCode: 2, hint: "the function reaches the sandbox over the internet: use https" });
    }
    if (sandbox !== "e2b" && props.e2bDomain !== undefined) throw new RlpipeError("cdk_invalid_prop", `e2bDomain is used by sandbox "e2b" only, but sandbox is ${JSON.stringify(sandbox)}`, { exitCode: 2 });
    super(scope, id, {
      name: "reward",
      description: `rlpipe reward/tool API (sandbox ${sandbox})`,
      secret: props.secret,
      memoryMiB: 1024,
      timeout: Duration.minutes(5),
      reservedConcurrentExecutions: 20,
      environment: {
        [FUNCTION_ENV.sandbox]: sandbox,
        ...(urls.length === 0 ? {} : { [FUNCTION_ENV.scaleboxUrls]: urls.join(",") }),
        ...(props.e2bDomain === undefined ? {} : { [FUNCTION_ENV.e2bDomain]: props.e2bDomain }),
      },
      endpoint: props.auth ?? "token",
    }, props);
  }
}
