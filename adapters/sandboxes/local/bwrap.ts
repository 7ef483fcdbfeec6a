// What every sandbox is made of: the harness as bytecode, the few files bound into it, and bubblewrap's arguments —
// empty network namespace, empty environment plus a short whitelist, an unprivileged uid of its own, read-only /usr,
// private tmpfs scratch directories, the seccomp filter (seccomp.ts). Pure but for compiling the harness.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SandboxError } from "../sandbox.js";
import { SANDBOX_PYTHON_ENV } from "../toolchains/runtime-environment.js";
import type { Toolchain } from "../toolchains/toolchains.js";

export const HARNESS_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../adapters/sandboxes/local/harness");
/** The harness: the zygote (pid 1), the clean-up between programs, the cases' runner, split assert tests. */
export const HARNESS_FILES = ["zygote.py", "reset.py", "local_harness.py", "asserts.py"] as const;
/** The manager's per-case loop in C (caseloop.c), built by the server; bound at /opt/rlpipe/caseloop.so (empty: none). */
export const CASE_LOOP_SOURCE = "caseloop.c";
/** bubblewrap reads the seccomp filter from fd 3, the harness files from fds 4, 5, …, then the case loop. */
const HARNESS_FD = 4;
const CASE_LOOP_FD = HARNESS_FD + HARNESS_FILES.length;
/** The sandbox's zygote finds the program memory cgroup's cgroup.procs, open for writing, on this descriptor (after
 * the harness files, the case loop, /etc/hosts, /etc/nsswitch.conf and the program's seccomp filter); bubblewrap
 * passes it through. */
export const PROGRAM_CGROUP_FD = CASE_LOOP_FD + 4;
/** The sandbox's /etc/hosts: its loopback only (the host's names are not its business). */
export const SANDBOX_HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n";
export const SANDBOX_NSSWITCH = "hosts: files\n";

/**
 * Compiles the harness to bytecode files (unchecked hash-based .pyc, for this interpreter) in dir. A zygote that
 * loads bytecode instead of compiling its source keeps ~1.5 MiB less heap (the compiler's scraps stay in Python's
 * arenas), and every fork copies, and every exit unmaps, the page table of the whole heap: fewer pages, cheaper cases.
 * Names in tracebacks stay /opt/rlpipe/<file>.py.
 */
export function compileHarness(python: string, dir: string, rooted?: { bwrap: string; root: string }): string[] {
  const script = [
    "import importlib.util, marshal, sys",
    "src, name, out = sys.argv[1:4]",
    "data = open(src, 'rb').read()",
    "code = compile(data, name, 'exec', dont_inherit=True)",
    // flags 0b01: hash-based, source not checked (the sandbox has no source to check against)
    "pyc = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, 'little') + importlib.util.source_hash(data) + marshal.dumps(code)",
    "open(out, 'wb').write(pyc)",
  ].join("\n");
  return HARNESS_FILES.map((f) => {
    const out = join(dir, f.replace(/\.py$/, ".pyc"));
    // A root's interpreter runs in that root (its C library is not the host's), writing into dir bound at /out.
    const r = rooted === undefined
      ? spawnSync(python, ["-I", "-c", script, join(HARNESS_DIR, f), `/opt/rlpipe/${f}`, out], { encoding: "utf8" })
      : spawnSync(rooted.bwrap, [
        "--unshare-all", "--die-with-parent", "--ro-bind", join(rooted.root, "usr"), "/usr", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
        "--proc", "/proc", "--dev", "/dev", "--ro-bind", HARNESS_DIR, "/src", "--bind", dir, "/out", "--clearenv",
        python, "-I", "-c", script, `/src/${f}`, `/opt/rlpipe/${f}`, `/out/${basename(out)}`,
      ], { encoding: "utf8" });
    if (r.status !== 0) throw new SandboxError("harness_compile_failed", `${python} could not compile the sandbox harness ${f}: ${(r.stderr || r.error?.message || "").trim().slice(0, 300)}`);
    return out;
  });
}

/**
 * Builds the case loop (caseloop.c) into dir/caseloop.so with the host's C compiler, for a zygote running on the host's
 * C library. Returns the file and whether it holds a library: when it is off, or there is no compiler, or the build
 * fails, the file is empty and the harness runs every case in Python (the same events; a little more CPU per case).
 */
export function buildCaseLoop(dir: string, enabled: boolean): { readonly file: string; readonly built: boolean } {
  const file = join(dir, "caseloop.so");
  if (enabled) {
    for (const compiler of ["cc", "gcc"]) {
      const r = spawnSync(compiler, ["-O2", "-shared", "-fPIC", "-o", file, join(HARNESS_DIR, CASE_LOOP_SOURCE)], { encoding: "utf8" });
      if (r.status === 0) return { file, built: true };
    }
  }
  writeFileSync(file, "");
  return { file, built: false };
}

export interface SandboxLayout {
  /** The interpreter the zygote runs on (the environment's when there is one). */
  readonly python: string;
  /** Size of each private tmpfs (/tmp, /work, /mnt, /dev/shm). */
  readonly tmpfsBytes: number;
  /** A Debian root whose /usr the sandbox sees instead of the host's (debian-root.ts). */
  readonly root?: string;
  readonly toolchains: readonly Toolchain[];
  /** The runtime environment's directory, mounted read-only at SANDBOX_PYTHON_ENV. */
  readonly pythonEnvDir?: string;
  /** bubblewrap installs the seccomp filter it reads from fd 3. */
  readonly seccomp: boolean;
  /** Programs get namespaces of their own where the kernel allows (harness/reset.py); false: always shared. */
  readonly programNamespaces?: boolean;
}

