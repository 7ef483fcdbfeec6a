// Which uid each sandbox of a server runs as. None of them exists on the host; no two sandboxes share one, on this
// server or any other on the host (RLIMIT_NPROC counts per uid, and a uid is what a process may signal or prlimit):
// a server leases its range host-wide (uid-lease.ts), one range after another for N slots — the per-program slots,
// the warm zygotes (twice the pool: a retiring one keeps its uid until it has exited), then N per Debian root's
// sandbox.
import { SandboxError } from "../sandbox.js";
import { leaseUids, UID_RANGE, type UidLease } from "./uid-lease.js";

/** Ready warm zygotes kept beyond the slots. */
export const WARM_SPARES = 1;

export interface UidPlan {
  /** One per slot, for per-program sandboxes. */
  readonly slots: readonly number[];
  /** The warm pool's. */
  readonly warm: readonly number[];
  /** The k-th Debian root's sandbox: one per slot. */
  rooted(k: number): readonly number[];
  /** Gives the range back (the server is closing). */
  release(): void;
}

/** How many uids N slots with `roots` Debian roots need. */
export function uidsNeeded(slots: number, roots: number): number {
  return slots + 2 * (slots + WARM_SPARES) + roots * slots;
}

/** Leases the uids of a server with `slots` slots and `roots` Debian roots, or says how many slots fit. */
export function planUids(slots: number, roots: number, leaseDir?: string): UidPlan {
  const count = uidsNeeded(slots, roots);
  const total = UID_RANGE.last - UID_RANGE.first + 1;
  if (count > total) {
    const most = Math.floor((total - 2 * WARM_SPARES) / (3 + roots));
    throw new SandboxError("concurrency_too_high", `--concurrency ${slots} needs more sandbox uids than there are from ${UID_RANGE.first} to ${UID_RANGE.last} (at most ${most} here)`, { hint: `run with --concurrency ${most} or less` });
  }
  const lease: UidLease = leaseUids(count, leaseDir === undefined ? {} : { dir: leaseDir });
  const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => lease.first + from + i);
  return {
    slots: range(0, slots),
    warm: range(slots, 2 * (slots + WARM_SPARES)),
    rooted: (k) => range(slots + 2 * (slots + WARM_SPARES) + k * slots, slots),
    release: () => lease.release(),
  };
}
