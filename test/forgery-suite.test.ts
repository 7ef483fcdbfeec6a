// The generated forgery suite (test/forgery-suite.ts) against the local sandbox served as the shipped recipes serve it
// (strict verdicts), on both routes that grade: /v1/rewards (every shape) and /common_evaluate_batch (the MultiPL-E
// tail, ScaleBox's shape). Next to each language's right and wrong programs, every trick: none may pass a case.
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { TAIL_SHAPES } from "../core/grading/tail-asserts.js";
import { type RunningServer, startHttpServer } from "../functions/platforms/http.js";
import { ResultCache } from "../functions/reward.js";
import { FORGERY_ROWS, groundTruth, type LanguageRow, type Shape, SHAPES } from "./forgery-suite.js";

const ENV = process.env["RLPIPE_TEST_PYTHON_ENV"] ?? "/var/tmp/rlpipe-test-python-env";

async function post(url: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text === "" ? undefined : JSON.parse(text) };
}

const fence = (row: LanguageRow, code: string) => `\`\`\`${row.language}\n${code}\n\`\`\``;

interface Sample { readonly shape: Shape; readonly what: string; readonly code: string }

function samples(row: LanguageRow): Sample[] {
  const out: Sample[] = [];
  for (const shape of SHAPES) {
    out.push({ shape, what: "right", code: row.program(shape, "", "right") });
    out.push({ shape, what: "wrong", code: row.program(shape, "", "wrong") });
    out.push({ shape, what: "near miss (one off)", code: row.program(shape, "", "near") });
    for (const [name, trick] of Object.entries(row.tricks)) {
      if (row.only?.[name] !== undefined && !row.only[name]!.includes(shape)) continue;
      out.push({ shape, what: name, code: row.program(shape, trick, "wrong") });
    }
  }
  return out;
}

describe("forgery suite: every language × test shape × trick, strict verdicts (issue 32, item 7)", () => {
  let sb: LocalSandbox;
  let server: RunningServer;
  before(async () => {
    assert.ok(existsSync(join(ENV, "pyvenv.cfg")), `the runtime environment (${ENV}) is missing: npm test's setup builds it`);
    sb = await LocalSandbox.create({ pythonEnv: ENV, concurrency: 2 });
    server = await startHttpServer({ backend: sb, cache: new ResultCache(), strictVerdicts: true }, { host: "127.0.0.1", port: 0 });
  });
  after(async () => { await server?.close(); await sb?.close(); });

  it("has a row for every language whose tail shape the code takes apart, with exit-status and result-descriptor tricks", () => {
    assert.deepEqual(Object.keys(FORGERY_ROWS).sort(), Object.keys(TAIL_SHAPES).sort(), "a language or shape cannot be added without its row");
    for (const [lang, row] of Object.entries(FORGERY_ROWS)) {
      const names = Object.keys(row.tricks).join("; ");
      assert.match(names, /exits 0|halts|ends the test binary/, `${lang}: an exit-status game`);
      assert.match(names, /result descriptor/, `${lang}: a write to the result descriptor`);
    }
  });

  for (const [lang, row] of Object.entries(FORGERY_ROWS)) {
    it(`${lang}: /v1/rewards — the right program passes every shape, decided outside its process; no wrong one passes a case`, { timeout: 1_200_000 }, async () => {
      const all = samples(row);
      const r = await post(`${server.url}/v1/rewards`, {
        config: { run_timeout_s: 30 },
        samples: all.map((s) => ({ data_source: "forgery", solution_str: fence(row, s.code), ground_truth: groundTruth(row, s.shape), extra_info: { language: row.language } })),
      });
      assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 2000));
      all.forEach((s, i) => {
        const got = r.body.results[i];
        const label = `${lang} ${s.shape} ${s.what}: ${JSON.stringify(got).slice(0, 1500)}`;
        assert.equal(got.status, "ok", label);
        assert.ok(got.verdicts.every((v: string) => v === "compared_outside" || v === "verifier_process"), label);
        if (s.what === "right") assert.equal(got.score, 1, label);
        else assert.deepEqual(got.cases.filter((c: string) => c === "passed"), [], `forged: ${label}`);
      });
    });

    it(`${lang}: /common_evaluate_batch — the MultiPL-E tail: right accepted, every trick refused, each case compared outside its process`, { timeout: 1_200_000 }, async () => {
      const all = samples(row).filter((s) => s.shape === "tail");
      const replies = await Promise.all(all.map((s) => post(`${server.url}/common_evaluate_batch`, {
        completion: fence(row, s.code),
        config: { language: row.language, compile_timeout: 60, run_timeout: 30, provided_data: { test_cases: groundTruth(row, "tail") }, extra: { run_all_cases: true } },
      })));
      all.forEach((s, i) => {
        const { status, body } = replies[i]!;
        const label = `${lang} tail ${s.what}: ${JSON.stringify(body).slice(0, 1500)}`;
        assert.equal(status, 200, label);
        assert.equal(body.tests.length, lang === "python" ? 1 : 3, label); // a Python tail is one test, run by the verifier
        assert.ok(body.tests.every((t: { rlpipe_verdict_by: string }) => t.rlpipe_verdict_by === (lang === "python" ? "verifier_process" : "compared_outside")), label);
        if (s.what === "right") assert.equal(body.accepted, true, label);
        else assert.deepEqual(body.tests.filter((t: { passed: boolean }) => t.passed), [], `forged: ${label}`);
      });
    });
  }

  it("the control: run whole (program and asserts in one process, as ScaleBox runs them), the same tricks forge verdicts", { timeout: 600_000 }, async () => {
    // A backend that takes no tail apart: what every tail ran as before. Not strict, so it grades them.
    const whole = Object.create(sb) as LocalSandbox;
    Object.assign(whole, { verdictAbilities: () => ({ pythonVerifier: true, sourceCalls: () => false }), evaluate: sb.evaluate.bind(sb), run: sb.run.bind(sb), capabilities: sb.capabilities.bind(sb) });
    const loose = await startHttpServer({ backend: whole, cache: new ResultCache() }, { host: "127.0.0.1", port: 0 });
    try {
      const tried: [string, string][] = [["cpp", "exits 0 from a SIGABRT handler (a failed assert)"], ["nodejs", "redefines the assertion"], ["rust", "redefines the assertion"], ["java", "exits 0 from its uncaught-exception handler (a failed assert)"]];
      for (const [lang, trick] of tried) {
        const row = FORGERY_ROWS[lang]!;
        const { body } = await post(`${loose.url}/common_evaluate_batch`, {
          completion: fence(row, row.program("tail", row.tricks[trick]!, "wrong")),
          config: { language: row.language, compile_timeout: 60, provided_data: { test_cases: groundTruth(row, "tail") }, extra: { run_all_cases: true } },
        });
        assert.equal(body.accepted, true, `${lang} ${trick}: expected the whole program to forge its exit status (else this control proves nothing): ${JSON.stringify(body).slice(0, 800)}`);
        assert.equal(body.tests[0].rlpipe_verdict_by, "program_exit_status");
      }
    } finally {
      await loose.close();
    }
  });
});
