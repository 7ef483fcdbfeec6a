// Tencent Cloud SCF (scf 2018-04-16) for `rlpipe functions deploy`, through tencentcloud-sdk-nodejs-common's
// CommonClient (the same TC3 signing and transport as the TI-ONE client; the full SDK is not a dependency):
//   GetFunction · CreateFunction (Code.ZipFile, base64) · UpdateFunctionCode (ZipFile, Handler) ·
//   UpdateFunctionConfiguration (Description, MemorySize, Timeout, Environment).
// Creates and code updates are asynchronous: the function is Creating/Updating until Active, and takes no other
// change meanwhile, so settle() waits for Active. The runtime is fixed at creation (UpdateFunctionConfiguration:
// "创建时指定，目前不支持修改"). SCF has no separate field for secrets in this API: they are environment variables.
// Errors: ResourceNotFound.Function (no such function), ResourceInUse.Function (the name is taken), AuthFailure.*
// (cloud.tencent.com/document/api/583/18586 and the SCF error-code list).
import type { Agent as HttpAgent } from "node:http";
import { RlpipeError } from "../../core/errors.js";
import { parseEndpoint } from "../../core/util/endpoint.js";
import { type DeployedFunction, type FunctionSpec, type FunctionsApi, FunctionsApiError, type FunctionsFailureKind, codePlaceholder, maskedSecrets, networkFailure } from "./functions-api.js";
import { ScfTriggers } from "./scf-triggers.js";
import { type SdkClient, type TioneCredentials, type TioneEndpoint, agentFor, credentialsHint, loadCommonClient, resolveTioneCredentials } from "./tione.js";

type Env = Readonly<Record<string, string | undefined>>;

export const SCF_VERSION = "2018-04-16";
export const DEFAULT_SCF_ENDPOINT = "https://scf.tencentcloudapi.com";
/** The host requests are signed for: the TC3 service name is its first label ("scf"). */
export const SCF_HOST = "scf.tencentcloudapi.com";

export const CAM_VERSION = "2019-01-16";
export const CAM_HOST = "cam.tencentcloudapi.com";

/** SCF_ENDPOINT, else the public endpoint. Plain http only for loopback (a test server), signed as the real host. */
export function resolveScfEndpoint(env: Env): TioneEndpoint {
  return resolveTencentEndpoint(env, "SCF_ENDPOINT", SCF_HOST);
}

/** `variable`, else https://<host>; plain http only for loopback, signed as `host`. */
export function resolveTencentEndpoint(env: Env, variable: string, host: string): TioneEndpoint {
  const raw = env[variable]?.trim() || `https://${host}`;
  const r = parseEndpoint(raw);
  if ("problem" in r) throw new RlpipeError(r.problem.code, `${variable}: ${r.problem.message}`, { exitCode: 2, ...(r.problem.hint === undefined ? {} : { hint: r.problem.hint }) });
  const url = r.url;
  if (url.protocol === "https:") return { display: raw, host: url.host, protocol: "https://" };
  const v6 = url.hostname.startsWith("[") || url.hostname.includes(":");
  const address = url.hostname === "localhost" ? "127.0.0.1" : url.hostname.replace(/^\[|\]$/g, "");
  return { display: raw, host: `${host}:${url.port || "80"}`, protocol: "http://", loopback: { address, family: v6 ? 6 : 4 } };
}

interface SdkError { code?: string; message?: string; requestId?: string; httpCode?: number }

