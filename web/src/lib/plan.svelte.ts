// The test plan being edited, and its local validation. The serving and the
// driving agent validate again (protocol/src/params.rs); this only refuses
// what is certainly wrong before anything runs, naming the limit.

import type { Agent } from './agents.svelte';
import { formatSize, parseSize } from './units';

export type Direction = 'send' | 'receive' | 'both';

export const plan = $state({
  kind: 'tcp_stream' as const,
  msgText: '1M',
  bound: 'count' as 'count' | 'duration',
  count: 1024,
  durationS: 5,
  direction: 'send' as Direction,
});

export type Params = Record<string, number | string>;

/** The wire parameters of `plan`, or the reason they cannot be run. */
export function buildParams(p: typeof plan, agents: Agent[]): { params: Params } | { error: string } {
  const msg = parseSize(p.msgText);
  if (Number.isNaN(msg)) return { error: `message size "${p.msgText}" is not a size: use bytes or a suffix K, M, G (1K = 1024)` };
  if (msg < 1) return { error: 'message size must be at least 1 byte' };
  const params: Params = { msg_bytes: msg };
  for (const a of agents) {
    const lim = a.info?.limits;
    if (!lim) continue;
    if (msg > lim.max_msg_bytes)
      return { error: `message size ${formatSize(msg)} is above ${a.label}'s limit max_msg_bytes = ${lim.max_msg_bytes} (${formatSize(lim.max_msg_bytes)})` };
  }
  if (p.bound === 'count') {
    const c = Number(p.count);
    if (!Number.isInteger(c) || c < 1) return { error: `count must be a whole number of at least 1, got ${p.count}` };
    params.count = c;
    for (const a of agents) {
      const lim = a.info?.limits;
      if (!lim) continue;
      if (c > lim.max_count) return { error: `count ${c} is above ${a.label}'s limit max_count = ${lim.max_count}` };
      if (c * msg > lim.max_bytes)
        return { error: `count x message size = ${c * msg} bytes is above ${a.label}'s limit max_bytes = ${lim.max_bytes}` };
    }
  } else {
    const d = Number(p.durationS);
    if (!(d > 0)) return { error: `duration must be above 0 seconds, got ${p.durationS}` };
    params.duration_s = d;
    for (const a of agents) {
      const lim = a.info?.limits;
      if (lim && d > lim.max_duration_s) return { error: `duration ${d} s is above ${a.label}'s limit max_duration_s = ${lim.max_duration_s}` };
    }
  }
  params.direction = p.direction;
  return { params };
}
