// The walking skeleton (issue 2) end to end: two real agents, the page A
// serves, a socketsend/socketslurp transfer between them, and the bad inputs
// the issue lists. The UI contract is the data-testid hooks used below.
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { test, expect } from './agents';

const shot = (name: string) => fileURLToPath(new URL(`./screenshots/${name}.png`, import.meta.url));

async function openPaired(page: Page, url: string) {
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
}

async function plan(page: Page, msgBytes: string, count: string) {
  await page.getByTestId('msg-bytes').fill(msgBytes);
  await page.getByTestId('count').fill(count);
  await page.getByTestId('run').click();
}

test('both agents pair and a 64 x 1M transfer reports exact bytes on both sides', async ({ page, agents }) => {
  // The page A serves has a Content-Security-Policy: nothing it does
  // (scripts, styles, wasm, WebSockets to both agents) may be refused.
  const refused: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) refused.push(m.text());
  });
  await openPaired(page, agents.url());
  for (const id of ['agent-a', 'agent-b']) {
    const card = page.getByTestId(id);
    await expect(card).toHaveAttribute('data-state', 'ready');
    await expect(card).toContainText(hostname());
  }
  await page.screenshot({ path: shot('skeleton-paired'), fullPage: true });

  await plan(page, '1M', '64');
  const client = page.getByTestId('summary-client');
  const server = page.getByTestId('summary-server');
  await expect(client).toBeVisible({ timeout: 30_000 });
  await expect(server).toBeVisible({ timeout: 30_000 });
  await expect(client).toHaveAttribute('data-bytes', '67108864');
  await expect(server).toHaveAttribute('data-bytes', '67108864');
  // Direction "send" (the default): B, the client, sends; A receives.
  await expect(client).toContainText(/sent 67108864 bytes in [0-9.]+ seconds to /);
  await expect(server).toContainText(/67108864 bytes in [0-9.]+ seconds/);
  // Socket buffers as the kernel gave them, and the options read back
  // (1 MiB reads: the receiver's SO_RCVLOWAT defaults to 128 KiB).
  await expect(server).toContainText(/SO_RCVBUF asked → got\s*default → [0-9,]+/);
  await expect(server).toContainText(/nodelay off, tos 0x00, \w+, rcvlowat 131,072/);

  const plot = page.getByTestId('throughput-plot');
  await expect(plot.locator('canvas').first()).toBeVisible();
  await expect
    .poll(async () => Number(await plot.getAttribute('data-points')), { message: 'plot data-points' })
    .toBeGreaterThan(0);
  await expect(page.getByTestId('stats')).toContainText(/\d/);
  await expect(page.getByTestId('error')).toBeHidden();
  await page.screenshot({ path: shot('skeleton-result'), fullPage: true });
  expect(refused).toEqual([]);
});

test('a wrong token for agent B says authentication failed', async ({ page, agents }) => {
  await page.goto(agents.url({ tokenB: '0'.repeat(32) }));
  await expect(page.getByTestId('agent-b')).toHaveAttribute('data-state', 'auth_failed');
  await expect(page.getByTestId('error')).toContainText(/authenticat/i);
  await expect(page.getByTestId('agent-a')).toHaveAttribute('data-state', 'ready');
  await page.screenshot({ path: shot('auth-failed'), fullPage: true });
});

for (const [bad, why] of [
  ['0', 'zero'],
  ['abc', 'not a number'],
  ['1G', 'above the 64 MiB limit'],
] as const) {
  test(`msg-bytes ${bad} (${why}) is refused before anything runs`, async ({ page, agents }) => {
    await openPaired(page, agents.url());
    await plan(page, bad, '64');
    // Said beside the field (an agent's limit too, before Run), not in a
    // banner, and once more beside Run under the field's own label.
    const error = page.getByTestId('why-msg-bytes');
    await expect(error).toBeVisible();
    await expect(page.getByTestId('plan-problem')).toHaveText(/^message size/);
    await expect(page.getByTestId('error')).toBeHidden();
    await expect(page.getByTestId('msg-bytes')).toBeFocused();
    // A number outside the limits is refused naming the limit it broke.
    if (bad === '0') await expect(error).toContainText(/at least 1\b|between 1\b/i);
    if (bad === '1G') await expect(error).toContainText(/limit/i);
    if (bad === '1G') await expect(error).toContainText(/64 ?MiB|67108864/);
    // Nothing moved: no side reports bytes, and both agents stay ready.
    await page.waitForTimeout(500);
    await expect(page.locator('[data-testid^=summary-][data-bytes]')).toHaveCount(0);
    await expect(page.getByTestId('agent-a')).toHaveAttribute('data-state', 'ready');
    await expect(page.getByTestId('agent-b')).toHaveAttribute('data-state', 'ready');
    await page.screenshot({ path: shot(`bad-msg-bytes-${bad}`), fullPage: true });
    // Fixed, the message goes.
    await page.getByTestId('msg-bytes').fill('1M');
    await expect(error).toHaveCount(0);
    await expect(page.getByTestId('plan-problem')).toHaveCount(0);
  });
}

test('agent B killed mid-test: the page says so and agent A stays ready', async ({ page, agents }) => {
  await openPaired(page, agents.url());
  // 60000 x 1 MiB (under the agent's 64 GiB limit) takes many seconds on
  // loopback, so the transfer is still running when B dies.
  await plan(page, '1M', '60000');
  await page.waitForTimeout(1_500);
  await expect(page.locator('[data-testid=summary-client][data-bytes]'), 'transfer should still be running').toHaveCount(0);
  await agents.b.stop(true);
  const error = page.getByTestId('error');
  await expect(error).toBeVisible();
  await expect(error).toContainText(/agent/i);
  await expect(page.getByTestId('agent-a')).toHaveAttribute('data-state', 'ready');
  await page.screenshot({ path: shot('agent-b-killed'), fullPage: true });
});
