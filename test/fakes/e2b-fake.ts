// Loopback fakes of the E2B control plane and of envd, strict enough that the real `e2b` SDK (2.50.0) must
// send what the cloud expects: the X-API-KEY on every control-plane call, templateID and
// allow_internet_access:false on create, the sandbox's X-Access-Token and E2b-Sandbox-Id on every envd call.
// envd really executes commands with bash in a per-sandbox temp dir (sandbox paths under /tmp/rlpipe are
// mapped there), so the real runner runs. Both servers listen on 127.0.0.1, port 0. Faults can be injected.
// The account's limits can be enforced (maxSandboxes, createsPerS): a create over them is answered 429 with E2B's
// error body ({code, message}), and the fake counts what it saw — every create attempt by arrival time, the most
// sandboxes alive at once, overall and per `instance` metadata — so tests assert limits where E2B counts them.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";

const SANDBOX_ROOT = "/tmp/rlpipe";

export interface FakeSandbox {
  readonly id: string;
  readonly token: string;
  readonly templateID: string;
  /** Host directory standing in for the sandbox's /tmp/rlpipe. */
  readonly root: string;
  /** The `instance` metadata of its create (which function instance made it). */
  readonly instance: string | undefined;
  alive: boolean;
  timeoutS: number;
  readonly procs: Set<ChildProcess>;
  readonly streams: Set<ServerResponse>;
}

export interface FakeE2BOptions {
  readonly apiKey: string;
  readonly envdVersion?: string;
  /** The account's concurrent sandboxes: a create beyond them is answered 429 (E2B's message). Default unlimited. */
  readonly maxSandboxes?: number;
  /** The account's creates in any 1 s (sliding window, by arrival): more are answered 429. Default unlimited. */
  readonly createsPerS?: number;
  /** Retry-After (s) sent with a create-rate 429; none when unset (E2B's own header is not documented). */
  readonly rateRetryAfterS?: number;
}

export interface FakeStats {
  /** Accepted creates, with the time each request arrived (ms). */
  readonly creates: { readonly id: string; readonly atMs: number; readonly body: Record<string, unknown> }[];
  /** Create requests that got an injected fault. */
  readonly rejectedCreates: number[];
  /** Every authenticated, valid create request (accepted or not), by arrival time, with its `instance` metadata. */
  readonly createAttempts: { readonly atMs: number; readonly instance: string | undefined }[];
  /** Creates refused because the account was at a limit. */
  readonly limitRejections: { readonly atMs: number; readonly limit: "concurrency" | "rate" }[];
  /** The most sandboxes alive at once, and per `instance` metadata. */
  peakAlive: number;
  readonly peakAliveByInstance: Record<string, number>;
  readonly kills: string[];
  readonly timeouts: { readonly id: string; readonly timeoutS: number }[];
  readonly authFailures: number;
  readonly fileWrites: number;
  readonly starts: number;
  /** Everything /files received: sandbox path and bytes. */
  readonly files: { readonly sandboxId: string; readonly path: string; readonly data: Buffer }[];
  readonly commands: string[];
  /** Every process start as the SDK sent it (cmd, args, envs, cwd): what a sandbox command receives. */
  readonly processes: unknown[];
  /** Requests the fake does not implement (a test asserts there are none). */
  readonly unknown: string[];
}

export class FakeE2B {
  readonly sandboxes = new Map<string, FakeSandbox>();
  stats: FakeStats = emptyStats();
  /** Next N creates answer with this status (429, 500, …). */
  private createFaults: number[] = [];
  /** The next N process starts kill their sandbox after `afterMs` (Infinity: every start). */
  private killOnStart = { count: 0, afterMs: 0 };
  /** Delay before answering a process start. */
  startDelayMs = 0;
  /** The key the control plane accepts (FakeE2BOptions.apiKey until acceptApiKey changes it). */
  private apiKey: string;
  /** While set, creates wait for it before answering (holdCreates). */
  private createGate: Promise<void> | undefined;
  /** Creates waiting at the gate now. */
  createsHeld = 0;
  private readonly dir = mkdtempSync(join(tmpdir(), "rlpipe-e2b-fake-"));
  private seq = 0;
  /** Arrival times of the creates the account accepted (the rate window). */
  private accepted: number[] = [];
  /** The limits in force (setLimits changes them). */
  private limits: { maxSandboxes?: number | undefined; createsPerS?: number | undefined; rateRetryAfterS?: number | undefined };

