// The result format (protocol/src/result.rs), as the page holds it, and the
// sample series a step offers for analysis. Values stay raw (ns, bytes) in the
// result; series here convert them to the unit a reader expects.
//
// A series' values are a Float64Array from the moment they are decoded (the
// step driver's `series_values`, or once from a result file or permalink's
// JSON) to every summary, histogram and CDF: nothing copies them into plain
// arrays. The result JSON is written by `resultJson`, which writes them as
// the JSON arrays they always were.

import type { PlanJson } from '../plan/plan.svelte';
import { KINDS } from '../plan/kinds';
import type * as Wire from '../generated/wire/RunResult';
import type { Role } from '../generated/wire/Role';
import type { StepResult as WireStep } from '../generated/wire/StepResult';
import type { Series as WireSeries } from '../generated/wire/Series';
import type { Pair } from '../generated/wire/Pair';
import type { LulRates, Stats } from '../wasm';
import { MICRO, formatBytes, formatRate, formatUs, rateUnit } from '../units';

// The shapes are the Rust ones (protocol/src/result.rs, exported by
// protocol/examples/export_ts.rs into generated/wire/): a field renamed or
// retyped there fails this build. The page reads summaries as loose objects
// (their keys are per kind) and sample kinds by name.
export type { Role };
/** One ordered pair of a matrix: agent `server` served, agent `client` drove. */
export type { Pair };
type Summary = Record<string, any>;

export type Series = Omit<WireSeries, 'kind' | 'values'> & {
  /** snake_case sample kind name: interval_bytes, rtt_ns, read_bytes, ... */
  kind: string;
  values: Float64Array;
};

export type StepResult = Omit<WireStep, 'kind' | 'params' | 'point' | 'transport' | 'summary' | 'sides' | 'samples' | 'histograms'> & {
  kind: string;
  params: Record<string, unknown>;
  point: [string, unknown][];
  transport: string;
  summary: Summary | null;
  sides: { client?: Summary | null; server?: Summary | null };
  samples: Series[];
  histograms?: WireStep['histograms'];
};

export type RunResult = Omit<Wire.RunResult, 'format' | 'plan' | 'agents' | 'steps'> & {
  format: 'meshperf-result';
  plan: PlanJson;
  agents: Record<string, any>[];
  steps: StepResult[];
  [k: string]: unknown;
};


export function seriesOf(step: StepResult, kind: string, role?: Role): Series[] {
  return step.samples.filter((s) => s.kind === kind && (role == null || s.role === role)).sort((a, b) => a.stream - b.stream);
}

/** A quantity the histogram, CDF and statistics can show. */
export interface Quantity {
  id: string;
  label: string;
  /** The unit of `values` as the page shows it (µs, Gbit/s, bytes). */
  unit: string;
  /** `values` times this is the base unit of its kind (µs for times, bit/s for rates, bytes): views that compare quantities rescale by it. */
  div: number;
  values: Float64Array;
}

/** Whether a quantity is a time (a long tail: log axes suit it). */
export const isTime = (q: Pick<Quantity, 'unit'>): boolean => q.unit === MICRO || q.unit === 'ms';

/** `v` times `f`: a new array in the reader's unit. */
function scaled(v: Float64Array, f: number): Float64Array {
  const out = new Float64Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i] * f;
  return out;
}

/** The values of `series` one after another: the one series itself when there is one (no copy). */
function joined(series: Series[]): Float64Array {
  if (series.length === 1) return series[0].values;
  const out = new Float64Array(series.reduce((n, s) => n + s.values.length, 0));
  let at = 0;
  for (const s of series) {
    out.set(s.values, at);
    at += s.values.length;
  }
  return out;
}

/** Adds per-stream interval byte counts into one series. */
export function sumStreams(streams: Float64Array[]): Float64Array {
  const n = Math.max(0, ...streams.map((s) => s.length));
  const out = new Float64Array(n);
  for (const s of streams) for (let i = 0; i < s.length; i++) out[i] += s[i] ?? 0;
  return out;
}

