// The sandbox security suite, reusable per backend and isolation mode: `securitySuite(label, start)` plants
// canary secrets where a server keeps its secrets (its environment, its bearer token, descriptors inherited
// from its parent, files in its working directory, HOME and TMPDIR, keys in its session keyring), starts the
// server through `start`, and
// submits attack programs through every path that runs code — /run_code (Python, C++, JavaScript),
// /common_evaluate_batch (stdio, special judge, function call, assert) and /v1/rewards. The programs scan
// every readable /proc file of every process (environ, cmdline, maps, status, …), reopen or take
// (pidfd_getfd) every descriptor they can see, read other processes' memory and every kernel key they can
// name, and walk the file system; none
// may find a canary or reach another process's descriptors or memory, and no program may forge its result.
// A program never holds a canary in plain text: it gets them hex-encoded, so its own source, job file and
// command line cannot match; only its own memory holds them decoded, and that is not scanned.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { registerJupyterForgeries, registerProgramAttacks, registerVerdictForgeries } from "./sandbox-attacks.js";
import { ROOT } from "./helpers.js";

/** Secrets planted in the server's surroundings; `needles` are the byte strings no program may find. */
export interface Canaries {
  /** Variables added to the server's environment (credentials-like names, and one unique name). */
  readonly env: Readonly<Record<string, string>>;
  /** The name of the variable holding the bearer token (its value is a canary too). */
  readonly tokenEnv: string;
  /** Content of the files the server's parent leaves open and of secret files around the server. */
  readonly fileSecret: string;
  /** Payload of the keys in the server's session keyring. */
  readonly keySecret: string;
  readonly needles: readonly string[];
}

export function makeCanaries(): Canaries {
  const c = (what: string) => `${what}-canary-${randomBytes(12).toString("hex")}`;
  const uniqueName = `RLPIPE_CANARY_${randomBytes(6).toString("hex").toUpperCase()}`;
  const env = {
    E2B_API_KEY: c("e2b"),
    AWS_ACCESS_KEY_ID: c("akid"),
    AWS_SECRET_ACCESS_KEY: c("aws"),
    HF_TOKEN: c("hf"),
    RLPIPE_TOKEN: c("token"),
    [uniqueName]: c("unique"),
  };
  const fileSecret = c("file");
  const keySecret = c("keyring");
  return { env, tokenEnv: "RLPIPE_TOKEN", fileSecret, keySecret, needles: [...Object.values(env), uniqueName, fileSecret, keySecret] };
}

/** A running server under test. */
export interface SecurityTarget {
  readonly url: string;
  /** Headers every request needs (the bearer token). */
  readonly headers: Readonly<Record<string, string>>;
  readonly languages: readonly string[];
  /** Whether keys could be planted in the server's session keyring (keyctl may be refused where tests run). */
  readonly keyringPlanted: boolean;
  /** How the server bounds a program's memory, as its banner says (local sandbox: "cgroup v1", "cgroup v2", "per process"). */
  readonly memoryBound?: string;
  stop(): Promise<void>;
}

export type StartServer = (canaries: Canaries) => Promise<SecurityTarget>;

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
/** The descriptors the server's parent leaves open: a low one and one above any fixed close bound. */
export const INHERITED_FDS = [3, 1500] as const;

/**
 * Joins a new session keyring, adds two keys holding the canary (one with the default permissions, one the
 * owner may read without possessing it), prints whether that worked, and execs the rest of argv.
 */
const PLANT_KEYS = `
import ctypes, os, platform, sys
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(platform.machine())
ok = False
if nr is not None:
    add_key, keyctl = nr
    secret = os.environ.pop("RLPIPE_PLANT_KEY").encode()
    if libc.syscall(keyctl, ctypes.c_long(1), None) > 0:  # KEYCTL_JOIN_SESSION_KEYRING (anonymous)
        k1 = libc.syscall(add_key, b"user", b"rlpipe-canary", secret, len(secret), ctypes.c_long(-3))
        k2 = libc.syscall(add_key, b"user", b"rlpipe-canary-owner-readable", secret, len(secret), ctypes.c_long(-3))
        ok = k1 > 0 and k2 > 0 and libc.syscall(keyctl, ctypes.c_long(5), ctypes.c_long(k2), ctypes.c_long(0x3f3f0000)) == 0
os.environ.pop("RLPIPE_PLANT_KEY", None)
print("rlpipe-security: keyring %s" % ("planted" if ok else "unavailable"), flush=True)
os.execvp(sys.argv[1], sys.argv[1:])
`;

