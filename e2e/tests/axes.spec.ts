// Plot axes (issue 45, item 23): a sweep over a whole-number parameter
// (streams) has whole-number ticks, never 1.2 or 1.4 streams; a histogram's
// first and last bars are drawn whole (the x scale leaves half a bin at each end).
import { test, expect } from '../agents';

test('a streams sweep ticks at whole streams; the histogram shows its edge bars whole', async ({ page, agents }) => {
  test.setTimeout(90_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_stream');
  // 1280 messages of the default 128 KiB (160 MiB): at loopback's 5-15
  // Gbit/s a step spans 9 to 27 intervals of 10 ms, enough for a histogram
  // of several bins (16 MiB spanned one or two, and its histogram one bin).
  await page.getByTestId('count').fill('1280');
  await page.getByTestId('add-axis').click();
  await page.getByTestId('axis-param-0').selectOption('streams');
  await page.getByTestId('axis-form-0').selectOption('list');
  await page.getByTestId('axis-list-0').fill('1, 2');
  await expect(page.getByTestId('step-count')).toHaveText('2 steps');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '2', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  const host = page.locator('[data-testid^=sweep-] .uplot-host').first();
  await expect(host).toHaveAttribute('data-x-ticks', /\d/);
  const ticks = (await host.getAttribute('data-x-ticks'))!.split(',').map(Number);
  expect(ticks.length).toBeGreaterThan(0);
  expect(ticks.filter((t) => !Number.isInteger(t)), ticks.join(',')).toEqual([]);

  // The histogram of the chosen step: the scale reaches past the first bin's left edge and the last one's right.
  await page.getByTestId('view-hist').click();
  const hist = page.getByTestId('histogram');
  const bins = Number(await hist.getAttribute('data-bins'));
  expect(bins).toBeGreaterThan(1);
  const low = Number(await page.getByTestId('bin-low').inputValue());
  const width = Number(await page.getByTestId('bin-width').inputValue());
  const plot = hist.locator('.uplot-host');
  await expect(plot).toHaveAttribute('data-x-min', /\d/);
  const [min, max] = [Number(await plot.getAttribute('data-x-min')), Number(await plot.getAttribute('data-x-max'))];
  const eps = width * 1e-6;
  expect(min, `x from ${min}, first bin from ${low}`).toBeLessThanOrEqual(low + eps);
  expect(max, `x to ${max}, last bin to ${low + bins * width}`).toBeGreaterThanOrEqual(low + bins * width - eps);
  expect(errors).toEqual([]);
});
