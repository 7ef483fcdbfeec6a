// A strict loopback fake of Tencent Cloud SCF (scf 2018-04-16) for `rlpipe functions deploy`. Every request must
// carry a valid TC3-HMAC-SHA256 signature for service scf (verifyTc3 of test/fakes/tione-fake.ts); answers are
// {"Response":{…,"RequestId"}}, errors {"Response":{"Error":{"Code","Message"},"RequestId"}} at HTTP 200, as the
// API does. Parameters are checked against the documented fields (scf_models.ts of tencentcloud-sdk-nodejs):
// UnknownParameter, MissingParameter, InvalidParameterValue.*; a taken name is ResourceInUse.Function, a missing
// function ResourceNotFound.Function. Creates and code updates are asynchronous like SCF's: the function is
// Creating/Updating for `settleLooks` GetFunction calls, then Active, and refuses other changes meanwhile
// (FailedOperation.*). The runtime is fixed at creation. Calls are recorded so tests can count creates.
// Triggers (ListTriggers, CreateTrigger, UpdateTrigger, DeleteTrigger; scf_models.ts): TriggerDesc is checked per
// type (http: AuthType NONE|CAM and NetConfig's two booleans, cloud.tencent.com/document/product/583/100227; cos:
// the bucket's XML-API domain as TriggerName and {event, filter:{Prefix, Suffix}}, 583/39901); a second trigger of
// the same name, or a second function URL, is ResourceInUse.Trigger; UpdateTrigger takes only timer, ckafka and http;
// DeleteTrigger of a cos trigger needs its TriggerDesc. CAM GetRole (cam 2019-01-16, signed for service cam) answers
// from `roles`, InvalidParameter.RoleNotExist (cam's errorcodes.py) for another name. `faultAfter` makes an action happen and then answers
// InternalError (the reply of a call that was acted on is lost).
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type LoopbackServer, listenLoopback } from "./loopback.js";
import { type FakeCredential, verifyTc3 } from "./tione-fake.js";
import { zipEntryNames } from "./zip-listing.js";
import { checkModel } from "./vendor-model.js";

export interface ScfFunction {
  readonly id: string;
  readonly name: string;
  readonly namespace: string;
  readonly runtime: string;
  handler: string;
  memorySize: number;
  timeout: number;
  description: string;
  env: Record<string, string>;
  code: Buffer;
  status: "Creating" | "Updating" | "Active";
  looksLeft: number;
  role?: string;
}

export interface ScfTrigger {
  readonly name: string;
  readonly type: string;
  /** The TriggerDesc as the service keeps and lists it (servedDesc): what was set, in its order, plus what it adds. */
  desc: string;
  enable: "OPEN" | "CLOSE";
  /** A function URL bound to a custom domain: DeleteTrigger refuses it (FailedOperation.DeleteTrigger.UrlUsed). */
  boundToDomain?: boolean;
}

export interface ScfCall {
  readonly action: string;
  /** The error code answered; undefined for success. */
  readonly outcome?: string;
}

const NOW = "2026-11-22 00:00:00";
const REGIONS = new Set(["ap-shanghai", "ap-guangzhou", "ap-beijing", "ap-chengdu", "ap-nanjing", "ap-singapore"]);
const RUNTIMES = new Set(["Nodejs6.10", "Nodejs8.9", "Nodejs10.15", "Nodejs12.16", "Nodejs14.18", "Nodejs16.13", "Nodejs18.15", "Python3.9", "Python3.10", "Go1", "Java8"]);
/** The actions this fake serves (their fields: the SDK's request models, checkModel). */
const SERVED = new Set(["ListTriggers", "CreateTrigger", "UpdateTrigger", "DeleteTrigger", "GetFunction", "CreateFunction", "UpdateFunctionCode", "UpdateFunctionConfiguration"]);
const MAX_UPDATE_ZIP_BYTES = 20 * 1024 * 1024;

class ApiError extends Error {
  constructor(readonly code: string, message: string) { super(message); }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

export class FakeScf {
  readonly functions = new Map<string, ScfFunction>();
  readonly calls: ScfCall[] = [];
  /** The region of the request being served (a function URL's host names it). */
  private region = "";
  /** Triggers by `<namespace>/<function>`. */
  readonly triggers = new Map<string, ScfTrigger[]>();
  /** CAM roles: name → policy document (JSON text). */
  readonly roles = new Map<string, string>();
  /** Actions to carry out and then answer InternalError, one entry each time. */
  readonly faultAfter: string[] = [];
  /** GetFunction calls a function stays Creating/Updating after a create or code update. */
  settleLooks = 1;
  private server: LoopbackServer | undefined;

