// A strict loopback fake of the FunctionGraph function-management API (v2) on 127.0.0.1, port 0. Every request
// must carry a valid SDK-HMAC-SHA256 signature (test/fakes/huawei-verify.ts) and the right project (path and
// X-Project-Id), or it gets API Gateway's 401 APIGW.0301. Bodies are checked against the documented fields with
// FunctionGraph's error codes (support.huaweicloud.com/api-functiongraph/ErrorCode.html): FSS.1002 name, FSS.1003
// handler, FSS.1005 runtime, FSS.1007 memory, FSS.1008 timeout, FSS.1009 environment variables, FSS.1011 code
// (not a zip, or no handler file at its root), FSS.0409 a name taken in the application, FSS.1051 (404) no such
// function, FSS.1001 a bad query. Calls are recorded so tests can count creates; faults can be injected.
// Triggers (functiongraph_06_0119/0122/0121: list, create, delete; UpdateTrigger is status-only and not served):
// APIG and OBS event_data checked field by field (TriggerEventDataRequestBody), the APIG group must be one of
// `apigGroups`; a second route with the same group, method and path (any function) or a second OBS trigger on an
// overlapping bucket prefix is FSS.0409 (409). A create body is checked against the SDK's own model
// (CreateFunctionTriggerRequestBody of huaweicloudsdkfunctiongraph 3.1.219, test/vendor-models/functiongraph.json):
// an unknown field, a wrong type or a value outside its enum is FSS.0400; beyond that release's enums it takes what
// the current API page documents: trigger_type_code DEDICATEDGATEWAY (a route on the dedicated gateway `instance_id`,
// one of `apigInstances`) and OBS events in the s3:…:* form. A listing is the service's, not the request: event_data
// with api_id, api_name, invoke_url and sl_domain added, func_info extended (function_urn, invocation_type,
// version), OBS events as s3:…:*, fields in another order. `sharedGateway: false` is an account without the shared
// gateway (new accounts): an APIG trigger without an instance is refused. IAM (same server; IAM_ENDPOINT): GET /v3/auth/domains and
// GET /v3.0/OS-AGENCY/agencies?domain_id=&name= answer from `agencies`.
import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type LoopbackServer, listenLoopback } from "./loopback.js";
import { sdkHmacProblem } from "./huawei-verify.js";
import { zipEntryNames } from "./zip-listing.js";
import { checkModel } from "./vendor-model.js";

/** The s3:…:* event names the API page documents, by the short names of the SDK's enum. */
const S3_EVENTS: Readonly<Record<string, string>> = {
  ObjectCreated: "s3:ObjectCreated:*", Put: "s3:ObjectCreated:Put", Post: "s3:ObjectCreated:Post", Copy: "s3:ObjectCreated:Copy",
  CompleteMultipartUpload: "s3:ObjectCreated:CompleteMultipartUpload", ObjectRemoved: "s3:ObjectRemoved:*", Delete: "s3:ObjectRemoved:Delete",
  DeleteMarkerCreated: "s3:ObjectRemoved:DeleteMarkerCreated",
};

export interface FakeFunctionGraphOptions {
  readonly ak: string;
  readonly sk: string;
  readonly securityToken?: string;
  readonly projectId: string;
  readonly region: string;
}

export interface FgFunction {
  readonly urn: string;
  readonly name: string;
  readonly app: string;
  runtime: string;
  handler: string;
  memorySize: number;
  timeout: number;
  description: string;
  userData: Record<string, string>;
  encryptedUserData: Record<string, string>;
  xrole?: string;
  code: Buffer;
  lastModified: string;
}

export interface FgCall {
  /** ListFunctions, ShowFunctionConfig, CreateFunction, UpdateFunctionCode, UpdateFunctionConfig, or the route. */
  readonly op: string;
  readonly status: number;
  readonly code?: string;
}

export interface FgTrigger {
  readonly id: string;
  readonly urn: string;
  readonly type: string;
  readonly eventData: Record<string, unknown>;
}

/** "reset-after-create": make the function, then drop the connection (the reply is lost). */
export type FgCreateFault = "reset-after-create" | "503-before-create";

const RUNTIMES = new Set(["Node.js6.10", "Node.js8.10", "Node.js10.16", "Node.js12.13", "Node.js14.18", "Node.js16.17", "Node.js18.15", "Node.js20.15", "Python3.9", "Python3.10", "Java11"]);
const MEMORY = new Set([128, 256, 512, 768, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096]);
const MAX_ZIP_BYTES = 40 * 1024 * 1024;

