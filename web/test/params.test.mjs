// The form's parameter tables are the agent's (generated from
// protocol/src/params/spec.rs): every kind has its parameters, the ranges the
// agent enforces reach the form, and a plan outside them is refused before
// anything runs.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TABLE } from '../src/lib/generated/params.ts';
import { alternatives, KINDS, rangeError, sweepable } from '../src/lib/plan/kinds.ts';
import { parseSize } from '../src/lib/units.ts';

// plan.svelte.ts holds its state in a Svelte rune; outside Svelte it is plain data.
globalThis.$state = (v) => v;
const { buildPlan, loadPlan, plan, setKind, unpicked } = await import('../src/lib/plan/plan.svelte.ts');

const spec = (kind, name) => KINDS[kind].params.find((p) => p.name === name);

/** The plan of `kind` with these field texts, as the Run button builds it (`rate` given: the rate chosen). */
function build(kind, values, bound = 'count') {
  setKind(kind);
  Object.assign(plan.values, values);
  plan.bound = bound;
  if (values.rate != null && 'rate' in plan.picks) plan.picks.rate = 'rate';
  return buildPlan(plan);
}

// The parameters each kind's parser reads (protocol/src/params/), in the
// form's order, written out here rather than read from the table the form is
// built from; the unix_* kinds without the IP-only ones (TOS, congestion
// control, MSS, binds, rate, probes). A parameter added to a parser is added
// here when it reaches the form.
const STREAM = ['msg_bytes', 'count', 'duration_s', 'recv_count', 'streams', 'direction', 'wait_us'];
const STREAM_MORE = ['omit_s', 'read_bytes'];
const RR = ['req_bytes', 'resp_bytes', 'count', 'duration_s', 'wait_us', 'write_bytes', 'busy_poll'];
const IP = ['tos', 'precedence', 'congestion', 'mss', 'client_bind', 'server_bind'];
const PAGE = {
  tcp_stream: [...STREAM, 'rate', ...STREAM_MORE, 'nodelay', 'rcvlowat', 'payload', 'payload_file', 'zerocopy', 'sndbuf', 'rcvbuf', ...IP, 'interval_ms', 'threads', 'cpus', 'server_cpus', 'probe_ms', 'probe_bytes', 'clocks'],
  tcp_rr: [...RR, 'nodelay', 'sndbuf', 'rcvbuf', ...IP, 'interval_ms', 'flows', 'threads'],
  tcp_crr: ['req_bytes', 'resp_bytes', 'count', 'duration_s', 'connect_timeout_ms', 'nodelay', 'sndbuf', 'rcvbuf', ...IP, 'interval_ms', 'flows', 'threads'],
  udp_stream: ['pkt_bytes', 'count', 'duration_s', 'wait_us', 'rate', 'streams', 'direction', 'omit_s', 'sndbuf', 'rcvbuf', 'tos', 'precedence', 'client_bind', 'server_bind', 'overhead_bytes', 'timeout_ms', 'probe_ms', 'probe_bytes', 'clocks', 'gso', 'threads', 'cpus', 'server_cpus'],
  udp_rr: ['req_bytes', 'resp_bytes', 'count', 'duration_s', 'timeout_ms', 'wait_us', 'sndbuf', 'rcvbuf', 'tos', 'precedence', 'client_bind', 'server_bind', 'interval_ms'],
  unix_stream: [...STREAM, ...STREAM_MORE, 'payload', 'sndbuf', 'rcvbuf', 'interval_ms', 'threads', 'cpus', 'server_cpus'],
  unix_rr: [...RR, 'sndbuf', 'rcvbuf', 'interval_ms'],
  latency_under_load: ['idle_s', 'download_s', 'upload_s', 'both_s', 'gap_s', 'streams', 'msg_bytes', 'probe_ms', 'probe_bytes', 'clocks', 'interval_ms', 'client_bind', 'server_bind'],
  path: ['max_hops', 'probes', 'wait_ms', 'first_ttl', 'mtu', 'dscp', 'ecn', 'marks_count', 'names', 'client_bind', 'server_bind'],
  stamp: ['target', 'count', 'duration_s', 'wait_us', 'timeout_ms', 'pkt_bytes', 'auth', 'tos', 'precedence', 'cos', 'clock', 'ssid'],
};

