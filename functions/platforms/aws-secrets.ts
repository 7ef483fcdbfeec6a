// Secrets on Lambda, from AWS Secrets Manager through one signed GetSecretValue call per secret (no SDK in the
// bundle; Lambda puts the role's credentials in AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN).
// A name is looked up in this order:
//   1. <NAME>_SECRET_ARN: a secret holding that value (a plain string, or a JSON object with a <NAME> key);
//   2. RLPIPE_SECRET_ARN: a secret holding a JSON object {"E2B_API_KEY": …, "RLPIPE_SANDBOX_TOKEN": …, …};
//   3. the environment variable <NAME> itself.
// Each secret is fetched once per process; values never reach a log (the caller registers them for redaction).
import { RlpipeError } from "../../core/errors.js";
import { retry } from "../../core/util/retry.js";
import { type AwsCredentials, signV4 } from "./aws-sigv4.js";

export const AWS_SECRET_ENV = { bundle: "RLPIPE_SECRET_ARN", perNameSuffix: "_SECRET_ARN", endpoint: "AWS_ENDPOINT_URL_SECRETS_MANAGER" } as const;

export interface SecretsManagerOptions {
  readonly credentials: AwsCredentials;
  readonly region: string;
  /** Default https://secretsmanager.<region>.amazonaws.com (AWS_ENDPOINT_URL_SECRETS_MANAGER overrides it). */
  readonly endpoint?: string;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
  readonly attempts?: number;
  readonly retryBaseDelayMs?: number;
  readonly now?: () => Date;
}

/** A Secrets Manager failure that retrying will not fix is a configuration error (exit 2); the rest are external (3). */
class SecretsManagerError extends RlpipeError {
  constructor(code: string, message: string, readonly retryable: boolean, opts: { hint?: string; exitCode?: 2 | 3; cause?: unknown } = {}) {
    super(code, message, opts);
    this.name = "SecretsManagerError";
  }
}

const NOT_RETRYABLE_CONFIG: Readonly<Record<string, string>> = {
  ResourceNotFoundException: "secret_not_found",
  AccessDeniedException: "secret_access_denied",
  UnrecognizedClientException: "secret_access_denied",
  InvalidSignatureException: "secret_access_denied",
  SignatureDoesNotMatch: "secret_access_denied",
  IncompleteSignature: "secret_access_denied",
  ExpiredTokenException: "secret_access_denied",
  InvalidRequestException: "secret_unavailable",
  InvalidParameterException: "secret_unavailable",
  DecryptionFailure: "secret_unavailable",
};

/** The region of a secret's ARN (arn:aws:secretsmanager:<region>:<account>:secret:<name>), if it is one. */
export function regionOfArn(arn: string): string | undefined {
  const m = /^arn:aws[a-z-]*:secretsmanager:([a-z0-9-]+):\d{12}:secret:.+$/.exec(arn);
  return m?.[1];
}

