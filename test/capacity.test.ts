// Sandbox capacity per RL step (core/capacity.ts): the arithmetic for each backend, the warning past the share limit
// and not below it, a capacity line for every shipped recipe with an RL stage and a sandbox or tools, and the CLI's
// human and --json output.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { planRecipeFile } from "../bin/commands/plan.js";
import { SHARE_LIMIT, capacityIssues, coresPerNode, demandOf, sandboxCapacity, stageCapacity, supplyOf } from "../core/capacity.js";
import type { SandboxDemand, SandboxSupply } from "../core/cost/types.js";
import { parseRecipe } from "../core/recipe/load.js";
import type { Provider, Recipe, RlStage } from "../core/recipe/schema.js";
import { formatPlanSummary } from "../core/summary.js";
import { RECIPES, ROOT, editYaml, loadSeed, planSeed, planText, recipeText } from "./helpers.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

/** A seed recipe with edits, parsed (schema only) — what supplyOf and demandOf read. */
function recipeOf(seed: string, edits: [(string | number)[], unknown][]): Recipe {
  return parseRecipe(editYaml(recipeText(seed), edits), "test.yaml").recipe;
}
const rlOf = (r: Recipe) => r.stages.find((s): s is RlStage => s.type === "rl")!;
const rlIndex = (seed: string) => loadSeed(seed).recipe.stages.findIndex((s) => s.type === "rl");

// seed 001: 128 prompts × n 8 = 1,024 responses, 16 assistant turns, ScaleBox reward through ${sandbox.url}.
const TOOLCALL = "qwen3-1.7b-code-toolcall";
const AGS = "retool-qwen3-4b-tione-ags";

describe("capacity: demand per step", () => {
  it("responses × the turn limit × tool calls, responses × test cases (high end) when the reward calls the sandbox", () => {
    const r = loadSeed(TOOLCALL).recipe;
    const d = demandOf(r, rlOf(r));
    assert.deepEqual(d, {
      responsesPerStep: 1024, toolCallsPerResponse: 16, toolCallsBasis: "agent.maxAssistantTurns", toolCallsPerStep: 16384,
      testCasesPerReward: 20, testCasesBasis: "assumed: the high end of 5–10–20", testCasesPerStep: 20480,
    });
  });

  it("seed 003 asks for 512 prompts × 16 responses × 8 tool calls, and its reward is not in the sandbox", () => {
    const r = loadSeed("retool-qwen2.5-32b-h200").recipe;
    const d = demandOf(r, rlOf(r));
    assert.equal(d.toolCallsPerStep, 512 * 16 * 8);
    assert.equal(d.testCasesPerStep, 0);
    assert.equal(d.testCasesBasis, undefined);
  });

  it("the smaller turn limit bounds the calls; a measured figure wins (its high end); no limit falls back to 4", () => {
    const i = rlIndex(TOOLCALL);
    const user = recipeOf(TOOLCALL, [[["stages", i, "agent", "maxUserTurns"], 5]]);
    assert.deepEqual([demandOf(user, rlOf(user)).toolCallsPerResponse, demandOf(user, rlOf(user)).toolCallsBasis], [5, "agent.maxUserTurns"]);
    const measured = recipeOf(TOOLCALL, [[["cost"], { usage: { toolCallsPerResponse: { low: 1, expected: 2.5, high: 3 }, testCasesPerReward: 7 } }]]);
    const dm = demandOf(measured, rlOf(measured));
    assert.deepEqual([dm.toolCallsPerStep, dm.toolCallsBasis, dm.testCasesPerStep, dm.testCasesBasis], [1024 * 3, "cost.usage.toolCallsPerResponse", 1024 * 7, "cost.usage.testCasesPerReward"]);
    const none = recipeOf(TOOLCALL, [[["stages", i, "agent", "maxUserTurns"], undefined], [["stages", i, "agent", "maxAssistantTurns"], undefined]]);
    assert.equal(demandOf(none, rlOf(none)).toolCallsPerStep, 1024 * 4);
  });
});

