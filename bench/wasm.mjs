import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { join, normalize, extname } from 'node:path';
import { ROUNDS, fmt, results, root } from './lib.mjs';

// The wasm statistics page (bench/wasm/) in headless Debian Chromium: full
// statistics + a histogram for 1 M and 10 M samples, wasm next to plain JS in
// the same page. (Samples streamed agent -> browser are measured elsewhere.)
export async function wasmStats() {
  const sizes = process.env.BENCH_WASM_N || '1000000,10000000';
  console.log(`\n== wasm statistics in Chromium: summary + histogram, n = ${sizes}, ${ROUNDS} rounds alternating after a warm-up`);
  if (!existsSync(join(root, 'web/src/lib/wasm-pkg/meshperf_stats_bg.wasm'))) throw new Error('web/src/lib/wasm-pkg missing: run scripts/build.sh');
  const { chromium } = await import('playwright-core');
  const types = { '.html': 'text/html', '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm' };
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url, 'http://x').pathname)).replace(/^\/+/, '');
    const ok = (path.startsWith('bench/wasm/') || path.startsWith('web/src/lib/wasm-pkg/')) && !path.includes('..');
    const file = join(root, path.endsWith('/') ? `${path}index.html` : path);
    if (!ok || !existsSync(file)) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'content-type': types[extname(file)] || 'application/octet-stream' }).end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage();
    page.on('console', (m) => console.log(`  page: ${m.text()}`));
    await page.goto(`http://127.0.0.1:${server.address().port}/bench/wasm/?n=${sizes}&rounds=${ROUNDS}`);
    await page.waitForFunction(() => window.benchResult, null, { timeout: 600_000, polling: 500 });
    const r = await page.evaluate(() => window.benchResult);
    if (r.error) throw new Error(r.error);
    for (const s of r.sizes) {
      const name = `wasm stats n=${s.n / 1e6}M vs plain JS`;
      results.push({ name, ratio: s.ratio });
      const target = s.n >= 1e7 ? ` (target <= 400 ms: ${s.wasm_ms <= 400 ? 'met' : 'missed'}; >= 3 x: ${s.ratio >= 3 ? 'met' : 'missed'})` : '';
      console.log(`${name.padEnd(46)} wasm ${fmt(s.wasm_ms, 0).padStart(6)} ms  js ${fmt(s.js_ms, 0).padStart(6)} ms  ratio ${fmt(s.ratio, 2)}${target}${s.mismatched.length ? `  MISMATCH ${s.mismatched}` : ''}`);
    }
  } finally {
    await browser.close();
    server.close();
  }
}

