// Host-wide leases of sandbox uids. Every rlpipe server on a host runs its sandboxes as uids from 64000..65533 (none
// exists on the host); two servers that used the same ones would share RLIMIT_NPROC, and a program of one could
// signal or prlimit the other's processes. So a server leases its range: granules of 16 uids, each a directory made
// with mkdir (atomic) holding its owner's pid and start time; an owner that is gone (or whose pid was reused) leaves a
// stale granule that the next server takes over through a rename only one of them wins.
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { SandboxError } from "../sandbox.js";

export const UID_RANGE = { first: 64000, last: 65533 } as const;
const GRANULE = 16;
/** A granule without an owner file older than this was left by a creator that died between mkdir and write. */
const UNOWNED_STALE_MS = 10_000;

export interface UidLease {
  /** First uid of the leased range; the range is [first, first + count). */
  readonly first: number;
  readonly count: number;
  /** Gives the range back (idempotent). Also done automatically when the process exits. */
  release(): void;
}

export interface UidLeaseOptions {
  /** Directory holding the leases (default: /run/rlpipe/sandbox-uids when writable, else <tmpdir>/rlpipe-sandbox-uids-<uid>). */
  readonly dir?: string;
  readonly firstUid?: number;
  readonly lastUid?: number;
}

interface Owner { readonly pid: number; readonly startTime: string }

/** Field 22 of /proc/<pid>/stat (start time in clock ticks); the comm field before it may hold spaces and parentheses. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

const me: Owner = { pid: process.pid, startTime: startTimeOf(process.pid) ?? "" };
const held = new Set<string>();
let exitHook = false;

function defaultDir(): string {
  const run = "/run/rlpipe/sandbox-uids";
  try {
    mkdirSync(run, { recursive: true, mode: 0o755 });
    writeFileSync(join(run, `.probe-${process.pid}`), "");
    rmSync(join(run, `.probe-${process.pid}`), { force: true });
    return run;
  } catch {
    return join(tmpdir(), `rlpipe-sandbox-uids-${process.getuid?.() ?? "user"}`);
  }
}

function ownerOf(granule: string): Owner | undefined {
  try {
    const o = JSON.parse(readFileSync(join(granule, "owner"), "utf8")) as Partial<Owner>;
    return typeof o.pid === "number" && typeof o.startTime === "string" ? { pid: o.pid, startTime: o.startTime } : undefined;
  } catch {
    return undefined;
  }
}

function alive(o: Owner): boolean {
  try {
    process.kill(o.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return startTimeOf(o.pid) === o.startTime;
}

/** Whether the granule directory belongs to nobody alive (so it may be taken over). */
function stale(granule: string): boolean {
  const owner = ownerOf(granule);
  if (owner !== undefined) return !alive(owner);
  try {
    return Date.now() - statSync(granule).mtimeMs > UNOWNED_STALE_MS;
  } catch {
    return false; // gone meanwhile: take it normally
  }
}

/** Takes the granule for this process; false when another live process has it. */
function take(dir: string, granule: string): boolean {
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      mkdirSync(granule);
      writeFileSync(join(granule, "owner"), JSON.stringify({ ...me, leasedAt: new Date().toISOString() }));
      held.add(granule);
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    if (!stale(granule)) return false;
    const aside = join(dir, `.stale-${granule.split("/").pop()}-${process.pid}-${randomBytes(4).toString("hex")}`);
    try {
      renameSync(granule, aside); // only one of several servers wins this
      rmSync(aside, { recursive: true, force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
    }
  }
  return false;
}

function give(granule: string): void {
  const owner = ownerOf(granule);
  if (owner !== undefined && owner.pid === me.pid && owner.startTime === me.startTime) rmSync(granule, { recursive: true, force: true });
  held.delete(granule);
}

export function leaseUids(count: number, opts: UidLeaseOptions = {}): UidLease {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`a uid lease needs a positive integer count, got ${count}`);
  const firstUid = opts.firstUid ?? UID_RANGE.first;
  const lastUid = opts.lastUid ?? UID_RANGE.last;
  const dir = opts.dir ?? defaultDir();
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  if (!exitHook) {
    exitHook = true;
    process.on("exit", () => { for (const g of [...held]) give(g); });
  }
  const granules = Math.floor((lastUid - firstUid + 1) / GRANULE) + ((lastUid - firstUid + 1) % GRANULE === 0 ? 0 : 1);
  const need = Math.ceil(count / GRANULE);
  let busy = 0;
  for (let start = 0; start + need <= granules;) {
    if (firstUid + start * GRANULE + count - 1 > lastUid) break;
    const taken: string[] = [];
    let blockedAt = -1;
    for (let g = start; g < start + need; g++) {
      const path = join(dir, String(firstUid + g * GRANULE));
      if (take(dir, path)) taken.push(path);
      else { blockedAt = g; break; }
    }
    if (blockedAt < 0) {
      let released = false;
      return {
        first: firstUid + start * GRANULE, count,
        release: () => {
          if (released) return;
          released = true;
          for (const g of taken) give(g);
        },
      };
    }
    for (const g of taken) give(g);
    busy++;
    start = blockedAt + 1;
  }
  throw new SandboxError("sandbox_uids_exhausted", `no ${count} consecutive sandbox uids are free in ${firstUid}-${lastUid} (leases in ${dir}; ${busy} blocked attempt${busy === 1 ? "" : "s"}: other rlpipe servers hold them)`, {
    hint: "run fewer slots (--concurrency), or stop other rlpipe serve processes on this host",
  });
}
