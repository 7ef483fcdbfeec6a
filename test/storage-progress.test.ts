// Progress of `rlpipe sync` and `rlpipe restore`: bytes, rate and ETA on stderr — one line redrawn in place on a
// terminal (log lines printed above it), plain periodic lines otherwise, nothing extra with --json.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { StatusLine, TransferMeter, formatBytes, formatDuration } from "../bin/commands/transfer-meter.js";
import { streamIo } from "../bin/io.js";
import { run } from "./checkpoint-helpers.js";
import { ROOT } from "./helpers.js";

const MiB = 1024 * 1024;
const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

describe("transfer meter", () => {
  it("says bytes of total, percent, the rate over the last seconds and the ETA", () => {
    let t = 0;
    const out: string[] = [];
    const status = new StatusLine({ io: { err: (x) => out.push(x) }, now: () => t, plainIntervalMs: 10_000 });
    const m = new TransferMeter("upload step 20", 54 * MiB, status, () => t);
    for (let i = 1; i <= 12; i++) { t = i * 1000; m.add(3 * MiB); } // 3 MiB/s
    assert.equal(m.text(), "upload step 20: 36.0 MiB of 54.0 MiB (66%), 3.0 MiB/s, ETA 6 s");
    assert.deepEqual(out, ["upload step 20: 30.0 MiB of 54.0 MiB (55%), 3.0 MiB/s, ETA 8 s"], "not a terminal: a plain line per interval");
    m.add(-3 * MiB); // a range fetched again from its start
    assert.match(m.text(), /^upload step 20: 33\.0 MiB of 54\.0 MiB \(61%\)/);
    m.finish();
    assert.equal(out.length, 1, "nothing more at the end (the command's own summary line follows)");
  });

  it("on a terminal: one line redrawn in place at most every 200 ms; log lines go above it; finish clears it", () => {
    let t = 0;
    const out: string[] = [];
    // The CLI's own Io on a terminal (what processIo builds), writing into `out`.
    const io = streamIo((x) => out.push(x), (x) => out.push(x), { terminal: { columns: () => 120 }, redact: (x) => x });
    const status = new StatusLine({ io, now: () => t });
    const m = new TransferMeter("download step 7", 10 * MiB, status, () => t);
    t = 250; m.add(MiB);
    t = 300; m.add(MiB); // too soon: not drawn
    t = 500; m.add(MiB);
    assert.deepEqual(out.map((x) => x.startsWith("\r\x1b[2Kdownload step 7: ")), [true, true]);
    status.line("[rlpipe sync] step 6: deleted by retention");
    assert.match(out.slice(2).join(""), /^\r\x1b\[2K\[rlpipe sync\] step 6: deleted by retention\ndownload step 7: 3\.0 MiB of 10\.0 MiB \(30%\)/);
    m.finish();
    assert.equal(out.at(-1), "\r\x1b[2K");
    const before = out.length;
    status.line("done");
    assert.deepEqual(out.slice(before), ["done\n"], "no live line left to redraw");
  });

  it("the terminal's live line is cut to its width and never wraps", () => {
    const out: string[] = [];
    const io = streamIo((x) => out.push(x), (x) => out.push(x), { terminal: { columns: () => 30 }, redact: (x) => x });
    io.status!("x".repeat(100));
    assert.equal(out[0], `\r\x1b[2K${"x".repeat(29)}`);
  });

  it("formats sizes and durations for people", () => {
    assert.deepEqual([formatBytes(512), formatBytes(1536), formatBytes(5 * 1024 ** 3)], ["512 B", "1.5 KiB", "5.0 GiB"]);
    assert.deepEqual([formatDuration(4.4), formatDuration(125), formatDuration(7300)], ["4 s", "2 min 05 s", "2 h 01 min"]);
  });
});

describe("rlpipe sync and restore show progress on stderr", () => {
  let work: string;
  before(() => {
    work = mkdtempSync(join(tmpdir(), "rlpipe-progress-"));
    const d = join(work, "ckpt", "global_step_3", "actor");
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, "model_world_size_1_rank_0.pt"), randomBytes(24 * MiB));
    writeFileSync(join(work, "ckpt", "latest_checkpointed_iteration.txt"), "3");
  });
  after(() => rmSync(work, { recursive: true, force: true }));

  // stderr is a pipe here (not a terminal): plain lines, as often as RLPIPE_PROGRESS_S allows (1 ms).
  const env = { PATH: process.env["PATH"] ?? "/usr/bin:/bin", RLPIPE_PROGRESS_S: "0.001" };
  const line = /(upload|download) step 3: [\d.]+ (B|KiB|MiB) of 24\.0 MiB \(\d+%\), [\d.]+ (B|KiB|MiB|GiB)\/s, ETA (\d+ s|—)/;

  it("plain periodic lines with bytes, rate and ETA when stderr is not a terminal", async () => {
    const store = join(work, "store-a");
    const sync = await run(process.execPath, [CLI, "sync", "run-p", "--watch", join(work, "ckpt"), "--once", "--store", store], { env });
    assert.equal(sync.status, 0, sync.stderr);
    assert.match(sync.stderr, new RegExp(`^${line.source.replace("(upload|download)", "upload")}$`, "m"));
    assert.match(sync.stderr, /\[rlpipe sync\] step 3: committed 1 files, 24\.0 MiB/);
    const restore = await run(process.execPath, [CLI, "restore", "run-p", join(work, "into-a"), "--store", store], { env });
    assert.equal(restore.status, 0, restore.stderr);
    assert.match(restore.stderr, new RegExp(`^${line.source.replace("(upload|download)", "download")}$`, "m"));
    assert.match(restore.stdout, /^restored run-p step 3: 1 files, 24\.0 MiB, every SHA-256 verified/);
  });

  it("nothing extra with --json", async () => {
    const store = join(work, "store-b");
    const sync = await run(process.execPath, [CLI, "sync", "run-q", "--watch", join(work, "ckpt"), "--once", "--json", "--store", store], { env });
    assert.equal(sync.status, 0, sync.stderr);
    assert.doesNotMatch(sync.stderr, line);
    assert.deepEqual(JSON.parse(sync.stdout).committed, [3]);
    const restore = await run(process.execPath, [CLI, "restore", "run-q", join(work, "into-b"), "--json", "--store", store], { env });
    assert.equal(restore.status, 0, restore.stderr);
    assert.equal(restore.stderr, "");
    assert.equal(JSON.parse(restore.stdout).step, 3);
  });
});
