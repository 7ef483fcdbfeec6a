// MultiPL-E's tail-style assert tests (ScaleBox's `common_evaluate` for languages other than Python: `tests` appended
// to the completion cut at `stop_tokens`) taken apart, so that no verdict comes from the exit status of a process that
// ran the program's code. Each assert of a recognised shape becomes a function call whose arguments stay the test's
// own source text (`candidate(ARGS)`, run by a source-call driver in the program's process, which writes the value as
// JSON on descriptor 3) and whose expected value is read here, as exact JSON, and compared outside the sandbox: the
// expected values never enter it. A Python tail runs in the assert verifier (harness/asserts.py), apart from the
// program. A tail that does not decompose runs as before, program and tests in one process, and its verdict is marked
// `program_exit_status` (rlpipe serve --strict-verdicts refuses it). Pure.
import type { ExactJson } from "./exact-json.js";
import { literalValue, matchingBracket, NotALiteral, type SourceLanguage, splitTopLevel } from "./source-literals.js";
import type { TestCase } from "./types.js";

/** One assert taken apart: `callee(argsSource) == expected`. */
export interface SourceCall {
  readonly callee: string;
  readonly argsSource: string;
  readonly expected: ExactJson;
  /** The assert as the test wrote it (for replies). */
  readonly text: string;
}

export type TailPlan =
  /** The program and its cases: function calls compared outside, or (Python) the tail in the verifier. */
  | { readonly kind: "decomposed"; readonly language: string; readonly code: string; readonly tests: readonly TestCase[] }
  /** Program and tests in one process: the verdict is that process's exit status. `reason`: why it did not decompose. */
  | { readonly kind: "whole"; readonly language: string; readonly code: string; readonly tests: readonly TestCase[]; readonly reason: string };

/** The test shapes this module takes apart, per language (the verdict table in the docs is generated from it). */
export const TAIL_SHAPES: Readonly<Record<string, { readonly shape: string; readonly example: string }>> = {
  python: { shape: "any tail (def check(candidate): … / test_check())", example: "assert candidate(1, 2) == 3" },
  cpp: { shape: "assert(candidate(…) == …) in int main()", example: "assert(candidate((std::vector<long>({(long)1}))) == (1));" },
  nodejs: { shape: "assert.deepEqual(candidate(…), …) in function test()", example: "assert.deepEqual(candidate([1, 2]),[2, 1]);" },
  rust: { shape: "assert_eq!(candidate(…), …) / assert!(candidate(…) == …) in fn main()", example: "assert_eq!(candidate(vec![1, 2]), Some(2));" },
  java: { shape: "assert(f(…) == (…)) / assert(f(…).equals(…)) in main(String[])", example: "assert(add((1l), (2l)) == (3l));" },
  go: { shape: "{ actual: candidate(…), expected: … } in a TestX(t *testing.T) table compared with %v", example: "{ actual: candidate([]int{1}), expected: 1 }," },
};

/** The request's language → the language the tail is written in (go_test is Go's test file form). */
export function tailLanguage(language: string): string {
  return language === "go_test" ? "go" : language === "javascript" ? "nodejs" : language;
}

class NotDecomposable extends Error {}

/**
 * The job for a completion `cut` at its stop tokens and a MultiPL-E tail. Decomposition needs the language's driver
 * (`decompose: false` for backends without one): then, and when a tail has a statement of another shape, the tail is
 * appended to the program and run whole.
 */
export function planTail(language: string, completion: string, tail: string, options: { readonly decompose?: boolean } = {}): TailPlan {
  // As ScaleBox joins them (multiple.py: f"{completion}\n{tests}"): a completion ending in a line comment keeps its tail.
  const cut = `${completion}\n`;
  const lang = tailLanguage(language);
  const fix = (code: string) => (lang === "java" ? javaMainClass(code) : code);
  // Whole, Go's test file runs as ScaleBox runs it: go_test.
  const whole = (reason: string): TailPlan => ({ kind: "whole", language: lang === "go" ? "go_test" : language, code: fix(cut + tail), tests: [{ kind: "assert", testCode: "" }], reason });
  if (options.decompose === false) return whole(`this sandbox backend runs ${language} tail tests whole`);
  if (lang === "python") return { kind: "decomposed", language, code: cut, tests: [{ kind: "assert", testCode: tail }] };
  const decomposer = DECOMPOSERS[lang];
  if (decomposer === undefined) return whole(`no decomposer for ${language} tail tests`);
  try {
    const { code, calls, language: runAs } = decomposer(cut, tail);
    if (calls.length === 0) return whole("the tail has no assert");
    return {
      kind: "decomposed", language: runAs ?? language, code: fix(code),
      tests: calls.map((c) => ({ kind: "call" as const, fnName: c.callee, args: [], expected: c.expected, argsSource: c.argsSource, source: c.text })),
    };
  } catch (e) {
    if (e instanceof NotDecomposable || e instanceof NotALiteral) return whole(e.message);
    throw e;
  }
}

