// Huawei Cloud ModelArts training jobs (API v2): a thin client of our own over fetch, signed with SDK-HMAC-SHA256
// (the ModelArts SDK is not published on npm; the core SDK disables TLS checks and logs Authorization headers).
// create · show · search by name · task log preview · terminate. The launch bundle goes to the plan's
// content-addressed OBS code dir through the BundleSink the CLI provides; job names are deterministic, and a
// duplicate name (ModelArts.2751) means the job exists. The body created is the plan's as the SDK's JobAlgorithm
// documents it (core/providers/modelarts-request.ts: boot_file with code_dir, no local_code_dir in ModelArts' own directories).
//
// Credentials: HUAWEICLOUD_SDK_AK + HUAWEICLOUD_SDK_SK (+ HUAWEICLOUD_SDK_SECURITY_TOKEN for temporary ones), or a
// credentials file at HUAWEICLOUD_CREDENTIALS_FILE (default $HOME/.huaweicloud/credentials), INI style, profile
// HUAWEICLOUD_PROFILE (default "default"):
//   [default]
//   ak = …
//   sk = …
//   security_token = …   (optional)
//   project_id = …       (optional)
//   region = …           (optional)
// Project id: HUAWEICLOUD_SDK_PROJECT_ID, else targets.modelarts.projectId, else the file. Region:
// targets.modelarts.region, else HUAWEICLOUD_REGION / HUAWEICLOUD_SDK_REGION, else the file. Endpoint:
// MODELARTS_ENDPOINT, else targets.modelarts.endpoint, else https://modelarts.<region>.myhuaweicloud.com.
import { join } from "node:path";
import { z } from "zod";
import { RlpipeError } from "../../core/errors.js";
import type { Plan } from "../../core/plan.js";
import { MODELARTS_BOOT_FILE, type ModelArtsJobBody } from "../../core/providers/modelarts-request.js";
import { isTerminal, normalizePhase } from "../../core/providers/phases.js";
import type { Recipe } from "../../core/recipe/schema.js";
import { parseEndpoint } from "../../core/util/endpoint.js";
import { resolveHuaweiAccount, readIfExists } from "./huawei-account.js";
import { type HuaweiCredentials, encodePathSegment, signRequest } from "./huawei-sign.js";
import { huaweiErrorReply } from "./huawei-error.js";
import {
  type AdapterContext, type AdapterFactory, type FailureKind, type JobBilling, type JobRef, type JobStatus, type LogPage, type ProviderAdapter, ProviderError,
  kindOfHttpStatus, kindOfNetworkError, tlsFailure,
} from "./provider.js";

type Env = Readonly<Record<string, string | undefined>>;
type Target = NonNullable<NonNullable<Recipe["targets"]>["modelarts"]>;

export const DEFAULT_TIMEOUT_MS = 30_000;
const SEARCH_PAGE = 50;
const MAX_SEARCH_PAGES = 20;
const DEFAULT_TASK = "worker-0";
/** Throttling answers (besides HTTP 429): API Gateway flow control and ModelArts' own. */
const THROTTLE_CODES = new Set(["APIGW.0308", "ModelArts.2799"]);
/** Log preview answers that mean "no log yet" rather than failure. */
const LOG_NOT_READY = new Set(["ModelArts.2776", "ModelArts.2818", "ModelArts.2819", "ModelArts.2822"]);

// ------------------------------------------------------------------ configuration

export interface ModelArtsConfig {
  /** Origin only: https://host[:port]. */
  readonly endpoint: string;
  readonly region: string | undefined;
  readonly projectId: string;
  readonly credentials: HuaweiCredentials;
}

const configError = (code: string, message: string, hint?: string) => new RlpipeError(code, message, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });

