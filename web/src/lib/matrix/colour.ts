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

/** The colour of `t` in 0..1 (clamped) as [r, g, b]. */
function rgb(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (STOPS.length - 1);
  const i = Math.min(STOPS.length - 2, Math.floor(x));
  const f = x - i;
  const [a, b] = [STOPS[i], STOPS[i + 1]];
  return [0, 1, 2].map((k) => Math.round(a[k] + (b[k] - a[k]) * f)) as [number, number, number];
}

export const colourAt = (t: number): string => `rgb(${rgb(t).join(' ')})`;

/** Black or white, whichever reads better on the colour of `t`. */
export function inkAt(t: number): string {
  const [r, g, b] = rgb(t);
  return 0.299 * r + 0.587 * g + 0.114 * b > 140 ? '#111' : '#fff';
}

/** A CSS gradient along the whole scale, for the legend. */
export const gradient = (dir = 'to right'): string =>
  `linear-gradient(${dir}, ${STOPS.map((_, i) => colourAt(i / (STOPS.length - 1))).join(', ')})`;

/** Where `v` falls between `lo` and `hi` (0.5 when they are equal). */
export const position = (v: number, lo: number, hi: number): number => (hi > lo ? (v - lo) / (hi - lo) : 0.5);
