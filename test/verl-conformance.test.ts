// Conformance with real verl: every override rlpipe renders is composed by Hydra against verl's own trainer
// config (ppo_trainer / sft_trainer / sft_trainer_engine) from the PyPI release of the recipe's version
// profile, plus the newest verl release. A rejected override fails with the recipe and key named, and each
// composed value must read back as the value rlpipe meant (so quoting and list syntax are right).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { RecipeError } from "../core/errors.js";
import { type Plan, plan } from "../core/plan.js";
import { loadRecipeFile } from "../core/recipe/load.js";
import { NEWEST_PROFILE, PROFILES } from "../core/recipe/profiles.js";
import { parseValue, splitOverride } from "../core/render/hydra.js";
import { FIXTURES, ROOT, SEED_PROVIDER, SEED_RECIPES, planSeed } from "./helpers.js";
import { bundledAssets } from "../bin/commands/plan.js";

const VENV = join(ROOT, ".venv-test");
const PYTHON = join(VENV, "bin", "python");

interface Job { id: string; configDir: string; configName: string; overrides: string[] }
interface Result { id: string; ok: boolean; error: string | null; rejected: { override: string; error: string }[]; values: Record<string, unknown> }

function configDir(pypi: string): string {
  return join(VENV, "verl", pypi, "verl", "trainer", "config");
}

function jobsFor(label: string, plan: Plan, pypi: string): Job[] {
  return plan.stages.filter((s) => s.hydraConfig !== undefined).map((s) => ({
    id: `${label} stage ${s.id} (${s.hydraConfig}, verl ${pypi})`,
    configDir: configDir(pypi),
    configName: s.hydraConfig!,
    overrides: [...s.overrides],
  }));
}

function compose(jobs: Job[]): Result[] {
  const r = spawnSync(PYTHON, [join(ROOT, "test", "python", "verl_compose.py")], {
    input: JSON.stringify({ jobs }), encoding: "utf8", maxBuffer: 64 << 20, timeout: 600_000,
  });
  assert.equal(r.status, 0, `verl_compose.py failed: ${r.stderr}`);
  return (JSON.parse(r.stdout) as { results: Result[] }).results;
}

/** Values compared in JSON terms; Hydra reads 0.000001 and 1e-06 as the same float. */
function sameValue(intended: unknown, composed: unknown): boolean {
  if (typeof intended === "number" && typeof composed === "number") return Math.abs(intended - composed) <= 1e-12 * Math.max(1, Math.abs(intended));
  return JSON.stringify(intended) === JSON.stringify(composed);
}

describe("verl conformance: Hydra composes every rendered override", () => {
  it("has the test virtualenv with verl's configs (created by scripts/setup.sh --test)", () => {
    assert.ok(existsSync(PYTHON), `${PYTHON} is missing: run npm test (it runs scripts/setup.sh --test)`);
    for (const p of new Set(PROFILES.map((x) => x.pypi))) assert.ok(existsSync(configDir(p)), `verl ${p} config missing at ${configDir(p)}`);
  });

  // Moving a recipe to the newest verl can hit a version trap; those recipes must fail with exactly this error.
  const NEWEST_TRAPS: Partial<Record<string, string[]>> = {
    // The fork's retool.py compute_score takes no **kwargs; the agent-loop reward path passes extra keywords.
    "retool-qwen2.5-32b-h200": ["reward_needs_kwargs"],
  };
  const jobs: Job[] = [];
  for (const name of SEED_RECIPES) {
    const pinned = planSeed(name, SEED_PROVIDER[name]);
    jobs.push(...jobsFor(`${name} [pinned profile ${pinned.verl.profile}]`, pinned, pinned.verl.pypi));
    if (NEWEST_TRAPS[name] === undefined) {
      const newest = planSeed(name, SEED_PROVIDER[name], { profile: NEWEST_PROFILE.name });
      jobs.push(...jobsFor(`${name} [newest profile ${NEWEST_PROFILE.name}]`, newest, NEWEST_PROFILE.pypi));
    }
  }

  // A recipe with the optional fields the seeds leave out (eval stage, RL-checkpoint merge, checkpoints policy, raw + and ~ overrides).
  for (const profile of ["c651b7b", NEWEST_PROFILE.name]) {
    const p = plan(loadRecipeFile(join(FIXTURES, "recipes", "kitchen-sink.yaml")), { provider: "local", profile, assets: bundledAssets() });
    jobs.push(...jobsFor(`kitchen-sink [profile ${profile}]`, p, p.verl.pypi));
  }

  for (const [name, codes] of Object.entries(NEWEST_TRAPS)) {
    it(`${name} on verl ${NEWEST_PROFILE.name} is refused with ${codes!.join(", ")}`, () => {
      assert.throws(() => planSeed(name, SEED_PROVIDER[name as (typeof SEED_RECIPES)[number]], { profile: NEWEST_PROFILE.name }),
        (e: unknown) => e instanceof RecipeError && JSON.stringify(e.issues.map((i) => i.code)) === JSON.stringify(codes));
    });
  }

  it(`composes ${jobs.length} stage configurations (5 seed recipes at their pinned verl and at the newest where they can run, plus the kitchen-sink recipe)`, { timeout: 600_000 }, () => {
    const results = compose(jobs);
    assert.equal(results.length, jobs.length);
    const failures: string[] = [];
    results.forEach((r, i) => {
      if (!r.ok) {
        const keys = r.rejected.map((x) => `    ${x.override}\n      ${x.error}`).join("\n");
        failures.push(`${r.id}: verl rejected the overrides\n${keys || `    ${r.error}`}`);
        return;
      }
      for (const word of jobs[i]!.overrides) {
        if (word.startsWith("~")) {
          if (r.values[word.slice(1)] !== null) failures.push(`${r.id}: ${word} did not delete the key`);
          continue;
        }
        const { key, value } = splitOverride(word);
        const bare = key.replace(/^[+~]+/, "");
        const intended = parseValue(value);
        if (!sameValue(intended, r.values[bare])) {
          failures.push(`${r.id}: ${bare} composed as ${JSON.stringify(r.values[bare])}, rlpipe meant ${JSON.stringify(intended)} (word: ${word})`);
        }
      }
    });
    assert.deepEqual(failures, []);
  });

  it("detects a rejected key (an override verl does not know fails, naming the key)", { timeout: 120_000 }, () => {
    const plan = planSeed("qwen3-1.7b-code-toolcall", "docker");
    const rl = plan.stages.find((s) => s.type === "rl")!;
    const [r] = compose([{
      id: "negative", configDir: configDir(plan.verl.pypi), configName: "ppo_trainer",
      overrides: [...rl.overrides.filter((o) => !o.startsWith("+custom_reward_function")), "custom_reward_function.reward_kwargs.return_dict=True"],
    }]);
    assert.equal(r!.ok, false);
    assert.deepEqual(r!.rejected.map((x) => x.override), ["custom_reward_function.reward_kwargs.return_dict=True"]);
  });
});
