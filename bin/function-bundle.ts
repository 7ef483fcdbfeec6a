// One cloud-function bundle: the compiled entry dist/functions/entries/<platform>/<fn>.js, bundled by esbuild with
// everything it imports into the single handler file its platform loads (index.mjs or index.js), minified, and
// zipped with that file at the zip root. The installed package ships dist/ (not the .ts), so the compiled entry is
// what is bundled; node_modules are found from it the usual way.
//
// Files the code reads at runtime next to itself (the e2b runner, the sandbox harness, recipes/python): modules
// find them through import.meta.url and a relative path (three levels up, then adapters/sandboxes/harness/…), a
// path that does not exist beside a bundle. So in each of our modules import.meta.url becomes a fixed URL under BUNDLE_ROOT (the same
// layout as the package), each file such a module names is embedded as text, registered before the module runs,
// and our modules' node:fs is a thin layer that answers readFileSync/existsSync for those paths from the embedded
// text (every other path goes to the real node:fs).
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { RlpipeError } from "../core/errors.js";
import { type FunctionName, type FunctionPlatform, type PlatformTarget, PLATFORM_TARGETS, entryPath } from "../core/packaging/targets.js";
import { zipFiles } from "../core/util/zip.js";

/** Where the package's files appear to be, inside a bundle. */
export const BUNDLE_ROOT = "/rlpipe-bundle";
const ASSET_REGISTRY = "rlpipe.bundledAssets";
const FS_LAYER = "rlpipe-bundle:fs";
/** esbuild's output directory (nothing is written there: write is false). */
const OUT_DIR = ".rlpipe-bundle-out";
const ASSET_PREFIX = "rlpipe-bundle-asset:";
/** Embedded files above this total are a mistake (a path reaching too far), not an asset. */
const MAX_ASSET_BYTES = 4 * 1024 * 1024;
/** The SDK families the size report names: what a bundle should carry only when it uses them. */
const SDK_FAMILIES: readonly (readonly [string, RegExp])[] = [
  ["@aws-sdk/* (with @smithy/*)", /^(@aws-sdk|@smithy)\//],
  ["e2b", /^(e2b$|@e2b\/)/],
  ["tencentcloud-sdk-nodejs-common", /^tencentcloud-sdk-/],
  ["@huaweicloud/*", /^@huaweicloud\//],
  ["undici", /^undici$/],
];

/** The rlpipe package root (where dist/ is), from this module's place in dist/bin/. */
export function packageRoot(): string {
  return resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
}

export interface BundleInput { readonly path: string; readonly bytes: number }

export interface BundleReport {
  readonly platform: FunctionPlatform;
  readonly function: FunctionName;
  readonly runtime: string;
  readonly handler: string;
  readonly handlerFile: string;
  readonly format: "esm" | "cjs";
  readonly nodeTarget: string;
  /** The bundle's size (all its files), and the zip's. */
  readonly rawBytes: number;
  /** The files in the zip: the handler file, and on Lambda the chunks it imports on demand. */
  readonly files: readonly BundleInput[];
  readonly zipBytes: number;
  /** sha256 of the zip (hex). */
  readonly sha256: string;
  /** Bytes each npm package contributes to the handler file, largest first. */
  readonly packages: readonly BundleInput[];
  /** The cloud SDK families among them, with their bytes (largest first). */
  readonly sdks: readonly BundleInput[];
  /** The SDK families in the handler file itself (read at every cold start; the rest of `sdks` is in chunks loaded on demand). */
  readonly entrySdks: readonly BundleInput[];
  /** The largest single inputs (paths relative to the package root, or node_modules/…). */
  readonly topInputs: readonly BundleInput[];
  /** Files embedded for reading at runtime (package-relative). */
  readonly assets: readonly string[];
}

export interface BuiltBundle {
  readonly report: BundleReport;
  readonly zip: Uint8Array;
}

export interface BundleOptions {
  readonly platform: FunctionPlatform;
  readonly fn: FunctionName;
  /** The rlpipe package root (default: the one this module belongs to). */
  readonly root?: string;
  /** How many inputs the report names (default 10). */
  readonly topInputs?: number;
}

type Esbuild = typeof import("esbuild");
type Plugin = import("esbuild").Plugin;
type Metafile = import("esbuild").Metafile;

const isWithin = (child: string, parent: string) => child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
const toPosix = (p: string) => p.split(sep).join("/");

/** A report path: package-relative for our files, from node_modules/ on for a dependency. */
function displayPath(metaPath: string, root: string): string {
  const abs = resolve(root, metaPath);
  // Installed, the package itself is under node_modules/rlpipe and its dependencies are its siblings (../e2b/…).
  if (isOurs(abs, root)) return toPosix(relative(root, abs));
  const posix = toPosix(abs);
  const nm = posix.lastIndexOf("node_modules/");
  return nm >= 0 ? posix.slice(nm) : toPosix(relative(root, abs));
}

/** A file of this package (not of a dependency), wherever the package is: a checkout or node_modules/rlpipe. */
function isOurs(file: string, root: string): boolean {
  return isWithin(file, root) && !relative(root, file).split(sep).includes("node_modules");
}

function packageOf(display: string): string | undefined {
  if (!display.startsWith("node_modules/")) return undefined;
  const parts = display.slice("node_modules/".length).split("/");
  return parts[0]!.startsWith("@") ? `${parts[0]}/${parts[1]}` : parts[0];
}

/**
 * The package files a module reaches through a relative string literal (up some levels, then e.g. recipes/python): files, or the
 * regular files directly in a directory. Only paths inside the package and outside dist/ and node_modules count.
 */
export function assetsNamedBy(file: string, source: string, root: string): string[] {
  const found = new Set<string>();
  for (const m of source.matchAll(/["'`]((?:\.\.\/)+[^"'`$\s]+)["'`]/g)) {
    const target = resolve(dirname(file), m[1]!);
    if (!isWithin(target, root) || target === root) continue;
    const rel = toPosix(relative(root, target));
    if (rel.startsWith("dist/") || rel.startsWith("node_modules/") || rel.split("/").includes("node_modules")) continue;
    if (!existsSync(target)) {
      throw new RlpipeError("package_asset_missing", `${toPosix(relative(root, file))} reads ${rel} at runtime, which is not in the package at ${root}`, {
        exitCode: 2, hint: "the installed rlpipe package is incomplete; reinstall it (or, in a checkout, restore the file)",
      });
    }
    const st = statSync(target);
    if (st.isFile()) found.add(rel);
    else if (st.isDirectory()) {
      for (const e of readdirSync(target, { withFileTypes: true })) {
        if (e.isFile() && !e.name.startsWith(".")) found.add(`${rel}/${e.name}`);
      }
    }
  }
  return [...found].sort();
}

/** Dynamic imports of a computed specifier: a bundler cannot follow them, and nothing beside the bundle can answer. */
function computedImports(source: string): number[] {
  const lines: number[] = [];
  source.split("\n").forEach((line, i) => {
    if (/\bimport\(\s*(?!["'`])[^)\s]/.test(line) && !/^\s*(\/\/|\*)/.test(line)) lines.push(i + 1);
  });
  return lines;
}

