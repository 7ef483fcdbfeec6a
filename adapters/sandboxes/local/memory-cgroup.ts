// Memory cgroups per sandbox, so that a program's memory limit covers every process it starts (RLIMIT_AS bounds
// one process: 8 children of 300 MiB each under a 512 MB limit would take 2.5 GB of the host). The server makes the
// cgroups (as root under the memory hierarchy, v2 or v1; as another uid in a delegated cgroup2 subtree): per sandbox
// one with two leaves, `harness` (the zygote and its managers) and `program` (every process that runs a program's or
// compiler's code, moved there by the harness as it forks them). The program leaf's limit is the program's own, to the
// byte; the sandbox's adds what the harness holds. The server sets both before each program, starts the sandbox in the
// harness leaf, and reads after each program whether the OOM killer fired. Everything is synchronous: a few writes of
// single values, between programs.
import { accessSync, constants, existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { SandboxError } from "../sandbox.js";

/** Where this server may create memory cgroups, or why its programs are bounded only per process. */
export type MemoryCgroups =
  /** A cgroup2 directory whose children get the memory controller (it holds no process itself). */
  | { readonly kind: "v2"; readonly parent: string }
  /** A directory inside the cgroup v1 memory hierarchy. */
  | { readonly kind: "v1"; readonly parent: string }
  /** Why there is none here (said when the server starts). */
  | { readonly kind: "none"; readonly why: string };

/** Where a non-root server moves itself inside its delegated cgroup: a cgroup2 directory that enables controllers for
 * its children may hold no process (the "no internal processes" rule), and the server's own cgroup must enable memory. */
const SERVER_LEAF = "rlpipe-server";
const JOIN = 'echo 0 > "$0" && exec "$@"';

const errno = (e: unknown): string | undefined => (e as NodeJS.ErrnoException | undefined)?.code;
const message = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const writable = (p: string): boolean => { try { accessSync(p, constants.W_OK); return true; } catch { return false; } };
const words = (p: string): string[] => { try { return readFileSync(p, "utf8").split(/\s+/); } catch { return []; } };
const pause = (ms: number): void => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms); };

/** Writes "+memory" into the subtree_control of `from` and of every directory below it down to `to` (made if missing). */
function enableMemory(from: string, to: string): void {
  const rest = to.slice(from.length).split("/").filter((s) => s !== "");
  let dir = from;
  for (let i = 0; ; i++) {
    mkdirSync(dir, { recursive: true });
    if (!words(join(dir, "cgroup.subtree_control")).includes("memory")) writeFileSync(join(dir, "cgroup.subtree_control"), "+memory");
    if (i === rest.length) return;
    dir = join(dir, rest[i]!);
  }
}

/** Where this server can create memory cgroups (root: under the memory hierarchy; non-root: a delegated cgroup2
 * subtree it can write), or why not. `name` is the subtree this server owns, e.g. `rlpipe/<something unique>`; it is
 * created here. fsRoot defaults to /sys/fs/cgroup (tests pass a fake tree). */
