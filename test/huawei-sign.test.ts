// Our SDK-HMAC-SHA256 signer against @huaweicloud/huaweicloud-sdk-core's (the dev dependency kept for this test
// only): byte-identical Authorization headers on hand-picked and seeded random requests — methods, non-ASCII
// JSON bodies, queries with spaces, reserved characters and repeated keys, long and encoded paths, empty bodies,
// security tokens. Core only signs here (AKSKSigner.sign, HcClient.buildRequest): nothing is sent, nothing logged.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AKSKSigner } from "@huaweicloud/huaweicloud-sdk-core/auth/AKSKSigner.js";
import { BasicCredentials } from "@huaweicloud/huaweicloud-sdk-core/auth/BasicCredentials.js";
import { ClientBuilder } from "@huaweicloud/huaweicloud-sdk-core/ClientBuilder.js";
import { type HuaweiCredentials, type QueryParams, canonicalQuery, encodePathSegment, encodeRfc3986, sdkDate, signRequest } from "../adapters/providers/huawei-sign.js";
import { fakeHuaweiAk, fakeHuaweiSk, fakeSecurityToken } from "./fakes/credentials.js";
import { seededRandom } from "./helpers.js";

const AK = fakeHuaweiAk();
const SK = fakeHuaweiSk();
const TOKEN = fakeSecurityToken();

interface Case {
  readonly name: string;
  readonly method: string;
  readonly endpoint: string;
  readonly path: string;
  readonly query?: Record<string, string | string[]>;
  readonly headers?: Record<string, string>;
  /** A JSON body (core hashes JSON.stringify(data)), or raw text sent with X-Sdk-Content-Sha256. */
  readonly json?: unknown;
  readonly token?: boolean;
  readonly date: Date;
}

/** Core's Authorization for a case; the credential object is the minimal one the signer reads. */
function coreAuthorization(c: Case): string {
  const headers: Record<string, string> = { ...(c.headers ?? {}), "X-Sdk-Date": sdkDate(c.date) };
  if (c.token === true) headers["X-Security-Token"] = TOKEN;
  const queryParams = c.query === undefined ? undefined : Object.fromEntries(Object.entries(c.query).map(([k, v]) => [k, Array.isArray(v) ? [...v] : v]));
  const request = { method: c.method, endpoint: `${c.endpoint}${c.path}`, headers, queryParams, data: c.json } as unknown as Parameters<typeof AKSKSigner.sign>[0];
  const credential = { getAk: () => AK, getSk: () => SK } as unknown as Parameters<typeof AKSKSigner.sign>[1];
  const out = AKSKSigner.sign(request, credential) as Record<string, string>;
  return out["Authorization"]!;
}

function ours(c: Case): { url: string; headers: Readonly<Record<string, string>> } {
  const creds: HuaweiCredentials = { ak: AK, sk: SK, ...(c.token === true ? { securityToken: TOKEN } : {}) };
  return signRequest({
    method: c.method, endpoint: c.endpoint, path: c.path,
    ...(c.query === undefined ? {} : { query: c.query as QueryParams }),
    ...(c.headers === undefined ? {} : { headers: c.headers }),
    ...(c.json === undefined ? {} : { body: JSON.stringify(c.json) }),
    date: c.date,
  }, creds);
}

const path = (...segments: string[]) => `/${segments.map(encodePathSegment).join("/")}`;
const D = new Date(Date.UTC(2026, 10, 22, 13, 5, 9));

