// The local demo recipe, priced at this machine's hourly rate and deployed for real (`rlpipe deploy --provider local
// --wait`): the run the report, dashboard and cost --run tests read back.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Ran, runCliAsync, show } from "./cli-process.js";
import { RECIPES, editYaml, recipePath } from "./helpers.js";
import { freePort } from "./servers/moto.js";

/** Writes demo.yaml (with a rate for this machine's time, so a cost so far has a price) and its data into dir,
 * deploys it and waits for it to succeed; returns the run's name. */
export async function deployPricedDemo(dir: string, env: Readonly<Record<string, string>> = {}): Promise<string> {
  mkdirSync(join(dir, "data"), { recursive: true });
  copyFileSync(join(RECIPES, "data", "demo-problems.jsonl"), join(dir, "data", "demo-problems.jsonl"));
  writeFileSync(join(dir, "demo.yaml"), editYaml(readFileSync(recipePath("local-demo"), "utf8"), [
    [["prices"], [{ item: "self-hosted:node-hour", value: 36, currency: "CNY", unit: "node-hour", source: "test: this machine's hourly cost" }]],
  ]));
  const r: Ran = await runCliAsync(["deploy", "demo.yaml", "--provider", "local", "--yes", "--wait", "--json"], {
    cwd: dir, env: { RLPIPE_POLL_MS: "200", ...env, RLPIPE_SANDBOX_PORT: String(await freePort()) }, timeoutMs: 240_000,
  });
  assert.equal(r.code, 0, show(r));
  const res = JSON.parse(r.out.trim().split("\n").pop()!) as { name: string; phase: string };
  assert.equal(res.phase, "SUCCEEDED", show(r));
  return res.name;
}
