// A program's memory limit covers all of its processes. Per-process limits (RLIMIT_AS) alone let a program that
// forks 8 children of 300 MiB under a 512 MB limit take 2.5 GB of the host. So each sandbox uid gets a memory cgroup
// of its own (memory-cgroup.ts, where the host lets this server make them: cgroup v2 delegated or as root, cgroup v1
// as root), the sandbox runs inside it, and before each program its limit is set to the program's limit plus what the
// harness itself holds then (its processes and files; page cache is not counted, the kernel reclaims it). The kernel's
// OOM killer then ends a program's process when all of them together pass the limit, and the case is reported as
// having passed the program's memory limit. Where the host has no cgroup to give, programs keep their per-process
// limits and the process limit, and the server says so when it starts.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { detectMemoryCgroups, MemoryCgroup, type MemoryCgroups } from "./memory-cgroup.js";

/** Room for the harness's own growth during a program (its manager and the processes it forks per case). */
const HARNESS_SLACK_BYTES = 48 << 20;
const MIB = 1 << 20;

/** How a sandbox's programs are bounded in memory: by a cgroup per sandbox, or per process only (and why). */
export type MemoryBoundKind = "cgroup v2" | "cgroup v1" | "per process";

export class MemoryBounds {
  private readonly byUid = new Map<number, ProgramMemory>();

  private constructor(private readonly where: MemoryCgroups) {}

  /** Finds where this server may create memory cgroups (`name`: its own subtree, unique per server). */
  static open(name: string): MemoryBounds {
    return new MemoryBounds(detectMemoryCgroups(name));
  }

  /** Programs bounded per process only (tests, or hosts without cgroups). */
  static perProcess(why: string): MemoryBounds {
    return new MemoryBounds({ kind: "none", why });
  }

  get kind(): MemoryBoundKind {
    return this.where.kind === "none" ? "per process" : this.where.kind === "v2" ? "cgroup v2" : "cgroup v1";
  }

  /** Why there is no cgroup, when there is none. */
  get why(): string | undefined {
    return this.where.kind === "none" ? this.where.why : undefined;
  }

  /** The cgroup of the sandbox that runs as `uid` (made on first use), or undefined without cgroups. */
  forUid(uid: number): ProgramMemory | undefined {
    if (this.where.kind === "none") return undefined;
    let m = this.byUid.get(uid);
    if (m === undefined) {
      m = new ProgramMemory(MemoryCgroup.create(this.where, `u${uid}`));
      this.byUid.set(uid, m);
    }
    return m;
  }

  /** Removes the cgroups (their sandboxes have exited). */
  close(): void {
    for (const m of this.byUid.values()) m.cgroup.remove();
    this.byUid.clear();
    if (this.where.kind !== "none") MemoryCgroup.removeParent(this.where);
  }
}

/** One sandbox's memory cgroup, as a zygote uses it around each program. */
export class ProgramMemory {
  /** What the harness holds, measured before the first program (it parses nothing of a program's, so it stays put). */
  private harness: number | undefined;
  /** The limit last set: the same limit is not written again (a write makes the kernel reclaim down to it). */
  private lastLimit: number | undefined;

  constructor(readonly cgroup: MemoryCgroup) {}

  spawnArgs(argv: readonly string[], ids: { uid: number; gid: number } | undefined): string[] {
    return this.cgroup.spawnArgs(argv, ids);
  }

  oomKills(): number {
    return this.cgroup.oomKills();
  }

  /** Before a build: the compiler's limit (a build may use more than the program may). */
  buildStarts(memoryMb: number): void {
    this.limitTo(memoryMb);
  }

  /** Before a program's cases: its own limit, over every process it starts. */
  programStarts(memoryMb: number): void {
    this.limitTo(memoryMb);
  }

  private limitTo(memoryMb: number): void {
    this.harness ??= this.harnessBytes();
    const bytes = memoryMb * MIB + this.harness + HARNESS_SLACK_BYTES;
    if (bytes === this.lastLimit) return;
    // A limit the kernel cannot reach by reclaiming (v1 answers EBUSY) is not lowered: the harness holds more than
    // expected, and the program still gets at least its own limit on top of it.
    if (this.cgroup.setLimitBytes(bytes)) this.lastLimit = bytes;
  }

  /** What the cgroup holds that the kernel cannot reclaim: its usage less file pages (page cache). */
  private harnessBytes(): number {
    let file = 0;
    try {
      for (const line of readFileSync(join(this.cgroup.path, "memory.stat"), "utf8").split("\n")) {
        const [key, value] = line.split(" ");
        if (key === "active_file" || key === "inactive_file") file += Number(value) || 0;
      }
    } catch {
      return 0;
    }
    return Math.max(0, this.cgroup.usageBytes() - file);
  }
}
