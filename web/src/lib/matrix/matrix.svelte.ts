// Runs a matrix: one step between every ordered pair of the mesh's agents,
// in the rounds protocol/src/matrix.rs schedules (through the codec's
// `matrix_rounds`: no agent in two tests at once, the pairs of a round at
// the same time), each pair through the step driver (../run/drive.ts). A dead
// agent fails its own pairs (its requests are refused at once or its socket
// closes mid-test) and the rest of the matrix goes on. The result is the
// format `meshperf run --matrix --json` writes: every agent's info in
// `agents`, one step per pair with `pair: {server, client}`.

import type { Agent } from '../agents/agents.svelte';
import { agentRefs, driveStep, type Drive, type PlanStep } from '../run/drive';
import type { PlanJson } from '../plan/plan.svelte';
import type { Pair, RunResult, StepResult } from '../result/result';
import { loadCodec, type Codec, type MatrixSchedule } from '../wasm';
import { short } from './mesh.svelte';

export type CellState = 'waiting' | 'running' | 'done' | 'failed';
/** One cell of the heatmap. */
export interface Cell {
  /** Index of the pair's step in the result, if it has one. */
  step: number | null;
  value: number | null;
  state: CellState | 'self' | 'none';
  /** Why the pair failed. */
  error?: string;
  /** The pair's verdict in words (latency_under_load), shown in the tooltip. */
  verdict?: string;
  /**
   * An added delay within its uncertainty, or below zero (latency_under_load,
   * `added_rtt`): `none (±U)` in place of the figure (protocol/src/verdict.rs).
   */
  none?: string;
}
export type MatrixPhase = 'idle' | 'checking' | 'running' | 'done' | 'cancelled' | 'failed';

/** A cell's key: row (the driving agent) and column (the serving agent). */
export const cellKey = (p: Pair) => `${p.client}>${p.server}`;
/** "B → A": the driving agent, then the serving one, as the CLI prints a pair. */
export const pairName = (p: Pair) => `${short(p.client)} → ${short(p.server)}`;

class MatrixRun {
  phase = $state<MatrixPhase>('idle');
  /** The state of every pair of the running (or last) matrix, by `cellKey`. */
  cells = $state<Record<string, CellState>>({});
  round = $state(0);
  rounds = $state(0);
  done = $state(0);
  failed = $state(0);
  total = $state(0);
  error = $state('');
  /** The figure the heatmap shows ('' = the kind's default). */
  metric = $state('');
  /** One pair at a time (links that share a bottleneck). */
  serial = $state(false);
  /** The limits that differ between the agents, each with the strictest (it binds every pair). */
  limits = $state<string[]>([]);
  /** Pairs an agent refused as busy, waiting to be tried again. */
  retrying = $state(0);
  /** The result so far: a new object after every pair. */
  result = $state.raw<RunResult | null>(null);
}
export const matrix = new MatrixRun();
export const matrixActive = () => matrix.phase === 'checking' || matrix.phase === 'running';

/** A matrix result: its steps carry `pair` (or it is the matrix running now). */
export const isMatrix = (r: RunResult): boolean => r === matrix.result || r.steps.some((s) => s.pair);

/**
 * The result's `agents`: each one's info with `endpoint`, the HOST:PORT the
 * page reached it at (two agents on one host share every other field), so a
 * ratio heatmap finds the same agent in another matrix (grid.ts `agentKeys`).
 */
const matrixAgents = (list: Agent[]): RunResult['agents'] => list.map((a) => (a.info ? { ...a.info, endpoint: a.host } : null)) as RunResult['agents'];

let running: Drive[] = [];
let stopping = false;
/** Wakes a wait between retries when the user cancels. */
let wake: () => void = () => {};

