// Peer: seam fake (a scripted provider) over the memory store.
import { describe, expect, it } from 'vitest';
import { DEFAULTS } from '../src/defaults.js';
import { Operator } from '../src/manager/operator.js';
import { collectGarbage } from '../src/proxy/gc.js';
import { toProviderHealth } from '../src/proxy/health.js';
import { MemoryStore } from '../src/store/proxies.js';
import { providerSet, ScriptedBackend, spec, testRegistry } from './support.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const MIN = 60_000;
/** GC's settings in these tests: a minute's MinAge. */
const GC = { gcMinAgeMs: MIN, gcDryRun: false, callTimeoutMs: DEFAULTS.callTimeoutMs };

async function setup(installation = 'site-1') {
  const backend = new ScriptedBackend();
  backend.now = () => new Date(T0);
  const { registry } = testRegistry({ scripted: backend });
  const providers = await providerSet(
    `installation: ${installation}\nproviders:\n  - name: lab\n    type: scripted\n`,
    registry,
  );
  const store = new MemoryStore();
  const lab = providers.get('lab');
  if (lab === undefined) throw new Error('no lab');
  return { backend, providers, store, lab };
}

function plant(
  backend: ScriptedBackend,
  name: string,
  uid: string,
  installation = 'site-1',
  age = 0,
) {
  backend.vms.set(name, {
    name,
    uid,
    installation,
    state: 'Running',
    ip: '10.9.9.9',
    createdAt: new Date(T0 - age),
    deleting: false,
    cloudInit: '',
    port: 3128,
  });
}

describe('GC', () => {
  it('deletes only old instances of this installation whose UID has no Proxy', async () => {
    const { backend, store, lab } = await setup();
    const owned = store.apply('default', 'web', spec({ provider: 'lab' }));
    plant(backend, 'proxy-owned', owned.metadata.uid, 'site-1', 2 * MIN);
    plant(backend, 'proxy-orphan', 'uid-gone', 'site-1', 2 * MIN);
    plant(backend, 'proxy-empty-uid', '', 'site-1', 2 * MIN);
    plant(backend, 'proxy-young', 'uid-gone-2', 'site-1', MIN / 2);
    plant(backend, 'proxy-other-site', 'uid-gone-3', 'site-2', 2 * MIN);
    const report = await collectGarbage(lab, store, 'site-1', GC, { now: new Date(T0) });
    expect(report.deleted.map((d) => d.id).sort()).toEqual([
      'scripted/proxy-empty-uid',
      'scripted/proxy-orphan',
    ]);
    expect([...backend.vms.keys()].sort()).toEqual([
      'proxy-other-site',
      'proxy-owned',
      'proxy-young',
    ]);
  });

  it('treats a Proxy of another provider as no owner', async () => {
    const { backend, store, lab } = await setup();
    const other = store.apply('default', 'web', spec({ provider: 'elsewhere' }));
    plant(backend, 'proxy-x', other.metadata.uid, 'site-1', 2 * MIN);
    const report = await collectGarbage(lab, store, 'site-1', GC, { now: new Date(T0) });
    expect(report.deleted).toHaveLength(1);
  });

  it('only reports in a dry run', async () => {
    const { backend, store, lab } = await setup();
    plant(backend, 'proxy-orphan', 'uid-gone', 'site-1', 2 * MIN);
    const report = await collectGarbage(
      lab,
      store,
      'site-1',
      { ...GC, gcDryRun: true },
      { now: new Date(T0) },
    );
    expect(report.deleted).toEqual([
      expect.objectContaining({ id: 'scripted/proxy-orphan', dryRun: true }),
    ]);
    expect(backend.vms.size).toBe(1);
  });

  it('goes on past a failed delete and reports a failed list', async () => {
    const { backend, store, lab } = await setup();
    plant(backend, 'proxy-a', 'gone-a', 'site-1', 2 * MIN);
    plant(backend, 'proxy-b', 'gone-b', 'site-1', 2 * MIN);
    backend.fail('delete', 'Transient');
    const r1 = await collectGarbage(lab, store, 'site-1', GC, { now: new Date(T0) });
    expect(r1.deleted).toHaveLength(1);
    expect(r1.errors).toHaveLength(1);
    backend.fail('list', 'Transient');
    const r2 = await collectGarbage(lab, store, 'site-1', GC, { now: new Date(T0) });
    expect(r2.errors[0]).toMatch(/^list: /);
  });

  it('the operator’s stop aborts a GC list in flight and waits for the pass to end', async () => {
    const { backend, providers, store } = await setup();
    plant(backend, 'proxy-orphan', 'uid-gone', 'site-1', 2 * MIN);
    backend.hangs.add('list');
    const op = new Operator({
      store,
      providers,
      now: () => new Date(T0),
      settings: { gcMinAgeMs: MIN },
    });
    let ended = false;
    const gc = op.runGc().finally(() => {
      ended = true;
    });
    await until(() => backend.calls.includes('list'));
    await op.stop();
    expect(ended).toBe(true);
    const [report] = await gc;
    expect(report?.errors[0]).toMatch(/^list: /);
    expect(report?.deleted).toEqual([]);
    expect(backend.vms.has('proxy-orphan')).toBe(true);
  });

  it('runs for every provider through the operator', async () => {
    const { backend, providers, store } = await setup();
    plant(backend, 'proxy-orphan', 'uid-gone', 'site-1', 2 * MIN);
    const op = new Operator({
      store,
      providers,
      now: () => new Date(T0),
      settings: { gcMinAgeMs: MIN },
    });
    const reports = await op.runGc();
    expect(reports.map((r) => [r.provider, r.deleted.length])).toEqual([['lab', 1]]);
  });
});

