"""rlpipe checkpoint and metrics sidecar for training jobs (standard library only).

Watches verl's checkpoint directory and metrics file and uploads through rlpipe's runs function, which hands
out short-lived presigned URLs: no cloud credentials enter the training container. A step is uploaded only
after verl has finished it (latest_checkpointed_iteration.txt), file by file, each part checked against the
MD5 the server reports; then the function commits the step's manifest. Interrupted uploads resume without
re-sending completed parts; expired URLs are renewed.

    python3 rlpipe_sync.py --url http://FUNCTION --run RUN --dir CKPT_DIR [--metrics FILE] [--once]

The run token is read from $RLPIPE_RUN_TOKEN (or --token-env NAME).
"""
import argparse
import base64
import hashlib
import json
import os
import random
import re
import signal
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

TRACKER = "latest_checkpointed_iteration.txt"
STEP_DIR = re.compile(r"^global_step_(\d+)$")
MIB = 1024 * 1024
RETRYABLE = (429, 500, 502, 503, 504)


class SyncError(RuntimeError):
    pass


class UrlExpired(Exception):
    pass


def log(msg):
    sys.stderr.write("[rlpipe_sync %s] %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


class Client:
    """Calls the runs function (JSON) and the presigned URLs it returns, with bounded jittered retries."""

    def __init__(self, url, run, token, attempts=6, timeout_s=300.0):
        self.base = url.rstrip("/") + "/v1/runs/" + run
        self.token = token
        self.attempts = attempts
        self.timeout_s = timeout_s

    def _retry(self, fn):
        for attempt in range(self.attempts):
            try:
                return fn()
            except urllib.error.HTTPError as e:
                if e.code not in RETRYABLE or attempt + 1 == self.attempts:
                    raise
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                if attempt + 1 == self.attempts:
                    raise
            time.sleep(random.uniform(0, min(30.0, 0.5 * 2 ** attempt)))

    def call(self, method, op, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self.token}
        if data is not None:
            headers["Content-Type"] = "application/json"

        def go():
            req = urllib.request.Request(self.base + "/" + op, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                if e.code in RETRYABLE:
                    raise
                raise SyncError("%s %s: HTTP %d %s" % (method, op, e.code, e.read()[:300].decode("utf-8", "replace"))) from None

        return self._retry(go)

    def put(self, url, body, headers, md5hex):
        """PUT to a presigned URL; the ETag must be the MD5 of what we sent (else the bytes were damaged)."""

        def go():
            # An explicit type: urllib would otherwise label the bytes as a form, which some servers then parse.
            req = urllib.request.Request(url, data=body, method="PUT", headers=dict(headers, **{"Content-Length": str(len(body)), "Content-Type": "application/octet-stream"}))
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                    etag = (r.headers.get("ETag") or "").strip('"')
            except urllib.error.HTTPError as e:
                text = e.read()[:500].decode("utf-8", "replace")
                if e.code == 403 and ("expired" in text.lower() or "AccessDenied" in text):
                    raise UrlExpired() from None
                if e.code == 400 and "BadDigest" in text:
                    raise ConnectionError("BadDigest: damaged in transit") from None
                raise
            if etag and etag != md5hex:
                raise ConnectionError("stored bytes differ from the part sent (ETag %s != MD5 %s)" % (etag, md5hex))

        return self._retry(go)


def hash_file(path, part_size):
    sha = hashlib.sha256()
    md5s = []
    with open(path, "rb") as f:
        while True:
            part = f.read(part_size)
            if not part and md5s:
                break
            sha.update(part)
            md5s.append(hashlib.md5(part).hexdigest())
            if len(part) < part_size:
                break
    return sha.hexdigest(), md5s


def upload_parts(client, path, part_size, md5s, parts, parallel):
    """Send parts `parallel` at a time; each worker reads its part only when it starts (memory: parallel × part)."""

    def one(p):
        n = p["partNumber"]
        with open(path, "rb") as f:
            f.seek((n - 1) * part_size)
            body = f.read(part_size)
        client.put(p["url"], body, p["headers"], md5s[n - 1])

    pool = ThreadPoolExecutor(max_workers=max(1, parallel))
    try:
        for fut in [pool.submit(one, p) for p in parts]:
            fut.result()  # the first failure (e.g. UrlExpired) propagates; parts already stored are kept
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def upload_file(client, step, rel, path, part_size, parallel=4):
    size = os.path.getsize(path)
    sha, md5s = hash_file(path, part_size)
    remote = "checkpoints/global_step_%d/%s" % (step, rel)
    for _renewal in range(20):
        plan = client.call("POST", "uploads", {"path": remote, "size": size, "sha256": sha, "partSize": part_size, "partMd5s": md5s})
        try:
            if plan["mode"] == "single":
                with open(path, "rb") as f:
                    client.put(plan["url"], f.read(), plan["headers"], md5s[0])
            else:
                upload_parts(client, path, part_size, md5s, [p for p in plan["parts"] if not p["done"]], parallel)
                client.call("POST", "uploads/complete", {"path": remote, "uploadId": plan["uploadId"], "partMd5s": md5s})
            return {"path": rel, "size": size, "sha256": sha}
        except UrlExpired:
            log("%s: presigned URL expired; asking for fresh ones (done parts are kept)" % remote)
    raise SyncError("%s: URLs kept expiring; is the clock right?" % remote)


def list_files(step_dir):
    out = []
    for root, _dirs, files in os.walk(step_dir):
        for name in files:
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                out.append(os.path.relpath(full, step_dir).replace(os.sep, "/"))
    return sorted(out)


def sync_checkpoints(client, ckpt_dir, part_size, keep, recipe_hash, committed, parallel=4):
    try:
        with open(os.path.join(ckpt_dir, TRACKER)) as f:
            latest = int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return []
    steps = sorted(int(m.group(1)) for m in (STEP_DIR.match(d) for d in os.listdir(ckpt_dir)) if m and os.path.isdir(os.path.join(ckpt_dir, m.group(0))))
    done = []
    for step in steps:
        if step > latest or step in committed:
            continue
        step_dir = os.path.join(ckpt_dir, "global_step_%d" % step)
        try:
            files = [upload_file(client, step, rel, os.path.join(step_dir, rel), part_size, parallel) for rel in list_files(step_dir)]
        except FileNotFoundError:
            log("step %d: removed locally during upload; not committed" % step)
            continue
        body = {"step": step, "files": files}
        if keep:
            body["keep"] = keep
        if recipe_hash:
            body["recipeHash"] = recipe_hash
        r = client.call("POST", "commit", body)
        committed.add(step)
        done.append(step)
        log("step %d: committed %d files%s" % (step, len(files), (", deleted steps %s" % r["deleted"]) if r.get("deleted") else ""))
    return done


def sync_metrics(client, path, offsets):
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return 0
    with f:
        first = f.readline()
        if not first.endswith(b"\n"):
            return 0
        gen = hashlib.sha256(first[:-1]).hexdigest()[:16]
        start = offsets.get(gen, 0)
        f.seek(start)
        data = f.read()
    end_nl = data.rfind(b"\n")
    if end_nl < 0:
        return 0
    data = data[: end_nl + 1]
    sent = 0
    while sent < len(data):
        cut = min(len(data), sent + 4 * MIB)
        if cut < len(data):
            nl = data.rfind(b"\n", sent, cut)
            cut = nl + 1 if nl >= sent else cut
        chunk = data[sent:cut]
        md5 = hashlib.md5(chunk).hexdigest()
        for _renewal in range(20):
            r = client.call("POST", "metrics", {"generation": gen, "start": start + sent, "end": start + cut, "md5": md5})
            try:
                client.put(r["url"], chunk, r["headers"], md5)
                break
            except UrlExpired:
                continue
        sent = cut
    offsets[gen] = start + len(data)
    return sent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", required=True, help="base URL of the rlpipe function")
    ap.add_argument("--run", required=True)
    ap.add_argument("--dir", required=True, help="verl's trainer.default_local_dir")
    ap.add_argument("--metrics", help="verl's file logger output ($VERL_FILE_LOGGER_PATH)")
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--part-size-mb", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=4, help="parts in flight (memory: parallel x part size)")
    ap.add_argument("--keep-last", type=int)
    ap.add_argument("--keep-every", type=int)
    ap.add_argument("--recipe-hash")
    ap.add_argument("--token-env", default="RLPIPE_RUN_TOKEN")
    args = ap.parse_args(argv)
    token = os.environ.get(args.token_env)
    if not token:
        log("environment variable %s (the run token) is not set" % args.token_env)
        return 2
    client = Client(args.url, args.run, token)
    keep = {k: v for k, v in (("last", args.keep_last), ("every", args.keep_every)) if v}
    part_size = max(8, args.part_size_mb) * MIB
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    state = client.call("GET", "state")
    committed = set(state.get("committed", []))
    offsets = dict(state.get("metrics", {}))
    while True:
        sync_checkpoints(client, args.dir, part_size, keep, args.recipe_hash, committed, args.parallel)
        if args.metrics:
            sync_metrics(client, args.metrics, offsets)
        if args.once or stopping["now"]:
            return 0
        deadline = time.time() + args.interval
        while time.time() < deadline and not stopping["now"]:
            time.sleep(0.5)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SyncError as e:
        log("error: %s" % e)
        sys.exit(1)
