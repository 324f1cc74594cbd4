// A side's `line` that is a seed's record shows under the seed's field
// names (issue 29: semicolon-separated numbers with no header on the page);
// prose lines and kinds without a seed record stay as they are.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seedRecord } from '../src/lib/result/seedline.ts';
import { SEED_HEADINGS } from '../src/lib/generated/params.ts';

test("a request/response requester's record reads under tcp_req's heading", () => {
  // A tcp_rr requester's line as the agent writes it (seed 004's 11 fields).
  const r = seedRecord('tcp_rr', '64; 64; 1; 1000; 0; 15.2; 8.42; 15.2; 11.1; 60.3; 0');
  assert.equal(r.names.length, 11);
  assert.deepEqual([r.names[0], r.values[0]], ['response len bytes', '64']);
  assert.deepEqual([r.names[5], r.values[5]], ['time/frame us', '15.2']);
  assert.equal(seedRecord('udp_rr', '1; 2')?.names, undefined);
  // A responder's line is prose.
  assert.equal(seedRecord('udp_rr', 'answered 1000 requests of 64 bytes with 64 bytes'), null);
});

test("udp_stream's line reads under udp_bw_mon's quiet-mode names; stream kinds have none", () => {
  assert.equal(SEED_HEADINGS.udp_stream.split('; ').length, 26);
  const line = Array.from({ length: 26 }, (_, i) => String(i)).join('; ');
  const r = seedRecord('udp_stream', line);
  assert.deepEqual([r.names[3], r.values[3]], ['pkt_len', '3']);
  assert.equal(seedRecord('tcp_stream', 'sent 10 bytes in 1 s; received 10 bytes in 1 s'), null);
  assert.equal(SEED_HEADINGS.tcp_stream, undefined);
});
