// Routes for rlpipe's sandbox function, shared by every platform wrapper. Authentication: when a token is
// configured, every route but GET /v1/ping needs it, as `Authorization: Bearer <token>` or as a path prefix
// `/t/<token>/…` (verl's stock SandboxFusionTool cannot send headers, but its URL is configurable).
import { timingSafeEqual } from "node:crypto";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { type FnRequest, type FnResponse, json } from "./http-types.js";
import { type ResultCache, handleRewards } from "./reward.js";
import { type RunsDeps, routeRuns } from "./runs.js";
import { handleCommonEvaluateBatch, handlePing, handleRunCode } from "./sandbox-api.js";

export interface FunctionDeps {
  readonly backend?: SandboxBackend;
  /** The runs function (presigned checkpoint/metrics uploads); off when undefined. */
  readonly runs?: RunsDeps;
  readonly cache: ResultCache;
  /** Required bearer token; undefined disables authentication (loopback only). */
  readonly token?: string;
  readonly defaultMemoryMb?: number;
  readonly retryBaseDelayMs?: number;
}

type Route = (req: FnRequest, deps: FunctionDeps & { backend: SandboxBackend }) => Promise<FnResponse>;

const ROUTES: Record<string, { method: string; handler: Route; public?: boolean }> = {
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
  return r.handler({ ...req, path }, deps as FunctionDeps & { backend: SandboxBackend });
}
