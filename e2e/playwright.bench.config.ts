// The page's benchmarks (bench/matrix_page.mjs): the e2e configuration on
// bench/*.bench.ts, which npm test's configuration does not collect.
import { defineConfig } from '@playwright/test';
import base from './playwright.config';

export default defineConfig({ ...base, testDir: './bench', testMatch: '*.bench.ts' });
