// The reward/tool function (SandboxFusion /run_code and /common_evaluate_batch, /v1/rewards, /v1/ping) as a
// cloud function. Bubblewrap cannot run inside Lambda/FunctionGraph/SCF, so the sandbox is remote, chosen by
// RLPIPE_SANDBOX: e2b (E2B, or Tencent AGS with E2B_DOMAIN) or scalebox (RLPIPE_SCALEBOX_URL). Every call but
// /v1/ping needs RLPIPE_SANDBOX_TOKEN (bearer or /t/<token>/ prefix): a function has no loopback to trust.
import type { SandboxBackend } from "../../adapters/sandboxes/sandbox.js";
import { createRemoteBackend } from "../remote-backends.js";
import type { ColdStart, FunctionApp, FunctionAppFactory } from "../app.js";
import { ResultCache } from "../reward.js";
import { route } from "../router.js";
import { configError, optionalPositiveInt, optionalSecret, requireEnv, requireSecret } from "./config.js";

export const REWARD_ENV = {
  sandbox: "RLPIPE_SANDBOX",
  scaleboxUrl: "RLPIPE_SCALEBOX_URL",
  scaleboxUrlFallback: "SCALEBOX_URL",
  scaleboxToken: "RLPIPE_SCALEBOX_TOKEN",
  token: "RLPIPE_SANDBOX_TOKEN",
  e2bKey: "E2B_API_KEY",
  e2bTemplate: "RLPIPE_E2B_TEMPLATE",
  concurrency: "RLPIPE_SANDBOX_CONCURRENCY",
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
}

export function sandboxConfig(cold: ColdStart): SandboxConfig {
  const kind = requireEnv(cold, REWARD_ENV.sandbox, "the sandbox backend: e2b (E2B or Tencent AGS) or scalebox");
  if (kind === "local") {
    throw configError("sandbox_unsupported", `${REWARD_ENV.sandbox}=local cannot work in a cloud function: the local sandbox needs bubblewrap (user namespaces), which Lambda, FunctionGraph and SCF do not allow`,
      "use RLPIPE_SANDBOX=e2b (E2B_API_KEY; Tencent AGS with E2B_DOMAIN) or RLPIPE_SANDBOX=scalebox (RLPIPE_SCALEBOX_URL)");
  }
  if (kind !== "e2b" && kind !== "scalebox") throw configError("config_invalid", `${REWARD_ENV.sandbox} must be e2b or scalebox, got ${JSON.stringify(kind)}`);
  const concurrency = optionalPositiveInt(cold, REWARD_ENV.concurrency);
  const template = cold.env[REWARD_ENV.e2bTemplate]?.trim() || undefined;
  return {
    kind, ...(concurrency === undefined ? {} : { concurrency }), ...(template === undefined ? {} : { template }),
    ...(kind === "scalebox" ? { scaleboxUrls: scaleboxUrls(cold) } : {}),
  };
}

/** The configured backend (reads its key from the secret store; E2B is checked once, now). */
export async function sandboxBackend(cold: ColdStart, c: SandboxConfig): Promise<SandboxBackend> {
  if (c.kind === "e2b") {
    const apiKey = await requireSecret(cold, REWARD_ENV.e2bKey, 8, "the E2B or Tencent AGS API key");
    return createRemoteBackend("e2b", {
      e2bApiKey: apiKey, env: cold.env,
      ...(c.template === undefined ? {} : { template: c.template }),
      ...(c.concurrency === undefined ? {} : { concurrency: c.concurrency }),
    });
  }
  const scaleboxToken = await optionalSecret(cold, REWARD_ENV.scaleboxToken);
  return createRemoteBackend("scalebox", {
    scaleboxUrls: c.scaleboxUrls ?? [], scaleboxUrlSource: REWARD_ENV.scaleboxUrl,
    ...(scaleboxToken === undefined ? {} : { scaleboxToken }),
    ...(c.concurrency === undefined ? {} : { concurrency: c.concurrency }),
  });
}

export const rewardApp: FunctionAppFactory = async (cold: ColdStart): Promise<FunctionApp> => {
  const config = sandboxConfig(cold);
  // Everything that can be checked without the network comes first: a missing token fails before a sandbox is made.
  const token = await requireSecret(cold, REWARD_ENV.token, 16, "the bearer token every caller must present");
  const backend = await sandboxBackend(cold, config);
  const caps = await backend.capabilities();
  cold.log(`reward function: sandbox ${caps.backend} (${caps.languages.join(", ")}; concurrency ${caps.maxConcurrency}); auth bearer token`);
  const deps = { backend, cache: new ResultCache(), token };
  return { http: (req) => route(req, deps) };
};
