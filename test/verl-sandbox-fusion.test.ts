// verl's own SandboxFusion reward client, as released, against `rlpipe serve` for every language it offers (the pytest
// suite test/python/test_verl_sandbox_fusion.py; npm test's setup installs every language, so nothing may skip).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ROOT } from "./helpers.js";

describe("verl's sandbox_fusion client (pytest)", () => {
  it("scores right and wrong programs in every language the server offers", { timeout: 600_000 }, () => {
    const r = spawnSync(join(ROOT, ".venv-test", "bin", "python"), ["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", join(ROOT, "test", "python", "test_verl_sandbox_fusion.py")], {
      cwd: ROOT, encoding: "utf8", timeout: 580_000, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" },
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /\d+ passed/);
    assert.doesNotMatch(r.stdout, /skipped|xfail/, "every language's toolchain is installed by npm test's setup");
  });
});