/** Latency under load's phases by code, as its probes' `probe_phase` numbers them. */
const LUL_PHASES = ['idle', 'download', 'upload', 'both'] as const;

/** A parameter of `step`: the plan's, else the kind's default. */
const param = (step: StepResult, name: string): number =>
  Number(step.params[name] ?? KINDS[step.kind]?.params.find((p) => p.name === name)?.default ?? 0);

/**
 * A latency_under_load step's phases as its summary (else its plan) has
 * them: how long each ran, the summary's entry of each, streams per direction.
 */
function lulPhasing(step: StepResult) {
  const s = step.summary ?? {};
  const ran = (name: string) => (s.phases as Record<string, any>[] | undefined)?.find((p) => p.phase === name);
  const phaseS = Float64Array.from(LUL_PHASES, (name) => Number(ran(name)?.seconds ?? param(step, `${name}_s`)));
  return { ran, phaseS, n: Number(s.streams_per_direction ?? step.params.streams ?? 1) };
}

/** Sample kinds with one value per interval of `interval_ms` (a stream's own intervals, from its start). */
export const PER_INTERVAL = new Set([
  'interval_bytes', 'tcp_rtt_us', 'tcp_cwnd', 'tcp_retrans',
  // TCP_INFO per interval beyond those (issue 43; protocol/src/frame.rs from 40).
  'tcp_min_rtt_us', 'tcp_delivery_rate', 'tcp_app_limited', 'tcp_unacked_bytes', 'tcp_notsent_bytes', 'tcp_bytes_retrans',
  'tcp_reord_seen', 'tcp_busy_pm', 'tcp_rwnd_limited_pm', 'tcp_sndbuf_limited_pm', 'tcp_snd_wnd', 'tcp_rcv_wnd', 'tcp_rcv_space', 'tcp_rcv_queue',
]);

/**
 * When each of a stream's intervals ended, s since the test's start: a
 * stream counts from its start, a latency_under_load load stream from its
 * phase's (the phases run one after another, stats/src/lul_load.rs).
 * `streams` are the stream numbers, `len` the intervals each has.
 */
export function intervalEnds(step: StepResult, wasm: Pick<Stats, 'lul_stream_starts'>, streams: number[], len: number[]): Float64Array[] {
  const dt = intervalMs(step) / 1000;
  let starts = streams.map(() => 0);
  if (step.kind === 'latency_under_load') {
    const { phaseS, n } = lulPhasing(step);
    starts = Array.from(wasm.lul_stream_starts(Uint16Array.from(streams), n, phaseS, param(step, 'gap_s')));
  }
  // To the nanosecond: 0.3, not 0.30000000000000004.
  return streams.map((_, k) => Float64Array.from({ length: len[k] }, (_, i) => Math.round((starts[k] + (i + 1) * dt) * 1e9) / 1e9));
}

/**
 * A latency_under_load step's TCP load in one direction (`up`: the driving
 * agent to the serving one), as its receiver counted it, each phase's
 * streams summed and its intervals at their own time on the test's axis
 * (stats/src/lul_load.rs): the phases run one after another and each
 * stream counts from its own phase's start, so they are never added by
 * interval number. Null without such streams.
 */
export function lulRates(step: StepResult, wasm: Pick<Stats, 'lul_rates'>, up: boolean): LulRates | null {
  const iv = seriesOf(step, 'interval_bytes', up ? 'server' : 'client');
  if (!iv.length) return null;
  const { ran, phaseS, n } = lulPhasing(step);
  // The receiver's time to the phase's last byte (what the summary's rate rests on).
  const dir = up ? 'up' : 'down';
  const recvS = Float64Array.from(LUL_PHASES, (name) => {
    const p = ran(name);
    return p && p[`${dir}_bits_per_second`] > 0 ? (p[`${dir}_bytes`] * 8) / p[`${dir}_bits_per_second`] : NaN;
  });
  const lens = Uint32Array.from(iv, (x) => x.values.length);
  const bytes = new Float64Array(lens.reduce((a, b) => a + b, 0));
  let at = 0;
  for (const x of iv) {
    bytes.set(x.values, at);
    at += x.values.length;
  }
  return wasm.lul_rates(Uint16Array.from(iv, (x) => x.stream), lens, bytes, n, up, phaseS, param(step, 'gap_s'), recvS, intervalMs(step));
}

