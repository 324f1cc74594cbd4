// Units and numbers as the page shows them: one bit-rate formatter (scaled,
// a space, four significant digits, grouped past 9,999), times in µs up to
// 10 ms and ms above, and the Standard test's card in those units while its
// `text` stays the CLI's cell.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatRate, formatUs, limitsText, pageText, parseRate, rateUnit, timeUnit } from '../src/lib/units.ts';
import { LIMITS } from '../src/lib/generated/params.ts';
import { shown } from '../src/lib/lul/card.ts';

test('a bit rate is scaled to the unit it reads best in, with a space and four significant digits', () => {
  // The figure: 28053.4 Mbit/s, no space, no grouping.
  assert.equal(formatRate(28053.4e6), '28.05 Gbit/s');
  assert.equal(formatRate(26242.8e6), '26.24 Gbit/s');
  assert.equal(formatRate(950e6), '950 Mbit/s');
  assert.equal(formatRate(12.5e3), '12.5 kbit/s');
  assert.equal(formatRate(640), '640 bit/s');
  assert.equal(formatRate(0), '0 bit/s');
  // A value that rounds up to 1000 of a unit takes the next one.
  assert.equal(formatRate(999.96e6), '1 Gbit/s');
  // Gbit/s is the largest unit: past 9,999 it is grouped.
  assert.equal(formatRate(1e12), '1000 Gbit/s');
  assert.equal(formatRate(12_345.6e9), '12,346 Gbit/s');
  assert.equal(formatRate(NaN), '–');
  assert.deepEqual(rateUnit(3e9), { unit: 'Gbit/s', div: 1e9 });
  assert.deepEqual(rateUnit(3e6), { unit: 'Mbit/s', div: 1e6 });
  assert.deepEqual(rateUnit(3e3), { unit: 'kbit/s', div: 1e3 });
  assert.deepEqual(rateUnit(3), { unit: 'bit/s', div: 1 });
});

test('times read in µs up to 10 ms and in ms above; never "us"', () => {
  assert.equal(formatUs(65.2), '65.2 µs');
  assert.equal(formatUs(9999), '9999 µs');
  assert.equal(formatUs(12_100), '12.1 ms');
  assert.deepEqual(timeUnit(5), { unit: 'µs', div: 1 });
  assert.deepEqual(timeUnit(20_000), { unit: 'ms', div: 1e3 });
});

test("the Standard test's card shows the page's units; its text stays the CLI's", () => {
  // Throughput: Mbit/s from the card module, shown as every rate on the page.
  assert.deepEqual(shown({ value: 28053.4, unit: 'Mbit/s', text: '28053.4', uncertain: false }), { num: '28.05', unit: 'Gbit/s' });
  // Delays: ms from the card module, µs below 10 ms as everywhere else.
  assert.deepEqual(shown({ value: 0.0652, unit: 'ms', text: '0.065', uncertain: false }), { num: '65.2', unit: 'µs' });
  assert.deepEqual(shown({ value: 25.125, unit: 'ms', text: '25.125', uncertain: false }), { num: '25.13', unit: 'ms' });
  // `<±U` keeps its rule, U in the page's unit.
  assert.deepEqual(shown({ value: 0.01, unit: 'ms', text: '<±0.120', uncertain: true }), { num: '<±120', unit: 'µs' });
  // An added delay within its uncertainty, or below zero: none, with U in the page's unit, never -10.17 µs.
  assert.deepEqual(shown({ value: -0.01017, unit: 'ms', text: 'none (±0.0033)', uncertain: false, none_within: 0.0033 }), { num: 'none', unit: '(±3.3 µs)' });
  assert.deepEqual(shown({ value: -0.0005, unit: 'ms', text: 'none (±0.0004721)', uncertain: false, none_within: 0.0004721 }), { num: 'none', unit: '(±0.47 µs)' });
  // Counts and missing figures as the card module wrote them.
  assert.deepEqual(shown({ value: 3, unit: 'probes', text: '3', uncertain: false }), { num: '3', unit: '' });
  assert.deepEqual(shown({ value: null, unit: 'ms', text: '-', uncertain: false }), { num: '-', unit: '' });
});

