// A pair's history from Prometheus (issue 44 part 3): the series a meshperf
// monitor exports (`meshperf_pair_*`, docs/deploy.md "Monitoring"), read
// through Prometheus's HTTP API (`/api/v1/query_range`) straight from the
// page, with no backend of ours. Prometheus must let this page's origin
// read its answers (CORS, `--web.cors.origin`; docs/deploy.md "History").
// Every failure is one line saying what to do.

import { fmt } from '../units';

/** A figure of a pair over time: its query and how the page names it. */
export interface HistoryFigure {
  id: 'throughput' | 'rtt' | 'loss';
  label: string;
  unit: 'bit/s' | 's' | 'ratio';
  /**
   * One series per pair (src, dst), whatever monitor or shard measured it:
   * the worst of them, as the recording rules take it
   * (deploy/prometheus/meshperf-rules.yml `meshperf:pair_*`).
   */
  query: string;
  /**
   * The pair's normal at each moment: the median of its figure over the 7
   * days before (the rules' `:median_7d`, here over whatever history
   * Prometheus holds, without their 24-hour minimum).
   */
  baseline: string;
  /** Worse is higher (RTT, loss) or lower (throughput). */
  higherIsWorse: boolean;
}

const figure = (id: HistoryFigure['id'], label: string, unit: HistoryFigure['unit'], metric: string, by: 'min' | 'max'): HistoryFigure => ({
  id,
  label,
  unit,
  query: `${by} by (src, dst) (${metric})`,
  baseline: `${by} by (src, dst) (quantile_over_time(0.5, ${metric}[7d]))`,
  higherIsWorse: by === 'max',
});

export const FIGURES: HistoryFigure[] = [
  figure('throughput', 'throughput', 'bit/s', 'meshperf_pair_throughput_bits_per_second', 'min'),
  figure('rtt', 'RTT p99', 's', 'meshperf_pair_rtt_seconds{quantile="0.99"}', 'max'),
  figure('loss', 'loss', 'ratio', 'meshperf_pair_loss_ratio', 'max'),
];

/** The spans the page offers, with the step of each (about 360 points). */
export const SPANS = [
  { id: 'hour', label: 'last hour', seconds: 3600, step: 10 },
  { id: 'day', label: 'last day', seconds: 86400, step: 240 },
  { id: 'week', label: 'last week', seconds: 7 * 86400, step: 1680 },
] as const;
export type Span = (typeof SPANS)[number];

/** One pair's series: times (unix seconds) and values, NaN where absent. */
export interface PairSeries {
  src: string;
  dst: string;
  t: number[];
  v: number[];
}

/** A Prometheus range answer, checked: every series a pair's. */
export function pairsOf(body: unknown, what: string): PairSeries[] {
  const b = body as { status?: string; data?: { resultType?: string; result?: unknown } } | null;
  if (!b || b.status !== 'success' || b.data?.resultType !== 'matrix' || !Array.isArray(b.data.result))
    throw new Error(`${what} is not a range of series (${JSON.stringify(body).slice(0, 120)}): is that address Prometheus's?`);
  return b.data.result.map((s: { metric?: Record<string, string>; values?: [number, string][] }) => {
    const m = s.metric ?? {};
    if (typeof m.src !== 'string' || typeof m.dst !== 'string' || !Array.isArray(s.values))
      throw new Error(`${what} has a series that is not a pair's (labels ${JSON.stringify(m).slice(0, 120)}, no src and dst): does that Prometheus scrape a meshperf monitor?`);
    const t: number[] = [];
    const v: number[] = [];
    for (const [ts, val] of s.values) {
      t.push(Number(ts));
      v.push(Number(val));
    }
    return { src: m.src, dst: m.dst, t, v };
  });
}

/** Where Prometheus is: the address given, without a trailing slash; an address that is not http(s) is refused. */
export function prometheusBase(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`"${url}" is not an address: give Prometheus's, e.g. http://prometheus:9090`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`"${url}" is not an http or https address: give Prometheus's, e.g. http://prometheus:9090`);
  return u.href.replace(/\/+$/, '');
}

/**
 * `query` over `start` to `end` (unix seconds) every `step` seconds. A
 * failure is one line: Prometheus unreachable, reachable but refusing this
 * page's origin (CORS), refusing the query, or answering something else.
 */
export async function queryRange(base: string, query: string, start: number, end: number, step: number): Promise<PairSeries[]> {
  const q = new URLSearchParams({ query, start: String(start), end: String(end), step: String(step) });
  return pairsOf(await ask(base, `query_range?${q}`), `Prometheus's answer from ${base}`);
}

/** `query` at the instant `time` (unix seconds, `/api/v1/query`): each pair's value then; failures as queryRange's. */
export async function queryAt(base: string, query: string, time: number): Promise<Map<string, number>> {
  const q = new URLSearchParams({ query, time: String(time) });
  return pairsAt(await ask(base, `query?${q}`), `Prometheus's answer from ${base}`);
}

/** A pair's key in the maps here: sending agent, then receiving agent. */
export const pairKey = (src: string, dst: string): string => `${src}\u0000${dst}`;

