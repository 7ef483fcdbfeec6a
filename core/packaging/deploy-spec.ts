// What `rlpipe functions deploy` wants each function to be, and how it tells whether a deployed function already is
// that: pure. The function's description carries two markers rlpipe wrote last time — the zip's sha256 and a
// fingerprint of the configuration (runtime, handler, memory, timeout, environment, secrets) — so a second deploy of
// the same zip and settings changes nothing, without reading code or secrets back from the platform. The
// fingerprint is an HMAC keyed by the caller's cloud secret key: it covers the secret values, yet reveals nothing
// about them to whoever can read the description.
import { createHash, createHmac } from "node:crypto";
import { RlpipeError } from "../errors.js";
import type { FunctionName, FunctionPlatform } from "./targets.js";

export interface FunctionSettings {
  readonly runtime: string;
  readonly handler: string;
  readonly memoryMb: number;
  readonly timeoutS: number;
  /** Plain environment variables. */
  readonly env: Readonly<Record<string, string>>;
  /** Environment variables that are secrets: never printed (FunctionGraph: encrypted_user_data). */
  readonly secrets: Readonly<Record<string, string>>;
  /** FunctionGraph agency / SCF execution role (--role); absent: none is set. */
  readonly role?: string;
}

export interface DesiredFunction extends FunctionSettings {
  readonly function: FunctionName;
  /** The platform's function name. */
  readonly name: string;
  readonly zipSha256: string;
  /** HMAC of the settings (see configFingerprint). */
  readonly configFingerprint: string;
  readonly description: string;
}

/** What a deployed function looks like, as far as the decision needs. */
export interface DeployedState {
  readonly runtime?: string;
  readonly handler?: string;
  readonly memoryMb?: number;
  readonly timeoutS?: number;
  readonly description?: string;
}

export type DeployAction =
  | { readonly kind: "create" }
  /** `code`: the zip changed; `settings`: runtime, handler, memory, timeout or environment changed. The configuration
   * (which carries the description and its markers) is written on every update. */
  | { readonly kind: "update"; readonly code: boolean; readonly settings: boolean }
  | { readonly kind: "unchanged" };

export const DEFAULT_MEMORY_MB = 512;
export const DEFAULT_TIMEOUT_S: Readonly<Record<FunctionName, number>> = { reward: 300, runs: 30, console: 120 };

const usage = (message: string, hint?: string) => new RlpipeError("usage", message, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });

/**
 * Function names: FunctionGraph 1–60 letters, digits, '_' or '-' starting with a letter; SCF 2–60 of the same, starting
 * with a letter and not ending in '-' or '_' (CreateFunction docs of each). The stricter rule serves both.
 */
export function functionNameFor(prefix: string, fn: FunctionName): string {
  const name = `${prefix}${fn}`;
  if (!/^[A-Za-z][A-Za-z0-9_-]{0,58}[A-Za-z0-9]$/.test(name)) {
    throw usage(`function name ${JSON.stringify(name)} (from --name-prefix ${JSON.stringify(prefix)}) is not a valid function name`,
      "2–60 letters, digits, '-' or '_', starting with a letter and ending with a letter or digit");
  }
  return name;
}

/** Memory sizes each platform accepts (FunctionGraph's enumeration; SCF 64 or 128–3072 in steps of 128). */
export function checkMemory(platform: FunctionPlatform, mb: number): void {
  const fg = [128, 256, 512, 768, 1024, 1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096];
  const ok = platform === "functiongraph" ? fg.includes(mb) : platform === "scf" ? mb === 64 || (mb >= 128 && mb <= 3072 && mb % 128 === 0) : mb >= 128 && mb <= 10240;
  if (!Number.isInteger(mb) || !ok) {
    throw usage(`--memory-mb ${mb} is not a memory size ${platform} offers`, platform === "functiongraph" ? `one of ${fg.join(", ")}` : platform === "scf" ? "64, or 128–3072 in steps of 128" : "128–10240");
  }
}

/** Timeouts: FunctionGraph 3–900 s, SCF 1–900 s. */
export function checkTimeout(platform: FunctionPlatform, s: number): void {
  const min = platform === "functiongraph" ? 3 : 1;
  if (!Number.isInteger(s) || s < min || s > 900) throw usage(`--timeout-s ${s} is outside ${platform}'s ${min}–900 seconds`);
}

/** FunctionGraph's user_data and encrypted_user_data: "at most 20, 4 KB in all" each (CreateFunctionRequestBody, huaweicloudsdkfunctiongraph 3.1.219). */
export const FUNCTIONGRAPH_USER_DATA = { maxVariables: 20, maxBytes: 4096 } as const;

/**
 * Refuses, before anything is sent, variables FunctionGraph would refuse: more than 20 in user_data (the environment)
 * or encrypted_user_data (the secrets), or more than 4 KB of either as sent (a JSON object as text, UTF-8). Names
 * the variables and where they came from; never a secret's value.
 */
