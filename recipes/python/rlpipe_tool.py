"""verl tool: the model's code runs in rlpipe's sandbox (POST <url>, SandboxFusion's /run_code API).

Shipped in every launch bundle beside rlpipe_reward.py (whose HTTP helpers it uses); standard library plus verl's own
BaseTool and schemas. One class for every verl rlpipe supports (0.5.0 ... 0.9.1): verl removed its SandboxFusionTool
in May 2026, and this class is what rlpipe's presets render to where the recipe's verl lacks it.

    tools:
      - class_name: rlpipe_tool.RlpipeCodeTool
        config: {type: native, sandbox_url: "http://127.0.0.1:8080/run_code", default_timeout: 30,
                 default_language: python, memory_limit_mb: 1024}
        tool_schema: {type: function, function: {name: code_interpreter, description: ..., parameters: ...}}

The bundle directory must be on the workers' sys.path (launch.sh exports PYTHONPATH).

What the model sees, as verl's SandboxFusionTool and the seeds' tools give it: the program's stdout and stderr when
it ran (whatever its exit code); the compiler's output when it did not build; "no stdout here" when nothing came out.
A program (or a compilation) killed at its time limit says so after whatever it printed: "[the program timed out: it
was killed at its time limit of 30 s; any output above is what it printed before]" (verl's stock tool gives no
output at all then), so a partial output never reads as the program's whole answer.
verl truncates it (multi_turn.max_tool_response_length). A sandbox that cannot run the code (unreachable, overloaded
past the wait budget, an error of its own) is told to the model as such — "the code sandbox failed ... not an error
of your code" — never as the program's output, and counted: metrics {"rlpipe_infra_error": 1} and
RlpipeCodeTool.infra_errors.

Each call: at most `max_concurrency` in flight per process; the run and compile timeouts and X-Rlpipe-Deadline-S
(the server ends the work when the call gives up); 429/503 with Retry-After waited out (plus jitter) for up to
`overload_wait_s` seconds; a refused connection (the sandbox is down: its supervisor restarts it) waited out for up
to `restart_wait_s` (60) seconds; other connection failures and 5xx retried `retries` times with jittered backoff; the run named
in X-Rlpipe-Run ($RLPIPE_RUN); a token from $RLPIPE_SANDBOX_TOKEN (or config token_env) as a Bearer header.
With `retool_code: true` the code is first reshaped as recipe/retool's tool does (retool_code below): rlpipe renders
that where the recipe's verl no longer carries recipe/retool.
"""
import asyncio
import os
import random
import re
import time
import urllib.error
from uuid import uuid4

import rlpipe_reward as _http
from verl.tools.base_tool import BaseTool

try:  # verl >= 0.6: create and execute answer with a ToolResponse
    from verl.tools.schemas import ToolResponse
except ImportError:  # verl 0.5: plain text
    ToolResponse = None
try:
    from verl.utils.rollout_trace import rollout_trace_op
except ImportError:
    def rollout_trace_op(fn):
        return fn

DEFAULT_URL = "http://127.0.0.1:8080/run_code"
NO_OUTPUT = "no stdout here"  # verl's SandboxFusionTool's words for a run that printed nothing
RETRYABLE_HTTP = (429, 500, 502, 503, 504)


class SandboxUnavailable(RuntimeError):
    """The sandbox could not run the code (not the program's fault)."""


def killed_note(what, timeout_s):
    """Appended when the sandbox ended the program at its time limit, so partial output never reads as a whole run."""
    limit = "" if timeout_s is None else " of %g s" % timeout_s
    return "[%s timed out: it was killed at its time limit%s; any output above is what it printed before]" % (what, limit)


def observation(reply, timeout_s=None):
    """The text the model gets for a /run_code reply (a dict)."""
    run = reply.get("run_result") or {}
    build = reply.get("compile_result") or {}
    if reply.get("status") == "SandboxError":
        raise SandboxUnavailable(reply.get("message") or "the sandbox reported an error of its own")
    out = (run.get("stdout") or "") + (run.get("stderr") or "")
    if run.get("status") == "TimeLimitExceeded":
        return (out if out.endswith("\n") or not out else out + "\n") + killed_note("the program", timeout_s)
    if out:
        return out
    if build.get("return_code") not in (None, 0) or build.get("status") not in (None, "Finished"):
        built = (build.get("stdout") or "") + (build.get("stderr") or "")
        if build.get("status") == "TimeLimitExceeded":
            return (built if built.endswith("\n") or not built else built + "\n") + killed_note("the compilation", timeout_s)
        if built:
            return built
    return NO_OUTPUT