/**
 * A latency_under_load step's throughput over time in Mbit/s: x (s since
 * the test's start, each interval's end), down, up and their sum; a null
 * row between phases, so no line joins them. Null without load streams.
 */
export function lulThroughput(step: StepResult, wasm: Pick<Stats, 'lul_rates'>): [number[], (number | null)[], (number | null)[], (number | null)[]] | null {
  const [down, up] = [lulRates(step, wasm, false), lulRates(step, wasm, true)];
  if (!down && !up) return null;
  const out: [number[], (number | null)[], (number | null)[], (number | null)[]] = [[], [], [], []];
  for (const code of [1, 2, 3]) {
    const of = (r: LulRates | null) => (r ? [...r.phase.keys()].filter((i) => r.phase[i] === code) : []);
    const [d, u] = [of(down), of(up)];
    const len = Math.max(d.length, u.length);
    if (!len) continue;
    for (let i = 0; i < len; i++) {
      const dv = i < d.length ? down!.bps[d[i]] / 1e6 : null;
      const uv = i < u.length ? up!.bps[u[i]] / 1e6 : null;
      out[0].push(Math.max(i < d.length ? down!.t_s[d[i]] : -Infinity, i < u.length ? up!.t_s[u[i]] : -Infinity));
      out[1].push(dv);
      out[2].push(uv);
      out[3].push((dv ?? 0) + (uv ?? 0));
    }
    out[0].push(out[0][out[0].length - 1] + 1e-6);
    for (const c of [1, 2, 3] as const) out[c].push(null);
  }
  return out;
}

/** The sample interval: the summaries', the plan's, else the kind's default (latency_under_load: 100 ms). */
export const intervalMs = (step: StepResult): number =>
  Number(
    step.summary?.interval_ms ??
      step.sides.server?.interval_ms ??
      step.sides.client?.interval_ms ??
      step.params.interval_ms ??
      KINDS[step.kind]?.params.find((p) => p.name === 'interval_ms')?.default ??
      10,
  );

/**
 * The side whose summary is the step's `summary` (the step driver chose it:
 * protocol/src/result.rs `primary_role`): the receiver of a stream, the
 * requester of a request/response test.
 */
export function primarySide(step: StepResult): Role {
  const same = (side: unknown) => side != null && JSON.stringify(side) === JSON.stringify(step.summary);
  if (same(step.sides.server) && !same(step.sides.client)) return 'server';
  return 'client';
}

/** Each step's quantities, worked out once: every view of the step shares them (and their wasm sample sets). */
const derived = new WeakMap<StepResult, Quantity[]>();

/** The quantities a step's samples support, the most telling first. */
export function quantities(step: StepResult, wasm: Pick<Stats, 'lul_rates' | 'whole_ticks'>): Quantity[] {
  let qs = derived.get(step);
  if (!qs) derived.set(step, (qs = derive(step, wasm)));
  return qs;
}

