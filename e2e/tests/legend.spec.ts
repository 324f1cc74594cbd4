// Ten series of a 4-stream chart both ways (issue 45, item 10): past the
// palette's six colours a series is dashed or dotted, and its legend marker
// says so, so no two series look the same.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test, expect } from '../agents';

test('4 streams both ways: the throughput chart\'s series are told apart by colour and line', async ({ page, agents }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_stream');
  await page.getByTestId('streams').fill('4');
  await page.getByTestId('direction').selectOption('both');
  await page.getByTestId('count').fill('64');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  const plot = page.getByTestId('throughput-plot');
  const markers = plot.locator('.u-legend .u-series .u-marker');
  // x, then each side's streams (both directions) and total: more than the palette's six colours.
  await expect(markers.nth(10)).toBeVisible();
  const looks = await markers.evaluateAll((ms) => ms.slice(1).map((m) => `${getComputedStyle(m).borderTopColor} ${getComputedStyle(m).borderTopStyle}`));
  expect(looks.length).toBeGreaterThan(6);
  expect(new Set(looks).size, looks.join('; ')).toBe(looks.length);
  expect(errors).toEqual([]);
});

// Issue 45, item 10: off the plot the legend reads the chart's last row: a
// stream that ended before it says when it ended instead of showing its own
// last rate beside the others' (and the total's) of a later time.
test('a stream that ended before the others reads "ended at T s" in the legend, not an old rate beside the total', async ({ page, agents, scratch }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_stream');
  await page.getByTestId('streams').fill('2');
  await page.locator('input[type=radio][value=duration]').check();
  await page.getByTestId('duration').fill('1');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('summary-server')).toHaveAttribute('data-bytes', /^[1-9]/, { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled();
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const r = JSON.parse(readFileSync((await dl.path())!, 'utf8'));
  // Stream 1 as if it had ended after its first two intervals (a stream
  // that finishes its share early); stream 0 runs on to the end.
  const step = r.steps[0];
  const iv = step.samples.filter((s: { kind: string; stream: number }) => s.kind === 'interval_bytes');
  const ms = Number(step.params.interval_ms ?? 10);
  for (const s of iv) if (s.stream === 1) s.values = s.values.slice(0, 2);
  for (const side of Object.values(step.sides) as { streams?: { seconds?: number }[] }[]) if (side?.streams?.[1]) side.streams[1].seconds = (2 * ms) / 1000;
  expect(Math.min(...iv.filter((s: { stream: number }) => s.stream === 0).map((s: { values: number[] }) => s.values.length))).toBeGreaterThan(10);
  const file = join(scratch, 'ended.json');
  writeFileSync(file, JSON.stringify(r));
  await page.getByTestId('import').setInputFiles(file);
  await expect(page.getByTestId('result')).toContainText('imported file');
  const values = page.getByTestId('throughput-plot').locator('.u-legend .u-series .u-value');
  const labels = page.getByTestId('throughput-plot').locator('.u-legend .u-series .u-label');
  const names = await labels.allTextContents();
  const at = (name: RegExp) => values.nth(names.findIndex((n) => name.test(n)));
  // Each side's stream 1 ended after its second interval.
  for (const [i, n] of names.entries()) {
    if (/stream 1$/.test(n)) await expect(values.nth(i), n).toHaveText(`ended at ${Number(((2 * ms) / 1000).toPrecision(3))} s`);
    else if (i > 0) await expect(values.nth(i), n).toHaveText(/^[0-9][0-9.,]* [kMG]?bit\/s$/);
  }
  expect(names.filter((n) => /stream 1$/.test(n)).length).toBeGreaterThan(0);
  await expect(at(/total$/)).toHaveText(/bit\/s$/);
  expect(errors).toEqual([]);
});
