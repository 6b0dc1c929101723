// Peer: the Kubernetes API test server (held to kubectl 1.32 and @kubernetes/client-node) with
// the operator's CRDs; the operator runs in process over the KubeStore with the reference
// in-memory provider (and a scripted one for slow and failing calls).
import type { MemoryBackend } from '@proxy-op/providertest/reference';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { KubeClient } from '../src/kube/client.js';
import type { ProviderSet } from '../src/providers/set.js';
import {
  call,
  clientFor,
  createProxy,
  installCrds,
  KubeTestServer,
  startOperator,
  stored,
  tempDir,
  until,
} from './kube-support.js';
import { providerSet, ScriptedBackend, testRegistry } from './support.js';

let server: KubeTestServer;
let tmp: Awaited<ReturnType<typeof tempDir>>;
let client: KubeClient;

beforeAll(async () => {
  server = await KubeTestServer.start();
  tmp = await tempDir();
  await installCrds(server);
  client = await clientFor(server, tmp.dir);
});

afterAll(async () => {
  client.close();
  await server.stop();
  await tmp.dispose();
});

let ns = 0;
let namespace = 'default';
beforeEach(async () => {
  // A namespace per test keeps their Proxies apart.
  namespace = `t${++ns}`;
  const r = await call(server, 'POST', '/api/v1/namespaces', {
    body: { metadata: { name: namespace } },
  });
  expect(r.status).toBe(201);
  server.faults.reset();
});

let running: Awaited<ReturnType<typeof startOperator>> | undefined;
afterEach(async () => {
  await running?.stop();
  running = undefined;
});

async function memoryOperator(
  extra: Parameters<typeof startOperator>[2] = {},
): Promise<{ backend: MemoryBackend; set: ProviderSet }> {
  const { registry, backends } = testRegistry();
  const set = await providerSet(
    'installation: test\nproviders:\n  - name: lab\n    type: memory\n',
    registry,
  );
  running = await startOperator(client, set, { namespace, ...extra });
  const backend = backends.get('lab');
  if (backend === undefined) throw new Error('no backend');
  return { backend, set };
}

/** The Events on a Proxy, oldest first. */
function events(name: string) {
  const rv = (e: Record<string, unknown>) =>
    Number((e.metadata as { resourceVersion: string }).resourceVersion);
  return server
    .objects('', 'events', namespace)
    .filter((e) => (e.involvedObject as { name: string }).name === name)
    .sort((a, b) => rv(a) - rv(b))
    .map((e) => `${e.type as string} ${e.reason as string}`);
}

const ready = (name: string) => () => stored(server, name, namespace)?.status?.phase === 'Ready';