  private constructor(private readonly opts: FakeE2BOptions, private readonly api: Server, private readonly envd: Server) {
    this.apiKey = opts.apiKey;
    this.limits = { maxSandboxes: opts.maxSandboxes, createsPerS: opts.createsPerS, rateRetryAfterS: opts.rateRetryAfterS };
  }

  /** The account's limits from now on (undefined: unlimited). */
  setLimits(limits: { maxSandboxes?: number; createsPerS?: number; rateRetryAfterS?: number }): void {
    this.limits = { ...limits };
  }

  /** Sandboxes alive now, and those made by one `instance`. */
  aliveCount(instance?: string): number {
    return [...this.sandboxes.values()].filter((s) => s.alive && (instance === undefined || s.instance === instance)).length;
  }

  static async start(opts: FakeE2BOptions): Promise<FakeE2B> {
    let fake: FakeE2B | undefined;
    const api = createServer((req, res) => void fake!.onApi(req, res).catch((e: unknown) => fail(res, 500, String(e))));
    const envd = createServer((req, res) => void fake!.onEnvd(req, res).catch((e: unknown) => fail(res, 500, String(e))));
    fake = new FakeE2B(opts, api, envd);
    await Promise.all([listen(api), listen(envd)]);
    return fake;
  }

  get apiUrl(): string {
    return `http://127.0.0.1:${(this.api.address() as AddressInfo).port}`;
  }

  get sandboxUrl(): string {
    return `http://127.0.0.1:${(this.envd.address() as AddressInfo).port}`;
  }

  reset(): void {
    this.stats = emptyStats();
    this.createFaults = [];
    this.killOnStart = { count: 0, afterMs: 0 };
    this.startDelayMs = 0;
    this.accepted = []; // a fresh account window (a test's creates do not count against the next test's)
  }

  /** From now on the control plane accepts this key (and refuses the one before): a key fixed on the service's side. */
  acceptApiKey(key: string): void {
    this.apiKey = key;
  }

  /**
   * Creates (authenticated and valid) wait until the returned function is called: a slow sandbox creation, for as
   * long as a test needs. createsHeld says how many are waiting.
   */
  holdCreates(): () => void {
    let release!: () => void;
    this.createGate = new Promise<void>((res) => { release = res; });
    return () => { this.createGate = undefined; release(); };
  }

  failNextCreates(count: number, status: number): void {
    this.createFaults.push(...Array.from({ length: count }, () => status));
  }

  killDuringNextStarts(count: number, afterMs: number): void {
    this.killOnStart = { count, afterMs };
  }

  /** The sandbox dies: its processes are killed, open streams cut, later calls fail like a dead sandbox. */
  kill(id: string): void {
    const sb = this.sandboxes.get(id);
    if (sb === undefined || !sb.alive) return;
    sb.alive = false;
    for (const p of sb.procs) killGroup(p);
    for (const r of sb.streams) r.destroy();
  }

  /** What is left in the sandboxes' /tmp/rlpipe (the runner removes each job's directory). */
  leftovers(): string[] {
    return [...this.sandboxes.values()].flatMap((s) => readdirSync(s.root).map((f) => `${s.id}:${f}`));
  }

  liveIds(): string[] {
    return [...this.sandboxes.values()].filter((s) => s.alive).map((s) => s.id);
  }

  async close(): Promise<void> {
    for (const id of this.sandboxes.keys()) this.kill(id);
    for (const s of [this.api, this.envd]) s.closeAllConnections();
    await Promise.all([this.api, this.envd].map((s) => new Promise<void>((res) => s.close(() => res()))));
    rmSync(this.dir, { recursive: true, force: true });
  }

  // ---- control plane ----

