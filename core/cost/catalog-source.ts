// The price catalog's source form: prices/*.yaml, validated here and compiled into catalog-data.ts by
// scripts/generate-cost-files.mjs (so an installed CLI and every esbuild bundle carry it without reading files —
// and without a JSON import, which tsc under nodenext and esbuild treat differently). A row without a public price
// has value null and is shown as "rate needed"; a row with a value must name a public source.
import { parse } from "yaml";
import { z } from "zod";
import { RlpipeError } from "../errors.js";
import { FX_ROW_ID } from "./catalog.js";
import type { Catalog, CatalogRow } from "./types.js";
import { PRICE_UNITS } from "./units.js";


const date = () => z.string({ error: "expected a date YYYY-MM-DD (quote it)" }).regex(/^\d{4}-\d{2}-\d{2}$/, { error: "expected a date YYYY-MM-DD" });
const nonEmpty = () => z.string({ error: "expected a non-empty string" }).min(1, { error: "expected a non-empty string" });

/** A source a reader can look up: a URL, a domain with a path, or a named document. */
const PUBLIC_SOURCE = /[a-z0-9-]+\.[a-z]{2,}\S*\//i;

export const CatalogRowSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9:._/-]*$/, { error: "expected an id of letters, digits and : . _ / -" }),
  item: nonEmpty(),
  value: z.number({ error: "expected a positive number or null" }).positive({ error: "expected a positive number or null" }).nullable(),
  currency: z.enum(["CNY", "USD"], { error: "expected CNY or USD" }),
  unit: z.enum(PRICE_UNITS, { error: `expected one of ${PRICE_UNITS.join(", ")}` }),
  region: nonEmpty().optional(),
  source: nonEmpty(),
  dateRead: date(),
  confidence: z.enum(["user", "official", "third-party", "doc-example", "anchor"], { error: "expected user, official, third-party, doc-example or anchor" }),
  note: nonEmpty().optional(),
}).superRefine((row, ctx) => {
  // An unquoted " #" in YAML starts a comment and silently cuts a value short: unbalanced brackets give it away.
  for (const key of ["source", "note", "item"] as const) {
    const text = row[key];
    if (text !== undefined && !balanced(text)) ctx.addIssue({ code: "custom", path: [key], message: "unbalanced brackets (quote values that contain \" #\": YAML reads the rest as a comment)" });
  }
  if (row.value === null) return;
  if (row.confidence === "user") ctx.addIssue({ code: "custom", path: ["value"], message: "a row only the user can price must have value null" });
  if (!PUBLIC_SOURCE.test(row.source)) ctx.addIssue({ code: "custom", path: ["source"], message: "a row with a value must name a public source (a URL or a domain/path)" });
});

function balanced(text: string): boolean {
  let depth = 0;
  for (const ch of text) {
    if (ch === "(" || ch === "[") depth++;
    else if (ch === ")" || ch === "]") { depth--; if (depth < 0) return false; }
  }
  return depth === 0;
}

export const CatalogFileSchema = z.strictObject({
  version: z.literal(1, { error: "expected version: 1" }),
  rows: z.array(CatalogRowSchema).min(1, { error: "expected at least one row" }),
});

const invalid = (message: string) => new RlpipeError("price_catalog_invalid", message, { exitCode: 2, hint: "see prices/README.md for the row format" });

/** Parses and validates catalog files (name and text each); rows keep file order, ids must be unique. */
export function parseCatalogFiles(files: readonly { readonly name: string; readonly text: string }[]): Catalog {
  const rows: CatalogRow[] = [];
  const seen = new Map<string, string>();
  for (const { name, text } of [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    let data: unknown;
    try { data = parse(text); } catch (e) { throw invalid(`${name}: not YAML (${(e as Error).message.split("\n")[0]})`); }
    const parsed = CatalogFileSchema.safeParse(data);
    if (!parsed.success) {
      const first = parsed.error.issues[0]!;
      const where = first.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "");
      const rowIndex = first.path[0] === "rows" && typeof first.path[1] === "number" ? first.path[1] : undefined;
      const id = rowIndex === undefined ? undefined : ((data as { rows?: { id?: unknown }[] }).rows?.[rowIndex]?.id);
      throw invalid(`${name}: ${where}${typeof id === "string" ? ` (${id})` : ""}: ${first.message}`);
    }
    for (const row of parsed.data.rows) {
      const before = seen.get(row.id);
      if (before !== undefined) throw invalid(`${name}: row ${row.id} is also in ${before}`);
      seen.set(row.id, name);
      rows.push(stripUndefined(row));
    }
  }
  if (!seen.has(FX_ROW_ID)) throw invalid(`the catalog has no ${FX_ROW_ID} row (the exchange rate totals convert with)`);
  return { version: 1, rows };
}

function stripUndefined(row: z.output<typeof CatalogRowSchema>): CatalogRow {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== undefined)) as unknown as CatalogRow;
}

/** The TypeScript module that embeds a validated catalog (core/cost/catalog-data.ts). */
export function catalogModuleText(catalog: Catalog): string {
  return [
    "// Generated by scripts/generate-cost-files.mjs from prices/*.yaml: do not edit. Edit the YAML, then run",
    "// `npm run build && npm run cost-files` (test/cost-catalog.test.ts fails while this file is stale).",
    'import type { Catalog } from "./types.js";',
    "",
    `export const PRICE_DATA: Catalog = ${JSON.stringify(catalog, null, 2)};`,
    "",
  ].join("\n");
}
