// A strict front for the test S3 server (moto accepts any signature and ignores Content-MD5): verifies SigV4
// (header and presigned), rejects expired presigned URLs (403, as S3 does), checks Content-MD5 (400 BadDigest),
// and injects faults — connection resets, delays, bytes flipped in transit — before forwarding to moto.
import { createHash } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer, request as httpRequest } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { tcpSocketsOf } from "../proc-sockets.js";
import { verifySigV4 } from "./sigv4.js";

export type GatewayFault =
  | { kind: "reset"; match?: (r: IncomingMessage) => boolean }
  | { kind: "delay"; ms: number; match?: (r: IncomingMessage) => boolean }
  /** Flip one byte of the request body after the client sent it (damage in transit). */
  | { kind: "corrupt"; match?: (r: IncomingMessage) => boolean }
  | { kind: "status"; status: number; code: string; match?: (r: IncomingMessage) => boolean }
  /** Forward, then drop the connection half-way through the response body (a download cut off mid-stream). */
  | { kind: "cut"; match?: (r: IncomingMessage) => boolean }
  /** Never answer (until the client goes away): a request stuck in flight when its uploader is killed. */
  | { kind: "hold"; match?: (r: IncomingMessage) => boolean };

/** A request as the gateway saw it: method, path (bucket/key, no query), body bytes. */
export interface GatewayRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly bytes: number;
}

export interface Gateway {
  readonly endpoint: string;
  /** Faults consumed in order by matching requests. */
  readonly faults: GatewayFault[];
  readonly stats: { requests: number; rejectedSignature: number; expired: number; badDigest: number; corrupted: number; resets: number; cuts: number; uploadParts: number; partsWithCrc32Only: number; bytesIn: number; held: number; handling: number };
  /** Every request with a valid signature, in arrival order. */
  readonly log: GatewayRequest[];
  /** How many connections the gateway has accepted so far: a mark for `settled`. */
  connectionsAccepted(): number;
  /**
   * Resolves once every connection accepted since `mark` (all, by default none) from another process is closed and
   * no request is being received or forwarded upstream. A client killed mid-request does not stop a request whose
   * bytes had all reached the gateway's socket: it is parsed and forwarded after the kill, so waiting for the dead
   * client's connections to close is what makes the server's state final. Connections this process holds the other
   * end of (a test's own client, a function running in the test) stay open between requests and are not waited for.
   */
  settled(mark?: number): Promise<void>;
  /** Called with each request with a valid signature as it is logged, before it is answered or forwarded. */
  onRequest: ((r: GatewayRequest, req: IncomingMessage) => void) | undefined;
  /** Called as the upstream server's answer to a forwarded request arrives, before the client gets it. */
  onUpstreamAnswer: ((r: GatewayRequest, status: number, req: IncomingMessage) => void) | undefined;
  /** Throttle (ms per request) applied to every forwarded request. */
  delayEveryMs: number;
  checkContentMd5: boolean;
  close(): Promise<void>;
}

export const isUploadPart = (r: IncomingMessage) => r.method === "PUT" && /[?&]partNumber=/.test(r.url ?? "");