describe('the KubeStore', () => {
  it('takes a Proxy to Ready with three writes to it: the finalizer, the ID, Ready', async () => {
    const { backend } = await memoryOperator();
    server.counters.reset();
    await createProxy(server, 'web', {}, namespace);
    await until(ready('web'), 10_000, 'web Ready');
    const p = stored(server, 'web', namespace);
    expect(p?.metadata.finalizers).toEqual(['proxy-op.io/instance']);
    expect(p?.status).toMatchObject({
      phase: 'Ready',
      endpoint: 'http://10.0.0.10:3128',
      observedGeneration: 1,
      instanceProvider: 'lab',
    });
    expect(p?.status.conditions.find((c: { type: string }) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Running',
    });
    expect(backend.vms.size).toBe(1);
    await until(() => events('web').length === 1, 5000, 'the Created Event');
    expect(events('web')).toEqual(['Normal Created']);
    // Writes by the operator: the user's create is the only other write.
    const proxyWrites = server.counters.writes({ resource: 'proxies' });
    expect(proxyWrites).toBe(1 + 3);
    expect(
      server.counters.count({ verb: 'update', resource: 'proxies', subresource: 'status' }),
    ).toBe(2);
    expect(server.counters.count({ verb: 'patch', resource: 'proxies' })).toBe(1);
    // Nothing was read back: the informer's cache and the write answers suffice.
    expect(server.counters.count({ verb: 'get', resource: 'proxies' })).toBe(0);
    expect(running?.store.lists).toBe(1);
  });

  it('replaces the instance when the spec changes, and deletes it with the Proxy', async () => {
    const { backend } = await memoryOperator();
    await createProxy(server, 'api', {}, namespace);
    await until(ready('api'), 10_000, 'api Ready');
    const first = stored(server, 'api', namespace)?.status.providerID;
    const patched = await call(
      server,
      'PATCH',
      `/apis/proxy-op.io/v1alpha1/namespaces/${namespace}/proxies/api`,
      { body: { spec: { port: 8080 } }, contentType: 'application/merge-patch+json' },
    );
    expect(patched.status).toBe(200);
    await until(
      () => stored(server, 'api', namespace)?.status?.endpoint === 'http://10.0.0.11:8080',
      10_000,
      'the replacement Ready on port 8080',
    );
    expect(stored(server, 'api', namespace)?.status.observedGeneration).toBe(2);
    expect(backend.vms.size).toBe(1);
    expect(stored(server, 'api', namespace)?.status.providerID).toBe(first);
    const del = await call(
      server,
      'DELETE',
      `/apis/proxy-op.io/v1alpha1/namespaces/${namespace}/proxies/api`,
    );
    expect(del.status).toBe(200);
    await until(() => stored(server, 'api', namespace) === undefined, 10_000, 'api gone');
    expect(backend.vms.size).toBe(0);
    await until(() => events('api').length === 4, 5000, 'four Events');
    expect(events('api')).toEqual([
      'Normal Created',
      'Normal Replacing',
      'Normal Created',
      'Normal Deleted',
    ]);
  });

  it('re-reads after a conflict and never loses a concurrent edit of the spec', async () => {
    const scripted = new ScriptedBackend();
    scripted.delays.set('create', 400);
    const { registry } = testRegistry({ scripted });
    const set = await providerSet(
      'installation: test\nproviders:\n  - name: lab\n    type: scripted\n',
      registry,
    );
    running = await startOperator(client, set, { namespace });
    await createProxy(server, 'edit', {}, namespace);
    await until(() => scripted.creating.size === 1, 5000, 'the Create in flight');
    // The watch goes down (and comes back only later) while the Create runs, and a user
    // changes the spec meanwhile: the status write that follows holds a stale
    // resourceVersion, conflicts, reads the Proxy again and writes on top of it.
    server.faults.delay(1500, { verb: 'watch' });
    server.faults.dropWatches({ abrupt: true });
    server.counters.reset();
    const r = await call(
      server,
      'PATCH',
      `/apis/proxy-op.io/v1alpha1/namespaces/${namespace}/proxies/edit`,
      {
        body: { spec: { port: 8081 }, metadata: { labels: { team: 'a' } } },
        contentType: 'application/merge-patch+json',
      },
    );
    expect(r.status).toBe(200);
    await until(
      () => stored(server, 'edit', namespace)?.status?.endpoint?.endsWith(':8081') === true,
      10_000,
      'Ready on the edited port',
    );
    const p = stored(server, 'edit', namespace) as { spec: { port: number }; metadata: object };
    expect(p.spec.port).toBe(8081);
    expect(p.metadata).toMatchObject({ labels: { team: 'a' } });
    expect(server.counters.count({ verb: 'get', resource: 'proxies' })).toBeGreaterThanOrEqual(1);
  });

  it('rides out a storm of 409s on every write', async () => {
    await memoryOperator();
    server.faults.conflictNextWrites(4, { resource: 'proxies', verb: ['patch', 'update'] });
    await createProxy(server, 'storm', {}, namespace);
    await until(ready('storm'), 15_000, 'storm Ready');
    expect(stored(server, 'storm', namespace)?.metadata.finalizers).toEqual([
      'proxy-op.io/instance',
    ]);
  });

  it('resumes a watch dropped mid-stream without listing again', async () => {
    await memoryOperator();
    await createProxy(server, 'w1', {}, namespace);
    await until(ready('w1'), 10_000, 'w1 Ready');
    server.counters.reset();
    expect(server.faults.dropWatches({ abrupt: true })).toBeGreaterThanOrEqual(1);
    await createProxy(server, 'w2', {}, namespace);
    await until(ready('w2'), 10_000, 'w2 Ready after the drop');
    expect(server.counters.count({ verb: 'watch', resource: 'proxies' })).toBeGreaterThanOrEqual(1);
    expect(server.counters.count({ verb: 'list', resource: 'proxies' })).toBe(0);
    expect(running?.store.lists).toBe(1);
  });

  it('lists again after a 410 and catches up with what changed meanwhile', async () => {
    const { backend } = await memoryOperator();
    await createProxy(server, 'x1', {}, namespace);
    await until(ready('x1'), 10_000, 'x1 Ready');
    // A change elsewhere, then a compaction past the informer's version: its resumed watch is
    // answered 410.
    await call(server, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, {
      body: { metadata: { name: 'elsewhere' } },
    });
    server.faults.expireWatchWindow();
    server.faults.dropWatches();
    await createProxy(server, 'x2', {}, namespace);
    await until(ready('x2'), 10_000, 'x2 Ready after the relist');
    await until(() => (running?.store.lists ?? 0) === 2, 10_000, 'a second list');
    expect(backend.vms.size).toBe(2);
    const settled = running?.store.lists;
    await createProxy(server, 'x3', {}, namespace);
    await until(ready('x3'), 10_000, 'x3 Ready');
    expect(running?.store.lists).toBe(settled);
  });

  it('writes ProviderHealth, keeps lastTransitionTime, and deletes it with the provider', async () => {
    const { registry } = testRegistry();
    const set = await providerSet(
      'installation: test\nproviders:\n  - name: hlab\n    type: memory\n',
      registry,
    );
    running = await startOperator(client, set, { namespace });
    const [h1] = await running.operator.runHealth();
    expect(h1?.status.ready).toBe(true);
    const first = server
      .objects('proxy-op.io', 'providerhealths')
      .find((o) => (o.metadata as { name: string }).name === 'hlab') as {
      status: { targets: Array<{ lastTransitionTime: string }>; lastCheckTime: string };
    };
    expect(first.status.targets.length).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 1100));
    await running.operator.runHealth();
    const second = server
      .objects('proxy-op.io', 'providerhealths')
      .find((o) => (o.metadata as { name: string }).name === 'hlab') as typeof first;
    expect(second.status.lastCheckTime).not.toBe(first.status.lastCheckTime);
    expect(second.status.targets[0]?.lastTransitionTime).toBe(
      first.status.targets[0]?.lastTransitionTime,
    );
    const load = await import('../src/index.js').then((m) =>
      m.parseProvidersConfig('installation: test\nproviders: []\n', registry),
    );
    if (!load.ok) throw new Error('config');
    await running.operator.applyProviders(load.config);
    expect(
      server
        .objects('proxy-op.io', 'providerhealths')
        .some((o) => (o.metadata as { name: string }).name === 'hlab'),
    ).toBe(false);
  });
});

