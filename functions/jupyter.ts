// SandboxFusion's POST /run_jupyter over any sandbox backend: the cells run one after another in one Python process
// with one namespace, as in a notebook kernel, and each cell reports what a kernel would send — its stdout and stderr,
// the value of a final expression and the figures it drew (display), and the exception it raised (error). No Jupyter
// is involved: a small driver (below) is the program, so every backend (local, ScaleBox, E2B) runs it as it runs any
// Python program, under the same isolation and limits. Pure: request in, response out.
import { z } from "zod";
import type { RunResult } from "../core/grading/types.js";
import { type CommandRunResultSF, fetchPathProblem, type RunStatusSF, type SandboxApiDeps } from "./sandbox-api.js";
import { type FnRequest, type FnResponse, json, unprocessable } from "./http-types.js";

const RunJupyterRequest = z.object({
  cells: z.array(z.string()),
  cell_timeout: z.number().nonnegative().default(0),
  total_timeout: z.number().positive().default(45),
  memory_limit_MB: z.number().int().default(-1),
  kernel: z.literal("python3").default("python3"),
  files: z.record(z.string(), z.string().nullable()).default({}),
  fetch_files: z.array(z.string()).default([]),
});

export interface CellResultSF {
  stdout: string;
  stderr: string;
  display: Record<string, unknown>[];
  error: Record<string, unknown>[];
}

export interface RunJupyterResponseSF {
  status: RunStatusSF;
  message: string;
  driver: CommandRunResultSF | null;
  cells: CellResultSF[];
  executor_pod_name: string | null;
  files: Record<string, string>;
}

/** The line the driver ends with: the cells' results as JSON after this prefix. */
const RESULT_PREFIX = "\u0000rlpipe-jupyter-cells ";

/**
 * The kernel stand-in, in two processes, because the cells are untrusted: a later cell must not be able to change
 * what is reported for an earlier one.
 *
 * The supervisor (the process the backend started) never runs cell code. It makes itself non-dumpable (no ptrace,
 * /proc/<pid>/mem, fd or pidfd_getfd access for the cells' processes, which share its uid) and a child subreaper (what
 * a cell forks and orphans becomes its child), then forks the kernel. The kernel runs the cells in one namespace and
 * reports each one over a socket pair (8-byte length + JSON {"i": index, "r": result}) as soon as it ends. A socket,
 * not a pipe: a pipe's write end reopened through /proc/self/fd/N for reading drains the records the supervisor has
 * not read yet; a socket cannot be reopened, and what the kernel sent sits in the supervisor's receive queue.
 *
 * The supervisor hands the kernel each cell's source only after it has accepted the record of the cell before, so a
 * cell's code never runs before every earlier result is in the supervisor's memory (a later cell cannot reach that
 * memory, the socket's queue or the earlier records). It accepts a record only if it is well formed and carries the
 * next expected index, once; anything else on the channel (a duplicate, another index, a malformed frame) means a
 * cell wrote to it: the supervisor stops accepting, and the cell it was waiting for (and every later one) is reported
 * with a RuntimeError saying so. (Which cell wrote is not knowable — the kernel and the cells share a process — but
 * whatever arrives after record i was written after cell i ended, so blaming the expected cell never touches an
 * earlier result. A cell can forge its own record before the kernel sends the true one, as it can print anything.)
 *
 * A kernel that dies (a cell called os._exit or was killed) leaves its remaining cells reported with a
 * DeadKernelError; the run still succeeds, as a notebook shows a dead kernel's cells. (SandboxFusion's driver has no
 * answer of its own for it: its execute_interactive, without a timeout, waits for a reply the dead kernel never sends
 * until the run's time limit, and the run fails without cells — an artifact, not a verdict. rlpipe answers what
 * happened at once: the cells that ran keep their results, the dying cell says the kernel exited.)
 *
 * When the kernel has finished, died or been given up on, the supervisor kills every process below it (the kernel and
 * whatever the cells forked, found through /proc/<pid>/stat parent chains, until none is left) and only then writes
 * the result line — at the end of its stdout (a cell may have truncated or rewritten a seekable stdout), after a
 * newline (a cell may have left a line unfinished) — and exits 0. A cell that kills or stops the supervisor makes the
 * run fail (killed: Failed; stopped: the total timeout), never report forged cells. Every import the supervisor needs
 * happens before the kernel exists, and its sys.path is emptied: a module a cell writes to the work dir is never
 * imported there.
 *
 * In the kernel a cell is parsed as a module; when its last statement is an expression, that expression is evaluated
 * apart and a value other than None is displayed as its repr (text/plain), as IPython does. Figures open after a cell
 * are displayed as PNG (with matplotlib's own text/plain) and closed, as the inline backend does. A cell's exception
 * is its error (ename, evalue, traceback of the cell's own frames) and the next cell still runs. A per-cell timeout
 * interrupts the cell with TimeoutError.
 */
