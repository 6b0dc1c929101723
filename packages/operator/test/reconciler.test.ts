// Peer: seam fake (a scripted provider) and the reference in-memory provider, over the memory store.
import { describe, expect, it } from 'vitest';
import { getCondition } from '../src/api/conditions.js';
import { instanceName } from '../src/api/naming.js';
import { FINALIZER } from '../src/api/proxy.js';
import { passwordFile } from '../src/credentials/credential.js';
import { DEFAULTS } from '../src/defaults.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import { renderCloudInit, specHash } from '../src/proxy/cloudinit.js';
import { Reconciler } from '../src/proxy/reconciler.js';
import { MemoryCredentialStore } from '../src/store/credentials.js';
import { MemoryStore } from '../src/store/proxies.js';
import { providerSet, ScriptedBackend, spec, testRegistry } from './support.js';

const OPTS = {
  ...DEFAULTS,
  deletionPollMs: 11,
  provisioningPollMs: 22,
  readyResyncMs: 33,
  quotaBackoffBaseMs: 1000,
};
const CONFIG = 'installation: site-1\nproviders:\n  - name: lab\n    type: scripted\n';

async function setup(opts: { returnsEarly?: boolean; config?: string } = {}) {
  const backend = new ScriptedBackend();
  const { registry } = testRegistry({
    scripted: backend,
    returnsEarly: opts.returnsEarly ?? false,
  });
  const providers = await providerSet(opts.config ?? CONFIG, registry);
  const store = new MemoryStore();
  let t = Date.parse('2026-01-01T00:00:00Z');
  const now = () => new Date(t);
  const advance = (ms: number) => {
    t += ms;
  };
  const credentials = new MemoryCredentialStore();
  const rec = new Reconciler({ store, providers, now, random: () => 0.5, credentials }, OPTS);
  return { backend, registry, providers, store, rec, advance, credentials };
}

describe('Reconciler: create to Ready', () => {
  it('adds the finalizer, creates with the derived name, UID, installation and cloud-init, then reports Ready', async () => {
    const { backend, store, rec, credentials } = await setup();
    const s = spec({ provider: 'lab', port: 8080 });
    const p = store.apply('team-a', 'web', s);
    const r = await rec.reconcile('team-a/web');
    const vm = backend.vms.get(instanceName('team-a', 'web'));
    expect(vm?.uid).toBe(p.metadata.uid);
    expect(vm?.installation).toBe('site-1');
    // The default cloud-init, with the Proxy's generated credential's password file in it.
    const kept = credentials.kept.get('memory:team-a/web')?.record;
    if (kept === undefined) throw new Error('no credential kept');
    const auth = { realm: 'proxy-op team-a/web', passwordFile: passwordFile(kept) };
    expect(vm?.cloudInit).toBe(renderCloudInit(s, auth));
    expect(vm?.cloudInit).toContain(`      ${kept.current.username}:$6$`);
    expect(vm?.cloudInit).not.toContain(kept.current.password);
    const got = store.get('team-a/web');
    expect(got?.metadata.finalizers).toEqual([FINALIZER]);
    expect(got?.status).toMatchObject({
      phase: 'Ready',
      providerID: `scripted/${instanceName('team-a', 'web')}`,
      instanceProvider: 'lab',
      specHash: specHash(s, { realm: auth.realm, hashInput: 'basic' }),
      instanceState: 'Running',
      observedGeneration: 1,
    });
    expect(got?.status.endpoint).toBe(`http://${vm?.ip}:8080`);
    expect(getCondition(got?.status.conditions, 'Ready')?.status).toBe('True');
    expect(r.requeueAfter).toBe(OPTS.readyResyncMs);
  });

  it('polls a provisioning instance every ProvisioningPoll', async () => {
    const { backend, store, rec } = await setup();
    backend.slowBoot = true;
    store.apply('default', 'web', spec({ provider: 'lab' }));
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: OPTS.provisioningPollMs });
    expect(store.get('default/web')?.status.phase).toBe('Provisioning');
    backend.boot(instanceName('default', 'web'));
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: OPTS.readyResyncMs });
    expect(store.get('default/web')?.status.phase).toBe('Ready');
  });

  it('keeps the Ready condition transition time across resyncs', async () => {
    const { store, rec, advance } = await setup();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await rec.reconcile('default/web');
    const t1 = getCondition(
      store.get('default/web')?.status.conditions,
      'Ready',
    )?.lastTransitionTime;
    advance(60_000);
    await rec.reconcile('default/web');
    const t2 = getCondition(
      store.get('default/web')?.status.conditions,
      'Ready',
    )?.lastTransitionTime;
    expect(t2).toBe(t1);
  });
});

