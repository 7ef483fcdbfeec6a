// The CDK app (cdk/): every stack synthesized in this process (Template.fromStack, with cdk.json's feature flags)
// and through the pinned CLI exactly as CI and a user run it (`node_modules/.bin/cdk synth` with cdk.json, no AWS
// credentials, no Docker); each security property asserted on the templates; cdk-nag AwsSolutions and the
// CloudFormation validator bundled in aws-cdk-lib with nothing unacknowledged (and shown able to fail); cfn-lint on
// every synthesized template; one snapshot per stack; and the synthesized Lambda bundles run in a fresh Node process
// with no node_modules in reach: the reward bundle runs code through the strict E2B fake, the runs bundle presigns,
// the console bundle plans a deploy.
//
// Snapshots: test/fixtures/cdk/<stack>.template.json, asset hashes replaced by "<sha256>". After an intended change,
// UPDATE_SNAPSHOTS=1 node --test dist/test/cdk.test.js rewrites them (then review the diff and commit it).
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { App, Duration, Stack, Stage, Validations } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { Bucket } from "aws-cdk-lib/aws-s3";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { AwsSolutionsChecks } from "cdk-nag";
import { CONTEXT_KEYS, type RlpipeApp, defineRlpipeApp } from "../cdk/lib/app.js";
import { findingName } from "../cdk/lib/acknowledge.js";
import { findLockFile, lambdaEntry, requireLocalEsbuild } from "../cdk/lib/entries.js";
import { FUNCTION_ENV } from "../cdk/lib/function.js";
import { CheckpointBucket, ConsoleFunctions, RewardFunction, RlpipePipelineStack, RlpipeSecret, RunsFunction, SECRET_KEYS } from "../cdk/lib/index.js";
import { runToken } from "../functions/runs.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { fakeE2bKey, fakeHuaweiAk, fakeHuaweiSk } from "./fakes/credentials.js";
import { lambdaEvent, parseResult } from "./fakes/platform-events.js";
import { FIXTURES, ROOT, recipeText } from "./helpers.js";

const CDK_JSON = JSON.parse(readFileSync(join(ROOT, "cdk.json"), "utf8")) as { app: string; context: Record<string, unknown> };
/** The pipeline's context: a placeholder connection in an account that cannot exist (nothing is deployed). */
const PIPELINE_CONTEXT = {
  [CONTEXT_KEYS.pipelineRepository]: "example-org/rlpipe",
  [CONTEXT_KEYS.pipelineConnectionArn]: "arn:aws:codeconnections:us-east-1:000000000000:connection/00000000-0000-4000-8000-000000000000",
};
const STACKS = ["RlpipeStateful", "RlpipeFunctions", "RlpipePipeline"] as const;
const SNAPSHOTS = join(FIXTURES, "cdk");
/** One asset output directory for every in-process app: the bundles are made once (CDK caches them by outdir). */
const OUTDIR = mkdtempSync(join(tmpdir(), "rlpipe-cdk-"));
const T = { timeout: 180_000 };
after(() => rmSync(OUTDIR, { recursive: true, force: true }));

let seq = 0;
/** A fresh app with cdk.json's context, as `cdk synth` builds it. */
function newApp(context: Record<string, unknown> = {}): App {
  return new App({ outdir: join(OUTDIR, `app-${++seq}`), context: { ...CDK_JSON.context, ...context } });
}

/** A template with asset hashes (content-addressed: they change with any function code) made stable. */
function normalized(template: unknown): unknown {
  return JSON.parse(JSON.stringify(template).replace(/[0-9a-f]{64}/g, "<sha256>"));
}

/** Acknowledgements recorded on the construct tree: rule id → reasons. */
function acknowledgements(root: App): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const c of root.node.findAll()) {
    for (const entry of c.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, value] of Object.entries(entry.data as Record<string, unknown>)) {
        const reason = typeof value === "string" ? value : String((value as { reason?: unknown }).reason ?? JSON.stringify(value));
        // aws-cdk-lib files some ids under "Annotation::" (cdk-nag strips it when it looks them up).
        const rule = id.replace(/^annotation::/i, "");
        if (!out.has(rule)) out.set(rule, new Set());
        out.get(rule)!.add(reason);
      }
    }
  }
  return out;
}

interface Violation { readonly ruleName: string; readonly severity?: string; readonly description?: string; readonly violatingConstructs?: readonly { readonly constructPath?: string }[] }
interface Report { readonly pluginReports: readonly { readonly pluginName?: string; readonly violations?: readonly Violation[] }[] }
const violationsOf = (r: Report) => r.pluginReports.flatMap((p) => (p.violations ?? []).map((v) => ({ plugin: p.pluginName, ...v })));
const readReport = (dir: string) => JSON.parse(readFileSync(join(dir, "validation-report.json"), "utf8")) as Report;
/** "<rule> at <construct path>" for each violation of a report. */
const findings = (r: Report) => violationsOf(r).flatMap((v) => (v.violatingConstructs ?? [{}]).map((c) => `${v.ruleName} at ${c.constructPath ?? "?"}`));

