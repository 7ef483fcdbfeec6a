// The S3 store against a server that checks what it is sent — versitygw verifies SigV4, Content-MD5 and
// x-amz-checksum-crc32 and requires the CRC32 of every part of an upload created with one, as S3 does: the object
// store contract, CRC32 parts (no Content-MD5, so neither side MD5-hashes the bytes twice), a part damaged in
// transit refused by the server itself, resuming an interrupted CRC32 upload, and `rlpipe sync` killed at random
// points (at its k-th request or part, never at a time) and restarted against it.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { crc32 } from "node:zlib";
import { CreateBucketCommand, HeadObjectCommand, ListMultipartUploadsCommand } from "@aws-sdk/client-s3";
import { S3Store, crc32Base64, hashFile, planParts } from "../adapters/storage/s3.js";
import { type Gateway, isUploadPart, startGateway } from "./fakes/s3-gateway.js";
import { assertCommittedIntact, makeCheckpoints, run } from "./checkpoint-helpers.js";
import { ROOT } from "./helpers.js";
import { TEST_CREDENTIALS } from "./servers/moto.js";
import { type Versitygw, startVersitygw } from "./servers/versitygw.js";
import { contract, inTempDir } from "./storage-contract.js";

const MiB = 1024 * 1024;

/** S3's composite CRC32 of a multipart object: the CRC32 of the parts' binary CRC32s, then "-<parts>". */
function compositeCrc32(data: Buffer, partSize: number): string {
  const parts: Buffer[] = [];
  for (let off = 0; off < data.length; off += partSize) parts.push(Buffer.from(crc32Base64(data.subarray(off, off + partSize)), "base64"));
  const b = Buffer.alloc(4);
  b.writeUInt32BE(crc32(Buffer.concat(parts)));
  return `${b.toString("base64")}-${parts.length}`;
}

