// The one door to the WebAssembly modules (wasm/, built by scripts/build.sh
// with wasm-bindgen `--target web` into ./wasm-pkg/, git-ignored): one crate,
// three builds. `meshperf_stats` holds the statistics (all a result view
// needs); it is loaded on first use, after the first paint. The other two
// are loaded only when needed, each beside the statistics (which they leave
// out): `meshperf_codec` by `loadCodec()` to run a plan or a matrix (plan
// expansion, presets, the checks, the step driver, the matrix's schedule),
// `meshperf_view` by `loadView()` to show, share or export a result
// (permalinks, CSV, the matrix's cells, latency under load's card, verdict
// and lanes, the link line). Apart, neither carries the other's serde types
// (each under 150 KB gzip; docs/performance.md). Every statistic, histogram,
// fit, plan expansion and permalink comes from them; nothing here recomputes
// them. The codec and view functions are optional on `Stats`: present once
// their module has loaded (`loadStats()` and `statsNow()` then return them
// too), so callers check them.

import type * as StatsModule from './wasm-pkg/meshperf_stats.js';
import type * as CodecModule from './wasm-pkg/meshperf_codec.js';
import type * as ViewModule from './wasm-pkg/meshperf_view.js';

// The types are wasm-bindgen's own declarations of the three builds
// (wasm/src/bindings.rs: its `typescript_custom_section` for the objects
// the functions return, the classes and signatures from the exports), not
// a second copy here.
export type {
  Summary,
  HistogramResult as Histogram,
  LulRates,
  LulLanes,
  SampleSet,
} from './wasm-pkg/meshperf_stats.js';
export type { StepDriver, MatrixSchedule } from './wasm-pkg/meshperf_codec.js';
import type { Summary } from './wasm-pkg/meshperf_stats.js';

/** A module's exports without its loaders. */
type Exports<M> = Omit<M, 'default' | 'initSync'>;

/** The functions only the codec module has (`loadCodec()`): running a plan or a matrix. */
export type Codec = Exports<typeof CodecModule>;
/** The functions only the view module has (`loadView()`): showing, sharing and exporting a result. */
export type View = Exports<typeof ViewModule>;

/**
 * The statistics module. Samples are summarised, binned, drawn as a CDF
 * and decimated through a `SampleSet` (samplesets.ts `held`): the
 * module's one-shot `summary`, `histogram`, `cdf` and `decimate` copy them
 * into wasm on every call, so they are left out here. The codec's and the
 * view's functions are present once their module has loaded (`loadStats()`
 * and `statsNow()` then return them too), so callers check them.
 */
export type Stats = Omit<Exports<typeof StatsModule>, 'summary' | 'histogram' | 'histogram_bins' | 'cdf' | 'decimate'> &
  Partial<Pick<Codec, 'expand_plan' | 'presets'>> &
  Partial<Pick<View, 'permalink_encode' | 'permalink_decode'>>;

const found = {
  stats: import.meta.glob<typeof StatsModule>('./wasm-pkg/meshperf_stats.js'),
  codec: import.meta.glob<typeof CodecModule>('./wasm-pkg/meshperf_codec.js'),
  view: import.meta.glob<typeof ViewModule>('./wasm-pkg/meshperf_view.js'),
};

/** Fetches and instantiates one wasm-bindgen module (the one `glob` found); `what` names it in errors. */
async function instantiate<M extends { default: () => Promise<unknown> }>(
  glob: Record<string, () => Promise<M>>,
  name: string,
  what: string,
): Promise<M> {
  const load = Object.values(glob)[0];
  if (!load) throw new Error(`${what} not built (wasm-pkg/${name} is missing: run scripts/build.sh)`);
  try {
    const m = await load();
    await m.default();
    return m;
  } catch (e) {
    throw new Error(`${what} did not load: ${(e as Error).message || e}`);
  }
}

let loading: Promise<Stats> | null = null;
let codecLoading: Promise<Stats & Codec> | null = null;
let viewLoading: Promise<Stats & View> | null = null;
/** The statistics module, with the codec and view functions once those are loaded too. */
let loaded: Stats | null = null;

/** Loads and instantiates the statistics module once (the others only if already loaded). */
export function loadStats(): Promise<Stats> {
  loading ??= instantiate(found.stats, 'meshperf_stats.js', 'the statistics module (wasm)').then((m) => {
    const { default: _init, initSync: _sync, ...exports } = m;
    return (loaded ??= exports);
  });
  loading.catch(() => (loading = null));
  return loading.then(() => loaded!);
}

/** Loads one on-demand module beside the statistics and adds its exports to `loaded`. */
function loadBeside<M extends { default: () => Promise<unknown>; initSync: unknown }>(
  glob: Record<string, () => Promise<M>>,
  name: string,
  what: string,
): Promise<Stats & Exports<M>> {
  return Promise.all([loadStats(), instantiate(glob, name, what)]).then(([, m]) => {
    const { default: _init, initSync: _sync, ...more } = m;
    const both = { ...loaded!, ...more };
    loaded = both;
    return both;
  });
}

/** Loads the codec module once (and the statistics module): what running a plan or a matrix needs. */
export function loadCodec(): Promise<Stats & Codec> {
  codecLoading ??= loadBeside(found.codec, 'meshperf_codec.js', 'the plan and run module (wasm)');
  codecLoading.catch(() => (codecLoading = null));
  return codecLoading;
}

/** Loads the view module once (and the statistics module): what showing, sharing and exporting a result needs. */
export function loadView(): Promise<Stats & View> {
  viewLoading ??= loadBeside(found.view, 'meshperf_view.js', 'the result and permalink module (wasm)');
  viewLoading.catch(() => (viewLoading = null));
  return viewLoading;
}

/** The loaded module if any (for synchronous re-binning); has the codec functions once loaded. */
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
