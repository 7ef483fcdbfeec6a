// The object-store contract every backend passes: the file store, moto behind the strict gateway, versitygw.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { after, before, describe, it } from "node:test";
import type { ObjectStore, StorageError } from "../adapters/storage/store.js";

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

export function contract(name: string, make: () => Promise<{ store: ObjectStore; dir: string }>) {
  describe(`object store contract: ${name}`, () => {
    let store: ObjectStore;
    let dir: string;
    before(async () => ({ store, dir } = await make()));
    after(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }); });

    it("puts, heads, gets (with ranges), lists by prefix and deletes", async () => {
      await store.putBytes("a/one.txt", "hello world");
      await store.putBytes("a/b/two.bin", Buffer.from([1, 2, 3, 4, 5]));
      await store.putBytes("c/three.txt", "x");
      assert.equal((await store.head("a/one.txt"))?.size, 11);
      assert.equal(await store.head("a/missing"), undefined);
      assert.equal((await store.get("a/one.txt")).toString(), "hello world");
      assert.equal((await store.get("a/one.txt", { start: 6, end: 10 })).toString(), "world");
      assert.deepEqual((await store.list("a/")).map((o) => o.key).sort(), ["a/b/two.bin", "a/one.txt"]);
      await store.delete(["a/one.txt", "a/b/two.bin", "a/never-existed"]);
      assert.deepEqual((await store.list("a/")).map((o) => o.key), []);
      assert.deepEqual((await store.list("c/")).map((o) => o.key), ["c/three.txt"]);
      await assert.rejects(store.get("a/one.txt"), /no object a\/one\.txt/);
    });

    it("puts a multi-part file and downloads it byte for byte, verifying its SHA-256", async () => {
      const data = randomBytes(20 * MiB + 12345);
      const path = join(dir, "big.bin");
      writeFileSync(path, data);
      let sent = 0;
      const r = await store.putFile("files/big.bin", path, { partSizeBytes: 8 * MiB, concurrency: 3, onBytes: (n) => { sent += n; } });
      assert.equal(r.size, data.length);
      assert.equal(r.sha256, sha(data));
      assert.equal(sent, data.length, "progress counts every byte once");
      const back = join(dir, "back.bin");
      let received = 0;
      await store.download("files/big.bin", back, { sha256: r.sha256, onBytes: (n) => { received += n; } });
      assert.equal(received, data.length);
      assert.ok(readFileSync(back).equals(data));
      await assert.rejects(store.download("files/big.bin", join(dir, "bad.bin"), { sha256: "0".repeat(64) }), (e: StorageError) => {
        assert.match(e.message, /does not match/);
        assert.equal(e.exitCode, 1, "a file that does not verify");
        return true;
      });
      assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith("bad.bin")), [], "no partial or temporary file left");
    });

    it("knows a stored copy of a local file by size and checksum (an interrupted upload need not send it again)", async () => {
      const data = randomBytes(17 * MiB + 3);
      const path = join(dir, "copy.bin");
      writeFileSync(path, data);
      const r = await store.putFile("files/copy.bin", path, { partSizeBytes: 8 * MiB });
      assert.deepEqual(await store.storedCopy("files/copy.bin", path, { partSizeBytes: 8 * MiB }), { size: data.length, sha256: r.sha256 });
      writeFileSync(path, Buffer.concat([data.subarray(0, 100), Buffer.from([data[100]! ^ 1]), data.subarray(101)]));
      assert.equal(await store.storedCopy("files/copy.bin", path, { partSizeBytes: 8 * MiB }), undefined, "same size, other bytes");
      assert.equal(await store.storedCopy("files/none.bin", path), undefined);
    });

    it("puts a stream of unknown length", async () => {
      const data = randomBytes(3 * MiB);
      await store.putStream("stream/x.bin", Readable.from([data.subarray(0, MiB), data.subarray(MiB)]));
      assert.ok((await store.get("stream/x.bin")).equals(data));
    });
  });
}

/** Run `fn` with `store` and a fresh temporary directory; both are cleaned up afterwards, whatever happens. */
export async function inTempDir<S extends ObjectStore>(store: S, fn: (store: S, dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "rlpipe-store-test-"));
  try {
    await fn(store, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await store.close();
  }
}
