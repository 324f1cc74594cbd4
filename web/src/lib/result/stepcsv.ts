// One step's raw samples as `;`-separated CSV (the page's "step CSV"), apart
// from exporters.ts so that it stands without the wasm loader.

import { intervalEnds, PER_INTERVAL, type StepResult } from './result';
import type { Stats } from '../wasm';

/**
 * One step's raw samples as `;`-separated columns (`n` then one column per
 * series, named role_kind_stream), for a spreadsheet; then, for each stream
 * with per-interval series (interval_bytes, TCP_INFO), when each of its
 * intervals ended, s since the test's start (`role_interval_end_s_stream`):
 * a multi-phase test's streams start with their phase, so row `n` of two
 * streams may be seconds apart. Times of packets and probes are series of
 * their own (send_time_ns, arrival_ns).
 */
export function stepCsv(step: StepResult, wasm: Pick<Stats, 'lul_stream_starts'>): string {
  const cols: { name: string; values: ArrayLike<number> }[] = step.samples.map((c) => ({ name: `${c.role}_${c.kind}_${c.stream}`, values: c.values }));
  for (const role of ['client', 'server'] as const) {
    const lens = new Map<number, number>();
    for (const c of step.samples) if (c.role === role && PER_INTERVAL.has(c.kind)) lens.set(c.stream, Math.max(lens.get(c.stream) ?? 0, c.values.length));
    const streams = [...lens.keys()].sort((a, b) => a - b);
    const ends = intervalEnds(step, wasm, streams, streams.map((s) => lens.get(s)!));
    streams.forEach((s, k) => cols.push({ name: `${role}_interval_end_s_${s}`, values: ends[k] }));
  }
  const rows = Math.max(0, ...cols.map((c) => c.values.length));
  const lines = [['n', ...cols.map((c) => c.name)].join(';')];
  for (let i = 0; i < rows; i++) lines.push([String(i), ...cols.map((c) => (i < c.values.length ? String(c.values[i]) : ''))].join(';'));
  return lines.join('\n') + '\n';
}
