// Everything rlpipe prints, writes to a page, serves or returns as JSON passes through redact(), whoever reads it:
// the values of this shell's secret environment variables, and anything that looks like a credential by its name
// (WANDB_API_KEY=…, "password": "…", --token …: the name is kept, the value becomes ***), by its place
// (https://user:pass@host, ?X-Amz-Signature=…) or by its format (AKIA…, ghp_…, a PEM private key).
// The rules are data (REDACTION_RULES) because recipes/python/rlpipe_sync.py applies the same list inside the job,
// where there is no Node: test/redaction.test.ts checks the two lists are equal and redact one corpus identically.
// So every regex here is written in the subset JavaScript and Python read alike: no \s, \d, \w, \b or "." (they
// differ between the two; [\s\S], any character, does not), explicit ASCII classes and fixed-width lookbehinds.

const SECRET_ENV = /(^|_)(API_?KEY|SECRET(_ACCESS)?_KEY|SECRET|TOKEN|PASSWORD|PASSWD|SK|AK|SECRET_ID|SESSION_TOKEN)$/i;

// A value after a secret name: quoted ("…", '…', or \"…\" inside a JSON string) or a run of characters that ends
// at a space, a quote, a backslash (so a JSON string stays valid), or punctuation that separates fields; a trailing
// "." or ":" belongs to the sentence.
const V_END = String.raw` \t\r\n"'\\,;&<>(){}\[\]\x60|`;
const VALUE = String.raw`"(?:[^"\\\r\n]|\\[^\r\n])*"|'(?:[^'\\\r\n]|\\[^\r\n])*'|\\"(?:[^"\\\r\n]|\\[^"\r\n])*\\"|[^${V_END}]*[^${V_END}.:]`;
const PEM_BEGIN = "-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----";
const PEM_END = "-----END [A-Z0-9 ]*PRIVATE KEY-----";
const B64_LINE = "[ \\t]*[A-Za-z0-9+/=]{16,}[ \\t]*";

