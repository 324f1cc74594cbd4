// Reads a large result file off the page's thread (a matrix of 1000 agents
// is 999 000 steps, a JSON.parse of a second or more that would freeze the
// page): parses it, and if it is a fleet's matrix (FLEET_FROM agents or
// more) answers with its cells as typed arrays (moved, not copied) and
// keeps the parsed result here for another figure; anything else goes back
// as its text, for the page's usual import (result.ts parseResult). A
// monitor's compact matrix (`/matrix.json?form=compact`: cells, not steps)
// is a fleet at any size; a URL (`#matrix=`, a monitor's /matrix.json, read
// across origins as its CORS header allows) is fetched here the same way.

import { CELLS_FORMAT, FLEET_FROM, cellsGrid, cellsMetric, extent, gridOf, higherIsWorse, isCells, nodeWorst, type CellsDoc, type FleetAnswer, type FleetAsk } from './fleet';
import { defaultMetric, figuresIn, fleetFills, type FleetStep } from './fleetfigure';

interface Doc {
  format?: unknown;
  version?: unknown;
  plan?: { kind?: string };
  agents?: ({ hostname?: unknown; endpoint?: unknown } | null)[];
  steps?: FleetStep[];
}

const scope = self as unknown as { onmessage: (e: MessageEvent<FleetAsk>) => void; postMessage: (m: FleetAnswer, transfer?: Transferable[]) => void };
let doc: Doc | null = null;
let compact: CellsDoc | null = null;
let n = 0;
/** The figures the file has, worked out once per file. */
let has: string[] = [];

function cells(metric: string, id: number) {
  const steps = doc?.steps ?? [];
  const kind = String(compact ? compact.kind ?? '' : doc?.plan?.kind ?? steps.find((s) => s.kind)?.kind ?? '');
  const m = compact ? cellsMetric(compact, metric || defaultMetric(kind)) : metric || defaultMetric(kind);
  const g = compact ? cellsGrid(compact, m) : gridOf(n, steps, (s) => fleetFills(s, m));
  const worst = nodeWorst(g, higherIsWorse(m));
  const agents = (compact ? compact.agents : doc?.agents) ?? [];
  const text = (v: unknown) => (v == null ? '' : String(v));
  scope.postMessage(
    {
      id,
      fleet: {
        n,
        kind,
        metric: m,
        metrics: has,
        steps: compact ? compact.cells?.length ?? 0 : steps.length,
        compact: compact != null,
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
    let text: string;
    if ('url' in data) {
      let r: Response;
      try {
        r = await fetch(data.url, { cache: 'no-store' });
      } catch (e) {
        // A refused cross-origin read looks like any failed fetch here.
        throw new Error(`${data.url}: could not be read (${(e as Error).message}): is the monitor reachable from this browser, and does its --allow-origin include this page's origin?`);
      }
      if (!r.ok) throw new Error(`${data.url}: ${r.status} ${r.statusText} ${(await r.text()).trim().slice(0, 200)}`);
      text = await r.text();
    } else text = await data.file.text();
    let v: Doc;
    try {
      v = JSON.parse(text);
    } catch {
      // parseResult words the error as the page always has.
      return scope.postMessage({ id, text });
    }
    if (isCells(v)) {
      [doc, compact, n] = [null, v as CellsDoc, (v as CellsDoc).agents?.length ?? 0];
      if (!Array.isArray(compact.cells) || !Array.isArray(compact.agents)) throw new Error(`a ${CELLS_FORMAT} file without its agents or cells`);
      has = (compact.metrics ?? []).map(String);
      return cells('', id);
    }
    compact = null;
    const steps = Array.isArray(v?.steps) ? v.steps : [];
    const size = steps.reduce((m, s) => (s?.pair ? Math.max(m, s.pair.server + 1, s.pair.client + 1) : m), Array.isArray(v?.agents) ? v.agents.length : 0);
    if (v?.format !== 'meshperf-result' || Number(v.version) > 1 || !v.plan || size < FLEET_FROM || !steps.some((s) => s?.pair)) {
      doc = null;
      return scope.postMessage({ id, text });
    }
    [doc, n] = [v, size];
    has = figuresIn(steps);
    cells('', id);
  } catch (e) {
    scope.postMessage({ id, error: (e as Error).message });
  }
};
