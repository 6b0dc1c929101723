// Peer: the reference provider (@proxy-op/providertest's memory backend) under the operator's
// reconciler, over the memory stores; the pool controller on top, as on a real installation.

import type { Meter } from '@opentelemetry/api';
import { afterEach, describe, expect, it } from 'vitest';
import {
  POOL_LABEL,
  type PoolSpec,
  TEMPLATE_HASH_LABEL,
  validatePoolSpec,
} from '../src/api/pool.js';
import type { ProxyObject } from '../src/api/proxy.js';
import type { Settings } from '../src/defaults.js';
import { Operator } from '../src/manager/operator.js';
import { createPrometheusMetrics } from '../src/process/telemetry.js';
import { MemoryCredentialStore } from '../src/store/credentials.js';
import { MemoryPoolStore } from '../src/store/pools.js';
import { MemoryStore } from '../src/store/proxies.js';
import { providerSet, ScriptedBackend, testRegistry } from './support.js';

const FAST = {
  deletionPollMs: 2,
  provisioningPollMs: 5,
  readyResyncMs: 50,
  backoffBaseMs: 1,
  backoffMaxMs: 20,
  gcIntervalMs: 0,
  healthIntervalMs: 0,
  probeIntervalMs: 0,
};

async function waitFor(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function poolSpec(extra: Record<string, unknown>): PoolSpec {
  const v = validatePoolSpec({
    template: {
      spec: {
        provider: 'a',
        allowedSources: ['10.0.0.0/8'],
        placement: { machineType: 'small', image: 'debian-13' },
      },
    },
    ...extra,
  });
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  return v.value;
}

const stops: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const s of stops.splice(0).reverse()) await s();
});

async function setup(
  scripted?: ScriptedBackend,
  tunables: Partial<Settings> = {},
  price = '',
  meter?: Meter,
) {
  const { registry } = testRegistry(scripted === undefined ? {} : { scripted });
  const providers = await providerSet(
    `providers:\n  - name: a\n    type: memory\n${price}  - name: b\n    type: ${scripted === undefined ? 'memory' : 'scripted'}\n`,
    registry,
  );
  const store = new MemoryStore();
  const credentials = new MemoryCredentialStore();
  const pools = new MemoryPoolStore(store);
  const op = new Operator({
    store,
    pools,
    providers,
    credentials,
    settings: { ...FAST, ...tunables },
    ...(meter === undefined ? {} : { meter }),
  });
  op.start();
  stops.push(() => op.stop());
  const members = (): ProxyObject[] =>
    store.list().filter((p) => p.metadata.labels?.[POOL_LABEL] === 'web');
  const ready = (p: ProxyObject) =>
    p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  return { store, pools, members, ready, credentials };
}

