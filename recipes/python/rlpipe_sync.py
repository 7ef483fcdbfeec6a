"""rlpipe checkpoint and metrics sidecar for training jobs (standard library only, Python 3.8+).

Watches verl's checkpoint directory and metrics file. A step is uploaded only after verl has finished it
(latest_checkpointed_iteration.txt), file by file; then the step's manifest is written, last, which commits it.
It follows the protocol of `rlpipe sync` (adapters/storage/checkpoint-sync.ts) in every mode:

- steps go up newest first; a step that is committed, or that retention retired (a marker
  <run>/checkpoints/global_step_N.retired.json, written by either uploader), is never uploaded again, and a
  finished step retention would delete at once is retired (marker) without being uploaded;
- retention writes the marker before it deletes a step's manifest, then the step's files;
- an interrupted step resumes: a file the store already holds with the same size and checksum (its MD5 ETag,
  its multipart ETag, or its stored SHA-256; in a staging directory, the same hard link) is not sent again, and
  the file that was in flight continues from the parts already stored.

Three ways to the store:

- through rlpipe's runs function (--url), which hands out short-lived presigned URLs: no cloud credentials enter
  the training container. Each part is checked against the MD5 the server reports; expired URLs are renewed.
      python3 rlpipe_sync.py --url http://FUNCTION --run RUN --dir CKPT_DIR [--metrics FILE ...] [--once]
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
import math
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
# Part sizes as rlpipe's Node store plans them (adapters/storage/s3.ts planParts): at least 8 MiB, and large
# enough for 10,000 parts. NODE_PART is `rlpipe sync`'s default, so a file it stored is recognised by its ETag.
MIN_PART = 8 * MIB
MAX_PARTS = 10000
NODE_PART = 8 * MIB


class SyncError(RuntimeError):
    pass


class HttpFailure(SyncError):
    """The runs function answered with an error status (not retried); `detail` is its JSON reply when it sent one."""

    def __init__(self, message, status, detail):
        SyncError.__init__(self, message)
        self.status = status
        self.detail = detail


class UrlExpired(Exception):
    pass


# ------------------------------------------------------------------------------------ redaction
# What this sidecar writes (its log lines, the run's page, which is shared by presigned URL) passes through
# redact(): the rules of core/redact.ts (REDACTION_RULES, redactText there), copied because the job has no Node.
# test/redaction.test.ts checks the two lists are equal and that both redact test/fixtures/redaction-corpus.txt
# alike: change both together. The regexes use only what JavaScript and Python read the same way.
_V_END = r""" \t\r\n"'\\,;&<>(){}\[\]\x60|"""
_VALUE = (r'"(?:[^"\\\r\n]|\\[^\r\n])*"' + "|" + r"'(?:[^'\\\r\n]|\\[^\r\n])*'" + "|" + r'\\"(?:[^"\\\r\n]|\\[^"\r\n])*\\"'
          + "|[^" + _V_END + "]*[^" + _V_END + ".:]")
_PEM_BEGIN = "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"
_PEM_END = "-----END [A-Z0-9 ]*PRIVATE KEY-----"
_B64_LINE = r"[ \t]*[A-Za-z0-9+/=]{16,}[ \t]*"
REDACTION_RULES = {
    "patterns": [
        ["pem-block", "(" + _PEM_BEGIN + r")([\s\S]*?)(" + _PEM_END + ")", "", "PRIVATE KEY-----"],
        ["pem-head", "(" + _PEM_BEGIN + r")((?:\r?\n" + _B64_LINE + "){1,120})()", "", "PRIVATE KEY-----"],
        ["pem-tail", r"(?<![^\n])()((?:" + _B64_LINE + r"\r?\n){1,120})(" + _PEM_END + ")", "", "PRIVATE KEY-----"],
        ["authorization", r"""((?<![A-Za-z0-9_-])(?:Proxy-)?Authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?:Bearer|Basic|Token|Digest|SDK-HMAC-SHA256|TC3-HMAC-SHA256|AWS4-HMAC-SHA256)[ \t]+)?)([^ \t\r\n"'\\,]+)()""", "i", ""],
        ["bearer", r"((?<![A-Za-z0-9_-])Bearer[ \t]+)([A-Za-z0-9._~+/=-]{16,})()", "i", ""],
        ["url-userinfo", r"""((?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://)([^ \t\r\n/?#@"'<>\\:]+:[^ \t\r\n/?#@"'<>\\]*)(@)""", "", ""],
        ["signed-param", r"""((?<![A-Za-z0-9_-])(?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|X-Goog-Signature|X-Goog-Credential|X-Cos-Security-Token|X-Obs-Security-Token|Signature|sig|q-signature|q-ak|AccessKeyId|access_token|token)=)([^&# \t\r\n"'<>\\,]+)()""", "i", ""],
        ["aws-key-id", "()((?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9]))()", "", ""],
        ["tencent-secret-id", "()((?<![A-Za-z0-9])AKID[0-9A-Za-z]{16,})()", "", ""],
        ["e2b-key", "()((?<![A-Za-z0-9])e2b_[0-9a-f]{20,})()", "", ""],
        ["github-token", "()((?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}))()", "", ""],
        ["huggingface-token", "()((?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,})()", "", ""],
        ["ark-key", "()((?<![A-Za-z0-9])ark_[A-Za-z0-9]{8,})()", "", ""],
        ["sk-key", "()((?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,})()", "", ""],
    ],
    "flag": r"(?<![A-Za-z0-9_.-])--([A-Za-z][A-Za-z0-9_.-]*)(=|[ \t]+)(?!-)(" + _VALUE + ")",
    "assignment": r"""(?<![A-Za-z0-9_.$-])([A-Za-z][A-Za-z0-9_.-]*)(\\?["']?[ \t]*[:=][ \t]*)(?![:=])(""" + _VALUE + ")",
    "placeholder": r"|\*\*\*|…|\.\.\.|null|None|nil|true|false|True|False|<[^<>]*>|\$(?:\{?[A-Za-z_][A-Za-z0-9_]*\}?)?|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{2,12}",
    "prose": r"[a-z]{1,24} [^ \t\r\n]",
    "secretWords": ["secret", "password", "passwd", "passphrase", "credential", "credentials", "apikey", "secretkey", "accesskey", "privatekey", "secretid", "authtoken", "accesstoken", "sk", "ak"],
    "keyNotAfter": ["prompt", "response", "image", "images", "video", "videos", "audio", "fn", "sort", "cache", "primary", "foreign", "partition", "row", "column", "dict", "group", "label", "metric", "metrics", "input", "output", "answer", "query", "data", "source", "lookup", "hash", "object", "index", "map", "field", "name", "sample", "message", "messages", "tool", "tools", "truth", "extra", "chosen", "rejected"],
    "tokenNotAfter": ["pad", "eos", "bos", "unk", "sep", "cls", "mask", "image", "video", "audio", "vision", "special", "start", "end", "stop", "think", "tool", "placeholder", "max", "min", "num", "per", "first", "last", "next", "total", "prompt", "response", "input", "output", "new", "generated", "im", "default", "eot", "fim"],
    "idAfter": ["secret", "key"],
}
_PATTERNS = [(re.compile(src, re.A | (re.I if "i" in flags else 0)), needs) for _id, src, flags, needs in REDACTION_RULES["patterns"]]
_FLAG = re.compile(REDACTION_RULES["flag"], re.A)
_ASSIGNMENT = re.compile(REDACTION_RULES["assignment"], re.A)
_PLACEHOLDER = re.compile("(?:%s)" % REDACTION_RULES["placeholder"], re.A)
_PROSE = re.compile("(?:%s)" % REDACTION_RULES["prose"], re.A)


