// Shared by the checkpoint tests: verl-like checkpoint dirs, running a program without blocking the test process,
// and the durability invariant (every committed step matches its manifest byte for byte).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CheckpointSync, listFiles } from "../adapters/storage/checkpoint-sync.js";
import type { S3Store } from "../adapters/storage/s3.js";
import { layout } from "../core/checkpoints.js";

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
