// The sandbox function as a node:http server (what `rlpipe serve` runs). Bodies are size-limited and must
// be JSON; every response is JSON; the request log never contains a token.
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { FnResponse } from "../http-types.js";
import { type FunctionDeps, route } from "../router.js";

export interface HttpServerOptions {
  readonly host: string;
  readonly port: number;
  /** Largest accepted request body (default 32 MiB; a batch of long completions fits). */
  readonly maxBodyBytes?: number;
  readonly log?: (line: string) => void;
}

export interface RunningServer {
  readonly url: string;
  readonly port: number;
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
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
  });
}

function send(res: ServerResponse, r: FnResponse): void {
  const body = JSON.stringify(r.body);
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

export async function startHttpServer(deps: FunctionDeps, opts: HttpServerOptions): Promise<RunningServer> {
  const limit = opts.maxBodyBytes ?? 32 << 20;
  const timings = new ServerTimings();
  deps = { ...deps, serverStats: () => timings.snapshot() };
  const server: Server = createServer(async (req, res) => {
    const started = performance.now();
    const path = (req.url ?? "/").split("?")[0]!;
    let status = 500;
    try {
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
          body = raw.length === 0 ? undefined : JSON.parse(raw.toString("utf8"));
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
      const r = await route({ method: req.method ?? "GET", path, headers, query, body }, deps);
      const handled = performance.now();
      status = r.status;
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
      status = 500;
      if (!res.headersSent) send(res, { status, body: { detail: "internal error" } });
      opts.log?.(`error ${(e as Error).message}`);
    } finally {
      opts.log?.(`${req.method} ${path.replace(/^\/t\/[^/]+/, "/t/***")} ${status} ${(performance.now() - started).toFixed(0)}ms`);
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
    close: () => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}

/** Loopback addresses: the only ones served without a token. */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}
