// rlpipe functions deploy --platform functiongraph|scf [--function F]... [--region R] [--name-prefix P] [--zip DIR]
//   [--env K=V]... [--vars-file FILE] [--secret NAME]... [--runtime R] [--memory-mb MB] [--timeout-s S] [--dry-run] [--json]
// Creates or updates the functions `rlpipe package` zipped, one at a time: find by name; create when missing (a
// create refused because the name is taken, or whose reply was lost, is followed by a lookup, never by a second
// create); otherwise upload the code only when the zip changed, and write the configuration only when something
// changed (core/packaging/deploy-spec.ts). A function that fails does not stop the others; the exit code is the
// worst one.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { RlpipeError } from "../../core/errors.js";
import {
  DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT_S, type DeployAction, type DesiredFunction, type FunctionSettings, checkFunctionGraphUserData, checkMemory, checkTimeout,
  configFingerprint, decide, describeFunction, functionNameFor, parseEnvAssignment, parseEnvFile, sha256Hex,
} from "../../core/packaging/deploy-spec.js";
import { type FunctionName, type FunctionPlatform, PLATFORM_TARGETS, zipFileName } from "../../core/packaging/targets.js";
import { Redactor, isSecretName } from "../../core/redact.js";
import type { DeployedFunction, FunctionSpec, FunctionsApi } from "../../adapters/providers/functions-api.js";
import { FunctionsApiError } from "../../adapters/providers/functions-api.js";
import { COMMANDS, formatHelp } from "../help.js";
import { type Io, describeError } from "../io.js";
import { FUNCTIONS_MANIFEST, type FunctionsManifest, defaultFunctionsDir, parseFunctions, parsePlatform } from "./package.js";
import { type WantedTrigger, wantedTriggers } from "../../core/packaging/triggers.js";
import { type TriggerResult, checkHttpRoutes, checkRole, reconcileTriggers } from "./functions-triggers.js";

type Env = Readonly<Record<string, string | undefined>>;

const usage = (message: string, hint = "run rlpipe functions --help") => new RlpipeError("usage", message, { exitCode: 2, hint });

/**
 * What each function cannot start without (its cold start fails and answers 503). Deploy writes the whole
 * environment, so a variable set by hand in the console is replaced: saying what is missing here saves a broken
 * function. Sandbox-specific keys (E2B_API_KEY, RLPIPE_SCALEBOX_URL) depend on RLPIPE_SANDBOX and are checked there.
 */
export const REQUIRED_VARIABLES: Readonly<Record<FunctionName, readonly string[]>> = {
  reward: ["RLPIPE_SANDBOX", "RLPIPE_SANDBOX_TOKEN"],
  runs: ["RLPIPE_RUNS_STORE", "RLPIPE_RUNS_SECRET"],
  console: ["RLPIPE_STATE_STORE"],
};

/** One warning line per function whose environment lacks a variable it needs at cold start. */
export function missingVariables(functions: readonly FunctionName[], names: ReadonlySet<string>): string[] {
  const lines: string[] = [];
  for (const fn of functions) {
    const missing = REQUIRED_VARIABLES[fn].filter((v) => !names.has(v));
    if (missing.length > 0) lines.push(`rlpipe functions deploy: warning: ${fn} will not start without ${missing.join(" and ")} (pass --env NAME=VALUE, --secret NAME or --vars-file; deploy replaces the function's whole environment)`);
  }
  return lines;
}

export interface DeployResult {
  readonly function: FunctionName;
  readonly name: string;
  /** created, updated, unchanged; in a dry run: create, update or "create or update". */
  readonly action: string;
  readonly codeUploaded?: boolean;
  readonly settingsChanged?: boolean;
  readonly id?: string;
  readonly triggers?: readonly TriggerResult[];
  readonly error?: ReturnType<typeof describeError>;
}

interface Inputs {
  readonly platform: "functiongraph" | "scf";
  readonly functions: readonly FunctionName[];
  readonly zips: ReadonlyMap<FunctionName, Uint8Array>;
  readonly settings: ReadonlyMap<FunctionName, FunctionSettings>;
  readonly names: ReadonlyMap<FunctionName, string>;
}

