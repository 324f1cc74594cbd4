// Permalinks from the command line (issue 6): `meshperf run` against two real
// agents prints a permalink as its last line; with the agents stopped, the
// link opens in a fresh browser context from a plain static copy of the web
// app and shows the statistics the run measured.
import { execFileSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
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

test('a permalink printed by meshperf run opens with no agent running and shows the same statistics', async ({ agents, browser }) => {
  const site = await staticSite();
  try {
    const dir = mkdtempSync(join(tmpdir(), 'meshperf-e2e-'));
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
    await context.close();
  } finally {
    site.server.close();
  }
});
