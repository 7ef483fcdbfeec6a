// Huawei Cloud BSS price inquiry for pay-per-use resources: ListOnDemandResourceRatings,
// POST /v2/bills/ratings/on-demand-resources (support.huaweicloud.com/api-oce/bcloud_01001.html, 2025-11-27), signed
// with SDK-HMAC-SHA256 like every Huawei API here. BSS has one global endpoint for the China site
// (https://bss.myhuaweicloud.com; BSS_ENDPOINT overrides it, e.g. for a loopback fake). The answer is the price of
// `usage_value` units of `usage_measure_id` (4 = hour) after the account's discounts (`amount`), with the list price
// (`official_website_amount`); `measure_id` 1 means the amounts are in yuan; `currency` is CNY on the China site
// (the international API documents an empty currency as USD).
// Documented errors: 400 CBC.0100 bad parameter, CBC.99006006 product not found, CBC.99006050 bad usage unit,
// CBC.99006055 amount over the limit, CBC.99006074 usage factor not found; 403 CBC.0151 access denied; 500 CBC.0999.
import { z } from "zod";
import { RlpipeError } from "../../core/errors.js";
import { parseEndpoint } from "../../core/util/endpoint.js";
import type { HuaweiCredentials } from "./huawei-sign.js";
import { signRequest } from "./huawei-sign.js";
import { kindOfNetworkError, ProviderError, tlsFailure } from "./provider.js";
import { huaweiErrorReply } from "./huawei-error.js";

export const BSS_DEFAULT_ENDPOINT = "https://bss.myhuaweicloud.com";
export const BSS_RATINGS_PATH = "/v2/bills/ratings/on-demand-resources";
export const BSS_API = "Huawei BSS ListOnDemandResourceRatings";
/** usage_measure_id of an hour; measure_id 1 of the answer is yuan. */
export const MEASURE_HOUR = 4;
export const MEASURE_YUAN = 1;

/** One priced item (DemandProductInfo). */
export interface DemandProductInfo {
  readonly id: string;
  readonly cloud_service_type: string;
  readonly resource_type: string;
  readonly resource_spec: string;
  readonly region: string;
  readonly usage_factor: string;
  readonly usage_value: number;
  readonly usage_measure_id: number;
  readonly subscription_num: number;
  readonly resource_size?: number;
  readonly size_measure_id?: number;
}

const Amount = z.number().finite();
const ProductResult = z.looseObject({
  id: z.string(),
  product_id: z.string().optional(),
  amount: Amount,
  discount_amount: Amount.optional(),
  official_website_amount: Amount.optional(),
  measure_id: z.number().int().optional(),
});
const RatingsResponse = z.looseObject({
  amount: Amount.optional(),
  official_website_amount: Amount.optional(),
  measure_id: z.number().int().optional(),
  currency: z.string().optional(),
  product_rating_results: z.array(ProductResult),
});
export type ProductRating = z.infer<typeof ProductResult>;
export interface Ratings { readonly currency: "CNY" | "USD"; readonly results: readonly ProductRating[] }


export function resolveBssEndpoint(env: Readonly<Record<string, string | undefined>>): string {
  const raw = env["BSS_ENDPOINT"]?.trim() || BSS_DEFAULT_ENDPOINT;
  const r = parseEndpoint(raw);
  if ("problem" in r) throw new RlpipeError(r.problem.code, `BSS_ENDPOINT: ${r.problem.message}`, { exitCode: 2, ...(r.problem.hint === undefined ? {} : { hint: r.problem.hint }) });
  return r.url.origin;
}

export class BssClient {
  constructor(readonly endpoint: string, private readonly credentials: HuaweiCredentials, private readonly opts: { timeoutMs?: number; now?: () => Date } = {}) {}

