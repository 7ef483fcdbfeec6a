// Provider ray: a self-hosted Ray cluster through its Jobs REST API (the dashboard, default port 8265).
// prepare() uploads the launch bundle as a content-addressed Ray package (PUT /api/packages/gcs/<name>.zip, only
// when GET says it is missing), submit() posts the planned body with submission_id = the job name (Ray refuses a
// second job with the same id), status/logs/stop read and act on that id. Token auth (Ray ≥ 2.52; on by default
// for local clusters since 2.59) is a bearer token from the environment; it is never printed.
import { createHash, randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { Agent, upgrade } from "undici";
import { z } from "zod";
import type { Plan } from "../../core/plan.js";
import { normalizePhase } from "../../core/providers/phases.js";
import { RAY_METADATA_RUN, RaySubmitBody, rayPackageUri } from "../../core/providers/ray-request.js";
import { parseEndpoint } from "../../core/util/endpoint.js";
import { zipFiles } from "../../core/util/zip.js";
import {
  type AdapterContext, type AdapterFactory, type JobRef, type JobStatus, type LogPage, type ProviderAdapter,
  ProviderError, kindOfHttpStatus, kindOfNetworkError, tlsFailure,
} from "./provider.js";

/** Where Ray's own job CLI looks when nothing is configured. */
export const DEFAULT_RAY_ADDRESS = "http://127.0.0.1:8265";
/** Ray keeps packages in the GCS, bounded by its gRPC message size (512 MiB by default). */
const MAX_PACKAGE_BYTES = 512 * 1024 * 1024;

// The parts of Ray's JobDetails rlpipe reads (Ray adds fields freely; unknown ones are ignored).
const JobDetails = z.object({
  submission_id: z.string().nullish(),
  status: z.string(),
  message: z.string().nullish(),
  start_time: z.number().nullish(),
  end_time: z.number().nullish(),
  driver_exit_code: z.number().int().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
}).readonly();
type JobDetails = z.infer<typeof JobDetails>;
const SubmitResponse = z.object({ submission_id: z.string() }).readonly();
const LogsResponse = z.object({ logs: z.string() }).readonly();
const StopResponse = z.object({ stopped: z.boolean() }).readonly();

export interface RayAdapterOptions {
  /** Dashboard base URL (validated: https, or http on loopback). */
  readonly base: URL;
  /** Where the address came from, for messages ("RAY_ADDRESS", "targets.ray.address", "the default"). */
  readonly addressSource: string;
  readonly token?: string;
  /** Where the token came from, for messages (never the token). */
  readonly tokenSource?: string;
  /** Per API call (default 30 s). */
  readonly requestTimeoutMs?: number;
  /** Package upload (default 300 s). */
  readonly uploadTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

interface Reply {
  readonly status: number;
  readonly text: string;
}

function fatalConfig(code: string, message: string, hint: string): ProviderError {
  return new ProviderError("ray", "fatal", code, message, { hint, exitCode: 2 });
}

function dashboardUrl(raw: string, source: string): URL {
  const hint = "the Ray dashboard URL, e.g. http://127.0.0.1:8265 (not the GCS address host:6379 or a ray:// client address)";
  // host:port without a scheme is the dashboard over https (http on loopback), as Ray's job CLI reads it — but
  // not on the GCS or Ray Client ports, which ray.init() users put in RAY_ADDRESS.
  if (!raw.includes("://") && /:(6379|10001)\/?$/.test(raw.trim())) throw fatalConfig("ray_bad_endpoint", `${source}: ${raw} is a GCS or Ray Client address, not the dashboard`, hint);
  const parsed = parseEndpoint(raw);
  if ("problem" in parsed) throw fatalConfig(`ray_${parsed.problem.code}`, `${source}: ${parsed.problem.message}`, parsed.problem.hint ?? hint);
  const url = parsed.url;
  if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
    throw fatalConfig("ray_bad_endpoint", `${source}: the dashboard URL may not carry a query, fragment or credentials`, hint);
  }
  url.pathname = url.pathname.replace(/\/+$/, "");
  return url;
}

async function readToken(path: string, source: string, missingOk: boolean): Promise<string | undefined> {
  try {
    const token = (await readFile(path, "utf8")).trim();
    if (token === "") throw fatalConfig("ray_token_empty", `${source} names ${path}, which is empty`, "write the cluster's token there (ray get-auth-token prints it)");
    return token;
  } catch (e) {
    if (e instanceof ProviderError) throw e;
    if (missingOk && (e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw fatalConfig("ray_token_unreadable", `${source}: cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? "error"})`, "point it at a readable file holding the cluster's token");
  }
}

/**
 * The token, first found of: the variable targets.ray.tokenEnv names (required when named), RAY_AUTH_TOKEN,
 * the file RAY_AUTH_TOKEN_PATH names, $HOME/.ray/auth_token (where `ray start` keeps a generated one).
 */
async function resolveToken(ctx: AdapterContext): Promise<{ token?: string; source?: string }> {
  const named = ctx.recipe.targets?.ray?.tokenEnv;
  if (named !== undefined) {
    const v = ctx.env[named]?.trim();
    if (v === undefined || v === "") throw fatalConfig("ray_token_missing", `targets.ray.tokenEnv names ${named}, but ${named} is not set`, `export ${named} with the cluster's token (ray get-auth-token prints it)`);
    return { token: v, source: named };
  }
  const direct = ctx.env.RAY_AUTH_TOKEN?.trim();
  if (direct !== undefined && direct !== "") return { token: direct, source: "RAY_AUTH_TOKEN" };
  const path = ctx.env.RAY_AUTH_TOKEN_PATH?.trim();
  if (path !== undefined && path !== "") return { token: (await readToken(path, "RAY_AUTH_TOKEN_PATH", false))!, source: "RAY_AUTH_TOKEN_PATH" };
  const home = ctx.env.HOME;
  if (home !== undefined && home !== "") {
    const file = join(home, ".ray", "auth_token");
    const token = await readToken(file, file, true);
    if (token !== undefined) return { token, source: "~/.ray/auth_token" };
  }
  return {};
}

/**
 * The dashboard address: RAY_API_SERVER_ADDRESS (Ray's own variable for the Jobs API), RAY_ADDRESS, targets.ray.address,
 * else Ray's default. RAY_ADDRESS often holds a GCS or ray:// address for ray.init(); such a value is passed over
 * (with a note) when another source names the dashboard, and refused with a hint when none does.
 */
function chooseAddress(ctx: AdapterContext): { raw: string; source: string; note?: string } {
  const env = (name: string) => { const v = ctx.env[name]?.trim(); return v === undefined || v === "" ? undefined : v; };
  const api = env("RAY_API_SERVER_ADDRESS");
  if (api !== undefined) return { raw: api, source: "RAY_API_SERVER_ADDRESS" };
  const ray = env("RAY_ADDRESS");
  const recipe = ctx.recipe.targets?.ray?.address;
  if (ray !== undefined && (/^https?:\/\//i.test(ray) || recipe === undefined)) return { raw: ray, source: "RAY_ADDRESS" };
  if (recipe !== undefined) {
    return { raw: recipe, source: "targets.ray.address", ...(ray === undefined ? {} : { note: `RAY_ADDRESS=${ray} is not a dashboard URL (ray.init reads it); using targets.ray.address` }) };
  }
  return { raw: DEFAULT_RAY_ADDRESS, source: "the default address", note: `neither RAY_ADDRESS nor targets.ray.address is set; using ${DEFAULT_RAY_ADDRESS}` };
}

/** Address and token from the context. */
export async function resolveRayOptions(ctx: AdapterContext): Promise<RayAdapterOptions> {
  const { raw, source, note } = chooseAddress(ctx);
  const base = dashboardUrl(raw, source);
  if (note !== undefined) ctx.log?.(`ray: ${note}`);
  const { token, source: tokenSource } = await resolveToken(ctx);
  return { base, addressSource: source, ...(token === undefined ? {} : { token, tokenSource }), ...(ctx.log === undefined ? {} : { log: ctx.log }) };
}

/** The last meaningful line of a reply (Ray answers errors with text, often a Python traceback), bounded. */
function summary(text: string, secret: string | undefined): string {
  const lines = text.split("\n").map((l) => l.trim()).filter((l) => l !== "" && l !== ".");
  let s = lines.at(-1) ?? "(empty reply)";
  if (secret !== undefined && secret !== "") s = s.split(secret).join("***");
  return s.length > 300 ? `${s.slice(0, 300)}…` : s;
}

export class RayAdapter implements ProviderAdapter {
  readonly provider = "ray" as const;
  private readonly agent = new Agent({ keepAliveTimeout: 4_000, connections: 8 });
  private readonly requestTimeoutMs: number;
  private readonly uploadTimeoutMs: number;

  constructor(private readonly opts: RayAdapterOptions) {
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
    this.uploadTimeoutMs = opts.uploadTimeoutMs ?? 300_000;
  }

  /** The dashboard this adapter talks to (no trailing slash). */
  get address(): string {
    return this.opts.base.href.replace(/\/$/, "");
  }

  async prepare(plan: Plan, signal?: AbortSignal): Promise<void> {
    const body = this.body(plan);
    const name = body.runtime_env.working_dir.slice("gcs://".length);
    const path = `/api/packages/gcs/${encodeURIComponent(name)}`;
    // GET also pins the package for a while (Ray's URI pin), so it survives until the submit references it.
    try {
      await this.call("GET", path, { signal });
      this.opts.log?.(`ray: bundle ${name} is already on ${this.address}`);
      return;
    } catch (e) {
      if (!(e instanceof ProviderError && e.kind === "not_found")) throw e;
    }
    const zip = zipFiles(plan.files.map((f) => ({ path: f.path, data: f.content, mode: f.executable ? 0o755 : 0o644 })));
    if (zip.length > MAX_PACKAGE_BYTES) {
      throw new ProviderError("ray", "fatal", "ray_bundle_too_large", `the launch bundle zips to ${zip.length} bytes; Ray packages are limited to ${MAX_PACKAGE_BYTES} bytes`,
        { exitCode: 2, hint: "ship large data through storage or the image, not the bundle" });
    }
    await this.call("PUT", path, { body: zip, contentType: "application/zip", timeoutMs: this.uploadTimeoutMs, signal });
    this.opts.log?.(`ray: uploaded bundle ${name} (${zip.length} bytes) to ${this.address}`);
  }

  async findExisting(plan: Plan, signal?: AbortSignal): Promise<JobRef | undefined> {
    let job: JobDetails;
    try {
      job = await this.job(plan.jobName, this.opts.base, signal);
    } catch (e) {
      if (e instanceof ProviderError && e.kind === "not_found") return undefined;
      throw e;
    }
    // Same submission id but not made for this plan (another tool, or a hand-made job): never adopt it.
    if (job.metadata?.[RAY_METADATA_RUN] !== plan.jobName) {
      throw new ProviderError("ray", "fatal", "ray_name_conflict", `a Ray job with submission id ${plan.jobName} exists on ${this.address} but was not created by rlpipe for this plan`,
        { hint: "delete that job (ray job delete) or change the recipe" });
    }
    return this.ref(plan.jobName, job.submission_id ?? plan.jobName);
  }

  async submit(plan: Plan, signal?: AbortSignal): Promise<JobRef> {
    const body = this.body(plan);
    const reply = await this.call("POST", "/api/jobs/", { body: JSON.stringify(body), contentType: "application/json", signal, create: true });
    // The job exists now even if its reply cannot be read: ambiguous, so deploy() looks it up.
    const res = this.parse(SubmitResponse, reply, "POST /api/jobs/", "ambiguous");
    return this.ref(plan.jobName, res.submission_id);
  }

  async status(ref: JobRef, signal?: AbortSignal): Promise<JobStatus> {
    const job = await this.job(ref.id, this.baseOf(ref), signal);
    const iso = (ms: number | null | undefined) => (typeof ms === "number" && ms > 0 ? new Date(ms).toISOString() : undefined);
    const startedAt = iso(job.start_time);
    const endedAt = iso(job.end_time);
    return {
      phase: normalizePhase("ray", job.status),
      rawPhase: job.status,
      ...(job.message === null || job.message === undefined || job.message === "" ? {} : { message: job.message }),
      ...(startedAt === undefined ? {} : { startedAt }),
      ...(endedAt === undefined ? {} : { endedAt }),
      ...(job.driver_exit_code === null || job.driver_exit_code === undefined ? {} : { exitCode: job.driver_exit_code }),
    };
  }

  /** Ray returns the whole driver log each time; the cursor counts the characters already returned. */
  async logs(ref: JobRef, cursor: string | undefined, signal?: AbortSignal): Promise<LogPage> {
    if (cursor !== undefined && !/^\d+$/.test(cursor)) {
      throw new ProviderError("ray", "fatal", "ray_bad_cursor", `log cursor ${JSON.stringify(cursor)} is not one this adapter returned`);
    }
    const from = cursor === undefined ? 0 : Number(cursor);
    const path = `/api/jobs/${encodeURIComponent(ref.id)}/logs`;
    const all = this.parse(LogsResponse, await this.call("GET", path, { signal }, this.baseOf(ref)), `GET ${path}`, "ambiguous").logs;
    // A log shorter than the cursor was replaced (not appended to): start over rather than skip its head.
    const start = from <= all.length ? from : 0;
    return { text: all.slice(start), cursor: String(all.length) };
  }

  /** Idempotent: a finished job (Ray answers stopped: false) or one that no longer exists is left as it is. */
  async stop(ref: JobRef, signal?: AbortSignal): Promise<void> {
    const path = `/api/jobs/${encodeURIComponent(ref.id)}/stop`;
    try {
      const res = this.parse(StopResponse, await this.call("POST", path, { signal }, this.baseOf(ref)), `POST ${path}`, "ambiguous");
      this.opts.log?.(res.stopped ? `ray: stopping ${ref.id}` : `ray: ${ref.id} had already finished`);
    } catch (e) {
      if (!(e instanceof ProviderError && e.kind === "not_found")) throw e;
      this.opts.log?.(`ray: ${ref.id} does not exist on ${this.baseOf(ref).href}; nothing to stop`);
    }
  }

  /**
   * The driver log as Ray streams it (WebSocket /api/jobs/{id}/logs/tail): chunks as they are written, ending
   * when the job ends. Stops early when `signal` aborts. Unlike logs(), it never re-reads the whole log.
   */
  async *tail(ref: JobRef, signal?: AbortSignal): AsyncGenerator<string> {
    const base = this.baseOf(ref);
    // A plain read first: a missing job or a bad token is reported with its HTTP status (a failed upgrade is not).
    await this.job(ref.id, base, signal);
    const path = `/api/jobs/${encodeURIComponent(ref.id)}/logs/tail`;
    const where = `GET ${path} at ${base.host}`;
    const url = new URL(`${base.href.replace(/\/$/, "")}${path}`);
    const key = randomBytes(16).toString("base64");
    let socket: Duplex;
    try {
      // The handshake offers no extension: undici's WebSocket negotiates permessage-deflate, which fails
      // against Ray's aiohttp server (the stream closes at once).
      const up = await upgrade(url, {
        dispatcher: this.agent, protocol: "websocket", signal: this.handshakeSignal(signal),
        headers: { "sec-websocket-version": "13", "sec-websocket-key": key, "user-agent": "rlpipe", ...this.authHeaders() },
      });
      socket = up.socket;
      const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
      if (up.headers["sec-websocket-accept"] !== accept) {
        socket.destroy();
        throw new ProviderError("ray", "ambiguous", "ray_tail_failed", `${where}: bad WebSocket handshake`);
      }
    } catch (e) {
      if (e instanceof ProviderError) throw e;
      if (signal?.aborted === true) throw signal.reason;
      throw new ProviderError("ray", kindOfNetworkError(e), "ray_tail_failed", `${where}: ${(e as { code?: string }).code ?? String(e)}`, { cause: e });
    }
    yield* readTextFrames(socket, where, signal);
  }

  /** The caller's signal plus the request timeout, for a handshake only. */
  private handshakeSignal(signal: AbortSignal | undefined): AbortSignal {
    const timeout = AbortSignal.timeout(this.requestTimeoutMs);
    return signal === undefined ? timeout : AbortSignal.any([signal, timeout]);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  // ---------------------------------------------------------------- internals

  private body(plan: Plan): RaySubmitBody {
    const req = plan.request;
    const bad = (why: string) => new ProviderError("ray", "fatal", "ray_plan_mismatch", `plan ${plan.jobName} cannot be deployed to Ray: ${why}`, { hint: "plan the recipe again with --provider ray" });
    if (plan.provider !== "ray" || req === undefined || req.provider !== "ray") throw bad("it was planned for another provider");
    const parsed = RaySubmitBody.safeParse(req.body);
    if (!parsed.success) throw bad(`the request body does not match the Jobs API (${parsed.error.issues[0]?.path.join(".") ?? ""}: ${parsed.error.issues[0]?.message ?? ""})`);
    const body = parsed.data;
    if (body.submission_id !== plan.jobName) throw bad("submission_id is not the job name");
    const uri = rayPackageUri(plan.bundleDigest);
    if (body.runtime_env.working_dir !== uri || req.bundle?.to !== uri) throw bad("its working_dir is not the package of its bundle");
    return body;
  }

  // Only the submission id: Ray's driver job id is unset until the driver starts, so it cannot identify the job.
  private ref(name: string, id: string): JobRef {
    return { provider: "ray", name, id, endpoint: this.address };
  }

  /**
   * A job's calls go to the dashboard it was created at (the run record's endpoint), checked like any address —
   * unless RAY_API_SERVER_ADDRESS or RAY_ADDRESS names a dashboard now: the current setting wins (a tunnel on a
   * new port, a moved head node).
   */
  private baseOf(ref: JobRef): URL {
    const fromEnv = this.opts.addressSource === "RAY_API_SERVER_ADDRESS" || this.opts.addressSource === "RAY_ADDRESS";
    return ref.endpoint === undefined || fromEnv ? this.opts.base : dashboardUrl(ref.endpoint, `the run's endpoint`);
  }

  private async job(id: string, base: URL, signal: AbortSignal | undefined): Promise<JobDetails> {
    const path = `/api/jobs/${encodeURIComponent(id)}`;
    return this.parse(JobDetails, await this.call("GET", path, { signal }, base), `GET ${path}`, "ambiguous");
  }

  private authHeaders(): Record<string, string> {
    return this.opts.token === undefined ? {} : { authorization: `Bearer ${this.opts.token}` };
  }

  private parse<T>(schema: z.ZodType<T>, reply: Reply, what: string, kind: "ambiguous" | "fatal"): T {
    let json: unknown;
    try { json = JSON.parse(reply.text); } catch { json = undefined; }
    const r = schema.safeParse(json);
    if (!r.success) throw new ProviderError("ray", kind, "ray_bad_response", `${what} at ${this.address}: unexpected reply: ${summary(reply.text, this.opts.token)}`);
    return r.data;
  }

  /** One request; non-2xx replies become ProviderErrors (`create`: the job-creating call, where a taken name is "exists"). */
  private async call(method: "GET" | "PUT" | "POST", path: string, o: { body?: string | Uint8Array; contentType?: string; timeoutMs?: number; signal?: AbortSignal | undefined; create?: boolean }, base: URL = this.opts.base): Promise<Reply> {
    const url = new URL(`${base.href.replace(/\/$/, "")}${path}`);
    const where = `${method} ${path} at ${base.host}`;
    const timeout = AbortSignal.timeout(o.timeoutMs ?? this.requestTimeoutMs);
    const signal = o.signal === undefined ? timeout : AbortSignal.any([o.signal, timeout]);
    let status: number;
    let text: string;
    try {
      // undici's request(), not fetch(): fetch adds Sec-Fetch-Mode, and Ray's dashboard refuses anything but GET
      // from what looks like a browser (HTTP 405 "method not allowed for browser traffic").
      const res = await this.agent.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method,
        signal,
        headers: { accept: "application/json", "user-agent": "rlpipe", ...(o.contentType === undefined ? {} : { "content-type": o.contentType }), ...this.authHeaders() },
        ...(o.body === undefined ? {} : { body: o.body }),
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (e) {
      if (o.signal?.aborted === true) throw o.signal.reason;
      if (timeout.aborted) {
        throw new ProviderError("ray", "ambiguous", "ray_timeout", `${where}: no reply within ${o.timeoutMs ?? this.requestTimeoutMs} ms`, { cause: e });
      }
      const tls = tlsFailure(e);
      if (tls !== undefined) throw new ProviderError("ray", "fatal", "ray_tls_failed", `${where}: ${tls}`, { hint: `check the dashboard address (from ${this.opts.addressSource}): Ray's dashboard speaks plain http, reachable over http:// on loopback (e.g. through an ssh tunnel) or behind an https proxy`, cause: e });
      const err = e as { code?: string; message?: string; cause?: { code?: string; message?: string } };
      const why = err.code ?? err.cause?.code ?? err.cause?.message ?? err.message ?? String(e);
      throw new ProviderError("ray", kindOfNetworkError(e), "ray_network", `${where}: ${why}`,
        { hint: `is the Ray dashboard up at ${this.address}? (address from ${this.opts.addressSource})`, cause: e });
    }
    if (status >= 200 && status < 300) return { status, text };
    throw this.httpError(where, status, text, o.create === true);
  }

  private httpError(where: string, status: number, text: string, create = false): ProviderError {
    const said = summary(text, this.opts.token);
    const opts = { httpStatus: status };
    const tokenHint = "set RAY_AUTH_TOKEN (or RAY_AUTH_TOKEN_PATH, or the variable targets.ray.tokenEnv names) to the cluster's token: `ray get-auth-token` on the head node prints it";
    if (status === 401) {
      return new ProviderError("ray", "fatal", "ray_unauthorized", `${where}: the Ray dashboard requires a token and ${this.opts.token === undefined ? "none was found" : "none was accepted"} (HTTP 401)`, { ...opts, hint: tokenHint });
    }
    if (status === 403) {
      return new ProviderError("ray", "fatal", "ray_forbidden", `${where}: the Ray dashboard refused the token from ${this.opts.tokenSource ?? "the environment"} (HTTP 403)`, { ...opts, hint: tokenHint });
    }
    // Ray refuses a duplicate submission_id; 2.60 answers 500 (the agent's ValueError re-raised by the head), older ones 400.
    if (create && (status === 400 || status >= 500) && /submission_id .* already exists/i.test(text)) {
      return new ProviderError("ray", "exists", "ray_job_exists", `${where}: ${said}`, opts);
    }
    const kind = kindOfHttpStatus(status);
    const code = status === 404 ? "ray_not_found" : status === 429 ? "ray_throttled" : status >= 500 ? "ray_server_error" : "ray_bad_request";
    return new ProviderError("ray", kind, code, `${where}: HTTP ${status}: ${said}`, opts);
  }
}

/** A masked client frame (RFC 6455 §5.3): only control frames (pong, close) are ever sent. */
function clientFrame(opcode: number, payload: Uint8Array): Buffer {
  const mask = randomBytes(4);
  const out = Buffer.alloc(6 + payload.length);
  out[0] = 0x80 | opcode;
  out[1] = 0x80 | payload.length;
  mask.copy(out, 2);
  for (let i = 0; i < payload.length; i++) out[6 + i] = payload[i]! ^ mask[i % 4]!;
  return out;
}

/** Text messages from a WebSocket's server side until it closes (server frames are unmasked, RFC 6455 §5.1). */
async function* readTextFrames(socket: Duplex, where: string, signal: AbortSignal | undefined): AsyncGenerator<string> {
  const fail = (why: string) => new ProviderError("ray", "ambiguous", "ray_tail_failed", `${where}: ${why}`);
  const onAbort = () => socket.destroy();
  signal?.addEventListener("abort", onAbort, { once: true });
  let buf = Buffer.alloc(0);
  let message: Buffer[] = [];
  const decoder = new TextDecoder("utf-8");
  try {
    for await (const chunk of socket) {
      buf = Buffer.concat([buf, chunk as Buffer]);
      for (;;) {
        if (buf.length < 2) break;
        const fin = (buf[0]! & 0x80) !== 0;
        const opcode = buf[0]! & 0x0f;
        if ((buf[0]! & 0x70) !== 0) throw fail("the server used a WebSocket extension that was not negotiated");
        if ((buf[1]! & 0x80) !== 0) throw fail("the server masked a frame");
        let len = buf[1]! & 0x7f;
        let at = 2;
        if (len === 126) { if (buf.length < 4) break; len = buf.readUInt16BE(2); at = 4; }
        else if (len === 127) {
          if (buf.length < 10) break;
          const big = buf.readBigUInt64BE(2);
          if (big > 64n * 1024n * 1024n) throw fail("a frame larger than 64 MiB");
          len = Number(big);
          at = 10;
        }
        if (buf.length < at + len) break;
        const payload = buf.subarray(at, at + len);
        buf = buf.subarray(at + len);
        if (opcode === 0x8) { socket.end(clientFrame(0x8, payload.subarray(0, 2))); return; }
        if (opcode === 0x9) { socket.write(clientFrame(0xa, payload)); continue; }
        if (opcode === 0xa) continue;
        message.push(Buffer.from(payload));
        if (fin) {
          yield decoder.decode(Buffer.concat(message));
          message = [];
        }
      }
    }
  } catch (e) {
    if (signal?.aborted === true) return;
    if (e instanceof ProviderError) throw e;
    throw fail((e as { code?: string }).code ?? String(e));
  } finally {
    signal?.removeEventListener("abort", onAbort);
    socket.destroy();
  }
}

export async function createRayAdapter(ctx: AdapterContext, overrides: Partial<Pick<RayAdapterOptions, "requestTimeoutMs" | "uploadTimeoutMs">> = {}): Promise<RayAdapter> {
  return new RayAdapter({ ...(await resolveRayOptions(ctx)), ...overrides });
}

export const createAdapter: AdapterFactory = (ctx) => createRayAdapter(ctx);
