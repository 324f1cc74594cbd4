// Advanced options from the plan form reach both agents and come back as the
// kernel applied them: TCP_MAXSEG read back on both ends, a payload choice
// carried in the step's parameters.
import { readFileSync } from 'node:fs';
import type { Page } from '@playwright/test';
import { test, expect } from '../agents';

/** The paired page with a tcp_stream plan of `count` 1 MiB messages. */
async function openPlan(page: Page, url: string, count: number) {
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('msg-bytes').fill('1M');
  await page.getByTestId('count').fill(String(count));
}

/** Runs a 16 x 1 MiB tcp_stream plan swept over two values of `param` to its end. */
async function runSweep(page: Page, url: string, param: string, values: string) {
  await openPlan(page, url, 16);
  await page.getByTestId('add-axis').click();
  await page.getByTestId('axis-param-0').selectOption(param);
  await page.getByTestId('axis-0').getByLabel('values').fill(values);
  await expect(page.getByTestId('step-count')).toHaveText('2 steps');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '2', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
}

test('mss 1000, payload zeros and recv_count 8 from "more options" reach both agents and read back from the kernel', async ({ page, agents }) => {
  await openPlan(page, agents.url(), 16);
  await page.getByText('more options').click();
  await page.getByTestId('mss').fill('1000');
  await page.getByTestId('payload').selectOption('zeros');
  // socketslurp's own count: the receiver's 8 buffers of 1 MiB decide.
  await page.getByTestId('recv-count').fill('8');
  await page.getByTestId('run').click();

  for (const side of ['summary-client', 'summary-server']) {
    const s = page.getByTestId(side);
    await expect(s).toBeVisible({ timeout: 30_000 });
    await expect(s).toHaveAttribute('data-bytes', String(8 << 20));
    // Less the 12-byte timestamp option the connection negotiated.
    await expect(s).toContainText(/TCP segment size \(MSS\) asked → got\s*1000 B → (9[6-9]\d|1000) B/);
    await expect(s).toContainText(/receiver buffers \(recv_count\)\s*8, the receiver decided/);
  }
  // The receiving side (the serving agent) has the Perl seed's milliseconds per read.
  await expect(page.getByTestId('summary-server')).toContainText(/ms per read \/ per MiB\s*[\d.]+ \/ [\d.]+/);
  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const result = JSON.parse(readFileSync((await json.path())!, 'utf8'));
  expect(result.steps[0].params).toMatchObject({ mss: 1000, payload: 'zeros', recv_count: 8 });
  expect(result.steps[0].sides.client.limited_by).toBe('receiver');
  expect(result.steps[0].sides.server.mss).toBeLessThanOrEqual(1000);
  // tcp_bw_mon's per-link reads: the receiving side's connections as the JSON has them.
  const link = result.steps[0].sides.server.streams[0];
  await expect(page.getByTestId('summary-server').locator('xpath=.//dt[normalize-space()="links: bytes, reads"]/following-sibling::dd[1]')).toHaveText(
    `${link.index + 1}: ${link.bytes} B, ${link.reads} reads`,
  );
  // Each side's CPU (issue 15): the panel shows the exported figures.
  for (const role of ['client', 'server']) {
    const c = result.steps[0].sides[role].cpu;
    expect(c.user_seconds + c.system_seconds).toBeLessThanOrEqual(c.seconds * c.threads);
    const dd = (k: string) => page.getByTestId(`summary-${role}`).locator(`xpath=.//dt[normalize-space()="${k}"]/following-sibling::dd[1]`);
    await expect(dd('CPU')).toHaveText(
      `${c.percent.toFixed(1)}% of a CPU (user ${c.user_seconds.toFixed(3)} s, system ${c.system_seconds.toFixed(3)} s, ${c.threads} threads, ${c.seconds.toFixed(3)} s)`,
    );
    if (c.host_percent != null) await expect(dd('host CPU')).toContainText(`${c.host_percent.toFixed(1)}% of ${c.host_cpus} CPUs`);
  }
  await expect(page.getByTestId('error')).toBeHidden();
});

