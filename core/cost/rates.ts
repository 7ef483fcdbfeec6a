// Which rate prices an item: a live rate, else the user's (a --rates file, then the recipe's `prices:`), else the
// catalog row — converted to the unit the estimate asks in. A catalog row with value null, or no row at all,
// yields "rate needed" with how to supply it, never a number. The --rates file is read by rates-file.ts (the
// entries of a recipe's `prices:`); docs/cost.md describes both.
import { RlpipeError } from "../errors.js";
import type { Recipe } from "../recipe/schema.js";
import { didYouMean } from "../recipe/suggest.js";
import { catalogRow } from "./catalog.js";
import type { Basis, Catalog, CatalogRow, CostLine, CostReport, Rate, RateOverrides } from "./types.js";
import { convertPrice } from "./units.js";

const day = (now: Date) => now.toISOString().slice(0, 10);

/** The recipe's `prices:` as user rates. */
export function recipeRates(recipe: Recipe, now: Date): Rate[] {
  return (recipe.prices ?? []).map((p) => ({
    id: p.item, value: p.value, currency: p.currency, unit: p.unit, ...(p.region === undefined ? {} : { region: p.region }),
    source: p.source ?? "recipe prices:", dateRead: p.dateRead ?? day(now), confidence: "user" as const,
  }));
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

/** The rate for `id` in `unit`: live, then user (first given wins), then the catalog. `supply` replaces the default how-to-supply text. */
export function priceFor(ctx: PriceContext, id: string, unit: string, supply?: string): Priced {
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
    rateNeeded: { item: id, unit, howToSupply: supply ?? howToSupply(id, unit) },
    ...(row === undefined ? {} : { row }),
  };
}

/** Every rate id an estimate used or asked for: its sources, and the rate-needed items of its lines and their children. */
export function rateIdsOf(report: CostReport): Set<string> {
  const ids = new Set(report.priceSources.map((r) => r.id));
  const visit = (l: CostLine) => { if (l.rateNeeded !== undefined) ids.add(l.rateNeeded.item); for (const c of l.children ?? []) visit(c); };
  for (const l of report.lines) visit(l);
  return ids;
}

/**
 * User rates that priced nothing in this estimate — usually a mistyped id (a flavor name one character off) — each
 * with the closest id the estimate used or asked for, so a typo is not silently ignored.
 */
export function unusedRates(report: CostReport, user: readonly Rate[], known: readonly string[]): { readonly id: string; readonly closest?: string }[] {
  const used = rateIdsOf(report);
  const candidates = [...new Set([...used, ...known])].sort();
  return user.filter((r) => !used.has(r.id)).map((r) => {
    const hint = didYouMean(r.id, candidates, false);
    return hint === undefined ? { id: r.id } : { id: r.id, closest: hint.replace(/^did you mean /, "").replace(/\?$/, "") };
  });
}
