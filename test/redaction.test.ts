// Redaction by name, place and format (issue 35 item 4), whoever reads the output: the corpus of
// test/fixtures/redaction-corpus.txt (what must be hidden, what must be left alone) through core/redact.ts and,
// through Python, through rlpipe_sync.py's copy of the rules — the same list, the same output. Then a local job
// whose log holds one secret of each kind, read back as a user would with a bare shell (none of the values in its
// environment): rlpipe logs (plain and --json), rlpipe report (the page and --json), the dashboard's page of the
// run, and the page the job's sync sidecar writes — no planted value anywhere, each name shown with ***.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LocalAdapter } from "../adapters/providers/local.js";
import { type RunRecord, runsDir, writeRunRecord } from "../adapters/providers/run-records.js";
import { type Plan, bundleDigestOf } from "../core/plan.js";
import { isTerminal } from "../core/providers/phases.js";
import { REDACTION_RULES, Redactor, isSecretLabel, redactText } from "../core/redact.js";
import { CLI, type Ran, runCliAsync, show } from "./cli-process.js";
import { fakeAwsAccessKeyId, fakeE2bKey, fakeHuaweiAk, fakeHuaweiSk, fakeTencentSecretId } from "./fakes/credentials.js";
import { FIXTURES, ROOT, loadSeed } from "./helpers.js";

const T = { timeout: 240_000 };
const PYTHON = join(ROOT, ".venv-test", "bin", "python");
const SIDECAR_DIR = join(ROOT, "recipes", "python");

const ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const pick = (alphabet: string, n: number) => Array.from(randomBytes(n), (b) => alphabet[b % alphabet.length]).join("");
const pem = () => [...Array.from({ length: 4 }, () => pick(`${ALNUM}+/`, 64)), `${pick(ALNUM, 30)}==`].join("\n");

/** A fresh fake credential per {{KIND}} of the corpus (test/python/test_rlpipe_sync_redaction.py makes the same shapes). */
const FAKES: Record<string, () => string> = {
  AKIA: fakeAwsAccessKeyId, ASIA: () => `ASIA${fakeAwsAccessKeyId().slice(4)}`, AKID: fakeTencentSecretId, HWAK: fakeHuaweiAk, SK40: fakeHuaweiSk,
  AWSSECRET: () => pick(`${ALNUM}+/`, 40), E2B: fakeE2bKey, HF: () => `hf_${pick(ALNUM, 34)}`, WORD: () => pick(ALNUM, 24), PEM: pem,
  GHP: () => `ghp_${pick(ALNUM, 36)}`, GHO: () => `gho_${pick(ALNUM, 36)}`, GHU: () => `ghu_${pick(ALNUM, 36)}`, GHS: () => `ghs_${pick(ALNUM, 36)}`,
  GHR: () => `ghr_${pick(ALNUM, 36)}`, GHPAT: () => `github_pat_${pick(ALNUM, 22)}_${pick(ALNUM, 59)}`,
};

interface Case { readonly title: string; readonly input: string; readonly expected: string; readonly planted: readonly string[] }

/** The corpus's cases, each {{KIND}} filled with one fresh fake per case (see the file's header for the format). */
function corpus(): Case[] {
  const cases: { title: string; input: string[]; output: string[] | undefined }[] = [];
  for (const line of readFileSync(join(FIXTURES, "redaction-corpus.txt"), "utf8").split("\n")) {
    if (line.startsWith("#") || line.trim() === "") continue;
    if (line.startsWith("=== ")) cases.push({ title: line.slice(4), input: [], output: undefined });
    else if (line === "--- same") cases.at(-1)!.output = cases.at(-1)!.input;
    else if (line === "---") cases.at(-1)!.output = [];
    else (cases.at(-1)!.output ?? cases.at(-1)!.input).push(line);
  }
  return cases.map((c) => {
    const fills = new Map<string, string>();
    const fill = (text: string) => text.replace(/\{\{([A-Z0-9]+)\}\}/g, (_m, kind: string) => {
      if (!fills.has(kind)) fills.set(kind, FAKES[kind]!());
      return fills.get(kind)!;
    });
    assert.ok(c.output !== undefined, `case "${c.title}" has no --- line`);
    const input = fill(c.input.join("\n"));
    return { title: c.title, input, expected: fill(c.output.join("\n")), planted: [...fills.values()] };
  });
}