export function detectMemoryCgroups(name: string, opts: { fsRoot?: string; selfCgroupFile?: string } = {}): MemoryCgroups {
  const fsRoot = opts.fsRoot ?? "/sys/fs/cgroup";
  const uid = process.getuid?.() ?? -1;
  const missing: string[] = [];
  // cgroup v2 first: at fsRoot on a pure v2 host, at fsRoot/unified on a hybrid one.
  const v2root = [fsRoot, join(fsRoot, "unified")].find((d) => existsSync(join(d, "cgroup.controllers")));
  if (v2root === undefined) missing.push(`no cgroup2 mount at ${fsRoot} or ${fsRoot}/unified`);
  else {
    let own: string | undefined;
    try {
      const line = readFileSync(opts.selfCgroupFile ?? "/proc/self/cgroup", "utf8").split("\n").find((l) => l.startsWith("0::"));
      if (line !== undefined) own = join(v2root, line.slice(3));
    } catch { /* no cgroup file: no own cgroup */ }
    if (own !== undefined && basename(own) === SERVER_LEAF) own = dirname(own); // moved there by an earlier call
    const base = uid === 0 ? v2root : own;
    if (base === undefined) missing.push("no cgroup2 line (0::) in /proc/self/cgroup");
    else if (!words(join(base, "cgroup.controllers")).includes("memory")) missing.push(`no memory controller in ${join(base, "cgroup.controllers")}`);
    else if (uid !== 0 && !["", "cgroup.subtree_control", "cgroup.procs"].every((f) => writable(join(base, f)))) missing.push(`no delegated cgroup2 subtree: ${base} is not writable by uid ${uid}`);
    else {
      const parent = join(base, name);
      try {
        try {
          enableMemory(base, parent);
        } catch (e) {
          if (uid === 0 || errno(e) !== "EBUSY") throw e;
          // Our own cgroup holds the server: move it (only this process) into a leaf, then enable again.
          mkdirSync(join(base, SERVER_LEAF), { recursive: true });
          writeFileSync(join(base, SERVER_LEAF, "cgroup.procs"), String(process.pid));
          enableMemory(base, parent);
        }
        return { kind: "v2", parent };
      } catch (e) {
        missing.push(`cannot enable the memory controller of cgroup2 down to ${parent}: ${message(e)}`);
      }
    }
  }
  const v1 = join(fsRoot, "memory");
  if (!existsSync(join(v1, "memory.limit_in_bytes"))) missing.push(`no cgroup v1 memory hierarchy at ${v1}`);
  else if (!writable(v1)) missing.push(`cgroup v1 memory hierarchy not writable by uid ${uid}`);
  else {
    const parent = join(v1, name);
    try {
      mkdirSync(parent, { recursive: true });
      // Limits of the leaves count in their parents (recent kernels always do so; older ones need the flag).
      for (let dir = parent; dir.startsWith(`${v1}/`); dir = dirname(dir)) {
        try { if (existsSync(join(dir, "memory.use_hierarchy"))) writeFileSync(join(dir, "memory.use_hierarchy"), "1"); } catch { /* ignored */ }
      }
      return { kind: "v1", parent };
    } catch (e) {
      missing.push(`cannot create ${parent}: ${message(e)}`);
    }
  }
  return { kind: "none", why: missing.join("; ") };
}

/** One memory cgroup (a leaf under the server's subtree) that a sandbox and every process it starts run in. */
export class MemoryCgroup {
  private constructor(readonly path: string, private readonly v2: boolean) {}

  /** Makes (or reuses) the leaf `leaf` under `where.parent`. */
  static create(where: Exclude<MemoryCgroups, { kind: "none" }>, leaf: string): MemoryCgroup {
    if (!/^[A-Za-z0-9._-]+$/.test(leaf) || leaf.startsWith(".")) throw new SandboxError("memory_cgroup_failed", `bad memory cgroup name ${JSON.stringify(leaf)}`);
    const path = join(where.parent, leaf);
    try {
      mkdirSync(path, { recursive: true });
    } catch (e) {
      throw new SandboxError("memory_cgroup_failed", `cannot create the memory cgroup ${path}: ${message(e)}`, { cause: e });
    }
    return new MemoryCgroup(path, where.kind === "v2");
  }

  /** Removes the server's subtree `where.parent` and any leaf left in it (their processes have exited); false if some
   * stays (busy), never throws (it runs as the server closes). A shared `rlpipe` above it stays: another server may be
   * making its own subtree there. */
  static removeParent(where: Exclude<MemoryCgroups, { kind: "none" }>): boolean {
    try {
      return removeTree(where.parent);
    } catch (e) {
      return errno(e) === "ENOENT";
    }
  }

  /** A cgroup below this one (made, or reused). On v2 this one first hands the memory controller down to its children
   * (it may then hold no process itself: the "no internal processes" rule). */
  child(leaf: string): MemoryCgroup {
    if (this.v2 && !words(join(this.path, "cgroup.subtree_control")).includes("memory")) {
      try {
        writeFileSync(join(this.path, "cgroup.subtree_control"), "+memory");
      } catch (e) {
        throw new SandboxError("memory_cgroup_failed", `cannot enable the memory controller below ${this.path}: ${message(e)}`, { cause: e });
      }
    }
    return MemoryCgroup.create({ kind: this.v2 ? "v2" : "v1", parent: this.path }, leaf);
  }

  /** Never swap this cgroup's pages out to make room (v1 memory.swappiness 0): where the kernel does not account swap
   * (no memory.memsw.*), swap would otherwise stretch the limit by as much swap as the host has. Best effort: v2 has no
   * such file and bounds swap with memory.swap.max instead. */
  noSwap(): void {
    if (this.v2) return;
    try { writeFileSync(join(this.path, "memory.swappiness"), "0"); } catch { /* not there: swap is accounted (memsw) or absent */ }
  }

