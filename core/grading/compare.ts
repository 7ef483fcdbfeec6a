// Output comparison with SandboxFusion's semantics (and its line-count check, which ScaleBox dropped):
// both sides stripped and split into lines, a single trailing empty line ignored, equal line counts, each
// line compared after strip() (lower-cased by default, as SandboxFusion does). Numbers: an expected integer is
// matched exactly, at any size (SandboxFusion's 1e-5 relative tolerance accepted 1000001 for 1000000); only an
// expected float is matched within a relative tolerance of 1e-5. Function-call values compare as Python's `==` does
// for integers (exact, any size) and with the tolerance for expected floats.
import type { ExactJson } from "./exact-json.js";
import type { Checker } from "./types.js";

export const DEFAULT_FLOAT_REL_TOL = 1e-5;

export interface Comparison {
  readonly ok: boolean;
  /** Why it failed, for the per-case detail. */
  readonly detail?: string;
}

/** Python's float(): optional sign, digits with underscores, fraction, exponent, inf/infinity/nan. */
const PY_FLOAT = /^[+-]?(?:(?:\d(?:_?\d)*)?(?:\.(?:\d(?:_?\d)*)?)?(?:[eE][+-]?\d(?:_?\d)*)?|inf(?:inity)?|nan)$/i;
/** Python's int() of a decimal: optional sign, digits with single underscores between them. */
const PY_INT = /^[+-]?\d(?:_?\d)*$/;
/** A finite decimal as Python's float() reads it, in parts: sign, integer digits, fraction digits, exponent. */
const PY_DECIMAL = /^([+-]?)(\d(?:_?\d)*)?(?:\.(\d(?:_?\d)*)?)?(?:[eE]([+-]?\d(?:_?\d)*))?$/;

export function parsePyFloat(s: string): number | undefined {
  const t = s.trim();
  if (t === "" || t === "." || !PY_FLOAT.test(t) || !/[\dna]/i.test(t)) return undefined;
  if (/^[+-]?\.?[eE]/.test(t)) return undefined;
  const n = t.replace(/_/g, "").toLowerCase();
  if (/inf/.test(n)) return n.startsWith("-") ? -Infinity : Infinity;
  if (/nan/.test(n)) return NaN;
  const v = Number(n);
  return Number.isNaN(v) ? undefined : v;
}

/** The integer a token writes (Python's int() syntax), exactly; undefined when it is not one. */
export function parsePyInt(s: string): bigint | undefined {
  const t = s.trim();
  return PY_INT.test(t) ? BigInt(t.replace(/_/g, "")) : undefined;
}

/**
 * Whether a token Python's float() reads (`3`, `3.000`, `3e0`, `+3.`) denotes exactly the integer `want`, decided in
 * decimal: never through a double, so 10000000000000001 is not 10000000000000000.
 */
export function decimalEqualsInteger(token: string, want: bigint): boolean {
  const m = PY_DECIMAL.exec(token.trim());
  if (m === null || (m[2] === undefined && m[3] === undefined)) return false;
  const intDigits = (m[2] ?? "").replace(/_/g, "");
  const fracDigits = (m[3] ?? "").replace(/_/g, "");
  const exp = m[4] === undefined ? 0 : Number(m[4].replace(/_/g, ""));
  let digits = (intDigits + fracDigits).replace(/^0+/, "");
  const sign = m[1] === "-" && digits !== "" ? -1n : 1n;
  if (digits === "") return want === 0n;
  let scale = exp - fracDigits.length; // value = digits × 10^scale
  // Trailing zeros of the digits move into the scale, so a non-negative scale means an integer.
  const trimmed = digits.replace(/0+$/, "");
  scale += digits.length - trimmed.length;
  digits = trimmed;
  if (scale < 0) return false;
  const wantDigits = (want < 0n ? -want : want).toString();
  if (digits.length + scale !== wantDigits.length) return false; // different magnitudes (and no huge power built)
  return sign * BigInt(digits) * 10n ** BigInt(scale) === want;
}

