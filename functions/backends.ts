// Sandbox backends by name for `rlpipe serve`: the local (bubblewrap) one and the remote ones the cloud functions
// use too (functions/remote-backends.ts). SDKs load lazily.
import type { SandboxBackend } from "../adapters/sandboxes/sandbox.js";
import { type BackendOptions, createRemoteBackend, invalidBackend } from "./remote-backends.js";

export type { BackendOptions } from "./remote-backends.js";
export const SANDBOX_KINDS = ["local", "scalebox", "e2b"] as const;
export type SandboxKind = (typeof SANDBOX_KINDS)[number];

/** Isolation modes of the local sandbox (adapters/sandboxes/local/local-sandbox.ts ISOLATIONS); warm is the default. */
export const LOCAL_ISOLATIONS = ["warm", "per-program"] as const;
export type LocalIsolation = (typeof LOCAL_ISOLATIONS)[number];
/** Where the local sandbox's managers run a program's cases (rlpipe serve --case-loop). */
export const LOCAL_CASE_LOOPS = ["c", "python"] as const;
export type LocalCaseLoop = (typeof LOCAL_CASE_LOOPS)[number];
export const LOCAL_PROGRAM_NAMESPACES = ["own", "shared"] as const;
export type LocalProgramNamespaces = (typeof LOCAL_PROGRAM_NAMESPACES)[number];

/** The local sandbox's own options (rlpipe serve --sandbox local). */
export interface LocalBackendOptions {
  readonly isolation?: LocalIsolation;
  /** A Python environment for programs (rlpipe sandbox setup --python-env DIR). */
  readonly pythonEnv?: string;
  /** Where the managers run a program's cases: c (default, when a C compiler is here) or python. */
  readonly caseLoop?: LocalCaseLoop;
  /** own (default, where the kernel allows): each program in namespaces of its own; shared: the sandbox's, cleaned up after. */
  readonly programNamespaces?: LocalProgramNamespaces;
  /** Where the sandbox says what it found (a sandbox retired after a program, a harness that stopped answering). */
  readonly log?: (line: string) => void;
}

export async function createBackend(kind: string, opts: BackendOptions = {}, local: LocalBackendOptions = {}): Promise<SandboxBackend> {
  switch (kind) {
    case "local": {
      const { LocalSandbox } = await import("../adapters/sandboxes/local/local-sandbox.js");
      return LocalSandbox.create({
        isolation: local.isolation ?? "warm", caseLoop: (local.caseLoop ?? "c") === "c", programNamespaces: (local.programNamespaces ?? "own") === "own",
        ...(local.pythonEnv === undefined ? {} : { pythonEnv: local.pythonEnv }),
        ...(opts.concurrency === undefined ? {} : { concurrency: opts.concurrency }), ...(local.log === undefined ? {} : { log: local.log }),
      });
    }
    case "scalebox":
    case "e2b":
      return createRemoteBackend(kind, opts);
    default:
      throw invalidBackend("usage", `unknown sandbox ${JSON.stringify(kind)}; expected ${SANDBOX_KINDS.join(", ")}`, "run rlpipe --help");
  }
}