interface Decomposed {
  readonly code: string;
  readonly calls: readonly SourceCall[];
  /** The language the decomposed program runs as, when not the request's (Go's test file becomes a program). */
  readonly language?: string;
}

const DECOMPOSERS: Readonly<Record<string, (cut: string, tail: string) => Decomposed>> = {
  cpp: decomposeCpp, nodejs: decomposeJs, rust: decomposeRust, java: decomposeJava, go: decomposeGo,
};

/** The block a header regex opens in `tail`: text before it, its body, text after its closing brace. */
function block(tail: string, header: RegExp, language: SourceLanguage, what: string): { before: string; body: string; after: string } {
  const m = header.exec(tail);
  if (m === null) throw new NotDecomposable(`no ${what} in the tail`);
  const open = m.index + m[0].length - 1;
  const close = matchingBracket(tail, open, language);
  if (close < 0) throw new NotDecomposable(`the tail's ${what} does not close`);
  return { before: tail.slice(0, m.index), body: tail.slice(open + 1, close), after: tail.slice(close + 1) };
}

/** Statements of a body split at top-level `;` (empty ones dropped). */
function statements(body: string, language: SourceLanguage): string[] {
  const parts = splitTopLevel(body, ";", language);
  if (parts === undefined) throw new NotDecomposable("the tail's brackets do not balance");
  return parts.map((s) => s.trim()).filter((s) => s !== "");
}

/** `NAME(ARGS)` (the whole text) → the name and the argument text; undefined for anything else. */
function callOf(text: string, language: SourceLanguage): { name: string; args: string } | undefined {
  const t = text.trim();
  const m = /^([A-Za-z_][A-Za-z0-9_]*)\s*\(/.exec(t);
  if (m === null) return undefined;
  const open = m[0].length - 1;
  if (matchingBracket(t, open, language) !== t.length - 1) return undefined;
  return { name: m[1]!, args: t.slice(open + 1, -1) };
}

/** Strips parentheses around a whole expression: `((x))` → `x`. */
function unparen(text: string, language: SourceLanguage): string {
  let t = text.trim();
  // Not a tuple's parentheses: (8, 13) stays.
  while (t.startsWith("(") && matchingBracket(t, 0, language) === t.length - 1 && (splitTopLevel(t.slice(1, -1), ",", language)?.length ?? 0) === 1) t = t.slice(1, -1).trim();
  return t;
}

/** An alias statement `auto candidate = f` / `let candidate = f` / `candidate := f`: [alias, target] or undefined. */
function aliasOf(stmt: string): [string, string] | undefined {
  const m = /^(?:auto|let|const|var)?\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::=|=)\s*([A-Za-z_][A-Za-z0-9_]*)$/.exec(stmt.trim());
  return m === null ? undefined : [m[1]!, m[2]!];
}

/** `lhs == rhs` or an assert_eq-like pair → a call of a known function and its expected value. */
function comparison(lhs: string, rhs: string, aliases: ReadonlyMap<string, string>, language: SourceLanguage, text: string): SourceCall {
  const call = callOf(unparen(lhs, language), language);
  if (call === undefined) throw new NotDecomposable(`not a call of the function under test: ${lhs.trim().slice(0, 80)}`);
  const callee = aliases.get(call.name) ?? call.name;
  return { callee, argsSource: call.args, expected: literalValue(unparen(rhs, language), language), text };
}

/** The two sides of a top-level `==` in `expr` (exactly one), or undefined. */
function equality(expr: string, language: SourceLanguage): [string, string] | undefined {
  const parts = splitTopLevel(expr, "==", language);
  return parts !== undefined && parts.length === 2 ? [parts[0]!, parts[1]!] : undefined;
}

