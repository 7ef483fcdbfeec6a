#!/usr/bin/env node
// Benchmark (issue 4): upload a 2 GB checkpoint-like directory (a few large shards + many small files) to a
// loopback S3 server (versitygw, or moto) with rlpipe's checkpoint sync, and with the AWS CLI
// (`aws s3 cp --recursive`, Debian's awscli at /usr/bin/aws) against the same server in the same run; then each
// downloads what it uploaded (rlpipe restore, verified against the manifest; aws s3 cp back).
// Goal: at least 1.5× the AWS CLI. Prints MB/s and the machine; writes bench/results/storage-upload-<server>.json.
// Needs: npm test's setup (versitygw in .tools/bin, moto in .venv-test) and `apt-get install -y awscli`.
// Both share this machine's cores with the server, so the CPU each client spends per byte is printed beside MB/s.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const AWS = "/usr/bin/aws";
const MOTO = join(root, ".venv-test", "bin", "moto_server");
const VERSITYGW = process.env.VERSITYGW ?? join(root, ".tools", "bin", "versitygw");
const server1 = process.env.S3_SERVER === "moto" ? [MOTO, "npm test (sets up .venv-test)"] : [VERSITYGW, "npm test (bash scripts/setup.sh --test builds it), or set VERSITYGW"];
for (const [p, how] of [[AWS, "apt-get install -y --no-install-recommends awscli"], server1]) {
  if (!existsSync(p)) { console.error(`missing ${p}: ${how}`); process.exit(2); }
}
const { S3Store } = await import(join(root, "dist/adapters/storage/s3.js"));
const { CheckpointSync } = await import(join(root, "dist/adapters/storage/checkpoint-sync.js"));
const { CreateBucketCommand } = await import("@aws-sdk/client-s3");

const TOTAL_MB = Number(process.env.TOTAL_MB ?? 2048);
const machine = { cpu: os.cpus()[0]?.model ?? "unknown", cores: os.cpus().length, memGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version, load1: os.loadavg()[0] };
console.log(`machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memGiB} GiB, node ${machine.node}, load ${machine.load1.toFixed(2)}`);

// ---- data: 4 shards + 300 small files, like an FSDP actor checkpoint with its HF config/tokenizer files
const work = mkdtempSync(join(os.tmpdir(), "rlpipe-bench-upload-"));
const step = join(work, "global_step_100");
mkdirSync(join(step, "actor", "huggingface"), { recursive: true });
const smallCount = Number(process.env.SMALL_COUNT ?? 300);
const smallBytes = 64 * 1024;
const shardBytes = Math.floor((TOTAL_MB * 2 ** 20 - smallCount * smallBytes) / 4);
const block = randomBytes(16 * 2 ** 20);
for (let i = 0; i < 4; i++) {
  const f = join(step, "actor", `model_world_size_4_rank_${i}.pt`);
  const fd = [];
  for (let w = 0; w < shardBytes; w += block.length) fd.push(block.subarray(0, Math.min(block.length, shardBytes - w)));
  // vary content per shard so nothing dedupes
  writeFileSync(f, Buffer.concat([randomBytes(64), ...fd]).subarray(0, shardBytes));
}
for (let i = 0; i < smallCount; i++) writeFileSync(join(step, "actor", "huggingface", `file_${i}.json`), randomBytes(smallBytes));
writeFileSync(join(work, "latest_checkpointed_iteration.txt"), "100");
const totalBytes = 4 * shardBytes + smallCount * smallBytes;
console.log(`data: ${(totalBytes / 2 ** 20).toFixed(0)} MiB in ${4 + smallCount} files (4 shards of ${(shardBytes / 2 ** 20).toFixed(0)} MiB, ${smallCount} × ${smallBytes / 1024} KiB)`);

