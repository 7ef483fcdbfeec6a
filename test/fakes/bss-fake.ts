// A strict loopback fake of Huawei Cloud BSS's pay-per-use price inquiry, ListOnDemandResourceRatings
// (POST /v2/bills/ratings/on-demand-resources, support.huaweicloud.com/api-oce/bcloud_01001.html), on 127.0.0.1.
// Every request must carry a valid SDK-HMAC-SHA256 signature (huawei-verify.ts) or it gets API Gateway's
// APIGW.0301 and 401. Bodies are checked against the documented request (project_id ≤ 64 characters, 1–100
// product_infos with unique ids and the required fields) and refused with the documented codes: CBC.0100 bad
// parameter, CBC.99006006 product not found (service type, resource type, spec and region must match a product),
// CBC.99006050 a usage unit other than hours, CBC.99006074 an unknown usage factor, CBC.0151 a project that is
// not the account's. Prices come from a table in yuan per hour of one unit; the answer multiplies by usage_value
// and subscription_num, applies the account's discount, and reports measure_id 1 (yuan) and currency CNY.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type LoopbackServer, listenLoopback } from "./loopback.js";
import { sdkHmacProblem } from "./huawei-verify.js";

export interface FakeBssProduct {
  readonly cloud_service_type: string;
  readonly resource_type: string;
  readonly resource_spec: string;
  readonly region: string;
  /** List price in yuan per hour of one unit. */
  readonly yuanPerHour: number;
}

export interface FakeBssOptions {
  readonly ak: string;
  readonly sk: string;
  readonly securityToken?: string;
  /** The projects of the account (a request for another one is refused with CBC.0151). */
  readonly projectIds: readonly string[];
  readonly products: readonly FakeBssProduct[];
  /** The account's discount (0.1 = 10 % off the list price). */
  readonly discount?: number;
  readonly nowMs?: () => number;
}

class Reject extends Error {
  constructor(readonly status: number, readonly code: string, msg: string) { super(msg); }
}

const REQUIRED = ["id", "cloud_service_type", "resource_type", "resource_spec", "region", "usage_factor", "usage_value", "usage_measure_id", "subscription_num"] as const;
const OPTIONAL = ["available_zone", "resource_size", "size_measure_id"] as const;
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const round = (v: number, places: number) => Math.round(v * 10 ** places) / 10 ** places;

export class FakeBss {
  /** Bodies of the inquiries that were answered (after verification), in order. */
  readonly inquiries: Record<string, unknown>[] = [];
  readonly rejected: { code: string; msg: string }[] = [];
  requests = 0;
  private server: LoopbackServer | undefined;

  constructor(readonly opts: FakeBssOptions) {}

  get endpoint(): string {
    if (this.server === undefined) throw new Error("fake not started");
    return this.server.endpoint;
  }

  async start(): Promise<this> {
    this.server = await listenLoopback((req, res) => this.handle(req, res));
    return this;
  }

  async close(): Promise<void> {
    await this.server?.close();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.requests++;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    try {
      const why = sdkHmacProblem(req, body, { ak: this.opts.ak, sk: this.opts.sk, securityToken: this.opts.securityToken, nowMs: this.opts.nowMs?.() ?? Date.now() });
      if (why !== undefined) throw new Reject(401, "APIGW.0301", `Incorrect IAM authentication information: ${why}`);
      const path = (req.url ?? "/").split("?")[0];
      if (req.method !== "POST" || path !== "/v2/bills/ratings/on-demand-resources") {
        send(res, 404, { error_code: "APIGW.0101", error_msg: "The API does not exist or has not been published in the environment" });
        return;
      }
      if (!/^application\/json/.test(req.headers["content-type"] ?? "")) throw new Reject(400, "CBC.0100", "Invalid parameter: Content-Type must be application/json.");
      send(res, 200, this.rate(body));
    } catch (e) {
      if (e instanceof Reject) {
        this.rejected.push({ code: e.code, msg: e.message });
        send(res, e.status, { error_code: e.code, error_msg: e.message });
        return;
      }
      send(res, 500, { error_code: "CBC.0999", error_msg: `Other errors. (${(e as Error).message})` });
    }
  }