/** Endpoint, project, region and credentials from the environment, the recipe target and the credentials file. */
export function resolveModelArtsConfig(env: Env, target: Target | undefined, readFile: (path: string) => string | undefined = readIfExists): ModelArtsConfig {
  const account = resolveHuaweiAccount(env, {
    service: "ModelArts", region: target?.region, projectId: target?.projectId, readFile,
    projectIdHint: "set HUAWEICLOUD_SDK_PROJECT_ID or targets.modelarts.projectId (console: My Credentials → API Credentials)",
  });
  const rawEndpoint = env["MODELARTS_ENDPOINT"]?.trim() || target?.endpoint || (account.region === undefined ? undefined : defaultEndpoint(account.region));
  if (rawEndpoint === undefined) {
    throw configError("region_missing", "ModelArts needs a region or an endpoint", "set targets.modelarts.region (e.g. cn-southwest-2) or HUAWEICLOUD_REGION, or MODELARTS_ENDPOINT");
  }
  return { endpoint: checkEndpoint(rawEndpoint), region: account.region, projectId: account.projectId, credentials: account.credentials };
}

/** The SDK's region table: every region is modelarts.<region>.myhuaweicloud.com except ap-southeast-1 (.cn). */
export function defaultEndpoint(region: string): string {
  if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region)) throw configError("region_invalid", `${JSON.stringify(region)} is not a Huawei Cloud region name (e.g. cn-southwest-2)`);
  return `https://modelarts.${region}.${region === "ap-southeast-1" ? "myhuaweicloud.cn" : "myhuaweicloud.com"}`;
}

function checkEndpoint(raw: string): string {
  const r = parseEndpoint(raw);
  if ("problem" in r) throw configError(r.problem.code, `ModelArts endpoint: ${r.problem.message}`, r.problem.hint);
  if (r.url.pathname !== "/" || r.url.search !== "" || r.url.username !== "" || r.url.password !== "") {
    throw configError("bad_endpoint", `ModelArts endpoint must be scheme://host[:port] only, got ${raw}`);
  }
  return r.url.origin;
}


// ------------------------------------------------------------------ responses (validated: they come from outside)

const TaskStatus = z.looseObject({ task: z.string().optional(), exit_code: z.number().optional(), message: z.string().optional() });
const JobResponse = z.looseObject({
  metadata: z.looseObject({ id: z.string().min(1), name: z.string().min(1), create_time: z.number().optional() }),
  status: z.looseObject({
    phase: z.string().optional(),
    secondary_phase: z.string().optional(),
    duration: z.number().optional(),
    start_time: z.number().optional(),
    tasks: z.array(z.string()).optional(),
    task_statuses: z.array(TaskStatus).optional(),
  }).optional(),
});
export type ModelArtsJob = z.infer<typeof JobResponse>;
const SearchResponse = z.looseObject({ count: z.number().optional(), total: z.number().optional(), items: z.array(JobResponse).optional() });
const LogPreview = z.looseObject({ content: z.string().optional(), current_size: z.number().optional(), full_size: z.number().optional() });
const Flavor = z.looseObject({
  flavor_id: z.string().min(1),
  flavor_name: z.string().optional(),
  flavor_type: z.string().optional(),
  max_num: z.number().optional(),
  /** The code the flavor is billed under and how many of it one node is (BSS prices the code). */
  billing: z.looseObject({ code: z.string().min(1), unit_num: z.number().positive() }).optional(),
});
const FlavorsResponse = z.looseObject({ flavors: z.array(Flavor) });
export type ModelArtsFlavor = z.infer<typeof Flavor>;
const AnyObject = z.looseObject({});

// ------------------------------------------------------------------ client

export interface ClientOptions {
  /** Per request, including reading the reply (default 30 s). */
  readonly timeoutMs?: number;
  /** Signing clock (tests). */
  readonly now?: () => Date;
}

interface CallOptions {
  readonly body?: unknown;
  readonly query?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal | undefined;
}

export class ModelArtsClient {
  private readonly timeoutMs: number;
  private readonly now: () => Date;
  constructor(readonly config: ModelArtsConfig, opts: ClientOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.now = opts.now ?? (() => new Date());
  }

  async createJob(body: ModelArtsJobBody, signal?: AbortSignal): Promise<ModelArtsJob> {
    return withBody("create training job", await this.call("POST", "create training job", ["training-jobs"], JobResponse, { body, signal }));
  }