describe('ProxyPool over the reference provider', () => {
  it('scales up, publishes only Ready endpoints (with credentials in the second list), scales down', async () => {
    const { pools, members, ready } = await setup();
    pools.apply('default', 'web', poolSpec({ replicas: 3 }));
    await waitFor(
      () => (pools.getPool('default/web')?.status.availableReplicas ?? 0) === 3,
      '3 available',
    );
    const ms = members();
    expect(ms).toHaveLength(3);
    for (const p of ms) {
      expect(p.metadata.ownerReferences?.[0]).toMatchObject({
        kind: 'ProxyPool',
        name: 'web',
        controller: true,
      });
      expect(p.metadata.labels?.[TEMPLATE_HASH_LABEL]).toBe(
        pools.getPool('default/web')?.status.templateHash,
      );
      expect(ready(p)).toBe(true);
    }
    const st = pools.getPool('default/web')?.status;
    expect(st?.endpoints?.map((e) => e.url).sort()).toEqual(
      ms.map((p) => p.status.endpoint).sort(),
    );
    expect(st?.selector).toBe('proxy-op.io/pool=web');
    const published = pools.published.get('default/web');
    expect(published?.plain).toHaveLength(3);
    for (const u of published?.withCredentials ?? [])
      expect(u).toMatch(/^http:\/\/[^:@/]+:[^@/]+@/);
    for (const u of published?.plain ?? []) expect(u).not.toContain('@');
    // Nothing about credentials in the pool's status.
    expect(JSON.stringify(st)).not.toMatch(/@/);

    pools.apply('default', 'web', poolSpec({ replicas: 1, deletePolicy: 'Oldest' }));
    await waitFor(() => members().length === 1, 'scaled to 1');
    await waitFor(() => pools.getPool('default/web')?.status.endpoints?.length === 1, '1 endpoint');
  });

  it("sums its Proxies' cost per hour by currency, and publishes each upstream's location and provider", async () => {
    const metrics = createPrometheusMetrics();
    stops.push(() => metrics.shutdown());
    const { pools, members } = await setup(
      undefined,
      {},
      '    price: { currency: EUR, perHour: 0.0119 }\n',
      metrics.meter,
    );
    pools.apply('default', 'web', poolSpec({ replicas: 3 }));
    await waitFor(
      () => pools.getPool('default/web')?.status.cost?.[0]?.proxies === 3,
      'the cost of 3 Proxies',
    );
    expect(pools.getPool('default/web')?.status.cost).toEqual([
      { currency: 'EUR', perHour: 0.0357, proxies: 3 },
    ]);
    for (const p of members()) expect(p.status.cost?.perHour).toBe(0.0119);
    await waitFor(
      () => pools.published.get('default/web')?.upstreams.length === 3,
      '3 upstreams published',
    );
    for (const u of pools.published.get('default/web')?.upstreams ?? []) {
      expect(u).toMatchObject({ provider: 'a', location: { region: 'memory-1', country: 'DE' } });
    }
    expect(await metrics.text()).toMatch(
      /^proxy_op_cost_per_hour\{pool="default\/web",provider="a",currency="EUR"[^}]*\} 0\.0357/m,
    );
    pools.apply('default', 'web', poolSpec({ replicas: 1, deletePolicy: 'Oldest' }));
    await waitFor(
      () => pools.getPool('default/web')?.status.cost?.[0]?.proxies === 1,
      'the cost of 1 Proxy',
    );
    expect(pools.getPool('default/web')?.status.cost?.[0]?.perHour).toBe(0.0119);
  });

  it('rolls a template change with maxSurge 1 / maxUnavailable 0: never more than 4, never fewer than 3 available', async () => {
    const { store, pools, members, ready } = await setup();
    pools.apply('default', 'web', poolSpec({ replicas: 3 }));
    await waitFor(
      () => (pools.getPool('default/web')?.status.availableReplicas ?? 0) === 3,
      '3 available',
    );
    const first = pools.getPool('default/web')?.status.templateHash;
    let most = 0;
    let fewest = 3;
    const unwatch = store.watch(() => {
      const ms = members().filter((p) => p.metadata.deletionTimestamp === undefined);
      most = Math.max(most, ms.length);
      fewest = Math.min(fewest, ms.filter(ready).length);
    });
    pools.apply(
      'default',
      'web',
      poolSpec({
        replicas: 3,
        template: {
          spec: {
            provider: 'a',
            allowedSources: ['10.0.0.0/8'],
            placement: { machineType: 'small', image: 'debian-13' },
            port: 8080,
          },
        },
      }),
    );
    await waitFor(() => {
      const st = pools.getPool('default/web')?.status;
      return (
        st?.templateHash !== first &&
        st?.updatedReplicas === 3 &&
        members().length === 3 &&
        st.availableReplicas === 3
      );
    }, 'rolled');
    unwatch();
    expect(most).toBe(4);
    expect(fewest).toBeGreaterThanOrEqual(3);
    expect(members().every((p) => p.spec.port === 8080)).toBe(true);
    const progressing = pools
      .getPool('default/web')
      ?.status.conditions?.find((c) => c.type === 'Progressing');
    expect(progressing?.reason).toBe('NewTemplateAvailable');
  });

  it('spreads over two providers by weight, and the other carries the pool when one is removed', async () => {
    const { pools, members } = await setup();
    pools.apply(
      'default',
      'web',
      poolSpec({ replicas: 6, spread: [{ provider: 'a', weight: 2 }, { provider: 'b' }] }),
    );
    await waitFor(
      () => (pools.getPool('default/web')?.status.availableReplicas ?? 0) === 6,
      '6 available',
    );
    const by = (prov: string) => members().filter((p) => p.spec.provider === prov).length;
    expect([by('a'), by('b')]).toEqual([4, 2]);
    // A provider that is not configured takes nothing; the pool says so.
    pools.apply(
      'default',
      'web',
      poolSpec({ replicas: 8, spread: [{ provider: 'a', weight: 2 }, { provider: 'gone' }] }),
    );
    await waitFor(
      () => (pools.getPool('default/web')?.status.availableReplicas ?? 0) === 8,
      '8 available',
    );
    const degraded = pools
      .getPool('default/web')
      ?.status.conditions?.find((c) => c.type === 'SpreadDegraded');
    expect(degraded).toMatchObject({ status: 'True', reason: 'ProviderFailing' });
    expect(degraded?.message).toContain('provider gone is not configured');
  });

  it('one provider latched (it refuses every create permanently): the other carries the pool, and SpreadDegraded names it', async () => {
    const refusing = new ScriptedBackend();
    refusing.fail('create', 'Permanent', 1_000);
    // Remediation backs off 200 ms instead of 10 s: with the default, whether b's second latched
    // Proxy is replaced in the same round as its first (10 s) or in the next one (another 20 s)
    // depends on how soon the reconciler latched it, and the test is about the latch, not the wait.
    const { pools, members } = await setup(refusing, { remediationBackoffBaseMs: 200 });
    const degraded: string[] = [];
    const sample = () => {
      const c = pools
        .getPool('default/web')
        ?.status.conditions?.find((x) => x.type === 'SpreadDegraded' && x.status === 'True');
      if (c?.message !== undefined && !degraded.includes(c.message)) degraded.push(c.message);
    };
    pools.apply(
      'default',
      'web',
      poolSpec({
        replicas: 4,
        spread: [{ provider: 'a' }, { provider: 'b' }],
        remediation: { startupTimeout: '1s' },
      }),
    );
    await waitFor(
      () => {
        sample();
        return (pools.getPool('default/web')?.status.availableReplicas ?? 0) === 4;
      },
      '4 available',
      20_000,
    );
    const live = members().filter((p) => p.metadata.deletionTimestamp === undefined);
    const on = (prov: string) => live.filter((p) => p.spec.provider === prov).length;
    expect(on('a')).toBeGreaterThanOrEqual(4);
    expect(degraded.some((m) => /provider b refused Proxy web-[a-z0-9]+ permanently/.test(m))).toBe(
      true,
    );
    // Every create b was asked for was refused: none of its Proxies ever ran.
    expect(refusing.vms.size).toBe(0);
    // Its latched Proxies are gone, and b is still named: the pool sends it nothing for a while.
    expect(on('b')).toBe(0);
    const now = pools
      .getPool('default/web')
      ?.status.conditions?.find((c) => c.type === 'SpreadDegraded');
    expect(now).toMatchObject({ status: 'True', reason: 'ProviderFailing' });
    expect(now?.message).toMatch(
      /provider b refused Proxy web-[a-z0-9]+ permanently \(tried again after /,
    );
    // A scale-up goes to a alone.
    pools.apply(
      'default',
      'web',
      poolSpec({
        replicas: 6,
        spread: [{ provider: 'a' }, { provider: 'b' }],
        remediation: { startupTimeout: '1s' },
      }),
    );
    await waitFor(
      () => (pools.getPool('default/web')?.status.availableReplicas ?? 0) === 6,
      '6 available',
    );
    expect(members().every((p) => p.spec.provider === 'a')).toBe(true);
  });

  it('deleting the pool deletes its Proxies and their instances', async () => {
    const { store, pools, members } = await setup();
    pools.apply('default', 'web', poolSpec({ replicas: 2 }));
    await waitFor(
      () => (pools.getPool('default/web')?.status.availableReplicas ?? 0) === 2,
      '2 available',
    );
    pools.delete('default/web');
    await waitFor(() => members().length === 0, 'Proxies gone');
    expect(store.list()).toEqual([]);
  });
});
