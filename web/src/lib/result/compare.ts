// The Compare runs tab's table: each selected run's summary figures side by
// side (its last step, as the comparison plot), and each one's difference
// from the first run, the baseline.

import type { RunResult } from './result';
import { fmt, formatRate, formatUs } from '../units';

/** How a figure is written, and which way is better (for nobody's colour: the words say it). */
type Unit = 'rate' | 'us' | 'count' | 'percent' | 'per_s';

interface Figure {
  id: string;
  label: string;
  unit: Unit;
  get: (r: RunResult) => number | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const last = (r: RunResult) => r.steps[r.steps.length - 1];
const sum = (r: RunResult) => (last(r)?.summary ?? null) as Record<string, any> | null;
const side = (r: RunResult, role: 'client' | 'server') => ((last(r)?.sides as any)?.[role] ?? null) as Record<string, any> | null;

export const FIGURES: Figure[] = [
  // tcp_stream and unix_stream: the receiver's rate (with direction both, the sum of the two).
  { id: 'rate', label: 'rate', unit: 'rate', get: (r) => (sum(r)?.recv_bits_per_second == null ? num(sum(r)?.bits_per_second) : null) },
  { id: 'recv_rate', label: 'received rate', unit: 'rate', get: (r) => num(sum(r)?.recv_bits_per_second) },
  { id: 'send_rate', label: 'send rate', unit: 'rate', get: (r) => num(sum(r)?.send_bits_per_second) },
  { id: 'retransmits', label: 'retransmits', unit: 'count', get: (r) => num(sum(r)?.retransmits) },
  {
    id: 'lost',
    label: 'lost (% of sent)',
    unit: 'percent',
    get: (r) => {
      const s = sum(r);
      return num(s?.lost) != null && num(s?.sent) ? (100 * s!.lost) / s!.sent : null;
    },
  },
  { id: 'jitter', label: 'jitter', unit: 'us', get: (r) => num(sum(r)?.jitter_us) },
  { id: 'tps', label: 'transactions/s', unit: 'per_s', get: (r) => num(sum(r)?.transactions_per_second) },
  { id: 'rtt_median', label: 'RTT median', unit: 'us', get: (r) => num(sum(r)?.rtt_us?.median) ?? num(sum(r)?.txn_us?.median) },
  { id: 'rtt_p90', label: 'RTT p90', unit: 'us', get: (r) => num(sum(r)?.rtt_us?.p90) ?? num(sum(r)?.txn_us?.p90) },
  { id: 'rtt_p99', label: 'RTT p99', unit: 'us', get: (r) => num(sum(r)?.rtt_us?.p99) ?? num(sum(r)?.txn_us?.p99) },
  { id: 'connect_median', label: 'connect median', unit: 'us', get: (r) => num(sum(r)?.connect_us?.median) },
  { id: 'cpu_client', label: 'CPU, driving agent (% of a CPU)', unit: 'percent', get: (r) => num(side(r, 'client')?.cpu?.percent) },
  { id: 'cpu_server', label: 'CPU, serving agent (% of a CPU)', unit: 'percent', get: (r) => num(side(r, 'server')?.cpu?.percent) },
];

/** A figure written in its unit. */
export function show(unit: Unit, v: number): string {
  switch (unit) {
    case 'rate':
      return formatRate(v);
    case 'us':
      return formatUs(v);
    case 'percent':
      return `${fmt(v, 3)}%`;
    case 'per_s':
      return fmt(v, 5);
    case 'count':
      return Math.round(v).toLocaleString('en-US');
  }
}

/** `+1.2 Gbit/s (+6.4%)`: `v` against `base`, signed; percentage points for a percentage. */
export function difference(unit: Unit, v: number, base: number): string {
  const d = v - base;
  if (d === 0) return 'same';
  const sign = d > 0 ? '+' : '−';
  if (unit === 'percent') return `${sign}${fmt(Math.abs(d), 3)} points`;
  const abs = unit === 'count' ? Math.round(Math.abs(d)).toLocaleString('en-US') : show(unit, Math.abs(d));
  const rel = base !== 0 ? ` (${sign}${fmt(Math.abs((100 * d) / base), 3)}%)` : '';
  return `${sign}${abs}${rel}`;
}

export interface Row {
  id: string;
  label: string;
  /** Per run: the figure, or '–' where the run has none. */
  values: string[];
  /** Per run after the first: its difference from the first, or '' where either lacks the figure. */
  diffs: string[];
}

/** The rows any selected run has a figure for. */
export function compareRows(results: RunResult[]): Row[] {
  const rows: Row[] = [];
  for (const f of FIGURES) {
    const vs = results.map((r) => {
      try {
        return f.get(r);
      } catch {
        return null;
      }
    });
    if (vs.every((v) => v == null)) continue;
    const base = vs[0];
    rows.push({
      id: f.id,
      label: f.label,
      values: vs.map((v) => (v == null ? '–' : show(f.unit, v))),
      diffs: vs.slice(1).map((v) => (v == null || base == null ? '' : difference(f.unit, v, base))),
    });
  }
  return rows;
}
