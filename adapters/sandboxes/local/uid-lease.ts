// Host-wide leases of sandbox uids. Every rlpipe server on a host runs its programs as uids from 64000..65533 (none
// exists on the host); two servers on the same uids would share RLIMIT_NPROC (counted per uid), and a program of one
// could signal or prlimit the other's processes. So a server leases a range of its own: granules of 16 uids, each a
// directory made with mkdir (atomic: one creator wins) holding its owner's pid and start time. A granule whose owner
// is gone (or whose pid was reused) is stale and taken over. Advisory, for the processes of this machine only.
import { accessSync, constants, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SandboxError } from "../sandbox.js";

/** The sandboxes' uids: none of them exists on the host, so a program can reach no host process through its uid. */
export const UID_RANGE = { first: 64000, last: 65533 } as const;

export interface UidLease {
  /** First uid of the leased range; the range is [first, first + count). */
  readonly first: number;
  readonly count: number;
  /** Gives the range back (idempotent). Also done automatically when the process exits. */
  release(): void;
}

export interface UidLeaseOptions {
  /** Directory holding the leases (default: /run/rlpipe/sandbox-uids when it can be created/written, else <os.tmpdir()>/rlpipe-sandbox-uids-<process uid>). */
  readonly dir?: string;
  /** Range bounds (default 64000 and 65533 inclusive). */
  readonly firstUid?: number;
  readonly lastUid?: number;
}

/** Uids per lease directory: a directory per uid would be ~1500 mkdirs for a big server. */
const GRANULE_UIDS = 16;
/** A granule without an owner file older than this was left by a creator that died between mkdir and write. */
const UNOWNED_STALE_MS = 10_000;
/** How long a buried stale granule is kept: while it exists, a process that judged the same stale state late cannot move a fresh granule (see bury). */
const TOMBSTONE_KEEP_MS = 60_000;
const RUN_DIR = "/run/rlpipe/sandbox-uids";

/** A process, told apart from a later one with the same pid by its start time (null: /proc unreadable). */
interface Owner { readonly pid: number; readonly startTime: number | null }

const errno = (e: unknown): string | undefined => (e as NodeJS.ErrnoException).code;

/** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. The comm field may hold spaces and ")". */
function startTimeTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const ticks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]); // [0] is field 3
    return Number.isSafeInteger(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

const self: Owner = { pid: process.pid, startTime: startTimeTicks(process.pid) ?? null };
/** Granule directories this process holds, for release on exit. */
const heldGranuleDirs = new Set<string>();
let exitHookSet = false;
let defaultDir: string | undefined;

function defaultLeaseDir(): string {
  if (defaultDir !== undefined) return defaultDir;
  try {
    mkdirSync(RUN_DIR, { recursive: true, mode: 0o755 });
    accessSync(RUN_DIR, constants.W_OK);
    defaultDir = RUN_DIR;
  } catch {
    defaultDir = join(tmpdir(), `rlpipe-sandbox-uids-${process.getuid?.() ?? "user"}`);
  }
  return defaultDir;
}

function readOwner(granuleDir: string): Owner | undefined {
  try {
    const o = JSON.parse(readFileSync(join(granuleDir, "owner"), "utf8")) as Partial<Owner>;
    // A pid <= 0 would make kill(pid, 0) ask about process groups: such a file is as good as none.
    const validPid = Number.isSafeInteger(o.pid) && o.pid! > 0;
    return validPid && (o.startTime === null || typeof o.startTime === "number") ? { pid: o.pid!, startTime: o.startTime } : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(owner: Owner): boolean {
  try {
    process.kill(owner.pid, 0);
  } catch (e) {
    if (errno(e) !== "EPERM") return false; // ESRCH: no such process. EPERM: alive, under another uid.
  }
  const now = startTimeTicks(owner.pid);
  // A different start time: the pid was reused. Unknown on either side: trust kill (never take a live owner's).
  return now === undefined || owner.startTime === null || now === owner.startTime;
}

/**
 * Whether a granule is held by a live process, gone, or stale: then with the tombstone name to bury it under, derived
 * from the stale state judged, so that processes that judged the same state rename onto the same name.
 */
function judge(granuleDir: string, granule: number): "held" | "gone" | { readonly tombstone: string } {
  const owner = readOwner(granuleDir);
  if (owner !== undefined) return isAlive(owner) ? "held" : { tombstone: `.stale-${granule}-${owner.pid}-${owner.startTime}` };
  try {
    const st = statSync(granuleDir);
    return Date.now() - st.mtimeMs > UNOWNED_STALE_MS ? { tombstone: `.stale-${granule}-unowned-${st.ino}-${Math.trunc(st.mtimeMs)}` } : "held";
  } catch {
    return "gone";
  }
}

/**
 * Moves a stale granule aside. A unique random name would not do: a process that judged the state stale just before
 * another took the granule over and made it anew would then move the new, live one. The tombstone stays (non-empty)
 * for a while, so such a late rename fails (ENOTEMPTY) instead; ENOENT means another process moved it first.
 */
function bury(dir: string, granuleDir: string, tombstone: string): void {
  const tombstoneDir = join(dir, tombstone);
  try {
    renameSync(granuleDir, tombstoneDir);
  } catch (e) {
    if (["ENOENT", "ENOTEMPTY", "EEXIST"].includes(errno(e) ?? "")) return; // lost the race: look again
    throw e;
  }
  try {
    writeFileSync(join(tombstoneDir, "buried-by"), String(self.pid)); // non-empty even if it was an unowned, empty one
  } catch {
    // swept meanwhile: nothing to keep
  }
}

function sweepTombstones(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(".stale-")) continue;
    try {
      // ctime: the rename that buried it (its mtime may be hours older, from the dead owner)
      if (Date.now() - statSync(join(dir, name)).ctimeMs > TOMBSTONE_KEEP_MS) rmSync(join(dir, name), { recursive: true, force: true });
    } catch {
      // another process swept it
    }
  }
}

/** Takes the granule starting at uid `granule`; its directory, or undefined when a live process holds it. */
function takeGranule(dir: string, granule: number): string | undefined {
  const granuleDir = join(dir, String(granule));
  for (let attempt = 0; attempt < 4; attempt++) {
    try {
      mkdirSync(granuleDir);
    } catch (e) {
      if (errno(e) !== "EEXIST") throw e;
      const state = judge(granuleDir, granule);
      if (state === "held") return undefined;
      if (state !== "gone") bury(dir, granuleDir, state.tombstone);
      continue;
    }
    try {
      writeFileSync(join(granuleDir, "owner"), JSON.stringify({ ...self, leasedAt: new Date().toISOString() }));
    } catch (e) {
      rmSync(granuleDir, { recursive: true, force: true });
      throw e;
    }
    heldGranuleDirs.add(granuleDir);
    return granuleDir;
  }
  return undefined; // others keep taking it over: leave it to them
}

/** Removes the granule only if it is still ours (a directory is never someone else's to remove). */
function releaseGranule(granuleDir: string): void {
  heldGranuleDirs.delete(granuleDir);
  const owner = readOwner(granuleDir);
  if (owner?.pid === self.pid && owner.startTime === self.startTime) rmSync(granuleDir, { recursive: true, force: true });
}

/**
 * Leases `count` consecutive uids that no other process of this host has leased (the lowest run of free granules that
 * covers them), so that this server's sandboxes share no uid with another's. Throws sandbox_uids_exhausted when none fits.
 */
export function leaseUids(count: number, opts: UidLeaseOptions = {}): UidLease {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`a uid lease needs a positive integer count of uids, got ${count}`);
  const firstUid = opts.firstUid ?? UID_RANGE.first;
  const lastUid = opts.lastUid ?? UID_RANGE.last;
  const dir = opts.dir ?? defaultLeaseDir();
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  sweepTombstones(dir);
  if (!exitHookSet) {
    exitHookSet = true;
    process.once("exit", () => { for (const granuleDir of [...heldGranuleDirs]) releaseGranule(granuleDir); });
  }
  const granulesNeeded = Math.ceil(count / GRANULE_UIDS);
  for (let start = 0; firstUid + start * GRANULE_UIDS + count - 1 <= lastUid;) {
    const taken: string[] = [];
    let blocked = -1;
    try {
      for (let g = start; g < start + granulesNeeded && blocked < 0; g++) {
        const granuleDir = takeGranule(dir, firstUid + g * GRANULE_UIDS);
        if (granuleDir === undefined) blocked = g;
        else taken.push(granuleDir);
      }
    } catch (e) {
      for (const granuleDir of taken) releaseGranule(granuleDir);
      throw e;
    }
    if (blocked < 0) {
      let released = false;
      return {
        first: firstUid + start * GRANULE_UIDS,
        count,
        release: () => {
          if (released) return; // a second release must not remove granules leased again since
          released = true;
          for (const granuleDir of taken) releaseGranule(granuleDir);
        },
      };
    }
    for (const granuleDir of taken) releaseGranule(granuleDir);
    start = blocked + 1;
  }
  const granuleCount = Math.ceil((lastUid - firstUid + 1) / GRANULE_UIDS);
  let heldByLive = 0;
  for (let g = 0; g < granuleCount; g++) {
    const granule = firstUid + g * GRANULE_UIDS;
    if (judge(join(dir, String(granule)), granule) === "held") heldByLive++;
  }
  throw new SandboxError(
    "sandbox_uids_exhausted",
    `cannot lease ${count} consecutive sandbox uids in ${firstUid}-${lastUid}: ${heldByLive} of its ${granuleCount} granules of ${GRANULE_UIDS} uids are held by live processes (leases in ${dir})`,
    { hint: "run fewer slots (--concurrency), or stop other rlpipe serve processes on this host" },
  );
}