describe('Reconciler: replacement', () => {
  it('replaces the instance when the spec hash changes (delete, then create)', async () => {
    const { backend, store, rec } = await setup();
    store.apply('default', 'web', spec({ provider: 'lab', port: 3128 }));
    await rec.reconcile('default/web');
    backend.calls.length = 0;
    const s2 = spec({ provider: 'lab', port: 3129 });
    store.apply('default', 'web', s2);
    await rec.reconcile('default/web');
    expect(backend.calls.slice(0, 2)).toEqual(['delete', 'create']);
    expect(backend.live()).toHaveLength(1);
    expect(backend.live()[0]?.port).toBe(3129);
    expect(store.get('default/web')?.status).toMatchObject({
      phase: 'Ready',
      specHash: specHash(s2, { realm: 'proxy-op default/web', hashInput: 'basic' }),
      observedGeneration: 2,
    });
  });

  it('waits for a returns-early deletion before creating the new instance', async () => {
    const { backend, store, rec } = await setup({ returnsEarly: true });
    store.apply('default', 'web', spec({ provider: 'lab', port: 3128 }));
    await rec.reconcile('default/web');
    store.apply('default', 'web', spec({ provider: 'lab', port: 3129 }));
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: OPTS.deletionPollMs });
    expect(store.get('default/web')?.status.phase).toBe('Replacing');
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: OPTS.deletionPollMs });
    expect(backend.calls.filter((c) => c === 'create')).toHaveLength(1);
    backend.settle();
    await rec.reconcile('default/web');
    expect(backend.live().map((v) => v.port)).toEqual([3129]);
    expect(store.get('default/web')?.status.phase).toBe('Ready');
  });

  it('recreates an instance that vanished', async () => {
    const { backend, store, rec } = await setup();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await rec.reconcile('default/web');
    backend.vanish(instanceName('default', 'web'));
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: 0 });
    expect(store.get('default/web')?.status.providerID).toBeUndefined();
    await rec.reconcile('default/web');
    expect(backend.live()).toHaveLength(1);
    expect(store.get('default/web')?.status.phase).toBe('Ready');
  });

  it.each(['Stopped', 'Terminated'] as const)('replaces a %s instance', async (state) => {
    const { backend, store, rec } = await setup();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await rec.reconcile('default/web');
    backend.setState(instanceName('default', 'web'), state);
    backend.calls.length = 0;
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: 0 });
    expect(backend.live()).toHaveLength(0);
    await rec.reconcile('default/web');
    expect(backend.calls).toEqual(['get', 'delete', 'create', 'get']);
    expect(backend.live()[0]?.state).toBe('Running');
  });
});

describe('Reconciler: errors', () => {
  it('latches on Permanent until the spec changes', async () => {
    const { backend, store, rec } = await setup();
    backend.fail('create', 'Permanent');
    store.apply('default', 'web', spec({ provider: 'lab' }));
    expect(await rec.reconcile('default/web')).toEqual({});
    const st = store.get('default/web')?.status;
    expect(st?.phase).toBe('Failed');
    expect(st?.lastError?.class).toBe('Permanent');
    expect(getCondition(st?.conditions, 'Latched')?.status).toBe('True');
    backend.calls.length = 0;
    expect(await rec.reconcile('default/web')).toEqual({});
    expect(backend.calls).toEqual([]);
    store.apply('default', 'web', spec({ provider: 'lab', port: 3130 }));
    await rec.reconcile('default/web');
    expect(store.get('default/web')?.status.phase).toBe('Ready');
    expect(getCondition(store.get('default/web')?.status.conditions, 'Latched')?.status).toBe(
      'False',
    );
  });

  it('asks for a retry with backoff on Transient, recording the error', async () => {
    const { backend, store, rec } = await setup();
    backend.fail('create', 'Transient');
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await expect(rec.reconcile('default/web')).rejects.toMatchObject({ errorClass: 'Transient' });
    expect(store.get('default/web')?.status.lastError?.class).toBe('Transient');
    await rec.reconcile('default/web');
    expect(store.get('default/web')?.status.phase).toBe('Ready');
    expect(store.get('default/web')?.status.lastError).toBeUndefined();
  });

  it('backs off longer on QuotaExceeded with a condition, cleared on success', async () => {
    const { backend, store, rec } = await setup();
    backend.fail('create', 'QuotaExceeded', 2);
    store.apply('default', 'web', spec({ provider: 'lab' }));
    const r1 = await rec.reconcile('default/web');
    const r2 = await rec.reconcile('default/web');
    expect(r1.requeueAfter).toBe(1000);
    expect(r2.requeueAfter).toBe(2000);
    expect(getCondition(store.get('default/web')?.status.conditions, 'QuotaExceeded')?.status).toBe(
      'True',
    );
    await rec.reconcile('default/web');
    expect(getCondition(store.get('default/web')?.status.conditions, 'QuotaExceeded')?.status).toBe(
      'False',
    );
    expect(store.get('default/web')?.status.phase).toBe('Ready');
  });

  it('waits, without latching, while the provider is not configured, and proceeds when it appears', async () => {
    const { backend, registry, providers, store, rec } = await setup();
    store.apply('default', 'web', spec({ provider: 'later' }));
    expect(await rec.reconcile('default/web')).toEqual({});
    const st = store.get('default/web')?.status;
    expect(st?.phase).toBe('Pending');
    expect(getCondition(st?.conditions, 'ProviderConfigured')?.status).toBe('False');
    expect(st?.latchedSpecHash).toBeUndefined();
    const load = await parseProvidersConfig(
      `${CONFIG}  - name: later\n    type: scripted\n`,
      registry,
    );
    if (!load.ok) throw new Error(load.problems.join());
    await providers.apply(load.config);
    await rec.reconcile('default/web');
    expect(store.get('default/web')?.status.phase).toBe('Ready');
    expect(backend.live()).toHaveLength(1);
  });

  it('creates nothing for a source Squid cannot be given, and says which', async () => {
    // The CRD's pattern lets `1:2:3/64` through; the operator's own validation does not.
    const { backend, store, rec } = await setup();
    store.apply('default', 'web', { ...spec({ provider: 'lab' }), allowedSources: ['1:2:3/64'] });
    expect(await rec.reconcile('default/web')).toEqual({});
    const ready = getCondition(store.get('default/web')?.status.conditions, 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'InvalidSpec' });
    expect(ready?.message).toBe(
      'spec: allowedSources: "1:2:3/64" does not start with an IPv4 or IPv6 address',
    );
    expect(backend.live()).toHaveLength(0);
  });
});