/** rlpipe_sync.py's redact() of each text, and its rule list. */
function pythonRedacts(texts: readonly string[]): { out: string[]; rules: unknown } {
  const program = "import json, sys; import rlpipe_sync as s; texts = json.load(sys.stdin); print(json.dumps({'out': [s.redact(t) for t in texts], 'rules': s.REDACTION_RULES}))";
  const r = spawnSync(PYTHON, ["-c", program], { input: JSON.stringify(texts), encoding: "utf8", env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", PYTHONPATH: SIDECAR_DIR } });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as { out: string[]; rules: unknown };
}

describe("redaction rules: the corpus", () => {
  const cases = corpus();

  it("has cases of every kind", () => {
    assert.ok(cases.length >= 25, String(cases.length));
    assert.ok(cases.filter((c) => c.input === c.expected).length >= 7, "ordinary output is in the corpus too");
  });

  for (const c of cases) {
    it(c.title, () => {
      assert.equal(redactText(c.input), c.expected);
      assert.equal(new Redactor({}).redact(c.input), c.expected, "the Redactor applies every rule");
      assert.equal(redactText(c.expected), c.expected, "redacting twice changes nothing");
      for (const p of c.planted) assert.ok(!c.expected.includes(p), `the corpus expects ${c.title}'s planted value gone`);
      // A line quoted as JSON (as rlpipe prints --json) stays valid JSON and loses its secrets too.
      if (!c.input.includes("\n") && !c.input.includes('\\"')) {
        const quoted = JSON.parse(redactText(JSON.stringify(c.input))) as string;
        for (const p of c.planted) assert.ok(!quoted.includes(p), `${c.title}: a planted value survives in JSON: ${quoted}`);
        if (c.input === c.expected) assert.equal(quoted, c.input, "ordinary output is left alone in JSON too");
      }
    });
  }

  it("rlpipe_sync.py (the job's sidecar) holds the same rule list and redacts every case identically", () => {
    const py = pythonRedacts(cases.map((c) => c.input));
    assert.deepEqual(py.rules, JSON.parse(JSON.stringify(REDACTION_RULES)), "recipes/python/rlpipe_sync.py REDACTION_RULES differs from core/redact.ts");
    cases.forEach((c, i) => assert.equal(py.out[i], redactText(c.input), c.title));
  });

  it("names: secret by their last word, not by a substring", () => {
    for (const n of ["AWS_SECRET_ACCESS_KEY", "WANDB_API_KEY", "COS_SECRET_KEY", "password", "DB_PASSWORD", "apiKey", "APIKey", "SecretId", "AWS_ACCESS_KEY_ID",
      "x-amz-security-token", "GITHUB_TOKEN", "token", "HUAWEICLOUD_SDK_AK", "GOOGLE_APPLICATION_CREDENTIALS", "private_key", "passwd", "accessKeySecret"]) assert.ok(isSecretLabel(n), n);
    for (const n of ["key", "tokenizer", "max_tokens", "pad_token_id", "eos_token", "num_key_value_heads", "prompt_key", "reward_fn_key", "keyboard", "monkey",
      "secrets", "token_env", "secret-env", "HF_TOKEN_PATH", "sha256", "PWD"]) assert.ok(!isSecretLabel(n), n);
  });

  it("this shell's secret values are still hidden whatever their shape", () => {
    assert.equal(new Redactor({ MY_TOKEN: "plain-words-value" }).redact("saw plain-words-value here"), "saw *** here");
  });
});

// ------------------------------------------------------------------------------------------------ end to end

/** One secret of each kind, as a job could print them. */
function plantedLog(): { log: string; planted: string[]; shown: string[]; kept: string[] } {
  const v = {
    aws: pick(`${ALNUM}+/`, 40), wandb: fakeHuaweiSk(), cos: fakeHuaweiSk(), api: pick(ALNUM, 24), hf: `hf_${pick(ALNUM, 34)}`, url: pick(ALNUM, 24),
    pw: `pw-${pick(ALNUM, 16)}`, cred: fakeAwsAccessKeyId(), session: pick(ALNUM, 40), sig: randomBytes(32).toString("hex"), akia: fakeAwsAccessKeyId(),
    akid: fakeTencentSecretId(), e2b: fakeE2bKey(), ghp: `ghp_${pick(ALNUM, 36)}`, hwak: fakeHuaweiAk(), pem: pem(),
  };
  const digest = randomBytes(32).toString("hex");
  const kept = ["step:10 - critic/score/mean:0.352 - timing_s/step:91.2", `Digest: sha256:${digest}`, "checkpoint saved to s3://runs/leaky.rl/checkpoints/global_step_10"];
  const log = [
    `AWS_SECRET_ACCESS_KEY=${v.aws}`, `WANDB_API_KEY=${v.wandb}`, `COS_SECRET_KEY: ${v.cos}`, `{"api_key": "${v.api}", "model": "qwen3"}`,
    `python train.py --hf-token ${v.hf} --max-tokens 512`, `cloning https://user:${v.url}@git.example.com/r.git`, `db password=${v.pw}`,
    `GET https://b.s3.amazonaws.com/k?X-Amz-Credential=${v.cred}%2F20260101&X-Amz-Security-Token=${v.session}&X-Amz-Signature=${v.sig}`,
    `using ${v.akia} and ${v.akid} and ${v.e2b} and ${v.ghp}`, `HUAWEICLOUD_SDK_AK=${v.hwak}`,
    "-----BEGIN PRIVATE KEY-----", v.pem, "-----END PRIVATE KEY-----", ...kept,
  ].join("\n");
  const shown = ["AWS_SECRET_ACCESS_KEY=***", "WANDB_API_KEY=***", "COS_SECRET_KEY: ***", `{"api_key": "***", "model": "qwen3"}`, "--hf-token *** --max-tokens 512",
    "https://***@git.example.com/r.git", "db password=***", "X-Amz-Credential=***&X-Amz-Security-Token=***&X-Amz-Signature=***", "using *** and *** and *** and ***",
    "HUAWEICLOUD_SDK_AK=***", "-----BEGIN PRIVATE KEY-----***-----END PRIVATE KEY-----"];
  // The PEM's lines one by one: none may be left, wherever the text was cut.
  return { log, planted: [...Object.values(v).filter((x) => x !== v.pem), ...v.pem.split("\n")], shown, kept };
}

const unescapeHtml = (s: string) => s.replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");

async function startDashboard(cwd: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [CLI, "dashboard", "--port", "0"], { cwd, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => { err += d.toString(); });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`rlpipe dashboard did not start:\n${err}`)), 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /^rlpipe dashboard: (http:\/\/127\.0\.0\.1:\d+\/) /m.exec(out);
      if (m !== null) { clearTimeout(timer); resolve(m[1]!); }
    });
    child.once("exit", () => { clearTimeout(timer); reject(new Error(`rlpipe dashboard exited:\n${err}`)); });
  });
  return { url, child };
}

