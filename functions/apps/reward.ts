// The reward/tool function (SandboxFusion /run_code and /common_evaluate_batch, /v1/rewards, /v1/ping) as a
// cloud function. Bubblewrap cannot run inside Lambda/FunctionGraph/SCF, so the sandbox is remote, chosen by
// RLPIPE_SANDBOX: e2b (E2B, or Tencent AGS with E2B_DOMAIN) or scalebox (RLPIPE_SCALEBOX_URL). Every call but
// /v1/ping needs RLPIPE_SANDBOX_TOKEN (bearer or /t/<token>/ prefix): a function has no loopback to trust.
// The sandbox is checked in the background after the cold start, not during it (see makeRewardApp).
// Requests that name their run (X-Rlpipe-Run, /r/<run>/) are counted per run as `rlpipe serve` counts them; with
// RLPIPE_USAGE_STORE the instance writes its record there before answering (functions/usage-sink.ts).
import { randomBytes } from "node:crypto";
import { Redactor } from "../../core/redact.js";
import { AccountQuota, E2B_TIERS, type InstanceShare, instanceShare } from "../../core/sandbox-quota.js";
import { defaultCapacity } from "../admission.js";
import type { SandboxBackend } from "../../adapters/sandboxes/sandbox.js";
import { BackendWarmup } from "../backend-warmup.js";
import { createRemoteBackend } from "../remote-backends.js";
import type { ColdStart, FunctionApp, FunctionAppFactory } from "../app.js";
import { ResultCache } from "../reward.js";
import { route } from "../router.js";
import { UsageMeter } from "../usage-meter.js";
import { lazyStoreSink, parseUsageStore } from "../usage-sink.js";
import { configError, optionalChoice, optionalCount, optionalPositiveInt, optionalPositiveNumber, optionalSecret, requireEnv, requireSecret } from "./config.js";

export const REWARD_ENV = {
  sandbox: "RLPIPE_SANDBOX",
  scaleboxUrl: "RLPIPE_SCALEBOX_URL",
  scaleboxUrlFallback: "SCALEBOX_URL",
  scaleboxToken: "RLPIPE_SCALEBOX_TOKEN",
  token: "RLPIPE_SANDBOX_TOKEN",
  e2bKey: "E2B_API_KEY",
  e2bTemplate: "RLPIPE_E2B_TEMPLATE",
  concurrency: "RLPIPE_SANDBOX_CONCURRENCY",
  usageStore: "RLPIPE_USAGE_STORE",
  e2bTier: "RLPIPE_E2B_TIER",
  e2bMaxSandboxes: "RLPIPE_E2B_MAX_SANDBOXES",
  e2bCreatesPerS: "RLPIPE_E2B_CREATES_PER_S",
  instances: "RLPIPE_FUNCTION_INSTANCES",
  queue: "RLPIPE_SANDBOX_QUEUE",
  createRetryS: "RLPIPE_E2B_CREATE_RETRY_S",
  /** "1": refuse test cases whose verdict would be the program's own exit status (rlpipe serve --strict-verdicts). */
  strictVerdicts: "RLPIPE_STRICT_VERDICTS",
} as const;

/** Splits RLPIPE_SCALEBOX_URL (or SCALEBOX_URL, the name `rlpipe serve` reads) and checks each entry is an http(s) URL. */
function scaleboxUrls(cold: ColdStart): string[] {
  const fallback = cold.env[REWARD_ENV.scaleboxUrlFallback]?.trim();
  const raw = fallback !== undefined && fallback !== "" && (cold.env[REWARD_ENV.scaleboxUrl]?.trim() ?? "") === ""
    ? fallback : requireEnv(cold, REWARD_ENV.scaleboxUrl, "the ScaleBox/SandboxFusion base URL(s), comma-separated");
  const urls = raw.split(",").map((u) => u.trim()).filter((u) => u !== "");
  urls.forEach((u, i) => {
    let ok = false;
    try { ok = ["http:", "https:"].includes(new URL(u).protocol); } catch { /* reported below */ }
    if (!ok) throw configError("config_invalid", `${REWARD_ENV.scaleboxUrl} entry ${i + 1} is not an http(s) URL`);
  });
  if (urls.length === 0) throw configError("config_missing", `${REWARD_ENV.scaleboxUrl} holds no URL`);
  return urls;
}

/** The sandbox settings of a reward function, checked without the network (RLPIPE_SANDBOX and what it needs). */
export interface SandboxConfig {
  readonly kind: "e2b" | "scalebox";
  readonly concurrency?: number;
  readonly template?: string;
  readonly scaleboxUrls?: readonly string[];
  /** E2B/AGS: this instance's share of the account's limits. */
  readonly share?: InstanceShare;
  /** E2B/AGS: jobs that may wait for a sandbox beyond those running (RLPIPE_SANDBOX_QUEUE). */
  readonly queueJobs?: number;
  /** E2B/AGS: how long one sandbox create is retried (RLPIPE_E2B_CREATE_RETRY_S). */
  readonly createRetryBudgetMs?: number;
  /** E2B/AGS: names this instance in its sandboxes' metadata (one per cold start). */
  readonly instanceId?: string;
}