function s3Error(status: number, code: string, message: string): [number, string] {
  return [status, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`];
}

/**
 * `preserveHost`: forward the client's Host header, for an upstream that verifies signatures itself (Host is
 * signed); otherwise Host is rewritten to the upstream's (moto checks nothing).
 */
export async function startGateway(upstream: string, secretAccessKey: string, opts: { preserveHost?: boolean } = {}): Promise<Gateway> {
  const up = new URL(upstream);
  const gw: Omit<Gateway, "endpoint" | "close"> = {
    faults: [], stats: { requests: 0, rejectedSignature: 0, expired: 0, badDigest: 0, corrupted: 0, resets: 0, cuts: 0, uploadParts: 0, partsWithCrc32Only: 0, bytesIn: 0, held: 0, handling: 0 }, log: [],
    delayEveryMs: 0, checkContentMd5: true, onRequest: undefined, onUpstreamAnswer: undefined,
    connectionsAccepted: () => accepted,
    settled: async (mark = Infinity) => {
      const openSince = () => {
        const since = [...openConnections].filter(([, ordinal]) => ordinal >= mark);
        if (since.length === 0) return false;
        const ours = new Set(tcpSocketsOf(["self"]).map((sock) => sock.localPort));
        return since.some(([socket]) => !ours.has(socket.remotePort ?? -1));
      };
      while (openSince() || gw.stats.handling > 0) await new Promise((r) => setTimeout(r, 10));
    },
  };
  let accepted = 0;
  const openConnections = new Map<Socket, number>();
  const server: Server = createServer((req, res) => {
    gw.stats.handling++;
    let finished = false;
    const finish = () => { if (!finished) { finished = true; gw.stats.handling--; } };
    void handle(req, res, finish).finally(() => { if (!forwardsResponse.has(req)) finish(); });
  });
  /** Requests forwarded upstream: their handling ends when the upstream answers (or fails), not when `handle` returns. */
  const forwardsResponse = new WeakSet<IncomingMessage>();
  server.on("connection", (socket: Socket) => {
    openConnections.set(socket, accepted++);
    socket.once("close", () => openConnections.delete(socket));
  });
  async function handle(req: IncomingMessage, res: ServerResponse, finish: () => void): Promise<void> {
    gw.stats.requests++;
    if (isUploadPart(req)) {
      gw.stats.uploadParts++;
      if (req.headers["x-amz-checksum-crc32"] !== undefined && req.headers["content-md5"] === undefined) gw.stats.partsWithCrc32Only++;
    }
    const chunks: Buffer[] = [];
    try {
      for await (const c of req) chunks.push(c as Buffer);
    } catch {
      return; // the client went away mid-request (a killed uploader)
    }
    let body = Buffer.concat(chunks);
    const send = ([status, xml]: [number, string]) => { res.writeHead(status, { "content-type": "application/xml" }); res.end(xml); };

    if ((req.url ?? "").startsWith("/moto-api")) return send(s3Error(403, "AccessDenied", "no"));
    const verdict = verifySigV4({ method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers }, secretAccessKey);
    if (!verdict.ok) {
      if (verdict.expired === true) { gw.stats.expired++; return send(s3Error(403, "AccessDenied", "Request has expired")); }
      gw.stats.rejectedSignature++;
      return send(s3Error(403, "SignatureDoesNotMatch", verdict.reason ?? "signature"));
    }
    if (verdict.payloadHash !== undefined && /^[0-9a-f]{64}$/.test(verdict.payloadHash) && createHash("sha256").update(body).digest("hex") !== verdict.payloadHash) {
      return send(s3Error(400, "XAmzContentSHA256Mismatch", "payload hash mismatch"));
    }

    const [path, query] = (req.url ?? "/").split("?", 2) as [string, string | undefined];
    const logged: GatewayRequest = { method: req.method ?? "GET", path: decodeURIComponent(path), query: query ?? "", bytes: body.length };
    gw.log.push(logged);
    gw.onRequest?.(logged, req);
    if (req.method === "PUT") gw.stats.bytesIn += body.length;
    const i = gw.faults.findIndex((f) => f.match === undefined || f.match(req));
    const fault = i >= 0 ? gw.faults.splice(i, 1)[0] : undefined;
    if (fault?.kind === "reset") { gw.stats.resets++; req.socket.destroy(); return; }
    if (fault?.kind === "hold") { gw.stats.held++; if (!req.socket.destroyed) await new Promise((r) => req.socket.once("close", r)); return; }
    if (fault?.kind === "status") return send(s3Error(fault.status, fault.code, "injected"));
    if (fault?.kind === "delay") await new Promise((r) => setTimeout(r, fault.ms));
    if (gw.delayEveryMs > 0) await new Promise((r) => setTimeout(r, gw.delayEveryMs));
    if (fault?.kind === "corrupt" && body.length > 0) {
      body = Buffer.from(body);
      body[Math.floor(body.length / 2)]! ^= 0xff;
      gw.stats.corrupted++;
    }
    const md5 = req.headers["content-md5"];
    if (gw.checkContentMd5 && typeof md5 === "string" && createHash("md5").update(body).digest("base64") !== md5) {
      gw.stats.badDigest++;
      return send(s3Error(400, "BadDigest", "The Content-MD5 you specified did not match what we received."));
    }
    const headers = { ...req.headers, host: opts.preserveHost === true ? req.headers.host : up.host, "content-length": String(body.length) };
    delete headers["transfer-encoding"];
    forwardsResponse.add(req);
    const fwd = httpRequest({ host: up.hostname, port: up.port, method: req.method, path: req.url, headers }, (r) => {
      finish(); // the upstream has answered: what it stores is stored
      gw.onUpstreamAnswer?.(logged, r.statusCode ?? 502, req);
      // A client gone before the answer is through (killed): the answer is drained, not left paused.
      if (res.destroyed) { r.resume(); return; }
      res.once("close", () => { if (!r.complete) r.resume(); });
      res.writeHead(r.statusCode ?? 502, r.headers);
      if (fault?.kind !== "cut") { r.pipe(res); return; }
      const half = Math.floor(Number(r.headers["content-length"] ?? 0) / 2);
      if (req.method === "HEAD" || half === 0) { gw.stats.cuts++; r.destroy(); res.socket?.destroy(); return; }
      let sent = 0;
      r.on("data", (c: Buffer) => {
        if (sent < 0) return;
        if (sent + c.length < half) { res.write(c); sent += c.length; return; }
        res.write(c.subarray(0, half - sent));
        sent = -1;
        gw.stats.cuts++;
        r.destroy();
        res.socket?.destroy();
      });
    });
    fwd.on("error", () => { finish(); if (!res.headersSent) send(s3Error(502, "BadGateway", "upstream")); });
    fwd.end(body);
  }
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return Object.assign(gw, { endpoint, close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }) }) as Gateway;
}
