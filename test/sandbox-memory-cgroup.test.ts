// Memory cgroups (adapters/sandboxes/local/memory-cgroup.ts): where a server may make them on a pure cgroup v2 host,
// a v1 host, or none (fake trees), how a sandbox joins one, and, on this machine as root, that a limit holds over
// all of a group of processes (the kernel's OOM killer ends one) while the same processes under a larger limit live.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { detectMemoryCgroups, MemoryCgroup } from "../adapters/sandboxes/local/memory-cgroup.js";
import { waitFor } from "./serve-process.js";

const trees: string[] = [];
function fakeTree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "rlpipe-cgroup-"));
  trees.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe("memory cgroups: where a server may make them", () => {
  after(() => { for (const t of trees) rmSync(t, { recursive: true, force: true }); });
  const asRoot = process.getuid?.() === 0;

  it("a pure cgroup v2 host with the memory controller: the server's subtree, with memory enabled down to it", { skip: !asRoot && "needs root (a non-root server looks only in its own delegated cgroup)" }, () => {
    // The kernel makes a cgroup's files with the directory; a fake tree has them from the start.
    const root = fakeTree({ "cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": "", "rlpipe/cgroup.subtree_control": "", "rlpipe/uids-64000/cgroup.subtree_control": "" });
    const where = detectMemoryCgroups("rlpipe/uids-64000", { fsRoot: root });
    assert.deepEqual(where, { kind: "v2", parent: join(root, "rlpipe", "uids-64000") });
    for (const d of ["", "rlpipe", "rlpipe/uids-64000"]) assert.equal(readFileSync(join(root, d, "cgroup.subtree_control"), "utf8"), "+memory", `${d}/cgroup.subtree_control`);
    const noMemory = fakeTree({ "cgroup.controllers": "cpuset cpu io pids\n", "cgroup.subtree_control": "" });
    assert.equal(detectMemoryCgroups("rlpipe/x", { fsRoot: noMemory }).kind, "none");
  });

  it("a v1 host: under the memory hierarchy; no cgroup file system: none, and why", { skip: !asRoot && "v1 needs root" }, () => {
    const v1 = fakeTree({ "memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/rlpipe/x/memory.limit_in_bytes": "9223372036854771712\n" });
    const where = detectMemoryCgroups("rlpipe/x", { fsRoot: v1 });
    assert.equal(where.kind, "v1");
    const none = detectMemoryCgroups("rlpipe/x", { fsRoot: fakeTree({ "README": "" }) });
    assert.equal(none.kind, "none");
    assert.match((none as { why: string }).why, /no cgroup file system/);
  });

  it("a sandbox joins its cgroup before it starts, as root, then drops to its uid", () => {
    const cg = MemoryCgroup.create({ kind: "v1", parent: fakeTree({}) }, "u64001");
    const argv = cg.spawnArgs(["/usr/bin/bwrap", "--x"], { uid: 64001, gid: 64001 });
    assert.deepEqual(argv.slice(0, 4), ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', join(cg.path, "cgroup.procs")]);
    assert.deepEqual(argv.slice(4), ["/usr/bin/setpriv", "--reuid=64001", "--regid=64001", "--clear-groups", "--", "/usr/bin/bwrap", "--x"]);
  });
});

describe("memory cgroups on this machine", { timeout: 180_000 }, () => {
  const real = "/sys/fs/cgroup";
  const where = detectMemoryCgroups(`rlpipe-test-${process.pid}`, { fsRoot: real });
  const usable = where.kind !== "none";
  after(() => { if (where.kind !== "none") MemoryCgroup.removeParent(where); });

  /** Python forking `children` processes that each hold `mib` MiB; prints each "+" as a child holds its memory. */
  const hog = (children: number, mib: number) => `import os, time
print(os.getuid(), flush=True)
for i in range(${children}):
    if os.fork() == 0:
        b = bytearray(${mib} << 20)
        for k in range(0, len(b), 4096): b[k] = 1
        print("+", flush=True)
        time.sleep(120)
        os._exit(0)
time.sleep(120)`;

  for (const [label, limitMiB, children, survive] of [["a limit holds over all the processes: the OOM killer ends one", 256, 6, false], ["the control: the same processes under a limit large enough all live", 1024, 3, true]] as const) {
    it(label, { skip: !usable && `no memory cgroup here (${(where as { why?: string }).why})` }, async () => {
      if (where.kind === "none") return;
      const cg = MemoryCgroup.create(where, `case-${limitMiB}`);
      assert.equal(cg.setLimitBytes(limitMiB << 20), true);
      const before = cg.oomKills();
      const argv = cg.spawnArgs(["/usr/bin/python3", "-c", hog(children, 120)], process.getuid?.() === 0 ? { uid: 64990, gid: 64990 } : undefined);
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "inherit"], detached: true });
      let out = "";
      child.stdout.on("data", (d: Buffer) => { out += d; });
      try {
        if (survive) {
          await waitFor(`${children} children holding their memory`, () => out.split("+").length - 1 === children, 60_000);
          assert.ok(cg.usageBytes() > children * (110 << 20), `usage ${cg.usageBytes()}`);
          assert.equal(cg.oomKills(), before);
        } else {
          await waitFor("the OOM killer in the cgroup", () => cg.oomKills() > before, 60_000);
          assert.ok(out.split("+").length - 1 < children, "not every child got its memory");
          assert.ok(cg.usageBytes() <= (limitMiB << 20), `usage ${cg.usageBytes()} over the limit`);
        }
        if (process.getuid?.() === 0) assert.equal(out.split("\n")[0], "64990", "the processes run as the sandbox uid");
      } finally {
        try { process.kill(-child.pid!, "SIGKILL"); } catch { /* gone */ }
        await waitFor("the cgroup empty", () => !existsSync(join(cg.path, "cgroup.procs")) || readFileSync(join(cg.path, "cgroup.procs"), "utf8").trim() === "", 30_000);
        assert.equal(cg.remove(), true);
      }
    });
  }
});
