// The one door to the WebAssembly statistics module (wasm/, built by
// wasm-bindgen `--target web` into ./wasm-pkg/, git-ignored). It is loaded on
// first use, so it does not delay the first paint. When the package has not
// been generated, the glob below is empty and `loadStats` says so clearly
// instead of breaking the build.

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
  counts: ArrayLike<number>;
  underflow: number;
  overflow: number;
}

export interface Stats {
  summary(values: Float64Array): Summary;
  histogram(values: Float64Array, binWidth: number, low: number, high: number): Histogram;
}

interface WasmModule {
  default: (input?: unknown) => Promise<unknown>;
  summary: (v: Float64Array) => unknown;
  histogram: (v: Float64Array, w: number, lo: number, hi: number) => unknown;
}

const found = import.meta.glob<WasmModule>('./wasm-pkg/meshperf_wasm.js');

let loading: Promise<Stats> | null = null;

/** Loads and instantiates the wasm module once. */
export function loadStats(): Promise<Stats> {
  loading ??= (async () => {
    const load = found['./wasm-pkg/meshperf_wasm.js'];
    if (!load) throw new Error('statistics module not built (web/src/lib/wasm-pkg is missing: build wasm/ first)');
    const m = await load();
    await m.default();
    return {
      summary: (v) => plain<Summary>(m.summary(v)),
      histogram: (v, w, lo, hi) => plain<Histogram>(m.histogram(v, w, lo, hi)),
    };
  })();
  loading.catch(() => (loading = null));
  return loading;
}

/** wasm-bindgen may return a Map or a class instance; the page wants a plain object. */
function plain<T>(v: unknown): T {
  if (v instanceof Map) return Object.fromEntries(v) as T;
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const o: Record<string, unknown> = {};
    for (const k in v) if (!k.startsWith('__')) o[k] = (v as Record<string, unknown>)[k];
    // Getter-backed wasm classes expose fields on the prototype: copy them too.
    for (const k of Object.getOwnPropertyNames(Object.getPrototypeOf(v))) {
      if (k === 'constructor' || k.startsWith('__') || k in o) continue;
      const x = (v as Record<string, unknown>)[k];
      if (typeof x !== 'function') o[k] = x;
    }
    return o as T;
  }
  throw new Error('statistics module returned an unexpected value');
}

/** Names and labels of the figures shown in a statistics table, in order. */
export const SUMMARY_ROWS: [keyof Summary, string][] = [
  ['n', 'n'],
  ['mean', 'mean'],
  ['sigma', 'σ'],
  ['min', 'min'],
  ['median', 'median'],
  ['p99', 'p99'],
  ['max', 'max'],
];