test('every kind the agent has is on the page, with every parameter its parser reads', () => {
  assert.deepEqual(Object.keys(KINDS), Object.keys(PAGE));
  for (const [kind, { label, params }] of Object.entries(KINDS)) {
    assert.ok(label, kind);
    const all = TABLE[kind].params;
    const ipOnly = all.filter((p) => p.tcp).map((p) => p.name);
    assert.deepEqual(params.map((p) => p.name), PAGE[kind], kind);
    assert.ok(params.length >= 10, `${kind}: ${params.length} parameters`);
    if (kind.startsWith('unix_')) assert.ok(ipOnly.length > 0 && !params.some((p) => p.tcp), kind);
    for (const p of params) assert.ok(p.label && p.type, `${kind} ${p.name}`);
  }
});

test('the agent\'s minimums reach the form: udp_rr req_bytes from 18, not 1', () => {
  for (const name of ['req_bytes', 'resp_bytes']) {
    assert.equal(spec('udp_rr', name).min, 18, name);
    assert.equal(spec('udp_rr', name).max, 65507, name);
    assert.equal(spec('tcp_rr', name).min, 1, name);
    assert.equal(spec('tcp_rr', name).maxLimit, 'max_msg_bytes', name);
  }
  assert.equal(spec('udp_stream', 'pkt_bytes').min, 18);
  assert.equal(spec('tcp_stream', 'mss').min, 88);
  assert.equal(spec('tcp_stream', 'precedence').max, 7);
  assert.equal(spec('tcp_stream', 'streams').maxLimit, 'max_streams');
  // flows: up to the agent's --max-flows, tcp_rr's on TCP only (not unix_rr).
  for (const kind of ['tcp_rr', 'tcp_crr']) assert.deepEqual([spec(kind, 'flows').min, spec(kind, 'flows').maxLimit], [1, 'max_flows'], kind);
  assert.equal(spec('unix_rr', 'flows'), undefined);
  // A millisecond at least (1e-300 s was accepted once).
  assert.deepEqual([spec('udp_rr', 'duration_s').min, !!spec('udp_rr', 'duration_s').minExclusive], [0.001, false]);
  // Every number has a range; nothing else has one.
  for (const { params } of Object.values(KINDS)) {
    for (const p of params) assert.equal(p.min != null, ['size', 'int', 'float', 'rate'].includes(p.type), p.name);
  }
});

test('defaults show as the agent applies them, pre-filled values are within range', () => {
  assert.equal(spec('tcp_stream', 'msg_bytes').def, '128K');
  assert.equal(spec('tcp_stream', 'msg_bytes').initial, '128K'); // the default the CLI applies (issue 45 item 21)
  assert.equal(spec('tcp_stream', 'read_bytes').def, '= message size');
  assert.equal(spec('tcp_rr', 'nodelay').def, 'true');
  assert.equal(spec('tcp_stream', 'nodelay').def, 'false');
  assert.equal(spec('udp_stream', 'count').initial, '10000');
  assert.equal(spec('udp_stream', 'pkt_bytes').initial, '1400');
  assert.equal(spec('tcp_stream', 'sndbuf').def, '');
  for (const [kind, { params }] of Object.entries(KINDS)) {
    for (const p of params) {
      if (p.initial == null || p.type === 'enum') continue;
      const v = p.type === 'size' ? parseSize(p.initial) : Number(p.initial);
      assert.equal(rangeError(p, v), null, `${kind} ${p.name} = ${p.initial}`);
    }
  }
});

test('every parameter with a number can be swept, and the sweep axes come from the table', () => {
  assert.deepEqual(sweepable('udp_rr').slice(0, 5), ['req_bytes', 'resp_bytes', 'count', 'duration_s', 'timeout_ms']);
  assert.ok(sweepable('tcp_stream').includes('transport'));
  assert.ok(!sweepable('unix_stream').includes('mss'));
});

