// Peers: headless Chromium (Debian's, driven by playwright-core, its JS heap read over the
// DevTools protocol) on the status page of 1,000 Proxies in a memory store whose statuses and
// probe results the test changes directly: a thousand changes a second, for 20 s here, or as
// long as PROXY_OP_PAGE_LOAD_MS says (e.g. 180000 for three minutes). The figures are printed.
import { describeWithPeers } from '@proxy-op/testkit';
import type { CDPSession } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Phase, ProxyStatus } from '../src/api/proxy.js';
import { DEFAULTS } from '../src/defaults.js';
import { type StatusPage, startStatusPage } from '../src/page/server.js';
import type { PageProbes } from '../src/page/snapshot.js';
import type { ProbeEntry } from '../src/probe/record.js';
import { MemoryStore } from '../src/store/proxies.js';
import { launchBrowser, type TestBrowser } from './page-support.js';
import { spec } from './support.js';

const N = 1000;
const RUN_MS = Number(process.env.PROXY_OP_PAGE_LOAD_MS ?? 20_000);
const TICK_MS = 100;
const PER_TICK = 100;
const HISTORY = 20;

/** Probe results kept by the test, as the scheduler would keep them. */
class ScriptedProbes implements PageProbes {
  readonly entries = new Map<string, ProbeEntry[]>();
  add(key: string, e: ProbeEntry): void {
    const list = this.entries.get(key) ?? [];
    list.push(e);
    while (list.length > HISTORY) list.shift();
    this.entries.set(key, list);
  }
  history(key: string): readonly ProbeEntry[] {
    return [...(this.entries.get(key) ?? [])];
  }
  latest(key: string) {
    const list = this.entries.get(key);
    const last = list?.at(-1);
    if (list === undefined) return undefined;
    return {
      verdict: last?.ok === false ? ('failing' as const) : ('passing' as const),
      last,
      egressIP: last?.egressIP,
    };
  }
}

const PHASES: Phase[] = ['Ready', 'Ready', 'Ready', 'Unhealthy', 'Provisioning'];

function statusOf(i: number, round: number): ProxyStatus {
  const phase = PHASES[(i + round) % PHASES.length] as Phase;
  const ip = `10.${Math.floor(i / 250)}.${i % 250}.${round % 250}`;
  return {
    phase,
    providerID: `vms/p-${i}`,
    ...(phase === 'Provisioning' ? {} : { endpoint: `http://${ip}:3128` }),
    ...(phase === 'Ready' ? { egressIP: ip } : {}),
    ...(phase === 'Unhealthy'
      ? { lastError: { class: 'Transient', message: `round ${round}: probe timed out` } }
      : {}),
  };
}

