// The history view's reading of Prometheus (src/lib/history/prometheus.ts):
// a range answer becomes one series per pair; an answer that is not a range,
// or holds a series that is not a pair's, is refused in one line; only
// http(s) addresses are asked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FIGURES, deviation, deviationPosition, deviationSpan, deviationText, pairKey, pairsAt, pairsOf, prometheusBase, prometheusInFragment } from '../src/lib/history/prometheus.ts';
import { ratioColourAt } from '../src/lib/matrix/colour.ts';

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

// The fleet heatmap at a past time: each pair's deviation from its own
// baseline, value / baseline (throughput, RTT) or value - baseline (loss),
// coloured red where worse and blue where better whichever way the figure
// goes.
const [tput, rtt, loss] = ['throughput', 'rtt', 'loss'].map((id) => FIGURES.find((f) => f.id === id));
const RED = 'rgb(178 24 43)';
const BLUE = 'rgb(33 102 172)';
const NEUTRAL = 'rgb(247 247 247)';

test('deviation: a ratio for throughput and RTT, a difference for loss, none without both', () => {
  assert.equal(deviation(rtt, 0.002, 0.001), 2);
  assert.equal(deviation(tput, 5e8, 1e9), 0.5);
  assert.ok(Math.abs(deviation(loss, 0.03, 0.01) - 0.02) < 1e-15);
  assert.equal(deviation(loss, 0.01, 0), 0.01);
  assert.equal(deviation(rtt, 0.002, 0), null);
  assert.equal(deviation(rtt, undefined, 0.001), null);
  assert.equal(deviation(rtt, 0.001, undefined), null);
  assert.equal(deviation(tput, NaN, 1e9), null);
});

test('worse is red and better blue for every figure; as the baseline is neutral', () => {
  const colour = (f, d, ds) => ratioColourAt(deviationPosition(f, d, deviationSpan(f, ds)));
  // RTT twice its baseline: worse; half: better.
  assert.equal(colour(rtt, 2, [2, 0.5]), RED);
  assert.equal(colour(rtt, 0.5, [2, 0.5]), BLUE);
  // Throughput half its baseline: worse (lower is worse); twice: better.
  assert.equal(colour(tput, 0.5, [2, 0.5]), RED);
  assert.equal(colour(tput, 2, [2, 0.5]), BLUE);
  // Loss 5 points above its baseline: worse; 5 below: better.
  assert.equal(colour(loss, 0.05, [0.05, -0.05]), RED);
  assert.equal(colour(loss, -0.05, [0.05, -0.05]), BLUE);
  for (const [f, d] of [[rtt, 1], [tput, 1], [loss, 0]]) assert.equal(colour(f, d, [d]), NEUTRAL);
  // A few per cent (or a tenth of a point of loss) stays near neutral: the scale is at least ln 1.1 / 1 point wide.
  assert.ok(Math.abs(deviationPosition(rtt, 1.02, deviationSpan(rtt, [1.02])) - 0.5) < 0.11);
  assert.ok(Math.abs(deviationPosition(loss, 0.001, deviationSpan(loss, [0.001])) - 0.5) < 0.06);
  // The same deviation sits at the same place above and below: 2 and 0.5 mirror.
  const sp = deviationSpan(rtt, [2, 0.5]);
  assert.ok(Math.abs(deviationPosition(rtt, 2, sp) + deviationPosition(rtt, 0.5, sp) - 1) < 1e-12);
});

test('a deviation in words says worse or better', () => {
  assert.equal(deviationText(rtt, 2), '×2 (worse)');
  assert.equal(deviationText(tput, 2), '×2 (better)');
  assert.equal(deviationText(tput, 1), '×1 (as baseline)');
  assert.match(deviationText(loss, 0.02), /^\+2 pp \(worse\)$/);
  assert.match(deviationText(loss, -0.005), /^−0\.5 pp \(better\)$/);
});

test("an instant answer is each pair's value; another answer is refused in one line", () => {
  const body = { status: 'success', data: { resultType: 'vector', result: [{ metric: { src: 'a:1', dst: 'b:1' }, value: [100, '0.25'] }] } };
  const m = pairsAt(body, 'the answer');
  assert.equal(m.get(pairKey('a:1', 'b:1')), 0.25);
  assert.equal(m.size, 1);
  assert.throws(() => pairsAt({ status: 'success', data: { resultType: 'matrix', result: [] } }, 'the answer'), /^Error: the answer is not a vector of samples .*Prometheus's\?$/);
  assert.throws(() => pairsAt({ status: 'success', data: { resultType: 'vector', result: [{ metric: { job: 'x' }, value: [1, '1'] }] } }, 'the answer'), /has a sample that is not a pair's/);
});