/** GetSecretValue → SecretString (SecretBinary is returned base64-decoded as UTF-8). */
export async function getSecretValue(secretId: string, opts: SecretsManagerOptions): Promise<string> {
  const endpoint = new URL(opts.endpoint ?? `https://secretsmanager.${opts.region}.amazonaws.com/`);
  const body = JSON.stringify({ SecretId: secretId });
  const doFetch = opts.fetch ?? globalThis.fetch;
  const where = `Secrets Manager (${endpoint.host})`;
  const once = async (): Promise<string> => {
    const headers = signV4({
      method: "POST", url: endpoint, body, region: opts.region, service: "secretsmanager", credentials: opts.credentials, now: (opts.now ?? (() => new Date()))(),
      headers: { "content-type": "application/x-amz-json-1.1", "x-amz-target": "secretsmanager.GetSecretValue" },
    });
    delete headers["host"]; // fetch sets it from the URL (the same value that was signed)
    let res: Response;
    try {
      res = await doFetch(endpoint, { method: "POST", headers, body, signal: AbortSignal.timeout(opts.timeoutMs ?? 5_000) });
    } catch (e) {
      throw new SecretsManagerError("secret_unreachable", `${where} did not answer: ${(e as Error).message}`, true, { cause: e });
    }
    const text = await res.text();
    let doc: Record<string, unknown> = {};
    try { doc = JSON.parse(text) as Record<string, unknown>; } catch { /* an error page; reported below */ }
    if (res.ok) {
      if (typeof doc["SecretString"] === "string") return doc["SecretString"];
      if (typeof doc["SecretBinary"] === "string") return Buffer.from(doc["SecretBinary"], "base64").toString("utf8");
      throw new SecretsManagerError("secret_unavailable", `${where} returned no SecretString for ${secretId}`, false, { exitCode: 2 });
    }
    const type = String(doc["__type"] ?? doc["code"] ?? res.headers.get("x-amzn-errortype") ?? `HTTP ${res.status}`).split(/[#:]/).filter((s) => s !== "").pop()!;
    const message = typeof doc["message"] === "string" ? doc["message"] : typeof doc["Message"] === "string" ? doc["Message"] : "";
    const code = NOT_RETRYABLE_CONFIG[type] ?? (res.status === 403 ? "secret_access_denied" : undefined);
    if (code !== undefined) {
      const hint = code === "secret_access_denied" ? "grant the function's role secretsmanager:GetSecretValue on this secret (CDK: secret.grantRead(fn))"
        : code === "secret_not_found" ? `check the ARN in ${AWS_SECRET_ENV.bundle} / <NAME>${AWS_SECRET_ENV.perNameSuffix} and its region` : undefined;
      throw new SecretsManagerError(code, `${where} refused GetSecretValue for ${secretId}: ${type}${message === "" ? "" : ` (${message})`}`, false, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });
    }
    // Throttling and 5xx: worth another try.
    throw new SecretsManagerError("secret_unavailable", `${where} failed GetSecretValue for ${secretId}: ${type}${message === "" ? "" : ` (${message})`}`, res.status === 429 || res.status >= 500 || /Throttl/i.test(type));
  };
  return retry(once, ({ error }) => error instanceof SecretsManagerError && error.retryable,
    { attempts: opts.attempts ?? 3, baseDelayMs: opts.retryBaseDelayMs ?? 200, maxDelayMs: 2_000 });
}

function credentialsFrom(env: NodeJS.ProcessEnv): AwsCredentials {
  const accessKeyId = env["AWS_ACCESS_KEY_ID"];
  const secretAccessKey = env["AWS_SECRET_ACCESS_KEY"];
  if (accessKeyId === undefined || accessKeyId === "" || secretAccessKey === undefined || secretAccessKey === "") {
    throw new RlpipeError("aws_credentials_missing", "reading Secrets Manager needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (Lambda sets them from the function's role)", { exitCode: 2 });
  }
  const sessionToken = env["AWS_SESSION_TOKEN"];
  return { accessKeyId, secretAccessKey, ...(sessionToken === undefined || sessionToken === "" ? {} : { sessionToken }) };
}

function parseObject(text: string): Record<string, unknown> | undefined {
  if (!text.trimStart().startsWith("{")) return undefined;
  try {
    const v = JSON.parse(text) as unknown;
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v as Record<string, unknown> : undefined;
  } catch {
    return undefined;
  }
}

/** The reader behind Lambda's SecretSource: every ARN is fetched at most once per process (a failed fetch is tried again). */
export function awsSecretReader(env: NodeJS.ProcessEnv, fetchImpl: typeof fetch, extra: Partial<SecretsManagerOptions> = {}): (name: string) => Promise<string | undefined> {
  const fetched = new Map<string, Promise<string>>();
  const load = (arn: string, variable: string): Promise<string> => {
    let p = fetched.get(arn);
    if (p === undefined) {
      p = (async () => {
        const region = regionOfArn(arn) ?? env["AWS_REGION"] ?? env["AWS_DEFAULT_REGION"];
        if (region === undefined || region === "") throw new RlpipeError("config_invalid", `${variable} is not a secret ARN with a region and AWS_REGION is not set`, { exitCode: 2 });
        const endpoint = env[AWS_SECRET_ENV.endpoint] || env["AWS_ENDPOINT_URL"] || undefined;
        return getSecretValue(arn, { credentials: credentialsFrom(env), region, fetch: fetchImpl, ...(endpoint === undefined ? {} : { endpoint }), ...extra });
      })();
      fetched.set(arn, p);
      p.catch(() => { if (fetched.get(arn) === p) fetched.delete(arn); });
    }
    return p;
  };
  return async (name) => {
    const own = env[`${name}${AWS_SECRET_ENV.perNameSuffix}`];
    if (own !== undefined && own !== "") {
      const text = await load(own, `${name}${AWS_SECRET_ENV.perNameSuffix}`);
      const obj = parseObject(text);
      if (obj === undefined) return text;
      const v = obj[name];
      if (typeof v !== "string") throw new RlpipeError("secret_invalid", `the secret in ${name}${AWS_SECRET_ENV.perNameSuffix} is a JSON object without a string "${name}" key`, { exitCode: 2 });
      return v;
    }
    const bundle = env[AWS_SECRET_ENV.bundle];
    if (bundle !== undefined && bundle !== "") {
      const obj = parseObject(await load(bundle, AWS_SECRET_ENV.bundle));
      if (obj === undefined) {
        throw new RlpipeError("secret_invalid", `the secret in ${AWS_SECRET_ENV.bundle} must be a JSON object such as {"RLPIPE_SANDBOX_TOKEN": "…", "E2B_API_KEY": "…"}`,
          { exitCode: 2, hint: `for a secret holding one plain value, name it in <NAME>${AWS_SECRET_ENV.perNameSuffix} (e.g. E2B_API_KEY${AWS_SECRET_ENV.perNameSuffix})` });
      }
      const v = obj[name];
      if (typeof v === "string" && v !== "") return v;
      if (v !== undefined && typeof v !== "string") throw new RlpipeError("secret_invalid", `"${name}" in the ${AWS_SECRET_ENV.bundle} secret must be a string`, { exitCode: 2 });
    }
    const plain = env[name];
    return plain === undefined || plain === "" ? undefined : plain;
  };
}
