// Attacks of a program rewarded for cheating, part of the shared security suite (sandbox-security.ts): each tries to
// leave state for the next program in its slot, slow it down, change or forge a verdict, or exhaust the server, and
// each has a control beside it (the same without the attack, or a well-behaved program) so that the test can fail.
// The suite's servers run one slot, so on the warm path the next program runs where the attack ran unless the
// sandbox was replaced.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { it } from "node:test";

/** The server under attack (sandbox-security.ts's SecurityTarget has these). */
export interface AttackTarget {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  /** How the server bounds a program's memory ("cgroup v1", "cgroup v2", "per process"). */
  readonly memoryBound?: string;
}

async function post(t: AttackTarget, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${t.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...t.headers }, body: JSON.stringify(body) });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: HTTP ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

/** A /run_code of a Python program, which must run to its end. */
async function runPython(t: AttackTarget, code: string, extra: Record<string, unknown> = {}): Promise<{ stdout: string; stderr: string; status: string; message: string; run_result: { return_code: number | null; status: string } }> {
  const r = await post(t, "/run_code", { language: "python", code, run_timeout: 20, ...extra });
  return { stdout: r.run_result?.stdout ?? "", stderr: r.run_result?.stderr ?? "", status: r.status, message: r.message, run_result: r.run_result };
}

const python = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

/** What a program can tell about the priorities it runs at: its own and its zygote's (pid 1). */
const SCHEDULING = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
IOPRIO_GET = {"x86_64": 252, "aarch64": 31}[os.uname().machine]
def state(pid):
    return [os.sched_getscheduler(pid), os.getpriority(os.PRIO_PROCESS, pid), libc.syscall(IOPRIO_GET, 1, pid)]
auto = open("/proc/self/autogroup").read().split(" nice ")[-1].strip()
print(state(0), state(1), auto)`;

/** Marks a program can leave on the scratch directories themselves. */
const SCRATCH_MARKS = `
import os
out = []
for d in ("/tmp", "/work", "/mnt", "/dev/shm"):
    try: names = sorted(os.listxattr(d))
    except OSError as e: names = ["error %d" % e.errno]
    out.append((d, names, int(os.stat(d).st_mtime) == 1234567890))
print(out)`;

export function registerProgramAttacks(target: () => AttackTarget): void {
  it("scheduling: SCHED_IDLE and idle I/O priority on the zygote, and autogroup nice 19, do not reach the next program", async () => {
    const t = target();
    const before = await runPython(t, SCHEDULING);
    assert.equal(before.status, "Success", before.stderr);
    const attack = await runPython(t, `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
machine = os.uname().machine
IOPRIO_SET = {"x86_64": 251, "aarch64": 30}[machine]
done = []
class Param(ctypes.Structure): _fields_ = [("prio", ctypes.c_int)]
if libc.sched_setscheduler(1, 5, ctypes.byref(Param(0))) == 0: done.append("idle")  # SCHED_IDLE
if libc.syscall(IOPRIO_SET, 1, 1, 3 << 13) == 0: done.append("ioprio")  # IOPRIO_WHO_PROCESS, IOPRIO_CLASS_IDLE
if libc.syscall(IOPRIO_SET, 3, os.getuid(), 3 << 13) == 0: done.append("ioprio-user")  # every process of the uid
# (setpriority on the zygote was caught before: tests/sandbox-isolation.test.ts)
import subprocess
# an exec'd program is dumpable, so it may write its own session's autogroup (the Python case process is not)
if subprocess.run(["/bin/sh", "-c", "echo 19 > /proc/self/autogroup"]).returncode == 0: done.append("autogroup")
print(sorted(done))`);
    assert.equal(attack.status, "Success", attack.stderr);
    // The attack reached its zygote: what matters is that it does not reach the next program.
    assert.match(attack.stdout, /'idle'/, "sched_setscheduler on the zygote must work for this test to mean anything");
    assert.match(attack.stdout, /'autogroup'/);
    const after = await runPython(t, SCHEDULING);
    assert.equal(after.status, "Success", after.stderr);
    assert.equal(after.stdout, before.stdout, "the next program runs at the priorities the first one saw");
  });

  it("scratch directories: extended attributes and timestamps a program sets on /tmp, /work, /mnt and /dev/shm are gone for the next program", async () => {
    const t = target();
    const before = await runPython(t, SCRATCH_MARKS);
    assert.equal(before.status, "Success", before.stderr);
    assert.doesNotMatch(before.stdout, /user\.|True/, before.stdout);
    const attack = await runPython(t, `
