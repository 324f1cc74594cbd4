// Latency under load from the page's plan form (the kind's form is generated
// from the parameter table) against two real agents: the step runs, the
// existing views show it without errors, and the exported JSON carries the
// four phases the agents measured.
//
// Then the Standard test (latency under load, the bufferbloat preset) from the
// page against two real agents, and `meshperf run --preset bufferbloat
// --json -` against the same kind of pair: the summary card's figures are
// the exported summary's, the lanes are drawn, every existing view works on
// one phase's probes, a permalink reopens with the same card, and the CLI's
// table prints the card's texts for the same result file. Those figures are
// checked against the pointers the card declares; the card of a result whose
// four phases all differ is checked against a table written by hand.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { test, expect, AGENT_BIN } from '../agents';

test('latency_under_load runs from the plan form and shows in the existing views', async ({ page, agents }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('latency_under_load');
  await expect(page.getByTestId('probe-ms')).toHaveValue('5');
  for (const [id, v] of [['idle-s', '1'], ['download-s', '1'], ['upload-s', '1'], ['both-s', '1']]) {
    await page.getByTestId(id).fill(v);
  }
  await page.getByText('more options').click();
  await page.getByTestId('gap-s').fill('0.2');
  await page.getByTestId('streams').fill('1');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  await expect(page.getByTestId('error')).toBeHidden();

  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const result = JSON.parse(readFileSync((await json.path())!, 'utf8'));
  const s = result.steps[0].summary;
  expect(result.steps[0].kind).toBe('latency_under_load');
  expect(s.phases.map((p: { phase: string }) => p.phase)).toEqual(['idle', 'download', 'upload', 'both']);
  expect(s.complete).toBe(true);
  expect(s.phases[1].down_bits_per_second).toBeGreaterThan(0);
  // The probes' round trips are the step's rtt_ns samples, one per answered probe.
  const rtt = result.steps[0].samples.find((x: { kind: string }) => x.kind === 'rtt_ns');
  expect(rtt.values.length).toBe(s.probes_down.received);
  expect(errors).toEqual([]);
});

interface Fig {
  key: string;
  value: string;
  from: string[];
  div: number;
  /** The CLI's cell (Mbit/s, ms at its precision), as the card module wrote it. */
  text: string;
  /** As the page shows it: number and unit. */
  shown: string;
  basis: string;
  uncertain: boolean;
}

/** Every figure of the card as the page shows it. */
async function cardFigures(page: Page): Promise<Fig[]> {
  await expect(page.getByTestId('lul-card')).toBeVisible({ timeout: 20_000 });
  return page.getByTestId('lul-fig').evaluateAll((els) =>
    els.map((e) => {
      const d = (e as HTMLElement).dataset;
      return {
        key: d.key!,
        value: d.value!,
        from: d.from ? d.from.split(' ') : [],
        div: Number(d.div),
        text: d.text!,
        shown: e.textContent!.replace(/\s+/g, ' ').trim(),
        basis: d.basis!,
        uncertain: d.uncertain === 'true',
      };
    }),
  );
}

/** A shown unit's factor to the summary's (µs for times, bit/s for rates). */
const UNIT: Record<string, number> = { 'µs': 1, ms: 1e3, 'bit/s': 1, 'kbit/s': 1e3, 'Mbit/s': 1e6, 'Gbit/s': 1e9 };

const pointer = (doc: unknown, p: string): number =>
  p.split('/').slice(1).reduce((o: any, k) => o?.[k], doc) as number;

