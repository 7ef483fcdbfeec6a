// The sandbox function as a node:http server (what `rlpipe serve` runs). Bodies are size-limited and must be JSON;
// every response is JSON (Prometheus text at /metrics); the request log never contains a token. Requests that run
// programs are admitted up to a bound before their body is read (functions/admission.ts): the rest are answered 429
// with Retry-After at once, and an admitted request's programs are stopped as soon as its client disconnects.
import { createHash } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseJsonExact, stringifyJson } from "../../core/grading/exact-json.js";
import { Redactor } from "../../core/redact.js";
import { Admission, cancellation, defaultCapacity, isRefusal, refusalResponse, RequestCancelled, type Ticket } from "../admission.js";
import { thrownResponse } from "../error-response.js";
import type { FnResponse } from "../http-types.js";
import { type FunctionDeps, route, routeOf, runsPrograms } from "../router.js";
import { ServerMetrics } from "../server-metrics.js";

export interface HttpServerOptions {
  readonly host: string;
  readonly port: number;
  /** Largest accepted request body (default 32 MiB; a batch of long completions fits). */
  readonly maxBodyBytes?: number;
  /** Requests that run programs admitted at once (default: admission.ts defaultCapacity of the sandbox's slots). */
  readonly maxRequests?: number;
  /** The status an overloaded server answers (default 429; 503 and 504 for clients that retry only those). */
  readonly overloadStatus?: 429 | 503 | 504;
  readonly log?: (line: string) => void;
}

export interface RunningServer {
  readonly url: string;
  readonly port: number;
  /** Requests admitted at once. */
  readonly capacity: number;
  close(): Promise<void>;
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (size > limit) { reject(new BodyTooLarge()); req.destroy(); return; }
      chunks.push(c);
    });
    let ended = false;
    req.on("end", () => { ended = true; resolve(Buffer.concat(chunks)); });
    req.on("error", reject);
    req.on("close", () => { if (!ended) reject(new RequestCancelled("client_disconnected", "body")); });
  });
}

function send(res: ServerResponse, r: FnResponse): void {
  if (res.destroyed) return;
  const body = r.text ?? stringifyJson(r.body);
  res.writeHead(r.status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...r.headers });
  res.end(body);
}

/** Milliseconds summed over requests: reading and parsing the body, handling, serializing and writing the answer. */
class ServerTimings {
  requests = 0;
  readonly ms = { parseMs: 0, handleMs: 0, respondMs: 0 };

  snapshot(): Record<string, unknown> {
    return { requests: this.requests, ms: Object.fromEntries(Object.entries(this.ms).map(([k, v]) => [k, Math.round(v * 1000) / 1000])) };
  }
}

/** One log line per overload episode: its start, then a count at most every 10 s while it lasts. */
class OverloadLog {
  private since = 0;
  private lastLine = Number.NEGATIVE_INFINITY;
  constructor(private readonly log: ((line: string) => void) | undefined) {}

  rejected(a: Admission, status: number, retryAfterS: number): void {
    this.since++;
    const now = performance.now();
    if (now - this.lastLine < 10_000) return;
    this.log?.(`overload: ${this.since} request${this.since === 1 ? "" : "s"} answered ${status} (${a.active} in progress, at most ${a.capacity}; Retry-After ${retryAfterS} s)`);
    this.lastLine = now;
    this.since = 0;
  }
}

/** Routes whose requests are tool calls (the rest that run programs grade them). */
const TOOL_ROUTES = new Set(["/run_code", "/run_jupyter"]);

/**
 * Who a request comes from, for the share of places it may take (admission.ts): the route's family (a job's tool calls
 * and its rewards come from different workers, often over one loopback), the peer's address, and a fingerprint of the
 * credential it presented (clients with tokens of their own are told apart on one address).
 */
export function clientKey(req: IncomingMessage, path: string): string {
  const family = TOOL_ROUTES.has(routeOf(path)) ? "tools" : "grading";
  const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers["authorization"] ?? "")?.[1] ?? /^\/t\/([^/]+)\//.exec(path)?.[1];
  const credential = bearer === undefined ? "" : ` key ${createHash("sha256").update(bearer).digest("hex").slice(0, 8)}`;
  return `${family} from ${req.socket.remoteAddress ?? "?"}${credential}`;
}

