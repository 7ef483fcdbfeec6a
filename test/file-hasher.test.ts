// The download hasher's worker: ranges hashed in the order sent, errors reported, abandoned jobs dropped.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { FileHasher } from "../adapters/storage/file-hasher.js";

describe("FileHasher (worker thread)", () => {
  const dir = mkdtempSync(join(tmpdir(), "rlpipe-hasher-"));
  const hasher = new FileHasher();
  after(async () => { await hasher.close(); rmSync(dir, { recursive: true, force: true }); });

  it("hashes the ranges it is given, in order, like one SHA-256 over the file; several files at once", async () => {
    const a = randomBytes(9 * 1024 * 1024 + 17);
    const b = randomBytes(1000);
    writeFileSync(join(dir, "a"), a);
    writeFileSync(join(dir, "b"), b);
    const ha = hasher.begin(join(dir, "a"));
    const hb = hasher.begin(join(dir, "b"));
    ha.add(0, 5 * 1024 * 1024 - 1);
    hb.add(0, 999);
    ha.add(5 * 1024 * 1024, a.length - 1);
    const [sa, sb] = await Promise.all([ha.finish(), hb.finish()]);
    assert.equal(sa, createHash("sha256").update(a).digest("hex"));
    assert.equal(sb, createHash("sha256").update(b).digest("hex"));
  });

  it("a range past the end of the file or a missing file is an error, not a wrong hash", async () => {
    writeFileSync(join(dir, "short"), Buffer.alloc(10));
    const h = hasher.begin(join(dir, "short"));
    h.add(0, 19);
    await assert.rejects(h.finish(), /file ends at 10, before 20/);
    await assert.rejects(hasher.begin(join(dir, "missing")).finish(), /ENOENT/);
  });

  it("an abandoned job is dropped; after close() a new worker serves the next", async () => {
    writeFileSync(join(dir, "c"), Buffer.from("abc"));
    const gone = hasher.begin(join(dir, "c"));
    gone.add(0, 2);
    gone.abandon();
    const empty = hasher.begin(join(dir, "c"));
    assert.equal(await empty.finish(), createHash("sha256").update("").digest("hex"), "no ranges: the hash of nothing");
    await hasher.close();
    const again = hasher.begin(join(dir, "c"));
    again.add(0, 2);
    assert.equal(await again.finish(), createHash("sha256").update("abc").digest("hex"));
  });

  it("a hash begun before close() fails when finished after it, instead of waiting forever", async () => {
    writeFileSync(join(dir, "d"), Buffer.from("abc"));
    const h = hasher.begin(join(dir, "d"));
    h.add(0, 2);
    await hasher.close();
    const outcome = await Promise.race([h.finish().then(() => "resolved", (e: Error) => e.message), new Promise((r) => setTimeout(() => r("still waiting"), 5000).unref())]);
    assert.match(String(outcome), /hashing worker was closed/);
  });
});
