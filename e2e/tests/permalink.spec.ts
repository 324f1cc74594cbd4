// Permalinks from the command line (issue 6): `meshperf run` against two real
// agents prints a permalink as its last line; with the agents stopped, the
// link opens in a fresh browser context from a plain static copy of the web
// app and shows the statistics the run measured.
import { execFileSync, spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test, expect, AGENT_BIN } from '../agents';

const dist = fileURLToPath(new URL('../../web/dist/', import.meta.url));
const types: Record<string, string> = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.wasm': 'application/wasm' };

/** web/dist as any static host would serve it: no agent, no backend. */
async function staticSite(): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    const rel = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)).replace(/^\/+/, '') || 'index.html';
    const file = join(dist, rel);
    if (rel.includes('..') || !existsSync(file)) return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': types[extname(file)] ?? 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('no port');
  return { server, base: `http://127.0.0.1:${addr.port}/` };
}

test('a permalink printed by meshperf run opens with no agent running and shows the same statistics', async ({ agents, browser, scratch }) => {
  const site = await staticSite();
  try {
    const dir = scratch;
    const plan = join(dir, 'plan.json');
    const json = join(dir, 'result.json');
    writeFileSync(plan, JSON.stringify({ kind: 'tcp_rr', params: { req_bytes: 64, resp_bytes: 64, count: 3000 } }));
    const agentUrl = (a: typeof agents.a) => `${a.origin}/#token=${a.token}`;
    const out = execFileSync(AGENT_BIN, ['run', '--agent', agentUrl(agents.a), '--agent', agentUrl(agents.b), '--plan', plan, '--json', json, '--web', site.base], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const lines = out.trim().split('\n');
    const link = lines[lines.length - 1];
    expect(link.startsWith(`${site.base}#r=`)).toBe(true);
    // The seed's tcp_req record: resp len; req len; msg_count; loop_count; ...
    expect(lines.some((l) => /^64; 64; 1; 3000; 0; /.test(l))).toBe(true);
    const rtt = JSON.parse(readFileSync(json, 'utf8')).steps[0].summary.rtt_us;
    expect(rtt.n).toBe(3000);

    // No agent is left: the result lives entirely in the link.
    await Promise.all([agents.a.stop(), agents.b.stop()]);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(link);
    const cell = (stat: string) => page.getByTestId('stats').locator(`td[data-stat=${stat}][data-quantity=rtt]`).first();
    await expect(cell('n')).toHaveText('3000', { timeout: 20_000 });
    // Times travel at 100 ns resolution and the table shows 4 significant digits.
    for (const stat of ['median', 'min', 'p99', 'mean']) {
      const shown = Number((await cell(stat).textContent())?.replace(/[^0-9.e+-]/g, ''));
      expect(Math.abs(shown - rtt[stat]), `${stat}: page ${shown}, run ${rtt[stat]}`).toBeLessThanOrEqual(0.1 + rtt[stat] * 1e-3);
    }
    await expect(page.getByTestId('error')).toBeHidden();
    await page.screenshot({ path: fileURLToPath(new URL('../screenshots/permalink-from-cli.png', import.meta.url)), fullPage: true });

    // A truncated link says so instead of showing a blank page.
    await page.goto(link.slice(0, link.length - 40));
    await page.reload();
    await expect(page.getByTestId('error')).toBeVisible();
    await context.close();
  } finally {
    site.server.close();
  }
});

// The fixtures the codec's own tests decode (protocol/tests/fixtures): links of
// format 1 and 2, made by earlier builds, open in today's page.
const fixture = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../../protocol/tests/fixtures/${name}`, import.meta.url)), 'utf8').trim().split('\n');

test('links of every older format open in the page with the statistics of their samples', async ({ browser }) => {
  const site = await staticSite();
  try {
    const [v1] = fixture('permalink-v1.txt');
    const [rr, histograms] = fixture('permalink-v2.txt');
    const context = await browser.newContext();
    const page = await context.newPage();

    // Format 2, a request/response step of 2000 round trips.
    await page.goto(`${site.base}#r=${rr}`);
    const rtt = page.getByTestId('stats').locator('td[data-stat=n][data-quantity=rtt]');
    await expect(rtt).toHaveText('2000', { timeout: 20_000 });
    await expect(page.getByTestId('histogram')).toHaveAttribute('data-total', '2000');

    // Format 1, a stream step: every quantity's n is the number of samples
    // the page writes back to a result file.
    await page.goto(`${site.base}#r=${v1}`);
    await page.reload();
    const reads = page.getByTestId('stats').locator('td[data-stat=n][data-quantity=reads]');
    await expect(reads).toHaveText(/^\d+$/, { timeout: 20_000 });
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-json').click()]);
    const step = JSON.parse(readFileSync(await file.path(), 'utf8')).steps[0];
    const sent = step.samples.filter((s: { kind: string }) => s.kind === 'read_bytes').reduce((n: number, s: { values: number[] }) => n + s.values.length, 0);
    expect(sent).toBeGreaterThan(0);
    await expect(reads).toHaveText(String(sent));

    // Format 2 with histograms in place of 200 000 samples: said so, no blank page.
    await page.goto(`${site.base}#r=${histograms}`);
    await page.reload();
    await expect(page.getByTestId('samples-replaced')).toBeVisible({ timeout: 20_000 });
    await expect(page.getByTestId('error')).toBeHidden();
    // What it carries is shown: the histograms, every value counted.
    await page.getByTestId('view-carried').click();
    await expect(page.getByTestId('carried-hist').first()).toBeVisible();
    await context.close();
  } finally {
    site.server.close();
  }
});