def retool_code(code):
    """What recipe/retool's CustomSandboxFusionTool runs for `code`: the first ```python block when there is one, and
    its last non-empty line printed unless it already prints (the model writes notebook-style cells)."""
    match = re.search(r"```python\s*\n(.*?)```", code, re.DOTALL)
    if match:
        code = match.group(1)
    lines = code.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if lines[i].strip():
            if not lines[i].strip().startswith("print"):
                indent = lines[i][:len(lines[i]) - len(lines[i].lstrip())]
                lines[i] = "%sprint(%s)" % (indent, lines[i].strip())
            break
    return "\n".join(lines)


class RlpipeCodeTool(BaseTool):
    """Runs the model's code in rlpipe's sandbox (rlpipe serve, a rlpipe function, or any SandboxFusion/ScaleBox)."""

    infra_errors = 0  # calls the sandbox could not serve, in this process (also in each call's metrics)

    def __init__(self, config, tool_schema):
        super().__init__(config, tool_schema)
        self.url = config.get("sandbox_url") or config.get("sandbox_fusion_url") or os.environ.get("RLPIPE_SANDBOX_URL") or DEFAULT_URL
        self.default_timeout = float(config.get("default_timeout", 30))
        self.max_timeout = float(config.get("max_timeout", 120))
        self.default_language = config.get("default_language", "python")
        self.memory_limit_mb = int(config.get("memory_limit_mb", 1024))
        self.retries = int(config.get("retries", 3))
        self.backoff_s = float(config.get("backoff_s", 1.0))
        self.max_wait_s = float(config.get("max_wait_s", 30.0))
        self.overload_wait_s = float(config.get("overload_wait_s", 300.0))
        # Longer than a supervised restart (detection every RLPIPE_SANDBOX_CHECK_S=5 s, start, health check).
        self.restart_wait_s = float(config.get("restart_wait_s", 60.0))
        self.token_env = config.get("token_env") or _http.TOKEN_ENV
        self.max_concurrency = max(1, int(config.get("max_concurrency", 32)))
        self.retool_code = bool(config.get("retool_code", False))
        self._slots = None  # an asyncio.Semaphore, made in the loop that first uses it
        self._instances = {}

    async def create(self, instance_id=None, **kwargs):
        if instance_id is None:
            instance_id = str(uuid4())
        self._instances[instance_id] = {}
        return (instance_id, ToolResponse()) if ToolResponse is not None else instance_id

    @rollout_trace_op
    async def execute(self, instance_id, parameters, **kwargs):
        code = parameters.get("code", "")
        if not isinstance(code, str):
            code = str(code)
        if self.retool_code:
            code = retool_code(code)
        language = parameters.get("language") or self.default_language
        try:
            timeout_s = min(float(parameters.get("timeout", self.default_timeout)), self.max_timeout)
        except (TypeError, ValueError):
            timeout_s = self.default_timeout
        timeout_s = max(1.0, timeout_s)
        metrics = {"rlpipe_infra_error": 0}
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_concurrency)
        async with self._slots:
            started = time.monotonic()
            try:
                reply = await self._run(code, language, timeout_s)
                text = observation(reply, timeout_s)
            except SandboxUnavailable as e:
                RlpipeCodeTool.infra_errors += 1
                metrics["rlpipe_infra_error"] = 1
                text = "the code sandbox failed and did not run this code (not an error of your code): %s" % e
            metrics["rlpipe_tool_ms"] = round((time.monotonic() - started) * 1000.0, 1)
        response = ToolResponse(text=text) if ToolResponse is not None else text
        return response, 0.0, metrics

    async def calc_reward(self, instance_id, **kwargs):
        return 0.0

    async def release(self, instance_id, **kwargs):
        self._instances.pop(instance_id, None)

    async def _run(self, code, language, timeout_s):
        """POSTs the code; retries what is worth retrying; raises SandboxUnavailable when it gives up."""
        payload = {"code": code, "language": language, "run_timeout": timeout_s, "compile_timeout": timeout_s,
                   "memory_limit_MB": self.memory_limit_mb, "stdin": "", "files": {}, "fetch_files": []}
        http_timeout_s = 2 * timeout_s + 30.0
        token = os.environ.get(self.token_env) or None
        run = os.environ.get(_http.RUN_ENV) or None
        shown = _http._redact(self.url)
        failures, overloaded_s, last, unreachable_since = 0, 0.0, None, None
        while True:
            retry_after = None
            started = time.monotonic()
            try:
                return await asyncio.get_running_loop().run_in_executor(
                    None, lambda: _http._post(self.url, payload, http_timeout_s, token, run, deadline_s=http_timeout_s))
            except urllib.error.HTTPError as e:
                last = "HTTP %d from %s: %s" % (e.code, shown, e.read().decode("utf-8", "replace")[:200])
                if e.code not in RETRYABLE_HTTP:
                    raise SandboxUnavailable(last) from None
                retry_after = _http._retry_after_s(e.headers)
                if retry_after is not None and e.code in _http.OVERLOAD_HTTP:
                    overloaded_s += time.monotonic() - started
                    remaining = self.overload_wait_s - overloaded_s
                    if remaining <= 0:
                        raise SandboxUnavailable("overloaded for %.0f s: %s" % (overloaded_s, last)) from None
                    wait = min(_http._retry_after_wait(retry_after, self.max_wait_s), remaining)
                    await asyncio.sleep(wait)
                    overloaded_s += wait
                    continue
            except (urllib.error.URLError, TimeoutError, ConnectionError, OSError, ValueError) as e:
                last = "cannot reach %s: %s" % (shown, getattr(e, "reason", e))
                if _refused(e):
                    # Nothing listens: the sandbox is down, and its supervisor brings it back within seconds (a
                    # restart is 1.5-3.5 s, plus noticing it). Waited out for up to restart_wait_s, not counted as
                    # a failure: an outage that short must not reach the model as "the sandbox failed".
                    if unreachable_since is None:
                        unreachable_since = time.monotonic()
                    if time.monotonic() - unreachable_since < self.restart_wait_s:
                        await asyncio.sleep(random.uniform(0.25, 0.75))
                        continue
                    raise SandboxUnavailable("%s for %.0f s (its supervisor did not bring it back)" % (last, time.monotonic() - unreachable_since)) from None
            failures += 1
            if failures > self.retries:
                raise SandboxUnavailable("%s (after %d attempts)" % (last, failures))
            if retry_after is not None:
                await asyncio.sleep(_http._retry_after_wait(retry_after, self.max_wait_s))
            else:
                await asyncio.sleep(random.uniform(0, self.backoff_s * (2 ** (failures - 1))))


