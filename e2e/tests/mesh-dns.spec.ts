// The page's matrix agents by name (issues 11 and 12): `dns:NAME[:PORT]`
// asks a connected agent for the name's addresses (a browser cannot look up
// records) and adds an agent at each; a name with no address says so; one
// agent reached under two names is refused before any traffic (the agents'
// `instance`, protocol/src/matrix.rs `check_agents`); the matrix then runs.
import { meshTest as test, expect } from '../agents';

test('dns: adds an agent per address through a connected agent; one agent under two names is refused before any traffic', async ({ page, mesh }) => {
  const [a, b, c] = mesh.agents;
  await page.goto(`${a.origin}/`);
  await page.getByTestId('mode-matrix').click();
  const text = page.getByTestId('mesh-add-text');
  const rows = page.getByTestId('mesh-agent');
  // No agent yet to ask through.
  await text.fill(`dns:${b.host}:${b.port}#token=${b.token}`);
  await page.getByTestId('mesh-add').click();
  await expect(page.getByTestId('mesh-error')).toContainText('no connected agent to look up');
  await text.fill(mesh.urls[0]);
  await page.getByTestId('mesh-add').click();
  await expect(rows.nth(0)).toHaveAttribute('data-state', 'ready');
  // B by name, looked up by A.
  await text.fill(`dns:${b.host}:${b.port}#token=${b.token}`);
  await page.getByTestId('mesh-add').click();
  await expect(page.getByTestId('mesh-note')).toContainText('1 agent added');
  await expect(rows).toHaveCount(2);
  await expect(rows.nth(1)).toHaveAttribute('data-state', 'ready');
  await expect(rows.nth(1)).toContainText(`${b.host}:${b.port}`);
  // Again: every address is there already.
  await text.fill(`dns:${b.host}:${b.port}#token=${b.token}`);
  await page.getByTestId('mesh-add').click();
  await expect(page.getByTestId('mesh-note')).toContainText('0 agents added');
  await expect(rows).toHaveCount(2);
  // A name with no address.
  await text.fill('dns:no-such-host.invalid');
  await page.getByTestId('mesh-add').click();
  await expect(page.getByTestId('mesh-error')).toContainText('no-such-host.invalid');
  // C, then C again under the name localhost (it allows the page's origin):
  // one agent twice, refused before any traffic.
  await text.fill(mesh.urls[2]);
  await page.getByTestId('mesh-add').click();
  await text.fill(`http://localhost:${c.port}/#token=${c.token}`);
  await page.getByTestId('mesh-add').click();
  await expect(rows).toHaveCount(4);
  for (let i = 2; i < 4; i++) await expect(rows.nth(i)).toHaveAttribute('data-state', 'ready');
  await page.getByTestId('matrix-kind').selectOption('tcp_rr');
  await page.locator('input[type=radio][value=count]').check();
  await page.getByTestId('count').fill('100');
  await page.getByTestId('matrix-run').click();
  await expect(page.getByTestId('matrix-error')).toContainText(`agent C (${c.host}:${c.port}) and agent D (localhost:${c.port}) are one agent`);
  await expect(page.getByTestId('matrix-status')).toHaveAttribute('data-phase', 'failed');
  for (const x of mesh.agents) expect(x.output()).not.toContain(' test ');
  // Without it, the three agents' matrix runs.
  await rows.nth(3).getByTestId('mesh-remove').click();
  await expect(rows).toHaveCount(3);
  await page.getByTestId('matrix-run').click();
  await expect(page.getByTestId('matrix-status')).toHaveAttribute('data-phase', 'done', { timeout: 30_000 });
  await expect(page.locator('[data-testid=cell][data-state=done]')).toHaveCount(6);
});