  async showJob(id: string, signal?: AbortSignal): Promise<ModelArtsJob> {
    return withBody(`show training job ${id}`, await this.call("GET", `show training job ${id}`, ["training-jobs", id], JobResponse, { signal }));
  }

  /** Jobs named exactly `name` ("like" matches substrings, so every page is read and filtered). */
  async findByName(name: string, signal?: AbortSignal): Promise<ModelArtsJob[]> {
    const out: ModelArtsJob[] = [];
    for (let page = 0; page < MAX_SEARCH_PAGES; page++) {
      const body = { offset: page, limit: SEARCH_PAGE, filters: [{ key: "name", operator: "like", value: [name] }] };
      const r = withBody("search training jobs", await this.call("POST", `search training jobs named ${name}`, ["training-job-searches"], SearchResponse, { body, signal }));
      const items = r.items ?? [];
      out.push(...items.filter((j) => j.metadata.name === name));
      // Without a count, a full page means there may be more: never conclude "absent" from what was not said.
      const total = r.count ?? r.total;
      if (items.length < SEARCH_PAGE || (total !== undefined && (page + 1) * SEARCH_PAGE >= total)) break;
    }
    return out;
  }

  /** Training flavors of the public pools (GET /v2/{project_id}/training-job-flavors), optionally of one type. */
  async listFlavors(flavorType?: "CPU" | "GPU" | "Ascend", signal?: AbortSignal): Promise<ModelArtsFlavor[]> {
    const r = await this.call("GET", "list training flavors", ["training-job-flavors"], FlavorsResponse, { ...(flavorType === undefined ? {} : { query: { flavor_type: flavorType } }), signal });
    return withBody("list training flavors", r).flavors;
  }

  /** The newest ≤5 MB of a task's log, or undefined while ModelArts has none to show. */
  async logPreview(id: string, task: string, signal?: AbortSignal): Promise<{ content: string; fullSize?: number } | undefined> {
    try {
      const r = await this.call("GET", `log preview of ${id}/${task}`, ["training-jobs", id, "tasks", task, "logs", "preview"], LogPreview, { signal });
      if (r.status === 204 || r.data === undefined) return undefined;
      return { content: r.data.content ?? "", ...(r.data.full_size === undefined ? {} : { fullSize: r.data.full_size }) };
    } catch (e) {
      if (e instanceof ProviderError && e.providerCode !== undefined && LOG_NOT_READY.has(e.providerCode)) return undefined;
      throw e;
    }
  }

  async terminate(id: string, signal?: AbortSignal): Promise<void> {
    await this.call("POST", `terminate training job ${id}`, ["training-jobs", id, "actions"], AnyObject, { body: { action_type: "terminate" }, signal });
  }

  /** One signed request; failures become ProviderErrors whose kind says whether the call may be repeated. */
  private async call<S extends z.ZodType>(method: string, op: string, segments: readonly string[], schema: S, opts: CallOptions): Promise<{ status: number; data: z.infer<S> | undefined }> {
    const path = `/v2/${[this.config.projectId, ...segments].map(encodePathSegment).join("/")}`;
    const bodyText = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const signed = signRequest({
      method, endpoint: this.config.endpoint, path, ...(opts.query === undefined ? {} : { query: opts.query }),
      headers: { "Content-Type": "application/json", "X-Project-Id": this.config.projectId },
      ...(bodyText === undefined ? {} : { body: bodyText }), date: this.now(),
    }, this.config.credentials);
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = opts.signal === undefined ? timeout : AbortSignal.any([opts.signal, timeout]);
    const what = `ModelArts ${op}`;
    let status: number;
    let text: string;
    try {
      const res = await fetch(signed.url, { method, headers: signed.headers, ...(bodyText === undefined ? {} : { body: bodyText }), signal, redirect: "manual" });
      status = res.status;
      text = await res.text();
    } catch (e) {
      if (opts.signal?.aborted === true) throw opts.signal.reason;
      if (timeout.aborted) {
        throw new ProviderError("modelarts", "ambiguous", "modelarts_timeout", `${what}: no complete reply within ${this.timeoutMs} ms (the request may have been acted on)`);
      }
      const tls = tlsFailure(e);
      if (tls !== undefined) throw new ProviderError("modelarts", "fatal", "modelarts_tls_failed", `${what} at ${this.config.endpoint}: ${tls}`, { hint: "check MODELARTS_ENDPOINT / targets.modelarts.endpoint" });
      const kind = kindOfNetworkError(e);
      throw new ProviderError("modelarts", kind, "modelarts_network", `${what}: network error (${networkCode(e)})${kind === "ambiguous" ? " after the request may have been sent" : ""}`);
    }
    if (status >= 200 && status < 300) {
      if (status === 204 || text.trim() === "") return { status, data: undefined };
      let json: unknown;
      try { json = JSON.parse(text); } catch { throw new ProviderError("modelarts", "ambiguous", "modelarts_bad_response", `${what}: HTTP ${status} with a body that is not JSON`); }
      const parsed = schema.safeParse(json);
      if (!parsed.success) {
        const first = parsed.error.issues[0];
        throw new ProviderError("modelarts", "fatal", "modelarts_bad_response", `${what}: unexpected reply (${first === undefined ? "invalid" : `${first.path.join(".") || "(root)"}: ${first.message}`})`);
      }
      return { status, data: parsed.data };
    }
    // A gateway message may quote the access key it refused; keys never reach a message.
    const { ak, sk } = this.config.credentials;
    throw httpError(what, status, text.split(ak).join("***").split(sk).join("***"));
  }
}

