// From a swept run's step summaries to the curves the seeds drew: one x axis
// (the numeric swept parameter), one curve per value of the other axis, the
// mean over repetitions with its 95% interval (wasm `confidence`).

import { isRr } from '../plan/kinds';
import type { RunResult, StepResult } from '../result/result';
import type { Stats } from '../wasm';

export interface Metric {
  id: string;
  title: string;
  /** Axis label stem; the unit is added by the plot. */
  y: string;
  /** Value in base units (bit/s, us, fraction) or null. */
  get: (s: StepResult) => number | null;
  kind: 'rate' | 'time' | 'fraction';
  log?: boolean;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The round-trip statistics a latency sweep can plot (udp_req_timo prints ave, min and max). */
export const RTT_STATS = ['mean', 'median', 'min', 'p99', 'max'] as const;
export type RttStat = (typeof RTT_STATS)[number];

export function metricsFor(kind: string, stat: RttStat = 'mean'): Metric[] {
  if (isRr(kind))
    return [{ id: 'rtt', title: 'Latency', y: `${stat} round-trip time`, kind: 'time', get: (s) => num(s.summary?.rtt_us?.[stat]) }];
  if (kind === 'tcp_crr')
    return [{ id: 'txn', title: 'Transaction time (connect, request, response, close)', y: `${stat} transaction time`, kind: 'time', get: (s) => num(s.summary?.txn_us?.[stat]) }];
  if (kind === 'udp_stream')
    return [
      // udp_bw_mon's figure 3.1: received wire rate (payload + per-frame overhead) against the wait, log-log.
      { id: 'wire', title: 'Received wire rate', y: 'received wire rate', kind: 'rate', log: true, get: (s) => num(s.summary?.wire_bits_per_second) },
      { id: 'recv', title: 'Receive rate', y: 'receive rate', kind: 'rate', log: true, get: (s) => num(s.summary?.recv_bits_per_second) },
      {
        id: 'loss', title: 'Loss', y: 'packets lost', kind: 'fraction', log: true,
        get: (s) => { const sent = num(s.summary?.sent); const lost = num(s.summary?.lost); return sent && lost != null ? lost / sent : null; },
      },
    ];
  return [{ id: 'tput', title: 'Throughput', y: 'throughput', kind: 'rate', get: (s) => num(s.summary?.bits_per_second) }];
}

export interface Curve {
  label: string;
  /** x -> values of the repetitions */
  points: Map<number, number[]>;
}

export interface SweepData {
  x: string;
  /** Sorted x values. */
  xs: number[];
  curves: { label: string; mean: (number | null)[]; low: (number | null)[]; high: (number | null)[] }[];
  repeats: boolean;
}

/** The numeric axis to plot along: the first axis whose values are numbers. */
export function xAxis(r: RunResult): string | null {
  const first = r.steps[0];
  if (!first) return null;
  return first.point.find(([, v]) => typeof v === 'number')?.[0] ?? null;
}

export function sweepData(r: RunResult, m: Metric, wasm: Stats): SweepData | null {
  const x = xAxis(r);
  if (!x) return null;
  const byCurve = new Map<string, Curve>();
  for (const s of r.steps) {
    const xv = Number(s.point.find(([k]) => k === x)?.[1]);
    const y = m.get(s);
    if (!Number.isFinite(xv) || y == null) continue;
    const label = s.point.filter(([k]) => k !== x).map(([k, v]) => `${k}=${v}`).join(', ') || s.kind;
    let c = byCurve.get(label);
    if (!c) byCurve.set(label, (c = { label, points: new Map() }));
    const list = c.points.get(xv) ?? [];
    list.push(y);
    c.points.set(xv, list);
  }
  const xs = [...new Set([...byCurve.values()].flatMap((c) => [...c.points.keys()]))].sort((a, b) => a - b);
  let repeats = false;
  const curves = [...byCurve.values()].map((c) => {
    const mean: (number | null)[] = [], low: (number | null)[] = [], high: (number | null)[] = [];
    for (const xv of xs) {
      const v = c.points.get(xv);
      if (!v?.length) {
        mean.push(null), low.push(null), high.push(null);
      } else if (v.length === 1) {
        mean.push(v[0]), low.push(null), high.push(null);
      } else {
        repeats = true;
        const ci = wasm.confidence(Float64Array.from(v));
        mean.push(ci.mean), low.push(ci.low), high.push(ci.high);
      }
    }
    return { label: c.label, mean, low, high };
  });
  return { x, xs, curves, repeats };
}

/** Least-squares line through a curve's points (all repetitions): wasm `linfit`. */
export function fitCurve(r: RunResult, m: Metric, label: string, wasm: Stats) {
  const x = xAxis(r)!;
  const xs: number[] = [], ys: number[] = [];
  for (const s of r.steps) {
    const l = s.point.filter(([k]) => k !== x).map(([k, v]) => `${k}=${v}`).join(', ') || s.kind;
    const y = m.get(s);
    if (l !== label || y == null) continue;
    xs.push(Number(s.point.find(([k]) => k === x)?.[1]));
    ys.push(y);
  }
  if (xs.length < 2) return null;
  try {
    return wasm.linfit(Float64Array.from(xs), Float64Array.from(ys));
  } catch {
    return null;
  }
}
