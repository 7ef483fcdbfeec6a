// The published package (issue 9, items 2 and 3): what `npm pack` ships and whether the installed `rlpipe` works.
// A copy of the sources as a fresh clone has them (no dist/) is packed, so the prepack build runs. The tarball is
// installed into a temporary project with `npm ci --offline` from a lockfile made of this repository's production
// entries: every package comes from the npm cache that `npm ci` filled during setup, nothing from the registry.
// Then the installed command runs the way users start it: npx, node_modules/.bin (a symlink) and `npm link` on a
// temporary global prefix (a symlinked package plus a symlinked bin).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, relative, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { fakeTencentSecretId, fakeTencentSecretKey } from "./fakes/credentials.js";
import { TioneFake } from "./fakes/tione-fake.js";
import { ROOT, editYaml } from "./helpers.js";

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly license?: string;
  readonly bin: Record<string, string>;
  readonly engines?: Record<string, string>;
  readonly scripts?: Record<string, string>;
  readonly dependencies: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
  readonly peerDependencies?: Record<string, string>;
  readonly exports?: Record<string, string | Record<string, string>>;
}
interface PackResult { readonly filename: string; readonly integrity: string; readonly size: number; readonly unpackedSize: number; readonly files: readonly { readonly path: string }[] }
interface LockEntry { readonly dev?: boolean; readonly [field: string]: unknown }
interface Ran { readonly status: number | null; readonly stdout: string; readonly stderr: string }

/** Not part of a fresh clone (built, installed or machine-local). */
const NOT_IN_A_CLONE = new Set(["node_modules", "dist", ".git", ".venv-test", ".tools", ".rlpipe", ".cache"]);
const RUNTIME_DIRS = ["bin", "core", "adapters", "functions"];
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as Manifest;

/**
 * What an enclosing npm (`npm test`, `npm exec -c …`) exports for its own command: its options (npm_config_call would
 * turn npx into a usage error), prefix, lifecycle and manifest. Where the cache and the config files are stays.
 */
const KEPT_NPM = new Set(["npm_config_cache", "npm_config_userconfig", "npm_config_globalconfig", "npm_config_registry", "npm_config_cafile"]);
const isEnclosingNpm = (name: string) => /^npm_/i.test(name) && !KEPT_NPM.has(name.toLowerCase());

/** npm without the registry: a missing package fails at once (ENOTCACHED) instead of being fetched. */
const npmEnv = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !isEnclosingNpm(k))),
  npm_config_offline: "true", npm_config_audit: "false", npm_config_fund: "false", npm_config_update_notifier: "false",
  npm_config_yes: "false", npm_config_loglevel: "error", ...extra,
});

/** Runs a command in its own process group; past the deadline the group is killed and the test fails saying so. */
function run(cmd: string, args: readonly string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number }): Promise<Ran> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => { stdout += d.toString(); });
    child.stderr.on("data", (d: Buffer) => { stderr += d.toString(); });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try { process.kill(-child.pid!, "SIGKILL"); } catch { /* already gone */ }
    }, timeoutMs);
    child.on("error", (e) => { clearTimeout(timer); reject(new Error(`${cmd} could not start: ${e.message}`)); });
    child.on("close", (status) => {
      clearTimeout(timer);
      if (timedOut) reject(new Error(`${cmd} ${args.join(" ")} (in ${opts.cwd}) did not finish within ${timeoutMs} ms\n${stderr}`));
      else resolvePromise({ status, stdout, stderr });
    });
  });
}

