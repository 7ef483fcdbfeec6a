// Sandbox backends by name for `rlpipe serve`: the local (bubblewrap) one and the remote ones the cloud functions
// use too (functions/remote-backends.ts). SDKs load lazily.
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { type BackendOptions, createRemoteBackend, invalidBackend } from "./remote-backends.js";

export type { BackendOptions } from "./remote-backends.js";
export const SANDBOX_KINDS = ["local", "scalebox", "e2b"] as const;
export type SandboxKind = (typeof SANDBOX_KINDS)[number];

/** Isolation modes of the local sandbox (adapters/sandboxes/local.ts ISOLATIONS); warm is the default. */
export const LOCAL_ISOLATIONS = ["warm", "per-program"] as const;
export type LocalIsolation = (typeof LOCAL_ISOLATIONS)[number];

export async function createBackend(kind: string, opts: BackendOptions = {}, isolation: LocalIsolation = "warm"): Promise<SandboxBackend> {
  switch (kind) {
    case "local": {
      const { LocalSandbox } = await import("../adapters/sandboxes/local.js");
      return LocalSandbox.create({ isolation, ...(opts.concurrency === undefined ? {} : { concurrency: opts.concurrency }) });
    }
    case "scalebox":
    case "e2b":
      return createRemoteBackend(kind, opts);
    default:
      throw invalidBackend("usage", `unknown sandbox ${JSON.stringify(kind)}; expected ${SANDBOX_KINDS.join(", ")}`, "run rlpipe --help");
  }
}
