// Provider ray: the zip writer (read back by Python's zipfile and Ray's own unpacker), the planned Jobs API body,
// and the adapter against a real single-node Ray cluster started here (loopback only, token auth on): the local
// demo's bundle runs to SUCCEEDED with its logs followed by cursor; a second deploy of the same plan finds the
// job; stop ends a long job as STOPPED; a failing job reports FAILED with its exit code; a missing or wrong token
// is a clear auth error that never shows a token.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { request } from "undici";
import { parse, stringify } from "yaml";
import { bundledAssets, readBeside } from "../bin/commands/plan.js";
import { type BundleFile, type Plan, bundleDigestOf, plan } from "../core/plan.js";
import { RaySubmitBody, buildRayRequest, rayPackageName, rayPackageUri } from "../core/providers/ray-request.js";
import { buildNamedRequest } from "../core/providers/request.js";
import { canonicalJson, parseRecipe, sha256 } from "../core/recipe/load.js";
import { RecipeError, type RecipeIssue } from "../core/errors.js";
import { zipFiles } from "../core/util/zip.js";
import { type RayAdapter, createRayAdapter } from "../adapters/providers/ray.js";
import { type JobRef, type JobStatus, ProviderError, deploy } from "../adapters/providers/provider.js";
import type { RunRecord } from "../adapters/providers/run-records.js";
import { gatherRunPage } from "../bin/commands/report.js";
import type { Io } from "../bin/io.js";
import { runPageHtml } from "../core/report/run-page.js";
import { ROOT, RECIPES, recipeText } from "./helpers.js";
import { freePort } from "./servers/moto.js";
import { type RayCluster, startRay } from "./servers/ray.js";

const PYTHON = join(ROOT, ".venv-test", "bin", "python");
const CLI = join(ROOT, "dist", "bin", "rlpipe.js");