function kindOfScfCode(code: string, action: string): [FunctionsFailureKind, string] {
  if (code.startsWith("RequestLimitExceeded")) return ["retryable", "scf_throttled"];
  if (code === "InternalError" || code.startsWith("InternalError.")) return ["ambiguous", "scf_internal_error"];
  if (code.startsWith("ResourceNotFound")) return ["not_found", "scf_not_found"];
  if (code === "ResourceInUse.Function" && action === "CreateFunction") return ["exists", "scf_exists"];
  if ((code === "ResourceInUse.Trigger" || code === "ResourceInUse.TriggerName") && action === "CreateTrigger") return ["exists", "scf_trigger_exists"];
  if (code.startsWith("ResourceInUse") || code.startsWith("FailedOperation")) return ["busy", "scf_failed_operation"];
  if (code.startsWith("AuthFailure") || code.startsWith("UnauthorizedOperation")) return ["fatal", "scf_auth_failed"];
  if (code.startsWith("InvalidParameter") || code === "MissingParameter" || code === "UnknownParameter" || code === "InvalidAction") return ["fatal", "scf_invalid_request"];
  if (code.startsWith("LimitExceeded")) return ["fatal", "scf_limit_exceeded"];
  return ["fatal", "scf_error"];
}

/** A failed SDK call as a FunctionsApiError carrying SCF's code and request id. */
export function scfFailure(action: string, e: unknown, endpoint: string, secrets: readonly string[]): FunctionsApiError {
  const err = (e ?? {}) as SdkError;
  const clean = (s: string) => secrets.filter((x) => x.length >= 4).reduce((acc, x) => acc.split(x).join("***"), s);
  const message = clean(String(err.message ?? e));
  const code = typeof err.code === "string" && err.code !== "" ? err.code : undefined;
  if (code !== undefined) {
    const [kind, ours] = kindOfScfCode(code, action);
    return new FunctionsApiError("scf", kind, ours, `SCF ${action} failed: ${code}: ${message}${err.requestId ? ` (RequestId ${err.requestId})` : ""}`, {
      platformCode: code, ...(code.startsWith("AuthFailure") ? { hint: credentialsHint } : {}),
    });
  }
  if (typeof err.httpCode === "number") {
    const kind: FunctionsFailureKind = err.httpCode === 429 ? "retryable" : err.httpCode >= 500 ? "ambiguous" : "fatal";
    return new FunctionsApiError("scf", kind, "scf_http_error", `SCF ${action} failed: HTTP ${err.httpCode} ${message}`, { httpStatus: err.httpCode });
  }
  return networkFailure("scf", `SCF ${action}`, e, endpoint);
}

const isAborted = (signal: AbortSignal | undefined): boolean => signal?.aborted === true;

interface GetFunctionResult {
  FunctionName?: string; FunctionId?: string; Runtime?: string; Handler?: string; MemorySize?: number; Timeout?: number;
  Description?: string; Status?: string; StatusDesc?: string;
}

export interface ScfFunctionsOptions {
  readonly env: Env;
  readonly region: string;
  readonly namespace?: string;
  /** Per request (default 60 000 ms). */
  readonly timeoutMs?: number;
  /** How long settle() waits for Active (default 120 000 ms), and between looks (default 1000 ms, growing to 5000). */
  readonly settleTimeoutMs?: number;
  readonly settlePollMs?: number;
}

export class ScfFunctions implements FunctionsApi {
  readonly platform = "scf" as const;
  readonly endpoint: string;
  private readonly ep: TioneEndpoint;
  private readonly namespace: string;
  private agent: HttpAgent | undefined;
  private camAgent: HttpAgent | undefined;
  private cam: Promise<SdkClient> | undefined;
  readonly triggers: ScfTriggers;
  private client: Promise<SdkClient> | undefined;
  private credentials: TioneCredentials | undefined;

  constructor(private readonly opts: ScfFunctionsOptions) {
    this.ep = resolveScfEndpoint(opts.env);
    this.endpoint = this.ep.display;
    this.namespace = opts.namespace ?? "default";
    this.triggers = new ScfTriggers(this, { namespace: this.namespace, region: opts.region });
  }

  /** Resolve the credentials now (before anything is sent). */
  async credentialsReady(): Promise<void> {
    this.credentials ??= await resolveTioneCredentials(this.opts.env, "SCF");
  }

