"""The SandboxFusion request/response shapes the runner tests build and read: plain classes with the same fields and
defaults, model_dump() for requests, attribute access (nested too) for responses."""
import json
from enum import Enum


class RunStatus(str, Enum):
    Success = "Success"
    Failed = "Failed"
    SandboxError = "SandboxError"


class _Request:
    _defaults = {}

    def __init__(self, **fields):
        unknown = set(fields) - set(self._defaults)
        if unknown:
            raise TypeError("unknown fields %s" % sorted(unknown))
        self._fields = {**{k: (v.copy() if isinstance(v, (dict, list)) else v) for k, v in self._defaults.items()}, **fields}

    def model_dump(self):
        return dict(self._fields)

    def __getattr__(self, name):
        try:
            return self.__dict__["_fields"][name]
        except KeyError:
            raise AttributeError(name) from None


class RunCodeRequest(_Request):
    _defaults = {"compile_timeout": 10, "run_timeout": 10, "memory_limit_MB": -1, "code": None, "stdin": None,
                 "language": None, "files": {}, "fetch_files": []}


class RunJupyterRequest(_Request):
    _defaults = {"cells": [], "cell_timeout": 0, "total_timeout": 45, "kernel": "python3", "files": {}, "fetch_files": []}


class _Doc:
    """A JSON object with attribute access; nested objects and lists of objects too."""

    def __init__(self, data):
        self.__dict__["_data"] = data

    def __getattr__(self, name):
        data = self.__dict__["_data"]
        if name not in data:
            raise AttributeError(name)
        return _wrap(data[name])

    # Fields typed Dict in SandboxFusion's models (display, error, files) stay mappings: subscript and `in` work.
    def __getitem__(self, key):
        return _wrap(self.__dict__["_data"][key])

    def __contains__(self, key):
        return key in self.__dict__["_data"]

    def __iter__(self):
        return iter(self.__dict__["_data"])

    def model_dump(self):
        return self.__dict__["_data"]

    def model_dump_json(self, indent=None):
        return json.dumps(self.__dict__["_data"], indent=indent)


def _wrap(v):
    if isinstance(v, dict):
        return _Doc(v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


class RunCodeResponse(_Doc):
    def __init__(self, **data):
        for key in ("status", "message"):
            if key not in data:
                raise ValueError("response has no %s: %s" % (key, data))
        super().__init__(data)


class RunJupyterResponse(RunCodeResponse):
    pass
