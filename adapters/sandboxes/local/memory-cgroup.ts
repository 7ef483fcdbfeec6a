// Memory cgroups for sandboxes (memory-bounds.ts uses them): where this server may create them, and one cgroup's
// files. cgroup v2 where the host has it with the memory controller (as root, or in a subtree delegated to this
// server's uid); cgroup v1's memory hierarchy as root; otherwise none, and why. Synchronous file writes only.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SandboxError } from "../sandbox.js";

export type MemoryCgroups =
  | { readonly kind: "v2"; readonly parent: string }
  | { readonly kind: "v1"; readonly parent: string }
  | { readonly kind: "none"; readonly why: string };

function writable(file: string): boolean {
  try {
    writeFileSync(file, readFileSync(file, "utf8").split("\n")[0] ?? "");
    return true;
  } catch {
    return false;
  }
}

/** The cgroup v2 mount: the hierarchy root on a pure v2 host, /unified on a hybrid one. */
function v2Root(fsRoot: string): string | undefined {
  for (const d of [fsRoot, join(fsRoot, "unified")]) if (existsSync(join(d, "cgroup.controllers"))) return d;
  return undefined;
}

function enableMemory(dir: string): boolean {
  try {
    if (readFileSync(join(dir, "cgroup.subtree_control"), "utf8").split(/\s+/).includes("memory")) return true;
    writeFileSync(join(dir, "cgroup.subtree_control"), "+memory");
    return true;
  } catch {
    return false;
  }
}

/** Where this server can create memory cgroups (`name`: its own subtree, e.g. rlpipe/uids-64000), or why not. */
export function detectMemoryCgroups(name: string, opts: { fsRoot?: string; selfCgroupFile?: string } = {}): MemoryCgroups {
  const fsRoot = opts.fsRoot ?? "/sys/fs/cgroup";
  const asRoot = process.getuid?.() === 0;
  const v2 = v2Root(fsRoot);
  if (v2 !== undefined && readFileSync(join(v2, "cgroup.controllers"), "utf8").split(/\s+/).includes("memory")) {
    // As root, a subtree of the hierarchy's root; otherwise only inside our own (delegated) cgroup.
    let base = v2;
    if (!asRoot) {
      const own = /^0::(.*)$/m.exec(readFileSync(opts.selfCgroupFile ?? "/proc/self/cgroup", "utf8"))?.[1]?.trim();
      base = own === undefined ? v2 : join(v2, own);
    }
    const parts = name.split("/").filter((p) => p !== "");
    let dir = base;
    let ok = enableMemory(dir);
    for (const p of parts) {
      if (!ok) break;
      dir = join(dir, p);
      try { mkdirSync(dir, { recursive: true }); } catch { ok = false; break; }
      ok = enableMemory(dir);
    }
    if (ok) return { kind: "v2", parent: dir };
  }
  const v1 = join(fsRoot, "memory");
  if (existsSync(join(v1, "memory.limit_in_bytes")) && asRoot) {
    const parent = join(v1, name);
    try {
      mkdirSync(parent, { recursive: true });
      if (existsSync(join(parent, "memory.use_hierarchy"))) { try { writeFileSync(join(parent, "memory.use_hierarchy"), "1"); } catch { /* the kernel decides */ } }
      if (writable(join(parent, "memory.limit_in_bytes"))) return { kind: "v1", parent };
    } catch { /* fall through */ }
  }
  return {
    kind: "none",
    why: v2 === undefined && !existsSync(v1) ? "no cgroup file system here"
      : `no cgroup this server may create with the memory controller (cgroup v1 needs root; cgroup v2 needs root or a subtree delegated to uid ${process.getuid?.() ?? "?"})`,
  };
}

export class MemoryCgroup {
  private constructor(readonly path: string, private readonly kind: "v1" | "v2") {}

  /** The leaf `leaf` under `where` (made if needed, reused if there). */
  static create(where: Exclude<MemoryCgroups, { kind: "none" }>, leaf: string): MemoryCgroup {
    const path = join(where.parent, leaf);
    try {
      mkdirSync(path, { recursive: true });
    } catch (e) {
      throw new SandboxError("memory_cgroup_failed", `cannot create the memory cgroup ${path}: ${(e as Error).message}`);
    }
    return new MemoryCgroup(path, where.kind);
  }

  /** Removes the (empty) subtree `where` made for this server. */
  static removeParent(where: Exclude<MemoryCgroups, { kind: "none" }>): void {
    try {
      for (const d of readdirSync(where.parent, { withFileTypes: true })) if (d.isDirectory()) try { rmdirSync(join(where.parent, d.name)); } catch { /* busy */ }
      rmdirSync(where.parent);
    } catch { /* busy or gone */ }
  }

  private get procs(): string {
    return join(this.path, "cgroup.procs");
  }

  /**
   * Sets the hard limit over every process in the cgroup (swap included where the kernel accounts it). False when the
   * kernel refused it (v1 answers EBUSY when usage stays above a lower limit after reclaim).
   */
  setLimitBytes(bytes: number): boolean {
    const value = String(Math.floor(bytes));
    try {
      if (this.kind === "v2") {
        writeFileSync(join(this.path, "memory.max"), value);
        if (existsSync(join(this.path, "memory.swap.max"))) writeFileSync(join(this.path, "memory.swap.max"), "0");
        return true;
      }
      const memsw = join(this.path, "memory.memsw.limit_in_bytes");
      // v1 requires memory <= memory+swap at every step: raise the pair in the order that keeps it true.
      const current = Number(readFileSync(join(this.path, "memory.limit_in_bytes"), "utf8"));
      if (bytes >= current) {
        if (existsSync(memsw)) writeFileSync(memsw, value);
        writeFileSync(join(this.path, "memory.limit_in_bytes"), value);
      } else {
        writeFileSync(join(this.path, "memory.limit_in_bytes"), value);
        if (existsSync(memsw)) writeFileSync(memsw, value);
      }
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EBUSY") return false;
      throw new SandboxError("memory_cgroup_failed", `cannot set the memory limit of ${this.path}: ${(e as Error).message}`);
    }
  }

  usageBytes(): number {
    try {
      return Number(readFileSync(join(this.path, this.kind === "v2" ? "memory.current" : "memory.usage_in_bytes"), "utf8")) || 0;
    } catch {
      return 0;
    }
  }

  /** OOM kills in this cgroup so far (v1 memory.oom_control, v2 memory.events: their oom_kill line). */
  oomKills(): number {
    try {
      const text = readFileSync(join(this.path, this.kind === "v2" ? "memory.events" : "memory.oom_control"), "utf8");
      return Number(/^oom_kill (\d+)$/m.exec(text)?.[1] ?? "0");
    } catch {
      return 0;
    }
  }

  /**
   * argv that starts `argv` inside this cgroup: a shell joins it (as root: cgroup v2 lets only a writer of the common
   * ancestor's cgroup.procs move a process) and, given ids, setpriv drops to the sandbox's uid before argv starts.
   */
  spawnArgs(argv: readonly string[], ids: { uid: number; gid: number } | undefined): string[] {
    const join_ = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', this.procs];
    return ids === undefined ? [...join_, ...argv] : [...join_, "/usr/bin/setpriv", `--reuid=${ids.uid}`, `--regid=${ids.gid}`, "--clear-groups", "--", ...argv];
  }

  /** Removes the cgroup once its processes are gone; false while it is busy. */
  remove(): boolean {
    for (let i = 0; i < 20; i++) {
      try {
        rmdirSync(this.path);
        return true;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return true;
        if (code !== "EBUSY") return false;
      }
    }
    return false;
  }
}
