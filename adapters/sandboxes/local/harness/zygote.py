"""rlpipe's sandbox zygote: pid 1 of one bubblewrap sandbox, serving programs one at a time.

    python3 -I zygote.py MAX_PROGRAMS TMPFS_BYTES own|shared [PROGRAM_CGROUP_FD]

Per program it forks a manager ahead of need; the manager gives the program namespaces and scratch file systems of
its own (reset.enter_fresh_namespaces: user, mount, PID, IPC, network, UTS; fresh tmpfs and /proc) and forks the
program's init, which reads the next job (one JSON line) from the job stream and runs local_harness over /work (build
once, fork per case); when it exits, everything the program made goes with its namespaces. Where the kernel refuses
those namespaces the manager runs the program in the sandbox's own and then restores a clean state (reset.clean_up:
whatever one leaves or changes is undone or found). Each manager runs in a session of its own, so a program's
autogroup is its own too.
Anything left over or changed is an anomaly: the manager reports it and the zygote exits, so the server starts a
fresh sandbox; so does a manager that did not finish (the program killed it). Per-program isolation runs one
zygote per program (MAX_PROGRAMS 1), and the sandbox itself is discarded after it.

Nothing a program chose ever enters the zygote's memory — not its job, its output, nor the names of the files it
left — so no later program can find it there (each fork copies the zygote's memory, freed parts included). A program
cannot reach the zygote either: it is not dumpable, installs no signal handler (pid 1 of a namespace gets no signal
from inside it that it does not handle) and holds the job stream on a descriptor no program has.

Events (JSON lines): "ready" once; per program the harness's events ("built" or "compile", "tests" when it needs
the test codes of split assert cases, then "case" or "budget" per case), then "done" with the anomalies found (empty: clean) and the clean-up time.
"""
import _signal
import gc
import os
import select
import sys
import time

sys.path.insert(0, "/opt/rlpipe")
import local_harness as h  # noqa: E402
import reset  # noqa: E402

# How a manager ends: the program ran and all is clean; the program ran and something is left (reported in its
# "done"); the job stream ended (the server retired the zygote).
CLEAN, DIRTY, NO_JOB = 0, 2, 3
# Where the process that ran a program tells the zygote how it ended (after the job, event and diagnostics streams
# and the program cgroup's descriptor: local_harness.JOBS…PROGRAM_CGROUP).
OUTCOME_FD = 104


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


def manager(baseline, clean, tmpfs_bytes, isolated, outcome_fd):
    """In a fresh fork per program: namespaces of the program's own (its init reads the job and runs it), or, where
    the kernel refuses them, the job run here and cleaned up after (when another program may follow). The process that
    ran the job writes its code on `outcome_fd` before it exits (see main)."""
    # A session of its own, and with it an autogroup of its own: a program writing /proc/self/autogroup changes only
    # its own share of the CPU, not that of every later program of this zygote (they would share the zygote's).
    os.setsid()
    if isolated:
        reset.enter_fresh_namespaces(tmpfs_bytes)
        pid = os.fork()
        if pid != 0:
            # The program's init tells the zygote its code itself; this process only keeps the namespaces company until
            # it exits (the kernel takes them down with the last of the two, which the zygote does not wait for).
            os.close(outcome_fd)
            _, status = os.waitpid(pid, 0)
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1
        reset.become_program_init()
        network = reset.net_counters()
    reset.confine()
    lines = Lines(h.JOBS)
    while True:
        line = lines.next()
        if line is None:
            os.write(outcome_fd, bytes([NO_JOB]))
            return NO_JOB
        if line.strip() not in (b"", b"stop"):  # a stop that arrived after its program ended
            break
    job = h.loads(line.decode())

    def stop_requested():
        # The server writes "stop" when a case failed and the job stops at the first failure.
        return bool(job.get("stopOnFailure")) and bool(select.select([h.JOBS], [], [], 0)[0])

    h.run_program(job, stop_requested, lines.next)
    started = time.monotonic()
    if isolated:
        # Nothing of the program outlives its init but what it did to the sandbox's network namespace.
        anomaly = []
        if clean:
            h.end_strays()
            if reset.net_counters() != network:
                anomaly.append("the program used the network (the next program gets a fresh sandbox)")
    else:
        anomaly = reset.clean_up(baseline) if clean else []
    h.emit({"event": "done", "anomaly": anomaly, "cleanupMs": round((time.monotonic() - started) * 1000.0, 3)})
    code = DIRTY if anomaly else CLEAN
    os.write(outcome_fd, bytes([code]))
    return code


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


