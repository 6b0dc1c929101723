// Peer: the Kubernetes API test server (coordination.k8s.io Leases with MicroTime validation);
// two LeaderElectors in process, one of them behind a TCP relay the test can cut (a partition).
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector, microTime } from '../src/kube/leader.js';
import { clientFor, KubeTestServer, tempDir, until } from './kube-support.js';

let server: KubeTestServer;
let tmp: Awaited<ReturnType<typeof tempDir>>;

beforeAll(async () => {
  server = await KubeTestServer.start();
  tmp = await tempDir();
});

afterAll(async () => {
  await server.stop();
  await tmp.dispose();
});

/** A TCP relay to the API server; `cut` drops every connection and refuses new ones. */
async function relay(): Promise<{ url: string; cut(): void; close(): Promise<void> }> {
  const target = new URL(server.url);
  const sockets = new Set<Socket>();
  let cut = false;
  const s: Server = createServer((down) => {
    if (cut) {
      down.destroy();
      return;
    }
    const up = connect(Number(target.port), target.hostname);
    for (const x of [down, up]) {
      sockets.add(x);
      x.on('close', () => sockets.delete(x));
      x.on('error', () => {});
    }
    down.pipe(up).pipe(down);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  return {
    url: `https://127.0.0.1:${port}`,
    cut() {
      cut = true;
      for (const x of sockets) x.destroy();
    },
    close: () => new Promise((r) => s.close(() => r())),
  };
}

function lease(name: string) {
  return server
    .objects('coordination.k8s.io', 'leases', 'default')
    .find((l) => (l.metadata as { name: string }).name === name) as
    | {
        spec: {
          holderIdentity?: string;
          renewTime: string;
          acquireTime: string;
          leaseTransitions: number;
          leaseDurationSeconds: number;
        };
      }
    | undefined;
}

describe('microTime', () => {
  it('has exactly six fractional digits, as the API server requires', () => {
    expect(microTime(new Date('2025-01-02T03:04:05.678Z'))).toBe('2025-01-02T03:04:05.678000Z');
    expect(microTime(new Date(0))).toBe('1970-01-01T00:00:00.000000Z');
  });
});

describe('leader election on a Lease', () => {
  it('one leads, the other waits; a released Lease is taken at the next try', async () => {
    const ca = await clientFor(server, tmp.dir);
    const cb = await clientFor(server, tmp.dir);
    const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 200 };
    const a = new LeaderElector({
      client: ca,
      namespace: 'default',
      name: 'l1',
      identity: 'a',
      ...timing,
    });
    const b = new LeaderElector({
      client: cb,
      namespace: 'default',
      name: 'l1',
      identity: 'b',
      ...timing,
    });
    await a.acquire(AbortSignal.timeout(5000));
    expect(a.leading).toBe(true);
    let bLeads = false;
    const bDone = b.acquire(AbortSignal.timeout(20_000)).then(() => {
      bLeads = true;
    });
    await new Promise((r) => setTimeout(r, 1000));
    expect(bLeads).toBe(false);
    const held = lease('l1');
    expect(held?.spec.holderIdentity).toBe('a');
    expect(held?.spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(held?.spec.acquireTime).toMatch(/\.\d{6}Z$/);
    expect(held?.spec.leaseDurationSeconds).toBe(3);
    // Renewals move renewTime and keep acquireTime.
    const renewed = held?.spec.renewTime;
    await until(() => lease('l1')?.spec.renewTime !== renewed, 2000, 'a renewal');
    expect(lease('l1')?.spec.acquireTime).toBe(held?.spec.acquireTime);

    const released = Date.now();
    await a.release();
    expect(a.leading).toBe(false);
    await bDone;
    // Taken at b's next try, long before the lease duration.
    expect(Date.now() - released).toBeLessThan(1500);
    expect(lease('l1')?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.release();
    expect(lease('l1')?.spec.holderIdentity).toBeUndefined();
    ca.close();
    cb.close();
  });

  it('a partitioned leader stops leading before anyone else starts; the other takes over after the lease duration', async () => {
    const r = await relay();
    const ca = await clientFor(server, tmp.dir, { server: r.url });
    const cb = await clientFor(server, tmp.dir);
    const timing = { leaseDurationMs: 3000, renewDeadlineMs: 1000, retryPeriodMs: 250 };
    const a = new LeaderElector({
      client: ca,
      namespace: 'default',
      name: 'l2',
      identity: 'a',
      ...timing,
    });
    const b = new LeaderElector({
      client: cb,
      namespace: 'default',
      name: 'l2',
      identity: 'b',
      ...timing,
    });
    await a.acquire(AbortSignal.timeout(5000));
    let aLostAt = 0;
    const lost = a.lost.then((e) => {
      aLostAt = performance.now();
      return e;
    });
    let bAt = 0;
    const bDone = b.acquire(AbortSignal.timeout(20_000)).then(() => {
      bAt = performance.now();
    });
    await new Promise((res) => setTimeout(res, 800));
    const cutAt = performance.now();
    r.cut();
    const reason = await lost;
    expect(reason.message).toContain('leadership lost: the Lease was not renewed within 1000 ms');
    expect(a.leading).toBe(false);
    await bDone;
    // The old leader gave up before the new one took over, and the new one waited for the
    // Lease to go unrenewed for its whole duration (less the retry period a's last renewal
    // may have preceded the cut by).
    expect(aLostAt).toBeGreaterThan(0);
    expect(bAt).toBeGreaterThan(aLostAt);
    expect(bAt - cutAt).toBeGreaterThanOrEqual(3000 - 250);
    expect(bAt - cutAt).toBeLessThan(3000 + 2000);
    expect(lease('l2')?.spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    await b.release();
    await a.release();
    ca.close();
    cb.close();
    await r.close();
  });
});
