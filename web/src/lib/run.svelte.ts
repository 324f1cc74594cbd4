// Runs a plan: the wasm module expands it into steps; each step is prepared on
// the serving agent (A) and started on the driving agent (B), or both on A for
// Unix sockets. Collects progress, sample frames and both sides' summaries
// into a result in the documented format (result.ts), step by step.

import { agents, type Agent, type AgentMsg, type TestListener } from './agents.svelte';
import { peerHost, randomTestId } from './peer';
import type { Frame } from './frame';
import { primaryRole } from './kinds';
import type { PlanJson } from './plan.svelte';
import { KIND_NAMES, type Role, type RunResult, type Series, type StepResult } from './result';
import { loadCodec, loadStats } from './stats';

export type Phase = 'idle' | 'preparing' | 'running' | 'done' | 'failed' | 'cancelled';
type PlanStep = Pick<StepResult, 'index' | 'kind' | 'params' | 'point' | 'repeat' | 'transport'>;

class RunState {
  phase = $state<Phase>('idle');
  testId = $state(0);
  /** Index of the running step and how many there are. */
  step = $state(0);
  total = $state(0);
  /** Fraction of the running step, and of the whole plan. */
  progress = $state(0);
  overall = $state(0);
  startedAt = $state(0);
  stepStartedAt = $state(0);
  error = $state('');
  /** The result so far (a new object at most every 250 ms, and at the end). */
  result = $state.raw<RunResult | null>(null);
}

export const run = new RunState();
export const active = () => run.phase === 'preparing' || run.phase === 'running';

/** Called with each finished run (for storage). */
let onFinished: (r: RunResult) => void = () => {};
export const setOnFinished = (f: (r: RunResult) => void) => (onFinished = f);

let live: {
  ends: Partial<Record<Role, Record<string, any>>>;
  series: Map<string, Series>;
  fraction: Record<Role, number>;
  settle: (error: string | null) => void;
  agents: Agent[];
} | null = null;

function store(f: Frame) {
  if (!live) return;
  const kind = KIND_NAMES[f.kind] ?? `kind_${f.kind}`;
  const key = `${f.role}/${kind}/${f.stream}`;
  let s = live.series.get(key);
  if (!s) live.series.set(key, (s = { role: f.role, kind, stream: f.stream, values: [] }));
  for (let i = 0; i < f.values.length; i++) s.values[f.firstSeq + i] = f.values[i];
}

function cancelOn(list: Agent[], testId: number) {
  for (const a of new Set(list)) if (a.state === 'ready') a.request({ type: 'cancel', test_id: testId }).catch(() => {});
}

const listener: TestListener = {
  frame: (_a, f) => store(f),
  event(a: Agent, msg: AgentMsg) {
    if (!live || msg.test_id !== run.testId) return;
    const role = (msg.role as Role) ?? (a === agents.a ? 'server' : 'client');
    if (msg.type === 'progress') {
      live.fraction[role] = Math.min(1, Math.max(0, Number(msg.fraction) || 0));
      run.progress = Math.max(live.fraction.client, live.fraction.server);
      run.overall = (run.step + run.progress) / run.total;
    } else if (msg.type === 'result') {
      live.ends[role] = msg.summary;
      if (live.ends.client && live.ends.server) live.settle(null);
    } else if (msg.type === 'error') {
      cancelOn(live.agents, run.testId);
      live.settle(`${a.label}: ${msg.message}`);
    }
  },
  closed(a) {
    if (run.phase === 'failed' && run.error && !run.error.includes('disconnected')) {
      run.error = `${a.label} disconnected during the test; ${run.error}`;
      return;
    }
    if (!live) return;
    cancelOn(live.agents, run.testId);
    live.settle(`${a.label} disconnected during the test`);
  },
};