def name_words(name):
    """A name's words, lower-case: split at anything not a letter or digit and at camelCase (apiKey, APIKey)."""
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", re.sub(r"([a-z])([A-Z])", r"\1 \2", name))
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def is_secret_label(name):
    """Whether a name in text labels a secret, by its last word (core/redact.ts isSecretLabel)."""
    words = name_words(name)
    if not words:
        return False
    last, prev = words[-1], (words[-2] if len(words) > 1 else "")
    if last == "key":
        return prev != "" and prev not in REDACTION_RULES["keyNotAfter"]
    if last == "token":
        return prev not in REDACTION_RULES["tokenNotAfter"]
    if last == "id":
        return prev in REDACTION_RULES["idAfter"]
    return last in REDACTION_RULES["secretWords"]


def _unquoted(value):
    if value.startswith('\\"'):
        return value[2:-2]
    return value[1:-1] if value[:1] in ('"', "'") else value


def _masked(value):
    if value.startswith('\\"'):
        return '\\"***\\"'
    return value[0] + "***" + value[0] if value[:1] in ('"', "'") else "***"


def _hides(name, sep, value, text, at):
    if not is_secret_label(name) or _PLACEHOLDER.fullmatch(_unquoted(value)):
        return False
    return not (sep.strip() == ":" and len(name_words(name)) == 1 and _PROSE.match(text[at:at + 32]))


def _mask_named(text, rx, name_start):
    """Every value a secret name labels, masked; a name that is not secret is stepped over, not its value."""
    out, copied, pos = [], 0, 0
    while True:
        m = rx.search(text, pos)
        if m is None:
            break
        name, sep, value = m.group(1), m.group(2), m.group(3)
        if _hides(name, sep, value, text, m.end() - len(value)):
            out.append(text[copied:m.start()] + m.group(0)[:len(m.group(0)) - len(value)] + _masked(value))
            copied = pos = m.end()
        else:
            pos = m.start() + name_start + len(name)
    out.append(text[copied:])
    return "".join(out)


def redact(text):
    """Credentials by format, place or name replaced by *** (names kept), as core/redact.ts redactText does."""
    for rx, needs in _PATTERNS:
        if needs in text:
            text = rx.sub(lambda m: (m.group(1) or "") + "***" + (m.group(3) or ""), text)
    return _mask_named(_mask_named(text, _FLAG, 2), _ASSIGNMENT, 0)


def log(msg):
    sys.stderr.write("[rlpipe_sync %s] %s\n" % (time.strftime("%H:%M:%S"), redact(str(msg))))
    sys.stderr.flush()


def iso_now():
    """UTC time as JavaScript's Date.toISOString() writes it (milliseconds, Z)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (now.microsecond // 1000)


# ------------------------------------------------------------------------------------ the shared protocol
# The store's layout, as rlpipe reads it (core/checkpoints.ts): <run>/checkpoints/global_step_N/<file>, the
# manifest <run>/checkpoints/global_step_N.manifest.json (written last: it commits the step), the retirement
# marker <run>/checkpoints/global_step_N.retired.json, and metrics chunks
# <run>/metrics/<generation>/<start:016d>-<end:016d>.jsonl named by byte range (S3 has no append).

MANIFEST_KEY = re.compile(r"(?:^|/)checkpoints/global_step_(\d+)\.manifest\.json$")
RETIRED_KEY = re.compile(r"(?:^|/)checkpoints/global_step_(\d+)\.retired\.json$")
STEP_FILE_KEY = re.compile(r"(?:^|/)checkpoints/global_step_(\d+)/(.+)$")
CHUNK_KEY = re.compile(r"metrics/([0-9a-f]{16})/(\d{16})-(\d{16})\.jsonl$")
RUN_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")


def manifest_key(run, step):
    return "%s/checkpoints/global_step_%d.manifest.json" % (run, step)


def retired_key(run, step):
    return "%s/checkpoints/global_step_%d.retired.json" % (run, step)


def step_prefix(run, step):
    return "%s/checkpoints/global_step_%d/" % (run, step)


def steps_to_delete(committed, keep):
    """core/checkpoints.ts stepsToDelete: all but the newest keep["last"] and the multiples of keep["every"]."""
    last, every = keep.get("last"), keep.get("every")
    if not last and not every:
        return []
    steps = sorted(set(committed))
    newest = set(steps[max(0, len(steps) - last):]) if last else set(steps)
    return [s for s in steps if s not in newest and not (every and s % every == 0)]


def retired_record(step, keep, committed):
    """The marker's bytes, exactly as core/checkpoints.ts retiredRecord writes them (only its existence counts)."""
    policy = {}
    if keep.get("last"):
        policy["keepLast"] = keep["last"]
    if keep.get("every"):
        policy["keepEvery"] = keep["every"]
    record = {"format": "rlpipe-retired/v1", "step": step, "retiredAt": iso_now(), "committed": committed, "policy": policy}
    return (json.dumps(record, separators=(",", ":")) + "\n").encode()


def describe_keep(keep):
    return ", ".join(w for w in (("keep-last %d" % keep["last"]) if keep.get("last") else "", ("keep-every %d" % keep["every"]) if keep.get("every") else "") if w)


def finished_steps(ckpt_dir):
    """global_step_N directories verl has finished (N <= the tracker), ascending; [] before the first save."""
    try:
        with open(os.path.join(ckpt_dir, TRACKER)) as f:
            latest = int(f.read().strip())
    except (FileNotFoundError, ValueError):
        return []
    found = (STEP_DIR.match(d) for d in os.listdir(ckpt_dir))
    return sorted(int(m.group(1)) for m in found if m and int(m.group(1)) <= latest and os.path.isdir(os.path.join(ckpt_dir, m.group(0))))


def list_files(step_dir):
    out = []
    for root, _dirs, files in os.walk(step_dir):
        for name in files:
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                out.append(os.path.relpath(full, step_dir).replace(os.sep, "/"))
    return sorted(out)


def ledger(listing, run):
    """Committed and retired steps, and the files stored for each step, from one listing of <run>/checkpoints/."""
    committed, retired, stored = set(), set(), {}
    for key, size, etag in listing:
        m = MANIFEST_KEY.search(key)
        if m:
            committed.add(int(m.group(1)))
            continue
        m = RETIRED_KEY.search(key)
        if m:
            retired.add(int(m.group(1)))
            continue
        m = STEP_FILE_KEY.search(key)
        if m and key.startswith(run + "/checkpoints/"):
            stored.setdefault(int(m.group(1)), {})[m.group(2)] = (size, etag)
    return committed, retired, stored


