"""rlpipe's warm zygote: a long-lived local_harness inside one bubblewrap sandbox (one per slot).

It reads one program per line (JSON) on stdin and forks a manager per program; the manager runs the usual
harness logic (compile once, fork per test case with rlimits, wall clock, capped output) in a fresh work dir.
After the manager ends, the zygote restores a clean state itself, because programs share its mount, PID and
IPC namespaces: every other process is killed, /work, /tmp and /dev/shm are emptied, System V IPC objects are
removed; then it checks that nothing is left. Anything unexpected (manager killed, leftovers it cannot remove)
is an anomaly: it reports it and exits, and the server starts a fresh sandbox. It also exits after N programs.
"""
import ctypes
import json
import os
import shutil
import signal
import sys

sys.path.insert(0, "/opt/rlpipe")
import local_harness as h  # noqa: E402

WRITABLE = ("/work", "/tmp", "/dev/shm")
IPC_RMID = 0
libc = ctypes.CDLL(None, use_errno=True)


def wipe(path):
    try:
        names = os.listdir(path)
    except OSError:
        return
    for name in names:
        p = os.path.join(path, name)
        try:
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass


def remove_ipc():
    """System V shared memory, message queues and semaphores outlive their creator: remove them all."""
    for kind, ctl in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", None)):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            ipc_id = int(row.split()[1])
            if kind == "sem":
                libc.semctl(ipc_id, 0, IPC_RMID)
            else:
                ctl(ipc_id, IPC_RMID, None)


def leftovers():
    """What a program left that the clean-up could not remove (empty when the zygote is clean)."""
    left = []
    me = os.getpid()
    left += ["pid %s" % n for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, me)]
    for d in WRITABLE:
        try:
            left += [os.path.join(d, n) for n in os.listdir(d)]
        except OSError:
            pass
    for kind in ("shm", "msg", "sem"):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                left += ["sysv %s %s" % (kind, r.split()[1]) for r in f.read().splitlines()[1:]]
        except OSError:
            pass
    return left


def run_program(job):
    """In the manager (a fresh fork per program): the per-program harness over a fresh work dir."""
    wd = "/work/p"
    os.mkdir(wd, 0o700)
    h.WORK = wd
    compiled, event = h.build(job)
    if event is not None:
        h.emit(event)
    if compiled is None:
        return
    first = job.get("startIndex", 0)
    for i, case in enumerate(job["cases"]):
        if i < first:
            continue
        h.emit({"event": "start", "index": i})
        h.run_case(i, job, compiled, case)


def main():
    libc.prctl(h.PR_SET_DUMPABLE, 0, 0, 0, 0)
    h.close_inherited_fds()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    max_programs = int(sys.argv[1])
    for _ in range(max_programs):
        line = sys.stdin.buffer.readline()  # one program per line
        if not line:
            return
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                # The job stream is the zygote's: no program may read the next job from it.
                null = os.open("/dev/null", os.O_RDONLY)
                os.dup2(null, 0)
                os.close(null)
                run_program(job)
                code = 0
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        anomaly = []
        if not (os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0):
            anomaly.append("manager ended with status %d" % status)
        h.kill_strays()
        for d in WRITABLE:
            wipe(d)
        remove_ipc()
        anomaly += leftovers()
        h.emit({"event": "done", "anomaly": anomaly})
        if anomaly:
            return


if __name__ == "__main__":
    main()
