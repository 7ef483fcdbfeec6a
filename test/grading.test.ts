// Grading in one place (core/grading): extraction, comparison, test-case formats, case statuses, scores.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TestCaseError, parseCaseList, parseTestCases, programWithTail } from "../core/grading/cases.js";
import { compareStdout, parsePyFloat, valuesEqual } from "../core/grading/compare.js";
import { canonicalLanguage, detectLanguage, extractCode } from "../core/grading/extract.js";
import { gradeCase, gradeJudge, scoreOf, summarize } from "../core/grading/grade.js";

describe("code extraction (ScaleBox's default rule)", () => {
  it("drops <think> blocks, prefers the target language, else the first block, else nothing", () => {
    const c = "<think>maybe ```python\nprint('draft')\n```</think>Here:\n```cpp\nint main(){}\n```\nand\n```py\nprint('final')\n```";
    assert.deepEqual(extractCode(c, "python"), { code: "print('final')", language: "python" });
    assert.deepEqual(extractCode(c, "cpp"), { code: "int main(){}", language: "cpp" });
    assert.deepEqual(extractCode("```\nx = 1\n```", "python"), { code: "x = 1" });
    assert.deepEqual(extractCode("no code at all", "python"), { code: "" });
    assert.deepEqual(extractCode("<think>unfinished ```python\nprint(1)\n```", "python"), { code: "" }, "a truncated reasoning block is not an answer");
    assert.equal(extractCode("```javascript\nconsole.log(1)\n```", "nodejs").code, "console.log(1)");
  });

  it("takes an unclosed fence to the end, then code without fences: Python's top-level def/class blocks, bash's whole text", () => {
    // A truncated answer: the fence never closes.
    assert.deepEqual(extractCode("Here:\n```cpp\nbool f(long n) {\n    return n > 1;\n}", "cpp"), { code: "bool f(long n) {\n    return n > 1;\n}", language: "cpp" });
    // No fences: every def/class with the imports before it, blank lines inside dropped; prose is not code.
    const bare = "Sure, here it is.\n\nimport math\ndef helper(x):\n    return math.isqrt(x)\n\ndef double_check(s):\n\n    return helper(len(s)) > 1\nThat's all.";
    assert.deepEqual(extractCode(bare, "python"), { code: "import math\ndef helper(x):\n    return math.isqrt(x)\ndef double_check(s):\n    return helper(len(s)) > 1", language: "python" });
    assert.deepEqual(extractCode("\nclass Solution:\n    def f(self, n: int) -> List[int]:\n        return [n]\n", "python").code, "class Solution:\n    def f(self, n: int) -> List[int]:\n        return [n]");
    assert.deepEqual(extractCode("echo hi\n\necho there", "bash"), { code: "echo hi\necho there", language: "bash" });
    assert.deepEqual(extractCode("print(1) but not a def", "python"), { code: "" });
    // A complete fence always wins over an unclosed one or bare code.
    assert.equal(extractCode("def f():\n    pass\n```python\nprint(2)\n```\n```python\nprint(3)", "python").code, "print(2)");
  });

  it("detects the language from the first tagged fence and canonicalizes aliases", () => {
    assert.equal(detectLanguage("text\n```c++\nint main(){}\n```"), "cpp");
    assert.equal(detectLanguage("```\nplain\n```"), "python");
    assert.equal(canonicalLanguage("JS"), "nodejs");
    assert.equal(canonicalLanguage("golang"), "go");
    // SandboxFusion's capitalised names stay as it spells them (the local sandbox's R toolchain is "R").
    assert.equal(canonicalLanguage("R"), "R");
    assert.equal(canonicalLanguage("r"), "R");
    assert.equal(canonicalLanguage("D_ut"), "D_ut");
    // The tags models write for SandboxFusion's names: a kotlin_script job takes the ```kotlin block.
    assert.deepEqual(["C#", "kotlin", "kts", "jl", "d", "rb"].map(canonicalLanguage), ["csharp", "kotlin_script", "kotlin_script", "julia", "D_ut", "ruby"]);
    assert.equal(extractCode("Plan:\n```text\nadd numbers\n```\n```kotlin\nprintln(1)\n```", "kotlin_script").code, "println(1)");
  });
});