  private async sdk(): Promise<SdkClient> {
    this.client ??= (async () => {
      await this.credentialsReady();
      const c = this.credentials!;
      this.agent ??= agentFor(this.ep);
      const { CommonClient } = await loadCommonClient();
      return new CommonClient(SCF_HOST, SCF_VERSION, {
        credential: { secretId: c.secretId, secretKey: c.secretKey, ...(c.token === undefined ? {} : { token: c.token }) },
        region: this.opts.region,
        profile: { httpProfile: { endpoint: this.ep.host, protocol: this.ep.protocol, reqTimeout: (this.opts.timeoutMs ?? 60_000) / 1000, agent: this.agent } },
      });
    })();
    return this.client;
  }

  async call<T>(action: string, params: object, signal: AbortSignal | undefined, secrets: readonly string[] = []): Promise<T> {
    return this.request(await this.sdk(), action, params, signal, secrets);
  }

  /** One CAM call (the role check), signed for cam.tencentcloudapi.com; CAM_ENDPOINT overrides where it goes. */
  async camCall<T>(action: string, params: object, signal: AbortSignal | undefined): Promise<T> {
    this.cam ??= (async () => {
      await this.credentialsReady();
      const c = this.credentials!;
      const ep = resolveTencentEndpoint(this.opts.env, "CAM_ENDPOINT", CAM_HOST);
      const { CommonClient } = await loadCommonClient();
      this.camAgent ??= agentFor(ep);
      return new CommonClient(CAM_HOST, CAM_VERSION, {
        credential: { secretId: c.secretId, secretKey: c.secretKey, ...(c.token === undefined ? {} : { token: c.token }) },
        region: this.opts.region,
        profile: { httpProfile: { endpoint: ep.host, protocol: ep.protocol, reqTimeout: (this.opts.timeoutMs ?? 60_000) / 1000, agent: this.camAgent } },
      });
    })();
    return this.request(await this.cam, action, params, signal, []);
  }

  private async request<T>(client: SdkClient, action: string, params: object, signal: AbortSignal | undefined, secrets: readonly string[]): Promise<T> {
    if (signal?.aborted === true) throw signal.reason;
    try {
      return (await client.request(action, params, signal === undefined ? {} : { signal })) as T;
    } catch (e) {
      // Only the caller's own signal means "cancelled"; any other broken exchange may have reached SCF.
      if (isAborted(signal)) throw signal!.reason;
      const c = this.credentials;
      throw scfFailure(action, e, this.endpoint, [...secrets, ...(c === undefined ? [] : [c.secretKey, c.secretId, ...(c.token === undefined ? [] : [c.token])])]);
    }
  }

  private async get(name: string, signal?: AbortSignal): Promise<GetFunctionResult | undefined> {
    try {
      return await this.call<GetFunctionResult>("GetFunction", { FunctionName: name, Namespace: this.namespace }, signal);
    } catch (e) {
      if (e instanceof FunctionsApiError && e.kind === "not_found") return undefined;
      throw e;
    }
  }

  async find(name: string, signal?: AbortSignal): Promise<DeployedFunction | undefined> {
    const f = await this.get(name, signal);
    if (f === undefined) return undefined;
    return {
      name: f.FunctionName ?? name, id: f.FunctionId ?? name,
      ...(f.Runtime === undefined ? {} : { runtime: f.Runtime }), ...(f.Handler === undefined ? {} : { handler: f.Handler }),
      ...(f.MemorySize === undefined ? {} : { memoryMb: f.MemorySize }), ...(f.Timeout === undefined ? {} : { timeoutS: f.Timeout }),
      ...(f.Description === undefined ? {} : { description: f.Description }),
    };
  }

  private environment(spec: FunctionSpec, reveal: boolean): { Variables: { Key: string; Value: string }[] } {
    const secrets = reveal ? spec.secrets : maskedSecrets(spec.secrets);
    const all: Record<string, string> = { ...spec.env, ...secrets };
    return { Variables: Object.keys(all).sort().map((k) => ({ Key: k, Value: all[k]! })) };
  }

