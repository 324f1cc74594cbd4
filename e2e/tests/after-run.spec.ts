// After a run, at 1366 x 768 (issue 29, item 10): the page brings the result
// into view; an agent killed mid-test leaves "failed" with the progress where
// the test stopped (not 100%); the banner that named it goes once the agent
// is back.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test, expect, AGENT_BIN } from '../agents';

test('the result comes into view; an agent killed mid-test shows failed where it stopped; its banner goes once it is back', async ({ page, agents }) => {
  test.setTimeout(90_000);
  await page.setViewportSize({ width: 1366, height: 768 });
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_stream');
  await page.getByRole('radio', { name: 'duration' }).check();
  await page.getByTestId('duration').fill('1');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  // The result's title is on screen, near the top, without scrolling by hand.
  const title = page.getByTestId('result-label');
  await expect(title).toBeInViewport();
  expect((await title.boundingBox())!.y).toBeLessThan(768 / 3);
  await expect(page.getByTestId('progress')).toHaveJSProperty('value', 1);
  // What it measured against the links (the line `meshperf run` prints):
  // both agents on loopback, each side's interface in its summary.
  await expect(page.getByTestId('link-line')).toHaveText("Over loopback at both agents: no link limits it; this is what the hosts' CPUs and kernels move.");
  const mtu = readFileSync('/sys/class/net/lo/mtu', 'utf8').trim();
  for (const role of ['client', 'server']) {
    await expect(page.getByTestId(`summary-${role}`).locator('dt:text-is("link") + dd')).toHaveText(`lo, MTU ${mtu}`);
  }

  // A longer test; B is killed about a third of the way in.
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.getByTestId('duration').fill('6');
  await page.getByTestId('run').click();
  const bar = () => page.getByTestId('progress').evaluate((p) => (p as HTMLProgressElement).value);
  let before = 0;
  await expect.poll(async () => (before = await bar()), { timeout: 15_000 }).toBeGreaterThan(0.25);
  const killed = Date.now();
  await agents.b.stop(true);
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  const after = (Date.now() - killed) / 1000;
  // Beside Run: "failed", and the bar where the test stopped: not before
  // where it was when B was killed, and no further than the 6 s test could
  // have run until the page had learnt of it (this test's own clock, not a
  // share a busy host may overrun).
  await expect(page.locator('form [aria-live=polite]')).toHaveText('failed');
  const stopped = await bar();
  expect(stopped).toBeGreaterThanOrEqual(before);
  expect(stopped, `${after} s from the kill to the failure`).toBeLessThanOrEqual(Math.min(before + after / 6 + 0.02, 0.999));
  const banner = page.getByTestId('error');
  await expect(banner).toContainText('agent B');

  // B comes back at the same address with the same token; once it is
  // connected again, the banner about it goes (the step keeps its error).
  const back = spawn(AGENT_BIN, ['agent', '--listen', `${agents.b.host}:${agents.b.port}`, '--allow-origin', agents.a.origin], {
    env: { ...process.env, MESHPERF_TOKEN: agents.b.token },
    stdio: 'ignore',
  });
  try {
    await expect(async () => {
      await page.getByTestId('connect').click();
      await page.waitForFunction(() => document.body.dataset.ready === '1', null, { timeout: 2_000 });
    }).toPass({ timeout: 20_000 });
    await expect(banner).toBeHidden();
    await expect(page.getByTestId('step-error')).toBeVisible();
  } finally {
    back.kill('SIGKILL');
  }
});
