// The cells each matrix step fills, with their figures, from the codec
// (protocol/src/matrix.rs `Metric::cells`, what the CLI's table shows: a
// step that measures both ways fills both cells of its pair), computed once
// per step object and metric: a running matrix redraws after every pair, a
// ratio heatmap reads two results.

import type { StepResult } from '../result/result';
import type { Codec } from '../wasm';
import type { Fill } from './grid';

const cache = new WeakMap<StepResult, Map<string, Fill[]>>();

/** The cells step `s` fills with figure `metric` ([row, column, value or null]). */
export function fills(c: Codec, s: StepResult, metric: string): Fill[] {
  let m = cache.get(s);
  if (!m) cache.set(s, (m = new Map()));
  if (!m.has(metric)) {
    let v: Fill[] = s.pair ? [[s.pair.client, s.pair.server, null]] : [];
    try {
      v = JSON.parse(c.matrix_cells(JSON.stringify({ ...s, samples: [], histograms: [] }), metric)) as Fill[];
    } catch (e) {
      console.warn((e as Error).message);
    }
    m.set(metric, v);
  }
  return m.get(metric) ?? [];
}
