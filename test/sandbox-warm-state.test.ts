// Nothing carried between programs on the warm path (issue 32, item 5): a program plants every kind of state it can set
// — inode flags, modes and extended attributes on the scratch roots, files, the next PID, System V IPC ids, sockets
// (listening, in TIME_WAIT, an abstract name), POSIX message queues, tmpfs inode numbers — and the next program in the
// same warm sandbox reads them all. What it reads must be exactly what it reads after a program that did nothing.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";

/** What a program can observe of what came before it, as one JSON line. */
const READER = String.raw`
import ctypes, fcntl, json, os, socket, struct
libc = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT, IPC_RMID = 0, 0o1000, 0
obs = {"pid": os.getpid(), "ppid": os.getppid()}
child = os.fork()
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
obs["child_pid"] = child
obs["ns_last_pid"] = open("/proc/sys/kernel/ns_last_pid").read().strip()
obs["processes"] = sorted(p for p in os.listdir("/proc") if p.isdigit())
for d in ("/tmp", "/work", "/mnt", "/dev/shm", "/dev/mqueue"):
    st = os.stat(d)
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        flags = struct.unpack("l", fcntl.ioctl(fd, 0x80086601, b"\0" * 8))[0]
    except OSError as e:
        flags = "ioctl: %d" % e.errno
    os.close(fd)
    try:
        xattrs = sorted(os.listxattr(d))
    except OSError as e:
        xattrs = "listxattr: %d" % e.errno
    entries = sorted(os.listdir(d)) if d != "/work" else sorted(x for x in os.listdir(d) if not x.startswith("c"))
    obs[d] = {"mode": oct(st.st_mode), "uid": st.st_uid, "flags": flags, "xattrs": xattrs, "entries": entries}
    if d != "/dev/mqueue":  # mqueue's inode numbers come from the kernel's one counter for the whole machine (see the docs)
        obs[d]["root_ino"] = st.st_ino
    if d != "/dev/mqueue":
        path = os.path.join(d, "probe")
        open(path, "w").close()
        obs[d]["new_file_ino"] = os.stat(path).st_ino
        os.unlink(path)
shm = libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600); libc.shmctl(shm, IPC_RMID, None)
msg = libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600); libc.msgctl(msg, IPC_RMID, None)
sem = libc.semget(IPC_PRIVATE, 1, IPC_CREAT | 0o600); libc.semctl(sem, 0, IPC_RMID)
obs["sysv_ids"] = [shm, msg, sem]
obs["sysv_left"] = [open("/proc/sysvipc/" + k).read().count("\n") - 1 for k in ("shm", "msg", "sem")]
def counts(table):
    out = {}
    for line in open("/proc/net/" + table):
        proto, _, fields = line.partition(":")
        words = fields.split()
        kv = dict(zip(words[::2], words[1::2]))
        out[proto] = {k: kv[k] for k in ("inuse", "tw") if k in kv}
    return out
obs["sockstat"] = counts("sockstat")
obs["sockstat6"] = counts("sockstat6")
obs["unix_sockets"] = open("/proc/net/unix").read().count("\n") - 1
s = socket.socket(socket.AF_UNIX)
try:
    s.bind("\0rlpipe-planted")
    obs["abstract_name_free"] = True
except OSError:
    obs["abstract_name_free"] = False
s.close()
t = socket.socket(); t.bind(("127.0.0.1", 0)); obs["ephemeral_port_ok"] = True; t.close()
obs["hostname"] = socket.gethostname()
print(json.dumps(obs, sort_keys=True))
`;