describe("stdout comparison (SandboxFusion semantics with the line-count check)", () => {
  it("strips, compares per line, ignores case and one trailing empty line", () => {
    assert.ok(compareStdout("YES\n1 2", "yes  \n  1 2\n\n").ok);
    assert.ok(compareStdout("a", "a\n").ok);
  });

  it("requires equal line counts (ScaleBox accepted prefixes and extra lines)", () => {
    assert.deepEqual(compareStdout("1\n2\n3", "1"), { ok: false, detail: "expected 3 lines, got 1" });
    assert.deepEqual(compareStdout("1", "1\njunk"), { ok: false, detail: "expected 1 line, got 2" });
  });

  it("accepts numbers within 1e-5 relative to the expected value, like Python's float()", () => {
    assert.ok(compareStdout("0.33333333", "0.3333334").ok);
    assert.ok(!compareStdout("0.33333333", "0.3334").ok);
    assert.ok(compareStdout("1e3", "1000.000001").ok);
    assert.ok(compareStdout("nan", "NaN").ok, "identical text matches before any float parsing (as in SandboxFusion)");
    assert.ok(!compareStdout("1.0", "nan").ok, "a NaN is never close to a number");
    assert.ok(compareStdout("inf", "Infinity").ok);
    assert.equal(parsePyFloat("1_000.5"), 1000.5);
    assert.equal(parsePyFloat("abc"), undefined);
    assert.equal(parsePyFloat("."), undefined);
  });

  it("can be strict when a task needs it", () => {
    assert.ok(!compareStdout("YES", "yes", { kind: "lines", caseInsensitive: false }).ok);
    assert.ok(!compareStdout("a\n", "a", { kind: "exact" }).ok);
  });

  it("compares function-call values as JSON with the same tolerance", () => {
    assert.ok(valuesEqual([1, 2.0000001, { a: "x" }], [1, 2, { a: "x" }]));
    assert.ok(!valuesEqual([1, 2], [1, 2, 3]));
    assert.ok(!valuesEqual(true, 1));
    assert.ok(!valuesEqual({ a: 1 }, { b: 1 }));
  });
});

describe("test-case formats", () => {
  it("reads ScaleBox provided_data (string or object) and verl's plural keys", () => {
    const stdio = parseTestCases(JSON.stringify({ input: ["1 2"], output: ["3"], fn_name: null, type: "stdin_stdout" }));
    assert.deepEqual(stdio.tests, [{ kind: "stdio", stdin: "1 2", expectedStdout: "3" }]);
    const verl = parseTestCases({ inputs: ["5"], outputs: ["25"] });
    assert.deepEqual(verl.tests, [{ kind: "stdio", stdin: "5", expectedStdout: "25" }]);
    const call = parseTestCases({ fn_name: "add", input: [[1, 2], "3\n4"], output: [[3], 7] });
    assert.deepEqual(call.tests, [{ kind: "call", fnName: "add", args: [1, 2], expected: 3 }, { kind: "call", fnName: "add", args: [3, 4], expected: 7 }]);
    const asserts = parseTestCases({ type: "assert", tests: ["assert f(1) == 2", "assert f(2) == 3"] });
    assert.equal(asserts.tests.length, 2);
    const he = parseTestCases({ type: "assert", test: "def check(c):\n    assert c(1)", entry_point: "f" });
    assert.deepEqual(he.tests, [{ kind: "assert", testCode: "def check(c):\n    assert c(1)", entryPoint: "f" }]);
    const judged = parseTestCases({ input: ["1"], output: ["1"] }, { special_judge_program: "exit(0)" });
    assert.deepEqual(judged.checker, { kind: "special", program: "exit(0)", language: "python" });
  });

  it("json_input: a string input is one JSON value per line and its output is JSON text", () => {
    const lcb = parseTestCases({ type: "function_call", fn_name: "f", json_input: true, input: ["[[1, 2]]\n1\n\"abc\"", "[[3]]\n2\n\"'\""], output: ["15", "[1, 2]"] });
    assert.deepEqual(lcb.tests, [
      { kind: "call", fnName: "f", args: [[[1, 2]], 1, "abc"], expected: 15 },
      { kind: "call", fnName: "f", args: [[[3]], 2, "'"], expected: [1, 2] },
    ]);
    assert.throws(() => parseTestCases({ type: "function_call", fn_name: "f", json_input: true, input: ["1"], output: ["not json"] }), /output\[0\] must be JSON text/);
  });

  it("MultiPL-E asserts: the program is the code cut at the first stop token, then the tests' tail", () => {
    const p = parseTestCases({ type: "assert", tests: "}\nint main() {\n    assert(f(2));\n}\n", stop_tokens: ["\n}", "\nint main"] });
    assert.deepEqual(p.tests, [{ kind: "assert", testCode: "" }]);
    assert.equal(programWithTail("bool f(long n) {\n    if (n) { return true; }\n    return false;\n}\nint main() {}", p.tail!),
      "bool f(long n) {\n    if (n) { return true; }\n    return false;}\nint main() {\n    assert(f(2));\n}\n");
    assert.throws(() => parseTestCases({ type: "assert", tests: "x", stop_tokens: "\n}" }), /stop_tokens must be a list of strings/);
  });

  it("/common_evaluate's lists: one object per case (function calls or stdio), or SandboxFusion's test list", () => {
    const calls = parseCaseList({ test_cases: [{ type: "function_call", input: [1, 2], output: [3], fn_name: "add" }, { type: "function_call", input: [3, 4], output: [7], fn_name: "add" }] });
    assert.deepEqual(calls.tests, [{ kind: "call", fnName: "add", args: [1, 2], expected: 3 }, { kind: "call", fnName: "add", args: [3, 4], expected: 7 }]);
    const untyped = parseCaseList({ test_cases: [{ input: [5], output: [25], fn_name: "sq" }] });
    assert.equal(untyped.tests[0]!.kind, "call");
    const stdio = parseCaseList({ test_cases: [{ type: "stdin_stdout", input: "1 2", output: "3" }] });
    assert.deepEqual(stdio.tests, [{ kind: "stdio", stdin: "1 2", expectedStdout: "3" }]);
    const sf = parseCaseList({ test: [{ input: { stdin: "1 2" }, output: { stdout: "3" } }, { input: { stdin: "3 4" }, output: { stdout: "7" } }] });
    assert.deepEqual(sf.tests.map((t) => t.kind === "stdio" && [t.stdin, t.expectedStdout]), [["1 2", "3"], ["3 4", "7"]]);
    assert.throws(() => parseCaseList({ cases: [] }), /needs test_cases \(a list of cases\) or test/);
    assert.throws(() => parseCaseList({ test_cases: ["x"] }), /test case 0 must be an object/);
  });

  it("rejects malformed test cases with a message (never a silent 0)", () => {
    assert.throws(() => parseTestCases("not json"), TestCaseError);
    assert.throws(() => parseTestCases({ input: ["1"], output: [] }), /1 inputs but 0 outputs/);
    assert.throws(() => parseTestCases({ type: "function_call", input: [[1]], output: [[1]] }), /need fn_name/);
    assert.throws(() => parseTestCases({ type: "weird", input: [], output: [] }), /unknown test case type "weird"/);
    assert.throws(() => parseTestCases([1, 2]), /must be an object/);
  });
});

