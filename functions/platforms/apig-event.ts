// The API-gateway event both Huawei FunctionGraph (APIG trigger) and Tencent SCF (API Gateway trigger) send:
// httpMethod, path, headers, query parameters, body (plain or base64 with isBase64Encoded), requestContext.
import { BadHttpEvent, type HttpEvent, flatQuery, lowerCaseHeaders } from "./http-event.js";

type Obj = Record<string, unknown>;
export const isObj = (x: unknown): x is Obj => x !== null && typeof x === "object" && !Array.isArray(x);

/** An APIG-style event in the common shape; undefined when `event` is not one (no httpMethod and requestContext). */
export function apigHttpEvent(event: unknown, platform: string, queryKeys: readonly string[]): HttpEvent | undefined {
  if (!isObj(event) || !("httpMethod" in event) || !isObj(event["requestContext"])) return undefined;
  const method = event["httpMethod"];
  const path = event["path"];
  if (typeof method !== "string" || method === "") throw new BadHttpEvent(`a ${platform} event needs httpMethod`);
  if (typeof path !== "string") throw new BadHttpEvent(`a ${platform} event needs path`);
  const body = event["body"];
  if (body !== undefined && body !== null && typeof body !== "string") throw new BadHttpEvent("body must be a string");
  const queryKey = queryKeys.find((k) => isObj(event[k]));
  return {
    method, path,
    headers: lowerCaseHeaders(event["headers"]),
    query: flatQuery(queryKey === undefined ? undefined : event[queryKey]),
    body: typeof body === "string" ? body : undefined,
    isBase64Encoded: event["isBase64Encoded"] === true,
  };
}