/** A reply that must have a body: an empty one may hide an action taken (ambiguous). */
function withBody<T>(op: string, r: { status: number; data: T | undefined }): T {
  if (r.data === undefined) throw new ProviderError("modelarts", "ambiguous", "modelarts_bad_response", `ModelArts ${op}: HTTP ${r.status} with an empty reply`);
  return r.data;
}

function networkCode(e: unknown): string {
  const err = e as { code?: string; name?: string; cause?: { code?: string; name?: string } };
  const cause = err.cause as { code?: string; name?: string; message?: string } | undefined;
  return cause?.code ?? err.code ?? cause?.message ?? cause?.name ?? err.name ?? "unknown";
}

/** Map an error reply: {error_code, error_msg} from ModelArts or API Gateway. Never echoes request headers. */
export function httpError(what: string, status: number, text: string): ProviderError {
  const { code, detail } = huaweiErrorReply(status, text, 500);
  const opts = { httpStatus: status, ...(code === undefined ? {} : { providerCode: code }) };
  let kind: FailureKind;
  let ourCode: string;
  let hint: string | undefined;
  if (code === "ModelArts.2751") { kind = "exists"; ourCode = "modelarts_exists"; }
  else if (code === "ModelArts.2775") { kind = "not_found"; ourCode = "modelarts_not_found"; }
  else if (status === 429 || (code !== undefined && THROTTLE_CODES.has(code))) { kind = "retryable"; ourCode = "modelarts_throttled"; }
  else if (status >= 500) { kind = "ambiguous"; ourCode = "modelarts_server_error"; }
  else if (status === 401 || status === 403 || code?.startsWith("APIGW.") === true) {
    kind = "fatal"; ourCode = "modelarts_auth_failed";
    hint = "check HUAWEICLOUD_SDK_AK/SK (and the security token of temporary credentials), the project id, and that this machine's clock is right (requests more than 15 minutes off are refused)";
  } else { kind = kindOfHttpStatus(status); ourCode = kind === "not_found" ? "modelarts_not_found" : "modelarts_request_rejected"; }
  return new ProviderError("modelarts", kind, ourCode, `${what} failed: ${detail}`, { ...opts, ...(hint === undefined ? {} : { hint }) });
}

// ------------------------------------------------------------------ adapter

/** Every call is one attempt, its failure classified; the caller (the CLI, deploy()) is the one retry layer. */
export type ModelArtsAdapterOptions = ClientOptions;

// ------------------------------------------------------------------ the body sent

/** The launch bundle's entry point: what the command runs, and the boot_file in code_dir. */
interface ModelArtsRequest { readonly body: ModelArtsJobBody; readonly codeDir: string }

