"""The job's sandbox on every Ray node: one actor per alive node, pinned there, starting and supervising the sandbox.

On a Ray job (provider ray, TI-ONE's Ray mode) the platform has started Ray on every node and runs launch.sh once,
as the driver, while verl places its agent-loop and reward workers on every node; a tool config that says
http://127.0.0.1:<port> means "this worker's node". launch.sh therefore runs this file as a second Ray driver on
the same cluster, for as long as the job runs:

    python3 rlpipe_node_sandbox.py SPEC.json READY.json

For each alive node (and each node that joins later) it places a NodeSandbox actor with hard node affinity. The
actor starts the sandbox (SPEC's bash script, in $RLPIPE_WORKDIR, logging to <log>.node-<ip>.log), waits until it
answers its health check on the node's own loopback — with a fresh nonce when the sandbox is rlpipe serve, so a
foreign process on the port never passes — and restarts it (at most $RLPIPE_SANDBOX_RESTARTS times, a line in the
job log each time) when it exits. READY.json is written once every node's sandbox is healthy; the process exits 3
(after printing what failed, on which node) when one cannot be started, and when one is out of restarts later (then
it also writes the reason to $RLPIPE_SANDBOX_LOST and sends SIGUSR1 to launch.sh, $RLPIPE_LAUNCH_PID, which stops the
job). SIGTERM stops every sandbox, with no restart, and exits 0.

Only the variables SPEC names are forwarded from the driver; secrets never travel through Ray (actor arguments are
stored in the cluster): the sandbox on each node reads them from that node's environment, as every Ray worker does.
Standard library plus ray.
"""
import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

EXIT_SANDBOX = 3  # launch.sh's code for "the sandbox could not be started"
PR_SET_PDEATHSIG = 1


def log(msg):
    print(f"[rlpipe {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}] {msg}", file=sys.stderr, flush=True)


