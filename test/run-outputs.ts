// For the managed-target tests: a seed recipe trimmed to what a loopback "container" can run (one RL stage, verl
// stubbed, no conda, patches, sandbox or dataset builds), and the checks a user makes after a run through the CLI:
// `rlpipe checkpoints`, `restore` and `metrics` against the store the run's outputs landed in.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { listFiles } from "../adapters/storage/checkpoint-sync.js";
import { run } from "./checkpoint-helpers.js";
import { parse } from "yaml";
import { ROOT, editYaml } from "./helpers.js";

export const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

/** The seed's RL stage alone, in `workDir`: what the job stub can run (its target and storage defaults kept). */
export function runnableSeed(text: string, target: "modelarts" | "tione", workDir: string): string {
  const data = parse(text) as { stages: { type: string }[]; datasets: Record<string, unknown>; models: Record<string, unknown> };
  const rl = data.stages.findIndex((s) => s.type === "rl");
  const edits: [(string | number)[], unknown][] = [
    [["runtime", "conda"], undefined], [["runtime", "verl", "path"], undefined], [["runtime", "verl", "patches"], undefined],
    [["runtime", "pip"], undefined], [["runtime", "envPresets"], undefined], [["runtime", "workDir"], undefined],
    [["sandbox"], undefined], [["tools"], undefined], [["reward"], undefined], [["secrets"], undefined],
    [["stages", rl, "agent"], undefined], [["stages", rl, "schedule", "saveEvery"], 2], [["stages", rl, "model"], Object.keys(data.models)[0]],
    [["stages", rl, "data", "customClass"], undefined], [["stages", rl, "outputDir"], undefined],
    [["targets", target, "workDir"], workDir],
    ...Object.keys(data.datasets).map((k): [(string | number)[], unknown] => [["datasets", k, "build"], undefined]),
  ];
  const oneStage = editYaml(text, edits);
  return editYaml(oneStage, [[["stages"], [(parse(oneStage) as { stages: unknown[] }).stages[rl]]]]);
}

export interface StoreEnv { readonly [name: string]: string }

/**
 * After a run: `rlpipe checkpoints <run> --store <uri> --json` lists the steps, `rlpipe restore` brings the newest
 * back byte for byte (every SHA-256 verified), and `rlpipe metrics --json` has every step the job logged.
 */
export async function assertRunInStore(opts: { run: string; store: string; env: StoreEnv; ckptDir: string; steps: readonly number[]; metricSteps: number; restoreInto: string }): Promise<void> {
  const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: opts.restoreInto, ...opts.env };
  const ck = await run(process.execPath, [CLI, "checkpoints", opts.run, "--store", opts.store, "--json"], { env });
  assert.equal(ck.status, 0, ck.stderr);
  const listed = JSON.parse(ck.stdout) as { step: number; files: number }[];
  assert.deepEqual(listed.map((s) => s.step), [...opts.steps], "rlpipe checkpoints lists every saved step");
  const newest = opts.steps[opts.steps.length - 1]!;
  const files = await listFiles(join(opts.ckptDir, `global_step_${newest}`));
  assert.equal(listed[listed.length - 1]!.files, files.length);
  const restored = join(opts.restoreInto, "restored");
  const rs = await run(process.execPath, [CLI, "restore", opts.run, restored, "--store", opts.store], { env });
  assert.equal(rs.status, 0, rs.stderr);
  assert.match(rs.stdout, /every SHA-256 verified/);
  assert.equal(readFileSync(join(restored, "latest_checkpointed_iteration.txt"), "utf8").trim(), String(newest));
  assert.deepEqual(await listFiles(join(restored, `global_step_${newest}`)), files);
  for (const f of files) {
    assert.ok(readFileSync(join(restored, `global_step_${newest}`, f)).equals(readFileSync(join(opts.ckptDir, `global_step_${newest}`, f))), `${f} restored byte for byte`);
  }
  const m = await run(process.execPath, [CLI, "metrics", opts.run, "--store", opts.store, "--json"], { env });
  assert.equal(m.status, 0, m.stderr);
  assert.equal((JSON.parse(m.stdout) as { steps: number }).steps, opts.metricSteps, "rlpipe metrics has every logged step");
}
