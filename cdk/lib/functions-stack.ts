// The stateless half: the reward/tool, runs and console functions, their endpoints, logs and alarms, wired to the
// bucket and secret of the stateful stack.
import { CfnOutput, CrossStackReferences, ReferenceStrength, Stack, type StackProps } from "aws-cdk-lib";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import { type ITopic, Topic } from "aws-cdk-lib/aws-sns";
import type { Construct } from "constructs";
import { RlpipeError } from "../../core/errors.js";
import { ConsoleFunctions, type ConsoleFunctionsProps } from "./console-functions.js";
import { RewardFunction, type RewardFunctionProps } from "./reward-function.js";
import { RunsFunction, type RunsFunctionProps } from "./runs-function.js";

/** Per-function settings, without what the stack wires itself. */
type Settings<P> = Omit<P, "secret" | "bucket" | "alarmTopic">;

export interface RlpipeFunctionsStackProps extends StackProps {
  /** The checkpoint bucket (RlpipeStatefulStack.checkpoints.bucket, or one of your own). */
  readonly bucket: IBucket;
  /** The functions' secret (RlpipeStatefulStack.secret.secret, or one of your own with the same JSON keys). */
  readonly secret: ISecret;
  /**
   * SNS topic every function's error and throttle alarms notify.
   * @default no alarm actions
   */
  readonly alarmTopic?: ITopic;
  /**
   * ARN of an existing SNS topic for the same alarms, instead of `alarmTopic`: a plain value, so it can come from
   * CDK context (`rlpipe:alarmTopicArn`) and be shared by stacks in different stages.
   * @default no alarm actions
   */
  readonly alarmTopicArn?: string;
  /**
   * Settings of the reward/tool function.
   * @default RewardFunction's defaults (sandbox e2b, token auth, 1024 MiB, 5 min, 20 concurrent)
   */
  readonly reward?: Settings<RewardFunctionProps>;
  /**
   * Settings of the runs function.
   * @default RunsFunction's defaults (prefix runs/, token auth, 512 MiB, 1 min, 10 concurrent)
   */
  readonly runs?: Settings<RunsFunctionProps>;
  /**
   * Settings of the console handlers.
   * @default ConsoleFunctions' defaults (state/ and recipes/ prefixes, recipe trigger on, no URL, 512 MiB, 5 min, 2
   * concurrent), with the reward function's sandbox for `score` and the runs function's prefix as its run store
   */
  readonly console?: Settings<ConsoleFunctionsProps>;
}

export class RlpipeFunctionsStack extends Stack {
  readonly reward: RewardFunction;
  readonly runs: RunsFunction;
  readonly console: ConsoleFunctions;

  constructor(scope: Construct, id: string, props: RlpipeFunctionsStackProps) {
    super(scope, id, { description: "rlpipe: reward/tool, runs and console functions", ...props });
    // Strong references (exports): the stateful stack cannot be deleted, nor its bucket or secret replaced, while
    // these functions use them — whatever the app's default strength.
    CrossStackReferences.of(this).consume(ReferenceStrength.STRONG);
    const alarmTopic = props.alarmTopic ?? (props.alarmTopicArn === undefined ? undefined : importTopic(this, props.alarmTopicArn));
    if (props.alarmTopic !== undefined && props.alarmTopicArn !== undefined) {
      throw new RlpipeError("cdk_invalid_prop", "alarmTopic and alarmTopicArn are both set", { exitCode: 2, hint: "give the topic once: the construct or its ARN" });
    }
    const shared = { secret: props.secret, ...(alarmTopic === undefined ? {} : { alarmTopic }) };
    this.reward = new RewardFunction(this, "Reward", { ...props.reward, ...shared });
    this.runs = new RunsFunction(this, "Runs", { ...props.runs, ...shared, bucket: props.bucket });
    // The console's `score` checks the reward function's sandbox wiring, so it gets the same sandbox by default.
    const { sandbox, scaleboxUrls, e2bDomain, e2bTemplate, sandboxConcurrency, e2bTier } = props.reward ?? {};
    const rewardSandbox = Object.fromEntries(Object.entries({ sandbox, scaleboxUrls, e2bDomain, e2bTemplate, sandboxConcurrency, e2bTier }).filter(([, v]) => v !== undefined));
    // Its run pages are where the runs function keeps the runs' outputs, unless the settings name other run stores.
    const runStores = [{ bucket: props.bucket, prefix: this.runs.prefix }];
    this.console = new ConsoleFunctions(this, "Console", { sandbox: rewardSandbox, runStores, ...props.console, ...shared, bucket: props.bucket });
    new CfnOutput(this, "ConsoleFunctionName", { value: this.console.function.functionName, description: "invoke with a console event: aws lambda invoke --function-name <this> --cli-binary-format raw-in-base64-out --payload '{\"action\":\"status\",\"run\":\"<run>\"}' out.json" });
  }
}

const TOPIC_ARN = /^arn:aws[\w-]*:sns:[a-z0-9-]+:\d{12}:[\w-]{1,256}$/;

/** An existing topic by ARN, checked at synth (a typo would otherwise surface as a failed deploy). */
function importTopic(scope: Construct, arn: string): ITopic {
  if (!TOPIC_ARN.test(arn)) {
    throw new RlpipeError("cdk_invalid_prop", `alarmTopicArn must be an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>), got ${JSON.stringify(arn)}`, {
      exitCode: 2, hint: "aws sns list-topics shows the ARNs of your topics",
    });
  }
  return Topic.fromTopicArn(scope, "AlarmTopic", arn);
}
