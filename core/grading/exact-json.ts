// JSON that keeps every integer exactly. JSON.parse turns 12345678901234567891 into 12345678901234567000, so a
// function-call answer one past 2^53 would compare equal to the expected value, and an argument that large would
// reach the program rounded. Here an integer literal outside ±(2^53 − 1) becomes a bigint; every other value is what
// JSON.parse gives. stringifyJson writes bigints back as the same digits. (Node 20 has no JSON.parse source access.)

/** Any JSON value as parseJsonExact returns it: JSON.parse's values, with unsafe integers as bigint. */
export type ExactJson = null | boolean | number | bigint | string | readonly ExactJson[] | { readonly [k: string]: ExactJson };

export class JsonSyntaxError extends SyntaxError {
  readonly code = "invalid_json";
}

/** A run of 16 or more digits: the only way a JSON text can hold an integer JSON.parse would round. */
const LONG_DIGITS = /\d{16}/;

/**
 * JSON.parse, except that integers beyond Number.MAX_SAFE_INTEGER are bigints. `NaN`, `Infinity` and `-Infinity`
 * are read as Python's json module writes them when `allowNonFinite` is set (a harness's return value), never in a
 * request.
 */
export function parseJsonExact(text: string, options: { readonly allowNonFinite?: boolean } = {}): ExactJson {
  if (options.allowNonFinite !== true && !LONG_DIGITS.test(text)) return JSON.parse(text) as ExactJson;
  const p = new Parser(text, options.allowNonFinite === true);
  p.ws();
  const v = p.value(0);
  p.ws();
  if (p.i !== text.length) p.fail("unexpected text after the JSON value");
  return v;
}

const MAX_DEPTH = 4_000;
const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

class Parser {
  i = 0;
  constructor(private readonly t: string, private readonly nonFinite: boolean) {}

  fail(what: string): never {
    throw new JsonSyntaxError(`${what} at position ${this.i}`);
  }

  ws(): void {
    const t = this.t;
    while (this.i < t.length) {
      const c = t.charCodeAt(this.i);
      if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
      this.i++;
    }
  }

  value(depth: number): ExactJson {
    if (depth > MAX_DEPTH) this.fail("JSON nested too deeply");
    const t = this.t;
    const c = t[this.i];
    if (c === "{") return this.object(depth);
    if (c === "[") return this.array(depth);
    if (c === "\"") return this.string();
    for (const [word, v] of LITERALS) {
      if (t.startsWith(word, this.i)) {
        if (!this.nonFinite && typeof v === "number" && !Number.isFinite(v)) break;
        this.i += word.length;
        return v;
      }
    }
    NUMBER.lastIndex = this.i;
    const m = NUMBER.exec(t);
    if (m === null) this.fail("expected a JSON value");
    this.i += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const n = Number(m[0]);
      return Number.isSafeInteger(n) ? n : BigInt(m[0]);
    }
    return Number(m[0]);
  }

  string(): string {
    // The string's extent, then JSON.parse for its escapes: exact and fast.
    const t = this.t;
    let j = this.i + 1;
    for (;;) {
      if (j >= t.length) this.fail("unterminated string");
      const c = t.charCodeAt(j);
      if (c === 0x22) break;
      j += c === 0x5c ? 2 : 1;
    }
    const s = JSON.parse(t.slice(this.i, j + 1)) as string;
    this.i = j + 1;
    return s;
  }

  array(depth: number): ExactJson[] {
    this.i++;
    const out: ExactJson[] = [];
    this.ws();
    if (this.t[this.i] === "]") { this.i++; return out; }
    for (;;) {
      this.ws();
      out.push(this.value(depth + 1));
      this.ws();
      const c = this.t[this.i++];
      if (c === "]") return out;
      if (c !== ",") { this.i--; this.fail("expected , or ]"); }
    }
  }

  object(depth: number): { [k: string]: ExactJson } {
    this.i++;
    const out: { [k: string]: ExactJson } = {};
    this.ws();
    if (this.t[this.i] === "}") { this.i++; return out; }
    for (;;) {
      this.ws();
      if (this.t[this.i] !== "\"") this.fail("expected a string key");
      const k = this.string();
      this.ws();
      if (this.t[this.i++] !== ":") { this.i--; this.fail("expected :"); }
      this.ws();
      // As JSON.parse: a repeated key keeps the last value; "__proto__" is an own property.
      Object.defineProperty(out, k, { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
      this.ws();
      const c = this.t[this.i++];
      if (c === "}") return out;
      if (c !== ",") { this.i--; this.fail("expected , or }"); }
    }
  }
}

const LITERALS: readonly (readonly [string, ExactJson])[] = [
  ["true", true], ["false", false], ["null", null], ["NaN", NaN], ["Infinity", Infinity], ["-Infinity", -Infinity],
];

/**
 * JSON.stringify that writes bigints as their digits. Non-finite numbers become null, as JSON.stringify does.
 * Used where parsed test data goes on (to a harness, a remote sandbox, a reply).
 */
export function stringifyJson(value: unknown): string {
  if (!containsBigint(value, 0)) return JSON.stringify(value) ?? "null";
  const parts: string[] = [];
  write(value, parts);
  return parts.join("");
}

function containsBigint(v: unknown, depth: number): boolean {
  if (typeof v === "bigint") return true;
  if (v === null || typeof v !== "object" || depth > 64) return depth > 64;
  if (Array.isArray(v)) return v.some((x) => containsBigint(x, depth + 1));
  return Object.values(v as Record<string, unknown>).some((x) => containsBigint(x, depth + 1));
}

function write(v: unknown, out: string[]): void {
  if (typeof v === "bigint") { out.push(v.toString()); return; }
  if (v === null || typeof v !== "object") {
    if (typeof v === "function" || typeof v === "symbol" || v === undefined) { out.push("null"); return; }
    out.push(JSON.stringify(v));
    return;
  }
  if (typeof (v as { toJSON?: unknown }).toJSON === "function") { write((v as { toJSON(): unknown }).toJSON(), out); return; }
  if (Array.isArray(v)) {
    out.push("[");
    v.forEach((x, i) => { if (i > 0) out.push(","); write(x, out); });
    out.push("]");
    return;
  }
  out.push("{");
  let first = true;
  for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
    if (x === undefined || typeof x === "function" || typeof x === "symbol") continue;
    if (!first) out.push(",");
    first = false;
    out.push(JSON.stringify(k), ":");
    write(x, out);
  }
  out.push("}");
}
