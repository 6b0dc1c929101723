// Peers: headless Chromium (Debian's, driven by playwright-core) on the status page of an
// operator in process over a memory store, whose providers' instances are real forward
// proxies on 127.0.83.0/24 and 127.0.84.0/24 (in this process), probed through their data
// plane. A few dozen Proxies in every phase, screenshots at 360 and 1440 px, and markup from a
// backend shown as text.
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeWithPeers } from '@proxy-op/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY } from '../src/page/server.js';
import {
  artifactsDir,
  type FleetRig,
  fleetRig,
  launchBrowser,
  type TestBrowser,
  until,
} from './page-support.js';

const DOCS = fileURLToPath(new URL('../docs/', import.meta.url));
const POOL = 3;
const MARKUP = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script><b>bold</b>';

describeWithPeers({ describe, it }, 'the status page of a fleet, in Chromium', ['chromium'], () => {
  let rig: FleetRig;
  let browser: TestBrowser;
  let out = '';

  const READY = [
    ...['web', 'api', 'search', 'crawler', 'checkout', 'images', 'mail', 'status'].map(
      (n, i) => [`default/${n}`, i % 2 === 0 ? 'lab-eu' : 'lab-us'] as const,
    ),
    ...Array.from(
      { length: 14 },
      (_, i) => [`scraping/worker-${i + 1}`, i % 3 === 0 ? 'lab-us' : 'lab-eu'] as const,
    ),
    ...Array.from({ length: 6 }, (_, i) => [`team-a/egress-${i + 1}`, 'lab-eu'] as const),
  ];

  beforeAll(async () => {
    rig = await fleetRig({ providers: { 'lab-eu': '127.0.83', 'lab-us': '127.0.84' } });
    const eu = rig.fleets.get('lab-eu');
    const us = rig.fleets.get('lab-us');
    eu?.health.set('eu-west-1a', {
      ready: true,
      reason: 'Reachable',
      message: 'answered in 12 ms',
    });
    eu?.health.set('eu-west-1b', {
      ready: true,
      reason: 'Reachable',
      message: 'answered in 15 ms',
    });
    us?.health.set('us-east-1a', {
      ready: true,
      reason: 'Reachable',
      message: 'answered in 31 ms',
    });
    us?.health.set('us-west-2a', {
      ready: false,
      reason: 'Unreachable',
      message: 'connect ECONNREFUSED 10.2.0.1:8006',
    });
    for (const n of ['batch-1', 'batch-2']) us?.provisioning.add(n);
    for (const [name, provider] of READY) rig.apply(name, { provider });
    rig.apply('scraping/batch-1', { provider: 'lab-us' });
    rig.apply('scraping/batch-2', { provider: 'lab-us' });
    rig.apply('team-a/gpu', { provider: 'lab-eu', placement: { machineType: 'gpu-xl' } });
    rig.apply('team-b/tokyo', { provider: 'gcp-asia' });
    // A pool of three over lab-eu and a provider that is not configured.
    rig.applyPool('scraping/rotating', {
      replicas: 3,
      spread: [{ provider: 'lab-eu' }, { provider: 'gcp-asia' }],
      rotation: { maxAge: '24h' },
    });
    const phase = (k: string) => rig.store.get(k)?.status.phase;
    await until(() => READY.every(([k]) => phase(k) === 'Ready'), 60_000, 'the fleet Ready');
    await until(
      () => rig.pools.getPool('scraping/rotating')?.status.availableReplicas === 3,
      60_000,
      'the pool available',
    );
    // A few probes each, for the sparklines; then two proxies stop answering.
    await until(
      () => READY.every(([k]) => (rig.operator.probes?.history(k).length ?? 0) >= 8),
      60_000,
      'eight probes of each',
    );
    await rig.fleets.get('lab-eu')?.stop('proxy-scraping-worker-2-');
    await rig.fleets.get('lab-us')?.stop('proxy-scraping-worker-4-');
    await until(
      () =>
        phase('scraping/worker-2') === 'Unhealthy' && phase('scraping/worker-4') === 'Unhealthy',
      30_000,
      'two Unhealthy',
    );
    browser = await launchBrowser();
    out = await artifactsDir('status-page-fleet');
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await rig?.close();
  });

  async function open(width: number, height = 900): Promise<{ page: Page; errors: string[] }> {
    const p = await browser.page(width, height);
    await p.page.goto(rig.page.url);
    await p.page.waitForSelector('tr[data-key="default/web"]');
    return p;
  }

  it('screenshots at 360 and 1440 px: the overview and a table of a few dozen Proxies', async () => {
    for (const width of [1440, 360]) {
      const { page, errors } = await open(width);
      // Locators, not waitForFunction: a string predicate is eval'd in the page, which its CSP forbids.
      await expect
        .poll(() => page.locator('tr .phase-unhealthy').count(), { timeout: 10_000 })
        .toBeGreaterThanOrEqual(2);
      const overview = join(out, `overview-${width}.png`);
      await page.screenshot({ path: overview });
      await page.screenshot({ path: join(out, `page-${width}.png`), fullPage: true });
      await page.locator('#h-proxies').evaluate((h) => h.scrollIntoView());
      await page.screenshot({ path: join(out, `table-${width}.png`) });
      // Readable: nothing wider than the window (the table's own box scrolls, the page does not).
      const scroll = await page.evaluate('document.documentElement.scrollWidth');
      expect(scroll, `page width at ${width} px`).toBeLessThanOrEqual(width);
      const rows = await page.locator('table.proxies tbody tr').count();
      expect(rows).toBe(READY.length + 4 + POOL);
      expect(errors).toEqual([]);
      // A failing Proxy's detail, too.
      await page.locator('tr[data-key="scraping/worker-2"] a').click();
      await page.waitForSelector('svg.history');
      await page.screenshot({ path: join(out, `detail-${width}.png`), fullPage: true });
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
        width,
      );
      await page.goBack();
      if (width === 1440 && process.env.PROXY_OP_WRITE_SCREENSHOT === '1') {
        await mkdir(DOCS, { recursive: true });
        await copyFile(overview, join(DOCS, 'status-page.png'));
      }
      await page.close();
    }
    console.log(`status page screenshots: ${out}`);
  }, 60_000);

  it('shows every phase in words, provider health with its reasons, and the counts', async () => {
    const { page } = await open(1440);
    const text = (sel: string) => page.locator(sel).textContent();
    const row = (key: string) => page.locator(`tr[data-key="${key}"]`);
    await expect.poll(() => row('team-a/gpu').locator('.phase').textContent()).toContain('Failed');
    expect(await row('team-b/tokyo').locator('.phase').textContent()).toContain('Pending');
    expect(await row('scraping/batch-1').locator('.phase').textContent()).toContain('Provisioning');
    expect(await row('scraping/worker-2').locator('.phase').textContent()).toContain('Unhealthy');
    expect(await row('scraping/worker-2').locator('.probe').textContent()).toMatch(
      /failing get\.connect/,
    );
    expect(await row('default/web').locator('.probe').textContent()).toMatch(/^ok \d+ms/);
    expect(await row('default/web').locator('.spark').getAttribute('aria-label')).toMatch(
      /^latency: \d+ probes, [\d.]+ m?s to [\d.]+ m?s(, \d+ failed)?$/,
    );
    expect(await row('team-a/gpu').locator('.error').textContent()).toBe(
      'Permanent: placement.machineType "gpu-xl" is not in the fleet; use one of small, large',
    );
    const cards = await text('section[aria-labelledby="h-providers"] .cards');
    expect(cards).toContain('lab-us');
    expect(cards).toContain('us-west-2a');
    expect(cards).toContain('Unreachable: connect ECONNREFUSED 10.2.0.1:8006');
    expect(cards).toMatch(/gcp-asia\s*✕ not configured/);
    await page.close();
  }, 30_000);

  it("shows a pool's counts, its rotation and remediation, and the provider its spread lacks", async () => {
    const { page, errors } = await open(1440);
    const card = page.locator('article[data-pool="scraping/rotating"]');
    await expect.poll(() => card.locator('.badge').textContent()).toBe('✓ 3 of 3 available');
    expect(await card.locator('.pool-counts').textContent()).toBe(
      'desired 3ready 3up to date 3available 3endpoints 3rotates every 24h',
    );
    expect(await card.locator('.card-head .muted').textContent()).toBe('lab-eu, gcp-asia');
    const lines = await card.locator('.targets li').allTextContents();
    expect(lines).toEqual([
      expect.stringMatching(
        /^✓ rollout NewTemplateAvailable: every Proxy runs template [0-9a-f]+$/,
      ),
      expect.stringMatching(/^✓ remediation WithinMaxUnhealthy: /),
      // (lab-eu may be named too while a health check of it is under way)
      expect.stringMatching(
        /^✕ spread ProviderFailing: (.*; )?provider gcp-asia is not configured; the other providers carry the pool$/,
      ),
    ]);
    // Scaled down to one, the card follows without a reload.
    rig.applyPool('scraping/rotating', {
      replicas: 1,
      spread: [{ provider: 'lab-eu' }, { provider: 'gcp-asia' }],
      rotation: { maxAge: '24h' },
    });
    await expect
      .poll(() => card.locator('.badge').textContent(), { timeout: 20_000 })
      .toBe('✓ 1 of 1 available');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it('a backend error with markup is shown as text, never run, and the answer carries the CSP', async () => {
    rig.apply('team-a/markup', { provider: 'lab-eu', placement: { machineType: MARKUP } });
    const { page, errors } = await browser.page(1440);
    const response = await page.goto(rig.page.url);
    expect(response?.headers()['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
    expect(response?.headers()['x-content-type-options']).toBe('nosniff');
    const cell = page.locator('tr[data-key="team-a/markup"] .error');
    await expect.poll(() => cell.textContent(), { timeout: 20_000 }).toContain(MARKUP);
    expect(await cell.locator('img, script, b').count()).toBe(0);
    await page.locator('tr[data-key="team-a/markup"] a').click();
    const events = page.locator('.event-message');
    await expect
      .poll(() => events.allTextContents(), { timeout: 10_000 })
      .toEqual(expect.arrayContaining([expect.stringContaining(MARKUP)]));
    expect(await page.locator('.events img, .events script, .events b').count()).toBe(0);
    expect(await page.evaluate('window.__xss')).toBeUndefined();
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
