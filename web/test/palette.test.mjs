// The heatmaps' colours with the common colour-vision deficiencies (issue 26
// part 4), by computation rather than by eye: each palette (matrix/colour.ts,
// as the cells get it) is sampled in 9 steps, every colour is passed through
// the Machado, Oliveira and Fernandes (2009) simulation of protanopia,
// deuteranopia and tritanopia (severity 1, applied to linear RGB), and
// neighbouring steps must stay apart by a CIEDE2000 difference of at least
// MIN_STEP (about 2.3 is a just-noticeable difference; 5 is clear at a
// glance). The sequential scale must also keep its order in lightness, so a
// larger figure reads darker-to-lighter whatever the viewer's hues; the
// diverging (ratio) scale must tell a ratio below 1 from the same ratio
// above it.
import assert from 'node:assert/strict';
import { test } from 'node:test';

const { colourAt, ratioColourAt } = await import('../src/lib/matrix/colour.ts');

const MIN_STEP = 5;
const STEPS = 9;

// Machado et al. 2009, Table 1 at severity 1.0 (rows: R', G', B' from linear R, G, B).
const VISIONS = {
  normal: null,
  protanopia: [
    [0.152286, 1.052583, -0.204868],
    [0.114503, 0.786281, 0.099216],
    [-0.003882, -0.048116, 1.051998],
  ],
  deuteranopia: [
    [0.367322, 0.860646, -0.227968],
    [0.280085, 0.672501, 0.047413],
    [-0.01182, 0.04294, 0.968881],
  ],
  tritanopia: [
    [1.255528, -0.076749, -0.178779],
    [-0.078411, 0.930809, 0.147602],
    [0.004733, 0.691367, 0.3039],
  ],
};

const parse = (css) => {
  const m = /^rgb\((\d+) (\d+) (\d+)\)$/.exec(css);
  assert.ok(m, css);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
};
const toLinear = (c) => ((c /= 255) <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
const clamp = (v) => Math.min(1, Math.max(0, v));

/** sRGB 0..255 as seen with `vision`, in CIELAB (D65). */
function lab(rgb, vision) {
  let l = rgb.map(toLinear);
  const m = VISIONS[vision];
  if (m) l = m.map((row) => clamp(row[0] * l[0] + row[1] * l[1] + row[2] * l[2]));
  const [r, g, b] = l;
  const x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047;
  const y = 0.2126729 * r + 0.7151522 * g + 0.072175 * b;
  const z = (0.0193339 * r + 0.119192 * g + 0.9503041 * b) / 1.08883;
  const f = (t) => (t > 216 / 24389 ? Math.cbrt(t) : (24389 / 27 * t + 16) / 116);
  return [116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))];
}

/** CIEDE2000 (Sharma, Wu and Dalal 2005), kL = kC = kH = 1. */
function de2000([L1, a1, b1], [L2, a2, b2]) {
  const rad = Math.PI / 180;
  const C1 = Math.hypot(a1, b1);
  const C2 = Math.hypot(a2, b2);
  const Cm = (C1 + C2) / 2;
  const G = 0.5 * (1 - Math.sqrt(Cm ** 7 / (Cm ** 7 + 25 ** 7)));
  const [a1p, a2p] = [a1 * (1 + G), a2 * (1 + G)];
  const [C1p, C2p] = [Math.hypot(a1p, b1), Math.hypot(a2p, b2)];
  const hue = (b, a) => (b === 0 && a === 0 ? 0 : ((Math.atan2(b, a) / rad) + 360) % 360);
  const [h1p, h2p] = [hue(b1, a1p), hue(b2, a2p)];
  const dL = L2 - L1;
  const dC = C2p - C1p;
  let dh = 0;
  if (C1p * C2p !== 0) {
    dh = h2p - h1p;
    if (dh > 180) dh -= 360;
    else if (dh < -180) dh += 360;
  }
  const dH = 2 * Math.sqrt(C1p * C2p) * Math.sin((dh / 2) * rad);
  const Lm = (L1 + L2) / 2;
  const Cmp = (C1p + C2p) / 2;
  let hm = h1p + h2p;
  if (C1p * C2p !== 0) {
    if (Math.abs(h1p - h2p) <= 180) hm /= 2;
    else hm = h1p + h2p < 360 ? (hm + 360) / 2 : (hm - 360) / 2;
  }
  const T = 1 - 0.17 * Math.cos((hm - 30) * rad) + 0.24 * Math.cos(2 * hm * rad) + 0.32 * Math.cos((3 * hm + 6) * rad) - 0.2 * Math.cos((4 * hm - 63) * rad);
  const dTheta = 30 * Math.exp(-(((hm - 275) / 25) ** 2));
  const RC = 2 * Math.sqrt(Cmp ** 7 / (Cmp ** 7 + 25 ** 7));
  const SL = 1 + (0.015 * (Lm - 50) ** 2) / Math.sqrt(20 + (Lm - 50) ** 2);
  const SC = 1 + 0.045 * Cmp;
  const SH = 1 + 0.015 * Cmp * T;
  const RT = -Math.sin(2 * dTheta * rad) * RC;
  return Math.sqrt((dL / SL) ** 2 + (dC / SC) ** 2 + (dH / SH) ** 2 + RT * (dC / SC) * (dH / SH));
}