const FS_LAYER_SOURCE = `
import * as fs from "node:fs";
import { fileURLToPath } from "node:url";
export * from "node:fs";
const assets = () => globalThis[Symbol.for(${JSON.stringify(ASSET_REGISTRY)})] ?? new Map();
const key = (p) => (typeof p === "string" ? p : p instanceof URL ? fileURLToPath(p) : undefined);
export function readFileSync(p, options) {
  const k = key(p);
  const text = k === undefined ? undefined : assets().get(k);
  if (text === undefined) return fs.readFileSync(p, options);
  const encoding = typeof options === "string" ? options : options?.encoding;
  return encoding ? text : Buffer.from(text, "utf8");
}
export function existsSync(p) {
  const k = key(p);
  if (k !== undefined && (assets().has(k) || [...assets().keys()].some((a) => a.startsWith(k + "/")))) return true;
  return fs.existsSync(p);
}
export default { ...fs, readFileSync, existsSync };
`;

/**
 * In a split ES module bundle, a dynamic import of a CommonJS package yields a chunk whose namespace holds only
 * `default`, where Node (and a CommonJS bundle) would give the package's named exports: such imports of packages
 * become a require of the package inside a promise. The names are kept and the package still runs only when
 * imported; it is bundled into the importing module's chunk (our modules that import packages on demand are
 * themselves imported on demand, so they and their packages stay out of the entry chunk).
 */
export function requirePackagesLazily(source: string): string {
  return source.replace(/\bimport\(\s*"([^".][^"]*)"\s*\)/g, (m, spec: string) => (spec.startsWith("node:") ? m : `Promise.resolve().then(() => require(${JSON.stringify(spec)}))`));
}

