// A new user's first steps (issue 29, items 3, 4 and 11) against real
// agents at 1366 x 768: a UDP test by rate from the default form, one agent's
// own printed URL as both ends (a test and the Standard test), a wrong or
// missing token that says where the token comes from (once), field errors
// beside their fields, an agent's limit said before Run, and tokens that
// leave the address bar once used while a reload still connects.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from '@playwright/test';
import { test, expect, startAgent, type Agent } from '../agents';

test.use({ viewport: { width: 1366, height: 768 } });

const shot = (name: string) => fileURLToPath(new URL(`../screenshots/${name}.png`, import.meta.url));

/** The URL `meshperf agent` printed, as a user would paste it. */
const printed = (a: Agent) => `${a.origin}/#token=${a.token}`;

async function ready(page: Page) {
  await page.waitForFunction(() => document.body.dataset.ready === '1');
}

async function finished(page: Page, timeout = 30_000) {
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout });
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  await expect(page.getByTestId('error')).toBeHidden();
}

async function exported(page: Page) {
  const [dl] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
  return JSON.parse(readFileSync((await dl.path())!, 'utf8'));
}

test('a UDP test by rate starts from the default form: choose rate, type one, Run', async ({ page, agents }) => {
  await page.goto(agents.url());
  await ready(page);
  await page.getByTestId('kind').selectOption('udp_stream');
  // Wait and rate are one choice: the wait (pre-filled 20 us) is chosen, no rate field.
  const choice = page.getByTestId('choice-rate');
  await expect(choice.getByLabel('wait')).toBeChecked();
  await expect(page.getByTestId('wait-us')).toHaveValue('20');
  await expect(page.getByTestId('rate')).toHaveCount(0);
  await choice.getByLabel('rate').check();
  await expect(page.getByTestId('wait-us')).toHaveCount(0);
  // A bad rate is said beside its field under the field's label, not in a banner, and goes when fixed.
  await page.getByTestId('rate').fill('0');
  await expect(page.getByTestId('why-rate')).toHaveText(/^must be above 0/);
  await expect(page.getByTestId('plan-problem')).toHaveText(/^rate \(bit\/s, instead of the wait; k, M, G = 1000s\): must be above 0/);
  await page.getByTestId('run').click();
  await expect(page.getByTestId('error')).toBeHidden();
  await expect(page.getByTestId('rate')).toBeFocused();
  await page.getByTestId('rate').fill('100M');
  await expect(page.getByTestId('why-rate')).toHaveCount(0);
  await expect(page.getByTestId('plan-problem')).toHaveCount(0);
  await expect(page.getByTestId('step-count')).toHaveText('1 step');
  await page.getByTestId('run').click();
  await finished(page);
  const r = await exported(page);
  expect(r.steps[0].params.rate).toBe(100e6);
  expect(r.steps[0].params.wait_us).toBeUndefined();
  expect(r.steps[0].summary.received).toBeGreaterThan(0);
  await page.screenshot({ path: shot('udp-by-rate'), fullPage: true });
});

test('one agent\'s own URL runs a test and the Standard test as both ends; its limits are said before Run', async ({ page }) => {
  const solo = await startAgent('solo', [], ['--max-udp-rate', '50M']);
  try {
    await page.goto(printed(solo));
    await ready(page);
    for (const id of ['agent-a', 'agent-b']) await expect(page.getByTestId(id)).toContainText(`${solo.host}:${solo.port}`);
    await expect(page.getByTestId('standard-why')).toHaveCount(0);
    await expect(page.getByTestId('standard-test')).toBeEnabled();

    // The agent's UDP limit (on its card) is checked while the plan is edited.
    await page.getByTestId('kind').selectOption('udp_stream');
    // The pre-filled wait (20 us, 560 Mbit/s) is refused too, in the
    // protocol's words with the page's units: the agent writes "20 us
    // between ... wait at least 224.00 us", the page µs (issue 29 item 9).
    await expect(page.getByTestId('why-wait-us')).toHaveText(/^agent A would refuse it: 20 µs between .+ wait at least 224(\.0+)? µs$/);
    await expect(page.getByTestId('plan-problem')).toContainText(/20 µs between .+ wait at least 224(\.0+)? µs$/);
    await expect(page.getByTestId('plan-problem')).not.toContainText(/\d ?us\b/);
    await page.getByTestId('choice-rate').getByLabel('rate').check();
    await page.getByTestId('rate').fill('200M');
    await expect(page.getByTestId('why-rate')).toContainText(/agent A would refuse it: .*50(\.0+)? ?Mbit\/s/);
    await page.getByTestId('rate').fill('20M');
    await expect(page.getByTestId('why-rate')).toHaveCount(0);
    await page.getByTestId('run').click();
    await finished(page);
    expect((await exported(page)).steps[0].summary.received).toBeGreaterThan(0);

    // A TCP transfer, then the Standard test (quick), both against itself.
    await page.getByTestId('kind').selectOption('tcp_stream');
    await page.getByTestId('msg-bytes').fill('1M');
    await page.getByTestId('count').fill('64');
    await page.getByTestId('run').click();
    await finished(page);
    await expect(page.getByTestId('summary-client')).toHaveAttribute('data-bytes', '67108864');
    await page.getByTestId('standard-length').selectOption('quick');
    await page.getByTestId('standard-test').click();
    await expect(page.getByTestId('standard-progress')).toBeVisible();
    await finished(page);
    const r = await exported(page);
    expect(r.plan.name).toBe('bufferbloat');
    expect(r.steps[0].summary.complete).toBe(true);
    expect(r.steps[0].summary.phases[1].down_bits_per_second).toBeGreaterThan(0);
    await page.screenshot({ path: shot('one-agent-both-ends'), fullPage: true });
  } finally {
    await solo.stop();
  }
});

