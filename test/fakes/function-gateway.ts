// A loopback stand-in for what sits in front of a cloud function — a Lambda function URL or API Gateway HTTP API
// stage, a FunctionGraph APIG route, an SCF API Gateway service path — so that real HTTP clients (the Python shims
// in recipes/python) can call a platform handler in this process: each request becomes that platform's trigger
// event (built from the documented examples, test/fakes/platform-events.ts), the handler's response becomes the
// HTTP response. Listens on 127.0.0.1, port 0.
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { PlatformHandler } from "../../functions/platforms/handler.js";
import { type Platform, type RequestSpec, functionGraphEvent, lambdaEvent, scfEvent } from "./platform-events.js";

export interface FunctionGateway {
  /** The function's base URL, including the stage or base path (no trailing slash). */
  readonly url: string;
  readonly requests: number;
  close(): Promise<void>;
}

export interface FunctionGatewayOptions {
  /** Lambda: an HTTP API stage (in the path, as API Gateway puts it); other platforms: the API's base path. */
  readonly prefix?: string;
  readonly context?: () => unknown;
}

export async function startFunctionGateway(platform: Platform, handler: PlatformHandler<any>, opts: FunctionGatewayOptions = {}): Promise<FunctionGateway> {
  let requests = 0;
  const server: Server = createServer(async (req, res) => {
    requests++;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", "http://gateway");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(",") : v;
    let path = url.pathname;
    const prefix = opts.prefix ?? "";
    if (prefix !== "") {
      // The gateway only routes what is under its stage / base path.
      if (path !== prefix && !path.startsWith(`${prefix}/`)) { res.writeHead(404, { "content-type": "application/json" }); res.end('{"message":"Not Found"}'); return; }
      if (platform === "lambda") path = path.slice(prefix.length) || "/"; // lambdaEvent puts the stage back in rawPath
    }
    const spec: RequestSpec = {
      method: req.method ?? "GET", path, headers, query: Object.fromEntries(url.searchParams),
      ...(body.length === 0 ? {} : { body: body.toString("utf8") }),
      // FunctionGraph's APIG base64-encodes bodies by default; the others pass JSON as text.
      base64: platform === "functiongraph",
    };
    const event = platform === "lambda" ? lambdaEvent(spec, prefix === "" ? {} : { fixture: "lambda-http-api-v2", stage: prefix.slice(1) })
      : platform === "functiongraph" ? functionGraphEvent(spec) : scfEvent(spec);
    try {
      const r = await handler(event, opts.context?.() ?? {}) as { statusCode: number; headers: Record<string, string>; body: string; isBase64Encoded: boolean };
      const out = r.isBase64Encoded ? Buffer.from(r.body, "base64") : Buffer.from(r.body, "utf8");
      res.writeHead(r.statusCode, { ...r.headers, "content-length": String(out.length) });
      res.end(out);
    } catch (e) {
      // What a platform does with a function error: an opaque 502.
      res.writeHead(502, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "Internal Server Error", error: String(e) }));
    }
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${opts.prefix ?? ""}`;
  return {
    url: base,
    get requests() { return requests; },
    close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }),
  };
}