/**
 * The calls a test body's statements make: aliases (`auto candidate = f`) are noted, every other statement is an
 * assert that `sides` reads as [call, expected] (undefined: not an assert of this language's shapes).
 */
function assertCalls(body: string, language: SourceLanguage, sides: (stmt: string) => [string, string] | undefined): SourceCall[] {
  const aliases = new Map<string, string>();
  const calls: SourceCall[] = [];
  for (const s of statements(body, language)) {
    const alias = aliasOf(s);
    if (alias !== undefined) { aliases.set(alias[0], alias[1]); continue; }
    const two = sides(s);
    if (two === undefined) throw new NotDecomposable(`a statement of another shape: ${s.slice(0, 80)}`);
    calls.push(comparison(two[0], two[1], aliases, language, s));
  }
  return calls;
}

/** Every callee returns a type its language's driver writes as JSON (`returnType`: the declared type, if found). */
function checkReturnTypes(calls: readonly SourceCall[], driver: string, returnType: (callee: string) => string | undefined, serializable: (type: string) => boolean): void {
  for (const callee of new Set(calls.map((c) => c.callee))) {
    const type = returnType(callee);
    if (type === undefined) throw new NotDecomposable(`no declaration of ${callee} with its return type`);
    if (!serializable(type)) throw new NotDecomposable(`${callee} returns ${type}, which the ${driver} driver cannot write as JSON`);
  }
}

/** The arguments of a call-like assert (`assert_eq!(a, b)`, `assert.deepEqual(a, b[, message])`) as [a, b]. */
function twoArguments(text: string, language: SourceLanguage, what: string, allowMessage: boolean): [string, string] {
  const args = splitTopLevel(text, ",", language)?.filter((x, i, all) => !(i === all.length - 1 && x.trim() === ""));
  if (args === undefined || args.length < 2 || args.length > (allowMessage ? 3 : 2)) throw new NotDecomposable(`${what} with ${args?.length ?? "unbalanced"} arguments${allowMessage ? "" : " (a message?)"}`);
  return [args[0]!, args[1]!];
}

// ---- C++: `}\nint main() {\n    auto candidate = f;\n    assert(candidate(…) == (…));\n}` ----

function decomposeCpp(cut: string, tail: string): Decomposed {
  const { before, body, after } = block(tail, /\bint\s+main\s*\(\s*(?:void)?\s*\)\s*\{/, "cpp", "int main()");
  if (after.trim() !== "") throw new NotDecomposable("text after main() in the tail");
  const calls = assertCalls(body, "cpp", (s) => {
    const a = /^assert\s*\(([\s\S]*)\)$/.exec(s);
    return a === null ? undefined : equality(a[1]!, "cpp");
  });
  const code = cut + before;
  checkReturnTypes(calls, "C++", (callee) => declaredReturnType(code, callee, /([A-Za-z_][\w:<>,\s*&]*?)\s+\b/.source), cppSerializable);
  return { code, calls };
}

/** The return type written before `name(` in a declaration (the last one found), or undefined. */
function declaredReturnType(code: string, name: string, typePattern: string): string | undefined {
  const re = new RegExp(`(?:^|[;{}\\n])[ \\t]*(?:(?:static|inline|constexpr|extern|public|private|protected|final)\\s+)*${typePattern}${name}\\s*\\(`, "g");
  let found: string | undefined;
  for (const m of code.matchAll(re)) {
    const t = m[1]!.trim();
    if (t !== "" && !/^(?:return|else|new|delete|throw)$/.test(t)) found = t;
  }
  return found;
}

const CPP_SCALAR = /^(?:const\s+)?(?:bool|char|signed char|unsigned char|short|unsigned short|int|unsigned|unsigned int|long|unsigned long|long long|unsigned long long|long int|size_t|int8_t|int16_t|int32_t|int64_t|uint8_t|uint16_t|uint32_t|uint64_t|float|double|long double|(?:std::)?string)(?:\s*&)?$/;

/** Whether the C++ driver writes a value of this type (scalars, strings, vector, tuple, pair, optional, map). */
export function cppSerializable(type: string): boolean {
  const t = type.replace(/^const\s+/, "").replace(/\s*&$/, "").trim();
  if (CPP_SCALAR.test(t)) return true;
  const m = /^(?:std::)?(vector|tuple|pair|optional|map|unordered_map|set|deque|list)\s*<([\s\S]*)>$/.exec(t);
  if (m === null) return false;
  const args = splitTypeArgs(m[2]!);
  if (args === undefined || args.length === 0) return false;
  if ((m[1] === "map" || m[1] === "unordered_map") && !/^(?:const\s+)?(?:(?:std::)?string|long|int|long long|char|bool)$/.test(args[0]!.trim())) return false;
  return args.every((a) => cppSerializable(a));
}

function splitTypeArgs(text: string): string[] | undefined {
  const out: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "<" || c === "(" || c === "[") depth++;
    else if (c === ">" || c === ")" || c === "]") depth--;
    else if (c === "," && depth === 0) { out.push(text.slice(from, i).trim()); from = i + 1; }
    if (depth < 0) return undefined;
  }
  if (depth !== 0) return undefined;
  out.push(text.slice(from).trim());
  return out;
}

