// Object-store contract, run against the file store and against a real S3 server (moto on 127.0.0.1) behind a
// strict gateway (SigV4, Content-MD5, expiry), plus multipart resume, corruption in transit, the fall back from
// CRC32 to MD5 part checksums on a server that ignores CRC32, and OBS signing. storage-versitygw.test.ts runs the
// same contract against a server that verifies CRC32 and Content-MD5 itself.
import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { type IncomingMessage, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { FsStore } from "../adapters/storage/fs.js";
import { S3Store, hashFile, planParts, resolveS3Options } from "../adapters/storage/s3.js";
import { StorageError, parseStoreUri } from "../adapters/storage/store.js";
import { type Gateway, isUploadPart, startGateway } from "./fakes/s3-gateway.js";
import { verifySigV4 } from "./fakes/sigv4.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";
import { contract, inTempDir } from "./storage-contract.js";

const MiB = 1024 * 1024;
/** Retries as in production, but quick (no test asserts a time). */
const FAST_RETRY = { baseDelayMs: 20, maxDelayMs: 200 };

describe("storage", () => {
  let moto: Moto;
  let gw: Gateway;
  before(async () => {
    moto = await startMoto();
    gw = await startGateway(moto.endpoint, TEST_CREDENTIALS.secretAccessKey);
  });
  after(async () => { await gw.close(); await moto.stop(); });

  // moto ignores x-amz-checksum-crc32, so these stores use Content-MD5 (the gateway checks it); the fall back
  // from the CRC32 default is tested on its own below.
  const s3 = (bucket: string, extra: Partial<ConstructorParameters<typeof S3Store>[0]> = {}) =>
    new S3Store({ scheme: "s3", bucket, prefix: "runs", region: "us-east-1", endpoint: gw.endpoint, credentials: TEST_CREDENTIALS, partChecksum: "md5", retry: FAST_RETRY, ...extra });
  async function bucket(name: string): Promise<S3Store> {
    const store = s3(name);
    await store.client.send(new CreateBucketCommand({ Bucket: name }));
    return store;
  }

  contract("file://", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-fs-"));
    return { store: new FsStore(join(dir, "store")), dir };
  });
  contract("s3:// (moto behind a strict gateway)", async () => ({ store: await bucket("contract"), dir: mkdtempSync(join(tmpdir(), "rlpipe-s3-")) }));

  it("resumes an interrupted multipart upload without sending completed parts again", async () => {
    await inTempDir(await bucket("resume"), async (store, dir) => {
      const data = randomBytes(4 * 8 * MiB + 100);
      const path = join(dir, "f.bin");
      writeFileSync(path, data);
      const { partSize } = planParts(data.length, 8 * MiB);
      const { sha256, md5s } = await hashFile(path, partSize);
      // An earlier attempt uploaded parts 1 and 3 and then died.
      const session = await store.startMultipart("f.bin", { sha256, size: data.length, partSize, md5s });
      await store.uploadPart("f.bin", session.uploadId, 1, data.subarray(0, partSize), { md5: md5s[0]! });
      await store.uploadPart("f.bin", session.uploadId, 3, data.subarray(2 * partSize, 3 * partSize), { md5: md5s[2]! });
      const before = gw.stats.uploadParts;
      const r = await store.putFile("f.bin", path, { partSizeBytes: 8 * MiB });
      assert.equal(r.partsReused, 2);
      assert.equal(r.partsUploaded, 3);
      assert.equal(gw.stats.uploadParts - before, 3, "only the missing parts were sent");
      assert.ok((await store.get("f.bin")).equals(data));
    });
  });

  it("an upload of different content for the key is aborted, not reused", async () => {
    await inTempDir(await bucket("stale"), async (store, dir) => {
      const old = randomBytes(2 * 8 * MiB + 1);
      const path = join(dir, "f.bin");
      writeFileSync(path, old);
      const p = await hashFile(path, 8 * MiB);
      const s = await store.startMultipart("f.bin", { sha256: p.sha256, size: old.length, partSize: 8 * MiB, md5s: p.md5s });
      await store.uploadPart("f.bin", s.uploadId, 1, old.subarray(0, 8 * MiB), { md5: p.md5s[0]! });
      const fresh = randomBytes(old.length);
      writeFileSync(path, fresh);
      const r = await store.putFile("f.bin", path, { partSizeBytes: 8 * MiB });
      assert.equal(r.partsReused, 0);
      assert.ok((await store.get("f.bin")).equals(fresh));
    });
  });

  it("a part corrupted in transit is rejected and sent again (server checks Content-MD5, or only the ETag tells)", async () => {
    const store = await bucket("corrupt");
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-corrupt-"));
    try {
      const data = randomBytes(3 * 8 * MiB);
      const path = join(dir, "f.bin");
      writeFileSync(path, data);
      for (const checkMd5 of [true, false]) {
        gw.checkContentMd5 = checkMd5;
        const before = { ...gw.stats };
        gw.faults.push({ kind: "corrupt", match: isUploadPart });
        await store.putFile(`f-${checkMd5}.bin`, path, { partSizeBytes: 8 * MiB });
        assert.equal(gw.stats.corrupted - before.corrupted, 1);
        if (checkMd5) assert.equal(gw.stats.badDigest - before.badDigest, 1, "the server refused the damaged part");
        assert.equal(gw.stats.uploadParts - before.uploadParts, 4, "three parts plus one resend");
        assert.ok((await store.get(`f-${checkMd5}.bin`)).equals(data), "the stored object is byte for byte the file");
      }
    } finally {
      gw.checkContentMd5 = true;
      rmSync(dir, { recursive: true, force: true });
      await store.close();
    }
  });

  it("falls back from CRC32 to Content-MD5 parts on a server that does not verify CRC32 (moto)", async () => {
    const store = s3("fallback", { partChecksum: "crc32" });
    await store.client.send(new CreateBucketCommand({ Bucket: "fallback" }));
    await inTempDir(store, async (_, dir) => {
      const data = randomBytes(3 * 8 * MiB + 7);
      const path = join(dir, "f.bin");
      writeFileSync(path, data);
      const before = { ...gw.stats };
      gw.faults.push({ kind: "corrupt", match: (r) => isUploadPart(r) && r.headers["content-md5"] !== undefined });
      const r = await store.putFile("f.bin", path, { partSizeBytes: 8 * MiB, concurrency: 1 });
      assert.equal(store.partChecksum, "md5", "the store switched to MD5 for good");
      // Part 1 went with only a CRC32 and was not echoed, so it went again with Content-MD5; parts 2–4 with MD5 (and
      // the CRC32 the upload was created with). The one part damaged in transit after the switch was refused.
      assert.equal(gw.stats.partsWithCrc32Only - before.partsWithCrc32Only, 1);
      assert.equal(gw.stats.badDigest - before.badDigest, 1);
      assert.equal(gw.stats.uploadParts - before.uploadParts, 6, "four parts, the unverified first one again, one resend after damage");
      assert.equal(r.sha256, createHash("sha256").update(data).digest("hex"));
      assert.ok((await store.get("f.bin")).equals(data));
    });
  });

  it("a server refusing CRC32 uploads (400 on CreateMultipartUpload with a checksum algorithm) gets a plain one, then MD5 parts", async () => {
    const store = s3("refuse-crc", { partChecksum: "crc32" });
    await store.client.send(new CreateBucketCommand({ Bucket: "refuse-crc" }));
    await inTempDir(store, async (_, dir) => {
      const data = randomBytes(2 * 8 * MiB + 3);
      const path = join(dir, "f.bin");
      writeFileSync(path, data);
      const before = { ...gw.stats };
      const createWithChecksum = (r: IncomingMessage) => r.method === "POST" && /[?&]uploads/.test(r.url ?? "") && r.headers["x-amz-checksum-algorithm"] !== undefined;
      gw.faults.push({ kind: "status", status: 400, code: "InvalidArgument", match: createWithChecksum });
      await store.putFile("f.bin", path, { partSizeBytes: 8 * MiB });
      assert.equal(gw.faults.length, 0, "the CRC32 create was refused once");
      assert.equal(store.partChecksum, "md5");
      assert.equal(gw.stats.partsWithCrc32Only - before.partsWithCrc32Only, 0);
      assert.equal(gw.stats.uploadParts - before.uploadParts, 3);
      assert.ok((await store.get("f.bin")).equals(data));
    });
  });

  it("a download cut off mid-stream fetches that range again; one that keeps failing leaves no file behind", async () => {
    await bucket("cut");
    await inTempDir(s3("cut", { retry: { ...FAST_RETRY, maxAttempts: 4 } }), async (store, dir) => {
      const data = randomBytes(40 * MiB + 5); // three 16 MiB ranges
      writeFileSync(join(dir, "f.bin"), data);
      const put = await store.putFile("f.bin", join(dir, "f.bin"), { partSizeBytes: 8 * MiB });
      const rangeGet = (start: number) => (r: IncomingMessage) => r.method === "GET" && (r.headers.range ?? "").startsWith(`bytes=${start}-`);
      const before = gw.stats.cuts;
      gw.faults.push({ kind: "cut", match: rangeGet(16 * MiB) }, { kind: "cut", match: rangeGet(0) });
      const r = await store.download("f.bin", join(dir, "back.bin"), { sha256: put.sha256 });
      assert.equal(gw.stats.cuts - before, 2);
      assert.equal(r.sha256, put.sha256);
      assert.ok(readFileSync(join(dir, "back.bin")).equals(data));
      // Range 2 is cut on every attempt: the download fails, and neither the file nor its temporary stays.
      for (let i = 0; i < 4; i++) gw.faults.push({ kind: "cut", match: rangeGet(32 * MiB) });
      await assert.rejects(store.download("f.bin", join(dir, "again.bin")), (e: StorageError) => {
        assert.match(e.message, /^GET s3:\/\/cut\/runs\/f\.bin bytes 33554432-41943044: the connection dropped .*gave up after 4 attempts/);
        assert.equal(e.exitCode, 3);
        return true;
      });
      assert.equal(gw.faults.length, 0);
      assert.deepEqual(readdirSync(dir).sort(), ["back.bin", "f.bin"]);
    });
  });

  it("survives dropped and delayed connections", async () => {
    await inTempDir(await bucket("flaky"), async (store, dir) => {
      const data = randomBytes(4 * 8 * MiB);
      const path = join(dir, "f.bin");
      writeFileSync(path, data);
      gw.faults.push({ kind: "reset", match: isUploadPart }, { kind: "delay", ms: 800, match: isUploadPart }, { kind: "status", status: 503, code: "SlowDown", match: isUploadPart }, { kind: "reset" });
      await store.putFile("f.bin", path, { partSizeBytes: 8 * MiB });
      assert.ok((await store.get("f.bin")).equals(data));
      assert.equal(gw.faults.length, 0);
    });
  });

  it("rejects a wrong secret (the gateway verifies SigV4)", async () => {
    const bad = s3("contract", { credentials: { accessKeyId: TEST_CREDENTIALS.accessKeyId, secretAccessKey: "wrong" } });
    await assert.rejects(bad.putBytes("x", "y"), /SignatureDoesNotMatch|signature/i);
    await bad.close();
  });
});

