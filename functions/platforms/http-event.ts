// The HTTP half of every platform adapter: a trigger event, once a platform file has put it in the common shape
// below, becomes an FnRequest (base64 and plain bodies, lower-cased headers, query, the API's base path
// stripped, size and content-type checks, JSON parsing) and the app's FnResponse becomes the
// {statusCode, headers, body, isBase64Encoded} object Lambda, FunctionGraph and SCF all expect. Errors answer
// with the JSON shapes functions/platforms/http.ts uses; an exception answers as functions/error-response.ts says
// (a classified error 502/503 with its code, anything else 500 {detail:"internal error"}).
import { cancellation, RequestCancelled } from "../admission.js";
import { RlpipeError } from "../../core/errors.js";
import { parseJsonExact, stringifyJson } from "../../core/grading/exact-json.js";
import type { FunctionApp } from "../app.js";
import { thrownResponse } from "../error-response.js";
import { type FnRequest, type FnResponse, json } from "../http-types.js";
import { describeError } from "./runtime.js";

/** An HTTP trigger event in a platform-neutral shape (what each platform file extracts from its event). */
export interface HttpEvent {
  readonly method: string;
  /** Path as the platform gives it, without the query string. */
  readonly path: string;
  /** Header names lower-cased; repeated headers joined with ",". */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly query: Readonly<Record<string, string>>;
  readonly body: string | undefined;
  readonly isBase64Encoded: boolean;
  /** A prefix the platform itself adds to the path (an API Gateway stage), stripped before routing. */
  readonly platformPrefix?: string;
}

/** The response object of all three platforms' HTTP triggers. */
export interface HttpResult {
  readonly statusCode: number;
  readonly headers: Record<string, string>;
  readonly body: string;
  readonly isBase64Encoded: boolean;
}

export interface HttpLimits {
  /** For messages: "Lambda", "FunctionGraph", "SCF". */
  readonly platform: string;
  /** Largest request body accepted, decoded. */
  readonly maxRequestBytes: number;
  /** Largest response the platform passes back (the whole serialized response object). */
  readonly maxResponseBytes: number;
}

/** An event that claims to be an HTTP trigger event but is missing what one must have. */
export class BadHttpEvent extends Error {}

export function lowerCaseHeaders(raw: unknown): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  if (raw === null || typeof raw !== "object") return out;
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    const value = Array.isArray(v) ? v.map(String).join(",") : v === null || v === undefined ? undefined : String(v);
    const name = k.toLowerCase();
    out[name] = out[name] === undefined || value === undefined ? value ?? out[name] : `${out[name]},${value}`;
  }
  return out;
}

