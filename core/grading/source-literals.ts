// Source text of the C family (C++, Java, Rust, Go, JavaScript) as tokens, and the literal values MultiPL-E's tests
// write in it as exact JSON: `(std::vector<long>({(long)1, (long)2}))`, `new ArrayList<Long>(Arrays.asList(1l))`,
// `vec![String::from("a")]`, `[]int{1, 2}`, `{"a": 2}`. Used to take an assert's expected value out of the program
// (tail-asserts.ts): the value is compared outside the sandbox and never enters it. Pure.
import type { ExactJson } from "./exact-json.js";

export type SourceLanguage = "cpp" | "java" | "rust" | "go" | "nodejs";

export interface Token {
  readonly kind: "id" | "num" | "str" | "char" | "punct";
  readonly text: string;
  /** Offset in the scanned text. */
  readonly at: number;
  /** The decoded value of a string or character literal. */
  readonly value?: string;
}

export class NotALiteral extends Error {
  readonly code = "not_a_literal";
}

const NUM = /(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*(?:\.(?!\.)\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[A-Za-z0-9_]*/y;
const ID = /[A-Za-z_$][A-Za-z0-9_$]*/y;
const PUNCT2 = new Set(["::", "==", "!=", "=>", "->", "<=", ">=", "&&", "||", ":="]);

/** Tokens of `text` (comments dropped). Throws NotALiteral on text it cannot scan (an unterminated string). */
export function tokenize(text: string, language: SourceLanguage): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") { i++; continue; }
    if (text.startsWith("//", i)) { const e = text.indexOf("\n", i); i = e < 0 ? text.length : e; continue; }
    if (text.startsWith("/*", i)) { const e = text.indexOf("*/", i + 2); if (e < 0) throw new NotALiteral("unterminated comment"); i = e + 2; continue; }
    if (c === "\"" || (c === "'" && language === "nodejs") || (c === "`" && (language === "nodejs" || language === "go"))) {
      const [value, end] = quoted(text, i, c, language);
      out.push({ kind: "str", text: text.slice(i, end), at: i, value });
      i = end;
      continue;
    }
    if (c === "'") {
      // A character literal (C++, Java, Go's rune, Rust's char); Rust's lifetimes ('a without a closing quote) are not.
      const m = /'(?:\\(?:u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'/y;
      m.lastIndex = i;
      const hit = m.exec(text);
      if (hit === null) throw new NotALiteral(`not a character literal at ${i}`);
      out.push({ kind: "char", text: hit[0], at: i, value: unescape(hit[0].slice(1, -1), language) });
      i += hit[0].length;
      continue;
    }
    if (language === "rust" && (text.startsWith("r\"", i) || text.startsWith("r#", i))) {
      const m = /r(#*)"([\s\S]*?)"\1/y;
      m.lastIndex = i;
      const hit = m.exec(text);
      if (hit !== null) { out.push({ kind: "str", text: hit[0], at: i, value: hit[2]! }); i += hit[0].length; continue; }
    }
    NUM.lastIndex = i;
    const num = /[0-9]/.test(c) || (c === "." && /[0-9]/.test(text[i + 1] ?? "")) ? NUM.exec(text) : null;
    if (num !== null) { out.push({ kind: "num", text: num[0], at: i }); i += num[0].length; continue; }
    ID.lastIndex = i;
    const id = ID.exec(text);
    if (id !== null) { out.push({ kind: "id", text: id[0], at: i }); i += id[0].length; continue; }
    const two = text.slice(i, i + 2);
    if (PUNCT2.has(two)) { out.push({ kind: "punct", text: two, at: i }); i += 2; continue; }
    out.push({ kind: "punct", text: c, at: i });
    i++;
  }
  return out;
}

function quoted(text: string, start: number, q: string, language: SourceLanguage): [string, number] {
  let j = start + 1;
  while (j < text.length && text[j] !== q) {
    if (text[j] === "\\" && q !== "`") j++;
    else if (text[j] === "\n" && q !== "`" && language !== "rust") throw new NotALiteral(`a line break inside a string at ${j}`);
    j++;
  }
  if (j >= text.length) throw new NotALiteral(`unterminated string at ${start}`);
  const body = text.slice(start + 1, j);
  if (q === "`" && language === "nodejs" && body.includes("${")) throw new NotALiteral("a template string with substitutions");
  return [q === "`" ? body : unescape(body, language), j + 1];
}

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = { n: "\n", t: "\t", r: "\r", "0": "\0", b: "\b", f: "\f", v: "\v", a: "\x07", "\\": "\\", "'": "'", "\"": "\"", "?": "?", "\n": "" };

function unescape(body: string, _language: SourceLanguage): string {
  if (!body.includes("\\")) return body;
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") { out += c; continue; }
    const e = body[++i];
    if (e === undefined) throw new NotALiteral("a string ending in a backslash");
    if (e === "x") { out += String.fromCharCode(parseInt(body.slice(i + 1, i + 3), 16)); i += 2; continue; }
    if (e === "u" && body[i + 1] === "{") { const end = body.indexOf("}", i); out += String.fromCodePoint(parseInt(body.slice(i + 2, end), 16)); i = end; continue; }
    if (e === "u") { out += String.fromCharCode(parseInt(body.slice(i + 1, i + 5), 16)); i += 4; continue; }
    const s = SIMPLE_ESCAPES[e];
    if (s === undefined) throw new NotALiteral(`escape \\${e} in a string`);
    out += s;
  }
  return out;
}