// Links too long for every raw sample (issue 29, item 5): what they carry is
// shown (histograms with every value counted, summaries, the short series
// such as throughput per interval), and what they cannot carry is said once.
test('a UDP and a Standard-test link too long for their samples show their histograms and phases in a fresh context', async ({ agents, browser, scratch }) => {
  test.setTimeout(120_000);
  const site = await staticSite();
  try {
    const dir = scratch;
    const agentUrl = (a: typeof agents.a) => `${a.origin}/#token=${a.token}`;
    const run = (name: string, args: string[]) => {
      const json = join(dir, `${name}.json`);
      const r = spawnSync(AGENT_BIN, ['run', '--agent', agentUrl(agents.a), '--agent', agentUrl(agents.b), ...args, '--json', json, '--web', site.base], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.status, r.stderr).toBe(0);
      // The runs are made long enough for their links to need histograms.
      expect(r.stderr).toContain('too many samples for a link');
      const lines = r.stdout.trim().split('\n');
      return { link: lines[lines.length - 1], result: JSON.parse(readFileSync(json, 'utf8')) };
    };
    const set = (...kv: string[]) => kv.flatMap((x) => ['--set', x]);
    const udp = run('udp', ['--kind', 'udp_stream', ...set('duration_s=3', 'pkt_bytes=200')]);
    const lul = run('lul', ['--preset', 'bufferbloat', ...set('idle_s=2', 'download_s=2', 'upload_s=2', 'both_s=2', 'gap_s=0.25', 'streams=2', 'probe_ms=1')]);
    await Promise.all([agents.a.stop(), agents.b.stop()]);

    const context = await browser.newContext();
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));

    // UDP: the receiver's arrival times come back as packets over time, every packet counted.
    await page.goto(udp.link);
    await expect(page.getByTestId('samples-replaced')).toHaveCount(1, { timeout: 20_000 });
    const arrivals = udp.result.steps[0].samples.find((x: { kind: string }) => x.kind === 'arrival_ns');
    const shown = page.locator('[data-testid=carried-hist][data-kind=arrival_ns]');
    await expect(shown).toHaveAttribute('data-n', String(arrivals.values.length));
    await page.getByTestId('view-carried').click();
    await expect(shown.locator('canvas')).toBeVisible();
    await expect(page.getByText('This step carries no raw samples to analyse')).toHaveCount(0);
    await expect(page.getByTestId('error')).toBeHidden();
    await page.screenshot({ path: fileURLToPath(new URL('../screenshots/permalink-udp-histograms.png', import.meta.url)), fullPage: true });

    // The Standard test: its card (every phase), the throughput of each phase
    // at its own time, the probes' round trips as a histogram.
    await page.goto(lul.link);
    await page.reload();
    await expect(page.getByTestId('samples-replaced')).toHaveCount(1, { timeout: 20_000 });
    const s = lul.result.steps[0].summary;
    await expect(page.getByTestId('lul-card')).toBeVisible();
    await expect(page.getByTestId('lul-no-probes')).toHaveCount(0);
    const rtt = page.locator('[data-testid=carried-hist][data-kind=rtt_ns]');
    await expect(rtt).toHaveAttribute('data-n', String(s.probes_down.received));
    const plot = page.getByTestId('throughput-plot');
    expect(Number(await plot.getAttribute('data-x-min'))).toBeGreaterThan(2);
    expect(Number(await plot.getAttribute('data-x-max'))).toBeGreaterThan(8);
    const n = page.getByTestId('stats').locator('td[data-stat=n][data-quantity=tput-down]');
    await expect(n).toHaveText(/^\d+$/);
    const all = Number(await n.textContent());
    await page.getByTestId('lul-phase').selectOption('download');
    await expect(n).not.toHaveText(String(all));
    const one = Number(await n.textContent());
    expect(one).toBeGreaterThan(10);
    expect(all).toBeGreaterThan(one);
    // Said once, on top; nowhere else.
    await expect(page.getByText('cannot carry')).toHaveCount(1);
    await page.screenshot({ path: fileURLToPath(new URL('../screenshots/permalink-lul-histograms.png', import.meta.url)), fullPage: true });
    expect(errors).toEqual([]);
    await context.close();
  } finally {
    site.server.close();
  }
});