/** Every mark a program can leave, as far as it is allowed to (`network`: TCP connections too). */
const planter = (network: boolean) => `NETWORK = ${network ? "True" : "False"}
${PLANTER}`;
const PLANTER = String.raw`
import ctypes, fcntl, os, socket, struct, time
libc = ctypes.CDLL(None, use_errno=True)
IPC_PRIVATE, IPC_CREAT = 0, 0o1000
for d in ("/tmp", "/work", "/mnt", "/dev/shm", "/dev/mqueue"):
    for name in ("user.rlpipe", "user.bits"):
        try: os.setxattr(d, name, b"planted")
        except OSError: pass
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
        fcntl.ioctl(fd, 0x40086602, struct.pack("l", 0x40 | 0x80))  # FS_IOC_SETFLAGS: nodump, noatime
        os.close(fd)
    except OSError: pass
    for i in range(300):
        try: open(os.path.join(d, "planted-%d" % i), "w").close()
        except OSError: break
    try: os.chmod(d, 0o711)
    except OSError: pass
    try: os.utime(d, (12345, 67890))
    except OSError: pass
for i in range(200):  # the next PID
    pid = os.fork()
    if pid == 0: os._exit(0)
    os.waitpid(pid, 0)
for i in range(50):  # System V ids (some left, some removed)
    shm = libc.shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0o600)
    msg = libc.msgget(IPC_PRIVATE, IPC_CREAT | 0o600)
    if i % 2: libc.shmctl(shm, 0, None); libc.msgctl(msg, 0, None)
if NETWORK:
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
    for i in range(20):  # connections left in TIME_WAIT
        c = socket.create_connection(srv.getsockname()); a, _ = srv.accept(); c.close(); a.close()
keep = socket.socket(socket.AF_UNIX); keep.bind("\0rlpipe-planted"); keep.listen()
daemon = os.fork()
if daemon == 0:  # a process left behind, holding the abstract name
    os.setsid()
    time.sleep(3600)
    os._exit(0)
try: libc.sethostname(b"planted", 7)
except Exception: pass
print("planted")
`;

describe("warm sandboxes carry nothing from one program to the next (issue 32, item 5)", () => {
  let sb: LocalSandbox;
  // One slot: every program runs in the zygote the previous one ran in, unless it was replaced.
  before(async () => { sb = await LocalSandbox.create({ concurrency: 1 }); });
  after(async () => { await sb?.close(); });

  const run = async (code: string) => {
    const r = await sb.run({ language: "python", code, limits: { runTimeoutMs: 30_000 } });
    assert.equal(r.status, "ok", r.stderr);
    return r.stdout.trim();
  };

  it("the program after one that planted every kind of state sees what it sees after one that did nothing", async () => {
    await run("print(1)");
    const quiet = JSON.parse(await run(READER)) as Record<string, unknown>;
    assert.equal(await run("print(1)"), "1");
    const afterQuiet = JSON.parse(await run(READER)) as Record<string, unknown>;
    assert.deepEqual(afterQuiet, quiet, "the reader sees the same after a quiet program, twice");
    assert.equal(await run(planter(false)), "planted");
    const afterPlanter = JSON.parse(await run(READER)) as Record<string, unknown>;
    assert.deepEqual(afterPlanter, quiet, "a planted mark reached the next program");
    const stats = sb.stats();
    assert.equal(stats.counts?.["zygotesRetired"] ?? 0, 0, `the sandbox was not replaced to get there: ${JSON.stringify(stats.counts)}`);
  });

  it("a program that used the network (counters of the namespace the sandbox's programs share) has its sandbox replaced", async () => {
    const quiet = JSON.parse(await run(READER)) as Record<string, unknown>;
    const anomalies = sb.stats().counts?.["anomalies"] ?? 0;
    assert.equal(await run(planter(true)), "planted");
    const after = JSON.parse(await run(READER)) as Record<string, unknown>;
    assert.equal(sb.stats().counts?.["anomalies"], anomalies + 1, "the manager found the network used");
    // A fresh sandbox: the same as after a quiet program but for the sandbox's own uid (each has its own).
    const withoutUid = (o: Record<string, unknown>) => JSON.parse(JSON.stringify(o, (k, v) => (k === "uid" ? undefined : v)));
    assert.deepEqual(withoutUid(after), withoutUid(quiet));
  });

  it("each program starts in namespaces of its own: its init is the harness, PIDs from 1, the sandbox's processes out of sight", async () => {
    const seen = JSON.parse(await run(READER)) as { pid: number; ppid: number; processes: string[] };
    assert.equal(seen.ppid, 1, "its parent, the manager, is pid 1 of the program's PID namespace");
    assert.ok(seen.pid < 10, `a small PID in a fresh namespace: ${seen.pid}`);
    assert.ok(seen.processes.every((p) => Number(p) <= seen.pid + 1), `only the program's own processes: ${seen.processes.join(", ")}`);
    // And it cannot make namespaces of its own (the program's seccomp filter, installed by its manager).
    const unshare = await run("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\nprint(libc.unshare(0x10000000), ctypes.get_errno())");
    assert.equal(unshare, "-1 1", "unshare(CLONE_NEWUSER) refused with EPERM");
    const caps = await run("print(open('/proc/self/status').read().split('CapEff:')[1].split()[0], open('/proc/self/status').read().split('CapBnd:')[1].split()[0])");
    assert.equal(caps, "0000000000000000 0000000000000000", "no capability, none to regain");
  });
});
