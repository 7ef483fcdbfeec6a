// Huawei Cloud FunctionGraph (API v2) for `rlpipe functions deploy`: a thin client over fetch, signed with our own
// SDK-HMAC-SHA256 signer (the FunctionGraph SDK would bring the core SDK's TLS and logging caveats).
//   ListFunctions       GET  /v2/{project_id}/fgs/functions?marker=&maxitems=   (find by name: paged)
//   ShowFunctionConfig  GET  /v2/{project_id}/fgs/functions/{function_urn}/config
//   CreateFunction      POST /v2/{project_id}/fgs/functions                      (code_type zip, func_code.file base64)
//   UpdateFunctionCode  PUT  /v2/{project_id}/fgs/functions/{function_urn}/code
//   UpdateFunctionConfig PUT /v2/{project_id}/fgs/functions/{function_urn}/config
// Errors are {error_code, error_msg}: FSS.0409 the function exists, FSS.1051 (404) it does not, APIGW.0301 (401)
// a bad signature or key (support.huaweicloud.com/api-functiongraph/functiongraph_06_0108.html, ErrorCode.html).
// Environment variables go in user_data (a JSON object as a string), secrets in encrypted_user_data.
import { z } from "zod";
import { RlpipeError } from "../../core/errors.js";
import { parseEndpoint } from "../../core/util/endpoint.js";
import { type DeployedFunction, type FunctionSpec, type FunctionsApi, FunctionsApiError, type FunctionsFailureKind, codePlaceholder, maskedSecrets, networkFailure } from "./functions-api.js";
import { resolveHuaweiAccount } from "./huawei-account.js";
import { type HuaweiCredentials, encodePathSegment, signRequest } from "./huawei-sign.js";
import { huaweiErrorReply } from "./huawei-error.js";
import { FunctionGraphTriggers } from "./functiongraph-triggers.js";

type Env = Readonly<Record<string, string | undefined>>;

const PAGE = 400;
const MAX_PAGES = 50;
const DEFAULT_TIMEOUT_MS = 60_000;

export interface FunctionGraphConfig {
  readonly endpoint: string;
  readonly projectId: string;
  readonly region: string | undefined;
  readonly credentials: HuaweiCredentials;
  /** IAM, for the agency check: HUAWEICLOUD_SDK_IAM_ENDPOINT (the SDKs' name), else IAM_ENDPOINT, else the global https://iam.myhuaweicloud.com. */
  readonly iamEndpoint?: string;
  /** HUAWEICLOUD_SDK_DOMAIN_ID (the account), else looked up through IAM. */
  readonly domainId?: string;
}

const configError = (code: string, message: string, hint?: string) => new RlpipeError(code, message, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });

/** Account from the environment or ~/.huaweicloud/credentials; endpoint FUNCTIONGRAPH_ENDPOINT, else the region's. */
export function resolveFunctionGraphConfig(env: Env, opts: { region?: string | undefined; readFile?: (path: string) => string | undefined } = {}): FunctionGraphConfig {
  const account = resolveHuaweiAccount(env, {
    service: "FunctionGraph", region: opts.region, ...(opts.readFile === undefined ? {} : { readFile: opts.readFile }),
    projectIdHint: "set HUAWEICLOUD_SDK_PROJECT_ID to the project id of the region (console: My Credentials → API Credentials)",
  });
  const raw = env["FUNCTIONGRAPH_ENDPOINT"]?.trim() || (account.region === undefined ? undefined : `https://functiongraph.${account.region}.myhuaweicloud.com`);
  if (raw === undefined) throw configError("region_missing", "FunctionGraph needs a region or an endpoint", "pass --region (e.g. cn-southwest-2), set HUAWEICLOUD_REGION, or FUNCTIONGRAPH_ENDPOINT");
  if (account.region !== undefined && env["FUNCTIONGRAPH_ENDPOINT"] === undefined && !/^[a-z]{2}(-[a-z]+)+-\d+$/.test(account.region)) {
    throw configError("region_invalid", `${JSON.stringify(account.region)} is not a Huawei Cloud region name (e.g. cn-southwest-2)`);
  }
  const r = parseEndpoint(raw);
  if ("problem" in r) throw configError(r.problem.code, `FunctionGraph endpoint: ${r.problem.message}`, r.problem.hint);
  if (r.url.pathname !== "/" || r.url.search !== "") throw configError("bad_endpoint", `FunctionGraph endpoint must be scheme://host[:port] only, got ${raw}`);
  const iamVar = env["HUAWEICLOUD_SDK_IAM_ENDPOINT"]?.trim() ? "HUAWEICLOUD_SDK_IAM_ENDPOINT" : "IAM_ENDPOINT";
  const iamRaw = env[iamVar]?.trim() || "https://iam.myhuaweicloud.com";
  const iam = parseEndpoint(iamRaw);
  if ("problem" in iam) throw configError(iam.problem.code, `${iamVar}: ${iam.problem.message}`, iam.problem.hint);
  const domainId = env["HUAWEICLOUD_SDK_DOMAIN_ID"]?.trim() || undefined;
  return { endpoint: r.url.origin, projectId: account.projectId, region: account.region, credentials: account.credentials, iamEndpoint: iam.url.origin, ...(domainId === undefined ? {} : { domainId }) };
}

const FunctionInfo = z.looseObject({
  func_urn: z.string(),
  func_name: z.string(),
  package: z.string().optional(),
  runtime: z.string().optional(),
  handler: z.string().optional(),
  memory_size: z.number().optional(),
  timeout: z.number().optional(),
  description: z.string().nullable().optional(),
});
const ListResponse = z.looseObject({ functions: z.array(FunctionInfo).nullable().optional(), next_marker: z.number().optional(), count: z.number().optional() });

function deployedOf(f: z.infer<typeof FunctionInfo>): DeployedFunction {
  return {
    name: f.func_name, id: f.func_urn,
    ...(f.runtime === undefined ? {} : { runtime: f.runtime }), ...(f.handler === undefined ? {} : { handler: f.handler }),
    ...(f.memory_size === undefined ? {} : { memoryMb: f.memory_size }), ...(f.timeout === undefined ? {} : { timeoutS: f.timeout }),
    ...(f.description === undefined || f.description === null ? {} : { description: f.description }),
  };
}

/** A URN as one path segment: ':' stays as it is (a legal path character), everything else is percent-encoded. */
const urnSegment = (urn: string) => encodePathSegment(urn).replace(/%3A/g, ":");

const AUTH_HINT = "check HUAWEICLOUD_SDK_AK/SK (and the security token of temporary credentials), HUAWEICLOUD_SDK_PROJECT_ID, and this machine's clock (requests more than 15 minutes off are refused)";

/** An error reply as a FunctionsApiError carrying FunctionGraph's code. */
export function functionGraphError(what: string, status: number, text: string): FunctionsApiError {
  const { code, detail } = huaweiErrorReply(status, text);
  let kind: FunctionsFailureKind;
  let ours: string;
  let hint: string | undefined;
  if (code === "FSS.0409" || status === 409) { kind = "exists"; ours = "functiongraph_exists"; }
  // FSS.0401 is FunctionGraph's own "no such function" for a URN it no longer has (a function deleted meanwhile), at
  // 401: the signature was accepted, so it is not a credentials problem (those are APIGW.* from the gateway).
  else if (code === "FSS.1051" || code === "FSS.0404" || code === "FSS.0401" || status === 404) { kind = "not_found"; ours = "functiongraph_not_found"; }
  else if (status === 429 || code === "FSS.0429" || code === "APIGW.0308") { kind = "retryable"; ours = "functiongraph_throttled"; }
  else if (status >= 500) { kind = "ambiguous"; ours = "functiongraph_server_error"; }
  else if (status === 401 || status === 403 || code?.startsWith("APIGW.") === true) { kind = "fatal"; ours = "functiongraph_auth_failed"; hint = AUTH_HINT; }
  else { kind = "fatal"; ours = "functiongraph_request_rejected"; }
  return new FunctionsApiError("functiongraph", kind, ours, `FunctionGraph ${what} failed: ${detail}`, {
    httpStatus: status, ...(code === undefined ? {} : { platformCode: code }), ...(hint === undefined ? {} : { hint }),
  });
}

