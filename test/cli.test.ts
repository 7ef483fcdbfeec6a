// The rlpipe CLI as a user runs it (a child process): exit codes 0/2/1, the summary, the bundle on disk,
// clean errors without stack traces, no network and no credentials needed.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { recipeJsonSchema } from "../bin/commands/schema.js";
import { reportError } from "../bin/io.js";
import { Redactor } from "../core/redact.js";
import { fakeTencentSecretId } from "./fakes/credentials.js";
import { ROOT, SEED_RECIPES, recipePath } from "./helpers.js";
import { CLI, runCli } from "./cli-process.js";


const rlpipe = (args: string[], opts: { cwd?: string; env?: Record<string, string> } = {}) => runCli(args, opts);

describe("rlpipe plan", () => {
  let dir: string;
  before(() => { dir = mkdtempSync(join(tmpdir(), "rlpipe-cli-")); });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("prints a summary a person can check and writes the bundle", () => {
    const out = join(dir, "a");
    const r = rlpipe(["plan", recipePath("qwen3-1.7b-code-toolcall"), "--provider", "modelarts", "--out", out]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /rlpipe plan: qwen3-1\.7b-code-toolcall → modelarts/);
    assert.match(r.out, /resources {2}1 node × 8 ascend-npu\n/, "one node: no total");
    assert.match(r.out, /workdir {4}\/home\/ma-user\/modelarts\/user-job-dir\/qwen3-1\.7b-code-toolcall/);
    assert.match(r.out, /sandbox {4}scalebox \(colocated\) at http:\/\/127\.0\.0\.1:8080: started by launch\.sh inside the modelarts job/);
    assert.match(r.out, /1\. sft .*torchrun --nnodes=1 --nproc_per_node=8 -m verl\.trainer\.fsdp_sft_trainer/);
    assert.match(r.out, /2\. merge .*global_step_50 → .*global_step_50\/huggingface/);
    assert.match(r.out, /3\. rl .*128 prompts × n=8 = 1024 responses\/step, mini-batch 32 prompts \(4 optimizer steps\/step\), 15 epochs, tools: code_interpreter/);
    assert.match(r.out, /warnings {3}none/);
    assert.deepEqual(readdirSync(out).sort(), [".rlpipe", "launch.sh", "rlpipe-plan.json", "tool_config"]);
    assert.deepEqual(readdirSync(join(out, ".rlpipe")), ["rlpipe_sync.py"], "the checkpoint sidecar ships with a managed target's bundle");
    assert.equal(statSync(join(out, "launch.sh")).mode & 0o777, 0o755);
    const doc = JSON.parse(readFileSync(join(out, "rlpipe-plan.json"), "utf8"));
    assert.equal(doc.provider, "modelarts");
    assert.equal(doc.stages[2].facts.responsesPerStep, 1024);
    const bash = spawnSync("bash", ["-n", join(out, "launch.sh")]);
    assert.equal(bash.status, 0, "launch.sh parses");
  });

  it("is deterministic: planning twice gives byte-identical files", () => {
    const a = join(dir, "d1");
    const b = join(dir, "d2");
    for (const o of [a, b]) assert.equal(rlpipe(["plan", recipePath("retool-qwen3-4b-ascend"), "--provider", "docker", "--out", o]).code, 0);
    for (const f of ["launch.sh", "rlpipe-plan.json", "docker-run.sh", "sandbox_fusion_tool_config.yaml"]) {
      assert.equal(readFileSync(join(a, f), "utf8"), readFileSync(join(b, f), "utf8"), f);
    }
  });

  it("names its own directory by default and replaces an older bundle in place", () => {
    const r1 = rlpipe(["plan", recipePath("retool-qwen3-4b-tione-ags"), "--provider", "tione"], { cwd: dir });
    assert.equal(r1.code, 0, r1.err);
    const bundles = readdirSync(join(dir, ".rlpipe", "bundles"));
    assert.equal(bundles.length, 1);
    assert.match(bundles[0]!, /^retool-qwen3-4b-tione-ags-[0-9a-f]{8}$/);
    const r2 = rlpipe(["plan", recipePath("retool-qwen3-4b-tione-ags"), "--provider", "tione"], { cwd: dir });
    assert.equal(r2.code, 0);
    assert.deepEqual(readdirSync(join(dir, ".rlpipe", "bundles")), bundles);
  });

  it("--json prints the machine-readable plan", () => {
    const r = rlpipe(["plan", recipePath("retool-qwen2.5-32b-h200"), "--provider", "ray", "--out", join(dir, "j"), "--json"]);
    assert.equal(r.code, 0, r.err);
    const doc = JSON.parse(r.out);
    assert.equal(doc.verl.profile, "f50e5c2e");
    assert.equal(doc.stages[2].facts.responsesPerStep, 8192);
    assert.ok(doc.files.every((f: { sha256: string }) => /^[0-9a-f]{64}$/.test(f.sha256)));
  });

  it("refuses to overwrite a directory that is not a bundle", () => {
    const out = join(dir, "precious");
    mkdirSync(out);
    writeFileSync(join(out, "notes.txt"), "keep me");
    const r = rlpipe(["plan", recipePath("qwen3-1.7b-code-toolcall"), "--provider", "modelarts", "--out", out]);
    assert.equal(r.code, 2);
    assert.match(r.err, /is not an rlpipe bundle; refusing to overwrite it/);
    assert.deepEqual(readdirSync(out), ["notes.txt"]);
  });

  it("bad recipes exit 2 with file:line:col and no stack trace, and write nothing", () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, readFileSync(recipePath("qwen3-1.7b-code-toolcall"), "utf8").replace("      n: 8\n", "      n: eight\n"));
    const out = join(dir, "never");
    const r = rlpipe(["plan", bad, "--out", out]);
    assert.equal(r.code, 2);
    assert.match(r.err, /bad\.yaml:\d+:10: stages\[2\]\.rollout\.n: expected a positive integer, got "eight"/);
    assert.match(r.err, /hint: write a whole number of 1 or more, such as 2 \(no quotes\)/);
    assert.doesNotMatch(r.err, /\n\s+at /);
    assert.equal(existsSync(out), false);
  });

  it("usage errors exit 2 with a hint", () => {
    const unknownProvider = rlpipe(["plan", recipePath("qwen3-1.7b-code-toolcall"), "--provider", "modelart"]);
    assert.equal(unknownProvider.code, 2);
    assert.match(unknownProvider.err, /unknown provider "modelart".*did you mean "modelarts"\?/);
    const flag = rlpipe(["plan", recipePath("qwen3-1.7b-code-toolcall"), "--provder", "x"]);
    assert.equal(flag.code, 2);
    assert.match(flag.err, /^rlpipe: unknown option --provder; did you mean --provider\?\n {2}hint: rlpipe plan takes --provider, --out, /);
    const missing = rlpipe(["plan", join(dir, "nope.yaml")]);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /nope\.yaml: cannot read recipe \(ENOENT\)/);
    assert.equal(rlpipe(["frobnicate"]).code, 2);
    assert.equal(rlpipe([]).code, 2);
    assert.equal(rlpipe(["--help"]).code, 0);
  });
});

