// Ten series of a 4-stream chart both ways (issue 45, item 10): past the
// palette's six colours a series is dashed or dotted, and its legend marker
// says so, so no two series look the same.
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
