"""rlpipe's in-sandbox harness: runs one program's test cases. Used by zygote.py, inside bubblewrap (no network,
unprivileged uid, read-only /usr, empty environment).

It builds a program once (Python: compiled once; C++: g++ once) and runs every test case in a fresh forked
process: rlimits (memory, processes, file size, CPU, descriptors), a wall clock, a fresh working directory, and
stdin/stdout/stderr on memory files capped by RLIMIT_FSIZE; after each case every other process is killed. Events
go out as JSON lines on a descriptor of their own; Node grades them. Expected outputs never enter the sandbox.

Cost matters here (every GRPO step waits for thousands of cases), and on this kind of machine a fork's cost is
mostly page faults: every page either side writes after it is copied. So a case process does almost nothing
itself. The manager (the process running a program's cases) prepares what a case process inherits: stdin, stdout,
stderr and the returned value are memfds on 0-3, reused from case to case; it sits in the case's directory; its
priority, process, descriptor and core-file limits, signal dispositions and Python's text streams are already the
program's. The case process only closes the other descriptors (one close_range) and sets the limits that count per
process (memory, file size, CPU). The wall clock is a pidfd the manager polls (no signal handler anywhere), and
leftover processes are found by one waitpid (the manager is a reaper: every live descendant is its child).

Hardening against the program (same uid): the harness is not dumpable (no ptrace, no /proc/<pid>/mem, environ,
fd or pidfd_getfd of its streams); descriptors inherited from whoever started the server are closed first; every
other process is killed after each case (daemons escape process groups).
"""
# Only C modules besides os, ctypes and asserts.py (which imports only C modules): every module the zygote holds makes
# each fork dearer (the json package brings re, signal brings enum; signal.signal's enum conversions alone cost a forked
# child ~0.3 ms).
import _json
import _signal
import ctypes
import gc
import os
import resource
import select
import sys
import time

import asserts

WORK = "/work"
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
# The job stream, the event stream and diagnostics (the sandbox's stderr) live on these; 0-3 are a case's.
JOBS, EVENTS, DIAG = 100, 101, 102
# The program memory cgroup's cgroup.procs, open for writing, when the server bounds programs by a cgroup.
PROGRAM_CGROUP = 103
HAS_PROGRAM_CGROUP = [False]
# Every descriptor the harness holds is below this once inherited ones are closed.
FD_CEILING = 1024
libc = ctypes.CDLL(None, use_errno=True)


class Handback(ctypes.Structure):
    """caseloop.c's struct rl_handback: the case it hands back to Python, and whether to go on after it."""
    _fields_ = (("index", ctypes.c_int), ("go_on", ctypes.c_int))


# caseloop.c's return codes (a value >= 0 is a case's index, returned in its case process).
RL_DONE, RL_RUN_IN_PYTHON, RL_REMOVE_DIR, RL_NO_MEMORY = -1, -2, -3, -4


def load_case_loop(path="/opt/rlpipe/caseloop.so"):
    """caseloop.c, loaded once in the zygote: (the manager's per-case loop, the interpreter's code made anonymous), or
    (None, None) when the server built none (no C compiler, a Debian root's interpreter, or turned off): the Python
    loop (Runner.run) then runs every case."""
    try:
        if os.stat(path).st_size == 0:
            return None, None
        lib = ctypes.PyDLL(path)  # PyDLL: the GIL stays held across the fork, as os.fork holds it
        run_cases, huge_text = lib.rl_run_cases, lib.rl_huge_text
    except (OSError, AttributeError):
        return None, None
    run_cases.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_long),
                          ctypes.c_double, ctypes.c_double, ctypes.c_long, ctypes.c_int, ctypes.c_int, ctypes.POINTER(Handback))
    run_cases.restype = ctypes.c_int
    huge_text.argtypes = ()
    huge_text.restype = ctypes.c_long
    return run_cases, huge_text


CASE_LOOP, HUGE_TEXT = load_case_loop()
# The zygote's loader bound every symbol at start (LD_BIND_NOW, set by bwrap.ts), so a case process never writes (and
# copies) the symbol tables' pages; an exec'd compiler or program binds lazily, as it would anywhere else.
os.environ.pop("LD_BIND_NOW", None)
SIGKILL, SIGPIPE, SIGINT, SIGXFSZ, SIGXCPU = 9, 13, 2, 25, 24
SIG_DFL, SIG_IGN = _signal.SIG_DFL, _signal.SIG_IGN

SOURCE = [""]  # the program's text (for tracebacks)
# What the manager could not clean up between cases (a clean-up error is the sandbox's problem, not the program's
# verdict): reported with the program's "done", after which the zygote is replaced.
PROBLEMS = []
STD = None  # (stdin, stdout, stderr) text streams on fds 0/1/2 for Python programs, built once, never used before a fork


