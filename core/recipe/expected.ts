// "What to write instead" for a value of the wrong type or out of range, read from the field's zod schema:
// the kind of value, its allowed range, and an example that the schema accepts.
import type { z } from "zod";
import { unwrap } from "./introspect.js";

type AnySchema = z.ZodType;
interface Def { type: string; [k: string]: unknown }
const defOf = (s: AnySchema): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

interface NumberBounds { int: boolean; min?: number; minInclusive?: boolean; max?: number; maxInclusive?: boolean }

function numberBounds(s: AnySchema): NumberBounds {
  const b: NumberBounds = { int: false };
  for (const c of (defOf(s)["checks"] as AnySchema[] | undefined) ?? []) {
    const d = defOf(c) as Def & { check?: string; value?: number; inclusive?: boolean; format?: string };
    if (d.check === "number_format" && /int/.test(d.format ?? "")) b.int = true;
    else if (d.check === "greater_than" && d.value !== undefined) { b.min = d.value; b.minInclusive = d.inclusive === true; }
    else if (d.check === "less_than" && d.value !== undefined) { b.max = d.value; b.maxInclusive = d.inclusive === true; }
  }
  // A whole number greater than 0 is one of at least 1: say it the way the author counts.
  if (b.int && b.min !== undefined && b.minInclusive === false) { b.min += 1; b.minInclusive = true; }
  if (b.int && b.max !== undefined && b.maxInclusive === false) { b.max -= 1; b.maxInclusive = true; }
  return b;
}

/** "from 1 to 65535", "greater than 0 and at most 1", "of 1 or more"; "" when unbounded. */
export function rangeText(b: NumberBounds): string {
  if (b.min !== undefined && b.max !== undefined && b.minInclusive === true && b.maxInclusive === true) return `from ${b.min} to ${b.max}`;
  if (b.min !== undefined && b.max === undefined && b.minInclusive === true) return `of ${b.min} or more`;
  const lo = b.min === undefined ? undefined : b.minInclusive === true ? `at least ${b.min}` : `greater than ${b.min}`;
  const hi = b.max === undefined ? undefined : b.maxInclusive === true ? `at most ${b.max}` : `less than ${b.max}`;
  return [lo, hi].filter((x) => x !== undefined).join(" and ");
}

const NUMBER_EXAMPLES = [2, 8, 0.5, 1, 0, 100, 8080, -1];
const STRING_EXAMPLES = ["my-name", "my_name", "MY_NAME", "value", "https://example.com", "main"];

/** The first example the schema accepts. */
function example(s: AnySchema, candidates: readonly unknown[]): unknown {
  return candidates.find((c) => s.safeParse(c).success);
}

/**
 * What to write at a field whose value was rejected, e.g. `write a whole number, 1 or more, such as 2 (no quotes)`.
 * Undefined for schemas this cannot describe better than the message (unions of many kinds, free-form values).
 */
export function whatToWrite(field: AnySchema | undefined, found: unknown): string | undefined {
  if (field === undefined) return undefined;
  const s = unwrap(field);
  const def = defOf(s);
  switch (def.type) {
    case "number": {
      const b = numberBounds(s);
      const range = rangeText(b);
      const kind = `${b.int ? "a whole number" : "a number"}${range === "" ? "" : ` ${range}`}`;
      // A number written in quotes is a string in YAML: the fix is to drop the quotes.
      if (typeof found === "string" && found.trim() !== "" && s.safeParse(Number(found)).success) return `write ${Number(found)} without quotes: quoted, it is text, not a number`;
      const ex = example(s, NUMBER_EXAMPLES);
      return `write ${kind}${ex === undefined ? "" : `, such as ${String(ex)}`} (no quotes)`;
    }
    case "boolean":
      return typeof found === "string" && /^(true|false)$/i.test(found) ? `write ${found.toLowerCase()} without quotes` : "write true or false (no quotes)";
    case "string": {
      if (found !== null && typeof found === "object") return `write a single value on this line, not ${Array.isArray(found) ? "a list" : "a mapping"}`;
      const ex = example(s, STRING_EXAMPLES);
      return `write text${ex === undefined ? "" : ` such as ${String(ex)}`} (quote it when it contains ": " or " #", or looks like a number)`;
    }
    case "enum": {
      const values = Object.values(def["entries"] as Record<string, string>);
      return `write one of: ${values.join(", ")}`;
    }
    case "array":
      return "write a list: one \"- item\" per line indented under this key, or [a, b] on the same line";
    case "object":
    case "record":
      return "write a mapping: \"key: value\" lines indented under this key";
    default:
      return undefined;
  }
}
