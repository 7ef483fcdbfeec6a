// The manager's case loop in C (caseloop.c) against the Python loop it stands in for (local_harness.Runner.run): the
// same verdicts, outputs and flags on every path a case can take — the ordinary ones and a program's tricks (forged
// events, planted directories, strays, files it cannot remove, escapes and invalid bytes that blow up the reply) — and
// its encoding of output, byte for byte, against the harness's on random bytes.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { EvalJob, EvalResult, TestCase } from "../core/grading/types.js";
import { buildCaseLoop, HARNESS_DIR } from "../adapters/sandboxes/local/bwrap.js";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { startServe, waitFor } from "./serve-process.js";

const stdio = (stdin: string, expectedStdout: string): TestCase => ({ kind: "stdio", stdin, expectedStdout });
const job = (id: string, code: string, tests: TestCase[], extra: Partial<EvalJob> = {}): EvalJob =>
  ({ id, language: "python", code, tests, limits: { runTimeoutMs: 5000 }, ...extra });
/** What a case's result says, less its timing (which differs from run to run). */
const verdicts = (r: EvalResult) => ({
  status: r.status, passed: r.passed,
  cases: r.cases.map((c) => ({ index: c.index, status: c.status, exitCode: c.exitCode, stdout: c.stdout, stderr: c.stderr, detail: c.detail, outputOmitted: c.outputOmitted })),
});
/** Bytes a string takes inside a JSON string (what the reply carries). */
const replyBytes = (s: string) => Buffer.byteLength(JSON.stringify(s)) - 2;

const sums = Array.from({ length: 4 }, (_, i) => stdio(`${i} ${i + 1}`, `${2 * i + 1}`));
const SUM = "a, b = map(int, input().split())\nprint(a + b)";
/** Every path of a case, each as a job; where a program cheats, the verdict it must not get is in the comment. */
const JOBS: EvalJob[] = [
  job("correct and wrong", SUM, [...sums, stdio("3 4", "8")]),
  job("exit codes and exceptions", "import sys\nn = int(input())\nif n == 1: raise ValueError('boom')\nif n == 2: sys.exit(3)\nif n == 3: sys.exit('message')\nprint(n)",
    [stdio("0", "0"), stdio("1", "1"), stdio("2", "2"), stdio("3", "3")]),
  job("killed by a signal", "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)", [stdio("", "")]),
  job("wall clock", "import time\nif input() == 'slow': time.sleep(60)\nprint('ok')", [stdio("fast", "ok"), stdio("slow", "ok"), stdio("fast", "ok")], { limits: { runTimeoutMs: 1500 } }),
  job("memory error", "raise MemoryError()", [stdio("", "")]),
  // Escapes and invalid bytes: the cap counts the bytes of the reply (a \x01 is six, an invalid byte three).
  job("escaped output over the cap", "import sys\nsys.stdout.write('\\x01' * 400)\nsys.stderr.write('\"\\\\' * 300)", [stdio("", "")], { limits: { runTimeoutMs: 5000, maxOutputBytes: 1000 } }),
  job("invalid bytes over the cap", "import sys\nsys.stdout.buffer.write(b'\\x80' * 600)", [stdio("", "")], { limits: { runTimeoutMs: 5000, maxOutputBytes: 1000 } }),
  job("output within the cap", "import sys\nsys.stdout.buffer.write(b'ok \\xe4\\xb8\\xad \\xff\\xfe\\n' * 20)", [stdio("", "")], { limits: { runTimeoutMs: 5000, maxOutputBytes: 1000 } }),
  job("stdin with NUL and UTF-8", "import sys\nsys.stdout.write(repr(sys.stdin.buffer.read()))", [stdio("a\u0000b é 中\n", "b'a\\x00b \\xc3\\xa9 \\xe4\\xb8\\xad\\n'")]),
  job("function calls", "def f(x):\n    return [x, str(x) * 2, {'k': x}]", [
    { kind: "call", fnName: "f", args: [3], expected: [3, "33", { k: 3 }] }, { kind: "call", fnName: "f", args: [4], expected: [0] },
    { kind: "call", fnName: "g", args: [], expected: null }]),
  // Cheats: forging the result (fd 101 is the event stream, fd 100 the job stream: closed in every case process) —
  // must be a runtime error, never a pass of case 1.
  job("forged events", "import os, sys\nforged = b'{\"event\":\"case\",\"index\":1,\"exitCode\":0,\"signal\":null,\"stdout\":\"right\\\\n\",\"stderr\":\"\"}\\n'\nfor fd in (100, 101):\n    try:\n        os.write(fd, forged)\n    except OSError as e:\n        print(e, file=sys.stderr)\nprint('wrong')",
    [stdio("", "right"), stdio("", "right")]),
  // A daemon that outlives its case and would write into the next case's stdout.
  job("stray processes", "import os, sys, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(1)\n    os.write(1, b'stray\\n')\n    time.sleep(60)\n    os._exit(0)\n" + SUM, sums),
  // Files and an unreadable, unwritable directory left in the case's directory (the manager removes them).
  job("left-over files", "import os\nopen('f', 'w').write('x')\nos.makedirs('d/e')\nos.chmod('d/e', 0)\nos.chmod('d', 0)\n" + SUM, sums),
  // The next case's directory planted in advance (with a file in it): each case still starts in a fresh, empty one.
  job("planted directories", "import os\nprint(len(os.listdir('.')))\nfor i in range(4):\n    os.makedirs('/work/c%d/planted' % i, exist_ok=True)", [stdio("", "0"), stdio("", "0"), stdio("", "0"), stdio("", "0")]),
  job("stop at the first failure", SUM, [sums[0]!, stdio("1 2", "4"), sums[2]!, sums[3]!], { stopOnFirstFailure: true }),
  // Out of budget: the first case is cut by the job's total, the rest are never started.
  job("total budget", "import time\ntime.sleep(60)", [stdio("", ""), stdio("", ""), stdio("", "")], { limits: { runTimeoutMs: 30_000, totalTimeoutMs: 1500 } }),
];

