// What the three rlpipe Lambda functions share: the bundle (NodejsFunction over the function's Lambda entry, esbuild
// locally, no Docker), a role of their own with nothing but their log group until a construct grants more, a log
// group with retention, alarms on errors and throttles, and optionally an HTTPS endpoint.
//
// Endpoint: a Lambda Function URL, not API Gateway. The reward/tool API is called by verl's stock SandboxFusion tool,
// which can neither sign a request nor set a header — only a base URL — so the function authenticates every call
// itself with its token (bearer header, or the token in the path for the stock tool); IAM auth (SigV4) is the option
// for callers that can sign. API Gateway would add a 30 s integration timeout (a reward batch or a slow sandbox
// run can take longer; a Function URL allows the full function timeout), a second hop and a per-request charge,
// and offers nothing the function lacks: the token check is in the function and throttling is the function's
// reserved concurrency. Put CloudFront + WAF in front when a public caller needs rate limits per client.
import { dirname } from "node:path";
import { CfnOutput, Duration, Validations } from "aws-cdk-lib";
import { Alarm, ComparisonOperator, TreatMissingData } from "aws-cdk-lib/aws-cloudwatch";
import { SnsAction } from "aws-cdk-lib/aws-cloudwatch-actions";
import { type IGrantable, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Architecture, FunctionUrl, FunctionUrlAuthType, InvokeMode, Runtime } from "aws-cdk-lib/aws-lambda";
import { LogLevel, NodejsFunction, OutputFormat } from "aws-cdk-lib/aws-lambda-nodejs";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { ITopic } from "aws-cdk-lib/aws-sns";
import { Construct } from "constructs";
import { RlpipeError } from "../../core/errors.js";
import { type LambdaFunctionName, findLockFile, lambdaEntry, requireLocalEsbuild, runtimeFileDefines } from "./entries.js";

/**
 * Environment variables the function apps read (functions/apps/*.ts, docs/ARCHITECTURE.md "Configuration of the
 * functions"); test/cdk.test.ts checks each name is one the apps read.
 */
export const FUNCTION_ENV = {
  /** ARN of the Secrets Manager secret whose JSON holds the keys of SECRET_KEYS. */
  secretArn: "RLPIPE_SECRET_ARN",
  /** Sandbox backend of the reward/tool function: e2b | scalebox. */
  sandbox: "RLPIPE_SANDBOX",
  /** ScaleBox/SandboxFusion endpoints, comma-separated (sandbox scalebox). */
  scaleboxUrls: "RLPIPE_SCALEBOX_URL",
  /** E2B-protocol domain: unset for E2B, `<region>.tencentags.com` for Tencent AGS. */
  e2bDomain: "E2B_DOMAIN",
  /** E2B sandbox template (AGS: the sandbox tool's name). */
  e2bTemplate: "RLPIPE_E2B_TEMPLATE",
  /** Sandbox jobs at once per function instance (E2B: sandboxes in the pool). */
  sandboxConcurrency: "RLPIPE_SANDBOX_CONCURRENCY",
  /** E2B plan whose limits the account has: hobby | pro. */
  e2bTier: "RLPIPE_E2B_TIER",
  /** Function instances sharing the E2B account: the reward function's reserved concurrency. */
  functionInstances: "RLPIPE_FUNCTION_INSTANCES",
  /** Store URI of the run outputs the runs function hands out presigned URLs for (s3://bucket/prefix). */
  runsStore: "RLPIPE_RUNS_STORE",
  /** Store URI of the run records and upload markers the console handlers keep (s3://bucket/prefix). */
  stateStore: "RLPIPE_STATE_STORE",
  /** Store URI under which an uploaded recipe is deployed by the console handler (s3://bucket/prefix). */
  consoleRecipePrefix: "RLPIPE_CONSOLE_RECIPE_PREFIX",
  /** Provider of an uploaded recipe whose key does not name one. */
  consoleProvider: "RLPIPE_CONSOLE_PROVIDER",
} as const;