/**
 * E2B/AGS: the account's limits (RLPIPE_E2B_TIER, or RLPIPE_E2B_MAX_SANDBOXES / RLPIPE_E2B_CREATES_PER_S) and how
 * many function instances share them (RLPIPE_FUNCTION_INSTANCES: the function's reserved or maximum concurrency).
 */
export function e2bShare(cold: ColdStart): InstanceShare {
  const tier = optionalChoice(cold, REWARD_ENV.e2bTier, E2B_TIERS);
  const maxSandboxes = optionalPositiveInt(cold, REWARD_ENV.e2bMaxSandboxes);
  const createsPerS = optionalPositiveNumber(cold, REWARD_ENV.e2bCreatesPerS);
  const instances = optionalPositiveInt(cold, REWARD_ENV.instances);
  return instanceShare(AccountQuota.parse({
    ...(tier === undefined ? {} : { tier }), ...(maxSandboxes === undefined ? {} : { maxSandboxes }),
    ...(createsPerS === undefined ? {} : { createsPerS }), ...(instances === undefined ? {} : { instances }),
  }));
}

export function sandboxConfig(cold: ColdStart): SandboxConfig {
  const kind = requireEnv(cold, REWARD_ENV.sandbox, "the sandbox backend: e2b (E2B or Tencent AGS) or scalebox");
  if (kind === "local") {
    throw configError("sandbox_unsupported", `${REWARD_ENV.sandbox}=local cannot work in a cloud function: the local sandbox needs bubblewrap (user namespaces), which Lambda, FunctionGraph and SCF do not allow`,
      "use RLPIPE_SANDBOX=e2b (E2B_API_KEY; Tencent AGS with E2B_DOMAIN) or RLPIPE_SANDBOX=scalebox (RLPIPE_SCALEBOX_URL)");
  }
  if (kind !== "e2b" && kind !== "scalebox") throw configError("config_invalid", `${REWARD_ENV.sandbox} must be e2b or scalebox, got ${JSON.stringify(kind)}`);
  let concurrency = optionalPositiveInt(cold, REWARD_ENV.concurrency);
  const template = cold.env[REWARD_ENV.e2bTemplate]?.trim() || undefined;
  if (kind === "scalebox") {
    return { kind, ...(concurrency === undefined ? {} : { concurrency }), ...(template === undefined ? {} : { template }), scaleboxUrls: scaleboxUrls(cold) };
  }
  // The pool never exceeds the instance's share of the account: RLPIPE_SANDBOX_CONCURRENCY can only lower it.
  const share = e2bShare(cold);
  concurrency = Math.min(concurrency ?? share.maxSandboxes, share.maxSandboxes);
  const queueJobs = optionalCount(cold, REWARD_ENV.queue) ?? defaultCapacity(concurrency);
  const retryS = optionalPositiveNumber(cold, REWARD_ENV.createRetryS);
  return {
    kind, concurrency, ...(template === undefined ? {} : { template }), share, queueJobs,
    ...(retryS === undefined ? {} : { createRetryBudgetMs: retryS * 1000 }), instanceId: randomBytes(6).toString("hex"),
  };
}

/** The backend's secrets, read now so that a missing E2B key fails the cold start and names the variable. */
export interface SandboxSecrets {
  readonly e2bApiKey?: string;
  readonly scaleboxToken?: string;
}

export async function sandboxSecrets(cold: ColdStart, c: SandboxConfig): Promise<SandboxSecrets> {
  if (c.kind === "e2b") return { e2bApiKey: await requireSecret(cold, REWARD_ENV.e2bKey, 8, "the E2B or Tencent AGS API key") };
  const scaleboxToken = await optionalSecret(cold, REWARD_ENV.scaleboxToken);
  return scaleboxToken === undefined ? {} : { scaleboxToken };
}

/**
 * Creates the backend and checks it over the network: E2B creates one sandbox (a bad key or domain fails here,
 * and the sandbox stays in the pool for the first job), ScaleBox pings its endpoints.
 */
export function openSandboxBackend(cold: ColdStart, c: SandboxConfig, s: SandboxSecrets): Promise<SandboxBackend> {
  const concurrency = c.concurrency === undefined ? {} : { concurrency: c.concurrency };
  if (c.kind === "e2b") {
    return createRemoteBackend("e2b", {
      env: cold.env, ...(s.e2bApiKey === undefined ? {} : { e2bApiKey: s.e2bApiKey }),
      ...(c.template === undefined ? {} : { template: c.template }), ...concurrency,
      ...(c.share === undefined ? {} : { createsPerS: c.share.createsPerS }), ...(c.queueJobs === undefined ? {} : { maxQueuedJobs: c.queueJobs }),
      ...(c.instanceId === undefined ? {} : { instanceId: c.instanceId }),
      ...(c.createRetryBudgetMs === undefined ? {} : { createRetryBudgetMs: c.createRetryBudgetMs }),
    });
  }
  return createRemoteBackend("scalebox", {
    scaleboxUrls: c.scaleboxUrls ?? [], scaleboxUrlSource: REWARD_ENV.scaleboxUrl,
    ...(s.scaleboxToken === undefined ? {} : { scaleboxToken: s.scaleboxToken }), ...concurrency,
  });
}