/** Each figure is its summary pointers' sum over its divisor, and says `<±U` exactly where the CLI does. */
function checkAgainst(figs: Fig[], summary: any, count = 33) {
  expect(figs.length).toBe(count);
  const unc = summary.clock?.uncertainty_us ?? Infinity;
  for (const f of figs) {
    if (!f.from.length) {
      expect(f.value, f.key).toBe('');
      continue;
    }
    const sum = f.from.reduce((a, p) => a + pointer(summary, p), 0);
    expect(Number(f.value), f.key).toBe(sum / f.div);
    const oneWay = /^[a-z]+\.(up|down)\.median$/.test(f.key);
    expect(f.uncertain, f.key).toBe(oneWay && Math.abs(sum) <= unc);
    // An added delay within its uncertainty, or below zero, reads none (±U), never a figure.
    const none = /^none \(±[\d.]+\)$/.test(f.text);
    if (/\.added_/.test(f.key) && sum <= 0) expect(none, `${f.key}: ${f.text} for ${sum}`).toBe(true);
    if (none) {
      expect(f.key).toMatch(/\.added_/);
      expect(f.shown, f.key).toMatch(/^none \(±[\d.,]+ (µs|ms)\)/);
      continue;
    }
    if (f.uncertain) expect(f.text, f.key).toBe(`<±${(unc / 1e3).toFixed(3)}`);
    else if (f.basis !== 'count') expect(f.text, f.key).toBe((sum / f.div).toFixed(f.div === 1e6 ? 1 : 3));
    // The page shows it in its own units (µs or ms, bit/s to Gbit/s), to four significant digits.
    if (f.basis !== 'count') {
      const m = /^(<±)?(-?[\d.,]+) (µs|ms|bit\/s|kbit\/s|Mbit\/s|Gbit\/s)(?: |$)/.exec(f.shown);
      expect(m, `${f.key}: ${f.shown}`).toBeTruthy();
      const base = Number(m![2].replace(/,/g, '')) * UNIT[m![3]];
      // `<±U` shows U from the CLI's text (ms to 3 decimals): within half a µs.
      const want = f.uncertain ? unc : sum;
      expect(Math.abs(base - want), `${f.key}: ${f.shown} for ${want}`).toBeLessThanOrEqual(Math.abs(want) * 5e-4 + (f.uncertain ? 0.5 : 1e-9));
    }
    if (oneWay) expect(f.basis).toBe(summary.clock.basis);
  }
}

/** Linear-interpolation quantile (numpy's default) of ascending `v`. */
function quantile(v: number[], p: number): number {
  const h = (v.length - 1) * p;
  const k = Math.floor(h);
  return k + 1 < v.length ? v[k] + (h - k) * (v[k + 1] - v[k]) : v[k];
}

/**
 * The card's round-trip and throughput figures against the exported step's
 * raw samples, computed here (not through the pointers the card declares,
 * which `checkAgainst` follows): each answered probe's round trip from its
 * four times, (arrival - send) - (peer send - peer receive), grouped by its
 * `probe_phase`; the phases' medians, p90 and p99 (ms), the loaded ones
 * over the idle one; and each load's rate against its streams' 100 ms
 * intervals (the phase's bytes over a time between its intervals less one
 * and all of them). A figure read from the wrong phase, direction or
 * statistic fails here. Returns how many figures it checked.
 */
function checkAgainstSamples(figs: Fig[], step: any): number {
  const col = (kind: string) => step.samples.find((x: any) => x.kind === kind && x.role === 'client').values as number[];
  const [t1, t2, t3, t4, ph] = ['send_time_ns', 'peer_recv_ns', 'peer_send_ns', 'arrival_ns', 'probe_phase'].map(col);
  expect(new Set([t1.length, t2.length, t3.length, t4.length, ph.length]).size).toBe(1);
  const names = ['idle', 'download', 'upload', 'both'];
  const rtt = names.map((_, code) =>
    t1
      .map((_, i) => i)
      .filter((i) => ph[i] === code)
      .map((i) => (t4[i] - t1[i] - (t3[i] - t2[i])) / 1e6) // ms
      .sort((a, b) => a - b),
  );
  const fig = (key: string) => {
    const f = figs.find((x) => x.key === key);
    expect(f, key).toBeTruthy();
    return Number(f!.value);
  };
  let checked = 0;
  const near = (key: string, want: number) => {
    // 1 ns: the agent sums in f64 with its clock shift added to both peer times.
    expect(Math.abs(fig(key) - want), `${key}: card ${fig(key)}, samples ${want}`).toBeLessThanOrEqual(1e-6);
    checked++;
  };
  for (const [stat, p] of [['median', 0.5], ['p90', 0.9], ['p99', 0.99]] as const) {
    near(`idle.rtt.${stat}`, quantile(rtt[0], p));
    for (const code of [1, 2, 3]) near(`${names[code]}.added_rtt.${stat}`, quantile(rtt[code], p) - quantile(rtt[0], p));
  }
  // Loads: the engine numbers the streams up 0..n upload, n..2n both (the
  // serving side's intervals), down 2n..3n download, 3n..4n both (the driving side's).
  const n = step.params.streams;
  const dt = (step.params.interval_ms ?? 100) / 1000;
  const load = (key: string, role: string, from: number) => {
    const iv = step.samples.filter((x: any) => x.kind === 'interval_bytes' && x.role === role && x.stream >= from && x.stream < from + n);
    expect(iv.length, key).toBe(n);
    const bytes = iv.reduce((a: number, x: any) => a + x.values.reduce((b: number, v: number) => b + v, 0), 0);
    const len = Math.max(...iv.map((x: any) => x.values.length));
    const rate = fig(key) * 1e6; // Mbit/s
    expect(bytes, key).toBeGreaterThan(0);
    const secs = (bytes * 8) / rate;
    expect(secs, `${key}: ${bytes} B at ${rate} bit/s, ${len} intervals`).toBeGreaterThan((len - 1) * dt - 0.005);
    expect(secs, `${key}: ${bytes} B at ${rate} bit/s, ${len} intervals`).toBeLessThanOrEqual(len * dt + 0.005);
    checked++;
    return rate;
  };
  load('download.down', 'client', 2 * n);
  load('upload.up', 'server', 0);
  const sum = load('both.down', 'client', 3 * n) + load('both.up', 'server', n);
  expect(Math.abs(fig('both.sum') * 1e6 - sum), 'both.sum').toBeLessThanOrEqual(sum * 1e-9 + 1);
  return checked + 1;
}

