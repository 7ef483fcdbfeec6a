// Debian roots for toolchains newer than the host's C library (adapters/sandboxes/toolchains/debian-root.ts): which roots count
// as built, what `rlpipe sandbox setup --languages swift` would do, and a root's sandbox built from an explicit root.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { DEBIAN_ROOTS, detectRoots, rootDir, rootSpecFor } from "../adapters/sandboxes/toolchains/debian-root.js";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { ROOT } from "./helpers.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

describe("Debian roots", () => {
  it("each kind of sandbox has uids of its own: the warm pool's, then N per root's; too many slots for the range is a clear error", { timeout: 120_000 }, async () => {
    const roots = detectRoots();
    await assert.rejects(LocalSandbox.create({ concurrency: 400 }), (e: Error & { code?: string; hint?: string }) => {
      assert.equal(e.code, "concurrency_too_high");
      const most = Math.floor((65534 - 64000 - 2) / (3 + roots.length));
      assert.match(e.message, new RegExp(`--concurrency 400 needs more sandbox uids than there are from 64000 to 65533 \\(at most ${most} here\\)`));
      return true;
    });
    // A lease directory of its own: another rlpipe serve on this host (a second test file, a user's) would move
    // this server's uids up by its lease; the layout within the lease is what is checked.
    const leaseDir = mkdtempSync(join(tmpdir(), "rlpipe-uid-leases-"));
    const sb = await LocalSandbox.create({ concurrency: 2, uidLeaseDir: leaseDir });
    try {
      const uid: Record<string, string> = { python: "import os\nprint(os.getuid())", swift: "import Glibc\nprint(getuid())", julia: "println(ccall(:getuid, UInt32, ()))" };
      const runs = await Promise.all(["python", "swift", "julia", "python", "swift", "julia"].map((language) => sb.run({ language, code: uid[language]!, limits: { runTimeoutMs: 20_000, compileTimeoutMs: 60_000 } })));
      const seen = runs.map((r, i) => { assert.equal(r.status, "ok", `${i}: ${r.stderr}`); return Number(r.stdout.trim()); });
      // N = 2: warm zygotes 64002-64007 (twice pool and spare), then the trixie root's 64008-64009, bullseye's 64010-64011.
      const order = roots.map((r) => r.spec.suite);
      const inRange = (u: number, from: number) => u >= from && u < from + 2;
      assert.ok(seen.filter((_, i) => i % 3 === 0).every((u) => u >= 64002 && u < 64008), `python ${seen}`);
      assert.ok(seen.filter((_, i) => i % 3 === 1).every((u) => inRange(u, 64008 + 2 * order.indexOf("trixie"))), `swift ${seen}`);
      assert.ok(seen.filter((_, i) => i % 3 === 2).every((u) => inRange(u, 64008 + 2 * order.indexOf("bullseye"))), `julia ${seen}`);
    } finally {
      await sb.close();
      rmSync(leaseDir, { recursive: true, force: true });
    }
  });

  const base = mkdtempSync(join(tmpdir(), "rlpipe-roots-"));
  after(() => rmSync(base, { recursive: true, force: true }));

  it("counts a root as built only when its marker names the current package list and it has the harness's python3", () => {
    const spec = rootSpecFor("swift")!;
    assert.equal(spec.suite, "trixie");
    assert.equal(rootSpecFor("cpp"), undefined);
    const dir = rootDir(spec, base);
    assert.deepEqual(detectRoots(base), []);
    mkdirSync(join(dir, "usr", "bin"), { recursive: true });
    writeFileSync(join(dir, ".rlpipe-root"), "trixie swiftlang\n"); // an older list
    writeFileSync(join(dir, "usr", "bin", "python3"), "");
    assert.deepEqual(detectRoots(base), []);
    writeFileSync(join(dir, ".rlpipe-root"), `trixie ${[...spec.packages].sort().join(" ")}\n`);
    assert.deepEqual(detectRoots(base).map((r) => [r.dir, r.spec.suite]), [[dir, "trixie"]]);
  });

  it("rlpipe sandbox setup --languages swift --dry-run says which root it would build, and where", () => {
    const empty = mkdtempSync(join(base, "empty-"));
    const r = spawnSync(process.execPath, [CLI, "sandbox", "setup", "--languages", "swift", "--dry-run", "--json"], {
      encoding: "utf8", env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: ROOT, RLPIPE_SANDBOX_ROOTS: empty },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`would build the Debian trixie root at ${join(empty, "debian-trixie")} \\(libc6-dev, python3, swiftlang\\)`));
    const doc = JSON.parse(r.stdout) as { languages: string[]; unavailable: string[] };
    assert.ok(!doc.languages.includes("swift"));
    assert.deepEqual(doc.unavailable, ["swift"]);
  });

  it("a root's sandbox runs its own python3 (the harness) and its toolchains, under /usr of the root", { timeout: 120_000 }, async () => {
    const built = detectRoots();
    assert.deepEqual(built.map((r) => r.spec.suite), DEBIAN_ROOTS.map((r) => r.suite), "npm test's setup builds every root (rlpipe sandbox setup --languages swift,julia)");
    // Each root's own Python runs the harness: Debian 13's 3.13 beside swiftc, Debian 11's 3.9 beside julia.
    const expected: Record<string, string> = { trixie: "3.13 True", bullseye: "3.9 True" };
    for (const { dir, spec } of built) {
      const sb = await LocalSandbox.create({ root: dir, toolchains: spec.toolchains, isolation: "per-program", concurrency: 1 });
      try {
        assert.deepEqual((await sb.capabilities()).languages, ["python", ...spec.toolchains.map((t) => t.language)]);
        const tool = spec.toolchains[0]!.compile?.[0] ?? spec.toolchains[0]!.run[0]!;
        const py = await sb.run({ language: "python", code: `import sys, os\nprint("%d.%d" % sys.version_info[:2], os.path.exists(${JSON.stringify(tool)}))\nprint(os.listdir('/mnt'))`, limits: { runTimeoutMs: 10_000 } });
        assert.equal(py.stdout, `${expected[spec.suite]}\n[]\n`, py.stderr);
      } finally {
        await sb.close();
      }
    }
  });
});
