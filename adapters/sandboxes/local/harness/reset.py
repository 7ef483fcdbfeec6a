"""rlpipe's sandbox reset: what a program can leave behind in its warm zygote's sandbox, or change about the zygote,
and how it is undone or found. The manager (zygote.py) calls clean_up() after every program but a zygote's last.

Programs share the sandbox's mount, PID, IPC and network namespaces and its uid, so after a program:
  * every process but the zygote is killed (the program's daemons included);
  * /work, /tmp, /mnt, /dev/shm and /dev/mqueue are emptied, and their modes, timestamps and extended attributes
    restored (the only marks a program can leave on a directory it cannot remove); System V IPC objects are removed;
  * no socket may be left in the network namespace (a unix socket kept in flight keeps its abstract name bound; TCP
    TIME_WAIT shows the program's connections);
  * the zygote's limits, priority, CPU affinity, scheduling policy and attributes, I/O priority, autogroup and memory
    must be as they were when it started (a program of the same uid can change another process's limits,
    priorities and affinity with prlimit, setpriority, sched_setattr, ioprio_set and sched_setaffinity).
Whatever is left or changed is an anomaly: the manager reports it and the zygote exits, so the server starts a fresh
sandbox. New namespaces (a user namespace of the program's own) are refused by the sandbox's seccomp filter.
"""
import errno
import os
import resource
import struct

import local_harness as h

