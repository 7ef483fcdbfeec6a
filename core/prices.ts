// Prices a deploy assumes: what the job consumes (node-hours of a flavor or instance type, device-hours of a card
// type, sandbox vCPU-hours) and the rate used for each — the recipe's own `prices:` first, then rlpipe's price
// catalog (prices/*.yaml: public figures with their source and confidence). Most cloud accelerator prices are not
// public: an item without a known rate is reported as missing, never guessed. The whole-run estimate is
// core/cost/estimate.ts; this one-line hourly figure is what a deploy records in the run record (`prices`).
import { z } from "zod";
import { CATALOG } from "./cost/catalog.js";
import { convertPrice } from "./cost/units.js";
import { parseNodeSpec } from "./providers/tione-request.js";
import { PRICE_UNITS, type Provider, type Recipe } from "./recipe/schema.js";

export const PriceAssumption = z.object({
  item: z.string(),
  value: z.number(),
  currency: z.enum(["CNY", "USD"]),
  unit: z.enum(PRICE_UNITS),
  /** How many units per hour of the job (nodes, devices); absent for usage-billed items such as sandboxes. */
  quantity: z.number().optional(),
  source: z.string(),
  /** recipe: the user's figure; high: an official price page; doc-example / anchor: indicative only. */
  confidence: z.enum(["recipe", "high", "doc-example", "anchor"]),
}).readonly();
export type PriceAssumption = z.infer<typeof PriceAssumption>;

type Rate = Omit<PriceAssumption, "item" | "quantity">;

/** The units this hourly view prices in, by catalog row unit. */
const HOURLY_UNIT: Readonly<Record<string, PriceAssumption["unit"]>> = {
  "node-hour": "node-hour", "node-second": "node-hour", "device-hour": "device-hour", "device-second": "device-hour",
  "vcpu-hour": "vcpu-hour", "vcpu-second": "vcpu-hour",
};

/** The catalog's priced compute and sandbox-vCPU rows, per hour (ModelArts Ascend flavors and TI-ONE GPU specs have none). */
export const REFERENCE_RATES: Readonly<Record<string, Rate>> = Object.fromEntries(CATALOG.rows.flatMap((row) => {
  const unit = HOURLY_UNIT[row.unit];
  if (row.value === null || unit === undefined || row.confidence === "user") return [];
  const value = convertPrice(row.value, row.unit, unit)!;
  const confidence = row.confidence === "anchor" || row.confidence === "doc-example" ? row.confidence : "high";
  return [[row.id, { value: Number(value.toPrecision(6)), currency: row.currency, unit, source: `${row.source} (read ${row.dateRead})`, confidence }]];
}));

/** Something the job pays for by the hour (quantity per hour) or by use (no quantity). */
export interface PriceItem {
  readonly item: string;
  readonly unit: (typeof PRICE_UNITS)[number];
  readonly quantity?: number;
  /** Why the job consumes it, for the summary. */
  readonly what: string;
}

export interface PriceEstimate {
  readonly assumed: readonly PriceAssumption[];
  readonly missing: readonly PriceItem[];
  /** Sum of rate × quantity over hourly items, when every one of them is priced and in one currency. */
  readonly perHour?: { readonly value: number; readonly currency: "CNY" | "USD" };
}

