// A fleet's matrix (more agents than the grid of buttons and names can
// show, FLEET_FROM and up): the pure parts, tested without a browser
// (web/test/fleet.test.mjs). Cells live in flat typed arrays (1000 agents
// are a million cells, not a million objects); when a cell would be
// smaller than a pixel, k x k cells share one pixel and it shows the worst
// of them (a failed pair is worse than any figure); agents sort by their
// worst pair either way; a host is found by name or address; one agent's
// pairs both ways come out worst first.

import type { Fill } from './grid';

/** From this many agents a matrix is shown as a fleet (canvas pixels, no per-cell names or buttons). */
export const FLEET_FROM = 65;

/** A cell's state in `FleetGrid.state`. */
export const NONE = 0;
export const DONE = 1;
export const FAILED = 2;
export const SELF = 3;

/** n x n cells, row-major: row = the driving agent, column = the serving one. */
export interface FleetGrid {
  n: number;
  /** The figure, NaN where none (failed, not measured, or a kind without it). */
  value: Float64Array;
  /** NONE, DONE, FAILED or SELF. */
  state: Uint8Array;
  /** The index of the cell's step in the result, -1 where none. */
  step: Int32Array;
}

/** A step as the grid reads it: its pair, whether it failed, and the cells it fills. */
export interface GridStep {
  pair?: { server: number; client: number } | null;
  error?: string | null;
}

/** The grid of `n` agents from `steps`, each step's cells from `fills` (the figure `metric`, fleetfigure.ts). */
export function gridOf<S extends GridStep>(n: number, steps: S[], fills: (s: S) => Fill[]): FleetGrid {
  const g: FleetGrid = { n, value: new Float64Array(n * n).fill(NaN), state: new Uint8Array(n * n), step: new Int32Array(n * n).fill(-1) };
  for (let i = 0; i < n; i++) g.state[i * n + i] = SELF;
  steps.forEach((s, i) => {
    if (!s.pair) return;
    const st = s.error != null ? FAILED : DONE;
    for (const [r, c, v] of fills(s)) {
      if (r >= n || c >= n || r === c) continue;
      const k = r * n + c;
      g.state[k] = st;
      g.step[k] = i;
      g.value[k] = v ?? NaN;
    }
  });
  return g;
}

/** Whether a larger figure is the worse one: round-trip times, loss, hops and marks changed; for throughput, transactions and the path MTU the smaller is. */
export const higherIsWorse = (metric: string): boolean => metric !== 'gbps' && metric !== 'tps' && metric !== 'path_mtu';

/** How bad a cell is, larger = worse: a failed pair above every figure, no figure below every one. */
export function badness(state: number, value: number, hw: boolean): number {
  if (state === FAILED) return Infinity;
  if (state !== DONE || Number.isNaN(value)) return -Infinity;
  return hw ? value : -value;
}

/** Agents per pixel row when `n` agents share `px` pixels (1 while each has a pixel or more). */
export const agentsPerPixel = (n: number, px: number): number => Math.max(1, Math.ceil(n / Math.max(1, Math.floor(px))));

/** The worst of a k x k bucket of cells: what one pixel shows. */
export interface Bucketed {
  /** Buckets per side: ceil(n / k). */
  b: number;
  k: number;
  /** b x b, row-major: the worst cell's figure (NaN where none) and state. */
  value: Float64Array;
  state: Uint8Array;
}

/**
 * Rows and columns in `order` (a permutation of the agents), k at a time:
 * each bucket is the worst of its cells (`badness`); a bucket with no
 * failed or measured cell is NONE, or SELF when all its cells are the
 * diagonal.
 */
export function bucketed(g: FleetGrid, order: ArrayLike<number>, k: number, hw: boolean): Bucketed {
  const { n, state: gs, value: gv } = g;
  const b = Math.ceil(n / k);
  const value = new Float64Array(b * b).fill(NaN);
  const state = new Uint8Array(b * b);
  const bad = new Float64Array(b * b).fill(-Infinity);
  const anyOther = new Uint8Array(b * b);
  // Each shown column's agent and bucket, once (a million cells are read in one pass).
  const colAgent = Int32Array.from(order);
  const colBucket = Int32Array.from({ length: n }, (_, c) => Math.floor(c / k));
  for (let r = 0; r < n; r++) {
    const row = order[r] * n;
    const base = Math.floor(r / k) * b;
    for (let c = 0; c < n; c++) {
      const cell = row + colAgent[c];
      const st = gs[cell];
      const o = base + colBucket[c];
      if (st === SELF) continue;
      anyOther[o] = 1;
      if (st !== DONE && st !== FAILED) continue;
      const v = gv[cell];
      const x = st === FAILED ? Infinity : v !== v ? -Infinity : hw ? v : -v;
      // The bucket's first measured cell (with this figure or not), then any worse one.
      const so = state[o];
      if ((so !== DONE && so !== FAILED) || x > bad[o]) {
        bad[o] = x;
        value[o] = v;
        state[o] = st;
      }
    }
  }
  for (let o = 0; o < b * b; o++) if (state[o] === NONE && !anyOther[o]) state[o] = SELF;
  return { b, k, value, state };
}

