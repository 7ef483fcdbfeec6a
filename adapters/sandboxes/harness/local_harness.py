"""rlpipe's in-sandbox harness. Runs inside bubblewrap (no network, unprivileged uid, read-only /usr).

It loads one program once (Python: compiled once; C++: built once) and runs every test case in a fresh
forked process with rlimits, a wall-clock timeout that kills the whole process group, and output written
to size-capped files. It prints one JSON line per event on stdout; Node grades the results.

Hardening against the program it runs (same uid): the harness is pid 1 of the sandbox (bwrap --as-pid-1, so
no bubblewrap process is in the program's view) and not dumpable (no ptrace, no /proc/1/mem, /proc/1/environ
or pidfd_getfd of its result stream); descriptors inherited from whoever started the server are closed
before anything runs; every other process is killed and reaped after each case (daemons escape process
groups); each case runs in its own fresh directory. Expected outputs never enter the sandbox.
"""
import base64
import ctypes
import json
import os
import resource
import signal
import shutil
import sys
import time

WORK = "/work"
PR_SET_DUMPABLE = 4


def emit(obj):
    sys.__stdout__.write(json.dumps(obj) + "\n")
    sys.__stdout__.flush()


def read_capped(path, cap):
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError:
        return "", False
    return data[:cap].decode("utf-8", "replace"), len(data) > cap


def close_inherited_fds():
    """Close every descriptor but stdin/stdout/stderr: whatever the server's parent left open (a credentials file,
    a pipe) must not reach a program. Listed from /proc, so descriptors above any fixed bound are closed too."""
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2:
            try:
                os.close(int(name))
            except OSError:
                pass  # the listing's own descriptor, already closed


def reap():
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                return
        except ChildProcessError:
            return


def kill_strays():
    """Kill and reap every other process in this PID namespace. As pid 1 the harness inherits orphans, so
    repeat until only it is left (a process forked between listing and killing is caught by the next pass)."""
    me = os.getpid()
    deadline = time.monotonic() + 5.0
    while True:
        others = [int(n) for n in os.listdir("/proc") if n.isdigit() and int(n) not in (1, me)]
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        reap()
        if not others or time.monotonic() > deadline:
            return
        time.sleep(0.001)


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
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


def wait_with_timeout(pid, timeout_s):
    """waitpid with a wall-clock limit; on timeout kill the child's whole process group."""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        _, status = os.waitpid(pid, 0)
        timed_out = False
    except Timeout:
        timed_out = True
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        _, status = os.waitpid(pid, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return status, timed_out


def run_case(index, job, compiled, case):
    limits = job["limits"]
    cap = limits["maxOutputBytes"]
    cdir = os.path.join(WORK, "c%d" % index)
    # A previous case of the same program may have planted this path; start from nothing.
    shutil.rmtree(cdir, ignore_errors=True)
    os.mkdir(cdir, 0o700)
    stdin_path = os.path.join(cdir, ".stdin")
    out_path = os.path.join(cdir, ".stdout")
    err_path = os.path.join(cdir, ".stderr")
    val_path = os.path.join(cdir, ".value")
    with open(stdin_path, "w") as f:
        f.write(case.get("stdin") or "")
    for name, data in (case.get("files") or {}).items():
        # Input files for the run (tool calls) or a special judge's stdin.txt / stdout.txt / answer.txt.
        target = os.path.normpath(os.path.join(cdir, name))
        if not target.startswith(cdir + "/"):
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(base64.b64decode(data))
    lang = job["language"]
    started = time.monotonic()
    try:
        pid = os.fork()
    except OSError:
        # A previous case left processes behind that exhaust the process limit; clear them and retry once.
        kill_strays()
        pid = os.fork()
    if pid == 0:
        try:
            os.chdir(cdir)
            fd_in = os.open(stdin_path, os.O_RDONLY)
            fd_out = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            fd_err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd_in, 0)
            os.dup2(fd_out, 1)
            os.dup2(fd_err, 2)
            close_inherited_fds()
            if lang == "python":
                limit_child(limits, None)
                os._exit(run_python(compiled, case, val_path))
            elif lang == "cpp":
                limit_child(limits, None)
                os.execv(compiled, [compiled])
            elif lang == "nodejs":
                # V8 reserves far more address space than it uses; bound its heap instead of RLIMIT_AS.
                limit_child(limits, 16 << 30)
                os.execv("/usr/bin/node", ["node", "--max-old-space-size=%d" % limits["memoryMb"], compiled])
            os._exit(127)
        except BaseException:  # noqa: BLE001 - never return into the harness from the child
            os._exit(126)
    status, timed_out = wait_with_timeout(pid, limits["runTimeoutMs"] / 1000.0)
    elapsed_ms = (time.monotonic() - started) * 1000.0
    kill_strays()
    stdout, out_over = read_capped(out_path, cap)
    stderr, err_over = read_capped(err_path, cap)
    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    value = None
    if os.path.exists(val_path):
        value, _ = read_capped(val_path, cap)
    result = {
        "event": "case", "index": index, "exitCode": exit_code, "signal": sig, "stdout": stdout, "stderr": stderr,
        "timeMs": round(elapsed_ms, 3), "timedOut": timed_out or sig == signal.SIGXCPU,
        "outputExceeded": out_over or err_over or sig == signal.SIGXFSZ or "File too large" in stderr,
        "memoryExceeded": "MemoryError" in stderr or "bad_alloc" in stderr or "heap out of memory" in stderr,
    }
    if value is not None:
        result["valueJson"] = value
    shutil.rmtree(cdir, ignore_errors=True)  # fd-based on Linux: a planted symlink is not followed
    emit(result)


