// Code extraction from a model completion, by ScaleBox's default priorities: drop <think>…</think>; then the
// complete fenced blocks, else an unclosed fence running to the end (a truncated answer), else code found without
// fences (Python: top-level def/class blocks with the imports before them; bash: the whole text). Among the blocks of
// the best kind, the first tagged with the target language wins, else the first.

const FENCE = /```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n([\s\S]*?)```/g;
const OPEN_FENCE = /```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n([\s\S]*)$/;
/** Python without fences: optional import/from/comment lines, a def or class line, its indented body. */
const PYTHON_BLOCK = /(?:^(?:import|from|#)[^\n]*\n)*^(?:def|class) [^\n]+\n(?:[ \t]+[^\n]*\n)+/gm;

const ALIASES: Record<string, readonly string[]> = {
  python: ["python", "py", "python3"],
  cpp: ["cpp", "c++", "cc", "cxx"],
  nodejs: ["nodejs", "javascript", "js", "node"],
  typescript: ["typescript", "ts"],
  java: ["java"],
  go: ["go", "golang"],
  rust: ["rust", "rs"],
  bash: ["bash", "sh", "shell"],
  // Fence tags models write for SandboxFusion's languages (ScaleBox's aliases, and the usual file extensions).
  csharp: ["csharp", "c#", "cs"],
  kotlin_script: ["kotlin_script", "kotlin", "kt", "kts"],
  julia: ["julia", "jl"],
  ruby: ["ruby", "rb"],
  // SandboxFusion spells these with capitals; tags come lower-cased.
  R: ["r"],
  D_ut: ["d_ut", "d"],
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

function block(tag: string | undefined, code: string): Extracted {
  const body = code.replace(/\n[ \t]*$/, "");
  return tag === undefined || tag === "" ? { code: body } : { code: body, language: canonicalLanguage(tag) };
}

/** The first block in `want`, else the first block. */
function pick(blocks: readonly Extracted[], want: string): Extracted | undefined {
  return blocks.find((b) => b.language === want) ?? blocks[0];
}

export function extractCode(completion: string, language: string): Extracted {
  const text = stripThinking(completion);
  const want = canonicalLanguage(language);
  const fenced = [...text.matchAll(FENCE)].map((m) => block(m[1], m[2]!));
  if (fenced.length > 0) return pick(fenced, want)!;
  const open = OPEN_FENCE.exec(text);
  if (open !== null) return block(open[1], open[2]!);
  if (want === "python") {
    // Blank lines dropped first (as ScaleBox does), so a body's blank lines do not end a block.
    const dense = `${text.split("\n").filter((l) => l.trim() !== "").join("\n")}\n`;
    const defs = [...dense.matchAll(PYTHON_BLOCK)].map((m) => m[0]);
    // Every top-level def/class, not only the first: a helper and the function calling it both count.
    if (defs.length > 0) return { code: defs.join("").replace(/\n$/, ""), language: "python" };
  }
  if (want === "bash" && text.trim() !== "") return { code: text.split("\n").filter((l) => l.trim() !== "").join("\n"), language: "bash" };
  return { code: "" };
}

/** The language of the first tagged fence (scalebox.py's rule when the request names none). */
export function detectLanguage(completion: string, fallback = "python"): string {
  for (const m of stripThinking(completion).matchAll(FENCE)) {
    if (m[1] !== undefined && m[1] !== "") return canonicalLanguage(m[1]);
  }
  return fallback;
}