export function jobPriceItems(recipe: Recipe, provider: Provider): PriceItem[] {
  const items: PriceItem[] = [];
  const { nodes, devicesPerNode } = recipe.resources;
  if (provider === "modelarts") {
    const t = recipe.targets?.modelarts;
    if (t?.flavor !== undefined && t.poolId === undefined) items.push({ item: `modelarts:${t.flavor}`, unit: "node-hour", quantity: nodes, what: `${nodes} × flavor ${t.flavor}` });
  } else if (provider === "tione") {
    const t = recipe.targets?.tione;
    for (const which of ["head", "worker"] as const) {
      const n = t?.[which];
      if (n === undefined) continue;
      const size = n.spec === undefined ? undefined : parseNodeSpec(n.spec);
      const gpuType = n.gpuType ?? size?.gpuType;
      const cards = (n.gpuCenti ?? size?.gpuCenti ?? 0) / 100;
      if (n.instanceType !== undefined) items.push({ item: `tione:${n.instanceType}`, unit: "node-hour", quantity: n.count, what: `${n.count} × ${which} ${n.instanceType}` });
      else if (gpuType !== undefined && cards > 0) items.push({ item: `device:${gpuType}`, unit: "device-hour", quantity: n.count * cards, what: `${n.count} × ${which} with ${cards} × ${gpuType}` });
    }
  }
  // Anywhere else (self-hosted Ray/Slurm, local, or a cloud target without a priced spec): the recipe's cards.
  // deviceType is free text ("Atlas A3: 8 cards = 16 dies" is allowed); only a plain name makes a price item.
  const deviceType = recipe.resources.deviceType;
  if (items.length === 0 && deviceType !== undefined && /^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(deviceType) && recipe.runtime.accelerator !== "cpu") {
    items.push({ item: `device:${deviceType}`, unit: "device-hour", quantity: nodes * devicesPerNode, what: `${nodes} × ${devicesPerNode} × ${deviceType}` });
  }
  const sandbox = recipe.sandbox?.kind;
  if (sandbox === "e2b") items.push({ item: `sandbox:${sandbox}`, unit: "vcpu-hour", what: "sandbox vCPU time (billed by use)" });
  return items;
}

/** The rate for each item: the recipe's first, then the reference table; items without one are missing. */
export function estimatePrices(recipe: Recipe, provider: Provider): PriceEstimate {
  const own = new Map((recipe.prices ?? []).map((p) => [p.item, p]));
  const assumed: PriceAssumption[] = [];
  const missing: PriceItem[] = [];
  for (const it of jobPriceItems(recipe, provider)) {
    const mine = own.get(it.item);
    const rate: Rate | undefined = mine !== undefined && mine.unit === it.unit
      ? { value: mine.value, currency: mine.currency, unit: mine.unit, source: mine.source ?? "recipe prices:", confidence: "recipe" }
      : REFERENCE_RATES[it.item]?.unit === it.unit ? REFERENCE_RATES[it.item] : undefined;
    if (rate === undefined) { missing.push(it); continue; }
    assumed.push({ item: it.item, ...rate, ...(it.quantity === undefined ? {} : { quantity: it.quantity }) });
  }
  const hourly = assumed.filter((a) => a.quantity !== undefined);
  const currencies = new Set(hourly.map((a) => a.currency));
  const allHourlyPriced = !missing.some((m) => m.quantity !== undefined);
  if (hourly.length === 0 || currencies.size !== 1 || !allHourlyPriced) return { assumed, missing };
  const value = Math.round(hourly.reduce((sum, a) => sum + a.value * a.quantity!, 0) * 100) / 100;
  return { assumed, missing, perHour: { value, currency: hourly[0]!.currency } };
}

/** The deploy summary's prices line (after "prices"). */
export function describePrices(e: PriceEstimate): string {
  const parts = e.assumed.map((a) => `${a.item} ${a.value} ${a.currency}/${a.unit}${a.quantity === undefined ? "" : ` × ${a.quantity}`} (${a.confidence})`);
  const total = e.perHour === undefined ? "" : ` ≈ ${e.perHour.value} ${e.perHour.currency}/hour of compute`;
  const gaps = e.missing.length === 0 ? "" : `${parts.length === 0 ? "" : "; "}no price known for ${e.missing.map((m) => `${m.item} (${m.what})`).join(", ")} — add it under prices: in the recipe`;
  if (parts.length === 0 && gaps === "") return "none assumed (no flavor, instance type or plain device type named)";
  return `${parts.join(", ")}${total}${gaps}`;
}
