// The pair's fragment: tokens and, for agents with TLS, the certificates'
// fingerprints (fp, fp2) kept through a rewrite so the address bar stays a
// URL meshperf run can pin by.
import assert from 'node:assert/strict';
import { test } from 'node:test';

const { readFragment, withoutTokens, writeFragment } = await import('../src/lib/agents/fragment.ts');

const FA = 'ab'.repeat(32);
const FB = 'cd'.repeat(32);

test('fp and fp2 are read and written back with their agents', () => {
  const hash = `#token=ta&fp=${FA}&agent2=10.0.0.2:7800&token2=tb&fp2=${FB}`;
  const e = readFragment(hash, '10.0.0.1:7800');
  assert.deepEqual(e.a, { host: '10.0.0.1:7800', token: 'ta', fp: FA });
  assert.deepEqual(e.b, { host: '10.0.0.2:7800', token: 'tb', fp: FB });
  assert.equal(writeFragment(e, '10.0.0.1:7800'), hash);
});

test('plain agents have no fp, and none is written', () => {
  const e = readFragment('#token=ta&agent2=h:1&token2=tb', 'own:1');
  assert.equal(e.a.fp, undefined);
  assert.equal(e.b.fp, undefined);
  assert.equal(writeFragment(e, 'own:1'), '#token=ta&agent2=h:1&token2=tb');
});

test('an agent\'s own URL (#token=T, no agent2) makes that agent both ends, and is written back as it was', () => {
  const e = readFragment('#token=ta', '127.0.0.1:7800');
  assert.deepEqual(e.a, { host: '127.0.0.1:7800', token: 'ta', fp: undefined });
  assert.deepEqual(e.b, e.a);
  assert.equal(writeFragment(e, '127.0.0.1:7800'), '#token=ta');
  const other = readFragment(`#agent=10.0.0.9:7800&token=ta&fp=${FA}`, 'own:1');
  assert.deepEqual(other.b, { host: '10.0.0.9:7800', token: 'ta', fp: FA });
  // A bare address names no agent: nothing to connect to, B stays empty.
  const bare = readFragment('', 'own:1');
  assert.deepEqual([bare.given, bare.b.host], [false, '']);
});

test('the tokens leave the fragment, everything else stays', () => {
  assert.equal(withoutTokens(`#token=ta&fp=${FA}&agent2=10.0.0.2:7800&token2=tb&fp2=${FB}`), `#fp=${FA}&agent2=10.0.0.2:7800&fp2=${FB}`);
  assert.equal(withoutTokens('#token=ta'), '');
  assert.equal(withoutTokens('#r=abc'), '#r=abc');
  assert.equal(withoutTokens('#token=ta&mesh=h:1@t1,h:2@t2'), '#mesh=h:1@t1,h:2@t2');
  // Read back without tokens, one agent is still both ends.
  const e = readFragment(withoutTokens('#token=ta'), 'own:1');
  assert.equal(e.given, false);
});

test('an agent address is host:port, host or [v6]:port; anything else is refused saying what was expected (issue 45, item 17)', async () => {
  const { addressError } = await import('../src/lib/agents/fragment.ts');
  for (const ok of ['127.0.0.1:18001', 'agent-b.example:7800', 'localhost', '[::1]:7800', 'host.local'])
    assert.equal(addressError(ok), null, ok);
  assert.equal(addressError('not a host'), 'expected host:port (e.g. 10.0.0.2:7800 or [::1]:7800), got "not a host"');
  for (const bad of ['', 'http://x:1', 'x:1/ws', 'a@b:1', '[::1', 'x:99999'])
    assert.notEqual(addressError(bad), null, bad);
  assert.equal(addressError('x:99999'), 'port 99999 is outside 1 to 65535');
});
