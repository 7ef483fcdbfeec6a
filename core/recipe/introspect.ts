// Walks the zod schema along a recipe path, so errors can name allowed keys and carry the field's description.
import type { z } from "zod";

type AnySchema = z.ZodType;
interface Def { type: string; [k: string]: unknown }
const defOf = (s: AnySchema): Def => (s as unknown as { _zod: { def: Def } })._zod.def;

/** Strip wrappers (optional, default, nullable, readonly, lazy, pipe) down to the structural schema. */
export function unwrap(s: AnySchema): AnySchema {
  for (;;) {
    const def = defOf(s);
    if (def.type === "optional" || def.type === "default" || def.type === "nullable" || def.type === "readonly" || def.type === "prefault" || def.type === "nonoptional") {
      s = def["innerType"] as AnySchema;
    } else if (def.type === "lazy") {
      s = (def["getter"] as () => AnySchema)();
    } else if (def.type === "pipe") {
      s = def["in"] as AnySchema;
    } else {
      return s;
    }
  }
}

/** For a union, the option that fits `data` best: the discriminator's match, else the first object option. */
function pickOption(s: AnySchema, data: unknown): AnySchema | undefined {
  const def = defOf(s);
  const options = def["options"] as AnySchema[];
  const disc = def["discriminator"] as string | undefined;
  if (disc !== undefined && data !== null && typeof data === "object") {
    const want = (data as Record<string, unknown>)[disc];
    for (const o of options) {
      const shape = objectShape(o);
      const lit = shape?.[disc];
      if (lit !== undefined && (defOf(unwrap(lit))["values"] as unknown[] | undefined)?.includes(want)) return o;
    }
    return undefined;
  }
  if (Array.isArray(data)) return options.find((o) => defOf(unwrap(o)).type === "array");
  if (data !== null && typeof data === "object") return options.find((o) => defOf(unwrap(o)).type === "object" || defOf(unwrap(o)).type === "record");
  return options[0];
}

function objectShape(s: AnySchema): Record<string, AnySchema> | undefined {
  const u = unwrap(s);
  const def = defOf(u);
  return def.type === "object" ? (def["shape"] as Record<string, AnySchema>) : undefined;
}

/** The schema at `path`, resolving unions with the actual data. */
export function schemaAt(root: AnySchema, path: readonly (string | number)[], data: unknown): AnySchema | undefined {
  let s: AnySchema | undefined = root;
  let d: unknown = data;
  for (const part of path) {
    if (s === undefined) return undefined;
    let u = unwrap(s);
    if (defOf(u).type === "union") {
      const picked = pickOption(u, d);
      if (picked === undefined) return undefined;
      u = unwrap(picked);
    }
    const def = defOf(u);
    if (def.type === "object") s = (def["shape"] as Record<string, AnySchema>)[String(part)];
    else if (def.type === "array") s = def["element"] as AnySchema;
    else if (def.type === "record") s = def["valueType"] as AnySchema;
    else return undefined;
    d = d !== null && typeof d === "object" ? (d as Record<string | number, unknown>)[part] : undefined;
  }
  return s;
}

/** Allowed keys of the object schema at `path` (empty when it is not an object). */
export function keysAt(root: AnySchema, path: readonly (string | number)[], data: unknown): string[] {
  const s = schemaAt(root, path, data);
  if (s === undefined) return [];
  let u = unwrap(s);
  if (defOf(u).type === "union") {
    let d: unknown = data;
    for (const p of path) d = d !== null && typeof d === "object" ? (d as Record<string | number, unknown>)[p] : undefined;
    const picked = pickOption(u, d);
    // No option fits yet (a stage without its `type`): every option's keys are allowed.
    if (picked === undefined) return [...new Set((defOf(u)["options"] as AnySchema[]).flatMap((o) => Object.keys(objectShape(o) ?? {})))];
    u = unwrap(picked);
  }
  const shape = objectShape(u);
  return shape === undefined ? [] : Object.keys(shape);
}

/** The description attached with `.describe()`, looking through wrappers. */
export function descriptionOf(s: AnySchema | undefined): string | undefined {
  let cur: AnySchema | undefined = s;
  for (let i = 0; cur !== undefined && i < 8; i++) {
    if (cur.description !== undefined) return cur.description;
    const def = defOf(cur);
    cur = (def["innerType"] ?? def["in"]) as AnySchema | undefined;
  }
  return undefined;
}