function derive(step: StepResult, wasm: Pick<Stats, 'lul_rates' | 'whole_ticks'>): Quantity[] {
  const out: Quantity[] = [];
  const primary = primarySide(step);
  const rtt = joined(seriesOf(step, 'rtt_ns'));
  // tcp_crr: each sample is a whole transaction (connect, request,
  // response, close), and its connect time is a series of its own.
  const crr = step.kind === 'tcp_crr';
  if (rtt.length) out.push({ id: 'rtt', label: crr ? 'transaction time' : 'round-trip time', unit: MICRO, div: 1, values: scaled(rtt, 1e-3) });
  const connect = joined(seriesOf(step, 'connect_ns'));
  if (connect.length) out.push({ id: 'connect', label: 'connect time', unit: MICRO, div: 1, values: scaled(connect, 1e-3) });
  // Latency under load: each direction's load as its receiver counted it,
  // every phase's intervals at their own time (never added across phases),
  // each phase's last, shorter interval left out.
  const lul = step.kind === 'latency_under_load';
  for (const up of lul ? [false, true] : []) {
    const r = lulRates(step, wasm, up);
    if (!r || !r.bps.length) continue;
    const bps = r.bps.filter((_, i) => !r.last[i]);
    const u = rateUnit(bps.reduce((m, v) => Math.max(m, v), 0));
    const label = up ? 'upload throughput per interval (received by the serving agent)' : 'download throughput per interval (received by the driving agent)';
    out.push({ id: up ? 'tput-up' : 'tput-down', label, unit: u.unit, div: u.div, values: Float64Array.from(bps, (v) => v / u.div) });
  }
  for (const role of (lul ? [] : [primary, primary === 'client' ? 'server' : 'client']) as Role[]) {
    const iv = seriesOf(step, 'interval_bytes', role);
    if (!iv.length) continue;
    // Only the intervals every stream spent whole inside its own data
    // movement count: a partial first or last one is not the path's rate.
    const sum = sumStreams(iv.map((s) => s.values));
    const [from, to] = wholeIntervals(step, role, iv, sum.length, wasm);
    const bps = scaled(sum.subarray(from, to), 8 / (intervalMs(step) / 1000));
    const u = rateUnit(bps.reduce((m, v) => Math.max(m, v), 0));
    out.push({ id: `tput-${role}`, label: `throughput per interval (${role})`, unit: u.unit, div: u.div, values: scaled(bps, 1 / u.div) });
  }
  const reads = joined(seriesOf(step, 'read_bytes'));
  if (reads.length) out.push({ id: 'reads', label: 'read size', unit: 'bytes', div: 1, values: reads });
  const arr = joined(seriesOf(step, 'arrival_ns'));
  if (arr.length > 1) out.push({ id: 'gap-recv', label: 'inter-arrival time', unit: MICRO, div: 1, values: diffs(arr) });
  const send = joined(seriesOf(step, 'send_time_ns'));
  if (send.length > 1) out.push({ id: 'gap-send', label: 'send gap', unit: MICRO, div: 1, values: diffs(send) });
  const trtt = joined(seriesOf(step, 'tcp_rtt_us', primary === 'client' ? 'client' : undefined));
  if (trtt.length) out.push({ id: 'tcp-rtt', label: 'TCP smoothed RTT (TCP_INFO)', unit: MICRO, div: 1, values: trtt });
  return out;
}

/**
 * The intervals `[from, to)` of a side's summed interval series (`n` long)
 * that every stream spent whole inside its own data movement: the rule of
 * protocol/src/intervals.rs `whole_intervals` (a permalink's histograms
 * count the same ones), through wasm (`whole_ticks`, stats/src/series.rs).
 * Here only each stream's first and last byte times are read from the
 * side's summary, on the samples' clock (its warm-up, `omitted_s`, added
 * back). Without per-stream times (older results), the last interval is
 * left out. At least one interval is kept.
 */
export function wholeIntervals(step: StepResult, role: Role, iv: Series[], n: number, wasm: Pick<Stats, 'whole_ticks'>): [number, number] {
  const side = step.sides[role] as Summary | null | undefined;
  const omitted = Number(side?.omitted_s ?? 0);
  const streams = iv.map((s) => (side?.streams as (Record<string, any> | null)[] | undefined)?.find((x) => Number(x?.index) === s.stream));
  const times = (key: string) => streams.map((x) => Number(x?.[key]) + omitted).filter(Number.isFinite);
  const [ends, starts] = [times('seconds'), times('first_seconds')];
  const known = (t: number[]) => Float64Array.from(t.length === iv.length ? t : []);
  const [from, to] = wasm.whole_ticks(known(ends), known(starts), omitted, intervalMs(step) / 1000, n);
  return [from, to];
}

/** Differences of consecutive times, ns in, us out. */
function diffs(ns: Float64Array): Float64Array {
  const out = new Float64Array(ns.length - 1);
  for (let i = 1; i < ns.length; i++) out[i - 1] = (ns[i] - ns[i - 1]) / 1e3;
  return out;
}

