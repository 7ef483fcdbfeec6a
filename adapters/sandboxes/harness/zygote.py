"""rlpipe's sandbox zygote: pid 1 of one bubblewrap sandbox, serving programs one at a time.

    python3 -I zygote.py MAX_PROGRAMS

It reads one program per line (JSON) on stdin, forks a manager per program, and the manager runs local_harness over
a fresh work dir (build once, fork per case). Per-program isolation runs one zygote per program (MAX_PROGRAMS 1);
warm isolation keeps it for many, so after each program it restores a clean state itself — programs share its
mount, PID and IPC namespaces and its uid:
  * every other process is killed (the zygote is pid 1: orphans are its children);
  * /work, /tmp, /dev/shm and /dev/mqueue are emptied, System V IPC objects removed;
  * its own limits, priority, CPU affinity and memory are checked against what they were when it started (a
    program of the same uid can change another process's limits, priority and affinity with prlimit,
    setpriority and sched_setaffinity).
Anything left over or changed is an anomaly: it reports it and exits, and the server starts a fresh sandbox. A
program cannot reach the zygote itself: it is not dumpable, installs no signal handler (pid 1 of a namespace gets
no signal from inside it that it does not handle) and holds the job stream on a descriptor no program has.

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

WRITABLE = ("/work", "/tmp", "/dev/shm", "/dev/mqueue")
RLIMITS = tuple(getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_"))
# A zygote whose memory grew this much while serving programs (large jobs parsed) is replaced.
MAX_GROWTH_BYTES = 64 << 20
IPC_RMID = 0


class Lines:
    """Lines of the job stream, read on the raw descriptor (a manager checks the same descriptor for "stop")."""

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


def rss_bytes():
    return int(read_small("/proc/self/statm").split()[1]) * os.sysconf("SC_PAGE_SIZE")


def vitals():
    """What another process of the same uid could change about the zygote from outside, and the modes of the
    writable places (a program owns them and could close them to the next program)."""
    return (
        tuple(resource.getrlimit(r) for r in RLIMITS),
        os.getpriority(os.PRIO_PROCESS, 0),
        tuple(sorted(os.sched_getaffinity(0))),
    )


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


def clean_up(start_vitals, start_rss, modes):
    """After a program: kill, wipe, remove; returns what is still there or changed (empty when clean)."""
    left = []
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
    if vitals() != start_vitals:
        left.append("limits, priority or CPU affinity of the zygote changed")
    grown = rss_bytes() - start_rss
    if grown > MAX_GROWTH_BYTES:
        left.append("zygote memory grew by %d MiB" % (grown >> 20))
    return left


def manager(job):
    """In a fresh fork per program: runs the harness over /work (emptied after every program)."""

    def stop_requested():
        # The server writes "stop" when a case failed and the job stops at the first failure.
        return bool(job.get("stopOnFailure")) and bool(select.select([h.JOBS], [], [], 0)[0])

    h.run_program(job, stop_requested)


def main():
    h.libc.prctl(h.PR_SET_DUMPABLE, 0, 0, 0, 0)
    # No handler at all (Python installs one for SIGINT): pid 1 of a namespace then gets no signal from inside it.
    _signal.signal(h.SIGINT, h.SIG_DFL)
    h.take_streams()
    max_programs = int(sys.argv[1])
    lines = Lines(h.JOBS)
    gc.collect()
    gc.freeze()  # what a fork shares stays shared: the collector never touches (copies) the zygote's objects
    start_vitals = vitals()
    start_rss = rss_bytes()
    modes = writable_modes()
    h.emit({"event": "ready"})
    served = 0
    while served < max_programs:
        line = lines.next()
        if line is None:
            return  # the server closed the stream: retired
        if line.strip() in (b"", b"stop"):
            continue  # a stop that arrived after its program ended
        job = h.loads(line.decode())
        served += 1
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                manager(job)
                code = 0
            except BaseException:  # noqa: BLE001 - a harness bug: say what it was where the server reads diagnostics
                import traceback
                os.write(h.DIAG, traceback.format_exc().encode())
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        anomaly = []
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            anomaly.append("manager ended with status %d" % status)
        started = time.monotonic()
        if served < max_programs:
            anomaly += clean_up(start_vitals, start_rss, modes)
        h.emit({"event": "done", "anomaly": anomaly, "cleanupMs": round((time.monotonic() - started) * 1000.0, 3)})
        if anomaly:
            return


if __name__ == "__main__":
    main()
