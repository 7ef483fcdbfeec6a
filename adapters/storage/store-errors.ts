// Every failure of an S3-compatible store (s3://, obs://, cos://) as a StorageError a user can act on: a stable
// code, an exit code (2: fix the configuration; 3: the store refused or could not be reached), a hint naming what
// to check, and whether sending the same request again may help (refused, reset, DNS EAI_AGAIN, timeouts, 5xx,
// 429/SlowDown, a body damaged in transit). Anything else — our own bugs — is left as it is.
import { StorageError } from "./object-store.js";

export type CloudScheme = "s3" | "obs" | "cos";

export interface StoreErrorContext {
  /** PUT, GET, HEAD, LIST, DELETE, CREATE-UPLOAD, … */
  readonly op: string;
  /** s3://bucket/key */
  readonly target: string;
  readonly scheme: CloudScheme;
  /** The endpoint requests went to, when one was configured. */
  readonly endpoint?: string;
}

/** The environment variables that configure each scheme (for hints). */
const CONFIG: Record<CloudScheme, { endpoint: string; credentials: string }> = {
  s3: { endpoint: "S3_ENDPOINT, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL (unset for AWS itself) and AWS_REGION", credentials: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN for temporary keys)" },
  obs: { endpoint: "OBS_ENDPOINT or OBS_REGION", credentials: "HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK (or OBS_ACCESS_KEY_ID/OBS_SECRET_ACCESS_KEY; + a security token for temporary keys)" },
  cos: { endpoint: "COS_ENDPOINT or COS_REGION", credentials: "TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY (or COS_SECRET_ID/COS_SECRET_KEY; + a session token for temporary keys)" },
};

const AUTH_CODES = new Set(["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken", "InvalidToken", "TokenRefreshRequired", "InvalidSecurity", "AuthFailure", "Forbidden", "Unauthorized", "RequestTimeTooSkewed"]);
const THROTTLE_CODES = new Set(["SlowDown", "Throttling", "ThrottlingException", "TooManyRequests", "RequestLimitExceeded", "ServiceUnavailable", "InternalError", "RequestTimeout"]);
/** The server received different bytes than were sent: send them again. */
const DIGEST_CODES = new Set(["BadDigest", "InvalidDigest", "XAmzContentSHA256Mismatch"]);

interface Raw {
  name?: string;
  code?: string;
  Code?: string;
  message?: string;
  syscall?: string;
  hostname?: string;
  $metadata?: { httpStatusCode?: number };
  cause?: Raw;
}

/** The HTTP status of a failed SDK call (also through a StorageError's cause). */
export function httpStatusOf(e: unknown): number | undefined {
  const x = e as Raw | undefined;
  return x?.$metadata?.httpStatusCode ?? (x?.cause === undefined ? undefined : httpStatusOf(x.cause));
}

/** The S3 error code of a failed SDK call (NoSuchBucket, SlowDown, …). */
export function s3CodeOf(e: unknown): string | undefined {
  const x = e as Raw | undefined;
  if (x === undefined || x === null) return undefined;
  if (x.$metadata !== undefined) return x.Code ?? x.name;
  return x.cause === undefined ? undefined : s3CodeOf(x.cause);
}

/** An abort the caller asked for (Ctrl-C, a sibling failure): passed on untouched, never retried. */
export function isAbort(e: unknown, signal?: AbortSignal): boolean {
  const name = (e as Raw | undefined)?.name;
  return signal?.aborted === true || name === "AbortError";
}

const netCode = (x: Raw): string => x.code ?? x.cause?.code ?? "";

/** A classified failure: the error to throw, and a few words for a retry line ("connection refused"). */
export interface StoreFailure {
  readonly error: StorageError;
  readonly reason: string;
}

/**
 * The StorageError for a failed request, or `undefined` when the error is not a store or network failure (a bug:
 * the caller rethrows it as it is). A StorageError passes through unchanged.
 */
