// The history view's reading of Prometheus (src/lib/history/prometheus.ts):
// a range answer becomes one series per pair; an answer that is not a range,
// or holds a series that is not a pair's, is refused in one line; only
// http(s) addresses are asked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pairsOf, prometheusBase, prometheusInFragment } from '../src/lib/history/prometheus.ts';

test('a range answer is one series per pair, values as numbers', () => {
  const body = {
    status: 'success',
    data: {
      resultType: 'matrix',
      result: [{ metric: { src: 'a:1', dst: 'b:1' }, values: [[100, '0.001'], [110, 'NaN'], [120, '0.002']] }],
    },
  };
  const [s] = pairsOf(body, 'the answer');
  assert.deepEqual([s.src, s.dst, s.t], ['a:1', 'b:1', [100, 110, 120]]);
  assert.equal(s.v[0], 0.001);
  assert.ok(Number.isNaN(s.v[1]));
});

test('an answer that is not a range of pairs is refused in one line', () => {
  const vector = { status: 'success', data: { resultType: 'vector', result: [] } };
  assert.throws(() => pairsOf(vector, 'the answer'), /^Error: the answer is not a range of series .*is that address Prometheus's\?$/);
  assert.throws(() => pairsOf('<html>', 'the answer'), /is not a range of series/);
  const other = { status: 'success', data: { resultType: 'matrix', result: [{ metric: { job: 'node' }, values: [] }] } };
  assert.throws(() => pairsOf(other, 'the answer'), /has a series that is not a pair's \(labels \{"job":"node"\}, no src and dst\): does that Prometheus scrape a meshperf monitor\?$/);
  for (const e of [vector, other]) {
    try {
      pairsOf(e, 'x');
    } catch (err) {
      assert.ok(!err.message.includes('\n'));
    }
  }
});

test('only an http or https address is asked; the fragment names it', () => {
  assert.equal(prometheusBase('http://prom:9090/'), 'http://prom:9090');
  assert.equal(prometheusBase('https://h/prometheus/'), 'https://h/prometheus');
  assert.throws(() => prometheusBase('prom:9090'), /is not an http or https address/);
  assert.throws(() => prometheusBase('not a url'), /is not an address/);
  assert.equal(prometheusInFragment('#prometheus=http://p:9090'), 'http://p:9090');
  assert.equal(prometheusInFragment('#token=x'), null);
});