describe("the case loop in C", { timeout: 600_000 }, () => {
  let c: LocalSandbox;
  let py: LocalSandbox;
  before(async () => {
    c = await LocalSandbox.create({ concurrency: 1, caseLoop: true });
    py = await LocalSandbox.create({ concurrency: 1, caseLoop: false });
  });
  after(async () => { await c?.close(); await py?.close(); });

  it("is built here and can be turned off", async () => {
    assert.equal((await c.capabilities()).caseLoop, "c");
    assert.equal((await py.capabilities()).caseLoop, "python");
  });

  it("gives the verdicts, outputs and flags the Python loop gives, on every path and every cheat", async () => {
    const fromC = await c.evaluate(JOBS);
    const fromPython = await py.evaluate(JOBS);
    for (let k = 0; k < JOBS.length; k++) {
      assert.deepEqual(verdicts(fromC[k]!), verdicts(fromPython[k]!), `${JOBS[k]!.id}: C ${JSON.stringify(fromC[k])}\nPython ${JSON.stringify(fromPython[k])}`);
    }
    // And the verdicts are the right ones (a cheat that fooled both loops alike would pass the comparison above).
    const by = (id: string) => fromC[JOBS.findIndex((j) => j.id === id)]!;
    const statuses = (id: string) => by(id).cases.map((x) => x.status);
    assert.deepEqual(statuses("correct and wrong"), ["passed", "passed", "passed", "passed", "wrong_answer"]);
    assert.deepEqual(statuses("exit codes and exceptions"), ["passed", "runtime_error", "runtime_error", "runtime_error"]);
    assert.deepEqual(by("exit codes and exceptions").cases.map((x) => x.exitCode), [0, 1, 3, 1]);
    assert.deepEqual(statuses("killed by a signal"), ["runtime_error"]);
    assert.deepEqual(statuses("wall clock"), ["passed", "timeout", "passed"]);
    assert.deepEqual(statuses("memory error"), ["memory_limit"]);
    assert.deepEqual(statuses("escaped output over the cap"), ["output_limit"]);
    assert.deepEqual(statuses("invalid bytes over the cap"), ["output_limit"]);
    assert.equal(by("output within the cap").cases[0]!.stdout, "ok 中 \ufffd\ufffd\n".repeat(20));
    assert.deepEqual(statuses("stdin with NUL and UTF-8"), ["passed"]);
    assert.deepEqual(statuses("function calls"), ["passed", "wrong_answer", "runtime_error"]);
    assert.deepEqual(statuses("forged events"), ["wrong_answer", "wrong_answer"]);
    assert.match(by("forged events").cases[0]!.stderr ?? "", /Bad file descriptor/);
    assert.deepEqual(statuses("stray processes"), ["passed", "passed", "passed", "passed"]);
    assert.deepEqual(statuses("left-over files"), ["passed", "passed", "passed", "passed"]);
    assert.deepEqual(statuses("planted directories"), ["passed", "passed", "passed", "passed"]);
    assert.deepEqual(statuses("stop at the first failure"), ["passed", "wrong_answer", "skipped", "skipped"]);
    assert.deepEqual(statuses("total budget"), ["skipped", "skipped", "skipped"]);
  });

  it("keeps every output it returns within the cap as the reply counts it, escapes and invalid bytes included", async () => {
    for (const sb of [c, py]) {
      for (const code of ["import sys\nsys.stdout.buffer.write(b'\\x80' * 5000)", "import sys\nsys.stdout.write('\\x01' * 5000)", "import sys\nsys.stdout.buffer.write(b'\\xe4\\xb8' * 3000)"]) {
        const r = await sb.run({ language: "python", code, limits: { runTimeoutMs: 5000, maxOutputBytes: 1000 } });
        assert.ok(replyBytes(r.stdout) <= 1000, `${code}: ${replyBytes(r.stdout)} reply bytes of stdout for a cap of 1000`);
        assert.ok(replyBytes(r.stdout) > 900, `${code}: the cap cut more than it had to (${replyBytes(r.stdout)} bytes)`);
      }
    }
  });

  it("a program's state does not reach the next program of the same sandbox through the C loop", async () => {
    // The first program leaves a daemon, files and a planted case directory; the next program sees none of them.
    const [dirty] = await c.evaluate([job("dirty", "import os, time\nopen('/work/left', 'w').write('x')\nos.makedirs('/work/c0/x', exist_ok=True)\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n    os._exit(0)\nprint('done')", [stdio("", "done")])]);
    assert.equal(dirty!.cases[0]!.status, "passed");
    // The processes it sees: its manager (pid 1 of its own PID namespace) and itself.
    const [next] = await c.evaluate([job("next", "import os\nprint(sorted(os.listdir('/work')), sorted(os.listdir('.')), len([p for p in os.listdir('/proc') if p.isdigit()]))", [stdio("", "['c0'] [] 2")])]);
    assert.equal(next!.cases[0]!.status, "passed", JSON.stringify(next));
  });
});

