// Reading a function's configuration at cold start: every error names the variable and says what it must hold
// (never its value), with exit code 2 (configuration) so the platform adapter reports it as "not configured".
import { RlpipeError } from "../../core/errors.js";
import type { ColdStart } from "../app.js";

export function configError(code: string, message: string, hint?: string): RlpipeError {
  return new RlpipeError(code, message, { exitCode: 2, ...(hint === undefined ? {} : { hint }) });
}

const SECRET_HINT = "store it in the platform's secret store: Lambda RLPIPE_SECRET_ARN (a JSON secret) or <NAME>_SECRET_ARN; "
  + "FunctionGraph an encrypted environment variable; SCF an environment variable";

/** A required secret of at least `minLength` characters. */
export async function requireSecret(cold: ColdStart, name: string, minLength: number, what: string): Promise<string> {
  const v = await cold.secrets.get(name);
  if (v === undefined || v === "") throw configError("secret_missing", `${name} is not set: it holds ${what}`, SECRET_HINT);
  if (v.length < minLength) throw configError("secret_too_short", `${name} must be at least ${minLength} characters (${what})`, SECRET_HINT);
  return v;
}

export async function optionalSecret(cold: ColdStart, name: string): Promise<string | undefined> {
  const v = await cold.secrets.get(name);
  return v === undefined || v === "" ? undefined : v;
}

export function requireEnv(cold: ColdStart, name: string, what: string): string {
  const v = cold.env[name]?.trim();
  if (v === undefined || v === "") throw configError("config_missing", `${name} is not set: it holds ${what}`);
  return v;
}

export function optionalPositiveInt(cold: ColdStart, name: string): number | undefined {
  const v = cold.env[name]?.trim();
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw configError("config_invalid", `${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

/** A positive number (fractions allowed: a rate), or undefined when unset. */
export function optionalPositiveNumber(cold: ColdStart, name: string): number | undefined {
  const v = cold.env[name]?.trim();
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw configError("config_invalid", `${name} must be a positive number, got ${JSON.stringify(v)}`);
  return n;
}

/** One of `allowed`, or undefined when unset. */
export function optionalChoice<T extends string>(cold: ColdStart, name: string, allowed: readonly T[]): T | undefined {
  const v = cold.env[name]?.trim();
  if (v === undefined || v === "") return undefined;
  if (!(allowed as readonly string[]).includes(v)) throw configError("config_invalid", `${name} must be one of ${allowed.join(", ")}, got ${JSON.stringify(v)}`);
  return v as T;
}

/** A non-negative integer, or undefined when unset. */
export function optionalCount(cold: ColdStart, name: string): number | undefined {
  const v = cold.env[name]?.trim();
  if (v === undefined || v === "") return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw configError("config_invalid", `${name} must be a whole number (0 or more), got ${JSON.stringify(v)}`);
  return n;
}