/**
 * `rlpipe serve <args>` as a child process on 127.0.0.1 with the canaries in its environment, its token
 * from RLPIPE_TOKEN, a secret file left open on INHERITED_FDS, secret files in its cwd, HOME and TMPDIR, and
 * canary keys in its session keyring.
 */
export function rlpipeServe(args: readonly string[]): StartServer {
  return async (canaries) => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-security-"));
    const cwd = join(dir, "cwd");
    const home = join(dir, "home");
    const tmp = join(dir, "tmp");
    for (const d of [cwd, join(home, ".aws"), tmp]) mkdirSync(d, { recursive: true });
    const secretFile = join(dir, "secret-fd");
    writeFileSync(secretFile, `token=${canaries.fileSecret}\n`);
    writeFileSync(join(cwd, ".env"), `SECRET=${canaries.fileSecret}\n`);
    writeFileSync(join(home, ".aws", "credentials"), `[default]\naws_secret_access_key = ${canaries.fileSecret}\n`);
    writeFileSync(join(tmp, "other-service-secret"), canaries.fileSecret);
    // bash opens the secret file on the inherited descriptors (without close-on-exec) and execs node.
    const opens = INHERITED_FDS.map((fd) => `${fd}<"$1"`).join(" ");
    const child = spawn("/usr/bin/python3", ["-I", "-c", PLANT_KEYS, "bash", "-c", `exec ${opens}; shift; exec "$@"`, "bash", secretFile,
      process.execPath, CLI, "serve", "--host", "127.0.0.1", "--port", "0", "--token-env", canaries.tokenEnv, "--quiet", ...args], {
      cwd, stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, ...canaries.env, HOME: home, TMPDIR: tmp, RLPIPE_PLANT_KEY: canaries.keySecret },
    });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => { if (stderr.length < 8000) stderr += d.toString(); });
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(force);
      }
      rmSync(dir, { recursive: true, force: true });
    };
    try {
      const banner = await new Promise<RegExpExecArray>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`rlpipe serve did not start: ${stderr}`)), 30_000);
        child.stdout.on("data", (d: Buffer) => {
          stdout += d.toString();
          const m = /rlpipe serve: (http:\/\/\S+) \(sandbox \w+: ([^;]+);/.exec(stdout);
          if (m !== null) { clearTimeout(timer); resolve(m); }
        });
        void exited.then(() => { clearTimeout(timer); reject(new Error(`rlpipe serve exited: ${stderr}`)); });
      });
      // The path under test is the one asked for (the default: warm), so "both paths pass" means what it says.
      const asked = args.includes("--isolation") ? args[args.indexOf("--isolation") + 1] : "warm";
      const running = /; isolation ([\w-]+);/.exec(stdout)?.[1];
      if (args.includes("local") && running !== asked) throw new Error(`rlpipe serve runs isolation ${running ?? "(none said)"}, not ${asked}: ${stdout}`);
      return {
        url: banner[1]!, headers: { authorization: `Bearer ${canaries.env[canaries.tokenEnv]}` }, languages: banner[2]!.split(", "),
        keyringPlanted: stdout.includes("rlpipe-security: keyring planted"), stop,
        ...(/; memory bound ([^;]+);/.exec(stdout) === null ? {} : { memoryBound: /; memory bound ([^;]+);/.exec(stdout)![1]! }),
      };
    } catch (e) {
      await stop();
      throw e;
    }
  };
}

// ---- attack programs ----

/** What a scanner reports: canary hits (needle index, where), foreign descriptors and memory it reached. */
export interface ScanReport {
  readonly hits: readonly (readonly [number, string])[];
  readonly foreignFds: readonly string[];
  readonly foreignMem: readonly string[];
  readonly count: { readonly procFiles: number; readonly files: number; readonly fds: number; readonly bytes: number };
}

const hexNeedles = (needles: readonly string[]) => JSON.stringify(needles.map((n) => Buffer.from(n).toString("hex")));

