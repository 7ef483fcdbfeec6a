// Routes for rlpipe's sandbox function, shared by every platform wrapper. Authentication: when a token is
// configured, every route but GET /v1/ping needs it, as `Authorization: Bearer <token>` or as a path prefix
// `/t/<token>/…` (verl's stock SandboxFusionTool cannot send headers, but its URL is configurable).
// A cloud function's backend may still be warming up: routes that need it wait for it (after the token check),
// /v1/ping does not; a failed warm-up answers 503 with its stable code and hint.
import { timingSafeEqual } from "node:crypto";
import { cancellation, DEADLINE_HEADER, deadlineMs, refusalResponse, RequestCancelled } from "./admission.js";
import type { ServerMetrics } from "./server-metrics.js";
import { type SandboxBackend, SandboxSaturated } from "../adapters/sandboxes/sandbox.js";
import { USAGE_RUN_HEADER, type UsageCounters } from "../core/run-usage.js";
import { BackendUnavailable } from "./backend-warmup.js";
import { type FnRequest, type FnResponse, json } from "./http-types.js";
import { type ResultCache, handleRewards } from "./reward.js";
import { type RunsDeps, routeRuns } from "./runs.js";
import { handleCommonEvaluate, handleCommonEvaluateBatch, handlePing, handleRunCode } from "./sandbox-api.js";
import { handleRunJupyter } from "./jupyter.js";
import { UsageMeter } from "./usage-meter.js";

export interface FunctionDeps {
  /** The sandbox, or how to wait for it (a cloud function's warm-up; rejects with BackendUnavailable). */
  readonly backend?: SandboxBackend | (() => Promise<SandboxBackend>);
  /** The runs function (presigned checkpoint/metrics uploads); off when undefined. */
  readonly runs?: RunsDeps;
  readonly cache: ResultCache;
  /** Required bearer token; undefined disables authentication (loopback only). */
  readonly token?: string;
  readonly defaultMemoryMb?: number;
  readonly retryBaseDelayMs?: number;
  /** Per-run usage counters (core/run-usage.ts); requests that name no run are not counted. */
  readonly usage?: UsageMeter;
  /** Where the server's own time went (node:http adds its request parsing and responding; GET /v1/stats). */
  readonly serverStats?: () => Readonly<Record<string, unknown>>;
  /** What the server is doing (GET /v1/stats, GET /metrics in Prometheus text). */
  readonly metrics?: ServerMetrics;
  /** Echoed by GET /v1/ping as X-Rlpipe-Nonce: launch.sh's health check knows it reached the server it started. */
  readonly pingNonce?: string;
  /** Refuse jobs with a case whose verdict would be the program's own exit status (rlpipe serve --strict-verdicts). */
  readonly strictVerdicts?: boolean;
}

type Route = (req: FnRequest, deps: FunctionDeps & { backend: SandboxBackend }) => Promise<FnResponse>;

/**
 * How long the server works for a request it is not told otherwise (X-Rlpipe-Deadline-S): what its own limits let its
 * programs take, plus room to wait for a slot. A client that waits longer sends the header.
 */
const QUEUE_ALLOWANCE_MS = 120_000;
function routeDeadlineMs(path: string, body: unknown): number {
  const b = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
  const s = (v: unknown, d: number) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : d);
  const config = (typeof b["config"] === "object" && b["config"] !== null ? b["config"] : {}) as Record<string, unknown>;
  const extra = (typeof config["extra"] === "object" && config["extra"] !== null ? config["extra"] : {}) as Record<string, unknown>;
  switch (path) {
    case "/run_code": return (s(b["compile_timeout"], 10) + s(b["run_timeout"], 10)) * 1000 + QUEUE_ALLOWANCE_MS;
    case "/run_jupyter": return s(b["total_timeout"], 45) * 1000 + QUEUE_ALLOWANCE_MS;
    case "/common_evaluate": case "/common_evaluate_batch": return (s(config["compile_timeout"], 10) + s(extra["total_timeout"], 300)) * 1000 + QUEUE_ALLOWANCE_MS;
    default: return 30 * 60_000; // a batch of rewards: many programs, each with its own budget
  }
}

/** The routes that run programs (and so are admitted, and cancelled when nobody waits). */
const SANDBOX_ROUTES = new Set(["/run_code", "/common_evaluate_batch", "/common_evaluate", "/run_jupyter", "/v1/rewards"]);

