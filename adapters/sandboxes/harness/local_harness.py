"""rlpipe's in-sandbox harness: runs one program's test cases. Used by zygote.py, inside bubblewrap (no network,
unprivileged uid, read-only /usr, empty environment).

It builds a program once (Python: compiled once; C++: g++ once) and runs every test case in a fresh forked
process: its own process group, rlimits (memory, processes, file size, CPU, descriptors), a wall clock that kills
the whole group, a fresh working directory, and stdin/stdout/stderr on memory files capped by RLIMIT_FSIZE. Events
go out as JSON lines on a descriptor of their own; Node grades them. Expected outputs never enter the sandbox.

Cost matters here (every GRPO step waits for thousands of cases), so the per-case path avoids what a fork makes
expensive on this kind of machine (page faults): Python programs get text streams built once before any fork,
the case's files are memfds reused from case to case, descriptors are closed with one close_range, and leftover
processes are found by one waitpid (the caller is a reaper, so every descendant still alive is its child).

Hardening against the program (same uid): the harness is not dumpable (no ptrace, no /proc/<pid>/mem, environ,
fd or pidfd_getfd of its streams); descriptors inherited from whoever started the server are closed first; every
other process is killed after each case (daemons escape process groups).
"""
# Only C modules besides os and ctypes: every module the zygote holds makes each fork dearer (the json package
# brings re, signal brings enum; signal.signal's enum conversions alone cost a forked child ~0.3 ms).
import _json
import _signal
import ctypes
import os
import resource
import sys
import time

WORK = "/work"
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
# Every descriptor the harness holds is below this once inherited ones are closed (it opens a handful).
FD_CEILING = 1024
libc = ctypes.CDLL(None, use_errno=True)
SIGKILL, SIGALRM, SIGPIPE, SIGINT, SIGXFSZ, SIGXCPU = 9, 14, 13, 2, 25, 24
SIG_DFL, SIG_IGN = _signal.SIG_DFL, _signal.SIG_IGN

EVENTS = -1  # the event stream (set by take_streams)
SOURCE = [""]  # the program's text (for tracebacks)
STD = None  # (stdin, stdout, stderr) text streams on fds 0/1/2 for Python programs, built once, never used before a fork


class _JsonContext:
    """What the C scanner of the json package reads from its decoder."""
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = {}

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


_scan = _json.make_scanner(_JsonContext())


def loads(text):
    """json.loads for one JSON document, as the json package does it in C."""
    obj, end = _scan(text, 0)
    if text[end:].strip():
        raise ValueError("extra data after JSON at %d" % end)
    return obj


def _no_default(o):
    raise TypeError("%s is not JSON serializable" % type(o).__name__)


def encoder(default):
    """json.dumps as the json package does it in C (compact separators, NaN allowed as json.dumps does)."""
    enc = _json.make_encoder(None, default, _json.encode_basestring_ascii, None, ":", ",", False, False, True)
    return lambda obj: "".join(enc(obj, 0))


dumps = encoder(_no_default)


def emit(obj):
    data = (dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(EVENTS, data):]


def close_inherited_fds():
    """Close every descriptor but 0/1/2: whatever the server's parent left open (a credentials file, a pipe) must not
    reach a program. Listed from /proc, so descriptors above any fixed bound are closed too."""
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            try:
                os.close(int(name))
            except OSError:
                pass  # the listing's own descriptor, already closed


def take_streams():
    """Moves the job stream (fd 0) and the event stream (fd 1) to descriptors of their own, so that 0/1/2 can be a
    program's; builds the text streams Python programs get. Returns the job stream's descriptor."""
    global EVENTS, STD
    close_inherited_fds()
    jobs = os.dup(0)  # not inheritable (PEP 446): an exec'd compiler or program never gets it
    EVENTS = os.dup(1)
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    # What a fresh interpreter would have with LANG=C.UTF-8 and no terminal; bound to fd numbers, so they read and
    # write whatever a case dup2'd there. Never written before a fork, so a child starts with empty buffers.
    STD = (
        open(0, "r", encoding="utf-8", closefd=False),
        open(1, "w", encoding="utf-8", closefd=False),
        open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1),
    )
    return jobs


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def install_alarm():
    _signal.signal(SIGALRM, _alarm)


def wait_with_timeout(pid, timeout_s):
    """waitpid with a wall-clock limit; on timeout kill the child's whole process group."""
    _signal.setitimer(_signal.ITIMER_REAL, max(timeout_s, 0.001))
    try:
        _, status = os.waitpid(pid, 0)
        timed_out = False
    except Timeout:
        timed_out = True
        try:
            os.killpg(pid, SIGKILL)
        except OSError:
            pass
        _, status = os.waitpid(pid, 0)
    finally:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
    return status, timed_out


