// The Python environment sandboxed programs import from (adapters/sandboxes/toolchains/python-env.ts): the pinned list, the
// builder (offline here: a wheel made by the test, pip with --no-index), its checks, and programs running in it —
// the environment npm test's setup builds (/var/tmp/rlpipe-test-python-env) from the real list (numpy, sympy, pandas, …).
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { checkPythonEnv, installPythonEnv, missingPackages, pinnedNodePackages, pinnedPackages } from "../adapters/sandboxes/toolchains/python-env.js";
import { LocalSandbox } from "../adapters/sandboxes/local/local-sandbox.js";
import { handleRunJupyter, type RunJupyterResponseSF } from "../functions/jupyter.js";

// Where npm test's setup builds it (scripts/setup.sh): a directory every user can reach, as sandboxes need.
const ENV = process.env["RLPIPE_TEST_PYTHON_ENV"] ?? "/var/tmp/rlpipe-test-python-env";
const limits = { runTimeoutMs: 20_000 };

/** A minimal wheel of a pure-Python package, built with the standard library's zipfile. */
function makeWheel(dir: string, name: string, version: string): void {
  const script = `
import base64, hashlib, sys, zipfile
d, name, version = sys.argv[1:4]
files = {f"{name}/__init__.py": f"VERSION = {version!r}\\n",
         f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n",
         f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
rec = "".join(f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(t.encode()).digest()).rstrip(b'=').decode()},{len(t.encode())}\\n" for p, t in files.items())
files[f"{name}-{version}.dist-info/RECORD"] = rec + f"{name}-{version}.dist-info/RECORD,,\\n"
with zipfile.ZipFile(f"{d}/{name}-{version}-py3-none-any.whl", "w") as z:
    for p, t in files.items(): z.writestr(p, t)
`;
  const r = spawnSync("/usr/bin/python3", ["-c", script, dir, name, version], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
}

describe("python environment: the pinned list and the builder", () => {
  let root: string;
  before(() => { root = mkdtempSync(join(tmpdir(), "rlpipe-pyenv-")); });
  after(() => rmSync(root, { recursive: true, force: true }));

  it("the list pins every package, dependencies included, and has what RL programs import", () => {
    const pins = pinnedPackages();
    const names = new Set(pins.map((p) => p.name.toLowerCase()));
    for (const n of ["numpy", "scipy", "sympy", "mpmath", "pandas", "networkx", "sortedcontainers", "matplotlib", "requests", "pytest", "scikit-learn"]) assert.ok(names.has(n), `${n} is in the list`);
    assert.equal(pins.find((p) => p.name === "numpy")!.version, "1.26.3", "SandboxFusion's pin");
    assert.throws(() => pinnedPackages("numpy==1.26.3\nscipy>=1\n"), (e: Error & { code?: string }) => e.code === "python_env_requirements" && /requirements\.txt:2: not a pinned requirement \(name==version\): scipy>=1/.test(e.message));
  });

  it("builds an environment from pinned wheels, renames it into place, and does nothing the second time", async () => {
    const wheels = join(root, "wheels");
    mkdirSync(wheels);
    makeWheel(wheels, "rlpipe_probe", "1.2.0");
    const req = join(root, "req.txt");
    writeFileSync(req, "# a test list\nrlpipe_probe==1.2.0\n");
    const dir = join(root, "envs", "e1");
    const lines: string[] = [];
    const first = installPythonEnv(dir, { requirementsFile: req, pipArgs: ["--no-index", "--find-links", wheels], nodePackageFile: null, goStdCache: false, javaLibraries: false, log: (l) => lines.push(l) });
    assert.equal(first.installed, true);
    assert.ok(lines.some((l) => l.includes("-m venv --without-pip")), "a virtualenv without pip: programs get no installer");
    assert.deepEqual(first.env.packages, [{ name: "rlpipe_probe", version: "1.2.0" }]);
    assert.deepEqual(missingPackages(first.env, pinnedPackages(readFileSync(req, "utf8")), []), []);
    assert.deepEqual(first.env.nodePackages, [], "no Node packages were asked for");
    assert.deepEqual(readdirSync(join(root, "envs")), ["e1"], "no partial directory is left");
    const r = spawnSync(join(dir, "bin", "python3"), ["-c", "import rlpipe_probe, sys; print(rlpipe_probe.VERSION, sys.prefix)"], { encoding: "utf8" });
    assert.equal(r.stdout, `1.2.0 ${dir}\n`);
    // A sandbox's user must reach it: under a private directory (mkdtemp: 0700) that is a clear error, not a mount failure.
    await assert.rejects(LocalSandbox.create({ pythonEnv: dir, concurrency: 1 }), (e: Error & { code?: string }) => {
      assert.equal(e.code, "python_env_unreachable");
      assert.match(e.message, new RegExp(`a sandbox's user cannot reach it: ${root.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")} is mode 0700`));
      return true;
    });
    chmodSync(root, 0o755);
    const sb = await LocalSandbox.create({ pythonEnv: dir, concurrency: 1 });
    try {
      const inSandbox = await sb.run({ language: "python", code: "import rlpipe_probe, sys\nprint(rlpipe_probe.VERSION, sys.prefix)", limits: { runTimeoutMs: 10_000 } });
      assert.equal(inSandbox.stdout, "1.2.0 /opt/python-env\n", inSandbox.stderr);
    } finally {
      await sb.close();
    }
    const again = installPythonEnv(dir, { requirementsFile: req, pipArgs: ["--no-index", "--find-links", wheels], nodePackageFile: null, goStdCache: false, javaLibraries: false });
    assert.equal(again.installed, false);
    // A changed list rebuilds it.
    makeWheel(wheels, "rlpipe_probe", "1.3.0");
    writeFileSync(req, "rlpipe_probe==1.3.0\n");
    const rebuilt = installPythonEnv(dir, { requirementsFile: req, pipArgs: ["--no-index", "--find-links", wheels], nodePackageFile: null, goStdCache: false, javaLibraries: false });
    assert.equal(rebuilt.installed, true);
    assert.deepEqual(rebuilt.env.packages, [{ name: "rlpipe_probe", version: "1.3.0" }]);
  });

  it("a failed build leaves nothing; a directory that is not an rlpipe environment is not touched", () => {
    const req = join(root, "missing.txt");
    writeFileSync(req, "rlpipe_absent==9.9.9\n");
    const dir = join(root, "envs", "e2");
    assert.throws(() => installPythonEnv(dir, { requirementsFile: req, pipArgs: ["--no-index", "--find-links", join(root, "wheels")], nodePackageFile: null, goStdCache: false, javaLibraries: false }),
      (e: Error & { code?: string }) => e.code === "python_env_failed" && /could not install the pinned packages: .*rlpipe_absent/.test(e.message));
    assert.ok(!existsSync(dir));
    assert.deepEqual(readdirSync(join(root, "envs")).sort(), ["e1"]);
    const foreign = join(root, "foreign");
    mkdirSync(foreign);
    writeFileSync(join(foreign, "keep.txt"), "mine");
    assert.throws(() => installPythonEnv(foreign, { requirementsFile: req }), (e: Error & { code?: string }) => e.code === "python_env_exists" && /not an rlpipe Python environment; nothing was changed/.test(e.message));
    assert.equal(readFileSync(join(foreign, "keep.txt"), "utf8"), "mine");
  });

  it("checks say what is wrong with a --python-env directory", () => {
    const bad = (dir: string, re: RegExp) => assert.throws(() => checkPythonEnv(dir), (e: Error & { code?: string; hint?: string }) => {
      assert.equal(e.code, "python_env_invalid");
      assert.match(e.message, re);
      return true;
    });
    bad(join(root, "nowhere"), /nowhere: no such directory/);
    mkdirSync(join(root, "plain"));
    bad(join(root, "plain"), /not a Python virtualenv \(no pyvenv\.cfg\)/);
    // An interpreter outside /usr is invisible inside the sandbox.
    const outside = join(root, "outside");
    mkdirSync(join(outside, "bin"), { recursive: true });
    writeFileSync(join(outside, "pyvenv.cfg"), "home = /opt/py\n");
    writeFileSync(join(outside, "python-real"), "");
    symlinkSync(join(outside, "python-real"), join(outside, "bin", "python3"));
    bad(outside, /a sandbox sees only \/usr of the host/);
  });
});

describe("python environment: programs in the sandbox", () => {
  let sb: LocalSandbox;
  before(async () => {
    assert.ok(existsSync(join(ENV, "pyvenv.cfg")), `${ENV} is missing: npm test's setup (scripts/setup.sh --test) builds it`);
    sb = await LocalSandbox.create({ pythonEnv: ENV, concurrency: 1 });
  });
  after(() => sb.close());

  it("imports the pinned scientific stack at the pinned versions; the server says which environment it has", async () => {
    const pins = new Map(pinnedPackages().map((p) => [p.name.toLowerCase(), p.version]));
    const code = [
      "import numpy, scipy, sympy, pandas, networkx, sortedcontainers, sklearn, requests, mpmath",
      "import scipy.optimize, sys",
      "x = sympy.symbols('x')",
      "print(numpy.__version__, scipy.__version__, sympy.__version__, pandas.__version__, networkx.__version__, sortedcontainers.__version__, sklearn.__version__)",
      "print(sympy.integrate(x**2, x), int(numpy.arange(5).sum()), sys.prefix)",
    ].join("\n");
    const r = await sb.run({ language: "python", code, limits });
    assert.equal(r.status, "ok", r.stderr);
    assert.equal(r.stderr, "", "no warning on stderr");
    const [versions, result] = r.stdout.trim().split("\n");
    assert.deepEqual(versions!.split(" "), ["numpy", "scipy", "sympy", "pandas", "networkx", "sortedcontainers", "scikit-learn"].map((n) => pins.get(n)));
    assert.equal(result, "x**3/3 10 /opt/python-env");
    const caps = await sb.capabilities();
    assert.equal(caps.pythonEnv?.dir, ENV);
    assert.ok(caps.pythonEnv!.packages >= pins.size);
  });

  it("Node programs require its Node packages (lodash), and TypeScript runs through its tsx, types stripped", async () => {
    const node = pinnedNodePackages();
    assert.deepEqual(node.map((p) => p.name), ["@babel/core", "@babel/preset-env", "@babel/preset-typescript", "@jest/globals", "babel-jest", "commander", "jest", "js-md5", "lodash", "random-seed", "seedrandom", "tsx"]);
    const caps = await sb.capabilities();
    assert.ok(caps.languages.includes("typescript"));
    const js = await sb.run({ language: "nodejs", code: "const _ = require('lodash');\nconsole.log(_.VERSION, JSON.stringify(_.chunk([1, 2, 3, 4], 2)));", limits });
    assert.equal(js.stdout, `${node.find((p) => p.name === "lodash")!.version} [[1,2],[3,4]]\n`, js.stderr);
    const ts = await sb.run({ language: "typescript", code: "import _ from 'lodash';\ninterface P { x: number }\nconst ps: P[] = [{ x: 1 }, { x: 41 }];\nconst line: string = require('fs').readFileSync(0, 'utf8');\nconsole.log(_.sumBy(ps, (p) => p.x) + Number(line));", stdin: "0\n", limits });
    assert.equal(ts.status, "ok", ts.stderr);
    assert.equal(ts.stdout, "42\n");
    const thrown = await sb.run({ language: "typescript", code: "const f = (n: number): number => { throw new Error('bad ' + n); };\nf(3);", limits });
    assert.equal(thrown.status, "runtime_error");
    assert.match(thrown.stderr, /Error: bad 3/);
    // Function calls as in JavaScript: the value comes back as JSON on descriptor 3, compared outside the sandbox.
    const [call] = await sb.evaluate([{ id: "ts-call", language: "typescript", code: "function add(a: number, b: number): number {\n  return a + b;\n}", limits,
      tests: [{ kind: "call", fnName: "add", args: [1, 2], expected: 3 }, { kind: "call", fnName: "add", args: [3, 4], expected: 8 }] }]);
    assert.deepEqual(call!.cases.map((c) => c.status), ["passed", "wrong_answer"]);
  });

  it("adds SandboxFusion's jest: the program is a Jest test file in TypeScript (babel), a failing expectation fails the run", { timeout: 60_000 }, async () => {
    assert.ok((await sb.capabilities()).languages.includes("jest"));
    const limits = { runTimeoutMs: 30_000 };
    const file = [
      "import { describe, expect, test } from '@jest/globals';",
      "import _ from 'lodash';",
      "function minLen(target: number, nums: number[]): number {",
      "  let best = Infinity, sum = 0, start = 0;",
      "  for (let end = 0; end < nums.length; end++) {",
      "    sum += nums[end];",
      "    while (sum >= target) { best = Math.min(best, end - start + 1); sum -= nums[start++]; }",
      "  }",
      "  return best === Infinity ? 0 : best;",
      "}",
      "describe('minLen', () => {",
      "  test('finds it', () => { expect(minLen(7, [2, 3, 1, 2, 4, 3])).toBe(2); });",
      "  test('lodash is there', () => { expect(_.sum([1, 2])).toBe(3); });",
      "});",
    ].join("\n");
    const pass = await sb.run({ language: "jest", code: file, limits });
    assert.equal(pass.status, "ok", pass.stdout + pass.stderr);
    assert.match(pass.stderr, /Tests:\s+2 passed, 2 total/);
    assert.doesNotMatch(pass.stderr, /\x1b\[/, "no terminal colours in what a model reads");
    const fail = await sb.run({ language: "jest", code: file.replace("toBe(2)", "toBe(3)"), limits });
    assert.equal(fail.status, "runtime_error");
    assert.match(fail.stderr, /Expected: 3\s+Received: 2[\s\S]*Tests:\s+1 failed, 1 passed, 2 total/);
    // Plain JavaScript with require works too (babel's TypeScript preset takes either).
    const js = await sb.run({ language: "jest", code: "const _ = require('lodash');\ntest('chunk', () => { expect(_.chunk([1, 2, 3], 2)).toEqual([[1, 2], [3]]); });", limits });
    assert.equal(js.status, "ok", js.stdout + js.stderr);
  });

  it("Go builds start from its prebuilt standard library (links to read-only entries); only the program's own package is compiled", { timeout: 120_000 }, async () => {
    const code = [
      "package main",
      "import (\n\t\"fmt\"\n\t\"os\"\n\t\"path/filepath\"\n)",
      "func main() {",
      "\tlinks, files, target := 0, 0, \"\"",
      "\tfilepath.Walk(\"/tmp/.go-cache\", func(p string, info os.FileInfo, err error) error {",
      "\t\tif err == nil && info.Mode()&os.ModeSymlink != 0 { links++; target = p } else if err == nil && info.Mode().IsRegular() { files++ }",
      "\t\treturn nil",
      "\t})",
      "\terr := os.WriteFile(target, []byte(\"planted\"), 0o644)",
      "\tfmt.Println(links > 1000, files < 100, err != nil)",
      "}",
    ].join("\n");
    const r = await sb.run({ language: "go", code, limits: { runTimeoutMs: 20_000, compileTimeoutMs: 60_000 } });
    assert.equal(r.status, "ok", r.stderr);
    assert.equal(r.stdout, "true true true\n", "most of the cache is the prebuilt one, and it cannot be written through");
  });

  it("adds SandboxFusion's go_test: a test file built against its module (testify, offline), answering as go test does", { timeout: 120_000 }, async () => {
    assert.ok((await sb.capabilities()).languages.includes("go_test"));
    const test = "package main\n\nimport (\n\t\"testing\"\n\n\t\"github.com/stretchr/testify/assert\"\n)\n\nfunc Add(a, b int) int { return a + b }\n\nfunc TestAdd(t *testing.T) {\n\tassert.Equal(t, 3, Add(1, 2))\n}\n";
    const limits = { runTimeoutMs: 20_000, compileTimeoutMs: 60_000 };
    const ok = await sb.run({ language: "go_test", code: test, limits });
    assert.equal(ok.status, "ok", ok.stderr + ok.stdout);
    assert.equal(ok.stdout, "ok  \tcommand-line-arguments\n");
    const bad = await sb.run({ language: "go_test", code: test.replace("a + b", "a - b"), limits });
    assert.equal(bad.status, "runtime_error");
    assert.match(bad.stdout, /--- FAIL: TestAdd[\s\S]*Error:\s+Not equal:[\s\S]*FAIL\tcommand-line-arguments\n$/);
    // No network: a module the environment does not hold is a build error, not a download.
    const other = await sb.run({ language: "go_test", code: test.replace("github.com/stretchr/testify/assert", "github.com/google/uuid"), limits });
    assert.equal(other.status, "compile_error");
  });

  it("Java programs have its libraries (javatuples), and SandboxFusion's junit runs JUnit 5 tests through the console launcher", { timeout: 120_000 }, async () => {
    const limits = { runTimeoutMs: 30_000, compileTimeoutMs: 60_000 };
    const tuples = await sb.run({ language: "java", limits, code: "import org.javatuples.Pair;\npublic class Main {\n  public static void main(String[] a) {\n    Pair<String, Integer> p = Pair.with(\"apple\", 1);\n    System.out.println(p.getValue0() + \" \" + p.getValue1());\n  }\n}" });
    assert.equal(tuples.stdout, "apple 1\n", tuples.stderr);
    assert.ok((await sb.capabilities()).languages.includes("junit"));
    const suite = "import org.junit.jupiter.api.Test;\nimport static org.junit.jupiter.api.Assertions.*;\npublic class Calc {\n  public static int add(int a, int b) { return a + b; }\n}\nclass CalcTest {\n  @Test\n  void adds() { assertEquals(3, Calc.add(1, 2)); }\n}";
    const pass = await sb.run({ language: "junit", code: suite, limits });
    assert.equal(pass.status, "ok", pass.stdout + pass.stderr);
    assert.match(pass.stdout, /\[\s+1 tests successful\s+\]/);
    assert.doesNotMatch(pass.stdout, /\x1b\[/, "no terminal colours in what a model reads");
    const fail = await sb.run({ language: "junit", code: suite.replace("a + b", "a - b"), limits });
    assert.equal(fail.status, "runtime_error");
    assert.match(fail.stdout, /expected: <3> but was: <-1>[\s\S]*\[\s+1 tests failed\s+\]/);
  });

  it("adds SandboxFusion's pytest language: the program is a test module, its fixtures work, a failing test fails the run", async () => {
    assert.ok((await sb.capabilities()).languages.includes("pytest"));
    const module = "import pytest\n\ndef add(a, b):\n    return a + b\n\nclass TestAdd:\n    def test_small(self, tmp_path):\n        (tmp_path / 'x').write_text('1')\n        assert add(1, 2) == 3\n\n    @pytest.mark.parametrize('n', [1, 2, 3])\n    def test_many(self, n, capfd):\n        print(n)\n        assert capfd.readouterr().out == f'{n}\\n'\n";
    const ok = await sb.run({ language: "pytest", code: module, limits });
    assert.equal(ok.status, "ok", ok.stdout + ok.stderr);
    assert.match(ok.stdout, /4 passed/);
    const bad = await sb.run({ language: "pytest", code: module.replace("add(1, 2) == 3", "add(1, 2) == 4"), limits });
    assert.equal(bad.status, "runtime_error");
    assert.equal(bad.exitCode, 1);
    assert.match(bad.stdout, /1 failed, 3 passed/);
  });

  it("/run_jupyter draws matplotlib figures as PNG displays, as the inline backend does (SandboxFusion's plot test)", async () => {
    const cells = ["import matplotlib.pyplot as plt", "plt.plot([1, 2, 3], [2, 3, 5])\nplt.title('Simple Plot')\nplt.show()", "len(plt.get_fignums())"];
    const res = await handleRunJupyter({ method: "POST", path: "/run_jupyter", headers: {}, body: { cells } }, { backend: sb });
    const body = res.body as RunJupyterResponseSF;
    assert.equal(body.status, "Success", JSON.stringify(body.driver));
    const png = body.cells[1]!.display.find((d) => "image/png" in d) as Record<string, string> | undefined;
    assert.ok(png !== undefined, JSON.stringify(body.cells[1]));
    assert.deepEqual([...Buffer.from(png["image/png"]!, "base64").subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "a PNG");
    assert.equal(png["text/plain"], "<Figure size 640x480 with 1 Axes>");
    assert.deepEqual(body.cells[2]!.display, [{ "text/plain": "0" }], "shown figures are closed");
  });

  it("is read-only to programs, and what one program does in it is not seen by the next", async () => {
    const write = await sb.run({ language: "python", code: "import numpy, os\nopen(os.path.join(os.path.dirname(numpy.__file__), 'evil.py'), 'w').write('x')", limits });
    assert.equal(write.status, "runtime_error");
    assert.match(write.stderr, /Read-only file system/);
    const poison = await sb.run({ language: "python", code: "import numpy\nnumpy.pi = 3\nimport sys\nsys.modules['json'] = None\nprint(numpy.pi)", limits });
    assert.equal(poison.stdout, "3\n");
    const next = await sb.run({ language: "python", code: "import numpy, json\nprint(numpy.pi > 3.14, json.dumps(1))", limits });
    assert.equal(next.stdout, "True 1\n", next.stderr);
  });
});
