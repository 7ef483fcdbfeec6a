// What a new user types at the storage commands, against a file:// store (issue 23): the job name `rlpipe list`
// shows where the store keeps runs per stage, a restore into a path that cannot be a directory, sync --watch of a
// directory that does not exist. Each answer is an exit code of the convention and a message that says what to do.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ROOT } from "./helpers.js";
import { CLI, runCli } from "./cli-process.js";


const rlpipe = (args: readonly string[], cwd: string) => runCli(args, { cwd, env: { RLPIPE_PROGRESS_S: "0" } });

const metricsLine = (step: number, score: number) => `${JSON.stringify({ step, data: { "critic/score/mean": score, "response_length/mean": 100 + step } })}\n`;

describe("rlpipe metrics <job>: the name rlpipe list shows, while the store keeps <job>.<stage>", () => {
  let dir: string;
  let store: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-names-"));
    store = `file://${join(dir, "store")}`;
    mkdirSync(join(dir, "ckpt"));
    // Two jobs as a deploy leaves them: one with a single stage, one with two (each stage a run of its own).
    for (const [run, score] of [["one-1a2b3c4d.check", 0.9], ["two-5e6f7a8b.sft", 0.2], ["two-5e6f7a8b.rl", 0.7]] as const) {
      const file = join(dir, `${run}.jsonl`);
      writeFileSync(file, metricsLine(1, score / 2) + metricsLine(2, score));
      const r = rlpipe(["sync", run, "--watch", join(dir, "ckpt"), "--metrics", file, "--once", "--store", store], dir);
      assert.equal(r.code, 0, r.err);
    }
    // What the job's sandbox records under the job's own name (usage per run): the store knows the name, no metrics.
    mkdirSync(join(dir, "store", "one-1a2b3c4d", "usage"), { recursive: true });
    writeFileSync(join(dir, "store", "one-1a2b3c4d", "usage", "node-0.json"), "{}\n");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a job with one stage: its stage's metrics, and a line saying which run they are", () => {
    const r = rlpipe(["metrics", "one-1a2b3c4d", "--store", store], dir);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /run one-1a2b3c4d\.check: latest values\n {2}reward \(score mean\)\s+0\.9 {2}\(step 2, critic\/score\/mean\)/);
    assert.match(r.err, /one-1a2b3c4d is a deployed job; its metrics are in its stage run one-1a2b3c4d\.check/);
    const json = rlpipe(["metrics", "one-1a2b3c4d", "--store", store, "--json"], dir);
    assert.equal(json.code, 0, json.err);
    assert.equal((JSON.parse(json.out) as { run: string }).run, "one-1a2b3c4d.check");
  });

  it("a job with several stages: all of them (printed and plotted as runs)", () => {
    const r = rlpipe(["metrics", "two-5e6f7a8b", "--store", store, "--plot", join(dir, "two.svg")], dir);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /run two-5e6f7a8b\.rl: latest values[\s\S]*0\.7[\s\S]*run two-5e6f7a8b\.sft: latest values[\s\S]*0\.2/);
    assert.match(r.err, /wrote \S+two\.svg \(SVG, \d+ panels?, 2 runs\)/);
  });

  it("a mistyped stage: exit 2, naming the runs of that job the store does hold", () => {
    const r = rlpipe(["metrics", "two-5e6f7a8b.rll", "--store", store, "--json"], dir);
    assert.equal(r.code, 2, r.err);
    const e = (JSON.parse(r.out) as { error: { code: string; message: string; hint: string } }).error;
    assert.equal(e.code, "unknown_run");
    assert.match(e.message, /no run named two-5e6f7a8b\.rll in file:\/\//);
    assert.match(e.hint, /two-5e6f7a8b\.rl, two-5e6f7a8b\.sft/);
    const unknown = rlpipe(["metrics", "three-00000000", "--store", store], dir);
    assert.equal(unknown.code, 2);
    assert.match(unknown.err, /no run named three-00000000/);
  });
});