/** The value a number token writes: an exact integer (bigint past 2^53) or a float; suffixes tell which. */
export function numberValue(text: string, language: SourceLanguage): number | bigint {
  let t = text.replace(/_/g, "");
  const hex = /^0[xXbBoO]/.test(t);
  let float = !hex && /[.eE]/.test(t.replace(/[fF]32$|[fF]64$/, "").replace(/[eE]$/, ""));
  // Suffixes: C++ and Java (f, d, l, L, u, LL), Rust (i32, u64, f64, usize…), JavaScript's BigInt n.
  const suffix = /^(.*?)((?:[uU]?[lL]{0,2}[uU]?)|[fFdD]|[iu](?:8|16|32|64|128|size)|f(?:32|64)|n)$/.exec(t);
  if (suffix !== null && suffix[2] !== "" && !(hex && /^[fFdD]$/.test(suffix[2]!))) {
    const s = suffix[2]!;
    t = suffix[1]!;
    if (/^[fFdD]$/.test(s) || /^f(?:32|64)$/.test(s)) float = true;
  }
  if (!float) {
    if (!/^(?:0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|\d+)$/.test(t)) throw new NotALiteral(`number ${text}`);
    // A JavaScript number literal is a double (9999999999999999 is 1e16 there), unless it is a BigInt (n).
    if (language === "nodejs" && !/n$/.test(text)) return Number(t);
    const big = BigInt(t);
    return big >= BigInt(Number.MIN_SAFE_INTEGER) && big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
  }
  const v = Number(t);
  if (!Number.isFinite(v)) throw new NotALiteral(`number ${text}`);
  return v;
}

/** A cursor over tokens with the literal grammar shared by the five languages. */
class LiteralParser {
  i = 0;
  constructor(private readonly tokens: readonly Token[], private readonly language: SourceLanguage) {}

  peek(k = 0): Token | undefined { return this.tokens[this.i + k]; }
  is(text: string, k = 0): boolean { const t = this.peek(k); return t !== undefined && t.kind !== "str" && t.kind !== "char" && t.text === text; }
  take(text: string): void { if (!this.is(text)) this.fail(`expected ${text}`); this.i++; }
  fail(why: string): never { throw new NotALiteral(`${why} at ${this.peek()?.text ?? "the end"}`); }
  done(): boolean { return this.i >= this.tokens.length; }

  /** Skips a generic argument list <…> (types are not values). */
  skipGenerics(): void {
    if (!this.is("<")) return;
    let depth = 0;
    do {
      const t = this.peek();
      if (t === undefined) this.fail("unterminated <");
      if (t.text === "<") depth++;
      else if (t.text === ">") depth--;
      else if (t.text === ">>") depth -= 2;
      this.i++;
    } while (depth > 0);
  }