const port = await new Promise((res) => { const s = createServer(); s.listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); }); });
const endpoint = `http://127.0.0.1:${port}`;
// The server: versitygw (the Versity S3 Gateway: Go, posix backend, verifies Content-MD5 and CRC32 like S3; built
// by `npm test`'s setup into .tools/bin) by default; S3_SERVER=moto uses moto (Python, one core, checks nothing).
const serverKind = process.env.S3_SERVER ?? "versitygw";
const gwRoot = mkdtempSync(join(os.tmpdir(), "rlpipe-bench-versitygw-"));
let server;
let reset;
if (serverKind === "moto") {
  server = spawn(MOTO, ["-H", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  reset = () => fetch(`${endpoint}/moto-api/reset`, { method: "POST" });
} else if (serverKind === "versitygw") {
  server = spawn(VERSITYGW, ["--port", `127.0.0.1:${port}`, "--access", "bench", "--secret", "bench", "--quiet", "--keep-alive", "posix", gwRoot], { stdio: "ignore" });
  // Buckets are directories: emptying the root (and the page cache's dirty data) is a fresh server.
  reset = async () => { for (const d of readdirSync(gwRoot)) rmSync(join(gwRoot, d), { recursive: true, force: true }); spawnSync("sync"); };
} else { console.error(`S3_SERVER must be moto or versitygw, not ${serverKind}`); process.exit(2); }
for (let i = 0; ; i++) {
  try { await fetch(serverKind === "moto" ? `${endpoint}/moto-api/` : `${endpoint}/`); break; } catch { /* starting */ }
  if (i > 200) throw new Error(`${serverKind} did not start`);
  await new Promise((r) => setTimeout(r, 100));
}
console.log(`server: ${serverKind} on ${endpoint}`);
const creds = { accessKeyId: "bench", secretAccessKey: "bench" };
// CPU seconds the server used (utime + stime from /proc): shows whether the server or the client is the limit.
const clkTck = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
const serverCpuS = () => { const f = readFileSync(`/proc/${server.pid}/stat`, "utf8").split(") ")[1].split(" "); return (Number(f[11]) + Number(f[12])) / clkTck; };

const results = { machine, server: serverKind, totalBytes };
const awsEnv = { ...process.env, AWS_ACCESS_KEY_ID: "bench", AWS_SECRET_ACCESS_KEY: "bench", AWS_DEFAULT_REGION: "us-east-1", AWS_EC2_METADATA_DISABLED: "true" };
// CPU seconds of this process plus its waited-for children (the AWS CLI), and of the whole machine: with client and
// server on the same 2 cores, what a client costs per byte decides how fast either can go.
const selfCpuS = () => { const f = readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" "); return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / clkTck; };
const machineBusyS = () => { const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number); return (f.reduce((a, b) => a + b, 0) - f[3] - f[4]) / clkTck; };
// Wall seconds of one transfer and the CPU seconds it cost the server, the client and the machine.
async function measure(transfer) {
  const [srv0, cli0, all0] = [serverCpuS(), selfCpuS(), machineBusyS()];
  const t0 = performance.now();
  await transfer();
  return { seconds: (performance.now() - t0) / 1000, serverCpuSeconds: serverCpuS() - srv0, clientCpuSeconds: selfCpuS() - cli0, machineBusySeconds: machineBusyS() - all0 };
}
// On a freshly reset server: the upload, then the download of what was uploaded (into a fresh directory).
async function timed(name) {
  await reset();
  const upload = await measure(() => clients[name]());
  const dest = mkdtempSync(join(os.tmpdir(), "rlpipe-bench-back-"));
  try {
    const download = await measure(() => downloads[name](dest));
    return { ...upload, download };
  } finally {
    rmSync(dest, { recursive: true, force: true });
  }
}
const clients = {
  rlpipe: async (ckptDir = work) => {
    const store = new S3Store({ scheme: "s3", bucket: "bench", prefix: "", region: "us-east-1", endpoint, credentials: creds });
    await store.client.send(new CreateBucketCommand({ Bucket: "bench" }));
    const env = (k) => (process.env[k] === undefined ? undefined : Number(process.env[k]));
    const sync = new CheckpointSync({
      run: "bench", store,
      ...(env("PART_CONCURRENCY") === undefined ? {} : { concurrency: env("PART_CONCURRENCY") }),
      ...(env("FILE_CONCURRENCY") === undefined ? {} : { fileConcurrency: env("FILE_CONCURRENCY") }),
      ...(env("PART_MB") === undefined ? {} : { partSizeBytes: env("PART_MB") * 2 ** 20 }),
    });
    const rep = await sync.syncDir(ckptDir);
    await store.close();
    if (rep.committed.length !== 1) throw new Error("rlpipe did not commit the step");
  },
  aws: async (ckptDir = work) => {
    if (spawnSync(AWS, ["--endpoint-url", endpoint, "s3", "mb", "s3://bench"], { env: awsEnv, stdio: "ignore" }).status !== 0) throw new Error("aws s3 mb failed");
    const aws = spawnSync(AWS, ["--endpoint-url", endpoint, "s3", "cp", "--recursive", "--only-show-errors", join(ckptDir, "global_step_100"), "s3://bench/aws/"], { env: awsEnv, encoding: "utf8" });
    if (aws.status !== 0) throw new Error(`aws s3 cp failed: ${aws.stderr}`);
  },
};
// Downloads: rlpipe restores the committed step (every file's SHA-256 checked against the manifest); the AWS CLI
// copies the objects back (no end-to-end check).
const downloads = {
  rlpipe: async (dest) => {
    const store = new S3Store({ scheme: "s3", bucket: "bench", prefix: "", region: "us-east-1", endpoint, credentials: creds });
    const r = await new CheckpointSync({ run: "bench", store }).restore(dest);
    await store.close();
    if (r.manifest.files.length !== 4 + smallCount) throw new Error(`rlpipe restored ${r.manifest.files.length} files`);
  },
  aws: async (dest) => {
    const aws = spawnSync(AWS, ["--endpoint-url", endpoint, "s3", "cp", "--recursive", "--only-show-errors", "s3://bench/aws/", dest], { env: awsEnv, encoding: "utf8" });
    if (aws.status !== 0) throw new Error(`aws s3 cp (download) failed: ${aws.stderr}`);
  },
};
try {
  // One untimed warm-up per client (64 MiB): module loading, JIT, connection pools, the server's first allocations.
  const warm = mkdtempSync(join(os.tmpdir(), "rlpipe-bench-warm-"));
  mkdirSync(join(warm, "global_step_100"), { recursive: true });
  writeFileSync(join(warm, "global_step_100", "shard.pt"), randomBytes(64 * 2 ** 20));
  writeFileSync(join(warm, "latest_checkpointed_iteration.txt"), "100");
  for (const name of process.env.ONLY === undefined ? ["rlpipe", "aws"] : [process.env.ONLY]) { await reset(); await clients[name](warm); }
  rmSync(warm, { recursive: true, force: true });
  const runs = Number(process.env.RUNS ?? 2);
  for (let r = 0; r < runs; r++) {
    // Alternate which client goes first: the server's memory state after a reset differs between the two slots.
    const order = r % 2 === 0 ? ["rlpipe", "aws"] : ["aws", "rlpipe"];
    const t = {};
    // ONLY=rlpipe (or aws) times one client, e.g. under --cpu-prof.
    if (process.env.ONLY !== undefined) { t[process.env.ONLY] = await timed(process.env.ONLY); console.log(process.env.ONLY, t[process.env.ONLY]); continue; }
    for (const name of order) t[name] = await timed(name);
    const mbps = (s) => totalBytes / 2 ** 20 / s;
    const pct = (cpuS, x) => `${Math.round((100 * cpuS) / x.seconds)}%`;
    const show = (x) => `${x.seconds.toFixed(1)} s = ${mbps(x.seconds).toFixed(1)} MB/s (CPU: client ${pct(x.clientCpuSeconds, x)}, server ${pct(x.serverCpuSeconds, x)}, machine ${pct(x.machineBusySeconds, x)} of ${machine.cores * 100}%)`;
    console.log(`run ${r + 1} (${order.join(" then ")}): upload: rlpipe sync ${show(t.rlpipe)} | aws s3 cp --recursive ${show(t.aws)} | ${(t.aws.seconds / t.rlpipe.seconds).toFixed(2)}×`);
    console.log(`      download: rlpipe restore ${show(t.rlpipe.download)} | aws s3 cp --recursive ${show(t.aws.download)} | ${(t.aws.download.seconds / t.rlpipe.download.seconds).toFixed(2)}×`);
    (results.runs ??= []).push({
      order,
      rlpipe: { ...t.rlpipe, MBps: mbps(t.rlpipe.seconds), download: { ...t.rlpipe.download, MBps: mbps(t.rlpipe.download.seconds) } },
      aws: { ...t.aws, MBps: mbps(t.aws.seconds), download: { ...t.aws.download, MBps: mbps(t.aws.download.seconds) } },
      speedup: t.aws.seconds / t.rlpipe.seconds, downloadSpeedup: t.aws.download.seconds / t.rlpipe.download.seconds,
    });
  }
} finally {
  server.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
  rmSync(gwRoot, { recursive: true, force: true });
}
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", `storage-upload-${serverKind}.json`), `${JSON.stringify(results, null, 2)}\n`);
