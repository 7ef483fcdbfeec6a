"""Sandbox health per training step, beside verl's metrics (standard library only; ray only with --ray-nodes).

    python3 rlpipe_health.py --metrics VERL_FILE --out HEALTH_FILE (--url http://127.0.0.1:PORT ... | --ray-nodes READY.json)
                             [--token-env NAME] [--interval-s 5] [--once]

Reads `rlpipe serve`'s GET /metrics (Prometheus text) of every sandbox of the job — the URLs given, or, on a Ray job,
each node's through its sandbox actor (rlpipe_node_sandbox.py) — every --interval-s seconds, and watches verl's file
logger output for the step it last logged. When verl logs step N, one line goes to HEALTH_FILE in verl's own format,
with what the sandboxes did since step N-1 was logged (summed over nodes; a restarted sandbox's counters start again):

    {"step": N, "data": {"sandbox/requests": ..., "sandbox/infra_errors": ..., "sandbox/overloaded": ...,
                         "sandbox/timeouts": ..., "sandbox/failures": ..., "sandbox/latency_p50_ms": ...,
                         "sandbox/latency_p99_ms": ..., "sandbox/unreachable_polls": ...}}

A step whose failures (infra errors, overload refusals, timeouts) exceed --max-failure-rate of its calls (default
$RLPIPE_MAX_SANDBOX_FAILURE_RATE, else 20%; steps with fewer than --min-requests calls are not judged) stops the run
loudly, as a lost sandbox does: the reason in $RLPIPE_SANDBOX_LOST and SIGUSR1 to launch.sh ($RLPIPE_LAUNCH_PID), which
exits 3 — failures that many would otherwise be trained on as the model's results.

The sync sidecar uploads HEALTH_FILE as a second metrics stream, so `rlpipe metrics` plots it with the training
curves and a user sees the steps where rewards were starved. requests count the calls to routes that run programs,
refused ones included; overloaded are the refusals at admission (429, or the server's --overload-status); timeouts are 504 answers plus requests whose deadline passed; latency percentiles
are estimated from the histogram buckets of the interval (bucket upper bounds).
"""
import argparse
import json
import os
import re
import sys
import time
import urllib.request

WORK_ROUTES = frozenset(["/run_code", "/common_evaluate", "/common_evaluate_batch", "/run_jupyter", "/v1/rewards"])
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def log(msg):
    print("[rlpipe health %s] %s" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), msg), file=sys.stderr, flush=True)


def parse_prometheus(text):
    """{(name, ((label, value), ...)): float} of a text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line.strip())
        if m is None:
            continue
        labels = tuple(sorted(LABEL.findall(m.group(2) or "")))
        try:
            out[(m.group(1), labels)] = float(m.group(3))
        except ValueError:
            continue
    return out


def totals(samples):
    """The counters health is made of, for one sandbox: flat {key: value}; histogram buckets keyed by their bound."""
    t = {"requests": 0.0, "infra_errors": 0.0, "overloaded": 0.0, "timeouts": 0.0}
    buckets = {}
    for (name, labels), v in samples.items():
        if name == "rlpipe_process_start_time_seconds":
            t["started"] = v
            continue
        lab = dict(labels)
        if lab.get("route") not in WORK_ROUTES:
            continue
        if name == "rlpipe_requests_total":
            t["requests"] += v
            if lab.get("status") == "504":
                t["timeouts"] += v
        elif name == "rlpipe_rejected_total":  # refused at admission (429, or the server's --overload-status): not in requests_total
            t["overloaded"] += v
            t["requests"] += v
        elif name == "rlpipe_cancelled_total" and lab.get("reason") == "deadline":
            t["timeouts"] += v
        elif name == "rlpipe_infra_errors_total":
            t["infra_errors"] += v
        elif name == "rlpipe_request_duration_seconds_bucket":
            le = lab.get("le")
            buckets[le] = buckets.get(le, 0.0) + v
    for le, v in buckets.items():
        t["le:" + le] = v
    return t


def delta(prev, cur):
    """cur - prev per counter. A sandbox that restarted (another start time, or a counter that went down) counts
    again from zero: its new values are the delta."""
    restarted = prev.get("started") != cur.get("started")
    out = {}
    for k, v in cur.items():
        if k == "started":
            continue
        p = prev.get(k, 0.0)
        out[k] = v if restarted or v < p else v - p
    return out


def quantile_ms(d, q):
    """The q-quantile (upper bucket bound, ms) of the interval's cumulative bucket deltas, or None without requests."""
    bounds = sorted(((float("inf") if k[3:] == "+Inf" else float(k[3:])), v) for k, v in d.items() if k.startswith("le:"))
    total = bounds[-1][1] if bounds else 0
    if total <= 0:
        return None
    for le, cum in bounds:
        if cum >= q * total:
            return None if le == float("inf") else round(le * 1000, 3)
    return None