def _refused(e):
    """Whether a request failed because nothing listened (connection refused), not because it was lost on the way."""
    reason = getattr(e, "reason", e)
    return isinstance(reason, ConnectionRefusedError) or isinstance(e, ConnectionRefusedError)


def register_function_tool(name, config, schema):
    """Registers rlpipe's tool as `name` in verl's function-tool registry (verl >= 0.9.1).

    verl loads the file named by actor_rollout_ref.rollout.multi_turn.function_tool_path; rlpipe renders one that
    calls this with the tool's settings (the class's keys) and its OpenAI schema. The function is stateless, as verl's
    function tools are: each call runs the code through one RlpipeCodeTool per process (same observations, deadlines,
    retries, overload handling and infra-error counting as the class) and answers (ToolResponse, reward, metrics).
    """
    from verl.tools.function_tool import function_tool
    from verl.tools.schemas import OpenAIFunctionToolSchema

    tool_schema = OpenAIFunctionToolSchema.model_validate(schema)
    tool = RlpipeCodeTool(config={"type": "native", **config}, tool_schema=tool_schema)

    async def run(**parameters):
        return await tool.execute(None, parameters)

    run.__name__ = name
    run.__qualname__ = name
    # The schema is given, so verl never infers one from a docstring (transformers' get_json_schema).
    function_tool(name, schema=tool_schema)(run)
    return run
