// Bad input gets a clear error: file:line:col, the recipe path, what was expected, what was found, a hint.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseDocument } from "yaml";
import { RecipeError, formatIssue, type LocatedIssue } from "../core/errors.js";
import { bundledAssets } from "../bin/commands/plan.js";
import { plan } from "../core/plan.js";
import { parseRecipe } from "../core/recipe/load.js";
import { recipeText } from "./helpers.js";

const FILE = "recipes/x.yaml";

/** Seed recipe text with one value set (or deleted) through the YAML AST, so comments and layout survive. */
function mutate(name: string, edits: [path: (string | number)[], value: unknown][]): string {
  const doc = parseDocument(recipeText(name));
  for (const [path, value] of edits) {
    if (value === undefined) doc.deleteIn(path);
    else doc.setIn(path, value);
  }
  return doc.toString();
}

function errorsOf(text: string, opts: Parameters<typeof plan>[1] = {}): LocatedIssue[] {
  try {
    plan(parseRecipe(text, FILE), { localWorkDir: "/tmp/w", assets: bundledAssets(), ...opts });
  } catch (e) {
    assert.ok(e instanceof RecipeError, `expected a RecipeError, got ${String(e)}`);
    assert.equal(e.exitCode, 2);
    return [...e.issues];
  }
  assert.fail("expected the recipe to be rejected");
}

function lineOf(text: string, needle: string): number {
  const i = text.split("\n").findIndex((l) => l.includes(needle));
  assert.ok(i >= 0, `no line contains ${needle}`);
  return i + 1;
}

function one(issues: LocatedIssue[], code: string): LocatedIssue {
  const hits = issues.filter((i) => i.code === code);
  assert.equal(hits.length, 1, `expected one ${code}, got: ${issues.map(formatIssue).join("\n")}`);
  return hits[0]!;
}

describe("recipe errors: syntax and types", () => {
  it("a wrong type reads file:line:col: path: expected …, got …, with a hint", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "rollout", "n"], "eight"]]);
    const issue = one(errorsOf(text), "invalid_type");
    const line = lineOf(text, "n: eight");
    assert.equal(formatIssue(issue).split("\n")[0], `${FILE}:${line}:10: stages[2].rollout.n: expected a positive integer, got "eight"`);
    assert.equal(issue.hint, "write a whole number of 1 or more, such as 2 (no quotes)");
  });

  it("malformed YAML points at the line", () => {
    const text = recipeText("retool-qwen3-4b-ascend").replace("  accelerator: ascend-npu", "  accelerator: [ascend-npu");
    const issue = errorsOf(text)[0]!;
    assert.equal(issue.code, "yaml_syntax");
    assert.ok(issue.line !== undefined && issue.line >= lineOf(text, "accelerator: [ascend-npu"));
  });

  it("a duplicate key is an error", () => {
    const text = recipeText("retool-qwen3-4b-tione-ags").replace("kind: Recipe", "kind: Recipe\nkind: Recipe");
    assert.equal(errorsOf(text)[0]!.code, "yaml_syntax");
  });

  it("an unknown key is an error with a did-you-mean, also across snake_case and camelCase", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "rollout", "temprature"], 0.9], [["stages", 2, "rollout", "max_model_len"], 100]]);
    const issues = errorsOf(text).filter((i) => i.code === "unknown_key");
    assert.deepEqual(issues.map((i) => [i.path.join("."), i.hint]), [
      ["stages.2.rollout.temprature", 'did you mean "temperature"?'],
      ["stages.2.rollout.max_model_len", 'did you mean "maxModelLen"?'],
    ]);
    assert.equal(issues[0]!.line, lineOf(text, "temprature:"));
  });

  it("an unknown key far from any field lists the allowed keys", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["resources", "zzzzzz"], 1]]);
    assert.match(one(errorsOf(text), "unknown_key").hint ?? "", /allowed keys here: nodes, devicesPerNode, deviceType/);
  });

  it("an enum typo suggests the value", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["sandbox", "kind"], "scalbox"]]);
    const issue = one(errorsOf(text), "invalid_value");
    assert.match(issue.message, /expected one of scalebox, sandbox-fusion, e2b, rlpipe, got "scalbox"/);
    assert.equal(issue.hint, 'did you mean "scalebox"?');
  });

  it("a missing required field names it and where it belongs", () => {
    const text = mutate("retool-qwen2.5-32b-h200", [[["stages", 2, "rollout", "engine"], undefined]]);
    const issue = one(errorsOf(text), "missing_field");
    assert.equal(issue.path.join("."), "stages.2.rollout.engine");
    assert.match(issue.message, /missing required field "engine"/);
  });

  it("an unknown stage type lists the types", () => {
    const text = mutate("retool-qwen2.5-32b-h200", [[["stages", 1, "type"], "merg"]]);
    const issue = errorsOf(text)[0]!;
    assert.match(issue.message, /expected a stage with type sft, merge, rl, eval or score, got "merg"/);
    assert.equal(issue.hint, 'did you mean "merge"?');
  });

  it("a recipe that is not a mapping, or empty, is refused cleanly", () => {
    assert.equal(errorsOf("- a\n- b\n")[0]!.code, "not_a_mapping");
    assert.equal(errorsOf("")[0]!.code, "not_a_mapping");
  });
});

