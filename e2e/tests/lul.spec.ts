// Latency under load from the page's plan form (the kind's form is generated
// from the parameter table) against two real agents: the step runs, the
// existing views show it without errors, and the exported JSON carries the
// four phases the agents measured.
import { readFileSync } from 'node:fs';
import { test, expect } from '../agents';

test('latency_under_load runs from the plan form and shows in the existing views', async ({ page, agents }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('kind').selectOption('latency_under_load');
  await expect(page.getByTestId('probe-ms')).toHaveValue('5');
  for (const [id, v] of [['idle-s', '1'], ['download-s', '1'], ['upload-s', '1'], ['both-s', '1']]) {
    await page.getByTestId(id).fill(v);
  }
  await page.getByText('more options').click();
  await page.getByTestId('gap-s').fill('0.2');
  await page.getByTestId('streams').fill('1');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  await expect(page.getByTestId('error')).toBeHidden();

  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const result = JSON.parse(readFileSync((await json.path())!, 'utf8'));
  const s = result.steps[0].summary;
  expect(result.steps[0].kind).toBe('latency_under_load');
  expect(s.phases.map((p: { phase: string }) => p.phase)).toEqual(['idle', 'download', 'upload', 'both']);
  expect(s.complete).toBe(true);
  expect(s.phases[1].down_bits_per_second).toBeGreaterThan(0);
  // The probes' round trips are the step's rtt_ns samples, one per answered probe.
  const rtt = result.steps[0].samples.find((x: { kind: string }) => x.kind === 'rtt_ns');
  expect(rtt.values.length).toBe(s.probes_down.received);
  expect(errors).toEqual([]);
});