import os
set_ = 0
for d in ("/tmp", "/work", "/mnt", "/dev/shm"):
    os.setxattr(d, "user.rlpipe_left", b"1" * 100); set_ += 1
    os.utime(d, (1234567890, 1234567890))
print(set_, sorted(os.listxattr("/tmp")))`);
    assert.equal(attack.status, "Success", attack.stderr);
    assert.equal(attack.stdout, "4 ['user.rlpipe_left']\n", "the attack must be able to mark the directories");
    const after = await runPython(t, SCRATCH_MARKS);
    assert.equal(after.status, "Success", after.stderr);
    assert.equal(after.stdout, before.stdout);
  });

  it("sockets: an abstract unix socket kept bound (in flight, and by a daemon) and a TCP connection in TIME_WAIT are not there for the next program", async () => {
    const t = target();
    const name = `rlpipe-left-${randomBytes(6).toString("hex")}`;
    const probe = `
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
try:
    s.bind("\\0${name}"); print("free")
except OSError as e:
    print("taken", e.errno)
print(len(open("/proc/net/unix").read().splitlines()) - 1, len(open("/proc/net/tcp").read().splitlines()) - 1)`;
    const before = await runPython(t, probe);
    assert.equal(before.stdout, "free\n1 0\n", before.stderr);
    const attack = await runPython(t, `
import array, os, socket, time
held = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
held.bind("\\0${name}")
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
# the bound socket and b itself travel in b's own queue: nothing refers to them but a cycle in flight
a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [held.fileno(), b.fileno()]))])
# a connection this side closes first stays in TIME_WAIT for a minute: its port is a value the next program could read
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
cli = socket.create_connection(srv.getsockname()); conn, _ = srv.accept()
cli.close(); conn.close(); srv.close()
if os.fork() == 0:
    os.setsid()
    d = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); d.bind("\\0${name}-daemon"); d.listen()
    time.sleep(300)
print("planted")`);
    assert.equal(attack.stdout, "planted\n", attack.stderr);
    const after = await runPython(t, probe);
    assert.equal(after.stdout, before.stdout, "the name is free and no socket is left");
  });

  it("namespaces: a program cannot create a user namespace (then a PID namespace) or join one; threads and forks still work", async () => {
    const t = target();
    const r = await runPython(t, `
import ctypes, os, subprocess, threading
libc = ctypes.CDLL(None, use_errno=True)
out = []
for flag in (0x10000000, 0x20000000, 0x10000000 | 0x20000000, 0x40000000, 0x00020000):
    rc = libc.unshare(flag)
    out.append((hex(flag), rc, ctypes.get_errno()))
t = threading.Thread(target=lambda: out.append("thread")); t.start(); t.join()
out.append(subprocess.run(["/bin/echo", "child"], capture_output=True, text=True).stdout.strip())
out.append(libc.unshare(0x400))  # CLONE_FILES: not a namespace
print(out)`);
    assert.equal(r.status, "Success", r.stderr);
    assert.equal(r.stdout, "[('0x10000000', -1, 1), ('0x20000000', -1, 1), ('0x30000000', -1, 1), ('0x40000000', -1, 1), ('0x20000', -1, 1), 'thread', 'child', 0]\n");
  });

  it("memory: a program's processes together stay within its limit (8 children of 300 MiB, and 2 of 270 MiB after trying to leave its cgroup, under 512 MB); the reply says which limit", async () => {
    const t = target();
    assert.match(t.memoryBound ?? "", /^cgroup/, `this server bounds memory ${t.memoryBound ?? "(not said)"}: the test needs a memory cgroup (root, or a delegated cgroup v2)`);
    // Each child touches its memory, says so, then answers a roll call; the children that answer hold theirs at once.
    // (Counting the children that got their memory is not that: the OOM killer may end one that got its memory to make
    // room for the next, and a child it killed may not have exited yet, but it can no longer answer.)
    const hog = (children: number, mib: number, prelude = "") => `
