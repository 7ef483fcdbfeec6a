// A CDK Pipelines stack that deploys the app from a repository on every push to a branch. Its synth step runs the
// same commands as this project's CI (.ci/run: `npm test`, which installs, builds and runs every test, cdk synth
// included), then `cdk synth` for the deploy; then the pipeline updates itself, publishes the Lambda bundles and
// deploys the stage (stateful stack first, then functions), after a manual approval unless turned off.
import { Duration, Stack, type StackProps } from "aws-cdk-lib";
import { CfnPolicy } from "aws-cdk-lib/aws-iam";
import { BuildSpec, ComputeType, LinuxBuildImage } from "aws-cdk-lib/aws-codebuild";
import { PipelineType } from "aws-cdk-lib/aws-codepipeline";
import { Key } from "aws-cdk-lib/aws-kms";
import { CodePipeline, CodePipelineSource, ManualApprovalStep, ShellStep } from "aws-cdk-lib/pipelines";
import type { Construct, IConstruct } from "constructs";
import { RlpipeError } from "../../core/errors.js";
import { acknowledgeWildcards, wildcardResource } from "./acknowledge.js";
import { HardenedBucket } from "./checkpoint-bucket.js";
import { RlpipeStage, type RlpipeStacksProps } from "./stacks.js";

/** The commands CI runs (.ci/run runs `npm test`), then the synth the deploy uses. */
export const PIPELINE_SYNTH_COMMANDS: readonly string[] = ["npm test", "node_modules/.bin/cdk synth"];

export interface RlpipePipelineStackProps extends StackProps {
  /** The repository, "owner/name", as the connection's provider (GitHub, GitHub Enterprise, GitLab, Bitbucket) names it. */
  readonly repository: string;
  /**
   * The branch whose pushes start the pipeline.
   * @default "main"
   */
  readonly branch?: string;
  /** ARN of the AWS CodeConnections connection to the repository's provider (created and authorized once in the console). */
  readonly connectionArn: string;
  /**
   * Id of the deployed stage (prefixes its stack names: "<id>-RlpipeStateful").
   * @default "Prod"
   */
  readonly stageId?: string;
  /**
   * Settings of the deployed stacks.
   * @default the stacks' defaults
   */
  readonly stacks?: RlpipeStacksProps;
  /**
   * Wait for a manual approval before each deploy.
   * @default true
   */
  readonly manualApproval?: boolean;
}

/** The pipeline: source → synth (CI's commands) → self-update → assets → [approval] → deploy. */
export class RlpipePipelineStack extends Stack {
  readonly pipeline: CodePipeline;
  readonly stage: RlpipeStage;