/** Query parameters from a platform's map (values may be lists on some platforms: joined with ","). */
export function flatQuery(raw: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (raw === null || typeof raw !== "object") return out;
  for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
    if (v === null || v === undefined) continue;
    out[k] = Array.isArray(v) ? v.map(String).join(",") : String(v);
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** RLPIPE_BASE_PATH: "/" or "/seg[/seg…]" (no trailing slash kept); undefined when unset. */
export function parseBasePath(value: string | undefined): string | undefined {
  if (value === undefined || value === "" || value === "/") return undefined;
  const p = value.replace(/\/+$/, "");
  if (!/^(\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(p)) {
    throw new RlpipeError("bad_base_path", `RLPIPE_BASE_PATH must be a path such as /rlpipe, got ${JSON.stringify(value)}`, { exitCode: 2 });
  }
  return p;
}

function stripPrefix(path: string, prefix: string | undefined): string {
  if (prefix === undefined || prefix === "" || prefix === "/") return path;
  if (path === prefix) return "/";
  return path.startsWith(`${prefix}/`) ? path.slice(prefix.length) : path;
}

/** The path the router sees: the platform's prefix (a stage) first, then the configured base path. */
export function routePath(ev: HttpEvent, basePath: string | undefined): string {
  const path = ev.path.startsWith("/") ? ev.path : `/${ev.path}`;
  return stripPrefix(stripPrefix(path, ev.platformPrefix), basePath);
}

const BODYLESS = new Set(["GET", "HEAD", "OPTIONS", "DELETE"]);

/** The request for the app, or the error response when the body cannot be one. */
export function toFnRequest(ev: HttpEvent, path: string, limits: HttpLimits): FnRequest | FnResponse {
  const method = ev.method.toUpperCase();
  const raw = ev.body === undefined || ev.body === null ? Buffer.alloc(0) : Buffer.from(ev.body, ev.isBase64Encoded ? "base64" : "utf8");
  if (raw.length > limits.maxRequestBytes) {
    return json(413, { detail: `request body larger than ${limits.maxRequestBytes} bytes (the ${limits.platform} limit)` });
  }
  let body: unknown;
  if (!BODYLESS.has(method) && raw.length > 0) {
    const type = ev.headers["content-type"] ?? "";
    if (type !== "" && !/json/i.test(type)) return json(415, { detail: "content-type must be application/json" });
    try {
      body = parseJsonExact(raw.toString("utf8"));
    } catch {
      return json(400, { detail: "request body is not valid JSON" });
    }
  }
  return { method, path, headers: ev.headers, query: ev.query, body };
}

function isResponse(x: FnRequest | FnResponse): x is FnResponse {
  return "status" in x;
}

/** The platform's response object; a response the platform would refuse for its size becomes a clear 502. */
export function toHttpResult(r: FnResponse, limits: HttpLimits): HttpResult {
  const result = (res: FnResponse): HttpResult => ({
    statusCode: res.status,
    headers: { "content-type": "application/json", ...res.headers },
    body: res.text ?? stringifyJson(res.body ?? null),
    isBase64Encoded: false,
  });
  const out = result(r);
  const size = Buffer.byteLength(JSON.stringify(out));
  if (size <= limits.maxResponseBytes) return out;
  return result(json(502, {
    detail: `the response (${size} bytes) is larger than the ${limits.platform} response limit of ${limits.maxResponseBytes} bytes; send smaller batches`,
  }));
}

/** Paths in the log: a `/t/<token>/` prefix is never written. */
export function loggablePath(path: string): string {
  return path.replace(/\/t\/[^/]+/, "/t/***");
}

export interface ServeOptions {
  readonly limits: HttpLimits;
  readonly basePath: string | undefined;
  readonly log: (line: string) => void;
  /** Scrubs an error's text before it goes into an answer (the platform log's redaction). Default: the text is withheld. */
  readonly redact?: (text: string) => string;
  /** The time the platform leaves the invocation: its programs are stopped PLATFORM_MARGIN_MS before it ends. */
  readonly remainingMs?: number;
}

/** Time kept to answer (and let a remote sandbox stop) before the platform ends the invocation. */
const PLATFORM_MARGIN_MS = 2000;

/** One HTTP trigger event through the app: always a response object, never a thrown error. */
export async function serveHttpEvent(ev: HttpEvent, app: FunctionApp, opts: ServeOptions): Promise<HttpResult> {
  const started = performance.now();
  const path = routePath(ev, opts.basePath);
  let res: FnResponse;
  const req = toFnRequest(ev, path, opts.limits);
  if (isResponse(req)) res = req;
  else if (app.http === undefined) res = json(404, { detail: "this function has no HTTP API; invoke it with an event" });
  else {
    const ending = new AbortController();
    const timer = opts.remainingMs === undefined ? undefined
      : setTimeout(() => ending.abort(new RequestCancelled("deadline", path)), Math.max(0, opts.remainingMs - PLATFORM_MARGIN_MS));
    try {
      res = await app.http({ ...req, signal: ending.signal });
    } catch (e) {
      opts.log(`error ${describeError(e)}`);
      res = thrownResponse(e, opts.redact ?? (() => "see the function log"));
    } finally {
      clearTimeout(timer);
    }
    const cancelled = cancellation(ending.signal);
    if (cancelled !== undefined) opts.log(`cancelled ${ev.method.toUpperCase()} ${loggablePath(path)}: the invocation's time was nearly up; its programs were stopped`);
  }
  const out = toHttpResult(res, opts.limits);
  opts.log(`${ev.method.toUpperCase()} ${loggablePath(path)} ${out.statusCode} ${(performance.now() - started).toFixed(0)}ms`);
  return out;
}

/** The response for an event that could not be served (a broken event, a failed cold start). */
export function errorResult(status: number, detail: string, limits: HttpLimits): HttpResult {
  return toHttpResult(json(status, { detail }), limits);
}