import os, sys
${prelude}
r, w = os.pipe()
gr, gw = os.pipe()
ar, aw = os.pipe()
pids = []
for i in range(${children}):
    pid = os.fork()
    if pid == 0:
        os.close(r); os.close(gw); os.close(ar)
        block = bytearray(${mib} << 20)
        for k in range(0, len(block), 4096): block[k] = 1
        os.write(w, b"+")
        os.close(w)
        if os.read(gr, 1):
            os.write(aw, b"!")
        os.close(aw)
        import time; time.sleep(30)
        os._exit(0)
    pids.append(pid)
os.close(w); os.close(gr); os.close(aw)
done = 0
while done < ${children}:
    c = os.read(r, 1)
    if not c: break
    done += 1
os.write(gw, b"g" * ${children})
os.close(gw)
held = 0
while os.read(ar, 1):
    held += 1
print("held", held)
sys.stdout.flush()
ok = held == ${children}
for pid in pids:
    try: os.kill(pid, 9)
    except OSError: pass
sys.exit(0 if ok else 3)`;
    const control = await runPython(t, hog(2, 100), { memory_limit_MB: 512 });
    assert.equal(control.status, "Success", `${control.stdout} ${control.stderr}`);
    assert.equal(control.stdout, "held 2\n");
    const attack = await runPython(t, hog(8, 300), { memory_limit_MB: 512 });
    assert.equal(attack.status, "Failed", JSON.stringify(attack));
    const held = Number(/held (\d+)/.exec(attack.stdout)?.[1] ?? "0");
    assert.ok(held <= 1, `${held} children held 300 MiB each at once under a 512 MB limit: ${JSON.stringify(attack)}`);
    assert.match(attack.message, /the program's processes together passed 512 MB/, JSON.stringify(attack));
    // Near the limit: 2 × 270 MiB is 540 MiB, over 512 MB but under it plus what the harness holds (a bound that
    // counted the harness's share let both live); first the program tries to leave its cgroup through any descriptor
    // it has (the harness's descriptor of the program cgroup is closed before a program's code runs) or a cgroup file.
    const leave = `for fd in range(3, 1024):
    try: os.write(fd, b"0")
    except OSError: pass
