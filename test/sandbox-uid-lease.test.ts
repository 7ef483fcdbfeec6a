// Host-wide uid leases (adapters/sandboxes/local/uid-lease.ts): leases never overlap, in one process or across
// processes leasing at once (also while they take over stale granules); a dead owner's granule (or one whose pid was
// reused) is taken over, a live one's never; an exiting process gives its granules back; a full range is a clear error.
// Every test has a lease directory of its own, so none touches /run.
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { leaseUids, UID_RANGE } from "../adapters/sandboxes/local/uid-lease.js";
import { ROOT } from "./helpers.js";

const LEASE_MODULE = join(ROOT, "dist/adapters/sandboxes/local/uid-lease.js");

interface Range { readonly first: number; readonly count: number }

const leaseDirs: string[] = [];
function newLeaseDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "rlpipe-uid-lease-"));
  leaseDirs.push(dir);
  return dir;
}
const overlap = (a: Range, b: Range) => a.first < b.first + b.count && b.first < a.first + a.count;
/** Granule directories present (tombstones of taken-over granules start with a dot). */
const granules = (dir: string) => readdirSync(dir).filter((name) => !name.startsWith(".")).sort();
const ownerOf = (dir: string, granule: number) => JSON.parse(readFileSync(join(dir, String(granule), "owner"), "utf8")) as { pid: number; startTime: number };

function startTimeTicks(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
}

/** A pid no process has. */
function deadPid(): number {
  for (let pid = 4_000_000; pid > 1; pid--) {
    try {
      process.kill(pid, 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ESRCH") return pid;
    }
  }
  throw new Error("no free pid");
}

function writeGranule(dir: string, granule: number, owner?: object): void {
  mkdirSync(join(dir, String(granule)));
  if (owner !== undefined) writeFileSync(join(dir, String(granule), "owner"), JSON.stringify(owner));
}

/** A node process that leases `count` uids, prints the lease as JSON and holds it until its stdin closes. */
function leasingChild(dir: string, count: number): { child: ChildProcessWithoutNullStreams; lease: Promise<Range>; exited: Promise<number | null> } {
  const script = `const { leaseUids } = await import(${JSON.stringify(LEASE_MODULE)});
const lease = leaseUids(${count}, { dir: ${JSON.stringify(dir)} });
console.log(JSON.stringify({ first: lease.first, count: lease.count }));
process.stdin.resume();`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script]);
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const lease = new Promise<Range>((resolve, reject) => {
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d;
      if (out.includes("\n")) resolve(JSON.parse(out) as Range);
    });
    child.stderr.on("data", (d: Buffer) => (err += d));
    void exited.then((code) => reject(new Error(`leasing child exited (${code}) before it leased: ${err}`)));
  });
  return { child, lease, exited };
}

