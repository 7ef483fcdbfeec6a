// The embedded sandbox for real (bubblewrap): grading, limits, and the security checklist — no network,
// no host environment or files, unprivileged, fork bombs / huge allocations / floods / daemons contained,
// a program that attacks its harness loses only its own case.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer, type Server } from "node:net";
import { after, before, describe, it } from "node:test";
import type { EvalJob, EvalResult, TestCase } from "../core/grading/types.js";
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { detectRoots } from "../adapters/sandboxes/toolchains/debian-root.js";
import { detectToolchains } from "../adapters/sandboxes/toolchains/toolchains.js";
import { FIXTURES } from "./helpers.js";

const stdio = (stdin: string, expectedStdout: string): TestCase => ({ kind: "stdio", stdin, expectedStdout });
const call = (fnName: string, args: unknown[], expected: unknown): TestCase => ({ kind: "call", fnName, args, expected });
/** The verdicts of one job's cases, in order (the whole result in the message when they differ). */
function assertStatuses(r: EvalResult, expected: readonly string[]): void {
  assert.deepEqual(r.cases.map((c) => c.status), expected, JSON.stringify(r.cases));
}
const job = (id: string, code: string, tests: TestCase[], extra: Partial<EvalJob> = {}): EvalJob =>
  ({ id, language: "python", code, tests, limits: { runTimeoutMs: 3000 }, ...extra });

