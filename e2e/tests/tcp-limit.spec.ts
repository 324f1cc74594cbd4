// What limited a tcp_stream (issue 43): the verdict from TCP_INFO
// (protocol/src/verdict/tcp.rs) first in the step's card, for a live run
// from the form and for a permalink `meshperf run` printed, in the same
// words the CLI prints; the TCP view of its series.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { test, expect, AGENT_BIN } from '../agents';

const SENTENCE = /^(Limited by (the network|the receiver's window|the sender's socket buffer|the application or the CPU|the rate asked for)|No verdict)/;
const LIMITS = ['network', 'receiver_window', 'send_buffer', 'application', 'rate'];

test('a live tcp_stream shows what limited it first in its card', async ({ page, agents }) => {
  test.setTimeout(60_000);
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_stream');
  await page.getByRole('radio', { name: 'duration' }).check();
  await page.getByTestId('duration').fill('1');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  const v = page.getByTestId('tcp-verdict');
  await expect(v).toHaveText(SENTENCE);
  expect(LIMITS).toContain(await v.getAttribute('data-limit'));
  // First: before the link line and the sides.
  const first = await page.locator('.step [data-testid]').first().getAttribute('data-testid');
  expect(first).toBe('tcp-verdict');
  // The TCP view: window, round trip, delivery rate and the limited
  // shares over the run's time, one point per interval.
  await page.getByTestId('view-tcp').click();
  const plots = page.getByTestId('tcp-plot');
  await expect(plots).toHaveCount(4);
  for (const p of await plots.all()) expect(Number(await p.getAttribute('data-points'))).toBeGreaterThan(10);
});

test('a tcp_stream permalink shows the sentence meshperf run printed', async ({ agents, browser }) => {
  test.setTimeout(60_000);
  const agentUrl = (a: typeof agents.a) => `${a.origin}/#token=${a.token}`;
  const out = execFileSync(AGENT_BIN, ['run', '--agent', agentUrl(agents.a), '--agent', agentUrl(agents.b), '--kind', 'tcp_stream', '--set', 'duration_s=1', '--web', `${agents.a.origin}/`], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  const lines = out.trim().split('\n');
  const said = lines.find((l) => SENTENCE.test(l));
  expect(said, out).toBeTruthy();
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(lines[lines.length - 1]);
  await expect(page.getByTestId('tcp-verdict')).toHaveText(said!, { timeout: 20_000 });
  await context.close();
});

test('a tcp_stream matrix cell says what limited its pair in its tooltip', async ({ page, agents, scratch }) => {
  test.setTimeout(90_000);
  const agentUrl = (a: typeof agents.a) => `${a.origin}/#token=${a.token}`;
  const file = join(scratch, 'matrix.json');
  execFileSync(AGENT_BIN, ['run', '--matrix', '--agent', agentUrl(agents.a), '--agent', agentUrl(agents.b), '--kind', 'tcp_stream', '--set', 'duration_s=1', '--json', file], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  await page.goto(`${agents.a.origin}/`);
  await page.getByTestId('import').setInputFiles(file);
  await expect(page.getByTestId('matrix-view')).toBeVisible();
  const cell = page.getByTestId('heatmap').locator('[data-testid=cell][data-row="0"][data-col="1"]');
  await expect(cell).toHaveAttribute('data-state', 'done');
  await cell.hover();
  await expect(page.getByTestId('heatmap-tip')).toContainText(/bit\/s\. (Limited by|No verdict)/);
});
