// C# 8's nullable reference types for a C# 7 compiler (Debian's Mono mcs). The annotations have no run-time meaning:
// `string?` is `string` with a promise about null, `x!` is `x`, `#nullable enable` only switches warnings. Models
// write them all the time (`string? line = Console.ReadLine();`, `Console.ReadLine()!.Split(' ')`), and mcs rejects
// them, so they are erased before mcs sees the program — the way the C# 8 compiler erases them — while a `?` after a
// value type (`int?`, a struct, a tuple) is C# 2's Nullable<T> and stays. Erased characters become spaces, so the
// compiler's line and column numbers still point into the program as written. Text in strings, characters and
// comments is never touched.

/** Reference types of the base library a program may annotate with `?` (value types such as DateTime stay out). */
const LIBRARY_CLASSES = new Set([
  "Action", "Array", "ArgumentException", "Delegate", "Encoding", "Exception", "Func", "IComparer", "IDisposable", "IEnumerable",
  "IEnumerator", "InvalidOperationException", "Match", "Object", "Random", "Regex", "Stream", "StreamReader", "StreamWriter", "String",
  "StringBuilder", "Task", "TextReader", "TextWriter", "Thread", "Type", "Uri", "Version",
]);

/** Generic value types: `KeyValuePair<K, V>?` is a Nullable and keeps its `?`. */
const GENERIC_STRUCTS = new Set(["ArraySegment", "ImmutableArray", "KeyValuePair", "Memory", "Nullable", "ReadOnlyMemory", "ReadOnlySpan", "Span", "ValueTuple"]);

/** A `?` or `!` is an annotation only where a declaration, a cast or a type argument goes on after it. */
const AFTER_TYPE = /^(?:\s+@?[A-Za-z_][A-Za-z0-9_]*\s*(?:[=;,)({]|=>)|\s*[>,)])/;
const AFTER_FORGIVING = /^(?:[.;,)\]}[]|\s*[;,)])/;

interface Segment { readonly code: boolean; readonly text: string }

/** The program cut into code and the rest (comments, string and character literals, which keep their text). */
function segments(src: string): Segment[] {
  const out: Segment[] = [];
  let start = 0;
  let i = 0;
  const flush = (to: number, code: boolean) => { if (to > start) out.push({ code, text: src.slice(start, to) }); start = to; };
  while (i < src.length) {
    const c = src[i]!;
    const next = src[i + 1];
    let end = -1;
    if (c === "/" && next === "/") end = src.indexOf("\n", i) < 0 ? src.length : src.indexOf("\n", i);
    else if (c === "/" && next === "*") end = src.indexOf("*/", i + 2) < 0 ? src.length : src.indexOf("*/", i + 2) + 2;
    else if (c === "'") end = skipQuoted(src, i, "'");
    else if (c === '"' || ((c === "@" || c === "$") && (next === '"' || ((next === "@" || next === "$") && src[i + 2] === '"')))) end = skipString(src, i);
    if (end < 0) { i++; continue; }
    flush(i, true);
    i = end;
    flush(i, false);
  }
  flush(src.length, true);
  return out;
}

/** The end of a regular quoted literal ('c' or "s") starting at i. */
function skipQuoted(src: string, i: number, quote: string): number {
  let j = i + 1;
  while (j < src.length && src[j] !== quote && src[j] !== "\n") j += src[j] === "\\" ? 2 : 1;
  return Math.min(j + 1, src.length);
}