def kill_strays():
    """Kill and reap every other process in this PID namespace but pid 1 (the zygote). Repeats until none is left (a
    process forked between listing and killing is caught by the next pass). False if some survived 5 s of that."""
    me = os.getpid()
    deadline = time.monotonic() + 5.0
    while True:
        others = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, me)]
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


def end_strays():
    """After a case: the caller is a reaper (pid 1 or a subreaper), so every descendant still alive is its child. No
    child left: nothing to do (one waitpid); otherwise kill everything but the zygote."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            kill_strays()
            return


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
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        _empty(fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def empty_dir(path):
    """Removes everything inside path (path stays)."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
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
            sub = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            try:
                _empty(sub)
            finally:
                os.close(sub)
            os.rmdir(entry.name, dir_fd=fd)
        else:
            os.unlink(entry.name, dir_fd=fd)


class CaseFiles:
    """stdin, stdout, stderr and the returned value of a case: memory files, emptied before each case. A case's
    process shares their offsets, so results are read with pread and the offsets reset before the next case."""

    def __init__(self):
        self.fds = [os.memfd_create(n, os.MFD_CLOEXEC) for n in ("stdin", "stdout", "stderr", "value")]

    def reset(self, stdin):
        for fd in self.fds:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        data = stdin.encode() if stdin else b""
        while data:
            data = data[os.write(self.fds[0], data):]
        os.lseek(self.fds[0], 0, os.SEEK_SET)

    def read(self, which, cap):
        fd = self.fds[which]
        size = os.fstat(fd).st_size
        if size == 0:
            return "", False
        data = os.pread(fd, min(size, cap + 1), 0)
        return data[:cap].decode("utf-8", "replace"), len(data) > cap

    def size(self, which):
        return os.fstat(self.fds[which]).st_size


def limit_child(limits, address_space):
    os.setpgid(0, 0)
    # Below the harness in CPU weight, so a runaway program cannot delay the timeout that kills it.
    os.nice(10)
    mem = address_space if address_space is not None else limits["memoryMb"] * 1024 * 1024
    cpu = max(1, int(limits["runTimeoutMs"] / 1000) + 1)
    for res, val in (
        (resource.RLIMIT_AS, mem),
        (resource.RLIMIT_NPROC, limits.get("maxProcesses", 32)),
        (resource.RLIMIT_FSIZE, limits["maxOutputBytes"] + 1),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(res, (val, val))
    _signal.signal(SIGXFSZ, SIG_DFL)
    _signal.signal(SIGALRM, SIG_DFL)


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


def run_case(index, job, artifact, case, files, deadline):
    """Runs one case and emits its event. Returns False when the job's budget ran out before or during it."""
    limits = job["limits"]
    cap = limits["maxOutputBytes"]
    timeout_s = limits["runTimeoutMs"] / 1000.0
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
    files.reset(case.get("stdin"))
    lang = job["language"]
    kind = case["kind"]
    t0 = time.monotonic()
    try:
        pid = os.fork()
    except OSError:
        # Processes left behind exhaust the process limit; clear them and retry once.
        kill_strays()
        pid = os.fork()
    if pid == 0:
        try:
            fds = files.fds
            os.dup2(fds[0], 0)
            os.dup2(fds[1], 1)
            os.dup2(fds[2], 2)
            if lang == "python" and kind == "call":
                os.dup2(fds[3], 3)
                os.closerange(4, FD_CEILING)
            else:
                os.closerange(3, FD_CEILING)
            os.chdir(cdir)
            if lang == "python":
                limit_child(limits, None)
                os._exit(run_python(artifact, case))
            _signal.signal(SIGPIPE, SIG_DFL)
            if lang == "cpp":
                limit_child(limits, None)
                os.execv(artifact, [artifact])
            elif lang == "nodejs":
                # V8 reserves far more address space than it uses; bound its heap instead of RLIMIT_AS.
                limit_child(limits, 16 << 30)
                os.execv("/usr/bin/node", ["node", "--max-old-space-size=%d" % limits["memoryMb"], artifact])
            os._exit(127)
        except BaseException:  # noqa: BLE001 - never return into the harness from the child
            os._exit(126)
    t1 = time.monotonic()
    status, timed_out = wait_with_timeout(pid, min(timeout_s, left_s))
    t2 = time.monotonic()
    end_strays()
    stdout, out_over = files.read(1, cap)
    stderr, err_over = files.read(2, cap)
    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    try:
        os.rmdir(cdir)
    except OSError:
        remove_tree(cdir)  # the program left files there
    if timed_out and cut_by_budget:
        emit({"event": "budget", "index": index})
        return False
    result = {
        "event": "case", "index": index, "exitCode": exit_code, "signal": sig, "stdout": stdout, "stderr": stderr,
        "timeMs": round((t2 - t1) * 1000.0, 3), "timedOut": timed_out or sig == SIGXCPU,
        "outputExceeded": out_over or err_over or sig == SIGXFSZ or "File too large" in stderr,
        "memoryExceeded": "MemoryError" in stderr or "bad_alloc" in stderr or "heap out of memory" in stderr,
    }
    if kind == "call" and files.size(3) > 0:
        result["valueJson"], _ = files.read(3, cap)
    result["t"] = [round((t1 - t0) * 1000.0, 3), round((t2 - t1) * 1000.0, 3), round((time.monotonic() - t2) * 1000.0, 3)]
    emit(result)
    return True


def run_python(compiled, case):
    """Runs in the forked child: execute the program with the case's stdin; returns the exit code."""
    sys.stdin, sys.stdout, sys.stderr = STD
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = STD
    # Signal dispositions as in a fresh interpreter (the zygote has none of its own).
    _signal.signal(SIGPIPE, SIG_IGN)
    _signal.signal(SIGINT, _signal.default_int_handler)
    code = 0
    glb = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compiled, glb)
        kind = case["kind"]
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
        import linecache
        import traceback
        # The program has no file of its own: give its source to the traceback the way a file would.
        linecache.cache["main.py"] = (len(SOURCE[0]), None, SOURCE[0].splitlines(True), "main.py")
        traceback.print_exception(type(e), e, e.__traceback__)
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        code = code or 1
    return code