describe("local sandbox: grading", () => {
  let sb: LocalSandbox;
  before(async () => { sb = await LocalSandbox.create(); });
  after(() => sb.close());

  it("grades a 10-case stdio batch, in order, with one harness start", async () => {
    const tests = Array.from({ length: 10 }, (_, i) => stdio(`${i} ${i + 1}`, `${2 * i + 1}`));
    tests[3] = stdio("3 4", "8"); // wrong expectation → wrong_answer
    const [r] = await sb.evaluate([job("sum", "a, b = map(int, input().split())\nprint(a + b)", tests)]);
    assert.equal(r!.status, "ok");
    assert.equal(r!.passed, 9);
    assert.deepEqual(r!.cases.map((c) => c.status), ["passed", "passed", "passed", "wrong_answer", "passed", "passed", "passed", "passed", "passed", "passed"]);
    assert.deepEqual(r!.cases.map((c) => c.index), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it("applies SandboxFusion's comparison with the line-count check ScaleBox dropped", async () => {
    const [r] = await sb.evaluate([
      job("prefix", "print(1)", [stdio("", "1\n2\n3")]),
      job("extra", "print(1); print('junk')", [stdio("", "1")]),
      job("float", "print(0.3333334); print('YES')", [stdio("", "0.33333333\nyes")]),
    ].slice(0, 1));
    assert.equal(r!.cases[0]!.status, "wrong_answer");
    assert.match(r!.cases[0]!.detail!, /expected 3 lines, got 1/);
    const [extra, float] = await sb.evaluate([job("extra", "print(1); print('junk')", [stdio("", "1")]), job("float", "print(0.3333334); print('YES')", [stdio("", "0.33333333\nyes")])]);
    assert.equal(extra!.cases[0]!.status, "wrong_answer");
    assert.equal(float!.cases[0]!.status, "passed");
  });

  it("grades function calls (including class Solution) and asserts", async () => {
    const calls: TestCase[] = [
      { kind: "call", fnName: "twoSum", args: [[2, 7, 11], 9], expected: [0, 1] },
      { kind: "call", fnName: "twoSum", args: [[1, 2], 3], expected: [1, 0] },
    ];
    const [sol, asserted, failing] = await sb.evaluate([
      job("sol", "class Solution:\n    def twoSum(self, nums, t):\n        seen = {}\n        for i, x in enumerate(nums):\n            if t - x in seen: return (seen[t - x], i)\n            seen[x] = i", calls),
      job("assert", "def inc(x):\n    return x + 1", [{ kind: "assert", testCode: "assert inc(1) == 2\nassert inc(-1) == 0" }]),
      job("assert-fail", "def inc(x):\n    return x + 2", [{ kind: "assert", testCode: "def check(f):\n    assert f(1) == 2", entryPoint: "inc" }]),
    ]);
    assert.deepEqual(sol!.cases.map((c) => c.status), ["passed", "wrong_answer"]);
    assert.equal(asserted!.passed, 1);
    assert.equal(failing!.cases[0]!.status, "wrong_answer");
  });

  it("reports compile errors for every case (Python syntax, C++), runtime errors and timeouts", async () => {
    const [syntax, cpp, runtime, slow] = await sb.evaluate([
      job("syntax", "def f(:\n  pass", [stdio("", ""), stdio("", "")]),
      { ...job("cpp", "int main( { return 0; }", [stdio("", "")]), language: "cpp" },
      job("runtime", "raise ValueError('boom')", [stdio("", "")]),
      job("slow", "while True: pass", [stdio("", "")], { limits: { runTimeoutMs: 500 } }),
    ]);
    assert.deepEqual(syntax!.cases.map((c) => c.status), ["compile_error", "compile_error"]);
    assert.equal(cpp!.cases[0]!.status, "compile_error");
    assert.equal(runtime!.cases[0]!.status, "runtime_error");
    assert.match(runtime!.cases[0]!.detail!, /ValueError: boom/);
    assert.equal(slow!.cases[0]!.status, "timeout");
  });

  it("runs every language whose toolchain is installed here: a+b on stdin, built once per program, a wrong one rejected", { timeout: 240_000 }, async () => {
    const langs = (await sb.capabilities()).languages;
    // The host's toolchains, then those of the Debian roots built here (Swift: npm test's setup builds its root).
    const installed = [...detectToolchains().map((t) => t.language), ...detectRoots().flatMap((r) => r.spec.toolchains.map((t) => t.language))];
    assert.deepEqual(langs, ["python", ...installed]);
    assert.ok(installed.includes("swift") && installed.includes("julia"), "npm test's setup builds the Debian roots Swift and Julia run in");
    // What this kind of machine has (Debian's bash and perl; the JDK and Go the machine comes with).
    for (const l of ["bash", "perl", ...(existsSync("/usr/lib/jvm") ? ["java"] : []), ...(existsSync("/usr/local/go/bin/go") ? ["go"] : [])]) assert.ok(installed.includes(l), `${l} is installed but not offered`);
    // One A+B program per language (and one that prints the wrong sum), shared with the Python tests.
    const programs = (JSON.parse(readFileSync(join(FIXTURES, "sandbox-programs.json"), "utf8")) as { stdio: Record<string, { right: string; wrong: string }> }).stdio;
    const tests = [stdio("1 2", "3"), stdio("40 2", "42")];
    const limits = { runTimeoutMs: 20_000, compileTimeoutMs: 120_000 };
    const jobs = installed.flatMap((language) => {
      const { right, wrong } = programs[language]!;
      return [{ id: `${language}-ok`, language, code: right, tests, limits }, { id: `${language}-wrong`, language, code: wrong, tests, limits }];
    });
    const results = await sb.evaluate(jobs);
    const summary = results.map((r) => `${r.id}: ${r.cases.map((c) => c.status).join(",")}${r.cases[0]!.detail ? ` (${r.cases[0]!.detail})` : ""}`);
    for (const r of results) assert.equal(r.passed, r.id.endsWith("-ok") ? 2 : 0, summary.join("\n"));
  });

  it("D runs its unittest blocks (SandboxFusion's D_ut: a failed assert fails the run), Lua has luaunit and Perl Test::Deep", async () => {
    const langs = (await sb.capabilities()).languages;
    for (const l of ["D_ut", "lua", "perl"]) assert.ok(langs.includes(l), `npm test's setup installs ${l}`);
    const limits = { runTimeoutMs: 20_000, compileTimeoutMs: 120_000 };
    const pass = await sb.run({ language: "D_ut", code: "unittest { assert(2 + 2 == 4); }\nvoid main() {}", limits });
    assert.equal(pass.status, "ok", pass.stderr);
    assert.match(pass.stderr, /1 modules passed unittests/);
    const fail = await sb.run({ language: "D_ut", code: "unittest { assert(0 == 1); }\nvoid main() {}", limits });
    assert.equal(fail.status, "runtime_error");
    assert.match(fail.stderr, /AssertError@\/work\/src\/main\.d\(1\): Assertion failure/);
    const lua = await sb.run({ language: "lua", code: "local lu = require('luaunit')\nlu.assertEquals(1 + 1, 3)", limits });
    assert.equal(lua.status, "runtime_error");
    assert.match(lua.stderr, /LuaUnit test FAILURE: expected: 3, actual: 2/);
    const perl = await sb.run({ language: "perl", code: "use Test::More tests => 1;\nuse Test::Deep;\nuse Data::Compare;\ncmp_deeply({ a => [1, 2] }, { a => [1, 2] }, 'deep');", limits });
    assert.equal(perl.stdout, "1..1\nok 1 - deep\n", perl.stderr);
  });

  it("C# builds as a .NET console program would: implicit usings, Debug.Assert ends the process, the program's own line numbers", async () => {
    const limits = { runTimeoutMs: 20_000, compileTimeoutMs: 60_000 };
    const implicit = await sb.run({ language: "csharp", code: "public class Program {\n  public static void Main(string[] args) {\n    var xs = new List<int> { 3, 1, 2 };\n    Console.WriteLine(Convert.ToInt32(Console.ReadLine()) + xs.Max());\n  }\n}", stdin: "65532\n", limits });
    assert.equal(implicit.stdout, "65535\n", implicit.stderr);
    const assertion = await sb.run({ language: "csharp", code: "using System.Diagnostics;\nclass P { static void Main() { Console.WriteLine(\"before\"); Debug.Assert(1 == 2, \"Assertion failed\"); Console.WriteLine(\"after\"); } }", limits });
    assert.equal(assertion.status, "runtime_error");
    assert.equal(assertion.exitCode, 134);
    assert.equal(assertion.stdout, "before\n");
    assert.match(assertion.stderr, /^Process terminated\. Assertion failed\.\nAssertion failed\n/);
    const typeError = await sb.run({ language: "csharp", code: "class P {\n  static void Main() {\n    int x = \"s\";\n  }\n}", limits });
    assert.equal(typeError.status, "compile_error");
    assert.match(typeError.stderr, /^main\.cs\(3,13\): error CS0029/m);
    // C# 8's nullable annotations, which models write all the time, build on Mono's C# 7 compiler (erased as C# 8
    // erases them); Nullable<int> keeps its meaning, and errors still point at the program's own columns.
    const nullable = await sb.run({ language: "csharp", limits, stdin: "1 2\n", code: "#nullable enable\npublic class APlusB {\n  class Node { public Node? Next; public int V; }\n  private static void Main() {\n    string? line = Console.ReadLine();\n    int[] v = line!.Split(' ').Select(int.Parse).ToArray();\n    int? none = null;\n    var n = new Node { V = v[0] + v[1] };\n    Console.WriteLine($\"{n.V} {n.Next?.V ?? -1} {none.HasValue}\");\n  }\n}" });
    assert.equal(nullable.stdout, "3 -1 False\n", nullable.stderr);
    const nullableError = await sb.run({ language: "csharp", limits, code: "class P {\n  static void Main() {\n    string? s = 5;\n  }\n}" });
    assert.match(nullableError.stderr, /^main\.cs\(3,17\): error CS0029/m);
  });

  it("function calls in PHP, Ruby, Perl, Lua and bash: arguments from JSON, the value back as JSON, compared outside", async () => {
    const limits = { runTimeoutMs: 10_000 };
    // Each: join a string and a list's sum, e.g. f("ab", [1, 2]) = "ab3"; then the same with a wrong expectation.
    const programs: Record<string, string> = {
      php: "function f($s, $xs) {\n  return $s . array_sum($xs);\n}",
      ruby: "def f(s, xs)\n  s + xs.sum.to_s\nend",
      perl: "sub f {\n  my ($s, $xs) = @_;\n  my $t = 0; $t += $_ for @$xs;\n  return $s . $t;\n}",
      lua: "function f(s, xs)\n  local t = 0\n  for _, x in ipairs(xs) do t = t + x end\n  return s .. t\nend",
      bash: "f() {\n  local t=0\n  for x in $(echo \"$2\" | tr -d '[],'); do t=$((t + x)); done\n  echo \"$1$t\"\n}",
    };
    const jobs = Object.entries(programs).map(([language, code]) => ({ id: language, language, code, limits,
      tests: [call("f", ["ab", [1, 2]], "ab3"), call("f", ["q\"uote", [5]], "q\"uote5"), call("f", ["x", [1]], "x2")] }));
    const results = await sb.evaluate(jobs);
    for (const r of results) {
      assert.deepEqual(r.cases.map((c) => c.status), ["passed", "passed", "wrong_answer"], `${r.id}: ${JSON.stringify(r.cases)}`);
    }
    // Numbers come back as numbers; a method of class Solution is found too (PHP, Ruby).
    const [php, ruby, lua] = await sb.evaluate([
      { id: "php-sol", language: "php", code: "<?php\nclass Solution {\n  function twice($n) { return [$n, $n * 2]; }\n}", limits, tests: [call("twice", [21], [21, 42])] },
      { id: "ruby-sol", language: "ruby", code: "class Solution\n  def twice(n) = [n, n * 2]\nend", limits, tests: [call("twice", [21], [21, 42])] },
      { id: "lua-num", language: "lua", code: "function half(n) return n / 2 end", limits, tests: [call("half", [3], 1.5)] },
    ]);
    for (const r of [php!, ruby!, lua!]) assert.equal(r.cases[0]!.status, "passed", `${r.id}: ${JSON.stringify(r.cases)}`);
  });

  it("function calls in C++: parameter types from the function's signature, vectors and strings both ways, class Solution", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 10_000, compileTimeoutMs: 60_000 };
    const [bare, solution, withMain] = await sb.evaluate([
      // A bare function, LeetCode style (no includes): the standard headers and namespace are there.
      { id: "bare", language: "cpp", limits, code: "string join(const vector<string>& xs, char sep) {\n  string out;\n  for (size_t i = 0; i < xs.size(); i++) { if (i) out += sep; out += xs[i]; }\n  return out;\n}\nlong long sum(vector<long long> v) { return accumulate(v.begin(), v.end(), 0LL); }",
        tests: [call("join", [["a", "b\"c"], ","], "a,b\"c"), call("sum", [[1, 2, 4000000000]], 4000000003), call("sum", [[1]], 2)] },
      { id: "solution", language: "cpp", limits, code: "#include <vector>\nusing namespace std;\nclass Solution {\npublic:\n  vector<vector<int>> pairs(vector<int>& nums, int target) const {\n    vector<vector<int>> out;\n    for (size_t i = 0; i < nums.size(); i++) for (size_t j = i + 1; j < nums.size(); j++) if (nums[i] + nums[j] == target) out.push_back({(int)i, (int)j});\n    return out;\n  }\n  double half(int n) { return n / 2.0; }\n  bool odd(int n) { return n % 2; }\n};",
        tests: [call("pairs", [[1, 2, 3, 4], 5], [[0, 3], [1, 2]]), call("half", [3], 1.5), call("odd", [3], true)] },
      // A program with a main of its own cannot get the driver's: a clear compile error, not a wrong verdict.
      { id: "with-main", language: "cpp", limits, code: "int f(int x) { return x; }\nint main() { return 0; }", tests: [call("f", [1], 1)] },
    ]);
    assertStatuses(bare!, ["passed", "passed", "wrong_answer"]);
    assertStatuses(solution!, ["passed", "passed", "passed"]);
    assert.equal(withMain!.cases[0]!.status, "compile_error");
    assert.match(`${withMain!.cases[0]!.stderr ?? ""}${withMain!.cases[0]!.detail ?? ""}`, /redefinition of .int main\(\)./);
  });

  it("function calls in Java: by reflection in Solution or Main, arguments converted to generic parameter types", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 10_000, compileTimeoutMs: 60_000 };
    const [bare, solution, withMain] = await sb.evaluate([
      // Bare methods (ScaleBox style): wrapped in class Main, java.util imported.
      { id: "bare", language: "java", limits, code: "public static String join(List<String> xs, char sep) {\n  return String.join(String.valueOf(sep), xs);\n}\nstatic long sum(long[] v) { long t = 0; for (long x : v) t += x; return t; }",
        tests: [call("join", [["a", "b\"c"], ","], "a,b\"c"), call("sum", [[1, 2, 4000000000]], 4000000003), call("sum", [[1]], 2)] },
      { id: "solution", language: "java", limits, code: "import java.util.*;\nclass Solution {\n  public List<List<Integer>> pairs(int[] nums, int target) {\n    List<List<Integer>> out = new ArrayList<>();\n    for (int i = 0; i < nums.length; i++) for (int j = i + 1; j < nums.length; j++) if (nums[i] + nums[j] == target) out.add(Arrays.asList(i, j));\n    return out;\n  }\n  public Map<String, Integer> count(String[] words) {\n    Map<String, Integer> m = new TreeMap<>();\n    for (String w : words) m.merge(w, 1, Integer::sum);\n    return m;\n  }\n  public double half(int n) { return n / 2.0; }\n}",
        tests: [call("pairs", [[1, 2, 3, 4], 5], [[0, 3], [1, 2]]), call("count", [["b", "a", "b"]], { a: 1, b: 2 }), call("half", [3], 1.5)] },
      // The program's own main is not the entry point: the function is called, main never runs.
      { id: "with-main", language: "java", limits, code: "public class Main {\n  static int f(int x) { return x + 1; }\n  public static void main(String[] a) { System.exit(3); }\n}", tests: [call("f", [1], 2)] },
    ]);
    assertStatuses(bare!, ["passed", "passed", "wrong_answer"]);
    assertStatuses(solution!, ["passed", "passed", "passed"]);
    assert.equal(withMain!.cases[0]!.status, "passed", JSON.stringify(withMain!.cases));
  });

  it("function calls in Rust: argument and return types from the function's signature; LeetCode's impl Solution", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 10_000, compileTimeoutMs: 120_000 };
    const [bare, borrowed, solution] = await sb.evaluate([
      { id: "bare", language: "rust", limits, code: "fn join(xs: Vec<String>, sep: char) -> String {\n  xs.join(&sep.to_string())\n}\nfn sum(v: Vec<i64>) -> i64 { v.iter().sum() }",
        tests: [call("join", [["a", "b\"c"], ","], "a,b\"c"), call("sum", [[1, 2, 4000000000]], 4000000003), call("sum", [[1]], 2)] },
      { id: "borrowed", language: "rust", limits, code: "fn count(s: &str, xs: &[i32], ys: &Vec<i32>) -> usize {\n  s.len() + xs.len() + ys.len()\n}",
        tests: [call("count", ["ab", [1, 2, 3], [4]], 6)] },
      { id: "solution", language: "rust", limits, code: "impl Solution {\n  pub fn pairs(nums: Vec<i32>, target: i32) -> Vec<Vec<i32>> {\n    let mut out = vec![];\n    for i in 0..nums.len() { for j in i + 1..nums.len() { if nums[i] + nums[j] == target { out.push(vec![i as i32, j as i32]); } } }\n    out\n  }\n  pub fn half(n: i32) -> f64 { n as f64 / 2.0 }\n  pub fn first(s: String) -> Option<char> { s.chars().next() }\n}",
        tests: [call("pairs", [[1, 2, 3, 4], 5], [[0, 3], [1, 2]]), call("half", [3], 1.5), call("first", [""], null)] },
    ]);
    assertStatuses(bare!, ["passed", "passed", "wrong_answer"]);
    assertStatuses(borrowed!, ["passed"]);
    assertStatuses(solution!, ["passed", "passed", "passed"]);
  });

  it("function calls in D: parameter types by compile-time reflection", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 10_000, compileTimeoutMs: 120_000 };
    const [r] = await sb.evaluate([{ id: "d", language: "D_ut", limits,
      code: "import std.algorithm : sum;\nimport std.array : join;\nstring joined(string[] xs, string sep) { return xs.join(sep); }\nlong total(long[] v) { return v.sum; }\ndouble half(int n) { return n / 2.0; }\nint[][] pairs(int[] v) { return [v, v]; }",
      tests: [call("joined", [["a", "b\"c"], ","], "a,b\"c"), call("total", [[1, 2, 4000000000]], 4000000003), call("half", [3], 1.5), call("pairs", [[1]], [[1], [1]]), call("total", [[1]], 2)] }]);
    assertStatuses(r!, ["passed", "passed", "passed", "passed", "wrong_answer"]);
  });

  it("function calls in Racket and R: the function by name, JSON both ways (Racket's json library, R's jsonlite)", { timeout: 60_000 }, async () => {
    const programs: Record<string, string> = {
      racket: "(define (add a b) (+ a b))\n(define (pairs xs) (vector xs (reverse xs)))\n(define (greet s) (string-append \"hi \" s))",
      R: "add <- function(a, b) {\n  return(a + b)\n}\npairs <- function(xs) list(xs, rev(xs))\ngreet <- function(s) paste0(\"hi \", s)",
    };
    const tests = [call("add", [1, 2], 3), call("pairs", [[1, 2]], [[1, 2], [2, 1]]), call("greet", ["q\"x"], "hi q\"x"), call("add", [1, 1], 3)];
    const results = await sb.evaluate(Object.entries(programs).map(([language, code]) => ({ id: language, language, code, tests, limits: { runTimeoutMs: 20_000 } })));
    for (const r of results) assert.deepEqual(r.cases.map((c) => c.status), ["passed", "passed", "passed", "wrong_answer"], `${r.id}: ${JSON.stringify(r.cases)}`);
  });

  it("function calls in C#: by reflection in the program's classes, with its own Main left alone", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 10_000, compileTimeoutMs: 60_000 };
    const [bare, solution] = await sb.evaluate([
      { id: "bare", language: "csharp", limits, code: "public static string Join(List<string> xs, char sep) {\n  return string.Join(sep.ToString(), xs);\n}\nstatic long Sum(long[] v) { return v.Sum(); }",
        tests: [call("Join", [["a", "b\"c"], ","], "a,b\"c"), call("Sum", [[1, 2, 4000000000]], 4000000003), call("Sum", [[1]], 2)] },
      { id: "solution", language: "csharp", limits, code: "public class Solution {\n  public IList<IList<int>> Pairs(int[] nums, int target) {\n    var outp = new List<IList<int>>();\n    for (int i = 0; i < nums.Length; i++) for (int j = i + 1; j < nums.Length; j++) if (nums[i] + nums[j] == target) outp.Add(new List<int> { i, j });\n    return outp;\n  }\n  public double Half(int n) { return n / 2.0; }\n  public static void Main() { System.Environment.Exit(3); }\n}",
        tests: [call("Pairs", [[1, 2, 3, 4], 5], [[0, 3], [1, 2]]), call("Half", [3], 1.5)] },
    ]);
    assertStatuses(bare!, ["passed", "passed", "wrong_answer"]);
    assertStatuses(solution!, ["passed", "passed"]);
  });

  it("function calls in Kotlin scripts: top-level functions and class Solution by reflection, Kotlin's collections and arrays", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 30_000 };
    const [bare, solution] = await sb.evaluate([
      { id: "bare", language: "kotlin_script", limits, code: "fun join(xs: List<String>, sep: Char): String = xs.joinToString(sep.toString())\nfun total(v: LongArray): Long = v.sum()\nfun nested(m: List<List<Int>>): Map<String, Int> = mapOf(\"n\" to m.flatten().sum())",
        tests: [call("join", [["a", "b\"c"], ","], "a,b\"c"), call("total", [[1, 2, 4000000000]], 4000000003), call("nested", [[[1], [2, 3]]], { n: 6 }), call("total", [[1]], 2)] },
      { id: "solution", language: "kotlin_script", limits, code: "class Solution {\n  fun pairs(nums: IntArray, target: Int): List<List<Int>> {\n    val out = mutableListOf<List<Int>>()\n    for (i in nums.indices) for (j in i + 1 until nums.size) if (nums[i] + nums[j] == target) out.add(listOf(i, j))\n    return out\n  }\n  fun half(n: Int): Double = n / 2.0\n}",
        tests: [call("pairs", [[1, 2, 3, 4], 5], [[0, 3], [1, 2]]), call("half", [3], 1.5)] },
    ]);
    assertStatuses(bare!, ["passed", "passed", "passed", "wrong_answer"]);
    assertStatuses(solution!, ["passed", "passed"]);
  });

  it("function calls in Scala: bare defs put in an object, objects and class Solution, types from the signatures", { timeout: 180_000 }, async () => {
    const limits = { runTimeoutMs: 30_000, compileTimeoutMs: 120_000 };
    const [bare, owned] = await sb.evaluate([
      // ScaleBox's style: bare defs. A local def and a string with braces must not confuse where each def lives.
      { id: "bare", language: "scala", limits, code: "import scala.collection.mutable\ndef join(xs: List[String], sep: Char): String = xs.mkString(sep.toString)\ndef total(v: Array[Long]): Long = {\n  def one(x: Long) = x\n  v.map(one).sum\n}\ndef nested(m: Seq[Vector[Int]]): Map[String, Int] = Map(\"{n\" -> m.flatten.sum)",
        tests: [call("join", [["a", "b\"c"], ","], "a,b\"c"), call("total", [[1, 2, 4000000000]], 4000000003), call("nested", [[[1], [2, 3]]], { "{n": 6 }), call("one", [1], 1), call("total", [[1]], 2)] },
      { id: "owned", language: "scala", limits, code: "object Util {\n  def half(n: Int): Double = n / 2.0\n}\nclass Solution {\n  def pairs(nums: Array[Int], target: Int): List[(Int, Int)] =\n    (for (i <- nums.indices; j <- i + 1 until nums.length if nums(i) + nums(j) == target) yield (i, j)).toList\n  def first(s: String): Option[Char] = s.headOption\n}\nobject Main extends App { sys.exit(3) }",
        tests: [call("pairs", [[1, 2, 3, 4], 5], [[0, 3], [1, 2]]), call("half", [3], 1.5), call("first", [""], null), call("first", ["xy"], "x")] },
    ]);
    // `one` is local to total: not callable, so that case fails alone.
    assertStatuses(bare!, ["passed", "passed", "passed", "runtime_error", "wrong_answer"]);
    assert.match(bare!.cases[3]!.stderr ?? "", /function one is not defined/);
    assertStatuses(owned!, ["passed", "passed", "passed", "passed"]);
  });

  it("function calls in Verilog: functions in the test bench module, called with their declared arity", { timeout: 60_000 }, async () => {
    const limits = { runTimeoutMs: 10_000 };
    const code = "function integer add;\n  input integer a;\n  input integer b;\n  begin\n    add = a + b;\n  end\nendfunction\n// ANSI ports, a narrower value\nfunction automatic [7:0] mix(input [7:0] x, input integer y, z);\n  mix = x ^ y[7:0] ^ z[7:0];\nendfunction";
    const [r] = await sb.evaluate([{ id: "v", language: "verilog", code, limits,
      tests: [call("add", [1, 2], 3), call("add", [-3, 40000], 39997), call("mix", [255, 1, true], 255), call("add", [1.5, 2], 3), call("nope", [], 0), call("add", [1, 1], 3)] }]);
    assertStatuses(r!, ["passed", "passed", "passed", "runtime_error", "runtime_error", "wrong_answer"]);
    assert.match(r!.cases[3]!.stderr ?? "", /Verilog function calls take integer and boolean arguments/);
    assert.match(r!.cases[4]!.stderr ?? "", /function nope taking 0 arguments is not defined/);
  });

  it("Swift runs in its Debian root's sandbox: function calls with argument labels, class Solution, static methods", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 10_000, compileTimeoutMs: 120_000 };
    const [labels, owned] = await sb.evaluate([
      { id: "labels", language: "swift", limits, code: "func add(a: Int, b: Int) -> Int {\n    return a + b\n}\nfunc join(_ xs: [String], with sep: Character) -> String { xs.joined(separator: String(sep)) }\nfunc total(_ v: [Int64]) -> Int64 { v.reduce(0, +) }\nfunc nested(_ m: [[Int]]) -> [String: Int] { [\"n\": m.flatMap { $0 }.reduce(0, +)] }\nfunc first(_ s: String) -> Character? { s.first }",
        tests: [call("add", [1, 2], 3), call("join", [["a", "b\"c"], ","], "a,b\"c"), call("total", [[1, 2, 4000000000]], 4000000003), call("nested", [[[1], [2, 3]]], { n: 6 }), call("first", [""], null), call("add", [1, 1], 3)] },
      { id: "owned", language: "swift", limits, code: "class Solution {\n    func twoSum(_ nums: [Int], _ target: Int) -> [Int] {\n        for i in 0..<nums.count { for j in (i + 1)..<nums.count where nums[i] + nums[j] == target { return [i, j] } }\n        return []\n    }\n}\nenum Maths {\n    static func half(of n: Int) -> Double { Double(n) / 2 }\n}",
        tests: [call("twoSum", [[2, 7, 11, 15], 9], [0, 1]), call("half", [3], 1.5), call("missing", [], null)] },
    ]);
    assertStatuses(labels!, ["passed", "passed", "passed", "passed", "passed", "wrong_answer"]);
    assertStatuses(owned!, ["passed", "passed", "runtime_error"]);
    assert.match(owned!.cases[2]!.stderr ?? "", /Fatal error: rlpipe: function missing is not defined/);
    assert.doesNotMatch(owned!.cases[2]!.stderr ?? "", /Registers:|Backtracing/, "a crash prints its message, not the backtracer's dump");
  });

  it("Julia runs in its Debian root's sandbox: function calls by name, typed methods get typed arrays, values back as JSON", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 20_000 };
    const [r] = await sb.evaluate([{ id: "julia", language: "julia", limits,
      code: "function add(a, b)\n    return a + b\nend\njoined(xs::Vector{String}, sep::String) = join(xs, sep)\ntotal(v::Vector{Int}) = sum(v)\nhalf(n::Int) = n / 2\ncounts(m) = Dict(\"n\" => sum(sum.(m)))\nfirstch(s) = isempty(s) ? nothing : s[1]",
      tests: [call("add", [1, 2], 3), call("joined", [["a", "b\"c"], ","], "a,b\"c"), call("total", [[1, 2, 4000000000]], 4000000003), call("half", [3], 1.5), call("counts", [[[1], [2, 3]]], { n: 6 }), call("firstch", [""], null), call("firstch", ["xy"], "x"), call("absent", [], null), call("add", [1, 1], 3)] }]);
    assertStatuses(r!, ["passed", "passed", "passed", "passed", "passed", "passed", "passed", "runtime_error", "wrong_answer"]);
    assert.match(r!.cases[7]!.stderr ?? "", /UndefVarError: absent not defined/);
  });

  it("runs C++ (compiled once) and JavaScript", async () => {
    const [cpp, js] = await sb.evaluate([
      { ...job("cpp", "#include <cstdio>\nint main(){long a,b;scanf(\"%ld %ld\",&a,&b);printf(\"%ld\\n\",a*b);}", [stdio("6 7", "42"), stdio("2 3", "6")]), language: "cpp" },
      { ...job("js", "const [a,b]=require('fs').readFileSync(0,'utf8').trim().split(/\\s+/).map(Number);console.log(a*b)", [stdio("6 7", "42")]), language: "nodejs" },
    ]);
    assert.equal(cpp!.passed, 2);
    assert.equal(js!.passed, 1);
  });

  it("an unavailable language is a clear failure of that job, not a crash", async () => {
    // Lean has no toolchain rlpipe knows (toolchains.ts), on any machine.
    const [r] = await sb.evaluate([{ ...job("lean", "theorem t : True := trivial", [stdio("", "")]), language: "lean" }]);
    assert.equal(r!.cases[0]!.status, "compile_error");
    assert.match(r!.cases[0]!.detail!, /language lean is not available in the local sandbox \(available: python, cpp, nodejs[a-zA-Z_, ]*\)/);
    const run = await sb.run({ language: "lean", code: "", limits: { runTimeoutMs: 1000 } });
    assert.match(run.stderr, /not available/);
  });

  it("a special judge accepts any valid answer (stdin.txt / stdout.txt / answer.txt, exit 0)", async () => {
    const judge = "a = int(open('stdin.txt').read())\nx, y = map(int, open('answer.txt').read().split())\nraise SystemExit(0 if x + y == a and x > 0 and y > 0 else 1)";
    const [r] = await sb.evaluate([job("judge", "n = int(input())\nprint(n - 1, 1)", [stdio("3", "1 2"), stdio("5", "1 4"), stdio("1", "1 0")], { checker: { kind: "special", language: "python", program: judge } })]);
    assert.deepEqual(r!.cases.map((c) => c.status), ["passed", "passed", "wrong_answer"]);
  });

  it("stops at the first failure when asked, and skips cases past the total budget", async () => {
    const [stop] = await sb.evaluate([job("stop", "print(int(input()) * 2)", [stdio("1", "2"), stdio("2", "5"), stdio("3", "6")], { stopOnFirstFailure: true })]);
    assert.deepEqual(stop!.cases.map((c) => c.status), ["passed", "wrong_answer", "skipped"]);
    const [budget] = await sb.evaluate([job("budget", "import time\ntime.sleep(0.6)\nprint(1)", [stdio("", "1"), stdio("", "1"), stdio("", "1"), stdio("", "1")], { limits: { runTimeoutMs: 2000, totalTimeoutMs: 1500 } })]);
    assert.ok(budget!.cases.filter((c) => c.status === "passed").length >= 1);
    assert.equal(budget!.cases[3]!.status, "skipped");
    assert.equal(budget!.cases[3]!.detail, "Total Timeout");
    // The budget is the cases': a build slower than it (bits/stdc++.h, ~1 s) still leaves them their time (ScaleBox's
    // cpp assert test gives 1 s).
    const [built] = await sb.evaluate([{ id: "built", language: "cpp", code: "#include <bits/stdc++.h>\nint main() { std::string s; std::cin >> s; std::cout << s << std::endl; }",
      tests: [stdio("a", "a"), stdio("b", "b")], limits: { runTimeoutMs: 2000, compileTimeoutMs: 60_000, totalTimeoutMs: 300 } }]);
    assertStatuses(built!, ["passed", "passed"]);
  });

  it("run() executes one program with stdin and input files (tool calls)", async () => {
    const r = await sb.run({ language: "python", code: "import sys\nprint(sys.stdin.read().upper(), open('data/in.txt').read())", stdin: "hi", files: { "data/in.txt": new TextEncoder().encode("file!") }, limits: { runTimeoutMs: 3000 } });
    assert.equal(r.status, "ok");
    assert.equal(r.stdout, "HI file!\n");
  });
});

