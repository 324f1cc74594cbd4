// Pairing an agent that refuses the page's origin (issue 45, item 5): the page
// tells it apart from nothing listening, names the flag that fixes it, and
// the agent's record names the origin it refused.
import { test, expect } from '@playwright/test';
import { startAgent } from '../agents';

test('an agent refusing this origin is told apart from nothing listening, with the --allow-origin that fixes it', async ({ page }) => {
  const a = await startAgent('A');
  const b = await startAgent('B'); // allows only its own origin
  try {
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${a.origin}/#token=${a.token}&agent2=${b.host}:${b.port}&token2=${b.token}`);
    const card = page.getByTestId('agent-b');
    await expect(card).toHaveAttribute('data-state', 'error', { timeout: 15_000 });
    await expect(card).toContainText(`the agent answers but refused this page (origin ${a.origin})`);
    await expect(card).toContainText(`Start it with --allow-origin ${a.origin}`);
    await expect(card).not.toContainText('nothing answers');
    // The agent's record: the origin it refused, once (at most a line a second).
    await expect.poll(() => b.output(), { timeout: 5_000 }).toContain(`origin "${a.origin}"`);
    expect(b.output()).toContain('--allow-origin');

    // Nothing at that address any more.
    await b.stop();
    await card.getByTestId('reconnect-b').click();
    await expect(card).toContainText(`nothing answers at http://${b.host}:${b.port} (is the agent running, at this address and port?)`);
    await expect(card).not.toContainText('--allow-origin');

    // Not an address at all (issue 45, item 17): said, nothing tried.
    await page.getByTestId('host-b').fill('not a host');
    await page.getByTestId('connect').click();
    await expect(card).toContainText('not an address: expected host:port (e.g. 10.0.0.2:7800 or [::1]:7800), got "not a host"');
    await expect(card).toHaveAttribute('data-state', 'error');
    expect(errors).toEqual([]);
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
});
