// Huawei FunctionGraph: the APIG trigger event (httpMethod, path, headers, queryStringParameters,
// pathParameters, body base64-encoded with isBase64Encoded, requestContext) and the response
// {statusCode, headers, body, isBase64Encoded}; handler `async (event, context)`. Any other event (a console
// test event, an OBS notification) goes to app.event.
// Secrets: context.getUserData(NAME) (encrypted environment variables are decrypted there), then process.env.
// With an agency, the context's temporary credentials become OBS_ACCESS_KEY_ID/OBS_SECRET_ACCESS_KEY/
// OBS_SECURITY_TOKEN in the app's env (the runs function's obs:// store signs with them).
import type { FunctionAppFactory } from "../app.js";
import { apigHttpEvent } from "./apig-event.js";
import { type HandlerOptions, type PlatformHandler, platformHandler } from "./handler.js";
import type { HttpEvent, HttpLimits } from "./http-event.js";
import { cachedSecrets } from "./runtime.js";

/** Synchronous invocation: 6 MB request and 6 MB response (FunctionGraph "Function Execution Resource Limits"). */
export const FUNCTIONGRAPH_LIMITS: HttpLimits = { platform: "FunctionGraph", maxRequestBytes: 6 * 1024 * 1024, maxResponseBytes: 6 * 1024 * 1024 };

/** The FunctionGraph Node.js context methods rlpipe uses (all optional: a test event may come without them). */
export interface FunctionGraphContext {
  getUserData?(key: string): string | undefined;
  getRequestID?(): string;
  getToken?(): string;
  getSecurityAccessKey?(): string;
  getSecuritySecretKey?(): string;
  getSecurityToken?(): string;
}

export function functionGraphHttpEvent(event: unknown): HttpEvent | undefined {
  return apigHttpEvent(event, "FunctionGraph APIG", ["queryStringParameters"]);
}

function call(ctx: FunctionGraphContext | undefined, m: "getSecurityAccessKey" | "getSecuritySecretKey" | "getSecurityToken"): string | undefined {
  const f = ctx?.[m];
  if (typeof f !== "function") return undefined;
  const v = f.call(ctx);
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** The app's env: the process's, plus the agency's temporary credentials as the OBS variables (unless set). */
export function functionGraphEnv(env: NodeJS.ProcessEnv, ctx: FunctionGraphContext | undefined): NodeJS.ProcessEnv {
  const ak = call(ctx, "getSecurityAccessKey");
  const sk = call(ctx, "getSecuritySecretKey");
  const token = call(ctx, "getSecurityToken");
  if (ak === undefined || sk === undefined || env["OBS_ACCESS_KEY_ID"] !== undefined || env["HUAWEICLOUD_SDK_AK"] !== undefined) return env;
  return { ...env, OBS_ACCESS_KEY_ID: ak, OBS_SECRET_ACCESS_KEY: sk, ...(token === undefined ? {} : { OBS_SECURITY_TOKEN: token }) };
}

export function functionGraphHandler(factory: FunctionAppFactory, opts: HandlerOptions = {}): PlatformHandler<FunctionGraphContext> {
  return platformHandler<FunctionGraphContext>({
    limits: FUNCTIONGRAPH_LIMITS,
    httpEvent: functionGraphHttpEvent,
    coldStart: (ctx, { env, log }) => {
      const appEnv = functionGraphEnv(env, ctx);
      for (const k of ["OBS_ACCESS_KEY_ID", "OBS_SECRET_ACCESS_KEY", "OBS_SECURITY_TOKEN"]) if (appEnv[k] !== undefined && appEnv !== env) log.remember(appEnv[k]!);
      return {
        env: appEnv,
        secrets: cachedSecrets(async (name) => {
          const fromContext = typeof ctx?.getUserData === "function" ? ctx.getUserData(name) : undefined;
          return typeof fromContext === "string" && fromContext !== "" ? fromContext : appEnv[name];
        }, log),
        log: log.line,
      };
    },
  }, factory, opts);
}
