// Peer: @kubernetes/client-node (the real client library) against the server over HTTPS.
import { readFileSync } from 'node:fs';
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { KubeTestServer } from '../src/index.js';
import { call, createCrd, eventually } from './helpers.js';

const crd = parse(readFileSync(new URL('fixtures/widgets-crd.yaml', import.meta.url), 'utf8'));

let server: KubeTestServer;
let kc: KubeConfig;

beforeAll(async () => {
  server = await KubeTestServer.start();
  kc = new KubeConfig();
  kc.loadFromString(server.kubeconfig());
  // Raw JSON: client-node's serializer reads JSONSchemaProps.default from `_default`, so a plain
  // manifest sent through it would lose its defaults.
  await createCrd(server, crd);
});

afterAll(async () => {
  await server.stop();
});

interface Widget extends KubernetesObject {
  spec: { color: string; size?: number };
  status?: { phase?: string };
}

function widget(name: string, color = 'red'): Widget {
  return {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name, namespace: 'default' },
    spec: { color },
  };
}

describe('informers', () => {
  it('list, then watch; resume after a dropped watch; relist after 410', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const objects = KubernetesObjectApi.makeApiClient(kc);
    await objects.create(widget('i1'));
    const path = '/apis/example.com/v1/namespaces/default/widgets';
    const informer = makeInformer<Widget>(kc, path, () =>
      custom.listNamespacedCustomObject({
        group: 'example.com',
        version: 'v1',
        namespace: 'default',
        plural: 'widgets',
      }),
    );
    const seen: string[] = [];
    informer.on('add', (o) => seen.push(`add ${o.metadata?.name}`));
    informer.on('update', (o) => seen.push(`update ${o.metadata?.name} ${o.spec.color}`));
    informer.on('delete', (o) => seen.push(`delete ${o.metadata?.name}`));
    const errors: unknown[] = [];
    informer.on('error', (e) => errors.push(e));
    server.counters.reset();
    await informer.start();
    await eventually(() => seen.includes('add i1'));
    await eventually(() => server.counters.count({ verb: 'watch', resource: 'widgets' }) === 1);

    await objects.create(widget('i2'));
    await eventually(() => seen.includes('add i2'));
    await objects.patch(
      { ...widget('i2', 'blue') },
      undefined,
      undefined,
      'test',
      undefined,
      PatchStrategy.MergePatch,
    );
    await eventually(() => seen.includes('update i2 blue'));

    // A dropped watch: the informer resumes from its resourceVersion, without a new list.
    expect(server.faults.dropWatches()).toBe(1);
    await eventually(() => server.counters.count({ verb: 'watch', resource: 'widgets' }) === 2);
    await objects.delete(widget('i1'));
    await eventually(() => seen.includes('delete i1'));
    expect(server.counters.count({ verb: 'list', resource: 'widgets' })).toBe(1);

    // An expired window: a change elsewhere, then a compaction past the informer's version;
    // the resumed watch gets a 410 ERROR event and the informer lists again.
    await call(server, 'POST', '/api/v1/namespaces/default/configmaps', {
      body: { metadata: { name: 'elsewhere' } },
    });
    server.faults.expireWatchWindow();
    server.faults.dropWatches();
    await eventually(
      () => server.counters.count({ verb: 'list', resource: 'widgets' }) === 2,
      10_000,
    );
    await objects.create(widget('i3'));
    await eventually(() => seen.includes('add i3'));
    expect(
      informer
        .list()
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['i2', 'i3']);
    expect(errors).toEqual([]);
    await informer.stop();
  });
});

describe('KubernetesObjectApi', () => {
  it('reads legacy discovery for the resource, then creates, reads, lists, patches and deletes', async () => {
    const client = KubernetesObjectApi.makeApiClient(kc);
    server.counters.reset();
    const created = await client.create(widget('k1'));
    expect(created.metadata?.uid).toBeDefined();
    expect(server.counters.all().some((r) => r.path === '/apis/example.com/v1')).toBe(true);
    const read = (await client.read({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'k1', namespace: 'default' },
    })) as Widget;
    expect(read.spec).toEqual({ color: 'red', size: 3 });
    const list = await client.list('example.com/v1', 'Widget', 'default');
    expect(list.items.map((i) => i.metadata?.name)).toContain('k1');
    const cm = await client.create({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'k1', namespace: 'default' },
      data: { a: '1' },
    } as KubernetesObject);
    expect(cm.metadata?.resourceVersion).toBeDefined();
    await client.delete(widget('k1'));
    await expect(
      client.read({
        apiVersion: 'example.com/v1',
        kind: 'Widget',
        metadata: { name: 'k1', namespace: 'default' },
      }),
    ).rejects.toMatchObject({ code: 404 });
  });
});

