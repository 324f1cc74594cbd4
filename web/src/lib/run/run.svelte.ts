// Runs a plan between agents A and B: the wasm module expands it into
// steps, and each step goes through the step driver (drive.ts, the one
// `meshperf run` uses natively), one after another.

import { agents, type Agent } from '../agents/agents.svelte';
import { agentRefs, driveStep, type Drive, type PlanStep } from './drive';
import type { PlanJson } from '../plan/plan.svelte';
import type { RunResult, StepResult } from '../result/result';
import { loadCodec, type Codec } from '../wasm';

export type Phase = 'idle' | 'preparing' | 'running' | 'done' | 'failed' | 'cancelled';

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
  /** The step waits in an agent's queue: where ('' when it does not). */
  waiting = $state('');
  /** The result so far (a new object at most every 250 ms, and at the end). */
  result = $state.raw<RunResult | null>(null);
}

export const run = new RunState();
export const active = () => run.phase === 'preparing' || run.phase === 'running';

/** Called with each finished run (for storage). */
let onFinished: (r: RunResult) => void = () => {};
export const setOnFinished = (f: (r: RunResult) => void) => (onFinished = f);

/** The running step. */
let live: Drive | null = null;

const pair = (): Agent[] => [agents.a, agents.b];

async function runOne(step: PlanStep, codec: Codec): Promise<StepResult> {
  run.progress = 0;
  run.stepStartedAt = performance.now();
  run.phase = 'preparing';
  run.waiting = '';
  const drive = driveStep(codec, step, pair(), 0, 1, {
    started: () => (run.phase = 'running'),
    waiting: (text) => (run.waiting = text),
    progress(f) {
      run.progress = f;
      run.overall = (run.step + run.progress) / run.total;
    },
    lateClose(a) {
      // The peer of an agent that died often reports first; the closed
      // socket then names the right agent.
      if (run.phase === 'failed' && run.error && !run.error.includes('disconnected')) {
        run.error = `${a.label} disconnected during the test; ${run.error}`;
      }
    },
  });
  run.testId = drive.testId;
  live = drive;
  const r = await drive.result;
  live = null;
  run.waiting = '';
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
    codec.check_steps(text, JSON.stringify(agentRefs(pair())));
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
  // The bars reach the end only when every step ran to its own: a step cut
  // short (an agent killed mid-test, a cancel) leaves them where it stopped.
  const whole = !stopping && result.steps.length === steps.length && !result.steps[result.steps.length - 1]?.error;
  run.overall = whole ? 1 : run.overall;
  run.progress = whole ? 1 : run.progress;
  run.phase = stopping ? 'cancelled' : failed ? 'failed' : 'done';
  run.error = steps.length === 1 ? failed.replace(/^step 1: /, '') : failed;
  if (result.steps.some((s) => s.summary)) onFinished(result);
}

/** Cancels the running step on both agents and stops the plan; the step is kept as partial when its samples came back. */
export function cancel(): void {
  if (!active() || !live) return;
  stopping = true;
  live.cancel(true);
}
