"""The verl-side reward shim against a live `rlpipe serve`, plus stub servers for its retry behaviour."""
import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

import rlpipe_reward as shim

GT = json.dumps({"input": ["1 2", "5 5"], "output": ["3", "10"], "fn_name": None, "type": "stdin_stdout"})
RIGHT = "Let me solve it.\n```python\na, b = map(int, input().split())\nprint(a + b)\n```"
HALF = "```python\na, b = map(int, input().split())\nprint(3)\n```"


def test_correct_answer_scores_one(server_url):
    r = shim.compute_score("code", RIGHT, GT, {"num_turns": 4}, url=server_url + "/v1/rewards")
    assert r == {"score": 1.0, "passed": 2, "total": 2, "pass_rate": 1.0}


def test_partial_credit_and_float_return(server_url):
    assert shim.compute_score("code", HALF, GT, None, url=server_url + "/v1/rewards", return_dict=False) == 0.5


def test_no_code_is_zero(server_url):
    r = shim.compute_score("code", "I refuse.", GT, url=server_url + "/v1/rewards")
    assert r["score"] == 0.0 and r["total"] == 0


def test_accepts_the_agent_loop_keywords(server_url):
    r = shim.compute_score(data_source="code", solution_str=RIGHT, ground_truth=GT, extra_info={"num_turns": 2},
                           reward_router_address="127.0.0.1:1", reward_model_tokenizer=None, url=server_url + "/v1/rewards")
    assert r["score"] == 1.0


def test_function_call_ground_truth_as_dict(server_url):
    gt = {"type": "function_call", "fn_name": "add", "input": [[1, 2], [2, 2]], "output": [[3], [4]]}
    r = shim.compute_score("code", "```python\ndef add(a, b):\n    return a + b\n```", gt, url=server_url + "/v1/rewards")
    assert r["score"] == 1.0


def test_invalid_ground_truth_raises_not_zero(server_url):
    with pytest.raises(ValueError, match="ground_truth"):
        shim.compute_score("code", RIGHT, "not json", url=server_url + "/v1/rewards")


def test_batch_scores_in_order_and_deduplicates(server_url):
    n = 6
    results = shim.score_samples([{"data_source": "c", "solution_str": RIGHT if i % 2 == 0 else HALF, "ground_truth": GT, "extra_info": None} for i in range(n)],
                                 url=server_url + "/v1/rewards")
    assert [r["score"] for r in results] == [1.0, 0.5] * 3
    assert sum(1 for r in results if r["cached"]) >= 4  # two distinct answers, evaluated once each
    batch = shim.compute_score_batch(["c"] * 2, [RIGHT, HALF], [GT, GT], [None, {"k": 1}], url=server_url + "/v1/rewards", return_dict=False)
    assert batch == [1.0, 0.5]


def test_token_from_environment(token_server, monkeypatch):
    url, token = token_server
    monkeypatch.delenv(shim.TOKEN_ENV, raising=False)
    with pytest.raises(shim.RewardServiceError, match="HTTP 401"):
        shim.compute_score("code", RIGHT, GT, url=url + "/v1/rewards", retries=0)
    monkeypatch.setenv(shim.TOKEN_ENV, token)
    assert shim.compute_score("code", RIGHT, GT, url=url + "/v1/rewards")["score"] == 1.0


def test_unreachable_service_raises_after_retries():
    with pytest.raises(shim.RewardServiceError, match="after 3 attempts: cannot reach"):
        shim.compute_score("code", RIGHT, GT, url="http://127.0.0.1:9/v1/rewards", retries=2, backoff_s=0.01, timeout_s=2)


class _Flaky(BaseHTTPRequestHandler):
    script = []  # list of (status, body) answers, consumed in order
    seen = []

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Flaky.seen.append(len(body["samples"]))
        status, payload = _Flaky.script.pop(0)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


@pytest.fixture()
def flaky():
    srv = HTTPServer(("127.0.0.1", 0), _Flaky)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    _Flaky.seen = []
    yield srv, "http://127.0.0.1:%d/v1/rewards" % srv.server_address[1]
    srv.shutdown()


def ok(score):
    return {"score": score, "status": "ok", "passed": 1, "total": 1, "cached": False}


def test_retries_5xx_and_only_the_infra_failed_samples(flaky):
    _, url = flaky
    infra = {"score": 0, "status": "infra_error", "passed": 0, "total": 0, "error": "sandbox down", "cached": False}
    _Flaky.script = [(503, {"detail": "busy"}), (200, {"results": [ok(1.0), infra]}), (200, {"results": [ok(0.0)]})]
    results = shim.score_samples([{"solution_str": RIGHT, "ground_truth": GT}, {"solution_str": HALF, "ground_truth": GT}], url=url, backoff_s=0.01)
    assert [r["score"] for r in results] == [1.0, 0.0]
    assert _Flaky.seen == [2, 2, 1]


def test_persistent_infra_error_is_raised_never_zero(flaky):
    _, url = flaky
    infra = {"score": 0, "status": "infra_error", "passed": 0, "total": 0, "error": "sandbox down", "cached": False}
    _Flaky.script = [(200, {"results": [infra]})] * 3
    with pytest.raises(shim.RewardServiceError, match="sandbox down"):
        shim.compute_score("code", RIGHT, GT, url=url, retries=2, backoff_s=0.01)


def test_names_its_run_so_the_function_counts_it(server_url, monkeypatch):
    import urllib.request
    run = "shim-usage-test-0a1b2c3d"
    monkeypatch.setenv(shim.RUN_ENV, run)
    # Two distinct answers (new to the server's cache), four samples: two programs run, two found again in the batch.
    right = "```python\na, b = map(int, input().split())\nprint(a + b)  # usage\n```"
    half = "```python\na, b = map(int, input().split())\nprint(3)  # usage\n```"
    shim.score_samples([{"data_source": "c", "solution_str": s, "ground_truth": GT, "extra_info": None} for s in (right, half, right, half)],
                       url=server_url + "/v1/rewards")
    shim.compute_score("code", "I refuse.", GT, url=server_url + "/v1/rewards")
    with urllib.request.urlopen(server_url + "/v1/usage/" + run, timeout=10) as resp:
        usage = json.loads(resp.read().decode("utf-8"))
    c = usage["counters"]
    assert usage["run"] == run and usage["platform"] == "local" and usage["sandbox"] == "local"
    assert (c["requests"], c["rewardRequests"], c["samples"], c["evaluated"], c["toolCalls"]) == (2, 2, 5, 2, 0)
    assert c["sandboxSeconds"] > 0 and c["functionSeconds"] > 0
    monkeypatch.delenv(shim.RUN_ENV)
    shim.compute_score("code", RIGHT, GT, url=server_url + "/v1/rewards")  # names no run: not counted
    with urllib.request.urlopen(server_url + "/v1/usage/" + run, timeout=10) as resp:
        assert json.loads(resp.read().decode("utf-8"))["counters"]["requests"] == 2