describe("storage on versitygw (a server that verifies checksums itself)", () => {
  let vgw: Versitygw;
  let gw: Gateway;
  before(async () => {
    vgw = await startVersitygw();
    gw = await startGateway(vgw.endpoint, TEST_CREDENTIALS.secretAccessKey, { preserveHost: true });
    gw.checkContentMd5 = false; // leave every check to versitygw
  });
  after(async () => { await gw.close(); await vgw.stop(); });

  async function bucket(name: string, endpoint = gw.endpoint): Promise<S3Store> {
    const store = new S3Store({ scheme: "s3", bucket: name, prefix: "runs", region: "us-east-1", endpoint, credentials: TEST_CREDENTIALS });
    await store.client.send(new CreateBucketCommand({ Bucket: name })).catch((e: { name?: string }) => { if (e.name !== "BucketAlreadyOwnedByYou") throw e; });
    return store;
  }
  const tmp = () => mkdtempSync(join(tmpdir(), "rlpipe-vgw-"));

  contract("s3:// (versitygw)", async () => ({ store: await bucket("contract", vgw.endpoint), dir: tmp() }));

  it("sends parts with only a CRC32, which the server verifies and keeps (composite checksum of the object)", async () => {
    await inTempDir(await bucket("crc"), async (store, dir) => {
      const data = randomBytes(3 * 8 * MiB + 4321);
      writeFileSync(join(dir, "f.bin"), data);
      const before = { ...gw.stats };
      const r = await store.putFile("f.bin", join(dir, "f.bin"), { partSizeBytes: 8 * MiB });
      assert.equal(store.partChecksum, "crc32", "no fall back: the server echoed every CRC32");
      assert.equal(gw.stats.uploadParts - before.uploadParts, 4);
      assert.equal(gw.stats.partsWithCrc32Only - before.partsWithCrc32Only, 4, "no Content-MD5 on any part");
      assert.equal(r.sha256, createHash("sha256").update(data).digest("hex"));
      const head = await store.client.send(new HeadObjectCommand({ Bucket: "crc", Key: "runs/f.bin", ChecksumMode: "ENABLED" }));
      assert.equal(head.ChecksumCRC32, compositeCrc32(data, 8 * MiB));
      assert.ok((await store.get("f.bin")).equals(data));
    });
  });

  it("a part damaged in transit is refused by the server (BadDigest on its CRC32) and sent again", async () => {
    await inTempDir(await bucket("damage"), async (store, dir) => {
      const data = randomBytes(3 * 8 * MiB);
      writeFileSync(join(dir, "f.bin"), data);
      const before = { ...gw.stats };
      gw.faults.push({ kind: "corrupt", match: isUploadPart });
      await store.putFile("f.bin", join(dir, "f.bin"), { partSizeBytes: 8 * MiB });
      assert.equal(gw.stats.corrupted - before.corrupted, 1);
      assert.equal(gw.stats.uploadParts - before.uploadParts, 4, "three parts plus one resend");
      assert.equal(store.partChecksum, "crc32");
      assert.ok((await store.get("f.bin")).equals(data), "the stored object is byte for byte the file");
    });
  });

  it("resumes an interrupted CRC32 upload without sending its parts again; the runs function's MD5-only caller does not reuse it", async () => {
    await inTempDir(await bucket("resume"), async (store, dir) => {
      const data = randomBytes(4 * 8 * MiB + 100);
      const path = join(dir, "f.bin");
      writeFileSync(path, data);
      const { partSize } = planParts(data.length, 8 * MiB);
      const { sha256, md5s, crc32s } = await hashFile(path, partSize);
      assert.equal(crc32s[1], crc32Base64(data.subarray(partSize, 2 * partSize)), "hashFile's CRC32 of a part");
      // An earlier attempt created a CRC32 upload, sent parts 1 and 3 and died.
      const session = await store.startMultipart("f.bin", { sha256, size: data.length, partSize, md5s, crc32s });
      assert.equal(session.crc32, true);
      await store.uploadPart("f.bin", session.uploadId, 1, data.subarray(0, partSize), { crc32: crc32s[0]! });
      await store.uploadPart("f.bin", session.uploadId, 3, data.subarray(2 * partSize, 3 * partSize), { crc32: crc32s[2]! });
      // A caller that can send only MD5s (presigned URLs for rlpipe_sync.py) gets a fresh upload: versitygw, like
      // S3, would refuse its parts without the CRC32 the old upload was created with.
      const md5Only = await store.startMultipart("g.bin", { sha256, size: data.length, partSize, md5s });
      assert.equal(md5Only.crc32, false);
      const before = gw.stats.uploadParts;
      const r = await store.putFile("f.bin", path, { partSizeBytes: 8 * MiB });
      assert.equal(r.partsReused, 2);
      assert.equal(r.partsUploaded, 3);
      assert.equal(gw.stats.uploadParts - before, 3, "only the missing parts were sent");
      assert.ok((await store.get("f.bin")).equals(data));
      const head = await store.client.send(new HeadObjectCommand({ Bucket: "resume", Key: "runs/f.bin", ChecksumMode: "ENABLED" }));
      assert.equal(head.ChecksumCRC32, compositeCrc32(data, partSize));
      const left = await store.client.send(new ListMultipartUploadsCommand({ Bucket: "resume", Prefix: "runs/f.bin" }));
      assert.equal((left.Uploads ?? []).length, 0, "no unfinished upload left behind");
    });
  });

  it("a file already stored (CRC32 parts, single PUT) is recognised by size and ETag, so a resumed step does not send it again", async () => {
    await inTempDir(await bucket("stored"), async (store, dir) => {
      const big = randomBytes(3 * 8 * MiB + 5);
      const small = randomBytes(1000);
      writeFileSync(join(dir, "big.bin"), big);
      writeFileSync(join(dir, "small.bin"), small);
      const put = await store.putFile("big.bin", join(dir, "big.bin"), { partSizeBytes: 8 * MiB });
      await store.putFile("small.bin", join(dir, "small.bin"));
      assert.deepEqual(await store.storedCopy("big.bin", join(dir, "big.bin"), { partSizeBytes: 8 * MiB }), { size: big.length, sha256: put.sha256 });
      const listed = (await store.list("")).find((o) => o.key === "small.bin");
      assert.equal((await store.storedCopy("small.bin", join(dir, "small.bin"), { listed }))?.sha256, createHash("sha256").update(small).digest("hex"));
      // Same size, other bytes: not a stored copy; nor is a key that does not exist.
      big[100]! ^= 1;
      writeFileSync(join(dir, "big.bin"), big);
      assert.equal(await store.storedCopy("big.bin", join(dir, "big.bin"), { partSizeBytes: 8 * MiB }), undefined);
      assert.equal(await store.storedCopy("nothing.bin", join(dir, "small.bin")), undefined);
    });
  });

  it("an MD5-only caller finding a CRC32 upload of its key aborts it and starts its own", async () => {
    await inTempDir(await bucket("mixed"), async (store, dir) => {
      const data = randomBytes(2 * 8 * MiB + 1);
      const path = join(dir, "f.bin");
      writeFileSync(path, data);
      const h = await hashFile(path, 8 * MiB);
      const crcUpload = await store.startMultipart("f.bin", { sha256: h.sha256, size: data.length, partSize: 8 * MiB, md5s: h.md5s, crc32s: h.crc32s });
      await store.uploadPart("f.bin", crcUpload.uploadId, 1, data.subarray(0, 8 * MiB), { crc32: h.crc32s[0]! });
      const own = await store.startMultipart("f.bin", { sha256: h.sha256, size: data.length, partSize: 8 * MiB, md5s: h.md5s });
      assert.notEqual(own.uploadId, crcUpload.uploadId);
      assert.equal(own.done.size, 0);
      for (let n = 1; n <= 3; n++) {
        await store.uploadPart("f.bin", own.uploadId, n, data.subarray((n - 1) * 8 * MiB, n * 8 * MiB), { md5: h.md5s[n - 1]! });
      }
      await store.completeMultipart("f.bin", own.uploadId, h.md5s);
      const left = await store.client.send(new ListMultipartUploadsCommand({ Bucket: "mixed", Prefix: "runs/f.bin" }));
      assert.equal((left.Uploads ?? []).length, 0, "the CRC32 upload was aborted");
      assert.ok((await store.get("f.bin")).equals(data));
    });
  });

  it("rlpipe sync SIGKILLed at random points (10 trials) and restarted: committed steps intact, CRC32 uploads resumed", { timeout: 300_000 }, async () => {
    const store = await bucket("kill");
    const work = tmp();
    const env = {
      PATH: process.env["PATH"] ?? "/usr/bin:/bin", RLPIPE_STORE: "s3://kill/runs", S3_ENDPOINT: gw.endpoint,
      AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey, AWS_REGION: "us-east-1",
    };
    const cli = join(ROOT, "dist", "bin", "rlpipe.js");
    const rnd = (() => { let a = 20261123; return () => { a = (a * 1103515245 + 12345) % 2 ** 31; return a / 2 ** 31; }; })();
    let resumed = 0;
    try {
      for (let trial = 0; trial < 10; trial++) {
        const name = `kill-${trial}`;
        const dir = join(work, name);
        makeCheckpoints(dir, [1, 2], 2, 25 * MiB);
        const args = [cli, "sync", name, "--watch", dir, "--once"];
        const bytesBefore = gw.stats.bytesIn;
        // The kill points are requests, not times (a busy machine must not move them): even trials die as their
        // k-th request of any kind reaches the server, odd trials as their k-th part does (one of the 8 parts the
        // two steps take), which always leaves a CRC32 upload half done.
        const killOnPart = trial % 2 === 1;
        const k = 1 + Math.floor(rnd() * (killOnPart ? 8 : 24));
        const mark = gw.connectionsAccepted();
        const child = spawn(process.execPath, args, { env, stdio: "ignore" });
        const exited = new Promise((r) => child.once("exit", r));
        let seen = 0;
        gw.onRequest = (_, req) => { if ((!killOnPart || isUploadPart(req)) && ++seen === k) child.kill("SIGKILL"); };
        await exited;
        gw.onRequest = undefined;
        await gw.settled(mark); // what reached the server before the kill is stored before anything is checked
        const killAt = killOnPart ? `its part ${k}` : `its request ${k}`;
        const visible = await assertCommittedIntact(store, name, dir);
        const left = await store.client.send(new ListMultipartUploadsCommand({ Bucket: "kill", Prefix: `runs/${name}/` }));
        const halfDone = (left.Uploads ?? []).some((u) => u.ChecksumAlgorithm === "CRC32");
        if (killOnPart) assert.ok(halfDone, `trial ${trial}: killed at ${killAt}, a CRC32 upload is left half done`);
        if (halfDone) resumed++;
        const again = await run(process.execPath, args, { env });
        assert.equal(again.status, 0, `trial ${trial} (killed at ${killAt}, ${visible.length} steps visible): ${again.stderr}`);
        assert.deepEqual(await assertCommittedIntact(store, name, dir), [1, 2], `trial ${trial}`);
        // Across the kill every file went up once, plus at most the parts that were in flight (8 × 8 MiB).
        const sent = gw.stats.bytesIn - bytesBefore;
        assert.ok(sent <= 2 * (25 * MiB + 8192) + 8 * 8 * MiB, `trial ${trial}: ${(sent / MiB).toFixed(1)} MiB sent for ${(2 * 25)} MiB of checkpoints`);
        const after = await store.client.send(new ListMultipartUploadsCommand({ Bucket: "kill", Prefix: `runs/${name}/` }));
        assert.equal((after.Uploads ?? []).length, 0, `trial ${trial}: no unfinished upload left`);
      }
      assert.ok(resumed >= 5, "every kill on a part left a CRC32 upload half done, which the restart finished");
    } finally {
      rmSync(work, { recursive: true, force: true });
      await store.close();
    }
  });
});
