// A program's memory limit covers all of its processes. Per-process limits (RLIMIT_AS) alone let a program that
// forks 8 children of 300 MiB under a 512 MB limit take 2.5 GB of the host. So each sandbox gets memory cgroups of
// its own (memory-cgroup.ts, where the host lets this server make them: cgroup v2 delegated or as root, cgroup v1
// as root): the harness runs in one leaf, and every process it forks to run a program's (or compiler's) code moves
// into the other, whose limit before each program is the program's own, to the byte. The sandbox as a whole is bound
// too, by that limit plus what the harness itself holds (its processes and files; page cache is not counted, the
// kernel reclaims it). The kernel's OOM killer then ends a program's process when all of them together pass the
// limit, and the case is reported as having passed the program's memory limit. (A bound measured as "the sandbox
// less its harness" alone let 2 children of 300 MiB live under 512 MB on a CI machine.) Where the host has no cgroup to give, programs keep their per-process
// limits and the process limit, and the server says so when it starts.
import { detectMemoryCgroups, MemoryCgroup, SandboxCgroup, type MemoryCgroups } from "./memory-cgroup.js";

/** Room for the harness's own growth during a program (its manager and the processes it forks per case). */
const HARNESS_SLACK_BYTES = 48 << 20;
const MIB = 1 << 20;

/** How a sandbox's programs are bounded in memory: by a cgroup per sandbox, or per process only (and why). */
export type MemoryBoundKind = "cgroup v2" | "cgroup v1" | "per process";

export class MemoryBounds {
  /** Sandboxes made so far (each gets a cgroup of its own: never one a previous sandbox still exits in). */
  private made = 0;
  /** Cgroups whose sandboxes exited but which the kernel still held when they were removed. */
  private readonly lingering = new Set<SandboxCgroup>();

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

  /** Why there is none, when there is none. */
  get why(): string | undefined {
    return this.where.kind === "none" ? this.where.why : undefined;
  }

  /**
   * A new cgroup for one sandbox running as `uid`, or undefined without cgroups. Its own, not one per uid: the previous
   * sandbox of a slot may still be exiting when the next starts (per-program isolation), and its memory would keep
   * the kernel from lowering a shared cgroup's limit.
   */
  forSandbox(uid: number): ProgramMemory | undefined {
    if (this.where.kind === "none") return undefined;
    return new ProgramMemory(SandboxCgroup.create(this.where, `u${uid}-${++this.made}`), (cg) => this.release(cg));
  }

  /** Removes the cgroups (their sandboxes have exited). */
  close(): void {
    for (const cg of this.lingering) cg.remove();
    this.lingering.clear();
    if (this.where.kind !== "none") MemoryCgroup.removeParent(this.where);
  }

  /** A sandbox exited: its cgroup goes now, or on a later try (v1 empties a cgroup asynchronously). */
  private release(cg: SandboxCgroup): void {
    if (cg.removeNow()) return;
    this.lingering.add(cg);
    let tries = 0;
    const retry = () => {
      if (!this.lingering.has(cg)) return;
      if (cg.removeNow() || ++tries > 50) { this.lingering.delete(cg); return; }
      setTimeout(retry, 100).unref();
    };
    setTimeout(retry, 100).unref();
  }
}

/** One sandbox's memory cgroup, as its zygote uses it around each program. */
export class ProgramMemory {
  /** What the harness holds, measured before the first program (it parses nothing of a program's, so it stays put). */
  private harness: number | undefined;
  /** The limit last set: the same limit is not written again (a write makes the kernel reclaim down to it). */
  private lastLimit: number | undefined;

  constructor(readonly cgroup: SandboxCgroup, private readonly onExit: (cg: SandboxCgroup) => void) {}

  /** The program leaf's cgroup.procs, which the sandbox gets open for writing (zygote.ts). */
  get programProcsFile(): string {
    return this.cgroup.programProcsFile;
  }

  spawnArgs(argv: readonly string[], ids: { uid: number; gid: number } | undefined): string[] {
    return this.cgroup.spawnArgs(argv, ids);
  }

  /** OOM kills in the cgroup so far (0 once it is gone). */
  oomKills(): number {
    try {
      return this.cgroup.oomKills();
    } catch {
      return 0;
    }
  }

  /** Before a build: the compiler's limit (a build may use more than the program may). False: it could not be set. */
  buildStarts(memoryMb: number): boolean {
    return this.limitTo(memoryMb);
  }

  /** Before a program's cases: its own limit, over every process it starts. False: it could not be set. */
  programStarts(memoryMb: number): boolean {
    return this.limitTo(memoryMb);
  }

  /** The sandbox has exited: its cgroup is removed. */
  sandboxExited(): void {
    this.onExit(this.cgroup);
  }

  private limitTo(memoryMb: number): boolean {
    this.harness ??= this.harnessBytes();
    const programBytes = memoryMb * MIB;
    if (programBytes === this.lastLimit) return true;
    // v1 answers EBUSY when what a cgroup holds stays above a lower limit after reclaim: then the sandbox is not
    // used for this program (a limit left higher would not bound it).
    if (!this.cgroup.setLimitsBytes(programBytes, programBytes + this.harness + HARNESS_SLACK_BYTES)) return false;
    this.lastLimit = programBytes;
    return true;
  }

  /** What the harness holds that the kernel cannot reclaim (no program runs yet). */
  private harnessBytes(): number {
    try {
      return this.cgroup.unreclaimableBytes();
    } catch {
      return 0;
    }
  }
}