/**
 * Python: defines rlpipe_scan() → report dict, and scan_verdict() → "clean" or the report as JSON. Reads every
 * /proc file except the endless or destructive ones, reopens /proc/<pid>/fd/*, takes every descriptor of every
 * other process with pidfd_getfd, reads other processes' readable memory, walks / (not /proc, /sys, /usr).
 */
export function pythonScanner(needles: readonly string[]): string {
  return `
import ctypes, json, os, platform, stat, struct
_NEEDLES = [bytes.fromhex(h) for h in ${hexNeedles(needles)}]
_CAP = 64 << 10
_PROC_SKIP = {"mem", "pagemap", "clear_refs", "kcore", "kmsg", "kpagecount", "kpageflags", "kpagecgroup", "sysrq-trigger",
              "task", "fd", "fdinfo", "map_files", "ns", "net", "attr", "root", "cwd", "exe"}

def rlpipe_scan():
    me = os.getpid()
    # Processes of the program itself (a scanner started by a program in another language): RLPIPE_SCAN_OWN_PIDS.
    own = {me} | {int(x) for x in os.environ.get("RLPIPE_SCAN_OWN_PIDS", "").split(",") if x.isdigit()}
    hits, foreign_fds, foreign_mem = [], [], []
    count = {"procFiles": 0, "files": 0, "fds": 0, "bytes": 0, "keys": 0}
    libc = ctypes.CDLL(None, use_errno=True)

    def check(where, data):
        count["bytes"] += len(data)
        for i, n in enumerate(_NEEDLES):
            if n in data:
                hits.append([i, where])

    def read_path(path, kind="files"):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode)):
                return False
            data = os.read(fd, _CAP)
        except OSError:
            return False
        finally:
            os.close(fd)
        count[kind] += 1
        check(path, data)
        return True

    def read_fd(fd, where):
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                data = os.pread(fd, _CAP, 0)
            else:
                os.set_blocking(fd, False)
                data = os.read(fd, _CAP)
            check(where, data)
        except OSError:
            pass

    for name in os.listdir("/proc"):
        if not name.isdigit() and name not in _PROC_SKIP:
            read_path("/proc/" + name, "procFiles")
    for pid in sorted(n for n in os.listdir("/proc") if n.isdigit()) + ["self", "thread-self"]:
        base = "/proc/" + pid
        dirs = [base]
        try:
            dirs += [base + "/task/" + t for t in os.listdir(base + "/task")]
        except OSError:
            pass
        for d in dirs:
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for n in names:
                if n not in _PROC_SKIP:
                    read_path(d + "/" + n, "procFiles")
            for sub in ("attr", "net"):
                try:
                    for n in os.listdir(d + "/" + sub):
                        read_path(d + "/" + sub + "/" + n, "procFiles")
                except OSError:
                    pass
        if pid.isdigit() and int(pid) != me and int(pid) in own:
            continue  # the program's other processes: their descriptors are its own (reading one of their pipes would steal its data)
        try:
            fds = os.listdir(base + "/fd")
        except OSError:
            fds = []
        foreign = pid.isdigit() and int(pid) not in own
        for fd in fds:
            if read_path(base + "/fd/" + fd, "fds") and foreign:
                foreign_fds.append("open /proc/%s/fd/%s" % (pid, fd))
        if not foreign:
            continue
        pidfd = libc.syscall(434, int(pid), 0)  # pidfd_open
        if pidfd >= 0:
            for fd in fds or [str(i) for i in range(64)]:
                got = libc.syscall(438, pidfd, int(fd), 0)  # pidfd_getfd
                if got >= 0:
                    foreign_fds.append("pidfd_getfd %s %s" % (pid, fd))
                    read_fd(got, "pidfd_getfd %s/%s" % (pid, fd))
                    os.close(got)
            os.close(pidfd)
        try:
            maps = open(base + "/maps").read().splitlines()
            mem = os.open(base + "/mem", os.O_RDONLY)
        except OSError:
            continue
        budget = 64 << 20
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if "r" not in fields[1] or hi - lo > (16 << 20) or budget <= 0:
                continue
            try:
                data = os.pread(mem, hi - lo, lo)
            except (OSError, OverflowError):
                continue
            budget -= len(data)
            if pid not in foreign_mem:
                foreign_mem.append(pid)
            check("/proc/%s/mem@%x" % (pid, lo), data)
        os.close(mem)

    # kernel keys: the special keyrings (thread … user-session, group), every key /proc/keys names, recursively
    keyctl = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
    if keyctl is not None:
        def kc(*args):
            return libc.syscall(keyctl, *[a if isinstance(a, ctypes.Array) else ctypes.c_long(a) for a in args])
        todo = [k for k in (kc(0, spec, 0) for spec in range(-1, -7, -1)) if k > 0]
        try:
            todo += [int(line.split()[0], 16) for line in open("/proc/keys")]
        except (OSError, ValueError):
            pass
        seen = set()
        while todo:
            k = todo.pop()
            if k in seen:
                continue
            seen.add(k)
            desc = ctypes.create_string_buffer(4096)
            n = kc(6, k, desc, 4096)  # KEYCTL_DESCRIBE
            if n > 0:
                check("key %d description" % k, desc.raw[:min(n, 4096)])
            buf = ctypes.create_string_buffer(65536)
            n = kc(11, k, buf, 65536)  # KEYCTL_READ
            if n > 0:
                data = buf.raw[:min(n, 65536)]
                count["keys"] += 1
                check("key %d" % k, data)
                if desc.value.startswith(b"keyring;"):
                    todo += [x for x in struct.unpack("%di" % (len(data) // 4), data[:len(data) // 4 * 4]) if x > 0]

    skip = {"/proc", "/sys", "/usr"}
    stack = ["/", "/usr/local/etc", "/usr/etc"]
    while stack and count["files"] < 5000:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            if e.path in skip:
                continue
            try:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                elif e.is_file(follow_symlinks=True):
                    read_path(e.path)
            except OSError:
                pass
    return {"hits": hits, "foreignFds": foreign_fds, "foreignMem": foreign_mem, "count": count}

def scan_verdict():
    r = rlpipe_scan()
    c = r["count"]
    clean = not r["hits"] and not r["foreignFds"] and not r["foreignMem"] and c["procFiles"] > 20 and c["files"] > 0 and c["fds"] >= 3
    return "clean" if clean else json.dumps(r)
`;
}

