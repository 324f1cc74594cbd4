// Each pair's headline figure from the codec (protocol/src/matrix.rs
// `Metric::of`, what the CLI's table shows), computed once per step object
// and metric: a running matrix redraws after every pair, a ratio heatmap
// reads two results.

import type { StepResult } from '../result/result';
import type { Codec } from '../wasm';

const figures = new WeakMap<StepResult, Map<string, number | null>>();

/** The figure `metric` of step `s` (null when the step has none). */
export function figure(c: Codec, s: StepResult, metric: string): number | null {
  let m = figures.get(s);
  if (!m) figures.set(s, (m = new Map()));
  if (!m.has(metric)) {
    let v: number | null = null;
    try {
      v = c.matrix_metric(JSON.stringify({ ...s, samples: [], histograms: [] }), metric) ?? null;
    } catch (e) {
      console.warn((e as Error).message);
    }
    m.set(metric, v);
  }
  return m.get(metric) ?? null;
}