describe("recipe errors: contradictions", () => {
  it("devices per node not divisible by the rollout tensor-parallel size", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "rollout", "tensorParallel"], 3]]);
    const issue = one(errorsOf(text), "tp_not_divisor");
    assert.equal(issue.path.join("."), "stages.2.rollout.tensorParallel");
    assert.match(issue.message, /tensor parallel 3 does not divide the 8 devices per node/);
    assert.equal(issue.hint, "use one of 1, 2, 4, 8");
    assert.equal(issue.line, lineOf(text, "tensorParallel: 3"));
  });

  it("a PPO mini-batch larger than the batch", () => {
    const text = mutate("retool-qwen3-4b-ascend", [[["stages", 2, "algorithm", "miniBatchPrompts"], 128]]);
    const issue = one(errorsOf(text), "mini_batch_too_large");
    assert.match(issue.message, /mini-batch 128 prompts is larger than the batch of 64 prompts/);
    assert.equal(issue.hint, "use at most 64 (a divisor of it, such as 64), or raise data.promptsPerStep");
  });

  it("a merge step past the last saved SFT step", () => {
    const text = mutate("retool-qwen3-4b-ascend", [[["stages", 1, "from", "step"], 217]]);
    const issue = one(errorsOf(text), "merge_past_last_step");
    assert.match(issue.message, /global_step_217 is past the last SFT step 186 \(2000 rows \/ batch 64 = 31 steps × 6 epochs\)/);
  });

  it("a merge step that is never saved", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 1, "from", "step"], 60]]);
    assert.match(one(errorsOf(text), "merge_step_not_saved").message, /saves every 50 steps/);
  });

  it("max_model_len below prompt + response", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "rollout", "maxModelLen"], 16384]]);
    const issue = one(errorsOf(text), "max_model_len");
    assert.match(issue.message, /maxModelLen 16384 is below maxPromptLength \+ maxResponseLength = 18432/);
  });

  it("a tool named in a stage but not defined", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["stages", 0, "agent", "tools"], ["code_interpretr"]]]);
    const issue = one(errorsOf(text), "unknown_tool");
    assert.equal(issue.path.join("."), "stages.0.agent.tools.0");
    assert.equal(issue.hint, 'did you mean "code_interpreter"?');
  });

  it("an unknown ${…} reference suggests the right one", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "model"], "${stages.merg.output}"]]);
    const issue = one(errorsOf(text), "unknown_reference");
    assert.equal(issue.hint, 'did you mean "merge"?');
  });

  it("a mini-batch whose responses do not split over the data-parallel ranks", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "algorithm", "miniBatchPrompts"], 31], [["stages", 2, "rollout", "n"], 3]]);
    const issue = one(errorsOf(text), "mini_batch_not_divisible");
    assert.match(issue.message, /31 prompts × n=3 = 93 responses is not divisible by the data-parallel size 8/);
    assert.equal(issue.hint, "use a mini-batch whose responses (prompts × 3) are a multiple of 8, such as 24 or 32 prompts");
  });

  it("an SFT global batch that does not divide over the data-parallel ranks", () => {
    const text = mutate("retool-qwen3-4b-ascend", [[["stages", 0, "batch", "global"], 66]]);
    const issue = one(errorsOf(text), "batch_not_divisible");
    assert.match(issue.message, /global batch 66 is not divisible by the data-parallel size 4/);
    assert.equal(issue.hint, "use a multiple of 4, such as 64 or 68");
  });

  it("an SFT sequence-parallel size that does not divide the devices per node says which sizes do", () => {
    const text = mutate("retool-qwen3-4b-ascend", [[["stages", 0, "parallel", "ulyssesSP"], 3]]);
    assert.match(one(errorsOf(text), "sp_not_divisor").hint ?? "", /^use one of 1, 2(, \d+)*$/);
  });

  it("a secret written into the recipe", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["tools", 0, "config"], { e2b_api_key: "ark_0123456789abcdef0123" }]]);
    const issues = errorsOf(text).filter((i) => i.code === "plain_secret");
    assert.equal(issues.length, 1);
    assert.equal(issues[0]!.path.join("."), "tools.0.config.e2b_api_key");
    assert.doesNotMatch(formatIssue(issues[0]!), /ark_0123/); // the message never repeats the secret
  });

  it("a managed sandbox whose key secret is not declared", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["sandbox", "managed", "apiKey", "secret"], "ags-key"]]);
    assert.equal(one(errorsOf(text), "unknown_secret").hint, 'did you mean "ags-api-key"?');
  });

  it("an env value that runs a command", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["stages", 0, "env", "X"], "$(curl evil)"]]);
    assert.equal(one(errorsOf(text), "unsafe_env_value").path.join("."), "stages.0.env.X");
  });

  it("several problems are all reported at once", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "rollout", "tensorParallel"], 3], [["stages", 2, "rollout", "maxModelLen"], 100]]);
    const codes = errorsOf(text).map((i) => i.code).sort();
    assert.deepEqual(codes, ["max_model_len", "tp_not_divisor"]);
  });
});