const DRIVER = String.raw`
import ast as _ast, base64 as _b64, io as _io, json as _json, linecache as _linecache, os as _os, select as _select, signal as _signal, socket as _socket, sys as _sys, time as _time, traceback as _tb
_os.environ.setdefault("MPLBACKEND", "Agg")
_CELLS = _json.loads(__CELLS__)
_CELL_TIMEOUT = __CELL_TIMEOUT__
_RESULT_LINE = b"\n" + ${JSON.stringify(RESULT_PREFIX)}.encode()
_MAX_FRAME = 1 << 30
_out = _sys.stdout


def _frame(obj):
    data = _json.dumps(obj).encode()
    return len(data).to_bytes(8, "big") + data


# ---- the kernel: runs the cells ----

def _alarm(signum, frame):
    raise TimeoutError("cell timed out after %g s" % _CELL_TIMEOUT)


def _figures():
    plt = _sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    shown = []
    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = _io.BytesIO()
        fig.savefig(buf, format="png")
        shown.append({"image/png": _b64.b64encode(buf.getvalue()).decode(), "text/plain": repr(fig)})
    plt.close("all")
    return shown


def _cell(i, src, ns):
    name = "<cell %d>" % (i + 1)
    res = {"stdout": "", "stderr": "", "display": [], "error": []}
    out, err = _io.StringIO(), _io.StringIO()
    _sys.stdout, _sys.stderr = out, err
    if _CELL_TIMEOUT > 0:
        _signal.signal(_signal.SIGALRM, _alarm)
        _signal.setitimer(_signal.ITIMER_REAL, _CELL_TIMEOUT)
    try:
        _linecache.cache[name] = (len(src), None, src.splitlines(True), name)  # tracebacks show the cell's lines
        tree = _ast.parse(src, name)
        last = None
        if tree.body and isinstance(tree.body[-1], _ast.Expr):
            last = _ast.Expression(tree.body.pop().value)
        exec(compile(tree, name, "exec"), ns)
        if last is not None:
            value = eval(compile(last, name, "eval"), ns)
            if value is not None:
                res["display"].append({"text/plain": repr(value)})
    except BaseException as e:
        tb = e.__traceback__
        while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell "):
            tb = tb.tb_next
        res["error"].append({"ename": type(e).__name__, "evalue": str(e), "traceback": _tb.format_exception(type(e), e, tb)})
    finally:
        if _CELL_TIMEOUT > 0:
            _signal.setitimer(_signal.ITIMER_REAL, 0)
        try:
            _sys.stdout.flush()
        except Exception:
            pass
        _sys.stdout, _sys.stderr = _out, _sys.__stderr__
    try:
        res["display"] += _figures()
    except Exception as e:
        res["error"].append({"ename": type(e).__name__, "evalue": str(e), "traceback": []})
    res["stdout"], res["stderr"] = out.getvalue(), err.getvalue()
    return res


def _kernel(sock):
    """Per message from the supervisor ({"i", "src"}): run the cell, send its result; until the supervisor is done."""
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    buf = b""
    while True:
        while len(buf) < 8 or len(buf) < 8 + int.from_bytes(buf[:8], "big"):
            chunk = sock.recv(1 << 16)
            if not chunk:
                return
            buf += chunk
        n = int.from_bytes(buf[:8], "big")
        msg, buf = _json.loads(buf[8:8 + n].decode()), buf[8 + n:]
        try:
            res = _cell(msg["i"], msg["src"], ns)
        except BaseException as e:  # the cell broke the driver around it (or the alarm fired between cells)
            _sys.stdout, _sys.stderr = _out, _sys.__stderr__
            res = {"stdout": "", "stderr": "", "display": [], "error": [{"ename": type(e).__name__, "evalue": str(e), "traceback": []}]}
        try:
            _out.flush()  # what a cell wrote to sys.__stdout__ goes out now, before the supervisor's result line
        except Exception:
            pass
        sock.sendall(_frame({"i": msg["i"], "r": res}))


# ---- the supervisor: keeps the results, never runs a cell ----

def _result(r):
    """A record's result as the supervisor keeps it, or None when it is not one the kernel could have sent."""
    if type(r) is not dict or set(r) != {"stdout", "stderr", "display", "error"}:
        return None
    if type(r["stdout"]) is not str or type(r["stderr"]) is not str:
        return None
    for k in ("display", "error"):
        if type(r[k]) is not list or any(type(x) is not dict for x in r[k]):
            return None
    return {"stdout": r["stdout"], "stderr": r["stderr"], "display": r["display"], "error": r["error"]}


def _supervise(sock, kernel, cells):
    """Feeds the kernel its cells one at a time and collects their records. Returns (results, tampered, status):
    tampered when something other than the next record arrived; status the kernel's wait status when it exited."""
    got = []
    tampered = False
    status = None
    try:
        pidfd = _os.pidfd_open(kernel)
    except (AttributeError, OSError):
        pidfd = None  # an older Python or kernel: the kernel's exit is polled
    sock.setblocking(False)
    poller = _select.poll()
    poller.register(sock, _select.POLLIN)
    if pidfd is not None:
        poller.register(pidfd, _select.POLLIN)
    listening = True
    pending = [_frame({"i": 0, "src": cells[0]})] if cells else []
    buf = b""

    def take(buf):
        nonlocal tampered
        while len(got) < len(cells) and len(buf) >= 8:
            n = int.from_bytes(buf[:8], "big")
            if n > _MAX_FRAME:
                tampered = True
                return b""
            if len(buf) < 8 + n:
                break
            try:
                rec = _json.loads(buf[8:8 + n].decode())
                res = _result(rec["r"]) if type(rec) is dict and set(rec) == {"i", "r"} and type(rec["i"]) is int and rec["i"] == len(got) else None
            except Exception:
                res = None
            if res is None:
                tampered = True
                return b""
            got.append(res)
            buf = buf[8 + n:]
            if len(got) < len(cells):
                pending.append(_frame({"i": len(got), "src": cells[len(got)]}))
        return buf

    def read():
        """What the socket holds now; False once it is closed."""
        nonlocal buf
        while True:
            try:
                chunk = sock.recv(1 << 20)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not chunk:
                return False
            buf = take(buf + chunk)
            if tampered or len(got) == len(cells):
                return True

    while len(got) < len(cells) and not tampered and status is None:
        if listening:
            poller.modify(sock, _select.POLLIN | (_select.POLLOUT if pending else 0))
        ready = dict(poller.poll(None if pidfd is not None else 20))
        if listening and ready.get(sock.fileno(), 0) & _select.POLLOUT and pending:
            try:
                sent = sock.send(pending[0], _socket.MSG_NOSIGNAL)
                pending[0] = pending[0][sent:]
                if not pending[0]:
                    pending.pop(0)
            except BlockingIOError:
                pass
            except OSError:
                pending.clear()  # the kernel's end is gone; its exit decides
        if listening and ready.get(sock.fileno(), 0) & (_select.POLLIN | _select.POLLHUP | _select.POLLERR):
            if not read():
                listening = False
                poller.unregister(sock)
        if pidfd is not None and pidfd in ready or pidfd is None:
            pid, st = _os.waitpid(kernel, 0 if pidfd is not None else _os.WNOHANG)
            if pid == kernel:
                status = st
                if listening and not tampered and len(got) < len(cells):
                    read()  # everything the kernel sent before it exited is queued by now
    if pidfd is not None:
        _os.close(pidfd)
    return got, tampered, status


def _stat_ppid(pid):
    try:
        fd = _os.open("/proc/%d/stat" % pid, _os.O_RDONLY)
        try:
            data = _os.read(fd, 4096)
        finally:
            _os.close(fd)
        return int(data[data.rindex(b")") + 2:].split()[1])  # the name may hold spaces and parentheses
    except (OSError, ValueError, IndexError):
        return None


def _descendants():
    """Every process below this one (parent chains in /proc); never this one, its ancestors or pid 1."""
    me = _os.getpid()
    parent = {}
    try:
        names = _os.listdir("/proc")
    except OSError:
        return []
    for name in names:
        if name.isdigit():
            ppid = _stat_ppid(int(name))
            if ppid is not None:
                parent[int(name)] = ppid
    keep = {1, me}
    p = parent.get(me)
    while p is not None and p not in keep:
        keep.add(p)
        p = parent.get(p)
    children = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [me]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in keep:
                keep.add(c)
                found.append(c)
                todo.append(c)
    return found


def _kill(pid, ours):
    """SIGKILL for pid when it is still one of ours: through a pidfd where there is one, so a pid reused since the
    listing is never signalled."""
    try:
        fd = _os.pidfd_open(pid)
    except AttributeError:
        try:
            _os.kill(pid, _signal.SIGKILL)
        except OSError:
            pass
        return
    except OSError:
        return  # gone
    try:
        if _stat_ppid(pid) in ours:
            _signal.pidfd_send_signal(fd, _signal.SIGKILL)
    except (AttributeError, OSError):
        pass
    finally:
        _os.close(fd)


def _reap():
    while True:
        try:
            if _os.waitpid(-1, _os.WNOHANG)[0] == 0:
                return
        except ChildProcessError:
            return


def _end_subtree(kernel, reaped):
    """Kills every process below the supervisor, and reaps them, until none is left."""
    if not reaped:
        _os.kill(kernel, _signal.SIGKILL)  # an unreaped child: its pid cannot have been reused
    me = _os.getpid()
    while True:
        found = _descendants()
        ours = set(found)
        ours.add(me)
        for pid in found:
            _kill(pid, ours)
        _reap()
        if not found:
            return
        _time.sleep(0.001)


def _error(ename, evalue):
    return {"stdout": "", "stderr": "", "display": [], "error": [{"ename": ename, "evalue": evalue, "traceback": []}]}


def _how(status):
    if _os.WIFSIGNALED(status):
        return "killed by signal %d" % _os.WTERMSIG(status)
    return "exit code %d" % _os.WEXITSTATUS(status) if _os.WIFEXITED(status) else "status %d" % status


def _main():
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0: the cells' processes cannot read or write this one
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: what the cells fork and orphan stays below this one
    except Exception:
        pass
    for stream in (_sys.stdout, _sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    kernel = _os.fork()
    if kernel == 0:
        code = 3
        try:
            ours.close()
            _kernel(theirs)
            code = 0
        finally:
            try:
                _out.flush()
            except BaseException:
                pass
            _os._exit(code)
    theirs.close()
    _sys.path[:] = []  # nothing a cell writes (a module in the work dir) is ever imported here
    _sys.path_importer_cache.clear()
    _signal.signal(_signal.SIGINT, _signal.SIG_DFL)  # a cell's SIGINT ends the supervisor (a failed run), nothing else
    got, tampered, status = _supervise(ours, kernel, _CELLS)
    _end_subtree(kernel, status is not None)
    results = list(got)
    k = len(got)
    if k < len(_CELLS):
        if tampered:
            results.append(_error("RuntimeError", "the cell tampered with the driver's channel (a record that is not this cell's result arrived); the kernel was stopped"))
            why = "cell %d tampered with the driver's channel" % (k + 1)
        else:
            results.append(_error("DeadKernelError", "the kernel exited while this cell ran (%s)" % (_how(status) if status is not None else "its channel closed")))
            why = "the kernel exited during cell %d" % (k + 1)
        results += [_error("RuntimeError" if tampered else "DeadKernelError", "not run: " + why) for _ in _CELLS[k + 1:]]
    line = _RESULT_LINE + _json.dumps(results).encode() + b"\n"
    try:
        _os.lseek(1, 0, _os.SEEK_END)  # after whatever is there, whatever a cell did to a seekable stdout
    except OSError:
        pass
    try:
        _os.set_blocking(1, True)  # the file status flags are shared: a cell may have made them non-blocking
    except OSError:
        pass
    while line:
        line = line[_os.write(1, line):]
    _os._exit(0)


_main()
`;

