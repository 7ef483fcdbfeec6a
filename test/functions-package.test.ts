// `rlpipe package` (item 4): for every platform, each function's zip is unpacked by an independent reader and its
// handler run in a fresh node process without node_modules, with the platform's documented trigger events
// (test/fixtures/functions/ through test/fakes/platform-events.ts): the reward bundle against the strict E2B fakes,
// the runs bundle against moto (a presigned URL that really uploads). Also: the size report and which SDKs each
// bundle holds, byte-identical rebuilds, and the errors (unknown platform, missing dist, an unbundleable entry).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { S3Store } from "../adapters/storage/s3.js";
import { parseStoreUri } from "../adapters/storage/store.js";
import { buildFunctionBundle } from "../bin/function-bundle.js";
import { FUNCTION_PLATFORMS, type FunctionName, type FunctionPlatform, PLATFORM_TARGETS, zipFileName } from "../core/packaging/targets.js";
import { runToken } from "../functions/runs.js";
import { FakeE2B } from "./fakes/e2b-fake.js";
import { eventFor, parseResult } from "./fakes/platform-events.js";
import { invokeBundle, nodeModulesAbove, unzipIndependently } from "./function-invoker.js";
import { ROOT } from "./helpers.js";
import { type Moto, TEST_CREDENTIALS, startMoto } from "./servers/moto.js";

const CLI = join(ROOT, "dist", "bin", "rlpipe.js");
const T = { timeout: 120_000 };
const MiB = 1024 * 1024;

interface Report {
  readonly function: FunctionName;
  readonly zip: string;
  readonly rawBytes: number;
  readonly files: readonly { path: string; bytes: number }[];
  readonly zipBytes: number;
  readonly sha256: string;
  readonly handlerFile: string;
  readonly runtime: string;
  readonly sdks: readonly { path: string; bytes: number }[];
  readonly entrySdks: readonly { path: string; bytes: number }[];
  readonly packages: readonly { path: string; bytes: number }[];
  readonly topInputs: readonly { path: string; bytes: number }[];
  readonly assets: readonly string[];
}