def _die_with_parent():
    # The sandbox ends when its actor's process does (the job ended, the actor was killed): never an orphan server.
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def port_busy(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return True
    except OSError:
        return False


def node_log_path(path, ip):
    """deploy_127.0.0.1:8080.log -> deploy_127.0.0.1:8080.node-10.0.0.2.log: nodes sharing a filesystem never interleave."""
    base, dot, ext = path.rpartition(".")
    return f"{base}.node-{ip}.{ext}" if dot and "/" not in ext else f"{path}.node-{ip}"


@ray.remote(num_cpus=0, max_concurrency=4)
class NodeSandbox:
    """The sandbox on one node. All processes are started from one long-lived thread (PR_SET_PDEATHSIG follows the
    thread that forked), which also restarts the sandbox when it exits."""

    def __init__(self, spec, env, workdir):
        self.spec = spec
        self.env = env
        self.workdir = workdir
        self.ip = ray.util.get_node_ip_address()
        self.node_id = ray.get_runtime_context().get_node_id()
        self.port = int(spec["port"])
        self.log_path = node_log_path(os.path.join(workdir, spec["log"]) if not spec["log"].startswith("/") else spec["log"], self.ip)
        self.proc = None
        self.nonce = None
        self.restarts = 0
        self.healthy = False  # the current process passed its health check (and has not exited since)
        self.failure = None
        self.stopping = threading.Event()
        self.first = threading.Event()
        self.thread = None

    # ---- the actor's methods (called by the driver)
    def start(self):
        """Starts the sandbox and waits for its first health check; raises with what went wrong on this node."""
        if not os.path.isdir(self.workdir):
            # Not shared with the driver's node: the sandbox needs only a directory to run in and log to.
            try:
                os.makedirs(self.workdir, exist_ok=True)
            except OSError as e:
                raise RuntimeError(f"node {self.ip}: the working directory {self.workdir} does not exist there and cannot be made ({e}); set runtime.workDir to a directory every node can write (a shared filesystem)")
            log(f"node {self.ip}: made the working directory {self.workdir} (the driver's node does not share it with this one)")
        if port_busy(self.port):
            raise RuntimeError(f"node {self.ip}: port {self.port} is already in use by another process, so the sandbox cannot listen there (and a health check would reach that process instead): stop that process, or move the sandbox to another port in the recipe ({self.spec['portField']})")
        self.thread = threading.Thread(target=self._run, name="rlpipe-sandbox", daemon=True)
        self.thread.start()
        self.first.wait()
        if self.failure is not None:
            raise RuntimeError(self.failure)
        return self.status()

    def status(self):
        proc = self.proc
        return {
            "nodeIp": self.ip, "nodeId": self.node_id, "port": self.port, "pid": None if proc is None else proc.pid,
            "running": proc is not None and proc.poll() is None,
            "healthy": self.healthy and proc is not None and proc.poll() is None, "restarts": self.restarts, "failure": self.failure,
            "log": self.log_path,
        }

    def metrics_text(self):
        """This node's sandbox's GET /metrics (rlpipe serve), for rlpipe_health.py; None when it does not answer."""
        token_env = self.spec.get("tokenEnv")
        token = os.environ.get(token_env) if token_env else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/metrics", headers={"Authorization": f"Bearer {token}"} if token else {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.read().decode("utf-8", "replace")
        except Exception:
            return None

    def stop(self):
        self.stopping.set()
        self._kill()
        return True

    # ---- the supervising thread
    def _run(self):
        try:
            self._spawn()
            self._wait_healthy()
            self.healthy = True
            log(f"sandbox on node {self.ip} healthy (pid {self.proc.pid}, port {self.port}; log {self.log_path})")
        except RuntimeError as e:
            self.failure = str(e)
            self._kill()
            return
        finally:
            self.first.set()
        # The job's setting (forwarded from the driver), else the node's, else the spec's.
        limit = int(self.env.get("RLPIPE_SANDBOX_RESTARTS") or os.environ.get("RLPIPE_SANDBOX_RESTARTS") or self.spec.get("restarts", 5))
        while not self.stopping.is_set():
            self.proc.wait()
            self.healthy = False
            if self.stopping.is_set():
                return
            self.restarts += 1
            if self.restarts > limit:
                self.failure = f"node {self.ip}: the sandbox exited again after {limit} restarts; not restarting it (see {self.log_path})"
                log(f"error: {self.failure}")
                return
            log(f"the sandbox on node {self.ip} (pid {self.proc.pid}) exited with code {self.proc.returncode} during the run; restarting it ({self.restarts} of {limit})")
            try:
                if port_busy(self.port):
                    raise RuntimeError(f"node {self.ip}: port {self.port} was taken by another process while the sandbox was down")
                self._spawn()
                self._wait_healthy()
                self.healthy = True
                log(f"sandbox on node {self.ip} healthy again (pid {self.proc.pid})")
            except RuntimeError as e:
                log(f"error: {e}")
                if self.proc is None or self.proc.poll() is None:
                    self._kill()

    def _spawn(self):
        env = dict(os.environ)
        env.update(self.env)
        env.pop("RAY_ADDRESS", None)  # the sandbox is no Ray client
        if self.spec.get("nonce"):
            self.nonce = secrets.token_hex(16)
            env["RLPIPE_SERVE_NONCE"] = self.nonce
        os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
        with open(self.log_path, "ab") as out:
            self.proc = subprocess.Popen(
                ["bash", "-c", self.spec["script"]], cwd=self.workdir, env=env, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_die_with_parent)

    def _probe(self):
        h = self.spec["health"]
        body = h.get("body")
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{h['path']}", data=body.encode() if body else None,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                if self.nonce is not None and r.headers.get("X-Rlpipe-Nonce") != self.nonce:
                    return False  # a server answers, but not the one this actor started
                return h["expect"] in r.read().decode("utf-8", "replace")
        except Exception:
            return False

    def _wait_healthy(self):
        h = self.spec["health"]
        deadline = time.monotonic() + float(h["timeoutS"])
        while not self._probe():
            if self.proc.poll() is not None:
                raise RuntimeError(f"node {self.ip}: the sandbox exited with code {self.proc.returncode} before it became healthy; see {self.log_path}:\n{self._tail()}")
            if time.monotonic() >= deadline:
                raise RuntimeError(f"node {self.ip}: the sandbox was not healthy after {h['timeoutS']} s; see {self.log_path}:\n{self._tail()}")
            if self.stopping.wait(float(h["intervalS"])):
                raise RuntimeError(f"node {self.ip}: stopped before the sandbox became healthy")

    def _tail(self):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - 2000))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def _kill(self):
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue


def forwarded_env(spec):
    never = set(spec.get("secretEnvs", []))
    return {k: os.environ[k] for k in spec.get("forwardEnv", []) if k in os.environ and k not in never}


def alive_nodes():
    return sorted((n["NodeID"], n["NodeManagerAddress"]) for n in ray.nodes() if n.get("Alive"))