/** The functions the manifest in `dir` lists, in the usual order; undefined without a readable manifest. */
function packagedFunctions(dir: string): FunctionName[] | undefined {
  try {
    const listed = (JSON.parse(readFileSync(join(dir, FUNCTIONS_MANIFEST), "utf8")) as FunctionsManifest).functions.map((f) => f.function);
    const known = parseFunctions(listed);
    return known.length > 0 ? known : undefined;
  } catch {
    return undefined;
  }
}

/** The zips `rlpipe package` wrote for these functions, checked against its manifest and the platform's limit. */
function readZips(dir: string, platform: FunctionPlatform, functions: readonly FunctionName[]): Map<FunctionName, Uint8Array> {
  const again = `run rlpipe package --platform ${platform}${dir === defaultFunctionsDir(platform) ? "" : ` --out ${dir}`} first`;
  const manifestPath = join(dir, FUNCTIONS_MANIFEST);
  let manifest: FunctionsManifest | undefined;
  if (existsSync(manifestPath)) {
    try { manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as FunctionsManifest; } catch (e) {
      throw new RlpipeError("functions_manifest_invalid", `${manifestPath} is not a readable package manifest: ${(e as Error).message}`, { exitCode: 2, hint: again });
    }
    if (manifest.platform !== platform) throw new RlpipeError("functions_wrong_platform", `${dir} holds zips for ${manifest.platform}, not ${platform}`, { exitCode: 2, hint: again });
  }
  const target = PLATFORM_TARGETS[platform];
  const out = new Map<FunctionName, Uint8Array>();
  for (const fn of functions) {
    const file = join(dir, zipFileName(platform, fn));
    if (!existsSync(file)) throw new RlpipeError("functions_zip_missing", `no ${fn} zip for ${platform} at ${file}`, { exitCode: 2, hint: again });
    const zip = new Uint8Array(readFileSync(file));
    const listed = manifest?.functions.find((f) => f.function === fn);
    if (listed !== undefined && listed.sha256 !== sha256Hex(zip)) {
      throw new RlpipeError("functions_zip_changed", `${file} is not the zip ${FUNCTIONS_MANIFEST} lists (its sha256 differs)`, { exitCode: 2, hint: again });
    }
    if (zip.length > target.maxZipBytes) {
      throw new RlpipeError("functions_zip_too_large", `${file} is ${zip.length} bytes, above ${platform}'s ${target.maxZipBytes}`, { exitCode: 2, hint: target.maxZipSource });
    }
    out.set(fn, zip);
  }
  return out;
}

/** Environment and secrets for the functions: --vars-file, then --env (later wins), then --secret NAME from `env`. */
export function functionEnvironment(values: { env?: readonly string[]; "vars-file"?: string; secret?: readonly string[] }, env: Env): { env: Record<string, string>; secrets: Record<string, string> } {
  const all: Record<string, string> = {};
  const declaredSecret = new Set<string>();
  const file = values["vars-file"];
  if (file !== undefined) {
    let text: string;
    try { text = readFileSync(file, "utf8"); } catch (e) {
      throw usage(`cannot read --vars-file ${file}: ${(e as Error).message}`);
    }
    Object.assign(all, parseEnvFile(text, file));
  }
  for (const a of values.env ?? []) {
    const [k, v] = parseEnvAssignment(a, "--env");
    all[k] = v;
  }
  for (const name of values.secret ?? []) {
    const v = env[name];
    if (v === undefined || v === "") throw usage(`--secret ${name}: $${name} is not set in this shell`, `export ${name}=… before running the command`);
    all[name] = v;
    declaredSecret.add(name);
  }
  const plain: Record<string, string> = {};
  const secrets: Record<string, string> = {};
  for (const [k, v] of Object.entries(all)) (declaredSecret.has(k) || isSecretName(k) ? secrets : plain)[k] = v;
  return { env: plain, secrets };
}

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n)) throw usage(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  return n;
}