function rlpipe(args: readonly string[], cwd = ROOT) {
  const r = spawnSync(process.execPath, [CLI, ...args], { cwd, encoding: "utf8", timeout: 120_000, env: { PATH: process.env["PATH"] ?? "/usr/bin:/bin", HOME: cwd } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const FUNCTIONS: FunctionName[] = ["reward", "runs", "console"];

describe("rlpipe package: one self-contained zip per function and platform", () => {
  let tmp = "";
  const reports = new Map<FunctionPlatform, Report[]>();
  const dirs = new Map<string, string>();

  before(() => {
    tmp = mkdtempSync(join(tmpdir(), "rlpipe-package-"));
    for (const p of FUNCTION_PLATFORMS) {
      const r = rlpipe(["package", "--platform", p, "--function", FUNCTIONS.join(","), "--out", join(tmp, p), "--json"]);
      assert.equal(r.code, 0, r.err);
      const doc = JSON.parse(r.out) as { platform: string; functions: Report[] };
      assert.equal(doc.platform, p);
      reports.set(p, doc.functions);
      for (const f of doc.functions) dirs.set(`${p}/${f.function}`, unzipIndependently(join(tmp, p, f.zip), join(tmp, "unpacked", p, f.function)));
    }
  });
  after(() => { if (tmp !== "") rmSync(tmp, { recursive: true, force: true }); });

  it("writes the zips and the manifest; the handler file is alone at the zip root; the report names sizes, SDKs and inputs", () => {
    for (const p of FUNCTION_PLATFORMS) {
      const target = PLATFORM_TARGETS[p];
      const manifest = JSON.parse(readFileSync(join(tmp, p, "rlpipe-functions.json"), "utf8")) as { platform: string; functions: Report[] };
      assert.deepEqual(manifest.functions.map((f) => f.function), FUNCTIONS);
      for (const f of reports.get(p)!) {
        assert.equal(f.zip, zipFileName(p, f.function));
        const listed = spawnSync("python3", ["-m", "zipfile", "-l", join(tmp, p, f.zip)], { encoding: "utf8" });
        assert.equal(listed.status, 0, listed.stderr);
        const names = listed.stdout.trim().split("\n").slice(1).map((l) => l.trim().split(/\s+/)[0]!);
        assert.deepEqual(names, f.files.map((x) => x.path), "the zip holds the files the report lists");
        assert.ok(names.includes(target.handlerFile), `${p}/${f.function}: ${target.handlerFile} at the root`);
        // CommonJS bundles are one file; ES modules (Lambda) put what is loaded on demand in chunks/.
        if (target.format === "cjs") assert.deepEqual(names, [target.handlerFile]);
        else assert.ok(names.every((n) => n === target.handlerFile || /^chunks\/[\w-]+\.mjs$/.test(n)), names.join(", "));
        const bytes = readFileSync(join(tmp, p, f.zip));
        assert.equal(f.zipBytes, bytes.length);
        assert.equal(f.sha256, createHash("sha256").update(bytes).digest("hex"));
        assert.equal(f.rawBytes, f.files.reduce((n, x) => n + readFileSync(join(dirs.get(`${p}/${f.function}`)!, x.path)).length, 0));
        assert.equal(f.handlerFile, target.handlerFile);
        assert.equal(f.runtime, target.runtime);
        assert.ok(f.topInputs.length > 0 && f.topInputs.every((i, k) => k === 0 || f.topInputs[k - 1]!.bytes >= i.bytes), "largest first");
        assert.ok(f.zipBytes < f.rawBytes, "deflated");
      }
      const text = rlpipe(["package", "--platform", p, "--function", "reward", "--out", join(tmp, `${p}-text`)]);
      assert.equal(text.code, 0, text.err);
      assert.match(text.out, new RegExp(`reward +rlpipe-reward-${p}\\.zip: \\d+ KiB zipped, [\\d.]+ MiB unzipped: ${target.handlerFile.replace(".", "\\.")}${target.format === "esm" ? " \\+ \\d+ chunks loaded on demand" : ""} \\(${target.format}, ${target.nodeTarget}\\)`));
      assert.match(text.out, /SDKs: .*e2b/);
      assert.match(text.out, /embedded files: .*e2b_runner\.py/);
    }
  });

  it("heavy SDKs only where used: reward holds e2b, no Tencent SDK, and the S3 client only for RLPIPE_USAGE_STORE (on Lambda outside the handler file); runs the S3 client but no e2b; reward is under 1 MiB zipped", () => {
    for (const p of FUNCTION_PLATFORMS) {
      const by = new Map(reports.get(p)!.map((f) => [f.function, f]));
      const pkgs = (fn: FunctionName) => by.get(fn)!.packages.map((x) => x.path);
      const reward = by.get("reward")!;
      assert.ok(pkgs("reward").includes("e2b"), `${p} reward bundles e2b`);
      assert.deepEqual(pkgs("reward").filter((x) => x.startsWith("tencentcloud-sdk-")), [], `${p} reward: no Tencent SDK`);
      // The usage store's S3 client is imported only when RLPIPE_USAGE_STORE is set: Lambda's split bundle keeps it
      // (and e2b) out of the handler file; a CommonJS bundle is one file, where it is parsed but not run.
      assert.ok(pkgs("reward").includes("@aws-sdk/client-s3"), `${p} reward: the S3 client for the usage store`);
      if (PLATFORM_TARGETS[p].format === "esm") assert.deepEqual(reward.entrySdks, [], `${p} reward: no SDK in ${PLATFORM_TARGETS[p].handlerFile}`);
      assert.ok(reward.assets.includes("adapters/sandboxes/harness/e2b_runner.py"), "the e2b runner travels inside the bundle");
      assert.ok(reward.zipBytes < MiB, `${p} reward: ${reward.zipBytes} bytes zipped (goal: under 1 MiB)`);
      assert.ok(pkgs("runs").includes("@aws-sdk/client-s3"), `${p} runs bundles the S3 client`);
      assert.ok(pkgs("runs").includes("@aws-sdk/s3-request-presigner"));
      assert.deepEqual(pkgs("runs").filter((x) => x === "e2b" || x.startsWith("tencentcloud-sdk-")), [], `${p} runs: no e2b, no Tencent SDK`);
      assert.ok(pkgs("console").includes("tencentcloud-sdk-nodejs-common"), `${p} console bundles the TI-ONE client`);
      assert.ok(by.get("console")!.assets.includes("recipes/python/rlpipe_reward.py"), "the shims a launch bundle ships travel inside the console bundle");
    }
  });

  it("the same build gives the same bytes", async () => {
    for (const p of FUNCTION_PLATFORMS) {
      const again = await buildFunctionBundle({ platform: p, fn: "reward" });
      assert.ok(Buffer.from(again.zip).equals(readFileSync(join(tmp, p, zipFileName(p, "reward")))), `${p}: rebuilt reward zip is byte-identical`);
    }
  });

  describe("the reward bundle in a fresh node process without node_modules, against the strict E2B fakes", () => {
    const E2B_KEY = `e2b_${randomBytes(20).toString("hex")}`;
    const TOKEN = randomBytes(24).toString("hex");
    let fake: FakeE2B;
    before(async () => { fake = await FakeE2B.start({ apiKey: E2B_KEY }); });
    after(async () => { await fake.close(); });

    for (const p of FUNCTION_PLATFORMS) {
      it(`${p}: /v1/ping, /run_code and /v1/rewards answer; no token is 401`, T, async () => {
        const dir = dirs.get(`${p}/reward`)!;
        assert.deepEqual(nodeModulesAbove(dir), [], "nothing above the bundle could supply a module");
        const secrets = { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY };
        const env = { RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost", RLPIPE_SANDBOX_CONCURRENCY: "1", ...(p === "functiongraph" ? {} : secrets) };
        const auth = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
        const gt = JSON.stringify({ input: ["1 2"], output: ["3"], fn_name: null, type: "stdin_stdout" });
        const events = [
          eventFor(p, { method: "GET", path: "/v1/ping" }),
          eventFor(p, { method: "POST", path: "/run_code", headers: auth, body: { code: "print(6 * 7)", language: "python" } }),
          eventFor(p, { method: "POST", path: "/v1/rewards", headers: auth, body: { samples: [{ data_source: "code", solution_str: "```python\na, b = map(int, input().split())\nprint(a + b)\n```", ground_truth: gt }] } }),
          eventFor(p, { method: "POST", path: "/run_code", headers: { "content-type": "application/json" }, body: { code: "print(1)", language: "python" } }),
        ];
        const run = await invokeBundle({ platform: p, dir, events, env, userData: secrets, timeoutMs: 90_000 });
        const [ping, code, rewards, noToken] = run.results.map(parseResult);
        assert.deepEqual([ping!.status, ping!.body], [200, "pong"]);
        assert.equal(code!.status, 200, JSON.stringify(code!.body));
        assert.equal(code!.body.run_result.stdout, "42\n");
        assert.equal(rewards!.status, 200, JSON.stringify(rewards!.body));
        assert.deepEqual(rewards!.body.results.map((r: { score: number; status: string }) => [r.score, r.status]), [[1, "ok"]]);
        assert.equal(noToken!.status, 401);
        assert.doesNotMatch(run.log, new RegExp(`${TOKEN}|${E2B_KEY}`), "no secret in the function's log");
        assert.deepEqual(fake.stats.unknown, []);
      });
    }

    it("with RLPIPE_USAGE_STORE, each platform's bundle writes the run's usage to moto from a fresh process (the S3 client loaded on demand)", T, async () => {
      const moto = await startMoto();
      try {
        assert.equal((await fetch(`${moto.endpoint}/rlpipe-usage`, { method: "PUT" })).status, 200);
        const awsEnv = { S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1", AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey };
        const store = S3Store.fromUri(parseStoreUri("s3://rlpipe-usage/u"), awsEnv);
        try {
          for (const p of FUNCTION_PLATFORMS) {
            const secrets = { RLPIPE_SANDBOX_TOKEN: TOKEN, E2B_API_KEY: E2B_KEY };
            const env = {
              RLPIPE_SANDBOX: "e2b", E2B_API_URL: fake.apiUrl, E2B_SANDBOX_URL: fake.sandboxUrl, E2B_DOMAIN: "localhost", RLPIPE_SANDBOX_CONCURRENCY: "1",
              RLPIPE_USAGE_STORE: "s3://rlpipe-usage/u", ...awsEnv, ...(p === "functiongraph" ? {} : secrets),
            };
            const gt = JSON.stringify({ input: ["1 2"], output: ["3"], fn_name: null, type: "stdin_stdout" });
            const run = `bundle-usage-${p}`;
            const events = [eventFor(p, {
              method: "POST", path: "/v1/rewards", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "x-rlpipe-run": run },
              body: { samples: [{ data_source: "code", solution_str: "```python\na, b = map(int, input().split())\nprint(a + b)\n```", ground_truth: gt }] },
            })];
            const result = await invokeBundle({ platform: p, dir: dirs.get(`${p}/reward`)!, events, env, userData: secrets, timeoutMs: 90_000 });
            const answer = parseResult(result.results[0]);
            assert.equal(answer.status, 200, JSON.stringify(answer.body));
            const listed = await store.list(`${run}/usage/`);
            assert.equal(listed.length, 1, `${p}: one usage object\n${result.log}`);
            const rec = JSON.parse((await store.get(listed[0]!.key)).toString("utf8")) as { platform: string; counters: { samples: number; evaluated: number } };
            assert.equal(rec.platform, p);
            assert.deepEqual([rec.counters.samples, rec.counters.evaluated], [1, 1]);
          }
        } finally {
          await store.close();
        }
      } finally {
        await moto.stop();
      }
    });
  });

  describe("the runs bundle in a fresh node process without node_modules, against moto", () => {
    let moto: Moto;
    const SECRET = randomBytes(24).toString("hex");
    const BUCKET = "rlpipe-runs-package";
    before(async () => {
      moto = await startMoto();
      const made = await fetch(`${moto.endpoint}/${BUCKET}`, { method: "PUT" });
      assert.ok(made.ok, `create bucket: ${made.status}`);
    });
    after(async () => { await moto.stop(); });

    for (const p of FUNCTION_PLATFORMS) {
      it(`${p}: a bad run token is 401; a good one gets a presigned URL that uploads to the store`, T, async () => {
        const dir = dirs.get(`${p}/runs`)!;
        const env = {
          RLPIPE_RUNS_STORE: `s3://${BUCKET}/${p}`, S3_ENDPOINT: moto.endpoint, AWS_REGION: "us-east-1",
          AWS_ACCESS_KEY_ID: TEST_CREDENTIALS.accessKeyId, AWS_SECRET_ACCESS_KEY: TEST_CREDENTIALS.secretAccessKey,
          ...(p === "functiongraph" ? {} : { RLPIPE_RUNS_SECRET: SECRET }),
        };
        const data = Buffer.from(`checkpoint bytes for ${p}\n`);
        const md5 = createHash("md5").update(data).digest("hex");
        const body = { path: "checkpoints/global_step_1/actor/model.pt", size: data.length, sha256: createHash("sha256").update(data).digest("hex"), partSize: 8 * MiB, partMd5s: [md5] };
        const json = { "content-type": "application/json" };
        const events = [
          eventFor(p, { method: "POST", path: "/v1/runs/run-a/uploads", headers: { ...json, authorization: `Bearer ${runToken(SECRET, "run-b")}` }, body }),
          eventFor(p, { method: "POST", path: "/v1/runs/run-a/uploads", headers: { ...json, authorization: `Bearer ${runToken(SECRET, "run-a")}` }, body }),
        ];
        const run = await invokeBundle({ platform: p, dir, events, env, userData: { RLPIPE_RUNS_SECRET: SECRET }, timeoutMs: 90_000 });
        const [bad, good] = run.results.map(parseResult);
        assert.equal(bad!.status, 401, JSON.stringify(bad!.body));
        assert.equal(good!.status, 200, JSON.stringify(good!.body));
        assert.equal(good!.body.mode, "single");
        const url = new URL(good!.body.url as string);
        assert.equal(url.origin, moto.endpoint);
        assert.ok(url.searchParams.has("X-Amz-Signature"), "a presigned URL");
        const put = await fetch(url, { method: "PUT", headers: good!.body.headers as Record<string, string>, body: data });
        assert.equal(put.status, 200, await put.text());
        const store = S3Store.fromUri(parseStoreUri(env.RLPIPE_RUNS_STORE), env);
        try {
          assert.ok((await store.get("run-a/checkpoints/global_step_1/actor/model.pt")).equals(data), "the object is in the store");
        } finally {
          await store.close();
        }
      });
    }
  });

  describe("the console bundle in a fresh node process without node_modules", () => {
    for (const p of FUNCTION_PLATFORMS) {
      it(`${p}: a console deploy event with dryRun answers the plan and request; a bad event is a JSON error (exit code 2)`, T, async () => {
        const dir = dirs.get(`${p}/console`)!;
        assert.deepEqual(nodeModulesAbove(dir), []);
        const recipe = readFileSync(join(ROOT, "recipes", "qwen3-1.7b-code-toolcall.yaml"), "utf8");
        const run = await invokeBundle({
          platform: p, dir, env: {},
          events: [{ action: "deploy", recipe, provider: "modelarts", dryRun: true }, { action: "deplyo", provider: "modelarts" }],
        });
        const [dry, bad] = run.results as Record<string, any>[];
        assert.equal(dry!["ok"], true, JSON.stringify(dry));
        assert.equal(dry!["dryRun"], true);
        assert.equal(dry!["request"].api, "POST /v2/{project_id}/training-jobs");
        assert.match(dry!["summary"][0], /qwen3-1\.7b-code-toolcall → modelarts/);
        assert.deepEqual([bad!["ok"], bad!["exitCode"], bad!["error"].code], [false, 2, "bad_event"]);
        assert.equal(bad!["error"].hint, 'did you mean "deploy"?');
      });
    }
  });
});

describe("rlpipe package: errors say what and where, with a hint", () => {
  let tmp = "";
  before(() => { tmp = mkdtempSync(join(tmpdir(), "rlpipe-package-errors-")); });
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it("an unknown platform or function is a usage error (exit 2) with a did-you-mean, as JSON too", () => {
    const r = rlpipe(["package", "--platform", "sfc"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /unknown platform "sfc"; did you mean "scf"\?\n {2}hint: platforms: lambda, functiongraph, scf/);
    const fn = rlpipe(["package", "--platform", "scf", "--function", "rewrad", "--json"]);
    assert.equal(fn.code, 2);
    assert.match(JSON.parse(fn.out).error.message, /unknown function "rewrad"; did you mean "reward"/);
    const none = rlpipe(["package"]);
    assert.equal(none.code, 2);
    assert.match(none.err, /--platform is required/);
  });

  it("a package without the compiled entry says to build (exit 2); nothing is written", async () => {
    const root = join(tmp, "no-dist");
    mkdirSync(root, { recursive: true });
    await assert.rejects(buildFunctionBundle({ platform: "scf", fn: "reward", root }), (e: unknown) =>
      (e as { code?: string }).code === "package_entry_missing" && (e as { exitCode?: number }).exitCode === 2 && /npm run build/.test((e as { hint?: string }).hint ?? "")
      && (e as Error).message.includes(join(root, "dist", "functions", "entries", "scf", "reward.js")));
  });

  it("an entry esbuild cannot bundle: a missing dependency is exit 2 (install), a computed import() exit 4 (a bug), naming the file", async () => {
    const root = join(tmp, "broken");
    const entryDir = join(root, "dist", "functions", "entries", "scf");
    mkdirSync(entryDir, { recursive: true });
    writeFileSync(join(entryDir, "reward.js"), 'import { x } from "no-such-package-rlpipe-test";\nexport const main_handler = async () => x;\n');
    await assert.rejects(buildFunctionBundle({ platform: "scf", fn: "reward", root }), (e: unknown) =>
      (e as { code?: string }).code === "package_build_failed" && (e as { exitCode?: number }).exitCode === 2
      && /Could not resolve "no-such-package-rlpipe-test"/.test((e as Error).message) && /npm ci/.test((e as { hint?: string }).hint ?? ""));
    writeFileSync(join(entryDir, "runs.js"), 'const name = "node:os";\nexport const main_handler = async () => (await import(name)).hostname();\n');
    await assert.rejects(buildFunctionBundle({ platform: "scf", fn: "runs", root }), (e: unknown) =>
      (e as { code?: string }).code === "package_computed_import" && (e as { exitCode?: number }).exitCode === 4
      && /dist\/functions\/entries\/scf\/runs\.js:2: import\(\) of a computed module name/.test((e as Error).message));
  });

  it("Lambda's split ES module bundle: import() of a CommonJS-only package still has its named exports", T, async () => {
    // Inside the repository, so that esbuild finds node_modules; the bundle then runs where there is none.
    mkdirSync(join(ROOT, ".cache"), { recursive: true }); // absent in a fresh clone
    const root = mkdtempSync(join(ROOT, ".cache", "rlpipe-split-"));
    try {
      const entryDir = join(root, "dist", "functions", "entries", "lambda");
      mkdirSync(entryDir, { recursive: true });
      writeFileSync(join(entryDir, "reward.js"), [
        "export const handler = async () => {",
        '  const { CommonClient } = await import("tencentcloud-sdk-nodejs-common/tencentcloud/common/common_client.js");',
        "  return typeof CommonClient;",
        "};",
      ].join("\n"));
      const built = await buildFunctionBundle({ platform: "lambda", fn: "reward", root });
      const zipPath = join(root, "split.zip");
      writeFileSync(zipPath, built.zip);
      const dir = unzipIndependently(zipPath);
      try {
        assert.deepEqual((await invokeBundle({ platform: "lambda", dir, events: [{}], env: {} })).results, ["function"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("a file read at runtime that the package lacks is named (exit 2), not left to fail in the cloud", async () => {
    const root = join(tmp, "asset");
    const entryDir = join(root, "dist", "functions", "entries", "lambda");
    mkdirSync(entryDir, { recursive: true });
    writeFileSync(join(entryDir, "reward.js"), [
      'import { readFileSync } from "node:fs";', 'import { dirname, resolve } from "node:path";', 'import { fileURLToPath } from "node:url";',
      'const P = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../recipes/python/missing.py");',
      "export const handler = async () => readFileSync(P, \"utf8\");",
    ].join("\n"));
    await assert.rejects(buildFunctionBundle({ platform: "lambda", fn: "reward", root }), (e: unknown) =>
      (e as { code?: string }).code === "package_asset_missing" && (e as { exitCode?: number }).exitCode === 2 && /recipes\/python\/missing\.py/.test((e as Error).message));
    writeFileSync(join(root, "present.txt"), "embedded text ✓\n");
    writeFileSync(join(entryDir, "runs.js"), [
      'import { existsSync, readFileSync } from "node:fs";', 'import { dirname, resolve } from "node:path";', 'import { fileURLToPath } from "node:url";',
      'const P = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../present.txt");',
      "export const handler = async () => ({ exists: existsSync(P), text: readFileSync(P, \"utf8\"), bytes: readFileSync(P).length });",
    ].join("\n"));
    const built = await buildFunctionBundle({ platform: "lambda", fn: "runs", root });
    assert.deepEqual(built.report.assets, ["present.txt"]);
    const zipPath = join(tmp, "asset.zip");
    writeFileSync(zipPath, built.zip);
    const dir = unzipIndependently(zipPath);
    try {
      const run = await invokeBundle({ platform: "lambda", dir, events: [{}], env: {} });
      assert.deepEqual(run.results, [{ exists: true, text: "embedded text ✓\n", bytes: Buffer.byteLength("embedded text ✓\n") }]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
