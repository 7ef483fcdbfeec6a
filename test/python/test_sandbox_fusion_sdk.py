"""SandboxFusion's published Python SDK (sandbox-fusion on PyPI: its client and its pydantic request and response
models) against `rlpipe serve`: every language the server offers, its result rules for compile and run failures, and
/run_jupyter, as a program written for SandboxFusion would use them."""
import json
import os

import pytest
import sandbox_fusion as sf
from sandbox_fusion.models import CommandRunStatus, RunStatus

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PROGRAMS = json.load(open(os.path.join(ROOT, "test", "fixtures", "sandbox-programs.json")))
MAPPING = sf.SummaryMapping(Success="ok", Failed="failed", CompileFailed="compile_failed", CompileTimeout="compile_timeout", RunFailed="run_failed", RunTimeout="run_timeout")


def _run(url, language, code, stdin=None, run_timeout=60):
    return sf.run_code(sf.RunCodeRequest(code=code, language=language, stdin=stdin, run_timeout=run_timeout, compile_timeout=120), endpoint=url, max_attempts=1)


def test_every_offered_language_runs_through_the_sdk(env_server):
    url, languages = env_server
    stdio = [l for l in languages if l in PROGRAMS["stdio"]]
    tests = [l for l in languages if l in PROGRAMS["tests"]]
    assert sorted(stdio + tests) == sorted(languages)
    jobs = [{"url": url, "language": l, "code": PROGRAMS["stdio"][l]["right"], "stdin": "40 2\n"} for l in stdio]
    jobs += [{"url": url, "language": l, "code": PROGRAMS["tests"][l][kind]} for l in tests for kind in ("pass", "fail")]
    results = sf.run_concurrent(_run, kwargs=jobs, concurrency=4)
    for job, res in zip(jobs, results):
        where = "%s: %s" % (job["language"], res.json()[:1500])
        if "stdin" in job:
            assert res.status == RunStatus.Success, where
            assert res.run_result.stdout == "42\n", where
            assert sf.summary_run_code_result(res, MAPPING) == "ok", where
        else:
            passing = job["code"] == PROGRAMS["tests"][job["language"]]["pass"]
            assert sf.summary_run_code_result(res, MAPPING) == ("ok" if passing else "run_failed"), where


def test_failures_summarise_as_sandboxfusion_defines_them(env_server):
    url, _ = env_server
    compile_error = _run(url, "cpp", "int main() { return x; }")
    assert compile_error.status == RunStatus.Failed
    assert compile_error.run_result is None and compile_error.compile_result.return_code != 0
    assert sf.summary_run_code_result(compile_error, MAPPING) == "compile_failed"
    # A Python syntax error is the run's (SandboxFusion compiles nothing for Python).
    syntax = _run(url, "python", "def f(:\n  pass")
    assert sf.summary_run_code_result(syntax, MAPPING) == "run_failed"
    assert "SyntaxError" in syntax.run_result.stderr
    thrown = _run(url, "nodejs", "throw new Error('boom')")
    assert sf.summary_run_code_result(thrown, MAPPING) == "run_failed"
    slow = _run(url, "python", "while True:\n    pass", run_timeout=1)
    assert slow.run_result.status == CommandRunStatus.TimeLimitExceeded
    assert sf.summary_run_code_result(slow, MAPPING) == "run_timeout"


def test_run_jupyter_keeps_one_namespace_across_cells(env_server):
    url, _ = env_server
    res = sf.run_jupyter(sf.RunJupyterRequest(cells=["import sympy\nx = sympy.symbols('x')", "sympy.integrate(x**2, x)", "print('out')", "raise ValueError('bad')"]), endpoint=url, max_attempts=1)
    assert res.status == RunStatus.Success
    assert [c.stdout for c in res.cells] == ["", "", "out\n", ""]
    assert res.cells[1].display[0]["text/plain"] == "x**3/3"
    assert res.cells[3].error[0]["ename"] == "ValueError"
