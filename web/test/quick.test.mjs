// The Standard test's quick length (issue 45, item 22).
import assert from 'node:assert/strict';
import { test } from 'node:test';

test("the quick Standard test's description gives its own phase lengths (issue 45, item 22)", async () => {
  const { quickDescription } = await import('../src/lib/lul/quick.ts');
  const { readFileSync } = await import('node:fs');
  const preset = JSON.parse(readFileSync(new URL('../../plans/bufferbloat.json', import.meta.url), 'utf8'));
  const d = quickDescription(preset.description);
  assert.match(d, /1 s idle, then 1 s each of download, upload and both at once/);
  assert.match(d, /0\.25 s gaps/);
  assert.doesNotMatch(d, /7 s/);
  assert.equal(quickDescription('some plan'), 'some plan (quick: every phase 1 s, 0.25 s gaps)');
});