async function openApi(platform: "functiongraph" | "scf", env: Env, region: string | undefined, values: { namespace?: string | undefined; app?: string | undefined; "apig-group"?: string | undefined; apigInstance?: string | undefined }): Promise<{ api: FunctionsApi; key: string; secrets: string[] }> {
  if (platform === "functiongraph") {
    const { FunctionGraphFunctions, resolveFunctionGraphConfig } = await import("../../adapters/providers/functiongraph-functions.js");
    const config = resolveFunctionGraphConfig(env, { region });
    const c = config.credentials;
    return { api: new FunctionGraphFunctions(config, values.app ?? "default", { apigGroup: values["apig-group"], apigInstance: values.apigInstance }), key: c.sk, secrets: [c.ak, c.sk, ...(c.securityToken === undefined ? [] : [c.securityToken])] };
  }
  const scfRegion = region ?? (env["TENCENTCLOUD_REGION"]?.trim() || undefined);
  if (scfRegion === undefined) throw usage("SCF needs a region: pass --region (e.g. ap-shanghai) or set TENCENTCLOUD_REGION");
  const { ScfFunctions } = await import("../../adapters/providers/scf-functions.js");
  const { resolveTioneCredentials } = await import("../../adapters/providers/tione.js");
  const creds = await resolveTioneCredentials(env, "SCF");
  const api = new ScfFunctions({ env, region: scfRegion, ...(values.namespace === undefined ? {} : { namespace: values.namespace }) });
  await api.credentialsReady();
  return { api, key: creds.secretKey, secrets: [creds.secretId, creds.secretKey, ...(creds.token === undefined ? [] : [creds.token])] };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Repeat an idempotent call (a lookup, a PUT of code or configuration) when the failure says it may help. */
async function repeatable<T>(io: Io, what: string, fn: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      const again = e instanceof FunctionsApiError && (e.kind === "retryable" || e.kind === "ambiguous" || e.kind === "busy");
      if (!again || i >= attempts) throw e;
      const delayMs = Math.round(500 * 2 ** (i - 1) * (0.5 + Math.random() / 2));
      io.err(`rlpipe: ${what}: ${(e as Error).message}; retrying in ${(delayMs / 1000).toFixed(1)} s (attempt ${i + 1})`);
      await sleep(delayMs);
    }
  }
}

/** Exactly one function per name: after a create that may have happened, look before creating again. */
async function createOnce(io: Io, api: FunctionsApi, spec: FunctionSpec): Promise<{ fn: DeployedFunction; created: boolean }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return { fn: await api.create(spec), created: true };
    } catch (e) {
      if (!(e instanceof FunctionsApiError)) throw e;
      if (e.kind === "exists" || e.kind === "ambiguous") {
        const found = await repeatable(io, `${api.platform} lookup of ${spec.name}`, () => api.find(spec.name));
        if (found !== undefined) return { fn: found, created: e.kind === "ambiguous" };
        if (e.kind === "exists") throw e;
      }
      if (!(e.kind === "retryable" || e.kind === "ambiguous") || attempt >= 3) throw e;
      io.err(`rlpipe: ${api.platform} create ${spec.name}: ${e.message}; trying again (attempt ${attempt + 1})`);
      await sleep(500 * attempt);
    }
  }
}

async function deployOne(io: Io, api: FunctionsApi, desired: DesiredFunction, zip: Uint8Array): Promise<DeployResult> {
  const spec: FunctionSpec = { ...desired, zip };
  const base = { function: desired.function, name: desired.name };
  const existing = await repeatable(io, `${api.platform} lookup of ${desired.name}`, () => api.find(desired.name));
  let action: DeployAction = decide(desired, existing);
  let fn = existing;
  if (action.kind === "create") {
    const made = await createOnce(io, api, spec);
    fn = made.fn;
    await repeatable(io, `${api.platform} status of ${desired.name}`, () => api.settle(made.fn));
    if (made.created) return { ...base, action: "created", codeUploaded: true, settingsChanged: true, id: made.fn.id };
    // It existed after all (another deploy made it): bring it up to date like any existing function.
    action = decide(desired, made.fn);
  }
  if (action.kind === "unchanged" || action.kind === "create") return { ...base, action: "unchanged", codeUploaded: false, settingsChanged: false, id: fn!.id };
  if (action.code) {
    await repeatable(io, `${api.platform} code upload of ${desired.name}`, () => api.updateCode(fn!, spec));
    await repeatable(io, `${api.platform} status of ${desired.name}`, () => api.settle(fn!));
  }
  // The configuration carries the description with the code marker: it is written last, once the code is in.
  await repeatable(io, `${api.platform} configuration of ${desired.name}`, () => api.updateConfig(fn!, spec));
  await repeatable(io, `${api.platform} status of ${desired.name}`, () => api.settle(fn!));
  return { ...base, action: "updated", codeUploaded: action.code, settingsChanged: action.settings, id: fn!.id };
}