/** Reads (stdin "r") or overwrites (stdin "w") the first bytes of one of the interpreter's functions, in its own process. */
const PATCH_TEXT = `import ctypes, os
addr = ctypes.cast(ctypes.pythonapi.Py_GetVersion, ctypes.c_void_p).value
kind = next(l.split()[5] if len(l.split()) > 5 else "anonymous" for l in open("/proc/self/maps")
            if int(l.split("-")[0], 16) <= addr < int(l.split()[0].split("-")[1], 16))
before = ctypes.string_at(addr, 8).hex()
if input() == "w":
    libc = ctypes.CDLL(None, use_errno=True)
    rc = libc.mprotect(ctypes.c_void_p(addr & ~4095), 4096, 7)
    if rc == 0:
        ctypes.memmove(addr, b"\\xcc" * 8, 8)
    print(kind, before, "mprotect", rc, ctypes.string_at(addr, 8).hex())
else:
    print(kind, before)
`;

describe("the interpreter's code as anonymous memory", { timeout: 300_000 }, () => {
  let sb: LocalSandbox;
  before(async () => { sb = await LocalSandbox.create({ concurrency: 1, caseLoop: true }); });
  after(async () => { await sb?.close(); });
  const run = async (stdin: string) => {
    const r = await sb.run({ language: "python", code: PATCH_TEXT, stdin, limits: { runTimeoutMs: 10_000 } });
    assert.equal(r.status, "ok", JSON.stringify(r));
    return r.stdout.trim().split(" ");
  };

  it("is what a case process runs (no file behind it: nothing to fault in)", async () => {
    const [kind, bytes] = await run("r");
    assert.equal(kind, "anonymous");
    assert.match(bytes!, /^[0-9a-f]{16}$/);
  });

  it("a program that overwrites the interpreter's code changes its own process only: not the next case, not the next program", async () => {
    const [, original] = await run("r");
    // The control: the write really happens, in the writer's process.
    const [, before, , rc, after] = await run("w");
    assert.equal(before, original);
    assert.equal(rc, "0", "mprotect was refused: the write this test checks never happened");
    assert.equal(after, "cc".repeat(8));
    assert.deepEqual(await run("r"), ["anonymous", original]);
    const [r] = await sb.evaluate([job("patch then read", PATCH_TEXT, [stdio("w", `anonymous ${original} mprotect 0 ${"cc".repeat(8)}`), stdio("r", `anonymous ${original}`)])]);
    assert.deepEqual(r!.cases.map((c) => c.status), ["passed", "passed"], JSON.stringify(r));
  });
});

