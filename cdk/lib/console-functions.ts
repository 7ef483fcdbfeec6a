// The console-triggered handlers on Lambda — deploy, status, score, cost — as one function dispatching on the
// event: invoked with a JSON test event from the Lambda console (or `aws lambda invoke`), and by a recipe uploaded
// under the recipe prefix of the bucket (an EventBridge rule on the bucket's "Object Created" events, delivered as
// they come — the handler parses them, and deploys each object version once). EventBridge rather than an S3
// notification to Lambda: the bucket is in the stateful stack and the function here, and a notification would
// tie the two stacks both ways. It keeps run records under the state prefix, reads recipes under the recipe
// prefix and each run's page (<run>/report.html, the report action) under the run stores' prefixes; nothing else.
//
// A recipe upload invokes the function asynchronously: Lambda retries a failed deploy twice, then hands the event
// to the on-failure destination, a queue (kept 14 days) with an alarm on its depth — so a deploy that never
// happened is neither dropped nor silent. The same queue is the rule target's dead-letter queue, for events
// EventBridge could not deliver at all.
import { CfnOutput, Duration, Validations } from "aws-cdk-lib";
import { Alarm, ComparisonOperator, TreatMissingData } from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import { Rule } from "aws-cdk-lib/aws-events";
import { LambdaFunction } from "aws-cdk-lib/aws-events-targets";
import { SqsDestination } from "aws-cdk-lib/aws-lambda-destinations";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import { Queue, QueueEncryption } from "aws-cdk-lib/aws-sqs";
import type { Construct } from "constructs";
import { RlpipeError } from "../../core/errors.js";
import { PROVIDERS, type Provider } from "../../core/recipe/schema.js";
import { checkPrefix, grantPrefix, storeUri } from "./bucket-prefix.js";
import { FUNCTION_ENV, RlpipeFunction, type RlpipeFunctionOptions } from "./function.js";
import { type SandboxSettings, sandboxEnvironment } from "./sandbox-settings.js";

/** A prefix of a bucket where runs keep their outputs (a recipe's checkpoints.storage, the runs function's store). */
export interface RunStore {
  readonly bucket: IBucket;
  /** Key prefix ending in "/", e.g. "runs/". */
  readonly prefix: string;
}

export interface ConsoleFunctionsProps extends RlpipeFunctionOptions {
  /** The secret with the keys the handlers use (RLPIPE_CONSOLE_TOKEN for HTTPS, the sandbox key for `score`). */
  readonly secret: ISecret;
  /** The bucket with the run records and the uploaded recipes. */
  readonly bucket: IBucket;
  /**
   * Key prefix of the run records and upload markers (what a deploy keeps so that `status` and a repeated deploy
   * find the run), ending in "/".
   * @default "state/"
   */
  readonly statePrefix?: string;
  /**
   * Key prefix under which an uploaded recipe triggers a deploy, ending in "/"; the function may read it.
   * @default "recipes/"
   */
  readonly recipePrefix?: string;
  /**
   * Whether a recipe uploaded under `recipePrefix` triggers a deploy. Needs the bucket's EventBridge notifications
   * (CheckpointBucket turns them on).
   * @default true
   */
  readonly recipeTrigger?: boolean;
  /**
   * Provider of an uploaded recipe whose key does not say it (`<name>.<provider>.yaml`) and that has more than one
   * target.
   * @default none: such an upload is refused with a message saying how to name it
   */
  readonly uploadProvider?: Provider;
  /**
   * The sandbox the `score` action uses (the same settings as the reward function's).
   * @default none: `score` answers that no sandbox is configured
   */
  readonly sandbox?: SandboxSettings;
  /**
   * An HTTPS endpoint (Function URL) for console events over HTTP. The function checks RLPIPE_CONSOLE_TOKEN from
   * the secret as a bearer token and answers 403 while it is empty.
   * @default false: invoke the function directly (console test event, `aws lambda invoke`), which IAM guards
   */
  readonly httpEndpoint?: boolean;
  /**
   * Where runs keep their outputs: the console reads each run's page there (`<prefix><run>/report.html`, HEAD and
   * GET, and presigns GETs of it for the report action) and nothing else of those prefixes (no checkpoint, no
   * metrics, no listing beyond the pages). A run whose store is elsewhere answers the report action 502
   * store_auth_refused.
   * @default the bucket's "runs/" prefix (RunsFunction's default store)
   */
  readonly runStores?: readonly RunStore[];
}

/** The console handlers (deploy, status, score, cost): one Lambda function, and the recipe-upload trigger. */
export class ConsoleFunctions extends RlpipeFunction {
  /** Prefix of the run records, ending in "/". */
  readonly statePrefix: string;
  /** Prefix of the recipes that trigger a deploy, ending in "/". */
  readonly recipePrefix: string;
  /** The run stores whose pages the console reads. */
  readonly runStores: readonly RunStore[];
  /** The EventBridge rule of recipe uploads, when `recipeTrigger` is on. */
  readonly recipeRule: Rule | undefined;
  /**
   * Where an asynchronous invocation (a recipe upload) goes when it still fails after Lambda's two retries, or is
   * older than 6 hours: a Lambda on-failure destination record (the event, the error); also the dead-letter queue
   * of the recipe rule's target.
   */
  readonly failedInvocations: Queue;
  /** Alarm on failed invocations waiting in `failedInvocations` (notifies `alarmTopic`). */
  readonly failedInvocationsAlarm: Alarm;

