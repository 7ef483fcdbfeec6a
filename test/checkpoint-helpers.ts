// Shared by the checkpoint tests: verl-like checkpoint dirs, running a program without blocking the test process,
// and the durability invariant (every committed step matches its manifest byte for byte).
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { join } from "node:path";
import { CheckpointSync, listFiles } from "../adapters/storage/checkpoint-sync.js";
import type { S3Store } from "../adapters/storage/s3.js";
import { layout } from "../core/checkpoints.js";
import { type Gateway, type GatewayRequest, isUploadPart } from "./fakes/s3-gateway.js";

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

export /** A verl-like checkpoint dir: steps with a big multi-part shard and small files; the tracker at `latest`. */
function makeCheckpoints(dir: string, steps: readonly number[], latest: number, bigBytes = 18 * MiB): void {
  for (const s of steps) {
    const d = join(dir, `global_step_${s}`, "actor");
    mkdirSync(join(d, "huggingface"), { recursive: true });
    writeFileSync(join(d, "model_world_size_1_rank_0.pt"), randomBytes(bigBytes));
    writeFileSync(join(d, "extra_state_world_size_1_rank_0.pt"), randomBytes(4096));
    writeFileSync(join(d, "huggingface", "config.json"), JSON.stringify({ step: s }));
    writeFileSync(join(dir, `global_step_${s}`, "data.pt"), randomBytes(100));
  }
  writeFileSync(join(dir, "latest_checkpointed_iteration.txt"), String(latest));
}

export /** Run a program without blocking this process (the S3 gateway and the runs function live here). */
function run(cmd: string, args: readonly string[], opts: { env: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, [...args], { env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    const t = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 120_000);
    child.on("close", (status) => { clearTimeout(t); resolve({ status, stdout, stderr }); });
  });
}

export /** The invariant: every visible (committed) step's files match their manifest byte for byte. */
async function assertCommittedIntact(store: S3Store, run: string, localDir: string): Promise<number[]> {
  const sync = new CheckpointSync({ run, store });
  const steps = await sync.committedSteps();
  for (const step of steps) {
    const m = await sync.manifest(step);
    assert.deepEqual(m.files.map((f) => f.path), await listFiles(join(localDir, `global_step_${step}`)), `step ${step}: manifest lists every file`);
    for (const f of m.files) {
      const remote = await store.get(layout.file(run, step, f.path));
      assert.equal(sha256(remote), f.sha256, `step ${step} ${f.path}: stored bytes match the manifest`);
      assert.ok(remote.equals(readFileSync(join(localDir, `global_step_${step}`, ...f.path.split("/")))), `step ${step} ${f.path}: byte for byte`);
    }
  }
  return steps;
}

export /** Step 1 of three 20 MiB shards and a small file, finished (the tracker says 1): the resume tests' checkpoint. */
function makeThreeShardStep(dir: string): void {
  const d = join(dir, "global_step_1", "actor");
  mkdirSync(d, { recursive: true });
  for (let i = 0; i < 3; i++) writeFileSync(join(d, `model_world_size_3_rank_${i}.pt`), randomBytes(20 * MiB));
  writeFileSync(join(d, "extra_state.pt"), randomBytes(4096));
  writeFileSync(join(dir, "latest_checkpointed_iteration.txt"), "1");
}

export /**
 * Start an uploader on makeThreeShardStep's directory while the third shard's parts chosen by `hold` get no answer,
 * wait until the first two shards are complete and a held part is in flight, and SIGKILL it. Returns, once what the
 * uploader had sent before it died is stored (`gw.settled`), where in the gateway's log the upload began.
 */
async function killWhileThirdShardHeld(gw: Gateway, start: () => ChildProcess, hold: { readonly match: (r: IncomingMessage) => boolean; readonly count: number }): Promise<number> {
  for (let i = 0; i < hold.count; i++) gw.faults.push({ kind: "hold", match: hold.match });
  const from = gw.log.length;
  const connectionsFrom = gw.connectionsAccepted();
  const completed = (rank: number) => gw.log.slice(from).some((r) => r.method === "POST" && r.path.endsWith(`rank_${rank}.pt`) && /uploadId=/.test(r.query));
  const heldBefore = gw.stats.held;
  const child = start();
  const exited = new Promise((r) => child.once("exit", r));
  for (let waited = 0; !(completed(0) && completed(1) && gw.stats.held > heldBefore); waited += 50) {
    assert.ok(waited < 60_000, "the first two shards complete and the third is in flight");
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill("SIGKILL");
  await exited;
  gw.faults.splice(0, gw.faults.length);
  await gw.settled(connectionsFrom);
  return from;
}

/** A part of the third shard (rank 2). */
export const isThirdShardPart = (r: IncomingMessage): boolean => isUploadPart(r) && (r.url ?? "").includes("rank_2.pt");

export /**
 * verl keeping every step on disk while an uploader with keep-last 2 makes four passes: steps 1–3, then 4, then 5,
 * then nothing new. Returns each pass's result and where in the gateway's log the first and the last pass began.
 */
async function passesKeepingEveryStep<T>(gw: Gateway, dir: string, pass: () => Promise<T>): Promise<{ results: [T, T, T, T]; from: number; lastFrom: number }> {
  makeCheckpoints(dir, [1, 2, 3], 3, 9 * MiB);
  const from = gw.log.length;
  const first = await pass();
  makeCheckpoints(dir, [4], 4, 9 * MiB); // verl saves a step and keeps the old ones
  const second = await pass();
  makeCheckpoints(dir, [5], 5, 9 * MiB);
  const third = await pass();
  const lastFrom = gw.log.length;
  return { results: [first, second, third, await pass()], from, lastFrom };
}

export /** PUTs of each step's data.pt (every step has one), by step. */
function uploadsPerStep(log: readonly GatewayRequest[], runName: string): [number, number][] {
  const uploads = new Map<number, number>();
  for (const r of log) {
    const m = new RegExp(`/${runName.replace(/\./g, "\\.")}/checkpoints/global_step_(\\d+)/data\\.pt$`).exec(r.path);
    if (r.method === "PUT" && m !== null) uploads.set(Number(m[1]), (uploads.get(Number(m[1])) ?? 0) + 1);
  }
  return [...uploads.entries()].sort((a, b) => a[0] - b[0]);
}
