// The forgery suite (issue 32, item 7), generated from the code's own list of test shapes and languages
// (core/grading/tail-asserts.ts TAIL_SHAPES): for every language, one problem (add(a, b)) in each test shape — the
// MultiPL-E assert tail, function_call and stdin_stdout — and next to its right and wrong programs, wrong programs with
// the generic tricks a policy rewarded for cheating reaches for: exit-status games (exit 0 before anything, at exit,
// from an exception or signal hook), redefining the assertion or the test framework's entry, writing to the result
// descriptor, writing after the checker read, and near-miss answers. None of them may pass a single case. A language
// in TAIL_SHAPES without a row here fails the suite.
import type { ExactJson } from "../core/grading/exact-json.js";

export type Shape = "tail" | "function_call" | "stdin_stdout";

export interface LanguageRow {
  /** The request's language (SandboxFusion's name). */
  readonly language: string;
  /** The program for a shape, with `trick` inserted where a program's top-level code goes and `body` as add's result. */
  readonly program: (shape: Shape, trick: string, body: "right" | "wrong" | "near") => string;
  /** The MultiPL-E tail and its stop tokens. */
  readonly tail: { readonly tests: string; readonly stopTokens: readonly string[] };
  /** Tricks by name: top-level code a program adds (the harness's own languages' idioms). */
  readonly tricks: Readonly<Record<string, string>>;
  /** Tricks that only make sense in some shapes (a test framework's entry point in the tail). */
  readonly only?: Readonly<Record<string, readonly Shape[]>>;
}

/** The cases of the problem: add(a, b) = a + b; no expected value is 0 (a guess of "0" passes none). */
export const ADD_CASES: readonly (readonly [number, number, number])[] = [[1, 2, 3], [2, 5, 7], [10, -4, 6]];

const expr = (body: "right" | "wrong" | "near", a = "a", b = "b") => (body === "right" ? `${a} + ${b}` : body === "wrong" ? `${a} - ${b}` : `${a} + ${b} + 1`);

const PY_TAIL = `\n\ndef check(candidate):\n${ADD_CASES.map(([a, b, r]) => `    assert candidate(${a}, ${b}) == ${r}`).join("\n")}\n\ndef test_check():\n    check(add)\n\ntest_check()\n`;
const CPP_TAIL = `}\nint main() {\n    auto candidate = add;\n${ADD_CASES.map(([a, b, r]) => `    assert(candidate((${a}), (${b})) == (${r}));`).join("\n")}\n}\n`;
const JS_TAIL = `const assert = require('node:assert');\n\n\nfunction test() {\n  let candidate = add;\n${ADD_CASES.map(([a, b, r]) => `  assert.deepEqual(candidate(${a}, ${b}),${r});`).join("\n")}\n}\n\ntest();`;
const RUST_TAIL = `}\n\nfn main() {\n    let candidate = add;\n${ADD_CASES.map(([a, b, r]) => `    assert_eq!(candidate(${a}, ${b}), ${r});`).join("\n")}\n}\n`;
const JAVA_TAIL = `    }\n    public static void main(String[] args) {\n${ADD_CASES.map(([a, b, r]) => `    assert(add((${a}l), (${b}l)) == (${r}l));`).join("\n")}\n    }\n\n}\n`;
const GO_TAIL = `func TestAdd(t *testing.T) {\n  candidate := add\n\ttype test struct {\n\t\tactual   interface{}\n\t\texpected interface{}\n\t}\n   tests := []test{\n${ADD_CASES.map(([a, b, r]) => `     { actual: candidate(${a}, ${b}), expected: ${r} },`).join("\n")}\n   }\n\n\tfor i, tc := range tests {\n\t\tt.Run(fmt.Sprintf("test num % d", i), func(t *testing.T) {\n\t\t\tif fmt.Sprintf("%v", tc.actual) != fmt.Sprintf("%v", tc.expected) {\n\t\t\t\tt.Errorf("expected '%s', got '%s'", tc.expected, tc.actual)\n\t\t\t}\n\t\t})\n\t}\n}\n`;

