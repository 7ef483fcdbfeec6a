// SDK-HMAC-SHA256 as Huawei Cloud's API Gateway checks it, recomputed from what arrived on the wire (the host is
// signed WITH the port, as the core SDK signs it; X-Sdk-Date within 15 minutes; every sent X-Project-Id,
// X-Security-Token and Content-Type must be signed). Shared by the loopback fakes of Huawei APIs (ModelArts,
// FunctionGraph); each answers a problem with API Gateway's APIGW.0301 and 401.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

export const MAX_SKEW_MS = 15 * 60 * 1000;

export interface SdkHmacKeys {
  readonly ak: string;
  readonly sk: string;
  /** When set, every request must carry this X-Security-Token (signed); when not, none may. */
  readonly securityToken?: string | undefined;
  readonly nowMs: number;
}

const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Why the request's signature is not valid, or undefined when it is. */
export function sdkHmacProblem(req: IncomingMessage, body: Buffer, keys: SdkHmacKeys): string | undefined {
  const auth = req.headers["authorization"];
  const m = typeof auth === "string" ? /^SDK-HMAC-SHA256 Access=([^,\s]+), SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/.exec(auth) : null;
  if (m === null) return "missing or malformed Authorization";
  const [, access, signedList, sig] = m;
  if (access !== keys.ak) return `access key ${access} not found`; // API Gateway quotes the key it refused
  const signed = signedList!.split(";");
  if ([...signed].sort().join(";") !== signedList || new Set(signed).size !== signed.length) return "SignedHeaders not sorted and unique";
  for (const must of ["host", "x-sdk-date"]) if (!signed.includes(must)) return `${must} not signed`;
  for (const h of ["x-project-id", "x-security-token", "content-type"]) if (req.headers[h] !== undefined && !signed.includes(h)) return `${h} sent but not signed`;
  const date = req.headers["x-sdk-date"];
  const dm = typeof date === "string" ? /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(date) : null;
  if (dm === null) return "bad X-Sdk-Date";
  const t = Date.UTC(+dm[1]!, +dm[2]! - 1, +dm[3]!, +dm[4]!, +dm[5]!, +dm[6]!);
  if (Math.abs(keys.nowMs - t) > MAX_SKEW_MS) return "request expired (X-Sdk-Date more than 15 minutes off)";
  const token = req.headers["x-security-token"];
  if (keys.securityToken !== undefined ? token !== keys.securityToken : token !== undefined) return "bad security token";

  const raw = req.url ?? "/";
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const query = q < 0 ? "" : raw.slice(q + 1);
  let uri = path.split("/").map(enc).join("/");
  if (!uri.endsWith("/")) uri += "/";
  const params = new Map<string, string[]>();
  for (const part of query === "" ? [] : query.split("&")) {
    const eq = part.indexOf("=");
    let k: string;
    let v: string;
    try {
      k = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
      v = decodeURIComponent(eq < 0 ? "" : part.slice(eq + 1));
    } catch { return "bad query encoding"; }
    params.set(k, [...(params.get(k) ?? []), v]);
  }
  const canonicalQuery = [...params.keys()].sort().flatMap((k) => [...params.get(k)!].sort().map((v) => `${enc(k)}=${enc(v)}`)).join("&");
  const lines: string[] = [];
  for (const h of signed) {
    const v = req.headers[h];
    if (v === undefined) return `signed header ${h} missing`;
    lines.push(`${h}:${Array.isArray(v) ? v.join(", ") : v}\n`);
  }
  const contentSha = req.headers["x-sdk-content-sha256"];
  const payload = typeof contentSha === "string" && signed.includes("x-sdk-content-sha256") ? contentSha : createHash("sha256").update(body).digest("hex");
  const canonical = [req.method, uri, canonicalQuery, lines.join(""), signedList, payload].join("\n");
  const sts = `SDK-HMAC-SHA256\n${date}\n${createHash("sha256").update(canonical).digest("hex")}`;
  const want = createHmac("sha256", keys.sk).update(sts).digest();
  if (!timingSafeEqual(want, Buffer.from(sig!, "hex"))) return "signature does not match";
  return undefined;
}