const show = (r: Ran) => `exit ${r.status}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

function walk(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
}

function duBytes(dir: string): number {
  let total = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += duBytes(p);
    else if (e.isFile()) total += statSync(p).size;
  }
  return total;
}

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

/** The package name of a bare import specifier (`@scope/name/sub` → `@scope/name`). */
const packageOf = (spec: string) => spec.split("/").slice(0, spec.startsWith("@") ? 2 : 1).join("/");

describe("packaging: npm pack of a fresh clone, installed offline into a temporary project", () => {
  let tmp = "";
  let pkgDir = "";
  let project = "";
  let pack: PackResult;
  const shipped = new Set<string>();

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), "rlpipe-pack-"));
    const src = join(tmp, "src");
    cpSync(ROOT, src, { recursive: true, filter: (from) => !NOT_IN_A_CLONE.has(relative(ROOT, from).split("/")[0]!) });
    assert.ok(!existsSync(join(src, "dist")), "the copy starts without dist/, as a fresh clone does");
    // The build tools only; the copy's own dist/ is what prepack makes.
    symlinkSync(join(ROOT, "node_modules"), join(src, "node_modules"), "dir");
    const packed = await run("npm", ["pack", "--json", "--pack-destination", tmp], { cwd: src, env: npmEnv(), timeoutMs: 120_000 });
    assert.equal(packed.status, 0, `npm pack failed\n${show(packed)}`);
    pack = (JSON.parse(packed.stdout) as PackResult[])[0]!;
    for (const f of pack.files) shipped.add(f.path);

    // The project: rlpipe from the tarball; its dependencies pinned to this repository's lockfile (production entries),
    // so `npm ci --offline` resolves nothing and needs no registry metadata, only the cached tarballs.
    project = join(tmp, "project");
    mkdirSync(project);
    const spec = `file:../${pack.filename}`;
    const rootLock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
    const packages: Record<string, unknown> = {
      "": { name: "rlpipe-install-probe", version: "1.0.0", dependencies: { rlpipe: spec } },
      "node_modules/rlpipe": {
        version: manifest.version, resolved: spec, integrity: pack.integrity, license: manifest.license,
        dependencies: manifest.dependencies, bin: manifest.bin, engines: manifest.engines,
      },
    };
    for (const [path, entry] of Object.entries(rootLock.packages)) if (path.startsWith("node_modules/") && entry.dev !== true) packages[path] = entry;
    writeFileSync(join(project, "package.json"), `${JSON.stringify({ name: "rlpipe-install-probe", version: "1.0.0", private: true, dependencies: { rlpipe: spec } }, null, 2)}\n`);
    writeFileSync(join(project, "package-lock.json"), `${JSON.stringify({ name: "rlpipe-install-probe", version: "1.0.0", lockfileVersion: 3, requires: true, packages }, null, 2)}\n`);
    const installed = await run("npm", ["ci"], { cwd: project, env: npmEnv(), timeoutMs: 180_000 });
    assert.equal(installed.status, 0, /ENOTCACHED/.test(installed.stderr)
      ? `installing the tarball offline needs the packages \`npm ci\` put into the npm cache (scripts/setup.sh runs it; a cleaned cache needs \`npm ci\` again, which uses the registry)\n${show(installed)}`
      : `npm ci of the packed tarball failed\n${show(installed)}`);
    pkgDir = join(project, "node_modules", "rlpipe");
    const demo = readFileSync(join(pkgDir, "recipes", "local-demo.yaml"), "utf8");
    writeFileSync(join(project, "broken.yaml"), editYaml(demo, [[["resources", "nodes"], 0]]));
  });

  after(() => {
    if (tmp !== "") rmSync(tmp, { recursive: true, force: true });
  });

  it("prepack builds dist/ and the tarball holds only runtime files: no tests, bench, scripts, sources or maps", (t) => {
    assert.ok(manifest.scripts?.["prepack"]?.includes("tsc"), "a build runs on prepack");
    assert.ok(manifest.scripts?.["prepare"] === undefined, "no prepare script: npm ci on a fresh clone must not build (scripts/setup.sh does)");
    for (const path of [
      "package.json", "README.md", "dist/bin/rlpipe.js", manifest.bin["rlpipe"]!, "schema/recipe.schema.json", "schema/cost-report.schema.json", "prices/fx.yaml",
      "recipes/python/rlpipe_reward.py", "recipes/python/rlpipe_sync.py",
      "adapters/sandboxes/local/harness/local_harness.py", "adapters/sandboxes/local/harness/zygote.py", "adapters/sandboxes/harness/e2b_runner.py",
      "recipes/local-demo.yaml", "recipes/data/demo-problems.jsonl", "dist/cdk/lib/index.js", "dist/cdk/lib/index.d.ts",
    ]) assert.ok(shipped.has(path), `${path} is in the tarball`);
    // Every file of the in-sandbox harness: its Python, and the case loop's C that the server builds at start (without
    // it an installed server would quietly run every case in Python).
    for (const file of walk(join(ROOT, "adapters", "sandboxes", "local", "harness")).filter((f) => /\.(py|c)$/.test(f))) {
      assert.ok(shipped.has(relative(ROOT, file)), `${relative(ROOT, file)} is in the tarball`);
    }
    // The CDK constructs ("rlpipe/cdk"), but not the repository's own CDK app (it needs cdk-nag, a development tool).
    for (const file of walk(join(ROOT, "cdk", "lib")).filter((f) => f.endsWith(".ts") && !f.endsWith("/app.ts"))) {
      const js = join("dist", relative(ROOT, file)).replace(/\.ts$/, ".js");
      assert.ok(shipped.has(js) && shipped.has(js.replace(/\.js$/, ".d.ts")), `${js} and its declarations are in the tarball`);
    }
    assert.deepEqual([...shipped].filter((p) => /^dist\/cdk\/(bin\/|lib\/app\.)/.test(p)), [], "the repository's CDK app is not shipped");
    // Every runtime source is compiled and shipped.
    for (const dir of RUNTIME_DIRS) {
      for (const file of walk(join(ROOT, dir)).filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))) {
        const js = join("dist", relative(ROOT, file)).replace(/\.ts$/, ".js");
        assert.ok(shipped.has(js), `${js} (built from ${relative(ROOT, file)}) is in the tarball`);
      }
    }
    const unwanted = [...shipped].filter((p) =>
      /^(test|bench|scripts|\.ci|dist\/test|dist\/bench)\//.test(p) || (p.endsWith(".ts") && !p.endsWith(".d.ts")) || p.endsWith(".map") ||
      p.includes("__pycache__") || p.includes("node_modules/") || p.startsWith(".rlpipe/") || p === "package-lock.json");
    assert.deepEqual(unwanted, [], "files a user of the CLI never needs");
    t.diagnostic(`tarball ${pack.filename}: ${(pack.size / 1024).toFixed(0)} KiB packed, ${(pack.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${pack.files.length} files`);
  });

  it("every module the shipped code imports is shipped or a declared dependency; every dependency is used; assets resolve inside the package", () => {
    const problems: string[] = [];
    const used = new Set<string>();
    const code = [...shipped].filter((p) => p.endsWith(".js"));
    for (const rel of code) {
      const file = join(pkgDir, rel);
      const text = readFileSync(file, "utf8");
      // Static imports start a line in tsc's output; dynamic ones may be anywhere.
      const specs = [...text.matchAll(/^(?:import|export)\b[^;"]*?\bfrom\s*"([^"]+)"/gm), ...text.matchAll(/^import\s*"([^"]+)"/gm), ...text.matchAll(/\bimport\(\s*"([^"]+)"\s*\)/g)];
      for (const m of specs) {
        const spec = m[1]!;
        if (spec.startsWith("node:")) continue;
        if (spec.startsWith(".")) {
          if (!shipped.has(relative(pkgDir, resolve(dirname(file), spec)))) problems.push(`${rel} imports ${spec}, which is not shipped`);
        } else if (rel.startsWith("dist/cdk/") && manifest.peerDependencies?.[packageOf(spec)] !== undefined) {
          // The constructs import aws-cdk-lib and constructs from the user's CDK app (optional peer dependencies).
        } else if (manifest.dependencies[packageOf(spec)] === undefined) {
          problems.push(`${rel} imports ${spec}, which is not a dependency${manifest.devDependencies?.[packageOf(spec)] === undefined ? "" : " (only a devDependency)"}`);
        }
      }
      // Modules named in constants (loaded lazily) count as uses too.
      for (const dep of Object.keys(manifest.dependencies)) if (text.includes(`"${dep}"`) || text.includes(`"${dep}/`)) used.add(dep);
      // Files found through import.meta.url ("../../../recipes/python"): they must exist in the installed package.
      for (const m of text.matchAll(/"((?:\.\.\/){2,}[^"]*)"/g)) {
        const target = resolve(dirname(file), m[1]!);
        if (!target.startsWith(`${pkgDir}/`)) problems.push(`${rel} reaches ${m[1]} outside the package`);
        else if (!existsSync(target)) problems.push(`${rel} reaches ${m[1]}, which is not in the installed package`);
      }
    }
    for (const dep of Object.keys(manifest.dependencies)) if (!used.has(dep)) problems.push(`dependency ${dep} is never imported by the shipped code`);
    assert.deepEqual(problems, []);
  });

  it("dependencies: no full Tencent Cloud SDK, no uuid, one @aws-sdk version; the installed production tree is measured", (t) => {
    const all = { ...manifest.dependencies, ...manifest.devDependencies };
    assert.equal(all["tencentcloud-sdk-nodejs"], undefined, "TI-ONE goes through tencentcloud-sdk-nodejs-common");
    assert.equal(all["uuid"], undefined, "uuid is not used");
    const aws = Object.entries(manifest.dependencies).filter(([name]) => name.startsWith("@aws-sdk/"));
    assert.ok(aws.length >= 3, aws.join(", "));
    assert.equal(new Set(aws.map(([, v]) => v)).size, 1, `one @aws-sdk version: ${aws.map(([n, v]) => `${n}@${v}`).join(", ")}`);
    assert.ok(!existsSync(join(project, "node_modules", "tencentcloud-sdk-nodejs")), "the full SDK is not installed");
    assert.ok(!existsSync(join(project, "node_modules", "typescript")), "no devDependency is installed");
    t.diagnostic(`installed: ${mib(duBytes(join(project, "node_modules")))} in node_modules (rlpipe and its production dependencies, file bytes)`);
  });

  it("\"rlpipe/cdk\" resolves through the exports map (with declarations); a RewardFunction synthesizes from the installed entry and the project's lock file", { timeout: 120_000 }, async () => {
    assert.deepEqual(manifest.exports?.["./cdk"], { types: "./dist/cdk/lib/index.d.ts", default: "./dist/cdk/lib/index.js" });
    // The user's CDK app brings aws-cdk-lib and constructs (optional peers of rlpipe): this repository's copies.
    for (const peer of ["aws-cdk-lib", "constructs"]) symlinkSync(join(ROOT, "node_modules", peer), join(project, "node_modules", peer), "dir");
    const script = `
      import { App, Stack } from "aws-cdk-lib";
      import { Secret } from "aws-cdk-lib/aws-secretsmanager";
      import { readFileSync } from "node:fs";
      const where = import.meta.resolve("rlpipe/cdk");
      const { RewardFunction } = await import("rlpipe/cdk");
      const app = new App({ outdir: "cdk.out" });
      const stack = new Stack(app, "UserStack");
      new RewardFunction(stack, "Reward", { secret: new Secret(stack, "Secret") });
      const template = app.synth().getStackByName("UserStack").template;
      const fn = Object.values(template.Resources).find((r) => r.Type === "AWS::Lambda::Function");
      const bundle = readFileSync("cdk.out/asset." + fn.Properties.Code.S3Key.replace(/\\.zip$/, "") + "/index.mjs", "utf8");
      console.log(JSON.stringify({ where, runtime: fn.Properties.Runtime, bytes: bundle.length, rewards: bundle.includes("/v1/rewards") }));`;
    writeFileSync(join(project, "user-app.mjs"), script);
    const r = await run(process.execPath, ["user-app.mjs"], { cwd: project, env: npmEnv({ CDK_DOCKER: join(tmp, "no-docker") }), timeoutMs: 100_000 });
    assert.equal(r.status, 0, show(r));
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { where: string; runtime: string; bytes: number; rewards: boolean };
    assert.equal(out.where, `file://${join(pkgDir, "dist", "cdk", "lib", "index.js")}`);
    assert.ok(existsSync(join(pkgDir, "dist", "cdk", "lib", "index.d.ts")), "declarations for TypeScript apps");
    assert.equal(out.runtime, "nodejs22.x");
    assert.ok(out.rewards && out.bytes > 100_000, `the reward function bundled from node_modules/rlpipe/dist/functions/entries/lambda/reward.js (${out.bytes} bytes)`);
  });

  it("`npx rlpipe --help` and `--version` print through the symlinked bin and exit 0", async () => {
    const bin = join(project, "node_modules", ".bin", "rlpipe");
    assert.ok(existsSync(bin), "npm linked the bin");
    const help = await run("npx", ["rlpipe", "--help"], { cwd: project, env: npmEnv() });
    assert.equal(help.status, 0, show(help));
    assert.match(help.stdout, /usage: rlpipe <command>/, show(help));
    const version = await run("npx", ["rlpipe", "--version"], { cwd: project, env: npmEnv() });
    assert.equal(version.status, 0, show(version));
    assert.equal(version.stdout.trim(), manifest.version);
  });

  it("node_modules/.bin/rlpipe validate rejects a broken recipe with exit 2, naming the file and field", async () => {
    const r = await run(join(project, "node_modules", ".bin", "rlpipe"), ["validate", "broken.yaml"], { cwd: project });
    assert.equal(r.status, 2, show(r));
    assert.match(r.stderr, /broken\.yaml:\d+:\d+: resources\.nodes/, show(r));
  });

  it("node_modules/.bin/rlpipe plan writes the launch bundle of the shipped demo recipe (assets read from the package)", async () => {
    const out = join(project, "bundle");
    const r = await run(join(project, "node_modules", ".bin", "rlpipe"), ["plan", join(pkgDir, "recipes", "local-demo.yaml"), "--provider", "local", "--out", out], { cwd: project });
    assert.equal(r.status, 0, show(r));
    assert.match(r.stdout, /local-demo → local/, show(r));
    for (const f of ["launch.sh", "rlpipe-plan.json", "data/demo-problems.jsonl"]) assert.ok(existsSync(join(out, f)), `${f} in the bundle`);
    const planned = JSON.parse(readFileSync(join(out, "rlpipe-plan.json"), "utf8")) as { provider: string; generatedBy: string };
    assert.equal(planned.provider, "local");
    assert.equal(planned.generatedBy, `rlpipe ${manifest.version}`);
  });

  it("node_modules/.bin/rlpipe init writes a recipe that validates in the project, its schema comment naming a copy of the installed schema beside it", async () => {
    const r = await run(join(project, "node_modules", ".bin", "rlpipe"), ["init", "starter/recipe.yaml"], { cwd: project });
    assert.equal(r.status, 0, show(r));
    const text = readFileSync(join(project, "starter", "recipe.yaml"), "utf8");
    assert.match(text, /^# yaml-language-server: \$schema=recipe\.schema\.json$/m, "no absolute path into this machine's install");
    assert.equal(readFileSync(join(project, "starter", "recipe.schema.json"), "utf8"), readFileSync(realpathSync(join(pkgDir, "schema", "recipe.schema.json")), "utf8"));
    const v = await run(join(project, "node_modules", ".bin", "rlpipe"), ["validate", "starter/recipe.yaml"], { cwd: project });
    assert.equal(v.status, 0, show(v));
  });

  it("node_modules/.bin/rlpipe package bundles the installed functions (FunctionGraph zips from the package's dist/, embedded files included)", { timeout: 120_000 }, async () => {
    const out = join(project, "functions");
    const r = await run(join(project, "node_modules", ".bin", "rlpipe"), ["package", "--platform", "functiongraph", "--out", out, "--json"], { cwd: project, timeoutMs: 120_000 });
    assert.equal(r.status, 0, show(r));
    // Installed, rlpipe itself lives under node_modules/ and its dependencies are its siblings: its own files must
    // still be told from theirs (files read at runtime embedded, SDKs attributed to the right bundle).
    const report = JSON.parse(r.stdout) as { functions: { function: string; assets: string[]; sdks: { path: string }[] }[] };
    const byFn = new Map(report.functions.map((f) => [f.function, f]));
    for (const fn of ["reward", "runs", "console"]) assert.ok(existsSync(join(out, `rlpipe-${fn}-functiongraph.zip`)), `${fn} zip written`);
    assert.deepEqual(byFn.get("reward")!.assets, ["adapters/sandboxes/harness/e2b_runner.py"], "the E2B runner is embedded from the installed package");
    assert.ok(byFn.get("console")!.assets.includes("recipes/python/rlpipe_reward.py"), "the shipped Python shims are embedded");
    assert.ok(byFn.get("reward")!.sdks.some((x) => x.path === "e2b"), JSON.stringify(byFn.get("reward")!.sdks));
    assert.ok(!byFn.get("reward")!.sdks.some((x) => x.path.startsWith("tencentcloud")), "no Tencent SDK in the reward bundle");
    assert.ok(byFn.get("runs")!.sdks.some((x) => x.path.startsWith("@aws-sdk")), JSON.stringify(byFn.get("runs")!.sdks));
  });

  it("after `npm link` on a temporary global prefix, `rlpipe` from PATH runs (package and bin are both symlinks)", async () => {
    const prefix = join(tmp, "global");
    mkdirSync(prefix);
    const linked = await run("npm", ["link"], { cwd: pkgDir, env: npmEnv({ npm_config_prefix: prefix }) });
    assert.equal(linked.status, 0, show(linked));
    const env = { ...process.env, PATH: `${join(prefix, "bin")}${delimiter}${process.env["PATH"] ?? ""}` };
    const help = await run("rlpipe", ["--help"], { cwd: project, env });
    assert.equal(help.status, 0, show(help));
    assert.match(help.stdout, /usage: rlpipe <command>/);
    const invalid = await run("rlpipe", ["validate", "broken.yaml"], { cwd: project, env });
    assert.equal(invalid.status, 2, show(invalid));
  });

  it("the installed TI-ONE client (tencentcloud-sdk-nodejs-common) signs requests the strict TC3 fake accepts", async () => {
    const secretId = fakeTencentSecretId();
    const secretKey = fakeTencentSecretKey();
    const fake = await TioneFake.start([{ secretId, secretKey }]);
    try {
      const script = `
        const { TioneApi } = await import(${JSON.stringify(join(pkgDir, "dist", "adapters", "providers", "tione.js"))});
        const api = new TioneApi({ env: { TENCENTCLOUD_SECRET_ID: ${JSON.stringify(secretId)}, TENCENTCLOUD_SECRET_KEY: ${JSON.stringify(secretKey)}, TIONE_ENDPOINT: ${JSON.stringify(fake.endpoint)} }, region: "ap-shanghai" });
        try { console.log(JSON.stringify(await api.call("DescribeTrainingTasks", { Limit: 1 }))); } finally { api.close(); }`;
      const r = await run(process.execPath, ["--input-type=module", "-e", script], { cwd: project });
      assert.equal(r.status, 0, show(r));
      assert.ok("TotalCount" in (JSON.parse(r.stdout) as object), r.stdout);
      assert.deepEqual(fake.calls.map((c) => [c.action, c.outcome]), [["DescribeTrainingTasks", undefined]], "one call, accepted");
    } finally {
      await fake.stop();
    }
  });
});

describe("dist/bin/rlpipe.js runs the CLI when node starts it, through a symlink too, and not when imported", () => {
  it("`node <symlink to rlpipe.js> --version` prints the version; importing the module prints nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rlpipe-link-"));
    try {
      const script = join(ROOT, "dist", "bin", "rlpipe.js");
      symlinkSync(script, join(dir, "rlpipe"));
      const viaLink = await run(process.execPath, [join(dir, "rlpipe"), "--version"], { cwd: dir });
      assert.equal(viaLink.status, 0, show(viaLink));
      assert.equal(viaLink.stdout.trim(), manifest.version, show(viaLink));
      const imported = await run(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(script)}); console.log("imported");`], { cwd: dir });
      assert.equal(imported.status, 0, show(imported));
      assert.equal(imported.stdout, "imported\n", "importing ran no command");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
