// Live prices for `rlpipe cost --online`: what the recipe's compute costs per node-hour, asked of the providers'
// own price APIs with the user's credentials (so the account's discounts apply), returned as Rate[] with
// confidence "live" for estimateCost's RateOverrides.live. Ids match the catalog's: modelarts:<flavor_id> and
// tione:<postpaid spec name>, both per node-hour.
//   ModelArts: the flavor's billing code and unit count from ModelArts' flavor list (GET training-job-flavors), priced
//     by Huawei BSS ListOnDemandResourceRatings (1 hour of the code; × unit_num per node). The BSS product codes for
//     ModelArts training (cloud_service_type hws.service.type.modelarts, resource_type hws.resource.type.modelarts,
//     resource_size 1 of measure 14) are third-party knowledge, unverified on a real account: RLPIPE_BSS_MODELARTS_SERVICE_TYPE
//     and RLPIPE_BSS_MODELARTS_RESOURCE_TYPE override them. A dedicated pool (targets.modelarts.poolId) is billed by
//     the pool, not per job: nothing is asked.
//   TI-ONE: postpaid specs (targets.tione.<role>.instanceType) are checked against DescribeBillingSpecs (TRAIN,
//     POSTPAID_BY_HOUR) and priced by DescribeBillingSpecsPrice, whose RealTotalCost is in fen (0.01 CNY) for one hour
//     of SpecCount specs: value = RealTotalCost / 100 / SpecCount CNY per node-hour. A prepaid resource group has no
//     marginal price (sunk cost): nothing is asked.
// Answers are cached (price-cache.ts). Missing credentials are invalid input (exit 2, with the hint); a failing price
// API is external (exit 3), naming the API and its error code — never silently replaced by catalog figures: the
// user asked for live prices, and `rlpipe cost` without --online prices from the catalog.
import { RlpipeError } from "../../core/errors.js";
import type { Rate } from "../../core/cost/types.js";
import type { Provider, Recipe } from "../../core/recipe/schema.js";
import { BSS_API, BssClient, MEASURE_HOUR, resolveBssEndpoint } from "./huawei-bss.js";
import { resolveModelArtsConfig, ModelArtsClient } from "./modelarts.js";
import { PriceCache, accountTag } from "./price-cache.js";
import { ProviderError, type RetryPolicy, withRetry } from "./provider.js";
import { TioneApi, resolveTioneCredentials } from "./tione.js";

type Env = Readonly<Record<string, string | undefined>>;

export const MODELARTS_BSS_SERVICE_TYPE = "hws.service.type.modelarts";
export const MODELARTS_BSS_RESOURCE_TYPE = "hws.resource.type.modelarts";
/** size_measure_id 14: a count ("个"); ModelArts flavors are priced as one instance. */
const MEASURE_COUNT = 14;
export const TIONE_SPECS_API = "TI-ONE DescribeBillingSpecs";
export const TIONE_PRICE_API = "TI-ONE DescribeBillingSpecsPrice";

export interface LivePricesOptions {
  readonly env: Env;
  readonly recipe: Recipe;
  /** The providers whose compute is priced (others in the recipe are left to the catalog). */
  readonly providers: readonly Provider[];
  readonly now?: () => Date;
  readonly cache?: PriceCache;
  /** Retries of each price call (reads: safe to repeat); default 3 attempts within 60 s. */
  readonly policy?: RetryPolicy;
  readonly signal?: AbortSignal;
}

export interface LivePriceFetch {
  /** The API asked (or whose cached answer was used). */
  readonly api: string;
  readonly ids: readonly string[];
  readonly cached: boolean;
  readonly fetchedAt: string;
}

export interface LivePrices {
  readonly rates: readonly Rate[];
  /** What was asked or reused, for the report's price sources. */
  readonly fetches: readonly LivePriceFetch[];
  /** Why something was not priced live (a dedicated pool, a prepaid group, nothing named), for the report. */
  readonly notes: readonly string[];
}

const day = (d: Date) => d.toISOString().slice(0, 10);
const round = (v: number) => Math.round(v * 1e8) / 1e8;

/** A failed price call: the same failure, its hint saying how to go on without live prices. */
function priceFailure(e: unknown): unknown {
  if (!(e instanceof RlpipeError) || e.exitCode !== 3) return e;
  const hint = `${e.hint === undefined ? "" : `${e.hint}; `}without --online, rlpipe cost prices from the catalog`;
  if (e instanceof ProviderError) {
    return new ProviderError(e.provider, e.kind, e.code, e.message, {
      hint, cause: e, exitCode: e.exitCode,
      ...(e.providerCode === undefined ? {} : { providerCode: e.providerCode }), ...(e.httpStatus === undefined ? {} : { httpStatus: e.httpStatus }),
    });
  }
  return new RlpipeError(e.code, e.message, { hint, cause: e, exitCode: e.exitCode });
}