function desiredOf(inputs: Inputs, fn: FunctionName, key: string | undefined): DesiredFunction {
  const s = inputs.settings.get(fn)!;
  const zipSha256 = sha256Hex(inputs.zips.get(fn)!);
  const fingerprint = key === undefined ? "0000000000000000" : configFingerprint(key, s);
  return { ...s, function: fn, name: inputs.names.get(fn)!, zipSha256, configFingerprint: fingerprint, description: describeFunction(fn, zipSha256, fingerprint) };
}

function formatResult(r: DeployResult): string {
  if (r.error !== undefined) return `  ${r.function.padEnd(8)} ${r.name}: FAILED: ${r.error.message}${r.error.hint === undefined ? "" : `\n           hint: ${r.error.hint}`}`;
  const what = r.action === "updated" ? `updated (${[r.codeUploaded ? "code" : "", "configuration"].filter((x) => x !== "").join(" and ")})` : r.action;
  const triggers = (r.triggers ?? []).map((t) => `\n           trigger ${t.trigger}: ${t.action}${t.duplicatesDeleted === undefined ? "" : ` (${t.duplicatesDeleted} duplicate${t.duplicatesDeleted === 1 ? "" : "s"} deleted)`}`).join("");
  return `  ${r.function.padEnd(8)} ${r.name}: ${what}${r.id === undefined ? "" : ` [${r.id}]`}${triggers}`;
}

/**
 * The old spelling, --env-file, is Node's own option: Node ≥ 20 takes it from anywhere on the command line, exits 9
 * when the file is missing (rlpipe never runs) and otherwise loads the file into rlpipe's own environment. When it
 * does reach rlpipe, it is refused rather than read twice.
 */
function refuseEnvFile(argv: readonly string[]): void {
  const i = argv.findIndex((a) => a === "--env-file" || a.startsWith("--env-file="));
  if (i < 0) return;
  const file = argv[i]!.startsWith("--env-file=") ? argv[i]!.slice("--env-file=".length) : argv[i + 1] ?? "FILE";
  throw usage(`--env-file is Node's own option (Node loaded ${file} into rlpipe's environment before rlpipe started): use --vars-file ${file}`,
    "rlpipe functions deploy --vars-file FILE (KEY=VALUE lines); a missing --env-file makes Node exit 9 before rlpipe runs");
}