def health_row(d, unreachable):
    row = {"sandbox/" + k: int(d.get(k, 0)) for k in ("requests", "infra_errors", "overloaded", "timeouts")}
    row["sandbox/failures"] = row["sandbox/infra_errors"] + row["sandbox/overloaded"] + row["sandbox/timeouts"]
    row["sandbox/unreachable_polls"] = unreachable
    for q, key in ((0.5, "sandbox/latency_p50_ms"), (0.99, "sandbox/latency_p99_ms")):
        v = quantile_ms(d, q)
        if v is not None:
            row[key] = v
    return row


def last_logged_step(path):
    """The step of the last complete line of verl's file logger output, or None."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 1024 * 1024))
            data = f.read()
    except OSError:
        return None
    for line in reversed(data.split(b"\n")[:-1]):  # the part after the last newline is incomplete
        try:
            step = json.loads(line).get("step")
        except (ValueError, AttributeError):
            continue
        if isinstance(step, int):
            return step
    return None


class UrlSource:
    def __init__(self, urls, token):
        self.urls = urls
        self.token = token

    def fetch(self):
        """{node: prometheus text}; a sandbox that does not answer is left out (and counted)."""
        out = {}
        for u in self.urls:
            req = urllib.request.Request(u.rstrip("/") + "/metrics", headers={"Authorization": "Bearer " + self.token} if self.token else {})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    out[u] = r.read().decode("utf-8", "replace")
            except Exception:
                pass
        return out, len(self.urls)


class RayNodesSource:
    def __init__(self, ready_path):
        import ray  # only on a Ray job
        self.ray = ray
        with open(ready_path, encoding="utf-8") as f:
            ready = json.load(f)
        ray.init(address=os.environ.get("RAY_ADDRESS") or "auto", logging_level="ERROR", log_to_driver=False, namespace=ready["namespace"])
        self.actors = {name: ray.get_actor(name, namespace=ready["namespace"]) for name in ready["actors"]}

    def fetch(self):
        refs = {name: a.metrics_text.remote() for name, a in self.actors.items()}
        out = {}
        for name, ref in refs.items():
            try:
                text = self.ray.get(ref, timeout=30)
            except Exception:
                continue
            if text is not None:
                out[name] = text
        return out, len(self.actors)


class Health:
    def __init__(self, source, metrics_path, out_path):
        self.source = source
        self.metrics_path = metrics_path
        self.out_path = out_path
        self.base = None  # per node: counters when the last step was logged
        self.cur = {}
        self.step = None
        self.unreachable = 0

    def poll(self):
        texts, expected = self.source.fetch()
        self.unreachable += expected - len(texts)
        for node, text in texts.items():
            self.cur[node] = totals(parse_prometheus(text))
        step = last_logged_step(self.metrics_path)
        if self.base is None:
            self.base = {n: dict(t) for n, t in self.cur.items()}
            self.step = step
            return None
        if step is None or step == self.step:
            return None
        summed = {}
        for node, t in self.cur.items():
            for k, v in delta(self.base.get(node, {}), t).items():
                summed[k] = summed.get(k, 0.0) + v
        row = {"step": step, "data": health_row(summed, self.unreachable)}
        with open(self.out_path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
        self.base = {n: dict(t) for n, t in self.cur.items()}
        self.step = step
        self.unreachable = 0
        return row


def over_limit(row, max_rate, min_requests):
    """Why a step's sandbox failures stop the run (infra errors, overload and timeouts are not the model's answers, and
    past this share they would make up the step's rewards and tool results), or None."""
    d = row["data"]
    requests, failures = d["sandbox/requests"], d["sandbox/failures"]
    if max_rate is None or requests < min_requests or requests <= 0:
        return None
    rate = failures / requests
    if rate <= max_rate:
        return None
    return ("step %d: %d of %d sandbox calls failed (%d infra errors, %d refused as overloaded, %d timed out): %.0f%% is over "
            "the run's limit of %.0f%% (RLPIPE_MAX_SANDBOX_FAILURE_RATE)" % (row["step"], failures, requests, d["sandbox/infra_errors"],
                                                                          d["sandbox/overloaded"], d["sandbox/timeouts"], rate * 100, max_rate * 100))


