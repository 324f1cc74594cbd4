// The results layout and the keyboard (issue 26, parts 2 and 4), against two
// real agents and a real Standard test (its quick length): at 1400 x 900 the
// verdict, every figure of the card and the three lanes are on the screen the
// finished run leaves (no scrolling by the test), with the runs list beside
// them; the other views are tabs. Every control is reached by Tab and shows
// its focus; the tabs answer the arrow keys; at 1024 and 375 px wide nothing
// overflows sideways in any view. Screenshots at each size are attached.
import type { Page, TestInfo } from '@playwright/test';
import { test, expect } from '../agents';

test.use({ viewport: { width: 1400, height: 900 } });

async function standardTest(page: Page) {
  await page.waitForFunction(() => document.body.dataset.ready === '1');
  await page.getByTestId('standard-length').selectOption('quick');
  await page.getByTestId('standard-test').click();
  await expect(page.getByTestId('result')).toHaveAttribute('data-steps', '1', { timeout: 30_000 });
  await expect(page.getByTestId('cancel')).toBeDisabled({ timeout: 30_000 });
  await expect(page.getByTestId('step-error')).toHaveCount(0);
  await expect(page.getByTestId('lul-card')).toBeVisible();
  await expect(page.getByTestId('lul-lanes').locator('canvas')).toHaveCount(3);
  // The latency lane's scale: probes above its top are counted and said (issue 45, item 11).
  const off = Number(await page.getByTestId('lul-lanes').getAttribute('data-off-scale'));
  expect(Number.isInteger(off) && off >= 0).toBe(true);
  if (off > 0) await expect(page.getByTestId('lul-lanes')).toContainText(`${off} value${off === 1 ? '' : 's'} above it`);
}

async function shot(page: Page, info: TestInfo, name: string) {
  const path = info.outputPath(`${name}.png`);
  await page.screenshot({ path, fullPage: true });
  await info.attach(name, { path, contentType: 'image/png' });
}

/** The page's width against what it lays out: no sideways scrolling. */
const widths = (page: Page) =>
  page.evaluate(() => {
    const d = document.documentElement;
    const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > d.clientWidth + 0.5 && !e.closest('.scroll'));
    return { scroll: d.scrollWidth, client: d.clientWidth, wide: wide.slice(0, 3).map((e) => `${e.tagName}.${e.className}`) };
  });

const views = (page: Page) => page.getByRole('tablist', { name: 'views of this step' }).getByRole('tab');

/** Every view in turn (chosen by the arrow keys from the first tab): the page never overflows sideways. */
async function noOverflowInAnyView(page: Page, width: number) {
  const tabs = views(page);
  await tabs.first().focus();
  await page.keyboard.press('Home');
  const n = await tabs.count();
  for (let i = 0; i < n; i++) {
    if (i) await page.keyboard.press('ArrowRight');
    await expect(tabs.nth(i)).toHaveAttribute('aria-selected', 'true');
    const w = await widths(page);
    expect(w.client, `${width} px`).toBe(width);
    expect(w.scroll, `${width} px, view ${await tabs.nth(i).textContent()}: ${w.wide.join(', ')}`).toBeLessThanOrEqual(w.client);
  }
}