  private bodies(action: "create" | "updateCode" | "updateConfig", spec: FunctionSpec, reveal: boolean): Record<string, unknown> {
    const zip = reveal ? Buffer.from(spec.zip).toString("base64") : codePlaceholder(spec.zip);
    if (action === "updateCode") return { FunctionName: spec.name, Namespace: this.namespace, Handler: spec.handler, ZipFile: zip };
    const config = {
      FunctionName: spec.name, Namespace: this.namespace, Description: spec.description, MemorySize: spec.memoryMb, Timeout: spec.timeoutS,
      Environment: this.environment(spec, reveal),
      ...(spec.role === undefined ? {} : { Role: spec.role }),
    };
    return action === "create" ? { ...config, Code: { ZipFile: zip }, Handler: spec.handler, Runtime: spec.runtime, Type: "Event" } : config;
  }

  preview(action: "create" | "updateCode" | "updateConfig", spec: FunctionSpec): unknown {
    return this.bodies(action, spec, false);
  }

  async create(spec: FunctionSpec, signal?: AbortSignal): Promise<DeployedFunction> {
    await this.call("CreateFunction", this.bodies("create", spec, true), signal, Object.values(spec.secrets));
    return { name: spec.name, id: spec.name, runtime: spec.runtime, handler: spec.handler, memoryMb: spec.memoryMb, timeoutS: spec.timeoutS, description: spec.description };
  }

  async updateCode(fn: DeployedFunction, spec: FunctionSpec, signal?: AbortSignal): Promise<void> {
    await this.call("UpdateFunctionCode", this.bodies("updateCode", spec, true), signal);
  }

  async updateConfig(fn: DeployedFunction, spec: FunctionSpec, signal?: AbortSignal): Promise<void> {
    if (fn.runtime !== undefined && fn.runtime !== spec.runtime) {
      throw new FunctionsApiError("scf", "fatal", "scf_runtime_fixed", `SCF function ${fn.name} runs ${fn.runtime}, not ${spec.runtime}, and SCF cannot change a function's runtime`, {
        exitCode: 2, hint: `deploy with --runtime ${fn.runtime}, or delete the function in the console so that deploy creates it again`,
      });
    }
    // The handler is set with the code: a new handler alone is an UpdateFunctionCode too.
    if (fn.handler !== undefined && fn.handler !== spec.handler) {
      await this.updateCode(fn, spec, signal);
      await this.settle(fn, signal);
    }
    await this.call("UpdateFunctionConfiguration", this.bodies("updateConfig", spec, true), signal, Object.values(spec.secrets));
  }

  async settle(fn: DeployedFunction, signal?: AbortSignal): Promise<void> {
    const deadline = Date.now() + (this.opts.settleTimeoutMs ?? 120_000);
    let pollMs = this.opts.settlePollMs ?? 1000;
    for (;;) {
      const f = await this.get(fn.name, signal);
      const status = f?.Status ?? "missing";
      if (status === "Active") return;
      if (/Failed$/.test(status)) {
        throw new FunctionsApiError("scf", "fatal", "scf_function_failed", `SCF function ${fn.name} is ${status}${f?.StatusDesc ? `: ${f.StatusDesc}` : ""}`, { hint: "see the function in the SCF console; deploy again once it is fixed" });
      }
      if (Date.now() + pollMs > deadline) {
        throw new FunctionsApiError("scf", "ambiguous", "scf_settle_timeout", `SCF function ${fn.name} is still ${status} after ${Math.round((this.opts.settleTimeoutMs ?? 120_000) / 1000)} s`, { hint: "deploy again in a minute: it picks up where this one stopped" });
      }
      await new Promise<void>((resolve, reject) => {
        const t = setTimeout(resolve, pollMs);
        signal?.addEventListener("abort", () => { clearTimeout(t); reject(signal.reason); }, { once: true });
      });
      pollMs = Math.min(pollMs * 2, 5000);
    }
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
    this.camAgent?.destroy();
    this.camAgent = undefined;
  }
}
