// The sandbox backends a cloud function can use — E2B/AGS and hosted ScaleBox — by name. Kept apart from the local
// (bubblewrap) backend so that a function bundle never contains what cannot run in a function.
import { RlpipeError } from "../core/errors.js";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";

export const REMOTE_SANDBOX_KINDS = ["scalebox", "e2b"] as const;
export type RemoteSandboxKind = (typeof REMOTE_SANDBOX_KINDS)[number];

export interface BackendOptions {
  /** ScaleBox/SandboxFusion base URLs (scalebox only). */
  readonly scaleboxUrls?: readonly string[];
  /** Jobs at once (E2B: pool size, i.e. sandboxes alive at once: this process's share of the account's). */
  readonly concurrency?: number;
  /** E2B: sandbox creates per second (this process's share of the account's). */
  readonly createsPerS?: number;
  /** E2B: jobs that may wait for a sandbox; a batch beyond them is refused (429 + Retry-After). Default unbounded. */
  readonly maxQueuedJobs?: number;
  /** E2B: names this process in its sandboxes' metadata (`instance`). */
  readonly instanceId?: string;
  /** E2B: how long one sandbox create keeps being retried before its job is an infra error. */
  readonly createRetryBudgetMs?: number;
  /** E2B template (AGS: the sandbox tool's name). */
  readonly template?: string;
  /** E2B/AGS key; default env E2B_API_KEY (read by the adapter). */
  readonly e2bApiKey?: string;
  /** Bearer token for a ScaleBox behind an authenticating proxy. */
  readonly scaleboxToken?: string;
  /** Where E2B_* settings (domain, API URL) are read from; default process.env. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Says where a missing setting comes from, e.g. "--scalebox-url (or SCALEBOX_URL)". */
  readonly scaleboxUrlSource?: string;
}

export function invalidBackend(code: string, message: string, hint?: string): RlpipeError {
  return new RlpipeError(code, message, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });
}

export async function createRemoteBackend(kind: RemoteSandboxKind, opts: BackendOptions = {}): Promise<SandboxBackend> {
  if (kind === "scalebox") {
    const urls = opts.scaleboxUrls ?? [];
    if (urls.length === 0) throw invalidBackend("usage", `--sandbox scalebox needs at least one ${opts.scaleboxUrlSource ?? "--scalebox-url (or SCALEBOX_URL)"}`, "run rlpipe --help");
    const { ScaleBoxSandbox } = await import("../adapters/sandboxes/scalebox.js");
    return ScaleBoxSandbox.create({
      endpoints: urls,
      ...(opts.concurrency === undefined ? {} : { concurrency: opts.concurrency }),
      ...(opts.scaleboxToken === undefined ? {} : { token: opts.scaleboxToken }),
    });
  }
  // E2B or Tencent AGS (E2B_DOMAIN=<region>.tencentags.com).
  const { E2BSandbox } = await import("../adapters/sandboxes/e2b.js");
  const sb = await E2BSandbox.create({
    ...(opts.e2bApiKey === undefined ? {} : { apiKey: opts.e2bApiKey }),
    ...(opts.env === undefined ? {} : { env: opts.env }),
    ...(opts.template === undefined ? {} : { template: opts.template }),
    ...(opts.concurrency === undefined ? {} : { poolSize: opts.concurrency }),
    ...(opts.createsPerS === undefined ? {} : { maxCreatesPerSecond: opts.createsPerS }),
    ...(opts.maxQueuedJobs === undefined ? {} : { maxQueuedJobs: opts.maxQueuedJobs }),
    ...(opts.instanceId === undefined ? {} : { instanceId: opts.instanceId }),
    ...(opts.createRetryBudgetMs === undefined ? {} : { createRetryBudgetMs: opts.createRetryBudgetMs }),
  });
  try {
    await sb.check(); // fail now on a bad key or domain, not at the first reward
  } catch (e) {
    await sb.close();
    throw e;
  }
  return sb;
}