  constructor(private readonly creds: readonly FakeCredential[]) {}

  static async start(creds: readonly FakeCredential[]): Promise<FakeScf> {
    const f = new FakeScf(creds);
    f.server = await listenLoopback((req, res) => f.handle(req, res));
    return f;
  }

  get endpoint(): string {
    return this.server!.endpoint;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  succeeded(action: string): number {
    return this.calls.filter((c) => c.action === action && c.outcome === undefined).length;
  }

  private key(namespace: string, name: string): string {
    return `${namespace}/${name}`;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const requestId = randomUUID();
    const action = String(req.headers["x-tc-action"] ?? "");
    const cam = String(req.headers["host"] ?? "").startsWith("cam.");
    const reply = (payload: Record<string, unknown>) => res.writeHead(200, { "Content-Type": "application/json" }).end(JSON.stringify({ Response: { ...payload, RequestId: requestId } }));
    try {
      if (req.method !== "POST" || (req.url ?? "/") !== "/") throw new ApiError("InvalidParameter", "Only POST / is supported.");
      if (req.headers["content-type"] !== "application/json") throw new ApiError("InvalidParameter", "Content-Type must be application/json.");
      verifyTc3(req, body, this.creds, Date.now(), cam ? "cam" : "scf");
      if (cam) {
        if (req.headers["x-tc-version"] !== "2019-01-16") throw new ApiError("NoSuchVersion", "The API version does not exist.");
        if (action !== "GetRole") throw new ApiError("InvalidAction", `The action ${action} does not exist.`);
        const p = JSON.parse(body.toString("utf8")) as Record<string, unknown>;
        const problem = checkModel("cam", "GetRoleRequest", p);
        if (problem?.kind === "unknown_field") throw new ApiError("UnknownParameter", `The parameter \`${problem.field}\` is not recognized.`);
        if (problem !== undefined) throw new ApiError("InvalidParameter", `${problem.message}.`);
        const name = p["RoleName"];
        if (typeof name !== "string") throw new ApiError("MissingParameter", "RoleName or RoleId is required.");
        const doc = this.roles.get(name);
        if (doc === undefined) throw new ApiError("InvalidParameter.RoleNotExist", `The role ${name} does not exist.`);
        this.calls.push({ action });
        reply({ RoleInfo: { RoleId: "4611686018427844696", RoleName: name, PolicyDocument: doc, RoleType: "user" } });
        return;
      }
      if (req.headers["x-tc-version"] !== "2018-04-16") throw new ApiError("NoSuchVersion", "The API version does not exist.");
      if (!SERVED.has(action)) throw new ApiError("InvalidAction", `The action ${action} does not exist.`);
      const region = req.headers["x-tc-region"];
      if (typeof region !== "string") throw new ApiError("MissingParameter", "The request is missing X-TC-Region.");
      if (!REGIONS.has(region)) throw new ApiError("UnsupportedRegion", `The region ${region} is not supported.`);
      let params: unknown;
      try { params = JSON.parse(body.toString("utf8")); } catch { throw new ApiError("InvalidParameter", "The body is not JSON."); }
      if (!isObj(params)) throw new ApiError("InvalidParameter", "The body is not a JSON object.");
      // The SDK's request model (tencentcloud-sdk-python-scf, test/vendor-models/scf.json): an unknown field, or one of
      // the wrong type (the models do not say which are required; each action checks those it needs).
      const problem = checkModel("scf", `${action}Request`, params);
      if (problem?.kind === "unknown_field") throw new ApiError("UnknownParameter", `The parameter \`${problem.field}\` is not recognized.`);
      if (problem !== undefined) throw new ApiError("InvalidParameterValue", `${problem.message}.`);
      this.region = region;
      const result = this.act(action, params);
      const fault = this.faultAfter.indexOf(action);
      if (fault >= 0) {
        this.faultAfter.splice(fault, 1);
        throw new ApiError("InternalError", "An internal error occurred (fault injected after the action).");
      }
      this.calls.push({ action });
      reply(result);
    } catch (e) {
      const err = e instanceof Error && typeof (e as { code?: unknown }).code === "string" ? e as Error & { code: string } : new ApiError("InternalError", String(e));
      this.calls.push({ action, outcome: err.code });
      reply({ Error: { Code: err.code, Message: err.message } });
    }
  }

  private act(action: string, p: Record<string, unknown>): Record<string, unknown> {
    const name = p["FunctionName"];
    if (typeof name !== "string") throw new ApiError("MissingParameter", "The request is missing a required parameter `FunctionName`.");
    const namespace = typeof p["Namespace"] === "string" ? p["Namespace"] : "default";
    const fn = this.functions.get(this.key(namespace, name));
    switch (action) {
      case "GetFunction": {
        if (fn === undefined) throw new ApiError("ResourceNotFound.Function", `The function ${name} does not exist.`);
        if (fn.status !== "Active" && --fn.looksLeft <= 0) fn.status = "Active";
        return {
          FunctionName: fn.name, FunctionId: fn.id, Namespace: fn.namespace, Runtime: fn.runtime, Handler: fn.handler, MemorySize: fn.memorySize,
          Timeout: fn.timeout, Description: fn.description, Status: fn.status, StatusDesc: "", CodeSize: fn.code.length, Type: "Event",
          Environment: { Variables: Object.keys(fn.env).sort().map((k) => ({ Key: k, Value: fn.env[k] })) },
        };
      }
      case "CreateFunction": {
        if (!/^[A-Za-z][A-Za-z0-9_-]{0,58}[A-Za-z0-9]$/.test(name)) throw new ApiError("InvalidParameterValue.FunctionName", "The function name is invalid.");
        if (fn !== undefined) throw new ApiError("ResourceInUse.Function", `The function ${name} already exists.`);
        const runtime = p["Runtime"];
        if (typeof runtime !== "string" || !RUNTIMES.has(runtime)) throw new ApiError("InvalidParameterValue.Runtime", `The runtime ${String(runtime)} is not supported.`);
        const handler = this.handler(p["Handler"]);
        if (!isObj(p["Code"])) throw new ApiError("MissingParameter", "The request is missing a required parameter `Code`.");
        const code = this.zip(p["Code"]["ZipFile"], handler, Infinity);
        const made: ScfFunction = {
          id: `lam-${randomUUID().slice(0, 8)}`, name, namespace, runtime, handler, memorySize: this.memory(p["MemorySize"] ?? 128), timeout: this.timeout(p["Timeout"] ?? 3),
          description: this.description(p["Description"] ?? ""), env: this.env(p["Environment"]), code, status: "Creating", looksLeft: this.settleLooks,
          ...(typeof p["Role"] === "string" ? { role: p["Role"] } : {}),
        };
        if (made.looksLeft <= 0) made.status = "Active";
        this.functions.set(this.key(namespace, name), made);
        return {};
      }
      case "UpdateFunctionCode": {
        const f = this.active(fn, name, "UpdateFunctionCode");
        const handler = p["Handler"] === undefined ? f.handler : this.handler(p["Handler"]);
        f.code = this.zip(p["ZipFile"], handler, MAX_UPDATE_ZIP_BYTES);
        f.handler = handler;
        f.status = this.settleLooks <= 0 ? "Active" : "Updating";
        f.looksLeft = this.settleLooks;
        return {};
      }
      case "UpdateFunctionConfiguration": {
        const f = this.active(fn, name, "UpdateFunctionConfiguration");
        if (p["Runtime"] !== undefined && p["Runtime"] !== f.runtime) throw new ApiError("InvalidParameterValue.Runtime", "The runtime cannot be changed.");
        if (p["MemorySize"] !== undefined) f.memorySize = this.memory(p["MemorySize"]);
        if (p["Timeout"] !== undefined) f.timeout = this.timeout(p["Timeout"]);
        if (p["Description"] !== undefined) f.description = this.description(p["Description"]);
        if (p["Environment"] !== undefined) f.env = this.env(p["Environment"]);
        if (p["Role"] !== undefined) f.role = String(p["Role"]);
        return {};
      }
      case "ListTriggers": {
        if (fn === undefined) throw new ApiError("ResourceNotFound.Function", `The function ${name} does not exist.`);
        const all = this.triggers.get(this.key(namespace, name)) ?? [];
        const offset = typeof p["Offset"] === "number" ? p["Offset"] : 0;
        const limit = typeof p["Limit"] === "number" ? p["Limit"] : 20;
        if (limit < 1 || limit > 100) throw new ApiError("InvalidParameterValue.Limit", "Limit must be 1–100.");
        return {
          TotalCount: all.length,
          Triggers: all.slice(offset, offset + limit).map((t) => ({ TriggerName: t.name, Type: t.type, TriggerDesc: t.desc, Enable: t.enable === "OPEN" ? 1 : 0, Qualifier: "$LATEST", AvailableStatus: "Available" })),
        };
      }
      case "CreateTrigger": {
        const f = this.active(fn, name, "CreateTrigger");
        const { tname, type, desc } = this.trigger(p);
        const list = this.triggers.get(this.key(namespace, name)) ?? [];
        if (list.some((t) => t.name === tname && t.type === type)) throw new ApiError("ResourceInUse.Trigger", `The trigger ${tname} already exists.`);
        if (type === "http" && list.some((t) => t.type === "http")) throw new ApiError("ResourceInUse.Trigger", "The function already has a function URL for this version.");
        const served = this.servedDesc(f, tname, type, desc);
        list.push({ name: tname, type, desc: served, enable: p["Enable"] === "CLOSE" ? "CLOSE" : "OPEN" });
        this.triggers.set(this.key(namespace, f.name), list);
        return { TriggerInfo: { TriggerName: tname, Type: type, TriggerDesc: served, ModTime: NOW, AddTime: NOW, Enable: p["Enable"] === "CLOSE" ? 0 : 1, Qualifier: "$LATEST", AvailableStatus: "Available" } };
      }
      case "UpdateTrigger": {
        const uf = this.active(fn, name, "UpdateTrigger");
        if (!["timer", "ckafka", "http"].includes(String(p["Type"]))) throw new ApiError("InvalidParameterValue.Type", "UpdateTrigger supports only timer, ckafka and http triggers.");
        const { tname, type, desc } = this.trigger(p);
        const t = (this.triggers.get(this.key(namespace, name)) ?? []).find((x) => x.name === tname && x.type === type);
        if (t === undefined) throw new ApiError("ResourceNotFound.Trigger", `The trigger ${tname} does not exist.`);
        t.desc = this.servedDesc(uf, tname, type, desc);
        if (p["Enable"] === "OPEN" || p["Enable"] === "CLOSE") t.enable = p["Enable"];
        return {};
      }
      case "DeleteTrigger": {
        if (fn === undefined) throw new ApiError("ResourceNotFound.Function", `The function ${name} does not exist.`);
        const list = this.triggers.get(this.key(namespace, name)) ?? [];
        const i = list.findIndex((x) => x.name === p["TriggerName"] && x.type === p["Type"]);
        if (i < 0) throw new ApiError("ResourceNotFound.Trigger", `The trigger ${String(p["TriggerName"])} does not exist.`);
        if (p["Type"] === "cos" && typeof p["TriggerDesc"] !== "string") throw new ApiError("MissingParameter", "Deleting a cos trigger needs its TriggerDesc.");
        if (list[i]!.boundToDomain === true) throw new ApiError("FailedOperation.DeleteTrigger.UrlUsed", "The URL is in use (bound to a custom domain) and cannot be deleted.");
        list.splice(i, 1);
        return {};
      }
      default: throw new ApiError("InvalidAction", `The action ${action} does not exist.`);
    }
  }

  /** A CreateTrigger/UpdateTrigger body's name, type and TriggerDesc, checked per type. */
  private trigger(p: Record<string, unknown>): { tname: string; type: string; desc: string } {
    const tname = p["TriggerName"];
    const type = p["Type"];
    if (typeof tname !== "string" || tname === "") throw new ApiError("MissingParameter", "The request is missing `TriggerName`.");
    if (typeof type !== "string" || !["cos", "timer", "ckafka", "http", "apigw", "cmq", "cls"].includes(type)) throw new ApiError("InvalidParameterValue.Type", `The trigger type ${String(type)} is not supported.`);
    const raw = p["TriggerDesc"];
    let d: unknown;
    try { d = JSON.parse(typeof raw === "string" ? raw : ""); } catch { throw new ApiError("InvalidParameterValue.TriggerDesc", "TriggerDesc is not JSON."); }
    const bad = (why: string) => new ApiError("InvalidParameterValue.TriggerDesc", `TriggerDesc: ${why}`);
    if (!isObj(d)) throw bad("not a JSON object");
    if (type === "http") {
      if (d["AuthType"] !== "NONE" && d["AuthType"] !== "CAM") throw bad("AuthType must be NONE or CAM");
      const net = d["NetConfig"];
      if (!isObj(net) || typeof net["EnableIntranet"] !== "boolean" || typeof net["EnableExtranet"] !== "boolean") throw bad("NetConfig needs EnableIntranet and EnableExtranet (booleans)");
    } else if (type === "cos") {
      if (!/^[a-z0-9-]+-\d+\.cos\.[a-z]+-[a-z]+\.myqcloud\.com$/.test(tname)) throw new ApiError("InvalidParameterValue.TriggerName", "A cos trigger is named by its bucket's XML-API domain (<bucket-appid>.cos.<region>.myqcloud.com).");
      const filter = d["filter"];
      if (typeof d["event"] !== "string" || !d["event"].startsWith("cos:")) throw bad("event must be a cos: event");
      if (filter !== undefined && (!isObj(filter) || typeof filter["Prefix"] !== "string" || typeof filter["Suffix"] !== "string")) throw bad("filter needs Prefix and Suffix");
    }
    return { tname, type, desc: raw as string };
  }

  /**
   * A TriggerDesc as SCF lists it, not as it was sent: its fields in the service's order, a function URL's NetConfig
   * with the URLs the service made (IntranetUrl, ExtranetUrl), a cos trigger's with the bucket's domain (bucketUrl).
   */
  private servedDesc(f: ScfFunction, tname: string, type: string, raw: string): string {
    const d = JSON.parse(raw) as Record<string, unknown>;
    if (type === "http") {
      const net = d["NetConfig"] as Record<string, unknown>;
      const host = `${f.id.replace(/^lam-/, "1250000000-")}.${this.region}.tencentscf.com`;
      return JSON.stringify({
        NetConfig: { EnableExtranet: net["EnableExtranet"], EnableIntranet: net["EnableIntranet"], ExtranetUrl: net["EnableExtranet"] === true ? `https://${host}` : "", IntranetUrl: net["EnableIntranet"] === true ? `https://${host.replace(".tencentscf.com", ".internal.tencentscf.com")}` : "" },
        AuthType: d["AuthType"],
      });
    }
    if (type === "cos") return JSON.stringify({ bucketUrl: tname, event: d["event"], filter: d["filter"] ?? { Prefix: "", Suffix: "" } });
    return raw;
  }

  /** The triggers of a function, for assertions. */
  triggersOf(name: string, namespace = "default"): ScfTrigger[] {
    return this.triggers.get(this.key(namespace, name)) ?? [];
  }

  private active(fn: ScfFunction | undefined, name: string, action: string): ScfFunction {
    if (fn === undefined) throw new ApiError("ResourceNotFound.Function", `The function ${name} does not exist.`);
    if (fn.status !== "Active") throw new ApiError(`FailedOperation.${action}`, `The function is ${fn.status}; the operation is not allowed now.`);
    return fn;
  }

  private handler(v: unknown): string {
    if (typeof v !== "string" || !/^[A-Za-z][A-Za-z0-9_-]*\.[A-Za-z][A-Za-z0-9_]*$/.test(v)) throw new ApiError("InvalidParameterValue.Handler", `The handler ${String(v)} is invalid.`);
    return v;
  }

  private zip(v: unknown, handler: string, max: number): Buffer {
    if (typeof v !== "string" || v === "") throw new ApiError("MissingParameter", "The request is missing the code (ZipFile).");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw new ApiError("InvalidParameterValue.ZipFile", "ZipFile is not base64.");
    const zip = Buffer.from(v, "base64");
    if (zip.length > max) throw new ApiError("InvalidParameterValue.ZipFile", "ZipFile is larger than 20 MB.");
    const names = zipEntryNames(zip);
    if (names === undefined) throw new ApiError("InvalidParameterValue.ZipFile", "ZipFile is not a zip file.");
    const file = `${handler.split(".")[0]}.js`;
    if (!names.includes(file)) throw new ApiError("InvalidParameterValue.Handler", `The code has no ${file} at its root for handler ${handler}.`);
    return zip;
  }

  private memory(v: unknown): number {
    if (typeof v !== "number" || !(v === 64 || (v >= 128 && v <= 3072 && v % 128 === 0))) throw new ApiError("InvalidParameterValue.MemorySize", `MemorySize ${String(v)} is invalid.`);
    return v;
  }

  private timeout(v: unknown): number {
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 900) throw new ApiError("InvalidParameterValue.Timeout", `Timeout ${String(v)} is invalid.`);
    return v;
  }

  private description(v: unknown): string {
    if (typeof v !== "string" || v.length > 1000) throw new ApiError("InvalidParameterValue.Description", "The description is invalid.");
    return v;
  }

  private env(v: unknown): Record<string, string> {
    if (v === undefined) return {};
    if (!isObj(v) || !Array.isArray(v["Variables"])) throw new ApiError("InvalidParameterValue.Environment", "Environment must be {Variables: [...]}.");
    const out: Record<string, string> = {};
    for (const x of v["Variables"] as unknown[]) {
      if (!isObj(x) || typeof x["Key"] !== "string" || typeof x["Value"] !== "string" || x["Key"] === "" || x["Value"] === "") {
        throw new ApiError("InvalidParameterValue.Environment", "Each variable needs a non-empty Key and Value.");
      }
      out[x["Key"]] = x["Value"];
    }
    return out;
  }
}