function python(script: string, ...args: string[]): string {
  const r = spawnSync(PYTHON, ["-c", script, ...args], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

const TINY = `
apiVersion: rlpipe/v1
kind: Recipe
metadata: { name: ray-tiny }
runtime: { accelerator: cpu, verl: { ref: v0.6.1 }, env: { PLAIN: "yes", DERIVED: "$HOME/x" } }
resources: { nodes: 1, devicesPerNode: 1 }
datasets:
  problems: { path: data/demo-problems.jsonl, ship: data/demo-problems.jsonl, format: jsonl, rows: 16 }
sandbox: { kind: rlpipe, deploy: colocated, url: "http://127.0.0.1:18931" }
stages:
  - { id: check, type: score, data: problems, minPassRate: 1 }
`;

/** The text of a recipe with targets.ray replaced (YAML round trip, so the recipe may or may not have targets). */
function withRayTarget(text: string, ray: Record<string, unknown>): string {
  const doc = parse(text) as Record<string, unknown>;
  doc["targets"] = { ...(doc["targets"] as Record<string, unknown> | undefined), ray };
  return stringify(doc);
}

function planRay(text: string, file = join(RECIPES, "ray-test.yaml")): Plan {
  return plan(parseRecipe(text, file), { provider: "ray", assets: bundledAssets(), readRecipeFile: (rel) => readBeside(RECIPES, rel) });
}


/** A Plan around a hand-written launch.sh, with its Ray request built by the real builder. */
function scriptPlan(base: Plan, text: string, script: string): Plan {
  const files: BundleFile[] = [
    { path: "launch.sh", content: `#!/usr/bin/env bash\nset -e\ncd "$(dirname "$0")"\n${script}\n`, executable: true },
    { path: "notes/readme.txt", content: "bundled next to launch.sh\n", executable: false },
  ];
  const recipe = parseRecipe(text, "ray-test.yaml").recipe;
  const bundleDigest = bundleDigestOf(files);
  const issues: RecipeIssue[] = [];
  const { jobName, request } = buildNamedRequest(buildRayRequest, {
    recipe, provider: "ray", bundleDigest, workDir: base.workDir,
    resources: { nodes: 1, devicesPerNode: 1, accelerator: "cpu" }, secretEnvs: [],
  }, issues);
  assert.deepEqual(issues.filter((i) => i.severity === "error"), []);
  return { ...base, files, bundleDigest, jobName, request };
}

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, what: string, limitMs = 180_000): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = await fn();
    if (ok(v)) return v;
    if (Date.now() > end) assert.fail(`gave up waiting for ${what}; last: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

const TERMINAL = new Set(["SUCCEEDED", "FAILED", "STOPPED"]);

/** Follow a job to its end the way `rlpipe logs -f` does: status, then the log after the cursor. */
async function follow(adapter: RayAdapter, ref: JobRef): Promise<{ status: JobStatus; text: string; pages: number }> {
  let cursor: string | undefined;
  let text = "";
  let pages = 0;
  for (;;) {
    const status = await adapter.status(ref);
    const page = await adapter.logs(ref, cursor);
    assert.ok(Number(page.cursor) >= Number(cursor ?? "0"), "the cursor never goes back");
    if (page.text !== "") pages++;
    text += page.text;
    cursor = page.cursor;
    if (TERMINAL.has(status.phase)) {
      const rest = await adapter.logs(ref, cursor); // lines written between the status and the log read
      return { status, text: text + rest.text, pages };
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

describe("zip writer", () => {
  const files = [
    { path: "launch.sh", data: "#!/usr/bin/env bash\necho hi\n", mode: 0o755 },
    { path: "tool_config/rl_tools.yaml", data: "tools: []\n".repeat(50) },
    { path: "data/ünïcode name.txt", data: "ä\n" },
    { path: "empty.txt", data: "" },
    { path: "bin.dat", data: new Uint8Array([0, 255, 1, 254, 2, 253]) },
  ];

  it("is deterministic: the same entries in any order give the same bytes", () => {
    const a = zipFiles(files);
    assert.deepEqual(zipFiles([...files].reverse()), a);
    assert.notDeepEqual(zipFiles([...files.slice(1), { ...files[0]!, mode: 0o644 }]), a, "the mode is part of the archive");
    assert.notDeepEqual(zipFiles(files, { method: "store" }), a, "deflate compresses the repetitive entry");
  });

  it("Python's zipfile reads it back: CRCs, names, contents, unix modes, fixed timestamps", () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-zip-"));
    try {
      for (const method of ["deflate", "store"] as const) {
        const p = join(dir, `${method}.zip`);
        writeFileSync(p, zipFiles(files, { method }));
        const out = JSON.parse(python(`
import hashlib, json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(json.dumps([[i.filename, oct(i.external_attr >> 16), hashlib.sha256(z.read(i)).hexdigest(), list(i.date_time), i.compress_type] for i in z.infolist()]))
`, p)) as [string, string, string, number[], number][];
        assert.deepEqual(out.map((e) => e[0]), ["bin.dat", "data/ünïcode name.txt", "empty.txt", "launch.sh", "tool_config/rl_tools.yaml"], "sorted by UTF-8 path");
        for (const f of files) {
          const e = out.find((x) => x[0] === f.path)!;
          assert.equal(e[1], (f.mode ?? 0o644) === 0o755 ? "0o100755" : "0o100644");
          assert.equal(e[2], sha256Bytes(typeof f.data === "string" ? Buffer.from(f.data) : Buffer.from(f.data)));
          assert.deepEqual(e[3], [1980, 1, 1, 0, 0, 0]);
        }
        assert.equal(out.find((x) => x[0] === "tool_config/rl_tools.yaml")![4], method === "deflate" ? 8 : 0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("Ray's own unpacker extracts it with launch.sh executable", () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-zip-"));
    try {
      writeFileSync(join(dir, "p.zip"), zipFiles(files));
      const out = JSON.parse(python(`
import json, os, sys
from ray._private.runtime_env.packaging import unzip_package
d = sys.argv[1]
unzip_package(os.path.join(d, "p.zip"), os.path.join(d, "out"), remove_top_level_directory=False, unlink_zip=False)
r = {}
for root, _, names in os.walk(os.path.join(d, "out")):
    for n in names:
        p = os.path.join(root, n)
        r[os.path.relpath(p, os.path.join(d, "out"))] = [oct(os.stat(p).st_mode & 0o777), open(p, "rb").read().decode("latin-1")]
print(json.dumps(r, sort_keys=True))
`, dir)) as Record<string, [string, string]>;
      assert.deepEqual(Object.keys(out).sort(), ["bin.dat", "data/ünïcode name.txt", "empty.txt", "launch.sh", "tool_config/rl_tools.yaml"]);
      assert.equal(out["launch.sh"]![0], "0o755");
      assert.equal(out["empty.txt"]![0], "0o644");
      assert.equal(out["launch.sh"]![1], "#!/usr/bin/env bash\necho hi\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses paths that could escape or collide", () => {
    for (const path of ["/etc/passwd", "../x", "a/../b", "a//b", "a\\b", "", "a/."]) {
      assert.throws(() => zipFiles([{ path, data: "x" }]), (e: unknown) => e instanceof Error && (e as { code?: string }).code === "zip_bad_path", path);
    }
    assert.throws(() => zipFiles([{ path: "a", data: "1" }, { path: "a", data: "2" }]), /appears twice/);
    assert.throws(() => zipFiles([{ path: "a", data: "1", mode: 0o10000 }]), /bad unix mode/);
  });
});

function sha256Bytes(b: Buffer): string {
  return createHash("sha256").update(b).digest("hex");
}

describe("Ray request", () => {
  const text = withRayTarget(TINY, {
    workDir: "/srv/rlpipe/${name}",
    runtimeEnv: { envVars: { RLPIPE_CLI: "node /opt/rlpipe/dist/bin/rlpipe.js", PLAIN: "override" }, pip: ["e2b_code_interpreter"] },
    entrypointNumCpus: 1, entrypointResources: { head: 1 }, metadata: { team: "rl" },
  });

  it("is the Jobs API body: entrypoint, submission_id = job name, content-addressed working_dir, env, metadata", () => {
    const p = planRay(text);
    assert.equal(p.request?.api, "POST /api/jobs/");
    const body = RaySubmitBody.parse(p.request?.body);
    assert.equal(body.entrypoint, "bash launch.sh");
    assert.equal(body.submission_id, p.jobName);
    assert.match(p.jobName, /^ray-tiny-[0-9a-f]{8}$/);
    assert.equal(body.runtime_env.working_dir, rayPackageUri(p.bundleDigest));
    assert.equal(p.request?.bundle?.to, body.runtime_env.working_dir);
    assert.deepEqual(body.runtime_env.env_vars, {
      PLAIN: "override", PYTHONUNBUFFERED: "1", RAY_OVERRIDE_JOB_RUNTIME_ENV: "1",
      RLPIPE_CLI: "node /opt/rlpipe/dist/bin/rlpipe.js", RLPIPE_RUN: p.jobName,
    });
    assert.deepEqual(body.runtime_env.pip, ["e2b_code_interpreter"]);
    assert.deepEqual(body.metadata, { rlpipe_bundle: p.bundleDigest, rlpipe_recipe: "ray-tiny", rlpipe_recipe_hash: p.recipe.hash, rlpipe_run: p.jobName, team: "rl" });
    assert.equal(body.entrypoint_num_cpus, 1);
    assert.deepEqual(body.entrypoint_resources, { head: 1 });
    assert.equal(p.workDir, "/srv/rlpipe/ray-tiny");
    assert.deepEqual(p.request?.unverified, []);
    // $HOME/x cannot be rebuilt as a Ray env var: the plan says so instead of sending it half-right.
    const w = p.warnings.find((x) => x.code === "ray_env_driver_only");
    assert.match(w?.message ?? "", /^DERIVED: exported by launch\.sh for the job's driver only/);
  });

  it("the package name changes iff the bundle changes; the job name follows the whole request", () => {
    const build = (recipeText: string, bundleDigest: string) => {
      const issues: RecipeIssue[] = [];
      const r = buildNamedRequest(buildRayRequest, {
        recipe: parseRecipe(recipeText, "t.yaml").recipe, provider: "ray", bundleDigest, workDir: "/w",
        resources: { nodes: 1, devicesPerNode: 1, accelerator: "cpu" }, secretEnvs: [],
      }, issues);
      assert.deepEqual(issues.filter((i) => i.severity === "error"), []);
      return { jobName: r.jobName, workingDir: RaySubmitBody.parse(r.request.body).runtime_env.working_dir };
    };
    const d1 = sha256("bundle one");
    const d2 = sha256("bundle two");
    const a = build(text, d1);
    const sameBundleOtherRequest = build(withRayTarget(TINY, { workDir: "/w", entrypointNumCpus: 2 }), d1);
    assert.equal(sameBundleOtherRequest.workingDir, a.workingDir, "same bundle, same package");
    assert.notEqual(sameBundleOtherRequest.jobName, a.jobName, "a different request is a different job");
    const otherBundle = build(text, d2);
    assert.notEqual(otherBundle.workingDir, a.workingDir, "another bundle, another package");
    assert.notEqual(otherBundle.jobName, a.jobName);
    assert.deepEqual(build(text, d1), a, "pure: same input, same request");
    assert.match(rayPackageName(d1), /^_ray_pkg_[0-9a-f]{40}\.zip$/);
    // Through plan(): the digest covers every bundle file, so any file change moves the package.
    const p = planRay(text);
    const q = planRay(withRayTarget(TINY, { workDir: "/srv/other" }));
    assert.notEqual(q.bundleDigest, p.bundleDigest);
    assert.notEqual(RaySubmitBody.parse(q.request?.body).runtime_env.working_dir, RaySubmitBody.parse(p.request?.body).runtime_env.working_dir);
    assert.equal(canonicalJson(planRay(text).request), canonicalJson(p.request));
  });

  it("keeps secrets out and rejects what Ray or rlpipe cannot honour, with recipe paths", () => {
    const withSecret = `${withRayTarget(TINY, { workDir: "/w" })}secrets: { key: { env: MY_API_KEY } }\n`;
    const p = planRay(withSecret);
    assert.ok(!JSON.stringify(p.request).includes("MY_API_KEY"), "a secret's name is not even in the request");
    assert.match(p.warnings.find((w) => w.code === "ray_secrets_from_cluster")?.message ?? "", /reads MY_API_KEY from the cluster's environment/);

    const bad = (target: Record<string, unknown>, extra = ""): RecipeError => {
      try { planRay(`${withRayTarget(TINY, { workDir: "/w", ...target })}${extra}`); } catch (e) { if (e instanceof RecipeError) return e; throw e; }
      return assert.fail("expected a RecipeError");
    };
    const codes = (e: RecipeError) => e.issues.map((i) => `${i.code}@${i.path.join(".")}`);
    assert.ok(codes(bad({ runtimeEnv: { envVars: { MY_API_KEY: "literal" } } }, "secrets: { key: { env: MY_API_KEY } }\n")).includes("secret_in_recipe@targets.ray.runtimeEnv.envVars.MY_API_KEY"));
    assert.deepEqual(codes(bad({ runtimeEnv: { envVars: { RLPIPE_RUN: "x" } } })), ["reserved_env@targets.ray.runtimeEnv.envVars.RLPIPE_RUN"]);
    assert.deepEqual(codes(bad({ metadata: { rlpipe_run: "x" } })), ["reserved_metadata_key@targets.ray.metadata.rlpipe_run"]);
    assert.deepEqual(codes(bad({ address: "http://10.0.0.5:8265" })), ["insecure_endpoint@targets.ray.address"]);
    // Multi-node: Ray already runs on every node and launch.sh runs once as the driver (no roles of its own).
    const multi = planRay(withRayTarget(TINY.replace("nodes: 1", "nodes: 2"), { workDir: "/w" }));
    const launch = multi.files.find((f) => f.path === "launch.sh")!.content;
    assert.doesNotMatch(launch, /RLPIPE_MASTER_ADDR must be set|rlpipe_ray_head;/);
    // …so a multi-node SFT stage (torchrun on every node) cannot run there.
    const sft = parse(recipeText("qwen3-1.7b-code-toolcall")) as { resources: { nodes: number }; targets?: unknown };
    sft.resources.nodes = 2;
    sft.targets = { ray: { workDir: "/w" } };
    const refused = (() => { try { planRay(stringify(sft)); } catch (e) { return e as RecipeError; } return assert.fail("multi-node SFT on Ray must be refused"); })();
    assert.ok(codes(refused).includes("multinode_sft_on_ray@stages.0"), codes(refused).join(", "));
    // The line of the offending key, not just its path.
    assert.ok(bad({ address: "http://10.0.0.5:8265" }).issues[0]!.line !== undefined);
  });
});

describe("Ray adapter configuration", () => {
  const recipe = (ray: Record<string, unknown>) => parseRecipe(withRayTarget(TINY, { workDir: "/w", ...ray }), "t.yaml").recipe;
  const ctx = (env: Record<string, string>, ray: Record<string, unknown> = {}) => ({ env, recipe: recipe(ray), cwd: tmpdir() });
  const code = async (p: Promise<unknown>): Promise<string> => {
    try { await p; } catch (e) { if (e instanceof ProviderError) return `${e.code}/${e.kind}`; throw e; }
    return "resolved";
  };

  it("RAY_API_SERVER_ADDRESS, then RAY_ADDRESS, beat targets.ray.address; plain http only on loopback; a GCS address is refused with a hint", async () => {
    const a = await createRayAdapter(ctx({ RAY_ADDRESS: "http://127.0.0.1:9/" }, { address: "https://ray.example.com/dash/" }));
    assert.equal(a.address, "http://127.0.0.1:9");
    const b = await createRayAdapter(ctx({}, { address: "https://ray.example.com/dash/" }));
    assert.equal(b.address, "https://ray.example.com/dash");
    const lines: string[] = [];
    const c = await createRayAdapter({ ...ctx({}), log: (l: string) => lines.push(l) });
    assert.equal(c.address, "http://127.0.0.1:8265");
    assert.match(lines.join("\n"), /neither RAY_ADDRESS nor targets\.ray\.address is set; using http:\/\/127\.0\.0\.1:8265/);
    const d = await createRayAdapter(ctx({ RAY_API_SERVER_ADDRESS: "http://127.0.0.1:7/", RAY_ADDRESS: "http://127.0.0.1:9" }));
    assert.equal(d.address, "http://127.0.0.1:7", "Ray's own Jobs API variable comes first");
    lines.length = 0;
    const e = await createRayAdapter({ ...ctx({ RAY_ADDRESS: "127.0.0.1:6379" }, { address: "https://ray.example.com" }), log: (l: string) => lines.push(l) });
    assert.equal(e.address, "https://ray.example.com");
    assert.deepEqual(lines, ["ray: RAY_ADDRESS=127.0.0.1:6379 is not a dashboard URL (ray.init reads it); using targets.ray.address"]);
    await Promise.all([a.close(), b.close(), c.close(), d.close(), e.close()]);
    assert.equal(await code(createRayAdapter(ctx({ RAY_ADDRESS: "http://10.1.2.3:8265" }))), "ray_insecure_endpoint/fatal");
    try {
      await createRayAdapter(ctx({ RAY_ADDRESS: "ray://10.1.2.3:10001" }));
      assert.fail("a ray:// address must be refused");
    } catch (e) {
      assert.ok(e instanceof ProviderError);
      assert.equal(e.code, "ray_bad_endpoint");
      assert.match(e.message, /^RAY_ADDRESS: unsupported scheme/);
      assert.match(e.hint ?? "", /dashboard URL, e\.g\. http:\/\/127\.0\.0\.1:8265/);
    }
  });

  it("finds the token: tokenEnv (required when named), RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH, ~/.ray/auth_token", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-ray-token-"));
    try {
      assert.equal(await code(createRayAdapter(ctx({}, { tokenEnv: "MY_RAY_TOKEN" }))), "ray_token_missing/fatal");
      writeFileSync(join(dir, "tok"), "  from-file-token-123\n");
      assert.equal(await code(createRayAdapter(ctx({ RAY_AUTH_TOKEN_PATH: join(dir, "missing") }))), "ray_token_unreadable/fatal");
      writeFileSync(join(dir, "empty"), "\n");
      assert.equal(await code(createRayAdapter(ctx({ RAY_AUTH_TOKEN_PATH: join(dir, "empty") }))), "ray_token_empty/fatal");
      mkdirSync(join(dir, "home", ".ray"), { recursive: true });
      writeFileSync(join(dir, "home", ".ray", "auth_token"), "home-token-456\n");
      // Which token is used is visible from a server that echoes the Authorization header it received.
      const { createServer } = await import("node:http");
      const seen: string[] = [];
      const srv = createServer((req, res) => { seen.push(String(req.headers.authorization)); res.writeHead(404).end("Job x does not exist"); });
      await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
      const address = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
      try {
        const cases: [Record<string, string>, Record<string, unknown>, string][] = [
          [{ MY_RAY_TOKEN: "named-token-789", RAY_AUTH_TOKEN: "direct" }, { tokenEnv: "MY_RAY_TOKEN" }, "Bearer named-token-789"],
          [{ RAY_AUTH_TOKEN: "direct-token-000", RAY_AUTH_TOKEN_PATH: join(dir, "tok") }, {}, "Bearer direct-token-000"],
          [{ RAY_AUTH_TOKEN_PATH: join(dir, "tok"), HOME: join(dir, "home") }, {}, "Bearer from-file-token-123"],
          [{ HOME: join(dir, "home") }, {}, "Bearer home-token-456"],
          [{ HOME: join(dir, "nohome") }, {}, "undefined"],
        ];
        for (const [env, ray, expected] of cases) {
          const a = await createRayAdapter(ctx({ RAY_ADDRESS: address, ...env }, ray));
          const plan = { jobName: "x" } as Plan;
          assert.equal(await a.findExisting(plan), undefined, "404: no such job");
          await a.close();
          assert.equal(seen.pop(), expected);
        }
      } finally {
        srv.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("classifies failures: refused connection → retryable, timeout → ambiguous, 429 → retryable, 5xx → ambiguous", async () => {
    const port = await freePort(); // nothing listens there
    const refused = await createRayAdapter(ctx({ RAY_ADDRESS: `http://127.0.0.1:${port}`, RAY_AUTH_TOKEN: "t0ken-never-shown" }));
    try {
      await refused.status({ provider: "ray", name: "x", id: "x" });
      assert.fail("expected a network error");
    } catch (e) {
      assert.ok(e instanceof ProviderError);
      assert.equal(`${e.code}/${e.kind}`, "ray_network/retryable");
      assert.match(e.message, /^GET \/api\/jobs\/x at 127\.0\.0\.1:\d+: ECONNREFUSED$/);
      assert.ok(!`${e.message}${e.hint}`.includes("t0ken-never-shown"));
    }
    await refused.close();
    const { createServer } = await import("node:http");
    let mode = "hang";
    const srv = createServer((_req, res) => {
      if (mode === "429") res.writeHead(429).end("slow down");
      else if (mode === "500") res.writeHead(500).end("Traceback (most recent call last):\n  ...\nRuntimeError: agent gone\n");
      // "hang": never answer
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const address = `http://127.0.0.1:${(srv.address() as { port: number }).port}`;
    const a = await createRayAdapter(ctx({ RAY_ADDRESS: address }), { requestTimeoutMs: 300 });
    try {
      const ref: JobRef = { provider: "ray", name: "x", id: "x" };
      assert.equal(await code(a.status(ref)), "ray_timeout/ambiguous");
      mode = "429";
      assert.equal(await code(a.status(ref)), "ray_throttled/retryable");
      mode = "500";
      try { await a.status(ref); assert.fail("expected 500"); } catch (e) {
        assert.ok(e instanceof ProviderError);
        assert.equal(`${e.code}/${e.kind}/${e.httpStatus}`, "ray_server_error/ambiguous/500");
        assert.match(e.message, /HTTP 500: RuntimeError: agent gone$/, "the traceback's last line, not the whole traceback");
      }
      assert.equal(await code(a.logs(ref, "not-a-cursor")), "ray_bad_cursor/fatal");
    } finally {
      await a.close();
      srv.closeAllConnections();
      srv.close();
    }
  });
});

