// The latency lane's scale (issue 45, item 11): one start-up spike (~4 330 µs)
// set the top and flattened every other probe. The top is a high percentile
// of the lane's values instead, and what lies above it is counted and marked.

/** The share of values the scale keeps below its top. */
export const KEPT = 0.995;

export interface LaneTop {
  /** The scale's top, in the values' unit. */
  top: number;
  /** Values above it (marked at the lane's top edge). */
  over: number;
  /** The highest value. */
  highest: number;
}

/**
 * The top for `cols` when a few values would otherwise set it: 15% above
 * their 99.5th percentile; null when the highest is within that (the scale
 * then goes to the highest, as before).
 */
export function laneTop(cols: ArrayLike<number | null>[]): LaneTop | null {
  const v: number[] = [];
  for (const c of cols)
    for (let i = 0; i < c.length; i++) {
      const x = c[i];
      if (x != null && Number.isFinite(x)) v.push(x);
    }
  if (v.length < 20) return null;
  v.sort((a, b) => a - b);
  const highest = v[v.length - 1];
  const top = v[Math.min(v.length - 1, Math.floor(KEPT * (v.length - 1)))] * 1.15;
  if (!(top > 0) || highest <= top) return null;
  let over = 0;
  for (let i = v.length - 1; i >= 0 && v[i] > top; i--) over++;
  return { top, over, highest };
}
