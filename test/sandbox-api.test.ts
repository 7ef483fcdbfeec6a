// rlpipe's sandbox function over real HTTP (node:http on 127.0.0.1) with the real local sandbox behind it:
// the SandboxFusion/ScaleBox request and response shapes verl's tools and the seed's scalebox.py use,
// /v1/rewards with dedupe and cache, authentication, and limits on bad requests.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { summarize } from "../core/grading/grade.js";
import type { EvalJob } from "../core/grading/types.js";
import { type RunningServer, startHttpServer } from "../functions/platforms/http.js";
import { ResultCache } from "../functions/reward.js";

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: typeof body === "string" ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

const A_PLUS_B = "```python\na, b = map(int, input().split())\nprint(a + b)\n```";

describe("sandbox function: SandboxFusion / ScaleBox API", () => {
  let sb: LocalSandbox;
  let server: RunningServer;
  before(async () => {
    sb = await LocalSandbox.create();
    server = await startHttpServer({ backend: sb, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
  });
  after(async () => { await server.close(); await sb.close(); });

  it("GET /v1/stats says where the time went: the server's parse, handle and respond, the sandbox's phases per program", async () => {
    const before = await (await fetch(`${server.url}/v1/stats`)).json() as { server: { requests: number; ms: Record<string, number> }; sandbox: { programs: number; cases: number; ms: Record<string, number> } };
    const tests = { type: "stdin_stdout", input: ["1 2", "2 3", "3 4"], output: ["3", "5", "7"] };
    const r = await post(`${server.url}/common_evaluate_batch`, { completion: A_PLUS_B, config: { language: "python", provided_data: { test_cases: tests }, extra: { run_all_cases: true } } });
    assert.equal(r.body.accepted, true);
    const after = await (await fetch(`${server.url}/v1/stats`)).json() as typeof before;
    assert.equal(after.server.requests - before.server.requests, 2, "the batch and the first stats request");
    assert.equal(after.sandbox.programs - before.sandbox.programs, 1);
    assert.equal(after.sandbox.cases - before.sandbox.cases, 3);
    assert.deepEqual(Object.keys(after.sandbox.ms), ["queueMs", "zygoteWaitMs", "buildMs", "forkMs", "programMs", "collectMs", "cleanupMs", "roundTripMs", "gradeMs"]);
    for (const k of ["forkMs", "programMs", "collectMs"]) assert.ok(after.sandbox.ms[k]! > before.sandbox.ms[k]!, `${k} grew`);
    for (const k of ["parseMs", "handleMs", "respondMs"]) assert.ok(after.server.ms[k]! > before.server.ms[k]!, `${k} grew`);
    assert.ok(after.server.ms["handleMs"]! - before.server.ms["handleMs"]! >= after.sandbox.ms["programMs"]! - before.sandbox.ms["programMs"]!, "handling includes the programs' time");
  });

  it("POST /common_evaluate (ScaleBox's non-batch endpoint): a list of function-call cases, or SandboxFusion's stdio list", async () => {
    const calls = await post(`${server.url}/common_evaluate`, {
      completion: "```python\ndef add(a, b):\n    return a + b\n```",
      config: { language: "python", provided_data: { test_cases: [{ type: "function_call", input: [1, 2], output: [3], fn_name: "add" }, { type: "function_call", input: [3, 4], output: [7], fn_name: "add" }] }, extra: { run_all_cases: true } },
    });
    assert.equal(calls.status, 200, JSON.stringify(calls.body));
    assert.equal(calls.body.accepted, true);
    assert.equal(calls.body.tests.length, 2);
    const stdio = await post(`${server.url}/common_evaluate`, {
      completion: A_PLUS_B,
      config: { language: "python", provided_data: { test: [{ input: { stdin: "1 2" }, output: { stdout: "3" } }, { input: { stdin: "3 4" }, output: { stdout: "8" } }] }, extra: { run_all_cases: true } },
    });
    assert.deepEqual(stdio.body.tests.map((t: { passed: boolean }) => t.passed), [true, false]);
    const bad = await post(`${server.url}/common_evaluate`, { completion: A_PLUS_B, config: { language: "python", provided_data: { cases: [] } } });
    assert.equal(bad.status, 400);
    assert.match(bad.body.detail, /needs test_cases \(a list of cases\) or test/);
  });

  it("function calls get ScaleBox's prelude (typing, collections, math, …), and unfenced def/class completions are extracted", async () => {
    // LeetCode style: `List` without an import, no fences at all.
    const leet = await post(`${server.url}/common_evaluate_batch`, {
      completion: "\nclass Solution:\n    def addDigits(self, num: int) -> List[int]:\n        return [9 if num % 9 == 0 else num % 9] if num else [0]\n",
      config: { language: "python", provided_data: { test_cases: { type: "function_call", fn_name: "addDigits", input: [[38], [0]], output: [[[2]], [[0]]] } }, extra: { run_all_cases: true } },
    });
    assert.equal(leet.body.accepted, true, JSON.stringify(leet.body.tests));
    const helpers = await post(`${server.url}/common_evaluate_batch`, {
      completion: "def f(xs):\n    return sorted(Counter(xs).items())\n",
      config: { language: "python", provided_data: { test_cases: { type: "function_call", fn_name: "f", input: [[[1, 1, 2]]], output: [[[[1, 2], [2, 1]]]] } } },
    });
    assert.equal(helpers.body.accepted, true, JSON.stringify(helpers.body.tests));
    // A stdio program is run as a script: no prelude names.
    const script = await post(`${server.url}/common_evaluate_batch`, {
      completion: "```python\nprint(sqrt(4))\n```",
      config: { language: "python", provided_data: { test_cases: { type: "stdin_stdout", input: [""], output: ["2.0"] } } },
    });
    assert.equal(script.body.accepted, false);
    assert.match(script.body.tests[0].exec_info.run_result.stderr, /NameError: name 'sqrt' is not defined/);
  });

  it("function calls in JavaScript and Go: the value is returned as JSON and compared outside the sandbox", { timeout: 120_000 }, async () => {
    const cases = [{ type: "function_call", input: [1, 2], output: [3], fn_name: "add" }, { type: "function_call", input: [3, 4], output: [7], fn_name: "add" }];
    const evaluate = (language: string, code: string, test_cases: unknown[] = cases) =>
      post(`${server.url}/common_evaluate`, { completion: `\`\`\`${language}\n${code}\n\`\`\``, config: { language, compile_timeout: 60, provided_data: { test_cases }, extra: { run_all_cases: true } } });
    const js = await evaluate("nodejs", "function add(a, b) {\n  return a + b;\n}");
    assert.equal(js.body.accepted, true, JSON.stringify(js.body.tests));
    const jsClass = await evaluate("javascript", "class Solution {\n  add(a, b) { return a + b; }\n}");
    assert.equal(jsClass.body.accepted, true, JSON.stringify(jsClass.body.tests));
    const jsWrong = await evaluate("nodejs", "function add(a, b) { return a - b; }");
    assert.deepEqual(jsWrong.body.tests.map((t: { rlpipe_status: string }) => t.rlpipe_status), ["wrong_answer", "wrong_answer"]);
    // Go comes with this kind of machine (the language test in sandbox-local checks it is offered).
    assert.ok((await sb.capabilities()).languages.includes("go"), "Go is installed here but not offered");
    const go = await evaluate("go", "func add(a int, b int) int {\n\treturn a + b\n}");
    assert.equal(go.body.accepted, true, JSON.stringify(go.body.tests));
    // Arguments are decoded into the parameters' types: slices and maps too.
    const goSlices = await evaluate("go", "func add(xs []int, m map[string]int) []int {\n\treturn append(xs, m[\"k\"])\n}", [{ type: "function_call", input: [[1, 2], { k: 9 }], output: [[1, 2, 9]], fn_name: "add" }]);
    assert.equal(goSlices.body.accepted, true, JSON.stringify(goSlices.body.tests));
  });

  it("integers are compared exactly end to end: past 2^53 in requests, in returned values and in stdout (Python and C++)", { timeout: 180_000 }, async () => {
    const big = "9007199254740993"; // 2^53 + 1: JSON.parse reads it as ...992
    // Raw JSON text, so the request's own integers are not rounded on the way.
    const body = (language: string, code: string, output: string) => `{"completion": ${JSON.stringify(`\`\`\`${language}\n${code}\n\`\`\``)}, "config": {"language": "${language}", "compile_timeout": 60,
      "provided_data": {"test_cases": {"type": "function_call", "fn_name": "twice", "input": [[${big}], [7]], "output": [[${2n * BigInt(big)}], [${output}]]}}, "extra": {"run_all_cases": true}}}`;
    const verdicts = async (language: string, code: string, output = "14") =>
      (await post(`${server.url}/common_evaluate_batch`, body(language, code, output))).body.tests.map((t: { rlpipe_status: string }) => t.rlpipe_status);
    assert.deepEqual(await verdicts("python", "def twice(n):\n    return 2 * n"), ["passed", "passed"], "the argument reached the program exactly");
    assert.deepEqual(await verdicts("python", "def twice(n):\n    return 2 * n + (1 if n > 100 else 0)"), ["wrong_answer", "passed"], "off by one past 2^53");
    assert.deepEqual(await verdicts("python", "def twice(n):\n    return float(2 * n)"), ["wrong_answer", "passed"], "the nearest double is not the integer");
    assert.deepEqual(await verdicts("python", "def twice(n):\n    return 2 * n + 7"), ["wrong_answer", "wrong_answer"], "off by seven");
    assert.deepEqual(await verdicts("python", "def twice(n):\n    return 2 * n", "14.0"), ["passed", "passed"], "14 == 14.0");
    assert.deepEqual(await verdicts("cpp", "long long twice(long long n) { return 2 * n; }"), ["passed", "passed"]);
    assert.deepEqual(await verdicts("cpp", "long long twice(long long n) { return 2 * n + (n > 100); }"), ["wrong_answer", "passed"]);
    // stdout: a token one away from a large expected integer was within the 1e-5 tolerance.
    const stdio = async (printed: string) => (await post(`${server.url}/common_evaluate_batch`, {
      completion: `\`\`\`python\nprint(${printed})\n\`\`\``,
      config: { language: "python", provided_data: { test_cases: { type: "stdin_stdout", input: [""], output: ["1000000\n0.3"] } } },
    })).body.accepted;
    assert.equal(await stdio("1000000, 0.1 + 0.2, sep='\\n'"), true);
    assert.equal(await stdio("1000001, 0.1 + 0.2, sep='\\n'"), false);
    assert.equal(await stdio("1000007, 0.3, sep='\\n'"), false);
  });

  it("fetch_files returns the files a run wrote (relative to its work dir or under /tmp or /mnt) that exist, base64", async () => {
    const r = await post(`${server.url}/run_code`, {
      language: "python", run_timeout: 5, fetch_files: ["out/a.txt", "/tmp/b.bin", "/mnt/c", "missing.txt"],
      code: "import os\nos.makedirs('out')\nopen('out/a.txt', 'w').write('secret')\nopen('/tmp/b.bin', 'wb').write(bytes(range(4)))\nopen('/mnt/c', 'w').write('sauce')",
    });
    assert.equal(r.body.status, "Success", JSON.stringify(r.body));
    assert.deepEqual(Object.keys(r.body.files).sort(), ["/mnt/c", "/tmp/b.bin", "out/a.txt"]);
    assert.equal(Buffer.from(r.body.files["/mnt/c"], "base64").toString(), "sauce");
    assert.equal(Buffer.from(r.body.files["out/a.txt"], "base64").toString(), "secret");
    assert.deepEqual([...Buffer.from(r.body.files["/tmp/b.bin"], "base64")], [0, 1, 2, 3]);
    const outside = await post(`${server.url}/run_code`, { language: "python", code: "print(1)", fetch_files: ["/etc/passwd"] });
    assert.equal(outside.body.status, "SandboxError");
    assert.match(outside.body.message, /fetch_files: \/etc\/passwd must be relative to the work dir or under \/tmp or \/mnt/);
  });

  it("an answer of 200,000 lines (several MiB) is graded, not cut: the output cap is 16 MiB by default", async () => {
    const n = 200_000;
    const expected = Array.from({ length: n }, (_, i) => String(i * 12345)).join("\n");
    const r = await post(`${server.url}/common_evaluate_batch`, {
      completion: "```python\nimport sys\nn = int(input())\nsys.stdout.write('\\n'.join(str(i * 12345) for i in range(n)) + '\\n')\n```",
      config: { language: "python", provided_data: { test_cases: { type: "stdin_stdout", input: [String(n)], output: [expected] } }, extra: { return_full_case: false } },
    });
    assert.ok(expected.length > 1 << 20, "more than the old 1 MiB cap");
    assert.equal(r.body.accepted, true, JSON.stringify(r.body.tests?.[0]?.rlpipe_status));
  });

  it("a Python syntax error comes back in run_result (as SandboxFusion runs the interpreter); tracebacks show only the program", async () => {
    const syntax = await post(`${server.url}/run_code`, { language: "python", code: "int a = 1", run_timeout: 5 });
    assert.equal(syntax.body.status, "Failed");
    assert.equal(syntax.body.compile_result, null);
    assert.equal(syntax.body.run_result.status, "Finished");
    assert.equal(syntax.body.run_result.return_code, 1);
    assert.match(syntax.body.run_result.stderr, /SyntaxError: invalid syntax/);
    const tb = await post(`${server.url}/run_code`, { language: "python", code: "def g(x):\n    return 1 / x\n\ng(0)", run_timeout: 5 });
    assert.equal(tb.body.run_result.stderr, 'Traceback (most recent call last):\n  File "main.py", line 4, in <module>\n    g(0)\n  File "main.py", line 2, in g\n    return 1 / x\n           ~~^~~\nZeroDivisionError: division by zero\n');
    const batch = await post(`${server.url}/common_evaluate_batch`, {
      completion: "```python\ndef f(:\n```", config: { language: "python", provided_data: { test_cases: { type: "stdin_stdout", input: ["1"], output: ["1"] } } },
    });
    assert.equal(batch.body.tests[0].exec_info.compile_result, null);
    assert.match(batch.body.tests[0].exec_info.run_result.stderr, /SyntaxError/);
  });

  it("MultiPL-E asserts (tests as the program's tail, stop_tokens): a C++ completion cut at the stop token, then the asserts", async () => {
    const completion = "```cpp\n#include <bits/stdc++.h>\nusing namespace std;\nbool is_not_prime(long n) {\n    if (n <= 1) return true;\n    for (long i = 2; i * i <= n; i++)\n        if (n % i == 0) return true;\n    return false;\n}";
    const tests = (wrong: boolean) => ({ type: "assert", tests: `}\nint main() {\n    auto candidate = is_not_prime;\n    assert(candidate((2)) == (false));\n    assert(candidate((35)) == (${wrong ? "false" : "true"}));\n}\n`, stop_tokens: ["\n}"] });
    const ok = await post(`${server.url}/common_evaluate_batch`, { completion, config: { language: "cpp", provided_data: { test_cases: tests(false) }, extra: { run_all_cases: true } } });
    assert.equal(ok.body.accepted, true, JSON.stringify(ok.body));
    const wrong = await post(`${server.url}/common_evaluate_batch`, { completion, config: { language: "cpp", provided_data: { test_cases: tests(true) }, extra: { run_all_cases: true } } });
    assert.equal(wrong.body.accepted, false);
    // Taken apart (tail-asserts.ts): one case per assert, each value compared outside the program.
    assert.deepEqual(wrong.body.tests.map((t: { rlpipe_status: string; rlpipe_verdict_by: string }) => [t.rlpipe_status, t.rlpipe_verdict_by]),
      [["passed", "compared_outside"], ["wrong_answer", "compared_outside"]]);
  });

  it("POST /run_jupyter runs cells in one namespace, as SandboxFusion's kernel does: stdout, stderr, the last expression, errors", async () => {
    const r = await post(`${server.url}/run_jupyter`, { cells: ["a = 'hello'", "a", "import sys\nsys.stderr.write('to stderr\\n')\nNone", "def f(x):\n    return 1 / x\nf(0)", "print(a, 6 * 7)", "x = 1\n# only a comment"] });
    assert.equal(r.status, 200);
    assert.equal(r.body.status, "Success");
    assert.equal(r.body.driver.status, "Finished");
    assert.equal(r.body.driver.return_code, 0);
    const cells = r.body.cells as { stdout: string; stderr: string; display: Record<string, string>[]; error: { ename: string; evalue: string; traceback: string[] }[] }[];
    assert.equal(cells.length, 6);
    assert.deepEqual(cells[0], { stdout: "", stderr: "", display: [], error: [] });
    assert.deepEqual(cells[1]!.display, [{ "text/plain": "'hello'" }]);
    assert.deepEqual([cells[2]!.stderr, cells[2]!.display], ["to stderr\n", []], "a final None is not displayed");
    assert.equal(cells[3]!.error[0]!.ename, "ZeroDivisionError");
    assert.equal(cells[3]!.error[0]!.evalue, "division by zero");
    const tb = cells[3]!.error[0]!.traceback.join("");
    assert.match(tb, /File "<cell 4>", line 3, in <module>\n    f\(0\)\n[\s\S]*File "<cell 4>", line 2, in f\n    return 1 \/ x/);
    assert.doesNotMatch(tb, /main\.py|local_harness|_run/, "only the cells' own frames");
    assert.equal(cells[4]!.stdout, "hello 42\n", "a failed cell does not stop the next");
    assert.deepEqual(cells[5], { stdout: "", stderr: "", display: [], error: [] });
  });

  it("POST /run_jupyter: a cell over cell_timeout fails with TimeoutError and the rest run; over total_timeout the run fails without cells", async () => {
    const slow = await post(`${server.url}/run_jupyter`, { cells: ["import time\ntime.sleep(5)", "print('after')"], cell_timeout: 0.3 });
    assert.equal(slow.body.status, "Success");
    assert.equal(slow.body.cells[0].error[0].ename, "TimeoutError");
    assert.equal(slow.body.cells[1].stdout, "after\n");
    const total = await post(`${server.url}/run_jupyter`, { cells: ["print('started')", "while True: pass"], total_timeout: 1 });
    assert.equal(total.body.status, "Failed");
    assert.equal(total.body.driver.status, "TimeLimitExceeded");
    assert.deepEqual(total.body.cells, []);
    const bad = await post(`${server.url}/run_jupyter`, { cells: "print(1)" });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.detail[0].loc, ["body", "cells"]);
    const kernel = await post(`${server.url}/run_jupyter`, { cells: ["1"], kernel: "ir" });
    assert.equal(kernel.status, 422);
  });

  it("answers the seed's curl health check exactly", async () => {
    const r = await post(`${server.url}/run_code`, { code: 'print("Hello, world!")', language: "python" });
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body), ["status", "message", "compile_result", "run_result", "executor_pod_name", "files"]);
    assert.equal(r.body.status, "Success");
    assert.equal(r.body.message, "");
    assert.equal(r.body.compile_result, null);
    assert.deepEqual({ ...r.body.run_result, execution_time: 0 }, { status: "Finished", execution_time: 0, return_code: 0, stdout: "Hello, world!\n", stderr: "" });
    const ping = await fetch(`${server.url}/v1/ping`);
    assert.equal(await ping.json(), "pong");
  });

  it("accepts verl SandboxFusionTool's payload and reports failures with SandboxFusion's status rules", async () => {
    const base = { compile_timeout: 5, run_timeout: 1, stdin: "", memory_limit_MB: 512, language: "python", files: {}, fetch_files: [] };
    const fail = await post(`${server.url}/run_code`, { ...base, code: "import sys\nprint('x')\nsys.exit(3)" });
    assert.equal(fail.body.status, "Failed");
    assert.equal(fail.body.run_result.return_code, 3);
    const tle = await post(`${server.url}/run_code`, { ...base, code: "while True: pass" });
    assert.equal(tle.body.status, "Failed");
    assert.equal(tle.body.run_result.status, "TimeLimitExceeded");
    assert.equal(tle.body.run_result.return_code, null);
    const cpp = await post(`${server.url}/run_code`, { ...base, language: "cpp", code: "int main( {}" });
    assert.equal(cpp.body.status, "Failed");
    assert.equal(cpp.body.run_result, null);
    assert.notEqual(cpp.body.compile_result.return_code, 0);
    const missingRuntime = await post(`${server.url}/run_code`, { ...base, language: "lean", code: "theorem t : True := trivial" });
    // As SandboxFusion answers when a runtime is missing: its first command (lean: `lake build`) exits 127.
    assert.equal(missingRuntime.body.status, "Failed");
    assert.equal(missingRuntime.body.compile_result, null);
    assert.equal(missingRuntime.body.run_result.return_code, 127);
    assert.match(missingRuntime.body.run_result.stderr, /lake: command not found\nrlpipe: this server has no lean toolchain/);
    // Kotlin scripts are built once per program, but SandboxFusion runs them with `kotlinc -script` (no build step):
    // its answers have no compile_result, and a script that does not compile fails its run.
    const kts = await post(`${server.url}/run_code`, { ...base, run_timeout: 20, compile_timeout: 60, language: "kotlin_script", code: "println(readLine()!!.length)", stdin: "abc\n" });
    assert.deepEqual([kts.body.status, kts.body.compile_result, kts.body.run_result.stdout], ["Success", null, "3\n"], JSON.stringify(kts.body));
    const ktsBad = await post(`${server.url}/run_code`, { ...base, compile_timeout: 60, language: "kotlin_script", code: "val x: Int = \"s\"" });
    assert.deepEqual([ktsBad.body.status, ktsBad.body.compile_result, ktsBad.body.run_result.return_code], ["Failed", null, 1], JSON.stringify(ktsBad.body));
    assert.match(ktsBad.body.run_result.stderr, /main\.kts:1:14: error: type mismatch/);
    // A compiled language's missing compiler fails the compile step (CUDA: no GPU toolchain here).
    const missingCompiler = await post(`${server.url}/run_code`, { ...base, language: "cuda", code: "int main() {}" });
    assert.equal(missingCompiler.body.status, "Failed");
    assert.equal(missingCompiler.body.run_result, null);
    assert.equal(missingCompiler.body.compile_result.return_code, 127);
    assert.match(missingCompiler.body.compile_result.stderr, /nvcc: command not found/);
    const withFile = await post(`${server.url}/run_code`, { ...base, code: "print(open('in/x.txt').read())", files: { "in/x.txt": Buffer.from("data").toString("base64") } });
    assert.equal(withFile.body.run_result.stdout, "data\n");
  });

  it("rejects malformed requests like FastAPI would (422 with detail)", async () => {
    const badLang = await post(`${server.url}/run_code`, { code: "1", language: "cobol" });
    assert.equal(badLang.status, 422);
    assert.deepEqual(badLang.body.detail[0].loc, ["body", "language"]);
    const noCode = await post(`${server.url}/run_code`, { language: "python" });
    assert.equal(noCode.status, 422);
    const noLang = await post(`${server.url}/common_evaluate_batch`, { completion: A_PLUS_B, config: {} });
    assert.equal(noLang.status, 400);
    assert.equal(noLang.body.detail, "config.language field must exist, got None");
    assert.equal((await post(`${server.url}/run_code`, "{nope")).status, 400);
    assert.equal((await post(`${server.url}/nowhere`, {})).status, 404);
    assert.equal((await fetch(`${server.url}/run_code`)).status, 405);
  });

  it("/common_evaluate_batch: ScaleBox's a+b example (stdio) is accepted with per-case exec_info", async () => {
    const r = await post(`${server.url}/common_evaluate_batch`, {
      completion: A_PLUS_B,
      config: { language: "python", run_timeout: 10, provided_data: { test_cases: { type: "stdin_stdout", input: ["1 2", "3 4"], output: ["3", "7"], fn_name: null } }, extra: { run_all_cases: true } },
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.accepted, true);
    assert.equal(r.body.extracted_code, "a, b = map(int, input().split())\nprint(a + b)");
    assert.equal(r.body.tests.length, 2);
    assert.equal(r.body.tests[0].exec_info.status, "Success");
    assert.equal(r.body.tests[0].exec_info.run_result.stdout, "3\n");
    assert.deepEqual(r.body.tests[0].test_info, { input: { stdin: "1 2" }, output: { stdout: "3" } });
  });

  it("/common_evaluate_batch: a function call with one wrong expectation, the seed's scalebox.py request", async () => {
    const r = await post(`${server.url}/common_evaluate_batch`, {
      completion: "<think>try ```python\ndef add(a, b): return a - b\n```</think>The answer:\n```python\ndef add(a, b):\n    return a + b\n```",
      config: { language: "python", compile_timeout: 30, run_timeout: 30, provided_data: { test_cases: { type: "function_call", input: [[1, 2], [3, 4]], output: [[3], [8]], fn_name: "add", json_input: false } }, extra: { run_all_cases: true, total_timeout: 30 } },
    });
    assert.equal(r.body.accepted, false);
    assert.deepEqual(r.body.tests.map((t: { passed: boolean }) => t.passed), [true, false]);
    assert.equal(r.body.tests[1].exec_info.message, "Wrong Answer");
  });

  it("/common_evaluate_batch keeps the line-count check: missing or extra lines fail", async () => {
    const r = await post(`${server.url}/common_evaluate_batch`, {
      completion: "```python\nprint(1)\n```",
      config: { language: "python", provided_data: { test_cases: { input: ["", ""], output: ["1\n2\n3", "1"] } }, extra: { run_all_cases: true } },
    });
    assert.deepEqual(r.body.tests.map((t: { passed: boolean }) => t.passed), [false, true]);
  });

  it("/common_evaluate_batch stops at the first failure unless run_all_cases, and runs a special judge", async () => {
    const stop = await post(`${server.url}/common_evaluate_batch`, {
      completion: "```python\nprint(int(input()) * 2)\n```",
      config: { language: "python", provided_data: { test_cases: { input: ["1", "2", "3"], output: ["2", "5", "6"] } } },
    });
    assert.equal(stop.body.tests.length, 2);
    const judge = "a = int(open('stdin.txt').read())\nx, y = map(int, open('answer.txt').read().split())\nraise SystemExit(0 if x + y == a else 1)";
    const sj = await post(`${server.url}/common_evaluate_batch`, {
      completion: "```python\nn = int(input())\nprint(n - 1, 1)\n```",
      config: { language: "python", provided_data: { test_cases: { input: ["3"], output: ["1 2"] } }, extra: { run_all_cases: true, special_judge_program: judge, special_judge_language: "python" } },
    });
    assert.equal(sj.body.accepted, true);
  });

  it("/v1/rewards scores verl samples, evaluates identical answers once and caches across calls", async () => {
    const gt = JSON.stringify({ input: ["1 2", "5 5"], output: ["3", "10"], fn_name: null, type: "stdin_stdout" });
    const wrong = "```python\nprint(0)\n```";
    const samples = [
      { data_source: "code", solution_str: A_PLUS_B, ground_truth: gt, extra_info: { num_turns: 4 } },
      { data_source: "code", solution_str: A_PLUS_B, ground_truth: gt },
      { data_source: "code", solution_str: wrong, ground_truth: gt },
      { data_source: "code", solution_str: "I don't know.", ground_truth: gt },
      { data_source: "code", solution_str: A_PLUS_B, ground_truth: "not json" },
    ];
    const first = await post(`${server.url}/v1/rewards`, { samples });
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.results.map((r: { score: number; status: string }) => [r.score, r.status]), [[1, "ok"], [1, "ok"], [0, "ok"], [0, "no_code"], [0, "invalid_test_cases"]]);
    assert.deepEqual(first.body.results[0].cases, ["passed", "passed"]);
    assert.equal(first.body.stats.evaluated, 2);
    assert.equal(first.body.stats.dedupedInBatch, 1);
    const second = await post(`${server.url}/v1/rewards`, { samples: samples.slice(0, 3) });
    assert.equal(second.body.stats.evaluated, 0);
    assert.equal(second.body.stats.cacheHits, 3);
    assert.equal(second.body.stats.hitRate, 1);
    assert.ok(second.body.results.every((r: { cached: boolean }) => r.cached));
  });
});

