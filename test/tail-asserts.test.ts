// MultiPL-E tail tests taken apart (core/grading/tail-asserts.ts): literals of five languages read as exact JSON,
// tails of each language's shape decomposed into calls, and tails of any other shape kept whole with the reason.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { detectRoots } from "../adapters/sandboxes/toolchains/debian-root.js";
import { checkPythonEnv } from "../adapters/sandboxes/toolchains/python-env.js";
import { withEnvironment } from "../adapters/sandboxes/toolchains/runtime-environment.js";
import { CALL_DRIVER_LANGUAGES, detectToolchains, SOURCE_CALL_LANGUAGES } from "../adapters/sandboxes/toolchains/toolchains.js";
import { ROOT } from "./helpers.js";
import { literalValue, NotALiteral, type SourceLanguage } from "../core/grading/source-literals.js";
import { cppSerializable, javaSerializable, planTail, rustSerializable, TAIL_SHAPES } from "../core/grading/tail-asserts.js";
import type { TestCase } from "../core/grading/types.js";
import { planProgram, strictRefusal, verdictBy, verdictTable, verdictTableMarkdown } from "../core/grading/verdicts.js";
import { parseTestCases } from "../core/grading/cases.js";

const big = 2n ** 53n + 1n;

describe("literals as exact JSON (source-literals.ts)", () => {
  const cases: readonly [SourceLanguage, string, unknown][] = [
    ["cpp", "(true)", true],
    ["cpp", "(std::vector<long>({(long)1, (long)-2, (long)3}))", [1, -2, 3]],
    ["cpp", "(std::vector<std::string>({(std::string)\"a\\n\", (std::string)\"b\"}))", ["a\n", "b"]],
    ["cpp", "std::vector<long>()", []],
    ["cpp", "(std::make_tuple(1, \"x\", true))", [1, "x", true]],
    ["cpp", "std::make_tuple(std::optional<long>(std::nullopt), std::optional<long>(1))", [null, 1]],
    ["cpp", "std::nullopt", null],
    ["cpp", "(std::map<std::string,long>({{\"a\", 2}, {\"b\", 2}}))", { a: 2, b: 2 }],
    ["cpp", "(float(3.5))", 3.5],
    ["cpp", "(0.3f)", 0.3],
    ["cpp", "(std::vector<std::tuple<long, long>>({(std::tuple<long, long>)std::make_tuple(0, 0), (std::tuple<long, long>)std::make_tuple(1, 4)}))", [[0, 0], [1, 4]]],
    ["cpp", `(${big})`, big],
    ["cpp", "'c'", "c"],
    ["java", "(new ArrayList<Long>(Arrays.asList((long)1l, (long)2l)))", [1, 2]],
    ["java", "new ArrayList<String>(Arrays.asList())", []],
    ["java", "(Pair.with(3.9f, 4.0f))", [3.9, 4]],
    ["java", "Optional.of(2l)", 2],
    ["java", "Optional.empty()", null],
    ["java", "(new HashMap<String,Long>(Map.of(\"a\", 2l, \"b\", 2l)))", { a: 2, b: 2 }],
    ["java", "(float)-1l", -1],
    ["rust", "vec![String::from(\"a\"), String::from(\"b\")]", ["a", "b"]],
    ["rust", "Vec::<isize>::new()", []],
    ["rust", "(None, Some(1))", [null, 1]],
    ["rust", "Some(String::from(\"x\"))", "x"],
    ["rust", "HashMap::from([(String::from(\"a\"), 2)])", { a: 2 }],
    ["rust", "\"line\nbreak\".to_string()", "line\nbreak"],
    ["rust", "-7i64", -7],
    ["go", "[]int{1, 2}", [1, 2]],
    ["go", "[]interface{}{\"a\", true}", ["a", true]],
    ["go", "[][]int{{1, 2}, {3}}", [[1, 2], [3]]],
    ["go", "map[string]int{\"a\": 1, \"b\": 2}", { a: 1, b: 2 }],
    ["go", "[]float64{0.5, 2.0}", [0.5, 2]],
    ["nodejs", "[1, 'x', undefined]", [1, "x", null]],
    ["nodejs", "{\"a\": 2, b: [true]}", { a: 2, b: [true] }],
    ["nodejs", "-0.25", -0.25],
    ["nodejs", "-9999999999999999", -10000000000000000], // a double, as JavaScript reads it
    ["nodejs", "9999999999999999n", 9999999999999999n],
    ["java", "9999999999999999l", 9999999999999999n], // a long: exact
  ];
  for (const [lang, text, want] of cases) {
    it(`${lang}: ${text}`, () => assert.deepEqual(literalValue(text, lang), want));
  }

  it("refuses what is not a literal: a call, a variable, arithmetic, a template with substitutions", () => {
    for (const [lang, text] of [["cpp", "f(1)"], ["cpp", "x"], ["cpp", "1 + 2"], ["java", "foo.bar()"], ["nodejs", "`a${b}`"], ["rust", "vec![1; 3]"], ["go", "T{1}"]] as const) {
      assert.throws(() => literalValue(text, lang), NotALiteral, `${lang}: ${text}`);
    }
  });
});