function requestOf(plan: Plan): ModelArtsRequest {
  const req = plan.request;
  if (plan.provider !== "modelarts" || req === undefined || req.provider !== "modelarts" || req.bundle === undefined) {
    throw new RlpipeError("plan_provider_mismatch", `plan ${plan.jobName} was made for provider ${plan.provider}, not modelarts`, { exitCode: 2, hint: "plan the recipe with --provider modelarts" });
  }
  const body = req.body as ModelArtsJobBody;
  if (body.metadata?.name !== plan.jobName) throw new RlpipeError("plan_inconsistent", `the request's job name ${String(body.metadata?.name)} is not the plan's ${plan.jobName}`, { exitCode: 4 });
  if (!plan.files.some((f) => f.path === MODELARTS_BOOT_FILE)) throw new RlpipeError("plan_inconsistent", `plan ${plan.jobName} has no ${MODELARTS_BOOT_FILE} to name as the job's boot_file`, { exitCode: 4 });
  return { body, codeDir: req.bundle.to };
}

/** Epoch milliseconds of an API time (documented in ms; a value in seconds is converted). */
function epochMs(t: number | undefined): number | undefined {
  if (t === undefined || !Number.isFinite(t) || t <= 0) return undefined;
  return t < 1e11 ? t * 1000 : t;
}

