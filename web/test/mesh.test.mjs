// The matrix's agent list reads what users paste: the URL an agent prints,
// the fragment's HOST:PORT@TOKEN, lists of them; and names agents as the
// CLI's matrix table does.
import assert from 'node:assert/strict';
import { test } from 'node:test';

// mesh.svelte.ts holds its state in a Svelte rune; outside Svelte it is plain data.
globalThis.$state = Object.assign((v) => v, { raw: (v) => v });
const { parseEndpoint, parseEndpoints, short } = await import('../src/lib/matrix/mesh.svelte.ts');

test('the URL an agent prints, the fragment form and a bare address', () => {
  assert.deepEqual(parseEndpoint('http://127.0.0.1:7800/#token=3f9c'), { host: '127.0.0.1:7800', token: '3f9c' });
  assert.deepEqual(parseEndpoint('  https://[::1]:9000/#token=ab&x=1 '), { host: '[::1]:9000', token: 'ab' });
  assert.deepEqual(parseEndpoint('10.0.0.2:7800@a41e'), { host: '10.0.0.2:7800', token: 'a41e' });
  assert.deepEqual(parseEndpoint('node-3:7800'), { host: 'node-3:7800', token: '' });
  assert.throws(() => parseEndpoint('http:///#token=x'), /not an agent address/);
  assert.throws(() => parseEndpoint('a@b@c'), /paste the URL the agent prints/);
});

test('a pasted list: one per line, commas or spaces between', () => {
  const eps = parseEndpoints('http://h1:1/#token=a\nh2:2@b, h3:3\r\n\n');
  assert.deepEqual(eps.map((e) => e.host), ['h1:1', 'h2:2', 'h3:3']);
  assert.deepEqual(parseEndpoints('  \n '), []);
});

test('agents are named A..Z, then A1, B1, ... as meshperf run --matrix names them', () => {
  assert.equal(short(0), 'A');
  assert.equal(short(2), 'C');
  assert.equal(short(25), 'Z');
  assert.equal(short(26), 'A1');
  assert.equal(short(53), 'B2');
});