export function floatClose(actual: number, expected: number, relTol = DEFAULT_FLOAT_REL_TOL): boolean {
  if (actual === expected) return true; // equal infinities
  return Math.abs(actual - expected) / Math.max(Math.abs(expected), 1e-10) < relTol;
}

/** One stdout line against the expected one, both already stripped (and lower-cased where the checker says). */
function lineMatches(got: string, want: string, relTol: number): boolean {
  if (got === want) return true;
  const wantInt = parsePyInt(want);
  if (wantInt !== undefined) return decimalEqualsInteger(got, wantInt);
  const wf = parsePyFloat(want);
  const gf = wf === undefined ? undefined : parsePyFloat(got);
  return gf !== undefined && wf !== undefined && floatClose(gf, wf, relTol);
}

function lines(s: string): string[] {
  return s.trim().split("\n");
}

export function compareStdout(expected: string, actual: string, checker: Checker = { kind: "lines" }): Comparison {
  if (checker.kind === "exact") return actual === expected ? { ok: true } : { ok: false, detail: "output differs (exact match required)" };
  const tol = checker.kind === "lines" ? checker.floatRelTol ?? DEFAULT_FLOAT_REL_TOL : DEFAULT_FLOAT_REL_TOL;
  const lower = checker.kind === "lines" ? checker.caseInsensitive ?? true : true;
  let got = lines(actual);
  let want = lines(expected);
  if (got.length - want.length === 1 && got[got.length - 1] === "") got = got.slice(0, -1);
  if (want.length - got.length === 1 && want[want.length - 1] === "") want = want.slice(0, -1);
  if (got.length !== want.length) return { ok: false, detail: `expected ${want.length} line${want.length === 1 ? "" : "s"}, got ${got.length}` };
  for (let i = 0; i < want.length; i++) {
    let g = got[i]!.trim();
    let w = want[i]!.trim();
    if (lower) { g = g.toLowerCase(); w = w.toLowerCase(); }
    if (!lineMatches(g, w, tol)) return { ok: false, detail: `line ${i + 1} differs` };
  }
  return { ok: true };
}

/** An integer value (a JSON integer, or a bigint past 2^53), as a bigint; undefined for anything else. */
function integerOf(v: unknown): bigint | undefined {
  if (typeof v === "bigint") return v;
  return typeof v === "number" && Number.isInteger(v) ? BigInt(v) : undefined;
}

/**
 * Function-call results compared as JSON values, as Python's `==` compares what SandboxFusion's harness returns:
 * deep equality; an expected integer only by an equal integer (or a float of exactly that value: 3 == 3.0), at any
 * size; an expected float within the relative tolerance; booleans only by booleans. Tuples arrive as lists.
 */
export function valuesEqual(actual: ExactJson | unknown, expected: ExactJson | unknown, relTol = DEFAULT_FLOAT_REL_TOL): boolean {
  if (typeof expected === "boolean" || typeof actual === "boolean") return actual === expected;
  if ((typeof expected === "number" || typeof expected === "bigint") && (typeof actual === "number" || typeof actual === "bigint")) {
    const want = integerOf(expected);
    if (want !== undefined) return integerOf(actual) === want;
    return floatClose(Number(actual), expected as number, relTol);
  }
  if (Array.isArray(actual) && Array.isArray(expected)) {
    return actual.length === expected.length && actual.every((a, i) => valuesEqual(a, expected[i], relTol));
  }
  if (actual !== null && expected !== null && typeof actual === "object" && typeof expected === "object" && !Array.isArray(actual) && !Array.isArray(expected)) {
    const ak = Object.keys(actual).sort();
    const ek = Object.keys(expected).sort();
    return ak.length === ek.length && ak.every((k, i) => k === ek[i] && valuesEqual((actual as Record<string, unknown>)[k], (expected as Record<string, unknown>)[k], relTol));
  }
  return actual === expected;
}
