// Object-store failures a user can act on: every failure is a StorageError with a stable code, an exit code
// (2 configuration, 3 the store refused or was unreachable) and a hint; transient ones are retried by the store
// itself — one retry layer, bounded in time, telling the CLI what it waits for. Against real loopback servers
// (moto behind the strict gateway, a port nobody listens on, a plain-http server spoken to in TLS, a server that
// never answers) and through the CLI as a user runs it, including the launch-bundle upload of `rlpipe deploy`.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer as createNetServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { S3Store, resolveS3Options } from "../adapters/storage/s3.js";
import { FsStore } from "../adapters/storage/fs.js";
import { fsError } from "../adapters/storage/object-store.js";
import { type RetryNotice, StorageError, formatRetryNotice, openStore, parseStoreUri, retryLines } from "../adapters/storage/store.js";
import { classifyStoreError } from "../adapters/storage/store-errors.js";
import { storeEndpoint } from "../adapters/storage/store-endpoint.js";
import { retryDelayMs, withStoreRetry } from "../adapters/storage/store-retry.js";
import { run } from "./checkpoint-helpers.js";
import { fakeHuaweiAk, fakeHuaweiSk } from "./fakes/credentials.js";
import { type Gateway, startGateway } from "./fakes/s3-gateway.js";
import { ROOT } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, freePort, startMoto } from "./servers/moto.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
const FAST_RETRY = { baseDelayMs: 20, maxDelayMs: 100 };
const ctx = { op: "PUT", target: "s3://bkt/runs/k", scheme: "s3" as const, endpoint: "https://s3.example" };

/** An SDK-shaped service error. */
const sdkError = (status: number, code: string, message = "m") => Object.assign(new Error(message), { name: code, Code: code, $metadata: { httpStatusCode: status }, $fault: status >= 500 ? "server" : "client" });
const netError = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(`${code} happened`), { code, ...extra });

