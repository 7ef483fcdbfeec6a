// A bucket hardened as anchors §5.4 lists, plus the bucket its server access logs go to: HardenedBucket, used as is
// for the pipeline's artifacts, and CheckpointBucket — checkpoints, metrics, run records and uploaded recipes.
import { Duration, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import { PolicyStatement, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import type { IKey } from "aws-cdk-lib/aws-kms";
import { BlockPublicAccess, Bucket, BucketEncryption, type CfnBucket, ObjectOwnership } from "aws-cdk-lib/aws-s3";
import { Construct } from "constructs";

export interface HardenedBucketProps {
  /**
   * How long a non-current object version is kept: an overwritten manifest or a retired checkpoint stays
   * recoverable this long, then its bytes stop costing.
   * @default Duration.days(30)
   */
  readonly noncurrentVersionExpiration?: Duration;
  /**
   * How long the server access logs are kept.
   * @default Duration.days(365)
   */
  readonly accessLogsExpiration?: Duration;
  /**
   * A customer-managed KMS key for the bucket (SSE-KMS with an S3 Bucket Key, so large checkpoint uploads do
   * not make a KMS call per part). The access-log bucket always uses S3-managed keys: S3 server access
   * logging cannot write to an SSE-KMS bucket.
   * @default S3-managed keys (SSE-S3)
   */
  readonly encryptionKey?: IKey;
  /**
   * Send the bucket's object events to Amazon EventBridge (set on the bucket itself: no bucket-notification
   * custom resource is involved).
   * @default false (CheckpointBucket: true)
   */
  readonly eventBridgeEnabled?: boolean;
}

/**
 * An S3 bucket with all public access blocked, TLS 1.2 or later required, encryption, ACLs disabled (bucket owner
 * enforced), versioning, incomplete multipart uploads aborted after a day, non-current versions expired, server
 * access logs to a second bucket (hardened and versioned alike), and both buckets kept when the stack is deleted.
 */
export class HardenedBucket extends Construct {
  /** The bucket. */
  readonly bucket: Bucket;
  /** The bucket the server access logs of `bucket` go to (prefix `access-logs/`). */
  readonly accessLogsBucket: Bucket;

  constructor(scope: Construct, id: string, props: HardenedBucketProps = {}) {
    super(scope, id);
    const hardened = {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      minimumTLSVersion: 1.2,
      objectOwnership: ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
    } as const;
    // Versioned like the bucket it logs: a deleted or overwritten log object stays recoverable as a non-current
    // version for as long as a non-current checkpoint does.
    this.accessLogsBucket = new Bucket(this, "AccessLogs", {
      ...hardened,
      encryption: BucketEncryption.S3_MANAGED,
      versioned: true,
      lifecycleRules: [
        { id: "expire-access-logs", expiration: props.accessLogsExpiration ?? Duration.days(365), noncurrentVersionExpiration: props.noncurrentVersionExpiration ?? Duration.days(30) },
        // What expiration leaves behind in a versioned bucket: a delete marker per log object, once its versions are gone.
        { id: "remove-expired-delete-markers", expiredObjectDeleteMarker: true },
      ],
    });
    Validations.of(this.accessLogsBucket).acknowledge({
      id: "AwsSolutions-S1",
      reason: "this bucket is the server-access-log target of its sibling bucket; logging it too would need a third bucket, and that one a fourth",
    });

    this.bucket = new Bucket(this, "Bucket", {
      ...hardened,
      ...(props.encryptionKey === undefined
        ? { encryption: BucketEncryption.S3_MANAGED }
        : { encryption: BucketEncryption.KMS, encryptionKey: props.encryptionKey, bucketKeyEnabled: true }),
      versioned: true,
      lifecycleRules: [
        { id: "abort-incomplete-multipart-uploads", abortIncompleteMultipartUploadAfter: Duration.days(1) },
        { id: "expire-noncurrent-versions", noncurrentVersionExpiration: props.noncurrentVersionExpiration ?? Duration.days(30) },
      ],
    });

    // Access logging on the L1 resource with the log-delivery bucket policy written here, rather than through the
    // L2 `serverAccessLogsBucket` prop: without the feature flag `@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy`
    // (an app that predates it) the L2 grants through an ACL, which a bucket with ACLs disabled rejects.
    const cfnBucket = this.bucket.node.defaultChild as CfnBucket;
    cfnBucket.loggingConfiguration = { destinationBucketName: this.accessLogsBucket.bucketName, logFilePrefix: "access-logs/" };
    this.accessLogsBucket.addToResourcePolicy(new PolicyStatement({
      sid: "S3ServerAccessLogsDelivery",
      principals: [new ServicePrincipal("logging.s3.amazonaws.com")],
      actions: ["s3:PutObject"],
      resources: [this.accessLogsBucket.arnForObjects("access-logs/*")],
      conditions: { ArnLike: { "aws:SourceArn": this.bucket.bucketArn }, StringEquals: { "aws:SourceAccount": Stack.of(this).account } },
    }));
    if (props.eventBridgeEnabled === true) cfnBucket.notificationConfiguration = { eventBridgeConfiguration: { eventBridgeEnabled: true } };
  }
}

/** Settings of a CheckpointBucket: a HardenedBucket's. */
export type CheckpointBucketProps = HardenedBucketProps;

/**
 * The bucket for checkpoints, metrics, run records and uploaded recipes: a HardenedBucket whose object events go to
 * EventBridge by default, so that a recipe uploaded under the console's recipe prefix can trigger a deploy.
 */
export class CheckpointBucket extends HardenedBucket {
  constructor(scope: Construct, id: string, props: CheckpointBucketProps = {}) {
    super(scope, id, { ...props, eventBridgeEnabled: props.eventBridgeEnabled ?? true });
  }
}
