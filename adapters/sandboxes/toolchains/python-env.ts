// The runtime environment sandboxed programs import from: a virtualenv of the sandbox's own interpreter holding the
// pinned Python packages of python-env/requirements.txt (numpy, sympy, pandas, …), and beside it, in node_modules,
// the pinned Node packages of python-env/package.json (lodash and Jest with babel, which SandboxFusion's tests
// require, its runtime's small helpers, and tsx, which runs TypeScript). `rlpipe sandbox setup --python-env DIR` builds it; `rlpipe serve --python-env DIR` mounts it
// read-only into every sandbox and runs programs (and the harness) with its interpreter.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SandboxError } from "../sandbox.js";
import { detectToolchains, GO_BUILD_ENV } from "./toolchains.js";

const ENV_SPEC_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "../../../../adapters/sandboxes/toolchains/python-env");
export const PYTHON_ENV_REQUIREMENTS = join(ENV_SPEC_DIR, "requirements.txt");
/** The Node packages (package.json and its package-lock.json, installed with npm ci). */
export const NODE_ENV_PACKAGE = join(ENV_SPEC_DIR, "package.json");
/** Written last into a finished environment: the hash of the requirements it was built from. */
const MARKER = ".rlpipe-python-env";

export interface PinnedPackage {
  readonly name: string;
  readonly version: string;
}

export interface PythonEnv {
  /** The environment's directory (absolute, as given: the sandbox mounts it at the same path). */
  readonly dir: string;
  /** Its interpreter, DIR/bin/python3. */
  readonly python: string;
  /** What is installed in it (from its dist-info directories), sorted by name. */
  readonly packages: readonly PinnedPackage[];
  /** Its Node packages (node_modules), sorted by name; empty when it has none. */
  readonly nodePackages: readonly PinnedPackage[];
  /** Its prebuilt Go standard-library build cache (DIR/go-cache), when it has one. */
  readonly goCache?: string;
  /** Its Go module (DIR/go: go.mod, go.sum) and module cache (DIR/go-mod-cache), for go_test, when it has them. */
  readonly goModules?: string;
  /** Its Java libraries (file names in DIR/java), sorted. */
  readonly jars: readonly string[];
}

/** The Java libraries of the runtime environment (python-env/java.json): file, where from, SHA-256. */
export interface PinnedJar {
  readonly file: string;
  readonly url: string;
  readonly sha256: string;
}

export function pinnedJars(text: string = readFileSync(join(ENV_SPEC_DIR, "java.json"), "utf8")): PinnedJar[] {
  return (JSON.parse(text) as { jars: PinnedJar[] }).jars;
}

/** Downloads each jar into dir (a child Node: fetch is asynchronous) and checks its SHA-256. */
function fetchJars(jars: readonly PinnedJar[], dir: string, log: ((l: string) => void) | undefined): void {
  const script = `
const { createHash } = require("node:crypto");
const { writeFileSync } = require("node:fs");
(async () => {
  for (const j of JSON.parse(process.argv[1])) {
    const res = await fetch(j.url, { signal: AbortSignal.timeout(120000) });
    if (!res.ok) throw new Error(j.url + ": HTTP " + res.status);
    const data = Buffer.from(await res.arrayBuffer());
    const sum = createHash("sha256").update(data).digest("hex");
    if (sum !== j.sha256) throw new Error(j.url + ": SHA-256 " + sum + ", expected " + j.sha256);
    writeFileSync(process.argv[2] + "/" + j.file, data);
  }
})().catch((e) => { console.error(e.message); process.exit(1); });`;
  run(log, process.execPath, ["-e", script, JSON.stringify(jars), dir], "fetch the Java libraries", { hint: "Maven Central (repo1.maven.org) must be reachable" });
}

/** The pinned packages of a requirements file (`name==version` lines; comments and blank lines skipped). */
export function pinnedPackages(text: string = readFileSync(PYTHON_ENV_REQUIREMENTS, "utf8")): PinnedPackage[] {
  const out: PinnedPackage[] = [];
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.replace(/#.*/, "").trim();
    if (line === "") continue;
    const m = /^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$/.exec(line);
    if (m === null) throw new SandboxError("python_env_requirements", `${PYTHON_ENV_REQUIREMENTS}:${i + 1}: not a pinned requirement (name==version): ${line}`);
    out.push({ name: m[1]!, version: m[2]! });
  }
  return out;
}

