"""rlpipe checkpoint and metrics sidecar for training jobs (standard library only).

Watches verl's checkpoint directory and metrics file. A step is uploaded only after verl has finished it
(latest_checkpointed_iteration.txt), file by file; then the step's manifest is written, last, which commits it.
Three ways to the store:

- through rlpipe's runs function (--url), which hands out short-lived presigned URLs: no cloud credentials enter
  the training container. Each part is checked against the MD5 the server reports; interrupted uploads resume
  without re-sending completed parts; expired URLs are renewed.
      python3 rlpipe_sync.py --url http://FUNCTION --run RUN --dir CKPT_DIR [--metrics FILE] [--once]
  The run token is read from $RLPIPE_RUN_TOKEN (or --token-env NAME).
- straight to S3, OBS or COS through the S3 API (--store s3://|obs://|cos://bucket/prefix), signed with AWS SigV4
  from the job's environment (AWS_*, OBS_ACCESS_KEY_ID/OBS_SECRET_ACCESS_KEY, COS_SECRET_ID/COS_SECRET_KEY or
  TENCENTCLOUD_SECRET_ID/KEY; *_ENDPOINT overrides the endpoint).
- into a directory (--store file:///dir) in the store's layout, for a platform that uploads that directory
  itself (a ModelArts output channel): files are hard-linked, nothing is copied, and no credential is needed.
"""
import argparse
import base64
import datetime
import hashlib
import hmac
import json
import os
import random
import re
import shutil
import signal
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
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


# ---------------------------------------------------------------------------------------------- store mode
# The store's layout, as rlpipe reads it (core/checkpoints.ts): <run>/checkpoints/global_step_N/<file>, the
# manifest <run>/checkpoints/global_step_N.manifest.json (written last: it commits the step), and metrics chunks
# <run>/metrics/<generation>/<start:016d>-<end:016d>.jsonl named by byte range (S3 has no append).

MANIFEST_KEY = re.compile(r"checkpoints/global_step_(\d+)\.manifest\.json$")
CHUNK_KEY = re.compile(r"metrics/([0-9a-f]{16})/(\d{16})-(\d{16})\.jsonl$")
RUN_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(MIB), b""):
            h.update(block)
    return h.hexdigest()


class DirStore:
    """A directory in the store's layout; files are hard-linked in (copied across file systems), writes are atomic."""

    def __init__(self, root):
        self.root = os.path.abspath(root)
        self.url = "file://" + self.root
        os.makedirs(self.root, exist_ok=True)

    def _path(self, key):
        return os.path.join(self.root, *key.split("/"))

    def list(self, prefix):
        base = self._path(prefix.rstrip("/")) if prefix.rstrip("/") else self.root
        out = []
        for root, _dirs, files in os.walk(base):
            for name in files:
                if ".rlpipe-tmp." in name:
                    continue
                full = os.path.join(root, name)
                out.append((os.path.relpath(full, self.root).replace(os.sep, "/"), os.path.getsize(full)))
        return sorted(k for k in out if k[0].startswith(prefix))

    def _place(self, key, write):
        dst = self._path(key)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        tmp = "%s.rlpipe-tmp.%d" % (dst, os.getpid())
        try:
            write(tmp)
            os.replace(tmp, dst)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    def put_bytes(self, key, data):
        def write(tmp):
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        self._place(key, write)

    def put_file(self, key, path, part_size):
        sha = sha256_file(path)

        def write(tmp):
            try:
                os.link(path, tmp)
            except OSError:
                shutil.copyfile(path, tmp)
        self._place(key, write)
        return os.path.getsize(path), sha

    def delete(self, keys):
        for key in keys:
            try:
                os.unlink(self._path(key))
            except FileNotFoundError:
                pass
            d = os.path.dirname(self._path(key))
            while d.startswith(self.root + os.sep):
                try:
                    os.rmdir(d)
                except OSError:
                    break
                d = os.path.dirname(d)


