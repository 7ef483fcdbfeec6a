// FunctionGraph triggers and the function's agency, for `rlpipe functions deploy` (signed like every FunctionGraph call):
//   ListFunctionTriggers   GET    /v2/{project_id}/fgs/triggers/{function_urn}            (functiongraph_06_0119)
//   CreateFunctionTrigger  POST   /v2/{project_id}/fgs/triggers/{function_urn}            (functiongraph_06_0122; 201)
//   DeleteFunctionTrigger  DELETE /v2/{project_id}/fgs/triggers/{function_urn}/{type}/{id} (functiongraph_06_0121; 204)
// (support.huaweicloud.com/api-functiongraph/…). UpdateTrigger (functiongraph_06_0124) takes only trigger_status and
// the polling fields of queue triggers, so a changed APIG route or OBS bucket/prefix is deleted and created again.
// event_data fields are those of TriggerEventDataRequestBody (huaweicloud-sdk-nodejs-v3 services/functiongraph/v2):
// APIG name, group_id, env_id, env_name, auth, protocol, req_method, path, match_mode, type, backend_type,
// func_info.timeout; OBS name, bucket, events, prefix. A second trigger on the same route or bucket is refused with
// FSS.0409 (409, "The specified resource already exists", ErrorCode.html).
// An HTTP trigger is a route on a dedicated API gateway (trigger_type_code DEDICATEDGATEWAY, event_data.instance_id
// the gateway's instance: "APIG触发器：apig实例id", TriggerEventDataRequestBody of huaweicloudsdkfunctiongraph
// 3.1.219), or, only where asked (--apig-shared), on the shared gateway (APIG, no instance), which is being
// discontinued and which new accounts do not have. A listing gives func_info back extended (function_urn,
// invocation_type, version) with api_id/api_name/invoke_url added (TriggerEventDataResponseBody), and OBS events in
// the s3:…:* form: core/packaging/triggers.ts compares only the fields rlpipe set, and events are compared as names
// (ObjectCreated and s3:ObjectCreated:* are one event).
// The agency (the function's xrole) is checked in IAM: KeystoneListAgencies GET /v3.0/OS-AGENCY/agencies?domain_id=&name=
// (the account's id from HUAWEICLOUD_SDK_DOMAIN_ID, else KeystoneQueryAccessibleDomainList GET /v3/auth/domains); an
// agency FunctionGraph may take is delegated to the cloud service op_svc_cff.
import { z } from "zod";
import type { DeployedTrigger, TriggerSpec, WantedTrigger } from "../../core/packaging/triggers.js";
import { type DeployedFunction, FunctionsApiError, type TriggersApi } from "./functions-api.js";

/** What this module needs of the FunctionGraph client (functiongraph-functions.ts), without importing it. */
export interface FunctionGraphCaller {
  call(method: string, what: string, segments: readonly string[], opts: { query?: Record<string, string>; body?: unknown; signal?: AbortSignal | undefined }): Promise<unknown>;
  send(endpoint: string, method: string, what: string, path: string, opts: { query?: Record<string, string>; signal?: AbortSignal | undefined }): Promise<unknown>;
}

/** The FunctionGraph service principal an agency must trust. */
export const FUNCTIONGRAPH_AGENCY_SERVICE = "op_svc_cff";

const TriggerItem = z.looseObject({
  trigger_id: z.string(),
  trigger_type_code: z.string(),
  trigger_status: z.string().optional(),
  event_data: z.union([z.record(z.string(), z.unknown()), z.string()]).nullable().optional(),
});
const TriggerList = z.array(TriggerItem).nullable();

/** OBS event names in the s3:…:* form the service lists; the short names of the SDK's docstring map onto them. */
const OBS_EVENTS: Readonly<Record<string, string>> = {
  ObjectCreated: "s3:ObjectCreated:*", Put: "s3:ObjectCreated:Put", Post: "s3:ObjectCreated:Post", Copy: "s3:ObjectCreated:Copy",
  CompleteMultipartUpload: "s3:ObjectCreated:CompleteMultipartUpload", ObjectRemoved: "s3:ObjectRemoved:*", Delete: "s3:ObjectRemoved:Delete",
  DeleteMarkerCreated: "s3:ObjectRemoved:DeleteMarkerCreated",
};
export const obsEventName = (e: unknown): unknown => (typeof e === "string" ? OBS_EVENTS[e] ?? e : e);

