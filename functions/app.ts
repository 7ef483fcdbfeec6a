// The contract between a function's code and the platform it runs on. An app is built once per process (the
// platform's cold start) from a ColdStart, and then answers HTTP-trigger requests (`http`) and direct
// invocations (`event`: console JSON test events, object-storage notifications). The platform adapters in
// functions/platforms/ own everything platform-specific: event shapes, base64, size limits, secrets, logging.
import type { FnRequest, FnResponse } from "./http-types.js";

export type { FnRequest, FnResponse } from "./http-types.js";

/** Where secrets come from on a platform (Secrets Manager, encrypted environment variables, …); cached; never logged. */
export interface SecretSource { get(name: string): Promise<string | undefined> }

export interface ColdStart {
  readonly env: NodeJS.ProcessEnv;
  readonly secrets: SecretSource;
  /** The platform's log (redacted: secret values never appear). */
  readonly log: (line: string) => void;
  /** The platform the app runs on (lambda, functiongraph, scf), when a platform adapter built it. */
  readonly platform?: string;
  /** The function instance's memory as the platform reports it (function GB-seconds in usage records). */
  readonly memoryMb?: number;
}

export interface FunctionApp {
  /** HTTP-triggered requests (reward/tool API, runs function, console over HTTP). */
  http?(req: FnRequest): Promise<FnResponse>;
  /** Direct invocations: console JSON test events and object-storage notifications (S3/OBS/COS). */
  event?(event: unknown): Promise<unknown>;
}

export type FunctionAppFactory = (cold: ColdStart) => Promise<FunctionApp>;
