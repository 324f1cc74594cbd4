// Samples streamed agent -> browser: a page served by the agent opens its own
// control WebSocket, runs a udp_stream of 1 M datagrams with both ends on
// that agent, and counts the sample values (send times, sequence numbers,
// arrival times: 3 per datagram) arriving in binary frames, from the first
// frame to the last. Target: >= 2 M samples/s.
import { ROUNDS, fmt, median, results, startAgent } from './lib.mjs';

export async function samples(agents) {
  const count = Number(process.env.BENCH_SAMPLES_COUNT || 1000000);
  console.log(`\n== samples streamed agent -> Chromium (udp_stream, ${count} datagrams, 3 values each)`);
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    const url = new URL(agents[0].url);
    await page.goto(`${url.origin}/`);
    const token = new URLSearchParams(url.hash.slice(1)).get('token');
    const r = await page.evaluate(async ({ token, count }) => {
      const ws = new WebSocket(`ws://${location.host}/ws`);
      ws.binaryType = 'arraybuffer';
      let id = 0, values = 0, first = 0, last = 0;
      const waiters = new Map();
      const ends = [];
      const done = new Promise((resolve, reject) => {
        ws.onmessage = (m) => {
          if (typeof m.data !== 'string') {
            const now = performance.now();
            if (!first) first = now;
            last = now;
            values += new DataView(m.data).getUint32(20, true);
            return;
          }
          const msg = JSON.parse(m.data);
          if (msg.id && waiters.has(msg.id)) waiters.get(msg.id)(msg);
          if (msg.type === 'result' || (msg.type === 'error' && msg.test_id)) {
            ends.push(msg);
            if (msg.type === 'error') reject(new Error(msg.message));
            if (ends.length === 2) resolve();
          }
        };
      });
      const ask = (o) => new Promise((res) => { id += 1; waiters.set(id, res); ws.send(JSON.stringify({ ...o, id })); });
      await new Promise((res) => (ws.onopen = res));
      if ((await ask({ type: 'auth', token })).type !== 'auth_ok') throw new Error('auth failed');
      const params = { pkt_bytes: 64, count, wait_us: 0 };
      const prep = await ask({ type: 'prepare', test_id: 4242, step: 0, kind: 'udp_stream', params });
      if (prep.type !== 'prepared') throw new Error(prep.message);
      await ask({ type: 'start', test_id: 4242, step: 0, kind: 'udp_stream', params, peer: { host: '127.0.0.1', port: prep.port, key: prep.key } });
      await done;
      return { values, ms: last - first };
    }, { token, count });
    const rate = r.values / (r.ms / 1e3);
    results.push({ name: 'samples/s to browser / 2 M', ratio: rate / 2e6 });
    console.log(`${r.values} sample values in ${fmt(r.ms, 0)} ms from the first frame to the last: ${fmt(rate / 1e6, 2)} M samples/s (target >= 2 M/s: ${rate >= 2e6 ? 'met' : 'missed'})`);
    await throughPage(browser, agents);
  } finally {
    await browser.close();
  }
}

// The same samples through the web app itself: a udp_stream between agents A
// and B run from the plan form, timed from the Run click to the statistics,
// histogram and CDF of the inter-arrival times on screen. That covers the
// step driver decoding the frames (wasm), the result reaching the result
// view, its quantities, and every summary, histogram, CDF and decimation the
// view asks wasm for. Besides the wall time (mostly the test itself) it
// prints the page's main-thread time over the same span (Chromium's
// TaskDuration), the part the page's own work costs. A fresh browser
// context per round (an empty run store, so no earlier run is overlaid).
// Agent B is started here, allowing A's origin.
async function throughPage(browser, agents) {
  const count = Number(process.env.BENCH_PAGE_COUNT || 1000000);
  // Agent B must accept the page that agent A serves.
  const a = new URL(agents[0].url);
  const b = new URL((await startAgent(1, ['--allow-origin', a.origin])).url);
  const token = (u) => new URLSearchParams(u.hash.slice(1)).get('token');
  const url = `${a.origin}/#token=${token(a)}&agent2=${b.host}&token2=${token(b)}`;
  const times = [];
  const busy = [];
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const ctx = await browser.newContext();
    try {
      const page = await ctx.newPage();
      await page.goto(url);
      await page.waitForFunction(() => document.body.dataset.ready === '1');
      await page.getByTestId('kind').selectOption('udp_stream');
      await page.getByTestId('pkt-bytes').fill('64');
      await page.getByTestId('count').fill(String(count));
      await page.getByTestId('wait-us').fill('0');
      const cdp = await ctx.newCDPSession(page);
      await cdp.send('Performance.enable');
      const taskSeconds = async () => (await cdp.send('Performance.getMetrics')).metrics.find((m) => m.name === 'TaskDuration').value;
      const task0 = await taskSeconds();
      const t0 = Date.now();
      await page.getByTestId('run').click();
      const shown = await page.waitForFunction(() => {
        const cell = document.querySelector('[data-testid=stats] td[data-stat=n][data-quantity=gap-recv]');
        const hist = document.querySelector('[data-testid=histogram]');
        const cdf = document.querySelector('[data-testid=cdf]');
        const err = document.querySelector('[data-testid=error]');
        if (err) return { error: err.textContent };
        if (!cell || !/^\d/.test(cell.textContent) || !(Number(hist?.dataset.total) > 0) || !(Number(cdf?.dataset.points) > 0)) return null;
        return { n: Number(cell.textContent.replace(/\D/g, '')) };
      }, null, { timeout: 300_000, polling: 50 });
      const r = await shown.jsonValue();
      if (r.error) throw new Error(r.error);
      times.push(Date.now() - t0);
      busy.push((await taskSeconds() - task0) * 1e3);
      n = r.n;
    } finally {
      await ctx.close();
    }
  }
  const ms = median(times);
  console.log(`through the page (${count} datagrams of 64 B, wait_us 0): Run to statistics, histogram and CDF of ${n} inter-arrival times on screen, median of ${ROUNDS}: ${fmt(ms, 0)} ms (rounds ${times.join(', ')} ms), the page's main thread busy ${fmt(median(busy), 0)} ms of it (rounds ${busy.map((x) => fmt(x, 0)).join(', ')} ms)`);
}