/** The HTTP trigger types: a route on a dedicated gateway (with its instance) or on the shared one. */
const HTTP_TYPES = new Set(["DEDICATEDGATEWAY", "APIG"]);
const Agencies = z.looseObject({ agencies: z.array(z.looseObject({ name: z.string(), trust_domain_name: z.string().nullable().optional() })) });
const Domains = z.looseObject({ domains: z.array(z.looseObject({ id: z.string() })) });

const eventData = (v: unknown): Record<string, unknown> => {
  if (typeof v === "string") { try { const p = JSON.parse(v) as unknown; return typeof p === "object" && p !== null ? p as Record<string, unknown> : {}; } catch { return {}; } }
  return typeof v === "object" && v !== null ? v as Record<string, unknown> : {};
};

/** The key that names one of rlpipe's triggers among a function's: the API's name (APIG; api_name where a listing
 * has no name), the bucket (OBS). */
function keyOf(type: string, data: Readonly<Record<string, unknown>>): string | undefined {
  const k = type === "OBS" ? data["bucket"] : data["name"] ?? data["api_name"];
  return typeof k === "string" ? k : undefined;
}

/** A listed trigger's type as rlpipe plans with it: an APIG route listed with a gateway instance is a dedicated one. */
function plannedType(code: string, data: Readonly<Record<string, unknown>>): string {
  if (!HTTP_TYPES.has(code)) return code;
  return typeof data["instance_id"] === "string" && data["instance_id"] !== "" ? "DEDICATEDGATEWAY" : "APIG";
}

export class FunctionGraphTriggers implements TriggersApi {
  constructor(private readonly api: FunctionGraphCaller, private readonly opts: { readonly apigGroup?: string; readonly apigInstance?: string; readonly iamEndpoint?: string; readonly domainId?: string }) {}

  /** --apig-group: without a group there is no APIG route to make. */
  get apigGroup(): string | undefined {
    return this.opts.apigGroup;
  }

