// A Huawei Cloud account as every Huawei API client here needs it (ModelArts, FunctionGraph): AK/SK (+ security
// token), project id and region, from the environment or the credentials file — never from a recipe.
//   env: HUAWEICLOUD_SDK_AK + HUAWEICLOUD_SDK_SK (+ HUAWEICLOUD_SDK_SECURITY_TOKEN), HUAWEICLOUD_SDK_PROJECT_ID,
//        HUAWEICLOUD_REGION / HUAWEICLOUD_SDK_REGION;
//   file: HUAWEICLOUD_CREDENTIALS_FILE (default $HOME/.huaweicloud/credentials), profile HUAWEICLOUD_PROFILE
//         (default "default"), INI keys ak, sk, security_token, project_id, region.
// The region and project id a caller configures (a recipe target, a flag) win over the environment's region; the
// environment's project id wins over the caller's (the project belongs to the credentials).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { RlpipeError } from "../../core/errors.js";
import type { HuaweiCredentials } from "./huawei-sign.js";

type Env = Readonly<Record<string, string | undefined>>;

export interface HuaweiAccount {
  readonly credentials: HuaweiCredentials;
  readonly projectId: string;
  readonly region: string | undefined;
}

export interface HuaweiAccountOptions {
  /** The API the account is for, in messages ("ModelArts", "FunctionGraph"). */
  readonly service: string;
  readonly region?: string | undefined;
  readonly projectId?: string | undefined;
  /** Where to set the project id, said when it is missing. */
  readonly projectIdHint: string;
  readonly readFile?: (path: string) => string | undefined;
}

const configError = (code: string, message: string, hint?: string) => new RlpipeError(code, message, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });

interface FileProfile { readonly ak?: string; readonly sk?: string; readonly security_token?: string; readonly project_id?: string; readonly region?: string }
const FILE_KEYS = new Set(["ak", "sk", "security_token", "project_id", "region"]);

/** One profile of an INI-style credentials file; unknown keys are errors (a typo would otherwise go unnoticed). */
export function parseCredentialsFile(text: string, profile: string, file: string): FileProfile | undefined {
  let current: string | undefined;
  const out: Record<string, string> = {};
  let found = false;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) return;
    const section = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (section !== null) { current = section[1]; if (current === profile) found = true; return; }
    const kv = /^([A-Za-z_]+)\s*=\s*(.*)$/.exec(line);
    if (kv === null) throw configError("credentials_file_invalid", `${file}:${i + 1}: expected [profile] or key = value`);
    const key = kv[1]!.toLowerCase();
    if (!FILE_KEYS.has(key)) throw configError("credentials_file_invalid", `${file}:${i + 1}: unknown key ${kv[1]}`, `known keys: ${[...FILE_KEYS].join(", ")}`);
    if (current === profile) out[key] = kv[2]!.trim();
  });
  return found ? out : undefined;
}

export function readIfExists(path: string): string | undefined {
  try { return readFileSync(path, "utf8"); } catch (e) {
    if ((e as { code?: string }).code === "ENOENT") return undefined;
    throw configError("credentials_file_unreadable", `cannot read ${path}: ${(e as Error).message}`);
  }
}

export function resolveHuaweiAccount(env: Env, opts: HuaweiAccountOptions): HuaweiAccount {
  const readFile = opts.readFile ?? readIfExists;
  const pick = (...names: string[]) => names.map((n) => env[n]?.trim()).find((v) => v !== undefined && v !== "");
  const explicitFile = pick("HUAWEICLOUD_CREDENTIALS_FILE");
  const home = pick("HOME");
  const filePath = explicitFile ?? (home === undefined ? undefined : join(home, ".huaweicloud", "credentials"));
  const profileName = pick("HUAWEICLOUD_PROFILE") ?? "default";
  let file: FileProfile | undefined;
  if (filePath !== undefined) {
    const text = readFile(filePath);
    if (text === undefined && explicitFile !== undefined) throw configError("credentials_file_missing", `HUAWEICLOUD_CREDENTIALS_FILE points at ${filePath}, which cannot be read`);
    if (text !== undefined) {
      file = parseCredentialsFile(text, profileName, filePath);
      if (file === undefined && (explicitFile !== undefined || pick("HUAWEICLOUD_PROFILE") !== undefined)) {
        throw configError("credentials_profile_missing", `${filePath} has no [${profileName}] profile`);
      }
    }
  }

  const envAk = pick("HUAWEICLOUD_SDK_AK");
  const envSk = pick("HUAWEICLOUD_SDK_SK");
  if ((envAk === undefined) !== (envSk === undefined)) {
    throw configError("credentials_incomplete", `${opts.service} credentials need both HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK; only ${envAk === undefined ? "HUAWEICLOUD_SDK_SK" : "HUAWEICLOUD_SDK_AK"} is set`);
  }
  const fromEnv = envAk !== undefined && envSk !== undefined;
  const ak = fromEnv ? envAk : file?.ak;
  const sk = fromEnv ? envSk : file?.sk;
  if (ak === undefined || ak === "" || sk === undefined || sk === "") {
    throw configError("credentials_missing", `no Huawei Cloud credentials for ${opts.service}: set HUAWEICLOUD_SDK_AK and HUAWEICLOUD_SDK_SK (and HUAWEICLOUD_SDK_SECURITY_TOKEN for temporary credentials)`,
      `or write ak = … and sk = … under [${profileName}] in ${filePath ?? "$HOME/.huaweicloud/credentials"} (path: HUAWEICLOUD_CREDENTIALS_FILE)`);
  }
  const token = fromEnv ? pick("HUAWEICLOUD_SDK_SECURITY_TOKEN") : file?.security_token;

  const region = opts.region ?? pick("HUAWEICLOUD_REGION", "HUAWEICLOUD_SDK_REGION") ?? file?.region;
  const projectId = pick("HUAWEICLOUD_SDK_PROJECT_ID") ?? opts.projectId ?? file?.project_id;
  if (projectId === undefined || projectId === "") {
    throw configError("project_id_missing", `${opts.service} needs the project id of the region`, opts.projectIdHint);
  }
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(projectId)) throw configError("project_id_invalid", `project id ${JSON.stringify(projectId)} is not a project id (1–64 letters, digits, '_' or '-')`);
  return { credentials: { ak, sk, ...(token === undefined || token === "" ? {} : { securityToken: token }) }, projectId, region };
}
