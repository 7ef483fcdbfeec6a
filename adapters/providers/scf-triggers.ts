// SCF triggers and the execution role, for `rlpipe functions deploy` (scf 2018-04-16 and cam 2019-01-16, TC3-signed
// through the same CommonClient as the functions):
//   ListTriggers {FunctionName, Namespace, Offset, Limit} → Triggers[{TriggerName, Type, TriggerDesc, Enable}]
//   CreateTrigger {FunctionName, Namespace, TriggerName, Type, TriggerDesc (JSON text), Enable}   (583/18589)
//   UpdateTrigger — only Type timer, ckafka and http (scf_models.ts UpdateTriggerRequest), so a changed COS trigger
//     is deleted (DeleteTrigger, whose TriggerDesc a COS trigger needs) and created again.
// Type "http" is a function URL: TriggerDesc {AuthType: NONE|CAM, NetConfig: {EnableIntranet, EnableExtranet}}
// (cloud.tencent.com/document/product/583/100227); Type "cos" is named by the bucket's XML-API domain
// (<bucket-appid>.cos.<region>.myqcloud.com) with TriggerDesc {event, filter: {Prefix, Suffix}} (583/39901, 583/34880).
// A name already bound is ResourceInUse.Trigger ("This TriggerName already exists", the SDKs' SCF error list).
// A version or alias has one function URL, whatever it is named (one made in the console included), so rlpipe's is
// "the function's http trigger": found by its type, updated in place under the name it has, never deleted (a URL
// bound to a custom domain cannot be: FailedOperation.DeleteTrigger.UrlUsed). ListTriggers gives a URL's
// TriggerDesc back with NetConfig.IntranetUrl/ExtranetUrl and a cos trigger's with bucketUrl added
// (core/packaging/triggers.ts compares only what rlpipe set).
// The role: CAM GetRole {RoleName} → RoleInfo.PolicyDocument (cloud.tencent.com/document/product/598/36221); SCF can
// take a role whose policy trusts the service scf.qcloud.com.
import type { DeployedTrigger, TriggerSpec, WantedTrigger } from "../../core/packaging/triggers.js";
import { type DeployedFunction, FunctionsApiError, type TriggersApi } from "./functions-api.js";

/** What this module needs of the SCF client (scf-functions.ts), without importing it. */
export interface ScfCaller {
  call<T>(action: string, params: object, signal: AbortSignal | undefined): Promise<T>;
  camCall<T>(action: string, params: object, signal: AbortSignal | undefined): Promise<T>;
}

export const SCF_ROLE_SERVICE = "scf.qcloud.com";
const PAGE = 100;
/** The key of a function's URL (one per version), whatever the trigger is named. */
const FUNCTION_URL = "function URL";
/** The name rlpipe gives a function URL it creates. */
const FUNCTION_URL_NAME = "rlpipe-url";

interface TriggerItem { TriggerName?: string; Type?: string; TriggerDesc?: string; Enable?: number }

const parsedDesc = (s: string | undefined): Record<string, unknown> => {
  try { const p = JSON.parse(s ?? "") as unknown; return typeof p === "object" && p !== null && !Array.isArray(p) ? p as Record<string, unknown> : {}; } catch { return {}; }
};

export class ScfTriggers implements TriggersApi {
  constructor(private readonly api: ScfCaller, private readonly opts: { readonly namespace: string; readonly region: string }) {}

  spec(fn: DeployedFunction, wanted: WantedTrigger): TriggerSpec {
    if (wanted.kind === "upload") {
      const key = `${wanted.bucket}.cos.${this.opts.region}.myqcloud.com`;
      return { type: "cos", key, config: { event: "cos:ObjectCreated:*", filter: { Prefix: wanted.prefix, Suffix: "" } }, label: `cos ObjectCreated cos://${wanted.bucket}/${wanted.prefix}` };
    }
    // A function URL on the public network; the functions check their own token or secret.
    return { type: "http", key: FUNCTION_URL, config: { AuthType: "NONE", NetConfig: { EnableIntranet: false, EnableExtranet: true } }, label: "function URL (public, AuthType NONE)" };
  }

  async list(fn: DeployedFunction, signal?: AbortSignal): Promise<DeployedTrigger[]> {
    const out: DeployedTrigger[] = [];
    for (let offset = 0; ; offset += PAGE) {
      const r = await this.api.call<{ Triggers?: TriggerItem[]; TotalCount?: number }>("ListTriggers", { FunctionName: fn.name, Namespace: this.opts.namespace, Offset: offset, Limit: PAGE }, signal);
      const page = r.Triggers ?? [];
      for (const t of page) out.push({ id: t.TriggerName ?? "", type: t.Type ?? "", key: t.Type === "http" ? FUNCTION_URL : t.TriggerName, config: parsedDesc(t.TriggerDesc) });
      if (page.length < PAGE || (r.TotalCount !== undefined && offset + page.length >= r.TotalCount)) return out;
    }
  }

  private body(fn: DeployedFunction, name: string, spec: TriggerSpec): Record<string, unknown> {
    return { FunctionName: fn.name, Namespace: this.opts.namespace, TriggerName: name, Type: spec.type, TriggerDesc: JSON.stringify(spec.config), Enable: "OPEN" };
  }

  async create(fn: DeployedFunction, spec: TriggerSpec, signal?: AbortSignal): Promise<void> {
    await this.api.call("CreateTrigger", this.body(fn, spec.key === FUNCTION_URL ? FUNCTION_URL_NAME : spec.key, spec), signal);
  }

  canUpdate(type: string): boolean {
    return type === "http" || type === "timer" || type === "ckafka";
  }

  async update(fn: DeployedFunction, deployed: DeployedTrigger, spec: TriggerSpec, signal?: AbortSignal): Promise<void> {
    await this.api.call("UpdateTrigger", this.body(fn, deployed.id, spec), signal);
  }

  async delete(fn: DeployedFunction, deployed: DeployedTrigger, signal?: AbortSignal): Promise<void> {
    try {
      await this.api.call("DeleteTrigger", {
        FunctionName: fn.name, Namespace: this.opts.namespace, TriggerName: deployed.id, Type: deployed.type,
        ...(deployed.type === "cos" ? { TriggerDesc: JSON.stringify(deployed.config) } : {}),
      }, signal);
    } catch (e) {
      if (e instanceof FunctionsApiError && e.kind === "not_found") return; // already gone (a repeated delete)
      throw e;
    }
  }

  async checkRole(name: string, signal?: AbortSignal): Promise<{ exists: boolean; problem?: string }> {
    let doc: string | undefined;
    try {
      const r = await this.api.camCall<{ RoleInfo?: { RoleName?: string; PolicyDocument?: string } }>("GetRole", { RoleName: name }, signal);
      doc = r.RoleInfo?.PolicyDocument;
    } catch (e) {
      if (e instanceof FunctionsApiError && (e.kind === "not_found" || /RoleNotExist/.test(e.platformCode ?? ""))) return { exists: false };
      throw e;
    }
    const services = JSON.stringify(parsedDesc(doc)["statement"] ?? []);
    if (!services.includes(SCF_ROLE_SERVICE)) return { exists: true, problem: `role ${name} does not trust the service ${SCF_ROLE_SERVICE} (its policy's principal), so SCF cannot take it` };
    return { exists: true };
  }
}
