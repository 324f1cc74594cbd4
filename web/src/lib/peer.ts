// Where a step's driving agent finds the serving agent, and fresh test ids.

import { agents } from './agents.svelte';
import { hostOnly } from './fragment';

export function randomTestId(): number {
  const v = new Uint32Array(1);
  do crypto.getRandomValues(v);
  while (v[0] === 0);
  return v[0];
}

/** The serving agent's address the driving agent should connect to. */
export function peerHost(step: { transport: string }): string {
  if (step.transport === 'tcp_local') {
    const local = (agents.a.info?.addresses ?? [])
      .map((x) => x.split(' ')[0].split('/')[0])
      .find((ip) => /^\d+\.\d+\.\d+\.\d+$/.test(ip) && !ip.startsWith('127.'));
    if (local) return local;
  }
  return hostOnly(agents.a.host);
}
