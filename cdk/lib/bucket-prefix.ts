// Least-privilege access to one key prefix of a bucket. Bucket.grantReadWrite(identity, "prefix/*") would grant
// wildcard actions (s3:GetObject*, s3:List*, s3:DeleteObject*, s3:Abort*); these statements name exactly the S3
// calls the rlpipe store makes, with reads and writes of objects under the prefix only.
import { Effect, type IRole, PolicyStatement } from "aws-cdk-lib/aws-iam";
import type { IBucket } from "aws-cdk-lib/aws-s3";
import { RlpipeError } from "../../core/errors.js";
import { acknowledgeWildcards, wildcardResource } from "./acknowledge.js";

/** What a function may do under its prefix. */
export type PrefixAccess =
  /** GetObject (also of older versions) and listing. */
  | "read"
  /** The calls of adapters/storage/s3.ts: get, head, put (multipart included), delete, abort, list parts and uploads. */
  | "read-write";

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

/**
 * Grants `role` `access` to the objects under `prefix` of `bucket` (and to its KMS key, when it has one), and
 * acknowledges the one wildcard this needs — the objects under the prefix, named at run time — with `why`.
 */
export function grantPrefix(bucket: IBucket, role: IRole, prefix: string, access: PrefixAccess, why: string): void {
  const objectActions = access === "read"
    ? ["s3:GetObject", "s3:GetObjectVersion"]
    : ["s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"];
  role.addToPrincipalPolicy(new PolicyStatement({
    effect: Effect.ALLOW, actions: objectActions, resources: [bucket.arnForObjects(`${prefix}*`)],
  }));
  acknowledgeWildcards(role, [{ finding: () => wildcardResource(role, bucket.arnForObjects(`${prefix}*`)), reason: `objects under ${prefix} only: ${why}` }]);
  // Listing is granted on the bucket without an s3:prefix condition, on purpose: S3 answers a HEAD or GET of a
  // missing key with 404 only to a caller allowed s3:ListBucket — evaluated without the prefix key, so a
  // prefix-conditioned grant turns "not there yet" (a manifest not yet written) into 403 Access Denied. The same
  // holds for ListBucketMultipartUploads (resuming an upload), which has no s3:prefix key at all. Both reveal key
  // names and upload ids, never object contents.
  role.addToPrincipalPolicy(new PolicyStatement({
    effect: Effect.ALLOW,
    actions: access === "read" ? ["s3:ListBucket"] : ["s3:ListBucket", "s3:ListBucketMultipartUploads"],
    resources: [bucket.bucketArn],
  }));
  if (bucket.encryptionKey !== undefined) {
    if (access === "read") bucket.encryptionKey.grantDecrypt(role);
    else bucket.encryptionKey.grantEncryptDecrypt(role);
  }
}
