// The vendors' own request and response models, for the loopback fakes (issue 33): test/vendor-models/<service>.json
// is extracted from the official SDK packages by scripts/vendor-models.py (it names the package and version), so a
// fake checks a request against what the vendor's SDK says the API takes, not against what rlpipe sends. A fake
// maps each problem found to its service's documented error (unknown field, missing required field, wrong type, a
// value outside the documented enum).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers.js";

export interface VendorField {
  /** "string", "integer", "number", "boolean", "object", "array<T>", "map<string,T>", or a model's name. */
  readonly type: string;
  /** true or false where the SDK says; null where it does not. */
  readonly required: boolean | null;
  readonly enum?: readonly string[];
  readonly doc?: string;
}
export interface VendorModel { readonly fields: Readonly<Record<string, VendorField>> }
export interface VendorModels {
  readonly sdk: { readonly package: string; readonly version: string; readonly source: string };
  readonly models: Readonly<Record<string, VendorModel>>;
  readonly errors?: unknown;
}

export type VendorService = "functiongraph" | "iam" | "modelarts" | "scf" | "cam" | "tione";

const cache = new Map<VendorService, VendorModels>();

/** The extract of one service's SDK models (read once). */
export function vendorModels(service: VendorService): VendorModels {
  let m = cache.get(service);
  if (m === undefined) {
    m = JSON.parse(readFileSync(join(ROOT, "test", "vendor-models", `${service}.json`), "utf8")) as VendorModels;
    cache.set(service, m);
  }
  return m;
}

export interface ModelProblem {
  readonly kind: "unknown_field" | "missing_field" | "wrong_type" | "not_in_enum";
  /** The field's path on the wire: "event_data.func_info.timeout", "EnvConfig[2].IsPrivate". */
  readonly field: string;
  readonly message: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

/**
 * The first way `value` departs from model `name` of `service`, or undefined. Fields are checked by their wire names;
 * an absent optional field is fine, null counts as absent (the SDKs serialize unset fields as null or leave them out).
 * `extraRequired` adds what the API pages require but the SDK does not encode (say so where it is used).
 */
export function checkModel(service: VendorService, name: string, value: unknown, opts: { readonly at?: string; readonly extraRequired?: readonly string[]; readonly extraEnum?: Readonly<Record<string, readonly string[]>> } = {}): ModelProblem | undefined {
  const models = vendorModels(service).models;
  const at = opts.at ?? "";
  return checkType(models, name, value, at, opts.extraRequired ?? [], opts.extraEnum ?? {});
}

/** `extraEnum`: values a field (by its path, "event_data.events[]" for an array's items) takes beyond the SDK's enum,
 * where the API page documents more than the SDK release does (the caller names the page). */
function checkType(models: VendorModels["models"], type: string, value: unknown, at: string, extraRequired: readonly string[], extraEnum: Readonly<Record<string, readonly string[]>>): ModelProblem | undefined {
  const wrong = (what: string): ModelProblem => ({ kind: "wrong_type", field: at, message: `${at || "the body"} must be ${what}` });
  const array = /^array<(.+)>$/.exec(type);
  if (array !== null) {
    if (!Array.isArray(value)) return wrong(`an array of ${array[1]}`);
    for (let i = 0; i < value.length; i++) {
      const p = checkType(models, array[1]!, value[i], `${at}[${i}]`, [], extraEnum);
      if (p !== undefined) return p;
    }
    return undefined;
  }
  const map = /^map<string,(.+)>$/.exec(type);
  if (map !== null) {
    if (!isRecord(value)) return wrong("an object");
    for (const [k, v] of Object.entries(value)) {
      const p = checkType(models, map[1]!, v, `${at}.${k}`, [], extraEnum);
      if (p !== undefined) return p;
    }
    return undefined;
  }
  switch (type) {
    case "string": return typeof value === "string" ? undefined : wrong("a string");
    case "integer": return typeof value === "number" && Number.isInteger(value) ? undefined : wrong("an integer");
    case "number": return typeof value === "number" && Number.isFinite(value) ? undefined : wrong("a number");
    case "boolean": return typeof value === "boolean" ? undefined : wrong("a boolean");
    case "object": return isRecord(value) ? undefined : wrong("an object");
    default: break;
  }
  const model = models[type];
  if (model === undefined) throw new Error(`test/vendor-models: no model ${type} (regenerate with scripts/vendor-models.py)`);
  if (!isRecord(value)) return wrong(`an object (${type})`);
  const path = (k: string) => (at === "" ? k : `${at}.${k}`);
  for (const k of Object.keys(value).sort()) {
    if (!(k in model.fields)) return { kind: "unknown_field", field: path(k), message: `${path(k)} is not a field of ${type}` };
  }
  for (const [k, f] of Object.entries(model.fields).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const v = value[k];
    if (v === undefined || v === null) {
      if (f.required === true || extraRequired.includes(k)) return { kind: "missing_field", field: path(k), message: `${path(k)} is required (${type})` };
      continue;
    }
    const p = checkType(models, f.type, v, path(k), [], extraEnum);
    if (p !== undefined) return p;
    const allowed = [...(f.enum ?? []).map(String), ...(extraEnum[path(k)] ?? [])];
    const items = Array.isArray(v) ? v : [v];
    const where = Array.isArray(v) ? `${path(k)}[]` : path(k);
    const more = extraEnum[where] ?? [];
    for (const item of items) {
      if (f.enum !== undefined && f.enum.length > 0 && (typeof item === "string" || typeof item === "number") && ![...allowed, ...more].includes(String(item))) {
        return { kind: "not_in_enum", field: path(k), message: `${path(k)} must be one of ${[...allowed, ...more].join(", ")}, got ${String(item)}` };
      }
    }
  }
  return undefined;
}