def main(argv):
    if len(argv) != 3:
        print("usage: rlpipe_node_sandbox.py SPEC.json READY.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    ready_path = argv[2]
    stopping = threading.Event()
    workdir = os.environ.get("RLPIPE_WORKDIR") or os.getcwd()
    env = forwarded_env(spec)
    if os.environ.get("RLPIPE_SANDBOX_RESTARTS"):
        env["RLPIPE_SANDBOX_RESTARTS"] = os.environ["RLPIPE_SANDBOX_RESTARTS"]  # the job's restart budget, on every node
    ray.init(address=os.environ.get("RAY_ADDRESS") or "auto", logging_level="ERROR", log_to_driver=True,
             namespace=spec.get("namespace", "rlpipe"))
    # After ray.init, which installs a SIGTERM handler of its own (it exits at once, and the sandboxes died with a
    # SIGKILL and a "restarting" line): a stop is a clean stop of every node's sandbox, no restart, then exit 0.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    actors = {}

    def place(nodes):
        started = {}
        for node_id, ip in nodes:
            a = NodeSandbox.options(
                name=f"rlpipe-sandbox-{node_id}", scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node_id, soft=False),
            ).remote(spec, env, workdir)
            actors[node_id] = (a, ip)
            started[node_id] = (a.start.remote(), ip)
        failed = []
        for node_id, (ref, ip) in started.items():
            try:
                ray.get(ref)
            except Exception as e:  # the actor's RuntimeError arrives wrapped (RayTaskError)
                cause = getattr(e, "cause", None) or e
                failed.append(f"{cause}")
        return failed

    nodes = alive_nodes()
    log(f"starting the sandbox on each of {len(nodes)} Ray node(s): {', '.join(ip for _, ip in nodes)}")
    failed = place(nodes)
    if failed:
        for f in failed:
            log(f"error: {f}")
        shutdown(actors)
        return EXIT_SANDBOX
    statuses = ray.get([a.status.remote() for a, _ in actors.values()])
    tmp = f"{ready_path}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"namespace": spec.get("namespace", "rlpipe"), "nodes": sorted(statuses, key=lambda s: s["nodeIp"]),
                   "actors": sorted(f"rlpipe-sandbox-{n}" for n in actors)}, f, indent=2)
    os.replace(tmp, ready_path)

    check_s = float(os.environ.get("RLPIPE_SANDBOX_CHECK_S", "5"))
    reported = set()
    while not stopping.wait(check_s):
        # A node that joins later (autoscaling, a replaced node) gets its sandbox too.
        new = [(n, ip) for n, ip in alive_nodes() if n not in actors]
        if new:
            log(f"Ray node(s) joined: {', '.join(ip for _, ip in new)}; starting their sandboxes")
            for f in place(new):
                log(f"error: {f}")
        for node_id, (a, ip) in list(actors.items()):
            try:
                st = ray.get(a.status.remote(), timeout=30)
            except Exception:
                if node_id not in reported:
                    reported.add(node_id)
                    log(f"the sandbox actor on node {ip} is gone (the node left the cluster?)")
                actors.pop(node_id)
                continue
            if st.get("failure") and not stopping.is_set():
                # Out of restarts: that node's tool calls and rewards would fail from now on. The job stops, saying
                # which node and where its sandbox's log is, rather than training on failures.
                lost(f"node {st['nodeIp']}: the sandbox is gone for good ({st['failure']}; its log: {st['log']})")
                shutdown(actors)
                return EXIT_SANDBOX
    shutdown(actors)
    return 0


def lost(why):
    """Tells launch.sh (RLPIPE_LAUNCH_PID, SIGUSR1) that a node's sandbox is gone for good, the reason in RLPIPE_SANDBOX_LOST."""
    log(f"error: {why}")
    path = os.environ.get("RLPIPE_SANDBOX_LOST")
    if path:
        tmp = f"{path}.tmp.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(why + "\n")
        os.replace(tmp, path)
    pid = os.environ.get("RLPIPE_LAUNCH_PID")
    if pid and pid.isdigit():
        try:
            os.kill(int(pid), signal.SIGUSR1)
        except ProcessLookupError:
            pass


def shutdown(actors):
    refs = [a.stop.remote() for a, _ in actors.values()]
    try:
        ray.get(refs, timeout=40)
    except Exception:
        pass
    for a, _ in actors.values():
        try:
            ray.kill(a)
        except Exception:
            pass


if __name__ == "__main__":
    sys.exit(main(sys.argv))