/** "msg_bytes=1M, transport=tcp, rep 2" */
export function pointLabel(step: StepResult, sizeText: (n: number) => string): string {
  const parts = step.point.map(([k, v]) => `${k}=${k.endsWith('_bytes') || k.endsWith('buf') ? sizeText(Number(v)) : v}`);
  if (step.repeat > 0 || parts.length) parts.push(`rep ${step.repeat + 1}`);
  return parts.join(', ') || step.kind;
}

/** A short label for a stored or shown run. */
export function runLabel(r: RunResult): string {
  const name = r.plan.name ?? r.plan.kind;
  // A pair's agents in the order they serve and drive; a matrix's are every agent.
  const hosts = r.agents.map((a) => a?.hostname ?? '?').join(r.steps.some((s) => s.pair) ? ', ' : ' → ');
  const when = new Date(r.created_unix * 1000).toLocaleString('sv-SE').slice(0, 16);
  // A run whose last step was cut short (Cancel, Ctrl-C) and kept as partial says so.
  const partial = r.steps.some((s) => s.summary?.partial) ? ' · partial' : '';
  return `${name} · ${hosts || 'no agents'} · ${when}${partial}`;
}

/**
 * The figures of a step kept as partial (cut short by Cancel on the page or
 * Ctrl-C in `meshperf run`; protocol/src/partial.rs gives its summary): what
 * its samples gave before the cancel, as the page says figures. Null for a
 * step that ran to its end.
 */
export function partialFigures(step: Pick<StepResult, 'summary'>): string | null {
  const f = step.summary;
  if (!f?.partial) return null;
  const rtt = (what: string, st: Summary | null | undefined) =>
    st ? `${what} median ${formatUs(st.median)}, p99 ${formatUs(st.p99)}, max ${formatUs(st.max)}` : null;
  if (typeof f.bytes === 'number') {
    return `${formatBytes(f.bytes)} bytes in ${Number(f.seconds).toFixed(2)} s, ${formatRate(f.bits_per_second)}`;
  }
  if (typeof f.count === 'number') return [`${formatBytes(f.count)} transactions`, rtt('round trip', f.rtt_us)].filter(Boolean).join(', ');
  if (typeof f.transactions === 'number') {
    return [`${formatBytes(f.transactions)} transactions`, rtt('transaction', f.txn_us), rtt('connect', f.connect_us)].filter(Boolean).join(', ');
  }
  return null;
}

/**
 * The result file's text, as it always was: series values as JSON arrays
 * (JSON.stringify would write a Float64Array as an object keyed "0", "1", ...).
 * Keys keep their order.
 */
export const resultJson = (r: RunResult): string =>
  JSON.stringify({ ...r, steps: r.steps.map((s) => ({ ...s, samples: s.samples.map((x) => ({ ...x, values: Array.from(x.values) })) })) });

/**
 * Makes every series' values of a result read from JSON (a file, a
 * permalink, an older stored run) a Float64Array, in place, once; values
 * already typed are kept as they are.
 */
export function typedSamples(r: RunResult): RunResult {
  for (const s of r.steps) for (const x of s.samples) if (!(x.values instanceof Float64Array)) x.values = Float64Array.from((x.values ?? []) as ArrayLike<number>);
  return r;
}

/** Parses and checks a result file's text; throws with a clear message. */
export function parseResult(text: string): RunResult {
  let v: any;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`not a meshperf result: not JSON (${(e as Error).message})`);
  }
  if (v?.format !== 'meshperf-result') throw new Error(`not a meshperf result (format is ${JSON.stringify(v?.format ?? null)})`);
  if (Number(v.version) > 1) throw new Error(`this result has format version ${v.version}; this page reads up to version 1: upgrade meshperf`);
  if (!v.plan || !Array.isArray(v.steps)) throw new Error('not a meshperf result: plan or steps missing');
  for (const s of v.steps) {
    s.samples ??= [];
    s.sides ??= {};
    s.point ??= [];
    s.params ??= {};
    s.repeat ??= 0;
    s.transport ??= 'tcp';
  }
  v.agents ??= [];
  v.created_unix ??= 0;
  return typedSamples(v as RunResult);
}