// A permalink pasted into the address bar of a tab that shows meshperf
// changes only the hash (issue 45, item 3): the page opens it at once, as a
// load would, without a reload.
test('a permalink pasted into the open tab opens on hashchange', async ({ agents, page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  const agentUrl = (a: typeof agents.a) => `${a.origin}/#token=${a.token}`;
  const link = (kind: string, sets: string[]) => {
    const r = spawnSync(AGENT_BIN, ['run', '--agent', agentUrl(agents.a), '--agent', agentUrl(agents.b), '--kind', kind, ...sets.flatMap((s) => ['--set', s])], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    return new URL(lines[lines.length - 1]);
  };
  const rr = link('tcp_rr', ['count=300']);
  const udp = link('udp_stream', ['rate=50M', 'duration_s=0.2']);
  await page.goto(rr.href);
  await expect(page.getByTestId('result')).toHaveAttribute('data-kind', 'tcp_rr', { timeout: 20_000 });
  // The same document throughout: a mark set now survives only if nothing reloads.
  await page.evaluate(() => ((window as unknown as { mark: number }).mark = 1));
  await page.evaluate((hash) => (location.hash = hash), udp.hash);
  await expect(page.getByTestId('result')).toHaveAttribute('data-kind', 'udp_stream');
  await expect(page.getByTestId('result')).toContainText('opened from a link');
  expect(await page.evaluate(() => (window as unknown as { mark?: number }).mark)).toBe(1);
  // And back: the first link again.
  await page.evaluate((hash) => (location.hash = hash), rr.hash);
  await expect(page.getByTestId('result')).toHaveAttribute('data-kind', 'tcp_rr');
  // A damaged link pasted the same way says so.
  await page.evaluate((hash) => (location.hash = hash), udp.hash.slice(0, udp.hash.length - 40));
  await expect(page.getByTestId('error')).toBeVisible();
  expect(errors).toEqual([]);
});
