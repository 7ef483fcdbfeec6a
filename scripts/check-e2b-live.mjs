#!/usr/bin/env node
// A by-hand check of the E2B / Tencent AGS backend against the real service (never part of the tests, which stay on
// this machine): one evaluation job with a passing and a failing stdio case, and one C++ tool call.
//   E2B_API_KEY=… [E2B_DOMAIN=<region>.tencentags.com] node scripts/check-e2b-live.mjs     (after npm run build)
// Exit 0 when the service behaves as the fake in test/e2b.test.ts does, 1 when it does not, 2 without a key.
import assert from "node:assert/strict";
import { E2BSandbox } from "../dist/adapters/sandboxes/e2b.js";

if (!process.env.E2B_API_KEY) {
  console.error("check-e2b-live: set E2B_API_KEY (and E2B_DOMAIN=<region>.tencentags.com for Tencent AGS)");
  process.exit(2);
}
const b = await E2BSandbox.create({ poolSize: 1 });
try {
  const [r] = await b.evaluate([{
    id: "live", language: "python", code: "print(int(input()) * 2)", limits: { runTimeoutMs: 10_000 },
    tests: [{ kind: "stdio", stdin: "21\n", expectedStdout: "42\n" }, { kind: "stdio", stdin: "1\n", expectedStdout: "3\n" }],
  }]);
  assert.equal(r.status, "ok", r.error);
  assert.deepEqual(r.cases.map((c) => c.status), ["passed", "wrong_answer"]);
  const run = await b.run({ language: "cpp", code: "#include <cstdio>\nint main(){puts(\"hi\");}", limits: { runTimeoutMs: 10_000 } });
  assert.deepEqual([run.status, run.stdout], ["ok", "hi\n"]);
  console.log("check-e2b-live: ok (an evaluation job and a C++ tool call)");
} catch (e) {
  console.error(`check-e2b-live: ${e instanceof Error ? e.message : String(e)}`);
  process.exitCode = 1;
} finally {
  await b.close();
}