export async function startHttpServer(deps: FunctionDeps, opts: HttpServerOptions): Promise<RunningServer> {
  const limit = opts.maxBodyBytes ?? 32 << 20;
  // An error's text in an answer is scrubbed of this process's secrets (the token, store keys) like the log.
  const redactor = new Redactor({ ...process.env, RLPIPE_SANDBOX_TOKEN: deps.token, RLPIPE_RUNS_SECRET: deps.runs?.secret });
  const timings = new ServerTimings();
  const metrics = new ServerMetrics();
  const backend = typeof deps.backend === "function" ? undefined : deps.backend;
  const slots = backend === undefined ? 1 : (await backend.capabilities()).maxConcurrency;
  const admission = new Admission(opts.maxRequests ?? defaultCapacity(slots), slots);
  const overloadStatus = opts.overloadStatus ?? 429;
  const overloads = new OverloadLog(opts.log);
  metrics.gauge("requests_in_progress", "Requests that run programs, admitted and not yet answered", () => admission.active);
  metrics.gauge("requests_queued", "Admitted requests beyond the sandbox's slots (waiting for one)", () => admission.queued);
  metrics.gauge("requests_capacity", "Requests admitted at once", () => admission.capacity);
  // A scraper that sees it change knows every counter started again (a restarted sandbox), whatever their values.
  const startedS = Math.floor(Date.now() / 1000);
  metrics.gauge("process_start_time_seconds", "When this server started, in Unix seconds", () => startedS);
  if (backend?.stats !== undefined) {
    const stats = backend.stats.bind(backend);
    metrics.gauge("sandbox_slots_busy", "Sandbox slots running a program", () => stats().slots?.busy ?? 0);
    metrics.gauge("sandbox_jobs_waiting", "Jobs waiting for a sandbox slot", () => stats().slots?.waiting ?? 0);
    metrics.counterFrom("sandbox_programs", "Programs the sandbox ran", () => stats().programs);
    metrics.counterFrom("sandbox_zygotes_retired", "Warm sandboxes retired (served their programs, aged, or found unclean)", () => stats().counts?.["zygotesRetired"] ?? 0);
    metrics.counterFrom("sandbox_stalls", "Sandboxes ended because their harness stopped answering", () => stats().counts?.["stalls"] ?? 0);
    metrics.counterFrom("sandbox_anomalies", "Programs after which the clean-up found something left or changed", () => stats().counts?.["anomalies"] ?? 0);
    metrics.counterFrom("sandbox_program_memory_kills", "Programs whose processes together passed their memory limit", () => stats().counts?.["programMemoryKills"] ?? 0);
  }
  deps = { ...deps, serverStats: () => ({ ...timings.snapshot(), admission: { capacity: admission.capacity, reserved: admission.reserve, inProgress: admission.active, queued: admission.queued, byClient: admission.byClient(), ...admission.counts } }), metrics };
  const server: Server = createServer(async (req, res) => {
    const started = performance.now();
    const path = (req.url ?? "/").split("?")[0]!;
    const label = routeOf(path);
    let status = 500;
    let ticket: Ticket | undefined;
    let cancelled: RequestCancelled | undefined;
    try {
      if (runsPrograms(req.method ?? "GET", path)) {
        const place = admission.enter(clientKey(req, path));
        if (isRefusal(place)) {
          status = overloadStatus;
          metrics.rejected(label);
          overloads.rejected(admission, status, place.retryAfterS);
          res.setHeader("connection", "close");
          send(res, refusalResponse(place, status));
          req.resume();
          return;
        }
        ticket = place;
      }
      // Nobody waits for the answer once the client is gone: its programs are stopped at once.
      const gone = new AbortController();
      res.on("close", () => { if (!res.writableFinished) gone.abort(new RequestCancelled("client_disconnected", label)); });
      let body: unknown;
      if (req.method === "POST") {
        const declared = Number(req.headers["content-length"] ?? "0");
        if (declared > limit) { status = 413; send(res, { status, body: { detail: `request body larger than ${limit} bytes` } }); req.resume(); return; }
        const raw = await readBody(req, limit);
        const type = req.headers["content-type"] ?? "";
        if (raw.length > 0 && !/json/i.test(type) && type !== "") {
          status = 415;
          send(res, { status, body: { detail: "content-type must be application/json" } });
          return;
        }
        try {
          body = raw.length === 0 ? undefined : parseJsonExact(raw.toString("utf8"));
        } catch {
          status = 400;
          send(res, { status, body: { detail: "request body is not valid JSON" } });
          return;
        }
      }
      const headers: Record<string, string | undefined> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k] = Array.isArray(v) ? v.join(",") : v;
      const query = Object.fromEntries(new URLSearchParams((req.url ?? "").split("?")[1] ?? ""));
      const parsed = performance.now();
      const r = await route({ method: req.method ?? "GET", path, headers, query, body, signal: gone.signal }, deps);
      const handled = performance.now();
      status = r.status;
      cancelled = cancellation(gone.signal) ?? (r.headers?.["x-rlpipe-cancelled"] === "deadline" ? new RequestCancelled("deadline", label) : undefined);
      send(res, r);
      timings.requests++;
      timings.ms.parseMs += parsed - started;
      timings.ms.handleMs += handled - parsed;
      timings.ms.respondMs += performance.now() - handled;
    } catch (e) {
      if (e instanceof BodyTooLarge) {
        status = 413;
        if (!res.headersSent) send(res, { status, body: { detail: `request body larger than ${limit} bytes` } });
        return;
      }
      if (e instanceof RequestCancelled) {
        cancelled = e;
        status = 499;
        return;
      }
      const answer = thrownResponse(e, (t) => redactor.redact(t));
      status = answer.status;
      if (!res.headersSent) send(res, answer);
      opts.log?.(`error ${(e as Error).message}`);
    } finally {
      ticket?.release();
      const ms = performance.now() - started;
      if (cancelled !== undefined) {
        if (cancelled.reason === "client_disconnected") status = 499;
        metrics.cancelled(label, cancelled.reason);
        opts.log?.(`cancelled ${req.method} ${path.replace(/^\/t\/[^/]+/, "/t/***")}: ${cancelled.reason === "deadline" ? "its deadline passed" : "the client disconnected"} after ${(ms / 1000).toFixed(1)} s; its programs were stopped`);
      }
      if (status !== overloadStatus || ticket !== undefined) metrics.requestDone(label, status, ms);
      if (status === 503 && ticket !== undefined) metrics.infraError(label);
      opts.log?.(`${req.method} ${path.replace(/^\/t\/[^/]+/, "/t/***")} ${status} ${ms.toFixed(0)}ms`);
    }
  });
  server.keepAliveTimeout = 65_000;
  server.requestTimeout = 30 * 60_000; // long batches
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const hostForUrl = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${hostForUrl}:${addr.port}`,
    port: addr.port,
    capacity: admission.capacity,
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}

/** Loopback addresses: the only ones served without a token. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
