// Tencent SCF: the API Gateway trigger event (httpMethod, path, headers, queryString, body as a plain string —
// base64 with isBase64Encoded when so configured — requestContext{serviceId, path, httpMethod, stage}) and the
// integration response {isBase64Encoded, statusCode, headers, body}; handler `main_handler(event, context)`.
// Any other event (a console test event, a COS notification) goes to app.event.
// Secrets: environment variables (SCF encrypts them at rest). With an execution role, SCF puts the role's
// temporary credentials in TENCENTCLOUD_SECRETID/SECRETKEY/SESSIONTOKEN (SCF "Environment Variables", built-in
// variables: https://www.tencentcloud.com/document/product/583/32748): they become the COS variables, and the app
// is built again when they change.
import type { FunctionAppFactory } from "../app.js";
import { apigHttpEvent } from "./apig-event.js";
import { type HandlerOptions, type PlatformHandler, memoryOf, platformHandler } from "./handler.js";
import type { HttpEvent, HttpLimits } from "./http-event.js";
import { cachedSecrets } from "./runtime.js";

/**
 * Synchronous invocation: "sync request event size" 6 MB and "sync request response size" 6 MB (SCF Quota Limits,
 * function runtime environment: https://www.tencentcloud.com/document/product/583/11637).
 */
export const SCF_LIMITS: HttpLimits = { platform: "SCF", maxRequestBytes: 6 * 1024 * 1024, maxResponseBytes: 6 * 1024 * 1024 };

/** The SCF context fields rlpipe uses (none are required). */
export interface ScfContext {
  readonly request_id?: string;
  readonly function_name?: string;
  readonly memory_limit_in_mb?: number | string;
  /** The invocation's time limit (the handler starts when the invocation does). */
  readonly time_limit_in_ms?: number | string;
}

export function scfHttpEvent(event: unknown): HttpEvent | undefined {
  return apigHttpEvent(event, "SCF API Gateway", ["queryString", "queryStringParameters"]);
}

/** The app's env: the process's, plus the execution role's temporary credentials as the COS variables (unless set). */
export function scfEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const id = env["TENCENTCLOUD_SECRETID"];
  const key = env["TENCENTCLOUD_SECRETKEY"];
  const token = env["TENCENTCLOUD_SESSIONTOKEN"];
  if (id === undefined || key === undefined || env["COS_SECRET_ID"] !== undefined || env["TENCENTCLOUD_SECRET_ID"] !== undefined) return env;
  return { ...env, COS_SECRET_ID: id, COS_SECRET_KEY: key, ...(token === undefined ? {} : { COS_SESSION_TOKEN: token }) };
}

export function scfHandler(factory: FunctionAppFactory, opts: HandlerOptions = {}): PlatformHandler<ScfContext> {
  return platformHandler<ScfContext>({
    limits: SCF_LIMITS,
    remainingMs: (ctx) => { const n = Number(ctx?.time_limit_in_ms); return Number.isFinite(n) && n > 0 ? n : undefined; },
    httpEvent: scfHttpEvent,
    credentialStamp: () => (opts.env ?? process.env)["TENCENTCLOUD_SECRETID"],
    coldStart: (ctx, { env, log }) => {
      const appEnv = scfEnv(env);
      for (const k of ["COS_SECRET_KEY", "COS_SESSION_TOKEN"]) if (appEnv !== env && appEnv[k] !== undefined) log.remember(appEnv[k]!);
      return { env: appEnv, secrets: cachedSecrets(async (name) => appEnv[name], log), log: log.line, platform: "scf", ...memoryOf(ctx?.memory_limit_in_mb) };
    },
  }, factory, opts);
}