describe("case statuses and scores", () => {
  const t = { kind: "stdio" as const, stdin: "", expectedStdout: "1" };
  const base = { exitCode: 0, stdout: "1\n", stderr: "", timeMs: 1 };
  it("maps executions to statuses in a fixed order of precedence", () => {
    assert.equal(gradeCase(t, base).status, "passed");
    assert.equal(gradeCase(t, { ...base, stdout: "2" }).status, "wrong_answer");
    assert.equal(gradeCase(t, { ...base, exitCode: 1, stderr: "Traceback\nZeroDivisionError: division by zero\n" }).detail, "ZeroDivisionError: division by zero");
    assert.equal(gradeCase(t, { ...base, timedOut: true }).status, "timeout");
    assert.equal(gradeCase(t, { ...base, exitCode: 1, memoryExceeded: true }).status, "memory_limit");
    assert.equal(gradeCase(t, { ...base, outputExceeded: true }).status, "output_limit");
    assert.equal(gradeCase(t, { ...base, infraError: "boom" }).status, "infra_error");
    assert.equal(gradeCase(t, { ...base, stdout: "2" }, { kind: "special", language: "python", program: "" }).needsJudge, true);
    assert.equal(gradeJudge({ ...base, exitCode: 0 }).status, "passed");
    assert.equal(gradeJudge({ ...base, exitCode: 1 }).status, "wrong_answer");
    assert.equal(gradeJudge({ ...base, timedOut: true }).status, "infra_error");
  });

  it("scores 1.0 when every case passes, else the passed fraction; infra errors mark the job", () => {
    const r = summarize("j", "t", [{ index: 0, status: "passed" }, { index: 1, status: "wrong_answer" }, { index: 2, status: "passed" }, { index: 3, status: "timeout" }], 5);
    assert.equal(scoreOf(r), 0.5);
    assert.equal(r.status, "ok");
    const bad = summarize("j", "t", [{ index: 0, status: "passed" }, { index: 1, status: "infra_error", detail: "sandbox down" }], 5);
    assert.equal(bad.status, "infra_error");
    assert.equal(bad.error, "sandbox down");
  });
});