test('a plan outside the ranges is refused before anything runs, naming the parameter', () => {
  const refused = (kind, values, re, bound) => {
    const r = build(kind, values, bound);
    assert.ok('error' in r, `${kind} ${JSON.stringify(values)} was accepted`);
    assert.match(r.error, re);
  };
  refused('udp_rr', { req_bytes: '17' }, /^req_bytes: must be between 18 and 65507, got 17$/);
  refused('udp_rr', { resp_bytes: '64K' }, /^resp_bytes: must be between 18 and 65507, got 64K$/);
  refused('udp_stream', { pkt_bytes: '1' }, /^pkt_bytes: .*18/);
  refused('tcp_stream', { msg_bytes: '0' }, /^msg_bytes: must be at least 1, got 0$/);
  refused('tcp_stream', { mss: '87' }, /^mss: must be between 88 and 65535/);
  refused('tcp_stream', { precedence: '8' }, /^precedence: must be between 0 and 7/);
  refused('tcp_rr', { duration_s: '0' }, /^duration_s: must be at least 0\.001, got 0$/, 'duration');
  // Above an agent's own limits (from its hello) is refused for every
  // expanded step by the step driver before the run (protocol/src/driver.rs
  // `check_step`, tested there, in agent/tests/integration/run.rs and in e2e), not here.
  // A sweep's values too: every list item, and where a range starts.
  setKind('udp_rr');
  plan.bound = 'count';
  plan.axes = [{ param: 'req_bytes', form: 'list', list: '64, 10', from: '', to: '', step: '', lo: '', hi: '', perOctave: '1' }];
  assert.match(buildPlan(plan).error, /^req_bytes list item: must be between 18 and 65507, got 10$/);
  plan.axes = [{ param: 'resp_bytes', form: 'range', list: '', from: '64', to: '1500', step: '8', lo: '', hi: '', perOctave: '1' }];
  assert.deepEqual(buildPlan(plan).plan.sweep, { resp_bytes: { from: 64, to: 1500, step: 8 } });
});

test('at the edges of the ranges a plan builds', () => {
  const params = (kind, values, bound) => {
    const r = build(kind, values, bound);
    assert.ok('plan' in r, r.error);
    return r.plan.params;
  };
  assert.equal(params('udp_rr', { req_bytes: '18', resp_bytes: '65507' }).req_bytes, 18);
  assert.equal(params('tcp_stream', { msg_bytes: '64M', streams: '64' }).streams, 64);
  assert.equal(params('tcp_rr', { duration_s: '0.5' }, 'duration').duration_s, 0.5);
  assert.equal(params('udp_stream', { wait_us: '0' }).wait_us, 0);
});

test('a rate reads as iperf3 -b does (k, M, G: powers of 1000), and by time', () => {
  for (const kind of ['udp_stream', 'tcp_stream']) {
    assert.equal(spec(kind, 'rate').type, 'rate', kind);
    assert.ok(sweepable(kind).includes('rate'), kind);
  }
  const r = build('udp_stream', { wait_us: '', rate: '20M', duration_s: '1', omit_s: '0.5', direction: 'both' }, 'duration');
  assert.ok('plan' in r, r.error);
  assert.deepEqual(
    [r.plan.params.rate, r.plan.params.duration_s, r.plan.params.omit_s, r.plan.params.direction, r.plan.params.count],
    [20e6, 1, 0.5, 'both', undefined],
  );
  assert.equal(build('tcp_stream', { rate: '1.5G' }).plan.params.rate, 1.5e9);
  assert.match(build('udp_stream', { rate: '20Mbit' }).error, /^rate: "20Mbit" is not a rate/);
  assert.match(build('udp_stream', { rate: '0' }).error, /^rate: must be above 0/);
});

test('latency_under_load builds from the form and its probe interval is bounded', () => {
  const r = build('latency_under_load', {});
  assert.ok('plan' in r, r.error);
  assert.deepEqual(
    [r.plan.kind, r.plan.params.idle_s, r.plan.params.download_s, r.plan.params.probe_ms, r.plan.params.clocks],
    ['latency_under_load', 5, 7, 5, 'estimate'],
  );
  assert.match(build('latency_under_load', { probe_ms: '0.5' }).error, /^probe_ms: must be between 1 and 1000, got 0.5$/);
  assert.match(build('latency_under_load', { idle_s: '0' }).error, /^idle_s: must be above 0/);
  assert.match(build('latency_under_load', { gap_s: '-1' }).error, /^gap_s: must not be negative, got -1$/);
});

