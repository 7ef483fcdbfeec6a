// Low / expected / high figures and their arithmetic. Every operation keeps low ≤ expected ≤ high for
// non-negative inputs; results are rounded to 6 significant digits so reports are byte-stable.
import type { Range } from "./types.js";

export const range = (low: number, expected: number, high: number): Range => ({ low, expected, high });
export const exact = (v: number): Range => ({ low: v, expected: v, high: v });
export const ZERO: Range = exact(0);

/** A recipe figure: a number means exactly that; a {low, expected, high} is taken as given. */
export function fromInput(v: number | Range | undefined, fallback: Range): Range {
  if (v === undefined) return fallback;
  return typeof v === "number" ? exact(v) : v;
}

export const add = (...rs: readonly Range[]): Range =>
  rs.reduce((a, b) => ({ low: a.low + b.low, expected: a.expected + b.expected, high: a.high + b.high }), ZERO);

/** Product of independent non-negative ranges: lows together, highs together. */
export const mul = (...rs: readonly (Range | number)[]): Range =>
  rs.reduce<Range>((a, b) => (typeof b === "number"
    ? { low: a.low * b, expected: a.expected * b, high: a.high * b }
    : { low: a.low * b.low, expected: a.expected * b.expected, high: a.high * b.high }), exact(1));

export const minWith = (r: Range, cap: number): Range => ({ low: Math.min(r.low, cap), expected: Math.min(r.expected, cap), high: Math.min(r.high, cap) });

/** Spread around an expected value by a factor: expected ÷ f … expected × f. */
export const spread = (expected: number, lowFactor: number, highFactor: number): Range =>
  ({ low: expected * lowFactor, expected, high: expected * highFactor });

export function round(v: number, digits = 6): number {
  if (v === 0 || !Number.isFinite(v)) return v;
  const r = Number(v.toPrecision(digits));
  return Object.is(r, -0) ? 0 : r;
}

export const roundRange = (r: Range, digits = 6): Range => ({ low: round(r.low, digits), expected: round(r.expected, digits), high: round(r.high, digits) });

export const isOrdered = (r: Range): boolean => r.low <= r.expected && r.expected <= r.high;