describe("cdk: the app synthesized in this process (Template.fromStack)", () => {
  let app: App;
  let rlpipe: RlpipeApp;
  const t = {} as Record<(typeof STACKS)[number], Template>;

  before(() => {
    app = newApp(PIPELINE_CONTEXT);
    rlpipe = defineRlpipeApp(app);
    t.RlpipeStateful = Template.fromStack(rlpipe.stateful);
    t.RlpipeFunctions = Template.fromStack(rlpipe.functions);
    t.RlpipePipeline = Template.fromStack(rlpipe.pipeline!);
  });

  it("defines the stateful, functions and pipeline stacks, env-agnostic; the stateful one with termination protection", () => {
    assert.deepEqual(app.node.children.filter((c) => c instanceof Stack).map((s) => s.node.id).sort(), [...STACKS].sort());
    assert.equal(rlpipe.stateful.terminationProtection, true);
    assert.equal(rlpipe.functions.terminationProtection, false);
    for (const s of [rlpipe.stateful, rlpipe.functions, rlpipe.pipeline!]) {
      assert.ok(s.environment === "aws://unknown-account/unknown-region", `${s.stackName} is env-agnostic (no lookups, no account in the templates)`);
    }
    const withoutPipeline = defineRlpipeApp(newApp());
    assert.equal(withoutPipeline.pipeline, undefined, "without the pipeline context only the two app stacks are defined");
  });

  it("checkpoint bucket: all public access blocked, SSE, ACLs off, versioned, lifecycle (multipart 1 day, non-current 30 days), access logs, EventBridge, retained", () => {
    const tpl = t.RlpipeStateful;
    const logsBucket = Object.keys(tpl.findResources("AWS::S3::Bucket", { Properties: { LifecycleConfiguration: { Rules: Match.arrayWith([Match.objectLike({ Id: "expire-access-logs" })]) } } }));
    assert.equal(logsBucket.length, 1);
    tpl.hasResourceProperties("AWS::S3::Bucket", {
      PublicAccessBlockConfiguration: { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }] },
      OwnershipControls: { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] },
      VersioningConfiguration: { Status: "Enabled" },
      LifecycleConfiguration: {
        Rules: Match.arrayWith([
          Match.objectLike({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: "Enabled" }),
          Match.objectLike({ NoncurrentVersionExpiration: { NoncurrentDays: 30 }, Status: "Enabled" }),
        ]),
      },
      LoggingConfiguration: { DestinationBucketName: { Ref: logsBucket[0] }, LogFilePrefix: "access-logs/" },
      NotificationConfiguration: { EventBridgeConfiguration: { EventBridgeEnabled: true } },
    });
    // Both buckets: every hardening property, and kept when the stack goes.
    const buckets = tpl.findResources("AWS::S3::Bucket");
    assert.equal(Object.keys(buckets).length, 2);
    for (const [id, b] of Object.entries(buckets) as [string, { DeletionPolicy?: string; UpdateReplacePolicy?: string; Properties: Record<string, any> }][]) {
      assert.equal(b.DeletionPolicy, "Retain", id);
      assert.equal(b.UpdateReplacePolicy, "Retain", id);
      assert.deepEqual(b.Properties["PublicAccessBlockConfiguration"], { BlockPublicAcls: true, BlockPublicPolicy: true, IgnorePublicAcls: true, RestrictPublicBuckets: true }, id);
      assert.deepEqual(b.Properties["OwnershipControls"], { Rules: [{ ObjectOwnership: "BucketOwnerEnforced" }] }, id);
      assert.ok(b.Properties["BucketEncryption"] !== undefined, `${id} is encrypted`);
      assert.deepEqual(b.Properties["VersioningConfiguration"], { Status: "Enabled" }, `${id} is versioned`);
    }
    // The access-log bucket's versions: non-current ones expire like the checkpoints', delete markers are cleaned up.
    tpl.hasResourceProperties("AWS::S3::Bucket", {
      LifecycleConfiguration: {
        Rules: [
          { Id: "expire-access-logs", ExpirationInDays: 365, NoncurrentVersionExpiration: { NoncurrentDays: 30 }, Status: "Enabled" },
          { Id: "remove-expired-delete-markers", ExpiredObjectDeleteMarker: true, Status: "Enabled" },
        ],
      },
    });
    // The pipeline's artifact bucket and its access-log bucket too.
    for (const [id, b] of Object.entries(t.RlpipePipeline.findResources("AWS::S3::Bucket")) as [string, { Properties: Record<string, unknown> }][]) {
      assert.deepEqual(b.Properties["VersioningConfiguration"], { Status: "Enabled" }, `${id} is versioned`);
    }
  });

  it("bucket policies: deny requests without TLS and below TLS 1.2 on both buckets; log delivery only from the checkpoint bucket", () => {
    const tpl = t.RlpipeStateful;
    tpl.resourceCountIs("AWS::S3::BucketPolicy", 2);
    for (const policy of Object.values(tpl.findResources("AWS::S3::BucketPolicy")) as { Properties: { PolicyDocument: { Statement: any[] } } }[]) {
      const st = policy.Properties.PolicyDocument.Statement;
      assert.ok(st.some((s) => s.Effect === "Deny" && s.Action === "s3:*" && s.Condition?.Bool?.["aws:SecureTransport"] === "false"), "deny without TLS");
      assert.ok(st.some((s) => s.Effect === "Deny" && s.Action === "s3:*" && s.Condition?.NumericLessThan?.["s3:TlsVersion"] === 1.2), "deny TLS < 1.2");
    }
    tpl.hasResourceProperties("AWS::S3::BucketPolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([Match.objectLike({
          Sid: "S3ServerAccessLogsDelivery", Effect: "Allow", Principal: { Service: "logging.s3.amazonaws.com" }, Action: "s3:PutObject",
          Condition: { ArnLike: { "aws:SourceArn": { "Fn::GetAtt": [Match.stringLikeRegexp("^CheckpointsBucket"), "Arn"] } }, StringEquals: { "aws:SourceAccount": { Ref: "AWS::AccountId" } } },
        })]),
      },
    });
  });

  it("secret: the JSON keys the functions read, the token generated; each function gets the ARN and a read grant, never a value", () => {
    t.RlpipeStateful.hasResourceProperties("AWS::SecretsManager::Secret", {
      GenerateSecretString: {
        GenerateStringKey: SECRET_KEYS.sandboxToken, PasswordLength: 48, ExcludePunctuation: true,
        SecretStringTemplate: JSON.stringify({ [SECRET_KEYS.e2bApiKey]: "", [SECRET_KEYS.runsSecret]: "", [SECRET_KEYS.consoleToken]: "" }),
      },
    });
    t.RlpipeStateful.hasOutput("SecretArn", {});
    const fns = t.RlpipeFunctions.findResources("AWS::Lambda::Function");
    assert.equal(Object.keys(fns).length, 3);
    for (const [id, fn] of Object.entries(fns) as [string, { Properties: { Environment: { Variables: Record<string, unknown> } } }][]) {
      const vars = fn.Properties.Environment.Variables;
      assert.match(JSON.stringify(vars[FUNCTION_ENV.secretArn]), /^\{"Fn::ImportValue":"RlpipeStateful:ExportsOutputRefSecret\w+"\}$/, `${id}: the secret's ARN from the stateful stack`);
      for (const name of Object.values(SECRET_KEYS)) assert.equal(vars[name], undefined, `${id} has no ${name} in its environment`);
    }
    // A read grant on that ARN in every function's policy.
    const policies = Object.values(t.RlpipeFunctions.findResources("AWS::IAM::Policy")) as { Properties: { PolicyDocument: { Statement: any[] } } }[];
    assert.equal(policies.length, 3);
    for (const p of policies) {
      assert.ok(p.Properties.PolicyDocument.Statement.some((s) => JSON.stringify(s.Action) === JSON.stringify(["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"])
        && String(s.Resource["Fn::ImportValue"]).startsWith("RlpipeStateful:ExportsOutputRefSecret")));
    }
  });

  it("functions: Node.js 22 on arm64, index.handler of an ES module bundle, reserved concurrency 20/10/2, own log group kept 30 days, own role without managed policies", () => {
    const tpl = t.RlpipeFunctions;
    for (const [name, reserved] of [["Reward", 20], ["Runs", 10], ["Console", 2]] as const) {
      tpl.hasResourceProperties("AWS::Lambda::Function", {
        Runtime: "nodejs22.x", Architectures: ["arm64"], Handler: "index.handler", ReservedConcurrentExecutions: reserved,
        Role: { "Fn::GetAtt": [Match.stringLikeRegexp(`^${name}Role`), "Arn"] },
        LoggingConfig: { LogGroup: { Ref: Match.stringLikeRegexp(`^${name}Logs`) } },
      });
    }
    tpl.resourcePropertiesCountIs("AWS::Logs::LogGroup", { RetentionInDays: 30 }, 3);
    for (const [id, role] of Object.entries(tpl.findResources("AWS::IAM::Role")) as [string, { Properties: Record<string, unknown> }][]) {
      assert.equal(role.Properties["ManagedPolicyArns"], undefined, `${id} has no managed policy`);
    }
  });

  it("least privilege: reward reads the secret only; runs reads and writes objects under runs/ only; console under state/ (read-write), recipes/ (read) and the run pages under runs/ (read)", () => {
    const tpl = t.RlpipeFunctions;
    const bucketArn = { "Fn::ImportValue": Match.stringLikeRegexp("^RlpipeStateful:ExportsOutputFnGetAttCheckpointsBucket.*Arn") };
    const objects = (keys: string) => ({ "Fn::Join": ["", [bucketArn, `/${keys}`]] });
    const list = (keys: string) => ({ Action: "s3:ListBucket", Condition: { StringLike: { "s3:prefix": keys } }, Effect: "Allow", Resource: bucketArn });
    const logs = (name: string) => ({ Action: ["logs:CreateLogStream", "logs:PutLogEvents"], Effect: "Allow", Resource: { "Fn::GetAtt": [Match.stringLikeRegexp(`^${name}Logs`), "Arn"] } });
    const secret = { Action: ["secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"], Effect: "Allow", Resource: { "Fn::ImportValue": Match.stringLikeRegexp("^RlpipeStateful:ExportsOutputRefSecret") } };
    const rw = ["s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:GetObjectVersion", "s3:ListMultipartUploadParts", "s3:PutObject"];
    const policy = (name: string, statements: unknown[]) => tpl.hasResourceProperties("AWS::IAM::Policy", {
      Roles: [{ Ref: Match.stringLikeRegexp(`^${name}Role`) }],
      PolicyDocument: { Statement: Match.arrayEquals(statements) },
    });
    policy("Reward", [logs("Reward"), secret]);
    policy("Runs", [
      logs("Runs"), secret,
      { Action: rw, Effect: "Allow", Resource: objects("runs/*") },
      list("runs/*"),
      // Resuming a multipart upload: ListBucketMultipartUploads has no s3:prefix key (bucket-prefix.ts).
      { Action: "s3:ListBucketMultipartUploads", Effect: "Allow", Resource: bucketArn },
    ]);
    policy("Console", [
      logs("Console"), secret,
      { Action: ["s3:DeleteObject", "s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"], Effect: "Allow", Resource: objects("state/*") },
      list("state/*"),
      // Recipes, and (the report action) each run's page where the runs function keeps the runs' outputs — nothing
      // else there (CDK merges the two read statements).
      { Action: ["s3:GetObject", "s3:GetObjectVersion"], Effect: "Allow", Resource: [objects("recipes/*"), objects("runs/*/report.html")] },
      list("recipes/*"),
      list("runs/*/report.html"),
      { Action: ["sqs:GetQueueAttributes", "sqs:GetQueueUrl", "sqs:SendMessage"], Effect: "Allow", Resource: { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleFailedInvocations"), "Arn"] } },
    ]);
  });

  it("every s3:ListBucket the app grants is scoped by an s3:prefix condition; only the runs function lists multipart uploads (no s3:prefix key exists for it)", () => {
    for (const name of ["Runs", "Console"]) {
      t.RlpipeFunctions.hasResourceProperties("AWS::IAM::Policy", {
        Roles: [{ Ref: Match.stringLikeRegexp(`^${name}Role`) }],
        PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: "s3:ListBucket", Condition: { StringLike: { "s3:prefix": Match.stringLikeRegexp("^[a-z]+/\\*") } } })]) },
      });
    }
    const listings: { role: string; action: string; condition: unknown }[] = [];
    for (const p of Object.values(t.RlpipeFunctions.findResources("AWS::IAM::Policy")) as { Properties: { Roles: { Ref: string }[]; PolicyDocument: { Statement: any[] } } }[]) {
      for (const st of p.Properties.PolicyDocument.Statement) {
        for (const action of [st.Action].flat() as string[]) {
          if (/^s3:List(Bucket|\*)/.test(action)) listings.push({ role: p.Properties.Roles[0]!.Ref, action, condition: st.Condition });
        }
      }
    }
    const unscoped = listings.filter((l) => l.action === "s3:ListBucket" && (l.condition as any)?.StringLike?.["s3:prefix"] === undefined);
    assert.deepEqual(unscoped, [], "no listing of a whole bucket");
    assert.deepEqual(listings.filter((l) => l.action !== "s3:ListBucket").map((l) => [l.role.replace(/Role.*$/, ""), l.action]), [["Runs", "s3:ListBucketMultipartUploads"]]);
    assert.equal(listings.filter((l) => l.action === "s3:ListBucket").length, 4, "runs/, state/, recipes/ and the run pages");
  });

  it("run stores of the console: read of their run pages only (any bucket, any prefix), each listing scoped to the pages", () => {
    const a = newApp();
    const stack = new Stack(a, "RunStores");
    const secret = new Secret(stack, "S");
    const bucket = new Bucket(stack, "B");
    const other = new CheckpointBucket(stack, "Other", {}).bucket;
    const consoleFns = new ConsoleFunctions(stack, "Console", { secret, bucket, recipeTrigger: false, runStores: [{ bucket, prefix: "jobs/" }, { bucket: other, prefix: "team/runs/" }] });
    assert.deepEqual(consoleFns.runStores.map((r) => r.prefix), ["jobs/", "team/runs/"]);
    const tpl = Template.fromStack(stack);
    const arn = (id: string) => ({ "Fn::GetAtt": [Match.stringLikeRegexp(`^${id}`), "Arn"] });
    for (const [id, prefix] of [["B", "jobs/"], ["Other", "team/runs/"]] as const) {
      tpl.hasResourceProperties("AWS::IAM::Policy", {
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Action: ["s3:GetObject", "s3:GetObjectVersion"], Resource: Match.arrayWith([{ "Fn::Join": ["", [arn(id), `/${prefix}*/report.html`]] }]) }),
            Match.objectLike({ Action: "s3:ListBucket", Condition: { StringLike: { "s3:prefix": `${prefix}*/report.html` } }, Resource: arn(id) }),
          ]),
        },
      });
    }
    assert.throws(() => new ConsoleFunctions(stack, "Bad", { secret, bucket, recipeTrigger: false, runStores: [{ bucket, prefix: "/runs" }] }), /runStores\[0\]\.prefix must be a key prefix/);
  });

  it("endpoints: reward and runs behind Function URLs whose callers the function authenticates by token; the console has none by default", () => {
    const tpl = t.RlpipeFunctions;
    tpl.resourceCountIs("AWS::Lambda::Url", 2);
    for (const name of ["Reward", "Runs"]) {
      tpl.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE", InvokeMode: "BUFFERED", TargetFunctionArn: { "Fn::GetAtt": [Match.stringLikeRegexp(`^${name}Function`), "Arn"] } });
    }
    const outputs = Object.keys(tpl.toJSON()["Outputs"] as Record<string, unknown>);
    for (const out of ["RewardUrl", "RunsUrl"]) assert.equal(outputs.filter((o) => o.startsWith(out)).length, 1, out);
    assert.equal(outputs.filter((o) => o.startsWith("ConsoleUrl")).length, 0);
  });

  it("\"aws-iam\" auth: the reward URL takes SigV4 (AWS_IAM) and grantInvokeUrl lets a role call it; the console's optional URL is token-checked", () => {
    const a = newApp();
    const stack = new Stack(a, "IamAuth");
    const secret = new Secret(stack, "S");
    const reward = new RewardFunction(stack, "Reward", { secret, auth: "aws-iam" });
    const caller = new Role(stack, "Trainer", { assumedBy: new ServicePrincipal("ec2.amazonaws.com") });
    reward.grantInvokeUrl(caller);
    const consoleFns = new ConsoleFunctions(stack, "Console", { secret, bucket: new Bucket(stack, "B"), httpEndpoint: true, recipeTrigger: false });
    assert.equal(consoleFns.recipeRule, undefined);
    const tpl = Template.fromStack(stack);
    tpl.hasResourceProperties("AWS::Lambda::Url", { AuthType: "AWS_IAM", TargetFunctionArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^RewardFunction"), "Arn"] } });
    tpl.hasResourceProperties("AWS::Lambda::Url", { AuthType: "NONE", TargetFunctionArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleFunction"), "Arn"] } });
    tpl.hasResourceProperties("AWS::IAM::Policy", {
      Roles: [{ Ref: Match.stringLikeRegexp("^Trainer") }],
      PolicyDocument: { Statement: Match.arrayWith([Match.objectLike({ Action: "lambda:InvokeFunctionUrl", Condition: { StringEquals: { "lambda:FunctionUrlAuthType": "AWS_IAM" } } })]) },
    });
    tpl.resourceCountIs("AWS::Events::Rule", 0);
  });

  it("alarms: errors and throttles of each function, 5-minute sums, at least one", () => {
    const tpl = t.RlpipeFunctions;
    tpl.resourceCountIs("AWS::CloudWatch::Alarm", 7);
    for (const name of ["Reward", "Runs", "Console"]) {
      for (const metric of ["Errors", "Throttles"]) {
        tpl.hasResourceProperties("AWS::CloudWatch::Alarm", {
          Namespace: "AWS/Lambda", MetricName: metric, Statistic: "Sum", Period: 300, Threshold: 1, EvaluationPeriods: 1,
          ComparisonOperator: "GreaterThanOrEqualToThreshold", TreatMissingData: "notBreaching",
          Dimensions: [{ Name: "FunctionName", Value: { Ref: Match.stringLikeRegexp(`^${name}Function`) } }],
        });
      }
    }
  });

  it("recipe uploads: an EventBridge rule on the bucket's Object Created events under recipes/ invokes the console function with the event as it comes", () => {
    const tpl = t.RlpipeFunctions;
    tpl.resourceCountIs("AWS::Events::Rule", 1);
    tpl.hasResourceProperties("AWS::Events::Rule", {
      EventPattern: {
        source: ["aws.s3"], "detail-type": ["Object Created"],
        detail: { bucket: { name: [{ "Fn::ImportValue": Match.stringLikeRegexp("^RlpipeStateful:ExportsOutputRefCheckpointsBucket") }] }, object: { key: [{ prefix: "recipes/" }] } },
      },
      Targets: [{
        Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleFunction"), "Arn"] }, Id: Match.anyValue(),
        RetryPolicy: { MaximumRetryAttempts: 4, MaximumEventAgeInSeconds: 3600 },
        DeadLetterConfig: { Arn: { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleFailedInvocations"), "Arn"] } },
      }],
    });
    tpl.hasResourceProperties("AWS::Lambda::Permission", {
      Action: "lambda:InvokeFunction", Principal: "events.amazonaws.com",
      FunctionName: { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleFunction"), "Arn"] },
      SourceArn: { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleRecipeUploaded"), "Arn"] },
    });
    const vars = (Object.values(tpl.findResources("AWS::Lambda::Function", { Properties: { Description: Match.stringLikeRegexp("console") } }))[0] as { Properties: { Environment: { Variables: Record<string, any> } } }).Properties.Environment.Variables;
    assert.match(JSON.stringify(vars[FUNCTION_ENV.consoleRecipePrefix]), /^\{"Fn::Join":\["",\["s3:\/\/",\{"Fn::ImportValue":"RlpipeStateful:ExportsOutputRefCheckpointsBucket\w+"\},"\/recipes"\]\]\}$/);
    assert.match(JSON.stringify(vars[FUNCTION_ENV.stateStore]), /"\/state"\]\]\}$/);
    assert.equal(vars[FUNCTION_ENV.sandbox], "e2b", "score uses the reward function's sandbox");
  });

  it("a recipe upload's deploy that still fails after Lambda's two retries goes to an encrypted queue (on-failure destination), whose depth raises an alarm", () => {
    const tpl = t.RlpipeFunctions;
    const queue = { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleFailedInvocations"), "Arn"] };
    tpl.hasResourceProperties("AWS::Lambda::EventInvokeConfig", {
      FunctionName: { Ref: Match.stringLikeRegexp("^ConsoleFunction") }, Qualifier: "$LATEST", MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 21600,
      DestinationConfig: { OnFailure: { Destination: queue } },
    });
    tpl.hasResourceProperties("AWS::SQS::Queue", { SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
    tpl.hasResourceProperties("AWS::SQS::QueuePolicy", {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: "Deny", Action: "sqs:*", Condition: { Bool: { "aws:SecureTransport": "false" } } }),
          Match.objectLike({ Effect: "Allow", Action: "sqs:SendMessage", Principal: { Service: "events.amazonaws.com" }, Condition: { ArnEquals: { "aws:SourceArn": { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleRecipeUploaded"), "Arn"] } } } }),
        ]),
      },
    });
    tpl.hasResourceProperties("AWS::CloudWatch::Alarm", {
      Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible", Threshold: 1, ComparisonOperator: "GreaterThanOrEqualToThreshold",
      Dimensions: [{ Name: "QueueName", Value: { "Fn::GetAtt": [Match.stringLikeRegexp("^ConsoleFailedInvocations"), "QueueName"] } }],
    });
    const outputs = Object.keys(tpl.toJSON()["Outputs"] as Record<string, unknown>);
    assert.equal(outputs.filter((o) => o.startsWith("ConsoleFailedInvocationsQueue")).length, 1);
    // Without a topic the alarms have no action (the default app).
    for (const alarm of Object.values(tpl.findResources("AWS::CloudWatch::Alarm")) as { Properties: Record<string, unknown> }[]) assert.equal(alarm.Properties["AlarmActions"], undefined);
  });

  it("the alarm topic comes from context (rlpipe:alarmTopicArn): every alarm of the functions stack notifies it; a malformed ARN fails the synth naming the prop", () => {
    const arn = "arn:aws:sns:us-east-1:000000000000:rlpipe-alarms";
    const withTopic = defineRlpipeApp(newApp({ [CONTEXT_KEYS.alarmTopicArn]: arn }));
    const alarms = Object.entries(Template.fromStack(withTopic.functions).findResources("AWS::CloudWatch::Alarm")) as [string, { Properties: Record<string, unknown> }][];
    assert.equal(alarms.length, 7);
    for (const [id, alarm] of alarms) assert.deepEqual(alarm.Properties["AlarmActions"], [arn], id);
    assert.throws(() => defineRlpipeApp(newApp({ [CONTEXT_KEYS.alarmTopicArn]: "rlpipe-alarms" })), (e: Error & { code?: string }) => e.code === "cdk_invalid_prop" && /alarmTopicArn must be an SNS topic ARN/.test(e.message));
  });

  it("resource counts per stack", () => {
    const counts = (tpl: Template) => {
      const out: Record<string, number> = {};
      for (const r of Object.values(tpl.toJSON()["Resources"] as Record<string, { Type: string }>)) out[r.Type] = (out[r.Type] ?? 0) + 1;
      return out;
    };
    assert.deepEqual(counts(t.RlpipeStateful), { "AWS::S3::Bucket": 2, "AWS::S3::BucketPolicy": 2, "AWS::SecretsManager::Secret": 1 });
    assert.deepEqual(counts(t.RlpipeFunctions), {
      "AWS::CloudWatch::Alarm": 7, "AWS::Events::Rule": 1, "AWS::IAM::Policy": 3, "AWS::IAM::Role": 3, "AWS::Lambda::EventInvokeConfig": 1, "AWS::Lambda::Function": 3,
      "AWS::Lambda::Permission": 5, "AWS::Lambda::Url": 2, "AWS::Logs::LogGroup": 3, "AWS::SQS::Queue": 1, "AWS::SQS::QueuePolicy": 1,
    });
    for (const [type, n] of [["AWS::CodePipeline::Pipeline", 1], ["AWS::CodeBuild::Project", 3], ["AWS::KMS::Key", 1], ["AWS::S3::Bucket", 2]] as const) t.RlpipePipeline.resourceCountIs(type, n);
  });

  it("the pipeline: source from the repository connection, a synth step running CI's commands, no Docker, KMS-encrypted artifacts, then the same two stacks", () => {
    const tpl = t.RlpipePipeline;
    tpl.hasResourceProperties("AWS::CodePipeline::Pipeline", {
      PipelineType: "V2",
      Stages: Match.arrayWith([
        Match.objectLike({ Name: "Source", Actions: [Match.objectLike({ ActionTypeId: Match.objectLike({ Provider: "CodeStarSourceConnection" }), Configuration: Match.objectLike({ ConnectionArn: PIPELINE_CONTEXT[CONTEXT_KEYS.pipelineConnectionArn], FullRepositoryId: "example-org/rlpipe", BranchName: "main" }) })] }),
        Match.objectLike({ Name: "Prod", Actions: Match.arrayWith([Match.objectLike({ Name: "Approve", ActionTypeId: Match.objectLike({ Category: "Approval" }) })]) }),
      ]),
      ArtifactStore: Match.objectLike({ EncryptionKey: Match.objectLike({ Type: "KMS" }) }),
    });
    const synth = Object.values(tpl.findResources("AWS::CodeBuild::Project", { Properties: { Description: Match.stringLikeRegexp("Synth") } }))[0] as { Properties: { Source: { BuildSpec: string }; Environment: Record<string, unknown>; EncryptionKey?: unknown } } | undefined;
    assert.ok(synth !== undefined, "a synth CodeBuild project");
    const spec = JSON.parse(synth.Properties.Source.BuildSpec) as { phases: { build: { commands: string[] }; install?: { "runtime-versions"?: Record<string, string> } } };
    assert.deepEqual(spec.phases.build.commands, ["npm test", "node_modules/.bin/cdk synth"], "the commands .ci/run runs (npm test), then the deploy's synth");
    assert.equal(spec.phases.install?.["runtime-versions"]?.["nodejs"], "20");
    assert.ok(synth.Properties.EncryptionKey !== undefined, "build artifacts encrypted with the pipeline's KMS key");
    tpl.hasResourceProperties("AWS::KMS::Key", { EnableKeyRotation: true });
    // The stage deploys exactly what `cdk deploy` of this app would (aside from names made of the stack's path: its
    // export names, the id of the rule's invoke permission and the Sid of its grant on the failed-invocations queue).
    const stage = rlpipe.pipeline!.stage;
    assert.equal(stage.stateful.terminationProtection, true);
    const pathless = (template: unknown) => normalized(JSON.parse(JSON.stringify(template)
      .replaceAll("Prod-RlpipeStateful:", "RlpipeStateful:").replace(/"ConsoleRecipeUploadedAllowEventRule\w+"/g, '"ConsoleRecipeUploadedAllowEventRule"')
      .replace(/"AllowEventRule\w*ConsoleRecipeUploaded\w+"/g, '"AllowEventRuleConsoleRecipeUploaded"')));
    assert.deepEqual(pathless(Template.fromStack(stage.stateful).toJSON()), pathless(t.RlpipeStateful.toJSON()));
    assert.deepEqual(pathless(Template.fromStack(stage.functions).toJSON()), pathless(t.RlpipeFunctions.toJSON()));
  });

  it("the pipeline's source role may use the connection under the ARN's own service prefix (codeconnections: or codestar-connections:), as IAM requires", () => {
    const useConnection = (tpl: Template) => (Object.values(tpl.findResources("AWS::IAM::Policy")) as { Properties: { PolicyDocument: { Statement: { Action: unknown; Resource: unknown }[] } } }[])
      .flatMap((p) => p.Properties.PolicyDocument.Statement).filter((st) => /UseConnection/.test(JSON.stringify(st.Action)));
    const arn = PIPELINE_CONTEXT[CONTEXT_KEYS.pipelineConnectionArn];
    assert.deepEqual(useConnection(t.RlpipePipeline), [{ Action: "codeconnections:UseConnection", Effect: "Allow", Resource: arn }]);
    assert.ok(!JSON.stringify(t.RlpipePipeline.toJSON()).includes("codestar-connections:"), "no codestar-connections action on a codeconnections ARN");
    const legacyArn = arn.replace(":codeconnections:", ":codestar-connections:");
    const legacy = defineRlpipeApp(newApp({ ...PIPELINE_CONTEXT, [CONTEXT_KEYS.pipelineConnectionArn]: legacyArn }));
    assert.deepEqual(useConnection(Template.fromStack(legacy.pipeline!)), [{ Action: "codestar-connections:UseConnection", Effect: "Allow", Resource: legacyArn }]);
  });

  it("cdk-nag AwsSolutions and the CloudFormation validator report nothing unacknowledged, and every acknowledgement gives a specific reason", (t2) => {
    assert.deepEqual(findings(readReport(app.outdir)), [], "no violation left in validation-report.json");
    for (const s of [rlpipe.stateful, rlpipe.functions, rlpipe.pipeline!, rlpipe.pipeline!.stage.stateful, rlpipe.pipeline!.stage.functions]) {
      const notes = Annotations.fromStack(s);
      assert.deepEqual([...notes.findError("*", Match.anyValue()), ...notes.findWarning("*", Match.anyValue())].map((m) => `${m.id}: ${String(m.entry.data)}`), [], `${s.node.path}: no error or warning annotation`);
    }
    const acks = acknowledgements(app);
    assert.ok(acks.size > 0);
    for (const [id, reasons] of [...acks].sort(([a], [b]) => a.localeCompare(b))) {
      assert.match(id, /^AwsSolutions-(S1|SMG4|L1|SQS3|IAM5\[.+\])$/, `only these kinds of findings are acknowledged: ${id}`);
      for (const reason of reasons) {
        assert.ok(reason.length >= 60, `${id}: the reason says why, specifically: ${JSON.stringify(reason)}`);
        t2.diagnostic(`${id}: ${reason}`);
      }
    }
    assert.equal(acks.get("AwsSolutions-SMG4")?.values().next().value?.startsWith("third-party API key rotated externally"), true);
  });

  it("snapshots: one per stack, asset hashes normalized (UPDATE_SNAPSHOTS=1 rewrites them)", () => {
    const update = process.env["UPDATE_SNAPSHOTS"] === "1";
    if (update) mkdirSync(SNAPSHOTS, { recursive: true });
    for (const name of STACKS) {
      const file = join(SNAPSHOTS, `${name}.template.json`);
      const actual = normalized(t[name].toJSON());
      if (update) writeFileSync(file, `${JSON.stringify(actual, null, 2)}\n`);
      assert.ok(existsSync(file), `${file} is missing: run UPDATE_SNAPSHOTS=1 node --test dist/test/cdk.test.js, review and commit it`);
      assert.deepEqual(actual, JSON.parse(readFileSync(file, "utf8")), `${name} differs from ${file}; if the change is intended, UPDATE_SNAPSHOTS=1 and commit the new snapshot`);
    }
  });
});

/** Runs `fn` with console.error captured (aws-cdk-lib prints a failed validation there), returning what it printed. */
function quietly(fn: () => void): string {
  const printed: string[] = [];
  const original = console.error;
  console.error = (...args: unknown[]) => { printed.push(args.map(String).join(" ")); };
  try { fn(); } finally { console.error = original; }
  return printed.join("\n");
}

describe("cdk: the checks can fail", () => {
  it("cdk-nag fails the synth on an unacknowledged finding, also in a stage's stack and beside an acknowledged wildcard of the same policy", () => {
    const a = newApp();
    Validations.of(a).addPlugins(new AwsSolutionsChecks(a, { verbose: true }));
    const stage = new Stage(a, "Inner");
    const stack = new Stack(stage, "Probe");
    const secret = new RlpipeSecret(stack, "Acknowledged").secret;
    new Secret(stack, "NotAcknowledged");
    const checkpoints = new CheckpointBucket(stack, "Checkpoints");
    const runs = new RunsFunction(stack, "Runs", { secret, bucket: checkpoints.bucket });
    runs.role.addToPrincipalPolicy(new PolicyStatement({ actions: ["s3:GetObject"], resources: [checkpoints.bucket.arnForObjects("other/*")] }));
    const printed = quietly(() => assert.throws(() => a.synth(), /Validation failed/));
    assert.match(printed, /Inner\/Probe\/NotAcknowledged\/Resource/, "the finding is printed where the synth failed");
    const found = findings(readReport(a.outdir));
    assert.equal(found.length, 2, found.join("\n"));
    assert.ok(found.includes("AwsSolutions-SMG4 at Inner/Probe/NotAcknowledged/Resource"), found.join("\n"));
    assert.ok(found.some((f) => /^AwsSolutions-IAM5\[Resource::<CheckpointsBucket\w+\.Arn>\/other\/\*\] at Inner\/Probe\/Runs\/Role\/DefaultPolicy\/Resource$/.test(f)), found.join("\n"));
  });

  it("the CloudFormation validator bundled in aws-cdk-lib runs at synth and fails it on a template error", () => {
    const a = newApp();
    const stack = new Stack(a, "Broken");
    const bucket = new Bucket(stack, "B");
    (bucket.node.defaultChild as import("aws-cdk-lib/aws-s3").CfnBucket).addPropertyOverride("BucketNam", "typo");
    const printed = quietly(() => assert.throws(() => a.synth(), /Validation failed/));
    assert.match(printed, /BucketNam.*Did you mean 'BucketName'\?/);
    const report = readReport(a.outdir);
    assert.ok(violationsOf(report).some((v) => v.plugin === "CloudFormation Validate" && v.severity === "error" && /BucketNam/.test(v.description ?? "")), JSON.stringify(report).slice(0, 800));
  });

  it("props are checked at synth, naming the prop: prefixes, overlapping prefixes, sandbox settings, concurrency, the pipeline's repository and connection", () => {
    const stack = new Stack(newApp(), "Props");
    const secret = new Secret(stack, "S");
    const bucket = new Bucket(stack, "B");
    const code = (fn: () => unknown, want: RegExp) => assert.throws(fn, (e: Error & { code?: string }) => e.code === "cdk_invalid_prop" && want.test(e.message));
    code(() => new RunsFunction(stack, "R1", { secret, bucket, prefix: "runs" }), /prefix must be a key prefix like "runs\/"/);
    code(() => new RunsFunction(stack, "R2", { secret, bucket, prefix: "/runs/" }), /prefix/);
    code(() => new ConsoleFunctions(stack, "C1", { secret, bucket, statePrefix: "recipes/state/" }), /overlap/);
    code(() => new RewardFunction(stack, "W1", { secret, sandbox: "scalebox" }), /needs scaleboxUrls/);
    code(() => new RewardFunction(stack, "W2", { secret, sandbox: "scalebox", scaleboxUrls: ["http://sandbox.example.com"] }), /not an https URL/);
    code(() => new RewardFunction(stack, "W3", { secret, e2bTemplate: "t", sandbox: "scalebox", scaleboxUrls: ["https://s.example.com"] }), /e2bTemplate is used by sandbox "e2b" only/);
    code(() => new RewardFunction(stack, "W4", { secret, reservedConcurrentExecutions: 0 }), /positive integer or "unreserved"/);
    code(() => new RewardFunction(stack, "W5", { secret, sandboxConcurrency: 1.5 }), /sandboxConcurrency/);
    const ok = new RewardFunction(stack, "W6", { secret, reservedConcurrentExecutions: "unreserved", timeout: Duration.seconds(30) });
    assert.equal((ok.function.node.defaultChild as import("aws-cdk-lib/aws-lambda").CfnFunction).reservedConcurrentExecutions, undefined);
    const pipelineApp = newApp();
    code(() => new RlpipePipelineStack(pipelineApp, "P1", { repository: "no-slash", connectionArn: PIPELINE_CONTEXT[CONTEXT_KEYS.pipelineConnectionArn] }), /repository must be "owner\/name"/);
    code(() => new RlpipePipelineStack(pipelineApp, "P2", { repository: "o/r", connectionArn: "arn:aws:iam::000000000000:role/x" }), /connectionArn/);
    assert.throws(() => defineRlpipeApp(newApp({ [CONTEXT_KEYS.pipelineRepository]: "o/r" })), /needs both rlpipe:pipelineRepository and rlpipe:pipelineConnectionArn/);
    assert.throws(() => defineRlpipeApp(newApp({ [CONTEXT_KEYS.sandbox]: "local" })), /rlpipe:sandbox must be one of e2b, scalebox/);
  });
});

describe("cdk: what the constructs rely on", () => {
  it("every environment variable the constructs set is one the function apps read (docs/ARCHITECTURE.md or functions/ sources)", () => {
    const docs = readFileSync(join(ROOT, "docs", "ARCHITECTURE.md"), "utf8");
    const walk = (d: string): string[] => readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(d, e.name)) : e.name.endsWith(".ts") ? [join(d, e.name)] : []));
    const sources = walk(join(ROOT, "functions")).map((f) => readFileSync(f, "utf8")).join("\n");
    for (const name of [...Object.values(FUNCTION_ENV), ...Object.values(SECRET_KEYS)]) {
      assert.ok(sources.includes(`"${name}"`) || docs.includes(`\`${name}\``), `${name} is read by a function app`);
    }
  });

  it("Lambda entries, the lock file and esbuild resolve in this repository and in a project that installed rlpipe under node_modules", () => {
    assert.equal(lambdaEntry("reward"), join(ROOT, "dist", "functions", "entries", "lambda", "reward.js"));
    assert.equal(findLockFile(dirname(lambdaEntry("runs"))), join(ROOT, "package-lock.json"));
    const project = mkdtempSync(join(tmpdir(), "rlpipe-cdk-install-"));
    try {
      const dist = join(project, "node_modules", "rlpipe", "dist");
      mkdirSync(join(dist, "functions", "entries", "lambda"), { recursive: true });
      writeFileSync(join(dist, "functions", "entries", "lambda", "console.js"), "export const handler = 1;\n");
      writeFileSync(join(project, "package-lock.json"), "{}\n");
      const entry = lambdaEntry("console", dist);
      assert.equal(entry, join(dist, "functions", "entries", "lambda", "console.js"));
      assert.equal(findLockFile(dirname(entry)), join(project, "package-lock.json"), "the installing project's lock file");
      requireLocalEsbuild(ROOT);
      assert.throws(() => requireLocalEsbuild(project), (e: Error & { code?: string }) => e.code === "cdk_esbuild_missing", "no esbuild there: a clear error, not a silent switch to Docker");
      assert.throws(() => lambdaEntry("reward", dist), (e: Error & { code?: string }) => e.code === "cdk_entry_missing" && /npm run build/.test(String((e as { hint?: string }).hint)));
      writeFileSync(join(project, "yarn.lock"), "\n");
      assert.throws(() => findLockFile(dirname(entry)), (e: Error & { code?: string }) => e.code === "cdk_lock_file_ambiguous");
    } finally {
      rmSync(project, { recursive: true, force: true });
    }
  });

  it("findingName spells references the way cdk-nag names findings", () => {
    assert.equal(findingName({ "Fn::Join": ["", [{ "Fn::GetAtt": ["B1", "Arn"] }, "/runs/*"]] }), "<B1.Arn>/runs/*");
    assert.equal(findingName({ "Fn::Join": ["", [{ "Fn::ImportValue": "S:Out" }, "/x/*"]] }), "S:Out/x/*");
    assert.equal(findingName({ "Fn::Join": ["", ["arn:", { Ref: "AWS::Partition" }, ":s3:::b/*"]] }), "arn:<AWS::Partition>:s3:::b/*");
    assert.equal(findingName({ "Fn::Sub": "arn:${AWS::Partition}:iam::${AWS::AccountId}:role/*" }), "arn:<AWS::Partition>:iam::<AWS::AccountId>:role/*");
    assert.equal(findingName({ "Fn::GetStackOutput": { StackName: "S", OutputName: "O" } }), JSON.stringify({ "Fn::GetStackOutput": { StackName: "S", OutputName: "O" } }));
  });
});

interface Ran { readonly status: number | null; readonly stdout: string; readonly stderr: string; readonly ms: number }

function run(cmd: string, args: readonly string[], opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs: number }): Promise<Ran> {
  const started = Date.now();
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    const timer = setTimeout(() => { try { process.kill(-child.pid!, "SIGKILL"); } catch { /* gone */ } }, opts.timeoutMs);
    child.on("error", (e) => { clearTimeout(timer); reject(e); });
    child.on("close", (status) => { clearTimeout(timer); resolvePromise({ status, stdout, stderr, ms: Date.now() - started }); });
  });
}
const show = (r: Ran) => `exit ${r.status}\n--- stdout\n${r.stdout.slice(-4000)}\n--- stderr\n${r.stderr.slice(-6000)}`;

