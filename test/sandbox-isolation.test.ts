// Isolation between programs, on both paths of the local sandbox. Warm isolation (warm.ts) lets programs share
// one long-lived sandbox per zygote, so whatever one program leaves behind or changes — files, processes, IPC
// objects, its zygote's limits, priority or affinity, the interpreter's modules — must be gone before the next
// program of that zygote runs, and nothing of a program may be visible to one running at the same time. The
// per-program path passes the same tests (a fresh sandbox per program). With one slot, every program of the warm
// path runs in the same zygote unless that zygote was replaced; tests that expect a clean-up, not a
// replacement, check that the second program ran in the same sandbox (its PID namespace).
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { after, before, describe, it } from "node:test";
import { ISOLATIONS, LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import type { RunResult } from "../core/grading/types.js";
import { SANDBOX_IDENTITY, SANDBOX_IDENTITY_PY } from "./sandbox-identity.js";
import { pythonScanner } from "./sandbox-security.js";

const SANDBOX_ID = SANDBOX_IDENTITY_PY;
/** The sandbox a run's program ran in (first line of its stdout) and the rest of its output. */
function split(r: RunResult): { sandbox: string; rest: string } {
  const [first, ...rest] = r.stdout.split("\n");
  assert.match(first!, SANDBOX_IDENTITY, `${r.status}: ${r.stdout} ${r.stderr}`);
  return { sandbox: first!, rest: rest.join("\n") };
}

for (const isolation of ISOLATIONS) {
  describe(`local sandbox (${isolation}): nothing of one program reaches the next or a concurrent one`, { timeout: 300_000 }, () => {
    let sb: LocalSandbox;
    // One slot: on the warm path every program runs in the same zygote, the case where leftovers could be seen.
    before(async () => { sb = await LocalSandbox.create({ isolation, concurrency: 1 }); });
    after(() => sb.close());
    const run = async (code: string, runTimeoutMs = 10_000) => sb.run({ language: "python", code: `${SANDBOX_ID}\n${code}`, limits: { runTimeoutMs } });
    /** Warm: the two programs ran in the same sandbox (cleaned, not replaced). Per-program: in different ones. */
    const sameSandboxOnWarm = (a: RunResult, b: RunResult) => {
      if (isolation === "warm") assert.equal(split(b).sandbox, split(a).sandbox, "the second program ran in a replaced zygote, so the clean-up was not what was tested");
      else assert.notEqual(split(b).sandbox, split(a).sandbox);
    };

    it("a TCP socket the host orphaned (a count the kernel keeps for the whole host) does not make a clean program's sandbox dirty", async () => {
      // A host socket closed with unsent data towards a peer that never reads stays an orphan while the kernel probes.
      const accepted: Socket[] = [];
      const server = createServer((c) => { accepted.push(c); c.pause(); }); // never reads
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const client = connect({ port: (server.address() as AddressInfo).port, host: "127.0.0.1" });
      try {
        await new Promise<void>((resolve) => client.once("connect", resolve));
        while (client.write(Buffer.alloc(1 << 16))) { /* fill both sides' buffers */ }
        client.destroy(); // closed with data unsent: an orphan while the peer's window stays shut
        const orphans = () => Number(/TCP: inuse \d+ orphan (\d+)/.exec(readFileSync("/proc/net/sockstat", "utf8"))?.[1] ?? "0");
        for (const until = Date.now() + 60_000; orphans() === 0 && Date.now() < until;) await new Promise((r) => setTimeout(r, 50));
        assert.ok(orphans() > 0, "the host has an orphaned TCP socket");
        const anomalies = () => { const c = sb.stats().counts; assert.ok(c !== undefined, "the sandbox counts anomalies"); return c.anomalies; };
        const before = anomalies();
        const a = await run("print('a')");
        const b = await run("print('b')");
        assert.equal(split(b).rest, "b\n");
        assert.equal(anomalies(), before, "no clean-up found anything");
        sameSandboxOnWarm(a, b);
      } finally {
        client.destroy();
        for (const c of accepted) c.destroy();
        await new Promise((resolve) => server.close(resolve));
      }
    });

    it("files in the work dir, /tmp, /mnt, /dev/shm and home, a read-only tree, POSIX and System V IPC objects are gone", async () => {
      const a = await run(`
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for d in ("/work", os.getcwd(), "/tmp", "/mnt", "/dev/shm", os.path.expanduser("~")):
    open(os.path.join(d, "left-by-a"), "w").write("x")
os.makedirs("/tmp/locked/deep"); open("/tmp/locked/deep/f", "w").write("x"); os.chmod("/tmp/locked/deep", 0o500); os.chmod("/tmp/locked", 0o500)
os.symlink("/usr", "/work/link-to-usr")
os.makedirs("/work/c0/planted")  # the next program's first case dir
print(libc.mq_open(b"/left-by-a", os.O_CREAT | os.O_RDWR, 0o600, None) >= 0,
      libc.shmget(0x5eed, 4096, 0o1666) >= 0, libc.msgget(0x5eee, 0o1666) >= 0, libc.semget(0x5eef, 1, 0o1666) >= 0)`);
      assert.equal(a.status, "ok", a.stderr);
      assert.equal(split(a).rest, "True True True True\n");
      const b = await run(`
import os
print({d: sorted(os.listdir(d)) for d in ("/work", "/tmp", "/mnt", "/dev/shm", "/dev/mqueue")}, os.listdir("."))
print([open("/proc/sysvipc/" + k).read().count("\\n") - 1 for k in ("shm", "msg", "sem")])`);
      assert.equal(b.status, "ok", b.stderr);
      assert.equal(split(b).rest, "{'/work': ['c0'], '/tmp': [], '/mnt': [], '/dev/shm': [], '/dev/mqueue': []} []\n[0, 0, 0]\n");
      sameSandboxOnWarm(a, b);
    });

    it("a background process, a grandchild in a new session and a sleeping thread do not outlive their program", async () => {
      const a = await run(`
import os, subprocess, threading, time
subprocess.Popen(["sleep", "300"])
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(300)
    os._exit(0)
threading.Thread(target=time.sleep, args=(300,), daemon=False).start()
print("planted")`, 1500);
      assert.equal(split(a).rest, "planted\n", a.stderr);
      const b = await run(`
import os
me = os.getpid()
print(sorted(open("/proc/%s/cmdline" % p).read().replace("\\0", " ").strip() for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me, os.getppid())))`);
      assert.equal(b.status, "ok", b.stderr);
      assert.equal(split(b).rest, "[]\n");
      sameSandboxOnWarm(a, b);
    });

    // What a program can change about the process it runs in (umask, cwd, limits, signal dispositions, the
    // environment) must not carry over: the next program starts from the zygote's state, not the last one's.
    const ownState = `
import os, resource, signal, threading
print(oct(os.umask(0o022)), os.getcwd(), resource.getrlimit(resource.RLIMIT_NOFILE), signal.getsignal(signal.SIGTERM),
      signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGPIPE), threading.active_count(), sorted(k for k in os.environ if k.startswith("LEFT")))`;
    it("umask, cwd, its own limits, signal dispositions and environment changes do not reach the next program", async () => {
      const baseline = await run(ownState);
      assert.equal(baseline.status, "ok", baseline.stderr);
      const a = await run(`
import os, resource, signal
os.umask(0); os.chdir("/tmp"); resource.setrlimit(resource.RLIMIT_NOFILE, (16, 16))
signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGINT, signal.SIG_IGN); signal.signal(signal.SIGPIPE, signal.SIG_DFL)
os.environ["LEFT_BY_A"] = "1"; os.putenv("LEFT_BY_A_PUT", "1")
print("tampered")`);
      assert.equal(split(a).rest, "tampered\n", a.stderr);
      const b = await run(ownState);
      assert.equal(b.status, "ok", b.stderr);
      assert.equal(split(b).rest, split(baseline).rest, "the next program sees the zygote's state, not the tampering program's");
      sameSandboxOnWarm(a, b);
    });

    // Limits, priority and CPU affinity of another process of the same uid can be changed from outside it
    // (prlimit, setpriority, sched_setaffinity): a program doing that to its zygote must not change the next program's.
    const limitsState = `
import os, resource
print([resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource)) if n.startswith("RLIMIT_")], os.getpriority(os.PRIO_PROCESS, 0), sorted(os.sched_getaffinity(0)))`;
    it("limits, priority and CPU affinity a program sets on its zygote do not reach the next program", async () => {
      const baseline = await run(limitsState);
      assert.equal(baseline.status, "ok", baseline.stderr);
      const a = await run(`
import os, resource
done = []
for target in (1, os.getppid()):
    for res, val in ((resource.RLIMIT_NOFILE, 8), (resource.RLIMIT_STACK, 1 << 16), (resource.RLIMIT_NPROC, 2), (resource.RLIMIT_AS, 1 << 26)):
        try: resource.prlimit(target, res, (val, val)); done.append("prlimit")
        except OSError: pass
    try: os.setpriority(os.PRIO_PROCESS, target, 19); done.append("nice")
    except OSError: pass
    try: os.sched_setaffinity(target, {min(os.sched_getaffinity(0))}); done.append("affinity")
    except OSError: pass
print(sorted(set(done)))`);
      assert.equal(a.status, "ok", a.stderr);
      assert.match(split(a).rest, /prlimit/, "the attack must reach its zygote for the test to mean anything");
      const b = await run(limitsState);
      assert.equal(b.status, "ok", b.stderr);
      assert.equal(split(b).rest, split(baseline).rest);
    });

    it("signals a program sends to pid 1 do not end the sandbox", async () => {
      const a = await run(`
import os, signal
for s in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGALRM, signal.SIGSTOP):
    os.kill(1, s)
print("sent")`);
      assert.equal(split(a).rest, "sent\n", a.stderr);
      const b = await run("print('next')");
      assert.equal(split(b).rest, "next\n", b.stderr);
      sameSandboxOnWarm(a, b);
    });

    it("the interpreter's modules, site-packages and import path are as they were", async () => {
      const look = `
import builtins, json, os, sys, heapq, collections
print(json.dumps([1]), heapq.__file__, collections.__file__, builtins.print is print, os.getcwd.__module__, len(sys.path))
for name in ("sitecustomize", "usercustomize", "planted_mod"):
    try: __import__(name); print("imported", name, sys.modules[name].__file__)
    except ImportError: pass`;
      const baseline = await run(look);
      assert.equal(baseline.status, "ok", baseline.stderr);
      const a = await run(`
import builtins, glob, json, os, sys
cwd = os.getcwd()
json.dumps = lambda *a, **k: "hijacked"; builtins.print = lambda *a, **k: None; os.getcwd = lambda: "/hijacked"
sys.path.insert(0, "/tmp"); sys.path.insert(0, "/work")
denied = 0
for d in sorted(set(glob.glob("/usr/lib/python3*/") + glob.glob("/usr/lib/python3*/*-packages/") + glob.glob("/usr/lib/python3*/__pycache__/"))):
    try: open(os.path.join(d, "planted_mod.py"), "w").write("x = 1")
    except OSError: denied += 1
for d in ("/tmp", "/work", cwd):
    for name in ("heapq", "collections", "sitecustomize", "usercustomize", "planted_mod"):
        open(os.path.join(d, name + ".py"), "w").write("raise SystemExit('planted module ran')")
    os.makedirs(os.path.join(d, "__pycache__"), exist_ok=True)
sys.stdout.write("denied %d\\n" % denied)`);
      assert.equal(a.status, "ok", a.stderr);
      assert.match(split(a).rest, /^denied [1-9]\d*\n$/);
      const b = await run(look);
      assert.equal(b.status, "ok", b.stderr);
      assert.equal(split(b).rest, split(baseline).rest);
      sameSandboxOnWarm(a, b);
    });

    it("a program's text, input, output and the names of the files it left are not in the next program's memory", async () => {
      // The next program forks from the same zygote and so inherits its memory, freed parts included: none of the
      // previous program's bytes may be there. It knows the secret only by its hash, so its own memory cannot match.
      const secret = `rlpipe-leak-${randomBytes(16).toString("hex")}`;
      const hash = createHash("sha256").update(secret).digest("hex");
      const a = await sb.run({
        // A larger input (~70 KB, below malloc's mmap threshold) stays in freed heap memory where it is not reused at once.
        language: "python", stdin: `${secret}-stdin\n`.repeat(1500), limits: { runTimeoutMs: 10_000 },
        code: `${SANDBOX_ID}\nimport os\ns = "${secret}"\nopen("/tmp/" + s + "-name", "w").close()\nprint(s + "-stdout", input())`,
      });
      assert.equal(a.status, "ok", a.stderr);
      assert.match(split(a).rest, new RegExp(`^${secret}-stdout ${secret}-stdin\n$`));
      const b = await run(`
import ctypes, hashlib, re
# Its own memory, read in place (a process that is not dumpable cannot open /proc/self/mem).
found, scanned = [], 0
for line in open("/proc/self/maps").read().splitlines():
    span, perms = line.split()[:2]
    lo, hi = (int(x, 16) for x in span.split("-"))
    if "r" not in perms or hi - lo > (64 << 20) or "[vvar" in line or line.endswith(("[vsyscall]", "[vdso]")):
        continue
    data = ctypes.string_at(lo, hi - lo)
    scanned += len(data)
    for m in re.finditer(rb"rlpipe-leak-[0-9a-f]{32}", data):
        if hashlib.sha256(m.group()).hexdigest() == "${hash}":
            found.append(line)
print(found, scanned > (4 << 20))`);
      assert.equal(b.status, "ok", b.stderr);
      assert.equal(split(b).rest, "[] True\n", "the previous program's secret is in the next program's memory");
      sameSandboxOnWarm(a, b);
    });

    it("only the work dir, /tmp, /mnt, /dev/shm and /dev/mqueue are writable", async () => {
      const r = await run(`
import os
writable = []
for root, dirs, files in os.walk("/"):
    if root in ("/proc", "/sys"):
        dirs[:] = []
        continue
    try:
        p = os.path.join(root, ".probe"); open(p, "w").close(); os.unlink(p); writable.append(root)
    except OSError:
        pass
print(sorted(writable))`, 120_000); // it walks the whole tree: a busy machine may take a while (never a time test)
      assert.equal(r.status, "ok", r.stderr);
      assert.equal(split(r).rest, "['/dev/mqueue', '/dev/shm', '/mnt', '/tmp', '/work', '/work/c0']\n");
    });
  });

  describe(`local sandbox (${isolation}): a concurrent program sees nothing of another`, { timeout: 300_000 }, () => {
    let sb: LocalSandbox;
    before(async () => { sb = await LocalSandbox.create({ isolation, concurrency: 2 }); });
    after(() => sb.close());

    it("files and memory of a program running at the same time are out of reach", async () => {
      const secret = `concurrent-canary-${randomBytes(12).toString("hex")}`;
      const hex = Buffer.from(secret).toString("hex");
      const holder = `
import ctypes, os, time
s = bytes.fromhex("${hex}").decode()
held = [s * 4]
for d in ("/work", os.getcwd(), "/tmp", "/dev/shm"):
    open(os.path.join(d, "secret"), "w").write(s)
ctypes.CDLL(None).mq_open(b"/secret", os.O_CREAT | os.O_RDWR, 0o600, None)
time.sleep(3)
print(len(held[0]))`;
      const order: string[] = [];
      const holding = sb.run({ language: "python", code: holder, limits: { runTimeoutMs: 20_000 } }).then((r) => { order.push("holder"); return r; });
      const scanning = sb.run({
        language: "python", limits: { runTimeoutMs: 20_000, memoryMb: 1024 },
        code: `${pythonScanner([secret])}\nimport time, os\ntime.sleep(0.5)\nr = rlpipe_scan()\nr["mqueue"] = os.listdir("/dev/mqueue")\nprint(json.dumps(r))`,
      }).then((r) => { order.push("scanner"); return r; });
      const [h, s] = await Promise.all([holding, scanning]);
      assert.equal(h.status, "ok", h.stderr);
      assert.equal(s.status, "ok", s.stderr);
      assert.deepEqual(order, ["scanner", "holder"], "the scan ran while the other program held its secret");
      const report = JSON.parse(s.stdout) as { hits: unknown[]; foreignFds: unknown[]; foreignMem: unknown[]; mqueue: string[]; count: { files: number } };
      assert.deepEqual(report.hits, [], "the scanner found the other program's secret");
      assert.deepEqual(report.foreignFds, []);
      assert.deepEqual(report.foreignMem, []);
      assert.deepEqual(report.mqueue, []);
      assert.ok(report.count.files > 0, "the scan read files");
    });
  });
}