/** The esbuild plugin that makes our modules' runtime files travel inside the bundle (see the header). */
export function runtimeFilesPlugin(root: string, embedded: Set<string>, opts: { splitEsm?: boolean } = {}): Plugin {
  const dist = join(root, "dist");
  return {
    name: "rlpipe-runtime-files",
    setup(build) {
      build.onLoad({ filter: /\.js$/ }, (args) => {
        if (!isWithin(args.path, dist) || !isOurs(args.path, root)) return undefined;
        let source = readFileSync(args.path, "utf8");
        const computed = computedImports(source);
        if (computed.length > 0) {
          throw new RlpipeError("package_computed_import", `${toPosix(relative(root, args.path))}:${computed.join(",")}: import() of a computed module name cannot be bundled`, {
            exitCode: 4, hint: "this is a bug in rlpipe: import a string literal instead",
          });
        }
        if (opts.splitEsm === true) source = requirePackagesLazily(source);
        if (!source.includes("import.meta.url")) return { contents: source, loader: "js" };
        const rel = toPosix(relative(root, args.path));
        const assets = assetsNamedBy(args.path, source, root);
        for (const a of assets) embedded.add(a);
        source = source.split("import.meta.url").join(JSON.stringify(`file://${BUNDLE_ROOT}/${rel}`));
        // Registered by imports, so before this module's body runs (imports are evaluated first, in order).
        source += `\n${assets.map((a) => `import ${JSON.stringify(ASSET_PREFIX + a)};`).join("\n")}\n`;
        return { contents: source, loader: "js" };
      });
      build.onResolve({ filter: /^(node:)?fs$/ }, (args) => {
        if (!isWithin(args.importer, dist) || !isOurs(args.importer, root)) return undefined;
        return { path: FS_LAYER, namespace: "rlpipe-bundle" };
      });
      build.onResolve({ filter: new RegExp(`^${ASSET_PREFIX}`) }, (args) => ({ path: args.path, namespace: "rlpipe-bundle" }));
      build.onLoad({ filter: /.*/, namespace: "rlpipe-bundle" }, (args) => {
        if (args.path === FS_LAYER) return { contents: FS_LAYER_SOURCE, loader: "js", resolveDir: root };
        const rel = args.path.slice(ASSET_PREFIX.length);
        const text = readFileSync(join(root, rel), "utf8");
        return {
          contents: `(globalThis[Symbol.for(${JSON.stringify(ASSET_REGISTRY)})] ??= new Map()).set(${JSON.stringify(`${BUNDLE_ROOT}/${rel}`)}, ${JSON.stringify(text)});\n`,
          loader: "js", resolveDir: root,
        };
      });
    },
  };
}

/** ESM output still holds CommonJS dependencies: they get `require`, `__filename` and `__dirname` back. */
const ESM_BANNER = [
  'import { createRequire as __rlpipeCreateRequire } from "node:module";',
  'import { fileURLToPath as __rlpipeFileURLToPath } from "node:url";',
  'import { dirname as __rlpipeDirname } from "node:path";',
  "const require = __rlpipeCreateRequire(import.meta.url);",
  "const __filename = __rlpipeFileURLToPath(import.meta.url);",
  "const __dirname = __rlpipeDirname(__filename);",
].join("\n");

function loadEsbuild(): Promise<Esbuild> {
  return import("esbuild").catch((e: unknown) => {
    throw new RlpipeError("esbuild_missing", `cannot load esbuild: ${e instanceof Error ? e.message : String(e)}`, {
      exitCode: 2, hint: "esbuild is a dependency of rlpipe: reinstall rlpipe (npm ci), and check that its platform binary was installed",
    });
  });
}

interface EsbuildFailure { errors?: { text: string; location?: { file: string; line: number } | null; detail?: unknown }[] }

function buildFailure(e: unknown, platform: FunctionPlatform, fn: FunctionName): RlpipeError {
  if (e instanceof RlpipeError) return e;
  const errors = (e as EsbuildFailure).errors ?? [];
  const inner = errors.map((x) => x.detail).find((d) => d instanceof RlpipeError);
  if (inner instanceof RlpipeError) return inner;
  const lines = errors.slice(0, 5).map((x) => `${x.location ? `${x.location.file}:${x.location.line}: ` : ""}${x.text}`);
  const text = lines.length > 0 ? lines.join("\n  ") : e instanceof Error ? e.message : String(e);
  const unresolved = errors.length > 0 && errors.every((x) => x.text.startsWith("Could not resolve"));
  return new RlpipeError("package_build_failed", `esbuild could not bundle the ${fn} function for ${platform}:\n  ${text}`, unresolved
    ? { exitCode: 2, hint: "a dependency is missing: install rlpipe's dependencies (npm ci) and run the command again" }
    : { exitCode: 4, hint: "this is a bug in rlpipe; please report it with the command you ran" });
}

function summarize(meta: Metafile, root: string, top: number, only?: (outputPath: string) => boolean): { packages: BundleInput[]; topInputs: BundleInput[] } {
  const byInput = new Map<string, number>();
  for (const [outPath, output] of Object.entries(meta.outputs)) {
    if (only !== undefined && !only(outPath)) continue;
    for (const [p, v] of Object.entries(output.inputs)) {
      if (p.startsWith("rlpipe-bundle:")) continue;
      const d = displayPath(p, root);
      byInput.set(d, (byInput.get(d) ?? 0) + v.bytesInOutput);
    }
  }
  const byPackage = new Map<string, number>();
  for (const [d, bytes] of byInput) {
    const pkg = packageOf(d);
    if (pkg !== undefined) byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + bytes);
  }
  const sorted = (m: Map<string, number>) => [...m].map(([path, bytes]) => ({ path, bytes })).filter((x) => x.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes || (a.path < b.path ? -1 : 1));
  return { packages: sorted(byPackage), topInputs: sorted(byInput).slice(0, top) };
}

