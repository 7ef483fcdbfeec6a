// Least-privilege access to one key prefix of a bucket. Bucket.grantReadWrite(identity, "prefix/*") would grant
// wildcard actions (s3:GetObject*, s3:List*, s3:DeleteObject*, s3:Abort*) and listing of the whole bucket; these
// statements name exactly the S3 calls the rlpipe store makes, with reads and writes of objects under the prefix
// only, and listing only under the prefix.
import { Effect, type IRole, PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import { RlpipeError } from "../../core/errors.js";
import { acknowledgeWildcards, wildcardResource } from "./acknowledge.js";

/** What a function may do under its prefix. */
export type PrefixAccess =
  /** GetObject (also of older versions) and listing. */
  | "read"
  /** Reads, single-request PUTs (conditional ones included) and deletes: small objects such as run records and markers. */
  | "read-write-small"
  /** The calls of adapters/storage/s3.ts: get, head, put (multipart included), delete, abort, list parts and uploads. */
  | "read-write";

/** Options of one prefix grant. */
export interface PrefixGrantOptions {
  /**
   * The keys under the prefix the grant covers, as an IAM pattern relative to it ("*" for all of them,
   * "*\/report.html" for run pages only).
   * @default "*"
   */
  readonly keys?: string;
}

/** A key prefix as the constructs take it: not empty, no leading "/", ending in "/". */
export function checkPrefix(prop: string, prefix: string): string {
  if (!/^[A-Za-z0-9!_.*'()-]+(\/[A-Za-z0-9!_.*'()-]+)*\/$/.test(prefix)) {
    throw new RlpipeError("cdk_invalid_prop", `${prop} must be a key prefix like "runs/" (path segments of safe characters, ending in "/"), got ${JSON.stringify(prefix)}`, { exitCode: 2 });
  }
  return prefix;
}

/** The store URI of a prefix, as the functions read it from their environment: s3://bucket/prefix (no trailing "/"). */
export function storeUri(bucket: IBucket, prefix: string): string {
  return `s3://${bucket.bucketName}/${prefix.slice(0, -1)}`;
}

const OBJECT_ACTIONS: Readonly<Record<PrefixAccess, readonly string[]>> = {
  "read": ["s3:GetObject", "s3:GetObjectVersion"],
  "read-write-small": ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject"],
  "read-write": ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"],
};

/**
 * Grants `role` `access` to the objects under `prefix` of `bucket` (and to its KMS key, when it has one), and
 * acknowledges the one wildcard this needs — the objects under the prefix, named at run time — with `why`.
 */
export function grantPrefix(bucket: IBucket, role: IRole, prefix: string, access: PrefixAccess, why: string, opts: PrefixGrantOptions = {}): void {
  const keys = `${prefix}${opts.keys ?? "*"}`;
  role.addToPrincipalPolicy(new PolicyStatement({
    effect: Effect.ALLOW, actions: [...OBJECT_ACTIONS[access]], resources: [bucket.arnForObjects(keys)],
  }));
  acknowledgeWildcards(role, [{ finding: () => wildcardResource(role, bucket.arnForObjects(keys)), reason: `objects under ${prefix} only: ${why}` }]);
  // Listing, under the prefix only. S3 answers a HEAD or GET of a missing key with 404 only to a caller allowed
  // s3:ListBucket (else 403, and "not there yet" — a manifest, a run page not yet written — would read as Access
  // Denied); for that check S3 evaluates s3:prefix as the requested key (as Ceph RGW also does, after AWS), so this
  // condition keeps the 404 for keys under the prefix and allows no listing of the rest of the bucket.
  role.addToPrincipalPolicy(new PolicyStatement({
    effect: Effect.ALLOW, actions: ["s3:ListBucket"], resources: [bucket.bucketArn],
    conditions: { StringLike: { "s3:prefix": keys } },
  }));
  if (access === "read-write") {
    // The one listing left without a prefix condition, on purpose and only where multipart uploads resume (the
    // runs function): ListBucketMultipartUploads has no s3:prefix condition key, so a condition on it would deny
    // every call. It reveals key names and upload ids of unfinished uploads, never object contents.
    role.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: ["s3:ListBucketMultipartUploads"], resources: [bucket.bucketArn] }));
  }
  if (bucket.encryptionKey !== undefined) {
    if (access === "read") bucket.encryptionKey.grantDecrypt(role);
    else bucket.encryptionKey.grantEncryptDecrypt(role);
  }
}