describe("Ray adapter against a real Ray cluster (token auth on)", () => {
  let ray: RayCluster;
  let work: string;
  let adapter: RayAdapter;
  let demoText: string;
  let demo: Plan;
  const lines: string[] = [];
  const fast = { baseDelayMs: 200, maxDelayMs: 2_000 };

  before(async () => {
    ray = await startRay({ numCpus: 2 });
    work = mkdtempSync(join(tmpdir(), "rlpipe-ray-work-"));
    // The local demo (rlpipe serve + rlpipe eval of the shipped problems) as a Ray job: rlpipe comes from this
    // checkout, the reward function gets a free port.
    demoText = withRayTarget(readFileSync(join(RECIPES, "local-demo.yaml"), "utf8"), {
      workDir: join(work, "demo"),
      runtimeEnv: { envVars: { RLPIPE_CLI: `${process.execPath} ${CLI}`, RLPIPE_SANDBOX_PORT: String(await freePort()) } },
    });
    demo = planRay(demoText, join(RECIPES, "local-demo.yaml"));
    adapter = await createRayAdapter({ env: { RAY_ADDRESS: ray.address, RAY_AUTH_TOKEN: ray.token }, recipe: parseRecipe(demoText, "d.yaml").recipe, cwd: work, log: (l) => lines.push(l) });
  });

  after(async () => {
    await adapter?.close();
    await ray?.stop();
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it("deploys the local demo: uploads the bundle once, follows the logs by cursor, SUCCEEDED with results in the store", async (t) => {
    const first = await deploy(adapter, demo, fast);
    assert.equal(first.outcome, "created");
    assert.deepEqual(first.ref, { provider: "ray", name: demo.jobName, id: demo.jobName, endpoint: ray.address });
    assert.ok(lines.some((l) => l === `ray: uploaded bundle ${rayPackageName(demo.bundleDigest)} (${zipFiles(demo.files.map((f) => ({ path: f.path, data: f.content, mode: f.executable ? 0o755 : 0o644 }))).length} bytes) to ${ray.address}`), lines.join("\n"));
    const { status, text, pages } = await follow(adapter, first.ref);
    t.diagnostic(`log pages read: ${pages}`);
    assert.equal(status.phase, "SUCCEEDED", text);
    assert.equal(status.rawPhase, "SUCCEEDED");
    assert.equal(status.exitCode, 0);
    assert.ok(status.startedAt !== undefined && status.endedAt !== undefined && status.startedAt <= status.endedAt);
    assert.match(text, /rlpipe eval: 16 rows from data\/demo-problems\.jsonl: 16 passed \(pass rate 100\.0%\)/);
    assert.match(text, /stage check: complete/);
    assert.equal(text, (await adapter.logs(first.ref, undefined)).text, "the pages add up to the whole log, in order");
    assert.equal((await adapter.logs(first.ref, String(text.length))).text, "", "nothing after the end");
    const result = JSON.parse(readFileSync(join(work, "demo", "store", `${demo.jobName}.check`, "artifacts", "check.json"), "utf8")) as { rows: unknown[]; passed: number };
    assert.equal(result.rows.length, 16);
    assert.equal(result.passed, 16);

    // Preparing again finds the package instead of uploading it again.
    lines.length = 0;
    await adapter.prepare(demo);
    assert.deepEqual(lines, [`ray: bundle ${rayPackageName(demo.bundleDigest)} is already on ${ray.address}`]);
  });

  it("rlpipe report's gathering reads the finished demo job through this adapter and its store: SUCCEEDED, the log's tail, the check stage's metrics from its store", async () => {
    const now = new Date().toISOString();
    const record: RunRecord = {
      version: 1, name: demo.jobName, provider: "ray", ref: { id: demo.jobName, endpoint: ray.address },
      recipe: { name: "local-demo", file: "d.yaml", hash: "0123456789ab" }, recipeData: parseRecipe(demoText, "d.yaml").recipe, request: {},
      outcome: "created", createdAt: now, updatedAt: now, prices: [], store: join(work, "demo", "store"),
    };
    const asked: string[] = [];
    const data = await gatherRunPage(record, {
      io: { out: () => {}, err: () => {} } as unknown as Io, logLines: 5, env: { PATH: process.env["PATH"] },
      // The suite's adapter, left open for the tests after this one.
      load: async (provider) => { asked.push(provider); return { adapter, close: async () => {} }; },
    });
    assert.ok(asked.length > 0 && asked.every((x) => x === "ray"), asked.join(","));
    assert.ok(data.status.ok, JSON.stringify(data.status));
    assert.equal(data.status.value.phase, "SUCCEEDED");
    assert.ok(data.logs.ok, JSON.stringify(data.logs));
    assert.ok(data.logs.value.totalLines > 5 && data.logs.value.lines.length === 5);
    assert.ok(data.outputs.ok, JSON.stringify(data.outputs));
    const html = runPageHtml(data);
    assert.ok(html.includes(`<h1>${demo.jobName} <span class="phase ok">SUCCEEDED</span></h1>`), html.slice(0, 400));
    assert.ok(html.includes(`${demo.jobName}.check`), "the check stage's run in the store");
  });

  it("the same plan twice is one job: the second deploy finds it, a direct second submit is refused as 'exists'", async () => {
    const p = scriptPlan(demo, demoText, 'for i in 1 2 3; do echo "line $i"; sleep 0.2; done; cat notes/readme.txt');
    const a = await deploy(adapter, p, fast);
    const b = await deploy(adapter, p, fast);
    assert.equal(a.outcome, "created");
    assert.equal(b.outcome, "existing");
    assert.deepEqual(b.ref, a.ref);
    try {
      await adapter.submit(p);
      assert.fail("a second submit with the same submission_id must be refused");
    } catch (e) {
      assert.ok(e instanceof ProviderError, String(e));
      assert.equal(`${e.code}/${e.kind}`, "ray_job_exists/exists");
      assert.match(e.message, /Job with submission_id [a-z0-9-]+ already exists/);
    }
    const all = await (await fetch(`${ray.address}/api/jobs/`, { headers: { authorization: `Bearer ${ray.token}` } })).json() as { submission_id: string | null }[];
    assert.equal(all.filter((j) => j.submission_id === p.jobName).length, 1, "exactly one job with this name on the cluster");
    // The WebSocket tail, read to its natural end, carries the same lines.
    let streamed = "";
    for await (const chunk of adapter.tail(a.ref)) streamed += chunk;
    // Ray writes its own lines into the driver log (e.g. "Running entrypoint …") wherever they fall in time.
    const ours = (t: string) => t.split("\n").filter((l) => /^(line \d|bundled next to launch\.sh)$/.test(l));
    const want = ["line 1", "line 2", "line 3", "bundled next to launch.sh"];
    assert.deepEqual(ours(streamed), want);
    const { status, text } = await follow(adapter, a.ref);
    assert.equal(status.phase, "SUCCEEDED", text);
    assert.deepEqual(ours(text), want);
  });

  it("stop ends a long-running job as STOPPED (its log streamed meanwhile); stopping again, or a finished job, is harmless", async () => {
    const p = scriptPlan(demo, demoText, 'for i in $(seq 1 600); do echo "tick $i"; sleep 1; done');
    const { ref } = await deploy(adapter, p, fast);
    await until(() => adapter.status(ref), (s) => s.phase === "RUNNING", "RUNNING");
    // The WebSocket tail delivers lines while the job runs.
    const ac = new AbortController();
    let streamed = "";
    for await (const chunk of adapter.tail(ref, ac.signal)) {
      streamed += chunk;
      if (/tick 2\n/.test(streamed)) ac.abort();
    }
    assert.match(streamed, /tick 1\ntick 2\n/);
    await adapter.stop(ref);
    const s = await until(() => adapter.status(ref), (x) => TERMINAL.has(x.phase), "a terminal phase");
    assert.equal(s.phase, "STOPPED");
    assert.equal(s.rawPhase, "STOPPED");
    await adapter.stop(ref);
    assert.equal((await adapter.status(ref)).phase, "STOPPED");
    await adapter.stop({ ...ref, id: "no-such-job-00000000" });
    assert.ok(lines.some((l) => /no-such-job-00000000 does not exist .*nothing to stop/.test(l)));
  });

  it("a create whose reply is lost is looked up, not repeated: outcome recovered, one job", async () => {
    // A loopback proxy in front of the real dashboard that forwards the first POST /api/jobs/ and then drops the
    // connection instead of returning Ray's reply.
    const { createServer } = await import("node:http");
    let dropped = 0;
    let posts = 0;
    const proxy = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        void (async () => {
          const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => k !== "host" && k !== "connection")) as Record<string, string>;
          const up = await request(`${ray.address}${req.url}`, { method: req.method as "GET", headers, ...(chunks.length === 0 ? {} : { body: Buffer.concat(chunks) }) });
          const body = Buffer.from(await up.body.arrayBuffer());
          if (req.method === "POST" && req.url === "/api/jobs/" && posts++ === 0) { dropped++; req.socket.destroy(); return; }
          res.writeHead(up.statusCode, { "content-type": String(up.headers["content-type"] ?? "text/plain") }).end(body);
        })();
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const via = await createRayAdapter({ env: { RAY_ADDRESS: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, RAY_AUTH_TOKEN: ray.token }, recipe: parseRecipe(demoText, "d.yaml").recipe, cwd: work });
    try {
      const p = scriptPlan(demo, demoText, "echo created once");
      const events: string[] = [];
      const out = await deploy(via, p, { ...fast, onEvent: (l) => events.push(l) });
      assert.equal(dropped, 1);
      assert.equal(posts, 1, "no second create");
      assert.equal(out.outcome, "recovered");
      assert.deepEqual(events.map((l) => l.replace(/:\d+: [A-Z_]+\)/, ":PORT: CODE)")), ["ray: create failed (POST /api/jobs/ at 127.0.0.1:PORT: CODE); looking the job up before any retry"], events.join("\n"));
      const all = await (await request(`${ray.address}/api/jobs/`, { headers: { authorization: `Bearer ${ray.token}` } })).body.json() as { submission_id: string | null }[];
      assert.equal(all.filter((j) => j.submission_id === p.jobName).length, 1);
      assert.equal((await follow(adapter, out.ref)).status.phase, "SUCCEEDED");
    } finally {
      await via.close();
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it("a failing job is FAILED with its exit code and Ray's message", async () => {
    const p = scriptPlan(demo, demoText, 'echo "about to fail"; exit 3');
    const { ref } = await deploy(adapter, p, fast);
    const { status, text } = await follow(adapter, ref);
    assert.equal(status.phase, "FAILED");
    assert.equal(status.exitCode, 3);
    assert.match(status.message ?? "", /exit code 3/);
    assert.match(text, /about to fail/);
  });

  it("finds nothing for an unknown name, and never adopts a job it did not make", async () => {
    const p = scriptPlan(demo, demoText, "echo foreign");
    assert.equal(await adapter.findExisting(p), undefined);
    try { await adapter.status({ provider: "ray", name: "nope", id: "nope-00000000" }); assert.fail("expected not_found"); } catch (e) {
      assert.ok(e instanceof ProviderError);
      assert.equal(`${e.code}/${e.kind}/${e.httpStatus}`, "ray_not_found/not_found/404");
    }
    // Someone else's job under the same submission id (no rlpipe metadata).
    const r = await request(`${ray.address}/api/jobs/`, { method: "POST", headers: { authorization: `Bearer ${ray.token}`, "content-type": "application/json" }, body: JSON.stringify({ entrypoint: "echo hi", submission_id: p.jobName }) });
    assert.equal(r.statusCode, 200, await r.body.text());
    try { await adapter.findExisting(p); assert.fail("expected a name conflict"); } catch (e) {
      assert.ok(e instanceof ProviderError);
      assert.equal(e.code, "ray_name_conflict");
    }
  });

  it("a missing or wrong token is a clear auth error that never shows a token", async () => {
    const recipe = parseRecipe(demoText, "d.yaml").recipe;
    const wrong = "wrong-token-5f3a9c1e7b2d";
    const seen: string[] = [];
    const none = await createRayAdapter({ env: { RAY_ADDRESS: ray.address }, recipe, cwd: work, log: (l) => seen.push(l) });
    const bad = await createRayAdapter({ env: { RAY_ADDRESS: ray.address, RAY_AUTH_TOKEN: wrong }, recipe, cwd: work, log: (l) => seen.push(l) });
    try {
      const p = scriptPlan(demo, demoText, "echo never runs");
      const cases: [RayAdapter, string, number][] = [[none, "ray_unauthorized", 401], [bad, "ray_forbidden", 403]];
      for (const [a, expected, status] of cases) {
        for (const call of [() => a.prepare(p), () => a.findExisting(p), () => a.submit(p), () => a.status({ provider: "ray", name: p.jobName, id: p.jobName }), () => deploy(a, p, fast)]) {
          try {
            await call();
            assert.fail(`expected ${expected}`);
          } catch (e) {
            assert.ok(e instanceof ProviderError, String(e));
            assert.equal(`${e.code}/${e.kind}/${e.httpStatus}`, `${expected}/fatal/${status}`);
            const shown = `${e.message}\n${e.hint}\n${e.stack}\n${JSON.stringify(e)}`;
            assert.ok(!shown.includes(ray.token) && !shown.includes(wrong), "no token in what a user sees");
            assert.match(e.hint ?? "", /RAY_AUTH_TOKEN/);
          }
        }
      }
      assert.equal(await adapter.findExisting(p), undefined, "nothing was created by the refused calls");
      assert.ok(!seen.join("\n").includes(ray.token) && !lines.join("\n").includes(ray.token));
    } finally {
      await none.close();
      await bad.close();
    }
  });
  // Last, so every component (agents, workers, client server) has started.
  it("runs only on loopback: every socket the cluster listens on is 127.0.0.1 or ::1", (t) => {
    const listening = ray.listening();
    const mem = ray.memory();
    t.diagnostic(`startup ${ray.startupMs} ms; ${ray.pids().length} processes, RSS ${(mem.rssBytes / 2 ** 20).toFixed(0)} MiB, PSS ${(mem.pssBytes / 2 ** 20).toFixed(0)} MiB; listening on ${listening.join(" ")}`);
    for (const port of Object.values(ray.ports)) assert.ok(listening.some((a) => a.endsWith(`:${port}`)), `port ${port} is among them`);
    // IPv4 127/8, IPv6 ::1, and IPv4-mapped 127/8 (::ffff:7fxx:xxxx), as the helper spells them.
    const loopback = /^(127\.\d+\.\d+\.\d+|\[0:0:0:0:0:0:0:1\]|\[0:0:0:0:0:ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]):\d+$/;
    const exposed = listening.filter((a) => !loopback.test(a));
    assert.deepEqual(exposed, []);
  });
});
