// Code extraction from a model completion, as ScaleBox does by default: drop <think>…</think>, then the
// first fenced block in the target language, else the first fenced block of any language, else nothing.

const FENCE = /```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n([\s\S]*?)```/g;

const ALIASES: Record<string, readonly string[]> = {
  python: ["python", "py", "python3"],
  cpp: ["cpp", "c++", "cc", "cxx"],
  nodejs: ["nodejs", "javascript", "js", "node"],
  typescript: ["typescript", "ts"],
  java: ["java"],
  go: ["go", "golang"],
  rust: ["rust", "rs"],
  bash: ["bash", "sh", "shell"],
};

/** Canonical language for a fence tag or a request's language field (javascript → nodejs). */
export function canonicalLanguage(tag: string): string {
  const t = tag.toLowerCase();
  for (const [lang, names] of Object.entries(ALIASES)) if (names.includes(t)) return lang;
  return t;
}

export function stripThinking(completion: string): string {
  // A closed block anywhere; an unclosed trailing <think> (truncated reasoning) is dropped too.
  return completion.replace(/<think>[\s\S]*?<\/think>/g, "").replace(/<think>[\s\S]*$/, "");
}

export interface Extracted {
  /** "" when the completion has no fenced block. */
  readonly code: string;
  /** The language of the chosen block's fence tag (canonical), when tagged. */
  readonly language?: string;
}

export function extractCode(completion: string, language: string): Extracted {
  const text = stripThinking(completion);
  const want = canonicalLanguage(language);
  let first: Extracted | undefined;
  for (const m of text.matchAll(FENCE)) {
    const tag = m[1] ?? "";
    const block: Extracted = tag === "" ? { code: m[2]!.replace(/\n$/, "") } : { code: m[2]!.replace(/\n$/, ""), language: canonicalLanguage(tag) };
    if (block.language === want) return block;
    first ??= block;
  }
  return first ?? { code: "" };
}

/** The language of the first tagged fence (scalebox.py's rule when the request names none). */
export function detectLanguage(completion: string, fallback = "python"): string {
  for (const m of stripThinking(completion).matchAll(FENCE)) {
    if (m[1] !== undefined && m[1] !== "") return canonicalLanguage(m[1]);
  }
  return fallback;
}
