// POSIX shell quoting for generated scripts.

const SAFE = /^[A-Za-z0-9_./:=@+,%\-]+$/;

/** Quote one word so the shell passes it through unchanged (no globbing, no expansion). */
export function shellQuote(word: string): string {
  if (word !== "" && SAFE.test(word)) return word;
  return `'${word.replace(/'/g, `'"'"'`)}'`;
}

export function shellJoin(words: readonly string[]): string {
  return words.map(shellQuote).join(" ");
}

/** A command as a multi-line shell string, one argument per line after the program. */
export function shellCommandBlock(words: readonly string[], indent = "    ", argsFrom = 1): string {
  const head = words.slice(0, argsFrom).map(shellQuote).join(" ");
  const rest = words.slice(argsFrom).map((w) => `${indent}${shellQuote(w)}`);
  return [head, ...rest].join(" \\\n");
}

/**
 * Double-quoted value that still expands $NAME / ${NAME} (for env values such as
 * LD_LIBRARY_PATH=/usr/local/cuda/compat:$LD_LIBRARY_PATH). Callers validate that no command
 * substitution is present.
 */
export function shellDoubleQuote(value: string): string {
  return `"${value.replace(/["\\`]/g, (c) => `\\${c}`)}"`;
}

/** True when an env value uses only plain $NAME / ${NAME} expansions (no $(…), backticks or ${x:-…} tricks). */
export function isPlainEnvValue(value: string): boolean {
  if (/`|\$\(/.test(value)) return false;
  const refs = value.match(/\$\{[^}]*\}/g) ?? [];
  return refs.every((r) => /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(r));
}
