"""rlpipe's sandbox zygote: pid 1 of one bubblewrap sandbox, serving programs one at a time.

    python3 -I zygote.py MAX_PROGRAMS

Per program it forks a manager ahead of need; the manager reads the next job (one JSON line) from the job stream,
runs local_harness over /work (build once, fork per case), and then restores a clean state: programs share the
sandbox's mount, PID and IPC namespaces and its uid, so it
  * kills every process but the zygote (the program's daemons included);
  * empties /work, /tmp, /mnt, /dev/shm and /dev/mqueue (and restores their modes) and removes System V IPC objects;
  * checks the zygote's limits, priority, CPU affinity and memory against what they were when it started (a
    program of the same uid can change another process's limits, priority and affinity with prlimit,
    setpriority and sched_setaffinity).
Anything left over or changed is an anomaly: the manager reports it and the zygote exits, so the server starts a
fresh sandbox; so does a manager that did not finish (the program killed it). Per-program isolation runs one
zygote per program (MAX_PROGRAMS 1), and the sandbox itself is discarded after it.

Nothing a program chose ever enters the zygote's memory — not its job, its output, nor the names of the files it
left — so no later program can find it there (each fork copies the zygote's memory, freed parts included). A program
cannot reach the zygote either: it is not dumpable, installs no signal handler (pid 1 of a namespace gets no signal
from inside it that it does not handle) and holds the job stream on a descriptor no program has.

Events (JSON lines): "ready" once; per program the harness's events ("built" or "compile", then "case" or
"budget" per case), then "done" with the anomalies found (empty: clean) and the clean-up time.
"""
import _signal
import gc
import os
import resource
import select
import sys
import time

sys.path.insert(0, "/opt/rlpipe")
import local_harness as h  # noqa: E402