describe('Reconciler: deletion', () => {
  it('deletes the recorded instance, then removes the finalizer', async () => {
    const { backend, store, rec } = await setup();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await rec.reconcile('default/web');
    store.delete('default/web');
    expect(store.get('default/web')?.metadata.deletionTimestamp).toBeDefined();
    await rec.reconcile('default/web');
    expect(backend.live()).toHaveLength(0);
    expect(store.get('default/web')).toBeUndefined();
  });

  it('polls a returns-early deletion until NotFound (the DeletionPoll)', async () => {
    const { backend, store, rec } = await setup({ returnsEarly: true });
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await rec.reconcile('default/web');
    store.delete('default/web');
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: OPTS.deletionPollMs });
    expect(store.get('default/web')?.status.phase).toBe('Deleting');
    backend.settle();
    expect(await rec.reconcile('default/web')).toEqual({});
    expect(store.get('default/web')).toBeUndefined();
  });

  it('counts a malformed recorded ID as nothing to delete', async () => {
    const { store, rec } = await setup();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await store.addFinalizer('default/web', FINALIZER);
    await store.updateStatus('default/web', { providerID: 'not an id' });
    store.delete('default/web');
    await rec.reconcile('default/web');
    expect(store.get('default/web')).toBeUndefined();
  });

  it('retries a Transient delete failure and keeps the finalizer meanwhile', async () => {
    const { backend, store, rec } = await setup();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await rec.reconcile('default/web');
    store.delete('default/web');
    backend.fail('delete', 'Transient');
    await expect(rec.reconcile('default/web')).rejects.toMatchObject({ errorClass: 'Transient' });
    expect(store.get('default/web')?.metadata.finalizers).toEqual([FINALIZER]);
    await rec.reconcile('default/web');
    expect(store.get('default/web')).toBeUndefined();
    expect(backend.live()).toHaveLength(0);
  });

  it('releases a Proxy that never got an instance at once', async () => {
    const { backend, store, rec } = await setup();
    backend.fail('create', 'Permanent');
    store.apply('default', 'web', spec({ provider: 'lab' }));
    await rec.reconcile('default/web');
    store.delete('default/web');
    await rec.reconcile('default/web');
    expect(store.get('default/web')).toBeUndefined();
  });
});