  spec(fn: DeployedFunction, wanted: WantedTrigger, o: { readonly timeoutS: number }): TriggerSpec {
    if (wanted.kind === "upload") {
      const config = { name: `${fn.name}-recipes`.slice(0, 64), bucket: wanted.bucket, events: ["s3:ObjectCreated:*"], prefix: wanted.prefix };
      return { type: "OBS", key: wanted.bucket, config, label: `OBS s3:ObjectCreated:* obs://${wanted.bucket}/${wanted.prefix}` };
    }
    const group = this.opts.apigGroup;
    if (group === undefined) throw new Error("FunctionGraph HTTP trigger without an APIG group");
    // An APIG API name: letters, digits and '_', starting with a letter (3–64).
    const name = fn.name.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 64);
    const instance = this.opts.apigInstance;
    const config = {
      ...(instance === undefined ? {} : { instance_id: instance }),
      name, group_id: group, env_id: "DEFAULT_ENVIRONMENT_RELEASE_ID", env_name: "RELEASE", auth: "NONE", protocol: "HTTPS",
      req_method: "ANY", path: wanted.path, match_mode: "SWA", type: 1, backend_type: "FUNCTION",
      // APIG waits at most 60 s for its backend; the function may run longer (then the caller sees APIG's 504).
      func_info: { timeout: Math.min(o.timeoutS, 60) * 1000 },
    };
    return instance === undefined
      ? { type: "APIG", key: name, config, label: `APIG ANY ${wanted.path} (shared gateway, group ${group}, prefix match)` }
      : { type: "DEDICATEDGATEWAY", key: name, config, label: `APIG ANY ${wanted.path} (gateway ${instance}, group ${group}, prefix match)` };
  }

  async list(fn: DeployedFunction, signal?: AbortSignal): Promise<DeployedTrigger[]> {
    const items = TriggerList.parse(await this.api.call("GET", `ListFunctionTriggers ${fn.name}`, ["fgs", "triggers", fn.id], { signal })) ?? [];
    return items.map((t) => {
      const listed = eventData(t.event_data);
      const data = Array.isArray(listed["events"]) ? { ...listed, events: listed["events"].map(obsEventName) } : listed;
      const type = plannedType(t.trigger_type_code, data);
      return { id: t.trigger_id, type, ...(type === t.trigger_type_code ? {} : { typeCode: t.trigger_type_code }), key: keyOf(t.trigger_type_code, data), config: data };
    });
  }

  async create(fn: DeployedFunction, spec: TriggerSpec, signal?: AbortSignal): Promise<void> {
    await this.api.call("POST", `CreateFunctionTrigger ${fn.name} ${spec.type}`, ["fgs", "triggers", fn.id], {
      body: { trigger_type_code: spec.type, trigger_status: "ACTIVE", event_data: spec.config }, signal,
    });
  }

  canUpdate(): boolean {
    return false;
  }

  async update(): Promise<void> {
    throw new Error("FunctionGraph cannot update an APIG or OBS trigger in place");
  }

  async delete(fn: DeployedFunction, deployed: DeployedTrigger, signal?: AbortSignal): Promise<void> {
    try {
      await this.api.call("DELETE", `DeleteFunctionTrigger ${fn.name} ${deployed.type}`, ["fgs", "triggers", fn.id, deployed.typeCode ?? deployed.type, deployed.id], { signal });
    } catch (e) {
      if (e instanceof FunctionsApiError && e.kind === "not_found") return; // already gone (a repeated delete)
      throw e;
    }
  }

  /** An IAM call; a 403 is a permission these credentials lack (they were accepted), not a bad key or a clock. */
  private async iam(call: () => Promise<unknown>, what: string): Promise<unknown> {
    try {
      return await call();
    } catch (e) {
      if (e instanceof FunctionsApiError && e.httpStatus === 403) {
        throw new FunctionsApiError("functiongraph", "fatal", "functiongraph_iam_forbidden", `IAM refused to ${what} for these credentials (403${e.platformCode === undefined ? "" : ` ${e.platformCode}`}): the user may not read agencies, so --role cannot be checked`, {
          httpStatus: 403, ...(e.platformCode === undefined ? {} : { platformCode: e.platformCode }),
          hint: "grant this IAM user the permission to list agencies (iam:agencies:listAgencies, e.g. in the IAM ReadOnlyAccess policy), or set HUAWEICLOUD_SDK_DOMAIN_ID and have an administrator check the agency; the key and the clock are fine (the request was signed right)",
        });
      }
      throw e;
    }
  }

  async checkRole(name: string, signal?: AbortSignal): Promise<{ exists: boolean; problem?: string }> {
    const iam = this.opts.iamEndpoint ?? "https://iam.myhuaweicloud.com";
    let domainId = this.opts.domainId;
    if (domainId === undefined) {
      const d = Domains.parse(await this.iam(() => this.api.send(iam, "GET", "IAM KeystoneQueryAccessibleDomainList", "/v3/auth/domains", { signal }), "read its account (KeystoneQueryAccessibleDomainList)"));
      domainId = d.domains[0]?.id;
      if (domainId === undefined) throw new FunctionsApiError("functiongraph", "fatal", "functiongraph_domain_unknown", "IAM named no account (domain) for these credentials", { hint: "set HUAWEICLOUD_SDK_DOMAIN_ID to your account ID (console: My Credentials)" });
    }
    const r = Agencies.parse(await this.iam(() => this.api.send(iam, "GET", `IAM KeystoneListAgencies ${name}`, "/v3.0/OS-AGENCY/agencies", { query: { domain_id: domainId, name }, signal }), "list agencies (KeystoneListAgencies)"));
    const agency = r.agencies.find((a) => a.name === name);
    if (agency === undefined) return { exists: false };
    if (agency.trust_domain_name !== FUNCTIONGRAPH_AGENCY_SERVICE) {
      return { exists: true, problem: `agency ${name} is delegated to ${agency.trust_domain_name ?? "an account"}, not to the cloud service FunctionGraph (${FUNCTIONGRAPH_AGENCY_SERVICE})` };
    }
    return { exists: true };
  }
}