def stop_the_run(why):
    """The same way a lost sandbox stops it: the reason in $RLPIPE_SANDBOX_LOST, SIGUSR1 to launch.sh."""
    import signal
    log("error: " + why)
    path = os.environ.get("RLPIPE_SANDBOX_LOST")
    if path:
        tmp = "%s.tmp.%d" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(why + "\n")
        os.replace(tmp, path)
    pid = os.environ.get("RLPIPE_LAUNCH_PID", "")
    if pid.isdigit():
        try:
            os.kill(int(pid), signal.SIGUSR1)
        except ProcessLookupError:
            pass


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metrics", required=True, help="verl's file logger output")
    ap.add_argument("--out", required=True, help="where the health lines go (synced beside verl's)")
    ap.add_argument("--url", action="append", default=[], help="a sandbox's base URL (repeatable)")
    ap.add_argument("--ray-nodes", help="the node sandboxes' ready file (rlpipe_node_sandbox.py)")
    ap.add_argument("--token-env", help="the variable holding the sandbox's token")
    ap.add_argument("--interval-s", type=float, default=5.0)
    ap.add_argument("--max-failure-rate", type=float, default=None,
                    help="stop the run when a step's sandbox failures exceed this share of its calls (default $RLPIPE_MAX_SANDBOX_FAILURE_RATE, else 0.2; 1 turns it off)")
    ap.add_argument("--min-requests", type=int, default=20, help="only steps with at least this many sandbox calls are judged")
    args = ap.parse_args(argv)
    max_rate = args.max_failure_rate if args.max_failure_rate is not None else float(os.environ.get("RLPIPE_MAX_SANDBOX_FAILURE_RATE") or 0.2)
    max_rate = None if max_rate >= 1 else max_rate
    if bool(args.url) == bool(args.ray_nodes):
        log("give --url (one or more) or --ray-nodes")
        return 2
    token = os.environ.get(args.token_env) if args.token_env else None
    source = RayNodesSource(args.ray_nodes) if args.ray_nodes else UrlSource(args.url, token)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    health = Health(source, args.metrics, args.out)
    stopping = []
    import signal
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    while True:
        final = bool(stopping)
        row = None
        try:
            row = health.poll()
        except Exception as e:  # a poll that fails never takes the job down: health is for the user, not the run
            log("poll failed: %s" % e)
        why = None if row is None else over_limit(row, max_rate, args.min_requests)
        if why is not None and not final:
            stop_the_run(why)
        if final:
            return 0  # stopped: one last poll (the step verl logged last) has been written
        deadline = time.monotonic() + args.interval_s
        while time.monotonic() < deadline and not stopping:
            time.sleep(min(0.5, args.interval_s))


if __name__ == "__main__":
    sys.exit(main())