/** bubblewrap's arguments for a sandbox running as `uid` whose zygote serves up to `maxPrograms` programs;
 * `programCgroup`: the zygote gets the program memory cgroup on PROGRAM_CGROUP_FD. */
export function bwrapArgs(l: SandboxLayout, uid: number, maxPrograms: number, programCgroup = false): string[] {
  const tmpfsBytes = String(l.tmpfsBytes);
  // The system the sandbox sees: the host's, or a root's (debian-root.ts).
  const sys = l.root ?? "";
  return [
    // --as-pid-1: no bubblewrap process inside the sandbox. Its reaper was dumpable by the program's uid, so a
    // program could read its memory and take its descriptors (pidfd_getfd), among them the result stream.
    // The zygote is pid 1 instead: not dumpable, it reaps, and its exit ends every process in the sandbox.
    "--unshare-all", "--as-pid-1", "--die-with-parent", "--new-session",
    "--uid", String(uid), "--gid", String(uid), "--cap-drop", "ALL",
    "--ro-bind", `${sys}/usr`, "/usr",
    "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--symlink", "usr/sbin", "/sbin",
    "--ro-bind-try", `${sys}/etc/alternatives`, "/etc/alternatives",
    // Configuration some toolchains read outside /usr (the JDK's /etc/java-*, PHP's and R's).
    ...[...new Set(l.toolchains.flatMap((t) => t.binds ?? []))].sort().flatMap((b) => ["--ro-bind-try", `${sys}${b}`, b]),
    "--ro-bind-try", `${sys}/etc/ld.so.cache`, "/etc/ld.so.cache",
    // The Python environment, read-only like /usr, at a path of its own: not under /tmp or /work, which are emptied
    // after every program (a virtualenv's interpreter finds its packages from where it is, whatever the path).
    ...(l.pythonEnvDir === undefined ? [] : ["--ro-bind", l.pythonEnvDir, SANDBOX_PYTHON_ENV]),
    // fontconfig's configuration, which matplotlib reads to draw text.
    ...(l.pythonEnvDir === undefined ? [] : ["--ro-bind-try", "/etc/fonts", "/etc/fonts"]),
    "--proc", "/proc", "--dev", "/dev", "--size", tmpfsBytes, "--tmpfs", "/dev/shm", "--mqueue", "/dev/mqueue",
    // The work dir is a tmpfs of the sandbox's own too: nothing of a program reaches the host's disk.
    "--size", tmpfsBytes, "--tmpfs", "/tmp", "--size", tmpfsBytes, "--tmpfs", "/work", "--chdir", "/work",
    // /mnt is scratch space too, as in SandboxFusion's containers (its programs write there).
    "--size", tmpfsBytes, "--tmpfs", "/mnt",
    // The harness comes on descriptors (zygote.ts): bubblewrap may run as a uid that cannot read the checkout.
    ...HARNESS_FILES.flatMap((f, i) => ["--perms", "0444", "--ro-bind-data", String(HARNESS_FD + i), `/opt/rlpipe/${f}c`]),
    "--perms", "0444", "--ro-bind-data", String(CASE_LOOP_FD), "/opt/rlpipe/caseloop.so",
    // The assert verifier's working directory (asserts.py VERIFIER_DIR): empty, and read-only with the rest of /.
    "--perms", "0555", "--dir", "/opt/rlpipe/verifier",
    // localhost resolves (a program may serve and call itself on the sandbox's own loopback), and nothing else does.
    "--perms", "0444", "--ro-bind-data", String(CASE_LOOP_FD + 1), "/etc/hosts",
    "--perms", "0444", "--ro-bind-data", String(CASE_LOOP_FD + 2), "/etc/nsswitch.conf",
    // The program's seccomp filter (seccomp.ts; empty where there is none), which each manager installs (reset.py).
    "--perms", "0444", "--ro-bind-data", String(CASE_LOOP_FD + 3), "/opt/rlpipe/program.bpf",
    // bubblewrap's own / and /dev belong to the sandbox uid: read-only, so that the only writable places are
    // /work, /tmp, /mnt, /dev/shm and /dev/mqueue, the ones a warm zygote empties after every program.
    "--remount-ro", "/dev", "--remount-ro", "/",
    ...(l.seccomp ? ["--seccomp", "3"] : []),
    "--clearenv",
    "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
    "--setenv", "LANG", "C.UTF-8", "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--setenv", "PYTHONHASHSEED", "0",
    // Symbols bound once in the zygote rather than on first use in every case process (the harness unsets it).
    "--setenv", "LD_BIND_NOW", "1",
    l.pythonEnvDir === undefined ? l.python : `${SANDBOX_PYTHON_ENV}/bin/python3`, "-I", "/opt/rlpipe/zygote.pyc", String(maxPrograms), tmpfsBytes, l.programNamespaces === false ? "shared" : "own",
    ...(programCgroup ? [String(PROGRAM_CGROUP_FD)] : []),
  ];
}