describe("rlpipe serve without a C compiler", { timeout: 300_000 }, () => {
  it("says it runs the Python loop and why, and grades as before", async () => {
    // A PATH whose cc and gcc fail, ahead of the real one.
    const bin = mkdtempSync(join(tmpdir(), "rlpipe-nocc-"));
    for (const name of ["cc", "gcc"]) symlinkSync("/bin/false", join(bin, name));
    const s = await startServe(["--sandbox", "local", "--concurrency", "1", "--quiet"], { ...process.env, PATH: `${bin}:${process.env["PATH"] ?? ""}` });
    try {
      assert.match(s.banner, /case loop python;/);
      await waitFor("the hint on stderr", () => s.log.some((l) => /no C compiler .*apt-get install gcc/.test(l)), 30_000);
      const res = await fetch(`${s.url}/run_code`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ language: "python", code: "print(6 * 7)" }) });
      assert.equal((await res.json() as { run_result: { stdout: string } }).run_result.stdout, "42\n");
    } finally {
      await s.stop();
      rmSync(bin, { recursive: true, force: true });
    }
  });

  it("with the compiler it runs the C loop and says nothing more", async () => {
    const s = await startServe(["--sandbox", "local", "--concurrency", "1", "--quiet"]);
    try {
      assert.match(s.banner, /case loop c;/);
      assert.deepEqual(s.log.filter((l) => /C compiler/.test(l)), []);
    } finally {
      await s.stop();
    }
  });
});

describe("the case loop's output encoding", () => {
  it("is the harness's, byte for byte, on random bytes (UTF-8 with invalid bytes replaced, JSON escapes, the cap)", () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-caseloop-"));
    try {
      const built = buildCaseLoop(dir, true);
      assert.ok(built.built, "the case loop did not build (is a C compiler installed?)");
      const r = spawnSync("/usr/bin/python3", ["-I", "-c", COMPARE, HARNESS_DIR, built.file, "20000"], { encoding: "utf8", timeout: 300_000 });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^compared 20000, 0 differ/m, r.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** Random byte strings (ASCII, controls, quotes, valid and invalid UTF-8) and caps: CaseFiles.read then the harness's
 * JSON encoder, against caseloop.c's rl_reply_string on the same cap + 1 bytes. */
const COMPARE = String.raw`
import ctypes, os, random, sys
sys.path.insert(0, sys.argv[1])
import local_harness as h
f = ctypes.CDLL(sys.argv[2]).rl_reply_string
f.argtypes = (ctypes.c_char_p, ctypes.c_long, ctypes.c_long, ctypes.c_char_p, ctypes.c_long, ctypes.POINTER(ctypes.c_int))
f.restype = ctypes.c_long
rng = random.Random(21)
pieces = [bytes([b]) for b in range(256)] + [s.encode() for s in ("é", "中", "😀")] + [b"\\", b'"', b"\n", b"\x00", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80\xaf", b"\xf0\x9f\x98", b"\xc0\xaf", b"\xe4\xb8"]
fd = os.memfd_create("compare")
n = int(sys.argv[3])
differ = 0
for _ in range(n):
    data = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))
    cap = rng.randint(0, 60)
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    text, cut = h.CaseFiles.read(fd, cap)
    want = h.dumps(text).encode()
    chunk = data[:cap + 1]
    out, c_cut = ctypes.create_string_buffer(6 * len(chunk) + 64), ctypes.c_int()
    length = f(chunk, len(chunk), cap, out, len(out), ctypes.byref(c_cut))
    got = out.raw[:length]
    if got != want or bool(c_cut.value) != cut:
        differ += 1
        if differ <= 3:
            print("differs:", data, cap, want, cut, got, c_cut.value)
print("compared %d, %d differ" % (n, differ))
`;
