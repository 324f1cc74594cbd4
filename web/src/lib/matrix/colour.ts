// The heatmap's colour scale: a sequential palette (viridis, perceptually
// even and readable by the colour-blind) from zero (or the smallest figure,
// if negative) to the largest, and the text colour legible on each.

const STOPS: [number, number, number][] = [
  [68, 1, 84],
  [59, 82, 139],
  [33, 145, 140],
  [94, 201, 98],
  [253, 231, 37],
];

/** The colour of `t` in 0..1 (clamped) as [r, g, b] (a fleet's canvas writes pixels, not CSS colours). */
export const rgb = (t: number): [number, number, number] => rgbOf(STOPS, t);

export const colourAt = (t: number): string => `rgb(${rgb(t).join(' ')})`;

/** Black or white, whichever reads better on the colour of `t`. */
export const inkAt = (t: number): string => ink(rgb(t));

/** Black or white, whichever reads better on `rgb`. */
function ink([r, g, b]: [number, number, number]): string {
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? '#111' : '#fff';
}

/** A CSS gradient along the whole scale, for the legend. */
export const gradient = (dir = 'to right'): string =>
  `linear-gradient(${dir}, ${STOPS.map((_, i) => colourAt(i / (STOPS.length - 1))).join(', ')})`;

/** Where `v` falls between `lo` and `hi` (0.5 when they are equal). */
export const position = (v: number, lo: number, hi: number): number => (hi > lo ? (v - lo) / (hi - lo) : 0.5);

// The ratio heatmap's scale: diverging (ColorBrewer RdBu, colour-blind safe)
// around a neutral 1, blue below, red above, symmetric in log(ratio) so
// 0.5 and 2 sit equally far from the centre.
const DIVERGING: [number, number, number][] = [
  [33, 102, 172],
  [146, 197, 222],
  [247, 247, 247],
  [244, 165, 130],
  [178, 24, 43],
];

/** The colour of `t` in 0..1 (clamped; not a number: the middle) on `stops`, as [r, g, b]. */
function rgbOf(stops: [number, number, number][], t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0.5)) * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [stops[i], stops[i + 1]];
  return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f)) as [number, number, number];
}

export const ratioColourAt = (t: number): string => `rgb(${rgbOf(DIVERGING, t).join(' ')})`;

/** Text colour on the ratio scale at `t`. */
export const ratioInkAt = (t: number): string => ink(rgbOf(DIVERGING, t));

export const ratioGradient = (dir = 'to right'): string =>
  `linear-gradient(${dir}, ${DIVERGING.map((_, i) => ratioColourAt(i / (DIVERGING.length - 1))).join(', ')})`;

/**
 * The half-width of the ratio scale in ln(ratio): the largest deviation
 * from 1 among `ratios`, at least ln 1.1 so run-to-run noise of a few per
 * cent stays near the neutral colour.
 */
export function ratioSpan(ratios: number[]): number {
  let span = Math.log(1.1);
  for (const r of ratios) if (r > 0 && Number.isFinite(r)) span = Math.max(span, Math.abs(Math.log(r)));
  return span;
}

/** Where ratio `r` falls on a scale of half-width `span` (ln): 0.5 at 1. */
export const ratioPosition = (r: number, span: number): number => (r > 0 ? 0.5 + Math.log(r) / (2 * span) : 0);
