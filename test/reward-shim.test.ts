// Runs the pytest suites of the Python files rlpipe ships into bundles against a live `rlpipe serve`: the reward shim
// (recipes/python/rlpipe_reward.py) and the verl tool (recipes/python/rlpipe_tool.py, driven from every pinned verl release).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "./helpers.js";

/** Runs one pytest file of test/python in the test virtualenv: it must pass, with nothing skipped. */
function pytest(file: string, timeoutMs: number): void {
  const r = spawnSync(join(ROOT, ".venv-test", "bin", "python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", join(ROOT, "test", "python", file)], {
    cwd: ROOT, encoding: "utf8", timeout: timeoutMs, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /\d+ passed/);
  assert.doesNotMatch(r.stdout, /skipped|xfail/);
}

describe("verl reward shim and tool (pytest)", () => {
  it("passes its pytest suite against a live rlpipe serve", { timeout: 300_000 }, () => pytest("test_reward_shim.py", 280_000));

  it("rlpipe's verl tool passes its pytest suite with every pinned verl release's BaseTool, against a live rlpipe serve", { timeout: 600_000 },
    () => pytest("test_rlpipe_tool.py", 580_000));
});
