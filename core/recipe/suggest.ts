// "Did you mean …?" for unknown keys, enum values and references.

/** Levenshtein distance, bounded work for short identifiers. */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  const prev = new Array<number>(b.length + 1);
  for (let j = 0; j <= b.length; j++) prev[j] = j;
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

const normalize = (s: string) => s.replace(/[_\-.]/g, "").toLowerCase();

/**
 * The closest candidate, if it is close enough to be a plausible typo. Also matches across naming styles,
 * so verl's snake_case (`max_model_len`) finds the recipe's camelCase (`maxModelLen`).
 */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  const n = normalize(input);
  const sameWord = candidates.find((c) => normalize(c) === n);
  if (sameWord !== undefined) return sameWord;
  // A shortened or extended form of exactly one candidate ("ags-key" for "ags-api-key").
  const parts = n.length >= 3 ? candidates.filter((c) => isSubsequence(n, normalize(c)) || isSubsequence(normalize(c), n)) : [];
  if (parts.length === 1) return parts[0];
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of [...candidates].sort()) {
    const d = editDistance(n, normalize(c));
    if (d < bestDistance) { best = c; bestDistance = d; }
  }
  const limit = Math.max(2, Math.floor(n.length / 3));
  return bestDistance <= limit ? best : undefined;
}

export function didYouMean(input: string, candidates: readonly string[], quote = true): string | undefined {
  const c = closest(input, candidates);
  if (c === undefined) return undefined;
  return `did you mean ${quote ? JSON.stringify(c) : c}?`;
}

function isSubsequence(short: string, long: string): boolean {
  if (short.length >= long.length) return false;
  let i = 0;
  for (const ch of long) if (ch === short[i]) i++;
  return i === short.length && short.length * 2 >= long.length;
}
