#!/usr/bin/env node
// Benchmark (issue 4): upload a 2 GB checkpoint-like directory (a few large shards + many small files) to a
// loopback S3 server (moto, from the test virtualenv) with rlpipe's checkpoint sync, and with the AWS CLI
// (`aws s3 cp --recursive`, Debian's awscli at /usr/bin/aws) against the same server in the same run.
// Goal: at least 1.5× the AWS CLI. Prints MB/s and the machine; writes bench/results/storage-upload.json.
// Needs: npm test's setup (moto in .venv-test) and `apt-get install -y awscli`.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const AWS = "/usr/bin/aws";
const MOTO = join(root, ".venv-test", "bin", "moto_server");
for (const [p, how] of [[AWS, "apt-get install -y --no-install-recommends awscli"], [MOTO, "npm test (sets up .venv-test)"]]) {
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
const moto = spawn(MOTO, ["-H", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
const endpoint = `http://127.0.0.1:${port}`;
for (let i = 0; ; i++) { try { if ((await fetch(`${endpoint}/moto-api/`)).ok) break; } catch { /* starting */ } if (i > 200) throw new Error("moto did not start"); await new Promise((r) => setTimeout(r, 100)); }
const creds = { accessKeyId: "bench", secretAccessKey: "bench" };
// CPU seconds the server used (utime + stime from /proc): shows whether the server or the client is the limit.
const clkTck = Number(spawnSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).stdout.trim()) || 100;
const serverCpuS = () => { const f = readFileSync(`/proc/${moto.pid}/stat`, "utf8").split(") ")[1].split(" "); return (Number(f[11]) + Number(f[12])) / clkTck; };
const reset = () => fetch(`${endpoint}/moto-api/reset`, { method: "POST" });

const results = { machine, totalBytes };
const awsEnv = { ...process.env, AWS_ACCESS_KEY_ID: "bench", AWS_SECRET_ACCESS_KEY: "bench", AWS_DEFAULT_REGION: "us-east-1", AWS_EC2_METADATA_DISABLED: "true" };
// One timed upload on a freshly reset server: wall seconds and the server CPU seconds it cost.
async function timed(upload) {
  await reset();
  const cpu0 = serverCpuS();
  const t0 = performance.now();
  await upload();
  return { seconds: (performance.now() - t0) / 1000, serverCpuSeconds: serverCpuS() - cpu0 };
}
const clients = {
  rlpipe: async () => {
    const store = new S3Store({ scheme: "s3", bucket: "bench", prefix: "", region: "us-east-1", endpoint, credentials: creds });
    await store.client.send(new CreateBucketCommand({ Bucket: "bench" }));
    const env = (k) => (process.env[k] === undefined ? undefined : Number(process.env[k]));
    const sync = new CheckpointSync({
      run: "bench", store,
      ...(env("PART_CONCURRENCY") === undefined ? {} : { concurrency: env("PART_CONCURRENCY") }),
      ...(env("FILE_CONCURRENCY") === undefined ? {} : { fileConcurrency: env("FILE_CONCURRENCY") }),
      ...(env("PART_MB") === undefined ? {} : { partSizeBytes: env("PART_MB") * 2 ** 20 }),
    });
    const rep = await sync.syncDir(work);
    await store.close();
    if (rep.committed.length !== 1) throw new Error("rlpipe did not commit the step");
  },
  aws: async () => {
    if (spawnSync(AWS, ["--endpoint-url", endpoint, "s3", "mb", "s3://bench"], { env: awsEnv, stdio: "ignore" }).status !== 0) throw new Error("aws s3 mb failed");
    const aws = spawnSync(AWS, ["--endpoint-url", endpoint, "s3", "cp", "--recursive", "--only-show-errors", step, "s3://bench/aws/"], { env: awsEnv, encoding: "utf8" });
    if (aws.status !== 0) throw new Error(`aws s3 cp failed: ${aws.stderr}`);
  },
};
try {
  const runs = Number(process.env.RUNS ?? 2);
  for (let r = 0; r < runs; r++) {
    // Alternate which client goes first: the server's memory state after a reset differs between the two slots.
    const order = r % 2 === 0 ? ["rlpipe", "aws"] : ["aws", "rlpipe"];
    const t = {};
    for (const name of order) t[name] = await timed(clients[name]);
    const mbps = (s) => totalBytes / 2 ** 20 / s;
    const show = (x) => `${x.seconds.toFixed(1)} s = ${mbps(x.seconds).toFixed(1)} MB/s, server busy ${Math.round((100 * x.serverCpuSeconds) / x.seconds)}%`;
    console.log(`run ${r + 1} (${order.join(" then ")}): rlpipe sync ${show(t.rlpipe)} | aws s3 cp --recursive ${show(t.aws)} | ${(t.aws.seconds / t.rlpipe.seconds).toFixed(2)}×`);
    (results.runs ??= []).push({ order, rlpipe: { ...t.rlpipe, MBps: mbps(t.rlpipe.seconds) }, aws: { ...t.aws, MBps: mbps(t.aws.seconds) }, speedup: t.aws.seconds / t.rlpipe.seconds });
  }
} finally {
  moto.kill("SIGTERM");
  rmSync(work, { recursive: true, force: true });
}
mkdirSync(join(root, "bench", "results"), { recursive: true });
writeFileSync(join(root, "bench", "results", "storage-upload.json"), `${JSON.stringify(results, null, 2)}\n`);
