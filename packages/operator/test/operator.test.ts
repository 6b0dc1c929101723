// Peer: seam fake (a scripted provider) driven through the work queue over the memory store.
import { describe, expect, it } from 'vitest';
import { instanceName } from '../src/api/naming.js';
import { Operator } from '../src/manager/operator.js';
import { parseProvidersConfig } from '../src/providers/file.js';
import { MemoryStore } from '../src/store/proxies.js';
import { FAST, providerSet, ScriptedBackend, spec, testRegistry, waitFor } from './support.js';

async function setup(returnsEarly = false) {
  const backend = new ScriptedBackend();
  const { registry } = testRegistry({ scripted: backend, returnsEarly });
  const providers = await providerSet('providers:\n  - name: lab\n    type: scripted\n', registry);
  const store = new MemoryStore();
  const op = new Operator({ store, providers, settings: FAST });
  return { backend, registry, providers, store, op };
}

type Event = 'v1' | 'v2' | 'delete' | 'vanish' | 'stop' | 'fail';

/** Deterministic pseudo-random orders of events, with repeats. */
function orders(seed: number, count: number, len: number): Event[][] {
  const all: Event[] = ['v1', 'v2', 'delete', 'vanish', 'stop', 'fail'];
  let x = seed;
  const rnd = () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return x / 2 ** 31;
  };
  return Array.from({ length: count }, () =>
    Array.from({ length: len }, () => all[Math.floor(rnd() * all.length)] as Event),
  );
}

describe('Operator: event orders', () => {
  for (const returnsEarly of [false, true]) {
    for (const events of orders(returnsEarly ? 7 : 3, 12, 6)) {
      it(`${returnsEarly ? 'returns-early' : 'waits'}: ${events.join(' → ')} ends with the instance the last event asks for`, async () => {
        const { backend, store, op } = await setup(returnsEarly);
        op.start();
        const name = instanceName('default', 'web');
        let want: 'v1' | 'v2' | 'none' = 'none';
        for (const e of events) {
          if (e === 'v1' || e === 'v2') {
            store.apply(
              'default',
              'web',
              spec({ provider: 'lab', port: e === 'v1' ? 3128 : 3129 }),
            );
            if (store.get('default/web')?.metadata.deletionTimestamp === undefined) want = e;
          } else if (e === 'delete') {
            store.delete('default/web');
            want = 'none';
          } else if (e === 'vanish') backend.vanish(name);
          else if (e === 'stop') backend.setState(name, 'Stopped');
          else backend.fail('create', 'Transient');
          if (returnsEarly) backend.settle();
          await new Promise((r) => setTimeout(r, 1));
        }
        await waitFor(() => {
          if (returnsEarly) backend.settle();
          // A Proxy deleted mid-way may be applied again once it is gone: reapply the last wish.
          if (want !== 'none' && store.get('default/web') === undefined) {
            store.apply(
              'default',
              'web',
              spec({ provider: 'lab', port: want === 'v1' ? 3128 : 3129 }),
            );
          }
          if (want === 'none')
            return store.get('default/web') === undefined && backend.live().length === 0;
          const live = backend.live().filter((v) => !v.deleting);
          return (
            store.get('default/web')?.status.phase === 'Ready' &&
            live.length === 1 &&
            live[0]?.port === (want === 'v1' ? 3128 : 3129)
          );
        });
        await op.stop();
        const live = backend.live().filter((v) => !v.deleting);
        expect(live.length).toBe(want === 'none' ? 0 : 1);
      });
    }
  }
});

describe('Operator: slow calls', () => {
  it('runs at most N reconciles at once and never two for one Proxy, while events keep arriving', async () => {
    const { backend, store, op } = await setup();
    backend.delays.set('create', 15);
    op.start();
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) {
        store.apply('default', `p${i}`, spec({ provider: 'lab', port: 3128 + round }));
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await waitFor(() => op.settled(), 10_000);
    await op.stop();
    expect(backend.maxInflight).toBeLessThanOrEqual(3);
    expect(backend.maxInflight).toBeGreaterThan(1);
    expect(backend.overlaps).toBe(0);
    expect(backend.live().map((v) => v.port)).toEqual(Array(10).fill(3130));
  });
});

describe('Operator: providers config changes', () => {
  it('queues the Proxies of an added provider, which then proceed', async () => {
    const { backend, registry, store, op } = await setup();
    op.start();
    store.apply('default', 'web', spec({ provider: 'later' }));
    await waitFor(() => store.get('default/web')?.status.phase === 'Pending');
    const load = await parseProvidersConfig(
      'providers:\n  - name: lab\n    type: scripted\n  - name: later\n    type: scripted\n',
      registry,
    );
    if (!load.ok) throw new Error(load.problems.join());
    const change = await op.applyProviders(load.config);
    expect(change).toMatchObject({ added: ['later'], kept: ['lab'], rebuilt: [], removed: [] });
    await waitFor(() => store.get('default/web')?.status.phase === 'Ready');
    expect(backend.live()).toHaveLength(1);
    await op.stop();
  });

  it('is settled only when every Proxy is Ready, Failed or waiting for its provider', async () => {
    const { backend, store, op } = await setup();
    backend.fail('create', 'Permanent');
    store.apply('default', 'a', spec({ provider: 'lab' }));
    store.apply('default', 'b', spec({ provider: 'lab' }));
    store.apply('default', 'c', spec({ provider: 'missing' }));
    expect(op.settled()).toBe(false);
    op.start();
    await waitFor(() => op.settled());
    expect(op.phases()).toMatchObject({ Ready: 1, Failed: 1, Pending: 1 });
    await op.stop();
  });
});
