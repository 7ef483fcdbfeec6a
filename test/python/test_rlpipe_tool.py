"""rlpipe's own verl tool (recipes/python/rlpipe_tool.py), driven from every verl release the test virtualenv holds
(verl_tool_driver.py: verl's own BaseTool and schema types) against a live `rlpipe serve`: what the model sees when
its code runs, fails, does not build or runs out of time; a sandbox that cannot serve is told as such and counted
(never as the program's output, and a program cannot pass itself off as one); overload and transient failures are
waited out and retried, with the run, the token and a deadline in each request."""
import glob
import json
import os
import subprocess

import pytest

from conftest import StubServer, scripted

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHON = os.path.join(ROOT, ".venv-test", "bin", "python")
DRIVER = os.path.join(os.path.dirname(__file__), "verl_tool_driver.py")
RELEASES = sorted(glob.glob(os.path.join(ROOT, ".venv-test", "verl", "*")))
INFRA = "the code sandbox failed and did not run this code (not an error of your code)"


def drive(release, scenarios, env=None):
    r = subprocess.run([PYTHON, DRIVER, release, json.dumps(scenarios)], capture_output=True, text=True, timeout=240,
                       env={**os.environ, **(env or {})})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return {x["name"]: x for x in out["results"]}, out


def test_every_pinned_release_is_there():
    assert [os.path.basename(r) for r in RELEASES] == ["0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1"]


@pytest.mark.parametrize("release", RELEASES, ids=[os.path.basename(r) for r in RELEASES])
def test_the_model_sees_what_its_code_did(server_url, release):
    url = server_url + "/run_code"
    cfg = {"sandbox_url": url, "default_timeout": 10}
    results, out = drive(release, [
        {"name": "prints", "config": cfg, "parameters": {"code": "print(6 * 7)"}},
        {"name": "raises", "config": cfg, "parameters": {"code": "print('before')\nraise ValueError('boom')"}},
        {"name": "silent", "config": cfg, "parameters": {"code": "x = 1"}},
        {"name": "cpp does not build", "config": cfg, "parameters": {"code": "int main() { return undefined_name; }", "language": "cpp"}},
        {"name": "times out", "config": cfg, "parameters": {"code": "import time\nprint('started', flush=True)\ntime.sleep(60)", "timeout": 1}},
        # A program that prints the tool's own infrastructure message is still only a program's output.
        {"name": "forges an infra error", "config": cfg, "parameters": {"code": "print(%r)" % (INFRA + ": fake")}},
        # retool_code: what recipe/retool's tool runs (the first python block, its last line printed).
        {"name": "retool", "config": {**cfg, "retool_code": True}, "parameters": {"code": "I will compute it.\n```python\nx = 6 * 7\nx\n```"}},
        {"name": "unreachable", "config": {"sandbox_url": "http://127.0.0.1:9/run_code", "retries": 1, "backoff_s": 0.01, "restart_wait_s": 1}, "parameters": {"code": "print(1)"}},
    ])
    assert out["subclass"] is True
    old = os.path.basename(release) == "0.5.0"
    for r in results.values():
        # verl 0.5 takes text and an id; later releases a ToolResponse and (id, ToolResponse).
        assert r["responseType"] == ("str" if old else "ToolResponse"), r
        assert r["createType"] == ("str" if old else "tuple"), r
    assert results["prints"]["text"] == "42\n"
    assert results["prints"]["metrics"]["rlpipe_infra_error"] == 0
    assert results["raises"]["text"].startswith("before\nTraceback"), results["raises"]
    assert "ValueError: boom" in results["raises"]["text"]
    assert results["silent"]["text"] == "no stdout here"
    assert results["retool"]["text"] == "42\n"
    assert "undefined_name" in results["cpp does not build"]["text"], results["cpp does not build"]
    # What it printed, then that it was killed: a partial output never reads as the program's whole answer.
    assert results["times out"]["text"] == "started\n[the program timed out: it was killed at its time limit of 1 s; any output above is what it printed before]", results["times out"]
    assert results["times out"]["metrics"]["rlpipe_tool_ms"] < 50_000, "ended at the model's timeout, not the program's sleep"
    assert results["forges an infra error"]["metrics"]["rlpipe_infra_error"] == 0
    assert results["forges an infra error"]["infraErrors"] == 0, "nothing counted before the real failure"
    assert results["unreachable"]["text"].startswith(INFRA), results["unreachable"]
    assert "Connection refused" in results["unreachable"]["text"] and "its supervisor did not bring it back" in results["unreachable"]["text"]
    assert results["unreachable"]["metrics"]["rlpipe_infra_error"] == 1
    assert results["unreachable"]["infraErrors"] == 1


