// A fleet's figures without a call into wasm per pair: a matrix of 1000
// agents is 999 000 steps, and the codec's `matrix_cells` (one JSON round
// trip per step, figures.ts) took seconds for them. This is the same
// reading as protocol/src/matrix.rs `Metric::cells` / `of_summary` /
// `of_lul` and `Metric::default_for`, line for line; web/test/fleet.test.mjs
// checks it against the real codec for every kind and figure, so the two
// cannot drift apart unnoticed. Small matrices keep the codec (figures.ts).

import type { Fill } from './grid';

/** What a step looks like here: only the fields the figures read. */
export interface FleetStep {
  kind?: string;
  params?: Record<string, unknown>;
  pair?: { server: number; client: number } | null;
  error?: string | null;
  summary?: Record<string, any> | null;
  sides?: { client?: Record<string, any> | null; server?: Record<string, any> | null } | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
const at = (v: any, ...keys: string[]): unknown => keys.reduce((o, k) => (o != null && typeof o === 'object' ? o[k] : undefined), v);

/** Every figure's name, in the chooser's order (`Metric::ALL`; fleet.test.mjs holds it to the codec's). */
export const METRICS = ['gbps', 'rtt_p50', 'rtt_p99', 'loss_pct', 'added_rtt', 'tps', 'hops', 'path_mtu', 'marks_changed'] as const;

/**
 * The figures a fleet's file has (issue 45 item 24: the view offered every
 * one, most of them an empty grid): those some measured cell of the first
 * `look` steps that did not fail holds. A kind's steps that succeed all
 * carry the same keys, so a few dozen tell; a file with none that
 * succeeded has none.
 */
export function figuresIn(steps: readonly (FleetStep | null | undefined)[], look = 64): string[] {
  const has = new Set<string>();
  let seen = 0;
  for (const s of steps) {
    if (!s?.pair || s.error != null || !s.summary) continue;
    for (const m of METRICS) if (!has.has(m) && fleetFills(s, m).some(([, , v]) => v != null)) has.add(m);
    if (++seen >= look || has.size === METRICS.length) break;
  }
  return METRICS.filter((m) => has.has(m));
}

/** The figure each kind's cells show by default (`Metric::default_for`). */
export function defaultMetric(kind: string): string {
  switch (kind) {
    case 'tcp_stream':
    case 'unix_stream':
      return 'gbps';
    case 'latency_under_load':
      return 'added_rtt';
    case 'udp_stream':
      return 'loss_pct';
    case 'tcp_crr':
      return 'tps';
    default:
      return 'rtt_p50';
  }
}

/** A step that fills both cells of its pair (`both_ways`). */
export const bothWays = (s: FleetStep): boolean =>
  s.kind === 'latency_under_load' || (s.kind === 'tcp_stream' && s.params?.direction === 'both');

/** A latency_under_load summary's figure one way (`of_lul`). */
function ofLul(metric: string, s: any, up: boolean): number | null {
  const phases: any[] = Array.isArray(s?.phases) ? s.phases : [];
  const phase = (name: string) => phases.find((p) => p?.phase === name);
  const loaded = phase(up ? 'upload' : 'download');
  switch (metric) {
    case 'gbps': {
      const b = num(at(loaded, up ? 'up_bits_per_second' : 'down_bits_per_second'));
      return b == null ? null : b / 1e9;
    }
    case 'rtt_p50':
      return num(at(phase('idle'), 'rtt_us', 'median'));
    case 'rtt_p99':
      return num(at(phase('idle'), 'rtt_us', 'p99'));
    case 'loss_pct': {
      const f = s?.[up ? 'probes_up' : 'probes_down'];
      const sent = num(at(f, 'sent'));
      return sent != null && sent > 0 ? ((num(at(f, 'lost')) ?? 0) / sent) * 100 : null;
    }
    case 'added_rtt':
      return num(at(loaded, 'added_rtt_us', 'median'));
    default:
      return null;
  }
}

/** A `path` summary's own direction (`path_way`): forth on the driving side, back on the serving side. */
const pathWay = (s: any): any => [s?.forth, s?.back].find((d) => d != null && typeof d === 'object' && !Array.isArray(d));

/** The figure from a summary (`of_summary`). */
export function ofSummary(metric: string, s: any): number | null {
  if (Array.isArray(s?.phases)) return ofLul(metric, s, true);
  switch (metric) {
    case 'hops':
      return num(at(pathWay(s), 'peer_hop'));
    case 'path_mtu':
      return num(at(pathWay(s), 'mtu', 'bytes'));
    case 'marks_changed': {
      const marks = at(pathWay(s), 'marks');
      if (!Array.isArray(marks) || !marks.length) return null;
      return marks.filter((m) => m?.verdict !== 'kept' && m?.verdict !== 'lost').length;
    }
    case 'gbps': {
      const b = num(at(s, 'bits_per_second')) ?? num(at(s, 'recv_bits_per_second'));
      return b == null ? null : b / 1e9;
    }
    case 'rtt_p50':
      return num(at(s, 'rtt_us', 'median'));
    case 'rtt_p99':
      return num(at(s, 'rtt_us', 'p99'));
    case 'loss_pct': {
      const sent = num(at(s, 'sent'));
      return sent != null && sent > 0 ? ((num(at(s, 'lost')) ?? 0) / sent) * 100 : null;
    }
    case 'tps':
      return num(at(s, 'transactions_per_second'));
    default:
      return null;
  }
}

/** The cells step `s` fills with figure `metric` (`Metric::cells`): [row, column, value or null]. */
export function fleetFills(s: FleetStep, metric: string): Fill[] {
  const p = s.pair;
  if (!p) return [];
  const ok = s.error == null;
  const of = () => (ok ? ofSummary(metric, s.summary) : null);
  if (!bothWays(s)) return [[p.client, p.server, of()]];
  let up: number | null;
  let down: number | null;
  if (s.kind === 'latency_under_load') [up, down] = [ofLul(metric, s.summary, true), ofLul(metric, s.summary, false)];
  else if (metric === 'gbps') {
    // A stream both ways: each direction's receiver's rate.
    const rate = (v: any) => {
      const secs = num(at(v, 'recv_seconds'));
      const bytes = num(at(v, 'received_bytes'));
      return secs != null && secs > 0 && bytes != null ? (bytes * 8) / secs / 1e9 : null;
    };
    [up, down] = [rate(s.sides?.server), rate(s.sides?.client)];
  } else [up, down] = [of(), of()];
  return [
    [p.client, p.server, ok ? up : null],
    [p.server, p.client, ok ? down : null],
  ];
}