/** A MultiPL-E-shaped problem per language: the completion up to the stop token, and its tail. */
const PROBLEMS: Readonly<Record<string, { readonly cut: string; readonly tail: string }>> = {
  cpp: { cut: "#include<bits/stdc++.h>\nlong add(long a, long b) {\n    return a + b;\n", tail: "}\nint main() {\n    auto candidate = add;\n    assert(candidate((1), (2)) == (3));\n    assert(candidate((2), (5)) == (7));\n}\n" },
  nodejs: { cut: "function add(a, b){\n  return a + b;\n}\n", tail: "const assert = require('node:assert');\n\n\nfunction test() {\n  let candidate = add;\n  assert.deepEqual(candidate(1, 2),3);\n  assert.deepEqual(candidate(2, 5),7);\n}\n\ntest();" },
  rust: { cut: "fn add(a: isize, b: isize) -> isize {\n    a + b\n", tail: "}\n\nfn main() {\n    let candidate = add;\n    assert_eq!(candidate(1, 2), 3);\n    assert_eq!(candidate(2, 5), 7);\n}\n" },
  java: { cut: "import java.util.*;\nclass Problem {\n    public static long add(long a, long b) {\n        return a + b;\n", tail: "    }\n    public static void main(String[] args) {\n    assert(add((1l), (2l)) == (3l));\n    assert(add((2l), (5l)) == (7l));\n    }\n\n}\n" },
  go: {
    cut: "package add_test\n\nimport (\n    \"testing\"\n    \"fmt\"\n)\n\nfunc add(a int, b int) int {\n    return a + b\n}\n",
    tail: "func TestAdd(t *testing.T) {\n  candidate := add\n\ttype test struct {\n\t\tactual   interface{}\n\t\texpected interface{}\n\t}\n   tests := []test{\n     { actual: candidate(1, 2), expected: 3 },\n     { actual: candidate(2, 5), expected: 7 },\n   }\n\n\tfor i, tc := range tests {\n\t\tt.Run(fmt.Sprintf(\"test num % d\", i), func(t *testing.T) {\n\t\t\tif fmt.Sprintf(\"%v\", tc.actual) != fmt.Sprintf(\"%v\", tc.expected) {\n\t\t\t\tt.Errorf(\"expected '%s', got '%s'\", tc.expected, tc.actual)\n\t\t\t}\n\t\t})\n\t}\n}\n",
  },
  python: { cut: "def add(a, b):\n    return a + b\n", tail: "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 5) == 7\n\ndef test_check():\n    check(add)\n\ntest_check()\n" },
};

