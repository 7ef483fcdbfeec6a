#!/usr/bin/env node
// SandboxFusion's and ScaleBox's own runner tests against `rlpipe serve` over HTTP (issue 13, item 4).
//
//   node scripts/compat.mjs [--sandboxfusion SRC] [--scalebox SRC] [--isolation warm|per-program] [--python-env DIR] [--out FILE]
//
// SRC is a checkout of bytedance/SandboxFusion or icip-cas/ScaleBox, either a work tree or a bare git directory (the
// pinned commit below is taken from it with `git archive`). Nothing of theirs is in this repository: their test files
// are copied into a temporary directory and run there with the test virtualenv's pytest. SandboxFusion's tests import
// its in-process TestClient and models; test/compat/shim/ stands in for those (an HTTP client to the server under
// test, plain classes for the request and response shapes), so the request bodies and assertions are theirs.
// ScaleBox's test_sandbox_common_evaluate.py already speaks HTTP (URL). test/compat/compat-lists.json names the tests
// not run (what this machine lacks, each with its reason) and the ones that expect ScaleBox's lenient stdio
// comparison (kept strict). Programs get the runtime environment npm test builds (/var/tmp/rlpipe-test-python-env,
// or $RLPIPE_TEST_PYTHON_ENV) when it is there, or --python-env DIR.
// Prints pass/fail/skip per language and writes the results as JSON (default bench/results/compat.json).
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const SUITES = {
  sandboxfusion: { commit: "469de08", files: "sandbox/tests/runners", pick: (f) => /^test_.*\.py$/.test(f) || f === "samples" },
  scalebox: { commit: "4bcfefd083b0d2d96185073ba9860632a335d655", files: "sandbox/tests/runners", pick: (f) => f === "test_sandbox_common_evaluate.py" },
};
const LANGUAGES = ["python_gpu", "kotlin_script", "typescript", "javascript", "go_test", "csharp", "verilog", "racket", "pytest", "nodejs", "julia", "junit", "swift", "scala", "rust", "ruby", "perl", "lean", "java", "jest", "cuda", "bash", "php", "lua", "cpp", "sql", "D_ut", "go", "R", "r", "python", "jupyter", "isolation"];

const { values: opt } = parseArgs({
  options: { sandboxfusion: { type: "string" }, scalebox: { type: "string" }, isolation: { type: "string" }, "python-env": { type: "string" }, out: { type: "string" }, help: { type: "boolean", default: false } },
  strict: true,
});
if (opt.help || (opt.sandboxfusion === undefined && opt.scalebox === undefined)) {
  console.log(readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").slice(1, 15).map((l) => l.replace(/^\/\/ ?/, "")).join("\n"));
  process.exit(opt.help ? 0 : 2);
}
const python = join(root, ".venv-test", "bin", "python");
if (!existsSync(python)) fail("the test virtualenv is missing: run npm test once (scripts/setup.sh --test builds .venv-test)");
if (!existsSync(join(root, "dist", "bin", "rlpipe.js"))) fail("dist/ is missing: npm run build");
const defaultEnv = process.env.RLPIPE_TEST_PYTHON_ENV ?? "/var/tmp/rlpipe-test-python-env";
const pythonEnv = opt["python-env"] ?? (existsSync(join(defaultEnv, "pyvenv.cfg")) ? defaultEnv : undefined);

function fail(msg) {
  console.error(`scripts/compat: ${msg}`);
  process.exit(2);
}

/** The suite's runner files from a work tree or a bare git dir, into dir (flat: no package, so `sandbox` is the shim's). */
function extract(src, suite, dir) {
  const tmp = mkdtempSync(join(os.tmpdir(), "rlpipe-compat-src-"));
  try {
    let from;
    if (existsSync(join(src, suite.files))) from = join(src, suite.files);
    else {
      const tar = spawnSync("git", ["--git-dir", src, "archive", suite.commit, suite.files], { maxBuffer: 1 << 30 });
      if (tar.status !== 0) fail(`git archive ${suite.commit} ${suite.files} from ${src}: ${tar.stderr.toString().trim()}`);
      const x = spawnSync("tar", ["-x", "-C", tmp], { input: tar.stdout });
      if (x.status !== 0) fail(`tar: ${x.stderr.toString().trim()}`);
      from = join(tmp, suite.files);
    }
    mkdirSync(dir, { recursive: true });
    for (const f of readdirSync(from).filter(suite.pick)) cpSync(join(from, f), join(dir, f), { recursive: statSync(join(from, f)).isDirectory() });
    cpSync(join(root, "test", "compat", "conftest.py"), join(dir, "conftest.py"));
    cpSync(join(root, "test", "compat", "compat-lists.json"), join(dir, "compat-lists.json"));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

async function startServer() {
  const args = [join(root, "dist", "bin", "rlpipe.js"), "serve", "--host", "127.0.0.1", "--port", "0", "--quiet", ...(opt.isolation === undefined ? [] : ["--isolation", opt.isolation]),
    ...(pythonEnv === undefined ? [] : ["--python-env", pythonEnv])];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  const banner = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => { out += d; const m = /rlpipe serve: (http:\/\/\S+) \((.*)\)/.exec(out); if (m) resolve(m); });
    child.once("exit", (code) => reject(new Error(`rlpipe serve exited ${code}: ${stderr}`)));
  });
  return { url: banner[1], about: banner[2], stop: () => new Promise((r) => { child.once("exit", r); child.kill("SIGTERM"); }) };
}

