// The plan form's smaller matters from a new user's tour (issue 45): the
// count/duration choice is one Tab stop (item 26); choosing duration fills
// the seconds and a kind switch keeps them (item 14); by rate with the rate
// empty is refused beside the field, not run at the default wait (item 15);
// "messages" says it is per stream (item 21).
import { test, expect } from '../agents';

test('count or duration is one Tab stop, keeps its seconds across kinds; an empty rate is refused beside it', async ({ page, agents }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_stream');
  await expect(page.getByText('messages per stream')).toBeVisible();

  const count = page.getByTestId('bound-count');
  await expect(count).toBeChecked();
  await count.focus();
  // The arrow keys choose within the group; Tab leaves it.
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('bound-duration')).toBeChecked();
  await expect(page.getByTestId('duration')).toHaveValue('10');
  await expect(page.getByTestId('why-duration')).toHaveCount(0);
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid)).toBe('bound-duration');
  await page.keyboard.press('Tab');
  expect(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid)).not.toMatch(/^bound-/);

  // Another kind keeps the seconds and shows no error.
  await page.getByTestId('duration').fill('2');
  await page.getByTestId('kind').selectOption('udp_stream');
  await expect(page.getByTestId('bound-duration')).toBeChecked();
  await expect(page.getByTestId('duration')).toHaveValue('2');
  await expect(page.getByTestId('why-duration')).toHaveCount(0);

  // By rate, the rate left empty: refused beside the field, and Run runs nothing.
  await page.getByTestId('choice-rate').getByLabel('rate').check();
  await page.getByTestId('rate').fill('');
  await expect(page.getByTestId('why-rate')).toHaveText('give the rate, e.g. 20M (or choose wait)');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('rate')).toBeFocused();
  await expect(page.getByTestId('result')).toHaveCount(0);
  expect(errors).toEqual([]);
});
