// The walking skeleton (issue 2) end to end: two real agents, the page A
// serves, a socketsend/socketslurp transfer between them, and the bad inputs
// the issue lists. The UI contract is the data-testid hooks used below.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { test, expect } from './agents';

const shot = (name: string) => fileURLToPath(new URL(`./screenshots/${name}.png`, import.meta.url));

async function openPaired(page: Page, url: string) {
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
}

async function plan(page: Page, msgBytes: string, count: string) {
  await page.getByTestId('msg-bytes').fill(msgBytes);
  await page.getByTestId('count').fill(count);
  await page.getByTestId('run').click();
}

test('both agents pair and a 64 x 1M transfer reports exact bytes on both sides', async ({ page, agents }) => {
  // The page A serves has a Content-Security-Policy: nothing it does
  // (scripts, styles, wasm, WebSockets to both agents) may be refused.
  const refused: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy/i.test(m.text())) refused.push(m.text());
  });
  await openPaired(page, agents.url());
  for (const id of ['agent-a', 'agent-b']) {
    const card = page.getByTestId(id);
    await expect(card).toHaveAttribute('data-state', 'ready');
    await expect(card).toContainText(hostname());
  }
  await page.screenshot({ path: shot('skeleton-paired'), fullPage: true });

  await plan(page, '1M', '64');
  const client = page.getByTestId('summary-client');
  const server = page.getByTestId('summary-server');
  await expect(client).toBeVisible({ timeout: 30_000 });
  await expect(server).toBeVisible({ timeout: 30_000 });
  await expect(client).toHaveAttribute('data-bytes', '67108864');
  await expect(server).toHaveAttribute('data-bytes', '67108864');
  // Direction "send" (the default): B, the client, sends; A receives.
  await expect(client).toContainText(/sent 67108864 bytes in [0-9.]+ seconds to /);
  await expect(server).toContainText(/67108864 bytes in [0-9.]+ seconds/);
  // Socket buffers as the kernel gave them, and the options read back
  // (1 MiB reads: the receiver's SO_RCVLOWAT defaults to 128 KiB).
  await expect(server).toContainText(/SO_RCVBUF asked → got\s*default → [0-9,]+/);
  await expect(server).toContainText(/nodelay off, tos 0x00, \w+, rcvlowat 131,072/);

  const plot = page.getByTestId('throughput-plot');
  await expect(plot.locator('canvas').first()).toBeVisible();
  await expect
    .poll(async () => Number(await plot.getAttribute('data-points')), { message: 'plot data-points' })
    .toBeGreaterThan(0);
  // The statistics table: each quantity's n, min, max and mean as the
  // exported JSON's samples give them, to the 4 significant digits shown.
  // Each side's intervals add up to its 67108864 bytes; the throughput
  // figures take only the intervals every stream spent whole inside its own
  // data movement (from its first_seconds to its seconds, on the samples'
  // clock after the warm-up), in the unit the column heads.
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const step = JSON.parse(readFileSync((await dl.path())!, 'utf8')).steps[0];
  const series = (kind: string, role: string) => step.samples.filter((x: { kind: string; role: string }) => x.kind === kind && x.role === role).map((x: { values: number[] }) => x.values);
  const sig = (v: number) => (v === 0 ? '0' : String(Number(v.toPrecision(4))));
  const cell = (q: string, stat: string) => page.getByTestId('stats').locator(`td[data-stat=${stat}][data-quantity=${q}]`);
  const check = async (q: string, v: number[]) => {
    expect(v.length, q).toBeGreaterThan(0);
    await expect(cell(q, 'n')).toHaveText(String(v.length));
    await expect(cell(q, 'min')).toHaveText(sig(Math.min(...v)));
    await expect(cell(q, 'max')).toHaveText(sig(Math.max(...v)));
    await expect(cell(q, 'mean')).toHaveText(sig(v.reduce((a, b) => a + b, 0) / v.length));
  };
  for (const role of ['server', 'client']) {
    const streams: number[][] = series('interval_bytes', role);
    const len = Math.max(...streams.map((x) => x.length));
    const sum = Array.from({ length: len }, (_, i) => streams.reduce((a, x) => a + (x[i] ?? 0), 0));
    expect(sum.reduce((a, b) => a + b, 0), `${role}'s intervals`).toBe(67108864);
    const dt = step.summary.interval_ms / 1000;
    const side = step.sides[role];
    const omitted = Number(side.omitted_s ?? 0);
    const streamsOf: { seconds: number; first_seconds?: number }[] = side.streams;
    const to = Math.min(len, Math.floor((Math.min(...streamsOf.map((x) => x.seconds)) + omitted) / dt + 1e-6));
    const from = Math.min(Math.ceil((Math.max(...streamsOf.map((x) => x.first_seconds ?? 0)) + omitted) / dt - 1e-6), to);
    const whole = to - from >= 1 ? sum.slice(from, to) : sum.slice(0, Math.max(1, len - 1));
    const head = await page.getByTestId('stats').locator(`th[data-quantity=tput-${role}]`).textContent();
    const unit = /\((G|M|k|)bit\/s\)/.exec(head ?? '');
    expect(unit, `tput-${role}'s unit in "${head}"`).not.toBeNull();
    const div = { G: 1e9, M: 1e6, k: 1e3, '': 1 }[unit![1] as 'G' | 'M' | 'k' | ''];
    await check(`tput-${role}`, whole.map((b) => (b * 8) / dt / div));
  }
  await check('tcp-rtt', series('tcp_rtt_us', 'client').flat());
  await expect(page.getByTestId('error')).toBeHidden();
  await page.screenshot({ path: shot('skeleton-result'), fullPage: true });
  expect(refused).toEqual([]);
});