describe("a job's log holding one secret of each kind, read back with a shell that knows none of them", () => {
  let dir: string;
  const name = "leaky-0a1b2c3d";
  const planted = plantedLog();
  const rlpipe = (args: string[]): Promise<Ran> => runCliAsync(args, { cwd: dir, timeoutMs: 120_000 });

  /** No planted value (nor a PEM line) in `text`; every name with *** and the ordinary lines intact. */
  const assertRedacted = (what: string, text: string) => {
    for (const p of planted.planted) assert.ok(!text.includes(p), `${what} shows a planted secret (${p.slice(0, 6)}…)`);
    for (const s of [...planted.shown, ...planted.kept]) assert.ok(text.includes(s), `${what} lacks ${JSON.stringify(s)}:\n${text}`);
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "rlpipe-redaction-"));
    const adapter = new LocalAdapter({ cwd: dir, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin" }, stopGraceMs: 3000 });
    writeFileSync(join(dir, "planted.txt"), `${planted.log}\n`);
    const files = [{ path: "launch.sh", content: `#!/usr/bin/env bash\ncat ${JSON.stringify(join(dir, "planted.txt"))}\n`, executable: true }];
    const plan = { jobName: name, bundleDigest: bundleDigestOf(files), files } as unknown as Plan;
    await adapter.prepare(plan);
    const ref = await adapter.submit(plan);
    const now = new Date().toISOString();
    const record: RunRecord = {
      version: 1, name, provider: "local", ref: { id: ref.id, ...(ref.extra === undefined ? {} : { extra: ref.extra }) },
      recipe: { name: "test", file: "test.yaml", hash: "0".repeat(64) }, recipeData: loadSeed("qwen3-1.7b-code-toolcall-sd").recipe,
      request: {}, outcome: "created", createdAt: now, updatedAt: now, prices: [],
    };
    await writeRunRecord(runsDir(dir), record);
    const end = Date.now() + 60_000;
    while (!isTerminal((await adapter.status(ref)).phase)) {
      assert.ok(Date.now() < end, "the job did not end");
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("rlpipe logs, plain and --json", T, async () => {
    const plain = await rlpipe(["logs", name]);
    assert.equal(plain.code, 0, show(plain));
    assertRedacted("rlpipe logs", plain.out);
    const json = await rlpipe(["logs", name, "--json"]);
    assert.equal(json.code, 0, show(json));
    const lines = json.out.trim().split("\n").map((l) => (JSON.parse(l) as { log: string }).log);
    assertRedacted("rlpipe logs --json", lines.join("\n"));
  });

  it("rlpipe report: the page and --json", T, async () => {
    const page = await rlpipe(["report", name, "--out", "page.html"]);
    assert.equal(page.code, 0, show(page));
    const html = readFileSync(join(dir, "page.html"), "utf8");
    assertRedacted("the run's page", unescapeHtml(html));
    const json = await rlpipe(["report", name, "--json"]);
    assert.equal(json.code, 0, show(json));
    const data = JSON.parse(json.out) as { logs: { ok: boolean; value: { lines: string[] } } };
    assert.ok(data.logs.ok, json.out);
    assertRedacted("rlpipe report --json", data.logs.value.lines.join("\n"));
    for (const p of planted.planted) assert.ok(!json.out.includes(p), "nowhere in the JSON");
  });

  it("the dashboard's page of the run", T, async () => {
    const dash = await startDashboard(dir);
    try {
      const r = await fetch(`${dash.url}runs/${name}`);
      assert.equal(r.status, 200);
      assertRedacted("the dashboard's run page", unescapeHtml(await r.text()));
      const table = await (await fetch(dash.url)).text();
      for (const p of planted.planted) assert.ok(!table.includes(p), "the dashboard's table shows a planted secret");
    } finally {
      const exited = new Promise((r) => dash.child.once("exit", r));
      dash.child.kill("SIGTERM");
      await exited;
    }
  });

  it("the page the job's sync sidecar writes (rlpipe_sync.py --page): metric and recipe names carrying secrets", T, () => {
    const work = join(dir, "sidecar");
    mkdirSync(join(work, "ckpt"), { recursive: true });
    const key = fakeHuaweiSk();
    const pw = `pw-${pick(ALNUM, 16)}`;
    const hf = `hf_${pick(ALNUM, 34)}`;
    writeFileSync(join(work, "m.jsonl"), [1, 2].map((s) => `${JSON.stringify({ step: s, data: { "critic/score/mean": 0.1 * s, [`debug/WANDB_API_KEY=${key}`]: s, [`env/password: ${pw}`]: s } })}\n`).join(""));
    const r = spawnSync(PYTHON, [join(SIDECAR_DIR, "rlpipe_sync.py"), "--store", `file://${join(work, "store")}`, "--run", `${name}.rl`, "--dir", join(work, "ckpt"),
      "--metrics", join(work, "m.jsonl"), "--once", "--page", name, "--page-recipe", `demo HF_TOKEN=${hf}`, "--page-provider", "local"], { encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const html = unescapeHtml(readFileSync(join(work, "store", name, "report.html"), "utf8"));
    for (const p of [key, pw, hf]) assert.ok(!html.includes(p), "the sidecar's page shows a planted secret");
    for (const s of ["debug/WANDB_API_KEY=***", "env/password: ***", "demo HF_TOKEN=***", "critic/score/mean"]) assert.ok(html.includes(s), s);
  });
});
