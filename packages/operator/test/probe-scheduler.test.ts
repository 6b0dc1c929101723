// Peers: none for the record (its verdicts, history and published status, on results made by
// hand); forty wire-level fake proxies on 127.0.78.0/24 that answer slowly, counting the
// connections they hold, for the scheduler's bounds; a memory store.
import { type AddressInfo, createServer, type Server } from 'node:net';
import type { ProbeResult } from '@proxy-op/probe';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/defaults.js';
import { entryOf, ProbeRecord } from '../src/probe/record.js';
import { ProbeScheduler } from '../src/probe/scheduler.js';
import { DEFAULT_PROBE_SETTINGS } from '../src/probe/settings.js';
import { ProbeSlots } from '../src/probe/slots.js';
import type { ConfiguredProvider } from '../src/providers/set.js';
import { MemoryStore } from '../src/store/proxies.js';
import { spec } from './support.js';

const RULES = { startupTimeoutMs: 1_000, failureThreshold: 3, probeHistory: 20 };

function result(ok: boolean, totalMs = 10, egressIP = '127.0.0.5'): ProbeResult {
  return {
    ok,
    startedAt: new Date(),
    steps: [],
    checks: [],
    latency: { connectMs: 1, firstByteMs: 2, totalMs },
    ...(ok
      ? { egressIP }
      : {
          failure: {
            check: 'get' as const,
            step: 'status' as const,
            message: 'the proxy answered 403 Forbidden',
          },
        }),
  };
}

const instance = {
  provider: 'p',
  providerID: 'x/1',
  endpoint: 'http://127.0.0.5:3128',
  running: { providerID: 'x/1', ip: '127.0.0.5', port: 3128, endpoint: 'http://127.0.0.5:3128' },
  target: { get: new URL('http://127.0.0.1:1/'), connect: new URL('https://127.0.0.1:2/') },
  targetLabel: 'https://127.0.0.1:2/',
  remediationMs: 5_000,
};

describe('a Proxy’s probe record', () => {
  it('starting: failures do not count until the startup timeout, then it fails at once', () => {
    const r = new ProbeRecord('default/web', instance, 0);
    expect(r.record(entryOf(result(false)), 100, RULES)).toBeUndefined();
    expect(r.record(entryOf(result(false)), 900, RULES)).toBeUndefined();
    expect(r.verdict).toBe('starting');
    expect(r.record(entryOf(result(false)), 1_000, RULES)).toEqual({
      from: 'starting',
      to: 'failing',
    });
    expect(r.failingSince).toBe(1_000);
  });

  it('passing: fails after failureThreshold failures in a row, and passes again at once', () => {
    const r = new ProbeRecord('default/web', instance, 0);
    expect(r.record(entryOf(result(true)), 10, RULES)).toEqual({ from: 'starting', to: 'passing' });
    expect(r.egressIP).toBe('127.0.0.5');
    r.record(entryOf(result(false)), 20, RULES);
    r.record(entryOf(result(true)), 30, RULES);
    r.record(entryOf(result(false)), 40, RULES);
    expect(r.record(entryOf(result(false)), 50, RULES)).toBeUndefined();
    expect(r.record(entryOf(result(false)), 60, RULES)).toEqual({ from: 'passing', to: 'failing' });
    expect(r.failures).toBe(3);
    expect(r.remediationDue(5_059)).toBe(false);
    expect(r.remediationDue(5_060)).toBe(true);
    expect(r.record(entryOf(result(true)), 70, RULES)).toEqual({ from: 'failing', to: 'passing' });
    expect(r.remediationDue(99_999)).toBe(false);
  });

  it('keeps the last historySize results, and the median of the passing totals', () => {
    const r = new ProbeRecord('default/web', instance, 0);
    for (let i = 1; i <= 25; i++) r.record(entryOf(result(true, i)), i, RULES);
    expect(r.history).toHaveLength(20);
    expect(r.history[0]?.totalMs).toBe(6);
    expect(r.p50()).toBe(15.5);
  });

  it('publishes status.probe again on a change of state or after the refresh, never for a mere new latency', () => {
    const r = new ProbeRecord('default/web', instance, 0);
    r.record(entryOf(result(true, 10)), 0, RULES);
    const first = r.published(0, 60_000);
    expect(first).toMatchObject({
      result: 'Passed',
      latency: { totalMs: 10 },
      consecutiveFailures: 0,
    });
    r.record(entryOf(result(true, 99)), 1_000, RULES);
    expect(r.published(1_000, 60_000)).toBe(first);
    // One failure is no change of state while passing (below the threshold)...
    r.record(entryOf(result(false)), 2_000, RULES);
    expect(r.published(2_000, 60_000)).toBe(first);
    // ...a new egress address is.
    r.record(entryOf(result(true, 5, '127.0.0.6')), 3_000, RULES);
    const moved = r.published(3_000, 60_000);
    expect(moved).not.toBe(first);
    expect(moved?.latency?.totalMs).toBe(5);
    r.record(entryOf(result(true, 7, '127.0.0.6')), 62_000, RULES);
    expect(r.published(62_000, 60_000)).toBe(moved);
    expect(r.published(63_000, 60_000)).not.toBe(moved);
    expect(r.published(63_000, 60_000)?.latency?.totalMs).toBe(7);
  });
});

