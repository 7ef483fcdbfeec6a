// Which verl tool class a recipe's tools render to, per verl profile: verl's stock SandboxFusionTool where the recipe's
// verl has it, rlpipe's own (rlpipe_tool.py, then shipped in the bundle with the shim it uses, and found on the
// PYTHONPATH launch.sh exports) where it does not (v0.9.1) and for the `rlpipe` preset. A token is never written into
// the tool config: the tool reads the variable it names.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { bundledAssets } from "../bin/commands/plan.js";

function recipe(ref: string, preset: string): string {
  return `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: tool-render }
runtime: { accelerator: nvidia-gpu, workDir: /work/run, verl: { ref: ${ref} } }
resources: { nodes: 1, devicesPerNode: 1 }
models: { m: { path: models/m } }
datasets: { d: { path: d.parquet, format: verl-rl } }
sandbox: { kind: rlpipe, deploy: colocated, url: "http://127.0.0.1:8080", auth: { secret: sandbox-token } }
secrets: { sandbox-token: { env: MY_SANDBOX_TOKEN } }
tools: [{ name: code_interpreter, preset: ${preset} }]
stages:
  - { id: rl, type: rl, model: m, data: { train: d, promptsPerStep: 2, maxPromptLength: 8, maxResponseLength: 8 }, rollout: { engine: vllm, mode: async }, agent: { multiTurn: true, tools: [code_interpreter] } }
`;
}

function render(ref: string, preset: string) {
  const p = plan(parseRecipe(recipe(ref, preset), "r.yaml"), { provider: "local", assets: bundledAssets() });
  const file = (path: string) => p.files.find((f) => f.path === path);
  const tools = p.files.find((f) => f.path.startsWith("tool_config/"))!.content;
  return { tools, file, launch: file("launch.sh")!.content };
}

describe("verl tool classes per verl version", () => {
  it("sandbox-fusion: verl's stock class where the recipe's verl has it, nothing extra in the bundle", () => {
    const r = render("v0.7.0", "sandbox-fusion");
    assert.match(r.tools, /class_name: verl\.tools\.sandbox_fusion_tools\.SandboxFusionTool\n/);
    assert.equal(r.file("rlpipe_tool.py"), undefined);
    assert.doesNotMatch(r.launch, /PYTHONPATH/);
  });

  it("sandbox-fusion on v0.9.1 (no SandboxFusionTool): rlpipe's own tool with the same settings, shipped and on PYTHONPATH", () => {
    const r = render("v0.9.1", "sandbox-fusion");
    assert.match(r.tools, /class_name: rlpipe_tool\.RlpipeCodeTool\n/);
    assert.match(r.tools, /sandbox_fusion_url: http:\/\/127\.0\.0\.1:8080\/run_code\n/);
    assert.equal(r.file("rlpipe_tool.py")!.content, bundledAssets()["rlpipe_tool.py"]);
    assert.ok(r.file("rlpipe_reward.py"), "the tool's HTTP client comes with it");
    assert.match(r.launch, /export PYTHONPATH="\$RLPIPE_WORKDIR\$\{PYTHONPATH:\+:\$PYTHONPATH\}"/);
  });

  for (const ref of ["v0.6.1", "v0.9.1"]) {
    it(`rlpipe on ${ref}: rlpipe's own tool, the token's variable named, never the token or a /t/ prefix`, () => {
      const r = render(ref, "rlpipe");
      assert.match(r.tools, /class_name: rlpipe_tool\.RlpipeCodeTool\n/);
      assert.match(r.tools, /sandbox_url: http:\/\/127\.0\.0\.1:8080\/run_code\n/);
      assert.match(r.tools, /token_env: MY_SANDBOX_TOKEN\n/);
      assert.doesNotMatch(r.tools, /\/t\/|oc\.env/);
      assert.ok(r.file("rlpipe_tool.py"));
    });
  }
});
