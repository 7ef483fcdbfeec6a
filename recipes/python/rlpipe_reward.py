"""verl reward shim: score code answers through rlpipe's sandbox function (POST /v1/rewards).

Standard library only, so it runs in any training image. Point verl at it:

    custom_reward_function.path=rlpipe_reward.py
    custom_reward_function.name=compute_score          # one sample per call (naive / dapo managers)
    # or name=compute_score_batch with reward_model.reward_manager=batch (one HTTP call per batch:
    #   GRPO groups repeat answers, and the function evaluates each distinct answer once)
    +custom_reward_function.reward_kwargs.url=http://127.0.0.1:8080/v1/rewards

The token, when the function requires one, is read from the environment (RLPIPE_SANDBOX_TOKEN, or the
variable named by the token_env kwarg), never from the config. A sandbox failure is retried and then
raised: it is never turned into a 0 reward.

Every request names its run in the X-Rlpipe-Run header ($RLPIPE_RUN, which rlpipe deploys set, or the run
kwarg), so the function counts the run's requests and sandbox seconds for `rlpipe cost --run`.

An overloaded server answers 429 (or 503) with Retry-After (seconds or an HTTP-date). The shim then waits that
long plus jitter (0..50% of it, at least 0..1 s), at most max_wait_s (60) per wait, and keeps retrying for up
to overload_wait_s (600) seconds in all; these waits do not use up the `retries` meant for sandbox failures.
While it waits it logs to stderr (one line per wait, at most every 30 s); on success it prints nothing.
"""
import datetime
import email.utils
import json
import os
import random
import re
import sys
import time
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8080/v1/rewards"
TOKEN_ENV = "RLPIPE_SANDBOX_TOKEN"
RUN_ENV = "RLPIPE_RUN"
RETRYABLE_HTTP = (429, 500, 502, 503, 504)
OVERLOAD_HTTP = (429, 503)  # with Retry-After: the server is overloaded, waited out on its own time budget
OVERLOAD_LOG_EVERY_S = 30.0
_overload_logged_at = None  # time.monotonic() of the last overload line (process-wide, so parallel calls don't spam)


class RewardServiceError(RuntimeError):
    """The reward function could not score: the sandbox or the service failed (not the model)."""


def _post(url, payload, timeout_s, token, run=None, deadline_s=None):
    data = json.dumps(payload).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    if run:
        headers["X-Rlpipe-Run"] = run
    if deadline_s is not None:
        # The server ends the work when the caller gives up (rlpipe serve and functions read it; others ignore it).
        headers["X-Rlpipe-Deadline-S"] = "%g" % deadline_s
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.loads(resp.read().decode("utf-8"))


def _retry_after_s(headers):
    """Retry-After in seconds (delay-seconds or HTTP-date, RFC 9110 10.2.3), or None when absent or unreadable."""
    value = headers.get("Retry-After") if headers is not None else None
    if value is None:
        return None
    value = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:  # "-0000": UTC without a zone
        when = when.replace(tzinfo=datetime.timezone.utc)
    return max(0.0, when.timestamp() - time.time())


def _retry_after_wait(retry_after, max_wait_s):
    """Retry-After plus jitter (uniform 0..50% of it, at least 0..1 s) so clients don't return together; capped."""
    return min(retry_after + random.uniform(0, max(0.5 * retry_after, 1.0)), max_wait_s)


def _redact(url):
    """The URL for messages: a /t/<token>/ path prefix is the token, so it is never shown."""
    return re.sub(r"/t/[^/]+/", "/t/***/", url)


def _log_overload(code, wait, waited, budget):
    global _overload_logged_at
    now = time.monotonic()
    if _overload_logged_at is not None and now - _overload_logged_at < OVERLOAD_LOG_EVERY_S:
        return
    _overload_logged_at = now
    print("rlpipe_reward: server overloaded (%d), retrying in %.1f s (overloaded for %.0f s so far, giving up after %g s)"
          % (code, wait, waited, budget), file=sys.stderr, flush=True)