const normalize = (name: string) => name.toLowerCase().replace(/[-_.]+/g, "-");
const requirementsHash = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 16);

/**
 * Why a user other than the owner cannot use dir (undefined: it can): a directory on the way without o+x, the
 * environment itself or its configuration not readable by others.
 */
function unreachableBy(dir: string, isEnv = true): string | undefined {
  const parts = dir.split("/").filter((p) => p !== "");
  for (let i = 0; i <= parts.length; i++) {
    const d = `/${parts.slice(0, i).join("/")}`;
    const mode = statSync(d).mode & 0o7777;
    if ((mode & 0o001) === 0) return `${d} is mode ${mode.toString(8).padStart(4, "0")}`;
  }
  if (!isEnv) return undefined;
  const cfg = join(dir, "pyvenv.cfg");
  if ((statSync(dir).mode & 0o004) === 0 || (statSync(cfg).mode & 0o004) === 0) return `${dir} is not readable by other users`;
  return undefined;
}

/** Installed distributions of an environment, read from site-packages' *.dist-info directory names. */
function installedPackages(dir: string): PinnedPackage[] {
  const lib = join(dir, "lib");
  const out: PinnedPackage[] = [];
  for (const py of existsSync(lib) ? readdirSync(lib).filter((d) => d.startsWith("python")) : []) {
    const site = join(lib, py, "site-packages");
    for (const d of existsSync(site) ? readdirSync(site) : []) {
      const m = /^(.+)-([^-]+)\.dist-info$/.exec(d);
      if (m !== null) out.push({ name: m[1]!, version: m[2]! });
    }
  }
  return out.sort((a, b) => normalize(a.name).localeCompare(normalize(b.name)));
}

/**
 * Checks that dir is a Python environment the sandbox can use: a virtualenv (pyvenv.cfg) whose interpreter lives
 * under /usr, the only part of the host a sandbox sees besides the environment itself, that the sandboxes' users can
 * reach. Throws SandboxError python_env_invalid or python_env_unreachable saying what is wrong and what to do.
 */
export function checkPythonEnv(dirGiven: string): PythonEnv {
  const env = readPythonEnv(dirGiven);
  const blocked = unreachableBy(env.dir);
  if (blocked !== undefined) throw unreachable(dirGiven, blocked);
  return env;
}

function unreachable(dirGiven: string, why: string): SandboxError {
  return new SandboxError("python_env_unreachable", `--python-env ${dirGiven}: a sandbox's user cannot reach it: ${why} (sandboxes run as unprivileged users of their own, and bubblewrap mounts the environment as one)`,
    { hint: "build it under a directory every user can enter (e.g. rlpipe sandbox setup --python-env /var/tmp/rlpipe-python-env), or chmod o+x the directories above it", exitCode: 2 });
}

/** For rlpipe sandbox setup, before building at dirGiven: an error when no sandbox could use it there. */
export function placeError(dirGiven: string): SandboxError | undefined {
  const dir = resolve(dirGiven);
  let d = dir;
  while (!existsSync(d)) d = dirname(d);
  const blocked = unreachableBy(d, false);
  return blocked === undefined ? undefined : unreachable(dirGiven, blocked);
}