  /** Sets the hard limit (v1 memory.limit_in_bytes, v2 memory.max; v2 also memory.swap.max = 0 when present; v1 also
   * memory.memsw.limit_in_bytes when present = same, so swap does not extend it). Returns false when the kernel refused
   * because usage is above it and it could not reclaim enough (v1 EBUSY), so the caller can retire the sandbox. On v2
   * the kernel never refuses: it reclaims, then OOM-kills in the cgroup. */
  setLimitBytes(bytes: number): boolean {
    const value = String(Math.max(0, Math.floor(bytes)));
    const file = (f: string): string => join(this.path, f);
    try {
      if (this.v2) {
        writeFileSync(file("memory.max"), value);
        if (existsSync(file("memory.swap.max"))) writeFileSync(file("memory.swap.max"), "0");
        return true;
      }
      // v1 wants memsw >= limit at every step: raise memsw first, lower it last.
      const memsw = existsSync(file("memory.memsw.limit_in_bytes"));
      const raising = bytes >= Number(readFileSync(file("memory.limit_in_bytes"), "utf8"));
      if (memsw && raising) writeFileSync(file("memory.memsw.limit_in_bytes"), value);
      writeFileSync(file("memory.limit_in_bytes"), value);
      if (memsw && !raising) writeFileSync(file("memory.memsw.limit_in_bytes"), value);
      return true;
    } catch (e) {
      if (errno(e) === "EBUSY") return false;
      throw new SandboxError("memory_cgroup_failed", `cannot set the memory limit of ${this.path} to ${value} bytes: ${message(e)}`, { cause: e });
    }
  }

  /** The hard limit now (Infinity for v2's "max"). */
  limitBytes(): number {
    const value = this.read(this.v2 ? "memory.max" : "memory.limit_in_bytes").trim();
    return value === "max" ? Number.POSITIVE_INFINITY : Number(value);
  }

  /** What the cgroup's processes are charged for now (v1 memory.usage_in_bytes, v2 memory.current). */
  usageBytes(): number {
    return Number(this.read(this.v2 ? "memory.current" : "memory.usage_in_bytes").trim());
  }

  /** OOM kills in this cgroup so far: v1 the `oom_kill` line of memory.oom_control (kernel >= 4.13; 0 before), v2 the
   * `oom_kill` line of memory.events. Compare before and after a program to tell its processes were killed for it. */
  oomKills(): number {
    const line = this.read(this.v2 ? "memory.events" : "memory.oom_control").split("\n").find((l) => l.startsWith("oom_kill "));
    return line === undefined ? 0 : Number(line.slice("oom_kill ".length)) || 0;
  }

  /** The argv that starts `argv` inside this cgroup: a shell joins the cgroup (as the server: cgroup v2 lets only a
   * writer of the common ancestor's cgroup.procs move a process, so a root server must join before dropping), then with
   * `ids` (a root server) setpriv drops to the sandbox's uid/gid before `argv` starts. Without `ids` (a non-root server
   * in its delegated subtree) there is nothing to drop. */
  spawnArgs(argv: readonly string[], ids: { uid: number; gid: number } | undefined): string[] {
    const drop = ids === undefined ? [] : ["/usr/bin/setpriv", `--reuid=${ids.uid}`, `--regid=${ids.gid}`, "--clear-groups", "--"];
    return ["/bin/sh", "-c", JOIN, join(this.path, "cgroup.procs"), ...drop, ...argv];
  }

  /** Removes the leaf (kills nothing: the caller ends its processes first). Retries a few times on EBUSY (a v1 cgroup
   * empties asynchronously after its last task exits) and returns false if it is still busy. */
  remove(): boolean {
    return removeDir(this.path);
  }

  /** One attempt at removing the leaf, without waiting (false while the kernel still holds it: try again later). */
  removeNow(): boolean {
    try {
      rmdirSync(this.path);
      return true;
    } catch (e) {
      return errno(e) === "ENOENT";
    }
  }

  private read(f: string): string {
    try {
      return readFileSync(join(this.path, f), "utf8");
    } catch (e) {
      throw new SandboxError("memory_cgroup_failed", `cannot read ${join(this.path, f)}: ${message(e)}`, { cause: e });
    }
  }
}

/** Removes a cgroup directory and the cgroups below it, deepest first (a cgroup goes only once its children have). */
function removeTree(path: string): boolean {
  for (const d of readdirSync(path, { withFileTypes: true })) if (d.isDirectory()) removeTree(join(path, d.name));
  return removeDir(path);
}