def isolation_works(tmpfs_bytes):
    """Whether the kernel gives a manager namespaces of the program's own here, tried once in a child thrown away:
    None, or why not."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        why = "the probe ended early"
        try:
            reset.enter_fresh_namespaces(tmpfs_bytes)  # in the zygote's user namespace, as a manager
            inner = os.fork()
            if inner == 0:
                ok = 1
                try:
                    reset.become_program_init()
                    reset.confine()
                    ok = 0
                except BaseException as e:  # noqa: BLE001 - told to the server in the ready event
                    os.write(w, str(e).encode()[:500])
                finally:
                    os._exit(ok)
            _, status = os.waitpid(inner, 0)
            why = "" if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 else "the probe's program init failed (status %d)" % status
        except BaseException as e:  # noqa: BLE001 - told to the server in the ready event
            why = str(e)
        finally:
            if why:
                os.write(w, why.encode()[:500])
            os._exit(0)
    os.close(w)
    chunks = []
    while True:
        chunk = os.read(r, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    os.waitpid(pid, 0)
    why = b"".join(chunks).decode("utf-8", "replace")
    return why or None


def main():
    h.libc.prctl(h.PR_SET_DUMPABLE, 0, 0, 0, 0)
    # No handler at all (Python installs one for SIGINT): pid 1 of a namespace then gets no signal from inside it.
    _signal.signal(h.SIGINT, h.SIG_DFL)
    h.take_streams(int(sys.argv[4]) if len(sys.argv) > 4 else None)
    max_programs = int(sys.argv[1])
    tmpfs_bytes = int(sys.argv[2])
    refused = "the server asked for shared namespaces"
    if sys.argv[3] == "own":
        try:
            reset.enter_own_user_namespace()
            refused = isolation_works(tmpfs_bytes)
        except reset.IsolationUnavailable as e:
            refused = "no user namespace: %s" % e
    isolated = refused is None
    if max_programs > 1:
        # Worth it for a zygote that serves many programs; a one-program sandbox builds it only when a job needs it.
        h.PRELUDE_INDEX = prelude_index()
        # The interpreter's code as anonymous memory (caseloop.c): every case process inherits it instead of faulting
        # it in (a one-program sandbox forks too few processes to earn back the copy).
        if h.HUGE_TEXT is not None:
            h.HUGE_TEXT()
    # The compiler builds its AST types on first use (~0.5 ms, 50 pages): once here, not in every manager. (A harness
    # loaded from bytecode has not compiled anything yet.)
    compile("pass", "<warm-up>", "exec")
    h.warm_up()
    gc.collect()
    gc.freeze()  # what a fork shares stays shared: the collector never touches (copies) the zygote's objects
    baseline = (reset.zygote_state(), reset.zygote_rss_bytes(), reset.writable_state(), {d: reset.inode_flags(d) for d in reset.WRITABLE})
    h.emit({"event": "ready", "namespaces": isolated, **({} if isolated else {"namespacesRefused": refused})})
    exiting = []  # managers whose program is over, still exiting (their namespaces' teardown takes a while)
    for served in range(max_programs):
        outcome_r, w = os.pipe()
        # On a descriptor of its own, like the job and event streams: every process of a program closes those (nor can
        # a pipe end land on 0-3, which the manager's case streams take).
        outcome_w = os.dup2(w, OUTCOME_FD)
        os.close(w)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.close(outcome_r)
                code = manager(baseline, clean=served + 1 < max_programs, tmpfs_bytes=tmpfs_bytes, isolated=isolated, outcome_fd=outcome_w)
            except BaseException:  # noqa: BLE001 - a harness bug: say what it was where the server reads diagnostics
                import traceback
                os.write(h.DIAG, traceback.format_exc().encode())
            finally:
                os._exit(code)
        os.close(outcome_w)
        # The program's code, as soon as it is known: the next manager is forked without waiting for this one to exit.
        told = os.read(outcome_r, 1)
        os.close(outcome_r)
        while exiting and os.waitpid(exiting[0], os.WNOHANG)[0] != 0:
            exiting.pop(0)
        if told and told[0] == CLEAN:
            if isolated:
                exiting.append(pid)
                if reset.zygote_state() != baseline[0]:
                    return  # out of a program's reach (another PID namespace); should it ever change, a fresh sandbox
                continue
            _, status = os.waitpid(pid, 0)
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        elif told:
            code = told[0]
            os.waitpid(pid, 0)
        else:
            _, status = os.waitpid(pid, 0)
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        if code == NO_JOB:
            return  # the server closed the job stream: retired
        h.end_strays()  # normally nothing: the manager killed its program's processes
        if code == DIRTY:
            return  # the manager reported what it found
        if code != CLEAN:
            # The program killed its manager (or the harness failed): a fresh sandbox for the next program.
            h.emit({"event": "done", "anomaly": ["manager ended with status %s" % (status if not told else code)], "cleanupMs": 0})
            return


if __name__ == "__main__":
    main()
