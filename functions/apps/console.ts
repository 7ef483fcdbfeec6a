// The console function as a cloud function: console JSON test events (deploy, status, score, cost, report) and storage
// notifications of uploaded recipes (functions/console.ts). Configuration, read at cold start:
//   RLPIPE_STATE_STORE            s3|obs|cos://bucket/prefix: run records (<prefix>/runs/) and upload markers (<prefix>/events/)
//   RLPIPE_CONSOLE_RECIPE_PREFIX  s3|obs|cos://bucket/prefix (or a bare key prefix): uploads there are deployed
//   RLPIPE_CONSOLE_PROVIDER       the provider of an upload whose key does not end .<provider>.yaml
//   RLPIPE_CONSOLE_CLAIM_WAIT_MS  how long a repeated delivery waits for the first one (default 60000)
//   RLPIPE_RETRY_BUDGET_MS        time for the retries of one provider call (default 20000)
//   RLPIPE_CONSOLE_TOKEN          (secret) bearer token that opens the console over HTTPS; without it only direct invocations
//   RLPIPE_SANDBOX, E2B_API_KEY, RLPIPE_SCALEBOX_URL…  the score action's sandbox, as for the reward function
// Provider credentials are the CLI's variables (HUAWEICLOUD_SDK_AK/SK/SECURITY_TOKEN + HUAWEICLOUD_SDK_PROJECT_ID for
// ModelArts, TENCENTCLOUD_SECRET_ID/SECRET_KEY/SESSION_TOKEN for TI-ONE), from the environment or, for the keys, the
// platform's secret store (on Lambda the RLPIPE_SECRET_ARN JSON: no AWS role can sign Huawei or Tencent calls); when unset, the platform's own temporary
// credentials stand in: a FunctionGraph agency's (handed over as the OBS_* set) and an SCF execution role's.
// Over HTTPS: POST an event (Authorization: Bearer <token>) for its JSON answer; GET ?action=report&run=<name> (Bearer,
// or Basic with the token as password, so a browser can ask for it) answers the page itself as HTML, or JSON with
// format=json or an Accept that prefers application/json. A retryable store or provider failure answers 503 with
// Retry-After, any other one 502.
import { timingSafeEqual } from "node:crypto";
import { tmpdir } from "node:os";
import { ExitCode, RlpipeError } from "../../core/errors.js";
import { Redactor } from "../../core/redact.js";
import { escapeHtml } from "../../core/report/run-page.js";
import { PROVIDERS, type Provider } from "../../core/recipe/schema.js";
import { type ObjectStore, openStore, parseStoreUri, retryLines } from "../../adapters/storage/store.js";
import type { ColdStart, FnRequest, FnResponse, FunctionApp, FunctionAppFactory } from "../app.js";
import { type ConsoleDeps, type ConsoleReply, type RecipeTrigger, type StateStore, handleConsoleEvent } from "../console.js";
import { externalFailure } from "../error-response.js";
import { json } from "../http-types.js";
import { loadAdapter } from "../providers.js";
import { bundledAssets } from "../python-assets.js";
import { ResultCache } from "../reward.js";
import { storeRunRecords } from "../run-record-store.js";
import { configError, optionalPositiveInt, optionalSecret } from "./config.js";
import { sandboxBackend, sandboxConfig } from "./reward.js";

export const CONSOLE_ENV = {
  stateStore: "RLPIPE_STATE_STORE",
  recipePrefix: "RLPIPE_CONSOLE_RECIPE_PREFIX",
  provider: "RLPIPE_CONSOLE_PROVIDER",
  claimWaitMs: "RLPIPE_CONSOLE_CLAIM_WAIT_MS",
  retryBudgetMs: "RLPIPE_RETRY_BUDGET_MS",
  token: "RLPIPE_CONSOLE_TOKEN",
} as const;

