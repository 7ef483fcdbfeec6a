"""The verl-side reward shim against a live `rlpipe serve`, plus stub servers for its retry behaviour."""
import json
import time

import pytest

import rlpipe_reward as shim
from conftest import StubServer, scripted

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


def test_unreachable_service_raises_after_the_restart_wait():
    # Nothing listens (refused): waited out as a restart for restart_wait_s, then a clear error, never a score.
    with pytest.raises(shim.RewardServiceError, match="cannot reach .* for 1 s \\(its supervisor did not bring it back\\)"):
        shim.compute_score("code", RIGHT, GT, url="http://127.0.0.1:9/v1/rewards", retries=2, backoff_s=0.01, timeout_s=2, restart_wait_s=1)


def test_a_server_restart_is_waited_out(server_url):
    """The reward server refuses connections for ~2 s (restarting), then answers: the score comes back, no error."""
    import urllib.request

    def relay(headers, body):
        # To the live server, whose answer (the real score) comes back unchanged.
        req = urllib.request.Request(server_url + "/v1/rewards", data=json.dumps(body).encode(), headers={"Content-Type": "application/json", **({"Authorization": headers["authorization"]} if "authorization" in headers else {})})
        with urllib.request.urlopen(req, timeout=60) as r:
            return 200, json.loads(r.read()), None

    late = StubServer(relay, start_after_s=2.0)
    try:
        r = shim.compute_score("code", RIGHT, GT, url=late.url + "/v1/rewards", retries=0, backoff_s=0.01)
    finally:
        late.close()
    assert r["score"] == 1.0, r


_FLAKY_SCRIPT = []  # (status, payload) answers, consumed in order


@pytest.fixture()
def flaky():
    srv = StubServer(scripted(_FLAKY_SCRIPT, (500, {"detail": "script exhausted"})))
    yield srv, srv.url + "/v1/rewards"
    srv.close()


def ok(score):
    return {"score": score, "status": "ok", "passed": 1, "total": 1, "cached": False}


def test_retries_5xx_and_only_the_infra_failed_samples(flaky):
    srv, url = flaky
    infra = {"score": 0, "status": "infra_error", "passed": 0, "total": 0, "error": "sandbox down", "cached": False}
    _FLAKY_SCRIPT[:] = [(503, {"detail": "busy"}), (200, {"results": [ok(1.0), infra]}), (200, {"results": [ok(0.0)]})]
    results = shim.score_samples([{"solution_str": RIGHT, "ground_truth": GT}, {"solution_str": HALF, "ground_truth": GT}], url=url, backoff_s=0.01)
    assert [r["score"] for r in results] == [1.0, 0.0]
    assert [len(r["body"]["samples"]) for r in srv.seen] == [2, 2, 1]


def test_persistent_infra_error_is_raised_never_zero(flaky):
    _, url = flaky
    infra = {"score": 0, "status": "infra_error", "passed": 0, "total": 0, "error": "sandbox down", "cached": False}
    _FLAKY_SCRIPT[:] = [(200, {"results": [infra]})] * 3
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


# --- Overload: 429/503 with Retry-After (stub server; time.sleep and time.monotonic faked, nothing really waits) ---

class _Overloaded:
    """Answers `overloads` requests with `status` (+ Retry-After when set), then 200 with a valid body."""
    overloads = 0
    status = 429
    retry_after = None  # a header value, a callable returning one (evaluated per answer), or None for no header
    times = []  # wall-clock time of each request
    auth = []

    @staticmethod
    def respond(headers, body):
        _Overloaded.times.append(time.time())
        _Overloaded.auth.append(headers.get("authorization"))
        if _Overloaded.overloads > 0:
            _Overloaded.overloads -= 1
            ra = _Overloaded.retry_after() if callable(_Overloaded.retry_after) else _Overloaded.retry_after
            return _Overloaded.status, {"detail": "overloaded: queue full"}, (None if ra is None else {"Retry-After": ra})
        return 200, {"results": [ok(1.0) for _ in body["samples"]]}, None