/** The figures' range (from zero, as the small heatmap's scale) and the measured and failed pairs. */
export interface Extent {
  lo: number;
  hi: number;
  done: number;
  failed: number;
}

export function extent(g: FleetGrid): Extent {
  let [lo, hi, done, failed] = [0, 0, 0, 0];
  const { state, value } = g;
  for (let i = 0; i < state.length; i++) {
    const st = state[i];
    if (st === FAILED) failed += 1;
    if (st !== DONE) continue;
    done += 1;
    const v = value[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return { lo, hi, done, failed };
}

/** Each agent's worst pair either way (its row and its column) and its failed pairs. */
export interface NodeWorst {
  /** The worst figure, NaN where it has none. */
  value: Float64Array;
  failed: Int32Array;
  /** How bad (`badness` of the worst measured pair; -Infinity where none). */
  bad: Float64Array;
}

export function nodeWorst(g: FleetGrid, hw: boolean): NodeWorst {
  const { n, state, value } = g;
  const w: NodeWorst = { value: new Float64Array(n).fill(NaN), failed: new Int32Array(n), bad: new Float64Array(n).fill(-Infinity) };
  const { failed, bad } = w;
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      const cell = r * n + c;
      const st = state[cell];
      if (st === FAILED) {
        failed[r] += 1;
        failed[c] += 1;
      }
      if (st !== DONE) continue;
      const v = value[cell];
      if (v !== v) continue;
      const x = hw ? v : -v;
      if (x > bad[r]) [bad[r], w.value[r]] = [x, v];
      if (x > bad[c]) [bad[c], w.value[c]] = [x, v];
    }
  }
  return w;
}

export type SortBy = 'agent' | 'worst';

/**
 * The agents' order: as listed, or worst first: most failed pairs first,
 * then the worst figure either way, agents with none last, ties in list order.
 */
export function sortOrder(w: NodeWorst, by: SortBy): Int32Array {
  const n = w.failed.length;
  const order = Int32Array.from({ length: n }, (_, i) => i);
  if (by === 'agent') return order;
  return order.sort((a, b) => w.failed[b] - w.failed[a] || cmpDesc(w.bad[a], w.bad[b]) || a - b);
}

/** b before a when b is larger; equal infinities tie. */
const cmpDesc = (a: number, b: number): number => (a === b ? 0 : b > a ? 1 : -1);

/** The agents whose host name or address contains `q` (case-insensitive), an exact host name first; at most `limit`. */
export function findHosts(hosts: string[], endpoints: string[], q: string, limit = 20): number[] {
  const s = q.trim().toLowerCase();
  if (!s) return [];
  const hits: number[] = [];
  for (let i = 0; i < hosts.length; i++) {
    if (hosts[i].toLowerCase().includes(s) || endpoints[i].toLowerCase().includes(s)) hits.push(i);
  }
  const exact = (i: number) => (hosts[i].toLowerCase() === s || endpoints[i].toLowerCase() === s ? 0 : 1);
  return hits.sort((a, b) => exact(a) - exact(b) || a - b).slice(0, limit);
}

/** One pair of an agent's drill-down: the other agent, the figure, the state, the step. */
export interface PeerCell {
  peer: number;
  value: number;
  state: number;
  step: number;
}

/**
 * Agent `i`'s pairs both ways, worst first (failed, then the worst figure,
 * then those without one): `out` it drove (its row, the peer served), `in`
 * it served (its column, the peer drove).
 */
export function pairsOf(g: FleetGrid, i: number, hw: boolean): { out: PeerCell[]; in: PeerCell[] } {
  const { n } = g;
  const out: PeerCell[] = [];
  const inn: PeerCell[] = [];
  for (let p = 0; p < n; p++) {
    if (p === i) continue;
    for (const [list, cell] of [
      [out, i * n + p],
      [inn, p * n + i],
    ] as const) {
      if (g.state[cell] === NONE) continue;
      list.push({ peer: p, value: g.value[cell], state: g.state[cell], step: g.step[cell] });
    }
  }
  const worstFirst = (a: PeerCell, b: PeerCell) => cmpDesc(badness(a.state, a.value, hw), badness(b.state, b.value, hw)) || a.peer - b.peer;
  return { out: out.sort(worstFirst), in: inn.sort(worstFirst) };
}

/** The bucket (row, column) under (x, y) CSS pixels of a plot with `left`/`top` gutters and `cell`-pixel buckets; null outside. */
export function bucketAt(b: number, cell: number, left: number, top: number, x: number, y: number): [number, number] | null {
  const c = Math.floor((x - left) / cell);
  const r = Math.floor((y - top) / cell);
  return r >= 0 && c >= 0 && r < b && c < b ? [r, c] : null;
}

