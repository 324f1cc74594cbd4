// Cancel from the page in pair mode: a 60 s tcp_stream between two real
// agents, cancelled once its bytes flow. The page says cancelled, both
// agents stop (in their own logs, after the click and before the page's
// 15 s wait for an unconfirmed cancel runs out, let alone the test's end),
// at least one for the cancel itself (the other may first see its peer
// close the data connection: once in 9 runs at a load of 12), and the same
// pair serves the next test at once.
import { readFileSync } from 'node:fs';
import { test, expect, type Agent } from '../agents';

/** How long the page waits for agents to confirm a cancel (web/src/lib/run/drive.ts, CANCEL_GRACE_MS). */
const CANCEL_GRACE_S = 15;

/** The agent's log line for the end of test `id`: when (ms since the epoch) and after how long it ran. */
function ended(a: Agent, role: string): { at: number; after: number; why: string } | null {
  const m = new RegExp(`^(\\S+) session \\d+ test \\d+ step 0 tcp_stream ${role} ended after ([0-9.]+) s: (.*)$`, 'm').exec(a.output());
  return m ? { at: Date.parse(m[1]), after: Number(m[2]), why: m[3] } : null;
}

test('Cancel in pair mode stops a 60 s test on both agents at once, and they serve the next test', async ({ page, agents }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('tcp_stream');
  await page.locator('input[type=radio][value=duration]').check();
  await page.getByTestId('duration').fill('60');
  await page.getByTestId('run').click();
  // Running: both agents started the test and the page has heard of its progress.
  await expect.poll(() => /tcp_stream driving started/.test(agents.b.output()) && /tcp_stream serving started/.test(agents.a.output())).toBe(true);
  const progress = () => page.getByTestId('progress').evaluate((e) => (e as HTMLProgressElement).value);
  await expect.poll(progress).toBeGreaterThan(0);
  expect(ended(agents.a, 'serving')).toBeNull();
  const clicked = Date.now();
  await page.getByTestId('cancel').click();

  // The page: the run is over, cancelled, each agent's own word in the step's error.
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: CANCEL_GRACE_S * 1000 + 10_000 });
  await expect(page.getByTestId('run')).toBeEnabled();
  await expect(page.locator('form span[aria-live=polite]', { hasText: 'cancelled' })).toHaveText('cancelled');
  // Each agent's reason, in the order their replies came: the cancel, or,
  // for an agent whose peer acted on it first and closed the data
  // connection under it, that connection's failure (a reset, a broken
  // pipe); at least one of them had the cancel itself.
  const label = (a: Agent) => `${a.host}:${a.port}`;
  const CUT = /^(test cancelled|(send|recv|receive|read|write) failed: (Connection reset by peer|Broken pipe)( \(os error \d+\))?)$/;
  const stepError = page.getByTestId('step-error');
  await expect(stepError).toHaveText(/^step 1: /);
  const why = (await stepError.textContent())!.slice('step 1: '.length);
  const parts = why.split('; ').map((p) => /^agent ([AB]) \(([^)]+)\): (.*)$/.exec(p));
  expect(parts.map((m) => m && [m[1], m[2]]).sort(), why).toEqual([['A', label(agents.a)], ['B', label(agents.b)]]);
  for (const m of parts) expect(m![3], why).toMatch(CUT);
  expect(parts.some((m) => m![3] === 'test cancelled'), why).toBe(true);
  await expect(page.getByTestId('error')).toBeHidden();
  expect(await progress()).toBeLessThan(1);
  for (const id of ['agent-a', 'agent-b']) await expect(page.getByTestId(id)).toHaveAttribute('data-state', 'ready');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const step = JSON.parse(readFileSync((await dl.path())!, 'utf8')).steps[0];
  expect(step.error).toBe(why);
  expect(step.summary).toBeNull();
  // Ended by the agents' confirmation, not by the page giving up on them.
  expect(step.wall_seconds).toBeLessThan(CANCEL_GRACE_S);

  // The agents: each stopped the test because of the cancel, after the
  // click (so the cancel, not anything before it, ended it) and before the
  // page's grace would have run out.
  let cancelled = 0;
  for (const [a, role] of [[agents.a, 'serving'], [agents.b, 'driving']] as const) {
    await expect.poll(() => ended(a, role), { message: `agent ${a.name}'s end line` }).not.toBeNull();
    const e = ended(a, role)!;
    const m = /^failed \(([a-z_]+)\): (.*)$/.exec(e.why);
    expect(m?.[2], `agent ${a.name}: ${e.why}`).toMatch(CUT);
    if (m![1] === 'cancelled') cancelled++;
    expect(e.at, `agent ${a.name} ended at ${new Date(e.at).toISOString()}, the click was at ${new Date(clicked).toISOString()}`).toBeGreaterThanOrEqual(clicked);
    expect(e.after, a.name).toBeLessThan(60);
    expect((e.at - clicked) / 1000, a.name).toBeLessThan(CANCEL_GRACE_S);
  }
  expect(cancelled, 'agents that stopped for the cancel itself').toBeGreaterThan(0);

  // The same pair serves the next test at once: 8 x 1 MiB, exact on both sides.
  await page.locator('input[type=radio][value=count]').check();
  await page.getByTestId('msg-bytes').fill('1M');
  await page.getByTestId('count').fill('8');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('summary-server')).toHaveAttribute('data-bytes', '8388608', { timeout: 30_000 });
  await expect(page.getByTestId('summary-client')).toHaveAttribute('data-bytes', '8388608');
  await expect(page.getByTestId('cancel')).toBeDisabled();
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  await expect(page.locator('form span[aria-live=polite]', { hasText: 'done' })).toHaveText('done');
  expect(errors).toEqual([]);
});
