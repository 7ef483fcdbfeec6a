// Writes a plan's bundle directory atomically: everything goes to a temporary sibling first and is renamed
// into place, so a reader never sees half a bundle, and a directory that is not an rlpipe bundle is never replaced.
import { chmodSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { RlpipeError } from "../core/errors.js";
import type { BundleFile } from "../core/plan.js";

export const PLAN_FILE = "rlpipe-plan.json";

export function writeBundle(outDir: string, files: readonly BundleFile[]): void {
  if (existsSync(outDir)) {
    const entries = readdirSync(outDir);
    if (entries.length > 0 && !entries.includes(PLAN_FILE)) {
      throw new RlpipeError("out_dir_not_bundle", `${outDir} exists and is not an rlpipe bundle; refusing to overwrite it`, {
        exitCode: 2, hint: "choose another --out directory, or remove this one",
      });
    }
  }
  mkdirSync(dirname(outDir), { recursive: true });
  const tmp = `${outDir}.tmp-${process.pid}-${Date.now()}`;
  try {
    for (const f of files) {
      const p = join(tmp, f.path);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, f.content, { mode: f.executable ? 0o755 : 0o644 });
      if (f.executable) chmodSync(p, 0o755);
    }
    if (existsSync(outDir)) {
      const old = `${outDir}.old-${process.pid}-${Date.now()}`;
      renameSync(outDir, old);
      renameSync(tmp, outDir);
      rmSync(old, { recursive: true, force: true });
    } else {
      renameSync(tmp, outDir);
    }
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e instanceof RlpipeError ? e : new RlpipeError("write_failed", `cannot write the bundle to ${outDir}: ${(e as Error).message}`, { cause: e });
  }
}
