// Playwright drives Debian's chromium (no browser download) against real
// agents that each test starts itself (see agents.ts).
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: '.',
  testMatch: '*.spec.ts',
  outputDir: 'test-results',
  // Two spec files at a time: most of a spec's time is its agents' tests
  // running for their duration, not CPU, and each spec starts its own agents
  // on ephemeral ports. 50 specs took 3.7 min this way on the 2-vCPU test
  // machine, against about 5.3 min one at a time (npm test's time budget).
  workers: 2,
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 60_000,
  expect: { timeout: 15_000 },
  reporter: [['list']],
  use: {
    headless: true,
    viewport: { width: 1280, height: 900 },
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: process.env.MESHPERF_CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    },
  },
});
