// A step's samples stay Float64Arrays from decoding to every statistic, and
// the result file the page writes is byte for byte what it wrote when they
// were plain arrays.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseResult, quantities, resultJson, typedSamples } from '../src/lib/result/result.ts';

/** A result as the page held it before: plain arrays, keys in the driver's order, an unknown key kept. */
function plainResult() {
  return {
    format: 'meshperf-result',
    version: 1,
    created_unix: 1763800000.125,
    plan: { kind: 'tcp_rr', params: { count: 4 }, sweep: {}, repeat: 1 },
    agents: [{ hostname: 'a' }, { hostname: 'b' }],
    steps: [
      {
        index: 0, kind: 'tcp_rr', params: { count: 4 }, point: [], repeat: 0, transport: 'tcp',
        summary: { count: 4, rtt_us: { n: 4, median: 15.5 } },
        sides: { client: { count: 4, rtt_us: { n: 4, median: 15.5 } }, server: null },
        samples: [
          { role: 'client', kind: 'rtt_ns', stream: 0, values: [15000, 16000, 14500, 9007199254740991] },
          { role: 'server', kind: 'read_bytes', stream: 0, values: [64, 64, 0, 128] },
          { role: 'server', kind: 'arrival_ns', stream: 0, values: [] },
        ],
        started_unix: 1763800000.25,
        wall_seconds: 0.5,
        future_key: 'kept',
      },
    ],
  };
}

test('a result with typed samples writes the same JSON bytes as with plain arrays', () => {
  const before = JSON.stringify(plainResult());
  const typed = typedSamples(plainResult());
  for (const s of typed.steps[0].samples) assert.ok(s.values instanceof Float64Array, s.kind);
  assert.equal(resultJson(typed), before);
  // Plain JSON.stringify would not: that is why resultJson exists.
  assert.notEqual(JSON.stringify(typed), before);
});

test('a result file read back holds Float64Arrays and writes the very same text', () => {
  const text = JSON.stringify(plainResult());
  const r = parseResult(text);
  const rtt = r.steps[0].samples[0].values;
  assert.ok(rtt instanceof Float64Array);
  assert.deepEqual(Array.from(rtt), [15000, 16000, 14500, 9007199254740991]);
  assert.equal(resultJson(r), text);
  // Reading it again keeps the arrays it already has.
  assert.equal(typedSamples(r).steps[0].samples[0].values, rtt);
});

test('quantities read the samples without copying them and are worked out once per step', () => {
  const r = parseResult(JSON.stringify(plainResult()));
  const step = r.steps[0];
  const qs = quantities(step);
  assert.deepEqual(qs.map((q) => q.id), ['rtt', 'reads']);
  // Read sizes need no conversion: the quantity is the series' own array.
  assert.equal(qs[1].values, step.samples[1].values);
  // Round-trip times become microseconds, once.
  assert.ok(qs[0].values instanceof Float64Array);
  assert.deepEqual(Array.from(qs[0].values).slice(0, 3), [15, 16, 14.5]);
  // Every view of the step gets the same arrays (and so the same wasm sample set).
  assert.equal(quantities(step), qs);
});

test('several series of a kind are joined in stream order, inter-arrival gaps from arrival times', () => {
  const r = plainResult();
  r.steps[0].kind = 'udp_stream';
  r.steps[0].samples = [
    { role: 'client', kind: 'rtt_ns', stream: 1, values: [3000] },
    { role: 'client', kind: 'rtt_ns', stream: 0, values: [1000, 2000] },
    { role: 'server', kind: 'arrival_ns', stream: 0, values: [1000, 3000, 3500] },
  ];
  const qs = quantities(typedSamples(r).steps[0]);
  assert.deepEqual(Array.from(qs.find((q) => q.id === 'rtt').values), [1, 2, 3]);
  assert.deepEqual(Array.from(qs.find((q) => q.id === 'gap-recv').values), [2, 0.5]);
});
