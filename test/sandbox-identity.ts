// Which sandbox (zygote) a program ran in, as the program can tell: its cgroup namespace (each program has PID, mount,
// IPC, network and UTS namespaces of its own, not a cgroup one) and when bubblewrap made the sandbox's root (a
// namespace's inode number is reused once it is gone; the root's time is not).
export const SANDBOX_IDENTITY_PY = "import os as _os\nprint('sandbox', _os.readlink('/proc/self/ns/cgroup') + '@' + str(_os.stat('/').st_mtime_ns))";
export const SANDBOX_IDENTITY = /^sandbox cgroup:\[\d+\]@\d+$/;
