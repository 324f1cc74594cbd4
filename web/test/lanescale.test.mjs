// The latency lane's scale (issue 45, item 11): set by a high percentile, not one spike.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { laneTop } from '../src/lib/lul/lanescale.ts';

test('one start-up spike does not set the latency lane\'s top; it is counted above it', () => {
  const rtt = Array.from({ length: 1000 }, (_, i) => 0.05 + (i % 10) * 0.001);
  rtt[3] = 4.33;
  const t = laneTop([rtt, [null, 0.02]]);
  assert.ok(t);
  assert.ok(t.top < 0.07 && t.top > 0.059, String(t.top));
  assert.equal(t.over, 1);
  assert.equal(t.highest, 4.33);
  // Without a spike the scale is left to the highest value.
  assert.equal(laneTop([rtt.map((x) => Math.min(x, 0.06))]), null);
  assert.equal(laneTop([[1, 2, 3]]), null);
});
