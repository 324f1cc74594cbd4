// Analysis in the browser (issue 5) against real agents: histograms re-binned
// from raw samples, runs kept in IndexedDB and overlaid, CSV/JSON/PNG exports,
// and a JSON export imported back to the same numbers.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { test, expect } from '../agents';

const shot = (name: string) => fileURLToPath(new URL(`../screenshots/${name}.png`, import.meta.url));

async function openPaired(page: Page, url: string) {
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
}

/** Runs one tcp_rr step of `count` transactions and waits for its result. */
async function runRr(page: Page, count: number) {
  await page.getByTestId('kind').selectOption('tcp_rr');
  await page.getByTestId('count').fill(String(count));
  await page.getByTestId('run').click();
  await expect(page.getByTestId('summary-client')).toHaveAttribute('data-bytes', String(count * 128), { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled();
}

const statN = (page: Page) => page.getByTestId('stats').locator('td[data-stat=n][data-quantity=rtt]');
const total = async (page: Page) => Number(await page.getByTestId('histogram').getAttribute('data-total'));

test('re-binning the RTT histogram changes the bars and keeps the counts summing to n', async ({ page, agents }) => {
  await openPaired(page, agents.url());
  await runRr(page, 2000);
  await expect(statN(page)).toHaveText('2000');
  // Units (issue 29 item 9): times in µs (or ms), no number followed by "us"
  // anywhere on the page; the requester's seed record under its own heading.
  await expect(page.getByTestId('stats').locator('th[data-quantity=rtt]')).toHaveText(/\((µs|ms)\)/);
  await expect(page.getByTestId('summary-client')).toContainText(/RTT median\s*[\d.,]+ (µs|ms)/);
  expect(await page.locator('body').innerText()).not.toMatch(/\d us\b/);
  const rec = page.getByTestId('seed-record-client');
  await expect(rec.locator('th').first()).toHaveText('response len bytes');
  await expect(rec.locator('td')).toHaveCount(11);
  await expect(rec.locator('td').nth(3)).toHaveText('2000');
  // The histogram is one of the step's views, a tab away.
  await page.getByTestId('view-hist').click();
  const hist = page.getByTestId('histogram');
  await expect(hist.locator('canvas').first()).toBeVisible();
  expect(await total(page)).toBe(2000);
  const bins0 = await hist.getAttribute('data-bins');
  const counts0 = await hist.getAttribute('data-counts');

  // Wider bins from 0: fewer samples fall past the last bin, the bars change.
  const w = Number(await page.getByTestId('bin-width').inputValue());
  await page.getByTestId('bin-width').fill(String(w * 4));
  await page.getByTestId('bin-low').fill('0');
  await expect(hist).not.toHaveAttribute('data-counts', counts0!);
  expect(await total(page)).toBe(2000);

  // A low limit above the median: at least half the samples are underflow.
  const median = Number(await page.getByTestId('stats').locator('td[data-stat=median][data-quantity=rtt]').textContent());
  await page.getByTestId('bin-low').fill(String(median * 1.01));
  await expect.poll(async () => Number((await page.getByTestId('underflow').textContent())!.replace(/\D/g, ''))).toBeGreaterThanOrEqual(1000);
  expect(await total(page)).toBe(2000);
  await page.getByTestId('bin-count').fill('7');
  await expect(hist).toHaveAttribute('data-bins', '7');
  expect(bins0).not.toBe('7');
  expect(await total(page)).toBe(2000);
  await page.screenshot({ path: shot('analysis-histogram'), fullPage: true });
});

test('two finished runs are kept and overlaid as two series; one can be removed', async ({ page, agents }) => {
  await openPaired(page, agents.url());
  await runRr(page, 500);
  await expect(page.getByTestId('runs').locator('li')).toHaveCount(1);
  await runRr(page, 800);
  await expect(page.getByTestId('runs').locator('li')).toHaveCount(2);
  const overlay = page.getByTestId('overlay');
  await expect(overlay).toHaveAttribute('data-series', '2');
  await expect(overlay.locator('.u-legend .u-series')).toHaveCount(3); // x + two runs
  await page.getByTestId('view-compare').click();
  await overlay.scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot('analysis-overlay'), fullPage: true });
  await page.getByTestId('remove-run').first().click();
  await expect(page.getByTestId('runs').locator('li')).toHaveCount(1);
  await expect(overlay).toHaveAttribute('data-series', '1');
});

