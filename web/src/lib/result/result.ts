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
  unit: string;
  values: Float64Array;
}

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
export function quantities(step: StepResult): Quantity[] {
  let qs = derived.get(step);
  if (!qs) derived.set(step, (qs = derive(step)));
  return qs;
}

function derive(step: StepResult): Quantity[] {
  const out: Quantity[] = [];
  const primary = primarySide(step);
  const rtt = joined(seriesOf(step, 'rtt_ns'));
  if (rtt.length) out.push({ id: 'rtt', label: 'round-trip time', unit: 'us', values: scaled(rtt, 1e-3) });
  for (const role of [primary, primary === 'client' ? 'server' : 'client'] as Role[]) {
    const iv = seriesOf(step, 'interval_bytes', role);
    if (!iv.length) continue;
    // The last interval is usually partial: leave it out of the statistics.
    const sum = sumStreams(iv.map((s) => s.values));
    const full = sum.length > 1 ? sum.subarray(0, sum.length - 1) : sum;
    const f = 8 / (intervalMs(step) / 1000) / 1e9;
    out.push({ id: `tput-${role}`, label: `throughput per interval (${role})`, unit: 'Gbit/s', values: scaled(full, f) });
  }
  const reads = joined(seriesOf(step, 'read_bytes'));
  if (reads.length) out.push({ id: 'reads', label: 'read size', unit: 'bytes', values: reads });
  const arr = joined(seriesOf(step, 'arrival_ns'));
  if (arr.length > 1) out.push({ id: 'gap-recv', label: 'inter-arrival time', unit: 'us', values: diffs(arr) });
  const send = joined(seriesOf(step, 'send_time_ns'));
  if (send.length > 1) out.push({ id: 'gap-send', label: 'send gap', unit: 'us', values: diffs(send) });
  const trtt = joined(seriesOf(step, 'tcp_rtt_us', primary === 'client' ? 'client' : undefined));
  if (trtt.length) out.push({ id: 'tcp-rtt', label: 'TCP smoothed RTT (TCP_INFO)', unit: 'us', values: trtt });
  return out;
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
  return `${name} · ${hosts || 'no agents'} · ${when}`;
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