test('after a Standard test at 1400 x 900 the verdict, the figures and the lanes fit the first screen; 1024 and 375 px do not overflow', async ({ page, agents }, info) => {
  test.setTimeout(120_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(agents.url());
  await standardTest(page);
  // The finished run brought itself into view; the test does not scroll.
  const inView = async (what: string, l: ReturnType<Page['getByTestId']>) => {
    const b = (await l.boundingBox())!;
    expect(b, what).toBeTruthy();
    expect(b.y, `${what} top`).toBeGreaterThanOrEqual(0);
    expect(b.y + b.height, `${what} bottom`).toBeLessThanOrEqual(900);
    expect(b.x, `${what} left`).toBeGreaterThanOrEqual(0);
    expect(b.x + b.width, `${what} right`).toBeLessThanOrEqual(1400);
    return b;
  };
  await inView('verdict', page.getByTestId('lul-verdict'));
  const figs = page.getByTestId('lul-fig');
  expect(await figs.count()).toBe(33);
  for (const key of ['download.down', 'upload.up', 'both.sum', 'idle.rtt.median', 'both.added_rtt.p99', 'both.added_down.median', 'loss.down'])
    await inView(key, figs.and(page.locator(`[data-key="${key}"]`)));
  for (let i = 0; i < 33; i++) await inView(`figure ${i}`, figs.nth(i));
  const lanes = await inView('lanes', page.getByTestId('lul-lanes'));
  for (const id of ['tput', 'latency', 'loss']) await inView(`lane ${id}`, page.getByTestId(`lul-lane-${id}`));
  // The runs list beside the result, not below it.
  const runs = await inView('runs', page.getByRole('region', { name: 'stored runs' }));
  expect(runs.x).toBeGreaterThan(lanes.x + lanes.width);
  await expect(page.getByTestId('runs').locator('li')).toHaveCount(1);
  // The other views one click away: tabs right under the lanes.
  await expect(views(page)).toHaveText(['Agents', 'Over time', 'Statistics', 'Histogram', 'CDF', 'Compare runs']);
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  info.annotations.push({ type: 'page height at 1400 x 900', description: `${height} px` });
  console.log(`layout: page height after the Standard test at 1400 x 900: ${height} px; lanes end ${Math.round(lanes.y + lanes.height)} px down the screen`);
  await shot(page, info, 'standard-1400x900');
  expect((await widths(page)).scroll).toBeLessThanOrEqual(1400);

  await page.setViewportSize({ width: 1024, height: 768 });
  await noOverflowInAnyView(page, 1024);
  // Too narrow for a column of runs: behind a toggle above the result.
  await expect(page.getByTestId('runs')).toBeHidden();
  await shot(page, info, 'standard-1024x768');

  await page.setViewportSize({ width: 375, height: 740 });
  await noOverflowInAnyView(page, 375);
  await page.getByTestId('runs-toggle').focus();
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('runs')).toBeVisible();
  await expect(page.getByTestId('runs-toggle')).toHaveAttribute('aria-expanded', 'true');
  expect((await widths(page)).scroll).toBeLessThanOrEqual(375);
  await page.getByTestId('lul-card').scrollIntoViewIfNeeded();
  await shot(page, info, 'standard-375x740');
  expect(errors).toEqual([]);
});

/** What has the focus: its mark (set by `mark`), whether it shows a focus outline. */
const focused = (page: Page) =>
  page.evaluate(() => {
    const e = document.activeElement as HTMLElement | null;
    if (!e || e === document.body) return null;
    const cs = getComputedStyle(e);
    return {
      id: e.dataset.kbd ?? `unmarked ${e.tagName}.${e.className} ${e.getAttribute('type') ?? ''} ${e.getAttribute('name') ?? ''} ${e.dataset.testid ?? ''} in ${e.parentElement?.textContent?.trim().slice(0, 40)}`,
      ring: e.matches(':focus-visible') && cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) >= 1,
    };
  });

/** Marks every control a user can see (a named radio group counts once: its checked radio), and returns their names. */
const mark = (page: Page) =>
  page.evaluate(() => {
    const all = [...document.querySelectorAll<HTMLElement>('button, select, input, textarea, a[href], summary, [tabindex]')];
    const names: Record<string, string> = {};
    let i = 0;
    for (const e of all) {
      delete e.dataset.kbd;
      // Shown: not hidden, not in a closed <details> (content-visibility), not invisible.
      const off = (e as HTMLButtonElement).disabled || e.tabIndex < 0 || !e.checkVisibility({ visibilityProperty: true });
      if (off || (e instanceof HTMLInputElement && e.type === 'radio' && e.name && !e.checked)) continue;
      e.dataset.kbd = String(i);
      names[i++] = `${e.tagName.toLowerCase()} ${e.dataset.testid ?? e.getAttribute('aria-label') ?? e.textContent?.trim().slice(0, 30) ?? ''}`;
    }
    return names;
  });