def plan_part_size(size, requested):
    return max(MIN_PART, requested, -(-size // MAX_PARTS))


def multipart_etag(md5s):
    return "%s-%d" % (hashlib.md5(b"".join(bytes.fromhex(m) for m in md5s)).hexdigest(), len(md5s))


class _PartMd5s:
    def __init__(self, part_size):
        self.part_size, self.md5s, self.cur, self.filled = part_size, [], hashlib.md5(), 0

    def update(self, view):
        while len(view):
            take = min(len(view), self.part_size - self.filled)
            self.cur.update(view[:take])
            self.filled += take
            view = view[take:]
            if self.filled == self.part_size:
                self.md5s.append(self.cur.hexdigest())
                self.cur, self.filled = hashlib.md5(), 0

    def finish(self):
        if self.filled or not self.md5s:
            self.md5s.append(self.cur.hexdigest())
        return self.md5s


class Digests:
    """One read of a file: its SHA-256, its whole MD5 (when asked) and its parts' MD5s for each part size asked."""

    def __init__(self, path, part_sizes=(), whole_md5=False):
        sha, whole = hashlib.sha256(), hashlib.md5() if whole_md5 else None
        parts = {ps: _PartMd5s(ps) for ps in set(part_sizes)}
        size = 0
        with open(path, "rb") as f:
            while True:
                block = f.read(4 * MIB)
                if not block:
                    break
                size += len(block)
                sha.update(block)
                if whole is not None:
                    whole.update(block)
                view = memoryview(block)
                for p in parts.values():
                    p.update(view)
        self.size = size
        self.sha256 = sha.hexdigest()
        self.md5 = whole.hexdigest() if whole is not None else None
        self.parts = {ps: p.finish() for ps, p in parts.items()}

    def matches(self, etag):
        """Whether an ETag is the one an upload of these bytes gets: their MD5, or a multipart ETag of their parts."""
        etag = (etag or "").strip('"')
        if not etag:
            return False
        if "-" not in etag:
            return self.md5 is not None and etag == self.md5
        return any(multipart_etag(md5s) == etag for md5s in self.parts.values())


def etag_candidates(size, part_size, listed):
    """What to hash to recognise a stored object: (part sizes, whole MD5?) for the ETag it was listed with."""
    if listed is None or listed[0] != size or not listed[1]:
        return (), False
    if "-" not in listed[1]:
        return (), True
    # Multipart: our part size, or `rlpipe sync`'s, whichever yields the ETag's part count.
    count = int(listed[1].rsplit("-", 1)[1]) if listed[1].rsplit("-", 1)[1].isdigit() else 0
    sizes = [ps for ps in (plan_part_size(size, part_size), plan_part_size(size, NODE_PART)) if max(1, -(-size // ps)) == count]
    return tuple(sizes), False


def metric_chunks(path, offsets):
    """(generation, start, end, bytes) of the complete lines of the metrics file not yet stored, ≤ 4 MiB each."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return
    with f:
        first = f.readline()
        if not first.endswith(b"\n"):
            return
        gen = hashlib.sha256(first[:-1]).hexdigest()[:16]
        start = offsets.get(gen, 0)
        f.seek(start)
        data = f.read()
    end_nl = data.rfind(b"\n")
    if end_nl < 0:
        return
    data = data[: end_nl + 1]
    sent = 0
    while sent < len(data):
        cut = min(len(data), sent + 4 * MIB)
        if cut < len(data):
            nl = data.rfind(b"\n", sent, cut)
            cut = nl + 1 if nl >= sent else cut
        yield gen, start + sent, start + cut, data[sent:cut]
        sent = cut
        offsets[gen] = start + sent


def run_pool(jobs, parallel):
    """Run callables `parallel` at a time; the first failure propagates once the ones running have ended."""
    pool = ThreadPoolExecutor(max_workers=max(1, parallel))
    futures = [pool.submit(j) for j in jobs]
    try:
        for fut in futures:
            fut.result()
    finally:
        for fut in futures:
            fut.cancel()  # (cancel_futures= needs Python 3.9)
        pool.shutdown(wait=True)


def reuse_note(step, count, size):
    if count:
        log("step %d: %d files already stored (%.1f MiB), not sent again" % (step, count, size / MIB))


# ---------------------------------------------------------------------------------------- function mode


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
                text = e.read()[:2000].decode("utf-8", "replace")
                try:
                    detail = json.loads(text)
                except ValueError:
                    detail = {}
                raise HttpFailure("%s %s: HTTP %d %s" % (method, op, e.code, text[:300]), e.code, detail if isinstance(detail, dict) else {}) from None

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


def read_part(path, offset, length, md5hex):
    with open(path, "rb") as f:
        f.seek(offset)
        body = f.read(length)
    if len(body) != length or hashlib.md5(body).hexdigest() != md5hex:
        raise SyncError("%s changed while it was uploaded" % path)
    return body


def upload_parts(client, path, part_size, md5s, parts, parallel):
    """Send parts `parallel` at a time; each worker reads its part only when it starts (memory: parallel × part)."""

    def one(p):
        n = p["partNumber"]
        size = os.path.getsize(path)
        client.put(p["url"], read_part(path, (n - 1) * part_size, min(part_size, size - (n - 1) * part_size), md5s[n - 1]), p["headers"], md5s[n - 1])

    run_pool([(lambda p=p: one(p)) for p in parts], parallel)


def upload_file(client, step, rel, path, part_size, stored, parallel=4):
    """Upload one file through presigned URLs, unless the store already holds it; returns (manifest entry, reused)."""
    size = os.path.getsize(path)
    ps = plan_part_size(size, part_size)
    listed = stored.get(rel)
    extra, whole = etag_candidates(size, part_size, listed)
    d = Digests(path, (ps,) + extra, whole)
    if d.size != size:
        raise SyncError("%s changed while it was read" % path)
    entry = {"path": rel, "size": size, "sha256": d.sha256}
    if listed is not None and listed[0] == size and d.matches(listed[1]):
        return entry, True
    md5s = d.parts[ps]
    remote = "checkpoints/global_step_%d/%s" % (step, rel)
    for _renewal in range(20):
        plan = client.call("POST", "uploads", {"path": remote, "size": size, "sha256": d.sha256, "partSize": ps, "partMd5s": md5s})
        try:
            if plan["mode"] == "single":
                client.put(plan["url"], read_part(path, 0, size, md5s[0]), plan["headers"], md5s[0])
            else:
                stored_parts = sum(1 for p in plan["parts"] if p["done"])
                if stored_parts:
                    log("%s: resuming an interrupted upload (%d of %d parts stored)" % (remote, stored_parts, len(md5s)))
                upload_parts(client, path, ps, md5s, [p for p in plan["parts"] if not p["done"]], parallel)
                client.call("POST", "uploads/complete", {"path": remote, "uploadId": plan["uploadId"], "partMd5s": md5s})
            return entry, False
        except UrlExpired:
            log("%s: presigned URL expired; asking for fresh ones (done parts are kept)" % remote)
    raise SyncError("%s: URLs kept expiring; is the clock right?" % remote)


class FunctionSync:
    """The protocol through the runs function: its `state` is the ledger, `retire` records a retirement."""

    def __init__(self, client, part_size, keep, recipe_hash, parallel=4):
        self.client, self.part_size, self.keep, self.recipe_hash, self.parallel = client, part_size, keep, recipe_hash, parallel
        self.offsets = {}

    def sync_checkpoints(self, ckpt_dir):
        state = self.client.call("GET", "state")
        committed, retired = set(state.get("committed", [])), set(state.get("retired", []))
        stored = {u["step"]: {f["path"]: (f["size"], f.get("etag")) for f in u.get("files", [])} for u in state.get("uncommitted", [])}
        for gen, end in state.get("metrics", {}).items():
            self.offsets[gen] = max(self.offsets.get(gen, 0), end)
        done = []
        # Newest first: the latest checkpoint is safe soonest, and an older step is judged against the steps that
        # really were committed.
        for step in reversed([s for s in finished_steps(ckpt_dir) if s not in committed and s not in retired]):
            if self.keep and step in steps_to_delete(list(committed) + [step], self.keep):
                try:
                    self.client.call("POST", "retire", {"step": step, "keep": self.keep})
                    retired.add(step)
                    log("step %d: not uploaded, retention (%s) keeps newer steps" % (step, describe_keep(self.keep)))
                    continue
                except HttpFailure as e:
                    if e.status not in (404, 409):
                        raise
                    # 409: the function's view of the committed steps keeps it; 404: a function older than `retire`.
                    log("step %d: not retired by the function (HTTP %d %s); uploading" % (step, e.status, e.detail.get("detail", "")))
            step_dir = os.path.join(ckpt_dir, "global_step_%d" % step)
            files, reused, reused_bytes = [], 0, 0
            try:
                for rel in list_files(step_dir):
                    entry, was_stored = upload_file(self.client, step, rel, os.path.join(step_dir, rel), self.part_size, stored.get(step, {}), self.parallel)
                    files.append(entry)
                    if was_stored:
                        reused, reused_bytes = reused + 1, reused_bytes + entry["size"]
            except FileNotFoundError:
                log("step %d: removed locally during upload; not committed" % step)
                continue
            reuse_note(step, reused, reused_bytes)
            body = {"step": step, "files": files}
            if self.keep:
                body["keep"] = self.keep
            if self.recipe_hash:
                body["recipeHash"] = self.recipe_hash
            try:
                r = self.client.call("POST", "commit", body)
            except HttpFailure as e:
                if e.status == 409 and e.detail.get("retired"):
                    retired.add(step)
                    log("step %d: retired meanwhile (by another uploader's retention); not committed" % step)
                    continue
                raise
            committed.add(step)
            for gone in r.get("deleted", []):
                committed.discard(gone)
                retired.add(gone)
            done.append(step)
            log("step %d: committed %d files%s" % (step, len(files), (", deleted steps %s" % r["deleted"]) if r.get("deleted") else ""))
        return done

    def sync_metrics(self, path):
        sent = 0
        for gen, start, end, chunk in metric_chunks(path, self.offsets):
            md5 = hashlib.md5(chunk).hexdigest()
            for _renewal in range(20):
                r = self.client.call("POST", "metrics", {"generation": gen, "start": start, "end": end, "md5": md5})
                try:
                    self.client.put(r["url"], chunk, r["headers"], md5)
                    break
                except UrlExpired:
                    continue
            sent += len(chunk)
        return sent


# ------------------------------------------------------------------------------------------- store mode


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
        """(key, size, etag) under `prefix`; a directory has no ETags."""
        base = self._path(prefix.rstrip("/")) if prefix.rstrip("/") else self.root
        out = []
        for root, _dirs, files in os.walk(base):
            for name in files:
                if ".rlpipe-tmp." in name:
                    continue
                full = os.path.join(root, name)
                try:
                    out.append((os.path.relpath(full, self.root).replace(os.sep, "/"), os.path.getsize(full), None))
                except FileNotFoundError:
                    continue
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

    def get_bytes(self, key):
        with open(self._path(key), "rb") as f:
            return f.read()

    def put_bytes(self, key, data, content_type=None):
        def write(tmp):
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        self._place(key, write)

    def put_file(self, key, path, part_size, listed=None, parallel=4):
        """Link the file in; returns (size, sha256, already stored?). The same hard link already in place counts as
        stored (it is the same file), and so does a copy with the same size and SHA-256 (across file systems)."""
        src = os.stat(path)
        sha = sha256_file(path)
        try:
            dst = os.stat(self._path(key))
        except FileNotFoundError:
            dst = None
        if dst is not None and dst.st_size == src.st_size:
            if (dst.st_dev, dst.st_ino) == (src.st_dev, src.st_ino) or sha256_file(self._path(key)) == sha:
                return src.st_size, sha, True

        def write(tmp):
            try:
                os.link(path, tmp)
            except OSError:
                shutil.copyfile(path, tmp)
        self._place(key, write)
        return src.st_size, sha, False

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


def _xml(body):
    """Parse an S3 reply, dropping the namespace from every tag (S3 uses one, some S3-compatible servers none)."""
    root = ET.fromstring(body)
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith("{"):
            el.tag = el.tag.split("}", 1)[1]
    return root


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
        self.scheme = scheme
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
        """One request with bounded, jittered retries on 5xx, 429 and connection failures; returns (status, headers,
        body). A status in `ok` other than 200 is returned with an empty body."""
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
                    return r.status, r.headers, r.read()
            except urllib.error.HTTPError as e:
                text = e.read()[:400].decode("utf-8", "replace")
                if e.code in ok:
                    return e.code, e.headers, b""
                # BadDigest: the bytes were damaged on the way (Content-MD5 did not match): send them again.
                retry = e.code in RETRYABLE or (e.code == 400 and "BadDigest" in text)
                if not retry or attempt + 1 == self.attempts:
                    raise SyncError("%s %s://%s/%s: HTTP %d %s" % (method, self.scheme, self.bucket, key, e.code, text)) from None
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                if attempt + 1 == self.attempts:
                    raise SyncError("%s %s://%s/%s: %s" % (method, self.scheme, self.bucket, key, e)) from None
            time.sleep(random.uniform(0, min(30.0, 0.5 * 2 ** attempt)))

    # -- operations

    def list(self, prefix):
        """(key, size, etag) under `prefix`, keys relative to the store's root."""
        out, token = [], None
        while True:
            q = {"list-type": "2", "prefix": self.prefix + prefix}
            if token:
                q["continuation-token"] = token
            _s, _h, body = self._call("GET", "", q)
            root = _xml(body)
            for c in root.findall("Contents"):
                out.append((c.findtext("Key")[len(self.prefix):], int(c.findtext("Size")), (c.findtext("ETag") or "").strip('"') or None))
            token = root.findtext("NextContinuationToken")
            if root.findtext("IsTruncated", "false") != "true" or not token:
                return sorted(out)

    def get_bytes(self, key):
        return self._call("GET", self.prefix + key)[2]

    def _stored_sha256(self, full):
        status, h, _ = self._call("HEAD", full, ok=(200, 404))
        return h.get("x-amz-meta-sha256") if status == 200 else None

    def put_bytes(self, key, data, content_type="application/octet-stream"):
        sha = hashlib.sha256(data).hexdigest()
        _s, h, _ = self._call("PUT", self.prefix + key, body=data, headers={"Content-Type": content_type, "x-amz-meta-sha256": sha})
        etag = (h.get("ETag") or "").strip('"')
        if etag and etag != hashlib.md5(data).hexdigest():
            raise SyncError("%s: the stored bytes differ from the bytes sent (ETag %s)" % (key, etag))

    def put_file(self, key, path, part_size, listed=None, parallel=4):
        """Upload a file unless the object already holds it (same size, and its ETag or stored SHA-256 matches);
        returns (size, sha256, already stored?). Multipart files carry their SHA-256 and resume from stored parts."""
        size = os.path.getsize(path)
        ps = plan_part_size(size, part_size)
        multipart = size > ps
        extra, whole = etag_candidates(size, part_size, listed)
        d = Digests(path, ((ps,) if multipart else ()) + extra, whole or not multipart)
        if d.size != size:
            raise SyncError("%s changed while it was read" % path)
        full = self.prefix + key
        if listed is not None and listed[0] == size and (d.matches(listed[1]) or self._stored_sha256(full) == d.sha256):
            return size, d.sha256, True
        if not multipart:
            self.put_bytes(key, read_part(path, 0, size, d.md5))
            return size, d.sha256, False
        md5s = d.parts[ps]
        upload_id, done = self._session(full, size, ps, md5s, d.sha256)

        def one(n):
            body = read_part(path, (n - 1) * ps, min(ps, size - (n - 1) * ps), md5s[n - 1])
            for _attempt in range(self.attempts):
                _s, h, _ = self._call("PUT", full, {"partNumber": str(n), "uploadId": upload_id}, body=body)
                etag = (h.get("ETag") or "").strip('"')
                if not etag or etag == md5s[n - 1]:
                    return
                log("%s part %d: the stored bytes differ from the bytes sent (ETag %s); sending again" % (key, n, etag))
            raise SyncError("%s part %d: the stored bytes kept differing from the bytes sent" % (key, n))

        run_pool([(lambda n=n: one(n)) for n in range(1, len(md5s) + 1) if n not in done], parallel)
        xml = "<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
            "<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>" % (i + 1, m) for i, m in enumerate(md5s))
        status, _h, reply = self._call("POST", full, {"uploadId": upload_id}, body=xml.encode(), headers={"Content-Type": "application/xml"}, ok=(200, 404))
        if b"<Error>" in reply:
            raise SyncError("%s: completing the upload failed: %s" % (key, reply[:300].decode("utf-8", "replace")))
        expected = multipart_etag(md5s)
        if status == 404:
            # A completion whose reply was lost (then retried) may have happened: the object is there, or it is not.
            found = [e for k, s, e in self.list(key) if k == key and s == size]
            if not found or (found[0] and found[0] != expected):
                raise SyncError("%s: the upload was lost before it completed" % key)
        else:
            etag = (_xml(reply).findtext("ETag") or "").strip('"') if reply.strip() else ""
            if re.search(r"-\d+$", etag) and etag != expected:
                raise SyncError("%s: multipart ETag %s, expected %s" % (key, etag, expected))
        if os.path.getsize(path) != size:
            raise SyncError("%s changed size while it was uploaded" % path)
        return size, d.sha256, False

    def _session(self, full, size, ps, md5s, sha):
        """Resume the newest unfinished upload of the key whose stored parts all match, or start one (with the
        file's SHA-256 as metadata); uploads that cannot be resumed are aborted (unfinished uploads are billed)."""
        _s, _h, body = self._call("GET", "", {"uploads": "", "prefix": full})
        uploads = [(u.findtext("Initiated") or "", u.findtext("UploadId"), u.findtext("ChecksumAlgorithm"))
                   for u in _xml(body).findall("Upload") if u.findtext("Key") == full and u.findtext("UploadId")]
        reuse = None
        for _initiated, upload_id, algorithm in sorted(uploads, reverse=True):
            if reuse is None and not algorithm:  # parts with a checksum algorithm need it on every part: not ours
                parts = self._parts(full, upload_id)
                if parts is not None and all(1 <= n <= len(md5s) and s == min(ps, size - (n - 1) * ps) and e == md5s[n - 1] for n, s, e in parts):
                    reuse = (upload_id, set(n for n, _s, _e in parts))
                    continue
            self._call("DELETE", full, {"uploadId": upload_id}, ok=(200, 204, 404))
        if reuse is not None:
            if reuse[1]:
                log("%s: resuming an interrupted upload (%d of %d parts stored)" % (full, len(reuse[1]), len(md5s)))
            return reuse
        _s, _h, body = self._call("POST", full, {"uploads": ""}, headers={"x-amz-meta-sha256": sha})
        return _xml(body).findtext("UploadId"), set()

    def _parts(self, full, upload_id):
        """(number, size, etag) of an unfinished upload's parts; None when the upload is gone."""
        out, marker = [], None
        while True:
            q = {"uploadId": upload_id}
            if marker:
                q["part-number-marker"] = marker
            status, _h, body = self._call("GET", full, q, ok=(200, 404))
            if status == 404:
                return None
            root = _xml(body)
            for p in root.findall("Part"):
                out.append((int(p.findtext("PartNumber")), int(p.findtext("Size")), (p.findtext("ETag") or "").strip('"')))
            marker = root.findtext("NextPartNumberMarker")
            if root.findtext("IsTruncated", "false") != "true" or not marker:
                return out

    def delete(self, keys):
        for key in keys:
            self._call("DELETE", self.prefix + key, ok=(200, 204, 404))


def open_store(uri, region=None):
    if uri.startswith("file://"):
        return DirStore(uri[len("file://"):])
    return S3Store(uri, region)


class StoreSync:
    """The commit protocol of rlpipe sync, against a store: files first, the manifest last; retention records the
    retirement, then deletes the manifest, then the files. `settle_s` holds a manifest back for a directory that a
    platform uploads in its own order."""

    def __init__(self, store, run, part_size, keep, recipe_hash, settle_s=0.0, parallel=4):
        if not RUN_NAME.match(run):
            raise SyncError("invalid run name %r (lower-case letters, digits, '.', '_', '-')" % run)
        self.store, self.run, self.part_size, self.keep, self.recipe_hash, self.settle_s = store, run, part_size, keep, recipe_hash, settle_s
        self.parallel = parallel
        self.committed = set()
        self.offsets = {}
        self.pending = {}  # step -> (manifest bytes, staged at): files in place, manifest held back
        for key, _size, _etag in store.list(run + "/metrics/"):
            m = CHUNK_KEY.search(key)
            if m:
                self.offsets[m.group(1)] = max(self.offsets.get(m.group(1), 0), int(m.group(3)))

    def _commit(self, step, manifest):
        self.store.put_bytes(manifest_key(self.run, step), manifest, "application/json")
        self.committed.add(step)
        self.pending.pop(step, None)
        log("step %d: committed" % step)

    def _retire(self, step, committed):
        self.store.put_bytes(retired_key(self.run, step), retired_record(step, self.keep, committed), "application/json")

    def sync_checkpoints(self, ckpt_dir, final=False):
        now = time.time()
        for step, (manifest, staged_at) in sorted(self.pending.items()):
            if final or now - staged_at >= self.settle_s:
                self._commit(step, manifest)
        # One listing per pass: what is committed, what retention retired (by either uploader), what is stored.
        self.committed, retired, stored = ledger(self.store.list(self.run + "/checkpoints/"), self.run)
        todo = [s for s in finished_steps(ckpt_dir) if s not in self.committed and s not in retired and s not in self.pending]
        # Newest first: the latest checkpoint is safe soonest, and an older step is judged against the steps that
        # really were committed — one that retention would delete right away is retired without being uploaded.
        for step in reversed(todo):
            if self.keep and step in steps_to_delete(list(self.committed | set(self.pending)) + [step], self.keep):
                self._retire(step, False)
                log("step %d: not uploaded, retention (%s) keeps newer steps" % (step, describe_keep(self.keep)))
                continue
            step_dir = os.path.join(ckpt_dir, "global_step_%d" % step)
            files, reused, reused_bytes = [], 0, 0
            try:
                for rel in list_files(step_dir):
                    size, sha, was_stored = self.store.put_file("%s/checkpoints/global_step_%d/%s" % (self.run, step, rel), os.path.join(step_dir, rel),
                                                                self.part_size, stored.get(step, {}).get(rel), self.parallel)
                    files.append({"path": rel, "size": size, "sha256": sha})
                    if was_stored:
                        reused, reused_bytes = reused + 1, reused_bytes + size
            except FileNotFoundError:
                log("step %d: removed locally during upload; not committed" % step)
                continue
            reuse_note(step, reused, reused_bytes)
            manifest = {"format": "rlpipe-checkpoint/v1", "run": self.run, "step": step}
            if self.recipe_hash:
                manifest["recipeHash"] = self.recipe_hash
            manifest.update({"committedAt": iso_now(), "totalBytes": sum(f["size"] for f in files), "files": sorted(files, key=lambda f: f["path"])})
            body = (json.dumps(manifest, indent=2) + "\n").encode()
            if final or self.settle_s <= 0:
                self._commit(step, body)
            else:
                self.pending[step] = (body, time.time())
                log("step %d: %d files in place; committing after %.0f s" % (step, len(files), self.settle_s))
        self.apply_retention()

    def apply_retention(self):
        """Retire what the policy drops: the marker first (the decision is remembered), then the manifest (the step
        disappears for readers), then its files."""
        doomed = steps_to_delete(self.committed, self.keep) if self.keep else []
        for step in doomed:
            self._retire(step, True)
            self.store.delete([manifest_key(self.run, step)])
            self.store.delete([k for k, _s, _e in self.store.list(step_prefix(self.run, step))])
            self.committed.discard(step)
            log("step %d: deleted by retention" % step)
        return doomed

    def sync_metrics(self, path):
        sent = 0
        for gen, start, end, chunk in metric_chunks(path, self.offsets):
            self.store.put_bytes("%s/metrics/%s/%016d-%016d.jsonl" % (self.run, gen, start, end), chunk)
            sent += len(chunk)
        return sent


# ------------------------------------------------------------------------------------ the run's page
# <job>/report.html in the store (adapters/storage/run-page-store.ts runPageKey): the page `rlpipe report` draws,
# reduced to what this sidecar has inside the job — no Node, no run record, no provider credentials — so it shows
# the main curves (small inline SVG charts), the latest value of every metric it syncs and the committed
# checkpoints, and says what it cannot know. One PUT (atomic per object on S3/OBS/COS) or, in a staging directory,
# a file written beside and renamed.

# Mirrors MAIN_SERIES in core/metrics.ts (label, verl metric names, the first present name wins, derived value):
# test/report-store.test.ts checks the two lists agree.
MAIN_SERIES = (
    ("reward (score mean)", ("critic/score/mean", "critic/rewards/mean", "eval/score/mean"), None),
    ("response length (mean tokens)", ("response_length/mean",), None),
    ("response clip ratio", ("response_length/clip_ratio",), None),
    ("pass rate", ("reward_extra_info/pass_rate/mean", "critic/pass_rate/mean", "eval/pass_rate"), None),
    # verl counts turns as user + assistant turns + 1; tool calls = (num_turns - 2) / 2.
    ("tool calls per response", ("num_turns/mean",), ("(n − 2) / 2", lambda v: (v - 2) / 2.0)),
    ("step time (s)", ("timing_s/step",), None),
    ("sandbox requests per step", ("sandbox/requests",), None),
    ("sandbox failures per step", ("sandbox/failures",), None),
    ("sandbox latency p50 (ms)", ("sandbox/latency_p50_ms",), None),
    ("sandbox latency p99 (ms)", ("sandbox/latency_p99_ms",), None),
)
REWARD_LABEL = "reward (score mean)"
VALIDATION_PREFIX = "val-core/"  # validation accuracy, drawn by name after the main series (as core/metrics.ts mainSeries)
VALIDATION_LABEL = "validation"  # its title; the name (which the job chose) is the subtitle, wrapped
HEALTH_PREFIX = "sandbox/"
PAGE_MAX_METRICS = 60
PAGE_MAX_VALIDATION = 12  # validation series drawn at most (one per data source; a job could write many)


def page_key(job):
    return "%s/report.html" % job


def esc(s):
    """Page text: redacted (a metric name, a recipe name could carry a credential), then HTML-escaped."""
    return redact(str(s)).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#39;")


def fmt(v):
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            return str(v)
        if v != 0 and abs(v) < 1e-4:
            return "%.2e" % v
        return ("%.5g" % v)
    return str(v)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_finite(v):
    return v == v and v not in (float("inf"), float("-inf"))


def drawn_metric(name):
    return name.startswith(VALIDATION_PREFIX) or any(name in names for _l, names, _d in MAIN_SERIES)


def read_metrics(paths):
    """From verl's JSONL files (and the sandbox's): {name: (step, value)} of the newest step of every numeric metric,
    the steps seen, and {name: {step: value}} of the finite values of the metrics the page draws (only those: a
    run's other metrics could be hundreds of series). A later line wins for a step (a restarted run rewrites it)."""
    latest, steps, series = {}, set(), {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                lines = f.read().decode("utf-8", "replace").splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                row = json.loads(line)
                step, data = int(row["step"]), row["data"]
            except (ValueError, KeyError, TypeError):
                continue
            if not isinstance(data, dict):
                continue
            steps.add(step)
            for k, v in data.items():
                if not is_number(v):
                    continue
                if k not in latest or step >= latest[k][0]:
                    latest[k] = (step, v)
                if is_finite(v) and drawn_metric(k):
                    series.setdefault(k, {})[step] = float(v)
    return latest, steps, series


def main_series(series):
    """[(label, metric, formula or None, [(step, value)] by step)]: the main series present, derived values applied,
    then validation series by name — core/metrics.ts mainSeries."""
    out = []
    for label, names, derived in MAIN_SERIES:
        name = next((n for n in names if series.get(n)), None)
        if name is None:
            continue
        points = sorted(series[name].items())
        if derived is not None:
            points = [(s, derived[1](v)) for s, v in points]
        out.append((label, name, derived[0] if derived else None, points))
    for name in sorted(n for n in series if n.startswith(VALIDATION_PREFIX) and series[n]):
        out.append((VALIDATION_LABEL, name, None, sorted(series[name].items())))
    return out


# A chart: 340 × (header + 150) px; the plot area 276 px wide.
CHART_W, PLOT_L, PLOT_R, PLOT_H, AXIS_H = 340, 52, 12, 96, 30
SUB_CHARS = 50  # characters of the subtitle (10 px) per line
INK, MUTED, GRID, AXIS, LINE = "#1f2328", "#59636e", "#e6e6e6", "#b4b4b4", "#1f77b4"


def nice_step(span, count):
    """The tick step (1, 2 or 5 × 10^k) that splits `span` into about `count` intervals."""
    raw = span / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    norm = raw / mag
    return mag * (1 if norm < 1.5 else 2 if norm < 3 else 5 if norm < 7 else 10)


def ticks(lo, hi, count):
    """Round tick values covering [lo, hi]; the axis runs from the first to the last."""
    step = nice_step(hi - lo, count)
    first, last = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)], step


def tick_label(v, step):
    """Every label of an axis with the same decimals (0.0, 0.5, 1.0); an exponent only for very large or small."""
    if abs(v) >= 1e6 or abs(step) < 1e-4:
        return "%.3g" % v
    decimals = max(0, -int(math.floor(math.log10(step) + 1e-9)))
    s = "%.*f" % (decimals, v)
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def value_range(values):
    lo, hi = min(values), max(values)
    if hi > lo:
        return lo, hi
    if lo == 0:
        return 0.0, 1.0  # a count that stayed 0 (no failures): no negative axis
    pad = abs(lo) * 0.1  # a flat line sits mid-chart
    return lo - pad, hi + pad


def wrap(text, width):
    """Lines of at most `width` characters, broken after a '/', ' ' or '_' where one is near the end."""
    lines = []
    while len(text) > width:
        cut = max(text.rfind(c, width // 2, width) for c in "/ _") + 1 or width
        lines.append(text[:cut])
        text = text[cut:]
    return lines + [text]


def thin(points, x_of):
    """At most four points per pixel column (its first, lowest, highest and last): a long run's line keeps its
    spikes and stays a few kilobytes."""
    columns = {}
    for p in points:
        columns.setdefault(int(round(x_of(p[0]))), []).append(p)
    out = []
    for col in sorted(columns):
        group = columns[col]
        keep = {group[0], group[-1], min(group, key=lambda p: p[1]), max(group, key=lambda p: p[1])}
        out.extend(sorted(keep))
    return out


def num(v):
    """A coordinate with one decimal, never '-0.0'."""
    s = "%.1f" % v
    return "0.0" if s == "-0.0" else s


def svg_chart(label, metric, formula, points):
    """One series as an inline SVG line chart: its label, the metric it comes from, the latest value, y and step
    ticks. Every text from the job is escaped; the same points give the same bytes."""
    subtitle = metric if formula is None else "%s → %s" % (metric, formula)
    sub_lines = wrap(subtitle, SUB_CHARS)
    if len(sub_lines) > 3:  # the whole name is in the chart's <title> and the metrics table
        sub_lines = sub_lines[:2] + [sub_lines[2][:SUB_CHARS - 1] + "…"]
    step, value = points[-1]
    latest_y = 30 + 13 * len(sub_lines) + 2
    top = latest_y + 18  # room for the top tick's label under the latest value
    height = top + PLOT_H + AXIS_H
    plot_w = CHART_W - PLOT_L - PLOT_R
    s0, s1 = points[0][0], points[-1][0]
    xs, _ = ticks(s0, s1, 4)
    xs = [x for x in xs if s0 <= x <= s1 and x == int(x)] or [s0, s1]
    lo, hi = value_range([v for _s, v in points])
    ys, ystep = ticks(lo, hi, 4)
    y0, y1 = ys[0], ys[-1]
    x_of = lambda s: PLOT_L + plot_w * (s - s0) / float(s1 - s0)
    y_of = lambda v: top + PLOT_H * (y1 - v) / float(y1 - y0)
    out = ['<svg class="chart" role="img" aria-label="%s" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="10">'
           % (esc(label), CHART_W, height, CHART_W, height),
           "<title>%s</title>" % esc("%s (%s): %s at step %d" % (label, subtitle, fmt(value), step)),
           '<text x="8" y="16" font-size="12.5" font-weight="bold" fill="%s">%s</text>' % (INK, esc(label))]
    out += ['<text x="8" y="%d" fill="%s">%s</text>' % (30 + 13 * i, MUTED, esc(t)) for i, t in enumerate(sub_lines)]
    out.append('<text x="8" y="%d" font-size="11" fill="%s">latest <tspan font-weight="bold">%s</tspan> at step %d</text>' % (latest_y, LINE, esc(fmt(value)), step))
    for v in ys:
        y = num(y_of(v))
        out.append('<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s"/>' % (PLOT_L, y, CHART_W - PLOT_R, y, GRID))
        out.append('<text x="%d" y="%s" text-anchor="end" dy="3.5" fill="%s">%s</text>' % (PLOT_L - 5, y, MUTED, esc(tick_label(v, ystep))))
    base = top + PLOT_H
    out.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>' % (PLOT_L, base, CHART_W - PLOT_R, base, AXIS))
    for x in xs:
        px = num(x_of(x))
        out.append('<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="%s"/>' % (px, base, px, base + 4, AXIS))
        out.append('<text x="%s" y="%d" text-anchor="middle" fill="%s">%d</text>' % (px, base + 15, MUTED, int(x)))
    out.append('<text x="%d" y="%d" text-anchor="end" fill="%s">step</text>' % (CHART_W - PLOT_R, base + 27, MUTED))
    path = " ".join("%s,%s" % (num(x_of(s)), num(y_of(v))) for s, v in thin(points, x_of))
    out.append('<polyline fill="none" stroke="%s" stroke-width="1.6" stroke-linejoin="round" points="%s"/>' % (LINE, path))
    out.append('<circle cx="%s" cy="%s" r="3" fill="%s"/>' % (num(x_of(step)), num(y_of(value)), LINE))
    out.append("</svg>")
    return "\n".join(out)


def single_value(label, metric, formula, points):
    """A series with one point: its value in words, not a chart with nothing to draw."""
    step, value = points[-1]
    return '<li><b>%s</b> %s at step %d <span class="muted">(%s%s; one step so far: no curve yet)</span></li>' % (
        esc(label), esc(fmt(value)), step, esc(metric), "" if formula is None else esc(" → " + formula))


def charts_html(series_list, none_text):
    """Charts of the series with two points or more, then the others as values; `none_text` when there are none."""
    if not series_list:
        return '<p class="unknown">%s</p>' % esc(none_text)
    drawn = [svg_chart(*s) for s in series_list if len(s[3]) >= 2]
    single = [single_value(*s) for s in series_list if len(s[3]) < 2]
    return "\n".join(([('<div class="charts">\n%s\n</div>' % "\n".join(drawn))] if drawn else [])
                     + ([('<ul class="values">\n%s\n</ul>' % "\n".join(single))] if single else []))


def curves_sections(series):
    """The training curves (with validation) and the sandbox's health per step, as the full page splits them."""
    found = main_series(series)
    health = [s for s in found if s[1].startswith(HEALTH_PREFIX)]
    training = [s for s in found if not s[1].startswith(HEALTH_PREFIX)]
    validation = [s for s in training if s[1].startswith(VALIDATION_PREFIX)]
    training = [s for s in training if not s[1].startswith(VALIDATION_PREFIX)] + validation[:PAGE_MAX_VALIDATION]
    more = len(validation) - PAGE_MAX_VALIDATION
    note = '\n<p class="muted">%d more validation series not drawn here; rlpipe report draws them all</p>' % more if more > 0 else ""
    return (charts_html(training, "no training curves yet: verl has written none of the main series to its metrics file") + note,
            charts_html(health, "no sandbox health recorded: an RL stage with rlpipe's sandbox writes it per step beside verl's metrics (<metrics>.sandbox.jsonl)"))


def page_html(job, run, provider, recipe, recipe_hash, latest, steps, series, checkpoints, now):
    reward = next((s[3][-1] for s in main_series(series) if s[0] == REWARD_LABEL), None)
    sub = ["%s on %s" % (recipe, provider)] + (["latest reward %s at step %d (%s)" % (fmt(reward[1]), reward[0], run)] if reward else [])
    curves, health = curves_sections(series)
    rows = "\n".join('<tr><td>%s</td><td class="num">%s</td><td class="num">%d</td></tr>' % (esc(k), esc(fmt(v)), st)
                     for k, (st, v) in sorted(latest.items())[:PAGE_MAX_METRICS])
    metrics = ('<p class="muted">%d step%s recorded; the latest value of each metric (%s of %d, by name)</p>\n<table><thead><tr><th>metric</th><th class="num">latest</th><th class="num">at step</th></tr></thead>\n<tbody>\n%s\n</tbody></table>'
               % (len(steps), "" if len(steps) == 1 else "s", min(len(latest), PAGE_MAX_METRICS), len(latest), rows)) if latest else '<p class="unknown">no metrics yet: verl has written no step to its metrics file</p>'
    ck = "\n".join('<tr><td>%s</td><td class="num">%d</td><td class="num">%d</td><td class="num">%s</td><td>%s</td></tr>' % (esc(run), st, n, esc("%.1f MiB" % (b / MIB)), esc(at.replace("T", " ")[:19] + " UTC" if at else "unknown"))
                   for st, n, b, at in checkpoints)
    ckpts = ('<table><thead><tr><th>run</th><th class="num">step</th><th class="num">files</th><th class="num">size</th><th>committed at</th></tr></thead>\n<tbody>\n%s\n</tbody></table>' % ck) if checkpoints else '<p class="unknown">no committed checkpoints yet</p>'
    unknown = [
        ("phase", "the provider's phase is not known inside the job: the sync sidecar that wrote this page holds no %s credentials; rlpipe status %s asks %s" % (provider, job, provider)),
        ("cost", "not known inside the job (no estimate in the bundle, no billing); rlpipe cost --run %s" % job),
        ("log", "kept by the provider; rlpipe logs %s" % job),
    ]
    unk = "\n".join('<dt>%s</dt><dd class="unknown">%s</dd>' % (esc(k), esc(v)) for k, v in unknown)
    cmds = "\n".join("<tr><td>%s</td><td><code>%s</code></td></tr>" % (esc(w), esc(c)) for w, c in (
        ("the full page, with the phase, curves, cost and log", "rlpipe report %s" % job), ("follow its log", "rlpipe logs %s --follow" % job),
        ("stop it", "rlpipe stop %s" % job), ("any metric as an image", "rlpipe metrics %s --plot %s.png" % (run, run))) + ((("restore the newest checkpoint", "rlpipe restore %s ./%s-ckpt --step %d" % (run, run, checkpoints[-1][0])),) if checkpoints else ()))
    return """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%(title)s</title>
<style>
body { margin: 0; color: #1f2328; font: 14px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 22px; margin: 0 0 4px; word-break: break-all; } h2 { font-size: 17px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid #d1d9e0; }
.muted { color: #59636e; } .unknown { color: #7c4a03; background: #fff8e5; border: 1px solid #f0d58c; border-radius: 6px; padding: 6px 10px; margin: 4px 0; }
.phase { display: inline-block; font-weight: bold; font-size: 15px; padding: 2px 10px; border-radius: 12px; background: #eaeef2; color: #424a53; vertical-align: middle; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 4px 14px; } dt { color: #59636e; } dd { margin: 0; }
table { border-collapse: collapse; width: 100%%; margin: 6px 0 10px; font-size: 13px; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #d1d9e0; } th { background: #f6f8fa; }
.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code { font-family: "DejaVu Sans Mono", Consolas, monospace; font-size: 12.5px; background: #f6f8fa; padding: 1px 5px; border-radius: 4px; }
.charts { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 12px; margin: 8px 0 12px; }
svg.chart { border: 1px solid #d1d9e0; border-radius: 6px; background: #fff; max-width: 100%%; height: auto; }
ul.values { margin: 6px 0 10px; padding-left: 20px; }
footer { margin-top: 28px; color: #59636e; font-size: 12px; }
</style>
</head>
<body>
<main>
<header>
<h1>%(job)s <span class="phase">PHASE UNKNOWN IN THE JOB</span></h1>
<p class="muted">%(sub)s</p>
</header>
<section id="run">
<h2>Run</h2>
<dl>
<dt>recipe</dt><dd>%(recipe)s (hash %(hash)s)</dd>
<dt>provider</dt><dd>%(provider)s</dd>
<dt>stage run</dt><dd>%(run)s</dd>
%(unknown)s
</dl>
</section>
<section id="curves">
<h2>Training curves</h2>
%(curves)s
</section>
<section id="sandbox">
<h2>Sandbox health per step</h2>
%(health)s
</section>
<section id="metrics">
<h2>Metrics</h2>
%(metrics)s
</section>
<section id="checkpoints">
<h2>Checkpoints</h2>
%(ckpts)s
</section>
<section id="commands">
<h2>Commands</h2>
<table><tbody>
%(cmds)s
</tbody></table>
</section>
<footer>Written into the run's store by the job's sync sidecar (rlpipe_sync.py), gathered %(now)s. One self-contained page: no script, nothing fetched.</footer>
</main>
</body>
</html>
""" % {"title": esc("%s: phase unknown in the job" % job), "job": esc(job), "sub": esc(" · ".join(sub)), "recipe": esc(recipe), "hash": esc((recipe_hash or "unknown")[:12]),
       "provider": esc(provider), "run": esc(run), "unknown": unk, "curves": curves, "health": health, "metrics": metrics, "ckpts": ckpts, "cmds": cmds, "now": esc(now.replace("T", " ")[:19] + " UTC")}


class PageWriter:
    """Rewrites the page at most every `interval_s` seconds, and on the last pass; a failure is logged, never fatal."""

    def __init__(self, sync, job, provider, recipe, recipe_hash, metrics, interval_s):
        self.sync, self.job, self.provider, self.recipe, self.recipe_hash = sync, job, provider, recipe, recipe_hash
        self.metrics, self.interval_s, self.last = metrics, interval_s, None

    def maybe_write(self, final):
        now = time.time()
        if not final and self.last is not None and now - self.last < self.interval_s:
            return
        self.last = now
        try:
            run = self.sync.run
            committed, _retired, stored = ledger(self.sync.store.list(run + "/checkpoints/"), run)
            checkpoints = []
            for st in sorted(committed):  # the manifest says what the step holds and when it was committed
                m = json.loads(self.sync.store.get_bytes(manifest_key(run, st)).decode("utf-8"))
                checkpoints.append((st, len(m.get("files", [])), int(m.get("totalBytes", 0)), str(m.get("committedAt", ""))))
            latest, steps, series = read_metrics(self.metrics)
            html = page_html(self.job, run, self.provider, self.recipe, self.recipe_hash, latest, steps, series, checkpoints, iso_now())
            self.sync.store.put_bytes(page_key(self.job), html.encode("utf-8"), "text/html; charset=utf-8")
        except Exception as e:  # the page must never stop the checkpoint sync
            log("the run's page (%s) was not written: %s" % (page_key(self.job), e))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="base URL of the rlpipe function (presigned URLs; no credentials in the job)")
    ap.add_argument("--store", help="s3://, obs://, cos://bucket/prefix (credentials from the environment) or file:///dir")
    ap.add_argument("--region", help="the store's region (default from the environment)")
    ap.add_argument("--run", required=True)
    ap.add_argument("--dir", required=True, help="verl's trainer.default_local_dir")
    ap.add_argument("--metrics", action="append", default=[], help="verl's file logger output ($VERL_FILE_LOGGER_PATH); repeatable (the sandbox's health lines are a second file)")
    ap.add_argument("--interval", type=float, default=30.0)
    ap.add_argument("--once", action="store_true")
    ap.add_argument("--settle-s", type=float, default=0.0, help="with a file:// store: hold each manifest back this long after its files are in place")
    ap.add_argument("--part-size-mb", type=int, default=16)
    ap.add_argument("--parallel", type=int, default=4, help="parts in flight (memory: parallel x part size)")
    ap.add_argument("--keep-last", type=int)
    ap.add_argument("--keep-every", type=int)
    ap.add_argument("--recipe-hash")
    ap.add_argument("--token-env", default="RLPIPE_RUN_TOKEN")
    ap.add_argument("--page", help="the job's run name: also keep its page at <store>/JOB/report.html (not with --url)")
    ap.add_argument("--page-interval", type=float, default=60.0, help="with --page: rewrite the page at most every S seconds (and on the last pass)")
    ap.add_argument("--page-recipe", default="unknown")
    ap.add_argument("--page-provider", default="unknown")
    args = ap.parse_args(argv)
    if (args.url is None) == (args.store is None):
        log("give exactly one of --url (the runs function) and --store (a store URI)")
        return 2
    keep = {k: v for k, v in (("last", args.keep_last), ("every", args.keep_every)) if v}
    part_size = max(8, args.part_size_mb) * MIB
    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    if args.store is not None:
        sync = StoreSync(open_store(args.store, args.region), args.run, part_size, keep, args.recipe_hash, args.settle_s, args.parallel)
        page = None
        if args.page:
            if not RUN_NAME.match(args.page):
                raise SyncError("invalid --page run name %r" % args.page)
            page = PageWriter(sync, args.page, args.page_provider, args.page_recipe, args.recipe_hash, args.metrics, args.page_interval)
        while True:
            final = args.once or stopping["now"]
            sync.sync_checkpoints(args.dir, final=final)
            for path in args.metrics:
                sync.sync_metrics(path)
            if page is not None:
                page.maybe_write(final)
            if final:
                return 0
            deadline = time.time() + args.interval
            while time.time() < deadline and not stopping["now"]:
                time.sleep(0.5)
    token = os.environ.get(args.token_env)
    if not token:
        log("environment variable %s (the run token) is not set" % args.token_env)
        return 2
    sync = FunctionSync(Client(args.url, args.run, token), part_size, keep, args.recipe_hash, args.parallel)
    while True:
        sync.sync_checkpoints(args.dir)
        for path in args.metrics:
            sync.sync_metrics(path)
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