/**
 * The environment of the CLI synth: no AWS_* credential or profile, no Docker, no telemetry or version check, npm
 * offline. (Traced with strace here: the synth opens no network connection.) The one AWS_ variable set keeps the
 * CLI's look-up of a default account from asking an instance-metadata endpoint on a machine that has one.
 */
function synthEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^AWS_|^CDK_/.test(k)));
  return {
    ...env,
    AWS_EC2_METADATA_DISABLED: "true",
    HOME: mkdtempSync(join(OUTDIR, "home-")), // no ~/.aws, no ~/.cdk cache
    CDK_DOCKER: join(OUTDIR, "no-docker"), // a Docker bundling attempt fails loudly instead of running
    CDK_DISABLE_CLI_TELEMETRY: "1", CDK_DISABLE_VERSION_CHECK: "1", npm_config_offline: "true", npm_config_update_notifier: "false",
  };
}

describe("cdk: `cdk synth` through the pinned CLI (cdk.json), and what it produces", () => {
  let out = "";
  let synth: Ran;
  const templates: string[] = [];

  before(async () => {
    out = join(OUTDIR, "cli");
    const context = Object.entries(PIPELINE_CONTEXT).flatMap(([k, v]) => ["-c", `${k}=${v}`]);
    synth = await run(join(ROOT, "node_modules", ".bin", "cdk"), ["synth", "--quiet", "--output", out, ...context], { cwd: ROOT, env: synthEnv(), timeoutMs: 170_000 });
    if (synth.status === 0) {
      for (const f of readdirSync(out, { recursive: true }) as string[]) if (f.endsWith(".template.json")) templates.push(join(out, f));
    }
  });

  it("synthesizes every stack with no AWS credentials and no Docker; the validation report holds no error", T, (t2) => {
    assert.equal(synth.status, 0, show(synth));
    assert.ok(!/docker/i.test(synth.stderr.replace(/Docker bundling/g, "")), `no Docker use:\n${synth.stderr}`);
    assert.deepEqual(templates.map((f) => basename(f).replace(/[0-9A-F]{8}\.template\.json$/, "<hash>.template.json")).sort(), [
      "RlpipeFunctions.template.json", "RlpipePipeline.template.json", "RlpipePipelineProdRlpipeFunctions<hash>.template.json",
      "RlpipePipelineProdRlpipeStateful<hash>.template.json", "RlpipeStateful.template.json",
    ]);
    const report = readReport(out);
    const violations = violationsOf(report);
    for (const v of violations) t2.diagnostic(`validation report: ${v.plugin} ${v.ruleName} ${v.severity}: ${v.description}`);
    assert.deepEqual(violations.filter((v) => v.severity === "error" || v.severity === "fatal"), [], "no error from cdk-nag or the CloudFormation validator");
    assert.deepEqual(violations, [], "no warning either (each one looked at: none is expected)");
    t2.diagnostic(`cdk synth (3 stacks + the pipeline's 2-stack stage, 3 esbuild bundles): ${(synth.ms / 1000).toFixed(1)} s`);
  });

  it("cfn-lint passes on every synthesized template (W3005 ignored: CDK's redundant DependsOn on a role, which aws-cdk-lib's own validator ignores too)", T, async (t2) => {
    assert.equal(synth.status, 0, "the synth ran");
    const cfnLint = join(ROOT, ".venv-test", "bin", "cfn-lint");
    assert.ok(existsSync(cfnLint), `${cfnLint} is missing: scripts/setup.sh --test installs it (pinned, and required by moto[server])`);
    const version = spawnSync(cfnLint, ["--version"], { encoding: "utf8" });
    const r = await run(cfnLint, ["--ignore-checks", "W3005", "--", ...templates], { cwd: out, env: process.env, timeoutMs: 120_000 });
    t2.diagnostic(`${version.stdout.trim()} on ${templates.length} templates: ${(r.ms / 1000).toFixed(1)} s`);
    assert.equal(r.status, 0, show(r));
  });

  describe("the synthesized bundles run in a fresh node process, nothing but the bundle in reach", () => {
    let fake: FakeE2B;
    const e2bKey = fakeE2bKey();
    const token = randomBytes(24).toString("hex");
    let work = "";

    before(async () => {
      fake = await FakeE2B.start({ apiKey: e2bKey });
      work = mkdtempSync(join(tmpdir(), "rlpipe-cdk-bundle-"));
      writeFileSync(join(work, "invoke.mjs"), [
        'import { readFileSync, writeFileSync } from "node:fs";',
        "const { handler } = await import(process.argv[2]);",
        'const events = JSON.parse(readFileSync(process.argv[3], "utf8"));',
        "const out = [];",
        'for (const e of events) out.push(await handler(e, { awsRequestId: "req-1", functionName: "rlpipe-bundle-test", getRemainingTimeInMillis: () => 60000 }));',
        'writeFileSync(process.argv[4], JSON.stringify(out));',
        "process.exit(0);",
      ].join("\n"));
    });
    after(async () => {
      await fake.close();
      rmSync(work, { recursive: true, force: true });
    });

    /** The bundle of one function, from the functions template's asset key, copied alone into an empty directory. */
    function bundle(name: "Reward" | "Runs" | "Console"): string {
      const tpl = JSON.parse(readFileSync(join(out, "RlpipeFunctions.template.json"), "utf8")) as { Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string } } }> };
      const fn = Object.entries(tpl.Resources).find(([id, r]) => r.Type === "AWS::Lambda::Function" && id.startsWith(`${name}Function`))![1];
      const hash = fn.Properties.Code!.S3Key!.replace(/\.zip$/, "");
      const dir = join(work, name);
      mkdirSync(dir);
      assert.deepEqual(readdirSync(join(out, `asset.${hash}`)), ["index.mjs"], "one ES module file, nothing beside it");
      copyFileSync(join(out, `asset.${hash}`, "index.mjs"), join(dir, "index.mjs"));
      return join(dir, "index.mjs");
    }

    async function invoke(file: string, events: unknown[], env: Record<string, string>): Promise<ReturnType<typeof parseResult>[] | unknown[]> {
      const evFile = join(dirname(file), "events.json");
      const outFile = join(dirname(file), "results.json");
      writeFileSync(evFile, JSON.stringify(events));
      const r = await run(process.execPath, [join(work, "invoke.mjs"), file, evFile, outFile], { cwd: dirname(file), env: { PATH: process.env["PATH"] ?? "", HOME: dirname(file), ...env }, timeoutMs: 60_000 });
      assert.equal(r.status, 0, show(r));
      return JSON.parse(readFileSync(outFile, "utf8")) as unknown[];
    }

    it("reward: pings, then runs code through the strict E2B fake with the runner embedded at synth", T, async () => {
      const file = bundle("Reward");
      const auth = { authorization: `Bearer ${token}`, "content-type": "application/json" };
      const [ping, ran] = (await invoke(file, [
        lambdaEvent({ method: "GET", path: "/v1/ping" }),
        lambdaEvent({ method: "POST", path: "/run_code", headers: auth, body: { code: "print(6 * 7)", language: "python" } }),
      ], {
        RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost",
        RLPIPE_SANDBOX_TOKEN: token, E2B_API_KEY: e2bKey, RLPIPE_SANDBOX_CONCURRENCY: "1",
      })).map(parseResult);
      assert.deepEqual([ping!.status, ping!.body], [200, "pong"]);
      assert.equal(ran!.status, 200, JSON.stringify(ran!.body));
      assert.equal(ran!.body.run_result.stdout, "42\n");
      const runner = readFileSync(join(ROOT, "adapters", "sandboxes", "harness", "e2b_runner.py"));
      assert.ok(fake.stats.files.some((f) => f.data.equals(runner)), "the runner sent into the sandbox is adapters/sandboxes/harness/e2b_runner.py");
      assert.deepEqual(fake.stats.unknown, []);
    });

    it("runs: presigns a metrics chunk for a run's token (AWS SDK and presigner bundled; the endpoint stays on loopback)", T, async () => {
      const file = bundle("Runs");
      const secret = randomBytes(24).toString("hex");
      const runName = "cdk-bundle-0123abcd.sft";
      const [r] = (await invoke(file, [
        lambdaEvent({ method: "POST", path: `/v1/runs/${runName}/metrics`, headers: { authorization: `Bearer ${runToken(secret, runName)}`, "content-type": "application/json" }, body: { generation: "0123456789abcdef", start: 0, end: 10, md5: "d41d8cd98f00b204e9800998ecf8427e" } }),
      ], {
        RLPIPE_RUNS_STORE: "s3://rlpipe-bundle-test/runs", RLPIPE_RUNS_SECRET: secret, AWS_REGION: "us-east-1",
        AWS_ACCESS_KEY_ID: `AKIA${randomBytes(8).toString("hex").toUpperCase()}`, AWS_SECRET_ACCESS_KEY: randomBytes(20).toString("base64"), S3_ENDPOINT: "http://127.0.0.1:9",
      })).map(parseResult);
      assert.equal(r!.status, 200, JSON.stringify(r!.body));
      assert.match(r!.body.url, /^http:\/\/127\.0\.0\.1:9\/rlpipe-bundle-test\/runs\/.*X-Amz-Signature=/);
    });

    it("console: a dry-run deploy event answers the ModelArts request it would send (the Python shims embedded at synth), sending nothing", T, async () => {
      const file = bundle("Console");
      const [reply] = await invoke(file, [{ action: "deploy", recipe: recipeText("qwen3-1.7b-code-toolcall"), provider: "modelarts", dryRun: true }], {
        HUAWEICLOUD_SDK_AK: fakeHuaweiAk(), HUAWEICLOUD_SDK_SK: fakeHuaweiSk(), HUAWEICLOUD_SDK_PROJECT_ID: "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        HUAWEICLOUD_SDK_REGION: "cn-southwest-2", MODELARTS_ENDPOINT: "http://127.0.0.1:9", OBS_ENDPOINT: "http://127.0.0.1:9",
      }) as Record<string, any>[];
      assert.equal(reply!["ok"], true, JSON.stringify(reply).slice(0, 2000));
      assert.equal(reply!["dryRun"], true);
      assert.equal(reply!["request"].api, "POST /v2/{project_id}/training-jobs");
    });
  });
});