# The json package's C scanner, as asserts.py builds it (that module imports nothing of this one).
_scan = asserts.JSON_SCANNER


def loads(text):
    """json.loads for one JSON document, as the json package does it in C."""
    obj, end = _scan(text, 0)
    if text[end:].strip():
        raise ValueError("extra data after JSON at %d" % end)
    return obj


def _no_default(o):
    raise TypeError("%s is not JSON serializable" % type(o).__name__)


def encoder(default):
    """json.dumps(ensure_ascii=False) as the json package does it in C (compact separators, NaN allowed as json.dumps
    does). Characters beyond ASCII stay UTF-8: an event is then as large as the reply that carries its output (as
    \\uXXXX escapes, Chinese text took twice the bytes the output cap counted)."""
    enc = _json.make_encoder(None, default, _json.encode_basestring, None, ":", ",", False, False, True)
    return lambda obj: "".join(enc(obj, 0))


dumps = encoder(_no_default)


def emit(obj):
    data = (dumps(obj) + "\n").encode("utf-8", "replace")
    while data:
        data = data[os.write(EVENTS, data):]


def close_inherited_fds(spare=-1):
    """Close every descriptor but 0/1/2 (and `spare`): whatever the server's parent left open (a credentials file, a
    pipe) must not reach a program. Listed from /proc, so descriptors above any fixed bound are closed too."""
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2 and int(name) != spare:
            try:
                os.close(int(name))
            except OSError:
                pass  # the listing's own descriptor, already closed


def take_streams(program_cgroup_fd=None):
    """Moves the job stream (fd 0), the event stream (fd 1) and stderr to JOBS, EVENTS and DIAG, so that 0-3 can be a
    case's, and the program memory cgroup's descriptor (when the server gave one) to PROGRAM_CGROUP; builds the text
    streams Python programs get."""
    global STD
    if program_cgroup_fd is not None:
        os.dup2(program_cgroup_fd, PROGRAM_CGROUP, inheritable=False)
        HAS_PROGRAM_CGROUP[0] = True
    close_inherited_fds(PROGRAM_CGROUP if HAS_PROGRAM_CGROUP[0] else -1)
    os.dup2(0, JOBS, inheritable=False)  # an exec'd compiler or program never gets these
    os.dup2(1, EVENTS, inheritable=False)
    os.dup2(2, DIAG, inheritable=False)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    # What a fresh interpreter would have with LANG=C.UTF-8 and no terminal; bound to fd numbers, so they read and
    # write whatever a case has there. Never used outside a case process, so each one starts with empty buffers.
    STD = (
        open(0, "r", encoding="utf-8", closefd=False),
        open(1, "w", encoding="utf-8", closefd=False),
        open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1),
    )


def wait_child(pid, timeout_s):
    """waitpid with a wall-clock limit (a pidfd polled: no signal handler); on timeout the process is killed, and the
    caller kills what it left (end_strays). Returns (status, timed_out)."""
    pidfd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        timed_out = not poller.poll(max(1, int(timeout_s * 1000)))
        if timed_out:
            os.kill(pid, SIGKILL)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(pidfd)
    return status, timed_out


def kill_strays(spare=()):
    """Kill and reap every other process in this PID namespace but pid 1 (the zygote) and `spare` (the program host of
    split assert cases). Repeats until none is left (a process forked between listing and killing is caught by the
    next pass). False if some survived 5 s of that."""
    keep = (1, os.getpid()) + tuple(spare)
    deadline = time.monotonic() + 5.0
    while True:
        others = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in keep]
        for pid in others:
            try:
                os.kill(pid, SIGKILL)
            except OSError:
                pass
        reap()
        if not others:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)


def reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                return
        except ChildProcessError:
            return


def has_children():
    """Whether this process has a child, live or not yet reaped (one waitpid, which may reap one)."""
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


def end_strays(spare=None):
    """After a case: the caller is a reaper (pid 1 or a subreaper), so every descendant still alive is its child. No
    child at all: nothing to do (one waitpid); otherwise kill everything but the zygote (and `spare`, the program
    host of split assert cases)."""
    if has_children():
        kill_strays(() if spare is None else (spare,))


def remove_tree(path):
    """Removes path and everything under it without following symlinks (descriptor-relative); directories a program
    made read-only are opened up first (it has the same uid). Raises OSError when something cannot be removed."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if st.st_mode & 0o170000 != 0o040000:  # not a directory
        os.unlink(path)
        return
    fd = open_dir(path)
    try:
        _empty(fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def open_dir(path, dir_fd=None):
    """A directory's descriptor without following links; a directory its program made unreadable (mode 000) is opened
    up first: it has the same uid, and every process of the program is dead by now, so it cannot turn into a link."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        return os.open(path, flags, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(path, 0o700, dir_fd=dir_fd)
        return os.open(path, flags, dir_fd=dir_fd)