const samples = (at) => Array.from({ length: STEPS }, (_, i) => parse(at(i / (STEPS - 1))));

test('CIEDE2000 and the simulation as published: Sharma et al.’s test pairs, Machado’s rows keep grey grey', () => {
  // Sharma, Wu and Dalal (2005), Table 1, pairs 1, 7, 17 and 34.
  const pairs = [
    [[50, 2.6772, -79.7751], [50, 0, -82.7485], 2.0425],
    [[50, 0, 0], [50, -1, 2], 2.3669],
    [[50, 2.5, 0], [73, 25, -18], 27.1492],
    [[2.0776, 0.0795, -1.135], [0.9033, -0.0636, -0.5514], 0.9082],
  ];
  for (const [x, y, want] of pairs) assert.ok(Math.abs(de2000(x, y) - want) < 5e-5, `${x} ${y}: ${de2000(x, y)} != ${want}`);
  // White and mid grey look the same to every simulated viewer.
  for (const v of Object.keys(VISIONS))
    for (const grey of [[255, 255, 255], [128, 128, 128]]) assert.ok(de2000(lab(grey, 'normal'), lab(grey, v)) < 0.5, `${v} ${grey}`);
  // A red and a green that the normal eye tells far apart collapse under deuteranopia: the simulation bites.
  const [red, green] = [[200, 60, 40], [80, 140, 40]];
  assert.ok(de2000(lab(red, 'normal'), lab(green, 'normal')) > 40);
  assert.ok(de2000(lab(red, 'deuteranopia'), lab(green, 'deuteranopia')) < 15);
});

/** The smallest difference between neighbouring steps, as `vision` sees them. */
function worstStep(cs, vision) {
  const labs = cs.map((c) => lab(c, vision));
  return Math.min(...labs.slice(1).map((l, i) => de2000(labs[i], l)));
}

test('the matrix heatmap: neighbouring steps apart and lightness in order for every vision', (t) => {
  const cs = samples(colourAt);
  t.diagnostic(`smallest ΔE00 between steps: ${Object.keys(VISIONS).map((v) => `${v} ${worstStep(cs, v).toFixed(1)}`).join(', ')}`);
  for (const v of Object.keys(VISIONS)) {
    const labs = cs.map((c) => lab(c, v));
    for (let i = 1; i < STEPS; i++) {
      const d = de2000(labs[i - 1], labs[i]);
      assert.ok(d >= MIN_STEP, `${v}: steps ${i - 1} and ${i} (${cs[i - 1]} / ${cs[i]}) differ by ΔE00 ${d.toFixed(2)} < ${MIN_STEP}`);
      assert.ok(labs[i][0] > labs[i - 1][0] + 3, `${v}: lightness ${labs[i - 1][0].toFixed(1)} -> ${labs[i][0].toFixed(1)} at step ${i}`);
    }
  }
});

/** The smallest difference between a diverging palette's step and its mirror across the middle, as `vision` sees them. */
function worstMirror(cs, vision) {
  const labs = cs.map((c) => lab(c, vision));
  let worst = Infinity;
  for (let i = 0; i < (STEPS - 1) / 2; i++) worst = Math.min(worst, de2000(labs[i], labs[STEPS - 1 - i]));
  return worst;
}

test('the ratio heatmap: neighbouring steps apart, and a ratio below 1 apart from its mirror above 1, for every vision', (t) => {
  const cs = samples(ratioColourAt);
  t.diagnostic(`smallest ΔE00 between steps: ${Object.keys(VISIONS).map((v) => `${v} ${worstStep(cs, v).toFixed(1)}`).join(', ')}`);
  t.diagnostic(`smallest ΔE00 step to mirror: ${Object.keys(VISIONS).map((v) => `${v} ${worstMirror(cs, v).toFixed(1)}`).join(', ')}`);
  for (const v of Object.keys(VISIONS)) {
    const labs = cs.map((c) => lab(c, v));
    for (let i = 1; i < STEPS; i++) {
      const d = de2000(labs[i - 1], labs[i]);
      assert.ok(d >= MIN_STEP, `${v}: steps ${i - 1} and ${i} (${cs[i - 1]} / ${cs[i]}) differ by ΔE00 ${d.toFixed(2)} < ${MIN_STEP}`);
    }
    const m = worstMirror(cs, v);
    assert.ok(m >= MIN_STEP, `${v}: a step and its mirror differ by ΔE00 ${m.toFixed(2)} < ${MIN_STEP}`);
  }
  // The check can fail: a red-to-green scale through yellow (a traffic light,
  // the usual mistake) passes for normal vision and fails for deuteranopia.
  const traffic = [[215, 48, 39], [255, 255, 191], [26, 152, 80]];
  const at = (t) => {
    const x = t * 2;
    const i = Math.min(1, Math.floor(x));
    const f = x - i;
    return `rgb(${[0, 1, 2].map((k) => Math.round(traffic[i][k] + (traffic[i + 1][k] - traffic[i][k]) * f)).join(' ')})`;
  };
  assert.ok(worstMirror(samples(at), 'normal') >= MIN_STEP);
  assert.ok(worstMirror(samples(at), 'deuteranopia') < MIN_STEP, String(worstMirror(samples(at), 'deuteranopia')));
});
