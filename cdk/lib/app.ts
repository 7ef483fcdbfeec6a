// The rlpipe CDK app: what `cdk synth` / `cdk deploy` build from cdk.json, and what the tests build the same way.
// Configuration comes from CDK context (-c key=value or cdk.json), never from environment lookups at synth time.
import { type App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { RlpipeError } from "../../core/errors.js";
import type { EndpointAuth } from "./function.js";
import { RlpipePipelineStack } from "./pipeline-stack.js";
import type { FunctionSandbox } from "./sandbox-settings.js";
import type { RlpipeFunctionsStack } from "./functions-stack.js";
import { defineRlpipeStacks } from "./stacks.js";
import type { RlpipeStatefulStack } from "./stateful-stack.js";

/** The context keys the app reads (`cdk synth -c rlpipe:sandbox=scalebox …`). */
export const CONTEXT_KEYS = {
  sandbox: "rlpipe:sandbox",
  scaleboxUrls: "rlpipe:scaleboxUrls",
  e2bDomain: "rlpipe:e2bDomain",
  rewardAuth: "rlpipe:rewardAuth",
  alarmTopicArn: "rlpipe:alarmTopicArn",
  pipelineRepository: "rlpipe:pipelineRepository",
  pipelineBranch: "rlpipe:pipelineBranch",
  pipelineConnectionArn: "rlpipe:pipelineConnectionArn",
} as const;

export interface RlpipeApp {
  readonly stateful: RlpipeStatefulStack;
  readonly functions: RlpipeFunctionsStack;
  /** Defined when the pipeline context keys are given. */
  readonly pipeline: RlpipePipelineStack | undefined;
}

function text(app: App, key: string): string | undefined {
  const v: unknown = app.node.tryGetContext(key);
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new RlpipeError("cdk_invalid_context", `context ${key} must be a string, got ${JSON.stringify(v)}`, { exitCode: 2 });
  return v;
}

function oneOf<T extends string>(app: App, key: string, allowed: readonly T[]): T | undefined {
  const v = text(app, key);
  if (v !== undefined && !(allowed as readonly string[]).includes(v)) {
    throw new RlpipeError("cdk_invalid_context", `context ${key} must be one of ${allowed.join(", ")}, got ${JSON.stringify(v)}`, { exitCode: 2 });
  }
  return v as T | undefined;
}

/**
 * Defines the rlpipe stacks in `app` — RlpipeStateful and RlpipeFunctions, plus RlpipePipeline when the pipeline
 * context is given — and checks every stack with cdk-nag's AwsSolutions pack (a finding fails the synth unless
 * acknowledged with a reason).
 */
export function defineRlpipeApp(app: App): RlpipeApp {
  const sandbox = oneOf<FunctionSandbox>(app, CONTEXT_KEYS.sandbox, ["e2b", "scalebox"]);
  const scaleboxUrls = text(app, CONTEXT_KEYS.scaleboxUrls)?.split(",").filter((u) => u !== "");
  const e2bDomain = text(app, CONTEXT_KEYS.e2bDomain);
  const rewardAuth = oneOf<EndpointAuth>(app, CONTEXT_KEYS.rewardAuth, ["token", "aws-iam"]);
  const alarmTopicArn = text(app, CONTEXT_KEYS.alarmTopicArn);
  const stacks = {
    functions: {
      ...(alarmTopicArn === undefined ? {} : { alarmTopicArn }),
      reward: {
        ...(sandbox === undefined ? {} : { sandbox }),
        ...(scaleboxUrls === undefined ? {} : { scaleboxUrls }),
        ...(e2bDomain === undefined ? {} : { e2bDomain }),
        ...(rewardAuth === undefined ? {} : { auth: rewardAuth }),
      },
    },
  };
  const { stateful, functions } = defineRlpipeStacks(app, stacks);

  const pipelineKeys = [CONTEXT_KEYS.pipelineRepository, CONTEXT_KEYS.pipelineConnectionArn] as const;
  const [repository, connectionArn] = pipelineKeys.map((k) => text(app, k));
  let pipeline: RlpipePipelineStack | undefined;
  if (repository !== undefined && connectionArn !== undefined) {
    const branch = text(app, CONTEXT_KEYS.pipelineBranch);
    pipeline = new RlpipePipelineStack(app, "RlpipePipeline", { repository, connectionArn, ...(branch === undefined ? {} : { branch }), stacks });
  } else if (repository !== undefined || connectionArn !== undefined) {
    throw new RlpipeError("cdk_invalid_context", `the pipeline needs both ${pipelineKeys.join(" and ")}; only ${repository === undefined ? pipelineKeys[1] : pipelineKeys[0]} is set`, { exitCode: 2 });
  }

  Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
  return { stateful, functions, pipeline };
}
