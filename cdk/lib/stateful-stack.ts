// The stateful half: the checkpoint bucket (with its access-log bucket) and the secret, in a stack of their own with
// termination protection, so that replacing or deleting the functions never touches a checkpoint (anchors §5.9).
// Construct ids here are the resources' logical ids: never rename them (that replaces the bucket).
import { CfnOutput, Stack, type StackProps } from "aws-cdk-lib";
import type { Construct } from "constructs";
import { CheckpointBucket, type CheckpointBucketProps } from "./checkpoint-bucket.js";
import { RlpipeSecret, type RlpipeSecretProps } from "./secret.js";

export interface RlpipeStatefulStackProps extends StackProps {
  /**
   * Settings of the checkpoint bucket.
   * @default CheckpointBucket's defaults (SSE-S3, non-current versions kept 30 days, access logs 365 days)
   */
  readonly bucket?: CheckpointBucketProps;
  /**
   * Settings of the functions' secret.
   * @default RlpipeSecret's defaults (AWS-managed key)
   */
  readonly secret?: RlpipeSecretProps;
}

/** The checkpoint bucket and the functions' secret; termination protection on unless the props turn it off. */
export class RlpipeStatefulStack extends Stack {
  readonly checkpoints: CheckpointBucket;
  readonly secret: RlpipeSecret;

  constructor(scope: Construct, id: string, props: RlpipeStatefulStackProps = {}) {
    super(scope, id, { description: "rlpipe: checkpoint bucket and function secret (stateful)", terminationProtection: true, ...props });
    this.checkpoints = new CheckpointBucket(this, "Checkpoints", props.bucket);
    this.secret = new RlpipeSecret(this, "Secret", props.secret);
    new CfnOutput(this, "BucketName", { value: this.checkpoints.bucket.bucketName, description: "checkpoints and metrics (runs/), run records (state/), recipes that trigger a deploy (recipes/)" });
    new CfnOutput(this, "SecretArn", { value: this.secret.secret.secretArn, description: "put E2B_API_KEY and RLPIPE_RUNS_SECRET into this secret's JSON (aws secretsmanager put-secret-value)" });
  }
}