/**
 * A summary whose four phases all differ (protocol/tests/fixtures/lul-card-phases.json)
 * and the card's 33 figures written out by hand from it: key, value in the
 * figure's unit, text, below the clock's uncertainty (30 us). A figure read
 * from the wrong phase, direction or statistic does not match; checking the
 * figures only against the pointers the card itself declares would not see it.
 */
const DISTINCT = fileURLToPath(new URL('../../protocol/tests/fixtures/lul-card-phases.json', import.meta.url));
const TABLE: [string, number, string, boolean][] = [
  ['download.down', 941.37, '941.4', false],
  ['upload.up', 827.49, '827.5', false],
  ['both.down', 413.22, '413.2', false],
  ['both.up', 296.51, '296.5', false],
  ['both.sum', 709.73, '709.7', false],
  ['idle.rtt.median', 0.0612, '0.061', false],
  ['idle.rtt.p90', 0.0674, '0.067', false],
  ['idle.rtt.p99', 0.0889, '0.089', false],
  ['download.added_rtt.median', 4.1018, '4.102', false],
  ['download.added_rtt.p90', 5.2226, '5.223', false],
  ['download.added_rtt.p99', 9.3498, '9.350', false],
  ['upload.added_rtt.median', 12.8698, '12.870', false],
  ['upload.added_rtt.p90', 14.5526, '14.553', false],
  ['upload.added_rtt.p99', 20.3188, '20.319', false],
  ['both.added_rtt.median', 15.4998, '15.500', false],
  ['both.added_rtt.p90', 17.6226, '17.623', false],
  ['both.added_rtt.p99', 25.9488, '25.949', false],
  ['idle.up.median', 0.0213, '<±0.030', true],
  ['idle.down.median', 2.4816, '2.482', false],
  ['download.up.median', 0.0358, '0.036', false],
  ['download.down.median', 6.5224, '6.522', false],
  ['upload.up.median', 12.9517, '12.952', false],
  ['upload.down.median', -0.0124, '<±0.030', true],
  ['both.up.median', 8.8329, '8.833', false],
  ['both.down.median', 7.3446, '7.345', false],
  ['download.added_up.median', 0.0147, '0.015', false],
  ['download.added_down.median', 4.0408, '4.041', false],
  ['upload.added_up.median', 12.9304, '12.930', false],
  // Below zero: none, with the difference's own uncertainty (protocol/src/verdict.rs).
  ['upload.added_down.median', -0.0337, 'none (±0.0004)', false],
  ['both.added_up.median', 8.8116, '8.812', false],
  ['both.added_down.median', 4.863, '4.863', false],
  ['loss.up', 7, '7 of 760 (0.92%)', false],
  ['loss.down', 3, '3 of 753 (0.40%)', false],
];