describe("local sandbox: security checklist", () => {
  let sb: LocalSandbox;
  let server: Server;
  let port = 0;
  before(async () => {
    sb = await LocalSandbox.create();
    process.env["RLPIPE_TEST_SECRET"] = "do-not-leak-4242";
    server = createServer((s) => s.end("host service\n"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    port = (server.address() as { port: number }).port;
  });
  after(async () => {
    delete process.env["RLPIPE_TEST_SECRET"];
    await new Promise<void>((r) => server.close(() => r()));
    await sb.close();
  });

  const run = (code: string, runTimeoutMs = 3000) => sb.run({ language: "python", code, limits: { runTimeoutMs, memoryMb: 512, maxOutputBytes: 1 << 20 } });

  it("sees an empty environment, runs as an unprivileged uid and cannot read host files", async () => {
    const r = await run("import os\nprint(os.getuid(), os.getgid())\nprint(os.environ.get('RLPIPE_TEST_SECRET'))\nprint(os.path.exists('/etc/passwd'), os.path.exists('/root'), os.path.exists('/work/../etc/shadow'))\nprint(sorted(os.listdir('/')))");
    assert.equal(r.status, "ok", r.stderr);
    const [ids, secret, paths, root] = r.stdout.trim().split("\n");
    assert.match(ids!, /^(64\d\d\d) \1$/);
    assert.equal(secret, "None");
    assert.equal(paths, "False False False");
    assert.deepEqual(JSON.parse(root!.replaceAll("'", '"')), ["bin", "dev", "etc", "lib", "lib64", "mnt", "opt", "proc", "sbin", "tmp", "usr", "work"]);
  });

  it("the first program of a fresh zygote finds nothing of the harness's warm-up: its own stdin only, empty output, the sandbox's environment (no LD_BIND_NOW, here or in a compiled program)", async () => {
    const fresh = await LocalSandbox.create({ concurrency: 1 });
    try {
      const limits = { runTimeoutMs: 20_000, memoryMb: 512, maxOutputBytes: 1 << 20 };
      const probe = "import os, sys\nprint(repr(sys.stdin.read()))\nprint(sorted(os.environ))\nsys.stdout.flush()\nprint(os.lseek(1, 0, os.SEEK_CUR), os.fstat(1).st_size)";
      const [py, again] = [await fresh.run({ language: "python", code: probe, stdin: "7 8\n", limits }), await fresh.run({ language: "python", code: probe, stdin: "", limits })];
      for (const [r, stdin] of [[py, "'7 8\\n'"], [again, "''"]] as const) {
        assert.equal(r.status, "ok", r.stderr);
        const [read, env, offsets] = r.stdout.trim().split("\n");
        assert.equal(read, stdin);
        assert.deepEqual(JSON.parse(env!.replaceAll("'", '"')), ["HOME", "LANG", "PATH", "PWD", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "TMPDIR"]);
        assert.match(offsets!, /^\d+ \d+$/); // nothing before this program's own two lines
        assert.equal(Number(offsets!.split(" ")[1]), Buffer.byteLength(`${read}\n${env}\n`));
      }
      const c = await fresh.run({ language: "cpp", code: "#include <cstdio>\n#include <cstdlib>\nint main() { std::printf(\"%s\\n\", std::getenv(\"LD_BIND_NOW\") ? \"set\" : \"unset\"); }", limits });
      assert.equal(c.status, "ok", c.stderr);
      assert.equal(c.stdout.trim(), "unset");
    } finally {
      await fresh.close();
    }
  });

  it("has no network: a host service on 127.0.0.1 is unreachable and DNS fails", async () => {
    const r = await run(`import socket\ntry:\n    socket.create_connection(('127.0.0.1', ${port}), timeout=2); print('connected')\nexcept OSError as e: print('refused', type(e).__name__)\ntry:\n    socket.getaddrinfo('example.com', 80); print('resolved')\nexcept OSError: print('no dns')\nimport os; print(sorted(os.listdir('/sys/class/net')) if os.path.exists('/sys/class/net') else 'no sys')`);
    assert.equal(r.status, "ok", r.stderr);
    assert.match(r.stdout, /^refused ConnectionRefusedError\nno dns\n/);
  });

  it("cannot write /usr; its writable places are private and gone afterwards", async () => {
    const r = await run("import os\ntry:\n    open('/usr/evil', 'w'); print('wrote')\nexcept OSError as e: print('denied', e.errno)\nopen('/tmp/mark', 'w').write('x')\nprint(os.getcwd())");
    assert.equal(r.stdout, "denied 30\n/work/c0\n");
    const again = await run("import os\nprint(os.path.exists('/tmp/mark'))");
    assert.equal(again.stdout, "False\n");
  });

  it("contains a fork bomb (process limit) and keeps working", async () => {
    // The limit holds for a server running as root too (the kernel exempts root's own processes from it).
    const count = await run("import os, time\nn = 0\nwhile True:\n    try:\n        if os.fork() == 0:\n            time.sleep(30)\n            os._exit(0)\n        n += 1\n    except OSError as e:\n        print(n, e.errno)\n        break", 5000);
    assert.equal(count.status, "ok", count.stderr);
    const [n, errno] = count.stdout.trim().split(" ").map(Number);
    assert.equal(errno, 11, "fork fails with EAGAIN at the process limit");
    assert.ok(n! > 0 && n! < 32, `a program may have at most 32 processes, it made ${n! + 1}`);
    const r = await run("import os\nwhile True:\n    try: os.fork()\n    except OSError: pass", 2000);
    assert.ok(["runtime_error", "timeout"].includes(r.status), r.status);
    const after = await run("print('alive')");
    assert.equal(after.stdout, "alive\n");
  });

  it("a 2 GB allocation hits the memory limit", async () => {
    const r = await run("x = bytearray(2 * 1024 ** 3)\nprint(len(x))");
    assert.equal(r.status, "memory_limit");
  });

  it("a 100 MB print is cut at the output cap and reported", async () => {
    const r = await run("import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(100): sys.stdout.write(chunk)");
    assert.equal(r.status, "output_limit");
    assert.ok(r.stdout.length <= 1 << 20);
  });

  it("a timeout kills the whole process group, daemons included", async () => {
    // Durations unique to this run, so that other sleeps on the machine never match.
    const tag = `${process.pid % 10_000}${Date.now() % 10_000}`;
    const r = await run(`import os, time, subprocess\nsubprocess.Popen(['/usr/bin/sleep', '300.${tag}'], start_new_session=True)\nif os.fork() == 0:\n    os.setsid()\n    os.execv('/usr/bin/sleep', ['sleep', '301.${tag}'])\ntime.sleep(60)`, 800);
    assert.equal(r.status, "timeout");
    const left = spawnSync("pgrep", ["-f", `^(/usr/bin/)?sleep 30[01]\\.${tag}$`], { encoding: "utf8" });
    assert.equal(left.stdout.trim(), "", "no process of the program survives");
  });

  it("a program cannot kill its harness: pid 1 of its namespaces is its manager, which no signal from inside reaches", async () => {
    // Each program's manager is pid 1 of the program's own PID namespace (harness/reset.py) and installs no handler
    // for these, so the kernel drops them; the zygote is in another namespace, out of sight.
    const code = "import os, signal, time\nn = int(input())\nif n == 2:\n    assert os.getppid() == 1\n    for s in (signal.SIGKILL, signal.SIGINT, signal.SIGTERM, signal.SIGSTOP):\n        os.kill(1, s)\n    time.sleep(0.2)\nprint(n * 10)";
    const [r] = await sb.evaluate([job("killer", code, [stdio("1", "10"), stdio("2", "20"), stdio("3", "30"), stdio("4", "40")])]);
    assert.equal(r!.status, "ok");
    assert.deepEqual(r!.cases.map((c) => c.status), ["passed", "passed", "passed", "passed"], JSON.stringify(r!.cases));
  });

  it("cannot plant results for the next case", async () => {
    // Case 0 tries to pre-create the next case's directory and output; each case starts from nothing.
    const code = "import os\nn = int(input())\nif n == 0:\n    os.makedirs('/work/c1', exist_ok=True)\n    open('/work/c1/.stdout', 'w').write('999')\n    print(0)\nelse:\n    print(n)";
    const [r] = await sb.evaluate([job("plant", code, [stdio("0", "0"), stdio("5", "999")])]);
    assert.deepEqual(r!.cases.map((c) => c.status), ["passed", "wrong_answer"]);
  });

  it("respects the global concurrency limit (sized to the cores)", async () => {
    const small = await LocalSandbox.create({ concurrency: 1 });
    try {
      const t0 = performance.now();
      const rs = await small.evaluate([0, 1, 2].map((i) => job(`c${i}`, "import time\ntime.sleep(0.4)\nprint(1)", [stdio("", "1")])));
      const elapsed = performance.now() - t0;
      assert.ok(rs.every((r) => r.passed === 1));
      assert.ok(elapsed >= 1150, `3 jobs of 0.4 s on one slot must run one after another (took ${elapsed.toFixed(0)} ms)`);
      assert.equal((await small.capabilities()).maxConcurrency, 1);
    } finally {
      await small.close();
    }
  });
});

describe("local sandbox: loopback", () => {
  it("a program can serve and call itself on localhost (its own loopback), and no other name resolves", async () => {
    const sb = await LocalSandbox.create({ concurrency: 1 });
    try {
      const code = [
        "import socket, threading",
        "s = socket.socket(); s.bind(('localhost', 0)); s.listen(1); port = s.getsockname()[1]",
        "def serve():",
        "    c, _ = s.accept(); c.sendall(b'hi'); c.close()",
        "threading.Thread(target=serve).start()",
        "c = socket.create_connection(('localhost', port)); print(c.recv(2).decode())",
        "for name in ('example.com', socket.gethostname()):",
        "    try:",
        "        socket.gethostbyname(name); print('resolved', name)",
        "    except OSError:",
        "        print('unresolved')",
        "print(open('/etc/hosts').read().split())",
      ].join("\n");
      const r = await sb.run({ language: "python", code, limits: { runTimeoutMs: 5000 } });
      assert.equal(r.stdout, "hi\nunresolved\nunresolved\n['127.0.0.1', 'localhost', '::1', 'localhost', 'ip6-localhost', 'ip6-loopback']\n", r.stderr);
    } finally {
      await sb.close();
    }
  });
});

describe("local sandbox: start-up", () => {
  it("runs its harness from bytecode compiled by the sandbox's interpreter; an interpreter that cannot compile it is a clear error and leaves no files", async () => {
    const root = mkdtempSync(join(tmpdir(), "rlpipe-start-"));
    try {
      // An interpreter that exists but fails (here: `false` for python3): the error names it and the harness file.
      await assert.rejects(LocalSandbox.create({ python: "/bin/false", workRoot: root }), (e: Error & { code?: string }) => {
        assert.equal(e.code, "harness_compile_failed");
        assert.match(e.message, /\/bin\/false could not compile the sandbox harness zygote\.py/);
        return true;
      });
      assert.deepEqual(readdirSync(root), [], "nothing is left in the work root");
      const sb = await LocalSandbox.create({ workRoot: root, concurrency: 1 });
      try {
        // One work root for the sandbox and one per Debian root's sandbox, each with the harness compiled by its own Python.
        const dirs = readdirSync(root);
        assert.equal(dirs.length, 1 + detectRoots().length);
        for (const d of dirs) assert.deepEqual(readdirSync(join(root, d)).filter((f) => f.endsWith(".pyc")).sort(), ["asserts.pyc", "local_harness.pyc", "reset.pyc", "zygote.pyc"]);
        // The program runs as `python main.py` would: its own argv, its directory first on sys.path (not the harness's).
        const code = "import sys\nfrom helper import x\nprint(sys.argv, sys.path[0] in ('', '.'), x)";
        const r = await sb.run({ language: "python", code, files: { "helper.py": new TextEncoder().encode("x = 7\n") }, limits: { runTimeoutMs: 5000 } });
        assert.equal(r.stdout, "['main.py'] True 7\n", r.stderr);
      } finally {
        await sb.close();
      }
      assert.deepEqual(readdirSync(root), [], "close removes its files");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