/** C++: environ/cmdline and every other file of every /proc/<pid>, reopened descriptors, pidfd_getfd, a walk of /. */
export function cppScanner(needles: readonly string[]): string {
  return `#include <cstdio>
#include <string>
#include <vector>
#include <filesystem>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
namespace fs = std::filesystem;
static std::vector<std::string> needles;
static std::vector<std::string> hits, foreign;
static long procFiles = 0, files = 0, fdsRead = 0, bytes = 0;
static std::string unhex(const std::string& h) { std::string s; for (size_t i = 0; i + 1 < h.size(); i += 2) s += (char)std::stoi(h.substr(i, 2), nullptr, 16); return s; }
static void check(const std::string& where, const std::string& data) {
  bytes += data.size();
  for (size_t i = 0; i < needles.size(); i++) if (data.find(needles[i]) != std::string::npos) hits.push_back(std::to_string(i) + " " + where);
}
static bool readFd(int fd, const std::string& where) {
  struct stat st; if (fstat(fd, &st) != 0) return false;
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) return false;
  if (!S_ISREG(st.st_mode)) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string buf(65536, '\\0');
  ssize_t n = S_ISREG(st.st_mode) ? pread(fd, &buf[0], buf.size(), 0) : read(fd, &buf[0], buf.size());
  if (n < 0) return false;
  buf.resize(n); check(where, buf); return true;
}
static bool readPath(const std::string& p, long& counter) {
  int fd = open(p.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY); if (fd < 0) return false;
  bool ok = readFd(fd, p); close(fd); if (ok) counter++; return ok;
}
static std::vector<fs::directory_entry> list(const fs::path& d) {
  std::vector<fs::directory_entry> out;
  try { std::error_code ec; for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) out.push_back(*it); } catch (...) {}
  return out;
}
static std::string esc(const std::string& s) { std::string o; for (char c : s) { if (c == '"' || c == '\\\\') o += '\\\\'; o += c; } return o; }
int main() {
  for (const char* h : ${JSON.stringify(needles.map((n) => Buffer.from(n).toString("hex"))).replace(/^\[/, "{").replace(/\]$/, "}")}) needles.push_back(unhex(h));
  const std::vector<std::string> skip = {"mem", "pagemap", "clear_refs", "kcore", "kmsg", "kpagecount", "kpageflags", "kpagecgroup", "sysrq-trigger"};
  auto skipped = [&](const std::string& n) { for (auto& s : skip) if (s == n) return true; return false; };
  std::error_code ec;
  std::string me = std::to_string(getpid());
  for (auto& e : list("/proc")) {
    std::string name = e.path().filename();
    bool isPid = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    if (!isPid) { if (!skipped(name) && !e.is_directory(ec)) readPath(e.path(), procFiles); continue; }
    for (auto& f : list(e.path())) {
      std::string n = f.path().filename();
      if (!skipped(n) && !f.is_directory(ec)) readPath(f.path(), procFiles);
    }
    std::vector<int> fds;
    for (auto& f : list(e.path() / "fd")) {
      fds.push_back(std::stoi(f.path().filename()));
      if (readPath(f.path(), fdsRead) && name != me) foreign.push_back("open " + f.path().string());
    }
    if (name == me) continue;
    int pidfd = syscall(434, std::stoi(name), 0);
    if (pidfd >= 0) {
      if (fds.empty()) for (int i = 0; i < 64; i++) fds.push_back(i);
      for (int fd : fds) { int got = syscall(438, pidfd, fd, 0); if (got >= 0) { foreign.push_back("pidfd_getfd " + name + " " + std::to_string(fd)); readFd(got, "pidfd_getfd " + name); close(got); } }
      close(pidfd);
    }
  }
  std::vector<fs::path> stack = {"/"};
  while (!stack.empty() && files < 5000) {
    fs::path d = stack.back(); stack.pop_back();
    for (auto& e : list(d)) {
      std::string p = e.path();
      if (p == "/proc" || p == "/sys" || p == "/usr") continue;
      if (e.is_symlink(ec)) { if (e.is_regular_file(ec)) readPath(p, files); continue; }
      if (e.is_directory(ec)) stack.push_back(e.path()); else if (e.is_regular_file(ec)) readPath(p, files);
    }
  }
  printf("{\\"hits\\": [");
  for (size_t i = 0; i < hits.size(); i++) printf("%s[%s, \\"%s\\"]", i ? ", " : "", hits[i].substr(0, hits[i].find(' ')).c_str(), esc(hits[i].substr(hits[i].find(' ') + 1)).c_str());
  printf("], \\"foreignFds\\": [");
  for (size_t i = 0; i < foreign.size(); i++) printf("%s\\"%s\\"", i ? ", " : "", esc(foreign[i]).c_str());
  printf("], \\"foreignMem\\": [], \\"count\\": {\\"procFiles\\": %ld, \\"files\\": %ld, \\"fds\\": %ld, \\"bytes\\": %ld}}\\n", procFiles, files, fdsRead, bytes);
}
`;
}

