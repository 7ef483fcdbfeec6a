// AWS Lambda: function URL events and API Gateway HTTP API events, both payload format version 2.0
// (requestContext.http.method, rawPath, lower-cased headers, cookies, isBase64Encoded, body); the response is
// {statusCode, headers, body, isBase64Encoded}. An HTTP API stage other than $default is part of rawPath and is
// stripped before routing. Any other event (a console test event, an S3 notification) goes to app.event.
// Secrets: Secrets Manager (RLPIPE_SECRET_ARN, <NAME>_SECRET_ARN), then plain environment variables.
import type { FunctionAppFactory } from "../app.js";
import { awsSecretReader } from "./aws-secrets.js";
import { type HandlerOptions, type PlatformHandler, memoryOf, platformHandler } from "./handler.js";
import { BadHttpEvent, type HttpEvent, type HttpLimits, flatQuery, lowerCaseHeaders } from "./http-event.js";
import { cachedSecrets } from "./runtime.js";

/**
 * Synchronous invocation: 6 MB request and 6 MB response payload (Lambda quotas, "Invocation payload (request and
 * response)": https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html). Function URLs and HTTP APIs
 * pass the same limit on; the platform refuses larger events before the handler runs, so 413 here guards the rest.
 */
export const LAMBDA_LIMITS: HttpLimits = { platform: "Lambda", maxRequestBytes: 6 * 1024 * 1024, maxResponseBytes: 6 * 1024 * 1024 };

/** The Lambda context fields rlpipe uses (none are required). */
export interface LambdaContext {
  readonly awsRequestId?: string;
  readonly functionName?: string;
  getRemainingTimeInMillis?(): number;
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => x !== null && typeof x === "object" && !Array.isArray(x);

export function lambdaHttpEvent(event: unknown): HttpEvent | undefined {
  if (!isObj(event)) return undefined;
  const rc = isObj(event["requestContext"]) ? event["requestContext"] : undefined;
  const http = rc !== undefined && isObj(rc["http"]) ? rc["http"] : undefined;
  if (event["version"] === "2.0" || http !== undefined) {
    const method = http?.["method"];
    const path = event["rawPath"] ?? http?.["path"];
    if (typeof method !== "string" || typeof path !== "string") {
      throw new BadHttpEvent("a payload format 2.0 event needs requestContext.http.method and rawPath");
    }
    const headers = lowerCaseHeaders(event["headers"]);
    const cookies = event["cookies"];
    if (Array.isArray(cookies) && cookies.length > 0 && headers["cookie"] === undefined) headers["cookie"] = cookies.map(String).join("; ");
    const body = event["body"];
    if (body !== undefined && body !== null && typeof body !== "string") throw new BadHttpEvent("body must be a string");
    const stage = rc?.["stage"];
    return {
      method, path, headers, query: flatQuery(event["queryStringParameters"]),
      body: typeof body === "string" ? body : undefined,
      isBase64Encoded: event["isBase64Encoded"] === true,
      ...(typeof stage === "string" && stage !== "$default" && stage !== "" ? { platformPrefix: `/${stage}` } : {}),
    };
  }
  if (typeof event["httpMethod"] === "string" && "resource" in event) {
    throw new BadHttpEvent("API Gateway payload format 1.0 (REST API) events are not supported: use a function URL or an HTTP API with payload format version 2.0");
  }
  return undefined;
}

export function lambdaHandler(factory: FunctionAppFactory, opts: HandlerOptions = {}): PlatformHandler<LambdaContext> {
  return platformHandler<LambdaContext>({
    limits: LAMBDA_LIMITS,
    httpEvent: lambdaHttpEvent,
    remainingMs: (ctx) => ctx?.getRemainingTimeInMillis?.(),
    coldStart: (_ctx, { env, log, fetch }) => ({
      env,
      secrets: cachedSecrets(awsSecretReader(env, fetch), log),
      log: log.line,
      platform: "lambda",
      // A reserved variable of the Lambda runtime (docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html).
      ...memoryOf(env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"]),
    }),
  }, factory, opts);
}
