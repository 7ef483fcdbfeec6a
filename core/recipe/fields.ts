// Field constructors with messages in the recipe author's terms ("expected a positive integer").
// The loader appends ", got <value>" and a hint, so messages here say only what was expected.
import { z } from "zod";

const err = (message: string) => ({ error: message });

export const posInt = () => {
  const m = "expected a positive integer";
  return z.number(err(m)).int(err(m)).positive(err(m));
};

export const port = () => {
  const m = "expected a TCP port (1–65535)";
  return z.number(err(m)).int(err(m)).min(1, err(m)).max(65535, err(m));
};

/** An http(s) URL, checked where the recipe is read rather than where a renderer would trip over it. */
export const httpUrl = () => z.string(err("expected a URL")).refine((v) => {
  try { const u = new URL(v); return (u.protocol === "http:" || u.protocol === "https:") && u.hostname !== ""; } catch { return false; }
}, { error: "expected an http:// or https:// URL" });

export const nonNegInt = () => {
  const m = "expected a non-negative integer";
  return z.number(err(m)).int(err(m)).nonnegative(err(m));
};

export const nonNegNumber = () => {
  const m = "expected a non-negative number";
  return z.number(err(m)).nonnegative(err(m));
};

export const posNumber = () => {
  const m = "expected a positive number";
  return z.number(err(m)).positive(err(m));
};

/** A fraction in (0, 1], e.g. a GPU memory share. */
export const fraction = () => {
  const m = "expected a number greater than 0 and at most 1";
  return z.number(err(m)).gt(0, err(m)).lte(1, err(m));
};

export const bool = () => z.boolean(err("expected true or false"));

export const text = () => {
  const m = "expected a non-empty string";
  return z.string(err(m)).min(1, err(m));
};

/** Lower-case identifier used for names that become file names, job names and references. */
export const slug = () => {
  const m = "expected a lower-case name of letters, digits, '-', '_' or '.' (starting with a letter or digit)";
  return z.string(err(m)).regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, err(m));
};

/** Identifier for stage ids, tool names, model and dataset keys (usable inside `${...}` references). */
export const ident = () => {
  const m = "expected a name of letters, digits, '_' or '-' (starting with a letter)";
  return z.string(err(m)).regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, err(m));
};

export const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, err(`expected one of ${values.join(", ")}`));

/** Environment variable name (POSIX). */
export const envName = () => {
  const m = "expected an environment variable name (letters, digits and '_', not starting with a digit)";
  return z.string(err(m)).regex(/^[A-Za-z_][A-Za-z0-9_]*$/, err(m));
};

/** A Hydra/OmegaConf scalar or list value as written in a recipe. */
export const hydraValue = (): z.ZodType<HydraValue> =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(z.union([z.string(), z.number(), z.boolean()]))], err("expected a string, number, boolean, null or a list of those"));

export type HydraValue = string | number | boolean | null | readonly (string | number | boolean)[];

/** JSON-like value for free-form config blocks (tool configs, health-check bodies, reward kwargs). */
export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [k: string]: JsonValue };
const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(JsonValueSchema), z.record(z.string(), JsonValueSchema)]));
/** One shared recursive schema (a fresh lazy per level would recurse forever in toJSONSchema). */
export const jsonValue = (): z.ZodType<JsonValue> => JsonValueSchema;