class S3Store:
    """S3, OBS and COS through the S3 API: SigV4 with UNSIGNED-PAYLOAD (what OBS accepts), Content-MD5 on every body."""

    SCHEMES = {
        "s3": {"id": ("AWS_ACCESS_KEY_ID",), "key": ("AWS_SECRET_ACCESS_KEY",), "token": ("AWS_SESSION_TOKEN",),
               "endpoint": ("S3_ENDPOINT", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"), "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
               "host": "https://s3.%s.amazonaws.com"},
        "obs": {"id": ("OBS_ACCESS_KEY_ID", "HUAWEICLOUD_SDK_AK"), "key": ("OBS_SECRET_ACCESS_KEY", "HUAWEICLOUD_SDK_SK"),
                "token": ("OBS_SECURITY_TOKEN", "HUAWEICLOUD_SDK_SECURITY_TOKEN"), "endpoint": ("OBS_ENDPOINT",),
                "region": ("OBS_REGION", "HUAWEICLOUD_SDK_REGION", "HUAWEICLOUD_REGION"), "host": "https://obs.%s.myhuaweicloud.com"},
        "cos": {"id": ("COS_SECRET_ID", "TENCENTCLOUD_SECRET_ID"), "key": ("COS_SECRET_KEY", "TENCENTCLOUD_SECRET_KEY"),
                "token": ("COS_SESSION_TOKEN", "TENCENTCLOUD_SESSION_TOKEN"), "endpoint": ("COS_ENDPOINT",),
                "region": ("COS_REGION", "TENCENTCLOUD_REGION"), "host": "https://cos.%s.myqcloud.com"},
    }

    def __init__(self, uri, region=None, env=None, attempts=6, timeout_s=300.0):
        env = os.environ if env is None else env
        m = re.match(r"^(s3|obs|cos)://([^/]+)/?(.*)$", uri)
        if m is None:
            raise SyncError("not a store URI: %s (expected s3://, obs:// or cos://bucket/prefix, or file:///dir)" % uri)
        scheme, self.bucket, prefix = m.group(1), m.group(2), m.group(3).strip("/")
        self.prefix = prefix + "/" if prefix else ""
        self.url = uri.rstrip("/")
        conf = self.SCHEMES[scheme]
        pick = lambda names: next((env[n] for n in names if env.get(n)), None)  # noqa: E731
        self.access_key, self.secret_key, self.token = pick(conf["id"]), pick(conf["key"]), pick(conf["token"])
        if not self.access_key or not self.secret_key:
            raise SyncError("%s:// needs credentials in the environment: %s and %s" % (scheme, conf["id"][0], conf["key"][0]))
        self.region = region or pick(conf["region"]) or ("us-east-1" if scheme == "s3" else None)
        if self.region is None:
            raise SyncError("%s:// needs a region (--region or %s)" % (scheme, conf["region"][0]))
        endpoint = (pick(conf["endpoint"]) or conf["host"] % self.region).rstrip("/")
        if "://" not in endpoint:
            endpoint = "https://" + endpoint
        ep = urllib.parse.urlsplit(endpoint)
        loopback = ep.hostname in ("127.0.0.1", "localhost", "::1")
        if ep.scheme != "https" and not loopback:
            raise SyncError("refusing plain http to %s: only loopback endpoints may use http" % ep.hostname)
        # Virtual-hosted addressing (the only one OBS and COS document); path style for loopback test servers.
        self.path_style = loopback
        self.origin = "%s://%s" % (ep.scheme, ep.netloc if loopback else self.bucket + "." + ep.netloc)
        self.attempts = attempts
        self.timeout_s = timeout_s

    # -- signing

    def _sign(self, method, path, query, headers):
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        headers = dict(headers, **{"x-amz-date": amz_date, "x-amz-content-sha256": "UNSIGNED-PAYLOAD",
                                   "host": urllib.parse.urlsplit(self.origin).netloc})
        if self.token:
            headers["x-amz-security-token"] = self.token
        names = sorted(k.lower() for k in headers)
        lower = {k.lower(): str(v).strip() for k, v in headers.items()}
        canonical_query = "&".join("%s=%s" % (urllib.parse.quote(k, safe="-_.~"), urllib.parse.quote(v, safe="-_.~"))
                                   for k, v in sorted(query.items()))
        canonical = "\n".join([method, urllib.parse.quote(path, safe="/-_.~"), canonical_query,
                               "".join("%s:%s\n" % (n, lower[n]) for n in names), ";".join(names), "UNSIGNED-PAYLOAD"])
        scope = "%s/%s/s3/aws4_request" % (day, self.region)
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        k = ("AWS4" + self.secret_key).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (self.access_key, scope, ";".join(names), sig)
        del headers["host"]
        return headers, canonical_query

    def _call(self, method, key, query=None, body=None, headers=None, ok=(200,)):
        """One request with bounded, jittered retries on 5xx, 429 and connection failures; returns (headers, body)."""
        query = query or {}
        path = ("/" + self.bucket if self.path_style else "") + "/" + key
        for attempt in range(self.attempts):
            h = dict(headers or {})
            if body is not None:
                h["Content-MD5"] = base64.b64encode(hashlib.md5(body).digest()).decode()
                h["Content-Length"] = str(len(body))
                # urllib would label the bytes a form otherwise, which some servers then parse (and empty).
                h.setdefault("Content-Type", "application/octet-stream")
            signed, qs = self._sign(method, path, query, h)
            url = self.origin + urllib.parse.quote(path, safe="/-_.~") + ("?" + qs if qs else "")
            req = urllib.request.Request(url, data=body, method=method, headers=signed)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                    return r.headers, r.read()
            except urllib.error.HTTPError as e:
                text = e.read()[:400].decode("utf-8", "replace")
                if e.code in ok:
                    return e.headers, b""
                # BadDigest: the bytes were damaged on the way (Content-MD5 did not match): send them again.
                retry = e.code in RETRYABLE or (e.code == 400 and "BadDigest" in text)
                if not retry or attempt + 1 == self.attempts:
                    raise SyncError("%s %s://%s/%s: HTTP %d %s" % (method, self.url.split(":", 1)[0], self.bucket, key, e.code, text)) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                if attempt + 1 == self.attempts:
                    raise SyncError("%s %s://%s/%s: %s" % (method, self.url.split(":", 1)[0], self.bucket, key, e)) from None
            time.sleep(random.uniform(0, min(30.0, 0.5 * 2 ** attempt)))

    # -- operations

    def list(self, prefix):
        out, token = [], None
        while True:
            q = {"list-type": "2", "prefix": self.prefix + prefix}
            if token:
                q["continuation-token"] = token
            _h, body = self._call("GET", "", q)
            root = ET.fromstring(body)
            ns = {"s": root.tag[1:root.tag.index("}")]} if root.tag.startswith("{") else {}
            f = (lambda n: "s:" + n) if ns else (lambda n: n)  # noqa: E731
            for c in root.findall(f("Contents"), ns):
                out.append((c.find(f("Key"), ns).text[len(self.prefix):], int(c.find(f("Size"), ns).text)))
            token = root.findtext(f("NextContinuationToken"), None, ns)
            if root.findtext(f("IsTruncated"), "false", ns) != "true" or not token:
                return sorted(out)

    def put_bytes(self, key, data):
        h, _ = self._call("PUT", self.prefix + key, body=data, headers={"Content-Type": "application/octet-stream"})
        etag = (h.get("ETag") or "").strip('"')
        if etag and etag != hashlib.md5(data).hexdigest():
            raise SyncError("%s: the stored bytes differ from the bytes sent (ETag %s)" % (key, etag))

    def put_file(self, key, path, part_size):
        size = os.path.getsize(path)
        sha = hashlib.sha256()
        if size < 2 * part_size:
            with open(path, "rb") as f:
                data = f.read()
            sha.update(data)
            self.put_bytes(key, data)
            return len(data), sha.hexdigest()
        full = self.prefix + key
        _h, body = self._call("POST", full, {"uploads": ""})
        upload_id = re.search(rb"<UploadId>([^<]+)</UploadId>", body).group(1).decode()
        parts = []
        try:
            with open(path, "rb") as f:
                n = 0
                while True:
                    data = f.read(part_size)
                    if not data and n > 0:
                        break
                    n += 1
                    sha.update(data)
                    h, _ = self._call("PUT", full, {"partNumber": str(n), "uploadId": upload_id}, body=data)
                    etag = (h.get("ETag") or "").strip('"')
                    if etag and etag != hashlib.md5(data).hexdigest():
                        raise SyncError("%s part %d: the stored bytes differ from the bytes sent" % (key, n))
                    parts.append((n, etag))
                    if len(data) < part_size:
                        break
            xml = "<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
                "<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>" % p for p in parts)
            _h, done = self._call("POST", full, {"uploadId": upload_id}, body=xml.encode(), headers={"Content-Type": "application/xml"})
            if b"<Error>" in done:
                raise SyncError("%s: completing the upload failed: %s" % (key, done[:300].decode("utf-8", "replace")))
        except BaseException:
            try:
                self._call("DELETE", full, {"uploadId": upload_id}, ok=(200, 204, 404))
            except SyncError:
                pass
            raise
        if os.path.getsize(path) != size:
            raise SyncError("%s changed size while it was uploaded" % path)
        return size, sha.hexdigest()

    def delete(self, keys):
        for key in keys:
            self._call("DELETE", self.prefix + key, ok=(200, 204, 404))