def run_python(compiled, case, val_path):
    """Runs in the forked child: execute the program with the case's stdin; returns the exit code."""
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", closefd=False)
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
            text = json.dumps(res, default=_json_default)
            with open(val_path, "w") as f:
                f.write(text)
        elif kind == "assert":
            exec(compile(case["testCode"], "<test>", "exec"), glb)
            if case.get("entryPoint"):
                glb["check"](glb[case["entryPoint"]])
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if not isinstance(e.code, (int, type(None))):
            sys.stderr.write(str(e.code) + "\n")
    except BaseException as e:  # noqa: BLE001 - report the program's failure as a Python would
        import traceback
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


def build(job):
    """Compile the program once. Returns (compiled artifact, compile event) or (None, event)."""
    lang = job["language"]
    src = os.path.join(WORK, "src")
    os.mkdir(src, 0o700)
    limits = job["limits"]
    if lang == "python":
        path = os.path.join(src, "main.py")
        with open(path, "w") as f:
            f.write(job["code"])
        try:
            return compile(job["code"], "main.py", "exec"), None
        except (SyntaxError, ValueError) as e:
            import traceback
            return None, {"event": "compile", "exitCode": 1, "stdout": "", "stderr": "".join(traceback.format_exception_only(type(e), e)), "timeMs": 0, "timedOut": False}
    if lang in ("cpp", "nodejs"):
        ext = "cpp" if lang == "cpp" else "js"
        path = os.path.join(src, "main." + ext)
        with open(path, "w") as f:
            f.write(job["code"])
        if lang == "nodejs":
            return path, None
        binary = os.path.join(src, "main")
        started = time.monotonic()
        with open(os.path.join(src, ".cout"), "wb") as out, open(os.path.join(src, ".cerr"), "wb") as err:
            pid = os.fork()
            if pid == 0:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                limit_child({**limits, "runTimeoutMs": limits["compileTimeoutMs"], "memoryMb": max(limits["memoryMb"], 2048)}, None)
                os.execv("/usr/bin/g++", ["g++", "-O2", "-std=c++17", "-pipe", "-o", binary, path])
            status, timed_out = wait_with_timeout(pid, limits["compileTimeoutMs"] / 1000.0)
        kill_strays()
        cout, _ = read_capped(os.path.join(src, ".cout"), limits["maxOutputBytes"])
        cerr, _ = read_capped(os.path.join(src, ".cerr"), limits["maxOutputBytes"])
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        event = {"event": "compile", "exitCode": code, "stdout": cout, "stderr": cerr, "timeMs": round((time.monotonic() - started) * 1000, 3), "timedOut": timed_out}
        return (binary if code == 0 and not timed_out else None), event
    return None, {"event": "compile", "exitCode": None, "stdout": "", "stderr": "language %s is not available" % lang, "timeMs": 0, "timedOut": False, "unavailable": True}


def main():
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    close_inherited_fds()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    with open(os.path.join(WORK, "job.json")) as f:
        job = json.load(f)
    os.unlink(os.path.join(WORK, "job.json"))
    compiled, event = build(job)
    if event is not None:
        emit(event)
    if compiled is None:
        return
    first = job.get("startIndex", 0)
    for i, case in enumerate(job["cases"]):
        if i < first:
            continue
        emit({"event": "start", "index": i})
        run_case(i, job, compiled, case)


if __name__ == "__main__":
    main()