export interface CallOptions {
  readonly query?: Record<string, string>;
  readonly body?: unknown;
  readonly signal?: AbortSignal | undefined;
  readonly secrets?: readonly string[];
}

export class FunctionGraphFunctions implements FunctionsApi {
  readonly platform = "functiongraph" as const;
  readonly endpoint: string;
  private readonly timeoutMs: number;

  /** `app` is the FunctionGraph application (the API's `package`) the functions belong to. */
  constructor(private readonly config: FunctionGraphConfig, private readonly app = "default", opts: { timeoutMs?: number; apigGroup?: string | undefined; apigInstance?: string | undefined } = {}) {
    this.endpoint = config.endpoint;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.triggers = new FunctionGraphTriggers(this, {
      ...(opts.apigGroup === undefined ? {} : { apigGroup: opts.apigGroup }), ...(opts.apigInstance === undefined ? {} : { apigInstance: opts.apigInstance }),
      ...(config.iamEndpoint === undefined ? {} : { iamEndpoint: config.iamEndpoint }), ...(config.domainId === undefined ? {} : { domainId: config.domainId }),
    });
  }

  readonly triggers: FunctionGraphTriggers;

  async find(name: string, signal?: AbortSignal): Promise<DeployedFunction | undefined> {
    let marker = 0;
    for (let page = 0; page < MAX_PAGES; page++) {
      const r = ListResponse.parse(await this.call("GET", "ListFunctions", ["fgs", "functions"], { query: { marker: String(marker), maxitems: String(PAGE) }, signal }));
      const items = r.functions ?? [];
      const hit = items.find((f) => f.func_name === name && (f.package ?? "default") === this.app);
      if (hit !== undefined) {
        const cfg = FunctionInfo.parse(await this.call("GET", `ShowFunctionConfig ${name}`, ["fgs", "functions", hit.func_urn, "config"], { signal }));
        return deployedOf(cfg);
      }
      const next = r.next_marker;
      if (items.length === 0 || next === undefined || next <= marker || (r.count !== undefined && next >= r.count)) return undefined;
      marker = next;
    }
    throw new FunctionsApiError("functiongraph", "fatal", "functiongraph_list_too_long", `FunctionGraph ListFunctions: more than ${MAX_PAGES * PAGE} functions; ${name} was not among them`, { hint: "use another --app" });
  }

  private configBody(spec: FunctionSpec, secrets: Record<string, string>): Record<string, unknown> {
    return {
      func_name: spec.name, runtime: spec.runtime, handler: spec.handler, memory_size: spec.memoryMb, timeout: spec.timeoutS,
      description: spec.description, user_data: JSON.stringify(sortedRecord(spec.env)), encrypted_user_data: JSON.stringify(secrets),
      ...(spec.role === undefined ? {} : { xrole: spec.role }),
    };
  }

  private bodies(action: "create" | "updateCode" | "updateConfig", spec: FunctionSpec, reveal: boolean): Record<string, unknown> {
    const code = reveal ? Buffer.from(spec.zip).toString("base64") : codePlaceholder(spec.zip);
    const secrets = reveal ? sortedRecord(spec.secrets) : maskedSecrets(spec.secrets);
    const codeFields = { code_type: "zip", code_filename: "index.zip", func_code: { file: code } };
    if (action === "updateCode") return codeFields;
    const config = this.configBody(spec, secrets);
    return action === "create" ? { ...config, package: this.app, type: "v2", ...codeFields } : config;
  }

