// Every kind of result, and each multi-stream and multi-flow option, opens in
// the page (issue 45, item 0): a udp_stream of two streams once threw in the
// side summary (`formatBytes(undefined)`), so its permalink opened to an
// empty page and importing its file left the previous view. Each case is run
// by `meshperf run --json` between two real agents (short runs), then opened
// from its permalink (a full navigation) and imported from its file into a
// freshly loaded page; a live run from the page covers the form's path. Any
// page error or console error fails the test.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect, AGENT_BIN, type Agent } from '../agents';

const CASES: { name: string; kind: string; set: string[] }[] = [
  { name: 'tcp_stream', kind: 'tcp_stream', set: ['msg_bytes=64K', 'count=64'] },
  { name: 'tcp_stream streams=2', kind: 'tcp_stream', set: ['streams=2', 'duration_s=0.3'] },
  { name: 'tcp_stream direction=both', kind: 'tcp_stream', set: ['direction=both', 'duration_s=0.3'] },
  { name: 'tcp_stream streams=2 threads=2', kind: 'tcp_stream', set: ['streams=2', 'threads=2', 'duration_s=0.3'] },
  { name: 'tcp_rr', kind: 'tcp_rr', set: ['count=500'] },
  { name: 'tcp_rr flows=2 threads=2', kind: 'tcp_rr', set: ['flows=2', 'threads=2', 'count=500'] },
  { name: 'tcp_crr flows=2 threads=2', kind: 'tcp_crr', set: ['flows=2', 'threads=2', 'count=100'] },
  { name: 'udp_stream', kind: 'udp_stream', set: ['rate=100M', 'duration_s=0.3'] },
  { name: 'udp_stream streams=2', kind: 'udp_stream', set: ['streams=2', 'rate=400M', 'duration_s=0.3'] },
  { name: 'udp_stream direction=both', kind: 'udp_stream', set: ['direction=both', 'rate=100M', 'duration_s=0.3'] },
  { name: 'udp_stream streams=2 threads=2 direction=both', kind: 'udp_stream', set: ['streams=2', 'threads=2', 'direction=both', 'rate=100M', 'duration_s=0.3'] },
  { name: 'udp_rr', kind: 'udp_rr', set: ['count=300'] },
  { name: 'unix_stream streams=2', kind: 'unix_stream', set: ['streams=2', 'msg_bytes=64K', 'count=64'] },
  { name: 'unix_rr', kind: 'unix_rr', set: ['count=300'] },
  {
    name: 'latency_under_load',
    kind: 'latency_under_load',
    set: ['idle_s=0.3', 'download_s=0.3', 'upload_s=0.3', 'both_s=0.3', 'gap_s=0.1', 'streams=2'],
  },
  { name: 'path', kind: 'path', set: [] },
];

/** Page errors and console errors, collected from the moment the page is made. */
function watch(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.stack ?? e}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}

/** The result shows its step: the head, a step's own view, no "cannot show" line, no error banner. */
async function shown(page: Page, what: string, kind: string) {
  await expect(page.getByTestId('result'), what).toHaveAttribute('data-steps', '1', { timeout: 20_000 });
  await expect(page.getByTestId('result'), what).toHaveAttribute('data-kind', kind);
  if (kind === 'path') await expect(page.getByTestId('path-view'), what).toBeVisible();
  else if (kind === 'latency_under_load') await expect(page.getByTestId('lul-card'), what).toBeVisible();
  else await expect(page.locator('[data-testid^="summary-"]').first(), what).toBeVisible();
  await expect(page.getByTestId('result-failed'), what).toHaveCount(0);
  await expect(page.getByTestId('error'), what).toBeHidden();
}

test('a result of every kind and multi-stream option opens from its permalink and from its file without a page error', async ({ agents, page, scratch }) => {
  test.setTimeout(180_000);
  const errors = watch(page);
  const dir = scratch;
  const url = (a: Agent) => `${a.origin}/#token=${a.token}`;
  const runs = CASES.map((c, i) => {
    const json = join(dir, `${i}.json`);
    const r = spawnSync(AGENT_BIN, ['run', '--agent', url(agents.a), '--agent', url(agents.b), '--kind', c.kind, ...c.set.flatMap((s) => ['--set', s]), '--json', json], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, `${c.name}: ${r.stderr}`).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const link = lines[lines.length - 1];
    expect(link, c.name).toContain('#r=');
    const step = JSON.parse(readFileSync(json, 'utf8')).steps[0];
    expect(step.error ?? null, c.name).toBeNull();
    return { ...c, json, link };
  });
  // The two streams of a udp_stream are in its file (the case the page once could not show).
  const udp2 = JSON.parse(readFileSync(runs.find((r) => r.name === 'udp_stream streams=2')!.json, 'utf8')).steps[0];
  expect(udp2.sides.client.streams ?? udp2.sides.server.streams).toHaveLength(2);

  for (const r of runs) {
    await page.goto('about:blank');
    await page.goto(r.link);
    await shown(page, `${r.name} from its permalink`, r.kind);
    expect(errors, `${r.name} from its permalink`).toEqual([]);

    await page.goto('about:blank');
    await page.goto(`${agents.a.origin}/`);
    await page.getByTestId('import').setInputFiles(r.json);
    await shown(page, `${r.name} imported`, r.kind);
    expect(errors, `${r.name} imported`).toEqual([]);
  }
});