export function checkFunctionGraphUserData(env: Readonly<Record<string, string>>, secrets: Readonly<Record<string, string>>): void {
  const check = (what: string, field: string, vars: Readonly<Record<string, string>>) => {
    const names = Object.keys(vars).sort();
    const bytes = Buffer.byteLength(JSON.stringify(Object.fromEntries(names.map((k) => [k, vars[k]]))), "utf8");
    if (names.length > FUNCTIONGRAPH_USER_DATA.maxVariables || bytes > FUNCTIONGRAPH_USER_DATA.maxBytes) {
      const largest = names.map((k) => [k, Buffer.byteLength(vars[k]!, "utf8")] as const).sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, n]) => `${k} ${n} B`).join(", ");
      throw new RlpipeError("functiongraph_user_data_limit", `FunctionGraph takes at most ${FUNCTIONGRAPH_USER_DATA.maxVariables} ${what} of at most ${FUNCTIONGRAPH_USER_DATA.maxBytes} bytes in all (${field}); these are ${names.length} variables of ${bytes} bytes (largest: ${largest})`,
        { exitCode: 2, hint: "deploy with fewer or shorter --env / --vars-file / --secret values (a long value, such as a recipe, belongs in object storage, named by a variable); nothing was sent" });
    }
  };
  check("environment variables", "user_data, from --env and --vars-file", env);
  check("secret variables", "encrypted_user_data, from --secret and secret-looking names", secrets);
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One KEY=VALUE (value may be quoted with ' or "). `where` names it in errors. */
export function parseEnvAssignment(text: string, where: string): [string, string] {
  const eq = text.indexOf("=");
  if (eq <= 0) throw usage(`${where}: expected KEY=VALUE, got ${JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)}`);
  const key = text.slice(0, eq).trim();
  let value = text.slice(eq + 1).trim();
  if (!ENV_NAME.test(key)) throw usage(`${where}: ${JSON.stringify(key)} is not an environment variable name (letters, digits and _, not starting with a digit)`);
  if (value.length >= 2 && (value[0] === '"' || value[0] === "'") && value.endsWith(value[0]!)) value = value.slice(1, -1);
  return [key, value];
}

/** An env file: KEY=VALUE lines, blank lines and # comments ignored, `export ` prefixes allowed. */
export function parseEnvFile(text: string, file: string): Record<string, string> {
  const out: Record<string, string> = {};
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const [k, v] = parseEnvAssignment(line.replace(/^export\s+/, ""), `${file}:${i + 1}`);
    if (k in out) throw usage(`${file}:${i + 1}: ${k} is set twice`);
    out[k] = v;
  });
  return out;
}

const sortedEntries = (o: Readonly<Record<string, string>>) => Object.keys(o).sort().map((k) => [k, o[k]!] as const);

/** HMAC-SHA256 (first 16 hex digits) of the settings, keyed by `key` (the caller's cloud secret key). */
export function configFingerprint(key: string, s: FunctionSettings): string {
  const canonical = JSON.stringify({
    runtime: s.runtime, handler: s.handler, memoryMb: s.memoryMb, timeoutS: s.timeoutS,
    env: sortedEntries(s.env), secrets: sortedEntries(s.secrets),
    // Only when set, so functions deployed before --role existed keep their fingerprint.
    ...(s.role === undefined ? {} : { role: s.role }),
  });
  return createHmac("sha256", key).update(canonical).digest("hex").slice(0, 16);
}

export function sha256Hex(data: Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

/** The description rlpipe gives a function: readable, and holding the markers deploy compares next time. */
export function describeFunction(fn: FunctionName, zipSha256: string, fingerprint: string): string {
  return `rlpipe ${fn} function. code sha256 ${zipSha256.slice(0, 32)}, config ${fingerprint}`;
}

export function markersOf(description: string | undefined): { codeSha256?: string; config?: string } {
  const m = /code sha256 ([0-9a-f]{32}), config ([0-9a-f]{16})/.exec(description ?? "");
  return m === null ? {} : { codeSha256: m[1]!, config: m[2]! };
}

/** What to do with a function, given what is deployed (undefined: nothing by that name). */
export function decide(desired: DesiredFunction, deployed: DeployedState | undefined): DeployAction {
  if (deployed === undefined) return { kind: "create" };
  const markers = markersOf(deployed.description);
  const code = markers.codeSha256 !== desired.zipSha256.slice(0, 32);
  const settings = markers.config !== desired.configFingerprint || deployed.runtime !== desired.runtime || deployed.handler !== desired.handler
    || deployed.memoryMb !== desired.memoryMb || deployed.timeoutS !== desired.timeoutS;
  return code || settings ? { kind: "update", code, settings } : { kind: "unchanged" };
}
