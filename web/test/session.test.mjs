// The pair's tokens leave the address bar once used and wait in this tab's
// sessionStorage, so a reload still connects (web/src/lib/agents/session.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';

// What the page's window gives session.ts: a storage, the address and history.
const store = new Map();
globalThis.sessionStorage = {
  getItem: (k) => (store.has(k) ? store.get(k) : null),
  setItem: (k, v) => store.set(k, String(v)),
};
globalThis.location = { pathname: '/', search: '', hash: '' };
globalThis.history = {
  state: null,
  replaceState(_s, _t, url) {
    location.hash = url.slice(url.indexOf('#') >= 0 ? url.indexOf('#') : url.length);
  },
};

const { readFragment } = await import('../src/lib/agents/fragment.ts');
const { keepForSession, withSession } = await import('../src/lib/agents/session.ts');
const OWN = '127.0.0.1:7800';
const open = () => withSession(readFragment(location.hash, OWN));

test('connected: no token in the address, and a reload connects to the same pair with the same tokens', () => {
  store.clear();
  location.hash = '#token=ta&agent2=127.0.0.1:7801&token2=tb';
  const first = open();
  keepForSession(first);
  assert.equal(location.hash, '#agent2=127.0.0.1:7801');
  const again = open();
  assert.deepEqual([again.given, again.a.host, again.a.token, again.b.host, again.b.token], [true, OWN, 'ta', '127.0.0.1:7801', 'tb']);
});

test('one agent as both ends survives a reload as both ends', () => {
  store.clear();
  location.hash = '#token=ta';
  keepForSession(open());
  assert.equal(location.hash, '');
  const again = open();
  assert.deepEqual([again.a, again.b].map((e) => [e.host, e.token]), [[OWN, 'ta'], [OWN, 'ta']]);
});

test('a new fragment wins over the session; a token from the session fills only the same address', () => {
  store.clear();
  location.hash = '#token=ta&agent2=127.0.0.1:7801&token2=tb';
  keepForSession(open());
  location.hash = '#token=tc&agent2=127.0.0.1:7802';
  const e = open();
  assert.deepEqual([e.a.token, e.b.host, e.b.token], ['tc', '127.0.0.1:7802', '']);
  store.clear();
  location.hash = '';
  assert.equal(open().given, false);
});