/** Presses Tab until the focus comes back round; the controls it reached, in order. */
async function tabRound(page: Page): Promise<{ id: string; ring: boolean }[]> {
  const seen: { id: string; ring: boolean }[] = [];
  for (let i = 0; i < 400; i++) {
    await page.keyboard.press('Tab');
    const f = await focused(page);
    if (!f) continue;
    if (seen.length && f.id === seen[0].id) return seen;
    seen.push(f);
  }
  throw new Error(`no round within 400 presses of Tab: ${seen.map((s) => s.id).join(', ')}`);
}

test('keyboard alone: every control reached by Tab and visibly focused; every view and the matrix by the arrow keys', async ({ page, agents }) => {
  test.setTimeout(120_000);
  await page.goto(agents.url());
  await standardTest(page);
  const names = await mark(page);
  const round = await tabRound(page);
  // Each visible control once per round, every one showing its focus.
  expect(round.filter((f) => !f.ring).map((f) => f.id)).toEqual([]);
  const reached = new Set(round.map((f) => f.id));
  expect(round.length).toBe(reached.size);
  expect(Object.keys(names).filter((k) => !reached.has(k)).map((k) => names[k])).toEqual([]);
  expect([...reached].filter((id) => !(id in names))).toEqual([]);
  // The step's views: one Tab stop (the chosen tab), then its panel.
  const tabs = views(page);
  const n = await tabs.count();
  expect(n).toBe(6);
  for (let i = 0; i < n; i++) expect(await tabs.nth(i).getAttribute('tabindex')).toBe((await tabs.nth(i).getAttribute('aria-selected')) === 'true' ? '0' : '-1');

  // From the chosen tab (reached by Tab), the arrow keys go round every view.
  const chosen = Number(await tabs.evaluateAll((ts) => ts.findIndex((t) => t.getAttribute('aria-selected') === 'true')));
  const want = await tabs.nth(chosen).getAttribute('data-kbd');
  for (let i = 0; i < 400 && (await focused(page))?.id !== want; i++) await page.keyboard.press('Tab');
  await expect(tabs.nth(chosen)).toBeFocused();
  await page.keyboard.press('Home');
  for (let i = 0; i < n; i++) {
    if (i) await page.keyboard.press('ArrowRight');
    const tab = tabs.nth(i);
    await expect(tab).toBeFocused();
    await expect(tab).toHaveAttribute('aria-selected', 'true');
    const panel = page.locator(`#${await tab.getAttribute('aria-controls')}`);
    await expect(panel).toBeVisible();
    await expect(page.locator('[role=tabpanel][aria-labelledby^=view-tab-]:visible')).toHaveCount(1);
  }
  // Past the last, round to the first; End to the last; Tab goes into the panel.
  await page.keyboard.press('ArrowRight');
  await expect(tabs.first()).toBeFocused();
  await page.keyboard.press('ArrowLeft');
  await expect(tabs.last()).toBeFocused();
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await expect(tabs.nth(2)).toHaveText('Statistics');
  await page.keyboard.press('Tab');
  await expect(page.locator('#view-panel-stats')).toBeFocused();
  await expect(page.getByTestId('stats')).toBeVisible();
  // Each view's own content, shown by its tab.
  for (const [tab, id] of [['Histogram', 'histogram'], ['CDF', 'cdf'], ['Compare runs', 'overlay'], ['Over time', 'throughput-plot'], ['Agents', 'summary-client']] as const) {
    await tabs.filter({ hasText: tab }).focus();
    await page.keyboard.press('Enter');
    await expect(page.getByTestId(id)).toBeVisible();
  }

  // The mode tabs too: Matrix by an arrow key, its form shown, back.
  const mode = page.getByRole('tablist', { name: 'mode' }).getByRole('tab');
  await mode.first().focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.getByTestId('mode-matrix')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('matrix-run')).toBeVisible();
  await page.keyboard.press('ArrowLeft');
  await expect(page.getByTestId('standard-test')).toBeVisible();
});
