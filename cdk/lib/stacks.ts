// The app's two stacks, defined the same way at the top of the CDK app (`cdk deploy` from a checkout) and inside
// the pipeline's stage.
import { Stage, type StageProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { RlpipeFunctionsStack, type RlpipeFunctionsStackProps } from "./functions-stack.js";
import { RlpipeStatefulStack, type RlpipeStatefulStackProps } from "./stateful-stack.js";

/** Settings of both stacks (stack-level props such as env come from the enclosing stage or app). */
export interface RlpipeStacksProps {
  /**
   * Settings of the stateful stack.
   * @default RlpipeStatefulStack's defaults
   */
  readonly stateful?: Omit<RlpipeStatefulStackProps, "env" | "stackName">;
  /**
   * Settings of the functions stack (its bucket and secret come from the stateful stack).
   * @default RlpipeFunctionsStack's defaults
   */
  readonly functions?: Omit<RlpipeFunctionsStackProps, "bucket" | "secret" | "env" | "stackName">;
}

/** The stateful stack ("RlpipeStateful") and the functions stack ("RlpipeFunctions") wired to it, in `scope`. */
export function defineRlpipeStacks(scope: Construct, props: RlpipeStacksProps = {}): { stateful: RlpipeStatefulStack; functions: RlpipeFunctionsStack } {
  const stateful = new RlpipeStatefulStack(scope, "RlpipeStateful", props.stateful);
  const functions = new RlpipeFunctionsStack(scope, "RlpipeFunctions", {
    ...props.functions,
    bucket: stateful.checkpoints.bucket,
    secret: stateful.secret.secret,
  });
  return { stateful, functions };
}

export interface RlpipeStageProps extends StageProps, RlpipeStacksProps {}

/** Both stacks as one deployable unit, for CDK Pipelines (or any app that deploys per environment). */
export class RlpipeStage extends Stage {
  readonly stateful: RlpipeStatefulStack;
  readonly functions: RlpipeFunctionsStack;

  constructor(scope: Construct, id: string, props: RlpipeStageProps = {}) {
    super(scope, id, props);
    ({ stateful: this.stateful, functions: this.functions } = defineRlpipeStacks(this, props));
  }
}
