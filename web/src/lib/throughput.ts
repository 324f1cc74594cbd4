// Throughput over time from IntervalBytes samples (bytes moved per
// `interval_ms`, one series per stream, indexed by sequence number).

/**
 * Bits/s per interval. The last interval usually ends with the test, before a
 * full `interval_ms`: when the side's total `seconds` is known, the last
 * interval is divided by the time it really covered, so it does not show as a
 * false drop (unless it is a sliver, see below).
 */
export function bpsPerInterval(bytes: ArrayLike<number>, intervalMs: number, seconds?: number): Float64Array {
  const dt = intervalMs / 1000;
  const out = new Float64Array(bytes.length);
  for (let i = 0; i < bytes.length; i++) {
    let t = dt;
    // A sliver under a quarter interval would turn timing noise into a spike: keep dt then.
    if (i === bytes.length - 1 && seconds != null && seconds - i * dt >= dt / 4) t = Math.min(dt, seconds - i * dt);
    out[i] = (bytes[i] * 8) / t;
  }
  return out;
}

/** Columnar data for a plot: x = end of each interval in seconds, one y column per series (null past its end). */
export function alignSeries(series: Float64Array[], intervalMs: number, seconds: number[] = []): [number[], ...(number | null)[][]] {
  const n = Math.max(0, ...series.map((s) => s.length));
  const dt = intervalMs / 1000;
  const end = Math.max(0, ...seconds);
  // The last point sits where the test ended, not at a full interval.
  const x = Array.from({ length: n }, (_, i) => (end > i * dt ? Math.min((i + 1) * dt, end) : (i + 1) * dt));
  return [x, ...series.map((s) => Array.from({ length: n }, (_, i) => (i < s.length ? s[i] : null)))];
}
