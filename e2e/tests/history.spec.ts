// History in the page (issue 44 part 3): a real Prometheus (Debian's
// `prometheus`, started here on loopback) scrapes a real `meshperf monitor`
// over two real agents every second; the page opened with
// `#prometheus=URL` reads the pairs' series through Prometheus's HTTP API
// (query_range) and draws each pair's history with its baseline. Checked
// against Prometheus's own answer to the same query: the pairs, each
// pair's last value and baseline, the points drawn. Prometheus allows only
// agent A's origin (`--web.cors.origin`): the page from agent B's origin is
// told so in one line, and an address where nothing listens is told apart.
// The fleet heatmap at a chosen time (instant queries): a pair's deviation
// from its baseline is Prometheus's own answer at that time, value over
// baseline; a pair no monitor measures (A and C: one monitor measures A and
// B, another B and C) is a blank cell, said.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_BIN, expect, startAgent, test, type Agent } from '../agents';

const PROMETHEUS = process.env.MESHPERF_PROMETHEUS ?? '/usr/bin/prometheus';

/** A free loopback port (for Prometheus's own listener). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

/** Waits for `re` in what `proc` printed; its first group. */
function printed(proc: ChildProcess, re: RegExp, what: string): Promise<string> {
  let out = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what}: no ${re} within 15 s:\n${out}`)), 15_000);
    const on = (c: Buffer) => {
      out += c.toString();
      const m = re.exec(out);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    };
    proc.stdout!.on('data', on);
    proc.stderr!.on('data', on);
    proc.once('exit', (code) => reject(new Error(`${what} exited (${code}):\n${out}`)));
  });
}

type Vector = { status: string; data: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] } };

async function queryAt(prom: string, query: string, time: number): Promise<Vector> {
  const r = await fetch(`${prom}/api/v1/query?${new URLSearchParams({ query, time: String(time) })}`);
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  return (await r.json()) as Vector;
}

type Range = { status: string; data: { resultType: string; result: { metric: Record<string, string>; values: [number, string][] }[] } };

async function queryRange(prom: string, query: string, start: number, end: number, step: number): Promise<Range> {
  const q = new URLSearchParams({ query, start: String(start), end: String(end), step: String(step) });
  const r = await fetch(`${prom}/api/v1/query_range?${q}`);
  if (!r.ok) throw new Error(`${r.status} ${await r.text()}`);
  return (await r.json()) as Range;
}

const lastFinite = (values: [number, string][]) => {
  for (let i = values.length - 1; i >= 0; i--) if (Number.isFinite(Number(values[i][1]))) return Number(values[i][1]);
  return NaN;
};

test('each pair\'s history from a real Prometheus that scraped a real monitor, with its baseline; CORS and unreachable said in one line', async ({ page }) => {
  test.setTimeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), 'meshperf-history-'));
  const procs: ChildProcess[] = [];
  const agents: Agent[] = [];
  try {
    agents.push(await startAgent('A'), await startAgent('B'), await startAgent('C'));
    const [a, b, c] = agents;
    // One monitor measures A and B, another B and C: nothing measures A and C.
    const targets: string[] = [];
    for (const two of [[a, b], [b, c]]) {
      const mon = spawn(
        AGENT_BIN,
        ['monitor', ...two.flatMap((x) => ['--agent', `${x.origin}/#token=${x.token}`]), '--kind', 'tcp_rr', '--set', 'count=50', '--every', '1s', '--jitter', '0s', '--listen', '127.0.0.1:0'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      procs.push(mon);
      targets.push(await printed(mon, /metrics on http:\/\/([^/\s]+)\/metrics/, 'meshperf monitor'));
    }
    const port = await freePort();
    writeFileSync(
      join(dir, 'prometheus.yml'),
      `global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: meshperf\n    static_configs:\n      - targets: [${targets.map((t) => `'${t}'`).join(', ')}]\n`,
    );
    // Only agent A's page may read the API (a fully anchored regex).
    const allowed = a.origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const prom = spawn(
      PROMETHEUS,
      [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, `--web.cors.origin=${allowed}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    procs.push(prom);
    const promUrl = `http://127.0.0.1:${port}`;
    // The four ordered pairs measured, each with 15 or more points of the last minute (the heatmap below is asked 10 s before the end).
    const rtt = 'max by (src, dst) (meshperf_pair_rtt_seconds{quantile="0.99"})';
    await expect
      .poll(
        async () => {
          const end = Math.floor(Date.now() / 1000);
          const r = await queryRange(promUrl, rtt, end - 60, end, 1).catch(() => null);
          return r ? r.data.result.filter((s) => s.values.length >= 15).length : -1;
        },
        { timeout: 90_000, intervals: [1000] },
      )
      .toBe(4);

    await page.goto(`${a.origin}/#prometheus=${promUrl}`);
    const view = page.getByTestId('history');
    const rows = view.getByTestId('history-pair');
    await expect(rows).toHaveCount(4);
    await expect(view).not.toHaveAttribute('data-busy', '1');
    const name = (x: Agent) => `${x.host}:${x.port}`;
    const pairs = new Set([`${name(a)}>${name(b)}`, `${name(b)}>${name(a)}`, `${name(b)}>${name(c)}`, `${name(c)}>${name(b)}`]);
    const shown = new Set(await rows.evaluateAll((els) => els.map((e) => `${e.getAttribute('data-src')}>${e.getAttribute('data-dst')}`)));
    expect(shown).toEqual(pairs);
    // The same query as the page made, asked of Prometheus here: the same figures.
    const at = async (name: string) => Number(await view.getAttribute(name));
    const [start, end, step] = [await at('data-start'), await at('data-end'), await at('data-step')];
    expect(step).toBe(10);
    expect(end - start).toBe(3600);
    expect(await view.getAttribute('data-query')).toBe(rtt);
    const theirs = await queryRange(promUrl, rtt, start, end, step);
    const normals = await queryRange(promUrl, (await view.getAttribute('data-baseline'))!, start, end, step);
    for (const s of theirs.data.result) {
      const row = view.locator(`[data-testid="history-pair"][data-src="${s.metric.src}"][data-dst="${s.metric.dst}"]`);
      const last = Number(await row.getAttribute('data-last'));
      expect(last).toBe(lastFinite(s.values));
      expect(last).toBeGreaterThan(0);
      expect(last).toBeLessThan(0.1);
      const n = normals.data.result.find((x) => x.metric.src === s.metric.src && x.metric.dst === s.metric.dst)!;
      expect(Number(await row.getAttribute('data-normal'))).toBe(lastFinite(n.values));
      const plot = view.locator(`[data-testid="history-plot"][data-src="${s.metric.src}"][data-dst="${s.metric.dst}"]`);
      await expect(plot).toHaveAttribute('data-points', String(s.values.length));
      // Drawn: the pair's series and its baseline, over the hour before now.
      await expect(plot.locator('canvas')).toHaveCount(1);
      await expect(plot.locator('.u-legend')).toContainText('baseline (7-day median)');
    }

    // The fleet at a chosen time: 10 s before the end, on the slider.
    const fleet = view.getByTestId('history-fleet');
    await expect(fleet).toHaveAttribute('data-time', String(end));
    const time = end - 10;
    await view.getByTestId('history-time').fill(String(time));
    await expect(fleet).toHaveAttribute('data-time', String(time));
    await expect(fleet).not.toHaveAttribute('data-busy', '1');
    const heat = fleet.getByTestId('history-heatmap');
    await expect(heat).toHaveAttribute('data-n', '3');
    // Prometheus's own answers to the same instant queries.
    const vals = await queryAt(promUrl, rtt, time);
    const bases = await queryAt(promUrl, (await view.getAttribute('data-baseline'))!, time);
    expect(vals.data.result).toHaveLength(4);
    const names = [name(a), name(b), name(c)].sort();
    const cell = (src: string, dst: string) => heat.locator(`[data-testid="cell"][data-row="${names.indexOf(src)}"][data-col="${names.indexOf(dst)}"]`);
    for (const s of vals.data.result) {
      const v = Number(s.value[1]);
      const n = Number(bases.data.result.find((x) => x.metric.src === s.metric.src && x.metric.dst === s.metric.dst)!.value[1]);
      expect(v).toBeGreaterThan(0);
      expect(n).toBeGreaterThan(0);
      const it = cell(s.metric.src, s.metric.dst);
      await expect(it).toHaveAttribute('data-state', 'done');
      await expect(it).toHaveAttribute('data-value', String(v / n));
      await expect(it).toHaveAttribute('data-b', String(v));
      await expect(it).toHaveAttribute('data-a', String(n));
      // RTT: above its baseline is worse, below better.
      await expect(it).toHaveAttribute('aria-label', new RegExp(`: ×[0-9.]+ \\(${v > n ? 'worse' : v < n ? 'better' : 'as baseline'}\\)`));
    }
    // A and C: no series in Prometheus, a blank cell that says so.
    for (const [src, dst] of [[name(a), name(c)], [name(c), name(a)]]) {
      expect(vals.data.result.find((x) => x.metric.src === src && x.metric.dst === dst)).toBeUndefined();
      const it = cell(src, dst);
      await expect(it).toHaveAttribute('data-state', 'none');
      await expect(it).toHaveAttribute('data-value', '');
      await expect(it).toHaveAttribute('aria-label', /: blank, no series at that time$/);
    }
    await expect(fleet.getByTestId('history-heatmap-legend')).toContainText('blank: no series at that time');

    // The day: another step, the same pairs.
    await view.getByTestId('history-span-day').click();
    await expect(view).toHaveAttribute('data-step', '240');
    await expect(rows).toHaveCount(4);
    // A figure tcp_rr has none of: said, not an empty view.
    await view.getByTestId('history-figure').selectOption('throughput');
    await expect(view.getByTestId('history-error')).toContainText('has no throughput series of meshperf pairs in the last day');

    // Agent B's page is another origin: Prometheus does not allow it.
    const other = await page.context().newPage();
    await other.goto(`${b.origin}/#prometheus=${promUrl}`);
    await expect(other.getByTestId('history-error')).toHaveText(
      `Prometheus at ${promUrl} answers, but not to this page (origin ${b.origin}): start it with --web.cors.origin matching this origin, or serve it through a proxy that adds Access-Control-Allow-Origin (docs/deploy.md, History)`,
    );
    // Nothing there: told apart.
    const dead = await freePort();
    await other.getByTestId('history-url').fill(`http://127.0.0.1:${dead}`);
    await other.getByTestId('history-read').click();
    await expect(other.getByTestId('history-error')).toHaveText(
      `Prometheus at http://127.0.0.1:${dead} cannot be reached (nothing answers there, or the address is wrong)`,
    );
    // Not an address at all.
    await other.getByTestId('history-url').fill('prometheus:9090');
    await other.getByTestId('history-read').click();
    await expect(other.getByTestId('history-error')).toContainText('is not an http or https address');
  } finally {
    for (const p of procs) p.kill('SIGTERM');
    await Promise.all(agents.map((x) => x.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
});