describe("uid leases", () => {
  after(() => { for (const dir of leaseDirs) rmSync(dir, { recursive: true, force: true }); });

  it("two leases in one process do not overlap and stay in range; released granules are leased again", () => {
    const dir = newLeaseDir();
    const a = leaseUids(40, { dir });
    const b = leaseUids(20, { dir });
    assert.deepEqual([a.first, a.count, b.first, b.count], [64000, 40, 64048, 20], "the lowest free runs of 3 and 2 granules");
    assert.ok(!overlap(a, b));
    for (const lease of [a, b]) assert.ok(lease.first >= UID_RANGE.first && lease.first + lease.count - 1 <= UID_RANGE.last);
    assert.deepEqual(granules(dir), ["64000", "64016", "64032", "64048", "64064"]);
    assert.equal(ownerOf(dir, 64000).pid, process.pid);
    a.release();
    assert.deepEqual(granules(dir), ["64048", "64064"]);
    const c = leaseUids(33, { dir });
    assert.equal(c.first, 64000, "a's granules are free again");
    a.release(); // idempotent: must not remove c's granules, though they name this same process
    assert.deepEqual(granules(dir), ["64000", "64016", "64032", "64048", "64064"]);
    b.release();
    c.release();
    assert.deepEqual(readdirSync(dir), []);
  });

  it("processes leasing at once get disjoint ranges, also while they take over stale granules", async () => {
    const dir = newLeaseDir();
    const dead = deadPid();
    for (let g = 0; g < 8; g++) writeGranule(dir, 64000 + 16 * g, { pid: dead, startTime: 1, leasedAt: "" });
    const children = Array.from({ length: 6 }, () => leasingChild(dir, 40));
    try {
      const leases = await Promise.all(children.map((c) => c.lease));
      for (const lease of leases) assert.ok(lease.count === 40 && lease.first >= 64000 && lease.first + 39 <= 65533, JSON.stringify(lease));
      for (let i = 0; i < leases.length; i++) {
        for (let j = i + 1; j < leases.length; j++) assert.ok(!overlap(leases[i]!, leases[j]!), JSON.stringify(leases));
      }
      // Each granule belongs to the child that got it; the stale ones were all taken over (the 18 granules leased reach
      // past them, and a search passes every granule below the run it ends with). Runs may leave gaps: a granule can be
      // busy for a moment in another child's attempt that fails.
      for (const [i, lease] of leases.entries()) {
        for (let uid = lease.first; uid < lease.first + 40; uid += 16) assert.equal(ownerOf(dir, uid).pid, children[i]!.child.pid);
      }
      for (const granule of granules(dir)) assert.notEqual(ownerOf(dir, Number(granule)).pid, dead, `granule ${granule} is still the dead owner's`);
    } finally {
      for (const c of children) c.child.stdin.end();
      await Promise.all(children.map((c) => c.exited));
    }
  });

  it("takes over a granule whose owner is dead, whose pid was reused, or that a creator left unowned; never a live one", async () => {
    const dir = newLeaseDir();
    const sleeper = spawn("sleep", ["60"]);
    const sleeperExited = new Promise((resolve) => sleeper.once("exit", resolve));
    try {
      const livePid = sleeper.pid!;
      const deadOwner = deadPid();
      writeGranule(dir, 64000, { pid: deadOwner, startTime: 1, leasedAt: "" });
      writeGranule(dir, 64016, { pid: livePid, startTime: startTimeTicks(livePid) + 1, leasedAt: "" }); // pid reused
      writeGranule(dir, 64032, { pid: livePid, startTime: startTimeTicks(livePid), leasedAt: "" });
      writeGranule(dir, 64048); // unowned, fresh: its creator may be about to write the owner
      writeGranule(dir, 64064); // unowned for a minute: its creator died
      const minuteAgo = new Date(Date.now() - 60_000);
      utimesSync(join(dir, "64064"), minuteAgo, minuteAgo);

      const staleTwo = leaseUids(32, { dir });
      assert.equal(staleTwo.first, 64000, "the dead owner's and the reused pid's granules were taken over");
      for (const granule of [64000, 64016]) assert.deepEqual(ownerOf(dir, granule).pid, process.pid);
      // The dead owner's granule was buried under a name of the state judged: a process that judged it stale too and
      // renames only now cannot move the new, live granule (the tombstone is not empty).
      const tombstone = join(dir, `.stale-64000-${deadOwner}-1`);
      assert.ok(readdirSync(tombstone).length > 0);
      assert.throws(() => renameSync(join(dir, "64000"), tombstone), { code: "ENOTEMPTY" });
      assert.equal(ownerOf(dir, 64000).pid, process.pid);
      const next = leaseUids(16, { dir });
      assert.equal(next.first, 64064, "the live owner's and the fresh unowned granules were skipped");
      assert.equal(ownerOf(dir, 64032).pid, livePid);
      assert.ok(existsSync(join(dir, "64048")));
      // As if taken over meanwhile (this process judged dead): release must not remove what another owner holds.
      writeFileSync(join(dir, "64064", "owner"), JSON.stringify({ pid: livePid, startTime: startTimeTicks(livePid), leasedAt: "" }));
      staleTwo.release();
      next.release();
      assert.deepEqual(granules(dir), ["64032", "64048", "64064"], "release leaves others' granules alone");
    } finally {
      sleeper.kill();
      await sleeperExited;
    }
  });

  it("a process that exits gives its granules back", async () => {
    const dir = newLeaseDir();
    const { child, lease, exited } = leasingChild(dir, 20);
    const range = await lease;
    assert.deepEqual(range, { first: 64000, count: 20 });
    assert.deepEqual(granules(dir), ["64000", "64016"]);
    assert.equal(ownerOf(dir, 64000).pid, child.pid);
    child.stdin.end(); // nothing left to wait for: the child exits normally
    assert.equal(await exited, 0);
    assert.deepEqual(granules(dir), [], "the exit hook removed them");
  });

  it("a range with no room left is a clear error", () => {
    const dir = newLeaseDir();
    const small = { dir, firstUid: 64000, lastUid: 64047 }; // 3 granules
    const held = leaseUids(40, small);
    assert.throws(() => leaseUids(20, small), (e: Error & { code?: string; hint?: string }) => {
      assert.equal(e.name, "SandboxError");
      assert.equal(e.code, "sandbox_uids_exhausted");
      assert.match(e.message, /cannot lease 20 consecutive sandbox uids in 64000-64047: 3 of its 3 granules/);
      assert.match(e.hint ?? "", /--concurrency/);
      return true;
    });
    held.release();
    // The last, partial granule is usable up to lastUid, no further.
    const partial = { dir, firstUid: 64000, lastUid: 64020 };
    assert.throws(() => leaseUids(22, partial), /cannot lease 22 /);
    const whole = leaseUids(21, partial);
    assert.deepEqual([whole.first, whole.count], [64000, 21]);
    whole.release();
  });

  it("a count that is not a positive integer is refused", () => {
    const dir = newLeaseDir();
    for (const count of [0, 1.5, -16, Number.NaN]) {
      assert.throws(() => leaseUids(count, { dir }), (e: Error) => e instanceof RangeError && e.message.includes(String(count)));
    }
    assert.deepEqual(readdirSync(dir), []);
  });
});
