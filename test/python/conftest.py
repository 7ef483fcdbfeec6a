"""Starts a real `rlpipe serve` (local bubblewrap sandbox) on 127.0.0.1 for the shim tests; stops it by pid. Also a
loopback stub (StubServer) for what a real server will not do on demand: overload, transient failures, refusals."""
import json
import socket
import os
import signal
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "recipes", "python"))


def _start(extra_args=(), env=None):
    proc = subprocess.Popen(
        ["node", os.path.join(ROOT, "dist", "bin", "rlpipe.js"), "serve", "--sandbox", "local", "--host", "127.0.0.1", "--port", "0", "--quiet", *extra_args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})},
    )
    line = proc.stdout.readline()
    if not line.startswith("rlpipe serve: http://"):
        proc.kill()
        raise RuntimeError("rlpipe serve did not start: %r %s" % (line, proc.stderr.read()))
    url = line.split()[2]
    return proc, url


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def server_url():
    proc, url = _start()
    yield url
    _stop(proc)


@pytest.fixture(scope="session")
def token_server():
    token = "shim-test-token-0123456789abcdef"
    proc, url = _start(["--token-env", "SHIM_TOKEN"], env={"SHIM_TOKEN": token})
    yield url, token
    _stop(proc)


@pytest.fixture(scope="session")
def env_server():
    """A server with the runtime environment npm test builds, and the languages its banner reports."""
    env_dir = os.environ.get("RLPIPE_TEST_PYTHON_ENV", "/var/tmp/rlpipe-test-python-env")
    if not os.path.exists(os.path.join(env_dir, "pyvenv.cfg")):
        raise RuntimeError("%s is missing: npm test's setup (scripts/setup.sh --test) builds it" % env_dir)
    proc = subprocess.Popen(
        ["node", os.path.join(ROOT, "dist", "bin", "rlpipe.js"), "serve", "--sandbox", "local", "--host", "127.0.0.1", "--port", "0", "--python-env", env_dir],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    line = proc.stdout.readline()
    if not line.startswith("rlpipe serve: http://"):
        proc.kill()
        raise RuntimeError("rlpipe serve did not start: %r %s" % (line, proc.stderr.read()))
    # rlpipe serve: http://127.0.0.1:PORT (sandbox local: python, cpp, ...; isolation warm; ...)
    languages = line.split("(sandbox local: ", 1)[1].split(";", 1)[0].split(", ")
    yield line.split()[2], languages
    _stop(proc)


class StubServer:
    """A loopback HTTP server for client tests. Each POST's JSON body goes to `respond(headers, body)` (headers with
    lower-case names), which returns (status, JSON payload, extra headers); `seen` records each request's headers and
    body. Stopped by close(). With `start_after_s` nothing listens on its port for that long (a server being
    restarted: connections are refused), then it answers."""

    def __init__(self, respond, start_after_s=0.0):
        self.seen = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                headers = {k.lower(): v for k, v in self.headers.items()}
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.seen.append({"headers": headers, "body": body})
                status, payload, extra = respond(headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._server = None
        self._closed = threading.Event()
        if start_after_s <= 0:
            self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            port = self._server.server_address[1]
            threading.Thread(target=self._server.serve_forever, daemon=True).start()
        else:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                port = probe.getsockname()[1]

            def start_later():
                if self._closed.wait(start_after_s):
                    return
                self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
                self._server.serve_forever()

            threading.Thread(target=start_later, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % port

    def close(self):
        self._closed.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def scripted(script, then):
    """A StubServer responder answering with the entries of `script` in turn (each (status, payload) or (status,
    payload, headers)), then `then`."""
    def respond(headers, body):
        entry = script.pop(0) if script else then
        return entry if len(entry) == 3 else (entry[0], entry[1], None)
    return respond
