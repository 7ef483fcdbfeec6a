// Output comparison with SandboxFusion's semantics (and its line-count check, which ScaleBox dropped):
// both sides stripped and split into lines, a single trailing empty line ignored, equal line counts, each
// line compared after strip() (lower-cased by default, as SandboxFusion does), and numbers equal within a
// relative tolerance of 1e-5 of the expected value.
import type { Checker } from "./types.js";

export const DEFAULT_FLOAT_REL_TOL = 1e-5;

export interface Comparison {
  readonly ok: boolean;
  /** Why it failed, for the per-case detail. */
  readonly detail?: string;
}

/** Python's float(): optional sign, digits with underscores, fraction, exponent, inf/infinity/nan. */
const PY_FLOAT = /^[+-]?(?:(?:\d(?:_?\d)*)?(?:\.(?:\d(?:_?\d)*)?)?(?:[eE][+-]?\d(?:_?\d)*)?|inf(?:inity)?|nan)$/i;

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

export function floatClose(actual: number, expected: number, relTol = DEFAULT_FLOAT_REL_TOL): boolean {
  if (actual === expected) return true; // equal infinities
  return Math.abs(actual - expected) / Math.max(Math.abs(expected), 1e-10) < relTol;
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
    let g = got[i]!;
    let w = want[i]!;
    if (lower) { g = g.toLowerCase(); w = w.toLowerCase(); }
    if (g.trim() === w.trim()) continue;
    const wf = parsePyFloat(w);
    const gf = wf === undefined ? undefined : parsePyFloat(g);
    if (gf !== undefined && wf !== undefined && floatClose(gf, wf, tol)) continue;
    return { ok: false, detail: `line ${i + 1} differs` };
  }
  return { ok: true };
}

/**
 * Function-call results compared as JSON values: deep equality, numbers within the relative tolerance,
 * integers and floats interchangeable (3 == 3.0, as in Python). Tuples arrive as lists from the harness.
 */
export function valuesEqual(actual: unknown, expected: unknown, relTol = DEFAULT_FLOAT_REL_TOL): boolean {
  if (typeof actual === "number" && typeof expected === "number") return floatClose(actual, expected, relTol);
  if (typeof actual === "boolean" || typeof expected === "boolean") return actual === expected;
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
