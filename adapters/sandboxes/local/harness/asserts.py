"""Python assert tests with the program and its tests in different processes, so that no program can forge a pass.

An assert test (HumanEval's check(candidate), MBPP's `assert f(x) == y`) that runs in the program's own process can
be passed by a wrong program: it ends the process with status 0 before an assert fails (os._exit, a patched
traceback.print_exception or sys.excepthook, atexit), makes a comparison lie (an object equal to everything), or
reads the expected values from the test code in its memory. Here three processes share the work:

  * the program host (forked by the manager once per program, after the build and before any test code reached
    the manager) forks the program's process for each case; that process runs the program and then serves calls;
  * the verifier (forked by the manager, which holds the test code) runs the test code against stand-ins for the
    program's names. Every call crosses a socket: arguments go as plain data and the result comes back as plain data
    (None, bool, int, float, complex, str, bytes, bytearray, tuple, list, dict, set, frozenset) that the verifier
    builds itself, or as an opaque handle whose comparisons are identity only. The verifier never runs program code;
  * the case passes only when the verifier's test code returned without an exception: the verifier's exit status,
    which no other process can set (it is not dumpable; a signal can only kill it, which fails the case).

What does not carry over from running in one process: a test cannot pass functions to the program, compare the
program's own objects except by identity, or see program globals change after the program's top level ran. Lists,
dicts, sets and bytearrays a test passes are updated in place after the call, as a function mutating them would.

The verifier trusts nothing the program's process says about its names: it imports no module the program names (a
module the program imported is bound to the verifier's own copy, and only for modules on SAFE_MODULES, imported from
the verifier's own sys.path), keeps the real builtins whatever the program defines, never takes a name that spells a
safe module or its usual alias from the program, runs in an empty read-only directory, and passes only when the test
returned normally: it writes a pass token on a descriptor only it holds, after the test returned, so SystemExit,
os._exit or a signal in the verifier is a failure whatever the exit status says.

This module imports nothing of the program runner (local_harness.py): the verifier's code is this file alone.
"""
import _json
import binascii
import builtins
import os
import sys


class _JsonContext:
    """What the C scanner of the json package reads from its decoder (json.loads without importing json). The harness
    (local_harness.py) uses the same scanner."""
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo = {}

    @staticmethod
    def parse_constant(name):
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


JSON_SCANNER = _json.make_scanner(_JsonContext())

# Modules a test may use through a name the program bound (HumanEval programs import math, re, typing…): the verifier
# binds its own copy, imported from its own sys.path. Importing is running code, so only these, whatever the program
# names; a name that spells one of them (or a usual alias) is never taken from the program as anything else.
SAFE_MODULES = frozenset((
    "array", "bisect", "cmath", "collections", "collections.abc", "copy", "dataclasses", "datetime", "decimal", "enum",
    "fractions", "functools", "hashlib", "heapq", "itertools", "json", "math", "numpy", "operator", "random", "re",
    "statistics", "string", "sys", "textwrap", "typing", "unicodedata",
))
MODULE_ALIASES = frozenset(("np",))
# The verifier's import path: the interpreter's and the runtime environment's read-only directories, fixed when the
# manager imported this module (before any program), never the program's directory or a scratch directory.
_SCRATCH = ("/work", "/tmp", "/mnt", "/dev/shm", "/proc")
VERIFIER_PATH = tuple(p for p in sys.path if p not in ("", ".") and not p.startswith(_SCRATCH))
# An empty directory the sandbox mounts read-only (bwrap.ts): the verifier's working directory.
VERIFIER_DIR = "/opt/rlpipe/verifier"
PASS_TOKEN = b"P"

# Ints beyond 64 bits cross as hex: decimal conversion of huge ints is limited (sys.int_max_str_digits), hex is not.
_BIG = 1 << 64
_MUTABLE = (list, dict, set, bytearray)
_MAX_DEPTH = 200


class ProtocolError(Exception):
    """The other side sent something that is not a message of this protocol."""


# ---- framing: a 4-byte big-endian length, then JSON ----

_encode = _json.make_encoder(None, None, _json.encode_basestring, None, ":", ",", False, False, True)


def send(fd, msg):
    data = "".join(_encode(msg, 0)).encode("utf-8", "surrogatepass")
    data = len(data).to_bytes(4, "big") + data
    while data:
        data = data[os.write(fd, data):]


def _read_exactly(fd, n):
    parts, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def recv(fd):
    """The next message, or None when the other side closed the socket."""
    head = _read_exactly(fd, 4)
    if head is None:
        return None
    body = _read_exactly(fd, int.from_bytes(head, "big"))
    if body is None:
        return None
    text = body.decode("utf-8", "surrogatepass")
    obj, end = JSON_SCANNER(text, 0)
    if end != len(text):
        raise ProtocolError("trailing data in a message")
    return obj


