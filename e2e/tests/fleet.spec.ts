// The page reads a fleet (issue 25 part 5): a 1000-agent matrix file (the
// format a monitor serves at /matrix.json; written by ../fleet.ts, 999 000
// steps, about 120 MB) imported into the page a real agent serves, as
// lul.spec.ts imports a matrix file. The file is read off the page's
// thread; the heatmap is one canvas of 500 x 500 pixels (each pixel row = 2
// agents, the worst shown): the slow node's pixel wears the top of the
// scale, a failed pair the failure colour; search finds a host, worst first
// puts the failing node on the top row, and the drill-down lists one node's
// 999 pairs each way with the file's figures, in a list that holds only
// the rows in sight. The longest task while the
// file opens is measured and printed; the <= 200 ms target is the bench's
// (e2e/bench/fleet1000.bench.ts), this test checks what the page shows.
// A 70-agent file (read on the page) is a fleet inside the matrix view,
// whose pairs open their steps; and a real `meshperf monitor`'s
// /matrix.json over 65 real agents opens as a fleet with its figures, and
// so does its compact form by URL, where the monitor's /matrix sends it.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test, expect, type Locator, type Page } from '@playwright/test';
import { AGENT_BIN, startAgent, type Agent } from '../agents';
import { FAIL, FAIL_PEERS, SLOW, host, median, recordLongTasks, worstFirst, writeFleet } from '../fleet';

const N = 1000;
const shot = (name: string) => fileURLToPath(new URL(`../screenshots/${name}.png`, import.meta.url));