describe("rlpipe restore: DIR is left as it was when the restore fails", () => {
  let dir: string;
  let store: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-restore-dir-"));
    store = `file://${join(dir, "store")}`;
    const ckpt = join(dir, "ckpt");
    mkdirSync(join(ckpt, "global_step_3", "actor"), { recursive: true });
    writeFileSync(join(ckpt, "global_step_3", "actor", "shard.pt"), "weights of step 3\n");
    writeFileSync(join(ckpt, "latest_checkpointed_iteration.txt"), "3");
    const r = rlpipe(["sync", "job-1.rl", "--watch", ckpt, "--once", "--store", store], dir);
    assert.equal(r.code, 0, r.err);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("a path that is a file: exit 2 naming it (not an internal error), and the file is untouched", () => {
    const file = join(dir, "notes.txt");
    writeFileSync(file, "mine\n");
    const r = rlpipe(["restore", "job-1.rl", file, "--store", store, "--json"], dir);
    assert.equal(r.code, 2, r.err);
    const e = (JSON.parse(r.out) as { error: { code: string; message: string; hint: string } }).error;
    assert.equal(e.code, "restore_dir_not_directory");
    assert.equal(e.message, `${file} is a file, not a directory`);
    assert.match(e.hint, /empty or new directory/);
    assert.equal(readFileSync(file, "utf8"), "mine\n");
  });

  it("a step that does not verify: exit 1, and a new DIR (with the parents it needed) is not left behind; an existing empty DIR stays", () => {
    const damaged = join(dir, "damaged");
    const stored = join(dir, "store", "job-1.rl", "checkpoints", "global_step_3");
    mkdirSync(join(damaged, "job-1.rl", "checkpoints"), { recursive: true });
    for (const n of ["global_step_3", "global_step_3.manifest.json"]) cpSync(join(stored, "..", n), join(damaged, "job-1.rl", "checkpoints", n), { recursive: true });
    writeFileSync(join(damaged, "job-1.rl", "checkpoints", "global_step_3", "actor", "shard.pt"), "not the weights\n");
    const fresh = join(dir, "new", "restored");
    const r = rlpipe(["restore", "job-1.rl", fresh, "--store", `file://${damaged}`], dir);
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /shard\.pt: sha256 [0-9a-f]{64} does not match the manifest's/);
    assert.equal(existsSync(join(dir, "new")), false, "no empty directory left where there was none");
    const empty = join(dir, "empty");
    mkdirSync(empty);
    assert.equal(rlpipe(["restore", "job-1.rl", empty, "--store", `file://${damaged}`], dir).code, 1);
    assert.deepEqual(readdirSync(empty), [], "the existing directory stays, empty");
    const ok = rlpipe(["restore", "job-1.rl", fresh, "--store", store], dir);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(readFileSync(join(fresh, "global_step_3", "actor", "shard.pt"), "utf8"), "weights of step 3\n");
  });
});

describe("rlpipe sync --watch DIR where DIR does not exist", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-watch-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("--once: exit 2 naming the path (a mistyped directory is not 'nothing to upload'); nothing is written to the store", () => {
    const store = join(dir, "store-once");
    const r = rlpipe(["sync", "job-1.rl", "--watch", "chekpoints", "--once", "--store", `file://${store}`, "--json"], dir);
    assert.equal(r.code, 2, r.err);
    const e = (JSON.parse(r.out) as { error: { code: string; message: string; hint: string } }).error;
    assert.equal(e.code, "watch_dir_missing");
    assert.equal(e.message, `--watch chekpoints: ${join(dir, "chekpoints")} does not exist`);
    assert.match(e.hint, /trainer\.default_local_dir/);
    assert.equal(existsSync(store), false);
    writeFileSync(join(dir, "a-file"), "x");
    const file = rlpipe(["sync", "job-1.rl", "--watch", "a-file", "--once", "--store", `file://${store}`], dir);
    assert.equal(file.code, 2, file.err);
    assert.match(file.err, /a-file: a file, not a directory/);
  });

  it("watching beside a job: says it waits for the directory, and commits the first step once verl makes it", async () => {
    const store = join(dir, "store-watch");
    const child = spawn(process.execPath, [CLI, "sync", "job-2.rl", "--watch", "ckpt", "--interval-s", "0", "--store", `file://${store}`], { cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", RLPIPE_PROGRESS_S: "0" }, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (b: Buffer) => { err += b.toString(); });
    const exited = new Promise<number | null>((res) => child.once("exit", (code) => res(code)));
    try {
      const until = async (what: string, ok: () => boolean) => {
        for (const end = Date.now() + 60_000; !ok();) {
          assert.ok(Date.now() < end, `timed out waiting for ${what}: ${err}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      };
      await until("the waiting line", () => err.includes(`${join(dir, "ckpt")} does not exist yet; waiting for verl's first checkpoint there`));
      mkdirSync(join(dir, "ckpt", "global_step_1"), { recursive: true });
      writeFileSync(join(dir, "ckpt", "global_step_1", "shard.pt"), "w");
      writeFileSync(join(dir, "ckpt", "latest_checkpointed_iteration.txt"), "1");
      await until("step 1's manifest", () => existsSync(join(store, "job-2.rl", "checkpoints", "global_step_1.manifest.json")));
    } finally {
      child.kill("SIGTERM");
    }
    assert.equal(await exited, 0, err);
  });
});
