// The data of the time-aligned lanes of a latency-under-load step, on the
// driving agent's probe clock (s since the test started): the latency lanes
// probe by probe from stats/src/lul_lanes.rs (round trip, one-way up and
// down through the same clock placement as the summary, unanswered probes),
// and the throughput lane from the load's interval_bytes through wasm
// `rate_series`, each phase's intervals placed from its first probe.

import { intervalMs, seriesOf, sumStreams, type StepResult } from '../result/result';
import type { Codec, LulLanes, Stats } from '../wasm';
import { PHASES, streamsOf } from './phase.svelte';

export interface LaneData {
  lanes: LulLanes;
  /** x (s) and Mbit/s down, up, sum; null between phases. */
  tput: [number[], (number | null)[], (number | null)[], (number | null)[]];
}

// The probe flow's raw series: the driving side's, of the stream the
// summary names (0 for latency_under_load, 65535 beside a bulk test; older
// results say nothing and mean 0).
const probe = (step: StepResult, kind: string) => {
  const at = Number(step.summary?.samples_stream ?? 0);
  return seriesOf(step, kind, 'client').find((x) => x.stream === at)?.values ?? new Float64Array(0);
};

/**
 * Null when the step carries no raw probes (a link too long for them
 * carries histograms instead); throws with the module's message on
 * damaged probe series.
 */
export function laneData(step: StepResult, wasm: Stats & Pick<Codec, 'lul_lanes'>): LaneData | null {
  if (!probe(step, 'send_time_ns').length) return null;
  const s = step.summary ?? {};
  // The responder's times on the requester's origin, as the agent placed them.
  const shift = s.peer_base_ns != null && s.base_ns != null ? Number(s.peer_base_ns) - Number(s.base_ns) : 0;
  const moved = (v: Float64Array) => (shift ? v.map((x) => x + shift) : v);
  const lanes = wasm.lul_lanes(
    Uint8Array.from(probe(step, 'probe_phase')),
    probe(step, 'sequence'),
    probe(step, 'send_time_ns'),
    moved(probe(step, 'peer_recv_ns')),
    moved(probe(step, 'peer_send_ns')),
    probe(step, 'arrival_ns'),
    s.clock?.basis === 'synced',
    Number(s.probes_up?.sent ?? 0),
    Number(s.probe_ms ?? step.params.probe_ms ?? 5),
  );
  const n = Number(s.streams_per_direction ?? step.params.streams ?? 1);
  const ms = intervalMs(step);
  const tput: LaneData['tput'] = [[], [], [], []];
  for (const code of [1, 2, 3]) {
    const start = lanes.start_s[code];
    if (!Number.isFinite(start)) continue;
    const on = streamsOf(code, n);
    // The receiver's time from the phase's start to its last byte, as the summary's rate has it.
    const ph = (s.phases as Record<string, number>[] | undefined)?.find((p) => p.phase === (PHASES[code] as unknown));
    const secs = (dir: 'down' | 'up') => (ph && ph[`${dir}_bits_per_second`] > 0 ? (ph[`${dir}_bytes`] * 8) / ph[`${dir}_bits_per_second`] : undefined);
    // Each direction as its receiver counted it: down at the driving agent, up at the serving one.
    const rate = (role: 'client' | 'server', up: boolean) => {
      const iv = seriesOf(step, 'interval_bytes', role).filter((x) => on(x.stream) && x.stream < 2 * n === up);
      return iv.length ? wasm.rate_series(sumStreams(iv.map((x) => x.values)), ms, secs(up ? 'up' : 'down')) : null;
    };
    const down = rate('client', false);
    const up = rate('server', true);
    const len = Math.max(down?.length ?? 0, up?.length ?? 0);
    const end = Math.max(secs('down') ?? 0, secs('up') ?? 0);
    for (let i = 0; i < len; i++) {
      const d = down && i < down.length ? down[i] / 1e6 : null;
      const u = up && i < up.length ? up[i] / 1e6 : null;
      // The last interval ends where the phase's last byte arrived.
      tput[0].push(start + (end > (i * ms) / 1000 ? Math.min(((i + 1) * ms) / 1000, end) : ((i + 1) * ms) / 1000));
      tput[1].push(d);
      tput[2].push(u);
      tput[3].push((d ?? 0) + (u ?? 0));
    }
    // A break before the next phase.
    tput[0].push((tput[0][tput[0].length - 1] ?? start) + 1e-6);
    for (const c of [1, 2, 3] as const) tput[c].push(null);
  }
  return { lanes, tput };
}