  private async onApi(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://x");
    const body = await readBody(req);
    if (req.headers["x-api-key"] !== this.apiKey) {
      (this.stats as { authFailures: number }).authFailures++;
      return json(res, 401, { code: 401, message: "Invalid API key" });
    }
    const m = /^\/sandboxes(?:\/([^/]+))?(?:\/([a-z]+))?$/.exec(url.pathname);
    if (m === null) return this.unknownRoute(req, res);
    const [, id, action] = m;
    if (req.method === "POST" && id === undefined) {
      if (this.createGate !== undefined) {
        this.createsHeld++;
        await this.createGate;
        this.createsHeld--;
      }
      return this.create(body, res);
    }
    const sb = id === undefined ? undefined : this.sandboxes.get(id);
    if (req.method === "DELETE" && action === undefined) {
      if (sb === undefined || !sb.alive) return json(res, 404, { code: 404, message: `sandbox ${id} not found` });
      this.stats.kills.push(sb.id);
      this.kill(sb.id);
      res.writeHead(204).end();
      return;
    }
    if (req.method === "POST" && action === "timeout") {
      if (sb === undefined || !sb.alive) return json(res, 404, { code: 404, message: `sandbox ${id} not found` });
      const { timeout } = JSON.parse(body.toString("utf8")) as { timeout: number };
      if (!Number.isInteger(timeout) || timeout <= 0) return json(res, 400, { code: 400, message: "timeout must be a positive integer (seconds)" });
      sb.timeoutS = timeout;
      this.stats.timeouts.push({ id: sb.id, timeoutS: timeout });
      res.writeHead(204).end();
      return;
    }
    return this.unknownRoute(req, res);
  }