/** The environment at dirGiven, checked for what a sandbox needs of it but not for whether its users can reach it. */
function readPythonEnv(dirGiven: string): PythonEnv {
  const dir = resolve(dirGiven);
  const hint = `build one with: rlpipe sandbox setup --python-env ${dirGiven}`;
  const fail = (what: string) => new SandboxError("python_env_invalid", `--python-env ${dirGiven}: ${what}`, { hint, exitCode: 2 });
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw fail("no such directory");
  if (!existsSync(join(dir, "pyvenv.cfg"))) throw fail("not a Python virtualenv (no pyvenv.cfg)");
  const python = join(dir, "bin", "python3");
  if (!existsSync(python)) throw fail("has no bin/python3");
  const real = realpathSync(python);
  if (!real.startsWith("/usr/")) throw fail(`its interpreter is ${real}; a sandbox sees only /usr of the host, so the environment must be made from an interpreter there (/usr/bin/python3)`);

  const goCache = join(dir, "go-cache");
  const goModules = join(dir, "go");
  const javaDir = join(dir, "java");
  const jars = existsSync(javaDir) ? readdirSync(javaDir).filter((f) => f.endsWith(".jar")).sort() : [];
  return {
    dir, python, packages: installedPackages(dir), nodePackages: installedNodePackages(dir), jars,
    ...(existsSync(join(goCache, "trim.txt")) ? { goCache } : {}), ...(existsSync(join(goModules, "go.sum")) && existsSync(join(dir, "go-mod-cache")) ? { goModules } : {}),
  };
}