// ---- JavaScript: `const assert = require('node:assert');\nfunction test() {\n  let candidate = f;\n  assert.deepEqual(candidate(…),…);\n}\ntest();` ----

const JS_EQUALS = new Set(["deepEqual", "deepStrictEqual", "equal", "strictEqual"]);

function decomposeJs(cut: string, tail: string): Decomposed {
  const { before, body, after } = block(tail, /\bfunction\s+test\s*\(\s*\)\s*\{/, "nodejs", "function test()");
  if (!/^\s*test\s*\(\s*\)\s*;?\s*$/.test(after)) throw new NotDecomposable("the tail does more than call test()");
  const prelude = before.replace(/^\s*(?:const|let|var)\s+assert\s*=\s*require\(\s*['"](?:node:)?assert(?:\/strict)?['"]\s*\)\s*;?\s*$/m, "");
  const calls = assertCalls(body, "nodejs", (s) => {
    const m = /^assert\.([A-Za-z]+)\s*\(([\s\S]*)\)$/.exec(s);
    if (m !== null && JS_EQUALS.has(m[1]!)) return twoArguments(m[2]!, "nodejs", `assert.${m[1]}`, true);
    const a = /^assert\s*\(([\s\S]*)\)$/.exec(s);
    return a === null ? undefined : equality(a[1]!.replace(/===/g, "=="), "nodejs");
  });
  return { code: cut + prelude, calls };
}

// ---- Rust: `}\n\nfn main() {\n    let candidate = f;\n    assert_eq!(candidate(…), …);\n}` ----

function decomposeRust(cut: string, tail: string): Decomposed {
  const { before, body, after } = block(tail, /\bfn\s+main\s*\(\s*\)\s*\{/, "rust", "fn main()");
  if (after.trim() !== "") throw new NotDecomposable("text after main() in the tail");
  const calls = assertCalls(body, "rust", (s) => {
    const eqMacro = /^assert_eq!\s*\(([\s\S]*)\)$/.exec(s);
    if (eqMacro !== null) return twoArguments(eqMacro[1]!, "rust", "assert_eq!", false);
    const a = /^assert!\s*\(([\s\S]*)\)$/.exec(s);
    return a === null ? undefined : equality(a[1]!, "rust");
  });
  const code = cut + before;
  checkReturnTypes(calls, "Rust", (callee) => {
    const m = new RegExp(`\\bfn\\s+${callee}\\s*(?:<[^>]*>)?\\s*\\(`).exec(code);
    if (m === null) return undefined;
    const close = matchingBracket(code, m.index + m[0].length - 1, "rust");
    const ret = /^\s*->\s*([^{]+?)\s*(?:where\b[^{]*)?\{/.exec(code.slice(close + 1));
    return ret === null ? "()" : ret[1]!;
  }, rustSerializable);
  return { code, calls };
}

const RUST_SCALAR = /^(?:bool|char|i8|i16|i32|i64|i128|isize|u8|u16|u32|u64|u128|usize|f32|f64|String|&(?:'static\s+)?str|\(\))$/;

export function rustSerializable(type: string): boolean {
  const t = type.trim();
  if (RUST_SCALAR.test(t)) return true;
  const tuple = /^\(([\s\S]*)\)$/.exec(t);
  if (tuple !== null) {
    const parts = splitTypeArgs(tuple[1]!);
    return parts !== undefined && parts.length >= 1 && parts.length <= 4 && parts.every((p) => p === "" || rustSerializable(p));
  }
  const m = /^(?:std::collections::)?(Vec|Option|HashMap|BTreeMap|HashSet|BTreeSet)\s*<([\s\S]*)>$/.exec(t);
  if (m === null) return false;
  const args = splitTypeArgs(m[2]!);
  if (args === undefined) return false;
  if ((m[1] === "HashMap" || m[1] === "BTreeMap") && !/^(?:String|&(?:'static\s+)?str|char|i\d+|u\d+|isize|usize|bool)$/.test(args[0]!)) return false;
  return args.every((a) => rustSerializable(a));
}

// ---- Java: `    }\n    public static void main(String[] args) {\n    assert(f(…) == (…));\n    }\n\n}` ----

function decomposeJava(cut: string, tail: string): Decomposed {
  const { before, body, after } = block(tail, /\bpublic\s+static\s+void\s+main\s*\(\s*String\s*(?:\[\s*\]\s*[A-Za-z_]\w*|[A-Za-z_]\w*\s*\[\s*\]|\.\.\.\s*[A-Za-z_]\w*)\s*\)\s*(?:throws\s+[\w.,\s]+)?\{/, "java", "main(String[])");
  if (!/^\s*(?:\}\s*)*$/.test(after)) throw new NotDecomposable("text after main() in the tail other than closing braces");
  const calls = assertCalls(body, "java", (s) => {
    const a = /^assert\s*\(([\s\S]*)\)$/.exec(s) ?? /^assert\s+([\s\S]*)$/.exec(s);
    if (a === null) return undefined;
    const expr = unparen(a[1]!, "java");
    const eq = equality(expr, "java");
    if (eq !== undefined) return eq;
    // f(…).equals(…)
    const m = /^([A-Za-z_]\w*)\s*\(/.exec(expr);
    const close = m === null ? -1 : matchingBracket(expr, m[0].length - 1, "java");
    const rest = close < 0 ? "" : expr.slice(close + 1);
    const eqs = /^\s*\.\s*equals\s*\(/.exec(rest);
    if (m === null || eqs === null || matchingBracket(rest, eqs[0].length - 1, "java") !== rest.trimEnd().length - 1) return undefined;
    return [expr.slice(0, close + 1), rest.trimEnd().slice(eqs[0].length, -1)];
  });
  const code = cut + before;
  checkReturnTypes(calls, "Java", (callee) => declaredReturnType(code, callee, /([A-Za-z_][\w.<>,\s[\]?]*?)\s+/.source), javaSerializable);
  // The driver's main goes where the tail's was, inside the class (the tail's closing braces come after it).
  return { code: `${code}\n${JAVA_DRIVER_SLOT}\n${after}`, calls };
}

/** Where a decomposed Java program takes its source-call driver (the last occurrence: the program's own text is before it). */
export const JAVA_DRIVER_SLOT = "/* rlpipe: source-call driver */";

/** ScaleBox runs MultiPL-E's Java as class Main (its multiple.py renames class Problem). */
export function javaMainClass(code: string): string {
  return /\bclass\s+Main\b/.test(code) ? code : code.replace(/\bclass\s+Problem\b/, "class Main");
}

const JAVA_SCALAR = /^(?:boolean|Boolean|char|Character|byte|Byte|short|Short|int|Integer|long|Long|float|Float|double|Double|String|BigInteger|BigDecimal|Object)$/;

export function javaSerializable(type: string): boolean {
  const t = type.trim().replace(/^(?:java\.util\.|java\.math\.|org\.javatuples\.)/, "");
  if (JAVA_SCALAR.test(t)) return true;
  if (t.endsWith("[]")) return javaSerializable(t.slice(0, -2));
  const m = /^(ArrayList|List|LinkedList|Set|HashSet|TreeSet|Optional|Pair|Triplet|Quartet|Map|HashMap|TreeMap|LinkedHashMap|Collection)\s*<([\s\S]*)>$/.exec(t);
  if (m === null) return false;
  const args = splitTypeArgs(m[2]!);
  return args !== undefined && args.every((a) => a === "?" || javaSerializable(a.replace(/^\?\s+extends\s+/, "")));
}

// ---- Go: `func TestX(t *testing.T) {\n  candidate := f\n  type test struct {…}\n  tests := []test{\n { actual: candidate(…), expected: … },\n }\n  for … }` ----

/** MultiPL-E's Go test body besides its table, whitespace removed: the only comparison a Go tail may make. */
const GO_BOILERPLATE = [
  "typeteststruct{actualinterface{}expectedinterface{}}",
  "fori,tc:=rangetests{t.Run(fmt.Sprintf(\"testnum%d\",i),func(t*testing.T){iffmt.Sprintf(\"%v\",tc.actual)!=fmt.Sprintf(\"%v\",tc.expected){t.Errorf(\"expected'%s',got'%s'\",tc.expected,tc.actual)}})}",
];

function decomposeGo(cut: string, tail: string): Decomposed {
  const { before, body, after } = block(tail, /\bfunc\s+Test\w*\s*\(\s*t\s+\*testing\.T\s*\)\s*\{/, "go", "func TestX(t *testing.T)");
  if (after.trim() !== "") throw new NotDecomposable("text after the test function in the tail");
  const alias = /^\s*([A-Za-z_]\w*)\s*:=\s*([A-Za-z_]\w*)\s*$/m.exec(body);
  const aliases = new Map<string, string>(alias === null ? [] : [[alias[1]!, alias[2]!]]);
  const table = /\btests\s*:=\s*\[\]test\s*\{/.exec(body);
  if (table === null) throw new NotDecomposable("no tests := []test{…} table");
  const open = table.index + table[0].length - 1;
  const close = matchingBracket(body, open, "go");
  if (close < 0) throw new NotDecomposable("the test table does not close");
  const rest = (body.slice(0, alias?.index ?? 0) + body.slice(alias === null ? 0 : alias.index + alias[0].length, table.index) + body.slice(close + 1)).replace(/\s+/g, "");
  if (rest !== GO_BOILERPLATE.join("")) throw new NotDecomposable("the test compares in a way other than MultiPL-E's %v table");
  const entries = splitTopLevel(body.slice(open + 1, close), ",", "go");
  if (entries === undefined) throw new NotDecomposable("the test table's brackets do not balance");
  const calls: SourceCall[] = [];
  for (const e of entries.map((x) => x.trim()).filter((x) => x !== "")) {
    const inner = /^\{([\s\S]*)\}$/.exec(e);
    const fields = inner === null ? undefined : splitTopLevel(inner[1]!, ",", "go")?.map((x) => x.trim()).filter((x) => x !== "");
    const get = (k: string) => fields?.find((f) => new RegExp(`^${k}\\s*:`).test(f))?.replace(new RegExp(`^${k}\\s*:`), "");
    const actual = get("actual");
    const expected = get("expected");
    if (fields === undefined || fields.length !== 2 || actual === undefined || expected === undefined) throw new NotDecomposable(`a table entry of another shape: ${e.slice(0, 80)}`);
    calls.push(comparison(actual, expected, aliases, "go", e));
  }
  // Still a test file (go_test: the driver is a test of its own, run alone), its imports kept used: the table's fmt and
  // testing are gone.
  let code = cut + before;
  if (goPackage(code) === undefined) code = `package main\n${code}`;
  const imported = (pkg: string) => new RegExp(`import\\s*(?:\\([^)]*"${pkg}"[^)]*\\)|"${pkg}")`).test(code);
  if (imported("fmt")) code += "\nvar _ = fmt.Sprint\n";
  if (imported("testing")) code += "\nvar _ *testing.T\n";
  return { code, calls, language: "go_test" };
}

/** The package a Go file declares (after its leading comments), or undefined. */
export function goPackage(code: string): string | undefined {
  return /^\s*(?:(?:\/\/[^\n]*|\/\*[\s\S]*?\*\/)\s*)*package\s+([A-Za-z_]\w*)/.exec(code)?.[1];
}

/** The language a tail's calls run in once taken apart (Go's stay a test file: go_test). */
export function decomposedLanguage(language: string): string {
  const lang = tailLanguage(language);
  return lang === "go" ? "go_test" : lang;
}
