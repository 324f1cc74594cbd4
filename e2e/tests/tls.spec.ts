// TLS from the page (issue 10): two agents with --tls-self-signed, the page
// agent A serves over https, and WebSockets to both agents over wss (the
// scheme follows the page's own). Chromium is told to accept the
// certificates made at start, as a user would after checking the fp.
import type { Page } from '@playwright/test';
import { test as base, expect } from '@playwright/test';
import { startAgent, type Agent } from '../agents';

const test = base.extend<{ tls: { a: Agent; b: Agent } }>({
  tls: async ({}, use) => {
    const a = await startAgent('A', [], ['--tls-self-signed']);
    let b: Agent;
    try {
      b = await startAgent('B', [a.origin], ['--tls-self-signed']);
    } catch (e) {
      await a.stop();
      throw e;
    }
    await use({ a, b });
    await Promise.all([a.stop(), b.stop()]);
  },
});
test.use({ ignoreHTTPSErrors: true });

async function openPaired(page: Page, url: string) {
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
}

test('the https page of a TLS agent pairs two TLS agents over wss and runs a step', async ({ page, tls }) => {
  const { a, b } = tls;
  expect(a.origin).toMatch(/^https:\/\//);
  expect(a.fp).not.toEqual(b.fp);
  const sockets: string[] = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  await openPaired(page, `${a.origin}/#token=${a.token}&fp=${a.fp}&agent2=${b.host}:${b.port}&token2=${b.token}&fp2=${b.fp}`);
  for (const id of ['agent-a', 'agent-b']) {
    await expect(page.getByTestId(id)).toHaveAttribute('data-state', 'ready');
  }
  expect(sockets.sort()).toEqual([`wss://${a.host}:${a.port}/ws`, `wss://${b.host}:${b.port}/ws`].sort());

  await page.getByTestId('msg-bytes').fill('64K');
  await page.getByTestId('count').fill('100');
  await page.getByTestId('run').click();
  const client = page.getByTestId('summary-client');
  const server = page.getByTestId('summary-server');
  await expect(client).toHaveAttribute('data-bytes', '6553600', { timeout: 30_000 });
  await expect(server).toHaveAttribute('data-bytes', '6553600', { timeout: 30_000 });
  await expect(page.getByTestId('error')).toBeHidden();

  // Connect again from the form: the fragment keeps both fingerprints, so
  // the address bar is still a URL meshperf run can pin by.
  await page.getByTestId('connect').click();
  await expect(page.getByTestId('agent-b')).toHaveAttribute('data-state', 'ready');
  const hash = new URL(page.url()).hash;
  expect(hash).toContain(`fp=${a.fp}`);
  expect(hash).toContain(`fp2=${b.fp}`);
});

test('a TLS agent refuses the page over plain http with a one-line answer', async ({ page, tls }) => {
  const resp = await page.goto(`http://${tls.a.host}:${tls.a.port}/`);
  expect(resp?.status()).toBe(400);
  await expect(page.locator('body')).toContainText('this agent serves https and wss only');
});
