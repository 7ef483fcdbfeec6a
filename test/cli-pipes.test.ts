// Everyday CLI use as a new user meets it (issue 35): a reader that stops reading (`| head -1`) ends rlpipe quietly
// with exit 0, never an unhandled EPIPE stack; `run-token --out -` refuses instead of writing a file named "-" (the
// token is a credential and is never printed).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "./helpers.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
const ENTRY = join(ROOT, "dist", "bin", "entry.js");

describe("rlpipe in a pipeline", () => {
  for (const [what, script] of [["dist/bin/rlpipe.js", CLI], ["the installed command (bin/entry.js)", ENTRY]] as const) {
    it(`${what}: \`schema | head -1\` prints one line and exits 0, with no EPIPE stack`, () => {
      const r = spawnSync("bash", ["-c", `"$0" "$1" schema | head -1; echo "rc=\${PIPESTATUS[0]}" >&2`, process.execPath, script], { encoding: "utf8", timeout: 60_000 });
      assert.equal(r.stdout, "{\n");
      assert.match(r.stderr, /rc=0\n$/);
      assert.doesNotMatch(r.stderr, /EPIPE|Unhandled 'error' event|node:events/);
    });
  }

  it("`run-token --out -` is refused (exit 2) and writes no file named '-'; the token never reaches stdout", () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-token-"));
    try {
      const r = spawnSync(process.execPath, [CLI, "run-token", "job-0a1b2c3d", "--secret-env", "RUNS_SECRET", "--out", "-"], {
        cwd: dir, encoding: "utf8", env: { ...process.env, RUNS_SECRET: "0123456789abcdef0123456789" },
      });
      assert.equal(r.status, 2, r.stderr);
      assert.equal(r.stdout, "");
      assert.match(r.stderr, /give a file to write the token to \(mode 600\); it is a credential and is never printed/);
      assert.equal(existsSync(join(dir, "-")), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("rlpipe eval's row lines", () => {
  it("a row that ran and failed every case says failed 0/3, not ok 0/3 (ok is the sandbox's status, not a verdict)", { timeout: 180_000 }, () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-eval-words-"));
    try {
      const row = {
        id: "wrong-two-sum", data_source: "rlpipe-demo",
        solution: "```python\ndef two_sum(nums, target):\n    return [9, 9]\n```",
        ground_truth: { fn_name: "two_sum", inputs: [[[2, 7, 11, 15], 9], [[3, 2, 4], 6], [[3, 3], 6]], outputs: [[[0, 1]], [[1, 2]], [[0, 1]]] },
      };
      writeFileSync(join(dir, "rows.jsonl"), `${JSON.stringify(row)}\n`);
      const r = spawnSync(process.execPath, [CLI, "eval", join(dir, "rows.jsonl"), "--response-field", "solution"], { cwd: dir, encoding: "utf8", timeout: 170_000 });
      assert.match(r.stdout, /rows\.jsonl:1 wrong-two-sum failed 0\/3/, `${r.stdout}\n${r.stderr}`);
      assert.doesNotMatch(r.stdout, / ok 0\/3/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("a bearer URL the user asked for (rlpipe report --url)", () => {
  it("goes out whole on the bearer channel, while everything else printed has its signature redacted", async () => {
    const { streamIo } = await import("../bin/io.js");
    const { Redactor } = await import("../core/redact.js");
    // A made-up key id, assembled here so no credential-shaped literal sits in the source.
    const keyId = ["AK", "IA", "T".repeat(16)].join("");
    const url = "https://rlpipe-runs.obs.cn-southwest-2.myhuaweicloud.com/job-0a1b2c3d/report.html?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + keyId + "%2F20261202%2Fcn-southwest-2%2Fs3%2Faws4_request&X-Amz-Date=20261202T120000Z&X-Amz-Expires=900&X-Amz-Signature=0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0&X-Amz-SignedHeaders=host";
    const out: string[] = [];
    const r = new Redactor({});
    const io = streamIo((t) => out.push(t), () => undefined, { terminal: undefined, redact: (t) => r.redact(t) });
    io.out(url);
    assert.doesNotMatch(out[0]!, /0f1e2d3c4b5a6978/, "printed the ordinary way, the signature is redacted");
    io.bearer!(url);
    assert.equal(out[1], `${url}\n`, "asked for as a bearer link, it is whole (a redacted signature is a dead link)");
    const { readFileSync } = await import("node:fs");
    assert.match(readFileSync(join(ROOT, "bin", "commands", "report.ts"), "utf8"), /io\.bearer\(page\.url\)/, "report --url prints through the bearer channel");
  });
});
