// The reward/tool API on Lambda: SandboxFusion-compatible /run_code and /common_evaluate_batch, /v1/rewards, backed
// by E2B (or Tencent AGS) or hosted ScaleBox — bubblewrap cannot run inside Lambda. It reads the secret only.
import { Duration } from "aws-cdk-lib";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import { type EndpointAuth, FUNCTION_ENV, RlpipeFunction, type RlpipeFunctionOptions } from "./function.js";
import { type SandboxSettings, sandboxEnvironment } from "./sandbox-settings.js";

export interface RewardFunctionProps extends RlpipeFunctionOptions, SandboxSettings {
  /** The secret with RLPIPE_SANDBOX_TOKEN (the API's token) and E2B_API_KEY (sandbox e2b). */
  readonly secret: ISecret;
  /**
   * How callers authenticate: "token" (the function checks RLPIPE_SANDBOX_TOKEN as a bearer header or a /t/<token>/
   * path prefix — the latter is what verl's stock SandboxFusion tool can carry, in its URL) or "aws-iam" (SigV4
   * checked by Lambda first, for callers that can sign; the token then goes in the path).
   * @default "token"
   */
  readonly auth?: EndpointAuth;
}

/** The reward/tool API as a Lambda function with an HTTPS endpoint. */
export class RewardFunction extends RlpipeFunction {
  constructor(scope: Construct, id: string, props: RewardFunctionProps) {
    const reserved = props.reservedConcurrentExecutions ?? 20;
    const environment: Record<string, string> = {
      ...sandboxEnvironment(props),
      // Every instance shares the E2B account: each keeps to 1/reserved of it (unreserved: the function's default, 1).
      ...(typeof reserved === "number" && (props.sandbox ?? "e2b") === "e2b" ? { [FUNCTION_ENV.functionInstances]: String(reserved) } : {}),
    };
    super(scope, id, {
      name: "reward",
      description: `rlpipe reward/tool API (sandbox ${environment["RLPIPE_SANDBOX"]})`,
      secret: props.secret,
      memoryMiB: 1024,
      timeout: Duration.minutes(5),
      reservedConcurrentExecutions: 20,
      environment,
      endpoint: props.auth ?? "token",
    }, props);
  }
}