describe('Reconciler with the reference provider', () => {
  /** The reference provider `mem` (one zone) under a reconciler, with a Proxy `web` on it. */
  async function onMemory() {
    const { registry, backends } = testRegistry();
    const providers = await providerSet(
      'providers:\n  - name: mem\n    type: memory\n    memory:\n      zones: [zone-a]\n',
      registry,
    );
    const store = new MemoryStore();
    const rec = new Reconciler({ store, providers }, DEFAULTS);
    store.apply(
      'default',
      'web',
      spec({ provider: 'mem', placement: { machineType: 'small', image: 'debian-13' } }),
    );
    return { backends, store, rec };
  }

  it('takes a Proxy to Ready and back to nothing', async () => {
    const { backends, store, rec } = await onMemory();
    await rec.reconcile('default/web');
    expect(store.get('default/web')?.status.phase).toBe('Ready');
    expect(store.get('default/web')?.status.endpoint).toMatch(/^http:\/\/10\.0\.0\.\d+:3128$/);
    expect(backends.get('mem')?.vms.size).toBe(1);
    store.delete('default/web');
    await rec.reconcile('default/web');
    expect(backends.get('mem')?.vms.size).toBe(0);
    expect(store.get('default/web')).toBeUndefined();
  });

  it('reports the location, and replaces a Preempted instance as no failure: a Normal Event, Ready reason Preempted', async () => {
    const { backends, store, rec } = await onMemory();
    await rec.reconcile('default/web');
    const ready = store.get('default/web')?.status;
    expect(ready?.phase).toBe('Ready');
    expect(ready?.location).toEqual({ region: 'memory-1', zone: 'zone-a', country: 'DE' });
    const vm = instanceName('default', 'web');
    backends.get('mem')?.reclaim(vm);
    const written: string[] = [];
    const update = store.updateStatus.bind(store);
    store.updateStatus = async (key, st) => {
      written.push(`${st.phase}/${st.instanceState ?? ''}`);
      await update(key, st);
    };
    expect(await rec.reconcile('default/web')).toEqual({ requeueAfter: 0 });
    // The delete was over at once: the status still said why before the instance went.
    expect(written).toEqual(['Replacing/Preempted', 'Replacing/']);
    const replacing = store.get('default/web')?.status;
    expect(getCondition(replacing?.conditions, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'Preempted',
    });
    expect(replacing?.location).toBeUndefined();
    expect(store.events.filter((e) => e.reason === 'Preempted')).toEqual([
      {
        key: 'default/web',
        type: 'Normal',
        reason: 'Preempted',
        message: `instance vms/${vm} was taken back by its backend (preempted); replacing it`,
      },
    ]);
    expect(store.events.some((e) => e.type === 'Warning')).toBe(false);
    await rec.reconcile('default/web');
    expect(store.get('default/web')?.status.phase).toBe('Ready');
    expect(store.get('default/web')?.status.instanceState).toBe('Running');
  });

  it("writes the instance's cost from its provider's price: its machine type's rate, else perHour; none without a price", async () => {
    const { registry } = testRegistry();
    const providers = await providerSet(
      [
        'providers:',
        '  - name: mem',
        '    type: memory',
        '    memory: { zones: [zone-a], machineTypes: [small, large] }',
        '    price: { currency: EUR, perHour: 0.0119, machineTypes: { large: 0.0476 } }',
        '  - name: free',
        '    type: memory',
        '    memory: { zones: [zone-a] }',
        '',
      ].join('\n'),
      registry,
    );
    const store = new MemoryStore();
    const rec = new Reconciler({ store, providers }, DEFAULTS);
    const at = (provider: string, machineType: string) =>
      spec({ provider, placement: { machineType, image: 'debian-13' } });
    store.apply('default', 'small', at('mem', 'small'));
    store.apply('default', 'large', at('mem', 'large'));
    store.apply('default', 'free', at('free', 'small'));
    const before = Date.now();
    for (const k of ['small', 'large', 'free']) await rec.reconcile(`default/${k}`);
    const small = store.get('default/small')?.status.cost;
    expect(small).toMatchObject({ currency: 'EUR', perHour: 0.0119 });
    expect(Date.parse(small?.since ?? '')).toBeGreaterThanOrEqual(before - 1000);
    expect(store.get('default/large')?.status.cost).toMatchObject({
      currency: 'EUR',
      perHour: 0.0476,
    });
    expect(store.get('default/free')?.status.cost).toBeUndefined();
    // The instance goes: so does its cost.
    store.delete('default/large');
    await rec.reconcile('default/large');
    expect(store.get('default/large')).toBeUndefined();
  });

  it('latches on the provider placement check (Permanent) and says which field', async () => {
    const { registry } = testRegistry();
    const providers = await providerSet('providers:\n  - name: mem\n    type: memory\n', registry);
    const store = new MemoryStore();
    const rec = new Reconciler({ store, providers }, DEFAULTS);
    store.apply(
      'default',
      'web',
      spec({ provider: 'mem', placement: { machineType: 'huge', image: 'debian-13' } }),
    );
    await rec.reconcile('default/web');
    expect(store.get('default/web')?.status.phase).toBe('Failed');
    expect(store.get('default/web')?.status.lastError?.message).toContain('placement.machineType');
  });
});
