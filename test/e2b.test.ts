// The E2B / AGS backend with the REAL e2b@2.50.0 SDK against loopback fakes of the control plane and envd
// (test/fakes/e2b-fake.ts): the fake envd really runs the runner, so grading is end to end. Nothing leaves
// 127.0.0.1. The live service is checked by hand with scripts/check-e2b-live.mjs (tests never leave this machine).
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, beforeEach, describe, it } from "node:test";
import { E2BSandbox, type E2BSandboxOptions } from "../adapters/sandboxes/e2b.js";
import { SandboxError } from "../adapters/sandboxes/sandbox.js";
import type { EvalJob, EvalResult, TestCase } from "../core/grading/types.js";
import { FakeE2B } from "./fakes/e2b-fake.js";

const API_KEY = `ark_${randomBytes(16).toString("hex")}`; // an AGS-style key: the SDK must not reject its format
const T = { timeout: 90_000 };

describe("E2B backend (real SDK, loopback fakes)", () => {
  let fake: FakeE2B;
  /** Everything the tests saw come back, and every file the fake received: scanned for the API key at the end. */
  const seen: unknown[] = [];
  const received: Buffer[] = [];

  before(async () => {
    fake = await FakeE2B.start({ apiKey: API_KEY });
  });
  beforeEach(() => {
    received.push(...fake.stats.files.map((f) => f.data));
    fake.reset();
  });
  after(async () => {
    await fake.close();
  });

  async function backend(opts: E2BSandboxOptions = {}): Promise<E2BSandbox> {
    return E2BSandbox.create({
      apiKey: API_KEY, apiUrl: fake.apiUrl, sandboxUrl: fake.sandboxUrl, domain: "localhost", env: {},
      poolSize: 2, maxCreatesPerSecond: 100, retryBaseDelayMs: 50, ...opts,
    });
  }

  async function evaluate(b: E2BSandbox, jobs: readonly EvalJob[]): Promise<EvalResult[]> {
    const out = await b.evaluate(jobs);
    seen.push(out);
    assert.deepEqual(fake.stats.unknown, [], "the SDK called an endpoint the fake does not know");
    return out;
  }

  const statuses = (r: EvalResult) => r.cases.map((c) => c.status);
  const word = () => randomBytes(6).toString("hex");
  const REVERSE = "w = input().strip()\nprint(w[::-1] + '!')\n";

  it("passes a 10-case stdio job; expected outputs never reach the sandbox", T, async () => {
    const b = await backend();
    try {
      const words = Array.from({ length: 10 }, word);
      const tests: TestCase[] = words.map((w) => ({ kind: "stdio", stdin: `${w}\n`, expectedStdout: `${[...w].reverse().join("")}!\n` }));
      const [r] = await evaluate(b, [{ id: "ten", language: "python", code: REVERSE, tests, limits: { runTimeoutMs: 5_000 } }]);
      assert.equal(r!.status, "ok");
      assert.equal(r!.backend, "e2b");
      assert.deepEqual([r!.passed, r!.total], [10, 10]);
      assertNoExpectedInSandbox(tests);
      assert.ok(fake.stats.files.some((f) => f.path.endsWith("/runner.py")), "the runner travels with the job");
      assert.deepEqual(fake.leftovers(), [], "the job directory is removed");
    } finally {
      await b.close();
    }
  });

  it("grades wrong answers, a runtime error, a timeout and an output limit; one write and one run per job", T, async () => {
    const b = await backend();
    try {
      const code = [
        "import sys, time",
        "n = int(input())",
        "if n == 2: raise ValueError('boom')",
        "if n == 3: time.sleep(30)",
        "if n == 4: sys.stdout.write('x' * 5000)",
        "print(n * n)",
      ].join("\n");
      const tests: TestCase[] = [
        { kind: "stdio", stdin: "7\n", expectedStdout: "49\n" },
        { kind: "stdio", stdin: "5\n", expectedStdout: "26\n" },
        { kind: "stdio", stdin: "2\n", expectedStdout: "4\n" },
        { kind: "stdio", stdin: "3\n", expectedStdout: "9\n" },
        { kind: "stdio", stdin: "4\n", expectedStdout: "16\n" },
      ];
      const started = Date.now();
      const [r] = await evaluate(b, [{ id: "mixed", language: "python", code, tests, limits: { runTimeoutMs: 1_000, maxOutputBytes: 1_000 } }]);
      assert.ok(Date.now() - started < 20_000, "the sleeping case was killed at its timeout");
      assert.equal(r!.status, "ok");
      assert.deepEqual(statuses(r!), ["passed", "wrong_answer", "runtime_error", "timeout", "output_limit"]);
      assert.match(r!.cases[2]!.detail ?? "", /ValueError: boom/);
      assert.deepEqual([fake.stats.fileWrites, fake.stats.starts], [1, 1]);
    } finally {
      await b.close();
    }
  });

  it("runs function-call and assert cases", T, async () => {
    const b = await backend();
    try {
      const code = "def add(a, b):\n    return a + b\n\nclass Solution:\n    def twice(self, xs):\n        return [x * 2 for x in xs]\n";
      const tests: TestCase[] = [
        { kind: "call", fnName: "add", args: [2, 3], expected: 5 },
        { kind: "call", fnName: "add", args: [2, 2], expected: 5 },
        { kind: "call", fnName: "twice", args: [[1, 2]], expected: [2, 4] },
        { kind: "call", fnName: "missing", args: [], expected: 1 },
        { kind: "assert", testCode: "assert add(1, 1) == 2" },
        { kind: "assert", testCode: "assert add(1, 1) == 3" },
        { kind: "assert", testCode: "def check(f):\n    assert f(3, 4) == 7\n", entryPoint: "add" },
      ];
      const [r] = await evaluate(b, [{ id: "calls", language: "python", code, tests, limits: { runTimeoutMs: 5_000 } }]);
      assert.deepEqual(statuses(r!), ["passed", "wrong_answer", "passed", "runtime_error", "passed", "wrong_answer", "passed"]);
      assert.deepEqual([fake.stats.fileWrites, fake.stats.starts], [1, 1]);
      assertNoExpectedInSandbox(tests);
    } finally {
      await b.close();
    }
  });

  it("compiles C++ once and runs it per case; a compile error fails every case; Node.js runs", T, async () => {
    const b = await backend();
    try {
      const cpp = "#include <iostream>\nint main(){long a,b; std::cin>>a>>b; std::cout<<a+b<<\"\\n\";}\n";
      const sum: TestCase[] = [{ kind: "stdio", stdin: "1 2\n", expectedStdout: "3\n" }, { kind: "stdio", stdin: "40 2\n", expectedStdout: "42\n" }];
      const js = "const [a, b] = require('fs').readFileSync(0, 'utf8').trim().split(/\\s+/).map(Number);\nconsole.log(a + b);\n";
      const [ok, broken, node] = await evaluate(b, [
        { id: "cpp-ok", language: "cpp", code: cpp, tests: sum, limits: { runTimeoutMs: 5_000 } },
        { id: "cpp-broken", language: "cpp", code: "int main( { return 0 }", tests: sum, limits: { runTimeoutMs: 5_000 } },
        { id: "js", language: "nodejs", code: js, tests: sum, limits: { runTimeoutMs: 5_000 } },
      ]);
      assert.deepEqual(statuses(ok!), ["passed", "passed"]);
      assert.deepEqual(statuses(broken!), ["compile_error", "compile_error"]);
      assert.equal(broken!.status, "ok", "a compile error is the program's failure, not the sandbox's");
      assert.match(broken!.cases[0]!.stderr ?? "", /error/);
      assert.deepEqual(statuses(node!), ["passed", "passed"]);
      assert.deepEqual([fake.stats.fileWrites, fake.stats.starts], [3, 3], "exactly one files.write and one commands.run per job");
    } finally {
      await b.close();
    }
  });

  it("asks a special judge (one more write and run) and honours stopOnFirstFailure", T, async () => {
    const b = await backend({ poolSize: 1 });
    try {
      const judge = [
        "a = float(open('answer.txt').read())",
        "e = float(open('stdout.txt').read())",
        "raise SystemExit(0 if abs(a - e) < 0.01 else 1)",
      ].join("\n");
      const [judged] = await evaluate(b, [{
        id: "judged", language: "python", code: "print(round(float(input()) * 3.14159, 3))",
        tests: [{ kind: "stdio", stdin: "1\n", expectedStdout: "3.14159\n" }, { kind: "stdio", stdin: "2\n", expectedStdout: "7\n" }],
        checker: { kind: "special", language: "python", program: judge }, limits: { runTimeoutMs: 5_000 },
      }]);
      assert.deepEqual(statuses(judged!), ["passed", "wrong_answer"]);
      assert.equal(judged!.cases[1]!.detail, "rejected by the special judge");
      assert.deepEqual([fake.stats.fileWrites, fake.stats.starts], [2, 2]);

      const [stopped] = await evaluate(b, [{
        id: "stop", language: "python", code: "print(int(input()) + 1)", stopOnFirstFailure: true, limits: { runTimeoutMs: 5_000 },
        tests: [{ kind: "stdio", stdin: "1", expectedStdout: "2" }, { kind: "stdio", stdin: "1", expectedStdout: "3" }, { kind: "stdio", stdin: "1", expectedStdout: "2" }],
      }]);
      assert.deepEqual(statuses(stopped!), ["passed", "wrong_answer", "skipped"]);
    } finally {
      await b.close();
    }
  });

  it("run(): one program with stdin and input files; compile errors and timeouts are the program's", T, async () => {
    const b = await backend();
    try {
      const r = await b.run({
        language: "python", code: "import sys\nprint(sys.stdin.read().upper(), open('data/x.txt').read())", stdin: "hello",
        files: { "data/x.txt": new TextEncoder().encode("file!") }, limits: { runTimeoutMs: 5_000 },
      });
      seen.push(r);
      assert.equal(r.status, "ok");
      assert.equal(r.stdout, "HELLO file!\n");
      assert.deepEqual([fake.stats.fileWrites, fake.stats.starts], [1, 1]);
      const bad = await b.run({ language: "cpp", code: "nope", limits: { runTimeoutMs: 5_000 } });
      const slow = await b.run({ language: "python", code: "while True: pass", limits: { runTimeoutMs: 500 } });
      const crash = await b.run({ language: "nodejs", code: "process.exit(3)", limits: { runTimeoutMs: 5_000 } });
      seen.push(bad, slow, crash);
      assert.equal(bad.status, "compile_error");
      assert.equal(slow.status, "timeout");
      assert.deepEqual([crash.status, crash.exitCode], ["runtime_error", 3]);
    } finally {
      await b.close();
    }
  });

  it("reuses pooled sandboxes: 8 jobs on poolSize 2 create at most 2", T, async () => {
    const b = await backend({ poolSize: 2 });
    try {
      const jobs: EvalJob[] = Array.from({ length: 8 }, (_, i) => ({
        id: `j${i}`, language: "python", code: REVERSE, tests: [{ kind: "stdio", stdin: "ab\n", expectedStdout: "ba!\n" }], limits: { runTimeoutMs: 5_000 },
      }));
      const out = await evaluate(b, jobs);
      assert.deepEqual(out.map((r) => r.id), jobs.map((j) => j.id), "order-preserving");
      assert.ok(out.every((r) => r.status === "ok" && r.passed === 1));
      assert.ok(fake.stats.creates.length <= 2, `created ${fake.stats.creates.length}`);
      assert.deepEqual([fake.stats.fileWrites, fake.stats.starts], [8, 8]);
      assert.deepEqual(fake.stats.timeouts, [], "a fresh sandbox needs no renewal");
      for (const c of fake.stats.creates) {
        assert.equal(c.body.templateID, "code-interpreter-v1");
        assert.equal(c.body.allow_internet_access, false);
        assert.equal(c.body.timeout, 1800);
      }
    } finally {
      await b.close();
    }
  });

  it("spaces sandbox creations by maxCreatesPerSecond", T, async () => {
    const b = await backend({ poolSize: 3, maxCreatesPerSecond: 2 });
    try {
      const jobs: EvalJob[] = Array.from({ length: 3 }, (_, i) => ({
        id: `r${i}`, language: "python", code: "import time\ntime.sleep(0.5)\nprint(1)", tests: [{ kind: "stdio", stdin: "", expectedStdout: "1" }], limits: { runTimeoutMs: 5_000 },
      }));
      const out = await evaluate(b, jobs);
      assert.ok(out.every((r) => r.passed === 1));
      const at = fake.stats.creates.map((c) => c.atMs).sort((x, y) => x - y);
      assert.equal(at.length, 3);
      for (let i = 1; i < at.length; i++) assert.ok(at[i]! - at[i - 1]! >= 400, `creates ${at[i]! - at[i - 1]!} ms apart, want 500 ms (less loopback jitter)`);
    } finally {
      await b.close();
    }
  });

  it("renews a reused sandbox whose lifetime runs short (setTimeout)", T, async () => {
    const b = await backend({ poolSize: 1, sandboxTimeoutMs: 5_000 });
    try {
      const job = (id: string): EvalJob => ({ id, language: "python", code: "print(1)", tests: [{ kind: "stdio", stdin: "", expectedStdout: "1" }], limits: { runTimeoutMs: 1_000, totalTimeoutMs: 2_000 } });
      await evaluate(b, [job("first")]);
      await evaluate(b, [job("second")]);
      assert.equal(fake.stats.creates.length, 1);
      assert.equal(fake.stats.timeouts.length, 1);
      assert.ok(fake.stats.timeouts[0]!.timeoutS >= 5);
    } finally {
      await b.close();
    }
  });

  it("retries a create rejected with 429 and succeeds", T, async () => {
    fake.failNextCreates(1, 429);
    const b = await backend({ poolSize: 1 });
    try {
      const [r] = await evaluate(b, [{ id: "rl", language: "python", code: REVERSE, tests: [{ kind: "stdio", stdin: "xy", expectedStdout: "yx!" }], limits: { runTimeoutMs: 5_000 } }]);
      assert.equal(r!.status, "ok");
      assert.equal(r!.passed, 1);
      assert.equal(fake.stats.rejectedCreates.length, 1);
      assert.equal(fake.stats.creates.length, 1);
    } finally {
      await b.close();
    }
  });

  it("a sandbox killed mid-job: the job is retried on a fresh sandbox and the dead one is replaced", T, async () => {
    fake.killDuringNextStarts(1, 300);
    const b = await backend({ poolSize: 1 });
    try {
      const [r] = await evaluate(b, [{
        id: "dies", language: "python", code: "import time\ntime.sleep(1)\nprint(2)", tests: [{ kind: "stdio", stdin: "", expectedStdout: "2" }], limits: { runTimeoutMs: 5_000 },
      }]);
      assert.equal(r!.status, "ok");
      assert.equal(r!.passed, 1);
      assert.equal(fake.stats.creates.length, 2, "a replacement was created");
      assert.equal(fake.stats.starts, 2);
      const [dead, fresh] = fake.stats.creates.map((c) => c.id);
      assert.ok(!fake.liveIds().includes(dead!));
      assert.ok(fake.liveIds().includes(fresh!));
    } finally {
      await b.close();
    }
  });

  it("a persistent sandbox failure is infra_error after 2 attempts, never a 0 score", T, async () => {
    fake.killDuringNextStarts(Number.POSITIVE_INFINITY, 100);
    const b = await backend({ poolSize: 1 });
    try {
      const tests: TestCase[] = [{ kind: "stdio", stdin: "", expectedStdout: "2" }, { kind: "stdio", stdin: "", expectedStdout: "2" }];
      const [r] = await evaluate(b, [{ id: "doomed", language: "python", code: "import time\ntime.sleep(2)\nprint(2)", tests, limits: { runTimeoutMs: 5_000 } }]);
      assert.equal(r!.status, "infra_error");
      assert.deepEqual(statuses(r!), ["infra_error", "infra_error"]);
      assert.match(r!.error ?? "", /^e2b_timeout: /);
      assert.equal(fake.stats.starts, 2, "two attempts");
      assert.equal(fake.stats.creates.length, 2, "each on a fresh sandbox");

      fake.reset();
      fake.failNextCreates(100, 500);
      const [c] = await evaluate(b, [{ id: "no-create", language: "python", code: "print(2)", tests, limits: { runTimeoutMs: 5_000 } }]);
      assert.equal(c!.status, "infra_error");
      assert.match(c!.error ?? "", /^e2b_error: 500/);
      assert.equal(fake.stats.starts, 0);
      const r2 = await b.run({ language: "python", code: "print(1)", limits: { runTimeoutMs: 1_000 } });
      seen.push(r2);
      assert.equal(r2.status, "infra_error");
    } finally {
      await b.close();
    }
  });

  it("a program that kills its runner leaves no result: infra_error, not a pass", T, async () => {
    const b = await backend({ poolSize: 1 });
    try {
      const [r] = await evaluate(b, [{
        id: "rogue", language: "python", code: "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint(1)",
        tests: [{ kind: "stdio", stdin: "", expectedStdout: "1" }], limits: { runTimeoutMs: 5_000 },
      }]);
      assert.equal(r!.status, "infra_error");
      assert.match(r!.error ?? "", /^e2b_runner_failed: the sandbox runner exited/);
      assert.equal(r!.passed, 0);
      assert.equal(fake.stats.starts, 2);
    } finally {
      await b.close();
    }
  });

  it("a wrong API key: infra_error results and a clear SandboxError from check(), without the key", T, async () => {
    const wrongKey = `ark_${randomBytes(16).toString("hex")}`;
    const b = await backend({ apiKey: wrongKey });
    try {
      const [r] = await evaluate(b, [{ id: "auth", language: "python", code: "print(1)", tests: [{ kind: "stdio", stdin: "", expectedStdout: "1" }], limits: { runTimeoutMs: 1_000 } }]);
      assert.equal(r!.status, "infra_error");
      assert.match(r!.error ?? "", /^e2b_auth_failed: .*E2B_API_KEY/);
      assert.equal(fake.stats.authFailures, 1, "credentials are not retried");
      await assert.rejects(b.check(), (e: unknown) => {
        assert.ok(e instanceof SandboxError);
        assert.equal(e.code, "e2b_auth_failed");
        assert.ok(!`${e.message} ${e.hint ?? ""}`.includes(wrongKey));
        seen.push(e.message, e.hint);
        return true;
      });
      assert.ok(!JSON.stringify(r).includes(wrongKey));
    } finally {
      await b.close();
    }
  });

  it("a missing API key is a SandboxError naming E2B_API_KEY", async () => {
    await assert.rejects(E2BSandbox.create({ env: {} }), (e: unknown) => {
      assert.ok(e instanceof SandboxError);
      assert.equal(e.code, "e2b_api_key_missing");
      assert.match(e.hint ?? "", /E2B_API_KEY/);
      return true;
    });
    await assert.rejects(E2BSandbox.create({ apiKey: "k", poolSize: 0 }), (e: unknown) => e instanceof SandboxError && e.code === "e2b_bad_option");
  });

  it("check() creates one sandbox; close() kills every sandbox, idle or busy", T, async () => {
    const b = await backend({ poolSize: 3 });
    await b.check();
    assert.equal(fake.stats.creates.length, 1);
    const caps = await b.capabilities();
    assert.deepEqual([caps.languages, caps.maxConcurrency, caps.specialJudge], [["python", "cpp", "nodejs"], 3, true]);
    const jobs: EvalJob[] = Array.from({ length: 3 }, (_, i) => ({
      id: `c${i}`, language: "python", code: "import time\ntime.sleep(0.4)\nprint(1)", tests: [{ kind: "stdio", stdin: "", expectedStdout: "1" }], limits: { runTimeoutMs: 5_000 },
    }));
    await evaluate(b, jobs);
    const busy = b.evaluate([{ id: "busy", language: "python", code: "import time\ntime.sleep(5)", tests: [{ kind: "stdio", stdin: "", expectedStdout: "" }], limits: { runTimeoutMs: 10_000 } }]);
    await new Promise((r) => setTimeout(r, 300));
    await b.close();
    const ids = fake.stats.creates.map((c) => c.id);
    assert.equal(ids.length, 3);
    assert.deepEqual([...fake.stats.kills].sort(), [...ids].sort(), "one DELETE per sandbox");
    assert.deepEqual(fake.liveIds().filter((id) => ids.includes(id)), []);
    const [late] = await busy;
    seen.push(late);
    assert.equal(late!.status, "infra_error", "a job cut off by close() is not a 0 score");
  });

  it("never shows the API key in results, errors or sandbox files", () => {
    received.push(...fake.stats.files.map((f) => f.data));
    assert.ok(seen.length > 10);
    assert.ok(!JSON.stringify(seen).includes(API_KEY));
    assert.ok(received.length > 0);
    assert.ok(received.every((d) => !d.includes(API_KEY)));
  });

  function assertNoExpectedInSandbox(tests: readonly TestCase[]): void {
    const expected = tests.flatMap((t) => (t.kind === "stdio" ? [t.expectedStdout.trim()] : t.kind === "call" ? [JSON.stringify(t.expected)] : []));
    for (const f of fake.stats.files) {
      for (const e of expected) {
        if (e.length >= 3) assert.ok(!f.data.includes(e), `expected output ${JSON.stringify(e)} was sent to the sandbox in ${f.path}`);
      }
    }
  }
});