/** JavaScript (Node): the same /proc, descriptor and file-system scan without pidfd_getfd. */
export function jsScanner(needles: readonly string[]): string {
  return `const fs = require("fs");
const needles = ${hexNeedles(needles)}.map((h) => Buffer.from(h, "hex"));
const skip = new Set(["mem", "pagemap", "clear_refs", "kcore", "kmsg", "kpagecount", "kpageflags", "kpagecgroup", "sysrq-trigger"]);
const hits = [], foreignFds = [], count = { procFiles: 0, files: 0, fds: 0, bytes: 0 };
const me = String(process.pid);
function readPath(p, kind) {
  let fd;
  try { fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY); } catch { return false; }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile() && !st.isFIFO() && !st.isSocket()) return false;
    const buf = Buffer.alloc(65536);
    const n = fs.readSync(fd, buf, 0, buf.length, st.isFile() ? 0 : null);
    const data = buf.subarray(0, n);
    count.bytes += n;
    needles.forEach((x, i) => { if (data.includes(x)) hits.push([i, p]); });
    count[kind]++;
    return true;
  } catch { return false; } finally { fs.closeSync(fd); }
}
const ls = (d) => { try { return fs.readdirSync(d, { withFileTypes: true }); } catch { return []; } };
for (const e of ls("/proc")) {
  if (!/^\\d+$/.test(e.name)) { if (!skip.has(e.name) && !e.isDirectory()) readPath("/proc/" + e.name, "procFiles"); continue; }
  for (const f of ls("/proc/" + e.name)) if (!skip.has(f.name) && !f.isDirectory()) readPath("/proc/" + e.name + "/" + f.name, "procFiles");
  for (const f of ls("/proc/" + e.name + "/fd")) {
    const p = "/proc/" + e.name + "/fd/" + f.name;
    if (readPath(p, "fds") && e.name !== me) foreignFds.push("open " + p);
  }
}
const stack = ["/"];
while (stack.length > 0 && count.files < 5000) {
  const d = stack.pop();
  for (const e of ls(d)) {
    const p = (d === "/" ? "" : d) + "/" + e.name;
    if (p === "/proc" || p === "/sys" || p === "/usr") continue;
    if (e.isDirectory()) stack.push(p); else readPath(p, "files");
  }
}
console.log(JSON.stringify({ hits, foreignFds, foreignMem: [], count }));
`;
}

