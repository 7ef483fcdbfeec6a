// Runs the Python shim's pytest suite (recipes/python/rlpipe_reward.py against a live `rlpipe serve`).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "./helpers.js";

describe("verl reward shim (pytest)", () => {
  it("passes its pytest suite against a live rlpipe serve", { timeout: 300_000 }, () => {
    const r = spawnSync(join(ROOT, ".venv-test", "bin", "python"), ["-m", "pytest", "-q", "-p", "no:cacheprovider", join(ROOT, "test", "python", "test_reward_shim.py")], {
      cwd: ROOT, encoding: "utf8", timeout: 280_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /\d+ passed/);
    assert.doesNotMatch(r.stdout, /skipped|xfail/);
  });
});