test('agent text shows a number\'s "us" as µs, and leaves names, words and keys alone', () => {
  // The refusals the protocol writes (protocol/src/params/pace.rs), as the page shows them.
  assert.equal(
    pageText("agent A would refuse it: wait_us: 20 us between 1400-byte datagrams is above the agent's UDP rate limit of 50 Mbit/s: wait at least 224.00 us"),
    "agent A would refuse it: wait_us: 20 µs between 1400-byte datagrams is above the agent's UDP rate limit of 50 Mbit/s: wait at least 224.00 µs",
  );
  assert.equal(
    pageText('10000000 us is one datagram every 10 s: wait at most 5000000 us, or give a longer duration_s'),
    '10000000 µs is one datagram every 10 s: wait at most 5000000 µs, or give a longer duration_s',
  );
  // No space, a unit after a slash, a sign, a comma, the end of the text.
  assert.equal(pageText('slope 2.5 us/byte, ±30.0 us, gap 20us'), 'slope 2.5 µs/byte, ±30.0 µs, gap 20µs');
  // Names, words and summary keys stay as they are.
  for (const same of ['wait_us must be a whole number', 'rtt_us.p99', 'used 2 buffers', '3 users', 'status: busy', 'us', 'interval 10 ms', 'Time/frame us']) {
    assert.equal(pageText(same), same);
  }
  assert.equal(pageText(undefined), undefined);
  assert.equal(pageText(null), null);
});

test("an agent's limits are said from the protocol's table, each in its unit, an absent cap left out", () => {
  const limits = { max_msg_bytes: 64 << 20, max_duration_s: 60, max_bytes: 64 * 1024 ** 3, max_streams: 64, max_count: 1e7, max_flows: 1024, max_tests: 4, max_queue: 16 };
  assert.equal(
    limitsText({ ...limits, max_udp_bits_per_second: 5e7 }),
    'message size ≤ 64 MiB, test length ≤ 60 s, bytes per test ≤ 64 GiB, ≤ 64 streams, ≤ 10,000,000 messages, ≤ 1,024 flows, UDP rate ≤ 50 Mbit/s, ≤ 4 tests at once, ≤ 16 tests waiting',
  );
  assert.equal(limitsText(limits).split(', ').length, LIMITS.length - 1);
  // Rates read with the same SI prefixes (protocol/src/units.rs).
  assert.deepEqual([parseRate('20M'), parseRate('1.5g'), parseRate('64k'), parseRate('1000')], [20e6, 1.5e9, 64e3, 1000]);
  assert.ok(Number.isNaN(parseRate('20x')));
});

test('one time rule for every figure with its unit: µs below 10 ms, ms from it (issue 45 item 12)', async () => {
  const { figureText, pageLabel } = await import('../src/lib/units.ts');
  const { MS_FROM_US } = await import('../src/lib/generated/params.ts');
  // The protocol's threshold (protocol/src/units.rs MS_FROM_US), generated.
  assert.equal(MS_FROM_US, 10_000);
  // The same figures as protocol/src/units.rs's duration_us test, with the page's µs.
  for (const [us, want] of [[65.2, '65.2 µs'], [0.9, '0.9 µs'], [449, '449 µs'], [9999, '9999 µs'], [10_000, '10 ms'], [12_870, '12.87 ms'], [118_132, '118.1 ms'], [-2.674, '-2.674 µs']]) {
    assert.equal(figureText(us, 'µs'), want, String(us));
    // The protocol's own unit word reads the same.
    assert.equal(figureText(us, 'us'), want, String(us));
  }
  // A matrix tooltip's five digits.
  assert.equal(figureText(12_869.8, 'µs', 5), '12.87 ms');
  assert.equal(figureText(9.41, 'Gbit/s'), '9.41 Gbit/s');
  assert.equal(figureText(3, 'hops'), '3 hops');
  assert.equal(pageLabel('median round-trip time, us'), 'median round-trip time, µs');
  assert.equal(pageLabel('throughput, Gbit/s'), 'throughput, Gbit/s');
});
