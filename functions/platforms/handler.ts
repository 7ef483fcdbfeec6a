// The handler every platform adapter returns: it builds the app once per process (cold start), sends HTTP
// trigger events through the app's `http` and every other event to its `event`. An exception never leaves with
// a stack or a secret: an HTTP caller gets 500 {detail:"internal error"}, the log gets one redacted line.
import { ExitCode, RlpipeError } from "../../core/errors.js";
import type { ColdStart, FunctionApp, FunctionAppFactory } from "../app.js";
import { BadHttpEvent, type HttpEvent, type HttpLimits, errorResult, parseBasePath, serveHttpEvent } from "./http-event.js";
import { Lazy, RedactingLog, describeError, isConfigError } from "./runtime.js";

export interface PlatformSpec<Ctx> {
  readonly limits: HttpLimits;
  /** The event in the common HTTP shape; undefined when it is not an HTTP trigger event; BadHttpEvent for a broken one. */
  httpEvent(event: unknown): HttpEvent | undefined;
  /**
   * Identifies the platform's temporary credentials in this invocation (an agency or role key id); when it
   * changes, the app is built again so that it signs with the new ones. Undefined: nothing to follow.
   */
  credentialStamp?(ctx: Ctx): string | undefined;
  /**
   * Milliseconds the platform leaves this invocation, when its context tells: a request's programs are stopped a
   * little before (nobody would receive their answer), so they do not outlive it in a remote sandbox.
   */
  remainingMs?(ctx: Ctx): number | undefined;
  /** Environment and secrets for the cold start, from the first invocation's context. */
  coldStart(ctx: Ctx, base: { readonly env: NodeJS.ProcessEnv; readonly log: RedactingLog; readonly fetch: typeof fetch }): ColdStart;
}

/** For tests and embedding; a platform passes nothing. */
export interface HandlerOptions {
  /** Default process.env. */
  readonly env?: NodeJS.ProcessEnv;
  /** Where log lines go (already redacted). Default console.log (CloudWatch, LTS and CLS all collect stdout). */
  readonly log?: (line: string) => void;
  /** For the secret stores' HTTP calls. Default globalThis.fetch. */
  readonly fetch?: typeof fetch;
}

export type PlatformHandler<Ctx> = (event: unknown, context: Ctx) => Promise<unknown>;

interface Built {
  readonly app: FunctionApp;
  readonly basePath: string | undefined;
}

function keysOf(event: unknown): string {
  if (event === null || typeof event !== "object" || Array.isArray(event)) return event === null ? "null" : Array.isArray(event) ? "an array" : typeof event;
  const keys = Object.keys(event).sort();
  return keys.length === 0 ? "an empty object" : `an object with keys ${keys.slice(0, 12).join(", ")}${keys.length > 12 ? ", …" : ""}`;
}

export function platformHandler<Ctx>(spec: PlatformSpec<Ctx>, factory: FunctionAppFactory, opts: HandlerOptions = {}): PlatformHandler<Ctx> {
  const env = opts.env ?? process.env;
  const log = new RedactingLog(env, opts.log ?? ((line) => console.log(line)));
  const build = async (ctx: Ctx): Promise<Built> => {
    const cold = spec.coldStart(ctx, { env, log, fetch: opts.fetch ?? globalThis.fetch });
    const basePath = parseBasePath(cold.env["RLPIPE_BASE_PATH"]);
    const started = performance.now();
    const app = await factory(cold);
    log.line(`cold start ${(performance.now() - started).toFixed(0)}ms`);
    return { app, basePath };
  };
  let current: { stamp: string | undefined; lazy: Lazy<Ctx, Built> } | undefined;
  /** The app for this invocation: built once, and again only when the platform's temporary credentials changed. */
  const appFor = (ctx: Ctx): Promise<Built> => {
    const stamp = spec.credentialStamp?.(ctx);
    if (current === undefined || (stamp !== undefined && stamp !== current.stamp)) {
      if (current !== undefined) log.line("temporary credentials changed: building the app again");
      current = { stamp, lazy: new Lazy<Ctx, Built>(build) };
    }
    return current.lazy.get(ctx);
  };
  const { limits } = spec;

  return async (event: unknown, context: Ctx): Promise<unknown> => {
    let http: HttpEvent | undefined;
    try {
      http = spec.httpEvent(event);
    } catch (e) {
      if (!(e instanceof BadHttpEvent)) throw e;
      log.line(`bad event: ${e.message}`);
      return errorResult(400, e.message, limits);
    }
    let built: Built;
    try {
      built = await appFor(context);
    } catch (e) {
      log.line(`cold start failed: ${describeError(e)}`);
      // A configuration error names the variable to fix (never a value); a service that refused or could not be
      // reached (E2B, Secrets Manager) is named by its stable error code; anything else stays in the log.
      const [status, detail] = isConfigError(e) ? [503, `the function is not configured: ${log.redact(e.message)}`]
        : e instanceof RlpipeError ? [503, `the function could not start (${e.code}); see its log`] : [500, "internal error"];
      if (http !== undefined) return errorResult(status, detail, limits);
      throw new Error(detail);
    }
    if (http !== undefined) {
      const remaining = spec.remainingMs?.(context);
      return serveHttpEvent(http, built.app, { limits, basePath: built.basePath, log: log.line, redact: (t) => log.redact(t), ...(remaining === undefined ? {} : { remainingMs: remaining }) });
    }
    if (built.app.event === undefined) {
      const detail = `this function answers ${limits.platform} HTTP trigger events only; got ${keysOf(event)}`;
      log.line(`unhandled event: ${detail}`);
      return errorResult(400, detail, limits);
    }
    try {
      return await built.app.event(event);
    } catch (e) {
      log.line(`error ${describeError(e)}`);
      // What the platform records for the failed invocation (Lambda: its on-failure destination's errorMessage):
      // a store or provider that refused or could not be reached keeps its stable code; a bug stays in the log.
      if (isConfigError(e)) throw new Error(log.redact(e.message));
      if (e instanceof RlpipeError && e.exitCode === ExitCode.external) throw new Error(`${e.code}: ${log.redact(e.message)}${e.hint === undefined ? "" : ` (${log.redact(e.hint)})`}`);
      throw new Error("internal error (see the function log)");
    }
  };
}

/** The memory a platform reports for the instance ({} when it says nothing usable): usage records' GB-seconds. */
export function memoryOf(v: unknown): { memoryMb?: number } {
  const n = typeof v === "number" ? v : typeof v === "string" && /^\d+$/.test(v.trim()) ? Number(v) : NaN;
  return Number.isFinite(n) && n > 0 ? { memoryMb: n } : {};
}