const HAND_PICKED: Case[] = [
  { name: "POST create with a non-ASCII JSON body", method: "POST", endpoint: "https://modelarts.cn-southwest-2.myhuaweicloud.com", path: "/v2/0123456789abcdef0123456789abcdef/training-jobs", headers: { "content-type": "application/json", "X-Project-Id": "0123456789abcdef0123456789abcdef" }, json: { kind: "job", metadata: { name: "qwen3-1-7b-abcdef12", description: "训练 – ünïcödé 🚀" } }, date: D },
  { name: "GET show with an empty body", method: "GET", endpoint: "https://modelarts.cn-north-4.myhuaweicloud.com", path: "/v2/pid/training-jobs/2cd88daa-31a4-40a8-a58f-d186b0e93e4f", date: D },
  { name: "GET with a query holding a space", method: "GET", endpoint: "https://modelarts.cn-north-4.myhuaweicloud.com", path: "/v2/pid/training-job-flavors", query: { flavor_type: "Ascend", name: "a b" }, date: D },
  { name: "loopback endpoint with a port (host signed with the port)", method: "POST", endpoint: "http://127.0.0.1:43117", path: "/v2/pid/training-job-searches", headers: { "content-type": "application/json" }, json: { offset: 0, limit: 50, filters: [{ key: "name", operator: "like", value: ["x"] }] }, date: D },
  { name: "repeated query keys, sorted values", method: "GET", endpoint: "https://example.myhuaweicloud.com", path: "/v1/items", query: { tag: ["zeta", "alpha", "Mid dle", "ä"], a: "1" }, date: D },
  { name: "reserved characters in query keys and values", method: "GET", endpoint: "https://example.myhuaweicloud.com", path: "/v1/search", query: { "q!*'()": "a+b=c&d/e?f#g", "~k.e-y_": "%41;,:@$" }, date: D },
  { name: "temporary credentials (X-Security-Token)", method: "POST", endpoint: "https://modelarts.cn-southwest-2.myhuaweicloud.com", path: "/v2/pid/training-jobs/abc/actions", headers: { "content-type": "application/json" }, json: { action_type: "terminate" }, token: true, date: D },
  { name: "encoded path segments (double-encoded in the canonical URI, as core does)", method: "GET", endpoint: "https://example.myhuaweicloud.com", path: path("v2", "a b", "ü/x", "50%", "日本"), date: D },
  { name: "root path", method: "GET", endpoint: "https://example.myhuaweicloud.com", path: "/", date: D },
  { name: "path ending in a slash", method: "DELETE", endpoint: "https://example.myhuaweicloud.com", path: "/v2/pid/training-jobs/abc/", date: D },
  { name: "unsigned payload for a non-JSON body", method: "PUT", endpoint: "https://example.myhuaweicloud.com", path: "/v1/upload", headers: { "Content-Type": "application/octet-stream", "X-Sdk-Content-Sha256": "UNSIGNED-PAYLOAD" }, date: D },
  { name: "mixed-case custom headers", method: "PATCH", endpoint: "https://example.myhuaweicloud.com:8443", path: "/v3/things/1", headers: { "Content-Type": "application/json", "X-Language": "en-us", "x-Custom-HEADER-2": "Value With Spaces" }, json: { patch: [1, 2, { "ключ": "значение" }] }, date: D },
];