describe("tails taken apart (tail-asserts.ts)", () => {
  it("has a problem of its shape for every language it takes apart", () => {
    assert.deepEqual(Object.keys(PROBLEMS).sort(), Object.keys(TAIL_SHAPES).sort());
  });

  for (const [lang, p] of Object.entries(PROBLEMS)) {
    it(`${lang}: each assert becomes a call compared outside; the expected values leave the program`, () => {
      const plan = planTail(lang, p.cut, p.tail);
      assert.equal(plan.kind, "decomposed", plan.kind === "whole" ? plan.reason : "");
      if (lang === "python") {
        assert.deepEqual(plan.tests, [{ kind: "assert", testCode: p.tail }]);
        return;
      }
      const calls = plan.tests as Extract<TestCase, { kind: "call" }>[];
      assert.deepEqual(calls.map((c) => [c.fnName, c.expected]), [["add", 3], ["add", 7]]);
      assert.match(calls[0]!.argsSource!, /1.*2/);
      assert.ok(!/\b7\b/.test(plan.code.replace(/\/\/.*$/gm, "")), `the expected 7 is not in the program: ${plan.code}`);
    });

    if (lang !== "python") {
      it(`${lang}: a tail with a statement of another shape runs whole, and says why`, () => {
        const extra = lang === "go" ? p.tail.replace("for i, tc", "fmt.Println(1)\n\tfor i, tc") : lang === "java" ? p.tail.replace("    assert(add((2l)", "    System.out.println(1);\n    assert(add((2l)") : lang === "nodejs" ? p.tail.replace("  assert.deepEqual(candidate(2, 5)", "  console.log(1);\n  assert.deepEqual(candidate(2, 5)") : p.tail.replace(/(\n\s*)(assert(?:_eq!)?\((?:candidate)\((?:\(2\)|2), )/, "$1if (true) {}$1$2");
        assert.notEqual(extra, p.tail);
        const plan = planTail(lang, p.cut, extra);
        assert.equal(plan.kind, "whole");
        assert.match(plan.kind === "whole" ? plan.reason : "", /another shape|other than/);
        assert.ok(plan.code.endsWith(extra) || lang === "java", "the tail is appended as given");
      });
    }
  }

  it("keeps an expected integer past 2^53 exact", () => {
    const plan = planTail("cpp", PROBLEMS["cpp"]!.cut, `}\nint main() {\n    assert(add((1), (2)) == (${big}));\n}\n`);
    assert.equal((plan.tests[0] as Extract<TestCase, { kind: "call" }>).expected, big);
  });

  it("runs whole a function whose return type the driver cannot write (a C++ union, a Rust struct)", () => {
    const union = planTail("cpp", "union U { long a; };\nU add(long a, long b) {\n    return U{a + b};\n", PROBLEMS["cpp"]!.tail);
    assert.equal(union.kind, "whole");
    assert.match(union.kind === "whole" ? union.reason : "", /returns U, which the C\+\+ driver cannot write/);
    assert.ok(cppSerializable("std::tuple<std::optional<long>, std::vector<std::string>>"));
    assert.ok(!cppSerializable("std::map<std::vector<long>, long>"));
    assert.ok(rustSerializable("Vec<(isize, Option<String>)>") && !rustSerializable("Point"));
    assert.ok(javaSerializable("ArrayList<Pair<Long, String>>") && !javaSerializable("Point"));
  });

  it("Java runs as class Main (ScaleBox renames class Problem), whole or taken apart", () => {
    assert.match(planTail("java", PROBLEMS["java"]!.cut, PROBLEMS["java"]!.tail).code, /class Main \{/);
    assert.match(planTail("java", PROBLEMS["java"]!.cut, PROBLEMS["java"]!.tail, { decompose: false }).code, /class Main \{/);
  });
});

describe("verdict provenance (verdicts.ts)", () => {
  const local = { pythonVerifier: true, sourceCalls: (l: string) => ["cpp", "nodejs", "rust", "java", "go_test"].includes(l) };
  const remote = { pythonVerifier: false, sourceCalls: () => false };
  it("says how each case is decided, per backend", () => {
    assert.equal(verdictBy("python", { kind: "stdio", stdin: "", expectedStdout: "" }, undefined, remote), "compared_outside");
    assert.equal(verdictBy("python", { kind: "stdio", stdin: "", expectedStdout: "" }, { kind: "special", language: "python", program: "" }, local), "verifier_process");
    assert.equal(verdictBy("cpp", { kind: "call", fnName: "f", args: [], expected: 1 }, undefined, remote), "compared_outside");
    assert.equal(verdictBy("python", { kind: "assert", testCode: "assert f() == 1" }, undefined, local), "verifier_process");
    assert.equal(verdictBy("python", { kind: "assert", testCode: "assert f() == 1" }, undefined, remote), "program_exit_status");
    assert.equal(verdictBy("cpp", { kind: "assert", testCode: "" }, undefined, local), "program_exit_status");
  });

  it("plans tails per backend, and --strict-verdicts refuses what would be the program's exit status, saying why", () => {
    const parsed = parseTestCases({ type: "assert", tests: PROBLEMS["cpp"]!.tail, stop_tokens: ["\n}"] });
    const code = `${PROBLEMS["cpp"]!.cut}}\n`;
    const here = planProgram("cpp", code, parsed, local);
    assert.deepEqual(here.tests.map((t) => verdictBy(here.language, t, undefined, local)), ["compared_outside", "compared_outside"]);
    assert.equal(strictRefusal(here, undefined, local), undefined);
    const there = planProgram("cpp", code, parsed, remote);
    assert.equal(there.tests.length, 1);
    assert.match(strictRefusal(there, undefined, remote) ?? "", /^strict verdicts: test case 0 would be decided by the exit status .* could not be taken apart \(this sandbox backend runs cpp tail tests whole\)/);
  });

  it("the table lists every language's tail shape; one without a driver is the program's exit status", () => {
    const rows = verdictTable(["cpp", "nodejs"], ["cpp", "python"]);
    const tails = rows.filter((r) => r.shape.startsWith("assert tail (MultiPL-E)"));
    assert.deepEqual(tails.map((r) => r.language).sort(), Object.keys(TAIL_SHAPES).sort());
    assert.equal(tails.find((r) => r.language === "rust")!.verdictBy, "program_exit_status");
    assert.equal(tails.find((r) => r.language === "cpp")!.verdictBy, "compared_outside");
  });
});

describe("the verdict table in the docs (docs/VERDICTS.md)", () => {
  it("is what the code generates (npm run verdicts)", () => {
    const want = verdictTableMarkdown(verdictTable(SOURCE_CALL_LANGUAGES, CALL_DRIVER_LANGUAGES));
    assert.equal(readFileSync(join(ROOT, "docs", "VERDICTS.md"), "utf8"), want, "docs/VERDICTS.md is stale: run npm run build && npm run verdicts");
  });

  it("lists exactly the installed toolchains' drivers", () => {
    const env = process.env["RLPIPE_TEST_PYTHON_ENV"] ?? "/var/tmp/rlpipe-test-python-env";
    const toolchains = [...(existsSync(join(env, "pyvenv.cfg")) ? withEnvironment(detectToolchains(), checkPythonEnv(env)) : detectToolchains()), ...detectRoots().flatMap((r) => r.spec.toolchains)];
    for (const t of toolchains) {
      assert.equal(t.callDriver !== undefined, (CALL_DRIVER_LANGUAGES as readonly string[]).includes(t.language), `${t.language}: callDriver vs CALL_DRIVER_LANGUAGES`);
      assert.equal(t.sourceCallDriver !== undefined, (SOURCE_CALL_LANGUAGES as readonly string[]).includes(t.language), `${t.language}: sourceCallDriver vs SOURCE_CALL_LANGUAGES`);
    }
  });
});