  constructor(scope: Construct, id: string, props: RlpipePipelineStackProps) {
    super(scope, id, { description: "rlpipe: CDK pipeline deploying the rlpipe stacks", ...props });
    if (!/^[\w.-]+\/[\w.-]+$/.test(props.repository)) {
      throw new RlpipeError("cdk_invalid_prop", `repository must be "owner/name", got ${JSON.stringify(props.repository)}`, { exitCode: 2 });
    }
    if (!/^arn:aws[\w-]*:(codeconnections|codestar-connections):[\w-]+:\d{12}:connection\/[\w-]+$/.test(props.connectionArn)) {
      throw new RlpipeError("cdk_invalid_prop", `connectionArn must be a CodeConnections connection ARN (arn:aws:codeconnections:<region>:<account>:connection/<id>), got ${JSON.stringify(props.connectionArn)}`, { exitCode: 2 });
    }

    // Artifacts in a hardened, access-logged bucket under a rotating KMS key; CodeBuild encrypts its artifacts with
    // the same key (CDK passes the artifact bucket's key to every CodeBuild action).
    const artifactsKey = new Key(this, "ArtifactsKey", { enableKeyRotation: true, description: "rlpipe pipeline artifacts" });
    const artifacts = new HardenedBucket(this, "Artifacts", { encryptionKey: artifactsKey, noncurrentVersionExpiration: Duration.days(7) });

    const synth = new ShellStep("Synth", {
      input: CodePipelineSource.connection(props.repository, props.branch ?? "main", { connectionArn: props.connectionArn, triggerOnPush: true }),
      commands: [...PIPELINE_SYNTH_COMMANDS],
      primaryOutputDirectory: "cdk.out",
    });
    this.pipeline = new CodePipeline(this, "Pipeline", {
      synth,
      pipelineType: PipelineType.V2,
      artifactBucket: artifacts.bucket,
      crossAccountKeys: false,
      selfMutation: true,
      publishAssetsInParallel: false,
      dockerEnabledForSynth: false,
      codeBuildDefaults: {
        buildEnvironment: { buildImage: LinuxBuildImage.STANDARD_7_0, computeType: ComputeType.MEDIUM },
        partialBuildSpec: BuildSpec.fromObject({ phases: { install: { "runtime-versions": { nodejs: "20" } } } }),
      },
      // The test suite runs programs in bubblewrap sandboxes, which need the namespaces a privileged build
      // container allows; no Docker daemon is used (dockerEnabledForSynth stays off).
      synthCodeBuildDefaults: { buildEnvironment: { privileged: true }, timeout: Duration.minutes(60) },
    });
    this.stage = new RlpipeStage(this, props.stageId ?? "Prod", props.stacks);
    this.pipeline.addStage(this.stage, { pre: (props.manualApproval ?? true) ? [new ManualApprovalStep("Approve")] : [] });
    // Build now, so that the acknowledgements below find the constructs (aws/aws-cdk#18440).
    this.pipeline.buildPipeline();

    useConnectionByPrefix(this.pipeline, props.connectionArn);

    // The wildcards of the roles CDK Pipelines defines, each kind with why it stays; any other wildcard fails the synth.
    const codebuildLogs = /^Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:\/aws\/codebuild\/<\w+>:\*$/;
    const codebuildReports = /^Resource::arn:<AWS::Partition>:codebuild:<AWS::Region>:<AWS::AccountId>:report-group\/<\w+>-\*$/;
    acknowledgeWildcards(this.pipeline, [
      {
        finding: /^Action::s3:(GetObject|GetBucket|List|Abort|DeleteObject)\*$/,
        reason: "CDK Pipelines grants its roles the artifact bucket through Bucket.grantRead/grantReadWrite, whose action groups end in '*'; every such statement names only this pipeline's artifact bucket and its objects",
      },
      {
        finding: () => wildcardResource(this, artifacts.bucket.arnForObjects("*")),
        reason: "the pipeline's own artifact bucket: CodePipeline names each artifact object per execution",
      },
      {
        finding: /^Action::kms:(GenerateDataKey|ReEncrypt)\*$/,
        reason: "granted on the pipeline's artifact key only (the statement's resource is that key); the '*' covers the GenerateDataKey and ReEncrypt variants S3 uses with SSE-KMS",
      },
      { finding: codebuildLogs, reason: "the log streams of this CodeBuild project's own log group, which CodeBuild names per build" },
      { finding: codebuildReports, reason: "the test-report groups CodeBuild creates for this project, named after the project" },
      {
        policyPath: /\/Assets\/FileRole\//,
        finding: /^Resource::arn:<AWS::Partition>:(logs:<AWS::Region>:<AWS::AccountId>:log-group:\/aws\/codebuild\/|codebuild:<AWS::Region>:<AWS::AccountId>:report-group\/)\*$/,
        reason: "the asset-publishing role CDK Pipelines shares among its asset CodeBuild projects, whose names are generated after the role: their log groups and report groups in this account and region",
      },
      {
        policyPath: /\/Assets\/FileRole\//,
        finding: /^Resource::\*$/,
        reason: "codebuild:StartBuild/BatchGetBuilds/StopBuild for the asset-publishing projects CDK Pipelines generates (the role is shared by all of them)",
      },
      {
        policyPath: /\/UpdatePipeline\/SelfMutation\//,
        finding: /^Resource::\*$/,
        reason: "self-mutation reads stack status (cloudformation:DescribeStacks) and lists the bootstrap bucket (s3:ListBucket) of stacks it cannot name in advance; read-only",
      },
      {
        policyPath: /\/UpdatePipeline\/SelfMutation\//,
        finding: /^Resource::arn:\*:iam::<AWS::AccountId>:role\/\*$/,
        reason: "self-mutation assumes this account's CDK bootstrap roles (deploy, file and image publishing), chosen by their aws-cdk:bootstrap-role tag in the statement's condition; their names carry the bootstrap qualifier and region",
      },
    ]);
  }
}

/**
 * CDK's connection source action grants `codestar-connections:UseConnection` whatever the ARN, but IAM matches an
 * action's service prefix against the resource ARN's: a connection made since the service's rename has a
 * `codeconnections:` ARN and needs `codeconnections:UseConnection` (the Source stage would be refused otherwise).
 * So the grant on `connectionArn` takes the ARN's own prefix. Done where the policies are final (a validation hook
 * runs after policy statements are merged and before templates are written), as an override of that one statement.
 */
export function useConnectionByPrefix(scope: IConstruct, connectionArn: string): void {
  const service = /^arn:[\w-]+:(codeconnections|codestar-connections):/.exec(connectionArn)?.[1];
  if (service === undefined || service === "codestar-connections") return;
  scope.node.addValidation({
    validate: () => {
      for (const policy of scope.node.findAll().filter((c): c is CfnPolicy => c instanceof CfnPolicy)) {
        const doc = Stack.of(policy).resolve(policy.policyDocument) as { Statement?: { Action?: unknown; Resource?: unknown }[] } | undefined;
        (doc?.Statement ?? []).forEach((st, i) => {
          if (st.Action === "codestar-connections:UseConnection" && st.Resource === connectionArn) {
            policy.addPropertyOverride(`PolicyDocument.Statement.${i}.Action`, `${service}:UseConnection`);
          }
        });
      }
      return [];
    },
  });
}