function sdkFamilies(packages: readonly BundleInput[]): BundleInput[] {
  const out: BundleInput[] = [];
  for (const [family, re] of SDK_FAMILIES) {
    const bytes = packages.filter((p) => re.test(p.path)).reduce((n, p) => n + p.bytes, 0);
    if (bytes > 0) out.push({ path: family, bytes });
  }
  return out.sort((a, b) => b.bytes - a.bytes);
}

/** Bundle and zip one function for one platform. Deterministic: the same dist/ and node_modules give the same zip. */
export async function buildFunctionBundle(opts: BundleOptions): Promise<BuiltBundle> {
  const root = opts.root ?? packageRoot();
  const target: PlatformTarget = PLATFORM_TARGETS[opts.platform];
  const entry = join(root, entryPath(opts.platform, opts.fn));
  if (!existsSync(entry)) {
    throw new RlpipeError("package_entry_missing", `the compiled ${opts.fn} entry for ${opts.platform} is not at ${entry}`, {
      exitCode: 2, hint: "build first (npm run build, i.e. tsc -p tsconfig.json): rlpipe package bundles the compiled dist/ files",
    });
  }
  const esbuild = await loadEsbuild();
  const embedded = new Set<string>();
  let result: Awaited<ReturnType<Esbuild["build"]>>;
  try {
    result = await esbuild.build({
      entryPoints: [entry],
      absWorkingDir: root,
      bundle: true,
      platform: "node",
      target: target.nodeTarget,
      format: target.format,
      outdir: join(root, OUT_DIR),
      entryNames: "index",
      write: false,
      minify: true,
      metafile: true,
      legalComments: "eof",
      charset: "utf8",
      logLevel: "silent",
      plugins: [runtimeFilesPlugin(root, embedded, { splitEsm: target.format === "esm" })],
      // ES modules can be split: what is only imported on demand (the sandbox SDK a configuration does not use) is
      // its own chunk, never read unless needed — a cold start parses about a third of the code. CommonJS cannot.
      ...(target.format === "esm" ? { banner: { js: ESM_BANNER }, splitting: true, chunkNames: "chunks/[name]-[hash]", outExtension: { ".js": ".mjs" } } : {}),
    });
  } catch (e) {
    throw buildFailure(e, opts.platform, opts.fn);
  }
  const outputs = (result.outputFiles ?? []).map((f) => ({ path: toPosix(relative(join(root, OUT_DIR), f.path)), data: f.contents }))
    .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  if (!outputs.some((f) => f.path === target.handlerFile)) throw new RlpipeError("package_build_failed", `esbuild wrote no ${target.handlerFile} for ${opts.fn}/${opts.platform}`, { exitCode: 4 });
  const zip = zipFiles(outputs);
  if (zip.length > target.maxZipBytes) {
    throw new RlpipeError("package_too_large", `the ${opts.fn} bundle for ${opts.platform} is ${zip.length} bytes zipped, above the platform's ${target.maxZipBytes}`, {
      exitCode: 1, hint: target.maxZipSource,
    });
  }
  const { packages, topInputs } = summarize(result.metafile!, root, opts.topInputs ?? 10);
  const handlerFileInputs = summarize(result.metafile!, root, 0, (o) => toPosix(relative(OUT_DIR, o)) === target.handlerFile);
  const assetBytes = [...embedded].reduce((n, a) => n + statSync(join(root, a)).size, 0);
  if (assetBytes > MAX_ASSET_BYTES) {
    throw new RlpipeError("package_assets_too_large", `${opts.fn}/${opts.platform} would embed ${assetBytes} bytes of package files (${[...embedded].join(", ")})`, { exitCode: 4, hint: "this is a bug in rlpipe" });
  }
  return {
    zip,
    report: {
      platform: opts.platform, function: opts.fn, runtime: target.runtime, handler: target.handler, handlerFile: target.handlerFile,
      format: target.format, nodeTarget: target.nodeTarget,
      rawBytes: outputs.reduce((n, f) => n + f.data.length, 0), files: outputs.map((f) => ({ path: f.path, bytes: f.data.length })), zipBytes: zip.length, sha256: createHash("sha256").update(zip).digest("hex"),
      packages, sdks: sdkFamilies(packages), entrySdks: sdkFamilies(handlerFileInputs.packages), topInputs,
      assets: [...embedded].sort(),
    },
  };
}