/** How callers of a function's HTTPS endpoint authenticate. */
export type EndpointAuth =
  /**
   * A Function URL without IAM auth: every request carries the function's own token, which the function checks
   * (a bearer header, or the token in the path for callers that can only be given a URL).
   */
  | "token"
  /**
   * A Function URL with AWS_IAM auth: Lambda checks a SigV4 signature and lambda:InvokeFunctionUrl
   * (grantInvokeUrl) before the function runs, and the function still checks its token — which then travels in the
   * path, since the Authorization header carries the signature.
   */
  | "aws-iam";

/** Options every rlpipe function construct takes. */
export interface RlpipeFunctionOptions {
  /**
   * Memory of the function, in MiB (Lambda gives CPU in proportion).
   * @default 1024 for the reward/tool function, 512 for the runs and console functions
   */
  readonly memoryMiB?: number;
  /**
   * Longest an invocation may run.
   * @default 5 minutes for the reward/tool and console functions, 1 minute for the runs function
   */
  readonly timeout?: Duration;
  /**
   * Throttling: the most concurrent invocations, reserved from the account's pool; requests beyond it get 429.
   * "unreserved" sets no limit (required on accounts whose concurrency quota is at the 10-invocation minimum,
   * where any reservation fails the deploy).
   * @default 20 for the reward/tool function (E2B's default cap of concurrent sandboxes), 10 for runs, 2 for console
   */
  readonly reservedConcurrentExecutions?: number | "unreserved";
  /**
   * How long the function's CloudWatch log group keeps events.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * SNS topic the error and throttle alarms notify.
   * @default no action: the alarms show in the CloudWatch console only
   */
  readonly alarmTopic?: ITopic;
  /**
   * Function errors (uncaught exceptions, timeouts) in 5 minutes that raise the errors alarm.
   * @default 1
   */
  readonly errorsAlarmThreshold?: number;
  /**
   * Throttled invocations in 5 minutes that raise the throttles alarm.
   * @default 1
   */
  readonly throttlesAlarmThreshold?: number;
  /**
   * Extra environment variables (never secrets: those belong in the secret).
   * @default none
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * The lock file NodejsFunction bundles against; its directory is the bundling project root.
   * @default the nearest lock file above the entry file: this repository's package-lock.json, or the lock file of
   * the project rlpipe is installed in
   */
  readonly depsLockFilePath?: string;
}

/** What a concrete function construct fixes for the shared base. */
interface FunctionSpec {
  readonly name: LambdaFunctionName;
  readonly description: string;
  readonly secret: ISecret;
  readonly memoryMiB: number;
  readonly timeout: Duration;
  readonly reservedConcurrentExecutions: number;
  readonly environment: Readonly<Record<string, string>>;
  /** HTTPS endpoint auth, or undefined for a function without a URL. */
  readonly endpoint: EndpointAuth | undefined;
}

/**
 * The shared half of RewardFunction, RunsFunction and ConsoleFunctions. Not used directly: each of those fixes the
 * entry, the grants and the environment of its function.
 */
export abstract class RlpipeFunction extends Construct {
  /** The Lambda function (ESM bundle, Node.js 22, arm64). */
  readonly function: NodejsFunction;
  /** The function's execution role; holds only the grants its construct gives it. */
  readonly role: Role;
  /** The function's log group. */
  readonly logGroup: LogGroup;
  /** The HTTPS endpoint, when the function has one. */
  readonly url: FunctionUrl | undefined;
  /** Alarm on function errors (uncaught exceptions and timeouts). */
  readonly errorsAlarm: Alarm;
  /** Alarm on throttled invocations (reserved concurrency reached). */
  readonly throttlesAlarm: Alarm;