  private rate(raw: Buffer): Record<string, unknown> {
    let b: unknown;
    try { b = JSON.parse(raw.toString("utf8")); } catch { throw new Reject(400, "CBC.0100", "Invalid parameter: the body is not JSON."); }
    if (!isObj(b)) throw new Reject(400, "CBC.0100", "Invalid parameter: the body is not an object.");
    for (const k of Object.keys(b)) if (!["project_id", "product_infos", "inquiry_precision"].includes(k)) throw new Reject(400, "CBC.0100", `Invalid parameter: ${k}.`);
    const pid = b["project_id"];
    if (typeof pid !== "string" || pid === "" || pid.length > 64) throw new Reject(400, "CBC.0100", "Invalid parameter: project_id.");
    if (!this.opts.projectIds.includes(pid)) throw new Reject(403, "CBC.0151", "Access denied: the project does not belong to the account.");
    const precision = b["inquiry_precision"];
    if (precision !== undefined && precision !== 0 && precision !== 1) throw new Reject(400, "CBC.0100", "Invalid parameter: inquiry_precision.");
    const infos = b["product_infos"];
    if (!Array.isArray(infos) || infos.length === 0 || infos.length > 100) throw new Reject(400, "CBC.0100", "Invalid parameter: product_infos (1 to 100 items).");
    const ids = new Set<string>();
    const results = infos.map((p, i) => {
      if (!isObj(p)) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].`);
      for (const k of Object.keys(p)) if (!(REQUIRED as readonly string[]).includes(k) && !(OPTIONAL as readonly string[]).includes(k)) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].${k}.`);
      for (const k of REQUIRED) if (p[k] === undefined || p[k] === null) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].${k} is required.`);
      for (const k of ["id", "cloud_service_type", "resource_type", "resource_spec", "region", "usage_factor"] as const) {
        if (typeof p[k] !== "string" || (p[k] as string).length === 0 || (p[k] as string).length > (k === "id" ? 64 : 400)) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].${k}.`);
      }
      const id = p["id"] as string;
      if (ids.has(id)) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].id ${id} is repeated.`);
      ids.add(id);
      const value = p["usage_value"];
      const num = p["subscription_num"];
      if (typeof value !== "number" || !(value > 0)) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].usage_value.`);
      if (!Number.isInteger(num) || (num as number) < 1) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].subscription_num.`);
      if (!Number.isInteger(p["usage_measure_id"])) throw new Reject(400, "CBC.0100", `Invalid parameter: product_infos[${i}].usage_measure_id.`);
      if (String(p["usage_factor"]).toLowerCase() !== "duration") throw new Reject(400, "CBC.99006074", `The usage factor ${String(p["usage_factor"])} does not exist.`);
      if (p["usage_measure_id"] !== 4) throw new Reject(400, "CBC.99006050", `The usage measure unit ${String(p["usage_measure_id"])} is incorrect for Duration (4: hour).`);
      const product = this.opts.products.find((x) => x.cloud_service_type === p["cloud_service_type"] && x.resource_type === p["resource_type"] && x.resource_spec === p["resource_spec"] && x.region === p["region"]);
      if (product === undefined) throw new Reject(400, "CBC.99006006", `The product is not found (${String(p["resource_spec"])} in ${String(p["region"])}).`);
      const places = precision === 1 ? 10 : 6;
      const official = round(product.yuanPerHour * value * (num as number), places);
      const amount = round(official * (1 - (this.opts.discount ?? 0)), places);
      return { id, product_id: `fake-${product.resource_spec}`, amount, discount_amount: round(official - amount, places), official_website_amount: official, measure_id: 1 };
    });
    this.inquiries.push(b);
    const sum = (k: "amount" | "official_website_amount" | "discount_amount") => round(results.reduce((t, r) => t + r[k], 0), 10);
    return { amount: sum("amount"), discount_amount: sum("discount_amount"), official_website_amount: sum("official_website_amount"), measure_id: 1, currency: "CNY", product_rating_results: results };
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}