/** Credential variables read through the platform's env (FunctionGraph serves some only on request). */
const CREDENTIAL_VARS = [
  "HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_SECURITY_TOKEN", "HUAWEICLOUD_SDK_PROJECT_ID", "HUAWEICLOUD_SDK_REGION", "HUAWEICLOUD_REGION",
  "OBS_ACCESS_KEY_ID", "OBS_SECRET_ACCESS_KEY", "OBS_SECURITY_TOKEN", "OBS_ENDPOINT", "OBS_REGION",
  "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN", "TENCENTCLOUD_SECRETID", "TENCENTCLOUD_SECRETKEY", "TENCENTCLOUD_SESSIONTOKEN", "TENCENTCLOUD_REGION",
  "COS_SECRET_ID", "COS_SECRET_KEY", "COS_SESSION_TOKEN", "COS_ENDPOINT", "COS_REGION",
  "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "S3_ENDPOINT",
  "MODELARTS_ENDPOINT", "TIONE_ENDPOINT", "RAY_ADDRESS", "RAY_AUTH_TOKEN",
  ...Object.values(CONSOLE_ENV),
];

/**
 * The environment the console's providers and stores read: the function's, plus the provider keys its secret store
 * holds (`fromSecrets`, for variables the env leaves unset), with the CLI's provider credential
 * variables filled from the platform's when unset — Huawei keys are account keys whatever service they sign for,
 * so the OBS set (a FunctionGraph agency's, or configured) signs ModelArts calls too; likewise Tencent's COS set
 * or an SCF role's keys sign TI-ONE calls. A key is always taken with its own token.
 */
export function consoleEnv(env: NodeJS.ProcessEnv, fromSecrets: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  // Known variables are read once (FunctionGraph's env answers some only when asked, and a spread would miss them);
  // anything else is still asked of the platform's env (a recipe's secrets, e.g. from FunctionGraph's user data).
  const filled: Record<string, string | undefined> = {};
  for (const k of CREDENTIAL_VARS) if (env[k] !== undefined) filled[k] = env[k];
  for (const [k, v] of Object.entries(fromSecrets)) if ((filled[k] ?? "") === "") filled[k] = v;
  const set = (to: readonly [string, string, string], from: readonly [string, string, string]) => {
    if (filled[to[0]] !== undefined || filled[to[1]] !== undefined || filled[from[0]] === undefined || filled[from[1]] === undefined) return;
    filled[to[0]] = filled[from[0]];
    filled[to[1]] = filled[from[1]];
    filled[to[2]] = filled[from[2]];
  };
  set(["HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_SECURITY_TOKEN"], ["OBS_ACCESS_KEY_ID", "OBS_SECRET_ACCESS_KEY", "OBS_SECURITY_TOKEN"]);
  set(["TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN"], ["TENCENTCLOUD_SECRETID", "TENCENTCLOUD_SECRETKEY", "TENCENTCLOUD_SESSIONTOKEN"]);
  set(["TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY", "TENCENTCLOUD_SESSION_TOKEN"], ["COS_SECRET_ID", "COS_SECRET_KEY", "COS_SESSION_TOKEN"]);
  const mine = (k: string | symbol): k is string => typeof k === "string" && filled[k] !== undefined;
  return new Proxy(env, {
    get: (t, k, r) => (mine(k) ? filled[k] : Reflect.get(t, k, r)),
    has: (t, k) => mine(k) || Reflect.has(t, k),
    ownKeys: (t) => [...new Set([...Reflect.ownKeys(t), ...Object.keys(filled).filter(mine)])],
    getOwnPropertyDescriptor: (t, k) => (mine(k) ? { value: filled[k], enumerable: true, configurable: true, writable: true } : Reflect.getOwnPropertyDescriptor(t, k)),
  });
}

function parseProviderVar(v: string | undefined): Provider | undefined {
  const p = v?.trim();
  if (p === undefined || p === "") return undefined;
  if (!(PROVIDERS as readonly string[]).includes(p)) throw configError("config_invalid", `${CONSOLE_ENV.provider} must be one of ${PROVIDERS.join(", ")}, got ${JSON.stringify(p)}`);
  return p as Provider;
}

