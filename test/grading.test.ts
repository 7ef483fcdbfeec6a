// Grading in one place (core/grading): extraction, comparison, test-case formats, case statuses, scores.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TestCaseError, parseCaseList, parseTestCases, programWithTail } from "../core/grading/cases.js";
import { compareStdout, parsePyFloat, valuesEqual } from "../core/grading/compare.js";
import { parseJsonExact, stringifyJson } from "../core/grading/exact-json.js";
import type { TestCase } from "../core/grading/types.js";
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

  it("compares function-call values as JSON: the tolerance only for expected floats", () => {
    assert.ok(valuesEqual([1, 2.5000001, { a: "x" }], [1, 2.5, { a: "x" }]));
    assert.ok(!valuesEqual([1, 2.0000001], [1, 2]), "an expected integer is matched exactly");
    assert.ok(valuesEqual([3.0], [3]), "a float of exactly the integer's value is equal (3.0 == 3 in Python)");
    assert.ok(!valuesEqual([1, 2], [1, 2, 3]));
    assert.ok(!valuesEqual(true, 1));
    assert.ok(!valuesEqual({ a: 1 }, { b: 1 }));
  });
});

describe("exact comparison (issue 32: integers exactly at any size, floats within a tolerance only where expected)", () => {
  const big = 2n ** 53n + 1n; // 9007199254740993: a double cannot hold it
  it("fails answers off by one and by seven, in a function's value and in stdout, small and large", () => {
    for (const want of [1000000n, 12345678901234567890n, -987654321987654321987654321n]) {
      for (const off of [1n, -1n, 7n, -7n]) {
        const got = want + off;
        assert.ok(!valuesEqual(parseJsonExact(String(got)), parseJsonExact(String(want))), `${got} for ${want} (value)`);
        assert.ok(!compareStdout(String(want), String(got)).ok, `${got} for ${want} (stdout)`);
        assert.ok(!compareStdout(`1 2\n${want}`, `1 2\n${got}`).ok);
      }
      assert.ok(valuesEqual(parseJsonExact(String(want)), parseJsonExact(String(want))));
      assert.ok(compareStdout(String(want), `  ${want}\n`).ok);
    }
    // The tolerance used to take a token within 1e-5 of the expected one: 1000001 for 1000000.
    assert.ok(!compareStdout("1000000", "1000001").ok);
    assert.ok(!compareStdout("1000000", "1000000.5").ok);
  });

  it("keeps integers past 2^53 exact from the request JSON through to the comparison", () => {
    const parsed = parseTestCases(`{"fn_name": "f", "input": [[${big}]], "output": [[${big}]]}`);
    const t = parsed.tests[0] as Extract<TestCase, { kind: "call" }>;
    assert.equal(t.expected, big);
    assert.deepEqual(t.args, [big]);
    // The value a harness writes back: one less is a different integer, and so is the nearest double.
    assert.equal(gradeCase(t, { exitCode: 0, stdout: "", stderr: "", timeMs: 1, valueJson: String(big) }).status, "passed");
    assert.equal(gradeCase(t, { exitCode: 0, stdout: "", stderr: "", timeMs: 1, valueJson: String(big - 1n) }).status, "wrong_answer");
    assert.equal(gradeCase(t, { exitCode: 0, stdout: "", stderr: "", timeMs: 1, valueJson: "9007199254740992.0" }).status, "wrong_answer");
    assert.ok(!compareStdout(String(big), "9007199254740992").ok);
    assert.ok(!compareStdout(String(big), "9.007199254740992e15").ok);
    assert.equal(stringifyJson({ args: [big, 1.5, "x"] }), `{"args":[${big},1.5,"x"]}`);
    assert.deepEqual(parseJsonExact(`[${big}, -${big}, 1.5, 2, "${big}", {"k": [true, null]}]`), [big, -big, 1.5, 2, String(big), { k: [true, null] }]);
  });

  it("still passes floats within the tolerance where the expected value is a float", () => {
    assert.ok(valuesEqual(parseJsonExact(String(0.1 + 0.2)), parseJsonExact("0.3")));
    assert.ok(valuesEqual(parseJsonExact("[0.30000000000000004, 1.0]"), parseJsonExact("[0.3, 1]")));
    assert.ok(compareStdout("0.3", String(0.1 + 0.2)).ok);
    assert.ok(compareStdout("3.0", "3").ok, "an expected float is matched within the tolerance, by an integer too");
    assert.ok(!valuesEqual(0.31, 0.3));
  });

  it("reads an integer written as a decimal of exactly that value, decided in decimal", () => {
    assert.ok(compareStdout("3", "3.000").ok);
    assert.ok(compareStdout("1000", "1e3").ok);
    assert.ok(compareStdout("-120", "-1.2E+2").ok);
    assert.ok(compareStdout("0", "-0.0").ok);
    assert.ok(!compareStdout("3", "3.0000001").ok);
    assert.ok(!compareStdout("10000000000000000", "10000000000000001.0").ok);
    assert.ok(!compareStdout("5", "5e999999999").ok, "a huge exponent is refused without building the power");
    assert.ok(!compareStdout("5", "inf").ok);
    assert.ok(!compareStdout("5", "five").ok);
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
      "bool f(long n) {\n    if (n) { return true; }\n    return false;\n}\nint main() {\n    assert(f(2));\n}\n", "joined with a line break, as ScaleBox joins them");
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