def open_store(uri, region=None):
    if uri.startswith("file://"):
        return DirStore(uri[len("file://"):])
    return S3Store(uri, region)


class StoreSync:
    """The commit protocol of rlpipe sync, against a store: files first, the manifest last; retention deletes the
    manifest first. `settle_s` holds a manifest back for a directory that a platform uploads in its own order."""

    def __init__(self, store, run, part_size, keep, recipe_hash, settle_s=0.0):
        if not RUN_NAME.match(run):
            raise SyncError("invalid run name %r (lower-case letters, digits, '.', '_', '-')" % run)
        self.store, self.run, self.part_size, self.keep, self.recipe_hash, self.settle_s = store, run, part_size, keep, recipe_hash, settle_s
        self.committed = set()
        self.offsets = {}
        self.pending = {}  # step -> (manifest bytes, staged at): files in place, manifest held back
        for key, _size in store.list(run + "/checkpoints/"):
            m = MANIFEST_KEY.search(key)
            if m:
                self.committed.add(int(m.group(1)))
        self.high = max(self.committed, default=-1)
        for key, _size in store.list(run + "/metrics/"):
            m = CHUNK_KEY.search(key)
            if m:
                self.offsets[m.group(1)] = max(self.offsets.get(m.group(1), 0), int(m.group(3)))

    def _commit(self, step, manifest):
        self.store.put_bytes("%s/checkpoints/global_step_%d.manifest.json" % (self.run, step), manifest)
        self.committed.add(step)
        self.high = max(self.high, step)
        self.pending.pop(step, None)
        log("step %d: committed" % step)

    def sync_checkpoints(self, ckpt_dir, final=False):
        now = time.time()
        for step, (manifest, staged_at) in sorted(self.pending.items()):
            if final or now - staged_at >= self.settle_s:
                self._commit(step, manifest)
        try:
            with open(os.path.join(ckpt_dir, TRACKER)) as f:
                latest = int(f.read().strip())
        except (FileNotFoundError, ValueError):
            latest = None
        if latest is not None:
            steps = sorted(int(m.group(1)) for m in (STEP_DIR.match(d) for d in os.listdir(ckpt_dir)) if m and os.path.isdir(os.path.join(ckpt_dir, m.group(0))))
            for step in steps:
                # Steps commit in ascending order, so one below a committed step was retired by retention (or lost
                # during its upload): never upload it again.
                if step > latest or step in self.committed or step in self.pending or step < self.high:
                    continue
                step_dir = os.path.join(ckpt_dir, "global_step_%d" % step)
                files = []
                try:
                    for rel in list_files(step_dir):
                        size, sha = self.store.put_file("%s/checkpoints/global_step_%d/%s" % (self.run, step, rel), os.path.join(step_dir, rel), self.part_size)
                        files.append({"path": rel, "size": size, "sha256": sha})
                except FileNotFoundError:
                    log("step %d: removed locally during upload; not committed" % step)
                    continue
                manifest = {"format": "rlpipe-checkpoint/v1", "run": self.run, "step": step}
                if self.recipe_hash:
                    manifest["recipeHash"] = self.recipe_hash
                manifest.update({"committedAt": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (int(time.time() * 1000) % 1000),
                                 "totalBytes": sum(f["size"] for f in files), "files": sorted(files, key=lambda f: f["path"])})
                body = (json.dumps(manifest, indent=2) + "\n").encode()
                if final or self.settle_s <= 0:
                    self._commit(step, body)
                else:
                    self.pending[step] = (body, time.time())
                    log("step %d: %d files in place; committing after %.0f s" % (step, len(files), self.settle_s))
        self.apply_retention()

    def apply_retention(self):
        last, every = self.keep.get("last"), self.keep.get("every")
        if not last and not every:
            return
        steps = sorted(self.committed)
        newest = set(steps[-last:]) if last else set(steps)
        for step in steps:
            if step in newest or (every and step % every == 0):
                continue
            self.store.delete(["%s/checkpoints/global_step_%d.manifest.json" % (self.run, step)])
            self.store.delete([k for k, _s in self.store.list("%s/checkpoints/global_step_%d/" % (self.run, step))])
            self.committed.discard(step)
            log("step %d: deleted by retention" % step)

    def sync_metrics(self, path):
        try:
            f = open(path, "rb")
        except FileNotFoundError:
            return 0
        with f:
            first = f.readline()
            if not first.endswith(b"\n"):
                return 0
            gen = hashlib.sha256(first[:-1]).hexdigest()[:16]
            start = self.offsets.get(gen, 0)
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
            self.store.put_bytes("%s/metrics/%s/%016d-%016d.jsonl" % (self.run, gen, start + sent, start + cut), data[sent:cut])
            sent = cut
        self.offsets[gen] = start + len(data)
        return sent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="base URL of the rlpipe function (presigned URLs; no credentials in the job)")
    ap.add_argument("--store", help="s3://, obs://, cos://bucket/prefix (credentials from the environment) or file:///dir")
    ap.add_argument("--region", help="the store's region (default from the environment)")
    ap.add_argument("--run", required=True)
    ap.add_argument("--dir", required=True, help="verl's trainer.default_local_dir")
    ap.add_argument("--metrics", help="verl's file logger output ($VERL_FILE_LOGGER_PATH)")
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--settle-s", type=float, default=0.0, help="with a file:// store: hold each manifest back this long after its files are in place")
    ap.add_argument("--part-size-mb", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=4, help="parts in flight (memory: parallel x part size)")
    ap.add_argument("--keep-last", type=int)
    ap.add_argument("--keep-every", type=int)
    ap.add_argument("--recipe-hash")
    ap.add_argument("--token-env", default="RLPIPE_RUN_TOKEN")
    args = ap.parse_args(argv)
    if (args.url is None) == (args.store is None):
        log("give exactly one of --url (the runs function) and --store (a store URI)")
        return 2
    keep = {k: v for k, v in (("last", args.keep_last), ("every", args.keep_every)) if v}
    part_size = max(8, args.part_size_mb) * MIB
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    if args.store is not None:
        sync = StoreSync(open_store(args.store, args.region), args.run, part_size, keep, args.recipe_hash, args.settle_s)
        while True:
            final = args.once or stopping["now"]
            sync.sync_checkpoints(args.dir, final=final)
            if args.metrics:
                sync.sync_metrics(args.metrics)
            if final:
                return 0
            deadline = time.time() + args.interval
            while time.time() < deadline and not stopping["now"]:
                time.sleep(0.5)
    token = os.environ.get(args.token_env)
    if not token:
        log("environment variable %s (the run token) is not set" % args.token_env)
        return 2
    client = Client(args.url, args.run, token)
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