test('CSV, JSON and PNG export download; the JSON imports back to the same numbers', async ({ page, agents, browser }, info) => {
  await openPaired(page, agents.url());
  await runRr(page, 1500);
  const median = await page.getByTestId('stats').locator('td[data-stat=median][data-quantity=rtt]').textContent();

  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
  expect(csv.suggestedFilename()).toMatch(/^meshperf-tcp_rr-\d{8}-\d{6}\.csv$/);
  const csvText = readFileSync(await csv.path(), 'utf8').trim().split('\n');
  expect(csvText[0]).toMatch(/^step;kind;repeat;.*count.*;error$/);
  expect(csvText).toHaveLength(2);
  expect(csvText[1].split(';').length).toBe(csvText[0].split(';').length);

  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const jsonPath = info.outputPath('run.json');
  await json.saveAs(jsonPath);
  const result = JSON.parse(readFileSync(jsonPath, 'utf8'));
  expect(result.format).toBe('meshperf-result');
  expect(result.steps[0].samples.find((s: { kind: string }) => s.kind === 'rtt_ns').values).toHaveLength(1500);
  // Nested statistics are CSV columns with dotted names, as `meshperf run --csv`.
  const [head, row] = csvText.map((l) => l.split(';'));
  // When the step started and its whole time, as in the JSON.
  expect(Number(row[head.indexOf('started_unix')])).toBe(result.steps[0].started_unix);
  expect(result.steps[0].started_unix).toBeGreaterThan(1.7e9);
  expect(Number(row[head.indexOf('wall_seconds')])).toBe(result.steps[0].wall_seconds);
  expect(result.steps[0].wall_seconds).toBeGreaterThan(0);
  for (const stat of ['n', 'median', 'p99', 'min', 'max', 'mean']) {
    const col = head.indexOf(`rtt_us.${stat}`);
    expect(col, `rtt_us.${stat} in ${csvText[0]}`).toBeGreaterThan(0);
    expect(Number(row[col])).toBe(result.steps[0].summary.rtt_us[stat]);
  }

  // One step: its raw samples as columns, and a result file of its own.
  const [stepCsv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-step-csv').click()]);
  const stepRows = readFileSync(await stepCsv.path(), 'utf8').trim().split('\n');
  const rttCol = stepRows[0].split(';').indexOf('client_rtt_ns_0');
  expect(rttCol).toBeGreaterThan(0);
  expect(stepRows).toHaveLength(1501);
  const rtts = result.steps[0].samples.find((s: { kind: string }) => s.kind === 'rtt_ns').values;
  expect(Number(stepRows[1].split(';')[rttCol])).toBe(rtts[0]);
  const [stepJson] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-step-json').click()]);
  const one = JSON.parse(readFileSync(await stepJson.path(), 'utf8'));
  expect(one.format).toBe('meshperf-result');
  expect(one.steps).toHaveLength(1);

  const [png] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-png').first().click()]);
  expect(png.suggestedFilename()).toMatch(/\.png$/);
  expect(readFileSync(await png.path()).subarray(1, 4).toString()).toBe('PNG');

  // A fresh browser with no agents at all: import the file, same numbers.
  const ctx = await browser.newContext();
  const fresh = await ctx.newPage();
  await fresh.goto(`${agents.a.origin}/`);
  await fresh.getByTestId('import').setInputFiles(jsonPath);
  await expect(statN(fresh)).toHaveText('1500');
  await expect(fresh.getByTestId('stats').locator('td[data-stat=median][data-quantity=rtt]')).toHaveText(median!);
  await expect(fresh.getByTestId('runs').locator('li')).toHaveCount(1);
  await fresh.screenshot({ path: shot('analysis-imported'), fullPage: true });
  await ctx.close();
});

test('a corrupt permalink shows a clear message, never a blank page', async ({ page, agents }) => {
  await page.goto(`${agents.a.origin}/#r=not-a-real-link`);
  await expect(page.getByTestId('error')).toContainText(/link/i);
  await expect(page.locator('h1')).toHaveText('meshperf');
  await page.screenshot({ path: shot('permalink-corrupt'), fullPage: true });
});

/** The page's computed colours: its background and text, a panel's background. */
const colours = (page: Page) =>
  page.evaluate(() => {
    const cs = (e: Element) => getComputedStyle(e);
    const panel = document.querySelector('.panel')!;
    return { bg: cs(document.documentElement).backgroundColor, fg: cs(document.body).color, panel: cs(panel).backgroundColor };
  });

/** Pixels of the histogram's canvas exactly of colour `rgb`. */
const inked = (page: Page, rgb: [number, number, number]) =>
  page
    .getByTestId('histogram')
    .locator('canvas')
    .first()
    .evaluate((c, [r, g, b]) => {
      const d = (c as HTMLCanvasElement).getContext('2d')!.getImageData(0, 0, (c as HTMLCanvasElement).width, (c as HTMLCanvasElement).height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i] === r && d[i + 1] === g && d[i + 2] === b && d[i + 3] === 255) n++;
      return n;
    }, rgb);

