// The Compare runs table (issue 45, item 7): figures side by side with each
// run's difference from the first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { compareRows, difference } from '../src/lib/result/compare.ts';

const run = (summary, sides = {}) => ({ steps: [{ kind: 'tcp_stream', summary, sides }] });

test('the figures of two runs side by side with the difference from the first', () => {
  const a = run({ bits_per_second: 20e9, retransmits: 0 }, { client: { cpu: { percent: 50 } }, server: { cpu: { percent: 80 } } });
  const b = run({ bits_per_second: 18e9, retransmits: 12 }, { client: { cpu: { percent: 55.5 } } });
  const rows = compareRows([a, b]);
  const byId = Object.fromEntries(rows.map((r) => [r.id, r]));
  assert.deepEqual(Object.keys(byId), ['rate', 'retransmits', 'cpu_client', 'cpu_server']);
  assert.deepEqual(byId.rate.values, ['20 Gbit/s', '18 Gbit/s']);
  assert.deepEqual(byId.rate.diffs, ['−2 Gbit/s (−10%)']);
  assert.deepEqual(byId.retransmits.diffs, ['+12']);
  assert.deepEqual(byId.cpu_client.diffs, ['+5.5 points']);
  // A figure one run lacks: shown as '–', no difference.
  assert.deepEqual(byId.cpu_server.values, ['80%', '–']);
  assert.deepEqual(byId.cpu_server.diffs, ['']);
});

test('RTT percentiles of request/response runs, and equal figures say so', () => {
  const a = run({ rtt_us: { median: 20, p90: 30, p99: 45 }, transactions_per_second: 40000 });
  const b = run({ rtt_us: { median: 20, p90: 33, p99: 90 }, transactions_per_second: 38000 });
  const byId = Object.fromEntries(compareRows([a, b]).map((r) => [r.id, r]));
  assert.deepEqual(byId.rtt_median.diffs, ['same']);
  assert.deepEqual(byId.rtt_p99.diffs, ['+45 µs (+100%)']);
  assert.deepEqual(byId.tps.diffs, ['−2000 (−5%)']);
  assert.equal(difference('rate', 1e9, 0), '+1 Gbit/s');
});