function randomCases(count: number, seed: number): Case[] {
  const r = seededRandom(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const segs = ["v2", "training-jobs", "2cd88daa-31a4-40a8-a58f-d186b0e93e4f", "worker-0", "logs", "preview", "a b", "ü", "x%y", "job:1", "日本語", "emoji-🚀", "semi;colon", "plus+sign", "tilde~ok", "UPPER_lower.123", "q?x", "h#x", "(paren)", "'quote'", "*star*"];
  const keys = ["limit", "offset", "flavor_type", "a b", "key=with=eq", "ключ", "x&y", "sort_by", "~t", "*", "Z", "a"];
  const vals = ["1", "50", "Ascend", "a b c", "ü", "x+y", "50%", "", "2026-11-22T13:05:09Z", "/slash/", "emoji🚀", "!'()*", "=&?#"];
  const texts = ["hello", "训练作业", "ünïcödé", "emoji 🚀🔥", "quote \" and \\ backslash", "line\nbreak\ttab", "", "$HOME ${X}", "\u00e9\u0301 combining", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"];
  const hostPool = ["https://modelarts.cn-southwest-2.myhuaweicloud.com", "https://modelarts.ap-southeast-1.myhuaweicloud.cn", "http://127.0.0.1:8080", "http://localhost:39001", "https://example.myhuaweicloud.com:8443"];
  const out: Case[] = [];
  for (let i = 0; i < count; i++) {
    const method = pick(["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD"]);
    const depth = 1 + Math.floor(r() * 12);
    const p = path(...Array.from({ length: depth }, () => pick(segs))) + (r() < 0.2 ? "/" : "");
    const query: Record<string, string | string[]> = {};
    const nq = Math.floor(r() * 5);
    for (let q = 0; q < nq; q++) {
      const k = pick(keys);
      query[k] = r() < 0.3 ? Array.from({ length: 2 + Math.floor(r() * 3) }, () => pick(vals)) : pick(vals);
    }
    const headers: Record<string, string> = {};
    const withBody = method !== "GET" && method !== "HEAD" && r() < 0.8;
    if (withBody) headers[pick(["content-type", "Content-Type"])] = "application/json";
    if (r() < 0.6) headers["X-Project-Id"] = "0123456789abcdef0123456789abcdef";
    if (r() < 0.3) headers[pick(["X-Language", "x-request-id", "X-Trace-1"])] = pick(["en-us", "zh-cn", "a b", "ü"]);
    const json = withBody ? { name: `job-${i}`, text: pick(texts), list: Array.from({ length: Math.floor(r() * 4) }, () => pick(texts)), n: Math.floor(r() * 1e6), nested: { ok: r() < 0.5 } } : undefined;
    out.push({
      name: `random #${i} ${method} depth ${depth}`, method, endpoint: pick(hostPool), path: p,
      ...(nq === 0 ? {} : { query }), ...(Object.keys(headers).length === 0 ? {} : { headers }),
      ...(json === undefined ? {} : { json }), token: r() < 0.3,
      date: new Date(Date.UTC(2020 + Math.floor(r() * 10), Math.floor(r() * 12), 1 + Math.floor(r() * 28), Math.floor(r() * 24), Math.floor(r() * 60), Math.floor(r() * 60))),
    });
  }
  return out;
}

describe("SDK-HMAC-SHA256 signer", () => {
  const cases = [...HAND_PICKED, ...randomCases(40, 20261122)];

  it(`gives core's Authorization byte for byte on ${cases.length} requests`, () => {
    assert.ok(cases.length >= 30);
    for (const c of cases) {
      const mine = ours(c);
      const core = coreAuthorization(c);
      assert.match(core, new RegExp(`^SDK-HMAC-SHA256 Access=${AK}, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$`));
      assert.equal(mine.headers["Authorization"], core, c.name);
      assert.equal(mine.headers["X-Sdk-Date"], sdkDate(c.date));
      assert.equal(mine.headers["X-Security-Token"], c.token === true ? TOKEN : undefined);
    }
  });

  it("sends the path it signed and the canonical query as the query string", () => {
    const c = HAND_PICKED[4]!;
    const { url } = ours(c);
    assert.equal(url, "https://example.myhuaweicloud.com/v1/items?a=1&tag=Mid%20dle&tag=alpha&tag=zeta&tag=%C3%A4");
    assert.equal(new URL(url).search.slice(1), canonicalQuery(c.query as QueryParams));
    const encoded = ours(HAND_PICKED[7]!);
    assert.equal(new URL(encoded.url).pathname, HAND_PICKED[7]!.path);
  });

  it("matches core's whole request pipeline (HcClient.buildRequest: X-Project-Id, content type, security token)", async () => {
    const endpoint = "https://modelarts.cn-southwest-2.myhuaweicloud.com";
    const pid = "0123456789abcdef0123456789abcdef";
    const variants = [
      { method: "POST", url: "/v2/{project_id}/training-jobs", data: { kind: "job", metadata: { name: "n-1", description: "描述" } }, token: false },
      { method: "POST", url: "/v2/{project_id}/training-job-searches", data: { offset: 0, limit: 50, filters: [{ key: "name", operator: "like", value: ["n-1"] }] }, token: true },
      { method: "GET", url: "/v2/{project_id}/training-jobs/abc-123", data: undefined, token: false, queryParams: { x: "a b" } },
      { method: "GET", url: "/v2/{project_id}/training-jobs/abc-123/tasks/worker-0/logs/preview", data: undefined, token: true },
    ];
    for (const v of variants) {
      let cred = new BasicCredentials().withAk(AK).withSk(SK).withProjectId(pid);
      if (v.token) cred = cred.withSecurityToken(TOKEN);
      const client = new ClientBuilder((hc: unknown) => hc).withCredential(cred).withEndpoint(endpoint).build() as { buildRequest(o: unknown): Promise<{ headers: Record<string, string> }> };
      const built = await client.buildRequest({
        method: v.method, url: v.url, contentType: "application/json;charset=UTF-8", pathParams: {},
        queryParams: v.queryParams ?? {}, headers: { "X-Sdk-Date": sdkDate(D) }, ...(v.data === undefined ? {} : { data: v.data }),
      });
      const mine = signRequest({
        method: v.method, endpoint, path: v.url.replace("{project_id}", pid), ...(v.queryParams === undefined ? {} : { query: v.queryParams }),
        headers: { "content-type": "application/json", "X-Project-Id": pid }, ...(v.data === undefined ? {} : { body: JSON.stringify(v.data) }), date: D,
      }, { ak: AK, sk: SK, ...(v.token ? { securityToken: TOKEN } : {}) });
      assert.match(built.headers["Authorization"] ?? "", /SignedHeaders=content-type;host;x-project-id;x-sdk-date(;x-security-token)?, Signature=/);
      assert.equal(mine.headers["Authorization"], built.headers["Authorization"], `${v.method} ${v.url}`);
    }
  });

  it("a changed byte anywhere changes the signature", () => {
    const base = HAND_PICKED[0]!;
    const sig = (c: Case) => ours(c).headers["Authorization"]!.split("Signature=")[1];
    const variants: Case[] = [
      { ...base, method: "PUT" },
      { ...base, path: `${base.path}x` },
      { ...base, json: { ...(base.json as object), extra: 1 } },
      { ...base, headers: { ...base.headers, "X-Project-Id": "other" } },
      { ...base, date: new Date(D.getTime() + 1000) },
      { ...base, endpoint: "https://modelarts.cn-north-4.myhuaweicloud.com" },
      { ...base, query: { a: "1" } },
    ];
    const seen = new Set([sig(base)]);
    for (const v of variants) seen.add(sig(v));
    assert.equal(seen.size, variants.length + 1);
  });

  it("encodes as RFC 3986 and refuses what cannot be sent as signed", () => {
    assert.equal(encodeRfc3986("aZ09-._~ !*'()/ü😀"), "aZ09-._~%20%21%2A%27%28%29%2F%C3%BC%F0%9F%98%80");
    assert.throws(() => encodePathSegment(".."), /cannot be sent/);
    assert.throws(() => signRequest({ method: "GET", endpoint: "https://h.example", path: "/a b" }, { ak: AK, sk: SK }), /not in the form it is sent/);
    assert.throws(() => signRequest({ method: "GET", endpoint: "https://h.example", path: "/x", headers: { Host: "evil" } }, { ak: AK, sk: SK }), /set by the signer/);
    assert.throws(() => signRequest({ method: "GET", endpoint: "https://h.example", path: "/x", headers: { "X-A": "1", "x-a": "2" } }, { ak: AK, sk: SK }), /given twice/);
  });
});