/** The end of a string literal at i: regular, verbatim (@), interpolated ($, whose holes may hold strings), or both. */
function skipString(src: string, i: number): number {
  let j = i;
  let verbatim = false;
  let interpolated = false;
  while (src[j] === "@" || src[j] === "$") { verbatim ||= src[j] === "@"; interpolated ||= src[j] === "$"; j++; }
  j++; // the opening quote
  let depth = 0;
  while (j < src.length) {
    const c = src[j]!;
    if (depth > 0) {
      if (c === '"' || ((c === "@" || c === "$") && /^[@$]*"/.test(src.slice(j, j + 3)))) { j = skipString(src, j); continue; }
      if (c === "'") { j = skipQuoted(src, j, "'"); continue; }
      if (c === "{") depth++;
      else if (c === "}") depth--;
      j++;
      continue;
    }
    if (interpolated && c === "{") { if (src[j + 1] === "{") { j += 2; continue; } depth = 1; j++; continue; }
    if (verbatim && c === '"' && src[j + 1] === '"') { j += 2; continue; }
    if (!verbatim && c === "\\") { j += 2; continue; }
    if (c === '"') return j + 1;
    if (!verbatim && c === "\n") return j;
    j++;
  }
  return src.length;
}

/** Names the program declares as reference types (classes, interfaces, records, delegates) and as value types. */
function declaredTypes(code: string): { refs: Set<string>; structs: Set<string> } {
  const refs = new Set<string>();
  const structs = new Set<string>();
  for (const m of code.matchAll(/\b(record\s+struct|record\s+class|class|interface|record|delegate\s+[\w<>,\s[\]?]+?|struct|enum)\s+([A-Za-z_][A-Za-z0-9_]*)/g)) {
    (/^(?:struct|enum|record\s+struct)$/.test(m[1]!) ? structs : refs).add(m[2]!);
  }
  return { refs, structs };
}

/** Whether the type that ends at `end` (exclusive) in `code` is a reference type, so that a `?` after it is an annotation. */
function isReferenceTypeBefore(code: string, end: number, refs: ReadonlySet<string>, structs: ReadonlySet<string>): boolean {
  const before = code.slice(Math.max(0, end - 300), end);
  if (before.endsWith("]")) return /\[\s*,*\s*\]$/.test(before); // an array type, not an indexer
  if (before.endsWith(">")) {
    let depth = 0;
    for (let k = end - 1; k >= Math.max(0, end - 2000); k--) {
      if (code[k] === ">") depth++;
      else if (code[k] === "<" && --depth === 0) {
        const name = /([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(code.slice(Math.max(0, k - 200), k))?.[1];
        return name !== undefined && !GENERIC_STRUCTS.has(name) && !structs.has(name);
      }
    }
    return false;
  }
  const name = /(?:^|[^A-Za-z0-9_.])((?:[A-Za-z_][A-Za-z0-9_]*\.)*([A-Za-z_][A-Za-z0-9_]*))$/.exec(before);
  if (name === null) return false;
  const last = name[2]!;
  if (structs.has(last)) return false;
  return ["string", "object", "dynamic"].includes(last) || refs.has(last) || LIBRARY_CLASSES.has(last);
}

/** The program with C# 8's nullable annotations erased (same length and lines), for a compiler that predates them. */
export function eraseNullableAnnotations(program: string): string {
  if (!/[?!]|#nullable/.test(program)) return program;
  const parts = segments(program);
  const codeOnly = parts.map((p) => (p.code ? p.text : p.text.replace(/[^\n]/g, " "))).join("");
  const { refs, structs } = declaredTypes(codeOnly);
  const out = program.split(""); // UTF-16 units, as the indices into codeOnly
  for (let i = 0; i < codeOnly.length; i++) {
    const c = codeOnly[i];
    if (c === "#" && /^#nullable\b[^\n]*/.test(codeOnly.slice(i)) && /(?:^|\n)[ \t]*$/.test(codeOnly.slice(0, i))) {
      const len = /^#nullable\b[^\n]*/.exec(codeOnly.slice(i))![0].length;
      for (let k = i; k < i + len; k++) out[k] = " ";
      i += len - 1;
      continue;
    }
    if (c === "?" && codeOnly[i + 1] !== "?" && codeOnly[i + 1] !== "." && codeOnly[i - 1] !== "?" && AFTER_TYPE.test(codeOnly.slice(i + 1, i + 200))
      && isReferenceTypeBefore(codeOnly, i, refs, structs)) out[i] = " ";
    else if (c === "!" && codeOnly[i + 1] !== "=" && /[A-Za-z0-9_)\]]/.test(codeOnly[i - 1] ?? "") && AFTER_FORGIVING.test(codeOnly.slice(i + 1, i + 200))) out[i] = " ";
  }
  return out.join("");
}