describe("capacity: supply per backend", () => {
  it("rlpipe serve co-located: 529.5 test cases/s and 173 tool calls/s per core × cores per node × nodes", () => {
    const r = recipeOf(TOOLCALL, [[["sandbox"], { kind: "rlpipe", deploy: "colocated" }], [["resources", "nodes"], 2], [["resources", "cpusPerNode"], 8]]);
    const s = supplyOf(r, "slurm");
    assert.equal(s.kind, "self-hosted");
    assert.equal(s.backend, "rlpipe serve (local sandbox)");
    assert.deepEqual([s.servers, s.coresPerNode, s.coresPerServer, s.coresBasis, s.workers], [2, 8, 8, "resources.cpusPerNode", undefined]);
    assert.equal(s.toolCallsPerS, 173 * 16);
    assert.equal(s.testCasesPerS, 529.5 * 16);
    const c = stageCapacity("rl", demandOf(r, rlOf(r)), s, 100, "model");
    // 16,384 / 2,768 + 20,480 / 8,472
    assert.ok(Math.abs(c.sandboxSecondsPerStep! - (16384 / 2768 + 20480 / 8472)) < 1e-9);
    assert.equal(c.limitedBy, "throughput");
    assert.match(c.line, /rlpipe serve \(local sandbox\) on each of 2 nodes: 8 cores per node \(resources\.cpusPerNode\) = 2,768 tool calls\/s, 8,472 test cases\/s → 8\.34 s per step, 8\.3% of the ≈100 s step \(model\); within the 25% limit$/);
  });

  it("ScaleBox co-located uses at most one core per worker; SandboxFusion runs test cases at half ScaleBox's rate", () => {
    const few = recipeOf(TOOLCALL, [[["resources", "cpusPerNode"], 16]]);
    const s = supplyOf(few, "docker");
    assert.deepEqual([s.backend, s.workers, s.coresPerNode, s.coresPerServer], ["ScaleBox", 32, 16, 16]);
    assert.equal(s.toolCallsPerS, 39.5 * 16);
    assert.equal(s.testCasesPerS, 226 * 16);
    const many = recipeOf(TOOLCALL, [[["resources", "cpusPerNode"], 192]]);
    assert.equal(supplyOf(many, "docker").coresPerServer, 32, "32 workers use 32 of 192 cores");
    const sf = recipeOf(TOOLCALL, [[["sandbox", "kind"], "sandbox-fusion"], [["sandbox", "server", "workers"], 4]]);
    const f = supplyOf(sf, "docker");
    assert.deepEqual([f.backend, f.coresPerServer, f.testCasesPerS, f.toolCallsPerS], ["SandboxFusion", 4, 113 * 4, 39.5 * 4]);
  });

  it("an external ScaleBox is one URL × its workers, a core each", () => {
    const r = recipeOf(TOOLCALL, [[["sandbox"], { kind: "scalebox", deploy: "external", url: "http://sandbox.internal:8080" }]]);
    const s = supplyOf(r, "modelarts");
    assert.deepEqual([s.servers, s.workers, s.coresPerServer, s.coresPerNode, s.coresBasis], [1, 32, 32, undefined, "one core per worker, assumed"]);
    assert.equal(s.toolCallsPerS, 39.5 * 32);
  });

  it("cores per node: the recipe, the TI-ONE worker's spec, Slurm's cpusPerTask, else 32 assumed", () => {
    assert.deepEqual(coresPerNode(loadSeed(AGS).recipe, "tione"), { cores: 128, basis: "the TI-ONE worker's spec 128C1000G" });
    const slurm = recipeOf(TOOLCALL, [[["targets", "slurm"], { partition: "gpu", cpusPerTask: 96 }]]);
    assert.deepEqual(coresPerNode(slurm, "slurm"), { cores: 96, basis: "targets.slurm.cpusPerTask" });
    assert.deepEqual(coresPerNode(loadSeed(TOOLCALL).recipe, "modelarts"), { cores: 32, basis: "assumed; set resources.cpusPerNode" });
  });

  it("measured seconds per tool call and per test case replace the benchmark's rates", () => {
    const r = recipeOf(TOOLCALL, [[["cost"], { usage: { toolCallSeconds: 0.05, testCaseSeconds: { low: 0.01, expected: 0.02, high: 0.1 } } }], [["resources", "cpusPerNode"], 32]]);
    const s = supplyOf(r, "docker");
    assert.ok(Math.abs(s.toolCallsPerS! - 20 * 32) < 1e-9);
    assert.ok(Math.abs(s.testCasesPerS! - 50 * 32) < 1e-9);
  });

  it("E2B/AGS: a sandbox created per tool call, limited by creates/s or by concurrent sandboxes (Hobby by default)", () => {
    const r = loadSeed(AGS).recipe;
    const s = supplyOf(r, "tione");
    assert.deepEqual([s.kind, s.backend, s.maxSandboxes, s.createsPerS, s.createsPerToolCall, s.toolCallSeconds], ["managed", "Tencent AGS", 20, 1, 1, 1]);
    const d = demandOf(r, rlOf(r));
    const c = stageCapacity("rl", d, s, 10000, "model");
    assert.equal(c.sandboxSecondsPerStep, 8192, "8,192 creates at 1/s");
    assert.equal(c.limitedBy, "creates");
    const pro = supplyOf(recipeOf(AGS, [[["sandbox", "managed", "account"], { tier: "pro" }]]), "tione");
    assert.deepEqual([pro.maxSandboxes, pro.createsPerS], [100, 5]);
    assert.ok(Math.abs(stageCapacity("rl", d, pro, 10000, "model").sandboxSecondsPerStep! - 8192 / 5) < 1e-9);
    // Many creates/s but few sandboxes: concurrency binds (8,192 calls × 1 s over 10 sandboxes).
    const narrow = supplyOf(recipeOf(AGS, [[["sandbox", "managed", "account"], { maxSandboxes: 10, createsPerS: 50 }]]), "tione");
    const cn = stageCapacity("rl", d, narrow, 10000, "model");
    assert.equal(cn.sandboxSecondsPerStep, 819.2);
    assert.equal(cn.limitedBy, "concurrency");
  });

  it("rlpipe's function over E2B reuses its pool (no creates); without sandbox.managed its capacity is unknown", () => {
    const pooled = recipeOf(AGS, [[["sandbox", "kind"], "rlpipe"], [["sandbox", "deploy"], "external"], [["sandbox", "url"], "https://fn.example.com"]]);
    const s = supplyOf(pooled, "tione");
    assert.deepEqual([s.backend, s.createsPerToolCall], ["rlpipe's function on Tencent AGS", 0]);
    const d = demandOf(pooled, rlOf(pooled));
    // kind rlpipe: the reward shim calls the sandbox too: 1,024 rewards × 20 cases at one core's rate.
    assert.equal(d.testCasesPerStep, 1024 * 20);
    const c = stageCapacity("rl", d, s, 10000, "model");
    assert.ok(Math.abs(c.sandboxSecondsPerStep! - (8192 * 1 + 20480 / 529.5) / 20) < 1e-9);
    const unknown = recipeOf(AGS, [[["sandbox"], { kind: "rlpipe", deploy: "external", url: "https://fn.example.com" }]]);
    const u = stageCapacity("rl", demandOf(unknown, rlOf(unknown)), supplyOf(unknown, "tione"), 10000, "model");
    assert.equal(u.supply.kind, "unknown");
    assert.equal(u.sandboxSecondsPerStep, undefined);
    assert.equal(u.over, false);
    assert.match(u.line, /capacity unknown: rlpipe's function at https:\/\/fn\.example\.com runs the backend its own configuration names/);
  });
});

describe("capacity: the warning", () => {
  const demand: SandboxDemand = { responsesPerStep: 100, toolCallsPerResponse: 10, toolCallsBasis: "agent.maxAssistantTurns", toolCallsPerStep: 1000, testCasesPerReward: 0, testCasesPerStep: 0 };
  const supply: SandboxSupply = { kind: "self-hosted", backend: "ScaleBox", servers: 1, coresPerNode: 32, coresPerServer: 32, coresBasis: "assumed; set resources.cpusPerNode", workers: 32, toolCallsPerS: 10, testCasesPerS: 100, basis: [] };

  it("appears past the share limit and not below it", () => {
    assert.equal(SHARE_LIMIT, 0.25);
    // 1,000 calls at 10/s = 100 s: 25.0% of 400 s is not over; 100/399 is.
    const at = stageCapacity("rl", demand, supply, 400, "model");
    assert.equal(at.share, 0.25);
    assert.equal(at.over, false);
    assert.deepEqual(capacityIssues({ shareLimit: SHARE_LIMIT, stages: [at] }), []);
    const below = stageCapacity("rl", demand, supply, 1000, "model");
    assert.deepEqual(capacityIssues({ shareLimit: SHARE_LIMIT, stages: [below] }), []);
    const past = stageCapacity("rl", demand, supply, 399, "measured");
    assert.equal(past.over, true);
    const [w, ...rest] = capacityIssues({ shareLimit: SHARE_LIMIT, stages: [past] });
    assert.equal(rest.length, 0);
    assert.equal(w!.code, "sandbox_capacity");
    assert.deepEqual(w!.path, ["sandbox"]);
    assert.equal(w!.severity, "warning");
    assert.match(w!.message, /^stage rl: the sandbox would take ≈100 s per step, 25% of the ≈399 s step \(more than 25%; set by the servers' throughput\): 100 responses × 10 tool calls/);
    // 100 s against a 99.75 s budget: 1.0025× its capacity, so 2 nodes.
    assert.match(w!.hint!, /needs 1\.00× its capacity: ≥ 2 nodes \(resources\.nodes\) at 32 cores each, or the real core count if the nodes have more \(resources\.cpusPerNode\), or a managed backend/);
  });

  it("the TI-ONE × AGS seed warns through plan (8,192 creates at Hobby's 1/s), and a Pro account or a measured longer step does not", () => {
    const p = planSeed(AGS, "tione");
    const w = p.warnings.filter((x) => x.code === "sandbox_capacity");
    assert.equal(w.length, 1);
    assert.equal(w[0]!.line, 48, "located at the recipe's sandbox block");
    // The step is the cost model's (core/cost/step-time.ts); the share, the step and the hint follow from it.
    const step = p.capacity!.stages[0]!.stepSeconds;
    const said = /≈8,192 s per step, (\d+)% of the ≈([\d,]+) s step \(more than 25%; set by the account's creates per second\)/.exec(w[0]!.message);
    assert.ok(said !== null, w[0]!.message);
    assert.deepEqual([Number(said[1]), Number(said[2]!.replaceAll(",", ""))], [Math.round((100 * 8192) / step), Math.round(step)]);
    const needs = /≥ ([\d.]+) creates\/s and ≥ (\d+) concurrent sandboxes/.exec(w[0]!.hint!);
    assert.ok(needs !== null, w[0]!.hint);
    assert.ok(Math.abs(Number(needs[1]) - 8192 / (0.25 * step)) < 0.01, `creates/s ${needs[1]} for a ${step} s step`);
    assert.equal(Number(needs[2]), Math.ceil(8192 / (0.25 * step)), "1 s of sandbox per tool call, within a quarter of the step");
    const proAccount: [string[], unknown] = [["sandbox", "managed", "account"], { tier: "pro" }];
    const pro = planText(editYaml(recipeText(AGS), [proAccount]), "tione");
    assert.equal(pro.capacity!.stages[0]!.sandboxSecondsPerStep, 8192 / 5);
    assert.equal(pro.capacity!.stages[0]!.share, 8192 / 5 / step);
    assert.equal(pro.warnings.filter((x) => x.code === "sandbox_capacity").length, 8192 / 5 / step > 0.25 ? 1 : 0);
    const proMeasured = planText(editYaml(recipeText(AGS), [proAccount, [["cost"], { stages: { rl: { stepSeconds: 8000 } } }]]), "tione");
    assert.deepEqual(proMeasured.warnings.filter((x) => x.code === "sandbox_capacity"), [], "a Pro account: 1,638 s of an 8,000 s step is 20%");
    const slow = planText(editYaml(recipeText(AGS), [[["cost"], { stages: { rl: { stepSeconds: 40000 } } }]]), "tione");
    assert.equal(slow.capacity!.stages[0]!.stepBasis, "measured");
    assert.equal(slow.capacity!.stages[0]!.share, 8192 / 40000);
    assert.deepEqual(slow.warnings.filter((x) => x.code === "sandbox_capacity"), []);
    const fast = planText(editYaml(recipeText(AGS), [[["cost"], { stages: { rl: { stepSeconds: 30000 } } }]]), "tione");
    assert.equal(fast.warnings.filter((x) => x.code === "sandbox_capacity").length, 1);
  });
});

describe("capacity: every shipped recipe with an RL stage and a sandbox or tools", () => {
  const shipped = readdirSync(RECIPES).filter((f) => f.endsWith(".yaml")).sort().map((f) => f.replace(/\.yaml$/, ""));
  const expected: Record<string, { tools: number; cases: number; backend: string; seconds: number }> = {
    "qwen3-1.7b-code-toolcall": { tools: 16384, cases: 20480, backend: "ScaleBox", seconds: 16384 / 1264 + 20480 / 7232 },
    "qwen3-1.7b-code-toolcall-sd": { tools: 16384, cases: 20480, backend: "ScaleBox", seconds: 16384 / 1264 + 20480 / 7232 },
    "retool-qwen2.5-32b-h200": { tools: 65536, cases: 0, backend: "SandboxFusion", seconds: 65536 / 1264 },
    "retool-qwen3-4b-ascend": { tools: 16384, cases: 0, backend: "SandboxFusion", seconds: 16384 / 1264 },
    "retool-qwen3-4b-tione-ags": { tools: 8192, cases: 0, backend: "Tencent AGS", seconds: 8192 },
  };

  it("covers each shipped recipe that has one, and local-demo (score only) has none", () => {
    const withRl = shipped.filter((n) => {
      const r = loadSeed(n).recipe;
      return r.stages.some((s) => s.type === "rl") && (r.sandbox !== undefined || (r.tools?.length ?? 0) > 0);
    });
    assert.deepEqual([...withRl].sort(), Object.keys(expected).sort());
    assert.equal(planRecipeFile(join(RECIPES, "local-demo.yaml"), { provider: "local" }).plan.capacity, undefined);
  });

  for (const name of Object.keys(expected)) {
    const providers = Object.keys(loadSeed(name).recipe.targets ?? {}).sort() as Provider[];
    for (const provider of providers.length === 0 ? ["local" as Provider] : providers) {
      it(`${name} → ${provider}: plan prints its capacity line`, () => {
        const p = planSeed(name, provider);
        const e = expected[name]!;
        const [c, ...more] = p.capacity!.stages;
        assert.equal(more.length, 0);
        assert.deepEqual([c!.stage, c!.demand.toolCallsPerStep, c!.demand.testCasesPerStep, c!.supply.backend], ["rl", e.tools, e.cases, e.backend]);
        assert.ok(Math.abs(c!.sandboxSecondsPerStep! - e.seconds) < 1e-9, `${c!.sandboxSecondsPerStep} s`);
        const text = formatPlanSummary(p, "/tmp/out");
        const line = text.split("\n").find((l) => l.startsWith("  capacity   "));
        assert.equal(line, `  capacity   ${c!.line}`);
        assert.match(line!, new RegExp(`^  capacity   rl: [\\d,]+ responses × \\d+ tool calls \\(agent\\.maxAssistantTurns\\) = ${e.tools.toLocaleString("en-US")} tool calls`));
        assert.match(line!, /→ [\d,.]+ s per step.*, [\d.]+% of the ≈[\d,]+ s step \(model\); (within|over) the 25% limit$/);
      });
    }
  }
});

describe("capacity: the CLI", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-capacity-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const rlpipe = (args: string[]) => {
    const r = spawnSync(process.execPath, [CLI, ...args], { cwd: ROOT, encoding: "utf8", timeout: 60_000, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: dir } });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const file = join(RECIPES, `${AGS}.yaml`);

  it("plan prints the capacity line under the cost and the warning with its hint", () => {
    const r = rlpipe(["plan", file, "--out", join(dir, "human")]);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split("\n");
    const i = lines.findIndex((l) => l.startsWith("  capacity   "));
    assert.ok(i > 0 && lines[i - 1]!.startsWith("  cost       "), r.out);
    const stage = planSeed(AGS, "tione").capacity!.stages[0]!;
    assert.equal(lines[i], `  capacity   ${stage.line}`);
    assert.match(lines[i]!, /^  capacity   rl: 1,024 responses × 8 tool calls \(agent\.maxAssistantTurns\) = 8,192 tool calls per step \(the reward does not call the sandbox\); Tencent AGS, 20 sandboxes and 1 create\/s \(E2B Hobby's limits, assumed as AGS publishes no quota; set sandbox\.managed\.account\), one sandbox created per tool call, 1 s per tool call → 8,192 s per step \(8,192 creates at 1\/s: 8,192 s; sandbox time over 20 sandboxes: 410 s\), \d+% of the ≈[\d,]+ s step \(model\); over the 25% limit$/);
    assert.match(r.out, /retool-qwen3-4b-tione-ags\.yaml:48:3: warning: sandbox: stage rl: the sandbox would take ≈8,192 s per step/);
    assert.match(r.out, /hint: to stay within 25% the account needs ≥ [\d.]+ creates\/s/);
  });

  it("plan --json carries the figures and the warning; cost --format json carries the same capacity", () => {
    const r = rlpipe(["plan", file, "--json", "--out", join(dir, "json")]);
    assert.equal(r.code, 0, r.err);
    const doc = JSON.parse(r.out) as { capacity: { shareLimit: number; stages: { stage: string; sandboxSecondsPerStep: number; limitedBy: string; over: boolean; supply: { maxSandboxes: number; createsPerS: number }; demand: { toolCallsPerStep: number } }[] }; warnings: { code: string; path: string[]; hint?: string }[] };
    assert.equal(doc.capacity.shareLimit, 0.25);
    const [c] = doc.capacity.stages;
    assert.deepEqual([c!.stage, c!.sandboxSecondsPerStep, c!.limitedBy, c!.over, c!.supply.maxSandboxes, c!.supply.createsPerS, c!.demand.toolCallsPerStep], ["rl", 8192, "creates", true, 20, 1, 8192]);
    const w = doc.warnings.find((x) => x.code === "sandbox_capacity");
    assert.deepEqual(w?.path, ["sandbox"]);
    assert.match(w!.hint!, /tier pro is 100 sandboxes and 5 creates\/s/);
    const cost = rlpipe(["cost", file, "--provider", "tione", "--format", "json"]);
    assert.equal(cost.code, 0, cost.err);
    assert.deepEqual((JSON.parse(cost.out) as { capacity: unknown }).capacity, doc.capacity);
  });

  it("cost's table shows the same line, and --step-seconds moves the share", () => {
    const seed = join(RECIPES, `${TOOLCALL}.yaml`);
    const r = rlpipe(["cost", seed, "--provider", "modelarts"]);
    assert.equal(r.code, 0, r.err);
    const plan = planSeed(TOOLCALL, "modelarts");
    assert.ok(r.out.includes(`Sandbox capacity: ${plan.capacity!.stages[0]!.line}`), r.out);
    const measured = rlpipe(["cost", seed, "--provider", "modelarts", "--step-seconds", "60", "--format", "json"]);
    const c = (JSON.parse(measured.out) as { capacity: { stages: { share: number; stepBasis: string; over: boolean }[] } }).capacity.stages[0]!;
    assert.equal(c.stepBasis, "measured");
    assert.ok(Math.abs(c.share - (16384 / 1264 + 20480 / 7232) / 60) < 1e-9);
    assert.equal(c.over, true);
  });
});