/** The worst cell of bucket (br, bc): its row and column agents (by `order`, k per bucket), or null when none was measured. */
export function worstIn(g: FleetGrid, order: ArrayLike<number>, k: number, br: number, bc: number, hw: boolean): { row: number; col: number; cells: number } | null {
  const { n } = g;
  let best: { row: number; col: number } | null = null;
  let bad = -Infinity;
  let cells = 0;
  for (let r = br * k; r < Math.min(n, br * k + k); r++) {
    for (let c = bc * k; c < Math.min(n, bc * k + k); c++) {
      const [row, col] = [order[r], order[c]];
      const cell = row * n + col;
      const st = g.state[cell];
      if (st === SELF) continue;
      cells += 1;
      if (st !== DONE && st !== FAILED) continue;
      const x = badness(st, g.value[cell], hw);
      if (!best || x > bad) [best, bad] = [{ row, col }, x];
    }
  }
  return best ? { ...best, cells } : null;
}

/** A fleet's matrix as the page holds it: the agents' names and the cells of one figure. */
export interface FleetData {
  n: number;
  /** The plan's kind. */
  kind: string;
  /** The figure the cells hold (protocol/src/matrix.rs `Metric` names). */
  metric: string;
  /** The figures the file has, the only ones offered (`figuresIn`; a compact file's `metrics`). */
  metrics: string[];
  /** The result's step count (a compact matrix's cells). */
  steps: number;
  /** A monitor's compact matrix (cells, no steps to open). */
  compact?: boolean;
  hosts: string[];
  endpoints: string[];
  value: Float64Array;
  state: Uint8Array;
  step: Int32Array;
  /** Each agent's worst pair and the grid's extent, worked out in the worker (two passes over a million cells fewer on the page). */
  worst: NodeWorst;
  extent: Extent;
}

/**
 * A monitor's compact matrix (`/matrix.json?form=compact`, format
 * `meshperf-cells`, agent/src/monitor/compact.rs, docs/formats.md): the
 * pairs it keeps as cells, each `[row, column, age in s, figures...]` in
 * the order of `metrics`, or `[row, column, age, "why it failed"]`.
 */
export const CELLS_FORMAT = 'meshperf-cells';
export interface CellsDoc {
  format: string;
  version: number;
  created_unix?: number;
  kind?: string;
  metrics?: string[];
  agents?: ({ hostname?: unknown; endpoint?: unknown } | null)[];
  cells?: unknown[][];
}

/** Whether `v` is a compact matrix; throws on a version this page does not read. */
export function isCells(v: unknown): v is CellsDoc {
  const d = v as CellsDoc | null;
  if (d?.format !== CELLS_FORMAT) return false;
  if (!(Number(d.version) <= 1)) throw new Error(`a ${CELLS_FORMAT} file of version ${d.version}: written by a newer meshperf than this page`);
  return true;
}

/** Whether a file's opening reads as a compact matrix (its format is its first field). */
export const looksLikeCells = (head: string): boolean => new RegExp(`^\\s*\\{\\s*"format"\\s*:\\s*"${CELLS_FORMAT}"`).test(head);

/** The figure a compact matrix shows first: the kind's own when it has it, else its first. */
export function cellsMetric(d: CellsDoc, wanted: string): string {
  const ms = d.metrics ?? [];
  return ms.includes(wanted) || !ms.length ? wanted : ms[0];
}

/** The grid of figure `metric` from a compact matrix (a cell's `step` is its place in `cells`). */
export function cellsGrid(d: CellsDoc, metric: string): FleetGrid {
  const n = d.agents?.length ?? 0;
  const col = (d.metrics ?? []).indexOf(metric);
  const g: FleetGrid = { n, value: new Float64Array(n * n).fill(NaN), state: new Uint8Array(n * n), step: new Int32Array(n * n).fill(-1) };
  for (let i = 0; i < n; i++) g.state[i * n + i] = SELF;
  (d.cells ?? []).forEach((c, i) => {
    const [r, k] = [Number(c?.[0]), Number(c?.[1])];
    if (!Number.isInteger(r) || !Number.isInteger(k) || r < 0 || k < 0 || r >= n || k >= n || r === k) return;
    const at = r * n + k;
    const failed = typeof c[3] === 'string';
    g.state[at] = failed ? FAILED : DONE;
    g.step[at] = i;
    const v = failed || col < 0 ? null : c[3 + col];
    g.value[at] = typeof v === 'number' ? v : NaN;
  });
  return g;
}

/** What the page asks fleet.worker.ts: read a file or a URL (a monitor's matrix), or the cells of another figure of what it read. */
export type FleetAsk = { id: number; file: File } | { id: number; url: string } | { id: number; metric: string };
/** Its answer: a fleet, the text of a file that is not one (the page's usual import), or why it failed. */
export type FleetAnswer = { id: number } & ({ fleet: FleetData } | { text: string } | { error: string });
