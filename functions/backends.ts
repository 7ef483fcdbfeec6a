// Sandbox backends by name, shared by `rlpipe serve` and the reward/tool function (functions/apps/reward.ts).
// SDKs load lazily, so a function bundle that never builds a backend never loads one.
import { RlpipeError } from "../core/errors.js";
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";

export const SANDBOX_KINDS = ["local", "scalebox", "e2b"] as const;
export type SandboxKind = (typeof SANDBOX_KINDS)[number];

export interface BackendOptions {
  /** ScaleBox/SandboxFusion base URLs (scalebox only). */
  readonly scaleboxUrls?: readonly string[];
  /** Jobs at once (E2B: pool size). */
  readonly concurrency?: number;
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

function invalid(code: string, message: string, hint?: string): RlpipeError {
  return new RlpipeError(code, message, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });
}

export async function createBackend(kind: string, opts: BackendOptions = {}): Promise<SandboxBackend> {
  switch (kind) {
    case "local": {
      const { LocalSandbox } = await import("../adapters/sandboxes/local.js");
      return LocalSandbox.create(opts.concurrency === undefined ? {} : { concurrency: opts.concurrency });
    }
    case "scalebox": {
      const urls = opts.scaleboxUrls ?? [];
      if (urls.length === 0) throw invalid("usage", `--sandbox scalebox needs at least one ${opts.scaleboxUrlSource ?? "--scalebox-url (or SCALEBOX_URL)"}`, "run rlpipe --help");
      const { ScaleBoxSandbox } = await import("../adapters/sandboxes/scalebox.js");
      return ScaleBoxSandbox.create({
        endpoints: urls,
        ...(opts.concurrency === undefined ? {} : { concurrency: opts.concurrency }),
        ...(opts.scaleboxToken === undefined ? {} : { token: opts.scaleboxToken }),
      });
    }
    case "e2b": {
      // E2B or Tencent AGS (E2B_DOMAIN=<region>.tencentags.com).
      const { E2BSandbox } = await import("../adapters/sandboxes/e2b.js");
      const sb = await E2BSandbox.create({
        ...(opts.e2bApiKey === undefined ? {} : { apiKey: opts.e2bApiKey }),
        ...(opts.env === undefined ? {} : { env: opts.env }),
        ...(opts.template === undefined ? {} : { template: opts.template }),
        ...(opts.concurrency === undefined ? {} : { poolSize: opts.concurrency }),
      });
      try {
        await sb.check(); // fail now on a bad key or domain, not at the first reward
      } catch (e) {
        await sb.close();
        throw e;
      }
      return sb;
    }
    default:
      throw invalid("usage", `unknown sandbox ${JSON.stringify(kind)}; expected ${SANDBOX_KINDS.join(", ")}`, "run rlpipe --help");
  }
}