class Reject extends Error {
  constructor(readonly status: number, readonly code: string, message: string) { super(message); }
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

function envMap(field: string, v: unknown): Record<string, string> {
  if (v === undefined || v === "") return {};
  if (typeof v !== "string") throw new Reject(400, "FSS.1009", `Invalid function UserData: ${field} must be a JSON string.`);
  let parsed: unknown;
  try { parsed = JSON.parse(v); } catch { throw new Reject(400, "FSS.1009", `Invalid function UserData: ${field} is not JSON.`); }
  if (!isObj(parsed) || Object.entries(parsed).some(([k, x]) => typeof x !== "string" || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))) {
    throw new Reject(400, "FSS.1009", `Invalid function UserData: ${field} must map variable names to strings.`);
  }
  return parsed as Record<string, string>;
}

export class FakeFunctionGraph {
  readonly functions = new Map<string, FgFunction>();
  readonly calls: FgCall[] = [];
  readonly createFaults: FgCreateFault[] = [];
  readonly triggers = new Map<string, FgTrigger>();
  /** Faults of CreateFunctionTrigger, one per call. */
  readonly triggerFaults: FgCreateFault[] = [];
  readonly apigGroups = new Set<string>();
  /** Dedicated API gateways (instance ids) of the account. */
  readonly apigInstances = new Set<string>();
  /** Whether the credentials' user may list agencies (IAM answers 403 IAM.0003 otherwise). */
  mayListAgencies = true;
  /** Whether the account has the shared API gateway (accounts made after its discontinuation do not). */
  sharedGateway = true;
  readonly agencies: { name: string; trust_domain_name: string }[] = [];
  readonly domainId = "d0a1b2c3d4e5f60718293a4b5c6d7e8f";
  private server: LoopbackServer | undefined;

  constructor(readonly opts: FakeFunctionGraphOptions) {}

  static async start(opts: FakeFunctionGraphOptions): Promise<FakeFunctionGraph> {
    const f = new FakeFunctionGraph(opts);
    f.server = await listenLoopback((req, res) => f.handle(req, res));
    return f;
  }