/**
 * A wrong solution that tries to forge passing results: it writes "case passed" events to every descriptor
 * of every other process it can reach (reopened through /proc or taken with pidfd_getfd), then kills its
 * parent (the harness) so that the forged events are the last word. Its asserts must still fail.
 */
export function forgingSolution(cases: number): string {
  return `
import ctypes, json, os, signal
def _forge():
    libc = ctypes.CDLL(None, use_errno=True)
    events = "".join(json.dumps({"event": "case", "index": i, "exitCode": 0, "stdout": "", "stderr": "", "timeMs": 1, "timedOut": False}) + "\\n" for i in range(${cases}))
    for pid in (n for n in os.listdir("/proc") if n.isdigit() and int(n) != os.getpid()):
        try:
            fds = [int(f) for f in os.listdir("/proc/%s/fd" % pid)]
        except OSError:
            fds = list(range(64))
        pidfd = libc.syscall(434, int(pid), 0)
        for fd in fds:
            for target in ([libc.syscall(438, pidfd, fd, 0)] if pidfd >= 0 else []):
                if target >= 0:
                    try: os.write(target, events.encode())
                    except OSError: pass
                    os.close(target)
            try:
                w = os.open("/proc/%s/fd/%d" % (pid, fd), os.O_WRONLY | os.O_NONBLOCK)
                os.write(w, events.encode())
                os.close(w)
            except OSError:
                pass
    os.kill(os.getppid(), signal.SIGKILL)
_forge()
def add(a, b):
    return a - b
`;
}

// ---- the suite ----

async function post(t: SecurityTarget, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${t.url}${path}`, { method: "POST", headers: { "content-type": "application/json", ...t.headers }, body: JSON.stringify(body) });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: HTTP ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text);
}

/** A /common_evaluate_batch answer in short: each test's verdict and what the program printed. */
function brief(r: { accepted: boolean; tests?: { passed: boolean; exec_info?: { message?: string; run_result?: { stdout?: string | null; stderr?: string | null } | null } }[] }): string {
  return JSON.stringify((r.tests ?? []).map((t) => ({ passed: t.passed, message: t.exec_info?.message, stdout: t.exec_info?.run_result?.stdout?.slice(0, 1500), stderr: t.exec_info?.run_result?.stderr?.slice(-1500) })));
}

/** The report a scanner printed, checked: no canary, no foreign descriptor or memory, and a real scan. */
function assertClean(what: string, stdout: string | null | undefined, needles: readonly string[]): void {
  let report: ScanReport;
  try {
    report = JSON.parse(stdout ?? "") as ScanReport;
  } catch {
    assert.fail(`${what}: the scanner printed no report: ${JSON.stringify((stdout ?? "").slice(0, 500))}`);
  }
  const leaks = report.hits.map(([i, where]) => `${where} holds canary ${i} (${needles[i]!.split("-canary-")[0]})`);
  assert.deepEqual(leaks, [], `${what}: a program found the server's secrets`);
  assert.deepEqual(report.foreignFds, [], `${what}: a program reached another process's descriptors`);
  assert.deepEqual(report.foreignMem, [], `${what}: a program read another process's memory`);
  assert.ok(report.count.procFiles > 20 && report.count.files > 0 && report.count.fds >= 3, `${what}: the scan saw too little to mean anything: ${JSON.stringify(report.count)}`);
}

const python = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

/**
 * Registers the security tests for one server. `start` receives fresh canaries, must plant them where that
 * server keeps its secrets (see rlpipeServe) and return the running server.
 */