test('a text parameter sweeps as a list: congestion control reno, then bbr, each read back from the kernel', async ({ page, agents }) => {
  await runSweep(page, agents.url(), 'congestion', 'reno, bbr');
  const rows = page.getByTestId('steps').locator('tbody tr');
  await expect(rows).toHaveCount(2);
  for (const [i, cc] of [[0, 'reno'], [1, 'bbr']] as const) {
    await expect(rows.nth(i)).toContainText(`congestion=${cc}`);
    await rows.nth(i).getByRole('button').click();
    // Both ends report the algorithm their sockets ran with.
    for (const side of ['summary-client', 'summary-server'])
      await expect(page.getByTestId(side)).toContainText(new RegExp(`socket options.*\\b${cc}\\b`, 's'));
  }
});

test('a transport sweep unix, tcp runs the Unix step inside agent A and the TCP step between A and B (the step driver in wasm)', async ({ page, agents }) => {
  await runSweep(page, agents.url(), 'transport', 'unix, tcp');
  await expect(page.getByTestId('error')).toBeHidden();
  const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  const result = JSON.parse(readFileSync((await json.path())!, 'utf8'));
  expect(result.steps.map((s: { kind: string }) => s.kind)).toEqual(['unix_stream', 'tcp_stream']);
  for (const s of result.steps) {
    expect(s.error ?? null).toBeNull();
    expect(s.sides.client.bytes).toBe(16 << 20);
    expect(s.sides.server.bytes).toBe(16 << 20);
  }
  // Agent B's record names only the TCP step; agent A ran both ends of the Unix one.
  expect(agents.b.output()).not.toMatch(/unix_stream/);
  expect(agents.b.output()).toMatch(/tcp_stream driving started/);
  expect(agents.a.output()).toMatch(/unix_stream serving started/);
  expect(agents.a.output()).toMatch(/unix_stream driving started/);
  // The CSV export is the one meshperf run writes (protocol/src/export.rs).
  const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-csv').click()]);
  const lines = readFileSync((await csv.path())!, 'utf8').trim().split('\n');
  expect(lines[0]).toMatch(/^step;kind;transport;repeat;started_unix;wall_seconds;/);
  expect(lines.slice(1).map((l) => l.split(';').slice(0, 3).join(';'))).toEqual(['0;unix_stream;unix', '1;tcp_stream;tcp']);
});

test("threads beyond an agent's cores are refused beside the field before Run, and no test starts (issue 45 item 8)", async ({ page, agents }) => {
  // Every request the page sends an agent: a refused plan sends no prepare or start.
  const sent: string[] = [];
  page.on('websocket', (ws) => ws.on('framesent', (f) => typeof f.payload === 'string' && sent.push(f.payload)));
  await openPlan(page, agents.url(), 16);
  // The agents' cores, as their cards show them (their hello's).
  const coresOf = async (id: string) => Number(await page.getByTestId(id).locator('xpath=.//dt[normalize-space()="cores"]/following-sibling::dd[1]').textContent());
  const cores = Math.min(await coresOf('agent-a'), await coresOf('agent-b'));
  expect(cores).toBeGreaterThanOrEqual(1);
  await page.getByText('more options').click();
  await page.getByTestId('streams').fill(String(cores + 1));
  await page.getByTestId('threads').fill(String(cores + 1));
  await expect(page.getByTestId('why-threads')).toHaveText(
    new RegExp(`^agent [AB] would refuse it: ${cores + 1} is more than the ${cores} CPUs this agent may use; give at most ${cores}$`),
  );
  await expect(page.getByTestId('plan-problem')).toContainText(`is more than the ${cores} CPUs`);
  await page.getByTestId('run').click();
  await expect(page.getByTestId('threads')).toBeFocused();
  await expect(page.getByTestId('error')).toBeHidden();
  await expect(page.getByTestId('result')).toHaveCount(0);
  expect(sent.filter((m) => /"type":"(prepare|start)"/.test(m))).toEqual([]);
  // At the agents' cores the field is clear and the test runs on them.
  await page.getByTestId('threads').fill(String(cores));
  await expect(page.getByTestId('why-threads')).toHaveCount(0);
  await expect(page.getByTestId('plan-problem')).toHaveCount(0);
  await page.getByTestId('run').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  expect(sent.some((m) => /"type":"start"/.test(m))).toBe(true);
});
