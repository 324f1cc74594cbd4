// The flows row of a side's summary: the words `meshperf run` prints, each
// flow's rate where the side has the test's rate, nothing for one flow.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flowsLine } from '../src/lib/result/flows.ts';

test('a many-flow side reads as the CLI prints it, with each flow\'s rate on the driving side', () => {
  const flows = { count: 64, threads: 2, min: 150, median: 156, max: 170, per_flow: [] };
  // tcp_rr's driving side: 10 000 transactions at 5000/s, so 2 s.
  assert.equal(
    flowsLine({ count: 10000, transactions_per_second: 5000, flows }),
    '64 flows on 2 threads, transactions per flow 150 / 156 / 170 (min / median / max); per flow per second 75 / 78 / 85',
  );
  // tcp_crr counts in `transactions` (its `count` is not the total).
  assert.equal(
    flowsLine({ transactions: 1000, transactions_per_second: 250, flows: { ...flows, threads: 1 } }),
    '64 flows on 1 thread, transactions per flow 150 / 156 / 170 (min / median / max); per flow per second 37.5 / 39 / 42.5',
  );
  // The serving side has no rate: the counts alone.
  assert.equal(flowsLine({ count: 10000, flows }), '64 flows on 2 threads, transactions per flow 150 / 156 / 170 (min / median / max)');
});

test('one flow, and results from before flows, show no flows row', () => {
  assert.equal(flowsLine({ count: 10000, transactions_per_second: 5000 }), null);
  assert.equal(flowsLine(null), null);
  assert.equal(flowsLine({ flows: { count: 2 } }), null);
});
