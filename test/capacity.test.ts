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
import { runValidate } from "../bin/commands/validate.js";
import { CAPACITY_CODES, SHARE_LIMIT, admittedPlaces, capacityIssues, coresPerNode, demandOf, sandboxCapacity, stageCapacity, supplyOf } from "../core/capacity.js";
import { editsText } from "../core/capacity-fixes.js";
import { defaultCapacity } from "../functions/admission.js";
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
    assert.match(c.line, /rlpipe serve \(local sandbox\) on each of 2 nodes: 8 cores per node \(resources\.cpusPerNode\) = 2,768 tool calls\/s, 8,472 test cases\/s → 8\.34 s per step, 8\.3% of the ≈100 s step \(model\); within the 25% limit; ≈[\d.]+ tool calls in flight per server against 128 places$/);
    // rlpipe serve admits 16 requests per slot (a slot per core), at least 64 (functions/admission.ts).
    assert.deepEqual([c.inFlight!.places, admittedPlaces(8), admittedPlaces(2)], [defaultCapacity(8), 128, defaultCapacity(2)]);
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
    assert.match(w!.message, /^stage rl: the sandbox would take ≈100 s per step, 25% of the ≈399 s step \(more than 25%; set by the servers' throughput; co-located, one server per node: more nodes add supply and demand alike, and the step time scales with prompts × n as the demand does, so neither resources\.nodes nor the batch size changes the share\): 100 responses × 10 tool calls/);
    assert.equal(w!.hint, undefined, "the edits to advise are checked against a recipe (sandboxCapacity), so stageCapacity alone advises none");
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
    // The advice is the quota that fits a quarter of the step (20 sandboxes already hold 8,192 × 1 s), or fewer turns.
    const fixes = p.capacity!.stages[0]!.fixes!;
    assert.deepEqual(fixes.map((f) => f.kind), ["quota", "turns"]);
    assert.deepEqual(fixes[0]!.set.map((e) => e.path.join(".")), ["sandbox.managed.account.createsPerS"]);
    const creates = fixes[0]!.set[0]!.value as number;
    assert.ok(creates >= 8192 / (0.25 * step) && creates <= (8192 / (0.25 * step)) * 1.02, `${creates} creates/s for a ${step} s step`);
    assert.match(w[0]!.hint!, new RegExp(`set one of: sandbox\\.managed\\.account\\.createsPerS: ${creates} \\(`));
    assert.deepEqual(fixes[1]!.set, [{ path: ["stages", 0, "agent", "maxAssistantTurns"], value: Math.floor((0.25 * step) / 1024) }], "1,024 creates per turn at 1/s");
    // Creates at 1/s cannot keep up: every trajectory waits, 1,024 in flight against 20 sandboxes.
    const c = p.warnings.find((x) => x.code === "sandbox_concurrency")!;
    assert.match(c.message, /^stage rl: ≈1,024 tool calls in flight at the account \(1,024 trajectories at once, the sandbox too slow to keep up with them\) against the 20 it admits \(the account's concurrent sandboxes: E2B Hobby's limits.*\): 1,004 would be refused by the account \(429\)/);
    assert.equal(c.hint, w[0]!.hint);
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
        assert.match(line!, /→ [\d,.]+ s per step.*, [\d.]+% of the ≈[\d,]+ s step \(model\); (within|over) the 25% limit; ≈[\d,.]+ tool calls in flight (per server|at the account) against [\d,]+ places$/);
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
    assert.match(lines[i]!, /^  capacity   rl: 1,024 responses × 8 tool calls \(agent\.maxAssistantTurns\) = 8,192 tool calls per step \(the reward does not call the sandbox\); Tencent AGS, 20 sandboxes and 1 create\/s \(E2B Hobby's limits, assumed as AGS publishes no quota; set sandbox\.managed\.account\), one sandbox created per tool call, 1 s per tool call → 8,192 s per step \(8,192 creates at 1\/s: 8,192 s; sandbox time over 20 sandboxes: 410 s\), \d+% of the ≈[\d,]+ s step \(model\); over the 25% limit; ≈1,024 tool calls in flight at the account against 20 places$/);
    assert.match(r.out, /retool-qwen3-4b-tione-ags\.yaml:48:3: warning: sandbox: stage rl: the sandbox would take ≈8,192 s per step/);
    assert.match(r.out, /hint: to stay within 25% of the step and within the places the sandbox admits, set one of: sandbox\.managed\.account\.createsPerS: [\d.]+ \(/);
  });

  it("plan --json carries the figures and the warning; cost --format json carries the same capacity", () => {
    const r = rlpipe(["plan", file, "--json", "--out", join(dir, "json")]);
    assert.equal(r.code, 0, r.err);
    const doc = JSON.parse(r.out) as { capacity: { shareLimit: number; stages: { stage: string; sandboxSecondsPerStep: number; limitedBy: string; over: boolean; supply: { maxSandboxes: number; createsPerS: number }; demand: { toolCallsPerStep: number }; fixes: { kind: string }[] }[] }; warnings: { code: string; path: string[]; hint?: string }[] };
    assert.equal(doc.capacity.shareLimit, 0.25);
    const [c] = doc.capacity.stages;
    assert.deepEqual([c!.stage, c!.sandboxSecondsPerStep, c!.limitedBy, c!.over, c!.supply.maxSandboxes, c!.supply.createsPerS, c!.demand.toolCallsPerStep], ["rl", 8192, "creates", true, 20, 1, 8192]);
    const w = doc.warnings.find((x) => x.code === "sandbox_capacity");
    assert.deepEqual(w?.path, ["sandbox"]);
    assert.match(w!.hint!, /sandbox\.managed\.account\.createsPerS: [\d.]+/);
    assert.deepEqual(doc.capacity.stages[0]!.fixes.map((f) => f.kind), ["quota", "turns"]);
    assert.ok(doc.warnings.some((x) => x.code === "sandbox_concurrency"));
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

describe("capacity: what limits a step (issue 34)", () => {
  const H200 = "retool-qwen2.5-32b-h200";
  const capacityWarnings = (p: ReturnType<typeof planText>) => p.warnings.filter((w) => (CAPACITY_CODES as readonly string[]).includes(w.code));
  const rlpipeColocated: [(string | number)[], unknown] = [["sandbox"], { kind: "rlpipe", deploy: "colocated" }];
  const callSeconds = (s: number): [(string | number)[], unknown] => [["cost"], { usage: { toolCallSeconds: s } }];

  it("a co-located sandbox's share is the same on 4, 8 and 16 nodes and for any batch; no advice names the nodes or the batch", () => {
    const shareOf = (edits: [(string | number)[], unknown][]) => {
      const p = planText(editYaml(recipeText(TOOLCALL), [rlpipeColocated, callSeconds(2), ...edits]), "modelarts");
      const c = p.capacity!.stages[0]!;
      assert.ok(c.over, c.line);
      assert.ok(!c.fixes!.some((f) => f.set.some((e) => e.path.includes("nodes") || e.path.includes("promptsPerStep"))), JSON.stringify(c.fixes));
      assert.match(capacityWarnings(p)[0]!.message, /more nodes add supply and demand alike/);
      return c.share!;
    };
    const four = shareOf([[["resources", "nodes"], 4]]);
    for (const nodes of [8, 16]) assert.ok(Math.abs(shareOf([[["resources", "nodes"], nodes]]) - four) < 1e-9, `${nodes} nodes`);
    assert.ok(Math.abs(shareOf([[["resources", "nodes"], 4], [["stages", rlIndex(TOOLCALL), "data", "promptsPerStep"], 64]]) - four) < 1e-9, "half the batch");
  });

  it("the tools' and verl's own limits cap the calls in flight, and so the rate: rlpipe's tool 32 per process × the seed's 8 agent-loop workers", () => {
    const r = recipeOf(TOOLCALL, [rlpipeColocated, [["tools", 0, "preset"], "rlpipe"], callSeconds(1.5), [["resources", "nodes"], 16]]);
    const p = planText(editYaml(recipeText(TOOLCALL), [rlpipeColocated, [["tools", 0, "preset"], "rlpipe"], callSeconds(1.5), [["resources", "nodes"], 16]]), "modelarts");
    const c = p.capacity!.stages[0]!;
    assert.equal(supplyOf(r, "modelarts").coresPerServer! * 16, 512);
    assert.deepEqual([c.limitedBy, c.inFlight?.clientLimit], ["concurrency", 256]);
    // 16,384 calls × 1.5 s over 256 at once (not the 512 cores), + 20,480 test cases at 529.5/s per core × 512.
    assert.ok(Math.abs(c.sandboxSecondsPerStep! - ((16384 * 1.5) / 256 + 20480 / (529.5 * 512))) < 1e-6, String(c.sandboxSecondsPerStep));
    assert.match(c.line, /= 341 tool calls\/s, [\d,]+ test cases\/s \(at most 256 at once: 171 tool calls\/s\) →/);
    assert.match(c.inFlight!.clientBasis!, /^code_interpreter: 32 per process \(tools\[0\]\.config\.max_concurrency\) × 8 agent-loop workers \(agent\.workers\)$/);
    assert.deepEqual(c.fixes!.map((f) => f.kind).sort(), ["agent-workers", "tool-concurrency", "turns"]);
  });

  it("verl's SandboxFusionTool: its cluster-wide rate_limit (10 by default) bounds the calls, whatever the cores", () => {
    const p = planText(editYaml(recipeText(H200), [[["tools", 0, "preset"], "sandbox-fusion"], callSeconds(0.3)]), "ray");
    const c = p.capacity!.stages[0]!;
    assert.deepEqual([c.limitedBy, c.inFlight?.clientLimit], ["concurrency", 10]);
    assert.ok(Math.abs(c.sandboxSecondsPerStep! - (65536 * 0.3) / 10) < 1e-6);
    const [fix] = c.fixes!.filter((f) => f.kind === "tool-concurrency");
    assert.deepEqual(fix!.set.map((e) => e.path.join(".")), ["tools.0.config.rate_limit", "tools.0.config.num_workers"]);
    // The retool preset's 128 does not bind on 32 cores.
    assert.equal(planSeed(H200, "ray").capacity!.stages[0]!.limitedBy, "throughput");
  });

  it("more requests in flight than the server admits warns sandbox_concurrency, with the numbers", () => {
    // 16,384 calls × 6 s over 32 ScaleBox workers outlast the rollout: every trajectory waits, 1,024 against 32.
    const p = planText(editYaml(recipeText(TOOLCALL), [callSeconds(6)]), "modelarts");
    const w = p.warnings.find((x) => x.code === "sandbox_concurrency")!;
    assert.deepEqual(w.path, ["sandbox"]);
    assert.match(w.message, /^stage rl: ≈1,024 tool calls in flight per server \(1,024 trajectories at once, the sandbox too slow to keep up with them\) against the 32 it admits \(ScaleBox workers, sandbox\.server\.workers\): 992 would queue behind the workers$/);
    // Within: the seed's ≈0.15 in flight on average (16,384 × 25 ms over the rollout).
    const seed = planSeed(TOOLCALL, "modelarts").capacity!.stages[0]!;
    assert.ok(seed.inFlight!.perServer < 1 && !seed.inFlight!.over, String(seed.inFlight!.perServer));
  });

  it("validate --strict fails on a capacity warning (exit 2), naming the field to change", () => {
    const file = join(RECIPES, `${AGS}.yaml`);
    const out: string[] = [];
    const err: string[] = [];
    assert.equal(runValidate([file, "--strict"], { out: (t) => { out.push(t); }, err: (t) => { err.push(t); } }), 2);
    assert.match(err.join("\n"), /retool-qwen3-4b-tione-ags\.yaml:48:3: sandbox: stage rl: the sandbox would take ≈8,192 s per step[^\n]*\n\s+hint: to stay within 25% of the step and within the places the sandbox admits, set one of: sandbox\.managed\.account\.createsPerS: [\d.]+ /);
    const json: string[] = [];
    runValidate([file, "--strict", "--json"], { out: (t) => { json.push(t); }, err: () => undefined });
    const [r] = JSON.parse(json.join("\n")) as { issues: { severity: string; code: string }[] }[];
    assert.deepEqual(r!.issues.filter((i) => i.code.startsWith("sandbox_")).map((i) => `${i.severity} ${i.code}`), ["error sandbox_capacity", "error sandbox_concurrency"]);
    // Without --strict they stay warnings.
    const plain: string[] = [];
    runValidate([file, "--json"], { out: (t) => { plain.push(t); }, err: () => undefined });
    assert.ok((JSON.parse(plain.join("\n")) as { issues: { severity: string; code: string }[] }[])[0]!.issues.filter((i) => i.code.startsWith("sandbox_")).every((i) => i.severity === "warning"));
  });

  // Item 3: every hint the check can emit, applied to the recipe (the fields it names, the values it suggests), plans
  // again without a capacity warning, and the plan is still valid (planText throws on an error).
  const scenarios: { name: string; seed: string; provider: Provider; edits: [(string | number)[], unknown][]; kinds: string[] }[] = [
    { name: "rlpipe serve co-located on 4 nodes, 2 s per tool call", seed: TOOLCALL, provider: "modelarts", edits: [rlpipeColocated, callSeconds(2), [["resources", "nodes"], 4]], kinds: ["cores", "turns"] },
    { name: "ScaleBox with 8 workers on 64 cores", seed: TOOLCALL, provider: "modelarts", edits: [[["sandbox", "server", "workers"], 8], [["resources", "cpusPerNode"], 64], callSeconds(0.5)], kinds: ["workers", "turns"] },
    { name: "Slurm's cpusPerTask", seed: TOOLCALL, provider: "slurm", edits: [[["targets", "slurm"], { partition: "gpu", cpusPerTask: 32, workDir: "/scratch/rlpipe" }], callSeconds(2)], kinds: ["cores", "turns"] },
    { name: "rlpipe's tool on 16 nodes", seed: TOOLCALL, provider: "modelarts", edits: [rlpipeColocated, [["tools", 0, "preset"], "rlpipe"], callSeconds(1.5), [["resources", "nodes"], 16]], kinds: ["tool-concurrency", "agent-workers", "turns"] },
    { name: "SandboxFusionTool's rate limit", seed: H200, provider: "ray", edits: [[["tools", 0, "preset"], "sandbox-fusion"], callSeconds(0.3)], kinds: ["tool-concurrency", "turns"] },
    { name: "an external ScaleBox", seed: TOOLCALL, provider: "modelarts", edits: [[["sandbox", "deploy"], "external"], [["sandbox", "url"], "http://sandbox.internal:8080"], [["sandbox", "server", "workers"], 8], callSeconds(1)], kinds: ["workers", "turns"] },
    { name: "E2B Hobby, a measured 8,000 s step", seed: AGS, provider: "tione", edits: [[["sandbox", "managed", "provider"], "e2b"], [["cost"], { stages: { rl: { stepSeconds: 8000 } } }]], kinds: ["tier", "quota", "turns"] },
    { name: "the TI-ONE × AGS seed", seed: AGS, provider: "tione", edits: [], kinds: ["quota", "turns"] },
    { name: "in flight beyond ScaleBox's workers", seed: TOOLCALL, provider: "modelarts", edits: [callSeconds(6)], kinds: ["cores", "turns"] },
  ];
  const seen = new Set<string>();
  for (const sc of scenarios) {
    it(`every fix works when followed: ${sc.name}`, () => {
      const text = editYaml(recipeText(sc.seed), sc.edits);
      const p = planText(text, sc.provider);
      const warnings = capacityWarnings(p);
      assert.ok(warnings.length > 0, "the scenario warns");
      const fixes = p.capacity!.stages.flatMap((s) => s.fixes ?? []);
      assert.deepEqual(fixes.map((f) => f.kind), sc.kinds);
      for (const w of warnings) for (const f of fixes) assert.ok(w.hint!.includes(`${editsText(f.set)} (${f.says})`), `${w.hint} names ${editsText(f.set)}`);
      for (const f of fixes) {
        seen.add(f.kind);
        assert.ok(!f.set.some((e) => e.path.includes("nodes")), "never more nodes");
        const after = planText(editYaml(text, f.set.map((e): [(string | number)[], unknown] => [[...e.path], e.value])), sc.provider);
        assert.deepEqual(capacityWarnings(after).map((w) => w.message), [], `${sc.name}: ${editsText(f.set)}`);
      }
    });
  }

  it("the scenarios cover every kind of fix the check can emit", () => {
    assert.deepEqual([...seen].sort(), ["agent-workers", "cores", "quota", "tier", "tool-concurrency", "turns", "workers"]);
  });
});
