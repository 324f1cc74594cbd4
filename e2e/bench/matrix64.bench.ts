// 64 agents from one page (issue 11: "the page stays responsive while 64 x 63
// cells update"): 64 real agent processes on loopback, a tiny udp_rr matrix
// (4032 pairs) from the page while a PerformanceObserver records every long
// task; every pair ends in the heatmap and no task blocks the page long.
// About 40 s here (the 4032 pairs ~30 s), on a machine others share:
// `npm run bench` runs it (bench/matrix_page.mjs, section matrix_page,
// through playwright.bench.config.ts); npm test's config does not collect it.
import { test, expect, startAgent, type Agent } from '../agents';

const N = 64;
const COUNT = 5;
/** The longest task the page may run while the matrix updates (a frame is 16 ms; 200 ms is a visible stall). */
const LONGEST_MS = 200;

test('matrix of 64 agents: 4032 cells end in the canvas heatmap with no long task over 200 ms', async ({ page }, testInfo) => {
  test.setTimeout(240_000);
  const t0 = Date.now();
  const first = await startAgent('A');
  const list: Agent[] = [first];
  try {
    list.push(...(await Promise.all(Array.from({ length: N - 1 }, (_, i) => startAgent(`agent${i + 1}`, [first.origin])))));
    const started = Date.now() - t0;
    await page.goto(`${first.origin}/#mesh=${list.map((a) => `${a.host}:${a.port}@${a.token}`).join(',')}`);
    const rows = page.getByTestId('mesh-agent');
    await expect(rows).toHaveCount(N);
    await expect(page.locator('[data-testid=mesh-agent][data-state=ready]')).toHaveCount(N, { timeout: 30_000 });

    await page.evaluate(() => {
      const w = window as unknown as { longTasks: number[] };
      w.longTasks = [];
      new PerformanceObserver((l) => l.getEntries().forEach((e) => w.longTasks.push(e.duration))).observe({ type: 'longtask' });
    });
    await page.getByTestId('matrix-kind').selectOption('udp_rr');
    await page.locator('input[type=radio][value=count]').check();
    await page.getByTestId('count').fill(String(COUNT));
    const t1 = Date.now();
    await page.getByTestId('matrix-run').click();
    const heatmap = page.getByTestId('heatmap');
    await expect(heatmap).toHaveAttribute('data-n', String(N));
    // Mid-run the page answers: a hover over a cell shows its tooltip.
    await expect.poll(async () => Number(await heatmap.getAttribute('data-done')), { timeout: 60_000 }).toBeGreaterThan(500);
    const box = (await heatmap.boundingBox())!;
    await heatmap.hover({ position: { x: box.width - 5, y: 40 } });
    await expect(page.getByTestId('heatmap-tip')).toContainText(/→/);
    await expect(page.getByTestId('matrix-status')).toHaveAttribute('data-phase', 'done', { timeout: 180_000 });
    const ran = Date.now() - t1;
    await expect(heatmap).toHaveAttribute('data-done', String(N * (N - 1)));
    await expect(heatmap).toHaveAttribute('data-failed', '0');
    await expect(heatmap).toHaveAttribute('data-running', '0');
    const long = await page.evaluate(() => (window as unknown as { longTasks: number[] }).longTasks);
    const worst = Math.max(0, ...long);
    const line = `64 agents: started in ${started} ms; ${N * (N - 1)} pairs in ${ran} ms; ${long.length} long tasks, longest ${worst.toFixed(0)} ms`;
    console.log(line);
    await testInfo.attach('figures', { body: line, contentType: 'text/plain' });
    expect(worst, `long tasks (ms): ${long.map((d) => d.toFixed(0)).join(', ')}`).toBeLessThan(LONGEST_MS);
  } finally {
    await Promise.all(list.map((a) => a.stop()));
  }
});