export async function runFunctions(argv: readonly string[], io: Io, env: Env = process.env): Promise<number> {
  refuseEnvFile(argv);
  const { values, positionals } = parseArgs({ args: [...argv], options: COMMANDS.functions.options, allowPositionals: true, strict: true });
  if (values.help) { io.out(formatHelp("functions")); return 0; }
  const [sub, ...extra] = positionals;
  if (sub !== "deploy") throw usage(sub === undefined ? "rlpipe functions needs a subcommand: deploy" : `unknown functions subcommand ${JSON.stringify(sub)} (known: deploy)`);
  if (extra.length > 0) throw usage(`rlpipe functions deploy takes no further arguments (got ${extra.join(" ")})`);
  if (values.platform === "lambda") throw usage("Lambda functions are deployed by the CDK app (cdk/), not by rlpipe functions deploy", "cd cdk && npx cdk deploy; or --platform functiongraph|scf");
  const platform = parsePlatform(values.platform, ["functiongraph", "scf"]) as "functiongraph" | "scf";
  const zipDir = values.zip ?? defaultFunctionsDir(platform);
  // Without --function: what `rlpipe package` put there (its manifest), else all three.
  const functions = values.function === undefined ? packagedFunctions(zipDir) ?? parseFunctions(undefined) : parseFunctions(values.function);
  const target = PLATFORM_TARGETS[platform];
  const memoryMb = positiveInt("--memory-mb", values["memory-mb"]) ?? DEFAULT_MEMORY_MB;
  checkMemory(platform, memoryMb);
  const timeoutOverride = positiveInt("--timeout-s", values["timeout-s"]);
  const { env: fnEnv, secrets } = functionEnvironment(values, env);
  // Everything printed from here on is redacted, the functions' secrets included.
  const secretValues = Object.fromEntries(Object.entries(secrets).map(([k, v]) => [`RLPIPE_FN_SECRET_${k}`, v]));
  const redactor = new Redactor({ ...env, ...secretValues }, Object.keys(secretValues));
  const out: Io = { out: (t) => io.out(redactor.redact(t)), err: (t) => io.err(redactor.redact(t)) };
  const settings = new Map<FunctionName, FunctionSettings>();
  const names = new Map<FunctionName, string>();
  for (const fn of functions) {
    const timeoutS = timeoutOverride ?? DEFAULT_TIMEOUT_S[fn];
    checkTimeout(platform, timeoutS);
    settings.set(fn, { runtime: values.runtime ?? target.runtime, handler: target.handler, memoryMb, timeoutS, env: fnEnv, secrets, ...(values.role === undefined ? {} : { role: values.role }) });
    names.set(fn, functionNameFor(values["name-prefix"], fn));
  }
  if (platform === "functiongraph") checkFunctionGraphUserData(fnEnv, secrets);
  const inputs: Inputs = { platform, functions, zips: readZips(zipDir, platform, functions), settings, names };
  for (const line of missingVariables(functions, new Set([...Object.keys(fnEnv), ...Object.keys(secrets)]))) out.err(line);
  // Secrets count for what is set (RLPIPE_CONSOLE_TOKEN opens the console to HTTP); their values are not used.
  const triggerPlan = wantedTriggers(platform, functions, { ...fnEnv, ...Object.fromEntries(Object.keys(secrets).map((k) => [k, "set"])) });
  for (const line of triggerPlan.warnings) out.err(line);
  // FunctionGraph's HTTP trigger is an APIG route, which lives in an API group: none without --apig-group. The route is
  // on a dedicated gateway (--apig-instance, or RLPIPE_APIG_INSTANCE_ID in the deploying shell), or on the shared one
  // only where asked (--apig-shared: being discontinued, new accounts have none).
  const apigInstance = values["apig-instance"]?.trim() || env["RLPIPE_APIG_INSTANCE_ID"]?.trim() || undefined;
  if (platform === "functiongraph" && values["apig-group"] !== undefined) {
    if (apigInstance !== undefined && values["apig-shared"]) throw usage("--apig-shared and --apig-instance (or RLPIPE_APIG_INSTANCE_ID) name two different gateways: give one");
    if (apigInstance === undefined && !values["apig-shared"]) {
      throw usage(`--apig-group ${values["apig-group"]} needs the dedicated API gateway it belongs to: --apig-instance ID (or RLPIPE_APIG_INSTANCE_ID)`,
        "the gateway's instance id is on the API Gateway console (Gateways → the gateway → Instance ID); for the shared gateway, being discontinued, pass --apig-shared instead");
    }
  }
  const wanted: WantedTrigger[] = triggerPlan.triggers.filter((t) => t.kind !== "http" || platform === "scf" || values["apig-group"] !== undefined);
  if (platform === "functiongraph" && values["apig-group"] === undefined && triggerPlan.triggers.some((t) => t.kind === "http")) {
    out.err("rlpipe functions deploy: note: no HTTP trigger: FunctionGraph routes HTTP through an API Gateway group; pass --apig-group ID to have deploy create the APIG trigger");
  }
  checkHttpRoutes(platform, wanted, values["apig-group"]);

  if (values["dry-run"]) {
    // Nothing is sent: the bodies a create and an update would carry, with code and secrets masked.
    const { FunctionGraphFunctions } = await import("../../adapters/providers/functiongraph-functions.js");
    const { ScfFunctions } = await import("../../adapters/providers/scf-functions.js");
    const previewer: FunctionsApi = platform === "functiongraph"
      ? new FunctionGraphFunctions({ endpoint: "https://functiongraph.invalid", projectId: "project", region: undefined, credentials: { ak: "-", sk: "-" } }, values.app ?? "default", { apigGroup: values["apig-group"], apigInstance })
      : new ScfFunctions({ env: {}, region: values.region ?? "region", ...(values.namespace === undefined ? {} : { namespace: values.namespace }) });
    const plans = functions.map((fn) => {
      const d = desiredOf(inputs, fn, undefined);
      const spec: FunctionSpec = { ...d, zip: inputs.zips.get(fn)! };
      const triggers = wanted.filter((w) => w.function === fn).map((w) => previewer.triggers.spec({ name: d.name, id: "<function URN>" }, w, { timeoutS: d.timeoutS }));
      return { function: fn, name: d.name, action: "create or update", create: previewer.preview("create", spec), updateCode: previewer.preview("updateCode", spec), updateConfig: previewer.preview("updateConfig", spec), triggers };
    });
    if (values.json) out.out(JSON.stringify({ platform, dryRun: true, functions: plans }, null, 2));
    else {
      out.out(`rlpipe functions deploy --dry-run: ${platform}; nothing was sent`);
      for (const p of plans) out.out(`  ${p.function.padEnd(8)} ${p.name}: would be created, or updated where it differs\n    create: ${JSON.stringify(p.create)}\n    update code: ${JSON.stringify(p.updateCode)}\n    update configuration: ${JSON.stringify(p.updateConfig)}${p.triggers.map((t) => `\n    trigger ${t.label}: ${JSON.stringify(t.config)}`).join("")}`);
    }
    return 0;
  }

  const { api, key, secrets: cloudSecrets } = await openApi(platform, env, values.region, { ...values, apigInstance });
  const cloudValues = Object.fromEntries(cloudSecrets.map((s, i) => [`RLPIPE_CLOUD_SECRET_${i}`, s]));
  const cloudRedactor = new Redactor(cloudValues, Object.keys(cloudValues));
  const safe: Io = { out: (t) => out.out(cloudRedactor.redact(t)), err: (t) => out.err(cloudRedactor.redact(t)) };
  const results: DeployResult[] = [];
  try {
    if (!values.json) safe.out(`rlpipe functions deploy: ${platform} at ${api.endpoint}`);
    // Before any function changes: a function made to run as an agency or role that does not exist would fail later.
    if (values.role !== undefined) await checkRole(api, values.role, functions, fnEnv);
    for (const fn of functions) {
      let r: DeployResult;
      try {
        r = await deployOne(safe, api, desiredOf(inputs, fn, key), inputs.zips.get(fn)!);
        const mine = wanted.filter((w) => w.function === fn);
        if (mine.length > 0) {
          const deployed = { name: r.name, id: r.id! };
          const specs = mine.map((w) => api.triggers.spec(deployed, w, { timeoutS: settings.get(fn)!.timeoutS }));
          r = { ...r, triggers: await reconcileTriggers(safe, api, deployed, specs) };
        }
      } catch (e) {
        r = { function: fn, name: names.get(fn)!, action: "failed", error: describeError(e, "functions") };
      }
      results.push(r);
      if (!values.json) safe.out(formatResult(r));
    }
  } finally {
    api.close();
  }
  if (values.json) safe.out(JSON.stringify({ platform, endpoint: api.endpoint, functions: results }, null, 2));
  const failed = results.filter((r) => r.error !== undefined);
  if (failed.length > 0 && !values.json) safe.err(`rlpipe: ${failed.length} of ${results.length} function${results.length === 1 ? "" : "s"} failed`);
  return failed.reduce((worst, r) => Math.max(worst, r.error!.exitCode), 0);
}
