// Latency under load, one phase at a time: the phase the page's views look
// at (statistics table, histogram, CDF, time series, overlay, step exports),
// and the step reduced to that phase's probes and load streams. The probe
// series (rtt_ns, sequence, probe_phase, the four timestamps) are parallel,
// one value per answered probe, and `probe_phase` says which phase each
// probe was sent in; the load's interval_bytes streams are numbered by the
// engine (agent/src/engine/lul/load.rs): up connections 0..n (upload phase)
// and n..2n (both), down connections 2n..3n (download) and 3n..4n (both).

import type { StepResult } from '../result/result';

export const LUL = 'latency_under_load';
/** Phase names by probe phase code; 'all' keeps every probe (gaps included). */
export const PHASES = ['idle', 'download', 'upload', 'both'] as const;
export type PhaseChoice = 'all' | (typeof PHASES)[number];

class PhaseState {
  /** The phase the views of a latency-under-load step show. */
  phase = $state<PhaseChoice>('all');
}
export const lulPhase = new PhaseState();

const PROBE_KINDS = new Set(['rtt_ns', 'sequence', 'probe_phase', 'send_time_ns', 'peer_recv_ns', 'peer_send_ns', 'arrival_ns']);

/** Which load stream indices run in phase `code` (n streams per direction). */
export function streamsOf(code: number, n: number): (i: number) => boolean {
  const [up, down] = [
    [null, null],
    [null, 2 * n],
    [0, null],
    [n, 3 * n],
  ][code] as (number | null)[];
  return (i) => (up != null && i >= up && i < up + n) || (down != null && i >= down && i < down + n);
}

const cache = new WeakMap<StepResult, Map<PhaseChoice, StepResult>>();

/**
 * `step` reduced to `phase`: the probes sent in it and its load streams.
 * Any other kind or 'all' comes back as it is; a step without raw probe
 * phases (a link carrying the probes as histograms) keeps its probe
 * series, its load streams reduced; the same reduced object comes back for the same step and phase (the
 * views cache their wasm sample sets by array).
 */
export function atPhase(step: StepResult, phase: PhaseChoice = lulPhase.phase): StepResult {
  if (step.kind !== LUL || phase === 'all') return step;
  const codes = step.samples.find((s) => s.kind === 'probe_phase' && s.role === 'client')?.values ?? new Float64Array(0);
  let byPhase = cache.get(step);
  if (!byPhase) cache.set(step, (byPhase = new Map()));
  const hit = byPhase.get(phase);
  if (hit) return hit;
  const code = PHASES.indexOf(phase);
  const n = Number(step.summary?.streams_per_direction ?? step.params.streams ?? 1);
  const inPhase = streamsOf(code, n);
  const keep: number[] = [];
  for (let i = 0; i < codes.length; i++) if (codes[i] === code) keep.push(i);
  const samples = step.samples.flatMap((s) => {
    if (PROBE_KINDS.has(s.kind) && codes.length && s.values.length === codes.length) return [{ ...s, values: Float64Array.from(keep, (i) => s.values[i]) }];
    if (s.kind === 'interval_bytes') return inPhase(s.stream) ? [s] : [];
    return [s];
  });
  const out: StepResult = { ...step, samples };
  byPhase.set(phase, out);
  return out;
}
