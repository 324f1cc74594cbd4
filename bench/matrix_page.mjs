// The page with 64 agents (issue 11: "the page stays responsive while 64 x 63
// cells update"): runs e2e/bench/matrix64.bench.ts (64 agent processes, a
// udp_rr matrix of 4032 pairs from the page in Chromium, every long task
// recorded) and prints its figures. Too long for npm test (about 40 s here):
// e2e/playwright.bench.config.ts collects it, npm test's config does not.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { bin, root } from './lib.mjs';

export async function matrixPage() {
  console.log('\n== matrix from the page: 64 agents, 4032 udp_rr pairs, long tasks in Chromium');
  const r = spawnSync('npx', ['playwright', 'test', '-c', 'playwright.bench.config.ts'], {
    cwd: join(root, 'e2e'),
    env: { ...process.env, MESHPERF_BIN: bin },
    encoding: 'utf8',
    timeout: 300_000,
  });
  const out = `${r.stdout}${r.stderr}`;
  const line = /64 agents: .*/.exec(out)?.[0];
  console.log(line ?? out.split('\n').slice(-20).join('\n'));
  if (r.status !== 0) console.log(`matrix_page: the spec failed (exit ${r.status}); its report is in e2e/test-results`);
}