/** A backend whose sandbox always fails: the function must never turn that into a score. */
function brokenBackend(): SandboxBackend & { calls: number } {
  const b = {
    name: "broken", calls: 0,
    capabilities: async () => ({ backend: "broken", languages: ["python"], maxConcurrency: 1, specialJudge: false }),
    run: async () => ({ status: "infra_error" as const, exitCode: null, stdout: "", stderr: "", timeMs: 0, error: "sandbox unreachable" }),
    evaluate: async (jobs: readonly EvalJob[]) => {
      b.calls++;
      return jobs.map((j) => summarize(j.id, "broken", j.tests.map((_, index) => ({ index, status: "infra_error" as const, detail: "sandbox unreachable" })), 1));
    },
    close: async () => {},
  };
  return b;
}

describe("sandbox function: failures, auth and limits", () => {
  let server: RunningServer;
  const backend = brokenBackend();
  const token = "t0ken-for-tests-0123456789";
  before(async () => {
    server = await startHttpServer({ backend, cache: new ResultCache(), token, retryBaseDelayMs: 1 }, { host: "127.0.0.1", port: 0, maxBodyBytes: 64 * 1024 });
  });
  after(() => server.close());
  const auth = { authorization: `Bearer ${token}` };

  it("a sandbox error is never a success or a score: 503 / SandboxError / infra_error after retries", async () => {
    const batch = await post(`${server.url}/common_evaluate_batch`, { completion: A_PLUS_B, config: { language: "python", provided_data: { test_cases: { input: ["1 2"], output: ["3"] } } } }, auth);
    assert.equal(batch.status, 503);
    const run = await post(`${server.url}/run_code`, { code: "print(1)", language: "python" }, auth);
    assert.equal(run.body.status, "SandboxError");
    const before = backend.calls;
    const rewards = await post(`${server.url}/v1/rewards`, { samples: [{ solution_str: A_PLUS_B, ground_truth: { input: ["1 2"], output: ["3"] } }] }, auth);
    assert.equal(rewards.body.results[0].status, "infra_error");
    assert.equal(rewards.body.stats.infraErrors, 1);
    assert.equal(backend.calls - before, 3, "retried twice");
    const again = await post(`${server.url}/v1/rewards`, { samples: [{ solution_str: A_PLUS_B, ground_truth: { input: ["1 2"], output: ["3"] } }] }, auth);
    assert.equal(again.body.stats.cacheHits, 0, "failures are not cached");
  });

  it("requires the token (header or /t/<token>/ prefix); ping stays public", async () => {
    assert.equal((await post(`${server.url}/run_code`, { code: "1", language: "python" })).status, 401);
    assert.equal((await fetch(`${server.url}/v1/stats`)).status, 401);
    assert.equal((await fetch(`${server.url}/v1/stats`, { headers: auth })).status, 200);
    assert.equal((await post(`${server.url}/run_code`, { code: "1", language: "python" }, { authorization: "Bearer wrong-token-000000000000" })).status, 401);
    assert.equal((await post(`${server.url}/t/${token}/run_code`, { code: "1", language: "python" })).status, 200);
    assert.equal((await post(`${server.url}/t/nope/run_code`, { code: "1", language: "python" })).status, 401);
    assert.equal((await fetch(`${server.url}/v1/ping`)).status, 200);
  });

  it("refuses oversized bodies (413) and non-JSON content (415)", async () => {
    const big = await post(`${server.url}/v1/rewards`, { samples: [{ solution_str: "x".repeat(100 * 1024), ground_truth: "{}" }] }, auth);
    assert.equal(big.status, 413);
    const res = await fetch(`${server.url}/run_code`, { method: "POST", headers: { "content-type": "text/plain", ...auth }, body: "print(1)" });
    assert.equal(res.status, 415);
  });
});
