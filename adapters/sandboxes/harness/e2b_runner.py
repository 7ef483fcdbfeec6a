"""rlpipe's runner inside an E2B / AGS sandbox (adapters/sandboxes/e2b.ts writes it next to each job).

`python3 -I runner.py <jobdir>` reads <jobdir>/job.json, builds the program once (a syntax check for Python,
g++ for C++), runs every test case in a FRESH process (own session, rlimits, a wall clock that kills the whole
process group, stdout/stderr written to files and read back capped), and prints ONE JSON document on the last
line, tagged with the job's nonce so nothing the program prints can pose as the result. Node grades it;
expected outputs never enter the sandbox. The job directory is removed at the end.

The isolation boundary is the sandbox VM (no internet). Inside it programs run as the template's user, so the
hardening here is about fresh processes and leftovers, not about containing a hostile program.
Standard library only; Python >= 3.8.
"""
import json
import os
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import time

MARK = "RLPIPE_RESULT"


def read_capped(path, cap):
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
    except OSError:
        return "", False
    return data[:cap].decode("utf-8", "replace"), len(data) > cap


def limiter(limits, address_space_bytes, cpu_ms):
    def apply():
        for res, val in (
            (resource.RLIMIT_AS, address_space_bytes),
            (resource.RLIMIT_FSIZE, limits["maxOutputBytes"] + 1),
            (resource.RLIMIT_CPU, max(1, int(cpu_ms / 1000) + 1)),
            (resource.RLIMIT_CORE, 0),
        ):
            if val is not None:
                resource.setrlimit(res, (val, val))
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return apply


def sweep(marker):
    """Kill leftovers that left the process group (daemons) but still carry this job's marker variable."""
    needle = marker.encode()
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as f:
                if needle in f.read():
                    os.kill(int(name), signal.SIGKILL)
        except OSError:
            pass


def execute(argv, cwd, stdin_path, out_base, limits, timeout_ms, address_space_bytes, env):
    """Run argv in a fresh session; returns (exit code, signal, timed out, ms, stdout, stderr, output exceeded)."""
    cap = limits["maxOutputBytes"]
    started = time.monotonic()
    with open(stdin_path, "rb") as fin, open(out_base + ".stdout", "wb") as fout, open(out_base + ".stderr", "wb") as ferr:
        proc = subprocess.Popen(
            argv, cwd=cwd, stdin=fin, stdout=fout, stderr=ferr, env=env, close_fds=True, start_new_session=True,
            preexec_fn=limiter(limits, address_space_bytes, timeout_ms),
        )
        timed_out = False
        try:
            proc.wait(timeout=max(timeout_ms, 1) / 1000.0)
        except subprocess.TimeoutExpired:
            timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the case's whole group, finished or not
        except OSError:
            pass
        proc.wait()
    elapsed_ms = round((time.monotonic() - started) * 1000.0, 3)
    sweep(env["RLPIPE_CASE"])
    stdout, out_over = read_capped(out_base + ".stdout", cap)
    stderr, err_over = read_capped(out_base + ".stderr", cap)
    code = proc.returncode
    exit_code = code if code >= 0 else None
    sig = -code if code < 0 else None
    over = out_over or err_over or sig == signal.SIGXFSZ
    return exit_code, sig, timed_out or sig == signal.SIGXCPU, elapsed_ms, stdout, stderr, over


def child_env(cwd, marker):
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": cwd, "TMPDIR": cwd, "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "RLPIPE_CASE": marker,
    }


def build(jobdir, job, deadline):
    """Returns (argv prefix or None, compile record or None)."""
    lang = job["language"]
    limits = job["limits"]
    src = os.path.join(jobdir, "src")
    if lang == "python":
        path = os.path.join(src, "main.py")
        with open(path, "rb") as f:
            text = f.read()
        try:
            compile(text, "main.py", "exec")  # syntax only; nothing runs here
        except (SyntaxError, ValueError) as e:
            import traceback
            return None, {"exitCode": 1, "stdout": "", "stderr": "".join(traceback.format_exception_only(type(e), e)), "timeMs": 0, "timedOut": False}
        return [sys.executable, path], None
    if lang == "nodejs":
        node = shutil.which("node")
        if node is None:
            return None, unavailable("node")
        return [node, "--max-old-space-size=%d" % limits["memoryMb"], os.path.join(src, "main.js")], None
    if lang == "cpp":
        gxx = shutil.which("g++")
        if gxx is None:
            return None, unavailable("g++")
        binary = os.path.join(src, "main")
        budget_ms = min(limits["compileTimeoutMs"], max(0.0, (deadline - time.monotonic()) * 1000.0))
        empty = os.path.join(jobdir, "empty")
        open(empty, "wb").close()
        marker = "rlpipe-" + secrets.token_hex(8)
        code, _sig, timed_out, ms, out, err, _over = execute(
            [gxx, "-O2", "-std=c++17", "-pipe", "-o", binary, os.path.join(src, "main.cpp")], src, empty,
            os.path.join(jobdir, "out", "compile"), {**limits, "maxOutputBytes": max(limits["maxOutputBytes"], 1 << 20)},
            budget_ms, max(limits["memoryMb"], 2048) << 20, child_env(src, marker),
        )
        record = {"exitCode": code, "stdout": out, "stderr": err, "timeMs": ms, "timedOut": timed_out}
        return ([binary] if code == 0 and not timed_out else None), record
    return None, {"exitCode": None, "stdout": "", "stderr": "language %s is not supported by the runner" % lang, "timeMs": 0, "timedOut": False, "unavailable": True}


