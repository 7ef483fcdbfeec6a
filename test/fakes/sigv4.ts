// A strict AWS SigV4 verifier for loopback fakes (header auth and presigned query auth), written from the
// public algorithm, so a fake rejects any request whose signature does not match the expected key.
import { createHash, createHmac } from "node:crypto";

const hmac = (key: Buffer | string, data: string) => createHmac("sha256", key).update(data).digest();
const hex = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");

/** RFC 3986 encoding as SigV4 wants it (paths are encoded segment by segment, keeping '/'). */
function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

export interface SignedRequest {
  readonly method: string;
  /** Raw path and query as received (still percent-encoded). */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export interface Verdict { readonly ok: boolean; readonly reason?: string; readonly payloadHash?: string; readonly expired?: boolean }

export function verifySigV4(req: SignedRequest, secretAccessKey: string, opts: { now?: Date; region?: string; service?: string } = {}): Verdict {
  const url = new URL(req.url, "http://placeholder");
  const q = url.searchParams;
  const header = (n: string) => { const v = req.headers[n.toLowerCase()]; return Array.isArray(v) ? v.join(",") : v; };
  let credential: string; let signedHeaders: string; let signature: string; let amzDate: string; let payloadHash: string;
  let presigned = false;
  if (q.has("X-Amz-Signature")) {
    presigned = true;
    credential = q.get("X-Amz-Credential") ?? "";
    signedHeaders = q.get("X-Amz-SignedHeaders") ?? "";
    signature = q.get("X-Amz-Signature") ?? "";
    amzDate = q.get("X-Amz-Date") ?? "";
    payloadHash = "UNSIGNED-PAYLOAD";
    const expires = Number(q.get("X-Amz-Expires") ?? "0");
    const t = Date.UTC(+amzDate.slice(0, 4), +amzDate.slice(4, 6) - 1, +amzDate.slice(6, 8), +amzDate.slice(9, 11), +amzDate.slice(11, 13), +amzDate.slice(13, 15));
    if ((opts.now ?? new Date()).getTime() > t + expires * 1000) return { ok: false, expired: true, reason: "Request has expired" };
  } else {
    const auth = header("authorization") ?? "";
    const m = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
    if (m === null) return { ok: false, reason: "missing or malformed Authorization" };
    [credential, signedHeaders, signature] = [m[1]!, m[2]!, m[3]!];
    amzDate = header("x-amz-date") ?? "";
    payloadHash = header("x-amz-content-sha256") ?? "";
    if (payloadHash === "") return { ok: false, reason: "missing x-amz-content-sha256" };
  }
  const [, date, region, service, term] = credential.split("/");
  if (term !== "aws4_request" || date === undefined || region === undefined || service === undefined) return { ok: false, reason: "bad credential scope" };
  const canonicalQuery = [...q.entries()].filter(([k]) => k !== "X-Amz-Signature")
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`).join("&");
  const names = signedHeaders.split(";");
  const canonicalHeaders = names.map((n) => `${n}:${(header(n) ?? "").trim().replace(/\s+/g, " ")}\n`).join("");
  const canonicalPath = url.pathname.split("/").map((p) => uriEncode(decodeURIComponent(p))).join("/");
  const canonical = [req.method, canonicalPath, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].join("\n");
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, hex(canonical)].join("\n");
  const key = hmac(hmac(hmac(hmac(`AWS4${secretAccessKey}`, date), region), service), "aws4_request");
  const expected = createHmac("sha256", key).update(toSign).digest("hex");
  if (expected !== signature) return { ok: false, reason: `SignatureDoesNotMatch${presigned ? " (presigned)" : ""}` };
  return { ok: true, payloadHash };
}
