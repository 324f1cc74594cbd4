// One path step as the page shows it (src/lib/path/path.ts): the hops of
// both directions side by side by TTL, each hop's RTT box from the real
// statistics module, the rows where the directions differ, the differences
// in words and the marks each way. The summary is shaped like
// tests/netns/path.sh's: three routers forth, a fourth on the way back, the
// MTU lowered forth, DSCP 46 rewritten forth, a silent router.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import * as stats from '../src/lib/wasm-pkg/meshperf_stats.js';
import { endOf, pathShow } from '../src/lib/path/path.ts';

stats.initSync({ module: fs.readFileSync(new URL('../src/lib/wasm-pkg/meshperf_stats_bg.wasm', import.meta.url)) });

const hop = (ttl, addr, rtt_us, extra = {}) => ({
  ttl,
  addr: addr ?? undefined,
  sent: 3,
  answered: rtt_us.length,
  rtt_us,
  silent: addr == null,
  peer: false,
  ...extra,
});
const mark = (dscp, ecn, verdict, got_dscp, extra = {}) => ({ dscp, ecn, sent: 4, received: verdict === 'lost' ? 0 : 4, got_dscp, got_ecn: ecn, verdict, ...extra });

const SUMMARY = {
  forth: {
    from: '10.1.0.2',
    to: '10.9.0.2',
    hops: [hop(1, '10.1.0.1', [100, 200, 400], { mtu: 1400 }), hop(2, '10.2.0.2', [300, 310]), hop(3, null, []), hop(4, '10.9.0.2', [500, 520, 540], { peer: true })],
    end: 'peer',
    peer_hop: 4,
    mtu: { bytes: 1400, local: 1500, lowered_at: 1, lowered_by: '10.1.0.1', probes: 9 },
    marks: [mark(0, 0, 'kept', 0), mark(46, 0, 'rewritten', 10, { changed_at: 2, changed_by: '10.2.0.2' })],
  },
  back: {
    from: '10.9.0.2',
    to: '10.1.0.2',
    hops: [hop(1, '10.9.0.1', [90]), hop(2, '10.4.0.1', [200, 220, 240]), hop(3, null, []), hop(4, '10.2.0.1', [400]), hop(5, '10.1.0.2', [600, 610, 620], { peer: true })],
    end: 'peer',
    peer_hop: 5,
    mtu: { bytes: 1500, local: 1500, probes: 1 },
    marks: [mark(0, 0, 'kept', 0), mark(46, 0, 'kept', 46)],
  },
  asymmetric: true,
  rtt_us: { median: 520 },
};

test('the hops of both directions side by side by TTL, the differing rows marked', () => {
  const s = pathShow(stats, SUMMARY);
  assert.deepEqual(s.rows.map((r) => r.ttl), [1, 2, 3, 4, 5]);
  // Hop 1 reported the MTU forth only; hop 3 silent both ways (the same, not a difference).
  assert.deepEqual(s.rows[0].differs, ['MTU 1400 forth, – back']);
  assert.deepEqual(s.rows[1].differs, []);
  assert.equal(s.rows[2].forth.who, '*');
  assert.equal(s.rows[2].forth.lost, 3);
  assert.deepEqual(s.rows[2].differs, []);
  // The peer forth at hop 4, a router back; hop 5 back only.
  assert.deepEqual(s.rows[3].differs, ['the peer forth, a router back']);
  assert.equal(s.rows[4].forth, null);
  assert.deepEqual(s.rows[4].differs, ['a hop back only']);
  assert.equal(s.rows[4].back.peer, true);
  assert.equal(s.rttMax, 620);
});

test("a hop's name where the agent looked it up (names), its address beside; none for a silent hop", () => {
  const named = structuredClone(SUMMARY);
  named.forth.hops[0].name = 'r1.path.test';
  named.forth.hops[2].name = 'not.shown.test'; // silent: no address, so no name either
  const s = pathShow(stats, named);
  assert.equal(s.rows[0].forth.name, 'r1.path.test');
  assert.equal(s.rows[0].forth.who, '10.1.0.1');
  assert.equal(s.rows[0].back.name, null);
  assert.equal(s.rows[2].forth.name, null);
  assert.equal(pathShow(stats, SUMMARY).rows[0].forth.name, null);
});

test("each hop's RTT box is the statistics module's five numbers of its answered probes", () => {
  const s = pathShow(stats, SUMMARY);
  // numpy's linear quartiles of 100, 200, 400: 150 and 300.
  assert.deepEqual(s.rows[0].forth.box, { n: 3, min: 100, q1: 150, median: 200, q3: 300, max: 400 });
  assert.deepEqual(s.rows[0].back.box, { n: 1, min: 90, q1: 90, median: 90, q3: 90, max: 90 });
  assert.equal(s.rows[2].forth.box, null, 'a silent hop has no box');
  assert.equal(s.rows[0].forth.lost, 0);
  assert.equal(s.rows[1].forth.lost, 1);
});

test('the differences in words: hop counts, path MTU, a mark rewritten one way; the marks table', () => {
  const s = pathShow(stats, SUMMARY);
  assert.deepEqual(s.differences, [
    'The routes differ: 4 hops forth, 5 hops back.',
    'The path MTU differs: 1400 bytes forth, 1500 back.',
    'DSCP 46 Not-ECT: rewritten to DSCP 10 Not-ECT forth, kept back.',
  ]);
  assert.deepEqual(s.ends, ['peer at hop 4', 'peer at hop 5']);
  assert.equal(s.mtus[0], '1400 bytes (interface 1500), lowered at hop 1 (10.1.0.1)');
  assert.deepEqual(s.marks.map((m) => [m.dscp, m.differs]), [[0, false], [46, true]]);
  assert.equal(s.marks[1].forth.at, 'hop 2 (10.2.0.2)');
});

test('a symmetric path has no differences; a serving side, another kind or a failed step none at all', () => {
  const same = { ...SUMMARY, back: { ...SUMMARY.forth, marks: SUMMARY.forth.marks.map((m) => ({ ...m })) }, asymmetric: false };
  const s = pathShow(stats, same);
  assert.deepEqual(s.differences, []);
  assert.ok(s.rows.every((r) => r.differs.length === 0));
  assert.equal(pathShow(stats, { back: SUMMARY.back }), null);
  assert.equal(pathShow(stats, { rtt_us: { median: 3 } }), null);
  assert.equal(pathShow(stats, null), null);
  assert.equal(endOf({ end: 'silence', hops: [hop(1, '10.1.0.1', [1]), hop(2, null, [])] }), 'ended in silence after hop 1: nothing past it answered');
});

test("loopback's path MTU: an interface above the IP datagram's 65535 reads as such, not as 65535 (issue 45, item 13)", async () => {
  const { mtuOf } = await import('../src/lib/path/path.ts');
  assert.equal(mtuOf({ mtu: { bytes: 65535, local: 65535, probes: 1 } }), '65535 bytes (interface 65535 or more: an IP datagram holds at most 65535)');
  assert.equal(mtuOf({ mtu: { bytes: 1500, local: 1500, probes: 1 } }), '1500 bytes (interface 1500)');
});
