"""TestClient over HTTP: the suites' in-process client, swapped for requests to the server under test (RLPIPE_URL).
Request bodies and assertions stay the suites' own."""
import os

import requests


class TestClient:
    __test__ = False  # not a pytest test class

    def __init__(self, app=None):
        self.base = os.environ["RLPIPE_URL"].rstrip("/")

    def post(self, path, json=None, **kwargs):
        return requests.post(self.base + path, json=json, timeout=600, **kwargs)

    def get(self, path, **kwargs):
        return requests.get(self.base + path, timeout=600, **kwargs)