function removeDir(path: string): boolean {
  for (let attempt = 0; ; attempt++) {
    try {
      rmdirSync(path);
      return true;
    } catch (e) {
      if (errno(e) === "ENOENT") return true;
      if (errno(e) !== "EBUSY" && errno(e) !== "ENOTEMPTY") throw new SandboxError("memory_cgroup_failed", `cannot remove the memory cgroup ${path}: ${message(e)}`, { cause: e });
      if (attempt === 20) return false;
      pause(50);
    }
  }
}

/** One sandbox's cgroups: its own (the whole sandbox's bound), the `harness` leaf the sandbox starts in (the zygote and
 * its managers), and the `program` leaf the harness moves each process that runs a program's or compiler's code into
 * (through a descriptor of its cgroup.procs that the server opened: the sandbox sees no cgroup file system). */
export class SandboxCgroup {
  private constructor(readonly sandbox: MemoryCgroup, readonly harness: MemoryCgroup, readonly program: MemoryCgroup) {}

  /** Makes the sandbox's cgroup `leaf` under `where.parent`, with its two leaves; none of them swaps. */
  static create(where: Exclude<MemoryCgroups, { kind: "none" }>, leaf: string): SandboxCgroup {
    const sandbox = MemoryCgroup.create(where, leaf);
    try {
      const cgroups = new SandboxCgroup(sandbox, sandbox.child("harness"), sandbox.child("program"));
      for (const cg of [cgroups.sandbox, cgroups.harness, cgroups.program]) cg.noSwap();
      return cgroups;
    } catch (e) {
      try { removeTree(sandbox.path); } catch { /* what is left goes with the server's subtree */ }
      throw e;
    }
  }

  /** The file the harness writes "0" into (through the descriptor) to move a process it forked into the program leaf. */
  get programProcsFile(): string {
    return join(this.program.path, "cgroup.procs");
  }

  /** The argv that starts `argv` in the harness leaf (MemoryCgroup.spawnArgs). */
  spawnArgs(argv: readonly string[], ids: { uid: number; gid: number } | undefined): string[] {
    return this.harness.spawnArgs(argv, ids);
  }

  /** Sets the program leaf's limit and the sandbox's: lowered program first, raised sandbox first. False when the kernel
   * refused to lower one below what it holds (v1 EBUSY). */
  setLimitsBytes(programBytes: number, sandboxBytes: number): boolean {
    const lowering = programBytes < this.limitOf(this.program);
    return lowering
      ? this.program.setLimitBytes(programBytes) && this.sandbox.setLimitBytes(sandboxBytes)
      : this.sandbox.setLimitBytes(sandboxBytes) && this.program.setLimitBytes(programBytes);
  }

  /** What the sandbox holds that the kernel cannot reclaim: its usage (both leaves) less file pages (page cache). */
  unreclaimableBytes(): number {
    const stat = new Map<string, number>();
    for (const line of readFileSync(join(this.sandbox.path, "memory.stat"), "utf8").split("\n")) {
      const [key, value] = line.split(" ");
      if (key !== undefined && value !== undefined) stat.set(key, Number(value) || 0);
    }
    // v1's plain keys count this cgroup's own pages only (here: none, its processes are in the leaves); total_* count
    // the leaves too. v2's keys are hierarchical.
    const file = stat.has("total_active_file")
      ? (stat.get("total_active_file") ?? 0) + (stat.get("total_inactive_file") ?? 0)
      : (stat.get("active_file") ?? 0) + (stat.get("inactive_file") ?? 0);
    return Math.max(0, this.sandbox.usageBytes() - file);
  }

  /** A count that grows with each OOM kill in the sandbox (v1 counts a kill in the cgroup whose limit it hit; v2's
   * counts are hierarchical, so a kill may count twice): compare before and after a program, never read it as a number. */
  oomKills(): number {
    return this.sandbox.oomKills() + this.program.oomKills() + this.harness.oomKills();
  }

  /** One attempt at removing the three cgroups, without waiting (false while the kernel still holds one). */
  removeNow(): boolean {
    return this.program.removeNow() && this.harness.removeNow() && this.sandbox.removeNow();
  }

  /** Removes the three, waiting a little for a busy one; false if one stays busy; never throws. */
  remove(): boolean {
    try {
      return removeTree(this.sandbox.path);
    } catch {
      return false;
    }
  }

  private limitOf(cg: MemoryCgroup): number {
    try {
      return cg.limitBytes();
    } catch {
      return Number.POSITIVE_INFINITY;
    }
  }
}