/** Packages in DIR/node_modules (scoped ones included), from their package.json. */
function installedNodePackages(dir: string): PinnedPackage[] {
  const root = join(dir, "node_modules");
  if (!existsSync(root)) return [];
  const out: PinnedPackage[] = [];
  const read = (d: string) => {
    try {
      const pkg = JSON.parse(readFileSync(join(d, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
      if (typeof pkg.name === "string" && typeof pkg.version === "string") out.push({ name: pkg.name, version: pkg.version });
    } catch { /* not a package */ }
  };
  for (const d of readdirSync(root)) {
    if (d.startsWith(".")) continue;
    if (d.startsWith("@")) for (const sub of readdirSync(join(root, d))) read(join(root, d, sub));
    else read(join(root, d));
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The Node packages package.json asks for (its dependencies, pinned). */
export function pinnedNodePackages(text: string = readFileSync(NODE_ENV_PACKAGE, "utf8")): PinnedPackage[] {
  const deps = (JSON.parse(text) as { dependencies?: Record<string, string> }).dependencies ?? {};
  return Object.entries(deps).map(([name, version]) => ({ name, version })).sort((a, b) => a.name.localeCompare(b.name));
}

export interface InstallPythonEnvOptions {
  /** The sandbox's interpreter, the environment's base (default /usr/bin/python3). */
  readonly python?: string;
  readonly requirementsFile?: string;
  /** Progress lines (what runs). */
  readonly log?: (line: string) => void;
  /** More pip install arguments: a mirror or a local wheel directory (--index-url URL, --no-index --find-links DIR). */
  readonly pipArgs?: readonly string[];
  /** The Node packages' package.json (its package-lock.json beside it); null: none. Default NODE_ENV_PACKAGE. */
  readonly nodePackageFile?: string | null;
  /** false: no prebuilt Go standard-library cache (default: one when Go is installed). */
  readonly goStdCache?: boolean;
  /** false: no Java libraries (default: python-env/java.json's when Java is installed). */
  readonly javaLibraries?: boolean;
}

/**
 * Builds the environment at dir from the pinned requirements: a virtualenv without pip (programs get no installer),
 * packages installed by an outside pip with --no-deps (every dependency is pinned in the file) from binary wheels.
 * Built next to dir and renamed into place, so an interrupted build leaves no half environment. Nothing to do when
 * dir was built from the same requirements. Returns whether it installed.
 */
export function installPythonEnv(dirGiven: string, opts: InstallPythonEnvOptions = {}): { installed: boolean; env: PythonEnv } {
  const dir = resolve(dirGiven);
  const python = opts.python ?? "/usr/bin/python3";
  const reqFile = opts.requirementsFile ?? PYTHON_ENV_REQUIREMENTS;
  const reqText = readFileSync(reqFile, "utf8");
  pinnedPackages(reqText); // a malformed file fails before anything is built
  const nodeFile = opts.nodePackageFile === undefined ? NODE_ENV_PACKAGE : opts.nodePackageFile;
  const nodeLock = nodeFile === null ? undefined : join(dirname(nodeFile), "package-lock.json");
  const nodeText = nodeFile === null ? "" : `${readFileSync(nodeFile, "utf8")}${readFileSync(nodeLock!, "utf8")}`;
  const go = opts.goStdCache === false ? undefined : detectToolchains().find((t) => t.language === "go");
  // A different Go would not use the prebuilt cache (its entries are keyed by the toolchain): rebuild for it.
  const goVersion = go === undefined ? "" : spawnSync(go.compile![0]!, ["version"], { encoding: "utf8" }).stdout ?? "";
  const goModText = go === undefined ? "" : ["go.mod", "go.sum"].map((f) => readFileSync(join(ENV_SPEC_DIR, "go", f), "utf8")).join("");
  const java = opts.javaLibraries !== false && detectToolchains().some((t) => t.language === "java");
  const jarText = java ? readFileSync(join(ENV_SPEC_DIR, "java.json"), "utf8") : "";
  const hash = requirementsHash(reqText + nodeText + goVersion + goModText + jarText);
  if (existsSync(join(dir, MARKER)) && readFileSync(join(dir, MARKER), "utf8").trim() === hash) return { installed: false, env: readPythonEnv(dir) };
  if (existsSync(dir) && !existsSync(join(dir, MARKER)) && readdirSync(dir).length > 0) {
    throw new SandboxError("python_env_exists", `${dirGiven} exists and is not an rlpipe Python environment; nothing was changed`, { hint: "remove it or choose another directory", exitCode: 2 });
  }
  const pip = findPip(python);
  mkdirSync(dirname(dir), { recursive: true });
  const partial = join(dirname(dir), `.${basename(dir)}.partial-${process.pid}`);
  rmSync(partial, { recursive: true, force: true });
  try {
    run(opts.log, python, ["-m", "venv", "--without-pip", partial], "create the virtualenv");
    run(opts.log, pip[0]!, [...pip.slice(1), "--python", join(partial, "bin", "python3"), "install", "--quiet", "--disable-pip-version-check",
      "--no-deps", "--only-binary=:all:", "--no-warn-script-location", ...(opts.pipArgs ?? []), "-r", reqFile], "install the pinned packages");
    if (nodeFile !== null) {
      // npm ci: exactly the lock's versions (package.json and the lock stay in the environment, saying what is there).
      copyFileSync(nodeFile, join(partial, "package.json"));
      copyFileSync(nodeLock!, join(partial, "package-lock.json"));
      run(opts.log, "npm", ["ci", "--prefix", partial, "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], "install the pinned Node packages", { hint: "npm needs to reach its registry" });
    }
    if (go !== undefined) {
      // The standard library built as the sandbox builds Go (GO_BUILD_ENV), so that its programs only compile their own.
      const cache = join(partial, "go-cache");
      run(opts.log, go.compile![0]!, ["build", "std"], "build Go's standard library", { env: { ...GO_BUILD_ENV, GOCACHE: cache, PATH: "/usr/bin:/bin", HOME: partial }, hint: "the Go toolchain must build its own standard library" });
      // The module go_test programs build against (testify, pinned by go.sum), downloaded into a module cache; its
      // test packages built into the cache as well.
      const mod = join(partial, "go");
      mkdirSync(mod);
      for (const f of ["go.mod", "go.sum"]) copyFileSync(join(ENV_SPEC_DIR, "go", f), join(mod, f));
      // The machine's way to the module proxy (a mirror, an HTTP proxy) is kept; nothing else of its environment.
      const reach = Object.fromEntries(["GOPROXY", "GONOPROXY", "GOPRIVATE", "GONOSUMDB", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy"]
        .flatMap((k) => (process.env[k] === undefined ? [] : [[k, process.env[k]!]])));
      const modEnv = { ...reach, ...GO_BUILD_ENV, GOCACHE: cache, PATH: "/usr/bin:/bin", HOME: partial, GOMODCACHE: join(partial, "go-mod-cache"), GO111MODULE: "on", GOFLAGS: "-mod=mod -modcacherw -buildvcs=false", GOSUMDB: "off" };
      writeFileSync(join(mod, "warm_test.go"), 'package main\n\nimport (\n\t"testing"\n\n\t"github.com/stretchr/testify/assert"\n)\n\nfunc TestWarm(t *testing.T) { assert.Equal(t, 1, 1) }\n');
      run(opts.log, go.compile![0]!, ["test", "-c", "-o", "/dev/null", "."], "download and build go_test's modules", { env: modEnv, cwd: mod, hint: "go needs to reach the module proxy (GOPROXY)" });
      rmSync(join(mod, "warm_test.go"));
      // Go trims entries unused for days, judged by this file's time: never, for entries no program can touch.
      writeFileSync(join(cache, "trim.txt"), "253402300799\n");
    }
    if (java) {
      mkdirSync(join(partial, "java"));
      fetchJars(pinnedJars(), join(partial, "java"), opts.log);
    }
    // Console scripts (pytest, …) name the interpreter by absolute path: the final one, not the build directory's.
    const bin = join(partial, "bin");
    for (const f of readdirSync(bin)) {
      const p = join(bin, f);
      if (!statSync(p).isFile()) continue;
      const text = readFileSync(p, "latin1");
      if (text.startsWith(`#!${partial}/`)) writeFileSync(p, `#!${dir}/${text.slice(partial.length + 3)}`, "latin1");
    }
    writeFileSync(join(partial, MARKER), `${hash}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } catch (e) {
    rmSync(partial, { recursive: true, force: true });
    throw e;
  }
  return { installed: true, env: readPythonEnv(dir) };
}

/** A pip that can install into another interpreter's environment (pip ≥ 22.3, --python). */
function findPip(python: string): string[] {
  for (const candidate of [[python, "-m", "pip"], ["python3", "-m", "pip"]]) {
    const r = spawnSync(candidate[0]!, [...candidate.slice(1), "--version"], { encoding: "utf8" });
    const m = /^pip (\d+)\.(\d+)/.exec(r.stdout ?? "");
    if (r.status === 0 && m !== null && (Number(m[1]) > 22 || (Number(m[1]) === 22 && Number(m[2]) >= 3))) return candidate;
  }
  throw new SandboxError("pip_missing", "building the Python environment needs pip 22.3 or newer (for --python); none was found", { hint: "apt-get install -y python3-pip" });
}

interface RunOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly cwd?: string;
  /** What the step needs to succeed, for the error's hint. */
  readonly hint?: string;
}

function run(log: ((l: string) => void) | undefined, cmd: string, args: readonly string[], what: string, o: RunOptions = {}): void {
  log?.(`${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { encoding: "utf8", maxBuffer: 64 << 20, ...(o.env === undefined ? {} : { env: { ...o.env } }), ...(o.cwd === undefined ? {} : { cwd: o.cwd }) });
  if (r.status !== 0) {
    const detail = `${r.stderr ?? ""}${r.stdout ?? ""}${r.error?.message ?? ""}`.trim().split("\n").slice(-4).join(" | ");
    throw new SandboxError("python_env_failed", `could not ${what}: ${detail}`, { exitCode: 3, hint: o.hint ?? "pip needs to reach the package index (PyPI or the mirror pip is configured for)" });
  }
}

/** Packages of the requirements that the environment lacks or has at another version ("name==want (have …)"). */
export function missingPackages(env: PythonEnv, wanted: readonly PinnedPackage[] = pinnedPackages(), wantedNode: readonly PinnedPackage[] = pinnedNodePackages()): string[] {
  const lacking = (have: readonly PinnedPackage[], want: readonly PinnedPackage[], key: (n: string) => string, what: string) => {
    const by = new Map(have.map((p) => [key(p.name), p.version]));
    return want.filter((w) => by.get(key(w.name)) !== w.version)
      .map((w) => `${what}${w.name}==${w.version}${by.has(key(w.name)) ? ` (have ${by.get(key(w.name))})` : " (missing)"}`);
  };
  return [...lacking(env.packages, wanted, normalize, ""), ...lacking(env.nodePackages, wantedNode, (n) => n, "node ")];
}
