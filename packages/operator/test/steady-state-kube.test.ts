// Peer: the Kubernetes API test server (held to kubectl and client-node) with the operator's
// CRDs; the operator in process over the KubeStore with the reference in-memory provider.
// A quiet steady state: a thousand Ready Proxies, and then, through a watch ended by the server
// and a watch window compacted past the informer's version, the operator writes nothing and
// records no Event. It is held to request counts, never to timings.
import type { MemoryBackend } from '@proxy-op/providertest/reference';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeClient } from '../src/kube/client.js';
import {
  call,
  clientFor,
  installCrds,
  KubeTestServer,
  proxy,
  startOperator,
  tempDir,
  until,
} from './kube-support.js';
import { providerSet, testRegistry } from './support.js';

const N = 1000;
const NS = 'steady';

let server: KubeTestServer;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let client: KubeClient;
let running: Awaited<ReturnType<typeof startOperator>> | undefined;
let backend: MemoryBackend | undefined;

beforeAll(async () => {
  server = await KubeTestServer.start();
  tmp = await tempDir();
  await installCrds(server);
  client = await clientFor(server, tmp.dir);
  expect(
    (await call(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name: NS } } })).status,
  ).toBe(201);
  const { registry, backends } = testRegistry();
  const set = await providerSet(
    'installation: steady\nproviders:\n  - name: lab\n    type: memory\n',
    registry,
  );
  running = await startOperator(client, set, {
    namespace: NS,
    probeIntervalMs: 0,
    // A resync would read each Proxy again on its own clock: the window below is shorter.
    readyResyncMs: 3_600_000,
  });
  backend = backends.get('lab');
}, 120_000);

afterAll(async () => {
  await running?.stop();
  client?.close();
  await server?.stop();
  await tmp?.dispose();
});

/** The server's Proxies that are Ready, read from the server itself. */
function readyOnServer(): number {
  return server
    .objects('proxy-op.io', 'proxies', NS)
    .filter((o) => (o as { status?: { phase?: string } }).status?.phase === 'Ready').length;
}

describe('a quiet steady state', () => {
  it(`${N} Ready Proxies: no status write and no Event across a watch restart and a 410`, async () => {
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < N) {
          const i = next++;
          const r = await call(
            server,
            'POST',
            `/apis/proxy-op.io/v1alpha1/namespaces/${NS}/proxies`,
            {
              body: proxy(`p${i}`, {}, NS),
            },
          );
          expect(r.status).toBe(201);
        }
      }),
    );
    await until(() => readyOnServer() === N, 120_000, `${N} Proxies Ready on the server`);
    // The informer has every Proxy's newest copy, nothing is queued, and each Proxy's one
    // Event is in.
    await until(
      () =>
        running?.store.list().filter((p) => p.status.phase === 'Ready').length === N &&
        running.operator.settled(),
      60_000,
      'the operator settled',
    );
    await until(
      () => server.counters.count({ verb: 'create', resource: 'events' }) >= N,
      60_000,
      'one Event per Proxy',
    );
    expect(backend?.vms.size).toBe(N);

    server.counters.reset();
    // The server ends the watch as its timeout would: the informer resumes from its version.
    expect(server.faults.dropWatches()).toBe(1);
    await until(
      () => server.counters.count({ verb: 'watch', resource: 'proxies' }) === 1,
      10_000,
      'the watch resumed',
    );
    // A change elsewhere, a compaction past the informer's version, the watch ended: it is
    // answered 410, and the informer lists every Proxy again.
    await call(server, 'POST', `/api/v1/namespaces/${NS}/configmaps`, {
      body: { metadata: { name: 'elsewhere' } },
    });
    server.faults.expireWatchWindow();
    expect(server.faults.dropWatches()).toBe(1);
    await until(
      () => server.counters.count({ verb: 'list', resource: 'proxies' }) === 1,
      30_000,
      'the Proxies listed again',
    );
    await until(
      () => server.counters.count({ verb: 'watch', resource: 'proxies' }) === 3,
      30_000,
      'the watch after the list',
    );
    // Whatever the restarts queued has run.
    await until(() => running?.operator.settled() === true, 60_000, 'settled again');
    await new Promise((r) => setTimeout(r, 500));

    const summary = server.counters.summary().filter((s) => s.count > 0);
    expect(server.counters.writes({ resource: 'proxies' }), JSON.stringify(summary)).toBe(0);
    expect(server.counters.count({ verb: 'create', resource: 'events' })).toBe(0);
    expect(server.counters.count({ verb: 'patch', resource: 'events' })).toBe(0);
    expect(backend?.vms.size).toBe(N);
    expect(running?.store.lists).toBe(2);
  }, 300_000);
});