for p in ("/sys/fs/cgroup/memory/cgroup.procs", "/sys/fs/cgroup/cgroup.procs", "/sys/fs/cgroup/memory/tasks"):
    try: open(p, "w").write("0")
    except OSError: pass`;
    const near = await runPython(t, hog(2, 270, leave), { memory_limit_MB: 512 });
    assert.equal(near.status, "Failed", JSON.stringify(near));
    assert.match(near.stdout, /^held [01]\n/, `2 children held 270 MiB each at once under a 512 MB limit: ${JSON.stringify(near)}`);
  });

  it("a program that tries to stop its harness (SIGSTOP to its manager) cannot; had it, it would end at its run timeout, and the next one runs", async () => {
    const t = target();
    const control = await post(t, "/v1/rewards", {
      config: { run_timeout_s: 2, total_timeout_s: 600 },
      samples: [{ data_source: "code", solution_str: python("import time\ntime.sleep(0.2)\nprint(1)"), ground_truth: { type: "stdin_stdout", input: [""], output: ["1"] } }],
    });
    assert.deepEqual(control.results.map((x: { cases: string[] }) => x.cases), [["passed"]]);
    // Without a watchdog outside the sandbox this would hold its slot for the 600 s budget (the test's own timeout).
    const stopped = await post(t, "/v1/rewards", {
      config: { run_timeout_s: 2, total_timeout_s: 600 },
      samples: [{ data_source: "code", solution_str: python("import os, signal\nos.kill(os.getppid(), signal.SIGSTOP)\nprint(1)"), ground_truth: { type: "stdin_stdout", input: ["", ""], output: ["1", "1"] } }],
    });
    assert.equal(stopped.results[0].status, "ok", JSON.stringify(stopped.results[0]));
    // Its manager is pid 1 of the program's PID namespace, which drops the signal (where programs share the sandbox's
    // namespaces, the watchdog ends the stopped harness at the run timeout instead: sandbox-warm-pool.test.ts).
    assert.deepEqual(stopped.results[0].cases, ["passed", "passed"], JSON.stringify(stopped.results[0]));
    const next = await runPython(t, "print('next')");
    assert.equal(next.stdout, "next\n");
  });

  it("a correct program that leaves a mode-000 directory in its working directory passes every case (a clean-up error is never the program's verdict)", async () => {
    const t = target();
    const body = (extra: string) => ({
      completion: python(`import os\na, b = map(int, input().split())\nprint(a + b)\n${extra}`),
      config: { language: "python", provided_data: { test_cases: { type: "stdin_stdout", input: ["1 2", "3 4", "5 6"], output: ["3", "7", "11"] } }, extra: { run_all_cases: true } },
    });
    const control = await post(t, "/common_evaluate_batch", body(""));
    assert.equal(control.accepted, true, JSON.stringify(control.tests));
    const locked = await post(t, "/common_evaluate_batch", body("os.makedirs('locked/inner'); open('locked/inner/f', 'w').write('x'); os.chmod('locked/inner', 0); os.chmod('locked', 0)"));
    assert.deepEqual(locked.tests.map((x: { passed: boolean }) => x.passed), [true, true, true], JSON.stringify(locked.tests));
  });
}

/** /run_jupyter: later cells that rewrite what earlier cells reported (through the interpreter's objects, or by writing
 * the driver's result line and exiting) beside the same cells without the attack. */
export function registerJupyterForgeries(target: () => AttackTarget): void {
  const early = ["print('true output')", "raise ValueError('true error')"];
  const walk = `import gc
for o in gc.get_objects():
    if isinstance(o, dict) and "stdout" in o and "error" in o:
        o["stdout"] = "forged"; o["error"] = []
print("walked")`;
  const forgedLine = `import json, os
os.write(1, b"\\n\\0rlpipe-jupyter-cells " + json.dumps([{"stdout": "forged", "stderr": "", "display": [], "error": []}] * 4).encode() + b"\\n")
os._exit(0)`;
  const check = (r: { status: string; cells: { stdout: string; error: { ename: string }[] }[] }, what: string) => {
    assert.equal(r.status, "Success", `${what}: ${JSON.stringify(r).slice(0, 400)}`);
    assert.equal(r.cells[0]!.stdout, "true output\n", what);
    assert.deepEqual(r.cells[1]!.error.map((e) => e.ename), ["ValueError"], what);
    assert.doesNotMatch(JSON.stringify(r.cells), /forged/, what);
  };
  it("/run_jupyter: a later cell cannot rewrite what earlier cells reported (objects walked, a forged result line and exit)", async () => {
    const t = target();
    const control = await post(t, "/run_jupyter", { cells: [...early, "print('plain')", "print('after')"] });
    check(control, "control");
    assert.equal(control.cells[3].stdout, "after\n");
    check(await post(t, "/run_jupyter", { cells: [...early, walk, "print('after')"] }), "walk");
    const line = await post(t, "/run_jupyter", { cells: [...early, forgedLine, "print('after')"] });
    check(line, "forged line");
    assert.notEqual(line.cells[2].error.length, 0, "the cell that exited is reported as such");
  });
}

/** Wrong solutions that try to turn a failing assert into a pass; each beside a correct and a plainly wrong one. */
const FORGERIES: Readonly<Record<string, string>> = {
  "traceback.print_exception exits 0": "import os, traceback, sys\ntraceback.print_exception = lambda *a, **k: os._exit(0)\nsys.excepthook = lambda *a: os._exit(0)\n",
  "traces its test and exits 0 at the failing assert": "import os, sys\ndef _t(frame, event, arg):\n    if event == \"exception\":\n        os._exit(0)\n    return _t\nsys.settrace(_t)\n",
  "exits 0 before any test": "import os\nos._exit(0)\n",
  "sys.exit(0) at the end of the program": "import sys\ntry:\n    pass\nfinally:\n    pass\nsys.exit(0)\n",
  "an object equal to everything": "class Any:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n    def __bool__(self): return True\n",
  // Its own memory, read in place (a process that is not dumpable cannot open /proc/self/mem): the job it was forked
  // with held the tests when they ran in the program's process.
  "reads the expected values from the test code in memory": `import ctypes, re