  get endpoint(): string {
    return this.server!.endpoint;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  /** Calls of one operation that succeeded. */
  succeeded(op: string): number {
    return this.calls.filter((c) => c.op === op && c.status < 300).length;
  }

  triggersOf(name: string): FgTrigger[] {
    const urns = new Set(this.byName(name).map((f) => f.urn));
    return [...this.triggers.values()].filter((t) => urns.has(t.urn));
  }

  byName(name: string): FgFunction[] {
    return [...this.functions.values()].filter((f) => f.name === name);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    let op = `${req.method} ${req.url}`;
    try {
      const why = sdkHmacProblem(req, body, { ak: this.opts.ak, sk: this.opts.sk, securityToken: this.opts.securityToken, nowMs: Date.now() });
      if (why !== undefined) throw new Reject(401, "APIGW.0301", `Incorrect IAM authentication information: ${why}`);
      const url = new URL(req.url ?? "/", "http://fake");
      const parts = url.pathname.split("/").slice(1).map((p) => decodeURIComponent(p));
      if (parts[0] === "v3" || parts[0] === "v3.0") { op = `IAM ${url.pathname}`; return this.reply(res, op, 200, this.iam(url)); }
      if (parts[0] === "v2" && parts[2] === "fgs" && parts[3] === "triggers") {
        if (parts[1] !== this.opts.projectId || req.headers["x-project-id"] !== this.opts.projectId) throw new Reject(401, "APIGW.0301", "Incorrect IAM authentication information: the project does not match the credentials");
        return this.triggerRoute(req, res, parts.slice(4), body, (o) => { op = o; });
      }
      if (parts[0] !== "v2" || parts[2] !== "fgs" || parts[3] !== "functions") throw new Reject(404, "APIGW.0101", "The API does not exist or has not been published in the environment");
      if (parts[1] !== this.opts.projectId || req.headers["x-project-id"] !== this.opts.projectId) throw new Reject(401, "APIGW.0301", "Incorrect IAM authentication information: the project does not match the credentials");
      const rest = parts.slice(4);
      if (req.method === "GET" && rest.length === 0) { op = "ListFunctions"; return this.reply(res, op, 200, this.list(url)); }
      if (req.method === "POST" && rest.length === 0) { op = "CreateFunction"; return this.create(req, res, body); }
      if (rest.length === 2) {
        const fn = this.functions.get(rest[0]!);
        op = req.method === "GET" && rest[1] === "config" ? "ShowFunctionConfig" : req.method === "PUT" && rest[1] === "code" ? "UpdateFunctionCode" : req.method === "PUT" && rest[1] === "config" ? "UpdateFunctionConfig" : op;
        if (op.includes(" ")) throw new Reject(404, "APIGW.0101", "The API does not exist or has not been published in the environment");
        if (fn === undefined) throw new Reject(404, "FSS.1051", "Not found the function");
        if (op === "ShowFunctionConfig") return this.reply(res, op, 200, this.view(fn));
        const b = this.json(body);
        this.checkModel(op === "UpdateFunctionCode" ? "UpdateFunctionCodeRequestBody" : "UpdateFunctionConfigRequestBody", b);
        if (op === "UpdateFunctionCode") {
          fn.code = this.code(b, fn.handler);
          fn.lastModified = new Date().toISOString();
          return this.reply(res, op, 200, this.view(fn));
        }
        this.checkConfig(b);
        Object.assign(fn, {
          runtime: b["runtime"], handler: b["handler"], memorySize: b["memory_size"], timeout: b["timeout"],
          description: typeof b["description"] === "string" ? b["description"] : fn.description,
          userData: envMap("user_data", b["user_data"]), encryptedUserData: envMap("encrypted_user_data", b["encrypted_user_data"]),
          lastModified: new Date().toISOString(), ...(typeof b["xrole"] === "string" ? { xrole: b["xrole"] } : {}),
        });
        if (zipEntryNames(fn.code)?.includes(`${fn.handler.split(".")[0]}.js`) !== true) throw new Reject(400, "FSS.1003", "Invalid function handler: the code has no such file.");
        return this.reply(res, op, 200, this.view(fn));
      }
      throw new Reject(404, "APIGW.0101", "The API does not exist or has not been published in the environment");
    } catch (e) {
      if (e instanceof Reject) this.reply(res, op, e.status, { error_code: e.code, error_msg: e.message }, e.code);
      else this.reply(res, op, 500, { error_code: "FSS.0500", error_msg: `Internal server error. (${(e as Error).message})` }, "FSS.0500");
    }
  }

  private iam(url: URL): unknown {
    if (url.pathname === "/v3/auth/domains") return { domains: [{ id: this.domainId, name: "rlpipe-account", enabled: true }] };
    if (url.pathname !== "/v3.0/OS-AGENCY/agencies") throw new Reject(404, "APIGW.0101", "The API does not exist or has not been published in the environment");
    // The query against the SDK's ListAgenciesRequest (huaweicloudsdkiam): only its parameters, domain_id required
    // (a 400; the SDK carries no IAM error list, so the code is this fake's).
    const query: Record<string, unknown> = Object.fromEntries(url.searchParams);
    for (const k of ["page", "per_page"]) if (typeof query[k] === "string" && /^\d+$/.test(query[k] as string)) query[k] = Number(query[k]);
    const problem = checkModel("iam", "ListAgenciesRequest", query);
    if (problem !== undefined) throw new Reject(400, "IAM.0007", `Request parameter validation failed: ${problem.message}.`);
    if (url.searchParams.get("domain_id") !== this.domainId || !this.mayListAgencies) throw new Reject(403, "IAM.0003", "Policy doesn't allow iam:agencies:listAgencies to be performed.");
    const name = url.searchParams.get("name");
    return { agencies: this.agencies.filter((a) => name === null || a.name === name).map((a) => ({ ...a, id: `ag-${a.name}`, domain_id: this.domainId, duration: "FOREVER" })) };
  }

  private triggerRoute(req: IncomingMessage, res: ServerResponse, rest: string[], body: Buffer, setOp: (op: string) => void): void {
    const urn = rest[0] ?? "";
    const op = req.method === "GET" && rest.length === 1 ? "ListFunctionTriggers" : req.method === "POST" && rest.length === 1 ? "CreateFunctionTrigger"
      : req.method === "DELETE" && rest.length === 3 ? "DeleteFunctionTrigger" : `${req.method} triggers`;
    setOp(op);
    if (op.includes(" ")) throw new Reject(404, "APIGW.0101", "The API does not exist or has not been published in the environment");
    if (!this.functions.has(urn)) throw new Reject(404, "FSS.1051", "Error getting associated function");
    if (op === "ListFunctionTriggers") {
      const items = [...this.triggers.values()].filter((t) => t.urn === urn).map((t) => ({
        trigger_id: t.id, trigger_type_code: t.type, trigger_status: "ACTIVE", event_data: this.served(t), last_updated_time: "2026-11-22T00:00:00+08:00", created_time: "2026-11-22T00:00:00+08:00",
      }));
      return this.reply(res, op, 200, items);
    }
    if (op === "DeleteFunctionTrigger") {
      const t = this.triggers.get(rest[2]!);
      if (t === undefined || t.urn !== urn || t.type !== rest[1]) throw new Reject(404, "FSS.0404", "not found");
      this.triggers.delete(t.id);
      res.writeHead(204).end();
      this.calls.push({ op, status: 204 });
      return;
    }
    const fault = this.triggerFaults.shift();
    if (fault === "503-before-create") { this.reply(res, op, 503, { error_code: "FSS.0503", error_msg: "Service unavailable." }, "FSS.0503"); return; }
    const b = this.json(body);
    const problem = checkModel("functiongraph", "CreateFunctionTriggerRequestBody", b, { extraEnum: { trigger_type_code: ["DEDICATEDGATEWAY"], "event_data.events[]": Object.values(S3_EVENTS) } });
    if (problem !== undefined) throw new Reject(400, "FSS.0400", `Invalid parameter: ${problem.message}.`);
    const type = b["trigger_type_code"];
    if (type !== "APIG" && type !== "DEDICATEDGATEWAY" && type !== "OBS" && type !== "TIMER") throw new Reject(400, "FSS.0400", "Invalid parameter: trigger_type_code.");
    if (b["trigger_status"] !== undefined && b["trigger_status"] !== "ACTIVE" && b["trigger_status"] !== "DISABLED") throw new Reject(400, "FSS.0400", "Invalid parameter: trigger_status.");
    const data = b["event_data"];
    if (!isObj(data)) throw new Reject(400, "FSS.0400", "Invalid parameter: event_data must be an object.");
    const bad = (field: string) => new Reject(400, "FSS.0400", `Invalid parameter: event_data.${field}.`);
    const others = [...this.triggers.values()].filter((t) => t.type === type);
    if (type === "DEDICATEDGATEWAY" || type === "APIG") {
      if (type === "DEDICATEDGATEWAY" && (typeof data["instance_id"] !== "string" || !this.apigInstances.has(data["instance_id"]))) throw new Reject(404, "APIG.3030", `The instance ${String(data["instance_id"])} does not exist.`);
      if (type === "APIG" && data["instance_id"] === undefined && !this.sharedGateway) throw new Reject(400, "FSS.0400", "Invalid parameter: this account has no shared API gateway; create the trigger on a dedicated gateway (DEDICATEDGATEWAY with instance_id).");
      if (typeof data["name"] !== "string" || !/^[A-Za-z][A-Za-z0-9_]{2,63}$/.test(data["name"])) throw bad("name");
      if (typeof data["group_id"] !== "string" || !this.apigGroups.has(data["group_id"])) throw new Reject(404, "APIG.3002", `API group ${String(data["group_id"])} does not exist.`);
      if (typeof data["path"] !== "string" || !/^\/[A-Za-z0-9_\-/.{}+]*$/.test(data["path"])) throw bad("path");
      if (!["ANY", "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"].includes(String(data["req_method"]))) throw bad("req_method");
      if (!["NORMAL", "SWA"].includes(String(data["match_mode"]))) throw bad("match_mode");
      if (!["NONE", "IAM", "APP"].includes(String(data["auth"]))) throw bad("auth");
      if (!["HTTP", "HTTPS"].includes(String(data["protocol"]))) throw bad("protocol");
      if (typeof data["env_id"] !== "string" || data["env_id"] === "") throw bad("env_id");
      if (data["type"] !== 1 && data["type"] !== 2) throw bad("type");
      const timeout = isObj(data["func_info"]) ? data["func_info"]["timeout"] : undefined;
      if (typeof timeout !== "number" || timeout < 1 || timeout > 60000) throw bad("func_info.timeout");
      if (others.some((t) => t.eventData["group_id"] === data["group_id"] && (t.eventData["name"] === data["name"]
        || (t.eventData["path"] === data["path"] && (t.eventData["req_method"] === data["req_method"] || t.eventData["req_method"] === "ANY" || data["req_method"] === "ANY"))))) {
        throw new Reject(409, "FSS.0409", "The specified resource already exists.");
      }
    } else if (type === "OBS") {
      if (typeof data["bucket"] !== "string" || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(data["bucket"])) throw bad("bucket");
      if (!Array.isArray(data["events"]) || data["events"].length === 0) throw bad("events");
      if (data["prefix"] !== undefined && typeof data["prefix"] !== "string") throw bad("prefix");
      const prefix = String(data["prefix"] ?? "");
      if (others.some((t) => t.eventData["bucket"] === data["bucket"] && (String(t.eventData["prefix"] ?? "").startsWith(prefix) || prefix.startsWith(String(t.eventData["prefix"] ?? ""))))) {
        throw new Reject(409, "FSS.0409", "The specified resource already exists.");
      }
    }
    const t: FgTrigger = { id: randomUUID(), urn, type, eventData: data };
    this.triggers.set(t.id, t);
    if (fault === "reset-after-create") {
      this.calls.push({ op, status: 201, code: "fault:reset-after-create" });
      req.socket.destroy();
      return;
    }
    this.reply(res, op, 201, { trigger_id: t.id, trigger_type_code: type, trigger_status: "ACTIVE", event_data: this.served(t), created_time: "2026-11-22T00:00:00+08:00", last_updated_time: "2026-11-22T00:00:00+08:00" });
  }

  /** A trigger's event_data as the service lists it (TriggerEventDataResponseBody): what it adds, in its own order. */
  private served(t: FgTrigger): Record<string, unknown> {
    const d = t.eventData;
    if (t.type === "OBS") {
      const events = (d["events"] as unknown[]).map((e) => (typeof e === "string" ? S3_EVENTS[e] ?? e : e));
      return { events, bucket: d["bucket"], name: d["name"], prefix: d["prefix"] ?? "", suffix: d["suffix"] ?? "" };
    }
    if (t.type !== "APIG" && t.type !== "DEDICATEDGATEWAY") return { ...d };
    const out: Record<string, unknown> = Object.fromEntries(Object.entries(d).reverse());
    const apiId = createHash("sha256").update(t.id).digest("hex").slice(0, 32);
    const fi = d["func_info"] as Record<string, unknown>;
    out["func_info"] = { version: "latest", timeout: fi["timeout"], invocation_type: "sync", function_urn: `${t.urn}:latest` };
    out["api_id"] = apiId;
    out["api_name"] = d["name"];
    out["sl_domain"] = `${String(d["group_id"]).slice(0, 8)}.apic.${this.opts.region}.huaweicloudapis.com`;
    out["invoke_url"] = `https://${out["sl_domain"] as string}${String(d["path"])}`;
    out["triggerid"] = t.id;
    return out;
  }

  private reply(res: ServerResponse, op: string, status: number, body: unknown, code?: string): void {
    this.calls.push({ op, status, ...(code === undefined ? {} : { code }) });
    send(res, status, body);
  }

  private json(body: Buffer): Record<string, unknown> {
    let b: unknown;
    try { b = JSON.parse(body.toString("utf8")); } catch { throw new Reject(406, "FSS.0406", "Not acceptable: the body is not JSON."); }
    if (!isObj(b)) throw new Reject(406, "FSS.0406", "Not acceptable: the body is not a JSON object.");
    return b;
  }

  private list(url: URL): unknown {
    const marker = Number(url.searchParams.get("marker") ?? "0");
    const maxitems = Number(url.searchParams.get("maxitems") ?? "400");
    if (!Number.isInteger(marker) || marker < 0 || !Number.isInteger(maxitems) || maxitems < 1 || maxitems > 400) throw new Reject(400, "FSS.1001", "Invalid query parameter.");
    const all = [...this.functions.values()].sort((a, b) => a.urn.localeCompare(b.urn));
    const page = all.slice(marker, marker + maxitems);
    return { functions: page.map((f) => this.view(f)), next_marker: marker + page.length, count: all.length };
  }

  private view(f: FgFunction): Record<string, unknown> {
    return {
      func_urn: f.urn, func_name: f.name, domain_id: "domain", namespace: this.opts.projectId, project_name: this.opts.region, package: f.app,
      runtime: f.runtime, timeout: f.timeout, handler: f.handler, memory_size: f.memorySize, code_type: "zip", code_filename: "index.zip",
      code_size: f.code.length, digest: createHash("sha512").update(f.code).digest("hex"), version: "latest", description: f.description,
      // Secrets are not shown back: only that there are some.
      user_data: JSON.stringify(f.userData), encrypted_user_data: Object.keys(f.encryptedUserData).length === 0 ? "" : "******",
      last_modified: f.lastModified, type: "v2",
    };
  }

  private code(b: Record<string, unknown>, handler: string): Buffer {
    if (b["code_type"] !== "zip") throw new Reject(400, "FSS.1006", "Invalid function code entry mode.");
    const file = isObj(b["func_code"]) ? b["func_code"]["file"] : undefined;
    if (typeof file !== "string" || file === "") throw new Reject(400, "FSS.1012", "The function code must be configured.");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(file)) throw new Reject(400, "FSS.1011", "Invalid function code: not base64.");
    const zip = Buffer.from(file, "base64");
    if (zip.length > MAX_ZIP_BYTES) throw new Reject(413, "FSS.0413", "The request body is too large.");
    const names = zipEntryNames(zip);
    if (names === undefined) throw new Reject(400, "FSS.1011", "Invalid function code: not a zip file.");
    if (!names.includes(`${handler.split(".")[0]}.js`)) throw new Reject(400, "FSS.1011", `Invalid function code: no ${handler.split(".")[0]}.js at the root of the zip.`);
    return zip;
  }

