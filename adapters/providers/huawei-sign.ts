// SDK-HMAC-SHA256: the AK/SK request signature of Huawei Cloud APIs (API Gateway), computed with node:crypto
// only. The canonical request follows @huaweicloud/huaweicloud-sdk-core's signer (test/huawei-sign.test.ts
// checks byte-identical Authorization headers):
//   method \n canonical URI \n canonical query \n canonical headers \n signed headers \n hex(sha256(body))
// - canonical URI: every segment of the path as sent, RFC 3986-encoded again ('%' becomes '%25'), ending in '/';
// - canonical query: keys sorted, repeated values sorted, keys and values RFC 3986-encoded, joined with '&';
// - every header sent (but Authorization) is signed, names lowercased and sorted, values as sent;
// - the body hash is X-Sdk-Content-Sha256 when set (UNSIGNED-PAYLOAD for streams).
// The wire query string is the canonical one, and the path must be sent exactly as given, so what is signed is
// what the server sees.
import { createHash, createHmac } from "node:crypto";

export const ALGORITHM = "SDK-HMAC-SHA256";
export const EMPTY_BODY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

export interface HuaweiCredentials {
  readonly ak: string;
  readonly sk: string;
  /** Temporary credentials (STS) also send X-Security-Token. */
  readonly securityToken?: string;
}

export type QueryParams = Readonly<Record<string, string | readonly string[]>>;

export interface SignInput {
  readonly method: string;
  /** Scheme, host and port: https://modelarts.cn-southwest-2.myhuaweicloud.com or http://127.0.0.1:PORT. */
  readonly endpoint: string;
  /** The path as sent, each segment already percent-encoded (see encodePathSegment). */
  readonly path: string;
  readonly query?: QueryParams;
  /** Headers to send and sign besides host, X-Sdk-Date and X-Security-Token (e.g. Content-Type, X-Project-Id). */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  /** Signing time (default now). */
  readonly date?: Date;
}

export interface SignedRequest {
  /** Full URL to send to (endpoint + path + canonical query). */
  readonly url: string;
  /** Headers to send: the given ones plus X-Sdk-Date, X-Security-Token and Authorization (host is set by the HTTP client). */
  readonly headers: Readonly<Record<string, string>>;
}

const UNRESERVED = /[A-Za-z0-9\-._~]/;

/** RFC 3986 percent-encoding of UTF-8 bytes: everything but A–Z a–z 0–9 - . _ ~ is escaped. */
export function encodeRfc3986(value: string): string {
  let out = "";
  for (const ch of value) {
    if (UNRESERVED.test(ch)) { out += ch; continue; }
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) throw new TypeError("cannot encode a lone UTF-16 surrogate");
    for (const b of Buffer.from(ch, "utf8")) out += `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** One path segment as it goes on the wire ("." and ".." are refused: URL parsers would resolve them away). */
export function encodePathSegment(segment: string): string {
  if (segment === "." || segment === "..") throw new TypeError(`path segment ${JSON.stringify(segment)} cannot be sent as is`);
  return encodeRfc3986(segment);
}

export function canonicalUri(path: string): string {
  const uri = path.split("/").map(encodeRfc3986).join("/");
  return uri.endsWith("/") ? uri : `${uri}/`;
}

/** Sorted, encoded query; also the query string sent, so the two cannot differ. */
export function canonicalQuery(query: QueryParams | undefined): string {
  if (query === undefined) return "";
  const parts: string[] = [];
  for (const key of Object.keys(query).sort()) {
    const value = query[key]!;
    const values = typeof value === "string" ? [value] : [...value].sort();
    for (const v of values) parts.push(`${encodeRfc3986(key)}=${encodeRfc3986(v)}`);
  }
  return parts.join("&");
}

/** YYYYMMDDTHHmmssZ in UTC. */
export function sdkDate(date: Date): string {
  return `${date.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "")}`;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash("sha256").update(data).digest("hex");
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The canonical request for already-assembled headers (lowercase names → values, host included). */
export function canonicalRequest(method: string, path: string, query: string, headers: ReadonlyMap<string, string>, payloadHash: string): { readonly text: string; readonly signedHeaders: string } {
  const names = [...headers.keys()].sort(byCodeUnit);
  const canonicalHeaders = names.map((n) => `${n}:${headers.get(n)!}\n`).join("");
  const signedHeaders = names.join(";");
  return { text: [method, canonicalUri(path), query, canonicalHeaders, signedHeaders, payloadHash].join("\n"), signedHeaders };
}

export function signature(sk: string, date: string, canonical: string): string {
  const stringToSign = `${ALGORITHM}\n${date}\n${sha256Hex(canonical)}`;
  return createHmac("sha256", sk).update(stringToSign).digest("hex");
}

/** Sign a request: returns the URL and the headers to send with it. */
export function signRequest(input: SignInput, creds: HuaweiCredentials): SignedRequest {
  const origin = new URL(input.endpoint);
  if (!input.path.startsWith("/")) throw new TypeError(`path must start with '/': ${JSON.stringify(input.path)}`);
  const query = canonicalQuery(input.query);
  const url = `${origin.protocol}//${origin.host}${input.path}${query === "" ? "" : `?${query}`}`;
  // The signed path must be the one sent: a URL parser must leave it unchanged.
  if (new URL(url).pathname !== input.path) throw new TypeError(`path ${JSON.stringify(input.path)} is not in the form it is sent; encode each segment with encodePathSegment`);

  const date = sdkDate(input.date ?? new Date());
  const send = new Map<string, [string, string]>();
  const add = (name: string, value: string) => {
    const key = name.toLowerCase();
    if (key === "host" || key === "authorization") throw new TypeError(`header ${name} is set by the signer`);
    if (send.has(key)) throw new TypeError(`header ${name} given twice`);
    send.set(key, [name, value]);
  };
  for (const [k, v] of Object.entries(input.headers ?? {})) add(k, v);
  add("X-Sdk-Date", date);
  if (creds.securityToken !== undefined && creds.securityToken !== "") add("X-Security-Token", creds.securityToken);

  const signed = new Map<string, string>([...send].map(([k, [, v]]) => [k, v]));
  signed.set("host", origin.host);
  const payloadHash = signed.get("x-sdk-content-sha256") ?? (input.body === undefined || input.body.length === 0 ? EMPTY_BODY_SHA256 : sha256Hex(input.body));
  const { text, signedHeaders } = canonicalRequest(input.method.toUpperCase(), input.path, query, signed, payloadHash);
  const headers: Record<string, string> = {};
  for (const [, [name, value]] of send) headers[name] = value;
  headers["Authorization"] = `${ALGORITHM} Access=${creds.ak}, SignedHeaders=${signedHeaders}, Signature=${signature(creds.sk, date, text)}`;
  return { url, headers };
}
