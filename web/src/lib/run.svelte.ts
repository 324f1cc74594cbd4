// Runs one step of a plan between agent A (serves: `prepare`) and agent B
// (drives: `start`), collects progress, sample frames and both results, and
// keeps what the result view shows. Later: a plan of many steps loops here.

import { agents, type Agent, type AgentMsg, type TestListener } from './agents.svelte';
import { hostOnly } from './fragment';
import { SampleKind, type Frame } from './frame';
import type { Direction, Params } from './plan.svelte';

export type Role = 'client' | 'server';
export type Phase = 'idle' | 'preparing' | 'running' | 'done' | 'failed' | 'cancelled';

/** Summary of one side of a tcp_stream step (keys from the agent; more may come). */
export interface StreamSummary {
  bytes: number;
  seconds: number;
  bits_per_second: number;
  reads?: number;
  avg_read_bytes?: number;
  streams?: { bytes: number; reads: number }[];
  interval_ms?: number;
  sent_bytes?: number;
  received_bytes?: number;
  peer?: string;
  line?: string;
  [k: string]: unknown;
}

class RunState {
  phase = $state<Phase>('idle');
  testId = $state(0);
  step = $state(0);
  kind = $state('tcp_stream');
  params = $state.raw<Params | null>(null);
  progress = $state(0);
  error = $state('');
  results = $state<Record<Role, StreamSummary | null>>({ client: null, server: null });
  /** IntervalBytes per role, per stream (set once at the end of a step). */
  intervals = $state.raw<Record<Role, number[][]>>({ client: [], server: [] });
}

export const run = new RunState();

export const active = () => run.phase === 'preparing' || run.phase === 'running';

/** Which agent plays which role in the walking skeleton. */
export const agentOf: Record<Role, Agent> = { server: agents.a, client: agents.b };
const roleOf = (a: Agent): Role => (a === agents.a ? 'server' : 'client');

/** Who sends: by direction, seen from the driving (client) agent. */
export function sends(role: Role, d: Direction): boolean {
  return d === 'both' || (d === 'send') === (role === 'client');
}

let collected: Record<Role, number[][]> = { client: [], server: [] };
const fraction: Record<Role, number> = { client: 0, server: 0 };

function store(role: Role, f: Frame) {
  if (f.kind !== SampleKind.IntervalBytes) return; // other kinds: later
  const s = (collected[role][f.stream] ??= []);
  for (let i = 0; i < f.values.length; i++) s[f.firstSeq + i] = f.values[i];
}

function end(phase: Phase, error = '') {
  const id = run.testId;
  const unwatch = () => [agents.a, agents.b].forEach((a) => a.unwatch(id));
  // When an agent dies, its peer often reports the broken data connection
  // before the dead agent's socket closes: keep listening a moment so the
  // message can name the agent that went away.
  if (phase === 'failed') setTimeout(unwatch, 2000);
  else unwatch();
  run.intervals = collected;
  run.phase = phase;
  run.error = error;
  if (phase === 'done') run.progress = 1;
}

/** Stops the test on every agent that may still run it (failures to cancel are ignored). */
function cancelOn(list: Agent[], testId: number) {
  for (const a of list) if (a.state === 'ready') a.request({ type: 'cancel', test_id: testId }).catch(() => {});
}

const listener: TestListener = {
  frame: (a, f) => store(roleOf(a), f),
  event(a: Agent, msg: AgentMsg) {
    if (!active()) return;
    const role = (msg.role as Role) ?? roleOf(a);
    if (msg.type === 'progress') {
      fraction[role] = Math.min(1, Math.max(0, Number(msg.fraction) || 0));
      run.progress = Math.max(fraction.client, fraction.server);
    } else if (msg.type === 'result') {
      run.results[role] = msg.summary as StreamSummary;
      if (run.results.client && run.results.server) end('done');
    } else if (msg.type === 'error') {
      cancelOn([a === agents.a ? agents.b : agents.a], run.testId);
      end('failed', `${a.label}: ${msg.message}`);
    }
  },
  closed(a) {
    if (run.phase === 'failed' && !run.error.includes('disconnected')) {
      run.error = `${a.label} disconnected during the test; ${run.error}`;
      return;
    }
    if (!active()) return;
    cancelOn([a === agents.a ? agents.b : agents.a], run.testId);
    end('failed', `${a.label} disconnected during the test`);
  },
};

function randomTestId(): number {
  const v = new Uint32Array(1);
  do crypto.getRandomValues(v);
  while (v[0] === 0);
  return v[0];
}

/** Runs one step: prepare on A, start on B, until both results (or an error). */
export async function runStep(kind: string, params: Params): Promise<void> {
  if (active()) return;
  const { a, b } = agents;
  const testId = randomTestId();
  Object.assign(run, { phase: 'preparing', testId, step: 0, kind, params, progress: 0, error: '' });
  run.results = { client: null, server: null };
  collected = { client: [], server: [] };
  fraction.client = fraction.server = 0;
  a.watch(testId, listener);
  b.watch(testId, listener);
  let asking = a;
  try {
    const prep = await a.request({ type: 'prepare', test_id: testId, step: 0, kind, params });
    if (run.testId !== testId || !active()) return;
    run.phase = 'running';
    asking = b;
    const peer = { host: hostOnly(a.host), port: prep.port, key: prep.key };
    await b.request({ type: 'start', test_id: testId, step: 0, kind, params, peer });
  } catch (e) {
    if (run.testId !== testId || !active()) return;
    cancelOn([a, b], testId);
    end('failed', `${asking.label}: ${(e as Error).message}`);
  }
}

/** Cancels the running step on both agents. */
export function cancel(): void {
  if (!active()) return;
  cancelOn([agents.a, agents.b], run.testId);
  end('cancelled');
}
