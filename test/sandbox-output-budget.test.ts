// What one request may cost the server in memory. Output caps count the bytes the reply carries (a \x01 becomes six,
// \u0001, in JSON), a request keeps at most its reply budget of output (64 MiB), and cases are graded as they arrive:
// a program that fills stdout and stderr with control characters once gave a 201 MB /run_code reply, an HTTP 500 with
// 4 cases through /common_evaluate_batch and 2.75 GB of server memory with 16. Here the same programs, through every
// route, leave the server's peak memory well under a gigabyte, and each reply says what it cut.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { type ServeProcess, startServe } from "./serve-process.js";

/** 16 MiB of \x01 on stdout and on stderr. */
const FLOOD = "import sys\nblock = b'\\x01' * (1 << 20)\nfor _ in range(16):\n    sys.stdout.buffer.write(block)\n    sys.stderr.buffer.write(block)\n";
const python = (code: string) => `\`\`\`python\n${code}\n\`\`\``;

async function post(s: ServeProcess, path: string, body: unknown): Promise<{ status: number; bytes: number; json: any }> {
  const res = await fetch(`${s.url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, bytes: Buffer.byteLength(text), json: JSON.parse(text) };
}

describe("rlpipe serve: the memory one request costs", { timeout: 600_000 }, () => {
  let s: ServeProcess;
  before(async () => { s = await startServe(["--sandbox", "local", "--concurrency", "2", "--quiet"]); });
  after(async () => { await s?.stop(); });

  it("a control: ordinary output comes back whole", async () => {
    const r = await post(s, "/run_code", { language: "python", code: "print('a\\x01b\\tc', '中文')" });
    assert.equal(r.json.status, "Success");
    assert.equal(r.json.run_result.stdout, "a\u0001b\tc 中文\n");
  });

  it("/run_code: 16 MiB of control characters on each stream give output_limit and a reply within two caps", async () => {
    const r = await post(s, "/run_code", { language: "python", code: FLOOD, run_timeout: 60 });
    assert.equal(r.status, 200);
    assert.equal(r.json.status, "Failed");
    assert.match(r.json.run_result.stderr, /\[rlpipe: output limit exceeded\]$/);
    // Each stream is cut where its JSON (six bytes per \x01) reaches 16 MiB: about 2.8 M characters, not 16 M.
    assert.ok(r.json.run_result.stdout.length > 2_700_000 && r.json.run_result.stdout.length <= (16 << 20) / 6, `${r.json.run_result.stdout.length} characters`);
    assert.ok(r.bytes <= 2 * (16 << 20) + 4096, `${r.bytes} bytes`);
  });

  it("/common_evaluate_batch: 16 such cases answer 200, keep 64 MiB of output and say which they left out", async () => {
    const r = await post(s, "/common_evaluate_batch", {
      completion: python(FLOOD),
      config: { language: "python", run_timeout: 60, provided_data: { test_cases: { type: "stdin_stdout", input: Array(16).fill(""), output: Array(16).fill("x") } }, extra: { run_all_cases: true } },
    });
    assert.equal(r.status, 200, JSON.stringify(r.json).slice(0, 300));
    assert.equal(r.json.tests.length, 16);
    assert.ok(r.json.tests.every((t: { passed: boolean; rlpipe_status: string }) => !t.passed && t.rlpipe_status === "output_limit"));
    const omitted = r.json.tests.filter((t: { exec_info: { message: string } }) => /reply budget/.test(t.exec_info.message));
    assert.ok(omitted.length >= 14, `${omitted.length} cases left their output out`);
    assert.ok(r.bytes <= (64 << 20) + (1 << 20), `${r.bytes} bytes`);
  });

  it("/v1/rewards: 16 such cases score 0 and keep no output at all", async () => {
    const r = await post(s, "/v1/rewards", {
      config: { run_timeout_s: 60 },
      samples: [{ data_source: "code", solution_str: python(FLOOD), ground_truth: { type: "stdin_stdout", input: Array(16).fill(""), output: Array(16).fill("x") } }],
    });
    assert.equal(r.status, 200);
    assert.equal(r.json.results[0].score, 0);
    assert.deepEqual(r.json.results[0].cases, Array(16).fill("output_limit"));
    assert.ok(r.bytes < 4096);
  });

  it("a build gets at least its compiler's budget whatever the request asked, and the reply says the budget and the time taken", async () => {
    const r = await post(s, "/run_code", { language: "cpp", code: "#include <cstdio>\nint main() { puts(\"built\"); }", compile_timeout: 1 });
    assert.equal(r.json.status, "Success", JSON.stringify(r.json).slice(0, 400));
    assert.equal(r.json.run_result.stdout, "built\n");
    assert.equal(r.json.compile_result.rlpipe_budget_s, 30, "g++ gets at least 30 s");
    assert.ok(r.json.compile_result.execution_time > 0);
  });

  it("after all of them, the server's peak memory stayed well under a gigabyte", () => {
    const peak = s.peakRssBytes();
    assert.ok(peak < 768 << 20, `peak resident memory ${Math.round(peak / (1 << 20))} MiB`);
  });
});
