// Drives one step between agents through the step driver
// (protocol/src/driver.rs, through the codec module's `StepDriver`: the one
// `meshperf run` uses natively). The driver decides which agent gets which
// request, the data address, the primary side and the cancels after a
// failure; this only carries its requests to the agents and their replies,
// events, sample frames and closed sockets back to it. A plan between two
// agents (run.svelte.ts) drives one step at a time; a matrix
// (../matrix/matrix.svelte.ts) several at once over many agents.

import { AgentError, type Agent, type AgentMsg, type TestListener } from '../agents/agents.svelte';
import { hostOnly } from '../agents/fragment';
import { CANCEL_GRACE_S } from '../generated/params';
import type { AgentRef } from '../generated/wire/AgentRef';
import type { Outgoing } from '../generated/wire/Outgoing';
import type { StepResult } from '../result/result';
import type { Codec, StepDriver } from '../wasm';

export type PlanStep = Pick<StepResult, 'index' | 'kind' | 'params' | 'point' | 'repeat' | 'transport'>;

/** How long a cancelled step waits for its agents to confirm (`meshperf run` the same: the protocol's). */
const CANCEL_GRACE_MS = CANCEL_GRACE_S * 1000;

/** How the step driver names and reaches the agents, with their limits and cores. */
export const agentRefs = (list: Agent[]): AgentRef[] =>
  list.map((a) => ({
    label: a.label,
    host: hostOnly(a.host),
    addresses: a.info?.addresses ?? [],
    limits: a.info?.limits ?? null,
    ...(a.info ? { capabilities: a.info.capabilities, version: a.info.version } : {}),
    // Each kind's parameters (agents before it say nothing: they refuse one themselves).
    ...(a.info?.accepts ? { accepts: a.info.accepts } : {}),
    ...(a.info?.instance ? { instance: a.info.instance } : {}),
    // The step driver refuses more threads than these before Run.
    ...(a.info ? { cores: a.info.cores } : {}),
  }));

export function randomTestId(): number {
  const v = new Uint32Array(1);
  do crypto.getRandomValues(v);
  while (v[0] === 0);
  return v[0];
}

/** What the caller hears of a running step. */
export interface DriveHooks {
  /** The driving agent was asked to start. */
  started?(): void;
  /** A progress (or other) event moved the step on: its fraction done. */
  progress?(fraction: number): void;
  /** The step waits in an agent's queue ("waiting behind 2 tests on B, about 12 s"), or no longer (''). */
  waiting?(text: string): void;
  /** An agent's socket closed after the step ended in failure (it often names the agent that died). */
  lateClose?(agent: Agent): void;
}

export interface Drive {
  testId: number;
  /** The step's result once both sides have ended (never rejects). */
  result: Promise<StepResult>;
  /**
   * Stops the step on both agents (the result then says why). `keep`: the
   * step is kept as partial, with the figures its samples give, when they
   * came back (a plan between two agents, as `meshperf run` keeps a step
   * Ctrl-C cut short; protocol/src/partial.rs).
   */
  cancel(keep?: boolean): void;
  /** Once the result is in: an agent refused the step as busy with another test (a matrix tries it again later). */
  refusedBusy(): boolean;
}

/** Runs `step` with `list[server]` serving and `list[client]` driving. */
export function driveStep(codec: Codec, step: PlanStep, list: Agent[], server: number, client: number, hooks: DriveHooks = {}): Drive {
  const testId = randomTestId();
  const began = performance.now();
  const startedUnix = Date.now() / 1000;
  let driver: StepDriver;
  try {
    driver = new codec.StepDriver(JSON.stringify(step), testId, server, client, JSON.stringify(agentRefs(list)), startedUnix);
  } catch (e) {
    const r = { ...step, summary: null, sides: { client: null, server: null }, samples: [], error: (e as Error).message, started_unix: startedUnix, wall_seconds: 0 };
    return { testId, result: Promise.resolve(r), cancel() {}, refusedBusy: () => false };
  }
  const d = driver;
  const ends = [...new Set([server, client])].map((i) => list[i]);
  let live = true;
  let busy = false;
  let keep = false;
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
    if (!live) return;
    for (const o of JSON.parse(out) as Outgoing[]) {
      const asked = list[o.agent].request(o.request);
      if (o.request.type === 'cancel') {
        asked.catch(() => {});
        continue;
      }
      if (o.request.type === 'start') hooks.started?.();
      asked.then(
        (reply) => {
          send(d.reply(o.agent, JSON.stringify(reply)));
          hooks.waiting?.(d.waiting() ?? '');
        },
        // The driver names the agent before the message: the page's own
        // words about it ("agent D (…) is not connected") drop the name
        // (issue 45, item 19: it was said twice).
        (e: AgentError) => send(d.reply(o.agent, JSON.stringify({ type: 'error', id: 0, code: e.code ?? 'error', message: unnamed(e.message, list[o.agent].label) }))),
      );
    }
    check();
  };
  const listener: TestListener = {
    frame: (_a, data) => {
      if (!live) return;
      try {
        d.frame(new Uint8Array(data));
      } catch (e) {
        console.warn((e as Error).message);
      }
    },
    event(a: Agent, msg: AgentMsg) {
      if (!live) return;
      send(d.event(list.indexOf(a), JSON.stringify(msg)));
      hooks.progress?.(d.progress());
      if (msg.type === 'queued') hooks.waiting?.(d.waiting() ?? '');
    },
    closed(a) {
      if (live) send(d.closed(list.indexOf(a)));
      else hooks.lateClose?.(a);
    },
  };
  ends.forEach((a) => a.watch(testId, listener));
  send(d.begin());
  const result = done.then(() => {
    clearTimeout(grace);
    live = false;
    const wall = (performance.now() - began) / 1000;
    const r = JSON.parse(keep ? d.cut_short(wall) : d.result(wall)) as StepResult;
    busy = d.refused_busy();
    // Decoded once, by the driver; the result keeps these very arrays.
    r.samples.forEach((s, i) => (s.values = d.series_values(i)));
    d.free();
    // Keep listening a moment after a failure (see `lateClose`).
    const unwatch = () => ends.forEach((a) => a.unwatch(testId));
    if (r.error) setTimeout(unwatch, 2000);
    else unwatch();
    return r;
  });
  const cancel = (k = false) => {
    if (!live) return;
    keep ||= k;
    send(d.cancel());
  };
  return { testId, result, cancel, refusedBusy: () => busy };
}

/** `message` without the agent's name it starts with ("agent D (host) is not connected" -> "not connected"). */
export function unnamed(message: string, label: string): string {
  if (!message.startsWith(label)) return message;
  return message.slice(label.length).replace(/^(:\s*|\s+is\s+|\s+)/, '') || message;
}