def _json_default(o):
    if isinstance(o, (set, frozenset)):
        return sorted(o, key=repr)
    if isinstance(o, (bytes, bytearray)):
        return o.decode("utf-8", "replace")
    return repr(o)


def build(job, files):
    """Compile the program once. Returns (artifact, event): artifact None when it cannot run."""
    lang = job["language"]
    src = os.path.join(WORK, "src")
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
    os.mkdir(src, 0o700)
    if lang == "nodejs":
        path = os.path.join(src, "main.js")
        with open(path, "w") as f:
            f.write(job["code"])
        return path, {"event": "built", "timeMs": 0}
    if lang == "cpp":
        path = os.path.join(src, "main.cpp")
        with open(path, "w") as f:
            f.write(job["code"])
        binary = os.path.join(src, "main")
        files.reset("")
        pid = os.fork()
        if pid == 0:
            try:
                os.dup2(files.fds[0], 0)
                os.dup2(files.fds[1], 1)
                os.dup2(files.fds[2], 2)
                os.closerange(3, FD_CEILING)
                limit_child({**limits, "runTimeoutMs": limits["compileTimeoutMs"], "memoryMb": max(limits["memoryMb"], 2048)}, None)
                _signal.signal(SIGPIPE, SIG_DFL)
                os.execv("/usr/bin/g++", ["g++", "-O2", "-std=c++17", "-pipe", "-o", binary, path])
            finally:
                os._exit(127)
        status, timed_out = wait_with_timeout(pid, limits["compileTimeoutMs"] / 1000.0)
        end_strays()
        cout, _ = files.read(1, limits["maxOutputBytes"])
        cerr, _ = files.read(2, limits["maxOutputBytes"])
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        event = {"event": "compile", "exitCode": code, "stdout": cout, "stderr": cerr, "timeMs": round((time.monotonic() - started) * 1000, 3), "timedOut": timed_out}
        return (binary if code == 0 and not timed_out else None), event
    return None, {"event": "compile", "exitCode": None, "stdout": "", "stderr": "language %s is not available" % lang, "timeMs": 0, "timedOut": False, "unavailable": True}


def run_program(job, stop_requested):
    """Builds the program and runs its cases from startIndex on, until done, stopped (stop_requested() is true
    between cases: the server saw a failing case and the job stops at the first failure) or out of budget."""
    deadline = time.monotonic() + job["limits"]["totalTimeoutMs"] / 1000.0
    files = CaseFiles()
    artifact, event = build(job, files)
    emit(event)
    if artifact is None:
        return
    first = job.get("startIndex", 0)
    for i, case in enumerate(job["cases"]):
        if i < first:
            continue
        if i > first and stop_requested():
            return
        if not run_case(i, job, artifact, case, files, deadline):
            return
