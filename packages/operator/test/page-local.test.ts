// Peers: headless Chromium (Debian's, driven by playwright-core) on the status page of
// `proxy-op run --standalone` (the built CLI in a child process) with the local provider's
// real proxy processes on 127.0.81.0/24, probed through their data plane against the
// operator's own whoami target. Faults are real: a proxy stopped with SIGSTOP.
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import {
  describeWithPeers,
  freePort,
  type JsonLinesProcess,
  SpawnedPrograms,
} from '@proxy-op/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceName } from '../src/api/naming.js';
import type { PageState } from '../src/page/wire.js';
import { runCli, spawnCli } from './cli-support.js';
import { detailShows, launchBrowser, type TestBrowser } from './page-support.js';
import { proxyPids } from './probe-support.js';

const spawned = new SpawnedPrograms(proxyServerPath());

function manifest(name: string, allowed: string): string {
  return `apiVersion: proxy-op.io/v1alpha1\nkind: Proxy\nmetadata:\n  name: ${name}\nspec:\n  provider: here\n  allowedSources: [${allowed}]\n`;
}

describeWithPeers(
  { describe, it },
  'the status page of a standalone run with the local provider, in Chromium',
  ['chromium'],
  () => {
    let root = '';
    let dir = '';
    let stateDir = '';
    let providers = '';
    let cli: JsonLinesProcess;
    let url = '';
    let browser: TestBrowser;
    let port = 0;

    /** Starts `proxy-op run`; resolves with the page's address it logs. */
    const startRun = async () => {
      cli = spawnCli([
        'run',
        ...args(),
        '--output',
        'json',
        '--status-listen',
        `127.0.0.1:${port}`,
        '--probe-interval',
        '300ms',
        '--probe-timeout',
        '1500ms',
        '--failure-threshold',
        '2',
      ]);
      return cli.waitForLog((l) =>
        typeof l.msg === 'string' && l.msg.startsWith('status page at ')
          ? String(l.statusPage)
          : undefined,
      );
    };

    const args = () => [
      '--standalone',
      dir,
      '--providers',
      providers,
      '--listen',
      'off',
      '--gc-interval',
      '0',
      '--health-interval',
      '0',
      '--backoff-base',
      '50ms',
      '--rescan',
      '200ms',
    ];

    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'proxy-op-page-local-'));
      dir = join(root, 'proxies');
      stateDir = join(root, 'local');
      providers = join(root, 'providers.yaml');
      await mkdir(dir);
      await writeFile(
        providers,
        `installation: page-local\nproviders:\n  - name: here\n    type: local\n    local: { stateDir: ${stateDir}, addressRange: 127.0.81.0/24 }\n`,
      );
      await writeFile(join(dir, 'web.yaml'), manifest('web', '127.0.0.0/8'));
      await writeFile(join(dir, 'api.yaml'), manifest('api', '127.0.0.0/8'));
      // Its proxy refuses the operator's probes (403): it stays Provisioning until allowed.
      await writeFile(join(dir, 'late.yaml'), manifest('late', '127.0.0.9/32'));
      // A port of its own, so an operator started again serves the page where it was.
      port = await freePort('127.0.0.1');
      url = await startRun();
      browser = await launchBrowser();
    }, 120_000);

    afterAll(async () => {
      await browser?.close();
      cli?.kill('SIGTERM');
      await cli?.exit;
      // The proxies go with their Proxies, as a user would stop them all.
      if (dir !== '') await runCli(['down', ...args()], {}, 60_000).catch(() => undefined);
      for (const pid of proxyPids(stateDir)) spawned.pids.add(pid);
      await spawned.killAll();
      if (root !== '') await rm(root, { recursive: true, force: true });
    }, 120_000);

    async function open(): Promise<{ page: Page; errors: string[] }> {
      const p = await browser.page(1440);
      await p.page.goto(url);
      await p.page.waitForSelector('tr[data-key="default/web"]');
      return p;
    }

    const phaseOf = (page: Page, key: string) =>
      page.locator(`tr[data-key="${key}"] .phase`).textContent();

    it('lists the Proxies with their phases; one goes from Provisioning to Ready without a reload', async () => {
      const { page, errors } = await open();
      await expect.poll(() => phaseOf(page, 'default/web'), { timeout: 30_000 }).toContain('Ready');
      await expect.poll(() => phaseOf(page, 'default/api'), { timeout: 30_000 }).toContain('Ready');
      await expect
        .poll(() => phaseOf(page, 'default/late'), { timeout: 30_000 })
        .toContain('Provisioning');
      expect(await page.locator('tr[data-key="default/late"] .probe').textContent()).toMatch(
        /starting get\.status/,
      );
      // The endpoint, and where its credential is kept: never the credential.
      expect(await page.locator('tr[data-key="default/web"] .mono').first().textContent()).toMatch(
        /^http:\/\/127\.0\.81\.\d+:3128 \(credentials: file default\.web\.json\)$/,
      );
      await page.evaluate('window.__sameDocument = true');
      await writeFile(join(dir, 'late.yaml'), manifest('late', '127.0.0.0/8'));
      await expect
        .poll(() => phaseOf(page, 'default/late'), { timeout: 30_000 })
        .toContain('Ready');
      expect(await page.evaluate('window.__sameDocument')).toBe(true);
      expect(await page.locator('.conn').textContent()).toContain('live');
      expect(errors).toEqual([]);
      await page.close();
    }, 90_000);

    it('a proxy stopped with SIGSTOP: its row shows the failing probe and Unhealthy; SIGCONT: Ready again', async () => {
      const { page } = await open();
      await expect.poll(() => phaseOf(page, 'default/web'), { timeout: 30_000 }).toContain('Ready');
      const file = join(stateDir, `${instanceName('default', 'web')}.json`);
      const { pid } = JSON.parse(readFileSync(file, 'utf8')) as { pid: number };
      process.kill(pid, 'SIGSTOP');
      try {
        const probe = page.locator('tr[data-key="default/web"] .probe');
        await expect.poll(() => probe.textContent(), { timeout: 30_000 }).toMatch(/^failing get\./);
        await expect
          .poll(() => phaseOf(page, 'default/web'), { timeout: 30_000 })
          .toContain('Unhealthy');
        expect(await probe.locator('.probe-failure').textContent()).toMatch(
          /timed out after 1500 ms/,
        );
        expect(await probe.locator('.spark').getAttribute('aria-label')).toMatch(/\d+ failed$/);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      await expect.poll(() => phaseOf(page, 'default/web'), { timeout: 30_000 }).toContain('Ready');
      await page.close();
    }, 90_000);

    it('filters by text and phase, sorts by a column both ways', async () => {
      const { page } = await open();
      const keys = () =>
        page
          .locator('table.proxies tbody tr')
          .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-key')));
      await expect.poll(keys).toEqual(['default/api', 'default/late', 'default/web']);
      await page.getByLabel('Filter', { exact: true }).fill('WEB');
      await expect.poll(keys).toEqual(['default/web']);
      expect(await page.locator('caption').textContent()).toBe('1 of 3 Proxies match');
      await page.getByLabel('Filter', { exact: true }).fill('');
      await page.locator('#filter-phase').selectOption('Failed');
      await expect.poll(keys).toEqual([]);
      expect(await page.locator('.empty').textContent()).toBe('No Proxies to show.');
      await page.locator('#filter-phase').selectOption('');
      await page.locator('#filter-provider').selectOption('here');
      await expect.poll(keys).toHaveLength(3);
      const name = page.getByRole('button', { name: 'Name', exact: true });
      await name.click();
      await expect.poll(keys).toEqual(['default/web', 'default/late', 'default/api']);
      expect(await page.locator('th', { has: name }).getAttribute('aria-sort')).toBe('descending');
      await page.getByRole('button', { name: 'Age', exact: true }).click();
      const state = (await (await fetch(`${url}api/state`)).json()) as PageState;
      const oldestFirst = [...state.proxies]
        .sort((a, b) => Date.parse(a.created) - Date.parse(b.created) || (a.key < b.key ? -1 : 1))
        .map((r) => r.key);
      await expect.poll(keys).toEqual(oldestFirst);
      await page.getByRole('button', { name: 'Age', exact: true }).click();
      await expect.poll(keys).toEqual([...oldestFirst].reverse());
      await page.close();
    }, 60_000);

    it('the detail shows the instance, conditions, Events and the probe history chart', async () => {
      const { page } = await open();
      await page.locator('tr[data-key="default/web"] a').click();
      await page.waitForSelector('.facts');
      expect(await page.locator('#detail-title').textContent()).toContain('default/web');
      expect(await page.locator('.facts').textContent()).toMatch(
        /Instance ID\S+\/proxy-default-web-/,
      );
      await detailShows(page, ['ProbeFailed', 'ProbePassed']);
      await expect.poll(() => page.locator('svg.history rect.bar').count()).toBeGreaterThan(3);
      expect(await page.locator('svg.history').getAttribute('aria-label')).toMatch(
        /^probe history: \d+ probes/,
      );
      await page.locator('summary').click();
      expect(await page.locator('.history-table tbody tr').count()).toBeGreaterThan(3);
      await page.getByRole('link', { name: '← All Proxies' }).click();
      await page.waitForSelector('table.proxies');
      await page.close();
    }, 60_000);

    it('every control is reached with the keyboard alone, and works from it', async () => {
      const p = await browser.page(1440);
      const page = p.page;
      await page.goto(url);
      await page.waitForSelector('tr[data-key="default/web"]');
      const focused = () =>
        page.evaluate(
          `(() => { const e = document.activeElement; if (e === null) return ''; if (e.tagName === 'INPUT' || e.tagName === 'SELECT') return e.id; return (e.getAttribute('aria-label') || e.textContent || e.tagName).trim(); })()`,
        ) as Promise<string>;
      const seen: string[] = [];
      for (let i = 0; i < 16; i++) {
        await page.keyboard.press('Tab');
        seen.push(await focused());
      }
      expect(seen).toEqual([
        'Skip to the content',
        'filter-text',
        'filter-provider',
        'filter-phase',
        'Name ▲',
        'Namespace',
        'Provider',
        'Phase',
        'Endpoint',
        'Egress IP',
        'Age',
        'Last probe',
        'Last error',
        'api',
        'late',
        'web',
      ]);
      // Sorting from the keyboard: back to the Name header, Enter.
      for (let i = 0; i < 11; i++) await page.keyboard.press('Shift+Tab');
      expect(await focused()).toBe('Name ▲');
      await page.keyboard.press('Enter');
      expect(await focused()).toBe('Name ▼');
      await page.keyboard.press('Enter');
      // Filtering: Shift+Tab back to the filter, type.
      for (let i = 0; i < 3; i++) await page.keyboard.press('Shift+Tab');
      expect(await focused()).toBe('filter-text');
      await page.keyboard.type('api');
      await page.keyboard.press('Tab');
      await page.keyboard.press('ArrowDown');
      await page.keyboard.press('Tab');
      await page.keyboard.press('Tab');
      for (let i = 0; i < 9; i++) await page.keyboard.press('Tab');
      expect(await focused()).toBe('api');
      // Opening a detail: Enter on its link; the heading takes the focus; the back link returns.
      await page.keyboard.press('Enter');
      await page.waitForSelector('.facts');
      expect(await focused()).toContain('default/api');
      await page.keyboard.press('Shift+Tab');
      expect(await focused()).toBe('← All Proxies');
      await page.keyboard.press('Enter');
      await page.waitForSelector('table.proxies');
      expect(await focused()).toBe('api');
      expect(p.errors).toEqual([]);
      await page.close();
    }, 60_000);

    it('an operator that stops and starts again: the open page says it reconnects, then is live again by itself', async () => {
      const { page, errors } = await open();
      await page.evaluate('window.__sameDocument = true');
      cli.kill('SIGTERM');
      expect((await cli.exit).code).toBe(0);
      const conn = page.locator('.conn');
      await expect.poll(() => conn.textContent(), { timeout: 20_000 }).toContain('reconnecting');
      expect(await startRun()).toBe(url);
      await expect.poll(() => conn.textContent(), { timeout: 30_000 }).toContain('live');
      await expect.poll(() => phaseOf(page, 'default/web'), { timeout: 30_000 }).toContain('Ready');
      expect(await page.evaluate('window.__sameDocument')).toBe(true);
      // The browser logs the refused connections of its retries; nothing else went wrong.
      expect(errors.filter((e) => !/ERR_CONNECTION_REFUSED|EventSource/.test(e))).toEqual([]);
      await page.close();
    }, 90_000);
  },
);