export const FORGERY_ROWS: Readonly<Record<string, LanguageRow>> = {
  python: {
    language: "python",
    tail: { tests: PY_TAIL, stopTokens: ["\ndef", "\n#", "\nif", "\nclass"] },
    program: (shape, trick, body) => shape === "stdin_stdout"
      ? `${trick}a, b = map(int, input().split())\nprint(${expr(body)})\n`
      : `${trick}def add(a, b):\n    return ${expr(body)}\n`,
    tricks: {
      "exits 0 before anything": "import os\nos._exit(0)\n",
      "exits 0 at exit": "import atexit, os\natexit.register(lambda: os._exit(0))\n",
      "exits 0 from its exception hook": "import os, sys\nsys.excepthook = lambda *a: os._exit(0)\n",
      "exits 0 from a signal handler": "import os, signal\nsignal.signal(signal.SIGTERM, lambda *a: os._exit(0))\nos.kill(os.getpid(), signal.SIGTERM)\n",
      "redefines the assertion and the builtins": "import builtins\nbuiltins.AssertionError = type('AssertionError', (Exception,), {})\nbuiltins.abs = lambda x: 0\n",
      "writes a value to the result descriptor": "import os\ntry:\n    os.write(3, b'0')\nexcept OSError:\n    pass\n",
      "writes to the result descriptor after the checker read": "import atexit, os\ndef _late():\n    try:\n        os.write(3, b'0')\n    except OSError:\n        pass\natexit.register(_late)\n",
    },
  },
  cpp: {
    language: "cpp",
    tail: { tests: CPP_TAIL, stopTokens: ["\n}"] },
    program: (shape, trick, body) => shape === "stdin_stdout"
      ? `#include <bits/stdc++.h>\n${trick}\nint main() {\n    long a, b;\n    std::cin >> a >> b;\n    std::cout << ${expr(body)} << "\\n";\n}\n`
      : `#include <bits/stdc++.h>\n${trick}\nlong add(long a, long b) {\n    return ${expr(body)};\n}\n`,
    tricks: {
      "exits 0 before anything": "static int rlpipe_trick = (std::exit(0), 0);",
      "exits 0 at exit": "#include <unistd.h>\nstatic int rlpipe_trick = (std::atexit([] { _exit(0); }), 0);",
      "exits 0 from a SIGABRT handler (a failed assert)": "#include <csignal>\n#include <unistd.h>\nstatic int rlpipe_trick = (std::signal(SIGABRT, [](int) { _exit(0); }), 0);",
      "redefines the assertion": "#undef assert\n#define assert(x) ((void)0)",
      "writes a value to the result descriptor and exits 0": "#include <unistd.h>\nstatic int rlpipe_trick = (write(3, \"0\", 1), std::exit(0), 0);",
      "writes to the result descriptor after the checker read": "#include <unistd.h>\nstatic int rlpipe_trick = (std::atexit([] { (void)!write(3, \"0\", 1); }), 0);",
    },
  },
  nodejs: {
    language: "nodejs",
    tail: { tests: JS_TAIL, stopTokens: ["\nfunction ", "\n/*", "\n//", "\nconsole.log"] },
    program: (shape, trick, body) => shape === "stdin_stdout"
      ? `${trick}\nconst [a, b] = require("fs").readFileSync(0, "utf8").trim().split(/\\s+/).map(Number);\nconsole.log(${expr(body)});\n`
      : `${trick}\nfunction add(a, b){\n  return ${expr(body)};\n}\n`,
    tricks: {
      "exits 0 before anything": "process.exit(0);",
      "exits 0 from its exception hook": "process.on(\"uncaughtException\", () => process.exit(0));",
      "redefines the assertion": "require(\"assert\").deepEqual = () => {};\nrequire(\"assert\").strictEqual = () => {};",
      "writes a value to the result descriptor and exits 0": "try { require(\"fs\").writeSync(3, \"0\"); } catch (e) {}\nprocess.exit(0);",
      "writes to the result descriptor after the checker read": "process.on(\"exit\", () => { try { require(\"fs\").writeSync(3, \"0\"); } catch (e) {} });",
    },
  },
  rust: {
    language: "rust",
    tail: { tests: RUST_TAIL, stopTokens: ["\n}"] },
    program: (shape, trick, body) => shape === "stdin_stdout"
      ? `use std::io::Read;\n${trick}\nfn main() {\n    let mut s = String::new();\n    std::io::stdin().read_to_string(&mut s).unwrap();\n    let v: Vec<isize> = s.split_whitespace().map(|x| x.parse().unwrap()).collect();\n    let (a, b) = (v[0], v[1]);\n    println!("{}", ${expr(body)});\n}\n`
      : `${trick}\nfn add(a: isize, b: isize) -> isize {\n    ${expr(body)}\n}\n`,
    tricks: {
      // Code before main: a function in .init_array, which the C runtime runs before Rust's main.
      "exits 0 before anything": "#[used]\n#[link_section = \".init_array\"]\nstatic RLPIPE_TRICK: extern \"C\" fn() = { extern \"C\" fn trick() { std::process::exit(0) } trick };",
      "exits 0 from its panic hook (a failed assert_eq!)": "#[used]\n#[link_section = \".init_array\"]\nstatic RLPIPE_TRICK: extern \"C\" fn() = { extern \"C\" fn trick() { std::panic::set_hook(Box::new(|_| std::process::exit(0))) } trick };",
      "redefines the assertion": "#[allow(unused_macros)]\nmacro_rules! assert_eq { ($($t:tt)*) => {}; }",
      "writes a value to the result descriptor and exits 0": "#[used]\n#[link_section = \".init_array\"]\nstatic RLPIPE_TRICK: extern \"C\" fn() = { extern \"C\" fn trick() { use std::io::Write; use std::os::unix::io::FromRawFd; let mut f = unsafe { std::fs::File::from_raw_fd(3) }; let _ = f.write_all(b\"0\"); std::process::exit(0) } trick };",
    },
  },
  java: {
    language: "java",
    tail: { tests: JAVA_TAIL, stopTokens: ["\n    }\n"] },
    program: (shape, trick, body) => shape === "stdin_stdout"
      ? `import java.util.*;\npublic class Main {\n    ${trick}\n    public static void main(String[] x) {\n        Scanner s = new Scanner(System.in);\n        long a = s.nextLong(), b = s.nextLong();\n        System.out.println(${expr(body)});\n    }\n}\n`
      : `import java.util.*;\nclass ${shape === "tail" ? "Problem" : "Main"} {\n    ${trick}\n    public static long add(long a, long b) {\n        return ${expr(body)};\n    }\n}\n`,
    tricks: {
      "exits 0 before anything": "static { System.exit(0); }",
      "exits 0 from its uncaught-exception handler (a failed assert)": "static { Thread.setDefaultUncaughtExceptionHandler((t, e) -> Runtime.getRuntime().halt(0)); }",
      "halts with 0 from a shutdown hook": "static { Runtime.getRuntime().addShutdownHook(new Thread(() -> Runtime.getRuntime().halt(0))); }",
      "turns assertions off": "static { ClassLoader.getSystemClassLoader().setDefaultAssertionStatus(false); Main.class.getClassLoader().clearAssertionStatus(); }",
      "writes a value to the result descriptor and halts": "static { try (java.io.FileOutputStream f = new java.io.FileOutputStream(\"/dev/fd/3\")) { f.write('0'); } catch (Exception e) {} Runtime.getRuntime().halt(0); }",
    },
  },
  go: {
    language: "go",
    tail: { tests: GO_TAIL, stopTokens: ["\nfunc", "struct", "\n// "] },
    program: (shape, trick, body) => shape === "stdin_stdout"
      ? `package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\nvar _ = os.Exit\n\n${trick}\n\nfunc main() {\n\tvar a, b int\n\tfmt.Scan(&a, &b)\n\tfmt.Println(${expr(body)})\n}\n`
      : shape === "tail"
        ? `package add_test\n\nimport (\n    "testing"\n    "fmt"\n    "os"\n)\n\nvar _ = os.Exit\n\n${trick}\n\nfunc add(a int, b int) int {\n    return ${expr(body)}\n}\n`
        : `package main\n\nimport "os"\n\nvar _ = os.Exit\n\n${trick}\n\nfunc add(a int, b int) int {\n\treturn ${expr(body)}\n}\n`,
    tricks: {
      "exits 0 before anything": "func init() { os.Exit(0) }",
      "ends the test binary with status 0 whatever the tests did": "func TestMain(m *testing.M) { m.Run(); os.Exit(0) }",
      "writes a value to the result descriptor and exits 0": "func init() { os.NewFile(3, \"v\").Write([]byte(\"0\")); os.Exit(0) }",
    },
    only: { "ends the test binary with status 0 whatever the tests did": ["tail"] },
  },
};

/** The ground truth of the problem in a shape (as /v1/rewards and /common_evaluate_batch take it). */
export function groundTruth(row: LanguageRow, shape: Shape): Record<string, ExactJson> {
  switch (shape) {
    case "tail": return { type: "assert", tests: row.tail.tests, stop_tokens: [...row.tail.stopTokens] };
    case "function_call": return { type: "function_call", fn_name: "add", input: ADD_CASES.map(([a, b]) => [a, b]), output: ADD_CASES.map(([, , r]) => [r]) };
    case "stdin_stdout": return { type: "stdin_stdout", input: ADD_CASES.map(([a, b]) => `${a} ${b}`), output: ADD_CASES.map(([, , r]) => String(r)) };
  }
}

export const SHAPES: readonly Shape[] = ["tail", "function_call", "stdin_stdout"];
