// Host-wide uid leases (adapters/sandboxes/local/uid-lease.ts): leases never overlap, in one process or across
// processes leasing at once; a dead owner's lease (or one whose pid was reused) is taken over, a live one never;
// an exiting process gives its leases back; a range with no room is a clear error. Each test has a lease dir of its own.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { leaseUids } from "../adapters/sandboxes/local/uid-lease.js";
import { ROOT } from "./helpers.js";

const dirs: string[] = [];
const leaseDir = () => { const d = mkdtempSync(join(tmpdir(), "rlpipe-uid-lease-")); dirs.push(d); return d; };
const overlap = (a: { first: number; count: number }, b: { first: number; count: number }) => a.first < b.first + b.count && b.first < a.first + a.count;

/** A pid no process has. */
function deadPid(): number {
  for (let pid = 4_000_000; ; pid--) {
    try { process.kill(pid, 0); } catch (e) { if ((e as NodeJS.ErrnoException).code === "ESRCH") return pid; }
  }
}

describe("uid leases", () => {
  after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

  it("two leases in one process do not overlap and stay in range; a released range is leased again", () => {
    const dir = leaseDir();
    const a = leaseUids(40, { dir });
    const b = leaseUids(20, { dir });
    assert.ok(!overlap(a, b), `${a.first}+${a.count} / ${b.first}+${b.count}`);
    for (const l of [a, b]) assert.ok(l.first >= 64000 && l.first + l.count - 1 <= 65533);
    a.release();
    a.release();
    const c = leaseUids(40, { dir });
    assert.equal(c.first, a.first, "the released range is free again");
    b.release();
    c.release();
    assert.deepEqual(readdirSync(dir), []);
  });

  it("processes leasing at once get disjoint ranges, and an exiting process gives its leases back", async () => {
    const dir = leaseDir();
    const module = join(ROOT, "dist", "adapters", "sandboxes", "local", "uid-lease.js");
    const script = `const { leaseUids } = await import(${JSON.stringify(module)});
const l = leaseUids(40, { dir: ${JSON.stringify(dir)} });
console.log(JSON.stringify({ first: l.first, count: l.count }));
process.stdin.resume(); process.stdin.on("end", () => process.exit(0));`;
    const children = Array.from({ length: 6 }, () => spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["pipe", "pipe", "inherit"] }));
    const leases = await Promise.all(children.map((c) => new Promise<{ first: number; count: number }>((resolve, reject) => {
      let out = "";
      c.stdout.on("data", (d: Buffer) => { out += d; if (out.includes("\n")) resolve(JSON.parse(out)); });
      c.once("exit", () => reject(new Error("a child exited before it leased")));
    })));
    for (let i = 0; i < leases.length; i++) for (let j = i + 1; j < leases.length; j++) assert.ok(!overlap(leases[i]!, leases[j]!), JSON.stringify(leases));
    await Promise.all(children.map((c) => new Promise<void>((r) => { c.once("exit", () => r()); c.stdin.end(); })));
    assert.deepEqual(readdirSync(dir).filter((f) => !f.startsWith(".")), [], "every child gave its granules back on exit");
  });

  it("takes over a lease whose owner is dead or whose pid was reused, never one of a live owner", async () => {
    const dir = leaseDir();
    const own = (granule: number, owner: object) => { mkdirSync(join(dir, String(granule))); writeFileSync(join(dir, String(granule), "owner"), JSON.stringify(owner)); };
    own(64000, { pid: deadPid(), startTime: "1" });
    own(64016, { pid: process.pid, startTime: "not-this-process" });
    const l = leaseUids(32, { dir });
    assert.equal(l.first, 64000, "both stale granules were taken over");
    l.release();
    const live = spawn("sleep", ["60"]);
    try {
      const stat = (await import("node:fs")).readFileSync(`/proc/${live.pid}/stat`, "utf8");
      own(64000, { pid: live.pid, startTime: stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] });
      const m = leaseUids(16, { dir });
      assert.equal(m.first, 64016, "a live owner's granule is skipped");
      m.release();
    } finally {
      live.kill();
    }
  });

  it("a range with no room is a clear error, and a count that is not a positive integer is refused", () => {
    const dir = leaseDir();
    const a = leaseUids(40, { dir, firstUid: 64000, lastUid: 64047 });
    assert.throws(() => leaseUids(20, { dir, firstUid: 64000, lastUid: 64047 }), (e: Error & { code?: string }) => {
      assert.equal(e.code, "sandbox_uids_exhausted");
      assert.match(e.message, /no 20 consecutive sandbox uids are free in 64000-64047/);
      return true;
    });
    a.release();
    assert.throws(() => leaseUids(0), RangeError);
    assert.throws(() => leaseUids(1.5), RangeError);
  });
});
