// Reads a large result file off the page's thread (a matrix of 1000 agents
// is 999 000 steps, a JSON.parse of a second or more that would freeze the
// page): parses it, and if it is a fleet's matrix (FLEET_FROM agents or
// more) answers with its cells as typed arrays (moved, not copied) and
// keeps the parsed result here for another figure; anything else goes back
// as its text, for the page's usual import (result.ts parseResult).

import { FLEET_FROM, extent, gridOf, higherIsWorse, nodeWorst, type FleetAnswer, type FleetAsk } from './fleet';
import { defaultMetric, fleetFills, type FleetStep } from './fleetfigure';

interface Doc {
  format?: unknown;
  version?: unknown;
  plan?: { kind?: string };
  agents?: ({ hostname?: unknown; endpoint?: unknown } | null)[];
  steps?: FleetStep[];
}

const scope = self as unknown as { onmessage: (e: MessageEvent<FleetAsk>) => void; postMessage: (m: FleetAnswer, transfer?: Transferable[]) => void };
let doc: Doc | null = null;
let n = 0;

function cells(metric: string, id: number) {
  const steps = doc?.steps ?? [];
  const kind = String(doc?.plan?.kind ?? steps.find((s) => s.kind)?.kind ?? '');
  const m = metric || defaultMetric(kind);
  const g = gridOf(n, steps, (s) => fleetFills(s, m));
  const worst = nodeWorst(g, higherIsWorse(m));
  const agents = doc?.agents ?? [];
  const text = (v: unknown) => (v == null ? '' : String(v));
  scope.postMessage(
    {
      id,
      fleet: {
        n,
        kind,
        metric: m,
        steps: steps.length,
        hosts: Array.from({ length: n }, (_, i) => text(agents[i]?.hostname)),
        endpoints: Array.from({ length: n }, (_, i) => text(agents[i]?.endpoint)),
        value: g.value,
        state: g.state,
        step: g.step,
        worst,
        extent: extent(g),
      },
    },
    [g.value.buffer, g.state.buffer, g.step.buffer, worst.value.buffer, worst.failed.buffer, worst.bad.buffer],
  );
}

scope.onmessage = async ({ data }) => {
  const { id } = data;
  try {
    if ('metric' in data) return cells(data.metric, id);
    const text = await data.file.text();
    let v: Doc;
    try {
      v = JSON.parse(text);
    } catch {
      // parseResult words the error as the page always has.
      return scope.postMessage({ id, text });
    }
    const steps = Array.isArray(v?.steps) ? v.steps : [];
    const size = steps.reduce((m, s) => (s?.pair ? Math.max(m, s.pair.server + 1, s.pair.client + 1) : m), Array.isArray(v?.agents) ? v.agents.length : 0);
    if (v?.format !== 'meshperf-result' || Number(v.version) > 1 || !v.plan || size < FLEET_FROM || !steps.some((s) => s?.pair)) {
      doc = null;
      return scope.postMessage({ id, text });
    }
    [doc, n] = [v, size];
    cells('', id);
  } catch (e) {
    scope.postMessage({ id, error: (e as Error).message });
  }
};