test('a wrong token for agent B says authentication failed', async ({ page, agents }) => {
  await page.goto(agents.url({ tokenB: '0'.repeat(32) }));
  await expect(page.getByTestId('agent-b')).toHaveAttribute('data-state', 'auth_failed');
  await expect(page.getByTestId('error')).toContainText(/authenticat/i);
  await expect(page.getByTestId('agent-a')).toHaveAttribute('data-state', 'ready');
  await page.screenshot({ path: shot('auth-failed'), fullPage: true });
});

// The one line each bad size gets, beside the field and (under the field's
// label) beside Run: what is wrong and what to do.
for (const [bad, why, line] of [
  ['0', 'zero', 'must be at least 1, got 0'],
  ['abc', 'not a number', '"abc" is not a size: use bytes or a suffix K, M, G (1K = 1024)'],
  ['1G', 'above the 64 MiB limit', "agent A would refuse it: must be between 1 and 67108864 (the agent's limit), got 1073741824"],
] as const) {
  test(`msg-bytes ${bad} (${why}) is refused before anything runs`, async ({ page, agents }) => {
    await openPaired(page, agents.url());
    await plan(page, bad, '64');
    // Said beside the field (an agent's limit too, before Run), not in a
    // banner, and once more beside Run under the field's own label.
    const error = page.getByTestId('why-msg-bytes');
    await expect(error).toHaveText(line);
    await expect(page.getByTestId('plan-problem')).toHaveText(`message size: ${line}`);
    await expect(page.getByTestId('error')).toBeHidden();
    await expect(page.getByTestId('msg-bytes')).toBeFocused();
    // Nothing moved: the page refused the plan before asking the agents
    // (they log every test they start), no side reports bytes, and both
    // agents stay ready.
    for (const a of [agents.a, agents.b]) expect(a.output(), `agent ${a.name}`).not.toMatch(/ test \d+ /);
    await expect(page.locator('[data-testid^=summary-][data-bytes]')).toHaveCount(0);
    await expect(page.getByTestId('agent-a')).toHaveAttribute('data-state', 'ready');
    await expect(page.getByTestId('agent-b')).toHaveAttribute('data-state', 'ready');
    await page.screenshot({ path: shot(`bad-msg-bytes-${bad}`), fullPage: true });
    // Fixed, the message goes, and the same pair runs it.
    await page.getByTestId('msg-bytes').fill('1M');
    await expect(error).toHaveCount(0);
    await expect(page.getByTestId('plan-problem')).toHaveCount(0);
    await plan(page, '1M', '4');
    await expect(page.getByTestId('summary-server')).toHaveAttribute('data-bytes', '4194304', { timeout: 30_000 });
  });
}

test('agent B killed mid-test: the page says so and agent A stays ready', async ({ page, agents }) => {
  await openPaired(page, agents.url());
  // 60000 x 1 MiB (under the agent's 64 GiB limit) takes many seconds on
  // loopback, so the transfer is still running when B dies.
  await plan(page, '1M', '60000');
  await page.waitForTimeout(1_500);
  await expect(page.locator('[data-testid=summary-client][data-bytes]'), 'transfer should still be running').toHaveCount(0);
  await agents.b.stop(true);
  const error = page.getByTestId('error');
  await expect(error).toBeVisible();
  await expect(error).toContainText(/agent/i);
  await expect(page.getByTestId('agent-a')).toHaveAttribute('data-state', 'ready');
  await page.screenshot({ path: shot('agent-b-killed'), fullPage: true });
});
