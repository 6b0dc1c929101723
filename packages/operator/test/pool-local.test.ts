// Peers: the local provider's real forward-proxy processes on 127.0.74.0/24, probed through
// their data plane against the operator's own whoami target; a real HTTP origin on loopback
// that a client loop reaches through the pool's published endpoints, with their credentials.
import { requestThroughProxy, startHttpEchoOrigin } from '@proxy-op/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { validatePoolSpec } from '../src/api/pool.js';
import type { ProxyObject } from '../src/api/proxy.js';
import { MemoryPoolStore } from '../src/store/pools.js';
import { type ProbeRig, probeRig, proxyPids } from './probe-support.js';

const KEY = 'default/web';
let rig: ProbeRig | undefined;
let origin: Awaited<ReturnType<typeof startHttpEchoOrigin>> | undefined;
const stopped = new Set<number>();

afterEach(async () => {
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {}
  }
  stopped.clear();
  await rig?.close();
  await new Promise((r) => (origin === undefined ? r(undefined) : origin.server.close(r)));
  rig = undefined;
});

async function setup(spec: Record<string, unknown>) {
  let pools: MemoryPoolStore | undefined;
  rig = await probeRig({
    addressRange: '127.0.74.0/24',
    pools: (store) => {
      pools = new MemoryPoolStore(store);
      return pools;
    },
  });
  origin = await startHttpEchoOrigin();
  const v = validatePoolSpec({
    template: {
      spec: {
        provider: 'here',
        allowedSources: ['127.0.0.0/8'],
        // The origin is on loopback, which the proxies refuse unless allowed.
        egress: { allow: [`127.0.0.1:${origin.port}`] },
      },
    },
    ...spec,
  });
  if (!v.ok) throw new Error(JSON.stringify(v.problems));
  const p = pools as MemoryPoolStore;
  p.apply('default', 'web', v.value);
  const r = rig;
  // The pool's Proxies, those being deleted left out.
  const members = (): ProxyObject[] =>
    r.store
      .list()
      .filter(
        (x) =>
          x.metadata.deletionTimestamp === undefined &&
          x.metadata.ownerReferences?.some((o) => o.name === 'web'),
      );
  const status = () => p.getPool(KEY)?.status;
  const cond = (type: string) => status()?.conditions?.find((c) => c.type === type);
  return { pools: p, rig: r, members, status, cond };
}

/** One GET through the proxy named by `url` (`http://user:pass@ip:port`), its credential in the header. */
async function through(url: string, target: string): Promise<number> {
  const u = new URL(url);
  const basic = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`);
  const r = await requestThroughProxy({ address: u.hostname, port: Number(u.port) }, target, {
    proxyAuthorization: `Basic ${basic.toString('base64')}`,
  });
  return r.status;
}

describe('ProxyPool over real local proxies', () => {
  it('rotates every Proxy by age under load, make-before-break: no client request fails', async () => {
    const { pools, rig, members, status } = await setup({
      replicas: 2,
      rotation: { maxAge: '10s', jitter: '0%', drainSeconds: 2, budget: 1 },
    });
    await rig.until(() => (status()?.availableReplicas ?? 0) === 2, 30_000);
    const first = new Set(members().map((p) => p.metadata.name));
    const target = `http://127.0.0.1:${origin?.port}/rotate`;
    const failures: string[] = [];
    let ok = 0;
    const urls = new Set<string>();
    let running = true;
    const worker = async () => {
      while (running) {
        const list = pools.published.get(KEY)?.withCredentials ?? [];
        const url = list[Math.floor(Math.random() * list.length)];
        if (url === undefined) {
          failures.push('no endpoint published');
          await new Promise((r) => setTimeout(r, 50));
          continue;
        }
        urls.add(new URL(url).host);
        try {
          const code = await through(url, target);
          if (code === 200) ok++;
          else failures.push(`${new URL(url).host}: ${code}`);
        } catch (err) {
          failures.push(`${new URL(url).host}: ${(err as Error).message}`);
        }
      }
    };
    const loops = Array.from({ length: 4 }, worker);
    // A full rotation: every first Proxy replaced, two available again.
    await rig.until(
      () =>
        members().every((p) => !first.has(p.metadata.name)) &&
        members().length === 2 &&
        (status()?.availableReplicas ?? 0) === 2,
      60_000,
    );
    running = false;
    await Promise.all(loops);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(50);
    // The clients went through the first Proxies and through their successors.
    expect(urls.size).toBeGreaterThanOrEqual(4);
    console.log(`pool rotation under load: ${ok} requests over ${urls.size} proxies, 0 failed`);
  }, 90_000);

  it('replaces a Proxy whose process hangs once remediation.unhealthyTimeout has passed', async () => {
    const { pools, rig, members, status } = await setup({
      replicas: 2,
      remediation: { unhealthyTimeout: '2s' },
    });
    await rig.until(() => (status()?.availableReplicas ?? 0) === 2, 30_000);
    const before = members().map((p) => p.metadata.name);
    const [pid] = proxyPids(rig.stateDir);
    process.kill(pid as number, 'SIGSTOP');
    stopped.add(pid as number);
    await rig.until(
      () =>
        (status()?.availableReplicas ?? 0) === 2 &&
        members().some((p) => !before.includes(p.metadata.name)),
      30_000,
    );
    expect(members().filter((p) => before.includes(p.metadata.name))).toHaveLength(1);
    expect(pools.events.filter((e) => e.reason === 'Remediating')).toHaveLength(1);
  }, 60_000);

  it('replaces nothing when every Proxy fails at once (maxUnhealthy), and recovers when they do', async () => {
    const { rig, members, status, cond } = await setup({
      replicas: 2,
      // Longer than the spread of the probes' detections (each Proxy is probed on its own beat).
      remediation: { unhealthyTimeout: '4s' },
    });
    await rig.until(() => (status()?.availableReplicas ?? 0) === 2, 30_000);
    const before = members()
      .map((p) => p.metadata.name)
      .sort();
    for (const pid of proxyPids(rig.stateDir)) {
      process.kill(pid, 'SIGSTOP');
      stopped.add(pid);
    }
    await rig.until(() => cond('RemediationAllowed')?.status === 'False', 30_000);
    expect(cond('RemediationAllowed')?.reason).toBe('TooManyUnhealthy');
    await new Promise((r) => setTimeout(r, 5_000));
    expect(
      members()
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(before);
    expect(status()?.endpoints).toEqual([]);
    for (const pid of stopped) process.kill(pid, 'SIGCONT');
    stopped.clear();
    await rig.until(() => (status()?.availableReplicas ?? 0) === 2, 30_000);
    expect(cond('RemediationAllowed')?.status).toBe('True');
    expect(
      members()
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(before);
  }, 60_000);
});
