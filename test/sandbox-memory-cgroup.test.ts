// Memory cgroups (adapters/sandboxes/local/memory-cgroup.ts): where a server may make them (fake trees shaped like a
// pure cgroup v2 host, a hybrid v1 host, and a host with neither), what their files get, and, on this machine as root,
// that a limit holds over all of a program's processes together (the kernel's OOM killer ends some of them), that the
// same processes under a larger limit all live, and that v1 refuses a limit below what it cannot reclaim.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { detectMemoryCgroups, MemoryCgroup, SandboxCgroup } from "../adapters/sandboxes/local/memory-cgroup.js";
import { SandboxError } from "../adapters/sandboxes/sandbox.js";

const MIB = 1 << 20;
const asRoot = process.getuid?.() === 0;

/** Polls `check` every 50 ms, up to a bound generous enough for a loaded CI machine (a bound, not a timing assertion). */
async function waitFor(what: string, check: () => boolean, boundMs = 60_000): Promise<void> {
  const until = Date.now() + boundMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`gave up waiting ${boundMs / 1000} s for ${what}`);
    await sleep(50);
  }
}

const trees: string[] = [];
/** A temp dir holding `files` (plain files where the kernel would have made cgroup files). */
function fakeTree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "rlpipe-cgroup-"));
  trees.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, ".."), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}
const text = (p: string): string => readFileSync(p, "utf8");