/** The share line of the cold-start log. */
export function describeShare(c: SandboxConfig): string {
  const sh = c.share;
  if (sh === undefined) return "";
  const rate = Number(sh.createsPerS.toPrecision(3));
  return `; E2B account ${sh.account.maxSandboxes} sandboxes, ${sh.account.createsPerS} creates/s over ${sh.instances} instance${sh.instances === 1 ? "" : "s"}: `
    + `this one ${c.concurrency} sandbox${c.concurrency === 1 ? "" : "es"} (share ${sh.maxSandboxes}), ${rate} creates/s, ${c.queueJobs} jobs queued at most`
    + (sh.oversubscribed ? ` (more instances than sandboxes: together they may exceed the account, whose 429 is retried)` : "");
}

/** The configured backend, read and checked now (the console's score action, built on its first use). */
export async function sandboxBackend(cold: ColdStart, c: SandboxConfig): Promise<SandboxBackend> {
  return openSandboxBackend(cold, c, await sandboxSecrets(cold, c));
}

export interface RewardAppOptions {
  /** After a failed warm-up, how long requests get that failure before the next one tries again (default 1 s). */
  readonly retryHoldMs?: number;
  /** The warm-up's clock (tests). */
  readonly now?: () => number;
  /** Told the usage meter the app counts with (tests). */
  readonly onMeter?: (meter: UsageMeter) => void;
  /** Told the sandbox backend once it is warm (tests). */
  readonly onBackend?: (backend: SandboxBackend) => void;
}

/**
 * This instance's usage meter: counts always (GET /v1/usage/<run>), writes only with RLPIPE_USAGE_STORE. Every
 * write finishes before the answer that changed the counters goes out, because a function instance may be frozen
 * or ended as soon as it has answered: a timer or a flush after the answer could lose what was counted.
 */
export function rewardUsageMeter(cold: ColdStart, sandbox: string): UsageMeter {
  const raw = cold.env[REWARD_ENV.usageStore]?.trim() || undefined;
  let sink;
  if (raw !== undefined) {
    try {
      sink = lazyStoreSink(parseUsageStore(raw), cold.env);
    } catch (e) {
      throw configError("config_invalid", `${REWARD_ENV.usageStore}: ${(e as Error).message}`);
    }
  }
  return new UsageMeter({
    platform: cold.platform ?? "function", sandbox, log: cold.log,
    ...(sink === undefined ? {} : { sink }), ...(cold.memoryMb === undefined ? {} : { memoryMb: cold.memoryMb }),
  });
}

/**
 * The cold start checks everything it can without the network (variables, secrets) and fails on the first
 * problem, naming the variable. The backend warms up in the background (functions/backend-warmup.ts): /v1/ping
 * answers at once; the routes that need the sandbox wait for it, or answer 503 with the failure's code and hint.
 */
export function makeRewardApp(opts: RewardAppOptions = {}): FunctionAppFactory {
  return async (cold: ColdStart): Promise<FunctionApp> => {
    const config = sandboxConfig(cold);
    const usage = rewardUsageMeter(cold, config.kind);
    opts.onMeter?.(usage);
    // A missing token fails before anything else is read.
    const token = await requireSecret(cold, REWARD_ENV.token, 16, "the bearer token every caller must present");
    const secrets = await sandboxSecrets(cold, config);
    const redactor = new Redactor({ ...cold.env, RLPIPE_SANDBOX_TOKEN: token, E2B_API_KEY: secrets.e2bApiKey, RLPIPE_SCALEBOX_TOKEN: secrets.scaleboxToken });
    const warmup = new BackendWarmup(config.kind, async () => {
      const started = performance.now();
      const backend = await openSandboxBackend(cold, config, secrets);
      const caps = await backend.capabilities();
      opts.onBackend?.(backend);
      cold.log(`reward function: sandbox ${caps.backend} ready after ${(performance.now() - started).toFixed(0)}ms (${caps.languages.join(", ")}; concurrency ${caps.maxConcurrency})`);
      return backend;
    }, { log: cold.log, redact: (t) => redactor.redact(t), ...(opts.retryHoldMs === undefined ? {} : { retryHoldMs: opts.retryHoldMs }), ...(opts.now === undefined ? {} : { now: opts.now }) });
    warmup.start();
    cold.log(`reward function: sandbox ${config.kind}${describeShare(config)}, warming up in the background; auth bearer token; usage ${usage.sinkUrl === undefined ? "counted, not written" : `→ ${usage.sinkUrl}/<run>/usage/${usage.instance}.json`}`);
    const strictVerdicts = optionalChoice(cold, REWARD_ENV.strictVerdicts, ["0", "1"]) === "1";
    const deps = { backend: () => warmup.get(), cache: new ResultCache(), token, usage, strictVerdicts };
    return { http: (req) => route(req, deps) };
  };
}

// Pure: a bundle that imports this module for sandboxConfig alone (the console) drops the app and its router.
export const rewardApp: FunctionAppFactory = /* @__PURE__ */ makeRewardApp();
