// The data of the time-aligned lanes of a latency-under-load step, on the
// driving agent's probe clock (s since the test started): the latency lanes
// probe by probe from stats/src/lul_lanes.rs (round trip, one-way up and
// down through the same clock placement as the summary, unanswered probes),
// and the throughput lane from the load's interval_bytes through wasm
// `lul_rates`, each phase's intervals at their own time (result.ts
// `lulThroughput`, the statistics' and time series' own placement).

import { lulThroughput, seriesOf, type StepResult } from '../result/result';
import type { LulLanes, Stats, View } from '../wasm';

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
export function laneData(step: StepResult, wasm: Stats & Pick<View, 'lul_lanes'>): LaneData | null {
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
  // Each phase's load at its own time (stats/src/lul_load.rs, through result.ts).
  const tput: LaneData['tput'] = lulThroughput(step, wasm) ?? [[], [], [], []];
  return { lanes, tput };
}