  /** A type in parentheses before a value: `(long)`, `(std::vector<long>)`, `(ArrayList<Long>)`, `(float)`. */
  castAhead(): boolean {
    if (!this.is("(")) return false;
    let k = 1;
    let depth = 0;
    let sawName = false;
    for (;;) {
      const t = this.peek(k);
      if (t === undefined || t.kind === "str" || t.kind === "char" || t.kind === "num") return false;
      if (t.kind === "id") {
        if (depth === 0 && VALUE_WORDS.has(t.text)) return false;
        sawName = true;
      } else if (t.text === "<") depth++;
      else if (t.text === ">") depth--;
      else if (t.text === ">>") depth -= 2;
      else if (t.text === ")" && depth === 0) break;
      else if (![",", "::", "*", "&", "[", "]", "."].includes(t.text)) return false;
      k++;
    }
    const next = this.peek(k + 1);
    if (!sawName || next === undefined) return false;
    return next.kind !== "punct" || next.text === "(" || next.text === "-" || next.text === "{";
  }

  list(close: string): ExactJson[] {
    const out: ExactJson[] = [];
    if (this.is(close)) { this.i++; return out; }
    for (;;) {
      out.push(this.value());
      if (this.is(",")) { this.i++; if (this.is(close)) { this.i++; return out; } continue; }
      this.take(close);
      return out;
    }
  }

  /** One argument in parentheses: `(x)`. */
  single(): ExactJson {
    this.take("(");
    const items = this.list(")");
    if (items.length !== 1) this.fail("expected one value");
    return items[0]!;
  }

  value(): ExactJson {
    const t = this.peek();
    if (t === undefined) this.fail("expected a value");
    if (t.kind === "str" || t.kind === "char") {
      this.i++;
      // Rust's "x".to_string() / .to_owned() / .into(), Java's "x".toString()
      while (this.is(".") && this.peek(1)?.kind === "id" && ["to_string", "to_owned", "into", "toString", "String"].includes(this.peek(1)!.text) && this.is("(", 2) && this.is(")", 3)) this.i += 4;
      return t.value!;
    }
    if (t.kind === "num") { this.i++; return numberValue(t.text, this.language); }
    if (t.text === "-" || t.text === "+") {
      this.i++;
      const v = this.value();
      if (typeof v === "number") return t.text === "-" ? (v === 0 ? 0 : -v) : v;
      if (typeof v === "bigint") { const n = t.text === "-" ? -v : v; return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n; }
      this.fail("a sign before a value that is not a number");
    }
    if (t.text === "(") {
      if (this.castAhead()) {
        // A cast: the type is dropped, except that a cast to a floating type makes an integer a float (the same number).
        let depth = 0;
        do { const x = this.peek()!; if (x.text === "(") depth++; else if (x.text === ")") depth--; this.i++; } while (depth > 0);
        return this.value();
      }
      this.i++;
      const items = this.list(")");
      if (items.length === 1) return items[0]!;
      if (this.language === "rust" || this.language === "nodejs") return items; // a Rust tuple (a, b)
      this.fail("a comma expression");
    }
    if (t.text === "[") { this.i++; return this.list("]"); } // JavaScript arrays; Rust arrays [a, b]
    if (t.text === "{") {
      this.i++;
      return this.language === "nodejs" ? this.jsObject() : this.braced();
    }
    if (t.kind === "id") return this.named();
    this.fail("expected a value");
  }

  /** `{a, b}` (C++ brace initialisation, a Go composite literal's elided element type); `{k: v}` in Go maps. */
  braced(): ExactJson {
    const save = this.i;
    if (this.language === "go" && !this.is("}")) {
      // A map's body when its first value is followed by a colon.
      try {
        this.value();
        if (this.is(":")) {
          this.i = save;
          return this.goMapBody();
        }
      } catch (e) {
        if (!(e instanceof NotALiteral)) throw e;
      }
      this.i = save;
    }
    return this.list("}");
  }