/** The plan's one step and its schedule, the agents and the step checked against every live agent's limits before any traffic. */
function prepare(codec: Codec, plan: PlanJson, list: Agent[]): { step: PlanStep; schedule: MatrixSchedule; bothWays: boolean; limits: string[] } {
  if (list.length < 2) throw new Error('a matrix needs two or more agents: add them above');
  const text = codec.expand_plan(JSON.stringify(plan));
  const steps = JSON.parse(text) as PlanStep[];
  if (steps.length !== 1) throw new Error(`a matrix runs one step between every pair; this plan has ${steps.length}`);
  const refs = agentRefs(list);
  const refsJson = JSON.stringify(refs);
  try {
    codec.matrix_check_agents(refsJson, steps[0].kind);
  } catch (e) {
    throw new Error(`${(e as Error).message}; nothing was run`);
  }
  const bothWays = codec.matrix_both_ways(JSON.stringify(steps[0]));
  const schedule = new codec.MatrixSchedule(list.length, matrix.serial, bothWays);
  // A dead agent fails its pairs when they run; the live ones are checked
  // now. A step's check is each agent's limits and the serving agent's
  // placement, so a ring of pairs (each live agent serving once and driving
  // once) finds what every pair would: N checks, not N(N-1) (4032 took a
  // tenth of a second at 64 agents, in one task).
  const live = list.map((a, i) => (a.state === 'ready' ? i : -1)).filter((i) => i >= 0);
  for (const [k, server] of live.entries()) {
    const client = live[(k + 1) % live.length];
    if (client === server) continue;
    try {
      codec.check_steps(text, JSON.stringify([refs[server], refs[client]]));
    } catch (e) {
      schedule.free();
      throw new Error(`${pairName({ server, client })}: ${(e as Error).message}; nothing was run`);
    }
  }
  return { step: steps[0], schedule, bothWays, limits: JSON.parse(codec.matrix_strictest(refsJson)) as string[] };
}

type Next = { round: Pair[] } | { wait: number } | 'done';

/** Runs `plan`'s one step between every pair of `list`, in the rounds of the schedule (protocol/src/matrix.rs), busy pairs again later. */
export async function runMatrix(plan: PlanJson, list: Agent[]): Promise<void> {
  if (matrixActive()) return;
  Object.assign(matrix, { phase: 'checking', error: '', done: 0, failed: 0, limits: [], retrying: 0 });
  let codec: Codec;
  let job: ReturnType<typeof prepare>;
  try {
    codec = await loadCodec();
    job = prepare(codec, plan, list);
  } catch (e) {
    Object.assign(matrix, { phase: 'failed', error: (e as Error).message });
    return;
  }
  const { schedule } = job;
  Object.assign(matrix, { phase: 'running', round: 0, rounds: schedule.planned_rounds(), total: schedule.pairs(), limits: job.limits });
  const waiting: Record<string, CellState> = {};
  list.forEach((_, server) => list.forEach((_, client) => server !== client && (waiting[cellKey({ server, client })] = 'waiting')));
  matrix.cells = waiting;
  const agents = matrixAgents(list);
  let result: RunResult = { format: 'meshperf-result', version: 1, created_unix: Date.now() / 1000, plan, agents, steps: [] };
  matrix.result = result;
  stopping = false;
  const now = () => performance.now() / 1000;
  // A step that measures both ways fills both cells of its pair.
  const mark = (p: Pair, st: CellState) => {
    matrix.cells[cellKey(p)] = st;
    if (job.bothWays) matrix.cells[cellKey({ server: p.client, client: p.server })] = st;
  };
  const finish = (p: Pair, r: StepResult) => {
    const failed = !!r.error;
    mark(p, failed ? 'failed' : 'done');
    matrix.done += 1;
    if (failed) matrix.failed += 1;
    // `index` is the step's place in the result, as the CLI numbers it.
    result = { ...result, steps: [...result.steps, { ...r, index: result.steps.length, pair: p }] };
    matrix.result = result;
  };
  const retry = new Set<string>();
  try {
    while (!stopping) {
      const next = JSON.parse(schedule.next(now())) as Next;
      if (next === 'done') break;
      if ('wait' in next) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, next.wait * 1000);
          wake = () => (clearTimeout(t), resolve());
        });
        continue;
      }
      const round = next.round;
      matrix.round += 1;
      const drives = round.map((p) => {
        mark(p, 'running');
        return driveStep(codec, job.step, list, p.server, p.client);
      });
      running = drives;
      await Promise.all(
        drives.map((d, k) =>
          d.result.then((r) => {
            const p = round[k];
            retry.delete(cellKey(p));
            const why = schedule.ended(p.server, p.client, d.refusedBusy() && !stopping, now());
            if (why) r = { ...r, error: `${r.error}; ${why}` };
            else if (schedule.will_retry(p.server, p.client)) {
              mark(p, 'waiting');
              retry.add(cellKey(p));
              return;
            }
            finish(p, r);
          }),
        ),
      );
      matrix.retrying = retry.size;
    }
  } finally {
    schedule.free();
    running = [];
  }
  // Pairs a cancel left out were not run: no state, no step.
  for (const [k, st] of Object.entries(matrix.cells)) if (st === 'waiting') delete matrix.cells[k];
  matrix.phase = stopping ? 'cancelled' : 'done';
}

/** Cancels every running pair and stops the matrix. */
export function cancelMatrix(): void {
  if (!matrixActive()) return;
  stopping = true;
  running.forEach((d) => d.cancel());
  wake();
}