/** Live rates for the compute of `providers` in the recipe. */
export async function fetchLivePrices(opts: LivePricesOptions): Promise<LivePrices> {
  const now = opts.now ?? (() => new Date());
  const cache = opts.cache ?? PriceCache.fromEnv(opts.env, now);
  const policy: RetryPolicy = { attempts: 3, budgetMs: 60_000, ...opts.policy, ...(opts.signal === undefined ? {} : { signal: opts.signal }) };
  const rates: Rate[] = [];
  const fetches: LivePriceFetch[] = [];
  const notes: string[] = [];
  const ctx = { ...opts, now, cache, policy, rates, fetches, notes };
  try {
    if (opts.providers.includes("modelarts")) await modelartsPrices(ctx);
    if (opts.providers.includes("tione")) await tionePrices(ctx);
  } catch (e) {
    throw priceFailure(e);
  }
  rates.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { rates, fetches, notes };
}

interface Ctx extends LivePricesOptions {
  readonly now: () => Date;
  readonly cache: PriceCache;
  readonly policy: RetryPolicy;
  readonly rates: Rate[];
  readonly fetches: LivePriceFetch[];
  readonly notes: string[];
}

/** The cached entry, or `fetch` run and its answer cached (a cache that cannot be written only costs a warning). */
async function cached(ctx: Ctx, key: string, api: string, fetch: () => Promise<Rate[]>): Promise<Rate[]> {
  const hit = await ctx.cache.get(key);
  if (hit !== undefined) {
    ctx.fetches.push({ api, ids: hit.rates.map((r) => r.id), cached: true, fetchedAt: hit.fetchedAt });
    return [...hit.rates];
  }
  const rates = await fetch();
  try { await ctx.cache.put(key, rates); } catch (e) {
    ctx.notes.push(`the price cache ${ctx.cache.path} could not be written (${(e as Error).message}); prices will be asked again next time`);
  }
  ctx.fetches.push({ api, ids: rates.map((r) => r.id), cached: false, fetchedAt: ctx.now().toISOString() });
  return rates;
}

async function modelartsPrices(ctx: Ctx): Promise<void> {
  const target = ctx.recipe.targets?.modelarts;
  if (target?.flavor === undefined) { ctx.notes.push("modelarts: targets.modelarts.flavor is not set; nothing to price live"); return; }
  if (target.poolId !== undefined) { ctx.notes.push(`modelarts: the job runs in dedicated pool ${target.poolId}, billed by the pool, not per job; no live price asked`); return; }
  const flavor = target.flavor;
  const config = resolveModelArtsConfig(ctx.env, target);
  const region = config.region;
  if (region === undefined) throw new RlpipeError("region_missing", "live ModelArts prices need the region", { exitCode: 2, hint: "set targets.modelarts.region or HUAWEICLOUD_REGION" });
  const serviceType = ctx.env["RLPIPE_BSS_MODELARTS_SERVICE_TYPE"]?.trim() || MODELARTS_BSS_SERVICE_TYPE;
  const resourceType = ctx.env["RLPIPE_BSS_MODELARTS_RESOURCE_TYPE"]?.trim() || MODELARTS_BSS_RESOURCE_TYPE;
  const key = `bss|${accountTag(config.credentials.ak)}|${region}|${serviceType}|${resourceType}|${flavor}`;
  const rates = await cached(ctx, key, BSS_API, async () => {
    const ma = new ModelArtsClient(config, { now: ctx.now });
    const flavors = await withRetry({ provider: "modelarts", op: "list training flavors" }, (s) => ma.listFlavors(undefined, s), ctx.policy);
    const f = flavors.find((x) => x.flavor_id === flavor);
    if (f === undefined) {
      throw new RlpipeError("flavor_unknown", `flavor ${flavor} is not among the ${flavors.length} training flavors ModelArts lists in ${region}`, {
        exitCode: 2, hint: `targets.modelarts.flavor must be a flavor_id of GET /v2/{project_id}/training-job-flavors in ${region}`,
      });
    }
    if (f.billing === undefined) throw new ProviderError("modelarts", "fatal", "flavor_not_billed", `ModelArts lists no billing code for flavor ${flavor} in ${region}, so BSS cannot price it`);
    const { code, unit_num: units } = f.billing;
    const bss = new BssClient(resolveBssEndpoint(ctx.env), config.credentials, { now: ctx.now });
    const answer = await withRetry({ provider: "modelarts", op: "BSS price inquiry" }, (s) => bss.onDemandRatings(config.projectId, [{
      id: "1", cloud_service_type: serviceType, resource_type: resourceType, resource_spec: code, region,
      usage_factor: "Duration", usage_value: 1, usage_measure_id: MEASURE_HOUR, subscription_num: 1, resource_size: 1, size_measure_id: MEASURE_COUNT,
    }], s), ctx.policy);
    const r = answer.results.find((x) => x.id === "1")!;
    const list = r.official_website_amount === undefined ? "" : `; list price ${round(r.official_website_amount * units)} ${answer.currency}/node-hour`;
    return [{
      id: `modelarts:${flavor}`, value: round(r.amount * units), currency: answer.currency, unit: "node-hour", region,
      source: `${BSS_API}: billing code ${code} × ${units} per node (ModelArts training-job-flavors), 1 hour, after the account's discounts${list}`,
      dateRead: day(ctx.now()), confidence: "live",
    }];
  });
  ctx.rates.push(...rates);
}