  /** `key: value, …}` (the opening brace read), each key read by `key`, into an object. */
  keyValues(key: () => ExactJson): ExactJson {
    const out: Record<string, ExactJson> = {};
    if (this.is("}")) { this.i++; return out; }
    for (;;) {
      const k = key();
      this.take(":");
      setKey(out, k, this.value());
      if (this.is(",")) { this.i++; if (this.is("}")) { this.i++; return out; } continue; }
      this.take("}");
      return out;
    }
  }

  /** A Go map literal's body: its keys are values. */
  goMapBody(): ExactJson {
    return this.keyValues(() => this.value());
  }

  /** A JavaScript object: its keys are strings, names or numbers. */
  jsObject(): ExactJson {
    return this.keyValues(() => {
      const k = this.peek();
      if (k === undefined) this.fail("unterminated object");
      this.i++;
      if (k.kind === "str") return k.value!;
      if (k.kind === "num") return numberValue(k.text, "nodejs");
      if (k.kind === "id") return k.text;
      this.i--;
      this.fail("expected a key");
    });
  }

  /** A qualified name and what follows it: a keyword value, a constructor, a factory call, a macro. */
  named(): ExactJson {
    // Go composite literals start with a type: []T{…}, [][]T{…}, map[K]V{…}; handled before names.
    const parts: string[] = [];
    for (;;) {
      const t = this.peek();
      if (t === undefined || t.kind !== "id") this.fail("expected a name");
      if (t.text === "new" && parts.length === 0) { this.i++; continue; }
      parts.push(t.text);
      this.i++;
      this.skipGenerics();
      if (this.is("::") && this.peek(1)?.kind === "id") { this.i++; continue; }
      if (this.is("::") && this.is("<", 1)) { this.i++; this.skipGenerics(); if (this.is("::")) { this.i++; continue; } }
      if (this.is(".") && this.peek(1)?.kind === "id" && this.language !== "nodejs") { this.i++; continue; }
      break;
    }
    const name = parts.join(".");
    const last = parts[parts.length - 1]!;
    if (parts.length === 1 && KEYWORD_VALUES.has(name)) {
      if (this.language === "go" && name === "map") this.fail("a Go map type");
      return KEYWORD_VALUES.get(name)!;
    }
    if (NULL_NAMES.has(name) && !this.is("(")) return null;
    // Rust macros: vec![…]
    if (this.is("!")) {
      this.i++;
      if (last !== "vec" || !(this.is("[") || this.is("("))) this.fail(`macro ${last}!`);
      const close = this.is("[") ? "]" : ")";
      this.i++;
      return this.list(close);
    }
    if (this.is("{")) {
      // C++ std::vector<long>{1, 2}; Go T{…} is not a value we know (struct literals)
      if (this.language === "go") this.fail(`a Go struct literal ${name}`);
      this.i++;
      return this.containerFrom(name, this.braced());
    }
    if (!this.is("(")) this.fail(`a name that is not a value: ${name}`);
    this.i++;
    const args = this.list(")");
    return this.call(name, last, args);
  }

  containerFrom(name: string, inner: ExactJson): ExactJson {
    const last = name.split(".").pop()!;
    if (MAP_TYPES.has(last)) return pairsToObject(inner);
    return inner;
  }