  preview(action: "create" | "updateCode" | "updateConfig", spec: FunctionSpec): unknown {
    return this.bodies(action, spec, false);
  }

  async create(spec: FunctionSpec, signal?: AbortSignal): Promise<DeployedFunction> {
    const r = FunctionInfo.parse(await this.call("POST", `CreateFunction ${spec.name}`, ["fgs", "functions"], { body: this.bodies("create", spec, true), signal, secrets: Object.values(spec.secrets) }));
    return deployedOf(r);
  }

  async updateCode(fn: DeployedFunction, spec: FunctionSpec, signal?: AbortSignal): Promise<void> {
    await this.call("PUT", `UpdateFunctionCode ${fn.name}`, ["fgs", "functions", fn.id, "code"], { body: this.bodies("updateCode", spec, true), signal });
  }

  async updateConfig(fn: DeployedFunction, spec: FunctionSpec, signal?: AbortSignal): Promise<void> {
    await this.call("PUT", `UpdateFunctionConfig ${fn.name}`, ["fgs", "functions", fn.id, "config"], { body: this.bodies("updateConfig", spec, true), signal, secrets: Object.values(spec.secrets) });
  }

  async settle(): Promise<void> { /* FunctionGraph takes the next change at once */ }

  close(): void { /* fetch keeps no client state of ours */ }


  /** One signed FunctionGraph request under /v2/{project_id}/ (the path's segments after it). */
  call(method: string, what: string, segments: readonly string[], opts: CallOptions): Promise<unknown> {
    const path = `/v2/${[encodePathSegment(this.config.projectId), ...segments.map(urnSegment)].join("/")}`;
    return this.send(this.config.endpoint, method, what, path, { ...opts, headers: { "X-Project-Id": this.config.projectId } });
  }

  /** One signed request to `endpoint` (FunctionGraph, or IAM for the agency); a failure says whether it may be repeated. */
  async send(endpoint: string, method: string, what: string, path: string, opts: CallOptions & { headers?: Record<string, string> }): Promise<unknown> {
    const bodyText = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const signed = signRequest({
      method, endpoint, path, ...(opts.query === undefined ? {} : { query: opts.query }),
      headers: { "Content-Type": "application/json", ...opts.headers },
      ...(bodyText === undefined ? {} : { body: bodyText }),
    }, this.config.credentials);
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const signal = opts.signal === undefined ? timeout : AbortSignal.any([opts.signal, timeout]);
    let status: number;
    let text: string;
    try {
      const res = await fetch(signed.url, { method, headers: signed.headers, ...(bodyText === undefined ? {} : { body: bodyText }), signal, redirect: "manual" });
      status = res.status;
      text = await res.text();
    } catch (e) {
      if (opts.signal?.aborted === true) throw opts.signal.reason;
      if (timeout.aborted) throw new FunctionsApiError("functiongraph", "ambiguous", "functiongraph_timeout", `FunctionGraph ${what}: no reply within ${this.timeoutMs} ms (it may have been acted on)`);
      throw networkFailure("functiongraph", `FunctionGraph ${what}`, e, endpoint);
    }
    // A message never carries a key or a secret, even if the platform quotes one back.
    const clean = (s: string) => [this.config.credentials.ak, this.config.credentials.sk, ...(opts.secrets ?? [])].filter((x) => x.length >= 4).reduce((acc, x) => acc.split(x).join("***"), s);
    if (status < 200 || status >= 300) throw functionGraphError(what, status, clean(text));
    if (text.trim() === "") return {};
    try { return JSON.parse(text) as unknown; } catch {
      throw new FunctionsApiError("functiongraph", "ambiguous", "functiongraph_bad_response", `FunctionGraph ${what}: HTTP ${status} with a body that is not JSON`);
    }
  }
}

function sortedRecord(o: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]!]));
}
