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
 * The kernel stand-in. A cell is parsed as a module; when its last statement is an expression, that expression is
 * evaluated apart and a value other than None is displayed as its repr (text/plain), as IPython does. Figures open
 * after a cell are displayed as PNG (with matplotlib's own text/plain) and closed, as the inline backend does. A
 * cell's exception is its error (ename, evalue, traceback of the cell's own frames) and the next cell still runs.
 * A per-cell timeout interrupts the cell with TimeoutError. The results go out on the process's real stdout last.
 */
const DRIVER = String.raw`
import ast as _ast, base64 as _b64, io as _io, json as _json, linecache as _linecache, os as _os, signal as _signal, sys as _sys, traceback as _tb
_os.environ.setdefault("MPLBACKEND", "Agg")
_CELLS = _json.loads(__CELLS__)
_CELL_TIMEOUT = __CELL_TIMEOUT__
_out = _sys.stdout


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


def _run(ns):
    results = []
    for i, src in enumerate(_CELLS):
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
        results.append(res)
    return results


_results = _run({"__name__": "__main__", "__builtins__": __builtins__})
_out.write(${JSON.stringify(RESULT_PREFIX)} + _json.dumps(_results) + "\n")
_out.flush()
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
  const driverStdout = cells === undefined ? r.stdout : r.stdout.slice(0, r.stdout.lastIndexOf(RESULT_PREFIX));
  const driver: CommandRunResultSF = {
    status: timedOut ? "TimeLimitExceeded" : "Finished", execution_time: r.timeMs / 1000, return_code: timedOut ? null : r.exitCode,
    stdout: driverStdout, stderr: r.stderr,
  };
  if (cells === undefined) return { status: "Failed", message: "", driver, cells: [], executor_pod_name: null, files: {} };
  return { status: "Success", message: "", driver, cells, executor_pod_name: null, files: { ...r.files } };
}