def overloaded_server(overloads, retry_after="1", status=429):
    _Overloaded.overloads, _Overloaded.retry_after, _Overloaded.status = overloads, retry_after, status
    _Overloaded.times, _Overloaded.auth = [], []


@pytest.fixture()
def overloaded():
    srv = StubServer(_Overloaded.respond)
    yield srv.url
    srv.close()


class _Clock:
    def __init__(self):
        self.now = 1000.0
        self.sleeps = []

    def sleep(self, s):
        assert s >= 0
        self.sleeps.append(s)
        self.now += s

    def monotonic(self):
        return self.now


@pytest.fixture()
def clock(monkeypatch):
    """Records the shim's sleeps instead of sleeping; its monotonic clock advances only by them."""
    c = _Clock()
    monkeypatch.setattr(shim.time, "sleep", c.sleep)
    monkeypatch.setattr(shim.time, "monotonic", c.monotonic)
    monkeypatch.setattr(shim, "_overload_logged_at", None)
    return c


SAMPLE = {"data_source": "c", "solution_str": RIGHT, "ground_truth": GT, "extra_info": None}


def test_retry_after_is_waited_out_with_jitter(overloaded, clock):
    overloaded_server(4, "10")
    r = shim.score_samples([SAMPLE], url=overloaded + "/v1/rewards", retries=0, backoff_s=0.01)
    assert [x["score"] for x in r] == [1.0]
    assert len(_Overloaded.times) == 5 and _Overloaded.times == sorted(_Overloaded.times)
    assert len(clock.sleeps) == 4
    assert all(10.0 <= s <= 15.0 for s in clock.sleeps), clock.sleeps  # Retry-After + 0..50% of it
    assert len(set(clock.sleeps)) > 1 and max(clock.sleeps) > 10.0, "the waits are jittered"


def test_retry_after_jitter_bounds(overloaded, clock, monkeypatch):
    monkeypatch.setattr(shim.random, "uniform", lambda a, b: b)  # the largest jitter the shim may draw
    overloaded_server(1, "10")
    shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0)
    overloaded_server(1, "2")  # small Retry-After: jitter is still 0..1 s
    shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0)
    monkeypatch.setattr(shim.random, "uniform", lambda a, b: a)  # the smallest: never earlier than Retry-After
    overloaded_server(1, "7")
    shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0)
    assert clock.sleeps == [15.0, 3.0, 7.0]


def test_retry_after_http_date(overloaded, clock):
    from email.utils import formatdate
    overloaded_server(2, lambda: formatdate(time.time() + 40, usegmt=True))
    r = shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0, backoff_s=0.01)
    assert r["score"] == 1.0
    assert len(clock.sleeps) == 2 and all(30.0 <= s <= 60.0 for s in clock.sleeps), clock.sleeps
    clock.sleeps.clear()
    overloaded_server(1, lambda: formatdate(time.time() - 3600, usegmt=True))  # a date in the past: retry now (+ jitter)
    shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0)
    assert len(clock.sleeps) == 1 and 0.0 <= clock.sleeps[0] <= 1.0
    clock.sleeps.clear()
    overloaded_server(1, "soon")  # unreadable: as if absent, an ordinary retry
    with pytest.raises(shim.RewardServiceError, match="after 1 attempts: HTTP 429"):
        shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0)
    assert clock.sleeps == []


def test_overload_outlasts_retries_then_stops_at_overload_wait_s(overloaded, clock):
    overloaded_server(8, "1")
    assert shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=1)["score"] == 1.0
    assert len(_Overloaded.times) == 9  # far past retries + 1 = 2 attempts
    clock.sleeps.clear()
    overloaded_server(10 ** 6, "10")
    with pytest.raises(shim.RewardServiceError, match=r"stayed overloaded \(HTTP 429\) for 45 s") as e:
        shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=1, overload_wait_s=45)
    assert "queue full" in str(e.value)
    assert sum(clock.sleeps) == pytest.approx(45.0)  # never waits beyond the budget
    assert all(10.0 <= s <= 15.0 for s in clock.sleeps[:-1]) and clock.sleeps[-1] <= 15.0, clock.sleeps
    assert len(_Overloaded.times) == len(clock.sleeps) + 1 > 2