  protected constructor(scope: Construct, id: string, spec: FunctionSpec, options: RlpipeFunctionOptions) {
    super(scope, id);
    const entry = lambdaEntry(spec.name);
    this.logGroup = new LogGroup(this, "Logs", { retention: options.logRetention ?? RetentionDays.ONE_MONTH });
    // Its own role with an inline policy for its own log group: no AWSLambdaBasicExecutionRole (a managed policy
    // that may create and write any log group).
    this.role = new Role(this, "Role", { assumedBy: new ServicePrincipal("lambda.amazonaws.com"), description: `rlpipe ${spec.name} function` });
    this.logGroup.grantWrite(this.role);
    spec.secret.grantRead(this.role);

    const reserved = options.reservedConcurrentExecutions ?? spec.reservedConcurrentExecutions;
    if (reserved !== "unreserved" && (!Number.isInteger(reserved) || reserved < 1)) {
      throw new RlpipeError("cdk_invalid_prop", `reservedConcurrentExecutions of the ${spec.name} function must be a positive integer or "unreserved", got ${String(reserved)}`, {
        exitCode: 2, hint: "0 would stop the function; use \"unreserved\" for no limit",
      });
    }
    const memoryMiB = options.memoryMiB ?? spec.memoryMiB;
    const depsLockFilePath = options.depsLockFilePath ?? findLockFile(dirname(entry));
    requireLocalEsbuild(dirname(depsLockFilePath));
    this.function = new NodejsFunction(this, "Function", {
      entry,
      handler: "handler",
      depsLockFilePath,
      description: spec.description,
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      memorySize: memoryMiB,
      timeout: options.timeout ?? spec.timeout,
      role: this.role,
      logGroup: this.logGroup,
      ...(reserved === "unreserved" ? {} : { reservedConcurrentExecutions: reserved }),
      environment: {
        ...spec.environment,
        ...options.environment,
        [FUNCTION_ENV.secretArn]: spec.secret.secretArn,
      },
      bundling: {
        // The local esbuild (a dependency of rlpipe), never a Docker image: CI has no Docker.
        forceDockerBundling: false,
        format: OutputFormat.ESM,
        target: "node22",
        minify: true,
        sourceMap: false,
        // The whole bundle from the lock file's versions, the AWS SDK included: the runtime's own SDK copy changes
        // under us and does not carry every package used here (lib-storage, the presigner).
        bundleAwsSDK: true,
        // CommonJS dependencies bundled into an ES module still call require() for Node built-ins.
        banner: "import{createRequire as __rlpipeCreateRequire}from'node:module';const require=__rlpipeCreateRequire(import.meta.url);",
        mainFields: ["module", "main"],
        define: runtimeFileDefines(),
        logLevel: LogLevel.WARNING,
      },
    });
    Validations.of(this.function).acknowledge({
      id: "AwsSolutions-L1",
      reason: "Node.js 22 is pinned on purpose: the bundle is built for node22, as `rlpipe package --platform lambda` builds it, so both ways of deploying run the same code on the same runtime; moving to Node.js 24 is a deliberate, tested change rather than whatever is newest at synth time",
    });

    if (spec.endpoint !== undefined) {
      this.url = this.function.addFunctionUrl({
        authType: spec.endpoint === "aws-iam" ? FunctionUrlAuthType.AWS_IAM : FunctionUrlAuthType.NONE,
        invokeMode: InvokeMode.BUFFERED,
      });
      new CfnOutput(this, "Url", { value: this.url.url, description: `HTTPS endpoint of the rlpipe ${spec.name} function (${spec.endpoint === "aws-iam" ? "SigV4" : "token"} auth)` });
    } else {
      this.url = undefined;
    }

    const period = Duration.minutes(5);
    const action = options.alarmTopic === undefined ? undefined : new SnsAction(options.alarmTopic);
    this.errorsAlarm = new Alarm(this, "ErrorsAlarm", {
      alarmDescription: `rlpipe ${spec.name} function: uncaught errors or timeouts`,
      metric: this.function.metricErrors({ period, statistic: "Sum" }),
      threshold: options.errorsAlarmThreshold ?? 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    this.throttlesAlarm = new Alarm(this, "ThrottlesAlarm", {
      alarmDescription: `rlpipe ${spec.name} function: invocations throttled (reserved concurrency reached)`,
      metric: this.function.metricThrottles({ period, statistic: "Sum" }),
      threshold: options.throttlesAlarmThreshold ?? 1,
      evaluationPeriods: 1,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    if (action !== undefined) for (const alarm of [this.errorsAlarm, this.throttlesAlarm]) alarm.addAlarmAction(action);
  }

  /** Lets `grantee` call the HTTPS endpoint (only meaningful with "aws-iam" auth). */
  grantInvokeUrl(grantee: IGrantable): void {
    if (this.url === undefined) throw new RlpipeError("cdk_no_endpoint", `the ${this.node.path} function has no HTTPS endpoint`, { exitCode: 2 });
    this.url.grantInvokeUrl(grantee);
  }
}
