// Smoothing as TensorBoard's scalar dashboard does it: an exponential moving average, debiased so the first
// points are not pulled towards zero, over the points in step order.

/**
 * EMA with weight `w` in [0, 1): s_t = w·s_{t−1} + (1 − w)·y_t, divided by 1 − w^t (debiasing). w = 0 returns
 * the values unchanged; the result has the same steps as the input.
 */
export function emaSmooth(points: readonly (readonly [number, number])[], weight: number): [number, number][] {
  if (!(weight >= 0 && weight < 1)) throw new RangeError(`smoothing weight must be in [0, 1), got ${weight}`);
  let acc = 0;
  let n = 0;
  return points.map(([x, y]) => {
    n++;
    acc = acc * weight + (1 - weight) * y;
    return [x, weight === 0 ? y : acc / (1 - weight ** n)];
  });
}