async function runOne(step: PlanStep): Promise<StepResult> {
  const server = agents.a;
  const client = step.transport === 'unix' || step.kind.startsWith('unix_') ? agents.a : agents.b;
  const testId = randomTestId();
  run.testId = testId;
  run.progress = 0;
  run.stepStartedAt = performance.now();
  const startedUnix = Date.now() / 1000;
  run.phase = 'preparing';
  const { kind } = step;
  const host = peerHost(step);
  // tcp_local: the serving agent binds its data listener to that address.
  const params = step.transport === 'tcp_local' && !('server_bind' in step.params) ? { ...step.params, server_bind: host } : step.params;
  let error: string | null = null;
  const done = new Promise<string | null>((resolve) => {
    live = { ends: {}, series: new Map(), fraction: { client: 0, server: 0 }, settle: resolve, agents: [server, client] };
  });
  const l = live!;
  server.watch(testId, listener);
  client.watch(testId, listener);
  let asking = server;
  try {
    const prep = await server.request({ type: 'prepare', test_id: testId, step: step.index, kind, params });
    if (live === l) {
      run.phase = 'running';
      asking = client;
      const peer = { host, port: prep.port, key: prep.key };
      await client.request({ type: 'start', test_id: testId, step: step.index, kind, params, peer });
    }
  } catch (e) {
    cancelOn([server, client], testId);
    l.settle(`${asking.label}: ${(e as Error).message}`);
  }
  error = await done;
  live = null;
  // Keep listening a moment after a failure: the peer of an agent that died
  // often reports first, and the closed socket then names the right agent.
  const unwatch = () => [server, client].forEach((a) => a.unwatch(testId));
  if (error) setTimeout(unwatch, 2000);
  else unwatch();
  const samples = [...l.series.values()].map((s) => ({ ...s, values: Array.from(s.values, (v) => v ?? 0) }));
  const primary = primaryRole(kind, params);
  return {
    ...step,
    summary: l.ends[primary] ?? null,
    sides: { client: l.ends.client ?? null, server: l.ends.server ?? null },
    samples,
    error,
    started_unix: startedUnix,
    wall_seconds: (performance.now() - run.stepStartedAt) / 1000,
  };
}

let stopping = false;

/** Runs every step of `plan` in order. */
export async function runPlan(plan: PlanJson): Promise<void> {
  if (active()) return;
  run.error = '';
  let steps: PlanStep[];
  try {
    const single = Object.keys(plan.sweep).length === 0 && plan.repeat === 1;
    // One step needs no expansion; sweeps and repetitions need the codec module.
    const wasm = single ? await loadStats() : await loadCodec();
    if (wasm.expand_plan) steps = JSON.parse(wasm.expand_plan(JSON.stringify(plan)));
    else if (single) steps = [{ index: 0, kind: plan.kind, params: plan.params, point: [], repeat: 0, transport: plan.kind.startsWith('unix_') ? 'unix' : 'tcp' }];
    else throw new Error('sweeps and repetitions need expand_plan from the wasm module, which this build lacks: rebuild it with scripts/build.sh');
  } catch (e) {
    run.phase = 'failed';
    run.error = (e as Error).message;
    return;
  }
  stopping = false;
  Object.assign(run, { total: steps.length, step: 0, overall: 0, startedAt: performance.now() });
  let result: RunResult = {
    format: 'meshperf-result', version: 1, created_unix: Date.now() / 1000, plan,
    agents: [agents.a.info, agents.b.info].filter(Boolean) as Record<string, any>[], steps: [],
  };
  run.result = result;
  let failed = '';
  // Redrawing every plot after every step cost about 50 ms a step (CPU
  // profile of a 30-step run in Chromium: uPlot and layout, against 3 ms of
  // test), so a sweep shows its growing result at most four times a second.
  let shown = performance.now();
  for (const s of steps) {
    run.step = s.index;
    const sr = await runOne(s);
    result = { ...result, steps: [...result.steps, sr] };
    if (performance.now() - shown >= 250) {
      run.result = result;
      shown = performance.now();
    }
    if (sr.error && !stopping) failed ||= `step ${s.index + 1}: ${sr.error}`;
    if (stopping || [agents.a, agents.b].some((a) => a.state !== 'ready')) break;
  }
  run.result = result;
  run.overall = stopping ? run.overall : 1;
  run.progress = stopping ? run.progress : 1;
  run.phase = stopping ? 'cancelled' : failed ? 'failed' : 'done';
  run.error = steps.length === 1 ? failed.replace(/^step 1: /, '') : failed;
  if (result.steps.some((s) => s.summary)) onFinished(result);
}

/** Cancels the running step on both agents and stops the plan. */
export function cancel(): void {
  if (!active() || !live) return;
  stopping = true;
  cancelOn(live.agents, run.testId);
  live.settle('cancelled');
}