describe("recipe errors: verl version traps", () => {
  it("rollout.mode=sync is rejected on newer verl", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["stages", 2, "rollout", "mode"], "sync"]]);
    const issue = errorsOf(text, { profile: "v0.9.1" }).find((i) => i.code === "sync_rejected");
    assert.ok(issue !== undefined);
    assert.equal(issue.path.join("."), "stages.2.rollout.mode");
  });

  it("the prime reward manager never runs with the agent loop at c651b7b", () => {
    const text = mutate("qwen3-1.7b-code-toolcall", [[["reward", "manager"], "prime"]]);
    assert.equal(one(errorsOf(text), "prime_with_agent_loop").path.join("."), "reward.manager");
  });

  it("agent.loop needs agent.default_agent_loop, absent at f50e5c2e", () => {
    const text = mutate("retool-qwen2.5-32b-h200", [[["stages", 2, "agent", "loop"], "tool_agent"]]);
    assert.match(one(errorsOf(text), "unsupported_for_version").message, /default_agent_loop does not exist at verl f50e5c2e/);
  });

  it("data.tool_config_path is dropped with a warning before 11f536f0e", () => {
    const text = mutate("retool-qwen3-4b-ascend", [[["stages", 2, "agent", "toolSchemasInPromptLength"], true]]);
    const p = plan(parseRecipe(text, FILE), { provider: "docker" });
    assert.ok(p.warnings.some((w) => w.code === "dropped_for_version"));
    assert.ok(!p.stages[2]!.argv.some((a) => a.startsWith("data.tool_config_path=")));
    const newer = plan(parseRecipe(text, FILE), { provider: "docker", profile: "v0.6.1" });
    assert.ok(newer.stages[2]!.argv.some((a) => a.startsWith("data.tool_config_path=")));
  });

  it("compute_score must accept **kwargs with the agent loop (declared)", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["reward", "fn", "acceptsKwargs"], false]]);
    assert.equal(one(errorsOf(text), "reward_needs_kwargs").path.join("."), "reward.fn.acceptsKwargs");
  });

  it("compute_score must accept **kwargs with the agent loop (read from the file next to the recipe)", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["reward", "fn", "acceptsKwargs"], undefined]]);
    const bad = "def compute_score(data_source, solution_str, ground_truth, extra_info):\n    return 0.0\n";
    const good = "def compute_score(data_source, solution_str,\n                  ground_truth, extra_info=None, **kwargs):  # ok\n    return 0.0\n";
    const issues = errorsOf(text, { readRecipeFile: () => bad });
    assert.equal(one(issues, "reward_needs_kwargs").path.join("."), "reward.fn.path");
    const p = plan(parseRecipe(text, FILE), { provider: "tione", readRecipeFile: () => good, assets: bundledAssets() });
    assert.ok(!p.warnings.some((w) => w.code.startsWith("reward")));
    const unknown = plan(parseRecipe(text, FILE), { provider: "tione", assets: bundledAssets() });
    assert.ok(unknown.warnings.some((w) => w.code === "reward_kwargs_unverified"));
  });

  it("an unknown verl ref asks for a profile", () => {
    const text = mutate("retool-qwen3-4b-tione-ags", [[["runtime", "verl", "ref"], "deadbeef"]]);
    const issue = one(errorsOf(text), "unknown_verl_ref");
    assert.match(issue.hint ?? "", /set runtime\.verl\.profile to the closest known one: f50e5c2e, 95470480, v0\.6\.1, c651b7b, v0\.7\.0, v0\.7\.1, v0\.8\.0, v0\.9\.0, v0\.9\.1/);
  });
});