/** The Python program that runs the cells (the driver, with the cells as a JSON string literal). */
export function jupyterProgram(cells: readonly string[], cellTimeoutS: number): string {
  return DRIVER.replace("__CELLS__", JSON.stringify(JSON.stringify(cells))).replace("__CELL_TIMEOUT__", String(cellTimeoutS));
}

/** The cells' results from the driver's output (its last result line); undefined when it never got there. */
export function parseJupyterOutput(stdout: string): CellResultSF[] | undefined {
  const at = stdout.lastIndexOf(RESULT_PREFIX);
  if (at < 0) return undefined;
  const line = stdout.slice(at + RESULT_PREFIX.length).split("\n", 1)[0]!;
  try {
    const cells = JSON.parse(line) as unknown;
    return Array.isArray(cells) ? (cells as CellResultSF[]) : undefined;
  } catch {
    return undefined;
  }
}

export async function handleRunJupyter(req: FnRequest, deps: SandboxApiDeps): Promise<FnResponse> {
  const parsed = RunJupyterRequest.safeParse(req.body);
  if (!parsed.success) return unprocessable(parsed.error.issues);
  const r = parsed.data;
  const refuse = (message: string) => json(200, { status: "SandboxError", message, driver: null, cells: [], executor_pod_name: null, files: {} } satisfies RunJupyterResponseSF);
  for (const path of r.fetch_files) {
    const problem = fetchPathProblem(path);
    if (problem !== undefined) return refuse(problem);
  }
  const files: Record<string, Uint8Array> = {};
  for (const [path, data] of Object.entries(r.files)) {
    if (data === null) continue;
    if (path.startsWith("/") || path.split("/").includes("..")) return refuse(`input file path must be relative to the work dir: ${path}`);
    files[path] = Buffer.from(data, "base64");
  }
  const result = await deps.backend.run({
    language: "python",
    code: jupyterProgram(r.cells, r.cell_timeout),
    files,
    ...(r.fetch_files.length === 0 ? {} : { fetchFiles: r.fetch_files }),
    limits: { runTimeoutMs: r.total_timeout * 1000, memoryMb: r.memory_limit_MB > 0 ? r.memory_limit_MB : deps.defaultMemoryMb ?? 1024 },
  });
  return json(200, jupyterResponse(result));
}

/** SandboxFusion's answer: Success with the cells when the driver finished; Failed (no cells) when it did not. */
export function jupyterResponse(r: RunResult): RunJupyterResponseSF {
  if (r.status === "infra_error") return { status: "SandboxError", message: r.error ?? "sandbox error", driver: null, cells: [], executor_pod_name: null, files: {} };
  const cells = r.status === "ok" ? parseJupyterOutput(r.stdout) : undefined;
  const timedOut = r.status === "timeout";
  // The driver's own output comes before the result line, which the supervisor starts with a newline of its own.
  const driverStdout = cells === undefined ? r.stdout : r.stdout.slice(0, r.stdout.lastIndexOf(RESULT_PREFIX)).replace(/\n$/, "");
  const driver: CommandRunResultSF = {
    status: timedOut ? "TimeLimitExceeded" : "Finished", execution_time: r.timeMs / 1000, return_code: timedOut ? null : r.exitCode,
    stdout: driverStdout, stderr: r.stderr,
  };
  if (cells === undefined) return { status: "Failed", message: "", driver, cells: [], executor_pod_name: null, files: {} };
  return { status: "Success", message: "", driver, cells, executor_pod_name: null, files: { ...r.files } };
}