  private create(raw: Buffer, res: ServerResponse): void {
    const atMs = Date.now();
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw.toString("utf8")) as Record<string, unknown>;
    } catch {
      return json(res, 400, { code: 400, message: "body is not JSON" });
    }
    if (typeof body.templateID !== "string" || body.templateID === "") return json(res, 400, { code: 400, message: "templateID is required" });
    if (body.allow_internet_access !== false) return json(res, 400, { code: 400, message: "this fake only creates sandboxes without internet access" });
    const metadata = (typeof body.metadata === "object" && body.metadata !== null ? body.metadata : {}) as Record<string, unknown>;
    const instance = typeof metadata.instance === "string" ? metadata.instance : undefined;
    this.stats.createAttempts.push({ atMs, instance });
    const { maxSandboxes, createsPerS, rateRetryAfterS } = this.limits;
    this.accepted = this.accepted.filter((t) => t > atMs - 1000);
    if (createsPerS !== undefined && this.accepted.length >= createsPerS) {
      this.stats.limitRejections.push({ atMs, limit: "rate" });
      return json(res, 429, { code: 429, message: "Rate limit exceeded, please try again later." },
        rateRetryAfterS === undefined ? {} : { "retry-after": String(rateRetryAfterS) });
    }
    if (maxSandboxes !== undefined && this.aliveCount() >= maxSandboxes) {
      this.stats.limitRejections.push({ atMs, limit: "concurrency" });
      // What E2B answers (e2b-dev/infra: the API's team sandbox reservation).
      return json(res, 429, { code: 429, message: `you have reached the maximum number of concurrent E2B sandboxes (${maxSandboxes}). If you need more, please visit 'https://e2b.dev/docs/billing'` });
    }
    const fault = this.createFaults.shift();
    if (fault !== undefined) {
      this.stats.rejectedCreates.push(atMs);
      return json(res, fault, { code: fault, message: fault === 429 ? "rate limit exceeded" : "injected failure" });
    }
    const id = `sbx${++this.seq}${randomBytes(3).toString("hex")}`;
    const root = join(this.dir, id, "rlpipe");
    mkdirSync(root, { recursive: true });
    this.accepted.push(atMs);
    const sb: FakeSandbox = {
      id, token: randomBytes(12).toString("hex"), templateID: body.templateID, root, instance, alive: true,
      timeoutS: typeof body.timeout === "number" ? body.timeout : 300, procs: new Set(), streams: new Set(),
    };
    this.sandboxes.set(id, sb);
    this.stats.creates.push({ id, atMs, body });
    this.stats.peakAlive = Math.max(this.stats.peakAlive, this.aliveCount());
    if (instance !== undefined) this.stats.peakAliveByInstance[instance] = Math.max(this.stats.peakAliveByInstance[instance] ?? 0, this.aliveCount(instance));
    json(res, 201, {
      sandboxID: id, templateID: sb.templateID, clientID: "fake-client", envdVersion: this.opts.envdVersion ?? "0.5.7",
      envdAccessToken: sb.token, domain: "localhost",
    });
  }

  // ---- envd ----

  private async onEnvd(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const id = req.headers["e2b-sandbox-id"];
    const sb = typeof id === "string" ? this.sandboxes.get(id) : undefined;
    const url = new URL(req.url ?? "/", "http://x");
    if (sb === undefined) return fail(res, 400, "missing or unknown E2b-Sandbox-Id");
    // What the E2B edge answers for a sandbox that is gone; the SDK maps it to a sandbox timeout.
    if (!sb.alive) return fail(res, 502, "sandbox not running");
    if (req.method === "GET" && url.pathname === "/health") {
      res.writeHead(204).end();
      return;
    }
    if (req.headers["x-access-token"] !== sb.token) {
      (this.stats as { authFailures: number }).authFailures++;
      return json(res, 401, { code: 401, message: "invalid access token" });
    }
    if (req.method === "POST" && url.pathname === "/files") return this.files(sb, req, url, res);
    if (req.method === "POST" && url.pathname === "/process.Process/Start") return this.start(sb, req, res);
    return this.unknownRoute(req, res);
  }

  private mapPath(sb: FakeSandbox, path: string): string | undefined {
    const clean = normalize(path);
    if (!clean.startsWith(`${SANDBOX_ROOT}/`)) return undefined;
    return join(sb.root, clean.slice(SANDBOX_ROOT.length + 1));
  }

  private async files(sb: FakeSandbox, req: IncomingMessage, url: URL, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const type = req.headers["content-type"] ?? "";
    let parts: { path: string; data: Buffer }[];
    if (type.startsWith("multipart/form-data")) {
      const boundary = /boundary=(?:"([^"]+)"|([^;]+))/.exec(type);
      if (boundary === null) return json(res, 400, { code: 400, message: "multipart without boundary" });
      try {
        parts = parseMultipart(body, boundary[1] ?? boundary[2]!, url.searchParams.get("path"));
      } catch (e) {
        return json(res, 400, { code: 400, message: (e as Error).message });
      }
    } else if (type === "application/octet-stream") {
      const path = url.searchParams.get("path");
      if (path === null) return json(res, 400, { code: 400, message: "octet-stream upload needs ?path=" });
      parts = [{ path, data: body }];
    } else {
      return json(res, 400, { code: 400, message: `unsupported content type ${type}` });
    }
    (this.stats as { fileWrites: number }).fileWrites++;
    const entries = [];
    for (const p of parts) {
      const host = this.mapPath(sb, p.path);
      if (host === undefined) return json(res, 400, { code: 400, message: `this fake only writes under ${SANDBOX_ROOT}: ${p.path}` });
      mkdirSync(dirname(host), { recursive: true });
      writeFileSync(host, p.data);
      this.stats.files.push({ sandboxId: sb.id, path: p.path, data: p.data });
      entries.push({ name: p.path.split("/").pop(), type: "file", path: p.path });
    }
    json(res, 200, entries);
  }

  /** Connect server-streaming over JSON: enveloped request in, enveloped ProcessEvents out, then end-of-stream. */
  private async start(sb: FakeSandbox, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.headers["content-type"] !== "application/connect+json") return json(res, 415, { code: "invalid_argument", message: "expected application/connect+json" });
    const body = await readBody(req);
    if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) return json(res, 400, { code: "invalid_argument", message: "bad envelope" });
    const msg = JSON.parse(body.subarray(5).toString("utf8")) as { process?: { cmd?: string; args?: string[]; envs?: Record<string, string> } };
    this.stats.processes.push(msg.process);
    const args = msg.process?.args ?? [];
    if (msg.process?.cmd !== "/bin/bash" || args.length !== 3 || args[1] !== "-c") return json(res, 400, { code: "invalid_argument", message: "expected /bin/bash -l -c <cmd>" });
    (this.stats as { starts: number }).starts++;
    const cmd = args[2]!;
    this.stats.commands.push(cmd);
    if (this.startDelayMs > 0) await new Promise((r) => setTimeout(r, this.startDelayMs));
    if (!sb.alive) return fail(res, 502, "sandbox not running");
    const deadlineMs = Number(req.headers["connect-timeout-ms"] ?? 0);

    res.writeHead(200, { "content-type": "application/connect+json" });
    sb.streams.add(res);
    const frame = (flags: number, obj: unknown) => {
      const payload = Buffer.from(JSON.stringify(obj));
      const head = Buffer.alloc(5);
      head[0] = flags;
      head.writeUInt32BE(payload.length, 1);
      if (!res.destroyed) res.write(Buffer.concat([head, payload]));
    };
    // Sandbox paths → this sandbox's host directory; a clean environment (no host secrets reach programs) plus
    // the variables the request set, as envd does.
    const hostCmd = cmd.split(SANDBOX_ROOT).join(sb.root);
    const child = spawn("bash", ["-c", hostCmd], {
      cwd: sb.root, detached: true, stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: sb.root, LANG: "C.UTF-8", ...msg.process?.envs },
    });
    sb.procs.add(child);
    frame(0, { event: { start: { pid: child.pid } } });
    child.stdout!.on("data", (d: Buffer) => frame(0, { event: { data: { stdout: d.toString("base64") } } }));
    child.stderr!.on("data", (d: Buffer) => frame(0, { event: { data: { stderr: d.toString("base64") } } }));
    let deadline: NodeJS.Timeout | undefined;
    let expired = false;
    if (deadlineMs > 0) deadline = setTimeout(() => { expired = true; killGroup(child); }, deadlineMs);
    if (this.killOnStart.count > 0) {
      this.killOnStart.count--;
      setTimeout(() => this.kill(sb.id), this.killOnStart.afterMs);
    }
    child.on("close", (code, signal) => {
      clearTimeout(deadline);
      sb.procs.delete(child);
      sb.streams.delete(res);
      if (res.destroyed) return;
      if (expired) {
        frame(2, { error: { code: "deadline_exceeded", message: "the command exceeded its timeout" } });
      } else {
        const exitCode = code ?? -1;
        frame(0, { event: { end: { exitCode, exited: code !== null, status: code !== null ? `exit status ${code}` : `signal: ${signal}` } } });
        frame(2, {});
      }
      res.end();
    });
    res.on("close", () => { if (!res.writableFinished) killGroup(child); });
  }

  private unknownRoute(req: IncomingMessage, res: ServerResponse): void {
    this.stats.unknown.push(`${req.method} ${req.url}`);
    json(res, 404, { code: 404, message: `not implemented by the fake: ${req.method} ${req.url}` });
  }
}