/** pytest's JUnit XML → [{file, name, outcome, message}]. */
function junit(xml) {
  const out = [];
  for (const m of xml.matchAll(/<testcase ([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attr = (k) => new RegExp(`(?:^|\\s)${k}="([^"]*)"`).exec(m[1])?.[1] ?? "";
    const body = m[3] ?? "";
    const tag = /<(failure|error|skipped)\b([^>]*)/.exec(body);
    const message = tag === null ? "" : (/message="([^"]*)"/.exec(tag[2])?.[1] ?? "").slice(0, 300);
    let outcome = tag === null ? "passed" : tag[1] === "skipped" ? "skipped" : "failed";
    if (outcome === "skipped" && /xfail|expected fail/i.test(body)) outcome = "strict";
    out.push({ file: attr("classname").split(".").pop(), name: attr("name"), outcome, message });
  }
  return out;
}

function languageOf(suite, t) {
  const hay = (suite === "sandboxfusion" ? t.file : t.name).replace(/^test_/, "").toLowerCase();
  for (const l of LANGUAGES) {
    const k = l.toLowerCase();
    if (hay === k || hay.startsWith(`${k}_`) || (suite === "scalebox" && `_${hay}`.includes(`_${k}_`))) return k === "r" ? "R" : k === "javascript" ? "nodejs" : l;
  }
  return "general";
}

const server = await startServer();
console.log(`rlpipe serve: ${server.url} (${server.about})`);
const results = {};
let exitCode = 0;
try {
  for (const [name, suite] of Object.entries(SUITES)) {
    const src = opt[name];
    if (src === undefined) continue;
    const dir = mkdtempSync(join(os.tmpdir(), `rlpipe-compat-${name}-`));
    try {
      extract(src, suite, dir);
      const xml = join(dir, "junit.xml");
      const env = { ...process.env, PYTHONPATH: join(root, "test", "compat", "shim"), RLPIPE_URL: server.url, URL: server.url, PYTHONDONTWRITEBYTECODE: "1" };
      const t0 = performance.now();
      // The test files only (samples/ holds helpers of theirs), less what this machine cannot run (named with reasons).
      const notRun = JSON.parse(readFileSync(join(root, "test", "compat", "compat-lists.json"), "utf8")).notRun;
      const files = readdirSync(dir).filter((f) => /^test_.*\.py$/.test(f) && notRun[f] === undefined).sort();
      const deselect = Object.keys(notRun).filter((k) => k.includes("::") && files.includes(k.split("::")[0])).flatMap((k) => ["--deselect", k]);
      spawnSync(python, ["-m", "pytest", "-q", "-p", "no:cacheprovider", `--junitxml=${xml}`, "-o", "junit_family=xunit1", ...deselect, ...files], { cwd: dir, env, stdio: ["ignore", "ignore", "inherit"], timeout: 3600_000 });
      const skipped = Object.entries(notRun).filter(([k]) => existsSync(join(dir, k.split("::")[0]))).map(([k, reason]) => ({ test: k, reason }));
      if (!existsSync(xml)) { console.error(`${name}: pytest wrote no results`); exitCode = 1; continue; }
      const tests = junit(readFileSync(xml, "utf8"));
      const byLang = {};
      for (const t of tests) {
        const l = languageOf(name, t);
        const row = (byLang[l] ??= { passed: 0, failed: 0, skipped: 0, strict: 0, failures: [] });
        row[t.outcome]++;
        if (t.outcome === "failed") row.failures.push(`${t.name}: ${t.message}`);
      }
      const total = Object.values(byLang).reduce((a, r) => ({ passed: a.passed + r.passed, failed: a.failed + r.failed, skipped: a.skipped + r.skipped, strict: a.strict + r.strict }), { passed: 0, failed: 0, skipped: 0, strict: 0 });
      results[name] = { commit: suite.commit, seconds: Math.round((performance.now() - t0) / 1000), total, languages: byLang, notRun: skipped };
      console.log(`\n${name} @ ${suite.commit.slice(0, 7)}: ${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped by the suite, ${total.strict} kept strict — ${tests.length} tests in ${results[name].seconds} s`);
      for (const s of skipped) console.log(`  not run: ${s.test} — ${s.reason}`);
      for (const [l, r] of Object.entries(byLang).sort()) console.log(`  ${l.padEnd(14)} ${String(r.passed).padStart(3)} passed ${String(r.failed).padStart(3)} failed ${String(r.skipped).padStart(3)} skipped ${String(r.strict).padStart(3)} strict`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
} finally {
  await server.stop();
}
const out = opt.out ?? join(root, "bench", "results", "compat.json");
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ when: new Date().toISOString(), server: server.about, results }, null, 2)}\n`);
console.log(`\nwrote ${basename(dirname(out))}/${basename(out)}`);
process.exit(exitCode);
