// Cancel from the page in pair mode: a 60 s tcp_stream between two real
// agents, cancelled once its bytes flow. The page says cancelled, keeps
// the step as partial with the figures its samples gave, both
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

  // The page: the run is over, cancelled, and what ran until the cancel
  // stays on the page as the step's partial figures (issue 45 item 9, as
  // `meshperf run` keeps a step Ctrl-C cut short: protocol/src/partial.rs).
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: CANCEL_GRACE_S * 1000 + 10_000 });
  await expect(page.getByTestId('run')).toBeEnabled();
  await expect(page.locator('form span[aria-live=polite]', { hasText: 'cancelled' })).toHaveText('cancelled');
  const stepError = page.getByTestId('step-error');
  await expect(stepError).toHaveText(/^step 1: Cancel pressed at \d+% and cancelled on its agents: partial, the summary is what the samples received before the cancel give$/);
  await expect(page.getByTestId('error')).toBeHidden();
  expect(await progress()).toBeLessThan(1);
  for (const id of ['agent-a', 'agent-b']) await expect(page.getByTestId(id)).toHaveAttribute('data-state', 'ready');
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const file = JSON.parse(readFileSync((await dl.path())!, 'utf8'));
  const step = file.steps[0];
  expect(step.error).toBe((await stepError.textContent())!.slice('step 1: '.length));
  // The partial summary is the receiver's interval samples that came back:
  // their bytes, over their intervals (10 ms each by default).
  const iv = step.samples.filter((x: { role: string; kind: string }) => x.role === 'server' && x.kind === 'interval_bytes');
  const bytes = iv.flatMap((x: { values: number[] }) => x.values).reduce((a: number, b: number) => a + b, 0);
  const ticks = Math.max(...iv.map((x: { values: number[] }) => x.values.length));
  expect(bytes).toBeGreaterThan(0);
  expect(step.summary.partial).toBe(true);
  expect(step.summary.bytes).toBe(bytes);
  expect(step.summary.seconds).toBeCloseTo(ticks * 0.01, 9);
  expect(step.summary.bits_per_second).toBeCloseTo((bytes * 8) / (ticks * 0.01), 0);
  await expect(page.getByTestId('partial-figures')).toHaveText(
    new RegExp(`^Partial, what ran until the cancel: ${bytes.toLocaleString('en-US')} bytes in ${(ticks * 0.01).toFixed(2)} s, [0-9.]+ [kMG]?bit/s$`),
  );
  // The run is kept, marked partial, with its plot.
  await expect(page.getByTestId('result-label')).toHaveText(/ · partial$/);
  await expect(page.getByTestId('runs').locator('li')).toHaveCount(1);
  await expect(page.getByTestId('runs')).toContainText('partial');
  // Its plot draws every side's intervals that came back: the sender's may
  // run a few past the receiver's (114 against 111 once).
  const all = step.samples.filter((x: { kind: string }) => x.kind === 'interval_bytes');
  const drawn = Math.max(...all.map((x: { values: number[] }) => x.values.length));
  expect(drawn).toBeGreaterThanOrEqual(ticks);
  await expect(page.getByTestId('throughput-plot')).toHaveAttribute('data-points', String(drawn));
  // Ended by the agents' confirmation, not by the page giving up on them.
  expect(step.wall_seconds).toBeLessThan(CANCEL_GRACE_S);
  const CUT = /^(test cancelled|(send|recv|receive|read|write) failed: (Connection reset by peer|Broken pipe)( \(os error \d+\))?)$/;

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
  await expect(page.getByTestId('partial-figures')).toHaveCount(0);
  await expect(page.locator('form span[aria-live=polite]', { hasText: 'done' })).toHaveText('done');
  expect(errors).toEqual([]);
});
