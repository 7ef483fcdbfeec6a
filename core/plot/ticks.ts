// Round ("nice") axis ticks: steps of 1, 2 or 5 × 10^k, an axis that starts and ends on a tick, and labels that
// show just enough decimals for the step.

export interface Ticks {
  /** The axis range: the first and last tick. */
  readonly lo: number;
  readonly hi: number;
  readonly step: number;
  readonly values: readonly number[];
}

export interface TickOptions {
  /** Fewest and most ticks wanted (inclusive); the smallest 1/2/5 step with at most `max` ticks is used. */
  readonly min?: number;
  readonly max?: number;
  /** Integer steps only (training steps). */
  readonly integer?: boolean;
}

const MANTISSAS = [1, 2, 5] as const;

/** Decimal places of a 1/2/5 × 10^k step (0 for steps ≥ 1). */
export function stepDecimals(step: number): number {
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

function roundTo(v: number, decimals: number): number {
  const r = Number(v.toFixed(Math.min(20, decimals + 1)));
  return r === 0 ? 0 : r; // no -0
}

function ticksWithStep(lo: number, hi: number, step: number): Ticks {
  const first = Math.floor(lo / step + 1e-9);
  const last = Math.ceil(hi / step - 1e-9);
  const d = stepDecimals(step);
  const values: number[] = [];
  for (let i = first; i <= last; i++) values.push(roundTo(i * step, d));
  return { lo: values[0]!, hi: values[values.length - 1]!, step, values };
}

/**
 * Ticks covering [min, max] on a 1/2/5 × 10^k grid: the smallest such step giving at most `max` ticks (default 6),
 * so an axis gets as many as it can hold — 4 to 6 for almost every range; `max` + 1 when the next step would
 * leave fewer than `min`; 2 or 3 only for integer ranges too short for more. A single value is widened around it.
 */
export function niceTicks(min: number, max: number, opts: TickOptions = {}): Ticks {
  const most = opts.max ?? 6;
  const fewest = Math.min(opts.min ?? 4, most);
  if (!Number.isFinite(min) || !Number.isFinite(max)) throw new RangeError(`niceTicks: range must be finite, got [${min}, ${max}]`);
  let lo = Math.min(min, max);
  let hi = Math.max(min, max);
  if (hi - lo < Math.max(Math.abs(hi), Math.abs(lo), 1) * 1e-12) {
    // One value: a symmetric range around it (a constant 0.5 shows as 0.4 … 0.6, a constant step 7 as 6 … 8).
    const pad = opts.integer === true ? 1 : lo === 0 ? 1 : Math.abs(lo) * 0.2;
    lo -= pad;
    hi += pad;
  }
  const span = hi - lo;
  // Start one decade below the step that would give `most` intervals, walk up the 1/2/5 ladder.
  let exp = Math.floor(Math.log10(span / most)) - 1;
  let previous: Ticks | undefined;
  for (let guard = 0; guard < 40; guard++, exp++) {
    for (const m of MANTISSAS) {
      const step = Number((m * 10 ** exp).toPrecision(12));
      if (opts.integer === true && step < 1) continue;
      const t = ticksWithStep(lo, hi, step);
      if (t.values.length > most) { previous = t; continue; }
      // The smallest step that fits. When it leaves fewer than `fewest` ticks, one tick too many reads better
      // than a bare axis (e.g. 0 … 6 by 1 rather than 0, 5, 10 for [0.5, 5.5]).
      if (t.values.length < fewest && previous !== undefined && previous.values.length === most + 1) return previous;
      return t;
    }
  }
  throw new RangeError(`niceTicks: no step for [${min}, ${max}]`);
}

/**
 * Tick labels: decimals from the step, thousands as k and millions as M when every tick is a whole number of them
 * (20k, 1.5M), a real minus sign.
 */
export function formatTicks(t: Ticks): string[] {
  const big = Math.max(...t.values.map(Math.abs));
  const [div, suffix] = big >= 1e6 ? [1e6, "M"] : big >= 1e4 ? [1e3, "k"] : [1, ""];
  const d = stepDecimals(t.step / div);
  return t.values.map((v) => {
    const s = (v / div).toFixed(d);
    const n = Number(s) === 0 ? (0).toFixed(d) : s;
    return `${n.replace("-", "−")}${n === (0).toFixed(d) ? "" : suffix}`;
  });
}

/** A value for a legend or readout, to about four significant digits. */
export function formatValue(v: number): string {
  const a = Math.abs(v);
  const s = a !== 0 && (a >= 1e6 || a < 1e-3) ? v.toExponential(2) : Number(v.toPrecision(4)).toString();
  return s.replace("-", "−");
}
