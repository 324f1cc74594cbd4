// The `rate asked` rows of a side's summary: a udp_stream sender that could
// not send at the rate asked says what it managed; summaries without
// `rate_reached` (tcp_stream, older results) show the rate alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { lostOfSent, rateAsked, share } from '../src/lib/result/rate.ts';
import { formatRate } from '../src/lib/units.ts';

test('a rate not reached says what the sender managed; older summaries show the rate alone', () => {
  const s = { rate: 1e12, rate_reached: false, send_bits_per_second: 4.213e9 };
  assert.equal(rateAsked(s), `${formatRate(1e12)}: not reached, the sender managed ${formatRate(4.213e9)}`);
  assert.equal(rateAsked(s), '1000 Gbit/s: not reached, the sender managed 4.213 Gbit/s');
  assert.equal(rateAsked({ rate: 20e6, rate_reached: true, send_bits_per_second: 19.9e6 }), `${formatRate(20e6)}: reached`);
  assert.equal(rateAsked({ rate: 50e6, bits_per_second: 49e6 }), formatRate(50e6));
  assert.equal(rateAsked({ wait_us: 20, send_bits_per_second: 1e9 }), null);
  assert.equal(rateAsked(undefined), null);
});

test("udp_stream's loss reads lost of sent with its share, as meshperf run prints it (issue 45, item 6)", () => {
  assert.equal(lostOfSent({ lost: 178474, sent: 447457 }), '178,474 of 447,457 (39.9%)');
  assert.equal(lostOfSent({ lost: 3, sent: 17860 }), '3 of 17,860 (0.0168%)');
  assert.equal(lostOfSent({ lost: 0, sent: 1785 }), '0 of 1,785 (0%)');
  // Without both counts (a TCP side), nothing.
  assert.equal(lostOfSent({ bytes: 1 }), null);
  assert.equal(lostOfSent({ lost: 0, sent: 0 }), null);
  // The CLI's share (agent/src/run/rate_out.rs): 3 significant digits.
  assert.equal(share(0.00501), '0.501%');
  assert.equal(share(0.973), '97.3%');
});