/** RLPIPE_CONSOLE_RECIPE_PREFIX: s3|obs|cos://bucket/prefix, or a key prefix for any bucket the trigger watches. */
export function parseRecipeTrigger(raw: string | undefined, provider: Provider | undefined): RecipeTrigger | undefined {
  const v = raw?.trim();
  if (v === undefined || v === "") return undefined;
  const withProvider = provider === undefined ? {} : { provider };
  if (!v.includes("://")) return { prefix: v.replace(/^\/+|\/+$/g, ""), ...withProvider };
  let u;
  try { u = parseStoreUri(v); } catch (e) { throw configError("config_invalid", `${CONSOLE_ENV.recipePrefix}: ${(e as Error).message}`); }
  if (u.scheme === "file") throw configError("config_invalid", `${CONSOLE_ENV.recipePrefix} must be s3://, obs:// or cos:// (the buckets that send notifications)`);
  return { scheme: u.scheme, bucket: u.bucket, prefix: u.prefix, ...withProvider };
}

function tokenMatches(given: string, want: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The HTTP status of a console answer: 200, or 400 for bad input, 503 (+ Retry-After) when a store or provider
 * could not be reached or was overloaded, 502 when it refused, 409 when cancelled, 500 for a bug.
 */
function statusOf(r: ConsoleReply): { readonly status: number; readonly headers?: Readonly<Record<string, string>> } {
  if (r.ok) return { status: 200 };
  if (r.exitCode === ExitCode.external) return externalFailure(r.error.retryable === true);
  return { status: r.exitCode === ExitCode.invalidInput ? 400 : r.exitCode === ExitCode.cancelled ? 409 : 500 };
}

function replyResponse(r: ConsoleReply): FnResponse {
  const { status, headers } = statusOf(r);
  return json(status, r, headers === undefined ? undefined : { ...headers });
}

/**
 * Headers of every HTML answer, as `rlpipe dashboard` serves pages (bin/dashboard-server.ts): a stored page was
 * written by a job, so whatever it holds runs no script and fetches nothing, and no other site may frame it.
 */
export const HTML_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/html; charset=utf-8",
  "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

/** The Basic challenge a browser answers with a login prompt (any user name, the token as password). */
const BASIC_CHALLENGE = 'Basic realm="rlpipe console", charset="UTF-8"';

/** The token a request presents: Bearer, or (GET only: a browser's prompt) the password of Basic credentials. */
function presentedToken(authorization: string | undefined, allowBasic: boolean): string | undefined {
  const m = /^(Bearer|Basic)\s+(\S+)$/i.exec(authorization ?? "");
  if (m === null) return undefined;
  if (m[1]!.toLowerCase() === "bearer") return m[2];
  if (!allowBasic) return undefined;
  const decoded = Buffer.from(m[2]!, "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon < 0 ? undefined : decoded.slice(colon + 1);
}

/** Weight of one media type in an Accept header (-1 when not named; wildcards are not counted). */
function acceptWeight(accept: string, type: string): number {
  let best = -1;
  for (const part of accept.toLowerCase().split(",")) {
    const [range, ...params] = part.split(";").map((x) => x.trim());
    if (range !== type) continue;
    const q = params.map((p) => /^q=([0-9.]+)$/.exec(p)?.[1]).find((x) => x !== undefined);
    best = Math.max(best, q === undefined ? 1 : Number(q));
  }
  return best;
}

/** A small page saying what went wrong (escaped), for a browser that asked for a run's page. */
function messagePage(status: number, title: string, message: string, hint?: string): FnResponse {
  const text = `<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title></head>\n<body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>${hint === undefined ? "" : `<p>${escapeHtml(hint)}</p>`}</body></html>\n`;
  return { status, body: null, text, headers: HTML_HEADERS };
}

/** Query values of the report event that are not strings: url=true|false, expiresS=<seconds>. */
function reportEventOf(query: Readonly<Record<string, string>>): Record<string, unknown> {
  const event: Record<string, unknown> = { ...query };
  const url = query["url"];
  if (url === "true" || url === "1") event["url"] = true;
  else if (url === "false" || url === "0") event["url"] = false;
  const expires = query["expiresS"];
  if (expires !== undefined && /^[0-9]{1,9}$/.test(expires)) event["expiresS"] = Number(expires);
  return event;
}

export interface ConsoleAppOptions {
  /** Replace parts of the wiring (tests: claim polling, clocks). */
  readonly overrides?: Partial<ConsoleDeps>;
}

/**
 * Provider credentials a console may hold in the platform's secret store rather than in plain environment variables
 * (on Lambda: keys of the RLPIPE_SECRET_ARN JSON, or <NAME>_SECRET_ARN). The project id and region are not secret.
 */
export const SECRET_CREDENTIAL_VARS = [
  "HUAWEICLOUD_SDK_AK", "HUAWEICLOUD_SDK_SK", "HUAWEICLOUD_SDK_PROJECT_ID",
  "TENCENTCLOUD_SECRET_ID", "TENCENTCLOUD_SECRET_KEY",
] as const;

/** The provider credentials the secret source holds for variables the platform's env leaves unset. */
async function secretCredentials(cold: ColdStart): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const name of SECRET_CREDENTIAL_VARS) {
    if ((cold.env[name] ?? "") !== "") continue;
    const v = await optionalSecret(cold, name);
    if (v !== undefined) found[name] = v;
  }
  return found;
}