export const REDACTION_RULES = {
  /**
   * Credentials by format or place, in order: [id, regex, flags, a string the text must hold for the regex to be
   * tried (a cheap test that spares a long log the PEM rules' scan)]. Group 2 becomes ***; groups 1 and 3 are kept.
   * A PEM block cut by a log page or a report's tail (only its BEGIN, or only its END, in the text) still loses its
   * base64 lines; at most 120 of them are looked at (a 4096-bit key has ~50), which bounds the backtracking.
   */
  patterns: [
    ["pem-block", `(${PEM_BEGIN})([\\s\\S]*?)(${PEM_END})`, "", "PRIVATE KEY-----"],
    ["pem-head", `(${PEM_BEGIN})((?:\\r?\\n${B64_LINE}){1,120})()`, "", "PRIVATE KEY-----"],
    ["pem-tail", `(?<![^\\n])()((?:${B64_LINE}\\r?\\n){1,120})(${PEM_END})`, "", "PRIVATE KEY-----"],
    ["authorization", String.raw`((?<![A-Za-z0-9_-])(?:Proxy-)?Authorization\\?["']?[ \t]*[:=][ \t]*\\?["']?(?:(?:Bearer|Basic|Token|Digest|SDK-HMAC-SHA256|TC3-HMAC-SHA256|AWS4-HMAC-SHA256)[ \t]+)?)([^ \t\r\n"'\\,]+)()`, "i", ""],
    ["bearer", String.raw`((?<![A-Za-z0-9_-])Bearer[ \t]+)([A-Za-z0-9._~+/=-]{16,})()`, "i", ""],
    ["url-userinfo", String.raw`((?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://)([^ \t\r\n/?#@"'<>\\:]+:[^ \t\r\n/?#@"'<>\\]*)(@)`, "", ""],
    ["signed-param", String.raw`((?<![A-Za-z0-9_-])(?:X-Amz-Signature|X-Amz-Credential|X-Amz-Security-Token|X-Goog-Signature|X-Goog-Credential|X-Cos-Security-Token|X-Obs-Security-Token|Signature|sig|q-signature|q-ak|AccessKeyId|access_token|token)=)([^&# \t\r\n"'<>\\,]+)()`, "i", ""],
    ["aws-key-id", "()((?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9]))()", "", ""],
    ["tencent-secret-id", "()((?<![A-Za-z0-9])AKID[0-9A-Za-z]{16,})()", "", ""],
    ["e2b-key", "()((?<![A-Za-z0-9])e2b_[0-9a-f]{20,})()", "", ""],
    ["github-token", "()((?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}))()", "", ""],
    ["huggingface-token", "()((?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,})()", "", ""],
    ["ark-key", "()((?<![A-Za-z0-9])ark_[A-Za-z0-9]{8,})()", "", ""],
    ["sk-key", "()((?<![A-Za-z0-9_-])sk-[A-Za-z0-9_-]{20,})()", "", ""],
  ] as ReadonlyArray<readonly [string, string, string, string]>,
  /** --name value, --name=value: group 1 the name, 2 the separator, 3 the value (never a next --flag). */
  flag: `(?<![A-Za-z0-9_.-])--([A-Za-z][A-Za-z0-9_.-]*)(=|[ \\t]+)(?!-)(${VALUE})`,
  /** NAME=value, NAME: value, "name": "value", 'name': 'value', \"name\": \"value\": the same groups. */
  assignment: `(?<![A-Za-z0-9_.$-])([A-Za-z][A-Za-z0-9_.-]*)(\\\\?["']?[ \\t]*[:=][ \\t]*)(?![:=])(${VALUE})`,
  /**
   * Values that say nothing, kept so the reader still sees them: empty, already ***, an ellipsis, null/true/false,
   * <a placeholder>, a $VARIABLE reference (or the $ of a $(command)), an ENV_VAR_NAME, a short all-capitals word
   * (NAME, VALUE in a usage line).
   */
  placeholder: String.raw`|\*\*\*|…|\.\.\.|null|None|nil|true|false|True|False|<[^<>]*>|\$(?:\{?[A-Za-z_][A-Za-z0-9_]*\}?)?|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{2,12}`,
  /**
   * After a one-word name and a bare colon, a lower-case word with more text after it is prose ("missing
   * credentials: exit 2", "Credentials: functiongraph HUAWEICLOUD_SDK_AK/SK"), kept; "password: hunter2" is not.
   */
  prose: "[a-z]{1,24} [^ \\t\\r\\n]",
  /** A name is secret when its last word (split at _ - . and camelCase) is one of these… */
  secretWords: ["secret", "password", "passwd", "passphrase", "credential", "credentials", "apikey", "secretkey", "accesskey", "privatekey", "secretid", "authtoken", "accesstoken", "sk", "ak"],
  /** …or "key" after another word but these (verl's prompt_key, reward_fn_key; a sort or cache key)… */
  keyNotAfter: ["prompt", "response", "image", "images", "video", "videos", "audio", "fn", "sort", "cache", "primary", "foreign", "partition", "row", "column", "dict", "group", "label", "metric", "metrics", "input", "output", "answer", "query", "data", "source", "lookup", "hash", "object", "index", "map", "field", "name", "sample", "message", "messages", "tool", "tools", "truth", "extra", "chosen", "rejected"],
  /** …or "token", alone or after a word but these (a tokenizer's pad_token, a max_token budget)… */
  tokenNotAfter: ["pad", "eos", "bos", "unk", "sep", "cls", "mask", "image", "video", "audio", "vision", "special", "start", "end", "stop", "think", "tool", "placeholder", "max", "min", "num", "per", "first", "last", "next", "total", "prompt", "response", "input", "output", "new", "generated", "im", "default", "eot", "fim"],
  /** …or "id" after one of these (SECRET_ID, ACCESS_KEY_ID). A plural (tokens, keys, secrets) never is. */
  idAfter: ["secret", "key"],
} as const;