  call(name: string, last: string, args: ExactJson[]): ExactJson {
    const owner = name.split(".").slice(-2, -1)[0] ?? "";
    if ((last === "new" || last === "default") && args.length === 0) {
      // Rust's Vec::new(), String::new(), HashMap::new()
      if (LIST_TYPES.has(owner)) return [];
      if (MAP_TYPES.has(owner)) return {};
      if (owner === "String") return "";
    }
    if (last === "from" && MAP_TYPES.has(owner) && args.length === 1) return pairsToObject(args[0]!);
    if (last === "from" && LIST_TYPES.has(owner) && args.length === 1 && Array.isArray(args[0])) return args[0];
    if (NULL_NAMES.has(name) || NULL_NAMES.has(last)) { if (args.length === 0 || (args.length === 1 && args[0] === null)) return null; }
    if (EMPTY_STRING_CTORS.has(name) && args.length === 0) return "";
    if (LIST_FACTORIES.has(last) || LIST_FACTORIES.has(name)) return args;
    if (name === "Map.of") {
      const out: Record<string, ExactJson> = {};
      if (args.length % 2 !== 0) this.fail("Map.of with an odd number of arguments");
      for (let k = 0; k < args.length; k += 2) setKey(out, args[k]!, args[k + 1]!);
      return out;
    }
    if (MAP_TYPES.has(last)) {
      if (args.length === 0) return {};
      if (args.length === 1) return pairsToObject(args[0]!);
      this.fail(`${name} with ${args.length} arguments`);
    }
    if (LIST_TYPES.has(last)) {
      if (args.length === 0) return [];
      if (args.length === 1 && Array.isArray(args[0])) return args[0];
      this.fail(`${name} with these arguments`);
    }
    if (WRAPPERS.has(last) || WRAPPERS.has(name)) {
      if (args.length !== 1) this.fail(`${name} takes one value`);
      return args[0]!;
    }
    if (NUMBER_CASTS.has(last) && args.length === 1 && (typeof args[0] === "number" || typeof args[0] === "bigint")) return args[0]!;
    this.fail(`${name}(…) is not a value this reader knows`);
  }
}

function setKey(out: Record<string, ExactJson>, key: ExactJson, v: ExactJson): void {
  const k = typeof key === "string" ? key : typeof key === "number" || typeof key === "bigint" || typeof key === "boolean" ? String(key) : undefined;
  if (k === undefined) throw new NotALiteral("a map key that is not a string, number or boolean");
  Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
}

function pairsToObject(inner: ExactJson): ExactJson {
  const out: Record<string, ExactJson> = {};
  if (inner !== null && typeof inner === "object" && !Array.isArray(inner)) return inner;
  if (!Array.isArray(inner)) throw new NotALiteral("a map from something that is not a list of pairs");
  for (const pair of inner) {
    if (!Array.isArray(pair) || pair.length !== 2) throw new NotALiteral("a map entry that is not a pair");
    setKey(out, pair[0]!, pair[1]!);
  }
  return out;
}

/** Words that are values in some language (never types in a cast). */
const KEYWORD_VALUES = new Map<string, ExactJson>([
  ["true", true], ["false", false], ["True", true], ["False", false], ["null", null], ["nullptr", null], ["nil", null], ["undefined", null], ["None", null],
]);
const VALUE_WORDS = new Set([...KEYWORD_VALUES.keys()]);
const NULL_NAMES = new Set(["std.nullopt", "nullopt", "Optional.empty", "Optional.ofNullable", "None", "std.optional", "optional"]);
const EMPTY_STRING_CTORS = new Set(["std.string", "string", "String.new", "String"]);
/** Calls whose arguments are the elements of a list (tuples and pairs are lists, as the harnesses write them). */
const LIST_FACTORIES = new Set(["Arrays.asList", "List.of", "Set.of", "asList", "make_tuple", "std.make_tuple", "make_pair", "std.make_pair", "tuple", "pair", "Pair.with", "Triplet.with", "Quartet.with", "Quintet.with", "Unit.with", "with", "Vec.from", "vec"]);
/** Containers built from one list (or nothing). */
const LIST_TYPES = new Set(["vector", "ArrayList", "LinkedList", "List", "Vec", "Array", "deque", "list", "set", "HashSet", "TreeSet", "Set"]);
const MAP_TYPES = new Set(["map", "unordered_map", "HashMap", "TreeMap", "LinkedHashMap", "Map"]);
/** Calls that are the value they wrap: std::string("x"), String::from("x"), Some(x), Optional.of(x), float(3). */
const WRAPPERS = new Set(["string", "std.string", "String.from", "from", "Some", "Optional.of", "of", "optional", "std.optional", "Long.valueOf", "Integer.valueOf", "Double.valueOf", "Float.valueOf", "Boolean.valueOf", "valueOf", "Box.new", "Ok"]);
const NUMBER_CASTS = new Set(["float", "double", "long", "int", "short", "f32", "f64", "i32", "i64", "isize", "usize", "float64", "float32", "int64", "int32", "Number", "BigInt"]);