export function securitySuite(label: string, start: StartServer): void {
  describe(`sandbox security: ${label}`, { timeout: 600_000 }, () => {
    const canaries = makeCanaries();
    const needles = canaries.needles;
    let t: SecurityTarget;
    before(async () => { t = await start(canaries); });
    after(async () => { await t?.stop(); });

    it("/run_code: a Python program scanning /proc, descriptors, other processes' memory and the file system finds no secret", async () => {
      const r = await post(t, "/run_code", { language: "python", code: `${pythonScanner(needles)}\nprint(json.dumps(rlpipe_scan()))`, run_timeout: 60, memory_limit_MB: 1024 });
      assert.equal(r.status, "Success", JSON.stringify(r).slice(0, 2000));
      assertClean("/run_code python", r.run_result.stdout, needles);
    });

    it("kernel keyrings: the keys of the server's session keyring are out of reach", async () => {
      assert.ok(t.keyringPlanted, "no key could be planted in the server's session keyring (keyctl refused on this machine), so this attack cannot be tried");
      const r = await post(t, "/run_code", { language: "python", code: `${pythonScanner(needles)}\nprint(json.dumps(rlpipe_scan()))`, run_timeout: 60, memory_limit_MB: 1024 });
      assert.equal(r.status, "Success", JSON.stringify(r).slice(0, 2000));
      assertClean("/run_code python (keyrings)", r.run_result.stdout, needles);
    });

    it("/run_code: the same scan in C++ and JavaScript", async () => {
      const langs = ["cpp", "nodejs"] as const;
      assert.deepEqual(langs.filter((l) => !t.languages.includes(l)), [], `the server offers ${t.languages.join(", ")}: g++ and node are needed for these scanners`);
      const problems: string[] = [];
      for (const language of langs) {
        const code = language === "cpp" ? cppScanner(needles) : jsScanner(needles);
        const r = await post(t, "/run_code", { language, code, compile_timeout: 120, run_timeout: 60, memory_limit_MB: 1024 });
        try {
          assert.equal(r.status, "Success", `${language}: ${JSON.stringify(r).slice(0, 2000)}`);
          assertClean(`/run_code ${language}`, r.run_result.stdout, needles);
        } catch (e) {
          problems.push((e as Error).message);
        }
      }
      assert.deepEqual(problems, []);
    });

    it("/run_code: the same scan from a Swift program, in the sandbox of its Debian root (the root's own python3 scans)", async () => {
      assert.ok(t.languages.includes("swift"), `the server offers ${t.languages.join(", ")}: npm test's setup builds the Debian root Swift runs in`);
      const scan = pythonScanner(needles);
      assert.ok(!scan.includes('"""#'));
      const code = `import Foundation\nlet scan = #"""\n${scan}\nprint(json.dumps(rlpipe_scan()))\n"""#\nlet p = Process()\np.executableURL = URL(fileURLWithPath: "/usr/bin/python3")\np.arguments = ["-I", "-c", scan]\n// The Swift process is the program too: its descriptors are its own.\np.environment = ["RLPIPE_SCAN_OWN_PIDS": String(getpid())]\ntry! p.run()\np.waitUntilExit()\nexit(p.terminationStatus)\n`;
      const r = await post(t, "/run_code", { language: "swift", code, compile_timeout: 120, run_timeout: 60, memory_limit_MB: 1024 });
      assert.equal(r.status, "Success", JSON.stringify(r).slice(0, 2000));
      assert.match(r.run_result.stdout, /^\{/, "the scan ran and reported");
      assertClean("/run_code swift", r.run_result.stdout, needles);
    });

    it("/run_code: the same scan from a Julia program, in the sandbox of its Debian root", async () => {
      assert.ok(t.languages.includes("julia"), `the server offers ${t.languages.join(", ")}: npm test's setup builds the Debian root Julia runs in`);
      const scan = pythonScanner(needles);
      assert.ok(!scan.includes('"""') && !scan.includes('\\"'), "the scanner fits in a Julia raw string");
      // The Julia process is the program too: its descriptors are its own.
      const code = `scan = raw"""\n${scan}\nprint(json.dumps(rlpipe_scan()))\n"""\nrun(setenv(\`/usr/bin/python3 -I -c \$scan\`, "RLPIPE_SCAN_OWN_PIDS" => string(getpid())))\n`;
      const r = await post(t, "/run_code", { language: "julia", code, run_timeout: 60, memory_limit_MB: 1024 });
      assert.equal(r.status, "Success", JSON.stringify(r).slice(0, 2000));
      assert.match(r.run_result.stdout, /^\{/, "the scan ran and reported");
      assertClean("/run_code julia", r.run_result.stdout, needles);
    });

    it("/common_evaluate_batch: a stdio program, its special judge, a function call and an assert see no secret", async () => {
      const scanner = pythonScanner(needles);
      // The program must print "clean"; expected output differs on purpose, so the judge (scanning too) decides.
      const judge = `${scanner}\nimport sys\nok = open("answer.txt").read().strip() == "clean" and scan_verdict() == "clean"\nif not ok: print(scan_verdict(), file=sys.stderr)\nraise SystemExit(0 if ok else 1)`;
      const config = { language: "python", compile_timeout: 60, run_timeout: 60, extra: { run_all_cases: true, special_judge_program: judge, special_judge_language: "python" } };
      const stdio = await post(t, "/common_evaluate_batch", {
        completion: python(`${scanner}\nprint(scan_verdict())`),
        config: { ...config, provided_data: { test_cases: { type: "stdin_stdout", input: [""], output: ["judged"] } } },
      });
      assert.equal(stdio.accepted, true, brief(stdio));
      const call = await post(t, "/common_evaluate_batch", {
        completion: python(scanner),
        config: { language: "python", run_timeout: 60, provided_data: { test_cases: { type: "function_call", fn_name: "scan_verdict", input: [[]], output: [["clean"]] } }, extra: { run_all_cases: true } },
      });
      assert.equal(call.accepted, true, brief(call));
      const asserted = await post(t, "/common_evaluate_batch", {
        completion: python(scanner),
        config: { language: "python", run_timeout: 60, provided_data: { test_cases: { type: "assert", test: "r = scan_verdict()\nassert r == 'clean', r" } }, extra: { run_all_cases: true } },
      });
      assert.equal(asserted.accepted, true, brief(asserted));
    });

    it("/v1/rewards: stdio, function-call and assert samples that scan for secrets all find none", async () => {
      const scanner = pythonScanner(needles);
      const r = await post(t, "/v1/rewards", {
        config: { run_timeout_s: 60 },
        samples: [
          { data_source: "code", solution_str: python(`${scanner}\nprint(scan_verdict())`), ground_truth: JSON.stringify({ type: "stdin_stdout", input: [""], output: ["clean"] }) },
          { data_source: "code", solution_str: python(scanner), ground_truth: { type: "function_call", fn_name: "scan_verdict", input: [[]], output: [["clean"]] } },
          { data_source: "code", solution_str: python(scanner), ground_truth: { type: "assert", test: "assert scan_verdict() == 'clean'" } },
        ],
      });
      assert.deepEqual(r.results.map((x: { score: number; status: string; cases?: string[] }) => [x.status, x.score, x.cases]),
        [["ok", 1, ["passed"]], ["ok", 1, ["passed"]], ["ok", 1, ["passed"]]]);
    });

    registerProgramAttacks(() => t);
    registerVerdictForgeries(() => t);
    registerJupyterForgeries(() => t);

    it("a wrong program cannot forge passing results through another process's descriptors", async () => {
      const tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(5, 1) == 6"];
      const r = await post(t, "/v1/rewards", {
        samples: [{ data_source: "code", solution_str: python(forgingSolution(tests.length)), ground_truth: { type: "assert", tests } }],
      });
      assert.equal(r.results[0].status, "ok", JSON.stringify(r.results[0]));
      assert.equal(r.results[0].score, 0, `forged results were accepted: ${JSON.stringify(r.results[0])}`);
      assert.ok(r.results[0].cases.every((c: string) => c !== "passed"), JSON.stringify(r.results[0]));
      const batch = await post(t, "/common_evaluate_batch", {
        completion: python(forgingSolution(tests.length)),
        config: { language: "python", provided_data: { test_cases: { type: "assert", tests } }, extra: { run_all_cases: true } },
      });
      assert.equal(batch.accepted, false);
      assert.ok(batch.tests.every((x: { passed: boolean }) => !x.passed), brief(batch));
    });
  });
}
