// The latency lane's scale (issue 45, item 11): one probe far above the rest
// (a start-up spike) does not flatten every other; the scale ends above the
// 99.5th percentile and the probes above it are counted in the caption.
import { readFileSync, writeFileSync } from 'node:fs';
import { test, expect } from '../agents';

test('a spike in one probe leaves the latency lane scaled to the rest, and is said', async ({ page, agents }, info) => {
  test.setTimeout(90_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('standard-length').selectOption('quick');
  await page.getByTestId('standard-test').click();
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('lul-lanes').locator('canvas')).toHaveCount(3);
  const [d] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const r = JSON.parse(readFileSync(await d.path(), 'utf8'));
  // One answer arriving 50 ms late: a round trip far above every other.
  const step = r.steps[0];
  const at = Number(step.summary?.samples_stream ?? 0);
  const arrival = step.samples.find((s: { kind: string; role: string; stream: number }) => s.kind === 'arrival_ns' && s.role === 'client' && s.stream === at);
  const i = arrival.values.findIndex((v: number) => v > 0);
  arrival.values[i + 5] += 50e6;
  const file = info.outputPath('spike.json');
  writeFileSync(file, JSON.stringify(r));
  await page.getByTestId('import').setInputFiles(file);
  await expect(page.getByTestId('result')).toContainText('imported file');
  const lanes = page.getByTestId('lul-lanes');
  await expect(lanes).toHaveAttribute('data-off-scale', /^[1-9]\d*$/);
  await expect(lanes).toContainText(/The latency scale ends at [\d.]+ (µs|ms): \d+ values? above it \(the highest 5\d(\.\d+)? ms\) marked ▲ at its top\./);
  expect(errors).toEqual([]);
});
