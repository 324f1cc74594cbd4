// Advanced options from the plan form reach both agents and come back as the
// kernel applied them: TCP_MAXSEG read back on both ends, a payload choice
// carried in the step's parameters.
import { readFileSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { test, expect } from '../agents';

/** The paired page with a tcp_stream plan of `count` 1 MiB messages. */
async function openPlan(page: Page, url: string, count: number) {
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('msg-bytes').fill('1M');
  await page.getByTestId('count').fill(String(count));
}

test('mss 1000 and payload zeros from "more options" reach both agents and read back from the kernel', async ({ page, agents }) => {
  await openPlan(page, agents.url(), 16);
  await page.getByText('more options').click();
  await page.getByTestId('mss').fill('1000');
  await page.getByTestId('payload').selectOption('zeros');
  await page.getByTestId('run').click();

  for (const side of ['summary-client', 'summary-server']) {
    const s = page.getByTestId(side);
    await expect(s).toBeVisible({ timeout: 30_000 });
    await expect(s).toHaveAttribute('data-bytes', String(16 << 20));
    // Less the 12-byte timestamp option the connection negotiated.
    await expect(s).toContainText(/TCP segment size \(MSS\) asked → got\s*1000 B → (9[6-9]\d|1000) B/);
  }
  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const result = JSON.parse(readFileSync((await json.path())!, 'utf8'));
  expect(result.steps[0].params).toMatchObject({ mss: 1000, payload: 'zeros' });
  expect(result.steps[0].sides.server.mss).toBeLessThanOrEqual(1000);
  await expect(page.getByTestId('error')).toBeHidden();
});

test('a text parameter sweeps as a list: congestion control reno, then bbr, each read back from the kernel', async ({ page, agents }) => {
  await openPlan(page, agents.url(), 16);
  await page.getByTestId('add-axis').click();
  await page.getByTestId('axis-param-0').selectOption('congestion');
  await page.getByTestId('axis-0').getByLabel('values').fill('reno, bbr');
  await expect(page.getByTestId('step-count')).toHaveText('2 steps');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '2', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  const rows = page.getByTestId('steps').locator('tbody tr');
  await expect(rows).toHaveCount(2);
  for (const [i, cc] of [[0, 'reno'], [1, 'bbr']] as const) {
    await expect(rows.nth(i)).toContainText(`congestion=${cc}`);
    await rows.nth(i).getByRole('button').click();
    // Both ends report the algorithm their sockets ran with.
    for (const side of ['summary-client', 'summary-server'])
      await expect(page.getByTestId(side)).toContainText(new RegExp(`socket options.*\\b${cc}\\b`, 's'));
  }
});
