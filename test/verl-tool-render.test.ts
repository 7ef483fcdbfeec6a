// Which verl tool class a recipe's tools render to, per verl profile: verl's stock SandboxFusionTool where the recipe's
// verl has it, rlpipe's own (rlpipe_tool.py, then shipped in the bundle with the shim it uses, and found on the
// PYTHONPATH launch.sh exports) where it does not (v0.9.1) and for the `rlpipe` preset. A token is never written into
// the tool config: the tool reads the variable it names.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { plan } from "../core/plan.js";
import { loadRecipeFile, parseRecipe } from "../core/recipe/load.js";
import { PROFILES } from "../core/recipe/profiles.js";
import { ROOT } from "./helpers.js";
import { bundledAssets } from "../bin/commands/plan.js";

function recipe(ref: string, preset: string, extra = ""): string {
  return `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: tool-render }
runtime: { accelerator: nvidia-gpu, workDir: /work/run, verl: { ref: ${ref}${extra} } }
resources: { nodes: 1, devicesPerNode: 1 }
models: { m: { path: models/m } }
datasets: { d: { path: d.parquet, format: verl-rl } }
sandbox: { kind: rlpipe, deploy: colocated, url: "http://127.0.0.1:8080", auth: { secret: sandbox-token } }
secrets: { sandbox-token: { env: MY_SANDBOX_TOKEN } }
tools: [{ name: code_interpreter, ${preset} }]
stages:
  - { id: rl, type: rl, model: m, data: { train: d, promptsPerStep: 2, maxPromptLength: 8, maxResponseLength: 8 }, rollout: { engine: vllm, mode: async }, agent: { multiTurn: true, tools: [code_interpreter] } }
`;
}

function render(ref: string, preset: string) {
  const p = plan(parseRecipe(recipe(ref, `preset: ${preset}`), "r.yaml"), { provider: "local", assets: bundledAssets() });
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

  it("retool-sandbox-fusion where recipe/retool has left the verl tree: rlpipe's tool, reshaping the code as retool's did", () => {
    assert.match(render("v0.6.1", "retool-sandbox-fusion").tools, /class_name: recipe\.retool\.retool\.CustomSandboxFusionTool\n/);
    const r = render("v0.9.1", "retool-sandbox-fusion");
    assert.match(r.tools, /class_name: rlpipe_tool\.RlpipeCodeTool\n/);
    assert.match(r.tools, /retool_code: true\n/);
  });

  it("a class neither the recipe's verl nor the bundle has is refused at plan (exit 2, the field named); runtime.verl.provides declares one", () => {
    const stock = "preset: sandbox-fusion, impl: verl.tools.sandbox_fusion_tools.SandboxFusionTool";
    assert.doesNotThrow(() => plan(parseRecipe(recipe("v0.7.0", stock), "r.yaml"), { provider: "local", assets: bundledAssets() }));
    assert.throws(() => plan(parseRecipe(recipe("v0.9.1", stock), "r.yaml"), { provider: "local", assets: bundledAssets() }), (e: Error & { exitCode?: number; issues?: { code: string; path: (string | number)[]; message: string; hint?: string }[] }) => {
      assert.equal(e.exitCode, 2);
      const issue = e.issues?.find((i) => i.code === "unknown_tool_class");
      assert.ok(issue, e.message);
      assert.deepEqual(issue.path, ["tools", 0, "impl"]);
      assert.match(issue.message, /verl\.tools\.sandbox_fusion_tools\.SandboxFusionTool is not a tool class of verl v0\.9\.1/);
      assert.match(issue.hint ?? "", /preset: rlpipe/);
      return true;
    });
    const forked = "preset: sandbox-fusion, impl: verl.tools.my_tool.MyTool";
    assert.throws(() => plan(parseRecipe(recipe("v0.7.0", forked), "r.yaml"), { provider: "local", assets: bundledAssets() }), /verl\.tools\.my_tool\.MyTool is not a tool class/);
    const p = plan(parseRecipe(recipe("v0.7.0", forked, ", provides: [verl.tools.my_tool.MyTool]"), "r.yaml"), { provider: "local", assets: bundledAssets() });
    assert.match(p.files.find((f) => f.path.startsWith("tool_config/"))!.content, /class_name: verl\.tools\.my_tool\.MyTool\n/);
  });

  it("every shipped recipe, planned for every verl profile, names only tool classes that exist there or that it declares", () => {
    const dir = join(ROOT, "recipes");
    let planned = 0;
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort()) {
      for (const profile of PROFILES) {
        const loaded = loadRecipeFile(join(dir, file));
        let p;
        try {
          p = plan(loaded, { provider: "local", profile: profile.name, localWorkDir: "/tmp/w", assets: bundledAssets() });
        } catch (e) {
          const issues = (e as { issues?: { code: string; message: string }[] }).issues ?? [];
          assert.ok(issues.length > 0, `${file} on ${profile.name}: ${(e as Error).message}`);
          assert.deepEqual(issues.filter((i) => i.code === "unknown_tool_class"), [], `${file} on ${profile.name}`);
          continue; // refused for another reason this version gives (e.g. a reward function without **kwargs)
        }
        planned++;
        for (const f of p.files.filter((x) => x.path.startsWith("tool_config/") || x.path.includes("/tool_config/"))) {
          for (const [, cls] of f.content.matchAll(/class_name: (\S+)/g)) {
            const known = cls === "rlpipe_tool.RlpipeCodeTool" ? p.files.some((x) => x.path === "rlpipe_tool.py")
              : profile.toolClasses.includes(cls!) || (loaded.recipe.runtime.verl.provides ?? []).includes(cls!);
            assert.ok(known, `${file} on ${profile.name}: ${cls}`);
          }
        }
      }
    }
    assert.ok(planned >= 20, `only ${planned} recipe × profile plans went through`);
  });
});
