// The answer to an HTTP request whose handler threw. A classified rlpipe error keeps its stable code and hint, so
// a caller (a sync sidecar, a reward client) can tell a store or provider that refused from a setting to fix and
// from a bug: 502 when the service behind the function refused (credentials, a missing bucket), 503 when it could
// not be reached or is overloaded (worth a retry) or when the function's own configuration is wrong (exit 2, as a
// failed cold start answers). Anything else is a bug: 500 {"detail":"internal error"}, its text only in the log.
import { ExitCode, RlpipeError } from "../core/errors.js";
import { type FnResponse, json } from "./http-types.js";

/** `redact` scrubs the message (the function's secrets, credential-looking strings) before it leaves. */
export function thrownResponse(e: unknown, redact: (text: string) => string): FnResponse {
  if (!(e instanceof RlpipeError) || (e.exitCode !== ExitCode.external && e.exitCode !== ExitCode.invalidInput)) return json(500, { detail: "internal error" });
  const retryable = (e as { retryable?: unknown }).retryable === true;
  const status = e.exitCode === ExitCode.invalidInput || retryable ? 503 : 502;
  return json(status, { detail: redact(e.message), code: e.code, ...(e.hint === undefined ? {} : { hint: redact(e.hint) }) });
}
