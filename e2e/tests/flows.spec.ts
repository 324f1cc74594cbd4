// tcp_rr with many flows from the page (issue 21 part 6) against real agents:
// the flows field goes into the plan, both agents run the connections, and
// each side's summary shows how the transactions spread over the flows, the
// same figures the exported result carries.
import { readFileSync } from 'node:fs';
import { test, expect } from '../agents';

test('tcp_rr with 16 flows: each side shows its flows, threads and per-flow spread, as the result has them', async ({ page, agents }) => {
  test.setTimeout(60_000);
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_rr');
  await page.getByTestId('count').fill('1600');
  await page.getByTestId('flows').fill('16');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('step-error')).toHaveCount(0);

  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const step = JSON.parse(readFileSync((await dl.path())!, 'utf8')).steps[0];
  expect(step.params.flows).toBe(16);
  for (const role of ['client', 'server'] as const) {
    // The requester's summary (client) and the responder's (server): both
    // count each flow's transactions.
    const s = step.sides[role];
    const card = page.getByTestId(`summary-${role}`);
    const row = card.locator('dt', { hasText: /^flows$/ }).locator('xpath=following-sibling::dd[1]');
    const f = s.flows;
    // Every one of the 1600 transactions, each flow its share of 100.
    expect(f.count).toBe(16);
    expect(f.per_flow).toHaveLength(16);
    expect(f.per_flow.reduce((a: number, b: number) => a + b, 0)).toBe(1600);
    expect([f.min, f.median, f.max]).toEqual([100, 100, 100]);
    const words = `16 flows on ${f.threads} thread${f.threads === 1 ? '' : 's'}, transactions per flow 100 / 100 / 100 (min / median / max)`;
    await expect(row).toHaveText(role === 'client' ? new RegExp(`^${words.replace(/[()/]/g, '\\$&')}; per flow per second [\\d.,]+ / [\\d.,]+ / [\\d.,]+$`) : words);
  }
});