describe('typed APIs', () => {
  it('answer AlreadyExists and Conflict as ApiException with the Status body', async () => {
    const core = kc.makeApiClient(CoreV1Api);
    const cm = await core.createNamespacedConfigMap({
      namespace: 'default',
      body: { metadata: { name: 't1' }, data: { a: '1' } },
    });
    const dup = await core
      .createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 't1' } } })
      .catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(ApiException);
    expect((dup as ApiException<unknown>).code).toBe(409);
    expect(JSON.parse((dup as ApiException<string>).body)).toMatchObject({
      reason: 'AlreadyExists',
    });
    const stale = { ...cm, metadata: { ...cm.metadata, resourceVersion: '1' } };
    const conflict = await core
      .replaceNamespacedConfigMap({ name: 't1', namespace: 'default', body: stale })
      .catch((e: unknown) => e);
    expect((conflict as ApiException<unknown>).code).toBe(409);
    const read = await core.readNamespacedConfigMap({ name: 't1', namespace: 'default' });
    expect(read.data).toEqual({ a: '1' });
  });
});

describe('server-side apply and status patches', () => {
  it('applies with a field manager, conflicts for another, and patches status through /status', async () => {
    const custom = kc.makeApiClient(CustomObjectsApi);
    const params = {
      group: 'example.com',
      version: 'v1',
      namespace: 'default',
      plural: 'widgets',
      name: 's1',
    };
    const ssa = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
    const applied = await custom.patchNamespacedCustomObject(
      { ...params, body: widget('s1', 'green'), fieldManager: 'controller' },
      ssa,
    );
    expect(applied.spec).toEqual({ color: 'green', size: 3 });
    const clash = await custom
      .patchNamespacedCustomObject(
        { ...params, body: widget('s1', 'blue'), fieldManager: 'other' },
        ssa,
      )
      .catch((e: unknown) => e);
    expect((clash as ApiException<unknown>).code).toBe(409);
    const forced = await custom.patchNamespacedCustomObject(
      { ...params, body: widget('s1', 'blue'), fieldManager: 'other', force: true },
      ssa,
    );
    expect(forced.spec.color).toBe('blue');
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
    const status = await custom.patchNamespacedCustomObjectStatus(
      { ...params, body: { status: { phase: 'Ready' }, spec: { color: 'red' } } },
      merge,
    );
    expect(status.status).toEqual({ phase: 'Ready' });
    expect(status.spec.color).toBe('blue');
    const statusApply = await custom.patchNamespacedCustomObjectStatus(
      {
        ...params,
        body: {
          apiVersion: 'example.com/v1',
          kind: 'Widget',
          metadata: { name: 's1' },
          status: { phase: 'Done' },
        },
        fieldManager: 'controller',
        force: true,
      },
      ssa,
    );
    expect(statusApply.status.phase).toBe('Done');
    const entry = statusApply.metadata.managedFields.find(
      (m: { subresource?: string }) => m.subresource === 'status',
    );
    expect(entry).toMatchObject({
      manager: 'controller',
      operation: 'Apply',
      subresource: 'status',
    });
  });
});

describe('leases', () => {
  it('takes and renews a Lease with MicroTime fields of 6 fractional digits; a stale renewal conflicts', async () => {
    const coord = kc.makeApiClient(CoordinationV1Api);
    const taken = await coord.createNamespacedLease({
      namespace: 'default',
      body: {
        metadata: { name: 'leader' },
        spec: {
          holderIdentity: 'a',
          leaseDurationSeconds: 15,
          acquireTime: new V1MicroTime(),
          renewTime: new V1MicroTime(),
          leaseTransitions: 0,
        },
      },
    });
    const stored = () =>
      server
        .objects('coordination.k8s.io', 'leases', 'default')
        .find((l) => (l.metadata as { name: string }).name === 'leader');
    expect((stored()?.spec as { renewTime?: string } | undefined)?.renewTime).toMatch(/\.\d{6}Z$/);
    const renewed = await coord.replaceNamespacedLease({
      name: 'leader',
      namespace: 'default',
      body: { ...taken, spec: { ...taken.spec, renewTime: new V1MicroTime(Date.now() + 1000) } },
    });
    expect(Number(renewed.metadata?.resourceVersion)).toBeGreaterThan(
      Number(taken.metadata?.resourceVersion),
    );
    const stale = await coord
      .replaceNamespacedLease({
        name: 'leader',
        namespace: 'default',
        body: { ...taken, spec: { ...taken.spec, holderIdentity: 'b' } },
      })
      .catch((e: unknown) => e);
    expect((stale as ApiException<unknown>).code).toBe(409);
    expect((stored()?.spec as { holderIdentity?: string } | undefined)?.holderIdentity).toBe('a');
  });
});
