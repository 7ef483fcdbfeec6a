// The price catalog rlpipe prices with: prices/*.yaml compiled into catalog-data.ts (catalog-source.ts validates
// and generates it). Pure lookups.
import { RlpipeError } from "../errors.js";
import { PRICE_DATA } from "./catalog-data.js";
import type { Catalog, CatalogRow, FxRate } from "./types.js";

export const FX_ROW_ID = "fx:CNY/USD";

/** The catalog compiled into rlpipe (prices/*.yaml at build time). */
export const CATALOG: Catalog = PRICE_DATA;

export function catalogRow(catalog: Catalog, id: string): CatalogRow | undefined {
  return catalog.rows.find((r) => r.id === id);
}

/** The catalog's exchange rate. */
export function catalogFx(catalog: Catalog): FxRate {
  const row = catalogRow(catalog, FX_ROW_ID);
  if (row?.value == null) throw new RlpipeError("price_catalog_invalid", `the price catalog has no ${FX_ROW_ID} value`, { exitCode: 4 });
  return { cnyPerUsd: row.value, source: row.source, dateRead: row.dateRead };
}
