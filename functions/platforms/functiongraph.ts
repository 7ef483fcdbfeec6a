// Huawei FunctionGraph: the APIG trigger event (httpMethod, path, headers, queryStringParameters,
// pathParameters, body base64-encoded with isBase64Encoded, requestContext) and the response
// {statusCode, headers, body, isBase64Encoded}; handler `async (event, context)`. Any other event (a console
// test event, an OBS notification) goes to app.event.
// Configuration and secrets: FunctionGraph's Node.js runtime gives a function's environment variables through
// context.getUserData(NAME) (encrypted ones decrypted), so the app's env falls back to it. With an agency, the
// context's temporary credentials (valid 24 h) become OBS_ACCESS_KEY_ID/OBS_SECRET_ACCESS_KEY/OBS_SECURITY_TOKEN
// (the runs function's obs:// store signs with them) and the app is built again when they change.
import type { FunctionAppFactory } from "../app.js";
import { apigHttpEvent } from "./apig-event.js";
import { type HandlerOptions, type PlatformHandler, memoryOf, platformHandler } from "./handler.js";
import type { HttpEvent, HttpLimits } from "./http-event.js";
import { cachedSecrets } from "./runtime.js";

/**
 * Synchronous invocation: "valid payload size of invocation request body" 6 MB and of the response body 6 MB
 * (FunctionGraph Notes and Constraints, function running resources:
 * https://support.huaweicloud.com/intl/en-us/productdesc-functiongraph/functiongraph_01_0150.html).
 */
export const FUNCTIONGRAPH_LIMITS: HttpLimits = { platform: "FunctionGraph", maxRequestBytes: 6 * 1024 * 1024, maxResponseBytes: 6 * 1024 * 1024 };

/** The FunctionGraph Node.js context methods rlpipe uses (all optional: a test event may come without them). */
export interface FunctionGraphContext {
  getUserData?(key: string): string | undefined;
  getRequestID?(): string;
  getToken?(): string;
  getSecurityAccessKey?(): string;
  getSecuritySecretKey?(): string;
  getSecurityToken?(): string;
  getMemorySize?(): number | string;
  getRemainingTimeInMilliSeconds?(): number;
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

function userData(ctx: FunctionGraphContext | undefined, key: string): string | undefined {
  if (typeof ctx?.getUserData !== "function") return undefined;
  const v = ctx.getUserData(key);
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** Names whose values are secrets wherever they come from (never logged). */
const SECRET_NAME = /(TOKEN|SECRET|PASSWORD|PASSWD|(^|_)(SK|AK|API_?KEY|ACCESS_KEY(_ID)?))$/i;

/**
 * The app's env: process.env, then the function's environment variables through context.getUserData (where
 * FunctionGraph's Node.js runtime gives them, encrypted ones decrypted), plus the agency's temporary
 * credentials as the OBS variables unless OBS credentials are configured. `onSecret` sees every secret value read.
 */
export function functionGraphEnv(env: NodeJS.ProcessEnv, ctx: FunctionGraphContext | undefined, onSecret: (value: string) => void = () => {}): NodeJS.ProcessEnv {
  const ak = call(ctx, "getSecurityAccessKey");
  const sk = call(ctx, "getSecuritySecretKey");
  const token = call(ctx, "getSecurityToken");
  const configured = (k: string) => env[k] !== undefined || userData(ctx, k) !== undefined;
  const agency: Record<string, string> = ak === undefined || sk === undefined || configured("OBS_ACCESS_KEY_ID") || configured("HUAWEICLOUD_SDK_AK") ? {}
    : { OBS_ACCESS_KEY_ID: ak, OBS_SECRET_ACCESS_KEY: sk, ...(token === undefined ? {} : { OBS_SECURITY_TOKEN: token }) };
  for (const v of Object.values(agency)) onSecret(v);
  return new Proxy(env, {
    get(target, key, receiver) {
      if (typeof key !== "string") return Reflect.get(target, key, receiver);
      const own = target[key];
      if (own !== undefined) return own;
      const v = agency[key] ?? userData(ctx, key);
      if (v !== undefined && SECRET_NAME.test(key)) onSecret(v);
      return v;
    },
  });
}

/** Changes when the agency's temporary credentials change: the app is then built again with the new ones. */
export function functionGraphCredentialStamp(ctx: FunctionGraphContext | undefined): string | undefined {
  return call(ctx, "getSecurityAccessKey");
}

export function functionGraphHandler(factory: FunctionAppFactory, opts: HandlerOptions = {}): PlatformHandler<FunctionGraphContext> {
  return platformHandler<FunctionGraphContext>({
    limits: FUNCTIONGRAPH_LIMITS,
    remainingMs: (ctx) => ctx?.getRemainingTimeInMilliSeconds?.(),
    httpEvent: functionGraphHttpEvent,
    credentialStamp: functionGraphCredentialStamp,
    coldStart: (ctx, { env, log }) => {
      const appEnv = functionGraphEnv(env, ctx, (v) => log.remember(v));
      // Secrets: the context's user data (encrypted environment variables, decrypted) first, then process.env.
      return {
        env: appEnv, secrets: cachedSecrets(async (name) => userData(ctx, name) ?? env[name], log), log: log.line,
        platform: "functiongraph", ...memoryOf(typeof ctx?.getMemorySize === "function" ? ctx.getMemorySize() : undefined),
      };
    },
  }, factory, opts);
}
