// rlpipe package --platform lambda|functiongraph|scf [--function F]... [--out DIR] [--json]
// Bundles each function's compiled entry for the platform (bin/function-bundle.ts), writes one zip per function and
// a manifest (rlpipe-functions.json) that `rlpipe functions deploy` reads, and prints the size report.
import { mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { RlpipeError } from "../../core/errors.js";
import {
  FUNCTION_NAMES, FUNCTION_PLATFORMS, type FunctionName, type FunctionPlatform, isFunctionName, isFunctionPlatform, zipFileName,
} from "../../core/packaging/targets.js";
import { didYouMean } from "../../core/recipe/suggest.js";
import { type BundleReport, buildFunctionBundle } from "../function-bundle.js";
import { COMMANDS, formatHelp } from "../help.js";
import type { Io } from "../io.js";
import { VERSION } from "../version.js";

export const FUNCTIONS_MANIFEST = "rlpipe-functions.json";

export interface FunctionsManifest {
  readonly generatedBy: string;
  readonly platform: FunctionPlatform;
  readonly functions: readonly (BundleReport & { readonly zip: string })[];
}

/** The default output directory of a platform's zips (and the default --zip of `functions deploy`). */
export function defaultFunctionsDir(platform: FunctionPlatform): string {
  return join(".rlpipe", "functions", platform);
}

const usageError = (message: string, hint = "run rlpipe package --help") => new RlpipeError("usage", message, { exitCode: 2, hint });

export function parsePlatform(value: string | undefined, allowed: readonly FunctionPlatform[] = FUNCTION_PLATFORMS): FunctionPlatform {
  if (value === undefined) throw usageError(`--platform is required: ${allowed.join(", ")}`);
  if (isFunctionPlatform(value) && allowed.includes(value)) return value;
  const guess = didYouMean(value, allowed);
  throw usageError(`unknown platform ${JSON.stringify(value)}${guess === undefined ? "" : `; ${guess}`}`, `platforms: ${allowed.join(", ")}`);
}

/** --function given any number of times, each possibly comma-separated; none means all three. */
export function parseFunctions(values: readonly string[] | undefined): FunctionName[] {
  const names = (values ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter((v) => v !== "");
  if (names.length === 0) return [...FUNCTION_NAMES];
  const out: FunctionName[] = [];
  for (const n of names) {
    if (!isFunctionName(n)) {
      const guess = didYouMean(n, FUNCTION_NAMES);
      throw usageError(`unknown function ${JSON.stringify(n)}${guess === undefined ? "" : `; ${guess}`}`, `functions: ${FUNCTION_NAMES.join(", ")}`);
    }
    if (!out.includes(n)) out.push(n);
  }
  return FUNCTION_NAMES.filter((n) => out.includes(n));
}

const kib = (n: number) => (n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(2)} MiB` : `${(n / 1024).toFixed(0)} KiB`);

/** The size report as text lines. */
export function formatSizeReport(outDir: string, platform: FunctionPlatform, reports: readonly BundleReport[]): string[] {
  const lines = [`rlpipe package: ${platform} → ${outDir}`];
  for (const r of reports) {
    const chunks = r.files.length - 1;
    lines.push(`  ${r.function.padEnd(8)} ${zipFileName(r.platform, r.function)}: ${kib(r.zipBytes)} zipped, ${kib(r.rawBytes)} unzipped: ${r.handlerFile}${chunks > 0 ? ` + ${chunks} chunk${chunks === 1 ? "" : "s"} loaded on demand` : ""} (${r.format}, ${r.nodeTarget}); runtime ${r.runtime}, handler ${r.handler}`);
    lines.push(`           SDKs: ${r.sdks.length === 0 ? "none" : r.sdks.map((s) => `${s.path} ${kib(s.bytes)}`).join(", ")}`);
    lines.push(`           largest: ${r.topInputs.slice(0, 5).map((i) => `${i.path} ${kib(i.bytes)}`).join(", ")}`);
    if (r.assets.length > 0) lines.push(`           embedded files: ${r.assets.join(", ")}`);
  }
  return lines;
}

/** Write bytes through a temporary sibling, so a reader never sees half a zip. */
function writeAtomic(path: string, data: Uint8Array | string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, data);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new RlpipeError("write_failed", `cannot write ${path}: ${(e as Error).message}`, { exitCode: 2, hint: "choose another --out directory" });
  }
}

export async function runPackage(argv: readonly string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args: [...argv], options: COMMANDS.package.options, allowPositionals: true, strict: true });
  if (values.help) { io.out(formatHelp("package")); return 0; }
  if (positionals.length > 0) throw usageError(`rlpipe package takes no positional arguments (got ${positionals.join(" ")})`);
  const platform = parsePlatform(values.platform);
  const functions = parseFunctions(values.function);
  const outDir = values.out ?? defaultFunctionsDir(platform);
  const built: { report: BundleReport; zip: Uint8Array }[] = [];
  // One at a time: esbuild is quick, and the machine may be shared.
  for (const fn of functions) built.push(await buildFunctionBundle({ platform, fn }));
  try {
    mkdirSync(outDir, { recursive: true });
  } catch (e) {
    throw new RlpipeError("write_failed", `cannot create ${outDir}: ${(e as Error).message}`, { exitCode: 2, hint: "choose another --out directory" });
  }
  for (const b of built) writeAtomic(join(outDir, zipFileName(platform, b.report.function)), b.zip);
  const manifest: FunctionsManifest = {
    generatedBy: `rlpipe ${VERSION}`, platform,
    functions: built.map((b) => ({ ...b.report, zip: zipFileName(platform, b.report.function) })),
  };
  writeAtomic(join(outDir, FUNCTIONS_MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
  if (values.json) io.out(JSON.stringify({ outDir, ...manifest }, null, 2));
  else for (const line of formatSizeReport(outDir, platform, built.map((b) => b.report))) io.out(line);
  return 0;
}