def score_samples(samples, url=None, timeout_s=300.0, retries=4, backoff_s=1.0, config=None, token_env=None, run=None,
                  max_wait_s=60.0, overload_wait_s=600.0, restart_wait_s=60.0):
    """Score a list of {data_source, solution_str, ground_truth, extra_info}; returns one result dict each.

    Samples whose sandbox run failed are retried (only those) with jittered exponential backoff; if any
    still fails after `retries` retries, RewardServiceError is raised. A retryable HTTP answer with Retry-After
    is waited out for that long plus jitter instead (each wait at most max_wait_s). Overload (429/503 with
    Retry-After) does not count against `retries`: it is retried for up to overload_wait_s seconds in all
    (answers and waits), then RewardServiceError says the server stayed overloaded. A refused connection (the
    sandbox is down while its supervisor restarts it) is retried for up to restart_wait_s seconds, not counted.
    """
    url = url or os.environ.get("RLPIPE_REWARD_URL") or DEFAULT_URL
    shown_url = _redact(url)
    token = os.environ.get(token_env or TOKEN_ENV) or None
    run = run or os.environ.get(RUN_ENV) or None
    max_wait_s = float(max_wait_s)
    overload_wait_s = float(overload_wait_s)
    results = [None] * len(samples)
    todo = list(range(len(samples)))
    last_error = None
    attempts = 0
    failures = 0  # attempts that count against `retries` (everything but overload)
    overloaded_s = 0.0  # time spent on overload answers and their waits
    overload_codes = []
    unreachable_since = None  # when the server first refused the connection (down, being restarted)
    restart_wait_s = float(restart_wait_s)
    while True:
        attempts += 1
        retry_after = None
        payload = {"samples": [samples[i] for i in todo]}
        if config:
            payload["config"] = config
        started = time.monotonic()
        try:
            body = _post(url, payload, timeout_s, token, run)
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:300]
            last_error = "HTTP %d from %s: %s" % (e.code, shown_url, detail)
            if e.code not in RETRYABLE_HTTP:
                raise RewardServiceError(last_error) from None
            retry_after = _retry_after_s(e.headers)
            if retry_after is not None and e.code in OVERLOAD_HTTP:
                overloaded_s += time.monotonic() - started
                if e.code not in overload_codes:
                    overload_codes.append(e.code)
                remaining = overload_wait_s - overloaded_s
                if remaining <= 0:
                    raise RewardServiceError(
                        "rlpipe reward server stayed overloaded (HTTP %s) for %.0f s over %d attempts (overload_wait_s=%g): %s"
                        % ("/".join(str(c) for c in overload_codes), overloaded_s, attempts, overload_wait_s, last_error))
                wait = min(_retry_after_wait(retry_after, max_wait_s), remaining)
                _log_overload(e.code, wait, overloaded_s, overload_wait_s)
                time.sleep(wait)
                overloaded_s += wait
                continue
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
            last_error = "cannot reach %s: %s" % (shown_url, getattr(e, "reason", e))
            reason = getattr(e, "reason", e)
            if isinstance(reason, ConnectionRefusedError) or isinstance(e, ConnectionRefusedError):
                # Nothing listens: the sandbox is down and its supervisor restarts it within seconds. Waited out
                # for up to restart_wait_s, not counted against `retries` (a restart must not fail a batch).
                if unreachable_since is None:
                    unreachable_since = time.monotonic()
                if time.monotonic() - unreachable_since < restart_wait_s:
                    time.sleep(random.uniform(0.25, 0.75))
                    continue
                raise RewardServiceError("%s for %.0f s (its supervisor did not bring it back)" % (last_error, time.monotonic() - unreachable_since)) from None
        else:
            unreachable_since = None
            still = []
            for k, i in enumerate(todo):
                r = body["results"][k]
                results[i] = r
                if r.get("status") == "infra_error":
                    still.append(i)
                    last_error = r.get("error") or "sandbox error"
            todo = still
            if not todo:
                return results
        failures += 1
        if failures > retries:
            raise RewardServiceError("rlpipe reward service failed after %d attempts: %s" % (attempts, last_error))
        if retry_after is not None:
            time.sleep(_retry_after_wait(retry_after, max_wait_s))
        else:
            time.sleep(random.uniform(0, backoff_s * (2 ** (failures - 1))))


def _result(r, return_dict):
    if r.get("status") == "invalid_test_cases":
        raise ValueError(r.get("error") or "invalid test cases")
    score = float(r.get("score", 0.0))
    if not return_dict:
        return score
    total = int(r.get("total", 0))
    passed = int(r.get("passed", 0))
    # verl logs every extra key as a metric; keep them numeric.
    return {"score": score, "passed": passed, "total": total, "pass_rate": (passed / total) if total else 0.0}


def compute_score(data_source, solution_str, ground_truth, extra_info=None, url=None, timeout_s=300.0, retries=4,
                  backoff_s=1.0, return_dict=True, language=None, run_timeout_s=None, token_env=None, run=None,
                  max_wait_s=60.0, overload_wait_s=600.0, restart_wait_s=60.0, **kwargs):
    """verl's custom reward signature (accepts the extra keywords the agent loop passes)."""
    sample = {"data_source": data_source, "solution_str": solution_str, "ground_truth": ground_truth,
              "extra_info": _jsonable(extra_info)}
    config = {k: v for k, v in (("language", language), ("run_timeout_s", run_timeout_s)) if v is not None}
    (r,) = score_samples([sample], url=url, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, config=config, token_env=token_env, run=run,
                         max_wait_s=max_wait_s, overload_wait_s=overload_wait_s, restart_wait_s=restart_wait_s)
    return _result(r, return_dict)


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, url=None, timeout_s=600.0, retries=4,
                        backoff_s=1.0, return_dict=True, language=None, run_timeout_s=None, token_env=None, run=None,
                        max_wait_s=60.0, overload_wait_s=600.0, restart_wait_s=60.0, **kwargs):
    """For reward_model.reward_manager=batch: one request for the whole batch."""
    samples = [{"data_source": d, "solution_str": s, "ground_truth": g, "extra_info": _jsonable(e)}
               for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extra_infos)]
    config = {k: v for k, v in (("language", language), ("run_timeout_s", run_timeout_s)) if v is not None}
    return [_result(r, return_dict) for r in score_samples(samples, url=url, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, config=config, token_env=token_env, run=run,
                                                           max_wait_s=max_wait_s, overload_wait_s=overload_wait_s, restart_wait_s=restart_wait_s)]


def _jsonable(v):
    """extra_info from parquet may hold numpy values; keep what JSON can carry."""
    if v is None:
        return None
    try:
        json.dumps(v)
        return v
    except TypeError:
        return json.loads(json.dumps(v, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
