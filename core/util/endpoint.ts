// Endpoint overrides (recipe `endpoint:` or *_ENDPOINT variables) reach private or regional endpoints and, in tests,
// loopback servers. Plain http is accepted only for loopback addresses: credentials and signed requests never
// cross a network unencrypted. An endpoint written without a scheme (host[:port], as people copy them from
// consoles and as Ray's RAY_ADDRESS is often set) means https — or http on a loopback address, where nothing
// crosses a network and the servers (a Ray dashboard, a test fake) speak plain http, as Ray's own CLI assumes.

export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "[::1]" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export type EndpointProblem = { readonly code: "bad_endpoint" | "insecure_endpoint"; readonly message: string; readonly hint?: string };

const HAS_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
/** host[:port][/path] with nothing that could be a scheme ("localhost:8080" parses as scheme "localhost:"). */
const BARE_HOST = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?(\/.*)?$/;

/** The endpoint with its scheme: as written when it has one, else https (http for a loopback host). */
export function withScheme(endpoint: string): string {
  const raw = endpoint.trim();
  if (HAS_SCHEME.test(raw)) return raw;
  const m = BARE_HOST.exec(raw);
  if (m === null) return raw;
  const host = m[1]!.toLowerCase();
  return `${isLoopbackHost(host) ? "http" : "https"}://${raw}`;
}

/** The parsed endpoint, or what is wrong with it. */
export function parseEndpoint(endpoint: string): { readonly url: URL } | { readonly problem: EndpointProblem } {
  const full = withScheme(endpoint);
  let url: URL;
  try { url = new URL(full); } catch {
    return { problem: { code: "bad_endpoint", message: `not a URL: ${endpoint}`, hint: "write https://host[:port] (or host[:port], which means https)" } };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { problem: { code: "bad_endpoint", message: `unsupported scheme in ${endpoint} (expected https://)` } };
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    return { problem: { code: "insecure_endpoint", message: `plain http is allowed only for loopback endpoints, got ${endpoint}`, hint: "use https://" } };
  }
  return { url };
}
