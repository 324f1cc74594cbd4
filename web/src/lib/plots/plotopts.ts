// Shared uPlot options: themed axes with unit labels, series colours from the
// CSS palette, log scales where asked. Reads `theme.resolved` so options built
// inside `$derived` are rebuilt when the theme changes.

import uPlot from 'uplot';
import { theme } from '../theme.svelte';
import { fmt } from '../units';

export function css(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

export const color = (i: number) => css(`--series-${(i % 6) + 1}`);

/**
 * The line of series `i` past the palette's six colours, when it has none of
 * its own: solid, then dashed, dotted, dash-dot, so a seventh series is not
 * the first again (issue 45, item 10: ten series of a 4-stream chart).
 */
export const ROUND_DASH: (number[] | undefined)[] = [undefined, [6, 3], [2, 3], [8, 3, 2, 3]];
const roundDash = (i: number) => ROUND_DASH[Math.floor(i / 6) % ROUND_DASH.length];

export interface SeriesSpec {
  label: string;
  color?: string;
  /** Unit shown after values in the legend. */
  unit?: string;
  dash?: number[];
  points?: boolean;
  line?: boolean;
  bars?: boolean;
  width?: number;
  /**
   * The series can end before series `endsBy` (a stream before its side's
   * total; an index into this list): past its end the legend reads "ended
   * at T s" instead of a value, and off the plot it shows that series' last
   * row, not this one's own last point beside a later total (issue 45,
   * item 10).
   */
  endsBy?: number;
}

export interface PlotSpec {
  x: string;
  y: string;
  xLog?: boolean;
  yLog?: boolean;
  /** Start the y axis at 0 (linear scales). */
  yZero?: boolean;
  series: SeriesSpec[];
  xValue?: (v: number) => string;
  /** x holds the categories 0..n-1 (bars): one tick each, labelled by `xValue`, half a bar of room each side. */
  xCategories?: number;
  /** x takes whole numbers only (streams, flows): ticks at whole numbers, never 1.2, 1.4. */
  xInteger?: boolean;
}

/** Whole-number tick steps: 1, 2, 5, 10, 20, 50, ... */
export const INTEGER_INCRS = Array.from({ length: 30 }, (_, k) => [1, 2, 5][k % 3] * 10 ** Math.floor(k / 3));

/** "ended at 0.83 s": series `si` has no value at row `idx` but had before (its last point's x); else "–". */
export function endedText(u: uPlot, si: number, idx: number): string {
  const col = u.data[si] as ArrayLike<number | null | undefined>;
  for (let i = Math.min(idx, col.length - 1); i >= 0; i--) if (col[i] != null) return `ended at ${fmt(u.data[0][i], 3)} s`;
  return '–';
}

export function plotOpts(p: PlotSpec): Omit<uPlot.Options, 'width' | 'height'> {
  void theme.resolved;
  const fg = css('--muted');
  const grid = { stroke: css('--line'), width: 1 };
  const axis = { stroke: fg, grid, ticks: grid };
  const yRange: uPlot.Scale.Range | undefined = p.yZero && !p.yLog ? (_u, _min, max) => [0, max > 0 ? max * 1.05 : 1] : undefined;
  const cats = p.xCategories;
  const xAxis: uPlot.Axis = cats
    ? {
        splits: () => Array.from({ length: cats }, (_, i) => i),
        values: (_u, splits) => splits.map((v) => (p.xValue ? p.xValue(v) : String(v))),
      }
    : p.xInteger && !p.xLog
      ? { incrs: INTEGER_INCRS }
      : {};
  // Bars centred on their x (a histogram's bin centres) get half a spacing
  // of room at each end: the first and last were drawn half (issue 45, item 23).
  const barsPad = !cats && !p.xLog && p.series.some((s) => s.bars);
  const padded = (u: uPlot, min: number, max: number): uPlot.Range.MinMax => {
    const n = u.data[0]?.length ?? 0;
    const half = n > 1 ? (max - min) / (n - 1) / 2 : 0.5;
    return [min - half, max + half];
  };
  return {
    scales: {
      x: { time: false, distr: p.xLog ? 3 : 1, ...(cats ? { range: (): uPlot.Range.MinMax => [-0.5, cats - 0.5] } : barsPad ? { range: padded } : {}) },
      y: { distr: p.yLog ? 3 : 1, ...(yRange ? { range: yRange } : {}) },
    },
    axes: [
      { ...axis, ...xAxis, label: p.x },
      { ...axis, label: p.y, size: 64 },
    ],
    series: [
      { label: p.x, value: (_u, v) => (v == null ? '–' : p.xValue ? p.xValue(v) : fmt(v, 6)) },
      ...p.series.map((s, i) => ({
        label: s.label,
        stroke: s.color ?? color(i),
        fill: s.bars ? (s.color ?? color(i)) + '99' : undefined,
        width: s.width ?? 1.5,
        dash: s.dash ?? (s.color ? undefined : roundDash(i)),
        spanGaps: true,
        paths: s.bars ? uPlot.paths.bars!({ size: [0.7, 60] }) : s.line === false ? () => null : undefined,
        points: { show: s.points ?? false, size: 5, fill: s.color ?? color(i) },
        value: (u: uPlot, v: number | null, si: number, idx: number | null) =>
          v != null ? `${fmt(v)}${s.unit ? ' ' + s.unit : ''}` : s.endsBy != null && idx != null ? endedText(u, si, idx) : '–',
        // uPlot's index of the series (x is 0), read by UPlot.svelte off the plot.
        endsBy: s.endsBy == null ? undefined : s.endsBy + 1,
      })),
    ],
    cursor: { drag: { x: true, y: false } },
    // The legend's marker drawn as its line is: dashed or dotted too.
    legend: { markers: { dash: (u: uPlot, i: number) => (u.series[i].dash?.length ? (u.series[i].dash![0] <= 2 ? 'dotted' : 'dashed') : 'solid') } },
  };
}