/** The exact JSON value a literal expression writes, or NotALiteral. */
export function literalValue(text: string, language: SourceLanguage): ExactJson {
  const tokens = tokenize(text, language);
  // Go composite literals: []T{…}, map[K]V{…}: the type prefix is dropped, the body read as a list or a map.
  if (language === "go") return goLiteral(tokens);
  const p = new LiteralParser(tokens, language);
  const v = p.value();
  if (!p.done()) p.fail("text after the value");
  return v;
}

function goLiteral(tokens: readonly Token[]): ExactJson {
  const out: Token[] = [];
  // Drop type prefixes before each `{`: `[]int`, `[][]string`, `map[string]int`, `[]interface{}` (its `{}` too).
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.text === "[" && tokens[i + 1]?.text === "]") {
      let j = i;
      while (tokens[j]?.text === "[" && tokens[j + 1]?.text === "]") j += 2;
      j = skipGoType(tokens, j);
      if (tokens[j]?.text !== "{") throw new NotALiteral("a Go slice type without a body");
      out.push({ kind: "punct", text: "{", at: t.at });
      i = j;
      continue;
    }
    if (t.kind === "id" && t.text === "map" && tokens[i + 1]?.text === "[") {
      let j = skipGoType(tokens, i);
      if (tokens[j]?.text !== "{") throw new NotALiteral("a Go map type without a body");
      out.push({ kind: "punct", text: "{", at: t.at });
      i = j;
      continue;
    }
    out.push(t);
  }
  const p = new LiteralParser(out, "go");
  const v = p.value();
  if (!p.done()) p.fail("text after the value");
  return v;
}

/** The index after a Go type starting at i: int, string, float64, interface{}, map[K]V, []T, pkg.T, *T. */
function skipGoType(tokens: readonly Token[], i: number): number {
  const t = tokens[i];
  if (t === undefined) throw new NotALiteral("a Go type expected");
  if (t.text === "*") return skipGoType(tokens, i + 1);
  if (t.text === "[" && tokens[i + 1]?.text === "]") return skipGoType(tokens, i + 2);
  if (t.text === "map" && tokens[i + 1]?.text === "[") {
    const afterKey = skipGoType(tokens, i + 2);
    if (tokens[afterKey]?.text !== "]") throw new NotALiteral("a Go map type");
    return skipGoType(tokens, afterKey + 1);
  }
  if (t.text === "interface" && tokens[i + 1]?.text === "{" && tokens[i + 2]?.text === "}") return i + 3;
  if (t.kind === "id") return tokens[i + 1]?.text === "." && tokens[i + 2]?.kind === "id" ? i + 3 : i + 1;
  throw new NotALiteral(`a Go type at ${t.text}`);
}

/**
 * Splits `text` at the top-level occurrences of `sep` (outside brackets, strings and comments), or undefined when
 * brackets do not balance. Offsets are into `text`.
 */
export function splitTopLevel(text: string, sep: string, language: SourceLanguage): string[] | undefined {
  const tokens = tokenize(text, language);
  const parts: string[] = [];
  let depth = 0;
  let from = 0;
  for (const t of tokens) {
    if (t.kind !== "punct") continue;
    if ("([{".includes(t.text)) depth++;
    else if (")]}".includes(t.text)) { depth--; if (depth < 0) return undefined; }
    else if (depth === 0 && t.text === sep) { parts.push(text.slice(from, t.at)); from = t.at + t.text.length; }
  }
  if (depth !== 0) return undefined;
  parts.push(text.slice(from));
  return parts;
}

/** The index of the bracket closing the one at `open` (the same kind), skipping strings and comments; -1 if none. */
export function matchingBracket(text: string, open: number, language: SourceLanguage): number {
  const tokens = tokenize(text.slice(open), language);
  let depth = 0;
  for (const t of tokens) {
    if (t.kind !== "punct") continue;
    if ("([{".includes(t.text)) depth++;
    else if (")]}".includes(t.text)) { depth--; if (depth === 0) return open + t.at; }
  }
  return -1;
}