# ---- values ----

def encode(value, handle_of, depth=0):
    """A value as plain JSON: tagged objects for what JSON lacks; `handle_of(v)` for anything else."""
    if depth > _MAX_DEPTH:
        raise ValueError("value nested too deeply to cross between processes")
    t = type(value)
    if value is None or t is bool or t is str:
        return value
    if t is int:
        return value if -_BIG < value < _BIG else {"x": hex(value)}
    if t is float:
        return value
    d = depth + 1
    if t is list:
        return [encode(x, handle_of, d) for x in value]
    if t is tuple:
        return {"t": [encode(x, handle_of, d) for x in value]}
    if t is dict:
        return {"d": [[encode(k, handle_of, d), encode(v, handle_of, d)] for k, v in value.items()]}
    if t is set:
        return {"s": [encode(x, handle_of, d) for x in value]}
    if t is frozenset:
        return {"f": [encode(x, handle_of, d) for x in value]}
    if t is bytes:
        return {"b": binascii.b2a_base64(value, newline=False).decode()}
    if t is bytearray:
        return {"a": binascii.b2a_base64(value, newline=False).decode()}
    if t is complex:
        return {"c": [value.real, value.imag]}
    return handle_of(value, depth)


def decode(obj, make_handle, depth=0):
    """Plain values built here from a message; `make_handle(id)` for the other side's handles."""
    if depth > _MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    t = type(obj)
    if obj is None or t in (bool, int, float, str):
        return obj
    d = depth + 1
    if t is list:
        return [decode(x, make_handle, d) for x in obj]
    if t is not dict or len(obj) != 1:
        raise ProtocolError("not a value of this protocol")
    (tag, v), = obj.items()
    if tag == "x" and type(v) is str:
        return int(v, 16)
    if tag == "c" and type(v) is list and len(v) == 2 and all(type(x) in (int, float) for x in v):
        return complex(v[0], v[1])
    if tag in ("b", "a") and type(v) is str:
        raw = binascii.a2b_base64(v)
        return raw if tag == "b" else bytearray(raw)
    if tag == "h" and type(v) is int:
        return make_handle(v)
    if type(v) is not list:
        raise ProtocolError("not a value of this protocol")
    if tag == "t":
        return tuple(decode(x, make_handle, d) for x in v)
    if tag == "s":
        return {decode(x, make_handle, d) for x in v}
    if tag == "f":
        return frozenset(decode(x, make_handle, d) for x in v)
    if tag == "d":
        out = {}
        for pair in v:
            if type(pair) is not list or len(pair) != 2:
                raise ProtocolError("not a dict item")
            out[decode(pair[0], make_handle, d)] = decode(pair[1], make_handle, d)
        return out
    raise ProtocolError("unknown value tag %r" % tag)


# ---- the program's side ----

def _plain_or_handle(handles):
    """How the program's process sends a value that is not plain: numpy values as their Python equivalents, plain
    types' subclasses as the plain type (what the program claims is its own business: only plain data crosses), the
    rest as a handle."""
    def handle_of(value, depth):
        t = type(value)
        if t.__module__.startswith("numpy") and hasattr(value, "tolist"):
            return encode(value.tolist(), handle_of, depth + 1)
        for base in (bool, int, float, str, bytes, tuple, list, dict, set, frozenset, complex):
            if isinstance(value, base):
                try:
                    return encode(base(value), handle_of, depth + 1)
                except Exception:  # noqa: BLE001 - a subclass that refuses conversion crosses as a handle
                    break
        key = len(handles) + 1
        handles[key] = value
        return {"h": key}
    return handle_of


def _args_in(msg, handles):
    def resolve(key):
        if key not in handles:
            raise ProtocolError("unknown handle %d" % key)
        return handles[key]
    args = [decode(a, resolve) for a in msg.get("args") or []]
    kwargs = {k: decode(v, resolve) for k, v in (msg.get("kwargs") or {}).items()}
    return args, kwargs


