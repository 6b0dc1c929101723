// Peers: headless Chromium (Debian's, driven by playwright-core) on the status pages of two
// `proxy-op run` processes (the built CLI) on the Kubernetes API test server, electing a
// leader on a Lease, with the local provider's real proxy processes on 127.0.82.0/24 probed
// against each operator's own whoami target.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { proxyServerPath } from '@proxy-op/forward-proxy';
import { describeWithPeers, type JsonLinesProcess, SpawnedPrograms } from '@proxy-op/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnCli } from './cli-support.js';
import { call, installCrds, KubeTestServer, stored, until } from './kube-support.js';
import { detailShows, launchBrowser, type TestBrowser } from './page-support.js';
import { proxyPids } from './probe-support.js';

const spawned = new SpawnedPrograms(proxyServerPath());
const PROXIES = '/apis/proxy-op.io/v1alpha1/namespaces/default/proxies';

describeWithPeers(
  { describe, it },
  'the status page on Kubernetes, leader and standby, in Chromium',
  ['chromium'],
  () => {
    let server: KubeTestServer;
    let root = '';
    let browser: TestBrowser;
    let kubeconfig = '';
    let providers = '';
    const operators: JsonLinesProcess[] = [];
    let leader: { op: JsonLinesProcess; url: string; identity: string };
    let standby: { op: JsonLinesProcess; url: string; identity: string };
    let standbyPage: Page;

    async function startOperator() {
      const op = spawnCli(
        [
          'run',
          '--kubeconfig',
          kubeconfig,
          '--providers',
          providers,
          '--leader-election-namespace',
          'default',
          '--listen=off',
          '--status-listen=127.0.0.1:0',
          '--lease-duration=3s',
          '--renew-deadline=2s',
          '--retry-period=250ms',
          '--probe-interval=300ms',
          '--probe-timeout=2s',
          '--failure-threshold=2',
          '--health-interval=1s',
          '--gc-interval=0',
          '--backoff-base=100ms',
          '--output=json',
        ],
        { HOME: root },
      );
      operators.push(op);
      const url = await op.waitForLog((l) =>
        typeof l.msg === 'string' && l.msg.startsWith('status page at ')
          ? String(l.statusPage)
          : undefined,
      );
      const identity = await op.waitForLog((l) =>
        l.msg === 'proxy-op running on Kubernetes' ? String(l.identity) : undefined,
      );
      return { op, url, identity };
    }

    function proxy(name: string, allowed: string) {
      return {
        apiVersion: 'proxy-op.io/v1alpha1',
        kind: 'Proxy',
        metadata: { name, namespace: 'default' },
        spec: { provider: 'here', allowedSources: [allowed] },
      };
    }

    beforeAll(async () => {
      server = await KubeTestServer.start();
      await installCrds(server);
      root = await mkdtemp(join(tmpdir(), 'proxy-op-page-kube-'));
      kubeconfig = await server.writeKubeconfig(join(root, 'kubeconfig'));
      providers = join(root, 'providers.yaml');
      await writeFile(
        providers,
        `installation: page-kube\nproviders:\n  - name: here\n    type: local\n    local: { stateDir: ${join(root, 'local')}, addressRange: 127.0.82.0/24 }\n`,
      );
      leader = await startOperator();
      await leader.op.waitForLog((l) => (l.msg === 'reconciling' ? true : undefined));
      standby = await startOperator();
      await standby.op.waitForLog((l) =>
        l.msg === 'another replica leads; waiting for the Lease' ? true : undefined,
      );
      for (const [name, allowed] of [
        ['web', '127.0.0.0/8'],
        ['api', '127.0.0.0/8'],
        // Its proxy refuses the operator's probes (403): Provisioning until allowed.
        ['late', '127.0.0.9/32'],
      ] as const) {
        const r = await call(server, 'POST', PROXIES, { body: proxy(name, allowed) });
        if (r.status !== 201) throw new Error(JSON.stringify(r.body));
      }
      browser = await launchBrowser();
    }, 180_000);

    afterAll(async () => {
      await browser?.close();
      // Deleted through the operator that leads, so the local proxies go too.
      for (const name of ['web', 'api', 'late']) {
        await call(server, 'DELETE', `${PROXIES}/${name}`).catch(() => undefined);
      }
      await until(
        () => ['web', 'api', 'late'].every((n) => stored(server, n) === undefined),
        30_000,
        'the Proxies gone',
      ).catch(() => undefined);
      for (const op of operators) op.kill('SIGTERM');
      await Promise.all(operators.map((op) => op.exit));
      for (const pid of proxyPids(join(root, 'local'))) spawned.pids.add(pid);
      await spawned.killAll();
      await server?.stop();
      if (root !== '') await rm(root, { recursive: true, force: true });
    }, 120_000);

    const phaseOf = (page: Page, key: string) =>
      page.locator(`tr[data-key="${key}"] .phase`).textContent();

    it("a standby's page says it is on standby and names the leading Pod", async () => {
      const p = await browser.page(1440);
      standbyPage = p.page;
      await standbyPage.goto(standby.url);
      await standbyPage.waitForSelector('.standby');
      expect(await standbyPage.locator('#h-standby').textContent()).toBe(
        'This replica is on standby',
      );
      // The identity is the Pod's name (its host name) and a random suffix.
      expect(leader.identity.startsWith(`${hostname()}_`)).toBe(true);
      expect(await standbyPage.locator('.leader-pod').textContent()).toBe(hostname());
      expect(await standbyPage.locator('.standby').textContent()).toContain(leader.identity);
      const port = new URL(standby.url).port;
      expect(await standbyPage.locator('.standby code').textContent()).toBe(
        `kubectl -n default port-forward pod/${hostname()} ${port}`,
      );
      expect(await standbyPage.locator('table.proxies').count()).toBe(0);
      expect(p.errors).toEqual([]);
    }, 60_000);

    it("the leader's page lists the Proxies with their phases; one goes Provisioning to Ready live", async () => {
      const { page, errors } = await browser.page(1440);
      await page.goto(leader.url);
      await expect.poll(() => phaseOf(page, 'default/web'), { timeout: 30_000 }).toContain('Ready');
      await expect.poll(() => phaseOf(page, 'default/api'), { timeout: 30_000 }).toContain('Ready');
      await expect
        .poll(() => phaseOf(page, 'default/late'), { timeout: 30_000 })
        .toContain('Provisioning');
      expect(await page.locator('.where').textContent()).toMatch(
        /^Kubernetes, https:\/\/127\.0\.0\.1:\d+/,
      );
      await page.evaluate('window.__sameDocument = true');
      const patched = await call(server, 'PATCH', `${PROXIES}/late`, {
        body: { spec: { allowedSources: ['127.0.0.0/8'] } },
        contentType: 'application/merge-patch+json',
      });
      expect(patched.status).toBe(200);
      await expect
        .poll(() => phaseOf(page, 'default/late'), { timeout: 30_000 })
        .toContain('Ready');
      expect(await page.evaluate('window.__sameDocument')).toBe(true);
      expect(errors).toEqual([]);
      await page.close();
    }, 90_000);

    it('the detail shows the conditions and the Events the leader recorded, as the API server has them', async () => {
      const { page } = await browser.page(1440);
      await page.goto(`${leader.url}#/proxies/default/late`);
      const shown = new Set(await detailShows(page, ['Created', 'Replacing']));
      await until(
        () => {
          const api = server
            .objects('', 'events', 'default')
            .filter((e) => (e.involvedObject as { name?: string }).name === 'late')
            .map((e) => e.reason as string);
          return [...shown].every((r) => api.includes(r));
        },
        10_000,
        'the same Events in the API server',
      );
      expect(await page.locator('.facts').textContent()).toMatch(
        /Instance ID\S+\/proxy-default-late-/,
      );
      await page.close();
    }, 60_000);

    it("the leader stops: the standby takes the Lease and its open page becomes the leader's, without a reload", async () => {
      await standbyPage.evaluate('window.__sameDocument = true');
      leader.op.kill('SIGTERM');
      expect((await leader.op.exit).code).toBe(0);
      await standby.op.waitForLog(
        (l) => (l.msg === 'became the leader' ? true : undefined),
        30_000,
      );
      await expect
        .poll(() => phaseOf(standbyPage, 'default/web'), { timeout: 30_000 })
        .toContain('Ready');
      expect(await standbyPage.locator('.standby').count()).toBe(0);
      expect(await standbyPage.evaluate('window.__sameDocument')).toBe(true);
      await standbyPage.close();
    }, 90_000);
  },
);