describe('the KubeStore, scoped and with specs the operator cannot take', () => {
  it('reconciles only its namespace', async () => {
    const { backend } = await memoryOperator();
    const other = `${namespace}-other`;
    expect(
      (await call(server, 'POST', '/api/v1/namespaces', { body: { metadata: { name: other } } }))
        .status,
    ).toBe(201);
    await createProxy(server, 'mine', {}, namespace);
    await createProxy(server, 'theirs', {}, other);
    await until(ready('mine'), 10_000, 'mine Ready');
    await new Promise((r) => setTimeout(r, 300));
    expect(stored(server, 'theirs', other)?.metadata.finalizers).toBeUndefined();
    expect(stored(server, 'theirs', other)?.status).toBeUndefined();
    expect(backend.vms.size).toBe(1);
    expect(running?.store.list().map((p) => p.metadata.name)).toEqual(['mine']);
  });

  it('reports a spec that fails validation, leaves it alone, and keeps GC off its instance', async () => {
    // A cluster whose CRD is looser than this operator's schema (an older or edited CRD).
    const loose = await KubeTestServer.start();
    try {
      const crds = (await import('../src/index.js')).customResourceDefinitions();
      const proxyCrd = structuredClone(crds[0]) as {
        spec: {
          versions: Array<{ schema: { openAPIV3Schema: { properties: Record<string, unknown> } } }>;
        };
      };
      const version = proxyCrd.spec.versions[0];
      if (version === undefined) throw new Error('no version');
      version.schema.openAPIV3Schema.properties.spec = {
        type: 'object',
        'x-kubernetes-preserve-unknown-fields': true,
      };
      for (const crd of [proxyCrd, crds[1]]) {
        const r = await call(
          loose,
          'POST',
          '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
          {
            body: crd,
          },
        );
        expect(r.status).toBe(201);
      }
      await until(
        async () => (await call(loose, 'GET', '/apis/proxy-op.io/v1alpha1/proxies')).status === 200,
      );
      const looseClient = await clientFor(loose, tmp.dir);
      const { registry, backends } = testRegistry();
      const set = await providerSet(
        'installation: test\nproviders:\n  - name: lab\n    type: memory\n',
        registry,
      );
      const op = await startOperator(looseClient, set, { gcMinAgeMs: 0 });
      try {
        const bad = await createProxy(loose, 'bad', { port: 0 });
        const uid = bad.body.metadata.uid as string;
        await until(() => op.store.problems().length === 1, 5000, 'the problem reported');
        expect(op.store.problems()).toEqual(['default/bad: spec.port: must be >= 1']);
        expect(op.store.get('default/bad')).toBeUndefined();
        await until(
          () => loose.objects('', 'events', 'default').some((e) => e.reason === 'InvalidSpec'),
          5000,
          'the InvalidSpec Event',
        );
        const event = loose
          .objects('', 'events', 'default')
          .find((e) => e.reason === 'InvalidSpec');
        expect(event).toMatchObject({ type: 'Warning', message: 'spec.port: must be >= 1' });
        expect(stored(loose, 'bad')?.metadata.finalizers).toBeUndefined();
        // An instance that Proxy made earlier (with a valid spec) is not an orphan.
        const backend = backends.get('lab');
        if (backend === undefined) throw new Error('no backend');
        const cp = set.get('lab');
        await cp?.provider.create(
          {
            name: 'proxy-default-bad-00000000',
            namespace: 'default',
            uid,
            port: 3128,
            cloudInit: new TextEncoder().encode('#cloud-config\n'),
            placement: { machineType: 'small', image: 'debian-13' },
            allowedSources: ['10.0.0.0/8'],
            installation: 'test',
          },
          { signal: AbortSignal.timeout(5000) },
        );
        const [report] = await op.operator.runGc();
        expect(report?.listed).toBe(1);
        expect(report?.deleted).toEqual([]);
        expect(backend.vms.size).toBe(1);
      } finally {
        await op.stop();
        looseClient.close();
      }
    } finally {
      await loose.stop();
    }
  });
});