describe("storage errors: classification", () => {
  const cases: { what: string; e: unknown; code: string; exit: number; retryable: boolean; hint?: RegExp }[] = [
    { what: "refused", e: netError("ECONNREFUSED"), code: "store_unreachable", exit: 3, retryable: true, hint: /S3_ENDPOINT/ },
    { what: "reset", e: netError("ECONNRESET"), code: "store_connection_lost", exit: 3, retryable: true },
    { what: "DNS, temporary", e: netError("EAI_AGAIN", { hostname: "obs.example" }), code: "store_dns_failed", exit: 3, retryable: true },
    { what: "DNS, no such host", e: netError("ENOTFOUND", { hostname: "obs.example" }), code: "store_dns_failed", exit: 3, retryable: false },
    { what: "timeout", e: Object.assign(new Error("Connection timed out after 500 ms"), { name: "TimeoutError" }), code: "store_timeout", exit: 3, retryable: true },
    { what: "not TLS", e: netError("EPROTO"), code: "store_tls_failed", exit: 3, retryable: false, hint: /https:\/\// },
    { what: "untrusted certificate", e: netError("SELF_SIGNED_CERT_IN_CHAIN"), code: "store_tls_failed", exit: 3, retryable: false, hint: /NODE_EXTRA_CA_CERTS/ },
    { what: "503 SlowDown", e: sdkError(503, "SlowDown"), code: "store_unavailable", exit: 3, retryable: true },
    { what: "429", e: sdkError(429, "TooManyRequests"), code: "store_unavailable", exit: 3, retryable: true },
    { what: "500", e: sdkError(500, "InternalError"), code: "store_unavailable", exit: 3, retryable: true },
    { what: "damaged in transit", e: sdkError(400, "BadDigest"), code: "store_damaged_in_transit", exit: 3, retryable: true },
    { what: "wrong key id", e: sdkError(403, "InvalidAccessKeyId"), code: "store_auth_refused", exit: 3, retryable: false, hint: /AWS_ACCESS_KEY_ID/ },
    { what: "wrong secret", e: sdkError(403, "SignatureDoesNotMatch"), code: "store_auth_refused", exit: 3, retryable: false },
    { what: "clock skew", e: sdkError(403, "RequestTimeTooSkewed"), code: "store_auth_refused", exit: 3, retryable: false, hint: /clock/ },
    { what: "missing bucket", e: sdkError(404, "NoSuchBucket"), code: "store_bucket_missing", exit: 3, retryable: false, hint: /create it/ },
    { what: "bad bucket name", e: sdkError(400, "InvalidBucketName"), code: "store_bad_bucket", exit: 2, retryable: false },
    { what: "no credentials", e: Object.assign(new Error("Could not load credentials from any providers"), { name: "CredentialsProviderError" }), code: "store_credentials_missing", exit: 2, retryable: false, hint: /AWS_ACCESS_KEY_ID/ },
    { what: "another refusal", e: sdkError(400, "InvalidArgument"), code: "store_refused", exit: 3, retryable: false },
  ];
  for (const c of cases) {
    it(`${c.what} → ${c.code}, exit ${c.exit}${c.retryable ? ", retried" : ""}`, () => {
      const f = classifyStoreError(c.e, ctx);
      assert.ok(f !== undefined);
      assert.equal(f.error.code, c.code);
      assert.equal(f.error.exitCode, c.exit);
      assert.equal(f.error.retryable, c.retryable);
      assert.match(f.error.message, /^PUT s3:\/\/bkt\/runs\/k: /);
      assert.ok(f.error.hint !== undefined && f.error.hint !== "", "every store failure has a hint");
      if (c.hint !== undefined) assert.match(f.error.hint, c.hint);
    });
  }

  it("hints name each scheme's own variables", () => {
    assert.match(classifyStoreError(sdkError(403, "AccessDenied"), { ...ctx, scheme: "obs" })!.error.hint!, /HUAWEICLOUD_SDK_AK/);
    assert.match(classifyStoreError(netError("ECONNREFUSED"), { ...ctx, scheme: "cos" })!.error.hint!, /COS_ENDPOINT/);
  });

  it("an error that is no store failure (a bug) is left alone", () => {
    assert.equal(classifyStoreError(new TypeError("x is undefined"), ctx), undefined);
  });
});

describe("storage errors: local file systems (file:// stores, checkpoint and restore directories)", () => {
  it("permissions, read-only and full disks are errors to act on; a file that went away is left to the caller", () => {
    const errno = (code: string) => Object.assign(new Error(code), { code, path: "/data/store/x", syscall: "open" });
    const mapped = (code: string) => fsError(errno(code), "/data/store") as StorageError;
    assert.deepEqual([mapped("EACCES").code, mapped("EACCES").exitCode], ["permission_denied", 2]);
    assert.match(mapped("EACCES").message, /^\/data\/store\/x: permission denied \(open\)$/);
    assert.deepEqual([mapped("EROFS").code, mapped("EROFS").exitCode], ["read_only", 2]);
    assert.deepEqual([mapped("ENOSPC").code, mapped("ENOSPC").exitCode], ["disk_full", 3]);
    const gone = errno("ENOENT");
    assert.equal(fsError(gone, "/x"), gone);
  });

  it("a file:// store or a restore target under a regular file: exit 2 naming the path, through the CLI too", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-fs-err-"));
    try {
      writeFileSync(join(dir, "file"), "x");
      const store = new FsStore(join(dir, "file", "store"));
      await assert.rejects(store.putBytes("a/b.txt", "y"), (e: StorageError) => e.code === "bad_path" && e.exitCode === 2 && e.message.includes(join(dir, "file")));
      mkdirSync(join(dir, "ckpt", "global_step_1"), { recursive: true });
      writeFileSync(join(dir, "ckpt", "global_step_1", "data.pt"), "z");
      writeFileSync(join(dir, "ckpt", "latest_checkpointed_iteration.txt"), "1");
      const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin" };
      const sync = await run(process.execPath, [CLI, "sync", "run-f", "--watch", join(dir, "ckpt"), "--once", "--store", join(dir, "file", "store")], { env });
      assert.equal(sync.status, 2, sync.stderr);
      assert.match(sync.stderr, /a file where a directory is needed\n {2}hint: check the path/);
      const ok = await run(process.execPath, [CLI, "sync", "run-f", "--watch", join(dir, "ckpt"), "--once", "--store", join(dir, "store")], { env });
      assert.equal(ok.status, 0, ok.stderr);
      const restore = await run(process.execPath, [CLI, "restore", "run-f", join(dir, "file", "into"), "--store", join(dir, "store")], { env });
      assert.equal(restore.status, 2, restore.stderr);
      assert.doesNotMatch(sync.stderr + restore.stderr, /bug in rlpipe|internal error/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("storage errors: the one retry layer", () => {
  it("retries a transient failure, telling each retry, until it passes", async () => {
    const notices: RetryNotice[] = [];
    let calls = 0;
    const r = await withStoreRetry(async () => { if (++calls < 3) throw netError("ECONNREFUSED"); return "ok"; }, { ctx, policy: FAST_RETRY, onRetry: (n) => notices.push(n) });
    assert.equal(r, "ok");
    assert.deepEqual(notices.map((n) => [n.op, n.target, n.reason, n.attempt]), [["PUT", "s3://bkt/runs/k", "connection refused", 2], ["PUT", "s3://bkt/runs/k", "connection refused", 3]]);
    assert.match(formatRetryNotice(notices[0]!), /^retrying PUT s3:\/\/bkt\/runs\/k: connection refused \(attempt 2, next in \d+\.\d s\)$/);
  });

  it("gives up within its time budget, saying how often it tried", async () => {
    let clock = 0;
    let calls = 0;
    // Each attempt "takes" a second of the fake clock; the real sleeps between them are tiny.
    await assert.rejects(withStoreRetry(async () => { calls++; clock += 1000; throw netError("ECONNREFUSED"); }, { ctx, policy: { ...FAST_RETRY, budgetMs: 10_000, maxAttempts: 100, now: () => clock } }), (e: StorageError) => {
      assert.equal(e.code, "store_unreachable");
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /gave up after 11 attempts in 10\.0 s$/);
      return true;
    });
    assert.equal(calls, 11, "bounded by the budget, not by maxAttempts");
    assert.equal(retryDelayMs(1, { baseDelayMs: 500, random: () => 0 }), 250);
    assert.equal(retryDelayMs(10, { baseDelayMs: 500, maxDelayMs: 8000, random: () => 1 }), 8000);
  });

  it("a permanent failure is thrown at once; an abort passes through untouched", async () => {
    let calls = 0;
    await assert.rejects(withStoreRetry(async () => { calls++; throw sdkError(404, "NoSuchBucket"); }, { ctx, policy: FAST_RETRY }), /bucket bkt does not exist/);
    assert.equal(calls, 1);
    const ac = new AbortController();
    ac.abort(new Error("stop"));
    const abortErr = Object.assign(new Error("aborted"), { name: "AbortError" });
    await assert.rejects(withStoreRetry(async () => { throw abortErr; }, { ctx, signal: ac.signal }), (e) => e === abortErr);
  });

  it("retry lines: one per reason per second, however many parts fail at once", () => {
    const lines: string[] = [];
    let t = 0;
    const sink = retryLines((l) => lines.push(l), 1000, () => t);
    const n = { op: "PUT", target: "s3://b/k part 1", reason: "connection refused", attempt: 2, delayMs: 500 };
    for (let i = 0; i < 8; i++) sink({ ...n, target: `s3://b/k part ${i + 1}` });
    t = 1500;
    sink(n);
    sink({ ...n, reason: "HTTP 503 SlowDown" });
    assert.equal(lines.length, 3);
  });
});

describe("storage errors: endpoints", () => {
  it("an endpoint without a scheme means https:// (http:// on loopback, as for providers); a variable names its problem", () => {
    assert.equal(storeEndpoint("obs.cn-north-4.myhuaweicloud.com", "OBS_ENDPOINT"), "https://obs.cn-north-4.myhuaweicloud.com");
    assert.equal(storeEndpoint(" https://cos.ap-shanghai.myqcloud.com/ ", "COS_ENDPOINT"), "https://cos.ap-shanghai.myqcloud.com");
    assert.equal(storeEndpoint("http://127.0.0.1:9000", "S3_ENDPOINT"), "http://127.0.0.1:9000");
    assert.equal(storeEndpoint("127.0.0.1:9000", "S3_ENDPOINT"), "http://127.0.0.1:9000", "on loopback, as for provider endpoints");
    assert.throws(() => storeEndpoint("http://10.0.0.1:9000", "S3_ENDPOINT"), (e: StorageError) => e.exitCode === 2 && /^S3_ENDPOINT: plain http is allowed only for loopback/.test(e.message));
    assert.throws(() => storeEndpoint("https://s3.example/bucket", "AWS_ENDPOINT_URL_S3"), (e: StorageError) => e.exitCode === 2 && /AWS_ENDPOINT_URL_S3/.test(e.message));
    assert.throws(() => storeEndpoint("ftp://x", "S3_ENDPOINT"), /S3_ENDPOINT: unsupported scheme/);
  });

  it("OBS_ENDPOINT without a scheme: https, and the region it names signs the requests", () => {
    const o = resolveS3Options(parseStoreUri("obs://ckpt/run"), { OBS_ENDPOINT: "obs.cn-north-4.myhuaweicloud.com", HUAWEICLOUD_SDK_AK: "ak", HUAWEICLOUD_SDK_SK: "sk" });
    assert.equal(o.endpoint, "https://obs.cn-north-4.myhuaweicloud.com");
    assert.equal(o.region, "cn-north-4");
    const s = resolveS3Options(parseStoreUri("s3://ckpt"), { AWS_ENDPOINT_URL: "minio.internal:9000" });
    assert.equal(s.endpoint, "https://minio.internal:9000");
  });

  it("OBS and COS without credentials fail at once (exit 2), naming the variables", () => {
    assert.throws(() => resolveS3Options(parseStoreUri("obs://ckpt"), { OBS_REGION: "cn-north-4" }), (e: StorageError) => e.code === "store_credentials_missing" && e.exitCode === 2 && /HUAWEICLOUD_SDK_AK/.test(e.hint ?? ""));
    assert.throws(() => resolveS3Options(parseStoreUri("cos://ckpt-125"), { COS_REGION: "ap-shanghai" }), (e: StorageError) => e.exitCode === 2 && /TENCENTCLOUD_SECRET_ID/.test(e.hint ?? ""));
    assert.throws(() => resolveS3Options(parseStoreUri("s3://ckpt"), { RLPIPE_STORE_RETRY_S: "soon" }), (e: StorageError) => e.exitCode === 2);
  });
});

describe("storage errors: against real servers", () => {
  let moto: Moto;
  let gw: Gateway;
  let closedPort: number;
  before(async () => {
    moto = await startMoto();
    gw = await startGateway(moto.endpoint, TEST_CREDENTIALS.secretAccessKey);
    closedPort = await freePort(); // nobody listens there: connections are refused
    const s = store(gw.endpoint, "exists");
    await s.client.send(new CreateBucketCommand({ Bucket: "exists" }));
    await s.close();
  });
  after(async () => { await gw.close(); await moto.stop(); });

  function store(endpoint: string, bucket = "exists", extra: Partial<ConstructorParameters<typeof S3Store>[0]> = {}): S3Store {
    return new S3Store({ scheme: "s3", bucket, prefix: "runs", region: "us-east-1", endpoint, credentials: TEST_CREDENTIALS, partChecksum: "md5", retry: FAST_RETRY, ...extra });
  }
  async function failure(s: S3Store, fn: (s: S3Store) => Promise<unknown>): Promise<StorageError> {
    try {
      await fn(s);
    } catch (e) {
      assert.ok(e instanceof StorageError, `a StorageError, not ${String(e)}`);
      return e;
    } finally {
      await s.close();
    }
    throw new Error("expected a failure");
  }

  it("a refused connection is retried within the budget, then exit 3 with a hint", async () => {
    const notices: RetryNotice[] = [];
    const e = await failure(store(`http://127.0.0.1:${closedPort}`, "exists", { retry: { ...FAST_RETRY, budgetMs: 400 }, onRetry: (n) => notices.push(n) }), (s) => s.putBytes("a.txt", "x"));
    assert.equal(e.code, "store_unreachable");
    assert.equal(e.exitCode, 3);
    assert.match(e.message, /^PUT s3:\/\/exists\/runs\/a\.txt: connection refused \(endpoint http:\/\/127\.0\.0\.1:\d+\); gave up after \d+ attempts/);
    assert.match(e.hint ?? "", /S3_ENDPOINT/);
    assert.ok(notices.length >= 1 && notices.every((n) => n.reason === "connection refused" && n.op === "PUT"));
  });

  it("a missing bucket: exit 3, not retried, says which bucket and what to do", async () => {
    const notices: RetryNotice[] = [];
    const e = await failure(store(gw.endpoint, "no-such-bucket", { onRetry: (n) => notices.push(n) }), (s) => s.putBytes("a.txt", "x"));
    assert.equal(e.code, "store_bucket_missing");
    assert.equal(e.exitCode, 3);
    assert.match(e.message, /bucket no-such-bucket does not exist/);
    assert.match(e.hint ?? "", /create it/);
    assert.deepEqual(notices, []);
    const listing = await failure(store(gw.endpoint, "no-such-bucket"), (s) => s.list("x/"));
    assert.equal(listing.code, "store_bucket_missing");
  });

  it("wrong credentials: exit 3 (auth refused), not retried", async () => {
    const e = await failure(store(gw.endpoint, "exists", { credentials: { accessKeyId: TEST_CREDENTIALS.accessKeyId, secretAccessKey: "wrong" } }), (s) => s.putBytes("a.txt", "x"));
    assert.equal(e.code, "store_auth_refused");
    assert.equal(e.exitCode, 3);
    assert.match(e.message, /HTTP 403 SignatureDoesNotMatch/);
    assert.doesNotMatch(`${e.message} ${e.hint}`, /wrong/);
  });

  it("503 SlowDown and a reset are retried and the request succeeds", async () => {
    const notices: RetryNotice[] = [];
    const s = store(gw.endpoint, "exists", { onRetry: (n) => notices.push(n) });
    try {
      gw.faults.push({ kind: "status", status: 503, code: "SlowDown" }, { kind: "reset" });
      await s.putBytes("b.txt", "hello");
      assert.equal((await s.get("b.txt")).toString(), "hello");
      assert.deepEqual(notices.map((n) => n.reason), ["HTTP 503 SlowDown", "the connection dropped"]);
    } finally {
      await s.close();
    }
  });

  it("https to a plain-http server: exit 3 with a hint about the scheme, not OpenSSL's text alone", async () => {
    const plain = createHttpServer((_req, res) => { res.writeHead(200); res.end(); });
    await new Promise<void>((r) => plain.listen(0, "127.0.0.1", () => r()));
    try {
      const e = await failure(store(`https://127.0.0.1:${(plain.address() as AddressInfo).port}`), (s) => s.putBytes("a.txt", "x"));
      assert.equal(e.code, "store_tls_failed");
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /does not speak TLS/);
      assert.match(e.hint ?? "", /scheme and port/);
    } finally {
      plain.close();
    }
  });

  it("a server that accepts and never answers: a timeout, retried, then exit 3 — never a silent hang", async () => {
    const silent = createNetServer((sock) => { sock.on("data", () => undefined); sock.on("error", () => undefined); });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", () => r()));
    try {
      const e = await failure(store(`http://127.0.0.1:${(silent.address() as AddressInfo).port}`, "exists", { idleTimeoutMs: 300, requestTimeoutMs: 600, retry: { ...FAST_RETRY, maxAttempts: 2 } }), (s) => s.head("a.txt"));
      assert.equal(e.code, "store_timeout");
      assert.equal(e.exitCode, 3);
      assert.match(e.message, /gave up after 2 attempts/);
    } finally {
      silent.close();
    }
  });

  describe("through the CLI", () => {
    let home: string;
    before(() => { home = mkdtempSync(join(tmpdir(), "rlpipe-store-err-")); });
    after(() => rmSync(home, { recursive: true, force: true }));
    /** A clean environment: no AWS files, no instance metadata (nothing leaves this machine). */
    const env = (extra: Record<string, string>) => ({
      PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: home, AWS_EC2_METADATA_DISABLED: "true", AWS_CONFIG_FILE: join(home, "none"), AWS_SHARED_CREDENTIALS_FILE: join(home, "none"),
      AWS_REGION: "us-east-1", RLPIPE_STORE_RETRY_S: "1", ...extra,
    });
    const creds = { AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey };

    it("an unreachable store: a line per retry on stderr, then exit 3 with a hint (not 'a bug in rlpipe')", async () => {
      const r = await run(process.execPath, [CLI, "checkpoints", "run-x", "--store", "s3://exists/runs"], { env: env({ ...creds, S3_ENDPOINT: `http://127.0.0.1:${closedPort}` }), timeoutMs: 60_000 });
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, /retrying LIST s3:\/\/exists\/runs\/run-x\/checkpoints\/\*: connection refused \(attempt 2, next in \d+\.\d s\)/);
      assert.match(r.stderr, /rlpipe: LIST s3:\/\/exists\/runs\/run-x\/checkpoints\/\*: connection refused .*gave up after/);
      assert.match(r.stderr, /hint: .*S3_ENDPOINT/);
      assert.doesNotMatch(r.stderr, /bug in rlpipe|internal error/);
    });

    it("sync --watch keeps watching through an outage (a line per failed pass); the last pass on SIGTERM decides the exit code", async () => {
      const dir = mkdtempSync(join(tmpdir(), "rlpipe-watch-outage-"));
      try {
        mkdirSync(join(dir, "global_step_1"));
        writeFileSync(join(dir, "global_step_1", "data.pt"), "z");
        writeFileSync(join(dir, "latest_checkpointed_iteration.txt"), "1");
        const child = spawn(process.execPath, [CLI, "sync", "run-w", "--watch", dir, "--interval-s", "0", "--store", "s3://exists/runs"], {
          env: env({ ...creds, S3_ENDPOINT: `http://127.0.0.1:${closedPort}`, RLPIPE_STORE_RETRY_S: "0" }), stdio: ["ignore", "ignore", "pipe"],
        });
        let stderr = "";
        child.stderr.on("data", (b: Buffer) => { stderr += b.toString(); });
        const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
        for (let waited = 0; (stderr.match(/pass failed/g) ?? []).length < 3; waited += 50) {
          assert.ok(waited < 60_000, stderr);
          await new Promise((r) => setTimeout(r, 50));
        }
        child.kill("SIGTERM");
        assert.equal(await exited, 3, stderr);
        assert.match(stderr, /\[rlpipe sync\] pass failed, next one in 0 s: LIST s3:\/\/exists\/runs\/run-w\/checkpoints\/\*: connection refused/);
        assert.match(stderr, /\nrlpipe: LIST .*connection refused.*\n {2}hint: /);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it("a missing bucket exits 3; no credentials and a bad endpoint exit 2", async () => {
      const missing = await run(process.execPath, [CLI, "checkpoints", "run-x", "--store", "s3://no-such-bucket/runs"], { env: env({ ...creds, S3_ENDPOINT: gw.endpoint }) });
      assert.equal(missing.status, 3, missing.stderr);
      assert.match(missing.stderr, /bucket no-such-bucket does not exist \(endpoint http:\/\/127\.0\.0\.1:\d+\)\n {2}hint: create it/);
      const noCreds = await run(process.execPath, [CLI, "checkpoints", "run-x", "--store", "s3://exists/runs"], { env: env({ S3_ENDPOINT: gw.endpoint }) });
      assert.equal(noCreds.status, 2, noCreds.stderr);
      assert.match(noCreds.stderr, /: no credentials .*\n {2}hint: set AWS_ACCESS_KEY_ID/);
      const insecure = await run(process.execPath, [CLI, "checkpoints", "run-x", "--store", "s3://exists/runs"], { env: env({ ...creds, S3_ENDPOINT: "http://192.0.2.1:9000" }) });
      assert.equal(insecure.status, 2, insecure.stderr);
      assert.match(insecure.stderr, /S3_ENDPOINT: plain http is allowed only for loopback/);
      for (const r of [missing, noCreds, insecure]) assert.doesNotMatch(r.stderr, /bug in rlpipe|internal error/);
    });

    it("deploy: the launch-bundle upload to an unreachable OBS retries with a line on stderr, then exits 3 with a hint", async () => {
      const r = await run(process.execPath, [CLI, "deploy", join(ROOT, "recipes", "qwen3-1.7b-code-toolcall.yaml"), "--provider", "modelarts", "--yes"], {
        env: env({
          HUAWEICLOUD_SDK_AK: fakeHuaweiAk(), HUAWEICLOUD_SDK_SK: fakeHuaweiSk(), HUAWEICLOUD_SDK_PROJECT_ID: "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
          MODELARTS_ENDPOINT: `http://127.0.0.1:${closedPort}`, OBS_ENDPOINT: `http://127.0.0.1:${closedPort}`, OBS_REGION: "cn-southwest-2",
        }),
        timeoutMs: 60_000,
      });
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, /retrying (HEAD|PUT) obs:\/\/\S+: connection refused \(attempt 2/);
      assert.match(r.stderr, /rlpipe: (HEAD|PUT) obs:\/\/\S+: connection refused/);
      assert.match(r.stderr, /hint: .*OBS_ENDPOINT/);
      assert.doesNotMatch(r.stderr, /bug in rlpipe|internal error|fake-secret-key/);
    });

    it("openStore (what the deploy's bundle sink opens) fails with the configuration's exit code", async () => {
      await assert.rejects(openStore("obs://bundles/x", { OBS_REGION: "cn-north-4" }), (e: StorageError) => e.exitCode === 2 && e.code === "store_credentials_missing");
      await assert.rejects(openStore("gs://bundles/x", {}), (e: StorageError) => e.exitCode === 2 && e.code === "bad_store_uri");
    });
  });
});