test('the card of a result whose phases all differ shows the 33 hand-written figures', async ({ page, agents, scratch }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const summary = JSON.parse(readFileSync(DISTINCT, 'utf8'));
  const result = {
    format: 'meshperf-result',
    version: 1,
    plan: { kind: 'latency_under_load' },
    steps: [{ kind: 'latency_under_load', params: { probe_ms: 5 }, summary, samples: [] }],
  };
  const file = join(scratch, 'phases.json');
  writeFileSync(file, JSON.stringify(result));
  await page.goto(`${agents.a.origin}/`);
  await page.getByTestId('import').setInputFiles(file);
  const figs = await cardFigures(page);
  expect(figs.map((f) => f.key)).toEqual(TABLE.map((t) => t[0]));
  for (const [f, [key, value, text, uncertain]] of figs.map((f, i) => [f, TABLE[i]] as const)) {
    expect(Math.abs(Number(f.value) - value), `${key}: ${f.value}, expected ${value}`).toBeLessThanOrEqual(1e-9 * Math.abs(value));
    expect([f.text, f.uncertain], key).toEqual([text, uncertain]);
  }
  // The verdict first, in words (protocol/src/verdict.rs, worked by hand in its tests).
  await expect(page.getByTestId('lul-verdict')).toHaveAttribute('data-grade', 'A');
  await expect(page.getByTestId('lul-verdict-text')).toHaveText(
    'Grade A: uploading and downloading at once adds 15.5 ms: calls and games will hardly notice while both run; ' +
      'downloads add 4102 µs (on the way down), uploads add 12.87 ms (on the way up).',
  );
  await expect(page.getByTestId('lul-clock')).toHaveText(
    'one-way delays on estimated clocks: offset 1523.4 µs, drift 0.42 ppm, uncertainty ±30.0 µs (<± marks a delay smaller than that); ' +
      'their changes (added up/down) are not affected; receive times from the kernel',
  );
  expect(errors).toEqual([]);
});

test('a latency_under_load matrix cell says the verdict of its pair in its tooltip', async ({ page, agents, scratch }) => {
  const summary = JSON.parse(readFileSync(DISTINCT, 'utf8'));
  const step = (client: number, server: number) => ({ kind: 'latency_under_load', params: { probe_ms: 5 }, pair: { client, server }, summary, samples: [] });
  const result = {
    format: 'meshperf-result',
    version: 1,
    plan: { kind: 'latency_under_load' },
    agents: [
      { endpoint: '127.0.0.1:7800', hostname: 'a' },
      { endpoint: '127.0.0.1:7801', hostname: 'b' },
    ],
    steps: [step(0, 1)],
  };
  const file = join(scratch, 'matrix.json');
  writeFileSync(file, JSON.stringify(result));
  await page.goto(`${agents.a.origin}/`);
  await page.getByTestId('import').setInputFiles(file);
  await expect(page.getByTestId('matrix-view')).toBeVisible();
  // The pair's cell: its tooltip is the figure, then the verdict.
  const cell = page.getByTestId('heatmap').locator('[data-testid=cell][data-row="0"][data-col="1"]');
  await expect(cell).toHaveAttribute('data-state', 'done');
  await cell.hover();
  await expect(page.getByTestId('heatmap-tip')).toContainText(
    '. Grade A: uploading and downloading at once adds 15.5 ms: calls and games will hardly notice while both run;',
  );
});

test('a latency_under_load matrix cell whose added delay is below zero reads none (±U), not the figure', async ({ page, agents, scratch }) => {
  const summary = JSON.parse(readFileSync(DISTINCT, 'utf8'));
  const down = summary.phases.find((p: { phase: string }) => p.phase === 'download');
  down.added_rtt_us.median = -10.17;
  const result = {
    format: 'meshperf-result',
    version: 1,
    plan: { kind: 'latency_under_load' },
    agents: [
      { endpoint: '127.0.0.1:7800', hostname: 'a' },
      { endpoint: '127.0.0.1:7801', hostname: 'b' },
    ],
    steps: [{ index: 0, kind: 'latency_under_load', params: { probe_ms: 5 }, pair: { client: 0, server: 1 }, summary, samples: [] }],
  };
  const file = join(scratch, 'matrix-none.json');
  writeFileSync(file, JSON.stringify(result));
  await page.goto(`${agents.a.origin}/`);
  await page.getByTestId('import').setInputFiles(file);
  // Row 1 (the serving agent) sends the download: its cell is the download phase's added round trip.
  const cell = page.getByTestId('heatmap').locator('[data-testid=cell][data-row="1"][data-col="0"]');
  await expect(cell).toHaveAttribute('data-state', 'done');
  await expect(cell).toHaveText('none');
  await cell.hover();
  const tip = page.getByTestId('heatmap-tip');
  await expect(tip).toContainText(/: .* none \(±[\d.]+ (µs|ms)\)\. Grade/);
  await expect(tip).not.toContainText('-10.17');
  // The upload's cell keeps its figure (12 869.8 µs added: 12.87 ms by the one time rule).
  const up = page.getByTestId('heatmap').locator('[data-testid=cell][data-row="0"][data-col="1"]');
  await up.hover();
  await expect(tip).toContainText(': 12.87 ms. Grade');
});

