// Prices a deploy assumes: the rates the whole-run estimate (core/cost/estimate.ts, `rlpipe cost`) prices the chosen
// candidate with — user rates, live or catalog rows (prices/*.yaml: public figures with their source and confidence).
// Most cloud accelerator prices are not public: an item without a known rate is reported as missing, never guessed.
// This one-line view is what plan and deploy print and what a deploy records in the run record (`prices`).
import { z } from "zod";
import { CATALOG } from "./cost/catalog.js";
import { leaves } from "./cost/estimate.js";
import type { CostLine, CostReport, Rate as CostRate } from "./cost/types.js";
import { convertPrice } from "./cost/units.js";
import { PRICE_UNITS } from "./recipe/schema.js";

export const PriceAssumption = z.object({
  item: z.string(),
  value: z.number(),
  currency: z.enum(["CNY", "USD"]),
  unit: z.enum(PRICE_UNITS),
  /** How many units per hour of the job (nodes, devices); absent for usage-billed items such as sandboxes. */
  quantity: z.number().optional(),
  source: z.string(),
  /** recipe: the user's figure; official (high in records before issue 24) / third-party: a public price page;
   * live: a provider's price API at deploy; doc-example / anchor: indicative only. */
  confidence: z.enum(["recipe", "high", "official", "third-party", "live", "doc-example", "anchor"]),
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
  /** Sum of rate × quantity over hourly compute items, when every one of them is priced and in one currency. */
  readonly perHour?: { readonly value: number; readonly currency: "CNY" | "USD" };
  /** The chosen candidate's compute is paid for already (a prepaid group or pool): what it is included in. */
  readonly prepaid?: string;
}

/** A rate's confidence as the run record keeps it. */
function assumedConfidence(c: CostRate["confidence"]): PriceAssumption["confidence"] {
  return c === "user" ? "recipe" : c;
}

/**
 * The rates a deploy assumes: exactly the ones the whole-run estimate (`rlpipe cost`) prices its chosen candidate
 * with — one price story across plan, deploy, the run record and `rlpipe cost --run`. Hourly compute items carry
 * how many of them the job holds per hour of the run; prepaid compute is prepaid, not a rate; a line without a
 * usable rate is missing, with the item the report asks for.
 */
export function pricesOfReport(report: CostReport): PriceEstimate {
  const chosen = report.candidates.find((c) => c.chosen);
  const hours = chosen?.hours.expected ?? 0;
  // Per item, in the order the report lists them: its rate, and its hourly quantity (the compute lines' units of
  // every stage over the run's hours: the nodes or cards the job holds on average).
  const assumed = new Map<string, { rate: CostRate; unit: PriceAssumption["unit"]; computeUnits?: number }>();
  const missing = new Map<string, { line: CostLine; unit: PriceItem["unit"]; computeUnits?: number }>();
  const priceUnit = (u: string) => ((PRICE_UNITS as readonly string[]).includes(u) ? (u as PriceAssumption["unit"]) : undefined);
  const perHour = (units: number | undefined) => (units === undefined || hours <= 0 ? undefined : Number((units / hours).toPrecision(4)));
  for (const line of leaves(report.lines)) {
    const hourly = line.component === "compute" && line.unit.endsWith("-hour");
    if (line.rate !== undefined) {
      const unit = priceUnit(line.rate.unit);
      if (unit === undefined) continue;
      const seen = assumed.get(line.rate.id);
      const units = hourly ? (seen?.computeUnits ?? 0) + line.quantity.expected : seen?.computeUnits;
      assumed.set(line.rate.id, { rate: seen?.rate ?? line.rate, unit, ...(units === undefined ? {} : { computeUnits: units }) });
    } else if (line.rateNeeded !== undefined && line.includedIn === undefined) {
      const seen = missing.get(line.rateNeeded.item);
      const units = hourly ? (seen?.computeUnits ?? 0) + line.quantity.expected : seen?.computeUnits;
      missing.set(line.rateNeeded.item, { line: seen?.line ?? line, unit: priceUnit(line.rateNeeded.unit) ?? "request", ...(units === undefined ? {} : { computeUnits: units }) });
    }
  }
  const list: PriceAssumption[] = [...assumed.values()].map(({ rate, unit, computeUnits }) => {
    const quantity = perHour(computeUnits);
    return { item: rate.id, value: rate.value, currency: rate.currency, unit, ...(quantity === undefined ? {} : { quantity }),
      source: `${rate.source} (read ${rate.dateRead})`, confidence: assumedConfidence(rate.confidence) };
  });
  const gaps: PriceItem[] = [...missing.entries()].map(([item, { line, unit, computeUnits }]) => {
    const quantity = perHour(computeUnits);
    return { item, unit, ...(quantity === undefined ? {} : { quantity }), what: line.label };
  });
  const hourly = list.filter((a) => a.quantity !== undefined);
  const currencies = new Set(hourly.map((a) => a.currency));
  const allHourlyPriced = !gaps.some((m) => m.quantity !== undefined);
  const prepaid = chosen?.includedIn;
  const base = { assumed: list, missing: gaps, ...(prepaid === undefined ? {} : { prepaid }) };
  if (hourly.length === 0 || currencies.size !== 1 || !allHourlyPriced) return base;
  const value = Math.round(hourly.reduce((sum, a) => sum + a.value * a.quantity!, 0) * 100) / 100;
  return { ...base, perHour: { value, currency: hourly[0]!.currency } };
}

/** The deploy summary's prices line (after "prices"). */
export function describePrices(e: PriceEstimate): string {
  const parts = e.assumed.map((a) => `${a.item} ${a.value} ${a.currency}/${a.unit}${a.quantity === undefined ? "" : ` × ${a.quantity}`} (${a.confidence})`);
  const total = e.perHour === undefined ? "" : ` ≈ ${e.perHour.value} ${e.perHour.currency}/hour of compute`;
  const prepaid = e.prepaid === undefined ? [] : [`compute prepaid (${e.prepaid})`];
  const gaps = e.missing.length === 0 ? "" : `${parts.length + prepaid.length === 0 ? "" : "; "}rate needed for ${e.missing.map((m) => `${m.item} [${m.unit}] (${m.what})`).join(", ")} — add it under prices: in the recipe`;
  if (parts.length === 0 && prepaid.length === 0 && gaps === "") return "none assumed (nothing the run is billed for has a rate)";
  return `${[...prepaid, ...parts].join(", ")}${total}${gaps}`;
}