/** The route a path names, without the /t/<token>/ and /r/<run>/ prefixes. */
export function routeOf(path: string): string {
  let p = path.replace(/\/+$/, "") || "/";
  p = /^\/t\/[^/]+(\/.*)$/.exec(p)?.[1] ?? p;
  p = /^\/r\/[^/]+(\/.*)$/.exec(p)?.[1] ?? p;
  return p;
}

/** Whether a request runs programs (admission applies to it). */
export function runsPrograms(method: string, path: string): boolean {
  return method === "POST" && SANDBOX_ROUTES.has(routeOf(path));
}

/** Public routes need neither the token nor the backend. */
const ROUTES: Record<string, { method: string } & ({ handler: Route; public?: false } | { handler: (deps: FunctionDeps) => Promise<FnResponse>; public: true })> = {
  "/run_code": { method: "POST", handler: (r, d) => handleRunCode(r, d) },
  "/common_evaluate_batch": { method: "POST", handler: (r, d) => handleCommonEvaluateBatch(r, d) },
  "/common_evaluate": { method: "POST", handler: (r, d) => handleCommonEvaluate(r, d) },
  "/run_jupyter": { method: "POST", handler: (r, d) => handleRunJupyter(r, d) },
  "/v1/rewards": { method: "POST", handler: (r, d) => handleRewards(r, d) },
  "/v1/ping": { method: "GET", handler: async (deps) => handlePing(deps.pingNonce), public: true },
};

function tokenMatches(given: string, want: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function route(req: FnRequest, deps: FunctionDeps): Promise<FnResponse> {
  let path = req.path.replace(/\/+$/, "") || "/";
  let authorized = deps.token === undefined;
  const prefixed = /^\/t\/([^/]+)(\/.*)$/.exec(path);
  if (prefixed !== null) {
    path = prefixed[2]!;
    if (deps.token !== undefined && tokenMatches(decodeURIComponent(prefixed[1]!), deps.token)) authorized = true;
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers["authorization"] ?? "");
  if (deps.token !== undefined && bearer !== null && tokenMatches(bearer[1]!, deps.token)) authorized = true;
  // The run a request is counted under: a /r/<run>/ prefix (after the token's) or the X-Rlpipe-Run header.
  let run = req.headers[USAGE_RUN_HEADER]?.trim() || undefined;
  const runPrefixed = /^\/r\/([^/]+)(\/.*)$/.exec(path);
  if (runPrefixed !== null) {
    run = decodeURIComponent(runPrefixed[1]!);
    path = runPrefixed[2]!;
  }
  if (run !== undefined && !UsageMeter.validRun(run)) return json(400, { detail: `invalid run name ${JSON.stringify(run)} (X-Rlpipe-Run or /r/<run>/)` });

  if (path.startsWith("/v1/runs/")) {
    // Runs routes authenticate with their own per-run tokens.
    const runs = deps.runs === undefined ? undefined : await routeRuns({ ...req, path }, deps.runs);
    return runs ?? json(404, { detail: deps.runs === undefined ? "the runs function is not enabled on this server" : "Not Found" });
  }
  const usageOf = /^\/v1\/usage\/([^/]+)$/.exec(path);
  if (usageOf !== null && deps.usage !== undefined) {
    if (req.method !== "GET") return json(405, { detail: "Method Not Allowed" }, { allow: "GET" });
    if (!authorized) return json(401, { detail: "missing or invalid token" }, { "www-authenticate": "Bearer" });
    const name = decodeURIComponent(usageOf[1]!);
    if (!UsageMeter.validRun(name)) return json(400, { detail: `invalid run name ${JSON.stringify(name)}` });
    const snap = deps.usage.snapshot(name);
    return snap === undefined ? json(404, { detail: `this instance counted nothing for run ${name}` }) : json(200, snap);
  }
  if (path === "/v1/stats" || path === "/metrics") {
    if (req.method !== "GET") return json(405, { detail: "Method Not Allowed" }, { allow: "GET" });
    if (!authorized) return json(401, { detail: "missing or invalid token" }, { "www-authenticate": "Bearer" });
    if (path === "/metrics") {
      if (deps.metrics === undefined) return json(404, { detail: "Not Found" });
      return { status: 200, body: null, text: deps.metrics.prometheus(), headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } };
    }
    const backend = typeof deps.backend === "function" ? undefined : deps.backend;
    return json(200, { server: deps.serverStats?.() ?? null, sandbox: backend?.stats?.() ?? null, ...(deps.metrics === undefined ? {} : { requests: deps.metrics.snapshot() }) });
  }
  const r = ROUTES[path];
  if (r === undefined || (deps.backend === undefined && r.public !== true)) return json(404, { detail: "Not Found" });
  if (req.method !== r.method) return json(405, { detail: "Method Not Allowed" }, { allow: r.method });
  if (!authorized && r.public !== true) return json(401, { detail: "missing or invalid token" }, { "www-authenticate": "Bearer" });
  if (r.public === true) return r.handler(deps);
  let backend: SandboxBackend;
  try {
    backend = typeof deps.backend === "function" ? await deps.backend() : deps.backend!;
  } catch (e) {
    if (!(e instanceof BackendUnavailable)) throw e;
    return json(503, e.body(), { "retry-after": String(Math.max(1, Math.ceil(e.retryAfterMs / 1000))) });
  }
  const started = performance.now();
  // Every request carries a deadline; the signal aborts at it, or when the platform says nobody waits any more.
  const lifetime = new AbortController();
  const timer = setTimeout(() => lifetime.abort(new RequestCancelled("deadline", path)), deadlineMs(req.headers[DEADLINE_HEADER], routeDeadlineMs(path, req.body)));
  timer.unref();
  const onGone = () => lifetime.abort(req.signal!.reason);
  if (req.signal?.aborted === true) onGone();
  else req.signal?.addEventListener("abort", onGone, { once: true });
  let res: FnResponse;
  try {
    res = await r.handler({ ...req, path, signal: lifetime.signal }, { ...deps, backend });
  } catch (e) {
    // The backend's pool is at its share of the account (E2B): refused whole, before any program ran.
    if (e instanceof SandboxSaturated && cancellation(lifetime.signal) === undefined) return refusalResponse({ retryAfterS: e.retryAfterS, detail: e.message });
    if (cancellation(lifetime.signal) === undefined) throw e;
    res = json(500, { detail: "cancelled" }); // replaced below
  } finally {
    clearTimeout(timer);
    req.signal?.removeEventListener("abort", onGone);
  }
  const cancelled = cancellation(lifetime.signal);
  if (cancelled !== undefined) return cancelledResponse(cancelled);
  if (run !== undefined && deps.usage !== undefined) {
    const delta = usageDelta(path, res);
    if (delta !== undefined) await deps.usage.record(run, { ...delta, requests: 1, functionSeconds: (performance.now() - started) / 1000 });
  }
  return res;
}

