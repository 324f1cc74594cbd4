// The heatmap's pure parts, tested without a browser (web/test/heatmap.test.mjs):
// where each cell sits on the canvas and which cell a point is in; which
// agent of one matrix is which agent of another (by the address the page
// reached it at, else by host name, never by position alone); and the cells
// of a ratio heatmap between two matrices.

import type { RunResult, StepResult } from '../result/result';
import type { Cell } from './matrix.svelte';

/** The grid's geometry in CSS pixels: a gutter for the names, then n x n cells. */
export interface Layout {
  n: number;
  /** Left gutter (row names) and top gutter (column names). */
  left: number;
  top: number;
  cw: number;
  ch: number;
  width: number;
  height: number;
}

/** Up to this many agents, each cell is a focusable button over the canvas (screen readers, keyboards, tests). */
export const BUTTONS_UP_TO = 20;

/** Cells as wide as `avail` allows (between 6 and 72 px), square once they get small. */
export function layout(n: number, avail: number): Layout {
  const left = n > 40 ? 30 : 40;
  const top = n > 40 ? 18 : 24;
  const cw = Math.max(6, Math.min(72, Math.floor((Math.max(avail, 120) - left - 2) / Math.max(n, 1))));
  const ch = Math.min(cw, 34);
  return { n, left, top, cw, ch, width: left + n * cw, height: top + n * ch };
}

/** The cell (row, column) under the point (x, y) in CSS pixels, or null. */
export function cellAt(l: Layout, x: number, y: number): [number, number] | null {
  const c = Math.floor((x - l.left) / l.cw);
  const r = Math.floor((y - l.top) / l.ch);
  return r >= 0 && c >= 0 && r < l.n && c < l.n ? [r, c] : null;
}

/** How each agent of a result is known across results: the address the page reached it at, else its host name. */
export function agentKeys(agents: RunResult['agents']): string[] {
  const host = (a: RunResult['agents'][number] | null) => String(a?.hostname ?? '').toLowerCase();
  const hosts = agents.map(host);
  return agents.map((a, i) => {
    if (a?.endpoint) return `@${String(a.endpoint).toLowerCase()}`;
    // A host name names one agent only if no other agent of the result has it.
    const h = hosts[i];
    return h && hosts.indexOf(h) === hosts.lastIndexOf(h) ? `=${h}` : `#${i}`;
  });
}

/** Which agent of `to` each agent of `from` is (-1: not in `to`). */
export function matchAgents(from: RunResult['agents'], to: RunResult['agents']): number[] {
  const keys = agentKeys(to);
  return agentKeys(from).map((k) => (k.startsWith('#') ? -1 : keys.indexOf(k)));
}

/** One cell of a ratio heatmap: `value` = b / a. */
export interface RatioCell extends Cell {
  /** The figure in the baseline (a) and in the shown matrix (b). */
  a: number | null;
  b: number | null;
}

/** The cells a step fills: [row (sender), column, figure or null] (protocol/src/matrix.rs `Metric::cells`). */
export type Fill = [row: number, col: number, value: number | null];

/** Each cell's step index (-1 where none) and figure, from every step's fills. */
function byCell(r: RunResult, n: number, fills: (s: StepResult) => Fill[]): { step: number; value: number | null }[][] {
  const grid = Array.from({ length: n }, () => Array.from({ length: n }, () => ({ step: -1, value: null as number | null })));
  r.steps.forEach((s, i) => {
    if (!s.pair) return;
    for (const [row, col, value] of fills(s)) if (row < n && col < n) grid[row][col] = { step: i, value: s.error ? null : value };
  });
  return grid;
}

/** The number of agents a matrix result has (its agents, or the highest index a pair names). */
export const matrixSize = (r: RunResult): number =>
  r.steps.reduce((n, s) => (s.pair ? Math.max(n, s.pair.server + 1, s.pair.client + 1) : n), r.agents.length);

/**
 * The ratio heatmap of `b` over baseline `a`, in `b`'s agent order: value =
 * b / a per pair where both have the figure; a pair missing, failed or
 * without the figure in either is state 'none' with why in `error`. Also the
 * names of `a`'s agents that `b` lacks.
 */
export function ratioCells(
  a: RunResult,
  b: RunResult,
  fills: (s: StepResult) => Fill[],
): { cells: RatioCell[][]; onlyInA: number[] } {
  const n = matrixSize(b);
  const na = matrixSize(a);
  const toA = matchAgents(b.agents, a.agents);
  const ga = byCell(a, na, fills);
  const gb = byCell(b, n, fills);
  const cells = Array.from({ length: n }, (_, r) =>
    Array.from({ length: n }, (_, c): RatioCell => {
      const { step: ib, value: vb } = gb[r][c];
      const sb = ib >= 0 ? b.steps[ib] : null;
      const cell: RatioCell = { step: sb ? ib : null, value: null, state: 'none', a: null, b: vb };
      if (r === c) return { ...cell, state: 'self' };
      const [ra, ca] = [toA[r], toA[c]];
      const ia = ra >= 0 && ca >= 0 ? ga[ra][ca].step : -1;
      const sa = ia >= 0 ? a.steps[ia] : null;
      cell.a = ia >= 0 ? ga[ra][ca].value : null;
      if (ra < 0 || ca < 0) cell.error = 'an agent of this pair is not in the baseline';
      else if (cell.a == null) cell.error = sa ? `no figure in the baseline${sa.error ? ` (failed: ${sa.error})` : ''}` : 'not in the baseline';
      else if (cell.b == null) cell.error = sb ? `no figure in this matrix${sb.error ? ` (failed: ${sb.error})` : ''}` : 'not in this matrix';
      else if (cell.a === 0) cell.error = 'the baseline is 0: no ratio';
      else Object.assign(cell, { value: cell.b / cell.a, state: 'done' });
      return cell;
    }),
  );
  const matched = new Set(toA);
  const onlyInA = Array.from({ length: na }, (_, i) => i).filter((i) => !matched.has(i));
  return { cells, onlyInA };
}
