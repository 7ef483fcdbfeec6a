// Hydra override words: formatting values the way verl's scripts pass them, and parsing them back for
// comparisons. A word here is what the program receives after shell quote removal.
import type { HydraValue } from "../recipe/fields.js";

export type Scalar = string | number | boolean | null;

/** A number that must read back as a float (`1.0`, not `1`): verl's float fields, written as scripts do. */
export class HydraFloat {
  constructor(readonly value: number) {}
}

export type RenderValue = HydraValue | HydraFloat;

export interface Override {
  /** Key with its prefix, e.g. "+custom_reward_function.reward_kwargs.return_dict". */
  readonly key: string;
  readonly value: RenderValue;
}

const UNQUOTED = /^[A-Za-z0-9_/.:@%\-+]+$/;
const LOOKS_TYPED = /^(?:[+-]?(?:\d[\d_]*)?\.?\d+(?:[eE][+-]?\d+)?|[+-]?\d+\.|true|false|null|nan|[+-]?inf)$/i;

function formatScalar(v: Scalar | HydraFloat): string {
  if (v instanceof HydraFloat) return formatFloat(v.value);
  if (v === null) return "null";
  if (typeof v === "boolean") return v ? "True" : "False";
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : formatFloat(v);
  if (v !== "" && UNQUOTED.test(v) && !LOOKS_TYPED.test(v)) return v;
  // Quoted: Hydra keeps it a string. Single quotes inside are escaped; `${` stays an interpolation on purpose.
  // Hydra treats a backslash literally unless it precedes a quote or ends the string.
  return `'${v.replace(/\\+(?='|$)/g, (m) => m + m).replace(/'/g, "\\'")}'`;
}

export function formatFloat(n: number): string {
  if (!Number.isFinite(n)) throw new Error(`non-finite float ${n}`);
  const s = String(n);
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

export function formatValue(v: RenderValue): string {
  if (Array.isArray(v)) return `[${v.map((x) => formatScalar(x)).join(",")}]`;
  return formatScalar(v as Scalar | HydraFloat);
}

export function overrideWord(o: Override): string {
  return `${o.key}=${formatValue(o.value)}`;
}

// ------------------------------------------------------------------ parsing (for golden and conformance tests)

/** Split `key=value` (first '='). */
export function splitOverride(word: string): { key: string; value: string } {
  const i = word.indexOf("=");
  if (i < 0) return { key: word, value: "" };
  return { key: word.slice(0, i), value: word.slice(i + 1) };
}

/**
 * Parse a Hydra override value into JSON terms: lists, quoted strings, booleans (any case), null, numbers.
 * Enough of Hydra's grammar to compare the values verl scripts pass; not a general parser.
 */
export function parseValue(text: string): Scalar | Scalar[] {
  const t = text.trim();
  if (t.startsWith("[") && t.endsWith("]")) {
    const inner = t.slice(1, -1).trim();
    if (inner === "") return [];
    return splitTopLevel(inner).map((x) => parseScalar(x.trim()));
  }
  return parseScalar(t);
}

function parseScalar(t: string): Scalar {
  if ((t.startsWith("'") && t.endsWith("'") && t.length >= 2) || (t.startsWith('"') && t.endsWith('"') && t.length >= 2)) {
    return t.slice(1, -1).replace(/\\(['"\\])/g, "$1");
  }
  if (/^true$/i.test(t)) return true;
  if (/^false$/i.test(t)) return false;
  if (/^null$/i.test(t)) return null;
  if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t)) return Number(t);
  return t;
}

function splitTopLevel(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote !== null) {
      cur += c;
      if (c === "\\" && i + 1 < s.length) { cur += s[++i]; continue; }
      if (c === quote) quote = null;
      continue;
    }
    if (c === "'" || c === '"') { quote = c; cur += c; continue; }
    if (c === "[" || c === "{") depth++;
    if (c === "]" || c === "}") depth--;
    if (c === "," && depth === 0) { out.push(cur); cur = ""; continue; }
    cur += c;
  }
  out.push(cur);
  return out;
}

/** Canonical text of a parsed value, for set comparisons: `key=<json>`. */
export function canonicalOverride(word: string): string {
  const { key, value } = splitOverride(word);
  return `${key}=${JSON.stringify(parseValue(value))}`;
}