WRITABLE = ("/work", "/tmp", "/mnt", "/dev/shm", "/dev/mqueue")
RLIMITS = tuple(getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_"))
# A zygote whose memory grew this much is replaced (it parses nothing of a program's, so it should not grow).
MAX_GROWTH_BYTES = 64 << 20
IPC_RMID = 0
def read_small(path):
    """A /proc file's bytes, with plain system calls (open() in text mode adds isatty, lseek and fcntl calls)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


# sched_getattr and ioprio_get per architecture (Python has neither).
SYSCALLS = {"x86_64": {"sched_getattr": 315, "ioprio_get": 252}, "aarch64": {"sched_getattr": 275, "ioprio_get": 31}}.get(os.uname().machine, {})
IOPRIO_WHO_PROCESS = 1


def sched_attr(pid):
    """struct sched_attr of pid (policy, flags, nice, priority, deadline parameters, utilization clamps) as bytes."""
    nr = SYSCALLS.get("sched_getattr")
    if nr is None:
        return (os.sched_getscheduler(pid), os.sched_getparam(pid).sched_priority)
    buf = h.ctypes.create_string_buffer(56)
    if h.libc.syscall(nr, h.ctypes.c_long(pid), buf, h.ctypes.c_uint(56), h.ctypes.c_uint(0)) != 0:
        return None
    return buf.raw


def io_priority(pid):
    nr = SYSCALLS.get("ioprio_get")
    return None if nr is None else h.libc.syscall(nr, h.ctypes.c_int(IOPRIO_WHO_PROCESS), h.ctypes.c_int(pid))


def autogroup(pid):
    """The nice value of pid's autogroup (one per session), as /proc/<pid>/autogroup shows it."""
    try:
        return read_small("/proc/%d/autogroup" % pid).split(b" nice ")[-1].strip()
    except OSError:
        return None


def zygote_state():
    """What another process of the same uid can change about the zygote from outside: its limits, priority, CPU
    affinity, scheduling policy and attributes (SCHED_IDLE, utilization clamps), I/O priority and its session's
    autogroup nice (read from any process of the sandbox), and its memory. A later program in the zygote's slot would
    inherit them (a zygote at SCHED_IDLE made correct programs 15-30x slower under contention): any change retires
    the zygote."""
    return (
        tuple(resource.prlimit(1, r) for r in RLIMITS),
        os.getpriority(os.PRIO_PROCESS, 1),
        tuple(sorted(os.sched_getaffinity(1))),
        sched_attr(1),
        io_priority(1),
        autogroup(1),
    )


def zygote_rss_bytes():
    return int(read_small("/proc/1/statm").split()[1]) * os.sysconf("SC_PAGE_SIZE")


def sysv_ids():
    out = []
    for kind in ("shm", "msg", "sem"):
        try:
            rows = read_small("/proc/sysvipc/" + kind).splitlines()[1:]
        except OSError:
            continue
        out += [(kind, int(r.split()[1])) for r in rows]
    return out


def remove_ipc(ids):
    """System V shared memory, message queues and semaphores outlive their creator: remove them all."""
    ctl = {"shm": h.libc.shmctl, "msg": h.libc.msgctl}
    for kind, ipc_id in ids:
        if kind == "sem":
            h.libc.semctl(ipc_id, 0, IPC_RMID)
        else:
            ctl[kind](ipc_id, IPC_RMID, None)


FS_IOC_GETFLAGS = 0x80086601


def inode_flags(d):
    """A directory's inode flags (chattr's: noatime, nodump, …), which its owner may set and the clean-up does not
    restore; None where the file system has none."""
    import fcntl
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        return struct.unpack("l", fcntl.ioctl(fd, FS_IOC_GETFLAGS, b"\0" * 8))[0]
    except OSError:
        return None
    finally:
        os.close(fd)


def writable_state():
    """Mode and timestamps of each writable directory (restored after every program: a later program could read them)."""
    state = {}
    for d in WRITABLE:
        try:
            st = os.lstat(d)
        except OSError:
            continue
        state[d] = (st.st_mode & 0o7777, st.st_atime_ns, st.st_mtime_ns)
    return state


def restore_dir(d, saved):
    """Removes every extended attribute of the (emptied) directory and restores its mode and timestamps: the only
    marks a program can leave on a directory it cannot remove (its ctime moves with the restore itself)."""
    mode, atime_ns, mtime_ns = saved
    try:
        names = os.listxattr(d, follow_symlinks=False)
    except PermissionError:
        os.chmod(d, 0o700)  # the owner needs to reach it to list attributes
        names = os.listxattr(d, follow_symlinks=False)
    except OSError as e:
        if e.errno not in (errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        names = []  # a file system without extended attributes (mqueue)
    if names:
        os.chmod(d, mode | 0o700)
    for name in names:
        try:
            os.removexattr(d, name, follow_symlinks=False)
        except OSError:
            if name in os.listxattr(d, follow_symlinks=False):
                raise
    os.chmod(d, mode)
    os.utime(d, ns=(atime_ns, mtime_ns), follow_symlinks=False)


def sockets_left():
    """Sockets still in the sandbox's network namespace after every process of the program is gone: a unix socket kept
    in flight (its abstract name stays bound for the next program), or TCP and UDP sockets (TIME_WAIT shows the
    program's connections). None is the harness's own. Any is a reason to replace the zygote. Counted from
    /proc/net/sockstat{,6} (per namespace, cheap) rather than /proc/net/tcp, which walks the host's whole TCP table
    (2 ms a read here)."""
    left = []
    rows = read_small("/proc/net/unix").count(b"\n") - 1
    if rows > 0:
        left.append("%d unix socket%s left" % (rows, "" if rows == 1 else "s"))
    for table in ("sockstat", "sockstat6"):
        try:
            text = read_small("/proc/net/" + table).decode()
        except OSError:
            continue
        for line in text.splitlines():
            proto, _, fields = line.partition(":")
            words = fields.split()
            counts = dict(zip(words[::2], words[1::2]))
            # Only the counts of this namespace: "orphan" (like alloc and mem) is the host's, so a host closing
            # connections (the server's own clients) would make every clean program look dirty.
            for key in ("inuse", "tw"):
                if proto != "sockets" and counts.get(key, "0") not in ("0", None):
                    left.append("%s %s %s" % (proto, key, counts[key]))
    return left


def clean_up(baseline):
    """In the manager, after the program: kill, wipe, remove; returns what is still there or changed (empty: clean)."""
    state, rss, dirs, flags = baseline
    left = list(h.PROBLEMS)
    os.chdir("/")
    # The manager reaps for the whole program (a subreaper: every process a program leaves is its child), so when it
    # has no child at all there is nothing else in the PID namespace but the zygote, and /proc need not be listed.
    if h.has_children() and not h.kill_strays():
        left.append("processes left that could not be killed")
    for d, saved in dirs.items():
        try:
            h.empty_dir(d)  # raises when something cannot be removed
            restore_dir(d, saved)
        except (OSError, RecursionError) as e:
            left.append("%s: %s" % (d, e))
        if inode_flags(d) != flags.get(d):
            left.append("%s: inode flags changed" % d)
    left += sockets_left()
    ids = sysv_ids()
    if ids:
        remove_ipc(ids)
        left += ["sysv %s %d" % k for k in sysv_ids()]
    if zygote_state() != state:
        left.append("limits, priorities, scheduling or CPU affinity of the zygote changed")
    grown = zygote_rss_bytes() - rss
    if grown > MAX_GROWTH_BYTES:
        left.append("zygote memory grew by %d MiB" % (grown >> 20))
    return left




# ---- namespaces and scratch file systems of each program's own (issue 32) ----
#
# Some state a warm sandbox's programs shared could not be undone, only guessed at: the next PID, System V IPC ids and
# tmpfs inode numbers all move with what a program did, and the next program reads them (32 bits or more per pair,
# unnoticed). So the zygote takes a user namespace of its own once (the sandbox's uid mapped to itself: capabilities
# over namespaces it makes, nothing more), and each manager gives its program new mount, PID and IPC namespaces, fresh
# tmpfs on every writable place, a fresh mqueue and the new PID namespace's /proc. The manager's child is pid 1 there
# and runs the program; when it exits the kernel ends every process left, and the namespaces and file systems go with
# them. Before any program code runs (its build included) it drops every capability and installs the program's seccomp
# filter (seccomp.ts: no further namespaces).
#
# The network namespace stays the sandbox's (a new one per program costs more than a program's cases: ~1 ms of CPU
# and the loopback's set-up). Instead the manager reads the namespace's network counters before and after the program
# (net_counters: SNMP and netstat counters, socket counts): a program that used the network at all moved them, and its
# zygote is retired, so the next program never shares a network namespace with one that used it.

CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID = 0x20000, 0x8000000, 0x10000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 2, 4, 8, 16384, 1 << 18
TMPFS_PLACES = ("/work", "/tmp", "/mnt", "/dev/shm")
PR_SET_SECCOMP, SECCOMP_MODE_FILTER, PR_CAPBSET_DROP = 22, 2, 24
PROGRAM_FILTER = "/opt/rlpipe/program.bpf"
NET_COUNTERS = ("/proc/net/snmp", "/proc/net/netstat", "/proc/net/snmp6", "/proc/net/sockstat", "/proc/net/sockstat6", "/proc/net/unix")


class IsolationUnavailable(Exception):
    """The kernel refused a namespace of the program's own (a user namespace limit, a security module's rule)."""


def _check(result, what):
    if result != 0:
        err = h.ctypes.get_errno()
        raise OSError(err, "%s: %s" % (what, os.strerror(err)))


def _write(path, data):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def enter_own_user_namespace():
    """In the zygote, once: a user namespace of its own, the sandbox's uid and gid mapped to themselves, in which it
    may make the namespaces of its programs. Raises IsolationUnavailable when the kernel refuses."""
    uid, gid = os.getuid(), os.getgid()
    if h.libc.unshare(CLONE_NEWUSER) != 0:
        raise IsolationUnavailable(os.strerror(h.ctypes.get_errno()))
    # A process that is not dumpable (the zygote) cannot write its own maps: /proc/self is root's then.
    h.libc.prctl(h.PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        _write("/proc/self/setgroups", b"deny")
        _write("/proc/self/uid_map", b"%d %d 1" % (uid, uid))
        _write("/proc/self/gid_map", b"%d %d 1" % (gid, gid))
    finally:
        h.libc.prctl(h.PR_SET_DUMPABLE, 0, 0, 0, 0)


def enter_fresh_namespaces(tmpfs_bytes):
    """In the manager (the zygote's user namespace): new mount, PID and IPC namespaces and fresh scratch file systems."""
    _check(h.libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC), "unshare")
    _check(h.libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    options = b"size=%d,mode=0755" % tmpfs_bytes
    for place in TMPFS_PLACES:
        _check(h.libc.mount(b"tmpfs", place.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), "tmpfs on " + place)
    _check(h.libc.mount(b"mqueue", b"/dev/mqueue", b"mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mqueue")
    os.chdir(h.WORK)  # the fresh /work (the old one is underneath)


def become_program_init():
    """In the manager's child, pid 1 of the new PID namespace: /proc of that namespace."""
    _check(h.libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "proc")


def net_counters():
    """The network namespace's counters and socket counts: equal before and after a program that did not use it."""
    out = []
    for path in NET_COUNTERS:
        try:
            text = read_small(path)
        except OSError:
            continue
        if path.endswith("sockstat") or path.endswith("sockstat6"):
            # Only this namespace's counts: "orphan", "alloc" and "mem" are the host's (see sockets_left).
            rows = []
            for line in text.decode().splitlines():
                proto, _, fields = line.partition(":")
                words = fields.split()
                counts = dict(zip(words[::2], words[1::2]))
                rows.append((proto, counts.get("inuse"), counts.get("tw")))
            out.append(tuple(rows))
        elif path.endswith("unix"):
            out.append(text.count(b"\n"))
        else:
            out.append(text)
    return out


class _SockFprog(h.ctypes.Structure):
    _fields_ = (("len", h.ctypes.c_ushort), ("filter", h.ctypes.c_void_p))


def confine():
    """Before any program code: no capability left, and the program's seccomp filter (when the server has one)."""
    for cap in range(64):
        if h.libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows (or none to drop: no namespaces of its own)
    header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = h.ctypes.create_string_buffer(24)  # two all-zero cap_user_data_t: effective, permitted, inheritable
    _check(h.libc.capset(header, data), "drop capabilities")
    try:
        program = read_small(PROGRAM_FILTER)
    except OSError:
        program = b""
    if program:
        buf = h.ctypes.create_string_buffer(program, len(program))
        prog = _SockFprog(len(program) // 8, h.ctypes.cast(buf, h.ctypes.c_void_p))
        _check(h.libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, h.ctypes.byref(prog), 0, 0), "program seccomp filter")