  constructor(scope: Construct, id: string, props: ConsoleFunctionsProps) {
    const statePrefix = checkPrefix("statePrefix", props.statePrefix ?? "state/");
    const recipePrefix = checkPrefix("recipePrefix", props.recipePrefix ?? "recipes/");
    if (statePrefix.startsWith(recipePrefix) || recipePrefix.startsWith(statePrefix)) {
      throw new RlpipeError("cdk_invalid_prop", `statePrefix ${JSON.stringify(statePrefix)} and recipePrefix ${JSON.stringify(recipePrefix)} overlap`, {
        exitCode: 2, hint: "a run record written under the recipe prefix would look like an upload: keep them apart",
      });
    }
    if (props.uploadProvider !== undefined && !(PROVIDERS as readonly string[]).includes(props.uploadProvider)) {
      throw new RlpipeError("cdk_invalid_prop", `uploadProvider must be one of ${PROVIDERS.join(", ")}, got ${JSON.stringify(props.uploadProvider)}`, { exitCode: 2 });
    }
    const runStores = (props.runStores ?? [{ bucket: props.bucket, prefix: "runs/" }]).map((r, i) => ({ bucket: r.bucket, prefix: checkPrefix(`runStores[${i}].prefix`, r.prefix) }));
    const trigger = props.recipeTrigger ?? true;
    super(scope, id, {
      name: "console",
      description: "rlpipe console handlers (deploy, status, score, cost, report)",
      secret: props.secret,
      memoryMiB: 512,
      timeout: Duration.minutes(5),
      reservedConcurrentExecutions: 2,
      environment: {
        [FUNCTION_ENV.stateStore]: storeUri(props.bucket, statePrefix),
        ...(trigger ? { [FUNCTION_ENV.consoleRecipePrefix]: storeUri(props.bucket, recipePrefix) } : {}),
        ...(props.uploadProvider === undefined ? {} : { [FUNCTION_ENV.consoleProvider]: props.uploadProvider }),
        ...(props.sandbox === undefined ? {} : sandboxEnvironment(props.sandbox)),
      },
      endpoint: props.httpEndpoint === true ? "token" : undefined,
    }, props);
    this.statePrefix = statePrefix;
    this.recipePrefix = recipePrefix;
    this.runStores = runStores;
    // Run records and markers are small single PUTs: no multipart grants.
    grantPrefix(props.bucket, this.role, statePrefix, "read-write-small", "run records and upload markers are keyed by run name and object version, known only at run time");
    grantPrefix(props.bucket, this.role, recipePrefix, "read", "recipes are uploaded by users under any name; the handler reads the one whose upload triggered it");
    for (const r of runStores) {
      grantPrefix(r.bucket, this.role, r.prefix, "read", "each run's page, <run>/report.html, keyed by a run name known only at run time (the report action reads and presigns it)", { keys: "*/report.html" });
    }

    this.failedInvocations = new Queue(this, "FailedInvocations", {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14), // the longest SQS keeps a message
    });
    Validations.of(this.failedInvocations).acknowledge({
      id: "AwsSolutions-SQS3",
      reason: "this queue is itself the dead-letter queue: the on-failure destination of the console function and the DLQ of the recipe rule's target; nothing consumes it automatically, an operator reads it",
    });
    // Retries: Lambda's default two, stated. A retried deploy of the same object version finds its upload marker.
    this.function.configureAsyncInvoke({ retryAttempts: 2, maxEventAge: Duration.hours(6), onFailure: new SqsDestination(this.failedInvocations) });
    this.failedInvocationsAlarm = new Alarm(this, "FailedInvocationsAlarm", {
      alarmDescription: "rlpipe console function: an asynchronous invocation (a recipe upload) failed after its retries; its event is in the failed-invocations queue",
      metric: this.failedInvocations.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: "Maximum" }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (props.alarmTopic !== undefined) this.failedInvocationsAlarm.addAlarmAction(new SnsAction(props.alarmTopic));
    new CfnOutput(this, "FailedInvocationsQueue", { value: this.failedInvocations.queueUrl, description: "recipe uploads whose deploy failed after Lambda's retries (aws sqs receive-message --queue-url <this>)" });

    if (trigger) {
      this.recipeRule = new Rule(this, "RecipeUploaded", {
        description: `deploy a recipe uploaded under ${recipePrefix} (rlpipe console handler)`,
        eventPattern: {
          source: ["aws.s3"],
          detailType: ["Object Created"],
          detail: { bucket: { name: [props.bucket.bucketName] }, object: { key: [{ prefix: recipePrefix }] } },
        },
        // At least once: a repeated delivery finds the upload's marker (one deploy per object version).
        targets: [new LambdaFunction(this.function, { retryAttempts: 4, maxEventAge: Duration.hours(1), deadLetterQueue: this.failedInvocations })],
      });
    } else {
      this.recipeRule = undefined;
    }
  }
}
