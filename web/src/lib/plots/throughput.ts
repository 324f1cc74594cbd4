// Throughput over time from IntervalBytes samples (bytes moved per
// `interval_ms`, one series per stream, indexed by sequence number): the
// rates come from wasm (`rate_series`); this lines the series up for a plot.

/** Columnar data for a plot: x = end of each interval in seconds, one y column per series (null past its end). */
export function alignSeries(series: Float64Array[], intervalMs: number, seconds: number[] = []): [number[], ...(number | null)[][]] {
  const n = Math.max(0, ...series.map((s) => s.length));
  const dt = intervalMs / 1000;
  const end = Math.max(0, ...seconds);
  // The last point sits where the test ended, not at a full interval.
  const x = Array.from({ length: n }, (_, i) => (end > i * dt ? Math.min((i + 1) * dt, end) : (i + 1) * dt));
  return [x, ...series.map((s) => Array.from({ length: n }, (_, i) => (i < s.length ? s[i] : null)))];
}

type StreamFigures = { bytes: number; seconds?: number; dir?: string };
/** The streams a step's per-stream bars show: the receiving ends where the summary has both. */
export function barStreams(summary: Record<string, unknown> | null | undefined): StreamFigures[] {
  const all = (summary?.streams ?? []) as StreamFigures[];
  return all.some((s) => s.dir === 'recv') ? all.filter((s) => s.dir === 'recv') : all;
}