test('udp_stream: wait or rate is one choice, and a typed rate on the new form runs by rate alone', () => {
  assert.deepEqual(alternatives('udp_stream'), [['rate', 'wait_us']]);
  assert.deepEqual(alternatives('tcp_stream'), [], 'tcp_stream takes a rate and a wait together');
  // The form as a new user finds it: the wait pre-filled (20 us), chosen.
  setKind('udp_stream');
  assert.equal(plan.values.wait_us, '20');
  assert.deepEqual([...unpicked(plan)], ['rate']);
  // Choosing the rate and typing one: the wait (still 20 in its hidden field) is not sent.
  plan.picks.rate = 'rate';
  plan.values.rate = '100M';
  const r = buildPlan(plan);
  assert.ok('plan' in r, r.error);
  assert.equal(r.plan.params.rate, 100e6);
  assert.equal(r.plan.params.wait_us, undefined);
  // Back to the wait: the rate's text stays in its field but is not sent.
  plan.picks.rate = 'wait_us';
  assert.deepEqual([buildPlan(plan).plan.params.wait_us, buildPlan(plan).plan.params.rate], [20, undefined]);
  // A swept rate is the chosen one whatever the radio says.
  plan.axes = [{ param: 'rate', form: 'list', list: '10M, 20M', from: '', to: '', step: '', lo: '', hi: '', perOctave: '1' }];
  assert.equal(buildPlan(plan).plan.params.wait_us, undefined);
  // A loaded plan chooses what it gives.
  loadPlan({ kind: 'udp_stream', params: { rate: 5e6, duration_s: 2 }, sweep: {}, repeat: 1 });
  assert.equal(plan.picks.rate, 'rate');
  loadPlan({ kind: 'udp_stream', params: { wait_us: 50 }, sweep: {}, repeat: 1 });
  assert.equal(plan.picks.rate, 'wait_us');
});

test('a refused field is named: the parameter, and the message without it for beside the field', () => {
  const r = build('udp_stream', { pkt_bytes: '1' });
  assert.equal(r.param, 'pkt_bytes');
  assert.match(r.why, /^must be between 18 and/);
  assert.equal(r.error, `pkt_bytes: ${r.why}`);
  const d = build('tcp_rr', { duration_s: '' }, 'duration');
  assert.equal(d.param, 'duration_s');
  assert.match(d.why, /^give the test duration/);
});

test('by rate with the rate field empty is refused beside the field, not run at the default wait (issue 45, item 15)', () => {
  setKind('udp_stream');
  plan.bound = 'count';
  plan.picks.rate = 'rate';
  plan.values.rate = '';
  const r = buildPlan(plan);
  assert.equal(r.param, 'rate');
  assert.equal(r.error, 'rate: give the rate, e.g. 20M (or choose wait)');
  plan.values.rate = '20M';
  assert.equal(buildPlan(plan).plan.params.rate, 20e6);
  // By wait, an empty wait runs at its default as before.
  plan.picks.rate = 'wait_us';
  plan.values.wait_us = '';
  assert.ok(buildPlan(plan).plan);
});

test('a plan by duration keeps its seconds across kinds; choosing duration fills an empty field (issue 45, item 14)', async () => {
  const { chooseBound, DEFAULT_DURATION_S } = await import('../src/lib/plan/plan.svelte.ts');
  setKind('tcp_stream');
  plan.bound = 'count';
  plan.values.duration_s = '';
  chooseBound('duration');
  assert.equal(plan.values.duration_s, DEFAULT_DURATION_S);
  plan.values.duration_s = '3';
  setKind('udp_stream');
  assert.equal(plan.bound, 'duration');
  assert.equal(plan.values.duration_s, '3');
  assert.equal(buildPlan(plan).plan.params.duration_s, 3);
  chooseBound('count');
  setKind('tcp_rr');
  assert.equal(plan.values.duration_s, '');
});