// Issue 23, item 9: what a new user meets first, each from a small change to the local demo.
describe("recipe errors: the line where the problem is, and what to write instead", () => {
  const demo = recipeText("local-demo");
  const edit = (from: string, to: string) => {
    assert.ok(demo.includes(from), `local-demo has no ${from}`);
    return demo.replace(from, to);
  };
  const only = (text: string): LocatedIssue => {
    const issues = errorsOf(text);
    assert.equal(issues.length, 1, issues.map(formatIssue).join("\n"));
    return issues[0]!;
  };

  it("an unclosed { is reported on its own line, at the brace, in our words", () => {
    const text = edit("resources: { nodes: 1, devicesPerNode: 1 }", "resources: { nodes: 1, devicesPerNode: 1");
    const issue = only(text);
    assert.equal(issue.code, "yaml_syntax");
    assert.deepEqual([issue.line, issue.col], [lineOf(text, "resources: {"), "resources: {".length]);
    assert.equal(issue.message, 'the "{" opened here is never closed');
    assert.match(issue.hint ?? "", /close it with "\}"/);
    assert.doesNotMatch(formatIssue(issue), /Flow map|block collection|sufficiently/);
  });

  it("an unclosed [ and an unclosed quote point at where they open, not where the parser gave up", () => {
    const list = edit("  accelerator: cpu", "  accelerator: [cpu");
    assert.deepEqual([only(list).line, only(list).message], [lineOf(list, "accelerator: [cpu"), 'the "[" opened here is never closed']);
    const quote = edit("  name: local-demo", '  name: "local-demo');
    assert.deepEqual([only(quote).line, only(quote).message], [lineOf(quote, 'name: "local-demo'), 'the " that opens this string is never closed']);
  });

  it("a duplicate key names both lines and says to keep one, not the indentation hint", () => {
    const text = edit("kind: Recipe", "kind: Recipe\nkind: Recipe");
    const issue = only(text);
    assert.equal(issue.line, lineOf(text, "kind: Recipe") + 1);
    assert.equal(issue.message, `key "kind" appears twice in the same mapping (first on line ${lineOf(text, "kind: Recipe")})`);
    assert.match(issue.hint ?? "", /keep one "kind:"/);
    assert.doesNotMatch(issue.hint ?? "", /indentation/);
  });

  it("tabs, a missing colon, a value with ': ' and a mis-indented key each get their own line and fix", () => {
    const cases: [string, string, RegExp, RegExp][] = [
      ["  accelerator: cpu", "\taccelerator: cpu", /indented with a tab/, /spaces/],
      ["  accelerator: cpu", "  accelerator cpu", /no ":" after its key/, /key: value/],
      ["  name: local-demo", "  name: local: demo", /contains ": "/, /quote the whole value/],
      ["  accelerator: cpu", "   accelerator: cpu", /starts at column 4, but line \d+ of the same mapping at column 3/, /same column/],
    ];
    for (const [from, to, message, hint] of cases) {
      const text = edit(from, to);
      const issue = only(text);
      assert.equal(issue.line, lineOf(text, to.trim()), to);
      assert.match(issue.message, message, to);
      assert.match(issue.hint ?? "", hint, to);
    }
  });

  it("a type error's hint says what to write, not the field's description", () => {
    const issue = only(edit("resources: { nodes: 1,", 'resources: { nodes: "two",'));
    assert.equal(formatIssue(issue), `${FILE}:${issue.line}:21: resources.nodes: expected a positive integer, got "two"\n  hint: write a whole number of 1 or more, such as 2 (no quotes)`);
    assert.equal(only(edit("resources: { nodes: 1,", 'resources: { nodes: "2",')).hint, "write 2 without quotes: quoted, it is text, not a number");
    assert.equal(only(edit("    minPassRate: 1 ", "    minPassRate: yes ")).hint, "write a number greater than 0 and at most 1, such as 0.5 (no quotes)");
  });

  it("every range error has a hint with the allowed range", () => {
    const cases: [string, string, string][] = [
      ["    minPassRate: 1 ", "    minPassRate: 2 ", "write a number greater than 0 and at most 1, such as 0.5 (no quotes)"],
      ["    rows: 16", "    rows: -3", "write a whole number of 1 or more, such as 2 (no quotes)"],
      ["    rows: 16", "    rows: 2.5", "write a whole number of 1 or more, such as 2 (no quotes)"],
      ["    minPassRate: 1 ", "    minPassRate: 1\n    batchSize: 0", "write a whole number of 1 or more, such as 2 (no quotes)"],
      ["  url: http://127.0.0.1:18931", "  url: http://127.0.0.1:18931\n  server: { dir: s, start: run, port: 70000 }", "write a whole number from 1 to 65535, such as 2 (no quotes)"],
      ["  kind: rlpipe\n", "  kind: rlpipe\n  health: { intervalS: 0 }\n", "write a whole number of 1 or more, such as 2 (no quotes)"],
    ];
    for (const [from, to, hint] of cases) {
      const range = errorsOf(edit(from, to)).filter((i) => i.code === "too_small" || i.code === "too_big" || i.code === "invalid_type");
      assert.equal(range.length, 1, to);
      assert.equal(range[0]!.hint, hint, to);
    }
  });

  it("a misspelt key is one error with did-you-mean, also for a required key and a stage's type", () => {
    const cases: [string, string, string, string][] = [
      ["resources:", "resorces:", "resorces", "resources"],
      ["  name: local-demo", "  nme: local-demo", "metadata.nme", "name"],
      ["    type: score", "    tpye: score", "stages.0.tpye", "type"],
      ["    data: problems", "    dta: problems", "stages.0.dta", "data"],
      ["    minPassRate", "    minPasRate", "stages.0.minPasRate", "minPassRate"],
    ];
    for (const [from, to, path, meant] of cases) {
      const text = edit(from, to);
      const issue = only(text);
      assert.deepEqual([issue.code, issue.path.join("."), issue.hint], ["unknown_key", path, `did you mean "${meant}"?`], to);
      assert.equal(issue.line, lineOf(text, to.trim()), to);
    }
  });
});