def _expected(call):
    pat = re.compile(re.escape(call.encode()) + rb"\\s*==\\s*(-?\\d+)")
    for line in open("/proc/self/maps").read().splitlines():
        span, perms = line.split()[:2]
        lo, hi = (int(x, 16) for x in span.split("-"))
        if "r" not in perms or hi - lo > (64 << 20) or "[v" in line:
            continue
        m = pat.search(ctypes.string_at(lo, hi - lo))
        if m:
            return int(m.group(1))
    return None
`,
};

function forgedAdd(kind: string): string {
  const prelude = FORGERIES[kind]!;
  if (kind === "an object equal to everything") return `${prelude}def add(a, b):\n    return Any()\n`;
  if (kind === "reads the expected values from the test code in memory") return `${prelude}def add(a, b):\n    e = _expected("add(%d, %d)" % (a, b))\n    return e if e is not None else a - b\n`;
  return `${prelude}def add(a, b):\n    return a - b\n`;
}

export function registerVerdictForgeries(target: () => AttackTarget): void {
  const tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(5, 1) == 6"];
  const humanEval = { type: "assert", test: "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 5) == 7\n", entry_point: "add" };
  it("assert tests: a correct solution passes and a wrong one fails (both formats, both routes)", async () => {
    const t = target();
    const r = await post(t, "/v1/rewards", {
      samples: [
        { data_source: "code", solution_str: python("def add(a, b):\n    return a + b"), ground_truth: { type: "assert", tests } },
        { data_source: "code", solution_str: python("def add(a, b):\n    return a + b"), ground_truth: humanEval },
        { data_source: "code", solution_str: python("def add(a, b):\n    return a - b"), ground_truth: { type: "assert", tests } },
        { data_source: "code", solution_str: python("def add(a, b):\n    return a - b"), ground_truth: humanEval },
      ],
    });
    assert.deepEqual(r.results.map((x: { score: number }) => x.score), [1, 1, 0, 0], JSON.stringify(r.results));
    const batch = await post(t, "/common_evaluate_batch", {
      completion: python("def add(a, b):\n    return a + b"),
      config: { language: "python", provided_data: { test_cases: { type: "assert", tests } }, extra: { run_all_cases: true } },
    });
    assert.equal(batch.accepted, true, JSON.stringify(batch.tests));
  });

  // Tests that lean on names the verifier resolves: builtins (abs, set), a module the program imported (math), a
  // module the test imports itself (fractions). A wrong program tries to make each of those lie (issue 32, item 3).
  const leaning = ["assert abs(add(1, 2) - 3) < 1e-9", "assert set([add(2, 2)]) == {4}", "assert math.isclose(add(5, 1), 6)", "import fractions\nassert fractions.Fraction(add(3, 4)) == 7"];
  const leaningHumanEval = { type: "assert", test: `def check(candidate):\n${leaning.join("\n").replace(/add\(/g, "candidate(").split("\n").map((l) => `    ${l}`).join("\n")}\n`, entry_point: "add" };
  const VERIFIER_FORGERIES: Readonly<Record<string, string>> = {
    "shadows the builtins and the module the test uses":
      "import math as _m\nabs = lambda x: 0\nset = lambda *a: {4}\nclass _Lie:\n    def isclose(self, *a, **k): return True\nmath = _Lie()\n",
    "names a module whose import ends the verifier with status 0":
      "import math, types\n_m = types.ModuleType('unittest.__main__')\n_t = types.ModuleType('this')\n",
    "plants modules where a test's import could find them":
      "import math, os\nfor d in ('.', '/tmp', '/work', os.environ.get('HOME', '/tmp')):\n    try:\n        open(os.path.join(d, 'fractions.py'), 'w').write('class Fraction:\\n    def __init__(self, *a): pass\\n    def __eq__(self, o): return True\\n')\n    except OSError:\n        pass\n",
  };
  it("assert tests leaning on builtins and modules: a correct solution passes, a plainly wrong one fails", async () => {
    const t = target();
    const right = "import math\ndef add(a, b):\n    return a + b";
    const r = await post(t, "/v1/rewards", {
      samples: [right, "import math\ndef add(a, b):\n    return a - b"].flatMap((code) => [
        { data_source: "code", solution_str: python(code), ground_truth: { type: "assert", tests: leaning } },
        { data_source: "code", solution_str: python(code), ground_truth: leaningHumanEval },
      ]),
    });
    assert.deepEqual(r.results.map((x: { score: number }) => x.score), [1, 1, 0, 0], JSON.stringify(r.results));
  });
  for (const [kind, prelude] of Object.entries(VERIFIER_FORGERIES)) {
    it(`assert tests: a wrong solution that ${kind} is not accepted`, async () => {
      const t = target();
      const code = `${prelude}def add(a, b):\n    return a - b\n`;
      const r = await post(t, "/v1/rewards", {
        samples: [
          { data_source: "code", solution_str: python(code), ground_truth: { type: "assert", tests: leaning } },
          { data_source: "code", solution_str: python(code), ground_truth: leaningHumanEval },
        ],
      });
      assert.deepEqual(r.results.map((x: { status: string; score: number; cases: string[] }) => [x.status, x.score, x.cases.filter((c) => c === "passed").length]), [["ok", 0, 0], ["ok", 0, 0]], `forged: ${JSON.stringify(r.results)}`);
    });
  }
  it("assert tests: a pass is the test returning; a test that exits the verifier (even with status 0) fails", async () => {
    const t = target();
    const right = python("def add(a, b):\n    return a + b");
    const r = await post(t, "/v1/rewards", {
      samples: ["import sys\nsys.exit(0)", "import os\nos._exit(0)", "raise SystemExit", "assert add(1, 2) == 3"].map((test) => ({ data_source: "code", solution_str: right, ground_truth: { type: "assert", tests: [test] } })),
    });
    assert.deepEqual(r.results.map((x: { cases: string[] }) => x.cases), [["runtime_error"], ["runtime_error"], ["runtime_error"], ["passed"]], JSON.stringify(r.results));
  });

  for (const kind of Object.keys(FORGERIES)) {
    it(`assert tests: a wrong solution that ${kind} is not accepted`, async () => {
      const t = target();
      const code = forgedAdd(kind);
      const r = await post(t, "/v1/rewards", {
        samples: [
          { data_source: "code", solution_str: python(code), ground_truth: { type: "assert", tests } },
          { data_source: "code", solution_str: python(code), ground_truth: humanEval },
        ],
      });
      assert.deepEqual(r.results.map((x: { status: string; score: number }) => [x.status, x.score]), [["ok", 0], ["ok", 0]], `forged: ${JSON.stringify(r.results)}`);
      const batch = await post(t, "/common_evaluate_batch", {
        completion: python(code),
        config: { language: "python", provided_data: { test_cases: { type: "assert", tests } }, extra: { run_all_cases: true } },
      });
      assert.equal(batch.accepted, false);
      assert.ok(batch.tests.every((x: { passed: boolean }) => !x.passed), JSON.stringify(batch.tests));
    });
  }
}