WRITABLE = ("/work", "/tmp", "/mnt", "/dev/shm", "/dev/mqueue")
RLIMITS = tuple(getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_"))
# A zygote whose memory grew this much is replaced (it parses nothing of a program's, so it should not grow).
MAX_GROWTH_BYTES = 64 << 20
IPC_RMID = 0
# How a manager ends: the program ran and all is clean; the program ran and something is left (reported in its
# "done"); the job stream ended (the server retired the zygote).
CLEAN, DIRTY, NO_JOB = 0, 2, 3


class Lines:
    """Lines of the job stream, read on the raw descriptor (the manager checks the same descriptor for "stop")."""

    def __init__(self, fd):
        self.fd = fd
        self.parts = []

    def next(self):
        while True:
            if self.parts and b"\n" in self.parts[-1]:
                data = b"".join(self.parts)
                line, _, rest = data.partition(b"\n")
                self.parts = [rest] if rest else []
                return line
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.parts.append(chunk)


def read_small(path):
    """A /proc file's bytes, with plain system calls (open() in text mode adds isatty, lseek and fcntl calls)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


def zygote_state():
    """What another process of the same uid can change about the zygote from outside: its limits, priority and CPU
    affinity (read from any process of the sandbox), and its memory."""
    return (
        tuple(resource.prlimit(1, r) for r in RLIMITS),
        os.getpriority(os.PRIO_PROCESS, 1),
        tuple(sorted(os.sched_getaffinity(1))),
    )


def zygote_rss_bytes():
    return int(read_small("/proc/1/statm").split()[1]) * os.sysconf("SC_PAGE_SIZE")


def sysv_ids():
    out = []
    for kind in ("shm", "msg", "sem"):
        try:
            rows = read_small("/proc/sysvipc/" + kind).splitlines()[1:]
        except OSError:
            continue
        out += [(kind, int(r.split()[1])) for r in rows]
    return out


def remove_ipc(ids):
    """System V shared memory, message queues and semaphores outlive their creator: remove them all."""
    ctl = {"shm": h.libc.shmctl, "msg": h.libc.msgctl}
    for kind, ipc_id in ids:
        if kind == "sem":
            h.libc.semctl(ipc_id, 0, IPC_RMID)
        else:
            ctl[kind](ipc_id, IPC_RMID, None)


def writable_modes():
    modes = {}
    for d in WRITABLE:
        try:
            modes[d] = os.lstat(d).st_mode & 0o7777
        except OSError:
            pass
    return modes


def clean_up(baseline):
    """In the manager, after the program: kill, wipe, remove; returns what is still there or changed (empty: clean)."""
    state, rss, modes = baseline
    left = []
    os.chdir("/")
    if not h.kill_strays():
        left.append("processes left that could not be killed")
    for d, mode in modes.items():
        try:
            h.empty_dir(d)  # raises when something cannot be removed
            os.chmod(d, mode)
        except (OSError, RecursionError) as e:
            left.append("%s: %s" % (d, e))
    ids = sysv_ids()
    if ids:
        remove_ipc(ids)
        left += ["sysv %s %d" % k for k in sysv_ids()]
    if zygote_state() != state:
        left.append("limits, priority or CPU affinity of the zygote changed")
    grown = zygote_rss_bytes() - rss
    if grown > MAX_GROWTH_BYTES:
        left.append("zygote memory grew by %d MiB" % (grown >> 20))
    return left


def manager(baseline, clean):
    """In a fresh fork per program: reads the job, runs it, and (when another program may follow) cleans up."""
    lines = Lines(h.JOBS)
    while True:
        line = lines.next()
        if line is None:
            return NO_JOB
        if line.strip() not in (b"", b"stop"):  # a stop that arrived after its program ended
            break
    job = h.loads(line.decode())

    def stop_requested():
        # The server writes "stop" when a case failed and the job stops at the first failure.
        return bool(job.get("stopOnFailure")) and bool(select.select([h.JOBS], [], [], 0)[0])

    h.run_program(job, stop_requested)
    started = time.monotonic()
    anomaly = clean_up(baseline) if clean else []
    h.emit({"event": "done", "anomaly": anomaly, "cleanupMs": round((time.monotonic() - started) * 1000.0, 3)})
    return DIRTY if anomaly else CLEAN


def prelude_index():
    """The function-call prelude's name table (local_harness.prelude_index), built in a child that imports the
    prelude's modules and is thrown away: the zygote keeps the table, not the modules (every fork would copy them)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(r)
            data = h.dumps(h.prelude_index()).encode()
            while data:
                data = data[os.write(w, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    return h.loads(b"".join(chunks).decode()) if chunks else {}


def main():
    h.libc.prctl(h.PR_SET_DUMPABLE, 0, 0, 0, 0)
    # No handler at all (Python installs one for SIGINT): pid 1 of a namespace then gets no signal from inside it.
    _signal.signal(h.SIGINT, h.SIG_DFL)
    h.take_streams()
    max_programs = int(sys.argv[1])
    if max_programs > 1:
        # Worth it for a zygote that serves many programs; a one-program sandbox builds it only when a job needs it.
        h.PRELUDE_INDEX = prelude_index()
    # The compiler builds its AST types on first use (~0.5 ms, 50 pages): once here, not in every manager. (A harness
    # loaded from bytecode has not compiled anything yet.)
    compile("pass", "<warm-up>", "exec")
    gc.collect()
    gc.freeze()  # what a fork shares stays shared: the collector never touches (copies) the zygote's objects
    baseline = (zygote_state(), zygote_rss_bytes(), writable_modes())
    h.emit({"event": "ready"})
    for served in range(max_programs):
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = manager(baseline, clean=served + 1 < max_programs)
            except BaseException:  # noqa: BLE001 - a harness bug: say what it was where the server reads diagnostics
                import traceback
                os.write(h.DIAG, traceback.format_exc().encode())
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        if code == NO_JOB:
            return  # the server closed the job stream: retired
        h.end_strays()  # normally nothing: the manager killed its program's processes
        if code == DIRTY:
            return  # the manager reported what it found
        if code != CLEAN:
            # The program killed its manager (or the harness failed): a fresh sandbox for the next program.
            h.emit({"event": "done", "anomaly": ["manager ended with status %d" % status], "cleanupMs": 0})
            return


if __name__ == "__main__":
    main()
