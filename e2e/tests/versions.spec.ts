// Agents of other releases, seen from the page (issue 44 part 4): agent B is
// a WebSocket the test answers for (Playwright's routeWebSocket) with
// another release's hello and info; agent A is real and serves the page.
// An agent of a future protocol is refused before the page sends its
// token, in one line naming who to upgrade; an older agent without a kind
// is refused beside Run, naming it and its release, before any traffic.
import { expect, test } from '../agents';

const FAKE = '127.0.0.1:9';

test('an agent of a future protocol is refused in one line, and the page sends it no token', async ({ page, agents }) => {
  const got: string[] = [];
  await page.routeWebSocket(`ws://${FAKE}/ws`, (ws) => {
    ws.onMessage((m) => got.push(String(m)));
    ws.send(JSON.stringify({ type: 'hello', protocol: 2, protocol_max: 3 }));
  });
  await page.goto(`${agents.a.origin}/#token=${agents.a.token}&agent2=${FAKE}&token2=whatever-token-00`);
  await expect(page.getByTestId('error')).toContainText(
    `agent B (${FAKE}) speaks protocol 2 to 3, this meshperf 1: it is newer than this meshperf: upgrade this meshperf (or the page) to one that speaks it`,
  );
  expect(got).toEqual([]);
});

test('a kind an older agent does not run is refused beside Run, naming it and its release', async ({ page, agents }) => {
  // A's own info, as an older release would tell it: no path, no accepts.
  const side = await page.context().newPage();
  await side.goto(`${agents.a.origin}/`);
  const info = await side.evaluate(async (token) => {
    const ws = new WebSocket(`ws://${location.host}/ws`);
    return await new Promise<Record<string, unknown>>((resolve, reject) => {
      ws.onmessage = (e) => {
        const m = JSON.parse(String(e.data));
        if (m.type === 'hello') ws.send(JSON.stringify({ type: 'auth', id: 1, token }));
        else if (m.type === 'auth_ok') resolve(m.info);
        else reject(new Error(String(e.data)));
      };
    });
  }, agents.a.token);
  await side.close();
  const older = { ...info, version: '0.0.9', instance: '0123456789abcdef', capabilities: ['tcp_stream', 'tcp_rr', 'udp_rr'] };
  delete (older as { accepts?: unknown }).accepts;
  const got: Record<string, unknown>[] = [];
  await page.routeWebSocket(`ws://${FAKE}/ws`, (ws) => {
    ws.onMessage((m) => {
      const v = JSON.parse(String(m));
      got.push(v);
      if (v.type === 'auth') ws.send(JSON.stringify({ type: 'auth_ok', id: v.id, info: older }));
    });
    // An agent from before protocol_max.
    ws.send(JSON.stringify({ type: 'hello', protocol: 1 }));
  });
  await page.goto(`${agents.a.origin}/#token=${agents.a.token}&agent2=${FAKE}&token2=whatever-token-00`);
  await expect(page.locator('body')).toHaveAttribute('data-ready', '1');
  // It was not told a version (it speaks one).
  expect(got[0].type).toBe('auth');
  expect('protocol' in got[0]).toBe(false);
  await page.getByTestId('kind').selectOption('path');
  await expect(page.getByTestId('plan-problem')).toHaveText(
    `agent B (${FAKE}, meshperf 0.0.9) does not run path (it runs tcp_stream, tcp_rr, udp_rr): upgrade it`,
  );
  // A kind it runs is not refused.
  await page.getByTestId('kind').selectOption('tcp_rr');
  await expect(page.getByTestId('plan-problem')).toHaveCount(0);
  expect(got.map((m) => m.type)).toEqual(['auth']);
});
