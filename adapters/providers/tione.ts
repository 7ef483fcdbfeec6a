// Tencent Cloud TI-ONE (tione 2021-11-11) through tencentcloud-sdk-nodejs-common: the launch bundle goes to COS
// (content-addressed, through the context's bundle sink), CreateTrainingTask creates the task tagged with the run
// name, DescribeTrainingTasks finds it again, DescribeTrainingTask gives its status, DescribeLogs its logs (a
// Context cursor), StopTrainingTask stops it. Every action goes through the SDK's CommonClient (the same TC3
// signing and transport as the per-product client, which adds only typed wrappers): the full SDK is ~58 MB
// installed, the common package ~0.3 MB. The client module is imported only when a call is made.
// A non-default workspace (TiProjectId) comes from targets.tione.tiProjectId, else TENCENTCLOUD_TIONE_PROJECT_ID, and
// is recorded in the JobRef; secrets go as Envs with IsPrivate (the SDK's EnvVar: "true 表示该环境变量的 Value 为敏感值").
import { readFile } from "node:fs/promises";
import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import type { LookupFunction } from "node:net";
import { homedir } from "node:os";
import { join } from "node:path";
import { formatPath } from "../../core/errors.js";
import type { Plan } from "../../core/plan.js";
import { normalizePhase } from "../../core/providers/phases.js";
import {
  type CreateTrainingTaskBody, RUN_TAG_KEY, TASK_NAME_RULE, TIONE_CREATE_API, TIONE_VERSION, type TioneEnv, sortEnvs, taskNameProblem, tioneDeployGaps,
} from "../../core/providers/tione-request.js";
import type { Recipe } from "../../core/recipe/schema.js";
import { parseEndpoint } from "../../core/util/endpoint.js";
import {
  type AdapterContext, type AdapterFactory, type FailureKind, type JobBilling, type JobRef, type JobStatus, type LogPage, type ProviderAdapter, ProviderError,
  kindOfHttpStatus, kindOfNetworkError, tlsFailure,
} from "./provider.js";

type Env = Readonly<Record<string, string | undefined>>;

export const DEFAULT_TIONE_ENDPOINT = "https://tione.tencentcloudapi.com";
/** The host requests are signed for: the TC3 service name is its first label ("tione"). */
export const TIONE_HOST = "tione.tencentcloudapi.com";
const TERMINAL_RAW = new Set(["SUCCEED", "FAILED", "STOPPED", "SUBMIT_FAILED"]);

/** The TI-ONE workspace to work in when it is not the default one (targets.tione.tiProjectId wins over it). */
export const TIONE_PROJECT_ENV = "TENCENTCLOUD_TIONE_PROJECT_ID";
/**
 * Actions whose request model has TiProjectId (tencentcloud-sdk-python-tione 3.1.191): "使用非默认空间必须填写工作空间ID，
 * 使用默认空间无需填写工作空间ID" — a task in another workspace is invisible to calls that do not name it.
 */
const PROJECT_ACTIONS = new Set(["CreateTrainingTask", "DescribeTrainingTask", "DescribeTrainingTasks", "StopTrainingTask", "DeleteTrainingTask", "DescribeLogs", "DescribeBillingSpecs", "DescribeBillingSpecsPrice"]);

// The name rule lives in core (the planner checks it too); re-exported for callers of the adapter.
export { TASK_NAME_MAX_CHARS, TASK_NAME_RULE, taskNameProblem } from "../../core/providers/tione-request.js";

// ------------------------------------------------------------------------------------------ credentials

export interface TioneCredentials {
  readonly secretId: string;
  readonly secretKey: string;
  readonly token?: string;
}

export const credentialsHint = "set TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY (and TENCENTCLOUD_SESSION_TOKEN for temporary keys), or write ~/.tencentcloud/credentials with a [default] section holding secret_id and secret_key (TENCENTCLOUD_CREDENTIALS_FILE and TENCENTCLOUD_PROFILE choose another file or section)";

