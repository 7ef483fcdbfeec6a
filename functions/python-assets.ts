// The Python files rlpipe ships into every launch bundle (the reward shim, the sync sidecar and its verl tool),
// by file name. From the source tree or dist/ they are read from recipes/python/. Inside a bundle (rlpipe package,
// the CDK app's NodejsFunction) that directory is not beside the code, so the bundler defines their text:
//   esbuild … --define:__RLPIPE_PYTHON_ASSETS__=<a JSON string: base64 of the gzipped {"rlpipe_reward.py": "…", …}>
// (pythonAssetsDefine() builds that value), and nothing is read from disk at run time. The value is the files' JSON,
// gzipped and base64-encoded: a bundler that runs esbuild through a shell (the CDK's NodejsFunction) passes each
// define as one argument, and Linux caps one argument at 128 KiB (the files' plain JSON passed that cap).
import { readFileSync } from "node:fs";
import { gunzipSync, gzipSync } from "node:zlib";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { RlpipeError } from "../core/errors.js";

/** The files, in recipes/python/. */
export const PYTHON_ASSET_FILES = ["rlpipe_health.py", "rlpipe_node_sandbox.py", "rlpipe_reward.py", "rlpipe_sync.py", "rlpipe_tool.py"] as const;

/** The name a bundler defines (esbuild `define`) to the files' text; undefined outside a bundle. */
declare const __RLPIPE_PYTHON_ASSETS__: string | undefined;

/** recipes/python/ of this checkout or package (dist/functions/ → ../../recipes/python). */
export function pythonAssetsDir(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), "../../recipes/python");
}

/** Files rlpipe ships into bundles: the standard-library reward shim, sync sidecar and verl tool. */
export function bundledAssets(): Record<string, string> {
  if (typeof __RLPIPE_PYTHON_ASSETS__ !== "undefined") {
    const defined = JSON.parse(gunzipSync(Buffer.from(__RLPIPE_PYTHON_ASSETS__, "base64")).toString("utf8")) as Record<string, unknown>;
    const missing = PYTHON_ASSET_FILES.filter((f) => typeof defined[f] !== "string");
    if (missing.length > 0) throw new RlpipeError("asset_missing", `this bundle was built without ${missing.join(", ")}`, { exitCode: 4, hint: "rebuild it with pythonAssetsDefine() for __RLPIPE_PYTHON_ASSETS__" });
    return Object.fromEntries(PYTHON_ASSET_FILES.map((f) => [f, defined[f] as string]));
  }
  const dir = pythonAssetsDir();
  return Object.fromEntries(PYTHON_ASSET_FILES.map((f) => [f, readFileSync(join(dir, f), "utf8")]));
}

/** The esbuild `define` entry that embeds the files in a bundle: `{ __RLPIPE_PYTHON_ASSETS__: "<base64 of gzipped JSON>" }`. */
export function pythonAssetsDefine(dir: string = pythonAssetsDir()): Record<string, string> {
  const texts = Object.fromEntries(PYTHON_ASSET_FILES.map((f) => [f, readFileSync(join(dir, f), "utf8")]));
  return { __RLPIPE_PYTHON_ASSETS__: JSON.stringify(gzipSync(JSON.stringify(texts), { level: 9 }).toString("base64")) };
}