function emptyStats(): FakeStats {
  return { creates: [], rejectedCreates: [], createAttempts: [], limitRejections: [], peakAlive: 0, peakAliveByInstance: {}, kills: [], timeouts: [], authFailures: 0, fileWrites: 0, starts: 0, files: [], commands: [], processes: [], unknown: [] };
}

function listen(s: Server): Promise<void> {
  return new Promise((res) => s.listen(0, "127.0.0.1", () => res()));
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((res, rej) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => res(Buffer.concat(chunks)));
    req.on("error", rej);
  });
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

function fail(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { "content-type": "text/plain" }).end(message);
}

function killGroup(p: ChildProcess): void {
  try {
    process.kill(-p.pid!, "SIGKILL");
  } catch {
    /* already gone */
  }
}

/** Minimal multipart/form-data parser: every part is a `file` whose filename is the sandbox path. */
function parseMultipart(body: Buffer, boundary: string, defaultPath: string | null): { path: string; data: Buffer }[] {
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: { path: string; data: Buffer }[] = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw new Error("multipart body without a boundary");
  for (;;) {
    pos += delimiter.length;
    if (body.subarray(pos, pos + 2).toString() === "--") break;
    pos += 2; // CRLF
    const headerEnd = body.indexOf("\r\n\r\n", pos);
    if (headerEnd < 0) throw new Error("multipart part without headers");
    const headers = body.subarray(pos, headerEnd).toString("utf8");
    const next = body.indexOf(Buffer.concat([Buffer.from("\r\n"), delimiter]), headerEnd);
    if (next < 0) throw new Error("unterminated multipart part");
    const disposition = /content-disposition:\s*form-data;\s*name="([^"]*)"(?:;\s*filename="([^"]*)")?/i.exec(headers);
    if (disposition === null || disposition[1] !== "file") throw new Error("each part must be a form field named file");
    const path = disposition[2] === undefined ? defaultPath : disposition[2].replace(/%22/g, '"').replace(/%0A/g, "\n").replace(/%0D/g, "\r");
    if (path === null || path === "") throw new Error("a part without a path");
    parts.push({ path, data: body.subarray(headerEnd + 4, next) });
    pos = next + 2;
  }
  return parts;
}
