// The error reply every Huawei Cloud API here answers with (ModelArts, FunctionGraph, BSS, and API Gateway in front
// of them): {error_code, error_msg}. Each client maps the code to its own failure kinds; reading it is shared.
import { z } from "zod";

const ErrorBody = z.looseObject({ error_code: z.string().optional(), error_msg: z.string().optional() });

export interface HuaweiErrorReply {
  readonly code?: string;
  readonly msg?: string;
  /** "HTTP <status>[ <code>][: <message, cut at maxMessage>]", for messages. */
  readonly detail: string;
}

/** The code and message of an error reply; a body that is not that JSON gives the status only. */
export function huaweiErrorReply(status: number, text: string, maxMessage = 300): HuaweiErrorReply {
  let code: string | undefined;
  let msg: string | undefined;
  try {
    const p = ErrorBody.safeParse(JSON.parse(text));
    if (p.success) { code = p.data.error_code; msg = p.data.error_msg; }
  } catch { /* not JSON: status only */ }
  const detail = `HTTP ${status}${code === undefined ? "" : ` ${code}`}${msg === undefined ? "" : `: ${msg.slice(0, maxMessage)}`}`;
  return { ...(code === undefined ? {} : { code }), ...(msg === undefined ? {} : { msg }), detail };
}