def empty_dir(path):
    """Removes everything inside path (path stays)."""
    fd = open_dir(path)
    try:
        _empty(fd)
    finally:
        os.close(fd)


def _empty(fd):
    try:
        os.fchmod(fd, 0o700)
    except OSError:
        pass
    for entry in list(os.scandir(fd)):
        if entry.is_dir(follow_symlinks=False):
            sub = open_dir(entry.name, fd)
            try:
                _empty(sub)
            finally:
                os.close(sub)
            os.rmdir(entry.name, dir_fd=fd)
        else:
            os.unlink(entry.name, dir_fd=fd)


class CaseFiles:
    """A case's stdin, stdout, stderr and returned value: memfds the manager holds on fds 0-3 for the whole program,
    so a case process inherits them in place. Case processes share their offsets: results are read with pread, and
    everything is emptied and rewound before the next case."""

    def __init__(self):
        for fd in range(4):
            memfd = os.memfd_create("case%d" % fd, 0)
            if memfd != fd:
                os.dup2(memfd, fd)
                os.close(memfd)

    @staticmethod
    def reset(stdin):
        for fd in range(4):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        data = stdin.encode() if stdin else b""
        while data:
            data = data[os.write(0, data):]
        os.lseek(0, 0, os.SEEK_SET)

    @staticmethod
    def read(fd, cap):
        """The output on fd as text whose size in the reply (UTF-8 inside a JSON string) is at most cap bytes, and
        whether it was cut. Every output byte costs at least one reply byte, so cap + 1 bytes decide."""
        size = os.fstat(fd).st_size
        if size == 0:
            return "", False
        data = os.pread(fd, min(size, cap + 1), 0)
        text = data.decode("utf-8", "replace")
        # Invalid bytes became U+FFFD, 3 bytes each in the reply (so a count of characters cannot tell: b"\x80" is one).
        utf8 = data if data.isascii() else text.encode("utf-8")
        if len(data) <= cap and reply_bytes(utf8) <= cap:
            return text, False
        return fit_reply(utf8, cap), True


# Bytes JSON escapes: two-character escapes, and \\u00XX (six characters) for every other control character.
_SHORT_ESCAPES = b'"\\\b\f\n\r\t'
_ALL_ESCAPES = bytes(range(32)) + b'"\\'


def reply_bytes(utf8):
    """The size of UTF-8 text as a JSON string's contents (what JSON.stringify writes: the reply's bytes)."""
    escaped = len(utf8) - len(utf8.translate(None, _ALL_ESCAPES))
    if escaped == 0:
        return len(utf8)
    short = len(utf8) - len(utf8.translate(None, _SHORT_ESCAPES))
    return len(utf8) + short + 5 * (escaped - short)


def fit_reply(utf8, cap):
    """The longest prefix of UTF-8 text whose reply size is at most cap, cut at a character boundary."""
    lo, hi = 0, min(len(utf8), cap)  # a prefix of n bytes costs at least n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if reply_bytes(utf8[:mid]) <= cap:
            lo = mid
        else:
            hi = mid - 1
    while lo > 0 and lo < len(utf8) and utf8[lo] & 0xC0 == 0x80:
        lo -= 1  # not inside a character
    return utf8[:lo].decode("utf-8", "replace")


