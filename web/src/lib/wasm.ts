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

/**
 * Samples held in wasm memory (wasm/src/bindings.rs `SampleSet`): copied in
 * once, then summarised (cached), binned, and drawn as a CDF or decimated
 * series as often as a view asks, without crossing into wasm again (the
 * page's sets: samplesets.ts). Freed by `free()`, or by the module's
 * finalizer once unreachable.
 */
export interface SampleSet {
  push(values: Float64Array): void;
  len(): number;
  summary(): Summary;
  histogram(binWidth: number, low: number, high?: number): Histogram;
  histogram_bins(binWidth: number, low: number, bins: number): Histogram;
  /** Bins that cover the data but a long tail's last 1% (stats/src/hist.rs `default_bins`). */
  default_bins(): { low: number; bin_width: number; bins: number };
  cdf(maxPoints: number): { x: Float64Array; fraction: Float64Array };
  decimate(maxPoints: number): { x: Float64Array; min: Float64Array; max: Float64Array };
  free(): void;
}

export interface Stats {
  /**
   * Samples are summarised, binned, drawn as a CDF and decimated through a
   * set (samplesets.ts `held`); the module's one-shot `summary`,
   * `histogram`, `cdf` and `decimate` copy them into wasm on every call, so
   * they are left out here.
   */
  SampleSet: new () => SampleSet;
  /** Bits/s per interval, the last scaled to the time it covered (stats/src/series.rs). */
  rate_series(bytes: Float64Array, intervalMs: number, seconds?: number): Float64Array;
  /**
   * Latency under load's load, one direction, each phase's streams summed
   * and its intervals at their own time (stats/src/lul_load.rs).
   */
  lul_rates(
    streams: Uint16Array, lens: Uint32Array, bytes: Float64Array, n: number, up: boolean,
    phaseS: Float64Array, gapS: number, recvS: Float64Array, intervalMs: number,
  ): LulRates;
  /** The whole intervals `[from, to)` of a side's summed interval series, from each stream's last and first byte times (stats/src/series.rs `whole_ticks`). */
  whole_ticks(ends: Float64Array, starts: Float64Array, omittedS: number, tickS: number, n: number): Uint32Array;
  /** When each latency_under_load load stream's phase started, s since the test's start; NaN outside the 4n (stats/src/lul_load.rs). */
  lul_stream_starts(streams: Uint16Array, n: number, phaseS: Float64Array, gapS: number): Float64Array;
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

/** One step run between agents: protocol/src/driver.rs through wasm/src/bindings.rs. */
export interface StepDriver {
  begin(): string;
  reply(agent: number, msg: string): string;
  event(agent: number, msg: string): string;
  frame(bytes: Uint8Array): boolean;
  closed(agent: number): string;
  cancel(): string;
  abandon(why: string): void;
  done(): boolean;
  cancelling(): boolean;
  progress(): number;
  /** Where the step waits in an agent's queue ("waiting behind 2 tests on agent B, about 12 s"), while it does. */
  waiting(): string | undefined;
  refused_busy(): boolean;
  result(wallSeconds: number): string;
  series_values(i: number): Float64Array;
  free(): void;
}

/** protocol/src/matrix.rs `Schedule` through wasm/src/bindings.rs. */
export interface MatrixSchedule {
  pairs(): number;
  planned_rounds(): number;
  /** JSON: `{"round": [{server, client}]}`, `{"wait": seconds}` or `"done"`. */
  next(nowS: number): string;
  /** Why the pair fails when an agent stayed busy over every try. */
  ended(server: number, client: number, busy: boolean, nowS: number): string | undefined;
  will_retry(server: number, client: number): boolean;
  free(): void;
}

/** The functions only the codec module has (`loadCodec()`): running a plan or a matrix. */
export type Codec = Required<Pick<Stats, 'expand_plan' | 'presets'>> & {
  /** Throws with the first step the agents would refuse (protocol/src/driver.rs `check_step`). */
  check_steps: (steps: string, agents: string) => void;
  StepDriver: new (step: string, testId: number, server: number, client: number, agents: string, startedUnix: number) => StepDriver;
  /** The matrix's schedule (protocol/src/matrix.rs `Schedule`, as `meshperf run --matrix`). */
  MatrixSchedule: new (n: number, serial: boolean, bothWays: boolean) => MatrixSchedule;
  /** Throws why a matrix's agents cannot run `kind` (listed twice, one agent under two names, ...). */
  matrix_check_agents: (agents: string, kind: string) => void;
  /** JSON lines: the limits that differ between the agents, with the strictest. */
  matrix_strictest: (agents: string) => string;
  /** A plan step (JSON) measures both ways at once: one test per unordered pair. */
  matrix_both_ways: (step: string) => boolean;
};

/** The functions only the view module has (`loadView()`): showing, sharing and exporting a result. */
export type View = Required<Pick<Stats, 'permalink_encode' | 'permalink_decode'>> & {
  /** The run as `;`-separated CSV (protocol/src/export.rs, as `meshperf run --csv`). */
  result_csv: (result: string) => string;
  /** JSON `[[row, column, value | null]]`: the cells a step result fills (row sends). */
  matrix_cells: (step: string, metric: string) => string;
  /** A step result's headline figure (JSON in); undefined when it failed or has none. */
  matrix_metric: (step: string, metric: string) => number | undefined;
  matrix_default_metric: (kind: string) => string;
  /** JSON `[{name, label}]`. */
  matrix_metrics: () => string;
  /** A latency_under_load summary's card (protocol/src/lul_card.rs, the CLI's rules), JSON in and out. */
  lul_card: (summary: string) => string;
  /** A latency_under_load summary's verdict (protocol/src/verdict.rs, the sentence the CLI prints), JSON in and out. */
  lul_verdict: (summary: string) => string;
  /** A step's line against its agents' links (protocol/src/link.rs, the line the CLI prints): step JSON in, a JSON string or null out. */
  link_line: (step: string) => string;
  /** What a step's sides shared their agents with (protocol/src/result.rs, the lines the CLI prints): step JSON and the agents' names in, a JSON list of lines out. */
  shared_marks: (step: string, server: string, client: string) => string;
  /** Probe-by-probe latency lanes (stats/src/lul_lanes.rs). */
  lul_lanes: (
    phase: Uint8Array, seq: Float64Array, t1: Float64Array, t2: Float64Array, t3: Float64Array, t4: Float64Array,
    synced: boolean, sent: number, probeMs: number,
  ) => LulLanes;
};

/** stats/src/lul_load.rs `PhaseRates`: interval ends (s since the test's start), bits/s, phase code, 1 on a phase's last interval. */
export interface LulRates {
  t_s: Float64Array;
  bps: Float64Array;
  phase: Float64Array;
  last: Float64Array;
}

/** stats/src/lul_lanes.rs `Lanes`: times in s, delays in ms; start_s/end_s per phase code (NaN: none). */
export interface LulLanes {
  t_s: Float64Array;
  rtt_ms: Float64Array;
  up_ms: Float64Array;
  down_ms: Float64Array;
  lost_t_s: Float64Array;
  start_s: Float64Array;
  end_s: Float64Array;
}

const STATS = './wasm-pkg/meshperf_stats.js';
const CODEC = './wasm-pkg/meshperf_codec.js';
const VIEW = './wasm-pkg/meshperf_view.js';
const found = import.meta.glob<Record<string, unknown>>([
  './wasm-pkg/meshperf_stats.js',
  './wasm-pkg/meshperf_codec.js',
  './wasm-pkg/meshperf_view.js',
]);

/** Fetches and instantiates one wasm-bindgen module; `what` names it in errors. */
async function instantiate(path: string, what: string): Promise<Record<string, unknown>> {
  const load = found[path];
  if (!load) throw new Error(`${what} not built (${path.slice(2)} is missing: run scripts/build.sh)`);
  try {
    const m = await load();
    await (m.default as () => Promise<unknown>)();
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
  loading ??= instantiate(STATS, 'the statistics module (wasm)').then((m) => (loaded ??= { ...m } as unknown as Stats));
  loading.catch(() => (loading = null));
  return loading.then(() => loaded!);
}

/** Loads one on-demand module beside the statistics and adds `names` of it to `loaded`. */
function loadBeside<T>(path: string, what: string, names: (keyof T)[]): Promise<Stats & T> {
  return Promise.all([loadStats(), instantiate(path, what)]).then(([, m]) => {
    const more = Object.fromEntries(names.map((n) => [n, m[n as string]])) as T;
    const both = { ...loaded!, ...more };
    loaded = both;
    return both;
  });
}

/** Loads the codec module once (and the statistics module): what running a plan or a matrix needs. */
export function loadCodec(): Promise<Stats & Codec> {
  codecLoading ??= loadBeside<Codec>(CODEC, 'the plan and run module (wasm)', [
    'expand_plan', 'presets', 'check_steps', 'StepDriver', 'MatrixSchedule',
    'matrix_check_agents', 'matrix_strictest', 'matrix_both_ways',
  ]);
  codecLoading.catch(() => (codecLoading = null));
  return codecLoading;
}

/** Loads the view module once (and the statistics module): what showing, sharing and exporting a result needs. */
export function loadView(): Promise<Stats & View> {
  viewLoading ??= loadBeside<View>(VIEW, 'the result and permalink module (wasm)', [
    'permalink_encode', 'permalink_decode', 'result_csv', 'matrix_cells', 'matrix_metric',
    'matrix_default_metric', 'matrix_metrics', 'lul_card', 'lul_verdict', 'link_line', 'lul_lanes', 'shared_marks',
  ]);
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