/** The statistics table's figure `stat` of quantity `q`, as a number. */
async function statOf(page: Page, q: string, stat: string): Promise<number> {
  const cell = page.getByTestId('stats').locator(`td[data-stat=${stat}][data-quantity=${q}]`);
  await expect(cell).toHaveText(/\d/);
  const v = Number((await cell.textContent())!.replace(/[^0-9.e+-]/g, ''));
  if (stat === 'n' || !q.startsWith('tput')) return v;
  // Throughput in Gbit/s, from the unit the column shows.
  const unit = /\(([^()]+)\)\s*$/.exec((await page.getByTestId('stats').locator(`th[data-quantity=${q}]`).textContent())!)![1];
  return (v * UNIT[unit]) / 1e9;
}

test('the Standard test: card = exported JSON, lanes drawn, phases in every view, permalink reopens', async ({ page, agents, browser }) => {
  test.setTimeout(120_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.setViewportSize({ width: 1366, height: 768 });
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  // The user's own plan (UDP, 900-byte packets) is left alone by the Standard test.
  await page.getByTestId('kind').selectOption('udp_stream');
  await page.getByTestId('pkt-bytes').fill('900');
  // The default is the preset as it is (about 30 s); the quick one keeps this test short.
  await expect(page.getByTestId('standard-length')).toHaveValue('standard');
  await page.getByTestId('standard-length').selectOption('quick');
  await page.getByTestId('standard-test').click();
  await expect(page.getByTestId('standard-progress')).toBeVisible();
  // Live progress names the phase the agents are in.
  await expect(page.getByTestId('standard-progress')).toHaveAttribute('aria-label', /download|upload|both/, { timeout: 15_000 });
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  // The plan form is still the user's plan; the result names the plan that ran.
  await expect(page.getByTestId('kind')).toHaveValue('udp_stream');
  await expect(page.getByTestId('pkt-bytes')).toHaveValue('900');
  await expect(page.getByTestId('result-label')).toContainText('bufferbloat');
  // The finished run is brought into view, its title at the top of the screen.
  await expect(page.getByTestId('result-label')).toBeInViewport();
  expect((await page.getByTestId('result-label').boundingBox())!.y).toBeLessThan(768 / 3);

  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const result = JSON.parse(readFileSync((await json.path())!, 'utf8'));
  expect(result.plan.name).toBe('bufferbloat');
  const step = result.steps[0];
  const s = step.summary;
  expect(step.params).toMatchObject({ idle_s: 1, download_s: 1, streams: 4, probe_ms: 5 });
  expect(s.complete).toBe(true);
  const figs = await cardFigures(page);
  checkAgainst(figs, s);
  // 17 of the 33 from the raw samples (the one-way delays rest on the clock
  // fit, the losses on the serving agent's counts: those the summary's).
  expect(checkAgainstSamples(figs, step)).toBe(17);
  expect(Number(figs.find((f) => f.key === 'download.down')!.value)).toBeGreaterThan(0);

  // The lanes: three uPlot charts with their series, drawn (pixels on every canvas).
  const lanes = page.getByTestId('lul-lanes');
  await expect(lanes).toHaveAttribute('data-probes', String(s.probes_down.received));
  await expect(lanes).toHaveAttribute('data-lost', String(s.probes_up.sent - s.probes_down.received));
  for (const [id, n] of [['tput', 4], ['latency', 4], ['loss', 2]] as const) {
    await expect(page.getByTestId(`lul-lane-${id}`).locator('.u-legend .u-series')).toHaveCount(n);
  }
  const inked = await lanes.locator('canvas').evaluateAll((cs) =>
    cs.map((c) => {
      const g = (c as HTMLCanvasElement).getContext('2d')!;
      const d = g.getImageData(0, 0, (c as HTMLCanvasElement).width, (c as HTMLCanvasElement).height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
      return n;
    }),
  );
  expect(inked.length).toBe(3);
  for (const n of inked.slice(0, 2)) expect(n).toBeGreaterThan(1000);
  // Not hovered, each legend shows its series' last point: the throughput
  // lane's last row is the null after the both phase, which read "–".
  for (const i of [1, 2, 3])
    await expect(page.getByTestId('lul-lane-tput').locator('.u-legend .u-series').nth(i).locator('.u-value')).toHaveText(/^[0-9][0-9.,]* [kMG]?bit\/s$/);
  // Hovering the latency lane in the download phase shows the throughput lane's values there too.
  const latency = page.getByTestId('lul-lane-latency');
  const over = latency.locator('.u-over');
  const box = (await over.boundingBox())!;
  // Half way through the download phase (1.25 s to 2.25 s after the start).
  const xMax = Number(await latency.locator('.uplot-host').getAttribute('data-x-max'));
  await over.hover({ position: { x: (box.width * 1.75) / xMax, y: box.height / 2 } });
  const down = page.getByTestId('lul-lane-tput').locator('.u-legend .u-series').nth(1).locator('.u-value');
  // In the page's units: the rate scaled (loopback: Gbit/s), the delay in µs or ms.
  await expect(down).toHaveText(/^[0-9][0-9.,]* [kMG]?bit\/s$/);
  await expect(page.getByTestId('lul-lane-latency').locator('.u-legend .u-series').nth(1).locator('.u-value')).toHaveText(/^-?[0-9][0-9.,]* (µs|ms)$/);

  await page.getByTestId('lul-card').screenshot({ path: fileURLToPath(new URL('../screenshots/lul-card.png', import.meta.url)) });
  await lanes.screenshot({ path: fileURLToPath(new URL('../screenshots/lul-lanes.png', import.meta.url)) });

  // The whole test ("all"): each phase's load at its own time, never added
  // across phases. The throughput plot spans the loaded phases on the test's
  // axis (download starts after 1 s idle and a 0.25 s gap, both ends near 4.75 s).
  const plot = page.getByTestId('throughput-plot');
  expect(Number(await plot.getAttribute('data-x-min'))).toBeGreaterThan(1.2);
  expect(Number(await plot.getAttribute('data-x-max'))).toBeGreaterThan(4.5);
  // The exported JSON's streams, per phase and direction (the engine's
  // numbering: up 0..n upload, n..2n both; down 2n..3n download, 3n..4n both),
  // as Gbit/s per 100 ms interval, each phase's streams summed by interval.
  const per = step.params.streams;
  const rates = (role: string, from: number) => {
    const iv = step.samples.filter((x: any) => x.kind === 'interval_bytes' && x.role === role && x.stream >= from && x.stream < from + per);
    const len = Math.max(...iv.map((x: any) => x.values.length));
    const sum = Array.from({ length: len }, (_, i) => iv.reduce((a: number, x: any) => a + (x.values[i] ?? 0), 0));
    return sum.slice(0, -1).map((b) => (b * 8) / 0.1 / 1e9);
  };
  const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
  const downs = [rates('client', 2 * per), rates('client', 3 * per)];
  const ups = [rates('server', 0), rates('server', per)];
  for (const [q, phases] of [['tput-down', downs], ['tput-up', ups]] as const) {
    const all = phases.flat();
    expect(await statOf(page, q, 'n'), q).toBe(all.length);
    // The mean over the whole test is the intervals' mean, between the phases' own
    // means, never their sum (what adding the phases by interval number gave).
    const shown = await statOf(page, q, 'mean');
    expect(Math.abs(shown - mean(all)), `${q}: page ${shown}, JSON ${mean(all)}`).toBeLessThanOrEqual(mean(all) * 1e-3 + 1e-3);
    expect(shown).toBeLessThan(mean(phases[0]) + mean(phases[1]) - 0.25 * Math.min(mean(phases[0]), mean(phases[1])));
    expect(await statOf(page, q, 'max')).toBeLessThanOrEqual(Math.max(...all) * 1.001 + 1e-3);
  }
  // One phase at a time: its own intervals only.
  await page.getByTestId('lul-phase').selectOption('download');
  expect(Math.abs((await statOf(page, 'tput-down', 'mean')) - mean(downs[0]))).toBeLessThanOrEqual(mean(downs[0]) * 1e-3 + 1e-3);
  await expect(page.getByTestId('stats').locator('td[data-quantity=tput-up]')).toHaveCount(0);
  await page.getByTestId('lul-phase').selectOption('both');
  expect(Math.abs((await statOf(page, 'tput-up', 'mean')) - mean(ups[1]))).toBeLessThanOrEqual(mean(ups[1]) * 1e-3 + 1e-3);
  await page.getByTestId('lul-phase').selectOption('all');
  // The step's CSV (issue 29 item 9): its columns as before, then when each
  // stream's intervals ended on the test's axis: a stream counts from its
  // own phase's start (idle, gap, download, gap, upload, gap, both).
  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-step-csv').click()]);
  const rows = readFileSync((await csv.path())!, 'utf8').trim().split('\n').map((l) => l.split(';'));
  expect(rows[0].slice(0, 1 + step.samples.length)).toEqual(['n', ...step.samples.map((x: any) => `${x.role}_${x.kind}_${x.stream}`)]);
  const ends = (name: string) => rows.slice(1).map((r) => r[rows[0].indexOf(name)]).filter((v) => v !== '' && v != null).map(Number);
  const ranS = (name: string) => s.phases.find((p: any) => p.phase === name).seconds;
  const gap = step.params.gap_s ?? 1;
  const dt = (s.interval_ms ?? step.params.interval_ms ?? 100) / 1000;
  const dl = ends(`client_interval_end_s_${2 * per}`);
  const both = ends(`client_interval_end_s_${3 * per}`);
  const lenOf = (stream: number) => step.samples.find((x: any) => x.kind === 'interval_bytes' && x.role === 'client' && x.stream === stream).values.length;
  expect([dl.length, both.length]).toEqual([lenOf(2 * per), lenOf(3 * per)]);
  expect(dl[0]).toBeCloseTo(ranS('idle') + gap + dt, 6);
  expect(both[0]).toBeCloseTo(ranS('idle') + ranS('download') + ranS('upload') + 3 * gap + dt, 6);
  expect(dl[1] - dl[0]).toBeCloseTo(dt, 6);

  // One phase at a time: statistics, step exports.
  const n = page.getByTestId('stats').locator('td[data-stat=n][data-quantity=rtt]');
  await expect(n).toHaveText(String(s.probes_down.received));
  await page.getByTestId('lul-phase').selectOption('download');
  await expect(n).toHaveText(String(s.phases[1].rtt_us.n));
  const [stepJson] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-step-json').click()]);
  const one = JSON.parse(readFileSync((await stepJson.path())!, 'utf8'));
  const rtt = one.steps[0].samples.find((x: { kind: string }) => x.kind === 'rtt_ns').values;
  expect(rtt.length).toBe(s.phases[1].rtt_us.n);
  expect(new Set(one.steps[0].samples.find((x: { kind: string }) => x.kind === 'probe_phase').values)).toEqual(new Set([1]));
  await page.getByTestId('lul-phase').selectOption('both');
  await expect(n).toHaveText(String(s.phases[3].rtt_us.n));
  await expect(page.getByTestId('histogram')).toHaveAttribute('data-total', String(s.phases[3].rtt_us.n));
  await page.getByTestId('view-cdf').click();
  await expect(page.getByTestId('cdf')).toBeVisible();
  // The finished run is kept and overlaid: its CDF, of the chosen phase too.
  await expect(page.getByTestId('overlay')).toHaveAttribute('data-series', '1');
  await page.getByTestId('lul-phase').selectOption('all');

  // The permalink reopens elsewhere with the same card.
  await page.getByTestId('share').click();
  const link = await page.getByTestId('permalink').inputValue();
  expect(link).toContain('#r=');
  const ctx = await browser.newContext();
  const other = await ctx.newPage();
  await other.goto(link);
  expect(await cardFigures(other)).toEqual(figs);
  await expect(other.getByTestId('lul-lanes')).toHaveAttribute('data-probes', String(s.probes_down.received));
  await ctx.close();
  expect(errors).toEqual([]);
});

test('meshperf run --preset bufferbloat --json -: the page shows the CLI figures for the same file', async ({ page, agents, scratch }) => {
  test.setTimeout(90_000);
  const url = (a: typeof agents.a) => `${a.origin}/#token=${a.token}`;
  const sets = ['idle_s=1', 'download_s=1', 'upload_s=1', 'both_s=1', 'gap_s=0.25', 'streams=2'].flatMap((x) => ['--set', x]);
  const r = spawnSync(AGENT_BIN, ['run', '--agent', url(agents.a), '--agent', url(agents.b), '--preset', 'bufferbloat', ...sets, '--json', '-'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  const result = JSON.parse(r.stdout);
  const s = result.steps[0].summary;
  expect(s.phases.map((p: { phase: string }) => p.phase)).toEqual(['idle', 'download', 'upload', 'both']);
  const file = join(scratch, 'bufferbloat.json');
  writeFileSync(file, r.stdout);

  await page.goto(`${agents.a.origin}/`);
  await page.getByTestId('import').setInputFiles(file);
  const figs = await cardFigures(page);
  checkAgainst(figs, s);
  expect(checkAgainstSamples(figs, result.steps[0])).toBe(17);
  // The CLI's per-phase table (on stderr with --json -) prints the card's texts.
  const text = (k: string) => figs.find((f) => f.key === k)!.text;
  const rows = r.stderr.split('\n');
  for (const ph of ['idle', 'download', 'upload', 'both']) {
    const row = rows.find((l) => l.startsWith(`${ph} `));
    expect(row, `${ph} row in:\n${r.stderr}`).toBeTruthy();
    // `none (±U)` is one cell: its space kept out of the split.
    const cells = row!.trim().replace(/none \(/g, 'none(').split(/\s+/);
    // phase, down, up, RTT p50, p90, p99, added, up p50, down p50, ...
    expect(cells[7], `${ph} up`).toBe(text(`${ph}.up.median`));
    expect(cells[8], `${ph} down`).toBe(text(`${ph}.down.median`));
    if (ph === 'idle') expect(cells[3]).toBe(text('idle.rtt.median'));
    else expect(cells[6]).toBe(['median', 'p90', 'p99'].map((q) => text(`${ph}.added_rtt.${q}`).replace('none (', 'none(')).join('/'));
    if (ph === 'download') expect(cells[1]).toBe(text('download.down'));
    if (ph === 'upload') expect(cells[2]).toBe(text('upload.up'));
  }
  // The verdict: the CLI's first line of the step is the page's sentence,
  // its times by the one rule (µs below 10 ms, ms from it), us in the terminal.
  const verdict = rows.slice(0, rows.findIndex((l) => l.startsWith('phase '))).pop()!;
  expect(verdict, r.stderr).toMatch(/^Grade (A\+|[A-DF]): /);
  // No time under 10 ms written in ms ("±0.0009 ms", "4.10 ms" before).
  expect(verdict).not.toMatch(/(^|[^\d.])\d(\.\d+)? ms\b/);
  await expect(page.getByTestId('lul-verdict-text')).toHaveText(verdict.replace(/(\d) us\b/g, '$1 µs'));
  // The same clock line, microseconds written µs on the page and us in the terminal.
  const clock = rows.find((l) => l.startsWith('times in ms; '))!.slice('times in ms; '.length);
  await expect(page.getByTestId('lul-clock')).toHaveText(clock.replace(/ us\b/g, ' µs'));
  if (clock.includes(' us')) await expect(page.getByTestId('lul-clock')).not.toContainText(' us');
  await expect(page.getByTestId('lul-lanes')).toHaveAttribute('data-probes', String(s.probes_down.received));
});

// A bulk test with probe_ms: tcp_stream (its streams' own rate), and
// udp_stream paced for a time (the probe flow on a socket of its own).
for (const [kind, fill] of [
  ['tcp_stream', {}],
  // 1400-byte datagrams every 560 us (20 Mbit/s) for 1 s.
  ['udp_stream', { 'wait-us': '560', duration: '1' }],
] as const) {
  test(`a ${kind} with probe_ms shows the latency under its own load: card = the driving side's probe summary, lanes of its probes`, async ({ page, agents }) => {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(agents.url());
    await page.waitForFunction(() => document.body.dataset.ready === '1');
    await page.getByTestId('kind').selectOption(kind);
    await page.getByText('more options').click();
    await page.getByTestId('probe-ms').fill('5');
    if ('duration' in fill) await page.locator('input[type=radio][value=duration]').check();
    for (const [id, v] of Object.entries(fill)) await page.getByTestId(id).fill(v);
    await page.getByTestId('run').click();
    await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout: 30_000 });
    await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
    await expect(page.getByTestId('step-error')).toHaveCount(0);
    await expect(page.getByTestId('probe-title')).toHaveText('Latency under this load (probes every 5 ms)');
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
    const result = JSON.parse(readFileSync((await json.path())!, 'utf8'));
    const step = result.steps[0];
    expect(step.params.probe_ms).toBe(5);
    const probe = step.sides.client.probe;
    expect(probe.phases.map((p: { phase: string }) => p.phase)).toEqual(['idle', 'upload']);
    // Throughput 1 (upload), idle RTT 3, added RTT 3, one-way 2 + 2 + 2 added, loss 2.
    const figs = await cardFigures(page);
    checkAgainst(figs, probe, 15);
    expect(Number(figs.find((f) => f.key === 'upload.up')!.value)).toBeGreaterThan(0);
    // The probes' round trips are the step's rtt_ns samples (a series of
    // their own, stream 65535): the statistics table shows them first.
    const rtt = step.samples.filter((x: { kind: string; role: string }) => x.kind === 'rtt_ns' && x.role === 'client');
    expect(rtt.map((x: { stream: number }) => x.stream)).toEqual([probe.samples_stream]);
    expect(rtt[0].values.length).toBe(probe.probes_down.received);
    // The lanes are drawn from those probes (not from the test's own series).
    await expect(page.getByTestId('lul-lanes')).toHaveAttribute('data-probes', String(probe.probes_down.received));
    expect(errors).toEqual([]);
  });
}