describe("storage: provider configuration", () => {
  it("parses store URIs", () => {
    assert.deepEqual(parseStoreUri("s3://bkt/a/b/"), { scheme: "s3", bucket: "bkt", prefix: "a/b" });
    assert.deepEqual(parseStoreUri("cos://ckpt-1250000000"), { scheme: "cos", bucket: "ckpt-1250000000", prefix: "" });
    assert.deepEqual(parseStoreUri("/data/store/"), { scheme: "file", bucket: "/data/store", prefix: "" });
    assert.throws(() => parseStoreUri("gs://x/y"), /unsupported store URI/);
    assert.throws(() => parseStoreUri("s3://Bad_Bucket/x"), /invalid bucket name/);
    assert.throws(() => parseStoreUri("relative/dir"), /absolute path/);
  });

  it("derives endpoint, region and credentials per provider; plain http only for loopback", () => {
    const obs = resolveS3Options(parseStoreUri("obs://ckpt/run"), { OBS_REGION: "cn-southwest-2", HUAWEICLOUD_SDK_AK: "ak", HUAWEICLOUD_SDK_SK: "sk" });
    assert.equal(obs.endpoint, "https://obs.cn-southwest-2.myhuaweicloud.com");
    assert.deepEqual(obs.credentials, { accessKeyId: "ak", secretAccessKey: "sk" });
    const cos = resolveS3Options(parseStoreUri("cos://ckpt-125/run"), { COS_REGION: "ap-shanghai", TENCENTCLOUD_SECRET_ID: "id", TENCENTCLOUD_SECRET_KEY: "key" });
    assert.equal(cos.endpoint, "https://cos.ap-shanghai.myqcloud.com");
    assert.throws(() => resolveS3Options(parseStoreUri("obs://ckpt"), {}), /obs:\/\/ needs a region/);
    assert.throws(() => resolveS3Options(parseStoreUri("s3://ckpt"), { S3_ENDPOINT: "http://10.0.0.1:9000" }), /plain http is allowed only for loopback/);
    assert.throws(() => resolveS3Options(parseStoreUri("s3://ckpt"), { AWS_ACCESS_KEY_ID: "x" }), /need both/);
    assert.equal(resolveS3Options(parseStoreUri("s3://ckpt"), { S3_ENDPOINT: "http://127.0.0.1:9000" }).endpoint, "http://127.0.0.1:9000");
  });

  it("part checksums: CRC32 for s3://, Content-MD5 for OBS and COS (all they take), RLPIPE_PART_CHECKSUM overrides", () => {
    assert.equal(resolveS3Options(parseStoreUri("s3://ckpt"), {}).partChecksum, "crc32");
    assert.equal(resolveS3Options(parseStoreUri("obs://ckpt"), { OBS_REGION: "cn-southwest-2", HUAWEICLOUD_SDK_AK: "ak", HUAWEICLOUD_SDK_SK: "sk" }).partChecksum, "md5");
    assert.equal(resolveS3Options(parseStoreUri("cos://ckpt-125"), { COS_REGION: "ap-shanghai", COS_SECRET_ID: "id", COS_SECRET_KEY: "key" }).partChecksum, "md5");
    assert.equal(resolveS3Options(parseStoreUri("s3://ckpt"), { RLPIPE_PART_CHECKSUM: "md5" }).partChecksum, "md5");
    assert.throws(() => resolveS3Options(parseStoreUri("s3://ckpt"), { RLPIPE_PART_CHECKSUM: "sha1" }), /RLPIPE_PART_CHECKSUM must be md5 or crc32/);
  });

  it("OBS requests are SigV4-signed with UNSIGNED-PAYLOAD (what OBS accepts)", async () => {
    const seen: { payload?: string; ok: boolean }[] = [];
    const server = createServer(async (req, res) => {
      for await (const _ of req) { /* drain */ }
      const v = verifySigV4({ method: req.method ?? "GET", url: req.url ?? "/", headers: req.headers }, "obs-secret");
      seen.push({ ok: v.ok, ...(v.payloadHash === undefined ? {} : { payload: v.payloadHash }) });
      res.writeHead(v.ok ? 200 : 403, { etag: `"${createHash("md5").update("obs").digest("hex")}"` });
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const store = new S3Store({ scheme: "obs", bucket: "ckpt", prefix: "", region: "cn-southwest-2", endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, credentials: { accessKeyId: "obs-ak", secretAccessKey: "obs-secret" } });
    try {
      await store.putBytes("k", "obs");
      assert.deepEqual(seen, [{ ok: true, payload: "UNSIGNED-PAYLOAD" }]);
    } finally {
      await store.close();
      server.close();
    }
  });
});
