// Endpoint overrides (recipe `endpoint:` or *_ENDPOINT variables) reach private or regional endpoints and, in tests,
// loopback servers. Plain http is accepted only for loopback addresses: credentials and signed requests never
// cross a network unencrypted.

export function isLoopbackHost(host: string): boolean {
  return host === "localhost" || host === "[::1]" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export type EndpointProblem = { readonly code: "bad_endpoint" | "insecure_endpoint"; readonly message: string; readonly hint?: string };

/** The parsed endpoint, or what is wrong with it. */
export function parseEndpoint(endpoint: string): { readonly url: URL } | { readonly problem: EndpointProblem } {
  let url: URL;
  try { url = new URL(endpoint); } catch { return { problem: { code: "bad_endpoint", message: `not a URL: ${endpoint}` } }; }
  if (url.protocol !== "http:" && url.protocol !== "https:") return { problem: { code: "bad_endpoint", message: `unsupported scheme in ${endpoint} (expected https://)` } };
  if (url.protocol === "http:" && !isLoopbackHost(url.hostname)) {
    return { problem: { code: "insecure_endpoint", message: `plain http is allowed only for loopback endpoints, got ${endpoint}`, hint: "use https://" } };
  }
  return { url };
}
