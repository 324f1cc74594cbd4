// The cells each matrix step fills, with their figures, from the codec
// (protocol/src/matrix.rs `Metric::cells`, what the CLI's table shows: a
// step that measures both ways fills both cells of its pair), computed once
// per step object and metric: a running matrix redraws after every pair, a
// ratio heatmap reads two results.

import type { StepResult } from '../result/result';
import type { View } from '../wasm';
import type { Fill } from './grid';
import type { Verdict } from '../lul/card';
import { formatUs } from '../units';

const cache = new WeakMap<StepResult, Map<string, Fill[]>>();

/** The cells step `s` fills with figure `metric` ([row, column, value or null]). */
export function fills(c: View, s: StepResult, metric: string): Fill[] {
  let m = cache.get(s);
  if (!m) cache.set(s, (m = new Map()));
  if (!m.has(metric)) {
    let v: Fill[] = s.pair ? [[s.pair.client, s.pair.server, null]] : [];
    try {
      v = JSON.parse(c.matrix_cells(JSON.stringify({ ...s, samples: [], histograms: [] }), metric)) as Fill[];
    } catch (e) {
      console.warn((e as Error).message);
    }
    m.set(metric, v);
  }
  return m.get(metric) ?? [];
}

const verdicts = new WeakMap<StepResult, Verdict | null>();

/** The verdict of a `latency_under_load` pair (protocol/src/verdict.rs); null for other kinds and a failed pair. */
function lulVerdict(c: Pick<View, 'lul_verdict'>, s: StepResult): Verdict | null {
  if (!verdicts.has(s)) {
    let v: Verdict | null = null;
    if (s.kind === 'latency_under_load' && s.summary && !s.error) {
      try {
        v = JSON.parse(c.lul_verdict(JSON.stringify(s.summary))) as Verdict;
      } catch (e) {
        console.warn((e as Error).message);
      }
    }
    verdicts.set(s, v);
  }
  return verdicts.get(s) ?? null;
}

/**
 * The verdict sentence of a `latency_under_load` pair, or what limited a
 * `tcp_stream` pair (the words `meshperf run` prints), for its cells'
 * tooltip; null for other kinds and for a failed pair.
 */
export function verdictOf(c: Pick<View, 'lul_verdict' | 'tcp_verdict'>, s: StepResult): string | null {
  if (s.kind === 'tcp_stream') return tcpVerdict(c, s)?.sentence ?? null;
  return lulVerdict(c, s)?.sentence ?? null;
}

/** protocol/src/verdict/tcp.rs `TcpVerdict`: what limited a tcp_stream. */
export interface TcpVerdict {
  limit: string | null;
  share: number | null;
  sentence: string;
}

const tcpVerdicts = new WeakMap<StepResult, TcpVerdict | null>();

/** What limited a `tcp_stream` step (the sentence `meshperf run` prints); null without TCP_INFO, for other kinds and a failed step. */
export function tcpVerdict(c: Pick<View, 'tcp_verdict'>, s: StepResult): TcpVerdict | null {
  if (!tcpVerdicts.has(s)) {
    let v: TcpVerdict | null = null;
    if (s.kind === 'tcp_stream' && !s.error) {
      try {
        v = JSON.parse(c.tcp_verdict(JSON.stringify({ ...s, samples: [], histograms: [] }))) as TcpVerdict | null;
      } catch (e) {
        console.warn((e as Error).message);
      }
    }
    tcpVerdicts.set(s, v);
  }
  return tcpVerdicts.get(s) ?? null;
}

/**
 * A `latency_under_load` pair's cell of the `added_rtt` figure (row `row`
 * sends: the upload phase's when the driving agent is the row, else the
 * download's) when that added delay reads none: `none (±U)`, the verdict's
 * rule and uncertainty; null otherwise.
 */
export function noneOf(c: Pick<View, 'lul_verdict'>, s: StepResult, metric: string, row: number): string | null {
  if (metric !== 'added_rtt' || !s.pair) return null;
  const phase = row === s.pair.client ? 'upload' : 'download';
  const p = lulVerdict(c, s)?.phases.find((x) => x.phase === phase);
  return p?.none ? `none (±${formatUs(p.uncertainty_ms * 1e3)})` : null;
}
