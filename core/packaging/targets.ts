// Where each cloud-function bundle runs: per platform, the Node runtime it is built for, the module format its
// handler loader accepts, the file at the zip root and the handler setting that names it. One table, read by
// `rlpipe package` (what to build) and `rlpipe functions deploy` (what to tell the platform).
//
// Sources (read 2026-11):
// - Lambda: nodejs22.x (cfn-lint flags nodejs20.x as deprecated, E2533); a .mjs handler file is an ES module
//   (docs.aws.amazon.com/lambda/latest/dg/nodejs-handler.html, "CommonJS and ES Modules"); handler index.handler.
// - FunctionGraph: Node.js 20.15 is the newest Node runtime (support.huaweicloud.com/intl/en-us/usermanual-
//   functiongraph/functiongraph_01_0151.html); handler "[file name].[function name]" loads index.js with
//   `exports.handler` (support.huaweicloud.com/intl/en-us/devg-functiongraph/functiongraph_02_0501.html), so CommonJS.
//   The API's runtime value is "Node.js20.15" (the SDK enum, huaweicloud-sdk-nodejs-v3 3.1.209, stops at
//   Node.js18.15 but the field is a string).
// - SCF: the API's runtime list ends at Nodejs18.15 (CreateFunction, cloud.tencent.com/document/api/583/18586;
//   tencentcloud-sdk-nodejs scf_models.ts @48cf451); handler index.main_handler means index.js at the zip root with
//   `exports.main_handler` (cloud.tencent.com/document/product/583/67790), so CommonJS. Regions that offer a newer
//   Node runtime can be given one with `functions deploy --runtime`.

export const FUNCTION_PLATFORMS = ["lambda", "functiongraph", "scf"] as const;
export type FunctionPlatform = (typeof FUNCTION_PLATFORMS)[number];

export const FUNCTION_NAMES = ["reward", "runs", "console"] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

export interface PlatformTarget {
  readonly platform: FunctionPlatform;
  /** The platform's own name for its runtime (the value its API takes). */
  readonly runtime: string;
  /** esbuild's target for that runtime's Node version. */
  readonly nodeTarget: string;
  readonly format: "esm" | "cjs";
  /** The bundle's file name at the zip root. */
  readonly handlerFile: "index.mjs" | "index.js";
  /** The export the platform calls. */
  readonly handlerExport: "handler" | "main_handler";
  /** The platform's handler setting: <file without extension>.<export>. */
  readonly handler: string;
  /** Largest zip the platform takes through its API in one request, and where that is said. */
  readonly maxZipBytes: number;
  readonly maxZipSource: string;
}

const MB = 1024 * 1024;

export const PLATFORM_TARGETS: Readonly<Record<FunctionPlatform, PlatformTarget>> = {
  lambda: {
    platform: "lambda", runtime: "nodejs22.x", nodeTarget: "node22", format: "esm", handlerFile: "index.mjs",
    handlerExport: "handler", handler: "index.handler",
    maxZipBytes: 50 * MB, maxZipSource: "Lambda quotas: 50 MB zipped for a direct upload (docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html)",
  },
  functiongraph: {
    platform: "functiongraph", runtime: "Node.js20.15", nodeTarget: "node20", format: "cjs", handlerFile: "index.js",
    handlerExport: "handler", handler: "index.handler",
    maxZipBytes: 40 * MB, maxZipSource: "FunctionGraph constraints: a ZIP code package uploaded directly is at most 40 MB (support.huaweicloud.com/productdesc-functiongraph/functiongraph_01_0150.html)",
  },
  scf: {
    platform: "scf", runtime: "Nodejs18.15", nodeTarget: "node18", format: "cjs", handlerFile: "index.js",
    handlerExport: "main_handler", handler: "index.main_handler",
    maxZipBytes: 20 * MB, maxZipSource: "SCF UpdateFunctionCode: ZipFile (base64 of the zip) at most 20 MB (tencentcloud-sdk-nodejs scf_models.ts UpdateFunctionCodeRequest)",
  },
};

export function isFunctionPlatform(s: string): s is FunctionPlatform {
  return (FUNCTION_PLATFORMS as readonly string[]).includes(s);
}

export function isFunctionName(s: string): s is FunctionName {
  return (FUNCTION_NAMES as readonly string[]).includes(s);
}

/** The zip's file name for a function, e.g. rlpipe-reward-scf.zip (what `package` writes and `deploy` reads). */
export function zipFileName(platform: FunctionPlatform, fn: FunctionName): string {
  return `rlpipe-${fn}-${platform}.zip`;
}

/** The compiled entry `rlpipe package` bundles, relative to the package root. */
export function entryPath(platform: FunctionPlatform, fn: FunctionName): string {
  return `dist/functions/entries/${platform}/${fn}.js`;
}
