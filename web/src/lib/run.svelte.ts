// Runs a plan: the wasm module expands it into steps, and the step driver
// (protocol/src/driver.rs, through the codec module's `StepDriver`: the one
// `meshperf run` uses natively) decides which agent gets which request, the
// data address, the primary side and the cancels after a failure. This
// module only carries its requests to the agents and their replies, events,
// sample frames and closed sockets back to it, step by step.

import { agents, AgentError, type Agent, type AgentMsg, type TestListener } from './agents.svelte';
import { hostOnly } from './fragment';
import type { Outgoing } from './generated/wire/Outgoing';
import type { PlanJson } from './plan.svelte';
import type { RunResult, StepResult } from './result';
import { loadCodec, type Codec, type StepDriver } from './stats';

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

/** How long a cancelled step waits for its agents to confirm (agent/src/run: the same). */
const CANCEL_GRACE_MS = 15000;

/** The running step: its driver and what settles it. */
let live: { driver: StepDriver; send: (out: string) => void } | null = null;

function randomTestId(): number {
  const v = new Uint32Array(1);
  do crypto.getRandomValues(v);
  while (v[0] === 0);
  return v[0];
}

/** How the step driver names and reaches the agents, with their limits. */
const agentRefs = () =>
  [agents.a, agents.b].map((a) => ({ label: a.label, host: hostOnly(a.host), addresses: a.info?.addresses ?? [], limits: a.info?.limits ?? null }));

async function runOne(step: PlanStep, codec: Codec): Promise<StepResult> {
  const list: Agent[] = [agents.a, agents.b];
  const refs = agentRefs();
  const testId = randomTestId();
  run.testId = testId;
  run.progress = 0;
  run.stepStartedAt = performance.now();
  const startedUnix = Date.now() / 1000;
  run.phase = 'preparing';
  let driver: StepDriver;
  try {
    driver = new codec.StepDriver(JSON.stringify(step), testId, 0, 1, JSON.stringify(refs), startedUnix);
  } catch (e) {
    return { ...step, summary: null, sides: { client: null, server: null }, samples: [], error: (e as Error).message, started_unix: startedUnix, wall_seconds: 0 };
  }
  const d = driver;
  let settle: () => void = () => {};
  const done = new Promise<void>((resolve) => (settle = resolve));
  let grace: ReturnType<typeof setTimeout> | undefined;
  const check = () => {
    if (d.cancelling() && grace === undefined) {
      grace = setTimeout(() => {
        d.abandon(`the agents did not confirm the cancel within ${CANCEL_GRACE_MS / 1000} s`);
        settle();
      }, CANCEL_GRACE_MS);
    }
    if (d.done()) settle();
  };
  /** Sends the driver's requests; each reply goes back to it. */
  const send = (out: string) => {
    for (const o of JSON.parse(out) as Outgoing[]) {
      const a = list[o.agent];
      const asked = a.request(o.request);
      if (o.request.type === 'cancel') {
        asked.catch(() => {});
        continue;
      }
      if (o.request.type === 'start') run.phase = 'running';
      asked.then(
        (reply) => send(d.reply(o.agent, JSON.stringify(reply))),
        (e: AgentError) => send(d.reply(o.agent, JSON.stringify({ type: 'error', id: 0, code: e.code ?? 'error', message: e.message }))),
      );
    }
    check();
  };
  const listener: TestListener = {
    frame: (_a, data) => {
      try {
        d.frame(new Uint8Array(data));
      } catch (e) {
        console.warn((e as Error).message);
      }
    },
    event(a: Agent, msg: AgentMsg) {
      if (live?.driver !== d) return;
      send(d.event(list.indexOf(a), JSON.stringify(msg)));
      run.progress = d.progress();
      run.overall = (run.step + run.progress) / run.total;
    },
    closed(a) {
      if (live?.driver === d) {
        send(d.closed(list.indexOf(a)));
      } else if (run.phase === 'failed' && run.error && !run.error.includes('disconnected')) {
        // The peer of an agent that died often reports first; the closed
        // socket then names the right agent.
        run.error = `${a.label} disconnected during the test; ${run.error}`;
      }
    },
  };
  live = { driver: d, send };
  list.forEach((a) => a.watch(testId, listener));
  send(d.begin());
  await done;
  clearTimeout(grace);
  live = null;
  const r = JSON.parse(d.result((performance.now() - run.stepStartedAt) / 1000)) as StepResult;
  r.samples.forEach((s, i) => (s.values = Array.from(d.series_values(i))));
  d.free();
  // Keep listening a moment after a failure (see `closed`).
  const unwatch = () => list.forEach((a) => a.unwatch(testId));
  if (r.error) setTimeout(unwatch, 2000);
  else unwatch();
  return r;
}

let stopping = false;

/** Runs every step of `plan` in order. */
export async function runPlan(plan: PlanJson): Promise<void> {
  if (active()) return;
  run.error = '';
  let steps: PlanStep[];
  let codec: Codec;
  try {
    codec = await loadCodec();
    const text = codec.expand_plan(JSON.stringify(plan));
    // Every limit the agents announced is checked before anything runs.
    codec.check_steps(text, JSON.stringify(agentRefs()));
    steps = JSON.parse(text);
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
    const sr = await runOne(s, codec);
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
  live.send(live.driver.cancel());
}