def unavailable(tool):
    return {"exitCode": None, "stdout": "", "stderr": "%s is not installed in this sandbox template" % tool, "timeMs": 0, "timedOut": False, "unavailable": True}


def run_case(jobdir, job, prefix, index, case, remaining_ms, marker):
    limits = job["limits"]
    cwd = os.path.join(jobdir, "run", str(index))
    given = os.path.join(jobdir, "files", str(index))
    if os.path.isdir(given):
        shutil.copytree(given, cwd)
    else:
        os.makedirs(cwd)
    out_base = os.path.join(jobdir, "out", str(index))
    argv = prefix
    lang = job["language"]
    if case["kind"] in ("call", "assert"):
        if lang != "python":
            return {"index": index, "exitCode": 2, "signal": None, "stdout": "", "timeMs": 0, "timedOut": False, "outputExceeded": False, "memoryExceeded": False,
                    "stderr": "function-call and assert cases need python (got %s)\n" % lang}
        with open(out_base + ".call.json", "w") as f:
            json.dump(case, f)
        argv = [sys.executable, "-I", os.path.abspath(__file__), "--call", prefix[1], out_base + ".call.json", out_base + ".value"]
    run_ms = limits["runTimeoutMs"]
    timeout_ms = min(run_ms, remaining_ms)
    address_space = None if lang == "nodejs" else limits["memoryMb"] << 20  # V8 reserves far more than it uses
    code, sig, timed_out, ms, out, err, over = execute(
        argv, cwd, os.path.join(jobdir, "in", str(index)), out_base, limits, timeout_ms, address_space, child_env(cwd, marker))
    if timed_out and timeout_ms < run_ms:
        return {"index": index, "skipped": "Total Timeout"}
    result = {
        "index": index, "exitCode": code, "signal": sig, "stdout": out, "stderr": err, "timeMs": ms, "timedOut": timed_out,
        "outputExceeded": over or "File too large" in err,
        "memoryExceeded": "MemoryError" in err or "bad_alloc" in err or "heap out of memory" in err,
    }
    if os.path.exists(out_base + ".value"):
        result["valueJson"], _ = read_capped(out_base + ".value", limits["maxOutputBytes"])
    shutil.rmtree(cwd, ignore_errors=True)
    return result


def run_job(jobdir, job):
    deadline = time.monotonic() + job["limits"]["totalTimeoutMs"] / 1000.0
    os.makedirs(os.path.join(jobdir, "out"), exist_ok=True)
    doc = {"cases": []}
    prefix, record = build(jobdir, job, deadline)
    if record is not None:
        doc["compile"] = record
    if prefix is None:
        return doc
    marker = "rlpipe-" + secrets.token_hex(8)
    stop = None
    for i, case in enumerate(job["cases"]):
        remaining_ms = (deadline - time.monotonic()) * 1000.0
        if stop is not None:
            doc["cases"].append({"index": i, "skipped": stop})
            continue
        if remaining_ms <= 0:
            doc["cases"].append({"index": i, "skipped": "Total Timeout"})
            continue
        r = run_case(jobdir, job, prefix, i, case, remaining_ms, marker)
        doc["cases"].append(r)
        # Wrong answers are only known to Node; stop early on what is visible here (crash, timeout, limits).
        failed = r.get("skipped") is not None or r["exitCode"] != 0 or r["timedOut"] or r["outputExceeded"]
        if job.get("stopOnFailure") and failed:
            stop = "stopped at the first failure"
    return doc


def call_main(main_path, spec_path, value_path):
    """A function-call or assert case, in its own process: exec the program, then call or assert."""
    with open(spec_path) as f:
        case = json.load(f)
    with open(main_path) as f:
        source = f.read()
    sys.argv = [main_path]
    glb = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(compile(source, "main.py", "exec"), glb)
    if case["kind"] == "call":
        name = case["fnName"]
        if name in glb:
            fn = glb[name]
        elif "Solution" in glb:
            fn = getattr(glb["Solution"](), name)
        else:
            raise NameError("function %r is not defined" % name)
        text = json.dumps(fn(*case["args"]), default=_json_default)
        with open(value_path, "w") as f:
            f.write(text)
    else:
        exec(compile(case["testCode"], "<test>", "exec"), glb)
        if case.get("entryPoint"):
            glb["check"](glb[case["entryPoint"]])


def _json_default(o):
    if isinstance(o, (set, frozenset)):
        return sorted(o, key=repr)
    if isinstance(o, (bytes, bytearray)):
        return o.decode("utf-8", "replace")
    return repr(o)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--call":
        call_main(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    jobdir = os.path.abspath(sys.argv[1])
    try:
        with open(os.path.join(jobdir, "job.json")) as f:
            job = json.load(f)
        os.unlink(os.path.join(jobdir, "job.json"))  # the nonce stays in this process only
        doc = run_job(jobdir, job)
        sys.stdout.write("\n%s %s %s\n" % (MARK, job["nonce"], json.dumps(doc)))
        sys.stdout.flush()
    finally:
        shutil.rmtree(jobdir, ignore_errors=True)


if __name__ == "__main__":
    main()
