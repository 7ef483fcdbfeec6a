// Routes for rlpipe's sandbox function, shared by every platform wrapper. Authentication: when a token is
// configured, every route but GET /v1/ping needs it, as `Authorization: Bearer <token>` or as a path prefix
// `/t/<token>/…` (verl's stock SandboxFusionTool cannot send headers, but its URL is configurable).
// A cloud function's backend may still be warming up: routes that need it wait for it (after the token check),
// /v1/ping does not; a failed warm-up answers 503 with its stable code and hint.
import { timingSafeEqual } from "node:crypto";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { BackendUnavailable } from "./backend-warmup.js";
import { type FnRequest, type FnResponse, json } from "./http-types.js";
import { type ResultCache, handleRewards } from "./reward.js";
import { type RunsDeps, routeRuns } from "./runs.js";
import { handleCommonEvaluateBatch, handlePing, handleRunCode } from "./sandbox-api.js";

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
}

type Route = (req: FnRequest, deps: FunctionDeps & { backend: SandboxBackend }) => Promise<FnResponse>;

/** Public routes need neither the token nor the backend. */
const ROUTES: Record<string, { method: string } & ({ handler: Route; public?: false } | { handler: () => Promise<FnResponse>; public: true })> = {
  "/run_code": { method: "POST", handler: (r, d) => handleRunCode(r, d) },
  "/common_evaluate_batch": { method: "POST", handler: (r, d) => handleCommonEvaluateBatch(r, d) },
  "/v1/rewards": { method: "POST", handler: (r, d) => handleRewards(r, d) },
  "/v1/ping": { method: "GET", handler: async () => handlePing(), public: true },
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

  if (path.startsWith("/v1/runs/")) {
    // Runs routes authenticate with their own per-run tokens.
    const runs = deps.runs === undefined ? undefined : await routeRuns({ ...req, path }, deps.runs);
    return runs ?? json(404, { detail: deps.runs === undefined ? "the runs function is not enabled on this server" : "Not Found" });
  }
  const r = ROUTES[path];
  if (r === undefined || (deps.backend === undefined && r.public !== true)) return json(404, { detail: "Not Found" });
  if (req.method !== r.method) return json(405, { detail: "Method Not Allowed" }, { allow: r.method });
  if (!authorized && r.public !== true) return json(401, { detail: "missing or invalid token" }, { "www-authenticate": "Bearer" });
  if (r.public === true) return r.handler();
  let backend: SandboxBackend;
  try {
    backend = typeof deps.backend === "function" ? await deps.backend() : deps.backend!;
  } catch (e) {
    if (!(e instanceof BackendUnavailable)) throw e;
    return json(503, e.body(), { "retry-after": String(Math.max(1, Math.ceil(e.retryAfterMs / 1000))) });
  }
  return r.handler({ ...req, path }, { ...deps, backend });
}