describe('health', () => {
  const r = (reason: string, ready: boolean) => ({
    target: 'zone-a',
    address: 'x://a',
    ready,
    reason,
    message: reason,
    details: {},
  });

  it('keeps lastTransitionTime while the reason stays, moves it when it changes', () => {
    const t1 = new Date(T0);
    const t2 = new Date(T0 + MIN);
    const t3 = new Date(T0 + 2 * MIN);
    const h1 = toProviderHealth('lab', 'scripted', [r('Reachable', true)], undefined, t1);
    const h2 = toProviderHealth('lab', 'scripted', [r('Reachable', true)], h1, t2);
    const h3 = toProviderHealth('lab', 'scripted', [r('Timeout', false)], h2, t3);
    expect(h2.status.targets[0]?.lastTransitionTime).toBe(t1.toISOString());
    expect(h2.status.lastCheckTime).toBe(t2.toISOString());
    expect(h3.status.targets[0]?.lastTransitionTime).toBe(t3.toISOString());
    expect(h3.status.ready).toBe(false);
  });

  it('writes ProviderHealth for every provider with a Checker, and a failing check as not ready', async () => {
    const { backend, providers, store } = await setup();
    const op = new Operator({ store, providers });
    const [h] = await op.runHealth();
    expect(h).toMatchObject({ name: 'lab', status: { type: 'scripted', ready: true } });
    backend.fail('check', 'Transient');
    const [h2] = await op.runHealth();
    expect(h2?.status.ready).toBe(false);
    expect(h2?.status.targets[0]?.reason).toBe('APIError');
    expect(store.listHealth()).toHaveLength(1);
  });

  it('a round the operator’s stop cuts short writes nothing', async () => {
    const { backend, providers, store } = await setup();
    backend.hangs.add('check');
    const op = new Operator({ store, providers });
    const round = op.runHealth();
    await until(() => backend.calls.includes('check'));
    await op.stop();
    expect(await round).toEqual([]);
    expect(store.listHealth()).toEqual([]);
  });
});

/** Waits until `cond` holds. */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}
