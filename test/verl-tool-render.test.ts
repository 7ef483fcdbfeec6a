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

// verl's function-tool registry (0.8.0 on): the tool rendered as `type: function` is loaded by verl's own load_all_tools
// from multi_turn.function_tool_path and called as its agent loop calls a FunctionTool, against a real rlpipe serve.
const FUNCTION_DRIVER = String.raw`
import asyncio, json, os, sys, types
tree, bundle, path, helpers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
sys.path.insert(0, helpers)
import verl_tree
verl_tree.stand_up(tree)
# transformers is only needed to infer a schema from a docstring; rlpipe gives the schema, so it must never be called.
tu = types.ModuleType("transformers.utils")
def get_json_schema(fn): raise AssertionError("the schema was inferred instead of given")
tu.get_json_schema = get_json_schema
sys.modules["transformers"] = types.ModuleType("transformers"); sys.modules["transformers.utils"] = tu
sys.path.insert(0, bundle)
from verl.tools.tool_registry import load_all_tools
from verl.tools.function_tool import FunctionTool, normalize_function_tool_return
tools = load_all_tools(None, os.path.join(bundle, path))
async def main():
    out = []
    for code in ("print(6*7)", "raise SystemExit(3)"):
        resp, reward, metrics = normalize_function_tool_return(await tools[0].call({"code": code}))
        out.append({"text": resp.text, "reward": reward, "infra": metrics.get("rlpipe_infra_error")})
    return out
res = asyncio.run(main())
print(json.dumps({"names": [t.name for t in tools], "function": all(isinstance(t, FunctionTool) for t in tools),
                  "schema": tools[0].tool_schema.model_dump(exclude_none=True)["function"]["parameters"]["required"], "calls": res}))
`;

describe("verl's function-tool registry (0.8.0 on)", () => {
  const withFunctionTools = PROFILES.filter((p) => p.functionTools);
  it("the releases with a function-tool registry are 0.8.0, 0.9.0 and 0.9.1 (each checked below with its own loader)", () => {
    assert.deepEqual(withFunctionTools.map((p) => p.pypi), ["0.8.0", "0.9.0", "0.9.1"]);
  });
  for (const profile of withFunctionTools) it(`${profile.name}: renders type: function to function_tool_path; that release's own loader registers it and its calls run in rlpipe serve`, { timeout: 180_000 }, async () => {
    const { spawnSync } = await import("node:child_process");
    const { mkdtempSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { writeBundle } = await import("../bin/bundle-writer.js");
    const { startServe } = await import("./serve-process.js");
    const serve = await startServe(["--sandbox", "local"]);
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-fn-tool-"));
    try {
      const text = recipe(profile.name, "preset: rlpipe, type: function").replace("http://127.0.0.1:8080", serve.url);
      const p = plan(parseRecipe(text, "r.yaml"), { provider: "local", assets: bundledAssets() });
      const stage = p.stages.find((s) => s.id === "rl")!;
      assert.ok(stage.argv.includes("actor_rollout_ref.rollout.multi_turn.function_tool_path=tool_config/rl_function_tools.py"), stage.argv.join(" "));
      assert.ok(!stage.argv.some((a) => a.startsWith("actor_rollout_ref.rollout.multi_turn.tool_config_path=")), "no class-based tool config");
      const file = p.files.find((f) => f.path === "tool_config/rl_function_tools.py")!;
      assert.match(file.content, /^from rlpipe_tool import register_function_tool$/m);
      assert.doesNotMatch(file.content, /MY_SANDBOX_TOKEN=|[0-9a-f]{32}/, "the token's variable is named, never a value");
      assert.ok(p.files.some((f) => f.path === "rlpipe_tool.py") && p.files.some((f) => f.path === "rlpipe_reward.py"));
      writeBundle(dir, p.files);
      const r = spawnSync(join(ROOT, ".venv-test", "bin", "python"), ["-c", FUNCTION_DRIVER, join(ROOT, ".venv-test", "verl", profile.pypi), dir, "tool_config/rl_function_tools.py", join(ROOT, "test", "python")], { encoding: "utf8", timeout: 120_000 });
      assert.equal(r.status, 0, r.stderr);
      const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
      assert.deepEqual(out.names, ["code_interpreter"]);
      assert.equal(out.function, true);
      assert.deepEqual(out.schema, ["code"]);
      assert.deepEqual(out.calls[0], { text: "42\n", reward: 0, infra: 0 });
      assert.equal(out.calls[1].infra, 0, "a program's own failure is its output, not an infra error");
    } finally {
      await serve.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses type: function where the recipe's verl has no function tools, and for a tool that is not rlpipe's", () => {
    for (const [ref, preset, code, field] of [["v0.7.0", "preset: rlpipe, type: function", "unsupported_for_version", "type"], ["v0.9.1", "preset: scalebox, type: function", "function_tool_not_rlpipe", "type"]] as const) {
      assert.throws(() => plan(parseRecipe(recipe(ref, preset), "r.yaml"), { provider: "local", assets: bundledAssets() }),
        (e: Error & { issues?: { code: string; path: readonly (string | number)[] }[] }) => {
          const issue = e.issues?.find((i) => i.code === code);
          assert.ok(issue, `${ref} ${preset}: ${JSON.stringify(e.issues)}`);
          assert.deepEqual(issue.path, ["tools", 0, field]);
          return true;
        });
    }
  });
});