interface SpecsReply { Specs?: { SpecName?: string; SpecAlias?: string; Available?: boolean; GpuType?: string | null }[] | null }
interface PriceReply { SpecsPrice?: { SpecName?: string; TotalCost?: number; RealTotalCost?: number; SpecCount?: number }[] | null }

async function tionePrices(ctx: Ctx): Promise<void> {
  const target = ctx.recipe.targets?.tione;
  const nodes = [target?.head, target?.worker].filter((n) => n !== undefined);
  const specs = [...new Set(nodes.map((n) => n.instanceType).filter((t): t is string => t !== undefined))].sort();
  if (target === undefined || nodes.length === 0) { ctx.notes.push("tione: targets.tione names no nodes; nothing to price live"); return; }
  if (target.chargeType === "PREPAID" || specs.length === 0) {
    ctx.notes.push(`tione: the task runs in prepaid resource group ${target.resourceGroupId ?? "(unset)"}: no marginal compute price (the group is paid for already); no live price asked`);
    return;
  }
  const region = target.region ?? (ctx.env["TENCENTCLOUD_REGION"] || undefined);
  if (region === undefined) throw new RlpipeError("region_missing", "live TI-ONE prices need the region", { exitCode: 2, hint: "set targets.tione.region (e.g. ap-shanghai) or TENCENTCLOUD_REGION" });
  const creds = await resolveTioneCredentials(ctx.env, "TI-ONE price");
  const api = new TioneApi({ env: ctx.env, region, ...(target.endpoint === undefined ? {} : { endpoint: target.endpoint }) });
  try {
    const key = `tione|${accountTag(creds.secretId)}|${region}|${specs.join(",")}`;
    const rates = await cached(ctx, key, TIONE_PRICE_API, async () => {
      const listed = await withRetry({ provider: "tione", op: "DescribeBillingSpecs" }, (s) => api.call<SpecsReply>("DescribeBillingSpecs", { ChargeType: "POSTPAID_BY_HOUR", TaskType: "TRAIN" }, s), ctx.policy);
      const known = new Map((listed.Specs ?? []).filter((s) => typeof s.SpecName === "string").map((s) => [s.SpecName!, s]));
      const unknown = specs.filter((s) => !known.has(s));
      if (unknown.length > 0) {
        throw new RlpipeError("spec_unknown", `${TIONE_SPECS_API} lists no postpaid training spec ${unknown.join(", ")} in ${region}`, {
          exitCode: 2, hint: `targets.tione.<role>.instanceType must be a SpecName of DescribeBillingSpecs (TaskType TRAIN, ChargeType POSTPAID_BY_HOUR) in ${region}`,
        });
      }
      for (const s of specs) if (known.get(s)!.Available === false) ctx.notes.push(`tione: spec ${s} is sold out in ${region} (DescribeBillingSpecs Available=false)`);
      const priced = await withRetry({ provider: "tione", op: "DescribeBillingSpecsPrice" }, (s) => api.call<PriceReply>("DescribeBillingSpecsPrice", { SpecsParam: specs.map((SpecName) => ({ SpecName, SpecCount: 1 })) }, s), ctx.policy);
      return specs.map((spec): Rate => {
        const p = (priced.SpecsPrice ?? []).find((x) => x.SpecName === spec);
        if (p === undefined || typeof p.RealTotalCost !== "number" || !Number.isFinite(p.RealTotalCost)) {
          throw new ProviderError("tione", "fatal", "tione_bad_response", `${TIONE_PRICE_API} answered no price for ${spec}`);
        }
        const count = typeof p.SpecCount === "number" && p.SpecCount > 0 ? p.SpecCount : 1;
        // TotalCost is documented to read 0 beyond 4.2 billion fen: a 0 list price with a real price is that overflow.
        if (p.RealTotalCost <= 0) throw new ProviderError("tione", "fatal", "tione_bad_response", `${TIONE_PRICE_API} answered ${p.RealTotalCost} fen for ${spec}: not a price`);
        const list = typeof p.TotalCost === "number" && p.TotalCost > 0 ? `; list price ${p.TotalCost} fen` : "";
        return {
          id: `tione:${spec}`, value: round(p.RealTotalCost / 100 / count), currency: "CNY", unit: "node-hour", region,
          source: `${TIONE_PRICE_API}: RealTotalCost ${p.RealTotalCost} fen for ${count} × ${spec} per hour (postpaid), after discounts${list}; fen ÷ 100 = CNY`,
          dateRead: day(ctx.now()), confidence: "live",
        };
      });
    });
    ctx.rates.push(...rates);
  } finally {
    api.close();
  }
}

/** The providers whose live prices `rlpipe cost --online --provider <p>` asks for (only those with a price API). */
export function livePriceProviders(provider: Provider | "all", recipe: Recipe): Provider[] {
  const candidates: Provider[] = provider === "all" ? (["modelarts", "tione"] as Provider[]).filter((p) => recipe.targets?.[p as "modelarts" | "tione"] !== undefined) : [provider];
  return candidates.filter((p) => p === "modelarts" || p === "tione");
}
