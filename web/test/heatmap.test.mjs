// The heatmap's pure parts (src/lib/matrix/grid.ts, colour.ts): which cell a
// point is in, agents matched across matrices by the address the page
// reached them at, the ratio cells, and the diverging scale centred on 1.
import assert from 'node:assert/strict';
import { test } from 'node:test';

globalThis.$state = Object.assign((v) => v, { raw: (v) => v });
const { cellAt, layout, agentKeys, matchAgents, ratioCells, matrixSize } = await import('../src/lib/matrix/grid.ts');
const { ratioColourAt, ratioPosition, ratioSpan } = await import('../src/lib/matrix/colour.ts');

test('layout: 64 agents fit 1100 px; a point maps to its cell, the gutters and beyond to none', () => {
  const l = layout(64, 1100);
  assert.ok(l.width <= 1100 && l.cw >= 6, JSON.stringify(l));
  assert.deepEqual(cellAt(l, l.left + 0.5, l.top + 0.5), [0, 0]);
  assert.deepEqual(cellAt(l, l.left + 5 * l.cw + 1, l.top + 63 * l.ch + 1), [63, 5]);
  assert.equal(cellAt(l, l.left - 1, l.top + 1), null);
  assert.equal(cellAt(l, l.left + 64 * l.cw, l.top + 1), null);
  const small = layout(3, 1100);
  assert.equal(small.cw, 72);
  assert.equal(small.ch, 34);
});

const agent = (endpoint, hostname = 'vm') => ({ hostname, endpoint });
const step = (client, server, median, error) => ({ pair: { client, server }, error, summary: { median } });
const fig = (s) => [[s.pair.client, s.pair.server, s.summary?.median ?? null]];

test('agents match by endpoint (case-insensitive), else by a unique host name, never by position', () => {
  assert.deepEqual(agentKeys([agent('H:1'), { hostname: 'x' }, { hostname: 'y' }, { hostname: 'y' }, null]), ['@h:1', '=x', '#2', '#3', '#4']);
  assert.deepEqual(matchAgents([agent('a:1'), agent('b:2'), agent('c:3')], [agent('C:3'), agent('a:1')]), [1, -1, 0]);
  // Two agents of one host without endpoints: no match rather than a guess.
  assert.deepEqual(matchAgents([{ hostname: 'vm' }, { hostname: 'vm' }], [{ hostname: 'vm' }, { hostname: 'vm' }]), [-1, -1]);
});

test('ratio cells: b / a per pair with the agents in another order; missing, failed and zero cells are marked', () => {
  const a = { agents: [agent('a:1'), agent('b:2'), agent('c:3')], steps: [step(0, 1, 10), step(1, 0, 20), step(0, 2, 5), step(2, 0, 0), step(1, 2, 8, 'boom')] };
  // b lists the agents as c, a, d (d is new; b is gone).
  const b = { agents: [agent('c:3'), agent('a:1'), agent('d:4')], steps: [step(1, 0, 7.5), step(0, 1, 3), step(1, 2, 1), step(0, 2, 2)] };
  assert.equal(matrixSize(b), 3);
  const { cells, onlyInA } = ratioCells(a, b, fig);
  assert.deepEqual(onlyInA, [1]);
  // b's (a -> c) = 7.5 over a's (a -> c) = 5.
  assert.equal(cells[1][0].value, 1.5);
  assert.deepEqual([cells[1][0].a, cells[1][0].b, cells[1][0].state, cells[1][0].step], [5, 7.5, 'done', 0]);
  // c -> a was 0 in the baseline: no ratio.
  assert.equal(cells[0][1].value, null);
  assert.match(cells[0][1].error, /baseline is 0/);
  // d is not in the baseline.
  assert.match(cells[1][2].error, /not in the baseline/);
  assert.equal(cells[1][2].b, 1);
  assert.equal(cells[2][2].state, 'self');
  // A failed baseline pair says so.
  const failed = ratioCells({ ...a, agents: a.agents }, { agents: a.agents, steps: [step(1, 2, 4)] }, fig).cells[1][2];
  assert.match(failed.error, /failed: boom/);
  assert.equal(failed.value, null);
});

test('the ratio scale: 1 in the middle, 0.5 and 2 symmetric, noise under 10% near neutral', () => {
  const span = ratioSpan([0.5, 1.2, 2, NaN, 0]);
  assert.equal(span, Math.log(2));
  assert.equal(ratioPosition(1, span), 0.5);
  assert.ok(Math.abs(ratioPosition(2, span) - 1) < 1e-12 && Math.abs(ratioPosition(0.5, span)) < 1e-12);
  assert.equal(ratioSpan([1.01, 0.99]), Math.log(1.1));
  assert.equal(ratioColourAt(0.5), 'rgb(247 247 247)');
  assert.equal(ratioColourAt(0), 'rgb(33 102 172)');
  assert.equal(ratioColourAt(NaN), 'rgb(247 247 247)');
});