describe('the scheduler’s bounds', () => {
  const servers: Server[] = [];
  let open = 0;
  let peak = 0;
  const perProxy = new Map<number, { open: number; peak: number; accepted: number }>();
  afterAll(async () => {
    for (const s of servers) await new Promise((r) => s.close(() => r(undefined)));
  });

  it('a burst of forty Running proxies: at most `concurrency` probes at once, one per Proxy, each probed', async () => {
    const store = new MemoryStore();
    const ports: number[] = [];
    for (let i = 1; i <= 40; i++) {
      const counts = { open: 0, peak: 0, accepted: 0 };
      perProxy.set(i, counts);
      const server = createServer((socket) => {
        counts.accepted++;
        // Counted once the events already queued have run, and no longer from the client's FIN:
        // a connection its client closed before opening the next one is not counted with it.
        let state: 'new' | 'counted' | 'gone' = 'new';
        setImmediate(() => {
          if (state !== 'new') return;
          state = 'counted';
          counts.open++;
          open++;
          counts.peak = Math.max(counts.peak, counts.open);
          peak = Math.max(peak, open);
        });
        const leave = () => {
          if (state === 'counted') {
            counts.open--;
            open--;
          }
          state = 'gone';
        };
        socket.on('error', () => {});
        socket.once('end', leave);
        socket.once('close', leave);
        socket.once('data', () => {
          setTimeout(() => socket.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n'), 60);
        });
      });
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, `127.0.78.${i}`, r));
      ports.push((server.address() as AddressInfo).port);
      store.apply('default', `p${i}`, spec({ provider: 'fake' }));
      await store.updateStatus(`default/p${i}`, { providerID: `fake/${i}` });
    }
    const scheduler = new ProbeScheduler(
      { store, target: instance.target, onChange: () => {} },
      { ...DEFAULTS, probeIntervalMs: 50, probeTimeoutMs: 2_000, probeConcurrency: 4 },
    );
    const cp = { name: 'fake', probe: DEFAULT_PROBE_SETTINGS } as unknown as ConfiguredProvider;
    for (let i = 1; i <= 40; i++) {
      const ip = `127.0.78.${i}`;
      const port = ports[i - 1] as number;
      scheduler.observe(
        `default/p${i}`,
        cp,
        { providerID: `fake/${i}`, ip, port, endpoint: `http://${ip}:${port}` },
        undefined,
      );
    }
    const deadline = Date.now() + 30_000;
    while ([...perProxy.values()].some((c) => c.accepted < 2) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    await scheduler.stop();
    // Every proxy was probed; never more than four sockets open at once, never two for one proxy.
    expect([...perProxy.values()].every((c) => c.accepted >= 2)).toBe(true);
    expect(peak).toBeLessThanOrEqual(4);
    expect(Math.max(...[...perProxy.values()].map((c) => c.peak))).toBe(1);
    expect(scheduler.stats().peakInFlight).toBe(4);
    expect(scheduler.history('default/p1').length).toBeGreaterThanOrEqual(1);
  }, 60_000);
});

describe('the slots', () => {
  it('a key forgotten and registered again while its probe runs is probed again only after it', async () => {
    const running = new Map<string, number>();
    let most = 0;
    let runs = 0;
    const release: Array<() => void> = [];
    const slots = new ProbeSlots({
      probeConcurrency: 4,
      probeIntervalMs: 60_000,
      probeJitter: 0,
      random: () => 0.5,
      run: async (key) => {
        runs++;
        running.set(key, (running.get(key) ?? 0) + 1);
        most = Math.max(most, running.get(key) ?? 0);
        await new Promise<void>((r) => release.push(r));
        running.set(key, (running.get(key) ?? 1) - 1);
      },
    });
    slots.now('a');
    expect(runs).toBe(1);
    slots.remove('a');
    slots.now('a');
    slots.now('a');
    expect(runs).toBe(1);
    release.shift()?.();
    await new Promise((r) => setTimeout(r, 10));
    expect(runs).toBe(2);
    expect(most).toBe(1);
    // Forgotten while running and not registered again: nothing follows.
    slots.remove('a');
    release.shift()?.();
    await new Promise((r) => setTimeout(r, 10));
    expect(runs).toBe(2);
    await slots.stop();
  });
});
