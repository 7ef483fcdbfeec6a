// The runs function on Lambda: hands a training job short-lived presigned URLs for its checkpoint parts and metrics
// chunks under one prefix of the checkpoint bucket, and commits manifests. It may read and write under that prefix
// only, and read the secret its per-run tokens derive from.
import { Duration } from "aws-cdk-lib";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";
import { checkPrefix, grantPrefix, storeUri } from "./bucket-prefix.js";
import { FUNCTION_ENV, RlpipeFunction, type RlpipeFunctionOptions } from "./function.js";

export interface RunsFunctionProps extends RlpipeFunctionOptions {
  /** The secret with RLPIPE_RUNS_SECRET (per-run tokens are HMACs under it). */
  readonly secret: ISecret;
  /** The bucket the run outputs go to. */
  readonly bucket: IBucket;
  /**
   * Key prefix of the run outputs (checkpoints, manifests, metrics), ending in "/".
   * @default "runs/"
   */
  readonly prefix?: string;
}

/** The runs function with an HTTPS endpoint (per-run token auth) and read/write access to one prefix of the bucket. */
export class RunsFunction extends RlpipeFunction {
  /** The prefix the function reads and writes, ending in "/". */
  readonly prefix: string;

  constructor(scope: Construct, id: string, props: RunsFunctionProps) {
    const prefix = checkPrefix("prefix", props.prefix ?? "runs/");
    super(scope, id, {
      name: "runs",
      description: "rlpipe runs function (presigned checkpoint and metrics uploads)",
      secret: props.secret,
      memoryMiB: 512,
      timeout: Duration.minutes(1),
      reservedConcurrentExecutions: 10,
      environment: { [FUNCTION_ENV.runsStore]: storeUri(props.bucket, prefix) },
      // Token auth only: each run's routes check that run's token in the Authorization header (which a SigV4
      // signature would take), and the job's stdlib sync shim cannot sign anyway.
      endpoint: "token",
    }, props);
    this.prefix = prefix;
    grantPrefix(props.bucket, this.role, prefix, "read-write", "checkpoint parts, manifests and metrics chunks are keyed by run, step and file, all known only at run time; the per-run token then confines each training job to its own run's keys");
  }
}