def serve(glb, fd, names, failure):
    """In the program's process, after its top level ran: answers the verifier's calls until it hangs up. `failure`:
    the exception the top level raised (then only that is reported)."""
    handles = {}
    handle_of = _plain_or_handle(handles)
    if failure is not None:
        send(fd, {"err": [type(failure).__name__, str(failure)[:2000]]})
        return
    table = {}
    for name in names:
        value = glb[name]
        if type(value) is type(sys):
            table[name] = {"m": value.__name__}
        else:
            try:
                table[name] = {"v": encode(value, handle_of)}
            except (ValueError, RecursionError):
                table[name] = {"v": handle_of(value, 0)}
    send(fd, {"ready": table})
    while True:
        msg = recv(fd)
        if msg is None:
            return
        try:
            target = handles.get(msg.get("target"))
            op = msg.get("op")
            if target is None and op != "hello":
                raise ProtocolError("unknown handle")
            if op == "call":
                args, kwargs = _args_in(msg, handles)
                value = target(*args, **kwargs)
                after = [encode(a, handle_of) if type(a) in _MUTABLE else None for a in args]
                reply = {"ok": encode(value, handle_of), "after": after}
            elif op == "getattr":
                name = msg.get("name")
                if type(name) is not str or name.startswith("__"):
                    raise AttributeError(name)
                reply = {"ok": encode(getattr(target, name), handle_of)}
            elif op == "iter":
                reply = {"ok": encode(iter(target), handle_of)}
            elif op == "next":
                try:
                    reply = {"ok": encode(next(target), handle_of)}
                except StopIteration:
                    reply = {"stop": True}
            elif op == "getitem":
                (key,), _ = _args_in({"args": [msg.get("key")]}, handles)
                reply = {"ok": encode(target[key], handle_of)}
            elif op in ("len", "repr", "str"):
                fn = {"len": len, "repr": repr, "str": str}[op]
                reply = {"ok": encode(fn(target), handle_of)}
            else:
                raise ProtocolError("unknown operation")
        except BaseException as e:  # noqa: BLE001 - the program's exception goes to the test, by name
            reply = {"err": [type(e).__name__, str(e)[:2000]]}
        send(fd, reply)


# ---- the verifier's side ----

class RemoteError(Exception):
    """An exception of the program whose type is not a built-in exception."""


def _raise_remote(err):
    name, message = (err + ["", ""])[:2] if type(err) is list else ("Error", "")
    cls = getattr(builtins, name, None) if type(name) is str else None
    # Only built-in Exception subclasses are raised as themselves: never SystemExit, KeyboardInterrupt or another
    # BaseException a program could name to end the verifier in a way that is not a failure.
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        raise RemoteError("%s: %s" % (name, message))
    try:
        exc = cls(message)
    except Exception:  # noqa: BLE001 - an exception type that needs other arguments
        exc = RemoteError("%s: %s" % (name, message))
    raise exc


class Verifier:
    """The verifier's end of the socket: stand-ins for the program's names, and the calls they make."""

    def __init__(self, fd):
        self.fd = fd

    def handle(self, key):
        return Remote(self, key)

    def encode_arg(self, value):
        def handle_of(v, depth):
            if type(v) is Remote:
                return {"h": v._rlpipe_key}
            raise TypeError("rlpipe runs the tests apart from the program, and a %s cannot be passed to it: only plain data (numbers, strings, bytes, lists, tuples, dicts, sets) crosses" % type(v).__name__)
        return encode(value, handle_of)

    def request(self, msg):
        send(self.fd, msg)
        reply = recv(self.fd)
        if reply is None:
            raise RuntimeError("the program under test exited while the tests were calling it")
        if type(reply) is not dict:
            raise ProtocolError("malformed reply from the program")
        if "err" in reply:
            _raise_remote(reply["err"])
        return reply

    def value(self, reply):
        if "ok" not in reply:
            raise ProtocolError("malformed reply from the program")
        return decode(reply["ok"], self.handle)

    def call(self, remote, args, kwargs):
        reply = self.request({"op": "call", "target": remote._rlpipe_key, "args": [self.encode_arg(a) for a in args],
                              "kwargs": {str(k): self.encode_arg(v) for k, v in kwargs.items()}})
        after = reply.get("after")
        if type(after) is list and len(after) == len(args):
            for arg, new in zip(args, after):
                if new is not None and type(arg) in _MUTABLE:
                    _update_in_place(arg, decode(new, self.handle))
        return self.value(reply)

    def names(self, entry_point=None):
        """The program's globals as the test sees them, after its top level ran (or its top level's exception), and the
        entry point's value (given to check() even when its name shadows a builtin)."""
        msg = recv(self.fd)
        if msg is None:
            raise RuntimeError("the program under test exited before the tests could call it")
        if type(msg) is not dict:
            raise ProtocolError("malformed first message from the program")
        if "err" in msg:
            _raise_remote(msg["err"])
        table = msg.get("ready")
        if type(table) is not dict:
            raise ProtocolError("malformed first message from the program")
        out = {}
        entry = None
        spec = table.get(entry_point) if entry_point else None
        if type(spec) is dict and "v" in spec:
            entry = decode(spec["v"], self.handle)
        for name, spec in table.items():
            if type(name) is not str or not name.isidentifier() or name.startswith("__") or hasattr(builtins, name):
                continue  # the test's builtins and dunders are the real ones, whatever the program defines
            if type(spec) is dict and type(spec.get("m")) is str:
                module = safe_module(spec["m"])
                if module is not None:
                    out[name] = module
            elif name in SAFE_MODULES or name in MODULE_ALIASES:
                continue  # not a module: a name a test would use as one (math.isclose, np.allclose) is never the program's
            elif type(spec) is dict and "v" in spec:
                out[name] = decode(spec["v"], self.handle)
        return out, entry