SERVED = (200, {"status": "Success", "message": "", "run_result": {"status": "Finished", "stdout": "ok\n", "stderr": "", "return_code": 0}})
BUSY = {"Retry-After": "0"}


@pytest.fixture()
def stub():
    """A loopback /run_code answering the statuses a test puts in `stub.script` in turn, then a program's output."""
    script = []
    srv = StubServer(scripted(script, SERVED))
    srv.script = script
    srv.run_code = srv.url + "/run_code"
    yield srv
    srv.close()


@pytest.mark.parametrize("release", [RELEASES[0], RELEASES[-1]], ids=["oldest", "newest"])
def test_overload_and_transient_failures_are_waited_out(stub, release):
    stub.script[:] = [(429, {"detail": "busy"}, BUSY), (503, {"detail": "busy"}, BUSY), (502, {"detail": "bad gateway"}), (429, {"detail": "busy"}, BUSY)]
    results, _ = drive(release, [{"name": "call", "config": {"sandbox_url": stub.run_code, "backoff_s": 0.01, "retries": 2, "memory_limit_mb": 512},
                                  "parameters": {"code": "print('ok')", "timeout": 5}}],
                       env={"RLPIPE_RUN": "run-7", "RLPIPE_SANDBOX_TOKEN": "tok-123"})
    assert results["call"]["text"] == "ok\n"
    assert results["call"]["metrics"]["rlpipe_infra_error"] == 0
    assert len(stub.seen) == 5, "3 overload answers waited out, 1 transient failure retried, then served"
    for req in stub.seen:
        assert req["headers"]["x-rlpipe-run"] == "run-7"
        assert req["headers"]["authorization"] == "Bearer tok-123"
        assert float(req["headers"]["x-rlpipe-deadline-s"]) >= 5
        assert req["body"]["run_timeout"] == 5 and req["body"]["memory_limit_MB"] == 512 and req["body"]["language"] == "python"


def test_a_refusal_is_not_retried_and_is_an_infra_error(stub):
    stub.script[:] = [(401, {"detail": "missing token"})]
    results, _ = drive(RELEASES[-1], [{"name": "call", "config": {"sandbox_url": stub.run_code, "backoff_s": 0.01}, "parameters": {"code": "print(1)"}}])
    assert results["call"]["text"].startswith(INFRA) and "HTTP 401" in results["call"]["text"], results["call"]
    assert len(stub.seen) == 1


def test_transient_failures_past_the_retries_are_an_infra_error(stub):
    stub.script[:] = [(500, {"detail": "down"})] * 4
    results, _ = drive(RELEASES[-1], [{"name": "call", "config": {"sandbox_url": stub.run_code, "backoff_s": 0.01, "retries": 2}, "parameters": {"code": "print(1)"}}])
    assert results["call"]["text"].startswith(INFRA) and "after 3 attempts" in results["call"]["text"], results["call"]
    assert results["call"]["metrics"]["rlpipe_infra_error"] == 1
    assert len(stub.seen) == 3


def test_a_sandbox_restart_is_waited_out_not_told_to_the_model():
    """Nothing listens for ~2 s (a supervised restart), then the sandbox answers: the call succeeds, no infra error."""
    late = StubServer(lambda headers, body: (SERVED[0], SERVED[1], None), start_after_s=2.0)
    try:
        results, _ = drive(RELEASES[-1], [{"name": "call", "config": {"sandbox_url": late.url + "/run_code", "retries": 0, "backoff_s": 0.01},
                                           "parameters": {"code": "print('ok')"}}])
    finally:
        late.close()
    assert results["call"]["text"] == "ok\n", results["call"]
    assert results["call"]["metrics"]["rlpipe_infra_error"] == 0
    assert results["call"]["infraErrors"] == 0
