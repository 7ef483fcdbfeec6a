// `rlpipe cost --rates FILE`: rates the user knows (a quote, a contract, a price read today) in a YAML file with
// the same entries as a recipe's `prices:` — either that list itself or a mapping with `prices:` — so an entry can
// move between the two unchanged. They become user rates (confidence "user", basis "user" in the report) that
// override catalog rows of the same id. Bad entries are RecipeErrors with file:line:col, like a recipe's.
import { LineCounter, parseDocument } from "yaml";
import { type LocatedIssue, RecipeError, type RecipeIssue } from "../errors.js";
import { describeValue } from "../recipe/load.js";
import { RecipeSchema } from "../recipe/schema.js";
import { sourceMapOf } from "../recipe/source.js";
import type { Rate } from "./types.js";

/** A rates file is a page of YAML, not a catalog dump. */
const MAX_RATES_BYTES = 256 * 1024;

const Entries = RecipeSchema.shape.prices.unwrap();
export type PriceEntry = NonNullable<ReturnType<typeof Entries.parse>>[number];

function located(file: string, issues: RecipeIssue[], locate?: (i: RecipeIssue) => { line: number; col: number } | undefined): RecipeError {
  return new RecipeError(file, issues.map((i): LocatedIssue => ({ ...i, file, ...(locate?.(i) ?? {}) })));
}

/** The entries of a rates file, validated; `file` names it in errors. */
export function parseRatesFile(text: string, file: string): PriceEntry[] {
  if (Buffer.byteLength(text) > MAX_RATES_BYTES) throw located(file, [{ severity: "error", code: "rates_too_large", path: [], message: `a rates file is at most ${MAX_RATES_BYTES} bytes` }]);
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    throw new RecipeError(file, [{
      severity: "error", code: "yaml_syntax", path: [], message: e.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, ""),
      hint: "fix the YAML syntax (indentation, quoting, a missing ':')", file, line: e.linePos?.[0].line, col: e.linePos?.[0].col,
    }]);
  }
  const source = sourceMapOf(doc, lines);
  const data: unknown = doc.toJS({ maxAliasCount: 50 });
  const wrapped = data !== null && typeof data === "object" && !Array.isArray(data);
  if (wrapped && Object.keys(data).some((k) => k !== "prices")) {
    const extra = Object.keys(data).filter((k) => k !== "prices");
    throw located(file, extra.map((k) => ({ severity: "error", code: "unknown_key", path: [k], message: `unknown key ${JSON.stringify(k)}`, hint: "a rates file holds prices: (a list), or the list itself" })), (i) => source.locate(i.path, "key"));
  }
  const list = wrapped ? (data as { prices?: unknown }).prices : data;
  const base = wrapped ? ["prices"] : [];
  if (!Array.isArray(list)) {
    throw located(file, [{ severity: "error", code: "invalid_type", path: base, message: `expected a list of rates, got ${describeValue(list)}`, hint: "- {item: modelarts:<flavor>, value: 25.5, currency: CNY, unit: node-hour, source: \"quote 2026-07\"}" }], (i) => source.locate(i.path));
  }
  const parsed = Entries.safeParse(list);
  if (!parsed.success) {
    throw located(file, parsed.error.issues.map((z) => {
      const at = [...base, ...z.path.filter((p): p is string | number => typeof p !== "symbol")];
      const hint = "an entry is {item, value, currency: CNY|USD, unit, source?, region?, dateRead?: YYYY-MM-DD}";
      if (z.code === "unrecognized_keys") return { severity: "error" as const, code: "unknown_key", path: [...at, z.keys[0]!], message: `unknown key ${JSON.stringify(z.keys[0])}`, hint };
      const found = at.reduce<unknown>((d, k) => (d !== null && typeof d === "object" ? (d as Record<string | number, unknown>)[k] : undefined), data);
      return { severity: "error" as const, code: z.code, path: at, message: found === undefined && z.code === "invalid_type" ? `missing required field ${JSON.stringify(at[at.length - 1])}` : `${z.message}${found === undefined ? "" : `, got ${describeValue(found)}`}`, hint };
    }), (i) => source.locate(i.path, i.code === "unknown_key" ? "key" : "value"));
  }
  return parsed.data as PriceEntry[];
}

/** Entries as user rates: id = item; the source says the file; dated today unless the entry says when. */
export function userRates(entries: readonly PriceEntry[], file: string, today: string): Rate[] {
  return entries.map((e) => ({
    id: e.item, value: e.value, currency: e.currency, unit: e.unit,
    source: e.source === undefined ? `--rates ${file}` : `${e.source} (--rates ${file})`,
    dateRead: e.dateRead ?? today, confidence: "user" as const, ...(e.region === undefined ? {} : { region: e.region }),
  }));
}