test('dark theme: the page and its plots take the dark palette, kept across a reload; light and auto as chosen', async ({ page, agents }) => {
  await page.emulateMedia({ colorScheme: 'light' });
  await openPaired(page, agents.url());
  await runRr(page, 300);
  // app.css: light --bg #fbfbfa, --fg #1d1f21, --panel #ffffff; dark #16181b, #e4e6e8, #1e2125.
  const light = { bg: 'rgb(251, 251, 250)', fg: 'rgb(29, 31, 33)', panel: 'rgb(255, 255, 255)' };
  const dark = { bg: 'rgb(22, 24, 27)', fg: 'rgb(228, 230, 232)', panel: 'rgb(30, 33, 37)' };
  expect(await colours(page)).toEqual(light);
  await page.getByTestId('view-hist').click();
  // The histogram's bars in the light palette's first series colour (#1766c2), none in the dark one's (#5aa2f0).
  const [lightSeries, darkSeries]: [number, number, number][] = [[23, 102, 194], [90, 162, 240]];
  expect(await inked(page, lightSeries)).toBeGreaterThan(0);
  expect(await inked(page, darkSeries)).toBe(0);
  await page.getByTestId('theme').selectOption('dark');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await expect.poll(() => colours(page)).toEqual(dark);
  // The plot is drawn again in the dark palette.
  await expect.poll(() => inked(page, darkSeries)).toBeGreaterThan(0);
  expect(await inked(page, lightSeries)).toBe(0);
  await page.screenshot({ path: shot('analysis-dark'), fullPage: true });
  // Remembered: a reload opens dark although the system is light.
  await page.reload();
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await expect(page.getByTestId('theme')).toHaveValue('dark');
  expect(await colours(page)).toEqual(dark);
  // Light as chosen although the system is dark; auto follows the system.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.getByTestId('theme').selectOption('light');
  await expect.poll(() => colours(page)).toEqual(light);
  await page.getByTestId('theme').selectOption('auto');
  await expect(page.locator('html')).not.toHaveAttribute('data-theme', /./);
  await expect.poll(() => colours(page)).toEqual(dark);
  await page.emulateMedia({ colorScheme: 'light' });
  await expect.poll(() => colours(page)).toEqual(light);
});
