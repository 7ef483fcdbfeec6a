// Platform trigger events for tests, made from the documented examples in test/fixtures/functions/ (each names
// its documentation page in "_source"): a test changes only what a request changes (method, path, headers,
// body), so everything else in the event is what the platform documents.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { FIXTURES } from "../helpers.js";

export type Platform = "lambda" | "functiongraph" | "scf";

/** A documented event without its "_source" note. */
export function loadEventFixture(name: string): Record<string, any> {
  const doc = JSON.parse(readFileSync(join(FIXTURES, "functions", `${name}.json`), "utf8")) as Record<string, any>;
  const { _source, ...event } = doc;
  if (typeof _source !== "string" || !/^https:\/\//.test(_source)) throw new Error(`fixture ${name} names no documentation source`);
  return event;
}

export interface RequestSpec {
  readonly method: string;
  readonly path: string;
  readonly headers?: Record<string, string>;
  /** A JSON value (serialized) or raw text. */
  readonly body?: unknown;
  /** Send the body base64-encoded (isBase64Encoded: true). */
  readonly base64?: boolean;
  readonly query?: Record<string, string>;
}

function bodyText(body: unknown): string | undefined {
  if (body === undefined) return undefined;
  return typeof body === "string" ? body : JSON.stringify(body);
}

function encoded(spec: RequestSpec): { body: string; isBase64Encoded: boolean } {
  const text = bodyText(spec.body) ?? "";
  return spec.base64 === true ? { body: Buffer.from(text, "utf8").toString("base64"), isBase64Encoded: true } : { body: text, isBase64Encoded: false };
}

/**
 * Lambda function URL / API Gateway HTTP API payload 2.0. `stage`: an HTTP API stage other than $default, which
 * API Gateway puts in front of rawPath.
 */
export function lambdaEvent(spec: RequestSpec, opts: { fixture?: "lambda-function-url" | "lambda-http-api-v2"; stage?: string } = {}): Record<string, any> {
  const ev = loadEventFixture(opts.fixture ?? "lambda-function-url");
  const stage = opts.stage ?? "$default";
  const rawPath = stage === "$default" ? spec.path : `/${stage}${spec.path}`;
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.headers ?? {})) headers[k.toLowerCase()] = v; // payload 2.0 headers are lower-case
  const query = spec.query ?? {};
  return {
    ...ev,
    rawPath,
    rawQueryString: new URLSearchParams(query).toString(),
    headers: { ...ev["headers"], ...headers },
    queryStringParameters: Object.keys(query).length === 0 ? undefined : query,
    requestContext: { ...ev["requestContext"], stage, http: { ...ev["requestContext"]["http"], method: spec.method, path: rawPath } },
    ...encoded(spec),
  };
}

/** FunctionGraph APIG trigger: bodies are base64 unless `base64: false` (APIG's default is true). */
export function functionGraphEvent(spec: RequestSpec): Record<string, any> {
  const ev = loadEventFixture("functiongraph-apig");
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(spec.headers ?? {})) headers[k.toLowerCase()] = v;
  return {
    ...ev,
    httpMethod: spec.method,
    path: spec.path,
    headers: { ...ev["headers"], ...headers },
    queryStringParameters: spec.query ?? {},
    ...encoded({ ...spec, base64: spec.base64 ?? true }),
  };
}

/** SCF API Gateway trigger: headers keep the caller's case (the documented example has Title-Case names). */
export function scfEvent(spec: RequestSpec): Record<string, any> {
  const ev = loadEventFixture("scf-apigw");
  return {
    ...ev,
    httpMethod: spec.method,
    path: spec.path,
    headers: { ...ev["headers"], ...spec.headers },
    queryString: spec.query ?? {},
    requestContext: { ...ev["requestContext"], httpMethod: spec.method },
    ...encoded(spec),
  };
}

export function eventFor(platform: Platform, spec: RequestSpec): Record<string, any> {
  switch (platform) {
    case "lambda": return lambdaEvent(spec);
    case "functiongraph": return functionGraphEvent(spec);
    case "scf": return scfEvent(spec);
  }
}

/** A platform response, checked for the shape all three document, with its JSON body parsed. */
export interface ParsedResult {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: any;
}

export function parseResult(raw: unknown): ParsedResult {
  const r = raw as Record<string, unknown>;
  const keys = Object.keys(r).sort();
  if (JSON.stringify(keys) !== JSON.stringify(["body", "headers", "isBase64Encoded", "statusCode"])) throw new Error(`not an HTTP trigger response: keys ${keys.join(", ")}`);
  if (typeof r["statusCode"] !== "number" || typeof r["body"] !== "string" || r["isBase64Encoded"] !== false) throw new Error(`bad response fields: ${JSON.stringify(r).slice(0, 300)}`);
  const headers = r["headers"] as Record<string, string>;
  if (headers["content-type"] !== "application/json") throw new Error(`content-type ${headers["content-type"]}`);
  return { status: r["statusCode"], headers, body: JSON.parse(r["body"]) };
}
