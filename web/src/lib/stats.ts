// The one door to the WebAssembly module (wasm/, built by wasm-bindgen
// `--target web` into ./wasm-pkg/, git-ignored). It is loaded on first use, so
// it does not delay the first paint. Every statistic, histogram, fit, plan
// expansion and permalink comes from it; nothing here recomputes them.
// Functions the module may not export yet are optional: callers check them.

export interface Summary {
  n: number;
  min: number;
  max: number;
  mean: number;
  sigma: number;
  skew: number;
  kurtosis: number;
  median: number;
  iq25: number;
  iq75: number;
  p90: number;
  p99: number;
  p999: number;
  p9999: number;
  mad: number;
}

export interface Histogram {
  low: number;
  bin_width: number;
  high: number;
  counts: Uint32Array;
  underflow: number;
  overflow: number;
}

export interface Stats {
  summary(values: Float64Array): Summary;
  histogram(values: Float64Array, binWidth: number, low: number, high?: number): Histogram;
  histogram_bins(values: Float64Array, binWidth: number, low: number, bins: number): Histogram;
  cdf(values: Float64Array, maxPoints: number): { x: Float64Array; fraction: Float64Array };
  decimate(y: Float64Array, maxPoints: number): { x: Float64Array; min: Float64Array; max: Float64Array };
  linfit(x: Float64Array, y: Float64Array): { n: number; slope: number; intercept: number; r2: number };
  confidence(values: Float64Array): { n: number; mean: number; sd: number; half_width: number; low: number; high: number };
  version(): string;
  /** Plan JSON -> steps JSON (protocol plan.rs `Step` list). Not in older builds. */
  expand_plan?: (plan: string) => string;
  /** JSON list of {name, plan}. Not in older builds. */
  presets?: () => string;
  permalink_encode?: (result: string) => string;
  permalink_decode?: (text: string) => string;
}

const found = import.meta.glob<Record<string, unknown>>('./wasm-pkg/meshperf_wasm.js');

let loading: Promise<Stats> | null = null;
let loaded: Stats | null = null;

/** Loads and instantiates the wasm module once. */
export function loadStats(): Promise<Stats> {
  loading ??= (async () => {
    const load = found['./wasm-pkg/meshperf_wasm.js'];
    if (!load) throw new Error('statistics module not built (web/src/lib/wasm-pkg is missing: run scripts/build.sh)');
    const m = await load();
    await (m.default as () => Promise<unknown>)();
    loaded = m as unknown as Stats;
    return loaded;
  })();
  loading.catch(() => (loading = null));
  return loading;
}

/** The module if it is already loaded (for synchronous re-binning). */
export const statsNow = (): Stats | null => loaded;

/** Names and labels of the figures shown in a statistics table, in order. */
export const SUMMARY_ROWS: [keyof Summary, string][] = [
  ['n', 'n'],
  ['min', 'min'],
  ['max', 'max'],
  ['mean', 'mean'],
  ['sigma', 'σ'],
  ['skew', 'skew'],
  ['kurtosis', 'kurtosis'],
  ['median', 'median'],
  ['iq25', 'iq25'],
  ['iq75', 'iq75'],
  ['p90', 'p90'],
  ['p99', 'p99'],
  ['p999', 'p99.9'],
];

/** Keys of SUMMARY_ROWS that carry the sample unit (the rest are counts or shape). */
export const UNITLESS = new Set<keyof Summary>(['n', 'skew', 'kurtosis']);