def enter_program(job):
    """In the manager, once per program: what every case process inherits instead of setting it up itself."""
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    # Below the server and the zygote in CPU weight, so a runaway program cannot delay the clock that stops it.
    os.nice(10)
    nproc = (job.get("toolchain") or {}).get("maxProcesses") or 32
    for res, val in ((resource.RLIMIT_NPROC, nproc), (resource.RLIMIT_NOFILE, 256), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(res, (val, val))
    # Signal dispositions as in a fresh interpreter, but SIGXFSZ kills (the output cap); exec'd programs reset SIGPIPE.
    # SIGINT stays the default in the manager, pid 1 of the program's namespaces, so that the program's signals to it
    # are dropped; a Python case process sets the interpreter's handler itself (python_signals).
    _signal.signal(SIGINT, SIG_DFL)
    _signal.signal(SIGXFSZ, SIG_DFL)
    sys.stdin, sys.stdout, sys.stderr = STD
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = STD
    # As `python main.py` in the case's directory: the program's own argv, and its files importable (not the harness).
    sys.argv[:] = ["main.py"]
    sys.path[0] = ""
    return CaseFiles()


def case_limits(limits, address_space=None):
    """The limits that count per process, as setrlimit arguments (a case process applies them itself)."""
    mem = address_space if address_space is not None else limits["memoryMb"] * 1024 * 1024
    cpu = max(1, int(limits["runTimeoutMs"] / 1000) + 1)
    size = limits["maxOutputBytes"] + 1
    return ((resource.RLIMIT_AS, (mem, mem)), (resource.RLIMIT_FSIZE, (size, size)), (resource.RLIMIT_CPU, (cpu, cpu)))


def fetch_files(cdir, paths, cap):
    """The files a run asked to get back (relative to its directory, or under /tmp or /mnt) that exist as regular files, read
    without following links and up to the output cap each, base64-encoded."""
    import binascii
    out = {}
    for p in paths:
        full = p if p.startswith(("/tmp/", "/mnt/")) else os.path.join(cdir, p)
        try:
            fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if os.fstat(fd).st_mode & 0o170000 != 0o100000:
                continue
            data = os.read(fd, cap)
        finally:
            os.close(fd)
        out[p] = binascii.b2a_base64(data, newline=False).decode()
    return out


def write_files(cdir, files):
    """Input files for the run (tool calls) or a special judge's stdin.txt / stdout.txt / answer.txt."""
    import base64
    for name, data in files.items():
        target = os.path.normpath(os.path.join(cdir, name))
        if not target.startswith(cdir + "/"):
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(base64.b64decode(data))


def enter_program_cgroup():
    """First thing in a forked child that will run a program's or compiler's code: into the program memory cgroup,
    whose limit is the program's own (the harness stays in its own cgroup), then the descriptor is closed, before any
    of the program's code runs. If the move fails the sandbox's cgroup, a little larger, still bounds the program."""
    if HAS_PROGRAM_CGROUP[0]:
        HAS_PROGRAM_CGROUP[0] = False
        try:
            os.write(PROGRAM_CGROUP, b"0")
        except OSError:
            pass
        os.close(PROGRAM_CGROUP)


def python_signals():
    """In a Python case process: SIGINT raises KeyboardInterrupt, as in `python main.py`."""
    _signal.signal(SIGINT, _signal.default_int_handler)


def exec_in_child(limits, argv, env, keep_value_fd=False):
    """In a forked child: the per-process limits, then exec (compilers, compiled programs, interpreters). A
    function-call case keeps descriptor 3, where its program's call driver writes the returned value."""
    try:
        enter_program_cgroup()
        os.closerange(4 if keep_value_fd else 3, FD_CEILING)
        for res, val in limits:
            resource.setrlimit(res, val)
        _signal.signal(SIGPIPE, SIG_DFL)
        os.execve(argv[0], argv, env)
    finally:
        os._exit(127)


def toolchain_env(job):
    """The sandbox's variables (PATH, HOME, TMPDIR, LANG) and the toolchain's own."""
    env = dict(os.environ)
    env.update((job.get("toolchain") or {}).get("env") or {})
    return env


class Runner:
    """Runs the cases of one built program (in the manager)."""

    def __init__(self, job, artifact, files, host=None):
        self.job = job
        self.artifact = artifact
        self.files = files
        self.limits = job["limits"]
        self.cap = self.limits["maxOutputBytes"]
        lang = job["language"]
        self.lang = lang
        self.child_limits = case_limits(self.limits)
        if lang != "python":
            tc = job["toolchain"]
            # Runtimes that reserve far more address space than they use get their heap bounded by their own flag.
            self.child_limits = case_limits(self.limits, tc.get("addressSpaceBytes"))
            self.argv = [a.replace("{mem}", str(self.limits["memoryMb"])) for a in tc["run"]]
            self.env = toolchain_env(job)
        calls = lang == "python" and any(c["kind"] == "call" for c in job["cases"])
        self.prelude = prelude_globals(artifact) if calls else None
        # The program host of split assert cases (ProgramHost), and the test codes it never sees.
        self.host = host
        self.tests = None

    def run(self, index, case, deadline):
        """Runs one case and emits its event. False when the job's budget ran out before or during it."""
        timeout_s = self.limits["runTimeoutMs"] / 1000.0
        left_s = deadline - time.monotonic()
        if left_s <= 0:
            emit({"event": "budget", "index": index})
            return False
        cut_by_budget = left_s < timeout_s
        cdir = "%s/c%d" % (WORK, index)
        try:
            os.mkdir(cdir, 0o700)
        except FileExistsError:
            remove_tree(cdir)  # an earlier case of the program planted it
            os.mkdir(cdir, 0o700)
        if case.get("files"):
            write_files(cdir, case["files"])
        if case["kind"] == "call" and self.lang != "python":
            with open(os.path.join(cdir, ".rlpipe-call.json"), "w") as f:
                # "source": which of the program's own calls to make (an assert taken apart: its arguments are source text).
                f.write(dumps({"fn": case["fnName"], "args": case["args"], "source": case.get("source", -1)}))
        os.chdir(cdir)
        self.files.reset(case.get("stdin"))
        call = case["kind"] == "call"
        split = case["kind"] == "assert" and case.get("split") and self.host is not None
        t0 = time.monotonic()
        pass_fd = None
        if split:
            pid, pass_fd = self.host.start_case(index, cdir, self.tests[index], case.get("entryPoint"), self.child_limits)
        else:
            pid = self.fork_case(case, call)
        t1 = time.monotonic()
        status, timed_out = wait_child(pid, min(timeout_s, left_s))
        t2 = time.monotonic()
        returned = False
        if pass_fd is not None:
            try:
                returned = os.read(pass_fd, 8) == b"P"
            except OSError:
                pass
            os.close(pass_fd)
        end_strays(self.host.pid if self.host is not None else None)
        stdout, out_over = self.files.read(1, self.cap)
        stderr, err_over = self.files.read(2, self.cap)
        fetched = fetch_files(cdir, case["fetch"], self.cap) if case.get("fetch") else None
        os.chdir(WORK)
        try:
            os.rmdir(cdir)
        except OSError:
            try:
                remove_tree(cdir)  # the program left files there
            except (OSError, RecursionError) as e:
                # The sandbox's problem, never the program's verdict: the zygote is replaced after this program.
                PROBLEMS.append("%s: %s" % (cdir, e))
        if timed_out and cut_by_budget:
            emit({"event": "budget", "index": index})
            return False
        exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        if pass_fd is not None and exit_code == 0 and not returned:
            # The verifier exited 0 without the test returning (os._exit from the test): not a pass.
            exit_code = 1
            stderr += "\nrlpipe: the verifier exited without the test returning; the case fails\n"
        result = {
            "event": "case", "index": index, "exitCode": exit_code, "signal": sig, "stdout": stdout, "stderr": stderr,
            "timeMs": round((t2 - t1) * 1000.0, 3), "timedOut": timed_out or sig == SIGXCPU,
            "outputExceeded": out_over or err_over or sig == SIGXFSZ or "File too large" in stderr,
            "memoryExceeded": "MemoryError" in stderr or "bad_alloc" in stderr or "heap out of memory" in stderr,
        }
        if call:
            value, _ = self.files.read(3, self.cap)
            if value:
                result["valueJson"] = value
        if fetched is not None:
            result["files"] = fetched
        result["t"] = [round((t1 - t0) * 1000.0, 3), round((t2 - t1) * 1000.0, 3), round((time.monotonic() - t2) * 1000.0, 3)]
        emit(result)
        return True

    def fork_case(self, case, call):
        """The case's process: the program run once with the case's input (and, for an unsplit assert case, its test)."""
        try:
            pid = os.fork()
        except OSError:
            # Processes left behind exhaust the process limit; clear them and retry once.
            kill_strays((self.host.pid,) if self.host is not None else ())
            pid = os.fork()
        if pid == 0:
            self.case_process(case, call)
        return pid

    def case_process(self, case, call):
        """In a freshly forked case process: runs the case and exits."""
        if self.lang != "python":
            exec_in_child(self.child_limits, self.argv, self.env, keep_value_fd=call)
        code = 126
        try:
            enter_program_cgroup()
            os.closerange(4 if call else 3, FD_CEILING)
            for res, val in self.child_limits:
                resource.setrlimit(res, val)
            python_signals()
            code = run_python(self.artifact, case, self.prelude)
        finally:
            os._exit(code)

    def loopable(self, first):
        """Whether caseloop.c can run cases first.. of this program: Runner.run's common path only (no input or
        fetched files, no split assert cases, no call file for a compiled program's function call)."""
        return CASE_LOOP is not None and self.host is None and all(
            not c.get("files") and not c.get("fetch") and (c["kind"] != "call" or self.lang == "python")
            for c in self.job["cases"][first:])

    def run_in_c(self, first, deadline, stop_requested):
        """Runs cases first.. through caseloop.c, taking back the ones it hands to Python (Runner.run's unusual paths).
        Returns None when the cases are over, or the index from which the Python loop runs the rest."""
        cases = self.job["cases"]
        n = len(cases)
        data = [(c.get("stdin") or "").encode() for c in cases]
        stdins = (ctypes.c_char_p * n)(*data)
        lengths = (ctypes.c_long * n)(*map(len, data))
        call = any(c["kind"] == "call" for c in cases)
        timeout_s = self.limits["runTimeoutMs"] / 1000.0
        stop = bool(self.job.get("stopOnFailure"))
        back = Handback()
        i = first
        while i < n:
            r = CASE_LOOP(i, n, stdins, lengths, timeout_s, deadline, self.cap, int(call), int(stop), ctypes.byref(back))
            if r >= 0:
                self.case_process(cases[r], call)  # in the case process: never returns
            if r == RL_DONE:
                return
            if r == RL_REMOVE_DIR:
                # The program left files there (its event is out): as Runner.run, a clean-up error is the sandbox's.
                cdir = "%s/c%d" % (WORK, back.index)
                try:
                    remove_tree(cdir)
                except (OSError, RecursionError) as e:
                    PROBLEMS.append("%s: %s" % (cdir, e))
                if not back.go_on:
                    return
            elif r == RL_RUN_IN_PYTHON:
                if not self.run(back.index, cases[back.index], deadline):
                    return
            else:  # RL_NO_MEMORY (or a code this harness does not know): this case and the rest in Python
                return back.index
            i = back.index + 1
            if i < n and stop_requested():
                return


class ProgramHost:
    """The process that forks the program's process for each split assert case (asserts.py). It is forked before the
    test codes reach the manager, so neither it nor the program's processes ever hold them; it gets each case's end
    of a socket over its control socket and never runs the program itself."""

    def __init__(self, compiled):
        import _socket
        self._socket = _socket
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                enter_program_cgroup()
                ours.close()
                os.closerange(4, theirs.fileno())
                os.closerange(theirs.fileno() + 1, FD_CEILING)
                code = _host_loop(theirs, compiled)
            finally:
                os._exit(code)
        theirs.close()
        self.pid = pid
        self.control = ours

    def start_case(self, index, cdir, test_code, entry_point, limits):
        """Has the host fork case `index`'s program process and forks the verifier; returns the verifier's pid and the
        read end of the pipe on which only the verifier can say that the test returned (asserts.PASS_TOKEN)."""
        _socket = self._socket
        pass_read, pass_write = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        verifier_end, program_end = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        msg = dumps({"cdir": cdir, "limits": [[r, list(v)] for r, v in limits]}).encode()
        fds = program_end.fileno().to_bytes(4, sys.byteorder)
        try:
            self.control.sendmsg([msg], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        except OSError:
            pass  # the program killed its host: the verifier finds no program and fails the case
        program_end.close()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                enter_program_cgroup()
                fd = verifier_end.detach()
                os.set_blocking(pass_write, True)
                low, high = sorted((fd, pass_write))
                os.closerange(3, low)
                os.closerange(low + 1, high)
                os.closerange(high + 1, FD_CEILING)
                for res, val in limits:
                    resource.setrlimit(res, val)
                code = asserts.run_verifier(test_code, entry_point, fd, pass_write)
            finally:
                os._exit(code)
        verifier_end.close()
        os.close(pass_write)
        return pid, pass_read

    def close(self):
        self.control.close()


def _host_loop(control, compiled):
    """In the program host: per message, fork the program's process for one case."""
    import _socket
    while True:
        try:
            msg, anc, _, _ = control.recvmsg(1 << 16, _socket.CMSG_SPACE(4))
        except OSError:
            return 0
        if not msg:
            return 0
        fd = None
        for level, kind, data in anc:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS and len(data) >= 4:
                fd = int.from_bytes(data[:4], sys.byteorder)
        if fd is None:
            continue
        order = loads(msg.decode())
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                os.chdir(order["cdir"])
                os.closerange(4, fd)
                os.closerange(fd + 1, FD_CEILING)
                for res, val in order["limits"]:
                    resource.setrlimit(res, tuple(val))
                code = run_program_side(compiled, fd)
            finally:
                os._exit(code)
        os.close(fd)
        try:
            os.waitpid(pid, 0)  # the manager ends the case's processes; the next order comes after
        except ChildProcessError:
            pass


def run_program_side(compiled, fd):
    """In a split assert case's program process: the program's top level, then calls from the verifier."""
    python_signals()
    glb = {"__name__": "__main__", "__builtins__": __builtins__}
    failure = None
    try:
        exec(compiled, glb)
    except BaseException as e:  # noqa: BLE001 - reported as a Python would, and to the verifier
        failure = e
        print_program_exception(e)
    names = [n for n in glb if not n.startswith("__")]
    try:
        asserts.serve(glb, fd, names, failure)
    except BaseException:  # noqa: BLE001 - a broken socket: the verifier fails the case
        pass
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        pass
    return 0


# What a function-call program may use without importing it, as ScaleBox's harness gives it (star imports of these, in
# this order, then the modules themselves, and a deep recursion limit). A program gets only the names it refers to,
# imported once per program by the manager (prelude_globals), so a program that needs none of them pays nothing.
PRELUDE_MODULES = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
                   "itertools", "functools", "operator", "io", "sys", "json", "builtins", "typing")
PRELUDE_RECURSION_LIMIT = 6 * 10 ** 5
PRELUDE_INDEX = {}  # name → module that provides it (the last star import wins), set by the zygote (prelude_index)


def prelude_index():
    """name → module for every name the prelude's star imports provide. Imports all of them: call it in a process that
    is thrown away (the zygote keeps only this table, not the modules)."""
    import importlib
    index = {}
    for name in PRELUDE_MODULES:
        module = importlib.import_module(name)
        public = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for attr in public:
            index[attr] = name
        index.setdefault(name, name)
    return index


def referenced_names(code, out=None):
    """Every global name a code object (and the functions and classes inside it) refers to."""
    out = set() if out is None else out
    out.update(code.co_names)
    for const in code.co_consts:
        if hasattr(const, "co_names"):
            referenced_names(const, out)
    return out


def prelude_globals(compiled):
    """The prelude names this program uses and does not define itself, bound as the prelude would bind them."""
    import builtins
    import importlib
    if not PRELUDE_INDEX:
        PRELUDE_INDEX.update(prelude_index())  # a one-program sandbox (per-program isolation) builds it here
    glb = {}
    for name in sorted(referenced_names(compiled)):
        module = PRELUDE_INDEX.get(name)
        if module is None or module == "builtins" or (hasattr(builtins, name) and module != "typing"):
            continue
        mod = importlib.import_module(module)
        glb[name] = mod if name == module else getattr(mod, name)
    return glb


def run_python(compiled, case, prelude=None):
    """Runs in the case process: execute the program with the case's stdin; returns the exit code."""
    code = 0
    glb = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        kind = case["kind"]
        if kind == "call":
            glb.update(prelude or {})
            sys.setrecursionlimit(PRELUDE_RECURSION_LIMIT)
        exec(compiled, glb)
        if kind == "call":
            fn_name = case["fnName"]
            if fn_name in glb:
                fn = glb[fn_name]
            elif "Solution" in glb:
                fn = getattr(glb["Solution"](), fn_name)
            else:
                raise NameError("function %r is not defined" % fn_name)
            res = fn(*case["args"])
            text = encoder(_json_default)(res).encode()
            while text:
                text = text[os.write(3, text):]
        elif kind == "assert":
            exec(compile(case["testCode"], "<test>", "exec"), glb)
            if case.get("entryPoint"):
                glb["check"](glb[case["entryPoint"]])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            sys.stderr.write(str(e.code) + "\n")
    except BaseException as e:  # noqa: BLE001 - report the program's failure as a Python would
        print_program_exception(e)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        code = code or 1
    return code


# What warm_up runs: the builtins and text streams a typical stdin/stdout program uses.
WARM_UP_SOURCE = "a, b = map(int, input().split())\nprint(a + b, str(a).strip() + ' ' + repr([b, 'x']))\n"


def warm_up(rounds=16):
    """Once in the zygote, before it freezes its objects: what every Python case process does (run_python over its
    stdin and stdout), run here on the harness's own program. The interpreter writes its caches (method lookups, the
    harness's specialized bytecode) here once, instead of every case process copying the pages it writes them to (a
    fork's cost is mostly such copies). The streams are left as a case process finds them: empty."""
    saved = os.dup(0), os.dup(1)
    files = os.memfd_create("warm-up-in", 0), os.memfd_create("warm-up-out", 0)
    streams = sys.stdin, sys.stdout
    try:
        os.dup2(files[0], 0)
        os.dup2(files[1], 1)
        sys.stdin, sys.stdout = STD[0], STD[1]
        compiled = compile(WARM_UP_SOURCE, "main.py", "exec")
        for _ in range(rounds):
            for fd in (0, 1):
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
            os.write(0, b"1 2\n")
            os.lseek(0, 0, os.SEEK_SET)
            code = run_python(compiled, {"kind": "stdio"})
            if code != 0 or os.pread(1, 64, 0) != b"3 1 [2, 'x']\n":
                raise RuntimeError("the harness's warm-up program failed (exit %d)" % code)
    finally:
        sys.stdin, sys.stdout = streams
        for fd, original in ((0, saved[0]), (1, saved[1])):
            os.dup2(original, fd)
        for fd in saved + files:
            os.close(fd)


HARNESS_FILENAME = run_python.__code__.co_filename  # this file's name in code objects (it may run from bytecode)


def print_program_exception(e):
    """The program's exception on its stderr, as `python main.py` prints it."""
    import linecache
    import traceback
    # The program has no file of its own: give its source to the traceback the way a file would.
    linecache.cache["main.py"] = (len(SOURCE[0]), None, SOURCE[0].splitlines(True), "main.py")
    # The harness's own frames are not the program's (a model learning from tool output should not see them).
    tb = e.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == HARNESS_FILENAME:
        tb = tb.tb_next
    traceback.print_exception(type(e), e, tb)


def _json_default(o):
    if isinstance(o, (set, frozenset)):
        return sorted(o, key=repr)
    if isinstance(o, (bytes, bytearray)):
        return o.decode("utf-8", "replace")
    return repr(o)


def build(job, files):
    """Build the program once. Returns (artifact, event): artifact None when it cannot run."""
    lang = job["language"]
    limits = job["limits"]
    started = time.monotonic()
    if lang == "python":
        SOURCE[0] = job["code"]
        try:
            compiled = compile(job["code"], "main.py", "exec")
        except (SyntaxError, ValueError) as e:
            import traceback
            return None, {"event": "compile", "exitCode": 1, "stdout": "", "stderr": "".join(traceback.format_exception_only(type(e), e)), "timeMs": 0, "timedOut": False}
        return compiled, {"event": "built", "timeMs": round((time.monotonic() - started) * 1000.0, 3)}
    tc = job.get("toolchain")
    if tc is None:
        return None, {"event": "compile", "exitCode": None, "stdout": "", "stderr": "language %s is not available" % lang, "timeMs": 0, "timedOut": False, "unavailable": True}
    src = os.path.join(WORK, "src")
    os.mkdir(src, 0o700)
    path = os.path.join(src, tc["file"])
    driver = job.get("callDriver")
    code = job["code"]
    if driver and driver.get("prefix") and not code.lstrip().startswith(driver["prefix"].strip()):
        code = driver["prefix"] + code
    if driver and not driver.get("file"):
        code += driver["text"]
    with open(path, "w") as f:
        f.write(code)
    if driver and driver.get("file"):
        with open(os.path.join(src, driver["file"]), "w") as f:
            f.write(driver["text"])
    for name, text in (tc.get("files") or {}).items():
        with open(os.path.join(src, name), "w") as f:
            f.write(text)
    if not tc.get("compile"):
        return path, {"event": "built", "timeMs": 0}
    files.reset("")
    # A compiler writes objects and binaries far larger than a program's output cap.
    compile_limits = case_limits({**limits, "runTimeoutMs": limits["compileTimeoutMs"], "memoryMb": max(limits["memoryMb"], 2048), "maxOutputBytes": 1 << 30}, tc.get("addressSpaceBytes"))
    os.chdir(src)
    pid = os.fork()
    if pid == 0:
        exec_in_child(compile_limits, tc["compile"], toolchain_env(job))
    status, timed_out = wait_child(pid, limits["compileTimeoutMs"] / 1000.0)
    end_strays()
    os.chdir(WORK)
    cout, _ = files.read(1, limits["maxOutputBytes"])
    cerr, _ = files.read(2, limits["maxOutputBytes"])
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    event = {"event": "compile", "exitCode": code, "stdout": cout, "stderr": cerr, "timeMs": round((time.monotonic() - started) * 1000, 3), "timedOut": timed_out}
    return (path if code == 0 and not timed_out else None), event


def run_program(job, stop_requested, next_line):
    """In the manager: builds the program and runs its cases from startIndex on, until done, stopped (stop_requested()
    is true between cases: the server saw a failing case and the job stops at the first failure) or out of budget. The
    budget is the cases': the build has its own timeout. `next_line()` is the job stream's next line: the server's
    "go" after a build (once it has set the cases' memory limit) and the test codes of split assert cases."""
    first = job.get("startIndex", 0)
    split = job["language"] == "python" and any(c["kind"] == "assert" and c.get("split") for c in job["cases"][first:])
    files = enter_program(job)
    artifact, event = build(job, files)
    emit(event)
    if artifact is None:
        return
    if job.get("goAfterBuild") and next_line() != b"go":
        return
    deadline = time.monotonic() + job["limits"]["totalTimeoutMs"] / 1000.0
    host = ProgramHost(artifact) if split else None
    try:
        runner = Runner(job, artifact, files, host)
        if host is not None:
            # Only now, with the program host forked, do the test codes enter this process (see asserts.py).
            emit({"event": "tests"})
            line = next_line()
            tests = loads(line.decode()) if line else None
            if type(tests) is not list or len(tests) != len(job["cases"]):
                return
            runner.tests = tests
        # Objects made since the zygote froze its own (the job, the compiled program) join them: a collection in a
        # case process then never walks (and copies) them.
        gc.freeze()
        if runner.loopable(first):
            first = runner.run_in_c(first, deadline, stop_requested)
            if first is None:
                return
        for i, case in enumerate(job["cases"]):
            if i < first:
                continue
            if i > first and stop_requested():
                return
            if not runner.run(i, case, deadline):
                return
    finally:
        if host is not None:
            host.close()