/**
 * The answer to a request whose work was stopped: 504 past its deadline (verl's sandbox client retries exactly that),
 * in a body SandboxFusion's and FastAPI's clients both read; a client that disconnected gets nothing (499 is logged).
 */
export function cancelledResponse(c: RequestCancelled): FnResponse {
  const detail = c.reason === "deadline" ? "the request's deadline passed before its programs finished; they were stopped" : "the client disconnected; its programs were stopped";
  return json(c.reason === "deadline" ? 504 : 499, { status: "SandboxError", message: detail, detail }, { "x-rlpipe-cancelled": c.reason });
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** What an answered request used, read from its answer (a refused request counts nothing). */
export function usageDelta(path: string, res: FnResponse): Partial<UsageCounters> | undefined {
  if (res.status !== 200 || typeof res.body !== "object" || res.body === null) return undefined;
  const body = res.body as Record<string, unknown>;
  const execSeconds = (x: unknown): number => {
    const o = (x ?? {}) as { compile_result?: { execution_time?: unknown } | null; run_result?: { execution_time?: unknown } | null };
    return num(o.compile_result?.execution_time) + num(o.run_result?.execution_time);
  };
  if (path === "/v1/rewards") {
    const st = (body["stats"] ?? {}) as Record<string, unknown>;
    return { rewardRequests: 1, samples: num(st["samples"]), evaluated: num(st["evaluated"]), cacheHits: num(st["cacheHits"]) + num(st["dedupedInBatch"]), sandboxSeconds: num(st["sandboxSeconds"]) };
  }
  if (path === "/run_code") return { toolCalls: 1, evaluated: 1, sandboxSeconds: execSeconds(body) };
  if (path === "/run_jupyter") {
    const driver = (body["driver"] ?? {}) as { execution_time?: unknown };
    return { toolCalls: 1, evaluated: 1, sandboxSeconds: num(driver.execution_time) };
  }
  if (path === "/common_evaluate_batch" || path === "/common_evaluate") {
    const tests = Array.isArray(body["tests"]) ? body["tests"] as { exec_info?: unknown }[] : [];
    return { evaluated: 1, samples: 1, sandboxSeconds: tests.reduce((t, c) => t + execSeconds(c.exec_info), 0) };
  }
  return undefined;
}