describe('credentials in Secrets', () => {
  it('keep the rounds of each line: a generated credential reads back with its 1000, an older one with none', async () => {
    const { SecretCredentialStore } = await import('../src/kube/credentials.js');
    const { generateCredential, passwordFile } = await import('../src/credentials/credential.js');
    const store = new SecretCredentialStore(client);
    const owner = { namespace, name: 'web', uid: '6b1f0c2e-0000-4000-8000-000000000001' };
    const fresh = generateCredential('web');
    const older = { username: 'web-0a0b0c', password: 'SENTINEL-older', salt: 'saltsaltsaltsalt' };
    const rec = {
      source: 'generated' as const,
      current: fresh,
      previous: older,
      rotatedTime: '2026-12-01T00:00:00Z',
    };
    await store.write(owner, rec, undefined);
    const back = await store.read(owner);
    expect(back?.current).toEqual(fresh);
    expect(back?.current.rounds).toBe(1000);
    expect(back?.previous).toEqual(older);
    // The same password file from what was read: a restart gives the proxy nothing new.
    const text = new TextDecoder().decode(passwordFile(back ?? rec));
    expect(text).toBe(new TextDecoder().decode(passwordFile(rec)));
    expect(text).toContain(`${fresh.username}:$6$rounds=1000$${fresh.salt}$`);
    expect(text).toMatch(new RegExp(`^${older.username}:\\$6\\$saltsaltsaltsalt\\$`, 'm'));
  });
});
