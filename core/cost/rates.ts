// Which rate prices an item: a live rate, else the user's (recipe `prices:`, then a --rates file), else the
// catalog row — converted to the unit the estimate asks in. A catalog row with value null, or no row at all,
// yields "rate needed" with how to supply one, never a number.
//
// The --rates file (YAML):
//   version: 1
//   rates:
//     - item: modelarts:modelarts.bm.npu.arm.8snt9b2.d   # a catalog row id (or any item the report asks for)
//       value: 180
//       currency: CNY                                  # CNY or USD
//       unit: node-hour                                # any rate unit of the same kind (docs/cost.md)
//       source: console quote 2026-11-20               # optional
//       dateRead: "2026-11-20"                         # optional; default: the day of the estimate
//       region: cn-southwest-2                         # optional
// Entries have the shape of the recipe's `prices:` entries; a file's entry wins over the recipe's for one item.
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { RlpipeError } from "../errors.js";
import type { Recipe } from "../recipe/schema.js";
import { catalogRow } from "./catalog.js";
import type { Basis, Catalog, CatalogRow, CostLine, Rate, RateOverrides } from "./types.js";
import { PRICE_UNITS, convertPrice } from "./units.js";

const RateEntry = z.strictObject({
  item: z.string({ error: "expected a catalog row id such as device:H20" }).min(1, { error: "expected a catalog row id such as device:H20" }),
  value: z.number({ error: "expected a positive number" }).positive({ error: "expected a positive number" }),
  currency: z.enum(["CNY", "USD"], { error: "expected CNY or USD" }),
  unit: z.enum(PRICE_UNITS, { error: `expected one of ${PRICE_UNITS.join(", ")}` }),
  source: z.string().min(1).optional(),
  dateRead: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, { error: "expected a date YYYY-MM-DD (quote it)" }).optional(),
  region: z.string().min(1).optional(),
});

const RatesFile = z.strictObject({
  version: z.literal(1, { error: "expected version: 1" }),
  rates: z.array(RateEntry),
});

const day = (now: Date) => now.toISOString().slice(0, 10);

function toRate(e: z.output<typeof RateEntry>, defaultSource: string, now: Date): Rate {
  return {
    id: e.item, value: e.value, currency: e.currency, unit: e.unit,
    ...(e.region === undefined ? {} : { region: e.region }),
    source: e.source ?? defaultSource, dateRead: e.dateRead ?? day(now), confidence: "user",
  };
}

/** The recipe's `prices:` as user rates. */
export function recipeRates(recipe: Recipe, now: Date): Rate[] {
  return (recipe.prices ?? []).map((p) => toRate(p, "recipe prices:", now));
}

/** Parses a --rates file (text and its name for messages); errors say file:line and what to write. */
export function parseRatesFile(text: string, file: string, now: Date): Rate[] {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true });
  const bad = (message: string, line?: number) => new RlpipeError("rates_invalid", `${file}${line === undefined ? "" : `:${line}`}: ${message}`, {
    exitCode: 2, hint: "a rates file is `version: 1` and `rates:` entries {item, value, currency, unit[, source, dateRead, region]} (docs/cost.md)",
  });
  if (doc.errors.length > 0) throw bad(doc.errors[0]!.message.split("\n")[0]!, doc.errors[0]!.linePos?.[0].line);
  const parsed = RatesFile.safeParse(doc.toJS());
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const node = doc.getIn(issue.path as (string | number)[], true) as { range?: [number, number] } | undefined;
    const line = node?.range === undefined ? undefined : lines.linePos(node.range[0]).line;
    const where = issue.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
    throw bad(`${where === "" ? "" : `${where}: `}${issue.message}`, line);
  }
  const seen = new Set<string>();
  for (const [i, e] of parsed.data.rates.entries()) {
    if (seen.has(e.item)) throw bad(`rates[${i}].item: ${e.item} is given twice`);
    seen.add(e.item);
  }
  return parsed.data.rates.map((e) => toRate(e, `rates file ${file}`, now));
}

export interface PriceContext {
  readonly catalog: Catalog;
  readonly overrides: RateOverrides;
  /** Every rate used, by id (the report's priceSources). */
  readonly used: Map<string, Rate>;
}

export interface Priced {
  readonly rate?: Rate;
  readonly basis: Basis;
  readonly rateNeeded?: NonNullable<CostLine["rateNeeded"]>;
  readonly row?: CatalogRow;
}

export function howToSupply(id: string, unit: string): string {
  return `add { item: ${id}, value: <price>, currency: CNY or USD, unit: ${unit} } under prices: in the recipe, or to a --rates file`;
}

/** The rate for `id` in `unit`: live, then user (first given wins), then the catalog. */
export function priceFor(ctx: PriceContext, id: string, unit: string, fallbackItem?: string): Priced {
  const row = catalogRow(ctx.catalog, id);
  const pick = (rates: readonly Rate[] | undefined, basis: Basis): Priced | undefined => {
    const r = rates?.find((x) => x.id === id);
    if (r === undefined) return undefined;
    const value = convertPrice(r.value, r.unit, unit);
    if (value === undefined) {
      throw new RlpipeError("rate_unit_mismatch", `the ${basis} rate for ${id} is per ${r.unit}, which cannot price ${unit}`, {
        exitCode: 2, hint: `give ${id} per ${unit} (or another unit of that kind)`,
      });
    }
    ctx.used.set(`${basis}:${id}`, r);
    return { rate: { ...r, value, unit }, basis, ...(row === undefined ? {} : { row }) };
  };
  const chosen = pick(ctx.overrides.live, "live") ?? pick(ctx.overrides.user, "user");
  if (chosen !== undefined) return chosen;
  if (row?.value != null) {
    const value = convertPrice(row.value, row.unit, unit);
    if (value === undefined) throw new RlpipeError("price_catalog_invalid", `catalog row ${id} is per ${row.unit}, asked for ${unit}`, { exitCode: 4 });
    const rate: Rate = {
      id, value: row.value, currency: row.currency, unit: row.unit, source: row.source, dateRead: row.dateRead, confidence: row.confidence,
      ...(row.region === undefined ? {} : { region: row.region }),
    };
    ctx.used.set(`catalog:${id}`, rate);
    return { rate: { ...rate, value, unit }, basis: "catalog", row };
  }
  return {
    basis: "catalog",
    rateNeeded: { item: row?.item ?? fallbackItem ?? id, unit, howToSupply: howToSupply(id, unit) },
    ...(row === undefined ? {} : { row }),
  };
}