  /** A body against the SDK's request model (unknown field, missing required one, wrong type or enum): FSS.0400. */
  private checkModel(model: string, b: Record<string, unknown>): void {
    const problem = checkModel("functiongraph", model, b);
    if (problem !== undefined) throw new Reject(400, "FSS.0400", `Invalid parameter: ${problem.message}.`);
  }

  private checkConfig(b: Record<string, unknown>): void {
    const name = b["func_name"];
    if (typeof name !== "string" || !/^[A-Za-z][A-Za-z0-9_-]{0,59}$/.test(name)) throw new Reject(400, "FSS.1002", "Invalid function name.");
    if (typeof b["handler"] !== "string" || !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_]+$/.test(b["handler"])) throw new Reject(400, "FSS.1003", "Invalid function handler.");
    if (typeof b["runtime"] !== "string" || !RUNTIMES.has(b["runtime"])) throw new Reject(400, "FSS.1005", "Invalid runtime.");
    if (typeof b["memory_size"] !== "number" || !MEMORY.has(b["memory_size"])) throw new Reject(400, "FSS.1007", "Invalid function memory.");
    if (typeof b["timeout"] !== "number" || !Number.isInteger(b["timeout"]) || b["timeout"] < 3 || b["timeout"] > 900) throw new Reject(400, "FSS.1008", "Invalid function timeout.");
    if (b["description"] !== undefined && (typeof b["description"] !== "string" || b["description"].length > 512)) throw new Reject(400, "FSS.0400", "Invalid parameter: description.");
    envMap("user_data", b["user_data"]);
    envMap("encrypted_user_data", b["encrypted_user_data"]);
  }

  private create(req: IncomingMessage, res: ServerResponse, body: Buffer): void {
    const fault = this.createFaults.shift();
    if (fault === "503-before-create") { this.reply(res, "CreateFunction", 503, { error_code: "FSS.0503", error_msg: "Service unavailable." }, "FSS.0503"); return; }
    const b = this.json(body);
    this.checkModel("CreateFunctionRequestBody", b);
    this.checkConfig(b);
    const app = b["package"];
    if (typeof app !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(app)) throw new Reject(400, "FSS.1004", "Invalid Package (function app).");
    const name = b["func_name"] as string;
    if ([...this.functions.values()].some((f) => f.name === name && f.app === app)) throw new Reject(409, "FSS.0409", "The specified resource already exists.");
    const code = this.code(b, b["handler"] as string);
    const fn: FgFunction = {
      urn: `urn:fss:${this.opts.region}:${this.opts.projectId}:function:${app}:${name}:latest`, name, app,
      runtime: b["runtime"] as string, handler: b["handler"] as string, memorySize: b["memory_size"] as number, timeout: b["timeout"] as number,
      description: typeof b["description"] === "string" ? b["description"] : "",
      userData: envMap("user_data", b["user_data"]), encryptedUserData: envMap("encrypted_user_data", b["encrypted_user_data"]),
      code, lastModified: new Date().toISOString(), ...(typeof b["xrole"] === "string" ? { xrole: b["xrole"] } : {}),
    };
    this.functions.set(fn.urn, fn);
    if (fault === "reset-after-create") {
      this.calls.push({ op: "CreateFunction", status: 200, code: "fault:reset-after-create" });
      req.socket.destroy();
      return;
    }
    this.reply(res, "CreateFunction", 200, { ...this.view(fn), func_id: randomUUID() });
  }
}
