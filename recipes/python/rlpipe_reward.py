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
"""
import json
import os
import random
import time
import urllib.error
import urllib.request

DEFAULT_URL = "http://127.0.0.1:8080/v1/rewards"
TOKEN_ENV = "RLPIPE_SANDBOX_TOKEN"
RUN_ENV = "RLPIPE_RUN"
RETRYABLE_HTTP = (429, 500, 502, 503, 504)


class RewardServiceError(RuntimeError):
    """The reward function could not score: the sandbox or the service failed (not the model)."""


def _post(url, payload, timeout_s, token, run=None):
    data = json.dumps(payload).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    if run:
        headers["X-Rlpipe-Run"] = run
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.loads(resp.read().decode("utf-8"))


def score_samples(samples, url=None, timeout_s=300.0, retries=4, backoff_s=1.0, config=None, token_env=None, run=None):
    """Score a list of {data_source, solution_str, ground_truth, extra_info}; returns one result dict each.

    Samples whose sandbox run failed are retried (only those) with jittered exponential backoff; if any
    still fails, RewardServiceError is raised.
    """
    url = url or os.environ.get("RLPIPE_REWARD_URL") or DEFAULT_URL
    token = os.environ.get(token_env or TOKEN_ENV) or None
    run = run or os.environ.get(RUN_ENV) or None
    results = [None] * len(samples)
    todo = list(range(len(samples)))
    last_error = None
    for attempt in range(retries + 1):
        if attempt > 0:
            time.sleep(random.uniform(0, backoff_s * (2 ** (attempt - 1))))
        payload = {"samples": [samples[i] for i in todo]}
        if config:
            payload["config"] = config
        try:
            body = _post(url, payload, timeout_s, token, run)
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:300]
            last_error = "HTTP %d from %s: %s" % (e.code, url, detail)
            if e.code in RETRYABLE_HTTP:
                continue
            raise RewardServiceError(last_error) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, OSError) as e:
            last_error = "cannot reach %s: %s" % (url, getattr(e, "reason", e))
            continue
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
    raise RewardServiceError("rlpipe reward service failed after %d attempts: %s" % (retries + 1, last_error))


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
                  backoff_s=1.0, return_dict=True, language=None, run_timeout_s=None, token_env=None, run=None, **kwargs):
    """verl's custom reward signature (accepts the extra keywords the agent loop passes)."""
    sample = {"data_source": data_source, "solution_str": solution_str, "ground_truth": ground_truth,
              "extra_info": _jsonable(extra_info)}
    config = {k: v for k, v in (("language", language), ("run_timeout_s", run_timeout_s)) if v is not None}
    (r,) = score_samples([sample], url=url, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, config=config, token_env=token_env, run=run)
    return _result(r, return_dict)


def compute_score_batch(data_sources, solution_strs, ground_truths, extra_infos, url=None, timeout_s=600.0, retries=4,
                        backoff_s=1.0, return_dict=True, language=None, run_timeout_s=None, token_env=None, run=None, **kwargs):
    """For reward_model.reward_manager=batch: one request for the whole batch."""
    samples = [{"data_source": d, "solution_str": s, "ground_truth": g, "extra_info": _jsonable(e)}
               for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extra_infos)]
    config = {k: v for k, v in (("language", language), ("run_timeout_s", run_timeout_s)) if v is not None}
    return [_result(r, return_dict) for r in score_samples(samples, url=url, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s, config=config, token_env=token_env, run=run)]


def _jsonable(v):
    """extra_info from parquet may hold numpy values; keep what JSON can carry."""
    if v is None:
        return None
    try:
        json.dumps(v)
        return v
    except TypeError:
        return json.loads(json.dumps(v, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
