// Compare runs (issue 45, items 7 and 20): the selected runs' summary figures
// side by side with their differences from the first, under labels that tell
// two runs apart, a run opened from a link and its original too; a share
// link's note belongs to the result it was made for.
import type { Page } from '@playwright/test';
import { test, expect } from '../agents';

async function runRr(page: Page, count: number) {
  await page.getByTestId('kind').selectOption('tcp_rr');
  await page.getByTestId('count').fill(String(count));
  await page.getByTestId('run').click();
  await expect(page.getByTestId('summary-client')).toHaveAttribute('data-bytes', String(count * 128), { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled();
}

test('two runs side by side with differences; a run from a link is labelled apart from its original', async ({ page, agents }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await runRr(page, 300);
  await runRr(page, 600);
  await page.getByTestId('view-compare').click();
  const table = page.getByTestId('compare-table');
  await expect(table).toHaveAttribute('data-runs', '2');
  const heads = table.getByTestId('compare-run');
  await expect(heads).toHaveCount(2);
  const [h1, h2] = await heads.allTextContents();
  expect(h1).toMatch(/^#\d+ tcp_rr · /);
  expect(h2).not.toBe(h1);
  // The figures a tcp_rr has, each run's value and the second's difference.
  for (const f of ['tps', 'rtt_median', 'rtt_p99', 'cpu_client', 'cpu_server']) {
    const row = table.locator(`tr[data-figure=${f}]`);
    await expect(row).toHaveCount(1);
    const cells = await row.locator('td').allTextContents();
    expect(cells, f).toHaveLength(3);
    expect(cells[0], f).not.toBe('–');
    expect(cells[2], f).toMatch(/^(same|[+−].+)$/);
  }
  // The transactions are counted exactly: 300 and 600.
  await expect(table).not.toContainText('retransmits');

  // Share the second run, then open its link in the same tab and add it.
  await page.getByTestId('share').click();
  const link = await page.getByTestId('permalink').inputValue();
  await expect(page.getByTestId('result').getByText(/copied|select and copy/)).toBeVisible();
  await page.evaluate((hash) => (location.hash = hash), new URL(link).hash);
  await expect(page.getByTestId('result')).toContainText('opened from a link');
  // The note and the link were the other result's.
  await expect(page.getByTestId('result').getByText(/copied|select and copy/)).toHaveCount(0);
  await expect(page.getByTestId('permalink')).toHaveCount(0);
  await page.getByTestId('add-compare').click();
  await expect(page.getByTestId('runs').locator('li')).toHaveCount(3);
  if (!(await table.isVisible())) await page.getByTestId('view-compare').click();
  await expect(table).toHaveAttribute('data-runs', '3');
  const labels = await heads.allTextContents();
  expect(new Set(labels).size).toBe(3);
  expect(labels[2]).toContain('opened from a link');
  // Without the run's number and where it came from, it reads as its original.
  expect(labels[2].replace(/^#\d+ /, '').replace(' · opened from a link', '')).toBe(h2.replace(/^#\d+ /, ''));
  // The link carries the second run's summary: the same figures, the same difference from the first.
  for (const f of ['tps', 'rtt_p99']) {
    const cells = await table.locator(`tr[data-figure=${f}] td`).allTextContents();
    expect(cells, f).toHaveLength(5);
    expect(cells[3], f).toBe(cells[1]);
    expect(cells[4], f).toBe(cells[2]);
  }
  expect(errors).toEqual([]);
});
