// Samples held in wasm memory for every view of a step: the statistics
// table, the histogram (each re-bin), the CDF, the time series and the
// overlay read one `SampleSet` per array of samples (a step's quantity),
// pushed into wasm once, with its summary cached there. Together the sets
// hold at most `HELD_MAX` samples: past that the least recently used ones
// are freed (and pushed again if wanted again), so looking through the
// steps of a large sweep does not grow wasm memory without bound.

import type { SampleSet, Stats } from './wasm';

/** Samples (8 bytes each in wasm memory) the sets hold together; the newest is kept whatever its size. */
export const HELD_MAX = 16 * 1024 * 1024;

/** Sets by the array they hold, least recently used first. */
const sets = new Map<Float64Array, SampleSet>();
let total = 0;

/**
 * `values` held in wasm memory: the first call copies them in, later calls
 * for the same array return the same set (until `max` evicts it). Use the
 * set at once; do not keep it across calls.
 */
export function held(wasm: Stats, values: Float64Array, max = HELD_MAX): SampleSet {
  let set = sets.get(values);
  if (set) {
    sets.delete(values);
    sets.set(values, set);
    return set;
  }
  set = new wasm.SampleSet();
  try {
    set.push(values);
  } catch (e) {
    set.free();
    throw e;
  }
  sets.set(values, set);
  total += values.length;
  for (const [v, s] of sets) {
    if (total <= max || v === values) break;
    sets.delete(v);
    s.free();
    total -= v.length;
  }
  return set;
}
