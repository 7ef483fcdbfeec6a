// Real clients of SandboxFusion against `rlpipe serve`, in the test virtualenv's pytest: verl's own sandbox_fusion
// reward client as released (test/python/test_verl_sandbox_fusion.py) and SandboxFusion's published SDK with its
// response models (test/python/test_sandbox_fusion_sdk.py), for every language the server offers and every one in the
// shared table (npm test's setup installs them all).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "./helpers.js";

function pytest(file: string): void {
  const r = spawnSync(join(ROOT, ".venv-test", "bin", "python"), ["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", join(ROOT, "test", "python", file)], {
    cwd: ROOT, encoding: "utf8", timeout: 580_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
  });
  assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /\d+ passed/);
  assert.doesNotMatch(r.stdout, /skipped|xfail/, "nothing of the suite was left out");
}

describe("SandboxFusion's clients against rlpipe serve (pytest)", () => {
  it("verl's sandbox_fusion client scores right and wrong programs in every language the server offers", { timeout: 600_000 }, () => pytest("test_verl_sandbox_fusion.py"));
  it("SandboxFusion's SDK runs every language, summarises failures by its rules, and runs Jupyter cells", { timeout: 600_000 }, () => pytest("test_sandbox_fusion_sdk.py"));
});
