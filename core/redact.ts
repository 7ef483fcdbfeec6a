// Everything rlpipe prints passes through redact(): values of secret environment variables and strings that
// look like credentials never reach a terminal or a log.

const SECRET_ENV = /(^|_)(API_?KEY|SECRET(_ACCESS)?_KEY|SECRET|TOKEN|PASSWORD|PASSWD|SK|AK|SECRET_ID|SESSION_TOKEN)$/i;
const PATTERNS: readonly RegExp[] = [
  /\bark_[A-Za-z0-9]{8,}/g,
  /\bAKID[0-9A-Za-z]{16,}/g,
  /\bAKIA[0-9A-Z]{16}\b/g,
  /\be2b_[0-9a-f]{20,}/g,
  /\bsk-[A-Za-z0-9_-]{20,}/g,
  /(Authorization:\s*(?:Bearer|SDK-HMAC-SHA256|TC3-HMAC-SHA256|AWS4-HMAC-SHA256)\s+)[^\s,]+/gi,
  /([?&](?:q-signature|X-Amz-Signature|X-Amz-Credential|Signature|q-ak)=)[^&\s"']+/gi,
];

/** Whether an environment variable's name says it holds a secret (…_API_KEY, …_SECRET, …_TOKEN, …_PASSWORD). */
export function isSecretName(name: string): boolean {
  return SECRET_ENV.test(name);
}

export class Redactor {
  private readonly values: string[];
  constructor(env: Readonly<Record<string, string | undefined>>, extraSecretEnvNames: readonly string[] = []) {
    const extra = new Set(extraSecretEnvNames);
    this.values = Object.entries(env)
      .filter(([k, v]) => v !== undefined && v.length >= 6 && (SECRET_ENV.test(k) || extra.has(k)))
      .map(([, v]) => v as string)
      .sort((a, b) => b.length - a.length);
  }

  redact(text: string): string {
    let out = text;
    for (const v of this.values) out = out.split(v).join("***");
    for (const re of PATTERNS) out = out.replace(re, (m, prefix: unknown) => (typeof prefix === "string" && m.startsWith(prefix) ? `${prefix}***` : "***"));
    return out;
  }
}