describe("memory cgroups on fake trees", () => {
  after(() => { for (const t of trees) rmSync(t, { recursive: true, force: true }); });

  it("a pure cgroup v2 host with the memory controller: v2, memory enabled from the root (as root) or the server's own cgroup down to its subtree", () => {
    const own = "user.slice/rlpipe.scope";
    const root = fakeTree({
      "cgroup.controllers": "cpuset cpu io memory pids\n", "cgroup.subtree_control": "cpu\n",
      [`${own}/cgroup.controllers`]: "cpu memory pids\n", [`${own}/cgroup.subtree_control`]: "", [`${own}/cgroup.procs`]: "",
      "self-cgroup": `0::/${own}\n`,
    });
    const where = detectMemoryCgroups("rlpipe/fake-1", { fsRoot: root, selfCgroupFile: join(root, "self-cgroup") });
    const base = asRoot ? root : join(root, own);
    assert.deepEqual(where, { kind: "v2", parent: join(base, "rlpipe", "fake-1") });
    for (const d of ["", "rlpipe", "rlpipe/fake-1"]) assert.equal(text(join(base, d, "cgroup.subtree_control")), "+memory", `${d}/cgroup.subtree_control`);
    if (asRoot) assert.equal(text(join(root, own, "cgroup.subtree_control")), "", "a root server leaves its own cgroup alone");
    // Already enabled: not written again (a real kernel would accept it; the fake shows it was left as it was).
    writeFileSync(join(root, "cgroup.subtree_control"), "cpu memory\n");
    assert.deepEqual(detectMemoryCgroups("rlpipe/fake-2", { fsRoot: root, selfCgroupFile: join(root, "self-cgroup") }), { kind: "v2", parent: join(base, "rlpipe", "fake-2") });
    if (asRoot) assert.equal(text(join(root, "cgroup.subtree_control")), "cpu memory\n");
  });

  it("a hybrid host whose cgroup2 lacks memory (like this machine): v1 under the memory hierarchy, use_hierarchy set, cgroup2 untouched", () => {
    const root = fakeTree({
      "unified/cgroup.controllers": "hugetlb\n", "unified/cgroup.subtree_control": "",
      "memory/memory.limit_in_bytes": "9223372036854771712\n", "memory/rlpipe/memory.use_hierarchy": "0\n",
      "self-cgroup": "4:memory:/\n0::/\n",
    });
    const where = detectMemoryCgroups("rlpipe/fake-1", { fsRoot: root, selfCgroupFile: join(root, "self-cgroup") });
    assert.deepEqual(where, { kind: "v1", parent: join(root, "memory", "rlpipe", "fake-1") });
    assert.ok(existsSync(where.parent));
    assert.equal(text(join(root, "memory", "rlpipe", "memory.use_hierarchy")), "1");
    assert.equal(existsSync(join(root, "unified", "rlpipe")), false);
    assert.equal(text(join(root, "unified", "cgroup.subtree_control")), "");
  });

  it("neither: none, with a why that names what is missing", () => {
    const empty = fakeTree({ "self-cgroup": "0::/\n" });
    const none = detectMemoryCgroups("rlpipe/fake-1", { fsRoot: empty, selfCgroupFile: join(empty, "self-cgroup") });
    assert.equal(none.kind, "none");
    if (none.kind !== "none") return;
    assert.match(none.why, /no cgroup2 mount/);
    assert.match(none.why, /no cgroup v1 memory hierarchy/);
    const noMemory = fakeTree({ "cgroup.controllers": "cpu io pids\n", "self-cgroup": "0::/\n" });
    const why = detectMemoryCgroups("rlpipe/fake-1", { fsRoot: noMemory, selfCgroupFile: join(noMemory, "self-cgroup") });
    assert.equal(why.kind, "none");
    if (why.kind === "none") assert.match(why.why, /no memory controller in/);
    assert.equal(existsSync(join(noMemory, "rlpipe")), false, "nothing made where it is not usable");
  });

  it("a cgroup's files: limits (v1 memory and memsw, v2 max and swap), usage, OOM kills, how a sandbox joins it", () => {
    const v1 = MemoryCgroup.create({ kind: "v1", parent: fakeTree({}) }, "u64001");
    assert.equal(MemoryCgroup.create({ kind: "v1", parent: join(v1.path, "..") }, "u64001").path, v1.path, "an existing leaf is reused");
    const unlimited = "9223372036854771712\n";
    writeFileSync(join(v1.path, "memory.limit_in_bytes"), unlimited);
    writeFileSync(join(v1.path, "memory.memsw.limit_in_bytes"), unlimited);
    writeFileSync(join(v1.path, "memory.usage_in_bytes"), "12345\n");
    writeFileSync(join(v1.path, "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    assert.equal(v1.setLimitBytes(256 * MIB), true);
    assert.equal(text(join(v1.path, "memory.limit_in_bytes")), String(256 * MIB));
    assert.equal(text(join(v1.path, "memory.memsw.limit_in_bytes")), String(256 * MIB));
    assert.equal(v1.usageBytes(), 12345);
    assert.equal(v1.oomKills(), 3);

    const v2 = MemoryCgroup.create({ kind: "v2", parent: fakeTree({}) }, "u64002");
    writeFileSync(join(v2.path, "memory.swap.max"), "max\n");
    writeFileSync(join(v2.path, "memory.current"), "678\n");
    writeFileSync(join(v2.path, "memory.events"), "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\noom_group_kill 0\n");
    assert.equal(v2.setLimitBytes(512 * MIB), true);
    assert.equal(text(join(v2.path, "memory.max")), String(512 * MIB));
    assert.equal(text(join(v2.path, "memory.swap.max")), "0");
    assert.equal(v2.usageBytes(), 678);
    assert.equal(v2.oomKills(), 2);

    const procs = join(v1.path, "cgroup.procs");
    assert.deepEqual(v1.spawnArgs(["/usr/bin/bwrap", "--x"], { uid: 64001, gid: 64002 }),
      ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', procs, "/usr/bin/setpriv", "--reuid=64001", "--regid=64002", "--clear-groups", "--", "/usr/bin/bwrap", "--x"]);
    assert.deepEqual(v1.spawnArgs(["/usr/bin/bwrap"], undefined), ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', procs, "/usr/bin/bwrap"]);
    assert.throws(() => MemoryCgroup.create({ kind: "v1", parent: fakeTree({}) }, "../escape"), (e: unknown) => e instanceof SandboxError && e.code === "memory_cgroup_failed");
  });
  it("a sandbox's cgroups: a harness leaf it starts in, a program leaf with the program's limit to the byte, the sandbox's above both", () => {
    const unlimited = "9223372036854771712\n";
    const v1parent = fakeTree({});
    const v1 = SandboxCgroup.create({ kind: "v1", parent: v1parent }, "u64001-1");
    assert.equal(v1.harness.path, join(v1parent, "u64001-1", "harness"));
    assert.equal(v1.programProcsFile, join(v1parent, "u64001-1", "program", "cgroup.procs"));
    for (const cg of [v1.sandbox, v1.harness, v1.program]) assert.equal(text(join(cg.path, "memory.swappiness")), "0", `${cg.path}: never swapped out`);
    for (const cg of [v1.sandbox, v1.program]) {
      writeFileSync(join(cg.path, "memory.limit_in_bytes"), unlimited);
      writeFileSync(join(cg.path, "memory.memsw.limit_in_bytes"), unlimited);
    }
    assert.equal(v1.setLimitsBytes(512 * MIB, 600 * MIB), true);
    assert.equal(text(join(v1.program.path, "memory.limit_in_bytes")), String(512 * MIB));
    assert.equal(text(join(v1.sandbox.path, "memory.limit_in_bytes")), String(600 * MIB));
    assert.equal(text(join(v1.program.path, "memory.memsw.limit_in_bytes")), String(512 * MIB));
    // v1's plain keys are the cgroup's own pages; the sandbox's processes are in its leaves, so total_* count.
    writeFileSync(join(v1.sandbox.path, "memory.usage_in_bytes"), String(100 * MIB));
    writeFileSync(join(v1.sandbox.path, "memory.stat"), `cache 0\nactive_file 0\ninactive_file 0\ntotal_active_file ${30 * MIB}\ntotal_inactive_file ${10 * MIB}\n`);
    assert.equal(v1.unreclaimableBytes(), 60 * MIB);
    for (const [cg, n] of [[v1.sandbox, 1], [v1.harness, 0], [v1.program, 5]] as const) writeFileSync(join(cg.path, "memory.oom_control"), `oom_kill_disable 0\nunder_oom 0\noom_kill ${n}\n`);
    assert.equal(v1.oomKills(), 6);
    assert.deepEqual(v1.spawnArgs(["/usr/bin/bwrap"], undefined), ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', join(v1.harness.path, "cgroup.procs"), "/usr/bin/bwrap"]);

    const v2parent = fakeTree({});
    const v2 = SandboxCgroup.create({ kind: "v2", parent: v2parent }, "u64002-1");
    assert.equal(text(join(v2.sandbox.path, "cgroup.subtree_control")), "+memory", "the sandbox's cgroup hands memory down to its leaves");
    for (const cg of [v2.sandbox, v2.program]) writeFileSync(join(cg.path, "memory.max"), "max\n");
    assert.equal(v2.setLimitsBytes(256 * MIB, 300 * MIB), true);
    assert.equal(text(join(v2.program.path, "memory.max")), String(256 * MIB));
    assert.equal(text(join(v2.sandbox.path, "memory.max")), String(300 * MIB));
    writeFileSync(join(v2.sandbox.path, "memory.current"), String(50 * MIB));
    writeFileSync(join(v2.sandbox.path, "memory.stat"), `anon ${40 * MIB}\nfile ${10 * MIB}\nactive_file ${4 * MIB}\ninactive_file ${6 * MIB}\n`);
    assert.equal(v2.unreclaimableBytes(), 40 * MIB);

    // Removal takes the leaves first; a fake tree's files are not the kernel's, so empty it as the kernel would.
    for (const cg of [v2.program, v2.harness, v2.sandbox]) for (const f of ["memory.max", "memory.current", "memory.stat", "cgroup.subtree_control", "memory.swappiness"]) rmSync(join(cg.path, f), { force: true });
    assert.equal(v2.removeNow(), true);
    assert.equal(existsSync(v2.sandbox.path), false);
  });
});

describe("memory cgroups on this machine", { timeout: 240_000 }, () => {
  const SANDBOX_UID = 64990;

  /** Python: forks `children` processes that each allocate and touch `mib` MiB, say "ready <pid>" and sleep until
   * killed; the parent prints its uid, the children's pids, and "exit <pid> <signal>" as it reaps each. */
  const hog = (children: number, mib: number, moveFd?: number): string => `import os, time
print("uid", os.getuid(), flush=True)
kids = []
for i in range(${children}):
    pid = os.fork()
    if pid == 0:
        ${moveFd === undefined ? "pass" : `os.write(${moveFd}, b"0"); os.close(${moveFd})`}
        b = bytearray(${mib} << 20)
        for k in range(0, len(b), 4096): b[k] = 1
        print("ready", os.getpid(), flush=True)
        while True: time.sleep(3600)
    kids.append(pid)
print("forked", *kids, flush=True)
while kids:
    pid, status = os.wait()
    kids.remove(pid)
    print("exit", pid, os.WTERMSIG(status) if os.WIFSIGNALED(status) else -os.WEXITSTATUS(status), flush=True)`;

  /** The program's report so far: its uid, the children it forked, which got their memory, which died and how. */
  function report(out: string): { uid?: number; forked: number[]; ready: Set<number>; exits: Map<number, number> } {
    const r = { uid: undefined as number | undefined, forked: [] as number[], ready: new Set<number>(), exits: new Map<number, number>() };
    for (const line of out.split("\n")) {
      const [word, ...rest] = line.trim().split(" ");
      const n = rest.map(Number);
      if (word === "uid") r.uid = n[0];
      else if (word === "forked") r.forked = n;
      else if (word === "ready") r.ready.add(n[0]!);
      else if (word === "exit") r.exits.set(n[0]!, n[1]!);
    }
    return r;
  }

  /** Runs `body` with a fresh leaf of a fresh `rlpipe-test-*` subtree at `limit`, and the hog started in it; kills the
   * hog's process group and removes both cgroups afterwards, asserting they are gone. */
  async function withHog(limitBytes: number, children: number, mib: number,
    body: (cg: MemoryCgroup, kind: "v1" | "v2", out: () => string, before: number) => Promise<void>): Promise<void> {
    assert.ok(asRoot, "needs root (as npm test runs here): the test starts its processes as a sandbox uid");
    const where = detectMemoryCgroups(`rlpipe-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
    if (existsSync("/sys/fs/cgroup/memory/memory.limit_in_bytes")) assert.equal(where.kind, "v1", `this machine has a v1 memory hierarchy: ${JSON.stringify(where)}`);
    assert.notEqual(where.kind, "none", `no memory cgroup here: ${where.kind === "none" ? where.why : ""}`);
    if (where.kind === "none") return;
    let cg: MemoryCgroup | undefined;
    let pgid: number | undefined;
    try {
      cg = MemoryCgroup.create(where, "leaf");
      assert.equal(cg.setLimitBytes(limitBytes), true);
      const before = cg.oomKills();
      const argv = cg.spawnArgs(["/usr/bin/python3", "-c", hog(children, mib)], { uid: SANDBOX_UID, gid: SANDBOX_UID });
      const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], detached: true, env: {}, cwd: "/" });
      pgid = child.pid;
      let out = "";
      let err = "";
      child.stdout!.on("data", (d: Buffer) => { out += d; });
      child.stderr!.on("data", (d: Buffer) => { err += d; });
      await waitFor("the program to fork its children", () => report(out).forked.length === children || child.exitCode !== null);
      assert.equal(report(out).forked.length, children, `the program did not start: ${err}`);
      assert.equal(report(out).uid, SANDBOX_UID, "the program runs as the sandbox uid");
      await body(cg, where.kind, () => out, before);
    } finally {
      if (pgid !== undefined) try { process.kill(-pgid, "SIGKILL"); } catch { /* gone already */ }
      if (cg !== undefined) {
        const procs = join(cg.path, "cgroup.procs");
        await waitFor("the cgroup to empty", () => !existsSync(procs) || text(procs).trim() === "");
        assert.equal(cg.remove(), true, "the leaf is removed");
        assert.equal(existsSync(cg.path), false);
      }
      assert.equal(MemoryCgroup.removeParent(where), true, "the rlpipe-test-* subtree is removed");
      assert.equal(existsSync(where.parent), false);
    }
  }

  it("a 256 MiB limit holds over 6 children of 120 MiB: the OOM killer ends some in the cgroup, usage stays under the limit", async () => {
    const limit = 256 * MIB;
    await withHog(limit, 6, 120, async (cg, kind, out, before) => {
      await waitFor("the OOM killer in the cgroup", () => cg.oomKills() > before && report(out()).exits.size > 0);
      // Settled: each child either died or holds its memory.
      await waitFor("every child to be dead or holding its memory", () => { const r = report(out()); return r.forked.every((p) => r.exits.has(p) || r.ready.has(p)); });
      // A child the OOM killer ended may take a moment to exit: wait for it (if the limit did not hold, the children
      // over it live on and this gives up).
      const alive = () => { const r = report(out()); return r.forked.filter((p) => !r.exits.has(p)); };
      await waitFor(`at most 2 children of 120 MiB alive under ${limit}`, () => alive().length * 120 * MIB < limit);
      const r = report(out());
      for (const [pid, signal] of r.exits) assert.equal(signal, 9, `child ${pid} was killed (SIGKILL), not ended otherwise`);
      assert.equal(cg.oomKills() - before, r.exits.size, "each death was an OOM kill in this cgroup");
      assert.ok(cg.usageBytes() <= limit, `usage ${cg.usageBytes()} over the limit ${limit}`);
      const peak = join(cg.path, kind === "v1" ? "memory.max_usage_in_bytes" : "memory.peak");
      if (existsSync(peak)) assert.ok(Number(text(peak)) <= limit, `peak usage ${text(peak).trim()} over the limit ${limit}`);
    });
  });

  it("the control: 3 children of 120 MiB under 1 GiB all live, and the cgroup is charged for them", async () => {
    await withHog(1024 * MIB, 3, 120, async (cg, _kind, out, before) => {
      await waitFor("3 children holding their memory", () => report(out()).ready.size === 3 || report(out()).exits.size > 0);
      const r = report(out());
      assert.equal(r.exits.size, 0, `a child died: ${out()}`);
      for (const pid of r.forked) assert.doesNotThrow(() => process.kill(pid, 0), `child ${pid} alive`);
      assert.ok(cg.usageBytes() > 300 * MIB, `usage ${cg.usageBytes()} while 3 × 120 MiB are held`);
      assert.equal(cg.oomKills(), before);
    });
  });

  it("a limit below what the cgroup holds: v1 refuses it (EBUSY, false) and kills nothing; v2 takes it and OOM-kills", async () => {
    await withHog(512 * MIB, 1, 100, async (cg, kind, out, before) => {
      await waitFor("the child holding 100 MiB", () => report(out()).ready.size === 1);
      if (kind === "v1") {
        assert.equal(cg.setLimitBytes(16 * MIB), false);
        assert.equal(Number(text(join(cg.path, "memory.limit_in_bytes"))), 512 * MIB, "the limit is unchanged");
        assert.equal(cg.oomKills(), before);
        assert.ok(cg.usageBytes() > 100 * MIB, `usage ${cg.usageBytes()}: nothing was taken from the program`);
        assert.doesNotThrow(() => process.kill(report(out()).forked[0]!, 0), "the child lives");
        assert.equal(cg.setLimitBytes(1024 * MIB), true, "raising it still works");
        assert.equal(Number(text(join(cg.path, "memory.limit_in_bytes"))), 1024 * MIB);
      } else {
        assert.equal(cg.setLimitBytes(16 * MIB), true);
        await waitFor("the OOM killer in the cgroup", () => cg.oomKills() > before);
      }
    });
  });

  it("the harness moves a program's processes into the program leaf through a descriptor the server opened: there the program's limit holds; the harness leaf is bound only by the sandbox's", async () => {
    assert.ok(asRoot, "needs root (as npm test runs here): the test starts its processes as a sandbox uid");
    const where = detectMemoryCgroups(`rlpipe-test-${process.pid}-${Math.random().toString(36).slice(2, 8)}`);
    assert.notEqual(where.kind, "none", `no memory cgroup here: ${where.kind === "none" ? where.why : ""}`);
    if (where.kind === "none") return;
    const cg = SandboxCgroup.create(where, "u64990-1");
    /** Starts the hog in the harness leaf as the sandbox uid, its children moving into the program leaf or not. */
    const start = (move: boolean) => {
      const fd = openSync(cg.programProcsFile, "w");
      try {
        const argv = cg.spawnArgs(["/usr/bin/python3", "-c", hog(4, 120, move ? 3 : undefined)], { uid: SANDBOX_UID, gid: SANDBOX_UID });
        const child = spawn(argv[0]!, argv.slice(1), { stdio: ["ignore", "pipe", "pipe", fd], detached: true, env: {}, cwd: "/" });
        const io = { out: "", err: "", pgid: child.pid! };
        child.stdout!.on("data", (d: Buffer) => { io.out += d; });
        child.stderr!.on("data", (d: Buffer) => { io.err += d; });
        return io;
      } finally {
        closeSync(fd);
      }
    };
    const settled = (out: string) => { const r = report(out); return r.forked.length === 4 && r.forked.every((p) => r.exits.has(p) || r.ready.has(p)); };
    try {
      // 4 × 120 MiB: over the program's 256 MiB, well under the sandbox's 1 GiB.
      assert.equal(cg.setLimitsBytes(256 * MIB, 1024 * MIB), true);
      const control = start(false);
      try {
        await waitFor("the control's children to hold their memory", () => settled(control.out) || control.err !== "");
        const r = report(control.out);
        assert.equal(r.exits.size, 0, `a child that stayed in the harness leaf died: ${control.out} ${control.err}`);
        assert.equal(r.ready.size, 4);
      } finally {
        try { process.kill(-control.pgid, "SIGKILL"); } catch { /* gone */ }
      }
      await waitFor("the harness leaf to empty", () => text(join(cg.harness.path, "cgroup.procs")).trim() === "");
      const before = cg.program.oomKills();
      const moved = start(true);
      try {
        await waitFor("the moved children to die or hold their memory", () => settled(moved.out) || moved.err !== "");
        assert.equal(report(moved.out).uid, SANDBOX_UID);
        // An OOM victim may take a moment to exit: wait for it (over the limit, the children live on and this gives up).
        const living = () => { const r = report(moved.out); return r.forked.filter((p) => !r.exits.has(p)); };
        await waitFor("at most 2 children of 120 MiB alive in a 256 MiB program leaf", () => living().length * 120 * MIB < 256 * MIB);
        const alive = living();
        assert.ok(cg.program.oomKills() > before, "the kills were the program leaf's");
        for (const pid of alive) assert.match(text(`/proc/${pid}/cgroup`), /\/program\n/, `child ${pid} is in the program leaf`);
      } finally {
        try { process.kill(-moved.pgid, "SIGKILL"); } catch { /* gone */ }
      }
    } finally {
      await waitFor("the cgroups to empty", () => [cg.harness, cg.program].every((c) => !existsSync(join(c.path, "cgroup.procs")) || text(join(c.path, "cgroup.procs")).trim() === ""));
      assert.equal(cg.remove(), true, "the sandbox's cgroups are removed");
      assert.equal(MemoryCgroup.removeParent(where), true);
    }
  });
});