def safe_module(name):
    """The verifier's own module `name` when it is on SAFE_MODULES (imported from the verifier's path), else None."""
    if name not in SAFE_MODULES:
        return None
    try:
        return __import__(name, fromlist=["_"])
    except ImportError:
        return None  # not installed here (numpy without the runtime environment)


def _update_in_place(arg, new):
    if type(new) is not type(arg):
        return
    if type(arg) is dict:
        arg.clear()
        arg.update(new)
    elif type(arg) is set:
        arg.clear()
        arg.update(new)
    else:
        arg[:] = new


class Remote:
    """A handle on an object of the program's. Calls, attributes, iteration, len, indexing, repr and str go to the
    program; comparisons and truth do not (identity and True), so no object of the program's can pass an assert by
    claiming to be equal, contained or true."""
    __slots__ = ("_rlpipe_verifier", "_rlpipe_key")

    def __init__(self, verifier, key):
        object.__setattr__(self, "_rlpipe_verifier", verifier)
        object.__setattr__(self, "_rlpipe_key", key)

    def _op(self, op, **extra):
        return self._rlpipe_verifier.request(dict(op=op, target=self._rlpipe_key, **extra))

    def __call__(self, *args, **kwargs):
        return self._rlpipe_verifier.call(self, args, kwargs)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self._rlpipe_verifier.value(self._op("getattr", name=name))

    def __iter__(self):
        it = self._rlpipe_verifier.value(self._op("iter"))
        if type(it) is not Remote:
            raise TypeError("the program's iterator is not an iterator")
        return it

    def __next__(self):
        reply = self._op("next")
        if reply.get("stop") is True:
            raise StopIteration
        return self._rlpipe_verifier.value(reply)

    def __len__(self):
        n = self._rlpipe_verifier.value(self._op("len"))
        if type(n) is not int:
            raise TypeError("len() of the program's object is not an int")
        return n

    def __getitem__(self, key):
        return self._rlpipe_verifier.value(self._op("getitem", key=self._rlpipe_verifier.encode_arg(key)))

    def __repr__(self):
        s = self._rlpipe_verifier.value(self._op("repr"))
        return s if type(s) is str else "<object of the program>"

    def __str__(self):
        s = self._rlpipe_verifier.value(self._op("str"))
        return s if type(s) is str else "<object of the program>"


def verify(test_code, entry_point, fd, filename):
    """In the verifier: runs the test against the program's names. Returns normally only when every assert held."""
    v = Verifier(fd)
    program, entry = v.names(entry_point)
    glb = {"__name__": "__main__", "__builtins__": builtins}
    glb.update(program)
    exec(compile(test_code, filename, "exec"), glb)
    if entry_point:
        if entry is None:
            raise NameError("the program defines no %s" % entry_point)
        glb["check"](entry)


def run_verifier(test_code, entry_point, fd, pass_fd):
    """The verifier process (forked by the manager, which never ran program code): the test against the program, in an
    empty read-only directory with the verifier's own import path. Writes PASS_TOKEN on pass_fd only when the test
    returned normally; returns the exit status (0 only then)."""
    code = 1
    try:
        os.chdir(VERIFIER_DIR)
    except OSError:
        os.chdir("/")  # read-only too (the sandbox's root)
    sys.path[:] = VERIFIER_PATH
    try:
        verify(test_code, entry_point, fd, "<test>")
        code = 0
    except SystemExit as e:
        # Returning is passing: an exit from inside the test (whoever caused it) is not.
        sys.stderr.write("rlpipe: the test ended the verifier with SystemExit(%r) instead of returning; the case fails\n" % (e.code,))
    except BaseException as e:  # noqa: BLE001
        import traceback
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename != "<test>":
            tb = tb.tb_next
        traceback.print_exception(type(e), e, tb)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001
        code = 1
    if code == 0:
        os.write(pass_fd, PASS_TOKEN)
    return code