let agent: Agent;
let dir: string;
let file: string;
test.beforeAll(async () => {
  agent = await startAgent('A');
  dir = mkdtempSync(join(tmpdir(), 'meshperf-fleet-'));
  file = join(dir, 'matrix.json');
  writeFleet(file, N);
});
test.afterAll(async () => {
  await agent?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The canvas's colour [r, g, b, a] at the middle of bucket (row, column), and the page's colour of a failed pair. */
async function pixel(page: Page, row: number, col: number): Promise<number[]> {
  return page.getByTestId('fleet-heatmap').evaluate(
    (cv: HTMLCanvasElement, [r, c]) => {
      const cell = Number(cv.dataset.cell);
      const dpr = cv.width / cv.getBoundingClientRect().width;
      const [x, y] = [Number(cv.dataset.left) + (c + 0.5) * cell, Number(cv.dataset.top) + (r + 0.5) * cell];
      return [...cv.getContext('2d')!.getImageData(Math.floor(x * dpr), Math.floor(y * dpr), 1, 1).data];
    },
    [row, col],
  );
}
/** Every row of a drill-down list, scrolled through from the top: [peer, value or null, state], worst first. */
const listed = (list: Locator): Promise<[number, number | null, string][]> =>
  list.evaluate(async (box) => {
    const seen = new Map<number, [number, number | null, string]>();
    for (let y = 0; ; y += box.clientHeight / 2) {
      box.scrollTop = y;
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      for (const el of box.querySelectorAll<HTMLElement>('[data-testid=fleet-pair]')) {
        const d = el.dataset;
        seen.set(Number(d.rank), [Number(d.peer), d.value === '' ? null : Number(d.value), d.state!]);
      }
      if (y >= box.scrollHeight) break;
    }
    box.scrollTop = 0;
    return [...seen].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  });
const failColour = (page: Page) =>
  page.evaluate(() => {
    const c = document.createElement('canvas').getContext('2d', { willReadFrequently: true })!;
    c.fillStyle = getComputedStyle(document.querySelector('[data-testid=fleet-heatmap]')!).getPropertyValue('--bad').trim();
    c.fillRect(0, 0, 1, 1);
    return [...c.getImageData(0, 0, 1, 1).data];
  });

test('a 1000-agent matrix file: canvas heatmap with 2 agents per pixel row, search, worst first, one node\'s pairs both ways', async ({ page }, testInfo) => {
  test.setTimeout(180_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(recordLongTasks);
  await page.goto(`${agent.origin}/`);
  const t0 = await page.evaluate(() => performance.now());
  const opened = Date.now();
  await page.getByTestId('import').setInputFiles(file);
  const heatmap = page.getByTestId('fleet-heatmap');
  await expect(heatmap).toHaveAttribute('data-drawn', /^[1-9]/, { timeout: 120_000 });
  const took = Date.now() - opened;
  const long = (await page.evaluate(() => (window as unknown as { longTasks: { start: number; ms: number }[] }).longTasks)).filter((t) => t.start >= t0);
  const worst = Math.max(0, ...long.map((t) => t.ms));
  const line = `fleet of ${N} agents: the file opened in ${took} ms; ${long.length} long tasks, longest ${worst.toFixed(0)} ms`;
  console.log(line);
  await testInfo.attach('figures', { body: line, contentType: 'text/plain' });

  // What the file holds, and the note on what a pixel is.
  const fleet = page.getByTestId('fleet');
  await expect(fleet).toHaveAttribute('data-n', String(N));
  await expect(fleet).toHaveAttribute('data-k', '2');
  await expect(heatmap).toHaveAttribute('data-buckets', '500');
  await expect(page.getByTestId('fleet-note')).toHaveText(`${N} agents, ${N * (N - 1) - FAIL_PEERS.length} pairs measured, ${FAIL_PEERS.length} failed; each pixel row = 2 agents, worst shown`);
  await expect(page.getByTestId('fleet-panel').locator('h2')).toContainText(`udp_rr, ${N} agents, ${N * (N - 1)} steps, from matrix.json`);
  // No element per cell: the plot is one canvas.
  expect(await fleet.locator('button, li').count()).toBeLessThan(50);

  // The canvas: the slow node's row (737, with 736 in pixel row 368) against
  // peers 48 and 49 (column 24) holds the largest figure (449 us): the top
  // of the scale; node 421's failed pair with 100 the failure colour; an
  // ordinary pixel neither.
  const bad = await failColour(page);
  expect(await pixel(page, SLOW >> 1, 49 >> 1)).toEqual([253, 231, 37, 255]);
  expect(await pixel(page, FAIL >> 1, FAIL_PEERS[0] >> 1)).toEqual(bad);
  const plain = await pixel(page, 3, 5);
  expect(plain[3]).toBe(255);
  expect(plain).not.toEqual(bad);
  expect(plain.slice(0, 3)).not.toEqual([253, 231, 37]);
  // Hovering a pixel names the worst of its four pairs.
  await heatmap.scrollIntoViewIfNeeded();
  const box = (await heatmap.boundingBox())!;
  const cell = Number(await heatmap.getAttribute('data-cell'));
  await page.mouse.move(box.x + 44 + (49 >> 1) * cell + cell / 2, box.y + 18 + (SLOW >> 1) * cell + cell / 2);
  await expect(page.getByTestId('fleet-tip')).toHaveText(`worst of 4 pairs: J28 ${host(SLOW)} → X1 ${host(49)}: 449 µs`);
  await page.screenshot({ path: shot('fleet-heatmap'), fullPage: true });

  // Search by host: one hit, and it opens that node's pairs both ways.
  await page.getByTestId('fleet-search').fill(host(SLOW));
  await expect(page.getByTestId('fleet-hit')).toHaveCount(1);
  await page.getByTestId('fleet-hit').click();
  const node = page.getByTestId('fleet-node');
  await expect(node).toHaveAttribute('data-agent', String(SLOW));
  const out = node.getByTestId('fleet-out');
  const inn = node.getByTestId('fleet-in');
  await expect(out).toHaveAttribute('data-pairs', String(N - 1));
  await expect(inn).toHaveAttribute('data-pairs', String(N - 1));
  // Worst first: 449 us to (and from) peer 49, the first of the peers at 449.
  for (const list of [out, inn]) {
    const first = list.getByTestId('fleet-pair').first();
    await expect(first).toHaveAttribute('data-peer', '49');
    await expect(first).toHaveAttribute('data-value', '449');
  }
  // Every pair both ways, with the file's figures, scrolled through (the
  // box holds only the rows in sight).
  const [outs, ins] = [await listed(out), await listed(inn)];
  for (const [list, drove] of [
    [outs, true],
    [ins, false],
  ] as const) {
    expect(list.map(([peer]) => peer).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i).filter((i) => i !== SLOW));
    for (const [peer, v, state] of list) {
      expect(state).toBe('done');
      expect(v, drove ? `${SLOW} -> ${peer}` : `${peer} -> ${SLOW}`).toBe(drove ? median(SLOW, peer) : median(peer, SLOW));
    }
    const values = list.map(([, v]) => v as number);
    expect(values).toEqual([...values].sort((a, b) => b - a));
  }
  expect(await node.getByTestId('fleet-pair').count()).toBeLessThan(100);

  // The failing node: its three failed pairs lead its row.
  await page.getByTestId('fleet-search').fill(host(FAIL));
  await page.getByTestId('fleet-hit').click();
  await expect(node).toHaveAttribute('data-agent', String(FAIL));
  const failedFirst = out.getByTestId('fleet-pair');
  for (let i = 0; i < FAIL_PEERS.length; i++) {
    await expect(failedFirst.nth(i)).toHaveAttribute('data-state', 'failed');
    await expect(failedFirst.nth(i)).toHaveAttribute('data-peer', String(FAIL_PEERS[i]));
  }
  await expect(failedFirst.nth(FAIL_PEERS.length)).toHaveAttribute('data-state', 'done');

  // Worst first: the rows begin with the nodes the figures say are worst
  // (421 with its 3 failed pairs, then 100, 200, 300 with one each, then
  // the 449 us pairs), and the top-left pixel is now 421 -> 100, failed.
  expect(await pixel(page, 0, 0)).not.toEqual(bad);
  await page.getByTestId('fleet-sort').selectOption('worst');
  await expect(fleet).toHaveAttribute('data-sort', 'worst');
  const want = worstFirst(N).slice(0, 10);
  expect(want.slice(0, 4)).toEqual([FAIL, ...FAIL_PEERS]);
  await expect(page.getByTestId('fleet-row')).toHaveCount(10);
  expect(await page.getByTestId('fleet-row').evaluateAll((els) => els.map((e) => Number((e as HTMLElement).dataset.agent)))).toEqual(want);
  await expect.poll(() => pixel(page, 0, 0)).toEqual(bad);
  await page.screenshot({ path: shot('fleet-worst-first'), fullPage: true });

  // Only the figures the file has are offered (issue 45 item 24): its
  // steps carry rtt_us, so the median and p99, not throughput, hops, ...
  await expect(page.getByTestId('fleet-metric').locator('option')).toHaveText(['median round-trip time, µs', 'p99 round-trip time, µs']);
  expect(await page.getByTestId('fleet-metric').locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(['rtt_p50', 'rtt_p99']);
  // Another figure is read from the file the worker keeps: p99 is 3 x the median here.
  await page.getByTestId('fleet-metric').selectOption('rtt_p99');
  await expect(fleet).toHaveAttribute('data-metric', 'rtt_p99', { timeout: 60_000 });
  const next = out.getByTestId('fleet-pair').nth(FAIL_PEERS.length);
  const peer = Number(await next.getAttribute('data-peer'));
  await expect(next).toHaveAttribute('data-value', String(3 * median(FAIL, peer)!));
  await expect(page.getByTestId('fleet-note')).toContainText('each pixel row = 2 agents, worst shown');
  expect(errors).toEqual([]);
});

test('a 70-agent matrix opened on the page is a fleet too; a pair of the drill-down opens its step', async ({ page }) => {
  // 70 agents, 4830 steps (under a megabyte: read on the page as any file, kept in the runs).
  const small = join(dir, 'matrix70.json');
  writeFleet(small, 70, (c, s) => (c === 7 && s === 30 ? null : 40 + ((31 * c + 17 * s) % 20)));
  await page.goto(`${agent.origin}/`);
  await page.getByTestId('import').setInputFiles(small);
  const fleet = page.getByTestId('matrix-view').getByTestId('fleet');
  await expect(fleet).toHaveAttribute('data-n', '70');
  await expect(fleet).toHaveAttribute('data-k', '1');
  await expect(page.getByTestId('fleet-note')).toHaveText('70 agents, 4829 pairs measured, 1 failed; one pixel row per agent');
  await expect(page.getByTestId('matrix-failed')).toHaveText('1 pair failed');
  await expect(page.getByTestId('heatmap')).toHaveCount(0);
  await page.getByTestId('fleet-search').fill('node-0007');
  await page.getByTestId('fleet-hit').click();
  const first = page.getByTestId('fleet-out').getByTestId('fleet-pair').first();
  await expect(first).toHaveAttribute('data-state', 'failed');
  await expect(first).toHaveAttribute('data-peer', '30');
  // H drove, E1 served: the step's own error line.
  await first.getByRole('button').click();
  await expect(page.getByTestId('step-error')).toHaveText('H → E1: no answer within 1000 ms');
});

test('a real monitor\'s /matrix.json of 65 agents opens as a fleet with the file\'s figures, and its compact form by URL from its /matrix', async ({ page }) => {
  test.setTimeout(150_000);
  // 65 real agents (one beyond the small grid) and `meshperf monitor` over
  // them: its first run (4160 udp_rr pairs of 5 requests, ~20 s here), then
  // its /matrix.json (~19 MB, each step whole: read in the page's worker).
  const agents = await Promise.all(Array.from({ length: 65 }, (_, i) => startAgent(`m${i}`)));
  const mon = spawn(AGENT_BIN, ['monitor', ...agents.flatMap((a) => ['--agent', `${a.origin}/#token=${a.token}`]), '--kind', 'udp_rr', '--set', 'count=5', '--every', '10m', '--jitter', '0s', '--listen', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let said = '';
  mon.stdout!.on('data', (c) => (said += c));
  mon.stderr!.on('data', (c) => (said += c));
  try {
    await expect.poll(() => /metrics on (http:\/\/\S+)\/metrics/.exec(said)?.[1] ?? '', { timeout: 10_000 }).not.toBe('');
    const base = /metrics on (http:\/\/\S+)\/metrics/.exec(said)![1];
    let body = '';
    await expect
      .poll(
        async () => {
          const r = await fetch(`${base}/matrix.json`);
          body = r.ok ? await r.text() : '';
          return r.status;
        },
        { timeout: 100_000, intervals: [1000] },
      )
      .toBe(200);
    const file = join(dir, 'monitor-matrix.json');
    writeFileSync(file, body);
    const json = JSON.parse(body) as { steps: { pair: { client: number; server: number }; error?: string; summary: { rtt_us?: { median: number } } | null }[] };
    expect(json.steps).toHaveLength(65 * 64);
    const med = new Map(json.steps.map((s) => [`${s.pair.client}>${s.pair.server}`, s.error ? null : s.summary!.rtt_us!.median]));
    const measured = [...med.values()].filter((v) => v != null).length;

    await page.goto(`${agent.origin}/`);
    await page.getByTestId('import').setInputFiles(file);
    const fleet = page.getByTestId('fleet-panel').getByTestId('fleet');
    await expect(fleet).toHaveAttribute('data-n', '65', { timeout: 60_000 });
    await expect(page.getByTestId('fleet-note')).toHaveText(`65 agents, ${measured} pairs measured${measured < 4160 ? `, ${4160 - measured} failed` : ''}; one pixel row per agent`);
    // The largest median wears the top of the scale.
    const [largest] = [...med].filter(([, v]) => v != null).sort((a, b) => b[1]! - a[1]!)[0];
    const [top, topServer] = largest.split('>').map(Number);
    await expect(page.getByTestId('fleet-heatmap')).toHaveAttribute('data-drawn', /^[1-9]/);
    expect(await pixel(page, top, topServer)).toEqual([253, 231, 37, 255]);
    // A click on agent 5's row opens its pairs: the monitor's figures, both ways.
    const heatmap = page.getByTestId('fleet-heatmap');
    await heatmap.scrollIntoViewIfNeeded();
    const cell = Number(await heatmap.getAttribute('data-cell'));
    await heatmap.click({ position: { x: 44 + 20 * cell + cell / 2, y: 18 + 5 * cell + cell / 2 } });
    const node = page.getByTestId('fleet-node');
    await expect(node).toHaveAttribute('data-agent', '5');
    for (const [testid, drove] of [
      ['fleet-out', true],
      ['fleet-in', false],
    ] as const) {
      const list = await listed(node.getByTestId(testid));
      expect(list).toHaveLength(64);
      for (const [peer, v] of list) expect(v, `${testid} ${peer}`).toBe(med.get(drove ? `5>${peer}` : `${peer}>5`) ?? null);
    }

    // The compact form (`?form=compact`, format meshperf-cells): a cell per
    // pair with its figures (six digits), each agent with its endpoint.
    const compact = (await (await fetch(`${base}/matrix.json?form=compact`)).json()) as { format: string; metrics: string[]; agents: { endpoint: string }[]; cells: (number | string)[][] };
    expect(compact.format).toBe('meshperf-cells');
    expect(compact.agents.map((a) => a.endpoint)).toEqual(agents.map((a) => new URL(a.origin).host));
    expect(compact.cells).toHaveLength(65 * 64);
    const p50 = compact.metrics.indexOf('rtt_p50');
    const cells = new Map(compact.cells.map((c) => [`${c[0]}>${c[1]}`, typeof c[3] === 'string' ? null : (c[3 + p50] as number)]));
    for (const [k, v] of med) {
      if (v == null) expect(cells.get(k), k).toBeNull();
      else expect(cells.get(k), k).toBeCloseTo(v, 4 - Math.floor(Math.log10(v)));
    }
    const sizes = `the monitor's /matrix.json of 65 agents: ${body.length} bytes whole, ${JSON.stringify(compact).length} compact`;
    console.log(sizes);
    // Its /matrix sends a browser to the first agent's page with
    // #matrix=<the compact form's URL>: that page (another origin) reads it
    // as the monitor's CORS header allows, and shows the same fleet.
    await page.goto(`${base}/matrix`);
    expect(new URL(page.url()).origin).toBe(agents[0].origin);
    expect(decodeURIComponent(new URL(page.url()).hash)).toBe(`#matrix=${base}/matrix.json?form=compact`);
    const byUrl = page.getByTestId('fleet-panel').getByTestId('fleet');
    await expect(byUrl).toHaveAttribute('data-n', '65', { timeout: 60_000 });
    await expect(page.getByTestId('fleet-panel').locator('h2')).toContainText(`udp_rr, 65 agents, ${65 * 64} steps, from ${base}/matrix.json?form=compact`);
    // The compact file's figures, and only those, are offered (issue 45 item 24).
    await expect.poll(() => page.getByTestId('fleet-metric').locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value))).toEqual(compact.metrics);
    await expect(page.getByTestId('fleet-note')).toHaveText(`65 agents, ${measured} pairs measured${measured < 4160 ? `, ${4160 - measured} failed` : ''}; one pixel row per agent`);
    await expect(page.getByTestId('fleet-heatmap')).toHaveAttribute('data-drawn', /^[1-9]/);
    expect(await pixel(page, top, topServer)).toEqual([253, 231, 37, 255]);
    // Opened by link: no banner about a token, no empty pair form (issue 45, item 24).
    await expect(page.getByTestId('notice')).toHaveCount(0);
    await expect(page.getByTestId('standard-test')).toHaveCount(0);
    // Search by endpoint, and agent 9's pairs both ways: the compact figures.
    await page.getByTestId('fleet-search').fill(compact.agents[9].endpoint);
    await expect(page.getByTestId('fleet-hit')).toHaveCount(1);
    await page.getByTestId('fleet-hit').click();
    await expect(page.getByTestId('fleet-node')).toHaveAttribute('data-agent', '9');
    for (const [testid, drove] of [
      ['fleet-out', true],
      ['fleet-in', false],
    ] as const) {
      const list = await listed(page.getByTestId('fleet-node').getByTestId(testid));
      expect(list).toHaveLength(64);
      for (const [peer, v] of list) expect(v, `${testid} ${peer}`).toBe(cells.get(drove ? `9>${peer}` : `${peer}>9`) ?? null);
    }
  } finally {
    mon.kill('SIGTERM');
    await Promise.all(agents.map((a) => a.stop()));
  }
});