def test_without_retry_after_the_exponential_backoff_is_kept(overloaded, clock, monkeypatch):
    overloaded_server(2, None)
    assert shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=2, backoff_s=1.0)["score"] == 1.0
    assert len(clock.sleeps) == 2 and 0 <= clock.sleeps[0] <= 1.0 and 0 <= clock.sleeps[1] <= 2.0
    monkeypatch.setattr(shim.random, "uniform", lambda a, b: b)
    clock.sleeps.clear()
    overloaded_server(3, None)
    assert shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=3, backoff_s=1.0)["score"] == 1.0
    assert clock.sleeps == [1.0, 2.0, 4.0]
    clock.sleeps.clear()
    overloaded_server(5, None)  # no Retry-After: counts against retries
    with pytest.raises(shim.RewardServiceError, match="after 2 attempts: HTTP 429"):
        shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=1, backoff_s=1.0)
    assert clock.sleeps == [1.0]


def test_503_with_retry_after_is_overload_too(overloaded, clock):
    overloaded_server(3, "5", status=503)
    assert shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0, backoff_s=0.01)["score"] == 1.0
    assert len(clock.sleeps) == 3 and all(5.0 <= s <= 7.5 for s in clock.sleeps), clock.sleeps
    overloaded_server(10 ** 6, "5", status=503)
    with pytest.raises(shim.RewardServiceError, match=r"stayed overloaded \(HTTP 503\) for 20 s"):
        shim.compute_score_batch(["c"] * 2, [RIGHT, HALF], [GT, GT], [None, None], url=overloaded + "/v1/rewards", retries=0, overload_wait_s=20)


def test_retry_after_on_other_5xx_is_honoured_but_counts_against_retries(overloaded, clock):
    overloaded_server(5, "4", status=502)
    with pytest.raises(shim.RewardServiceError, match="after 2 attempts: HTTP 502"):
        shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=1, backoff_s=0.01)
    assert len(clock.sleeps) == 1 and 4.0 <= clock.sleeps[0] <= 6.0


def test_a_wait_is_capped_at_max_wait_s(overloaded, clock):
    from email.utils import formatdate
    overloaded_server(1, "3600")
    shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0)  # default max_wait_s=60
    overloaded_server(1, "10")
    shim.compute_score("code", RIGHT, GT, url=overloaded + "/v1/rewards", retries=0, max_wait_s=5)
    overloaded_server(1, lambda: formatdate(time.time() + 7200, usegmt=True))
    shim.compute_score_batch(["c"], [RIGHT], [GT], [None], url=overloaded + "/v1/rewards", retries=0)
    assert clock.sleeps == [60.0, 5.0, 60.0]


def test_overload_is_logged_at_most_every_30_s_without_the_token(overloaded, clock, monkeypatch, capsys):
    token = "shim-secret-token-fedcba9876543210"
    monkeypatch.setenv(shim.TOKEN_ENV, token)
    monkeypatch.setattr(shim.random, "uniform", lambda a, b: a)  # waits of exactly 10 s: at 0, 10, 20, 30, 40 s
    overloaded_server(5, "10")
    url = overloaded + "/t/" + token + "/v1/rewards"
    assert shim.compute_score("code", RIGHT, GT, url=url, retries=0)["score"] == 1.0
    assert _Overloaded.auth == ["Bearer " + token] * 6
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert out == "" and len(lines) == 2, err  # the waits at 0 s and 30 s
    assert all(l.startswith("rlpipe_reward: server overloaded (429), retrying in 10.0 s") for l in lines), err
    overloaded_server(10 ** 6, "10")
    with pytest.raises(shim.RewardServiceError) as e:
        shim.compute_score("code", RIGHT, GT, url=url, retries=0, overload_wait_s=25)
    out, err = capsys.readouterr()
    assert token not in err and token not in str(e.value) and "/t/***/" in str(e.value)
    overloaded_server(0)
    clock.now += 1000
    shim.compute_score("code", RIGHT, GT, url=url, retries=0)
    assert capsys.readouterr() == ("", "")  # nothing on success