export function classifyStoreError(e: unknown, ctx: StoreErrorContext): StoreFailure | undefined {
  if (e instanceof StorageError) return { error: e, reason: e.message };
  const x = (e ?? {}) as Raw;
  const where = `${ctx.op} ${ctx.target}`;
  const via = ctx.endpoint === undefined ? "" : ` (endpoint ${ctx.endpoint})`;
  const cfg = CONFIG[ctx.scheme];
  const status = x.$metadata?.httpStatusCode;
  const s3Code = s3CodeOf(e);
  const make = (code: string, what: string, opts: { retryable?: boolean; exitCode?: 2 | 3; hint?: string; detail?: string; reason?: string }): StoreFailure => ({
    reason: opts.reason ?? what,
    error: new StorageError(code, `${where}: ${what}${opts.detail === undefined ? "" : ` — ${opts.detail}`}${via}`, {
      cause: e, exitCode: opts.exitCode ?? 3, retryable: opts.retryable ?? false, ...(opts.hint === undefined ? {} : { hint: opts.hint }),
    }),
  });

  // No credentials at all: the SDK's provider chain found nothing (s3:// only; obs:// and cos:// need explicit keys).
  if (x.name === "CredentialsProviderError" || /could not load credentials/i.test(x.message ?? "")) {
    return make("store_credentials_missing", "no credentials", { exitCode: 2, hint: `set ${cfg.credentials}` });
  }

  if (status !== undefined) {
    const detail = x.message !== undefined && x.message !== "" && x.message !== "UnknownError" && x.message !== s3Code ? x.message : undefined;
    const label = `HTTP ${status}${s3Code === undefined || s3Code === "Unknown" || /^\d+$/.test(s3Code) ? "" : ` ${s3Code}`}`;
    const withDetail = { reason: label, ...(detail === undefined ? {} : { detail }) };
    if (s3Code !== undefined && DIGEST_CODES.has(s3Code)) return make("store_damaged_in_transit", `${label}: the server received other bytes than were sent`, { retryable: true, hint: "the bytes were damaged on the way (a proxy or a faulty link); if it keeps happening, check the network path to the store", ...withDetail });
    if (s3Code === "NoSuchBucket") {
      return make("store_bucket_missing", `bucket ${bucketOf(ctx.target)} does not exist`, { hint: `create it (or fix the bucket in the store URI); check that ${cfg.endpoint} point at the bucket's region`, reason: label });
    }
    if (s3Code === "InvalidBucketName") return make("store_bad_bucket", `invalid bucket name ${bucketOf(ctx.target)}`, { exitCode: 2, hint: "fix the bucket in the store URI", ...withDetail });
    if (s3Code === "PermanentRedirect" || s3Code === "AuthorizationHeaderMalformed" || s3Code === "IllegalLocationConstraintException" || status === 301) {
      return make("store_wrong_region", `${label}: the bucket is in another region or behind another endpoint`, { exitCode: 2, hint: `set ${cfg.endpoint} to the bucket's region`, ...withDetail });
    }
    if (status === 401 || status === 403 || (s3Code !== undefined && AUTH_CODES.has(s3Code))) {
      return make("store_auth_refused", `${label}: the store refused the credentials`, {
        hint: s3Code === "RequestTimeTooSkewed" ? "this machine's clock is off: sync it (NTP)" : `check ${cfg.credentials} and that they may access this bucket`, ...withDetail,
      });
    }
    if (status === 429 || status >= 500 || (s3Code !== undefined && THROTTLE_CODES.has(s3Code))) {
      return make("store_unavailable", `${label}: the store is overloaded or failing`, { retryable: true, hint: "try again later; if it persists, check the store's status page", ...withDetail });
    }
    return make("store_refused", `${label}: the store refused the request`, { hint: "check the store URI, the bucket's settings and the credentials' permissions", ...withDetail });
  }

  const code = netCode(x);
  const endpointHint = `check ${cfg.endpoint}${ctx.endpoint === undefined ? "" : ` (now ${ctx.endpoint})`} and that this machine can reach it`;
  if (code === "ECONNREFUSED") return make("store_unreachable", "connection refused", { retryable: true, hint: `is the store running there? ${endpointHint}` });
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH" || code === "ENETDOWN") return make("store_unreachable", "network unreachable", { retryable: true, hint: endpointHint });
  if (code === "EAI_AGAIN") return make("store_dns_failed", `cannot resolve ${x.hostname ?? "the endpoint's host name"} (DNS temporarily failing)`, { retryable: true, hint: endpointHint });
  if (code === "ENOTFOUND") return make("store_dns_failed", `no such host ${x.hostname ?? ""}`.trimEnd(), { hint: endpointHint });
  // The SDK reports a dropped connection as a TimeoutError with code ECONNRESET: the code decides first.
  if (["ECONNRESET", "EPIPE", "ECONNABORTED", "ERR_STREAM_PREMATURE_CLOSE", "UND_ERR_SOCKET"].includes(code) || x.message === "socket hang up" || x.message === "aborted") {
    return make("store_connection_lost", "the connection dropped", { retryable: true, hint: endpointHint });
  }
  if (code === "ETIMEDOUT" || code === "UND_ERR_CONNECT_TIMEOUT" || x.name === "TimeoutError" || (code === "" && /timed out|timeout/i.test(x.message ?? ""))) {
    return make("store_timeout", "no answer in time", { retryable: true, hint: endpointHint });
  }
  if (code === "EPROTO" || code.startsWith("ERR_SSL") || code.startsWith("ERR_TLS") || /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/.test(code)) {
    return make("store_tls_failed", code === "EPROTO" || code.startsWith("ERR_SSL") ? "the endpoint does not speak TLS (https)" : `its TLS certificate is not trusted (${code})`, {
      hint: code === "EPROTO" || code.startsWith("ERR_SSL")
        ? "check the endpoint's scheme and port: https:// for a TLS server (plain http:// is accepted only for loopback test servers)"
        : "check the endpoint's host name; for a private CA set NODE_EXTRA_CA_CERTS to its certificate file",
    });
  }
  return undefined;
}

function bucketOf(target: string): string {
  return /^[a-z0-9]+:\/\/([^/]+)/.exec(target)?.[1] ?? target;
}
