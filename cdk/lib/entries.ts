// Where the Lambda entry files and the lock file NodejsFunction needs are, for this repository and for an installed
// package alike. The compiled constructs live in dist/cdk/lib/ and the compiled entries in dist/functions/entries/
// lambda/, so "two directories up, then functions/…" finds the entries in both layouts; run from the TypeScript
// sources (tsx), the same two steps reach the repository root and its .ts entries.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { RlpipeError } from "../../core/errors.js";
import { pythonAssetsDefine } from "../../functions/python-assets.js";

/** The functions rlpipe deploys to Lambda, one entry file each (functions/entries/lambda/<name>.ts). */
export type LambdaFunctionName = "reward" | "runs" | "console";

/** dist/ when running compiled (repository or installed package), the repository root when running from sources. */
const CODE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The package root (package.json, adapters/, recipes/): CODE_ROOT when running from sources, its parent from dist/. */
const PACKAGE_ROOT = existsSync(join(CODE_ROOT, "package.json")) ? CODE_ROOT : dirname(CODE_ROOT);

/** The lock files NodejsFunction accepts, in its own order of preference. */
const LOCK_FILES = ["pnpm-lock.yaml", "yarn.lock", "bun.lockb", "bun.lock", "package-lock.json"] as const;

/** The entry file of one function: the compiled .js (dist/ layout) or, from sources, the .ts. */
export function lambdaEntry(name: LambdaFunctionName, codeRoot: string = CODE_ROOT): string {
  const dir = join(codeRoot, "functions", "entries", "lambda");
  for (const file of [join(dir, `${name}.js`), join(dir, `${name}.ts`)]) if (existsSync(file)) return file;
  throw new RlpipeError("cdk_entry_missing", `the Lambda entry of the ${name} function is missing: neither ${name}.js nor ${name}.ts in ${dir}`, {
    exitCode: 2,
    hint: "build rlpipe first (npm run build); an installed rlpipe ships dist/functions/entries/lambda/",
  });
}

/**
 * The lock file nearest above `from` (the entry's directory). NodejsFunction looks upward from the working directory
 * instead; starting at the entry makes the answer the same wherever `cdk` is run: this repository's
 * package-lock.json, or — rlpipe installed under node_modules — the lock file of the project that installed it.
 */
export function findLockFile(from: string): string {
  for (let dir = resolve(from); ; dir = dirname(dir)) {
    const found = LOCK_FILES.map((f) => join(dir, f)).filter((f) => existsSync(f));
    if (found.length === 1) return found[0]!;
    if (found.length > 1) {
      throw new RlpipeError("cdk_lock_file_ambiguous", `several lock files in ${dir}: ${found.join(", ")}`, { exitCode: 2, hint: "pass depsLockFilePath to choose one" });
    }
    if (dirname(dir) === dir) {
      throw new RlpipeError("cdk_lock_file_missing", `no lock file (${LOCK_FILES.join(", ")}) in ${resolve(from)} or any directory above it`, {
        exitCode: 2, hint: "NodejsFunction needs the project's lock file: run npm install (or pass depsLockFilePath)",
      });
    }
  }
}

/**
 * esbuild defines that embed the files the function code reads at run time beside itself — a single-file bundle
 * has nothing beside it: the E2B runner (adapters/sandboxes/harness/e2b_runner.py, sent into every E2B sandbox)
 * and the Python shims a deploy ships into the launch bundle (recipes/python, functions/python-assets.ts). Each
 * reading module prefers the defined text (see its `declare const`).
 */
export function runtimeFileDefines(packageRoot: string = PACKAGE_ROOT): Record<string, string> {
  const runner = join(packageRoot, "adapters", "sandboxes", "harness", "e2b_runner.py");
  if (!existsSync(runner)) {
    throw new RlpipeError("cdk_runtime_file_missing", `${runner} is missing: the functions send it into every E2B sandbox`, { exitCode: 2, hint: "reinstall rlpipe (the package ships adapters/sandboxes/harness/)" });
  }
  return { __RLPIPE_E2B_RUNNER__: JSON.stringify(readFileSync(runner, "utf8")), ...pythonAssetsDefine(join(packageRoot, "recipes", "python")) };
}

/**
 * Checks that esbuild (a dependency of rlpipe) resolves from the bundling project root, where NodejsFunction runs
 * it; without it CDK would quietly bundle in a Docker container instead, which CI does not have.
 */
export function requireLocalEsbuild(projectRoot: string): void {
  try {
    createRequire(join(projectRoot, "package.json")).resolve("esbuild");
  } catch {
    throw new RlpipeError("cdk_esbuild_missing", `esbuild does not resolve from ${projectRoot}, where the Lambda bundles are built`, {
      exitCode: 2, hint: "install the project's dependencies (npm ci): esbuild comes with rlpipe; CDK would otherwise need Docker to bundle",
    });
  }
}