test('udp_stream and tcp_stream with two streams both ways, run from the page, show without a page error', async ({ agents, page }) => {
  test.setTimeout(90_000);
  const errors = watch(page);
  await page.goto(agents.url());
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  for (const kind of ['udp_stream', 'tcp_stream']) {
    await page.getByTestId('kind').selectOption(kind);
    await page.getByRole('radio', { name: 'duration' }).check();
    await page.getByTestId('duration').fill('0.5');
    await page.getByTestId('streams').fill('2');
    await page.getByTestId('direction').selectOption('both');
    if (kind === 'udp_stream') {
      await page.getByRole('radio', { name: 'rate' }).check();
      await page.getByTestId('rate').fill('100M');
    }
    await page.getByTestId('run').click();
    await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
    await shown(page, `${kind} run from the page`, kind);
    await expect(page.getByTestId('step-error')).toHaveCount(0);
    expect(errors, `${kind} run from the page`).toEqual([]);
  }
  // tcp_stream both ways (issue 45, item 2): each direction's rate as its
  // receiver counted it, on that receiver's panel, and the sum said to be one.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const step = JSON.parse(readFileSync((await dl.path())!, 'utf8')).steps[0];
  const dd = (panel: string, label: string) => page.getByTestId(panel).locator('dt').filter({ hasText: new RegExp(`^${label}$`) }).locator('+ dd');
  const UNIT: Record<string, number> = { 'bit/s': 1, 'kbit/s': 1e3, 'Mbit/s': 1e6, 'Gbit/s': 1e9 };
  const shownRate = async (panel: string, label: string) => {
    const m = /^([\d.,]+) ([kMG]?bit\/s)/.exec((await dd(panel, label).textContent()) ?? '');
    expect(m, `${panel}: ${label}`).toBeTruthy();
    return Number(m![1].replace(/,/g, '')) * UNIT[m![2]];
  };
  for (const [panel, role, label] of [
    ['summary-server', 'server', 'rate received, driving agent to serving agent'],
    ['summary-client', 'client', 'rate received, serving agent to driving agent'],
  ] as const) {
    const side = step.sides[role];
    const want = (side.received_bytes * 8) / side.recv_seconds;
    const got = await shownRate(panel, label);
    expect(Math.abs(got / want - 1), `${label}: ${got} shown, ${want} in the file`).toBeLessThan(1e-3);
    await expect(dd(panel, 'rate, both directions summed')).toHaveCount(1);
    await expect(dd(panel, 'rate')).toHaveCount(0);
  }
});

test('a result the page cannot show says so in one line and keeps the export of its figures', async ({ agents, page, scratch }) => {
  const errors = watch(page);
  const dir = scratch;
  const good = join(dir, 'good.json');
  const r = spawnSync(AGENT_BIN, ['run', '--agent', `${agents.a.origin}/#token=${agents.a.token}`, '--kind', 'tcp_stream', '--set', 'count=16', '--json', good], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  // A file from some other tool or a later version: a side's streams that are
  // not objects. The page cannot draw it, and must say so rather than blank.
  const result = JSON.parse(readFileSync(good, 'utf8'));
  result.steps[0].sides.client.streams = [null, null];
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify(result));
  await page.goto(`${agents.a.origin}/`);
  await page.getByTestId('import').setInputFiles(bad);
  const failed = page.getByTestId('result-failed');
  await expect(failed).toBeVisible({ timeout: 20_000 });
  await expect(failed.locator('p').first()).toHaveText(/^This step cannot be shown \(.+\): its figures are below as the file has them, and in the JSON export above\.$/);
  // The figures stay reachable: the summary as the file has it, and the JSON export.
  await expect(failed.locator('pre')).toContainText(`"bytes": ${result.steps[0].sides.server.bytes}`);
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  expect(JSON.parse(readFileSync((await dl.path())!, 'utf8')).steps[0].sides.server.bytes).toBe(result.steps[0].sides.server.bytes);
  // Said on the page, not thrown at it (the boundary logs nothing as an uncaught error).
  expect(errors.filter((e) => e.startsWith('pageerror'))).toEqual([]);
});