describeWithPeers({ describe, it }, 'the status page under load, in Chromium', ['chromium'], () => {
  let store: MemoryStore;
  let probes: ScriptedProbes;
  let page: StatusPage;
  let browser: TestBrowser;

  beforeAll(async () => {
    store = new MemoryStore();
    probes = new ScriptedProbes();
    for (let i = 0; i < N; i++) {
      store.apply(
        i % 4 === 0 ? 'batch' : 'default',
        `p-${String(i).padStart(4, '0')}`,
        spec({ provider: i % 3 === 0 ? 'lab-us' : 'lab-eu' }),
      );
    }
    // The clock: first by name, its error says the round; the test reads it off the page.
    store.apply('default', 'a-clock', spec({ provider: 'lab-eu' }));
    page = await startStatusPage({
      listen: '127.0.0.1:0',
      role: () => ({ store: 'memory', state: 'leading' }),
      source: { store, probes },
      settings: DEFAULTS,
    });
    browser = await launchBrowser();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await page?.close();
  });

  it(
    `1,000 Proxies changing state: the stream keeps up, the page's heap stays bounded (${RUN_MS / 1000} s)`,
    async () => {
      const keys = store
        .list()
        .map((p) => `${p.metadata.namespace}/${p.metadata.name}`)
        .filter((k) => k !== 'default/a-clock');
      const { page: tab, errors } = await browser.page(1440, 900);
      const cdp: CDPSession = await tab.context().newCDPSession(tab);
      await cdp.send('Performance.enable');
      const heap = async () => {
        await cdp.send('HeapProfiler.collectGarbage');
        const { usedSize } = (await cdp.send('Runtime.getHeapUsage')) as { usedSize: number };
        const { metrics } = (await cdp.send('Performance.getMetrics')) as {
          metrics: { name: string; value: number }[];
        };
        return { used: usedSize, nodes: metrics.find((m) => m.name === 'Nodes')?.value ?? 0 };
      };
      const loadStart = Date.now();
      await tab.goto(page.url);
      // A locator, not waitForFunction: a string predicate is eval'd in the page, which its CSP
      // forbids. The first render is printed, not judged: it waits as long as a loaded machine
      // may need, and a page that never renders says what it showed instead.
      const caption = tab.locator('caption');
      const rendered = await expect
        .poll(async () => ((await caption.count()) > 0 ? caption.textContent() : null), {
          timeout: 90_000,
          interval: 100,
        })
        .toBe(`${N + 1} Proxies`)
        .then(
          () => true,
          () => false,
        );
      if (!rendered) {
        const body = await tab
          .locator('body')
          .textContent()
          .catch(() => '');
        const shown = (body ?? '').replace(/\s+/g, ' ').slice(0, 400);
        throw new Error(
          `the page did not render ${N + 1} rows in ${Date.now() - loadStart} ms; it showed ${JSON.stringify(shown)}; stream ${JSON.stringify(page.stats())}; console errors ${JSON.stringify(errors)}`,
        );
      }
      const firstRender = Date.now() - loadStart;

      let round = 0;
      let changes = 0;
      let cursor = 0;
      const t0 = Date.now();
      const bytes0 = page.stats().bytes;
      const churn = setInterval(() => {
        round++;
        void store.updateStatus('default/a-clock', {
          phase: 'Ready',
          lastError: { class: 'Transient', message: `tick ${round}` },
        });
        for (let j = 0; j < PER_TICK; j++) {
          const i = cursor++ % N;
          const key = keys[i] as string;
          void store.updateStatus(key, statusOf(i, round));
          probes.add(key, {
            time: new Date().toISOString(),
            ok: (i + round) % 5 !== 3,
            totalMs: 3 + ((i * 7 + round) % 40),
            egressIP: `10.0.0.${i % 250}`,
          });
          changes++;
        }
      }, TICK_MS);

      const samples: Array<{ at: number; used: number; nodes: number; lagMs: number }> = [];
      const clock = tab.locator('tr[data-key="default/a-clock"] .error');
      try {
        while (Date.now() - t0 < RUN_MS) {
          await new Promise((r) => setTimeout(r, Math.min(5000, RUN_MS / 6)));
          const shown = Number(/tick (\d+)/.exec((await clock.textContent()) ?? '')?.[1] ?? 0);
          const lagMs = (round - shown) * TICK_MS;
          samples.push({ at: Date.now() - t0, ...(await heap()), lagMs });
        }
      } finally {
        clearInterval(churn);
      }
      const seconds = (Date.now() - t0) / 1000;
      const sent = page.stats().bytes - bytes0;
      // Settled: every row the page shows is the server's, and the counts agree.
      const expected = new Map<string, number>();
      for (const p of store.list()) {
        const ph = p.status.phase ?? 'Pending';
        expected.set(ph, (expected.get(ph) ?? 0) + 1);
      }
      const shownCounts = async () => {
        const cards = await tab.locator('.card .count').allTextContents();
        const out = new Map<string, number>();
        for (const c of cards) {
          const m = /(\w+) (\d+)$/.exec(c.trim());
          if (m) out.set(m[1] as string, (out.get(m[1] as string) ?? 0) + Number(m[2]));
        }
        return Object.fromEntries([...out].sort());
      };
      await expect
        .poll(shownCounts, { timeout: 10_000 })
        .toEqual(Object.fromEntries([...expected].sort()));
      await expect
        .poll(() => clock.textContent(), { timeout: 10_000 })
        .toBe(`Transient: tick ${round}`);

      const warm = samples[0] ?? { used: 0, nodes: 0 };
      const last = samples.at(-1) ?? warm;
      const peak = Math.max(...samples.map((s) => s.used));
      const maxLag = Math.max(...samples.map((s) => s.lagMs));
      const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1)} MiB`;
      console.log(
        [
          `status page load: ${N} Proxies, ${changes} changes in ${seconds.toFixed(0)} s (${Math.round(changes / seconds)}/s)`,
          `first render of ${N + 1} rows ${firstRender} ms; stream ${(sent / seconds / 1024).toFixed(0)} KiB/s, ${page.stats().messages} messages, ${page.stats().dropped} viewers dropped`,
          `lag of the page behind the store: at most ${maxLag} ms over ${samples.length} samples`,
          `JS heap after GC: first ${mib(warm.used)}, peak ${mib(peak)}, last ${mib(last.used)}; DOM nodes ${warm.nodes} → ${last.nodes}`,
          `samples: ${samples.map((s) => `${(s.at / 1000).toFixed(0)}s ${mib(s.used)} lag ${s.lagMs}ms`).join(', ')}`,
        ].join('\n'),
      );
      expect(page.stats().dropped).toBe(0);
      // Keeping up: a push interval (500 ms), the render and this sampling, with room for a loaded machine.
      expect(maxLag).toBeLessThan(5000);
      // Bounded: the heap after GC does not grow with time, nor the DOM with the rows changed.
      expect(last.used).toBeLessThan(warm.used * 1.5 + 4 * 1024 * 1024);
      expect(last.nodes).toBeLessThan(warm.nodes * 1.5 + 500);
      expect(errors).toEqual([]);
      await tab.close();
    },
    RUN_MS + 180_000,
  );
});