const PATTERNS: readonly (readonly [RegExp, string])[] = REDACTION_RULES.patterns.map(([, src, flags, needs]) => [new RegExp(src, `g${flags}`), needs] as const);
const FLAG = new RegExp(REDACTION_RULES.flag, "g");
const ASSIGNMENT = new RegExp(REDACTION_RULES.assignment, "g");
const PLACEHOLDER = new RegExp(`^(?:${REDACTION_RULES.placeholder})$`);
const PROSE = new RegExp(`^(?:${REDACTION_RULES.prose})`);
const SECRET_WORDS: ReadonlySet<string> = new Set(REDACTION_RULES.secretWords);
const KEY_NOT_AFTER: ReadonlySet<string> = new Set(REDACTION_RULES.keyNotAfter);
const TOKEN_NOT_AFTER: ReadonlySet<string> = new Set(REDACTION_RULES.tokenNotAfter);
const ID_AFTER: ReadonlySet<string> = new Set(REDACTION_RULES.idAfter);

/** Whether an environment variable's name says it holds a secret (…_API_KEY, …_SECRET, …_TOKEN, …_PASSWORD). */
export function isSecretName(name: string): boolean {
  return SECRET_ENV.test(name);
}

/** A name's words, lower-case: split at anything not a letter or digit and at camelCase (apiKey, APIKey). */
export function nameWords(name: string): string[] {
  return name.replace(/([a-z])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2").toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== "");
}

/**
 * Whether a name in text labels a secret, by its last word: WANDB_API_KEY, COS_SECRET_KEY, password, apiKey,
 * SecretId, x-amz-security-token — but not tokenizer, max_tokens, pad_token_id, num_key_value_heads, prompt_key
 * (a substring test would eat those, which verl prints in every config dump).
 */
export function isSecretLabel(name: string): boolean {
  const words = nameWords(name);
  const last = words[words.length - 1];
  const prev = words[words.length - 2] ?? "";
  if (last === undefined) return false;
  if (last === "key") return prev !== "" && !KEY_NOT_AFTER.has(prev);
  if (last === "token") return !TOKEN_NOT_AFTER.has(prev);
  if (last === "id") return ID_AFTER.has(prev);
  return SECRET_WORDS.has(last);
}

/** *** in place of a value, inside the value's own quotes. */
function masked(value: string): string {
  if (value.startsWith('\\"')) return '\\"***\\"';
  if (value.startsWith('"') || value.startsWith("'")) return `${value[0]}***${value[0]}`;
  return "***";
}

function unquoted(value: string): string {
  if (value.startsWith('\\"')) return value.slice(2, -2);
  if (value.startsWith('"') || value.startsWith("'")) return value.slice(1, -1);
  return value;
}

/** Whether `value` (at `at` in `text`) is hidden: a secret name's value, unless it is a placeholder or prose. */
function hides(name: string, sep: string, value: string, text: string, at: number): boolean {
  if (!isSecretLabel(name)) return false;
  if (PLACEHOLDER.test(unquoted(value))) return false;
  return !(sep.trim() === ":" && nameWords(name).length === 1 && PROSE.test(text.slice(at, at + 32)));
}

/**
 * Every value a secret name labels, masked. A name that is not secret is stepped over, not its value: in
 * config=api_key=… the search goes on inside the value.
 */
function maskNamed(text: string, re: RegExp, nameStart: number): string {
  let out = "";
  let copied = 0;
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    const [whole, name, sep, value] = m as unknown as [string, string, string, string];
    if (hides(name, sep, value, text, m.index + whole.length - value.length)) {
      out += text.slice(copied, m.index) + whole.slice(0, whole.length - value.length) + masked(value);
      copied = m.index + whole.length;
      re.lastIndex = copied;
    } else {
      re.lastIndex = m.index + nameStart + name.length;
    }
  }
  return out + text.slice(copied);
}

/** The rules that need no environment: formats, places and names, as rlpipe_sync.py applies them in the job. */
export function redactText(text: string): string {
  let out = text;
  for (const [re, needs] of PATTERNS) {
    if (out.includes(needs)) out = out.replace(re, (_m, keep: string | undefined, _secret: string, tail: string | undefined) => `${keep ?? ""}***${tail ?? ""}`);
  }
  out = maskNamed(out, FLAG, 2);
  return maskNamed(out, ASSIGNMENT, 0);
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

  /** This shell's secret values first (whatever their shape), then every rule of redactText. */
  redact(text: string): string {
    let out = text;
    for (const v of this.values) out = out.split(v).join("***");
    return redactText(out);
  }
}