export function makeConsoleApp(opts: ConsoleAppOptions = {}): FunctionAppFactory {
  return async (cold: ColdStart): Promise<FunctionApp> => {
    const env = consoleEnv(cold.env, await secretCredentials(cold));
    const redactor = new Redactor(env, ["TENCENTCLOUD_SECRETKEY", "TENCENTCLOUD_SESSIONTOKEN"]);
    const log = (line: string) => cold.log(redactor.redact(line));
    const storeOpts = { onRetry: retryLines(log) };
    const provider = parseProviderVar(env[CONSOLE_ENV.provider]);
    const trigger = parseRecipeTrigger(env[CONSOLE_ENV.recipePrefix], provider);
    const claimWaitMs = optionalPositiveInt(cold, CONSOLE_ENV.claimWaitMs);
    const retryBudgetMs = optionalPositiveInt(cold, CONSOLE_ENV.retryBudgetMs);

    let state: StateStore | undefined;
    const stateUri = env[CONSOLE_ENV.stateStore]?.trim();
    if (stateUri !== undefined && stateUri !== "") {
      let store: ObjectStore;
      try {
        store = await openStore(stateUri, env, storeOpts);
      } catch (e) {
        throw configError("config_invalid", `${CONSOLE_ENV.stateStore}: ${(e as Error).message}`, (e as RlpipeError).hint);
      }
      state = { store, records: storeRunRecords(store) };
    }
    // The score action's sandbox: configured as for the reward function, built on first use (a console that only
    // deploys needs none).
    let rewards: Promise<{ backend: Awaited<ReturnType<typeof sandboxBackend>>; cache: ResultCache }> | undefined;
    const sandboxConfigured = (cold.env["RLPIPE_SANDBOX"] ?? "") !== "";
    const token = await optionalSecret(cold, CONSOLE_ENV.token);
    if (token !== undefined && token.length < 16) throw configError("secret_too_short", `${CONSOLE_ENV.token} must be at least 16 characters`);

    const deps: ConsoleDeps = {
      ...(state === undefined ? {} : { state }),
      ...(trigger === undefined ? {} : { trigger }),
      ...(claimWaitMs === undefined ? {} : { claimWaitMs }),
      ...(retryBudgetMs === undefined ? {} : { retryBudgetMs }),
      openStore: (uri) => openStore(uri, env, storeOpts),
      storeEnv: env,
      loadAdapter: (p, recipe) => loadAdapter(p, recipe, { env, cwd: tmpdir(), log }),
      assets: bundledAssets,
      ...(sandboxConfigured ? {
        rewards: () => {
          rewards ??= (async () => ({ backend: await sandboxBackend(cold, sandboxConfig(cold)), cache: new ResultCache() }))();
          // A failed start is not kept: the next score tries again.
          rewards.catch(() => { rewards = undefined; });
          return rewards;
        },
      } : {}),
      log,
      ...opts.overrides,
    };
    log(`console function: state store ${state?.store.url ?? "(none: RLPIPE_STATE_STORE unset)"}; uploads ${trigger === undefined ? "off" : `${trigger.scheme === undefined ? "" : `${trigger.scheme}://${trigger.bucket}/`}${trigger.prefix}`}; https ${token === undefined ? "off" : "bearer token"}`);

    // Every answer passes through redaction: no credential value ever leaves in one — but the presigned URL a report
    // event asked for, which is that answer (its signature, and a role's session token, are what make it work; it
    // carries no other credential and is never logged).
    const answer = async (event: unknown): Promise<ConsoleReply> => {
      const reply = await handleConsoleEvent(event, deps);
      const redacted = JSON.parse(redactor.redact(JSON.stringify(reply))) as ConsoleReply;
      return reply.ok && redacted.ok && reply.action === "report" && typeof reply["url"] === "string" ? { ...redacted, url: reply["url"] } : redacted;
    };

    // GET ?action=report&run=<name>[&url=true&expiresS=N][&format=html|json]: what a browser asks for. Read-only, so
    // it is the one event GET carries (and the only one Basic credentials open). The page comes as HTML unless JSON
    // is asked for (format=json, or an Accept preferring application/json); a presigned URL is always JSON.
    const reportOverGet = async (req: FnRequest): Promise<FnResponse> => {
      const { format, ...query } = req.query ?? {};
      if (query["action"] !== "report") return json(405, { detail: "over GET the console answers ?action=report&run=<name> only; POST other events" }, { allow: "POST" });
      if (format !== undefined && format !== "html" && format !== "json") return json(400, { detail: `format must be html or json, got ${JSON.stringify(format)}` });
      const accept = req.headers["accept"] ?? "";
      const html = format === "html" || (format === undefined && acceptWeight(accept, "application/json") <= Math.max(0, acceptWeight(accept, "text/html")));
      const reply = await answer(reportEventOf(query));
      if (!html || (reply.ok && typeof reply["page"] !== "string")) return replyResponse(reply);
      if (reply.ok) return { status: 200, body: null, text: reply["page"] as string, headers: HTML_HEADERS };
      const { status, headers } = statusOf(reply);
      const page = messagePage(status, `${reply.error.code}`, reply.error.message, reply.error.hint);
      return { ...page, headers: { ...page.headers, ...headers } };
    };
    return {
      event: answer,
      http: async (req: FnRequest): Promise<FnResponse> => {
        if (token === undefined) return json(403, { detail: `the console answers direct invocations (console test events) only; set ${CONSOLE_ENV.token} to open it over HTTPS` });
        const get = req.method === "GET";
        const given = presentedToken(req.headers["authorization"], get);
        if (given === undefined || !tokenMatches(given, token)) return json(401, { detail: "missing or invalid token" }, { "www-authenticate": get ? BASIC_CHALLENGE : "Bearer" });
        if (get) return reportOverGet(req);
        if (req.method !== "POST") return json(405, { detail: "Method Not Allowed: POST a console event, or GET ?action=report&run=<name>" }, { allow: "GET, POST" });
        return replyResponse(await answer(req.body));
      },
    };
  };
}

export const consoleApp: FunctionAppFactory = makeConsoleApp();