/** Minimal INI: [section] headers and key = value lines; '#' and ';' start comments. */
export function parseIni(text: string): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  let section = "";
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const head = /^\[([^\]]+)\]$/.exec(line);
    if (head !== null) { section = head[1]!.trim(); continue; }
    const eq = line.indexOf("=");
    if (eq < 0) continue;
    (out[section] ??= {})[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

/** From the environment, else the credentials file; never from the recipe. `service` names the API in messages. */
export async function resolveTioneCredentials(env: Env, service = "TI-ONE"): Promise<TioneCredentials> {
  const id = env["TENCENTCLOUD_SECRET_ID"] || undefined;
  const key = env["TENCENTCLOUD_SECRET_KEY"] || undefined;
  const token = env["TENCENTCLOUD_SESSION_TOKEN"] || undefined;
  if (id !== undefined && key !== undefined) return { secretId: id, secretKey: key, ...(token === undefined ? {} : { token }) };
  if (id !== undefined || key !== undefined) {
    throw new ProviderError("tione", "fatal", "tione_credentials_incomplete", `${service} credentials need both TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY; only ${id !== undefined ? "the id" : "the key"} is set`, { exitCode: 2, hint: credentialsHint });
  }
  const file = env["TENCENTCLOUD_CREDENTIALS_FILE"] || join(env["HOME"] || homedir(), ".tencentcloud", "credentials");
  const profile = env["TENCENTCLOUD_PROFILE"] || "default";
  let text: string | undefined;
  try { text = await readFile(file, "utf8"); } catch { text = undefined; }
  const section = text === undefined ? undefined : parseIni(text)[profile];
  if (section?.["secret_id"] && section["secret_key"]) {
    return { secretId: section["secret_id"], secretKey: section["secret_key"], ...(section["token"] ? { token: section["token"] } : {}) };
  }
  const where = text === undefined ? `no credentials file at ${file}` : `${file} has no secret_id and secret_key in [${profile}]`;
  throw new ProviderError("tione", "fatal", "tione_credentials_missing", `no ${service} credentials: TENCENTCLOUD_SECRET_ID/TENCENTCLOUD_SECRET_KEY are not set and ${where}`, { exitCode: 2, hint: credentialsHint });
}

// ------------------------------------------------------------------------------------------ endpoint and transport

export interface TioneEndpoint {
  /** As configured (recorded in the run's JobRef). */
  readonly display: string;
  /** host[:port] the SDK signs for and sends in Host (the signature uses the host without the port). */
  readonly host: string;
  readonly protocol: "https://" | "http://";
  /** Loopback address a plain-http endpoint really connects to. */
  readonly loopback?: { readonly address: string; readonly family: 4 | 6 };
}

/** TIONE_ENDPOINT, else targets.tione.endpoint, else the public endpoint. Plain http only for loopback. */
export function resolveTioneEndpoint(env: Env, configured: string | undefined): TioneEndpoint {
  const raw = env["TIONE_ENDPOINT"] || configured || DEFAULT_TIONE_ENDPOINT;
  const source = env["TIONE_ENDPOINT"] ? "TIONE_ENDPOINT" : configured !== undefined ? "targets.tione.endpoint" : "default";
  const r = parseEndpoint(raw);
  if ("problem" in r) throw new ProviderError("tione", "fatal", r.problem.code, `${source}: ${r.problem.message}`, { exitCode: 2, ...(r.problem.hint === undefined ? {} : { hint: r.problem.hint }) });
  const url = r.url;
  if (url.protocol === "https:") return { display: raw, host: url.host, protocol: "https://" };
  // Loopback test servers: the request names and signs the real host (option B of the reference), and the
  // agent's DNS lookup sends it to the loopback address. The SDK derives the TC3 service from the host.
  const v6 = url.hostname.startsWith("[") || url.hostname.includes(":");
  const address = url.hostname === "localhost" ? "127.0.0.1" : url.hostname.replace(/^\[|\]$/g, "");
  return { display: raw, host: `${TIONE_HOST}:${url.port || "80"}`, protocol: "http://", loopback: { address, family: v6 ? 6 : 4 } };
}

/** The agent for an endpoint: keep-alive https, or plain http sent to the loopback address a test server listens on. */
export function agentFor(ep: TioneEndpoint): HttpAgent {
  if (ep.loopback === undefined) return new HttpsAgent({ keepAlive: true, maxSockets: 8 });
  const { address, family } = ep.loopback;
  const lookup = ((_host: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
    if (opts?.all === true) cb(null, [{ address, family }]);
    else cb(null, address, family);
  }) as unknown as LookupFunction;
  return new HttpAgent({ keepAlive: true, maxSockets: 8, lookup });
}

// ------------------------------------------------------------------------------------------ errors

interface SdkError { code?: string; message?: string; requestId?: string; httpCode?: number }

/**
 * A failed call as a ProviderError. TI-ONE answers errors with HTTP 200 and Response.Error.Code; the SDK turns a
 * network failure into an exception without a code, whose message names the cause (node-fetch's text).
 */
export function tioneFailure(action: string, e: unknown, secrets: readonly string[] = []): ProviderError {
  const err = (e ?? {}) as SdkError;
  const clean = (s: string) => secrets.filter((x) => x.length >= 4).reduce((acc, x) => acc.split(x).join("***"), s);
  const message = clean(String(err.message ?? e));
  const code = typeof err.code === "string" && err.code !== "" ? err.code : undefined;
  const rid = err.requestId ? ` (RequestId ${err.requestId})` : "";
  if (code !== undefined) {
    const [kind, ours] = kindOfTioneCode(code);
    const hint = code.startsWith("AuthFailure") ? credentialsHint
      : kind === "exists" ? "a task of this name exists; rlpipe takes it only when it is this run's (tag rlpipe-run): if it is another run's, rename the recipe (metadata.name) or deploy with --new"
      : undefined;
    return new ProviderError("tione", kind, ours, `TI-ONE ${action} failed: ${code}: ${message}${rid}`, { providerCode: code, ...(hint === undefined ? {} : { hint }) });
  }
  if (typeof err.httpCode === "number") {
    return new ProviderError("tione", kindOfHttpStatus(err.httpCode), "tione_http_error", `TI-ONE ${action} failed: HTTP ${err.httpCode} ${message}`, { httpStatus: err.httpCode });
  }
  const tls = tlsFailure(e);
  if (tls !== undefined) return new ProviderError("tione", "fatal", "tione_tls_failed", `TI-ONE ${action} failed: ${tls}`, { hint: "check TIONE_ENDPOINT / targets.tione.endpoint" });
  const refused = kindOfNetworkError(e) === "retryable" || /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH/.test(message);
  const kind: FailureKind = refused ? "retryable" : "ambiguous";
  const ours = refused ? "tione_unreachable" : /timeout/i.test(message) ? "tione_timeout" : "tione_connection_lost";
  return new ProviderError("tione", kind, ours, `TI-ONE ${action} failed: ${message}`);
}

/**
 * The name is taken (tione errorcodes.py: FailedOperation.DuplicateName "名称重复", FailedOperation.DuplicateNameTaskIsCreating
 * "训练任务名称已存在", InvalidParameterValue.DuplicateName "实例名称冲突"): the task may be this run's whose create reply was
 * lost, so deploy() looks it up instead of failing.
 */
const NAME_TAKEN = new Set(["FailedOperation.DuplicateName", "FailedOperation.DuplicateNameTaskIsCreating", "InvalidParameterValue.DuplicateName"]);

/** Tencent Cloud's common error codes and TI-ONE's FailedOperation.* family. */
export function kindOfTioneCode(code: string): [FailureKind, string] {
  if (NAME_TAKEN.has(code)) return ["exists", "tione_name_taken"];
  if (code.startsWith("RequestLimitExceeded")) return ["retryable", "tione_throttled"];
  if (code === "InternalError" || code.startsWith("InternalError.")) return ["ambiguous", "tione_internal_error"];
  if (code === "ResourceNotFound" || code.startsWith("ResourceNotFound.")) return ["not_found", "tione_not_found"];
  if (code.startsWith("AuthFailure") || code.startsWith("UnauthorizedOperation")) return ["fatal", "tione_auth_failed"];
  if (code.startsWith("InvalidParameter") || code === "MissingParameter" || code === "UnknownParameter" || code === "InvalidAction") return ["fatal", "tione_invalid_request"];
  if (code.startsWith("LimitExceeded") || code.startsWith("ResourceInsufficient")) return ["fatal", "tione_limit_exceeded"];
  if (code.startsWith("FailedOperation")) return ["fatal", "tione_failed_operation"];
  return ["fatal", "tione_error"];
}

// ------------------------------------------------------------------------------------------ API client

const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

export interface SdkClient {
  request(action: string, req: unknown, options?: { signal?: AbortSignal }): Promise<unknown>;
}
type ClientCtor = new (endpoint: string, version: string, config: unknown) => SdkClient;

/** The SDK's CommonClient, loaded on first use (a literal specifier, so bundlers can follow it). */
export async function loadCommonClient(): Promise<{ CommonClient: ClientCtor }> {
  return (await import("tencentcloud-sdk-nodejs-common/tencentcloud/common/common_client.js")) as { CommonClient: ClientCtor };
}

export interface TioneApiOptions {
  readonly env: Env;
  readonly region: string;
  /** targets.tione.endpoint (TIONE_ENDPOINT wins). */
  readonly endpoint?: string;
  /** Per request (default 30 000 ms). */
  readonly timeoutMs?: number;
  /** TiProjectId for the actions that take it (default: TENCENTCLOUD_TIONE_PROJECT_ID; none: the default workspace). */
  readonly projectId?: string;
}

/** A TI-ONE (v20211111) API client over the SDK's CommonClient, loaded on first use. */
export class TioneApi {
  readonly endpoint: TioneEndpoint;
  readonly region: string;
  readonly projectId: string | undefined;
  private readonly env: Env;
  private readonly timeoutMs: number;
  private agent: HttpAgent | undefined;
  private credentials: Promise<TioneCredentials> | undefined;
  private client: Promise<SdkClient> | undefined;
  private secrets: string[] = [];

  constructor(opts: TioneApiOptions) {
    this.env = opts.env;
    this.region = opts.region;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.endpoint = resolveTioneEndpoint(opts.env, opts.endpoint);
    this.projectId = opts.projectId ?? (opts.env[TIONE_PROJECT_ENV] || undefined);
  }

  /** Values never to show in an error message (the task's secrets, which a refusal could quote back). */
  redact(values: readonly (string | undefined)[]): void {
    for (const v of values) if (v !== undefined && v.length >= 4 && !this.secrets.includes(v)) this.secrets.push(v);
  }

  /** Resolve the credentials now (fail before doing anything else). */
  async credentialsReady(): Promise<void> {
    await this.creds();
  }

  private creds(): Promise<TioneCredentials> {
    this.credentials ??= resolveTioneCredentials(this.env).then((c) => {
      this.redact([c.secretKey, c.secretId, c.token]);
      return c;
    });
    return this.credentials;
  }

  private async config(): Promise<unknown> {
    const c = await this.creds();
    this.agent ??= agentFor(this.endpoint);
    return {
      credential: { secretId: c.secretId, secretKey: c.secretKey, ...(c.token === undefined ? {} : { token: c.token }) },
      region: this.region,
      profile: { httpProfile: { endpoint: this.endpoint.host, protocol: this.endpoint.protocol, reqTimeout: this.timeoutMs / 1000, agent: this.agent } },
    };
  }

  async call<T>(action: string, params: object, signal?: AbortSignal): Promise<T> {
    this.client ??= (async () => {
      const { CommonClient } = await loadCommonClient();
      // The httpProfile endpoint from config() wins over this one; the TC3 service is its first label ("tione").
      return new CommonClient(TIONE_HOST, TIONE_VERSION, await this.config());
    })();
    const scoped = this.projectId !== undefined && PROJECT_ACTIONS.has(action) && !("TiProjectId" in params) ? { ...params, TiProjectId: this.projectId } : params;
    return this.send<T>(await this.client, action, scoped, signal);
  }

  /** Same as call(): kept for callers of actions the per-product client used to lack (DescribeTrainingFrameworks). */
  callCommon<T>(action: string, params: object, signal?: AbortSignal): Promise<T> {
    return this.call<T>(action, params, signal);
  }

  private async send<T>(client: SdkClient, action: string, params: object, signal?: AbortSignal): Promise<T> {
    const cancelled = () => new ProviderError("tione", "fatal", "aborted", `TI-ONE ${action} was cancelled`);
    // Longest first, so a secret that contains another is hidden whole.
    this.secrets.sort((a, b) => b.length - a.length);
    if (signal?.aborted === true) throw cancelled();
    try {
      return (await client.request(action, params, signal === undefined ? {} : { signal })) as T;
    } catch (e) {
      // Only the caller's own signal means "cancelled"; any other broken exchange may have reached TI-ONE.
      if (isAborted(signal)) throw cancelled();
      throw tioneFailure(action, e, this.secrets);
    }
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
  }
}

// ------------------------------------------------------------------------------------------ response shapes

export interface TaskDetail {
  readonly Id?: string;
  readonly Name?: string;
  readonly Status?: string;
  readonly Tags?: readonly { readonly TagKey?: string; readonly TagValue?: string }[] | null;
  readonly CreateTime?: string;
  readonly StartTime?: string | null;
  readonly EndTime?: string | null;
  readonly FailureReason?: string | null;
  readonly Message?: string | null;
  readonly LatestInstanceId?: string | null;
  readonly Region?: string;
  readonly [field: string]: unknown;
}

interface LogEntry { readonly Id?: string; readonly Message?: string; readonly PodName?: string; readonly Timestamp?: string }

// ------------------------------------------------------------------------------------------ log cursor

interface LogCursor {
  /** LatestInstanceId the logs belong to. */
  readonly i?: string;
  /** Next query window starts here (RFC3339): the newest timestamp emitted so far (inclusive). */
  readonly s?: string;
  /** Ids already emitted at timestamp s (dropped when the next window returns them again). */
  readonly ids?: readonly string[];
  /** A page cursor (Context) of the window that started at w. */
  readonly c?: string;
  readonly w?: string;
}

function encodeCursor(c: LogCursor): string {
  return Buffer.from(JSON.stringify(c), "utf8").toString("base64url");
}

function decodeCursor(s: string | undefined): LogCursor {
  if (s === undefined || s === "") return {};
  try {
    const v = JSON.parse(Buffer.from(s, "base64url").toString("utf8")) as unknown;
    if (v !== null && typeof v === "object") return v as LogCursor;
  } catch { /* fall through */ }
  throw new ProviderError("tione", "fatal", "tione_bad_cursor", "not a TI-ONE log cursor", { exitCode: 2 });
}

/** RFC3339 without fractions for TI-ONE's time fields (CreateTime may come without a zone). */
function rfc3339(t: string | null | undefined): string | undefined {
  if (t === undefined || t === null || t === "") return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** What a task's tags say about the run: ours, another run's, or nothing (absent, null, or no run tag shown). */
function runTagOf(tags: TaskDetail["Tags"] | undefined, name: string): "ours" | "other" | "unseen" {
  if (!Array.isArray(tags)) return "unseen";
  const run = tags.filter((g) => g?.TagKey === RUN_TAG_KEY);
  if (run.some((g) => g.TagValue === name)) return "ours";
  return run.length > 0 ? "other" : "unseen";
}

// ------------------------------------------------------------------------------------------ the adapter

/** Every call is one attempt, its failure classified; the caller (the CLI, deploy()) is the one retry layer. */
export interface TioneAdapterOptions {
  readonly timeoutMs?: number;
  /** DescribeLogs page size (≤ 1000; default 1000) and pages per logs() call (default 10). */
  readonly logPageLimit?: number;
  readonly logPagesPerCall?: number;
}

export class TioneAdapter implements ProviderAdapter {
  readonly provider = "tione" as const;
  private readonly apis = new Map<string, TioneApi>();

  constructor(private readonly ctx: AdapterContext, private readonly opts: TioneAdapterOptions = {}) {}

  private target(): NonNullable<NonNullable<Recipe["targets"]>["tione"]> | undefined {
    return this.ctx.recipe.targets?.tione;
  }

  private region(ref?: JobRef): string {
    const r = ref?.region ?? this.target()?.region ?? (this.ctx.env["TENCENTCLOUD_REGION"] || undefined);
    if (r === undefined) throw new ProviderError("tione", "fatal", "tione_region_missing", "no TI-ONE region", { exitCode: 2, hint: "set targets.tione.region (e.g. ap-shanghai) or TENCENTCLOUD_REGION" });
    return r;
  }

  /**
   * One client per endpoint and region (a JobRef goes back to where its task was created, unless TIONE_ENDPOINT is
   * set now: the current override wins over the recorded endpoint).
   */
  api(ref?: JobRef): TioneApi {
    const region = this.region(ref);
    const env: Env = ref?.endpoint === undefined || this.ctx.env["TIONE_ENDPOINT"] ? this.ctx.env : { ...this.ctx.env, TIONE_ENDPOINT: ref.endpoint };
    const probe = resolveTioneEndpoint(env, this.target()?.endpoint);
    const project = this.projectId(ref);
    const key = `${probe.display}|${region}|${project ?? ""}`;
    let api = this.apis.get(key);
    if (api === undefined) {
      api = new TioneApi({
        env, region, ...(project === undefined ? {} : { projectId: project }),
        ...(this.target()?.endpoint === undefined ? {} : { endpoint: this.target()!.endpoint! }), ...(this.opts.timeoutMs === undefined ? {} : { timeoutMs: this.opts.timeoutMs }),
      });
      this.apis.set(key, api);
    }
    return api;
  }

  /**
   * The workspace a JobRef's task lives in (recorded at create); for a new task targets.tione.tiProjectId, else
   * TENCENTCLOUD_TIONE_PROJECT_ID, else the default workspace.
   */
  private projectId(ref?: JobRef): string | undefined {
    if (ref !== undefined) return ref.extra?.["tiProjectId"];
    return this.target()?.tiProjectId ?? (this.ctx.env[TIONE_PROJECT_ENV] || undefined);
  }

  /** TI-ONE's name rule, checked before any upload or call (the planner checks the same rule: a hand-made plan may not). */
  private checkName(plan: Plan, body: CreateTrainingTaskBody): void {
    const problem = taskNameProblem(body.Name);
    if (problem === undefined) return;
    const which = body.Name === plan.jobName ? "the run name, made from the recipe's metadata.name" : `the request's Name, planned for run ${JSON.stringify(plan.jobName)}`;
    throw new ProviderError("tione", "fatal", "tione_bad_task_name", `the TI-ONE task name ${JSON.stringify(body.Name)} (${which}) breaks TI-ONE's rule for CreateTrainingTask.Name: ${problem}; the rule: ${TASK_NAME_RULE}`, {
      exitCode: 2, hint: "rename the recipe (metadata.name) with English letters, digits and '-' and plan again; nothing was uploaded or created",
    });
  }

  private body(plan: Plan): CreateTrainingTaskBody {
    if (plan.provider !== "tione" || plan.request?.api !== TIONE_CREATE_API) {
      throw new ProviderError("tione", "fatal", "tione_no_request", `the plan for ${plan.jobName} has no TI-ONE request (planned for provider ${plan.provider})`, { exitCode: 2, hint: "plan with --provider tione" });
    }
    return plan.request.body as CreateTrainingTaskBody;
  }

  /** The recipe's secrets (plan.secrets), read from the deploying shell: each goes to the task as a private Env. */
  private secretsToPass(plan: Plan): { name: string; value: string | undefined; required: boolean }[] {
    if (this.target()?.secretsAsEnvs === false) return [];
    return plan.secrets.map((s) => ({ name: s.env, value: this.ctx.env[s.env] || undefined, required: s.required }));
  }

  /** Refuse early (before any upload or call) what cannot succeed; then upload the bundle to COS. */
  async prepare(plan: Plan, signal?: AbortSignal): Promise<void> {
    this.checkName(plan, this.body(plan));
    const gaps = tioneDeployGaps(this.ctx.recipe);
    if (gaps.length > 0) {
      throw new ProviderError("tione", "fatal", "tione_target_incomplete", `targets.tione is not complete for a deploy:\n${gaps.map((g) => `  ${formatPath(g.path)}: ${g.message}`).join("\n")}`, { exitCode: 2, hint: "rlpipe tione inspect <task-id> prints the fields of a task created in the console" });
    }
    const missing = this.secretsToPass(plan).filter((s) => s.required && s.value === undefined).map((s) => s.name);
    if (missing.length > 0) {
      throw new ProviderError("tione", "fatal", "secret_missing", `the task needs ${missing.join(", ")} (passed as task environment variables), but ${missing.length === 1 ? "it is" : "they are"} not set here`, { exitCode: 2, hint: "export them in the shell that runs rlpipe deploy" });
    }
    const api = this.api();
    await api.credentialsReady();
    if (api.projectId !== undefined) this.ctx.log?.(`tione: workspace ${api.projectId} (TiProjectId, from ${this.target()?.tiProjectId !== undefined ? "targets.tione.tiProjectId" : TIONE_PROJECT_ENV})`);
    const bundle = plan.request!.bundle;
    if (bundle === undefined) throw new ProviderError("tione", "fatal", "tione_no_bundle_location", "the plan has no COS location for the launch bundle", { exitCode: 2, hint: "set targets.tione.codeDir" });
    if (this.ctx.bundleSink === undefined) throw new ProviderError("tione", "fatal", "no_bundle_sink", "no object store was given to upload the launch bundle", { exitCode: 4 });
    const sink = this.ctx.bundleSink(bundle.to);
    let uploaded = 0;
    for (const f of plan.files) {
      const bytes = Buffer.from(f.content, "utf8");
      const head = await sink.head(f.path, signal);
      if (head?.size === bytes.length) continue; // content-addressed location: same key, same bytes
      await sink.putBytes(f.path, bytes, { contentType: f.path.endsWith(".sh") ? "text/x-shellscript" : "text/plain", ...(signal === undefined ? {} : { signal }) });
      uploaded++;
    }
    this.ctx.log?.(`tione: launch bundle at ${bundle.to} (${uploaded} of ${plan.files.length} files uploaded)`);
  }

  private refOf(plan: Plan, id: string): JobRef {
    const api = this.api();
    return {
      provider: "tione", name: plan.jobName, id, region: api.region, endpoint: api.endpoint.display,
      ...(api.projectId === undefined ? {} : { extra: { tiProjectId: api.projectId } }),
    };
  }

  /**
   * The task this plan made, found by its deterministic name (the oldest when a race made several). The run tag only
   * confirms: DescribeTrainingTasks items may come without Tags (the SDK model says "may return null"), so an item
   * that does not show them is confirmed through DescribeTrainingTask, and where neither shows tags the name decides.
   * Only a task visibly tagged for another run is passed over. No TagFilters: a lookup must not depend on tags.
   */
  async findExisting(plan: Plan, signal?: AbortSignal): Promise<JobRef | undefined> {
    const api = this.api();
    const name = plan.jobName;
    const named: TaskDetail[] = [];
    for (let offset = 0; ; offset += 50) {
      const page = await api.call<{ TrainingTaskSet?: TaskDetail[] | null; TotalCount?: number | null }>("DescribeTrainingTasks", {
        Filters: [{ Name: "Name", Values: [name] }],
        Offset: offset, Limit: 50, Order: "ASC", OrderField: "CreateTime",
      }, signal);
      const set = page.TrainingTaskSet ?? [];
      named.push(...set.filter((t) => t.Name === name && typeof t.Id === "string" && t.Id !== ""));
      // A missing TotalCount is no reason to stop early: a full page means there may be more.
      if (set.length < 50 || (typeof page.TotalCount === "number" && offset + 50 >= page.TotalCount)) break;
    }
    const ours: TaskDetail[] = [];
    for (const t of named) {
      let tag = runTagOf(t.Tags, name);
      if (tag === "unseen") tag = runTagOf((await api.call<{ TrainingTaskDetail?: TaskDetail | null }>("DescribeTrainingTask", { Id: t.Id }, signal)).TrainingTaskDetail?.Tags, name);
      if (tag === "other") this.ctx.log?.(`tione: task ${t.Id} is named ${name} but tagged for another run; not taken for this one`);
      else ours.push(t);
    }
    if (ours.length === 0) return undefined;
    ours.sort((a, b) => (Date.parse(a.CreateTime ?? "") || 0) - (Date.parse(b.CreateTime ?? "") || 0) || String(a.Id).localeCompare(String(b.Id)));
    if (ours.length > 1) this.ctx.log?.(`tione: ${ours.length} tasks are named ${name}; using the oldest, ${ours[0]!.Id}`);
    return this.refOf(plan, ours[0]!.Id!);
  }

  async submit(plan: Plan, signal?: AbortSignal): Promise<JobRef> {
    const body = this.body(plan);
    this.checkName(plan, body);
    const secrets = this.secretsToPass(plan).filter((s) => s.value !== undefined);
    // The planned private Envs carry a placeholder: each is replaced by the shell's value (an optional secret not set
    // here is left out), so no placeholder is ever sent. Plain variables go without IsPrivate.
    const envs: TioneEnv[] = sortEnvs([
      ...body.Envs.filter((e) => e.IsPrivate !== true && !secrets.some((s) => s.name === e.Name)),
      ...secrets.map((s) => ({ Name: s.name, Value: s.value!, IsPrivate: true as const })),
    ]);
    const unset = body.Envs.filter((e) => e.IsPrivate === true && !secrets.some((s) => s.name === e.Name)).map((e) => e.Name);
    if (unset.length > 0) this.ctx.log?.(`tione: ${unset.join(", ")} not set here: left out of the task's Envs`);
    const api = this.api();
    api.redact(secrets.map((s) => s.value));
    const r = await api.call<{ Id?: string }>("CreateTrainingTask", { ...body, Envs: envs }, signal);
    if (r.Id === undefined || r.Id === "") throw new ProviderError("tione", "ambiguous", "tione_no_task_id", `TI-ONE CreateTrainingTask for ${plan.jobName} answered without a task id`);
    this.ctx.log?.(`tione: created task ${r.Id} (${plan.jobName})`);
    return this.refOf(plan, r.Id);
  }

  private describe(ref: JobRef, signal?: AbortSignal): Promise<TaskDetail> {
    return this.api(ref).call<{ TrainingTaskDetail?: TaskDetail }>("DescribeTrainingTask", { Id: ref.id }, signal).then((r) => {
      if (r.TrainingTaskDetail === undefined) throw new ProviderError("tione", "not_found", "tione_not_found", `TI-ONE has no task ${ref.id}`);
      return r.TrainingTaskDetail;
    });
  }

  async status(ref: JobRef, signal?: AbortSignal): Promise<JobStatus> {
    const d = await this.describe(ref, signal);
    const raw = d.Status ?? "";
    const message = d.FailureReason || d.Message || undefined;
    const started = rfc3339(d.StartTime);
    const ended = rfc3339(d.EndTime);
    return { phase: normalizePhase("tione", raw), rawPhase: raw, ...(message === undefined ? {} : { message }), ...(started === undefined ? {} : { startedAt: started }), ...(ended === undefined ? {} : { endedAt: ended }) };
  }

  /** RuntimeInSeconds of DescribeTrainingTask: the task's running time, what postpaid specs are billed by. */
  async billing(ref: JobRef, signal?: AbortSignal): Promise<JobBilling | undefined> {
    const d = await this.describe(ref, signal);
    const started = rfc3339(d.StartTime);
    if (started === undefined) return undefined;
    const ended = rfc3339(d.EndTime);
    const running = !TERMINAL_RAW.has(d.Status ?? "");
    const runtime = typeof d["RuntimeInSeconds"] === "number" && Number.isFinite(d["RuntimeInSeconds"]) ? d["RuntimeInSeconds"] : undefined;
    const seconds = runtime ?? ((ended === undefined ? Date.now() : Date.parse(ended)) - Date.parse(started)) / 1000;
    const billing = typeof d["BillingInfo"] === "string" && d["BillingInfo"] !== "" ? `; BillingInfo ${d["BillingInfo"]}` : "";
    return {
      seconds: Math.max(0, seconds), running, startedAt: started, ...(ended === undefined ? {} : { endedAt: ended }),
      source: `${runtime === undefined ? "TI-ONE DescribeTrainingTask StartTime/EndTime" : "TI-ONE DescribeTrainingTask RuntimeInSeconds"}${running ? " (running: so far)" : ""}${billing}`,
    };
  }

  /**
   * Tail with DescribeLogs (Order ASC): page through a window with its Context; once a page comes back short, the
   * next window starts at the newest timestamp emitted (inclusive), and the ids already emitted at that instant
   * are dropped, so nothing is repeated and nothing that arrives late at that instant is lost.
   */
  async logs(ref: JobRef, cursor: string | undefined, signal?: AbortSignal): Promise<LogPage> {
    let cur = decodeCursor(cursor);
    if (cur.i === undefined) {
      const d = await this.describe(ref, signal);
      if (!d.LatestInstanceId) return { text: "", cursor: encodeCursor(cur) };
      const start = rfc3339(d.CreateTime) ?? rfc3339(d.StartTime);
      cur = { i: d.LatestInstanceId, ...(start === undefined ? {} : { s: start }), ids: [] };
    }
    const limit = Math.min(1000, Math.max(1, this.opts.logPageLimit ?? 1000));
    const pages = this.opts.logPagesPerCall ?? 10;
    const api = this.api(ref);
    let lastTs = cur.s;
    let lastMs = lastTs === undefined ? -Infinity : Date.parse(lastTs);
    const atLast = new Set(cur.ids ?? []);
    const emitted = new Set<string>(atLast);
    const lines: string[] = [];
    let context = cur.c;
    let windowStart = cur.c === undefined ? cur.s : cur.w;
    for (let p = 0; p < pages; p++) {
      const query = () => api.call<{ Context?: string | null; Content?: LogEntry[] | null }>("DescribeLogs", {
        Service: "TRAIN", ServiceId: cur.i, Limit: limit, Order: "ASC", OrderField: "Timestamp",
        ...(windowStart === undefined ? {} : { StartTime: windowStart }),
        ...(context === undefined ? {} : { Context: context }),
      }, signal);
      let page: Awaited<ReturnType<typeof query>>;
      try {
        page = await query();
      } catch (e) {
        // A page cursor that expired: start a fresh window at the newest timestamp (the ids there dedupe).
        if (context === undefined || !(e instanceof ProviderError) || e.providerCode?.startsWith("InvalidParameter") !== true) throw e;
        context = undefined;
        windowStart = lastTs;
        continue;
      }
      const content = page.Content ?? [];
      for (const e of content) {
        const id = e.Id ?? `${e.Timestamp}|${e.PodName}|${e.Message}`;
        if (emitted.has(id)) continue;
        emitted.add(id);
        lines.push(`${e.PodName ? `[${e.PodName}] ` : ""}${(e.Message ?? "").replace(/\n$/, "")}\n`);
        const ms = e.Timestamp === undefined ? NaN : Date.parse(e.Timestamp);
        if (Number.isNaN(ms)) continue;
        if (ms > lastMs) { lastMs = ms; lastTs = e.Timestamp; atLast.clear(); }
        if (ms === lastMs) atLast.add(id);
      }
      if (content.length < limit || !page.Context) { context = undefined; windowStart = lastTs; break; }
      context = page.Context;
    }
    const next: LogCursor = {
      i: cur.i, ...(lastTs === undefined ? {} : { s: lastTs }), ids: [...atLast].slice(-1000),
      ...(context === undefined ? {} : { c: context, ...(windowStart === undefined ? {} : { w: windowStart }) }),
    };
    return { text: lines.join(""), cursor: encodeCursor(next) };
  }

  /** Idempotent: a finished, stopping or missing task counts as stopped. */
  async stop(ref: JobRef, signal?: AbortSignal): Promise<void> {
    const settled = async (): Promise<boolean> => {
      try {
        const s = (await this.describe(ref, signal)).Status ?? "";
        return TERMINAL_RAW.has(s) || s === "STOPPING";
      } catch (e) {
        if (e instanceof ProviderError && e.kind === "not_found") return true;
        throw e;
      }
    };
    if (await settled()) return;
    try {
      await this.api(ref).call("StopTrainingTask", { Id: ref.id }, signal);
      this.ctx.log?.(`tione: stopping task ${ref.id}`);
    } catch (e) {
      if (e instanceof ProviderError && e.kind === "not_found") return;
      // TI-ONE refuses to stop a task that finished meanwhile (FailedOperation): that is success too.
      if (e instanceof ProviderError && e.providerCode?.startsWith("FailedOperation") === true && await settled()) return;
      throw e;
    }
  }

  async close(): Promise<void> {
    for (const api of this.apis.values()) api.close();
    this.apis.clear();
  }
}

export function createTioneAdapter(ctx: AdapterContext, opts: TioneAdapterOptions = {}): TioneAdapter {
  return new TioneAdapter(ctx, opts);
}

export const createAdapter: AdapterFactory = (ctx) => new TioneAdapter(ctx);