  /** Prices of up to 100 items in one call; each result carries the id of its request item. */
  async onDemandRatings(projectId: string, items: readonly DemandProductInfo[], signal?: AbortSignal): Promise<Ratings> {
    if (items.length === 0 || items.length > 100) throw new RlpipeError("bss_bad_request", `${BSS_API} prices 1 to 100 items per call, got ${items.length}`, { exitCode: 4 });
    const body = JSON.stringify({ project_id: projectId, product_infos: items, inquiry_precision: 1 });
    const signed = signRequest({
      method: "POST", endpoint: this.endpoint, path: BSS_RATINGS_PATH,
      headers: { "Content-Type": "application/json;charset=UTF-8" }, body, date: (this.opts.now ?? (() => new Date()))(),
    }, this.credentials);
    const timeoutMs = this.opts.timeoutMs ?? 30_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    let status: number;
    let text: string;
    try {
      const res = await fetch(signed.url, { method: "POST", headers: signed.headers, body, signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]), redirect: "manual" });
      status = res.status;
      text = await res.text();
    } catch (e) {
      if (signal?.aborted === true) throw signal.reason;
      if (timeout.aborted) throw new ProviderError("modelarts", "ambiguous", "bss_timeout", `${BSS_API}: no answer within ${timeoutMs} ms`);
      const tls = tlsFailure(e);
      if (tls !== undefined) throw new ProviderError("modelarts", "fatal", "bss_tls_failed", `${BSS_API} at ${this.endpoint}: ${tls}`, { hint: "check BSS_ENDPOINT" });
      throw new ProviderError("modelarts", kindOfNetworkError(e), "bss_network", `${BSS_API}: network error (${(e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message})`);
    }
    if (status >= 200 && status < 300) {
      let json: unknown;
      try { json = JSON.parse(text); } catch { throw new ProviderError("modelarts", "fatal", "bss_bad_response", `${BSS_API}: HTTP ${status} with a body that is not JSON`); }
      const parsed = RatingsResponse.safeParse(json);
      if (!parsed.success) {
        const first = parsed.error.issues[0];
        throw new ProviderError("modelarts", "fatal", "bss_bad_response", `${BSS_API}: unexpected reply (${first === undefined ? "invalid" : `${first.path.join(".") || "(root)"}: ${first.message}`})`);
      }
      const r = parsed.data;
      const measures = [r.measure_id, ...r.product_rating_results.map((p) => p.measure_id)].filter((m) => m !== undefined);
      if (measures.some((m) => m !== MEASURE_YUAN)) {
        throw new ProviderError("modelarts", "fatal", "bss_unexpected_unit", `${BSS_API}: amounts in measure ${measures.find((m) => m !== MEASURE_YUAN)}, expected 1 (yuan)`);
      }
      const currency = r.currency === undefined || r.currency === "" ? "USD" : r.currency;
      if (currency !== "CNY" && currency !== "USD") throw new ProviderError("modelarts", "fatal", "bss_unexpected_unit", `${BSS_API}: currency ${currency} is neither CNY nor USD`);
      for (const it of items) {
        if (!r.product_rating_results.some((p) => p.id === it.id)) throw new ProviderError("modelarts", "fatal", "bss_bad_response", `${BSS_API}: no price in the answer for item ${it.id} (${it.resource_spec})`);
      }
      return { currency, results: r.product_rating_results };
    }
    const { ak, sk } = this.credentials;
    throw bssError(status, text.split(ak).join("***").split(sk).join("***"));
  }
}

/** An error answer of BSS or API Gateway as a ProviderError (exit 3) naming the API and the provider's code. */
export function bssError(status: number, text: string): ProviderError {
  const { code, detail } = huaweiErrorReply(status, text);
  const opts = { httpStatus: status, ...(code === undefined ? {} : { providerCode: code }) };
  if (status === 401 || code?.startsWith("APIGW.") === true || code === "CBC.0151" || code === "CBC.0154") {
    return new ProviderError("modelarts", "fatal", "bss_auth_failed", `${BSS_API} refused the credentials: ${detail}`, {
      ...opts, hint: "check HUAWEICLOUD_SDK_AK/SK (and the security token of temporary credentials), that the IAM user may call BSS (billing read permission), and this machine's clock",
    });
  }
  if (code === "CBC.99006006") {
    return new ProviderError("modelarts", "fatal", "bss_product_not_found", `${BSS_API} knows no such product: ${detail}`, { ...opts, hint: "check the region and the flavor; the price calculator shows the product codes BSS expects" });
  }
  if (status === 429 || code === "APIGW.0308") return new ProviderError("modelarts", "retryable", "bss_throttled", `${BSS_API}: ${detail}`, opts);
  if (status >= 500) return new ProviderError("modelarts", "ambiguous", "bss_server_error", `${BSS_API}: ${detail}`, opts);
  return new ProviderError("modelarts", "fatal", "bss_request_rejected", `${BSS_API} rejected the request: ${detail}`, opts);
}