describe("rlpipe validate", () => {
  it("checks many recipes for CI: 0 when all plan, 2 when one does not", () => {
    const ok = rlpipe(["validate", ...SEED_RECIPES.map(recipePath)]);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(ok.out.split("\n").filter((l) => l.startsWith("ok ")).length, 5);
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-val-"));
    try {
      const bad = join(dir, "bad.yaml");
      writeFileSync(bad, "apiVersion: rlpipe/v1\nkind: Recipe\n");
      const r = rlpipe(["validate", recipePath("retool-qwen3-4b-ascend"), bad, "--json"]);
      assert.equal(r.code, 2);
      const doc = JSON.parse(r.out) as { ok: boolean; errors: string[] }[];
      assert.deepEqual(doc.map((d) => d.ok), [true, false]);
      assert.ok(doc[1]!.errors.some((e) => /missing required field "metadata"/.test(e)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("rlpipe schema", () => {
  it("prints the recipe JSON Schema, and schema/recipe.schema.json in the repository is current", () => {
    const r = rlpipe(["schema"]);
    assert.equal(r.code, 0);
    const schema = JSON.parse(r.out);
    assert.equal(schema.type, "object");
    assert.ok(schema.properties.stages && schema.properties.runtime && schema.required.includes("stages"));
    assert.equal(schema.additionalProperties, false, "unknown keys are errors in editors too");
    assert.deepEqual(JSON.parse(readFileSync(join(ROOT, "schema", "recipe.schema.json"), "utf8")), recipeJsonSchema(),
      "run `node dist/bin/rlpipe.js schema --out schema/recipe.schema.json`");
  });
});

describe("output safety", () => {
  it("redacts secret environment values and credential-shaped strings", () => {
    const r = new Redactor({ E2B_API_KEY: "ark_abcdef0123456789", HOME: "/root", MY_TOKEN: "tok-1234567" }, []);
    const text = r.redact(`key=ark_abcdef0123456789 token tok-1234567 home /root Authorization: Bearer abc.def ${fakeTencentSecretId()}`);
    assert.equal(text, "key=*** token *** home /root Authorization: Bearer *** ***");
  });

  it("an internal error exits 4 with a short message and no stack", () => {
    const lines: string[] = [];
    const code = reportError({ out: (t) => lines.push(t), err: (t) => lines.push(t) }, new Error("boom"));
    assert.equal(code, 4);
    assert.match(lines.join("\n"), /internal error: boom/);
    assert.doesNotMatch(lines.join("\n"), /\n\s+at /);
  });
});
