// What `rlpipe functions deploy` needs from a function platform's API (FunctionGraph, SCF): find a function by
// name, create one, replace its code, replace its configuration. Each call is one attempt; its failure is a
// FunctionsApiError whose kind says whether it may be repeated, and whose message carries the platform's code.
import { RlpipeError } from "../../core/errors.js";
import type { FunctionPlatform } from "../../core/packaging/targets.js";
import type { DeployedTrigger, TriggerSpec, WantedTrigger } from "../../core/packaging/triggers.js";
import { kindOfNetworkError, tlsFailure } from "./provider.js";

/** A function as rlpipe wants it deployed. */
export interface FunctionSpec {
  readonly name: string;
  readonly runtime: string;
  readonly handler: string;
  readonly memoryMb: number;
  readonly timeoutS: number;
  readonly env: Readonly<Record<string, string>>;
  /** Never printed; FunctionGraph keeps them in encrypted_user_data. */
  readonly secrets: Readonly<Record<string, string>>;
  readonly description: string;
  /** FunctionGraph agency (xrole) / SCF execution role the function runs as; unset leaves none. */
  readonly role?: string;
  readonly zip: Uint8Array;
}

/** A deployed function, as the platform describes it. */
export interface DeployedFunction {
  readonly name: string;
  /** FunctionGraph: the function URN; SCF: the FunctionId (or the name). */
  readonly id: string;
  readonly runtime?: string;
  readonly handler?: string;
  readonly memoryMb?: number;
  readonly timeoutS?: number;
  readonly description?: string;
}

export type FunctionsFailureKind = "retryable" | "ambiguous" | "exists" | "not_found" | "busy" | "fatal";

export class FunctionsApiError extends RlpipeError {
  readonly platform: FunctionPlatform;
  readonly kind: FunctionsFailureKind;
  /** The platform's error code (FSS.0409, ResourceNotFound.Function…) when it sent one. */
  readonly platformCode: string | undefined;
  readonly httpStatus: number | undefined;
  constructor(platform: FunctionPlatform, kind: FunctionsFailureKind, code: string, message: string, opts: { platformCode?: string; httpStatus?: number; hint?: string; exitCode?: 2 | 3 | 4 } = {}) {
    super(code, message, { exitCode: opts.exitCode ?? 3, ...(opts.hint === undefined ? {} : { hint: opts.hint }) });
    this.name = "FunctionsApiError";
    this.platform = platform;
    this.kind = kind;
    this.platformCode = opts.platformCode;
    this.httpStatus = opts.httpStatus;
  }
}

export interface FunctionsApi {
  readonly platform: FunctionPlatform;
  /** Where the API is (for messages). */
  readonly endpoint: string;
  find(name: string, signal?: AbortSignal): Promise<DeployedFunction | undefined>;
  create(spec: FunctionSpec, signal?: AbortSignal): Promise<DeployedFunction>;
  updateCode(fn: DeployedFunction, spec: FunctionSpec, signal?: AbortSignal): Promise<void>;
  updateConfig(fn: DeployedFunction, spec: FunctionSpec, signal?: AbortSignal): Promise<void>;
  /** Wait until the function takes changes again (SCF: Active); a no-op where the API has no such state. */
  settle(fn: DeployedFunction, signal?: AbortSignal): Promise<void>;
  /** The request bodies as they would be sent, code and secrets replaced by placeholders (for --dry-run). */
  preview(action: "create" | "updateCode" | "updateConfig", spec: FunctionSpec): unknown;
  readonly triggers: TriggersApi;
  close(): void;
}

/** A function's triggers and the identity it runs as (core/packaging/triggers.ts plans; this carries out). */
export interface TriggersApi {
  /** The platform's body for a wanted trigger (its type code, key and the fields rlpipe sets). */
  spec(fn: DeployedFunction, wanted: WantedTrigger, opts: { readonly timeoutS: number }): TriggerSpec;
  list(fn: DeployedFunction, signal?: AbortSignal): Promise<DeployedTrigger[]>;
  create(fn: DeployedFunction, spec: TriggerSpec, signal?: AbortSignal): Promise<void>;
  /** Whether the platform can change a trigger of this type in place (otherwise: delete, then create). */
  canUpdate(type: string): boolean;
  update(fn: DeployedFunction, deployed: DeployedTrigger, spec: TriggerSpec, signal?: AbortSignal): Promise<void>;
  delete(fn: DeployedFunction, deployed: DeployedTrigger, signal?: AbortSignal): Promise<void>;
  /** Whether the agency / role exists and may be taken by the platform; `problem` says why not. */
  checkRole(name: string, signal?: AbortSignal): Promise<{ readonly exists: boolean; readonly problem?: string }>;
}

/** A network failure of one call, classified (refused: retryable; reset or timeout after sending: ambiguous). */
export function networkFailure(platform: FunctionPlatform, what: string, e: unknown, endpoint: string): FunctionsApiError {
  const tls = tlsFailure(e);
  if (tls !== undefined) return new FunctionsApiError(platform, "fatal", `${platform}_tls_failed`, `${what} at ${endpoint}: ${tls}`, { hint: "check the endpoint" });
  const kind = kindOfNetworkError(e);
  const err = e as { code?: string; cause?: { code?: string; message?: string } };
  const code = err.cause?.code ?? err.code ?? err.cause?.message ?? (e instanceof Error ? e.message : String(e));
  return new FunctionsApiError(platform, kind === "retryable" ? "retryable" : "ambiguous", `${platform}_network`, `${what}: network error (${code}) talking to ${endpoint}`, {
    hint: "check the endpoint, your network and the platform's status; the command can be repeated safely",
  });
}

/** Placeholders for what a preview must not show. */
export function codePlaceholder(zip: Uint8Array): string {
  return `<base64 of the ${zip.length}-byte zip>`;
}

export function maskedSecrets(secrets: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.keys(secrets).sort().map((k) => [k, "***"]));
}