function isoTime(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

export class ModelArtsAdapter implements ProviderAdapter {
  readonly provider = "modelarts" as const;
  private readonly tasks = new Map<string, string>();
  private readonly clients = new Map<string, ModelArtsClient>();

  constructor(private readonly ctx: AdapterContext, readonly client: ModelArtsClient, private readonly opts: ModelArtsAdapterOptions = {}) {}

  async prepare(plan: Plan, signal?: AbortSignal): Promise<void> {
    const { codeDir } = requestOf(plan);
    if (this.ctx.bundleSink === undefined) {
      throw new RlpipeError("bundle_sink_missing", `nothing to upload the launch bundle to ${codeDir} with`, { exitCode: 4, hint: "the CLI provides OBS access (OBS_ENDPOINT/OBS_REGION and credentials)" });
    }
    const sink = this.ctx.bundleSink(codeDir);
    let uploaded = 0;
    for (const f of plan.files) {
      const bytes = Buffer.from(f.content, "utf8");
      // The directory is named by the bundle digest: an object of the right size there is this file.
      const head = await sink.head(f.path, signal);
      if (head?.size === bytes.length) continue;
      await sink.putBytes(f.path, bytes, { contentType: f.path.endsWith(".sh") ? "text/x-shellscript" : "application/octet-stream", ...(signal === undefined ? {} : { signal }) });
      uploaded++;
    }
    this.ctx.log?.(`modelarts: launch bundle at ${codeDir} (${uploaded} of ${plan.files.length} files uploaded, the rest already there)`);
  }

  async findExisting(plan: Plan, signal?: AbortSignal): Promise<JobRef | undefined> {
    requestOf(plan);
    const jobs = await this.client.findByName(plan.jobName, signal);
    if (jobs.length === 0) return undefined;
    const sorted = [...jobs].sort((a, b) => (a.metadata.create_time ?? 0) - (b.metadata.create_time ?? 0) || (a.metadata.id < b.metadata.id ? -1 : 1));
    if (sorted.length > 1) this.ctx.log?.(`modelarts: ${sorted.length} jobs are named ${plan.jobName}; using the first created (${sorted[0]!.metadata.id})`);
    return this.refOf(sorted[0]!);
  }

  async submit(plan: Plan, signal?: AbortSignal): Promise<JobRef> {
    const { body } = requestOf(plan);
    const job = await this.client.createJob(body, signal);
    if (job.metadata.name !== plan.jobName) {
      throw new ProviderError("modelarts", "ambiguous", "modelarts_bad_response", `ModelArts created a job named ${job.metadata.name}, expected ${plan.jobName}`);
    }
    return this.refOf(job);
  }

  async status(ref: JobRef, signal?: AbortSignal): Promise<JobStatus> {
    const job = await this.clientFor(ref).showJob(ref.id, signal);
    this.rememberTask(ref, job);
    return statusOf(job);
  }

  /** status.duration: the job's running time (ms), which ModelArts bills per second for each node. */
  async billing(ref: JobRef, signal?: AbortSignal): Promise<JobBilling | undefined> {
    const job = await this.clientFor(ref).showJob(ref.id, signal);
    return billingOf(job);
  }

  /** Cursor: bytes of the task's log already returned. The preview holds the newest 5 MB; older bytes a slow reader missed are reported as skipped. */
  async logs(ref: JobRef, cursor: string | undefined, signal?: AbortSignal): Promise<LogPage> {
    const from = parseCursor(cursor);
    const client = this.clientFor(ref);
    const task = this.tasks.get(ref.id) ?? await this.taskOf(ref, signal);
    const page = await client.logPreview(ref.id, task, signal);
    if (page === undefined) return { text: "", cursor: String(from) };
    return tailPage(page.content, page.fullSize, from);
  }

  async stop(ref: JobRef, signal?: AbortSignal): Promise<void> {
    const client = this.clientFor(ref);
    try {
      await client.terminate(ref.id, signal);
    } catch (e) {
      if (!(e instanceof ProviderError)) throw e;
      if (e.providerCode === "ModelArts.2775") return; // TrainingJobNotFound: gone, nothing left to stop
      if (e.kind === "fatal") {
        // e.g. ModelArts.2796 NotAllowedToTerminate: fine when the job is already stopping or finished.
        const job = await client.showJob(ref.id, signal).catch(() => undefined);
        const phase = job === undefined ? undefined : statusOf(job).phase;
        if (phase !== undefined && (phase === "STOPPING" || isTerminal(phase))) return;
      }
      throw e;
    }
  }

  private refOf(job: ModelArtsJob): JobRef {
    return {
      provider: "modelarts", name: job.metadata.name, id: job.metadata.id,
      ...(this.client.config.region === undefined ? {} : { region: this.client.config.region }),
      endpoint: this.client.config.endpoint,
      extra: { projectId: this.client.config.projectId },
    };
  }

  /**
   * A ref from a run record is answered where it was created (endpoint and project), with today's credentials —
   * unless MODELARTS_ENDPOINT is set now: the current override wins over the recorded endpoint (a proxy, a moved
   * private endpoint).
   */
  private clientFor(ref: JobRef): ModelArtsClient {
    const override = (this.ctx.env["MODELARTS_ENDPOINT"]?.trim() ?? "") !== "";
    const endpoint = ref.endpoint === undefined || override ? this.client.config.endpoint : checkEndpoint(ref.endpoint);
    const projectId = ref.extra?.["projectId"] ?? this.client.config.projectId;
    if (endpoint === this.client.config.endpoint && projectId === this.client.config.projectId) return this.client;
    const key = `${endpoint} ${projectId}`;
    let c = this.clients.get(key);
    if (c === undefined) {
      c = new ModelArtsClient({ ...this.client.config, endpoint, projectId }, this.opts);
      this.clients.set(key, c);
    }
    return c;
  }

  private async taskOf(ref: JobRef, signal: AbortSignal | undefined): Promise<string> {
    const job = await this.clientFor(ref).showJob(ref.id, signal);
    return this.rememberTask(ref, job) ?? DEFAULT_TASK;
  }

  private rememberTask(ref: JobRef, job: ModelArtsJob): string | undefined {
    // Rank 0's task (worker-0) has the training log; a job has no tasks until it is scheduled.
    const tasks = job.status?.tasks ?? [];
    const task = tasks.includes(DEFAULT_TASK) ? DEFAULT_TASK : [...tasks].sort()[0];
    if (task !== undefined) this.tasks.set(ref.id, task);
    return task;
  }
}

export function statusOf(job: ModelArtsJob): JobStatus {
  const st = job.status;
  const raw = st?.phase ?? "";
  const phase = normalizePhase("modelarts", raw);
  const failing = (st?.task_statuses ?? []).filter((t) => (t.exit_code ?? 0) !== 0 || (t.message ?? "") !== "");
  const message = failing.map((t) => `${t.task ?? "task"}${t.exit_code === undefined ? "" : ` exit ${t.exit_code}`}${t.message === undefined || t.message === "" ? "" : `: ${t.message}`}`).join("; ");
  const start = epochMs(st?.start_time);
  const startedAt = isoTime(start);
  const endedAt = isTerminal(phase) && start !== undefined && st?.duration !== undefined ? isoTime(start + st.duration) : undefined;
  const exit = (st?.task_statuses ?? []).find((t) => t.exit_code !== undefined && t.exit_code !== 0)?.exit_code ?? (isTerminal(phase) ? st?.task_statuses?.find((t) => t.exit_code !== undefined)?.exit_code : undefined);
  return {
    phase, rawPhase: raw === "" ? "(none)" : raw,
    ...(message === "" ? (st?.secondary_phase !== undefined && st.secondary_phase !== raw ? { message: st.secondary_phase } : {}) : { message }),
    ...(startedAt === undefined ? {} : { startedAt }),
    ...(endedAt === undefined ? {} : { endedAt }),
    ...(exit === undefined ? {} : { exitCode: exit }),
  };
}

/** Billable time of a job from its status: duration (ms) from start_time; undefined before it started. */
export function billingOf(job: ModelArtsJob): JobBilling | undefined {
  const st = job.status;
  const start = epochMs(st?.start_time);
  if (start === undefined || st?.duration === undefined) return undefined;
  const s = statusOf(job);
  const running = !isTerminal(s.phase);
  return {
    seconds: Math.round(st.duration) / 1000, running, startedAt: isoTime(start)!,
    ...(running ? {} : { endedAt: isoTime(start + st.duration)! }),
    source: `ModelArts job status.duration${running ? " (running: so far)" : ""}`,
  };
}

function parseCursor(cursor: string | undefined): number {
  if (cursor === undefined || cursor === "") return 0;
  if (!/^\d{1,15}$/.test(cursor)) throw new RlpipeError("bad_log_cursor", `not a ModelArts log cursor: ${JSON.stringify(cursor)}`, { exitCode: 2 });
  return Number(cursor);
}

/**
 * The part of a preview after `from` bytes. The preview is the newest `content` bytes of a log of `fullSize`
 * bytes; a log that shrank was restarted (a fault-tolerance retry), so it is shown from its start.
 */
export function tailPage(content: string, fullSize: number | undefined, from: number): LogPage {
  const bytes = Buffer.from(content, "utf8");
  const full = fullSize === undefined || fullSize < bytes.length ? bytes.length : fullSize;
  const windowStart = full - bytes.length;
  if (from > full) return { text: bytes.toString("utf8"), cursor: String(full) };
  if (from < windowStart) {
    const note = `[rlpipe: ${windowStart - from} bytes of this log are not shown: the ModelArts preview holds only the newest ${bytes.length} bytes; the whole log is under the job's log_export_path]\n`;
    return { text: note + bytes.toString("utf8"), cursor: String(full) };
  }
  return { text: bytes.subarray(from - windowStart).toString("utf8"), cursor: String(full) };
}

export interface CreateOptions extends ModelArtsAdapterOptions {
  /** Reads the credentials file (tests). */
  readonly readFile?: (path: string) => string | undefined;
}

export function createModelArtsAdapter(ctx: AdapterContext, opts: CreateOptions = {}): ModelArtsAdapter {
  const config = resolveModelArtsConfig(ctx.env, ctx.recipe.targets?.modelarts, opts.readFile);
  const timeout = ctx.env["MODELARTS_TIMEOUT_MS"];
  const timeoutMs = opts.timeoutMs ?? (timeout !== undefined && /^\d+$/.test(timeout) ? Number(timeout) : DEFAULT_TIMEOUT_MS);
  const clientOpts: ModelArtsAdapterOptions = { ...opts, timeoutMs };
  return new ModelArtsAdapter(ctx, new ModelArtsClient(config, clientOpts), clientOpts);
}

export const createAdapter: AdapterFactory = (ctx) => createModelArtsAdapter(ctx);