test('connected, the tokens leave the address bar; a reload still connects, a new tab does not', async ({ page, agents, context }) => {
  await page.goto(agents.url());
  await ready(page);
  await expect.poll(() => page.evaluate(() => location.href)).not.toContain('token');
  const href = await page.evaluate(() => location.href);
  expect(href).not.toContain(agents.a.token);
  expect(href).not.toContain(agents.b.token);
  expect(href).toContain(`agent2=${agents.b.host}:${agents.b.port}`);
  await page.reload();
  await ready(page);
  expect(await page.evaluate(() => location.href)).not.toContain('token');
  // A copied address carries no token: a new tab says where one comes from.
  const other = await context.newPage();
  await other.goto(href);
  await expect(other.getByTestId('agent-a')).toHaveAttribute('data-state', 'auth_failed');
  await expect(other.getByTestId('error')).toContainText('--token-file');
  await other.close();
  // The same through the connect form.
  await page.getByTestId('token-b').fill(agents.b.token);
  await page.getByTestId('connect').click();
  await ready(page);
  expect(await page.evaluate(() => location.href)).not.toContain('token');
});

test('a wrong token or none says where the token comes from, once', async ({ page }) => {
  const solo = await startAgent('solo');
  try {
    await page.goto(`${solo.origin}/#token=${'0'.repeat(32)}`);
    await expect(page.getByTestId('agent-a')).toHaveAttribute('data-state', 'auth_failed');
    await expect(page.getByTestId('agent-b')).toHaveAttribute('data-state', 'auth_failed');
    const error = page.getByTestId('error');
    await expect(error.locator('p')).toHaveCount(1);
    await expect(error).toContainText(/authentication failed: that is not its token.*printed.*#token=.*--token-file/);
    await expect(page.getByText('authentication failed:')).toHaveCount(1);
    await page.screenshot({ path: shot('wrong-token'), fullPage: true });

    // A bare address: nothing to connect with, and the page says where a token is.
    const bare = await page.context().newPage();
    await bare.goto(`${solo.origin}/`);
    await expect(bare.getByTestId('notice')).toContainText(/URL the agent printed.*#token=.*--token-file/s);
    await expect(bare.getByTestId('standard-why')).toContainText(/open the URL an agent printed/);
    await bare.getByTestId('run').click();
    await expect(bare.getByTestId('error')).toContainText(/no agent connected yet: open the URL an agent printed/);
    // The token typed for A, B's address left empty: that agent is both ends.
    await bare.getByTestId('token-a').fill(solo.token);
    await bare.getByTestId('connect').click();
    await ready(bare);
    await expect(bare.getByTestId('agent-b')).toContainText(`${solo.host}:${solo.port}`);
    await expect(bare.getByTestId('notice')).toHaveCount(0);
    expect(await bare.evaluate(() => location.href)).not.toContain(solo.token);
  } finally {
    await solo.stop();
  }
});

test('the matrix starts with the pair\'s agents, keeps them over a reload, and says when its kind has no such figure', async ({ page, agents }) => {
  await page.goto(agents.url());
  await ready(page);
  await page.getByTestId('mode-matrix').click();
  const rows = page.getByTestId('mesh-agent');
  await expect(rows).toHaveCount(2);
  for (let i = 0; i < 2; i++) await expect(rows.nth(i)).toHaveAttribute('data-state', 'ready');
  await expect(page.getByRole('heading', { name: 'Agents (2)' })).toBeVisible();
  const href = await page.evaluate(() => location.href);
  for (const a of [agents.a, agents.b]) expect(href).not.toContain(a.token);
  await page.reload();
  await expect(rows).toHaveCount(2);
  for (let i = 0; i < 2; i++) await expect(rows.nth(i)).toHaveAttribute('data-state', 'ready');

  await page.getByTestId('matrix-kind').selectOption('tcp_rr');
  await page.locator('input[type=radio][value=count]').check();
  await page.getByTestId('count').fill('200');
  await page.getByTestId('matrix-run').click();
  await expect(page.getByTestId('matrix-status')).toHaveAttribute('data-phase', 'done', { timeout: 45_000 });
  await expect(page.getByTestId('matrix-no-figure')).toHaveCount(0);
  const cell = page.locator('[data-testid=cell][data-row="1"][data-col="0"]');
  expect(await cell.getAttribute('aria-label')).toMatch(/: \d+(\.\d{1,4})? (µs|ms)$/);
  // A round-trip kind has no throughput: said once, the cells show a dash.
  await page.getByTestId('matrix-metric').selectOption('gbps');
  await expect(page.getByTestId('matrix-no-figure')).toContainText('tcp_rr step has no throughput');
  await expect(cell).toHaveText('–');
  // The key names each agent by the address the page reached it at.
  await expect(page.getByTestId('matrix-view')).toContainText(`A = ${agents.a.host}:${agents.a.port}`);
  await expect(page.getByTestId('matrix-view')).toContainText(`B = ${agents.b.host}:${agents.b.port}`);

  // A path matrix (issue 24): cells by hops to the peer and by marks
  // changed; a cell opens its pair's two directions side by side, hop by
  // hop, with the hops' names, and the marks each way (loopback: the peer,
  // localhost, at hop 1 both ways).
  await page.getByTestId('matrix-kind').selectOption('path');
  await page.getByTestId('max-hops').fill('3');
  await page.getByTestId('wait-ms').fill('200');
  await page.getByTestId('dscp').fill('46');
  // Hop names (an advanced option): loopback's peer is localhost each way.
  const names = page.getByTestId('names');
  await page.locator('details', { has: names }).locator('summary').click();
  await names.selectOption('true');
  await page.getByTestId('matrix-run').click();
  await expect(page.getByTestId('matrix-status')).toHaveAttribute('data-phase', 'done', { timeout: 45_000 });
  await page.getByTestId('matrix-metric').selectOption('hops');
  await expect(cell).toHaveText('1');
  expect(await cell.getAttribute('aria-label')).toMatch(/: 1 hops$/);
  await page.getByTestId('matrix-metric').selectOption('marks_changed');
  await expect(cell).toHaveText('0');
  await cell.click();
  const view = page.getByTestId('path-view');
  await expect(view.getByTestId('path-end')).toHaveText([/^forth: B .*→ A.*: peer at hop 1; path MTU \d+ bytes/, /^back: A .*→ B.*: peer at hop 1; path MTU \d+ bytes/]);
  const hop = view.getByTestId('path-hop');
  await expect(hop).toHaveCount(1);
  await expect(hop.getByTestId('path-who')).toHaveText([/^localhost \(127\.0\.0\.1\) \(peer\)$/, /^localhost \(127\.0\.0\.1\) \(peer\)$/]);
  await expect(hop.getByTestId('path-box')).toHaveCount(2);
  await expect(hop).toHaveAttribute('data-differs', 'no');
  await expect(hop).toContainText('0/3');
  await expect(view.getByTestId('path-same')).toBeVisible();
  // DSCP 46 with each ECN codepoint, kept both ways.
  await expect(view.getByTestId('path-mark')).toHaveCount(4);
  await expect(view.locator('[data-testid=path-mark][data-differs=yes]')).toHaveCount(0);
  await view.screenshot({ path: shot('path-view') });
});

test('two streams: one bar per stream on an axis of streams, legends show the last point until hovered', async ({ page, agents }) => {
  await page.goto(agents.url());
  await ready(page);
  await page.getByTestId('msg-bytes').fill('128K');
  await page.getByTestId('count').fill('4000');
  await page.getByTestId('streams').fill('2');
  await page.getByTestId('run').click();
  await finished(page);
  const bars = page.getByTestId('stream-bars');
  await expect(bars).toHaveAttribute('data-points', '2');
  // Whole bars: the x axis runs half a bar past stream 0 and stream 1 (uPlot draws its ticks, one per stream, on the canvas).
  const host = bars.locator('.uplot-host');
  await expect(host).toHaveAttribute('data-x-min', '-0.5');
  await expect(host).toHaveAttribute('data-x-max', '1.5');
  // Not hovered, a legend reads the last row, not a dash: the total its
  // rate, a stream that ended an interval before it when it ended.
  const legend = page.getByTestId('throughput-plot').locator('.u-legend .u-series');
  await expect(legend.first().locator('.u-value')).toHaveText(/^[0-9]/);
  await expect(legend.nth(1).locator('.u-value')).toHaveText(/^([0-9][0-9.,]* [MG]bit\/s|ended at [0-9.]+ s)$/);
  await expect(legend.last().locator('.u-value')).toHaveText(/^[0-9][0-9.,]* [MG]bit\/s$/);
});