/** A Prometheus instant answer, checked: every sample a pair's; pairKey to value. */
export function pairsAt(body: unknown, what: string): Map<string, number> {
  const b = body as { status?: string; data?: { resultType?: string; result?: unknown } } | null;
  if (!b || b.status !== 'success' || b.data?.resultType !== 'vector' || !Array.isArray(b.data.result))
    throw new Error(`${what} is not a vector of samples (${JSON.stringify(body).slice(0, 120)}): is that address Prometheus's?`);
  const out = new Map<string, number>();
  for (const s of b.data.result as { metric?: Record<string, string>; value?: [number, string] }[]) {
    const m = s.metric ?? {};
    if (typeof m.src !== 'string' || typeof m.dst !== 'string' || !Array.isArray(s.value))
      throw new Error(`${what} has a sample that is not a pair's (labels ${JSON.stringify(m).slice(0, 120)}, no src and dst): does that Prometheus scrape a meshperf monitor?`);
    out.set(pairKey(m.src, m.dst), Number(s.value[1]));
  }
  return out;
}

/** Asks Prometheus's HTTP API (`path` after /api/v1/) and reads its JSON; each failure one line. */
async function ask(base: string, path: string): Promise<unknown> {
  let r: Response;
  try {
    r = await fetch(`${base}/api/v1/${path}`, { signal: AbortSignal.timeout(15000) });
  } catch (e) {
    throw new Error(await whyNot(base, e as Error));
  }
  let body: unknown;
  try {
    body = await r.json();
  } catch {
    throw new Error(`Prometheus at ${base} answered ${r.status} with something that is not JSON: is that address Prometheus's?`);
  }
  if (!r.ok) {
    const err = (body as { error?: string } | null)?.error;
    throw new Error(`Prometheus at ${base} refused the query (${r.status}${err ? `: ${err}` : ''})`);
  }
  return body;
}

/**
 * A pair's deviation from its own baseline (the fleet heatmap at a past
 * time): value / baseline for throughput and RTT, value - baseline for loss
 * (a ratio; its baseline is often 0). Null where either is missing, or a
 * ratio's baseline is not above 0.
 */
export function deviation(f: HistoryFigure, value: number | undefined, baseline: number | undefined): number | null {
  if (value == null || baseline == null || !Number.isFinite(value) || !Number.isFinite(baseline)) return null;
  if (f.id === 'loss') return value - baseline;
  return baseline > 0 ? value / baseline : null;
}

/**
 * How much worse than its baseline a deviation is, signed (0: as the
 * baseline, above 0: worse, below: better): ln of the ratio, turned for
 * throughput (lower is worse); for loss, the difference itself.
 */
export function worseness(f: HistoryFigure, d: number): number {
  if (f.id === 'loss') return d;
  const l = Math.log(d > 0 ? d : Number.MIN_VALUE);
  return f.higherIsWorse ? l : -l;
}

/**
 * The half-width of the heatmap's scale in worseness: the largest among
 * `ds`, at least ln 1.1 for a ratio (a few per cent of noise stays near
 * neutral) or 1 percentage point of loss.
 */
export function deviationSpan(f: HistoryFigure, ds: number[]): number {
  let span = f.id === 'loss' ? 0.01 : Math.log(1.1);
  for (const d of ds) if (Number.isFinite(d)) span = Math.max(span, Math.abs(worseness(f, d)));
  return span;
}

/** Where deviation `d` sits on the diverging scale (colour.ts ratioColourAt): 0.5 as its baseline, towards 1 (red) worse, towards 0 (blue) better. */
export const deviationPosition = (f: HistoryFigure, d: number, span: number): number => Math.min(1, Math.max(0, 0.5 + worseness(f, d) / (2 * span)));

/** A deviation in words: `×1.52 (worse)`, `+0.3 pp (worse)`, `×1.00 (as baseline)`. */
export function deviationText(f: HistoryFigure, d: number, digits = 3): string {
  const w = worseness(f, d);
  const word = w > 0 ? 'worse' : w < 0 ? 'better' : 'as baseline';
  const n = f.id === 'loss' ? `${d >= 0 ? '+' : '−'}${fmt(Math.abs(d) * 100, digits)} pp` : `×${fmt(d, digits)}`;
  return `${n} (${word})`;
}

/** Why a fetch from Prometheus failed: nothing answered, or it answered but not to this origin. */
async function whyNot(base: string, e: Error): Promise<string> {
  if (e.name === 'TimeoutError') return `Prometheus at ${base} did not answer within 15 s`;
  try {
    // An opaque answer: something listens there, and the browser hid it
    // from this page because Prometheus did not allow its origin.
    await fetch(`${base}/-/healthy`, { mode: 'no-cors', signal: AbortSignal.timeout(5000) });
  } catch {
    return `Prometheus at ${base} cannot be reached (nothing answers there, or the address is wrong)`;
  }
  return `Prometheus at ${base} answers, but not to this page (origin ${location.origin}): start it with --web.cors.origin matching this origin, or serve it through a proxy that adds Access-Control-Allow-Origin (docs/deploy.md, History)`;
}

/** The address in the fragment (`#prometheus=URL`), or null. */
export function prometheusInFragment(hash: string): string | null {
  return new URLSearchParams(hash.slice(1)).get('prometheus');
}
