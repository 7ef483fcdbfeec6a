// Warm isolation (adapters/sandboxes/warm.ts): programs share one long-lived sandbox per slot, so what one
// program leaves behind (files, processes, IPC objects) must be gone before the next program of that slot runs.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { LocalSandbox } from "../adapters/sandboxes/local.js";

describe("local sandbox, warm isolation: nothing of one program reaches the next", () => {
  let sb: LocalSandbox;
  // One slot: every program runs in the same zygote, the case where leftovers could be seen.
  before(async () => { sb = await LocalSandbox.create({ isolation: "warm", concurrency: 1 }); });
  after(() => sb.close());

  const plant = `
import os, subprocess, ctypes
for d in ("/work", "/tmp", "/dev/shm", os.path.expanduser("~")):
    open(os.path.join(d, "left-by-a"), "w").write("x")
os.makedirs("/tmp/locked/deep"); os.chmod("/tmp/locked", 0o500)
subprocess.Popen(["sleep", "300"], start_new_session=True)
libc = ctypes.CDLL(None)
print(libc.shmget(0x5eed, 4096, 0o1666) >= 0)`;
  const look = `
import os
files = {d: sorted(n for n in os.listdir(d) if True) for d in ("/work", "/tmp", "/dev/shm")}
procs = sorted(open("/proc/%s/cmdline" % p).read().split("\\0")[0] for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid())
print(files, [p for p in procs if "sleep" in p], open("/proc/sysvipc/shm").read().count("\\n") - 1)`;

  it("files in the work dir, /tmp, /dev/shm and home, a daemon in its own session and a SysV segment are gone", async () => {
    const a = await sb.run({ language: "python", code: plant, limits: { runTimeoutMs: 10_000 } });
    assert.equal(a.status, "ok", a.stderr);
    assert.equal(a.stdout, "True\n");
    const b = await sb.run({ language: "python", code: look, limits: { runTimeoutMs: 10_000 } });
    assert.equal(b.status, "ok", b.stderr);
    assert.equal(b.stdout, "{'/work': ['p'], '/tmp': [], '/dev/shm': []} [] 0\n");
  });

  it("a program killed at its wall clock leaves the slot usable", async () => {
    const t = await sb.run({ language: "python", code: "import os\nos.fork()\nwhile True: pass", limits: { runTimeoutMs: 500 } });
    assert.equal(t.status, "timeout");
    const b = await sb.run({ language: "python", code: look, limits: { runTimeoutMs: 10_000 } });
    assert.equal(b.stdout, "{'/work': ['p'], '/tmp': [], '/dev/shm': []} [] 0\n");
  });

  // What a program can change about the process it runs in (umask, cwd, limits, signal dispositions, a sleeping
  // thread, the environment) must not carry over: the next program starts from the zygote's state, not the last one's.
  const state = `
import os, resource, signal, threading
print(oct(os.umask(0o022)), os.getcwd(), resource.getrlimit(resource.RLIMIT_NOFILE), signal.getsignal(signal.SIGTERM),
      signal.getsignal(signal.SIGINT), threading.active_count(), sorted(k for k in os.environ if k.startswith("LEFT")))`;
  const tamper = `
import os, resource, signal, threading, time
os.umask(0); os.chdir("/tmp"); resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGINT, signal.SIG_IGN)
os.environ["LEFT_BY_A"] = "1"; os.putenv("LEFT_BY_A_PUT", "1")
threading.Thread(target=time.sleep, args=(300,), daemon=False).start()
print("tampered")`;

  it("umask, cwd, limits, signal dispositions, a sleeping thread and environment changes do not reach the next program", async () => {
    const baseline = await sb.run({ language: "python", code: state, limits: { runTimeoutMs: 10_000 } });
    assert.equal(baseline.status, "ok", baseline.stderr);
    // Its non-daemon thread still sleeps when the program's main code ends: the harness ends the program there.
    const a = await sb.run({ language: "python", code: tamper, limits: { runTimeoutMs: 1500 } });
    assert.equal(a.stdout, "tampered\n", a.stderr);
    const b = await sb.run({ language: "python", code: state, limits: { runTimeoutMs: 10_000 } });
    assert.equal(b.status, "ok", b.stderr);
    assert.equal(b.stdout, baseline.stdout, "the next program sees the zygote's state, not the tampering program's");
    assert.doesNotMatch(b.stdout, /LEFT/);
  });

  it("grades a batch like the per-program path", async () => {
    const tests = [{ kind: "stdio" as const, stdin: "1 2", expectedStdout: "3" }, { kind: "stdio" as const, stdin: "2 2", expectedStdout: "5" }];
    const [r] = await sb.evaluate([{ id: "x", language: "python", code: "a, b = map(int, input().split())\nprint(a + b)", tests, limits: { runTimeoutMs: 5000 } }]);
    assert.deepEqual(r!.cases.map((c) => c.status), ["passed", "wrong_answer"]);
  });
});
