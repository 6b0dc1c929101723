// Peer: seam fake (a scripted provider that keeps what each Create asked for) over the memory
// store; the Squid configuration as squid-config renders it.
import type { ProbeTargetSpec } from '@proxy-op/probe';
import { describe, expect, it } from 'vitest';
import { instanceName } from '../src/api/naming.js';
import { validateProxySpec } from '../src/api/proxy.js';
import { Operator } from '../src/manager/operator.js';
import { renderSpec } from '../src/proxy/cloudinit.js';
import { MemoryStore } from '../src/store/proxies.js';
import { FAST, providerSet, ScriptedBackend, spec, testRegistry, waitFor } from './support.js';

const target = (port: number): ProbeTargetSpec => ({
  get: new URL(`http://127.0.0.1:${port}/`),
  connect: new URL(`https://127.0.0.1:${port + 1}/`),
});

async function operatorWith(backend: ScriptedBackend, store: MemoryStore, port: number) {
  const { registry } = testRegistry({ scripted: backend });
  const providers = await providerSet('providers:\n  - name: lab\n    type: scripted\n', registry);
  const op = new Operator({
    store,
    providers,
    probeTarget: target(port),
    settings: { ...FAST, probeIntervalMs: 60_000 },
  });
  op.start();
  return op;
}

describe('spec.egress', () => {
  it('is validated with every problem named by its field', () => {
    const paths = (egress: unknown) => {
      const v = validateProxySpec({ provider: 'lab', allowedSources: ['10.0.0.0/8'], egress });
      return v.ok ? [] : v.problems.map((p) => p.path);
    };
    // What the schema says (the CRD's structural schema says the same on Kubernetes).
    expect(paths({ connectPorts: [0], unknown: true })).toEqual([
      'spec.egress',
      'spec.egress.connectPorts[0]',
    ]);
    // What only the policy's reader can say.
    expect(paths({ allow: ['10.0.0.0/33', 'db.internal:5432'], httpPorts: ['9000-8000'] })).toEqual(
      ['spec.egress.allow[0]', 'spec.egress.httpPorts[0]'],
    );
    expect(paths({ allow: ['db.internal:5432', '10.0.0.0/8', '[fd00::1]:443'] })).toEqual([]);
  });

  it('reaches the provider with the operator’s probe target allowed on top, outside the spec hash', async () => {
    const backend = new ScriptedBackend();
    const store = new MemoryStore();
    const s = spec({
      provider: 'lab',
      auth: { type: 'none' },
      egress: { allow: ['db.internal:5432'], connectPorts: [443, 8443] },
    });
    store.apply('default', 'web', s);
    const name = instanceName('default', 'web');
    let op = await operatorWith(backend, store, 40_000);
    try {
      await waitFor(
        () => backend.vms.has(name) && store.get('default/web')?.status.specHash !== undefined,
      );
      const vm = backend.vms.get(name);
      expect(vm?.egress).toEqual({
        allow: ['db.internal:5432', '127.0.0.1:40000', '127.0.0.1:40001'],
        connectPorts: [443, 8443],
      });
      // The Squid configuration carries the same policy.
      expect(vm?.cloudInit).toContain('db.internal');
      expect(vm?.cloudInit).toContain('8443');
      // The hash is the spec's alone: the probe target is not in it.
      expect(store.get('default/web')?.status.specHash).toBe(renderSpec(s).hash);
    } finally {
      await op.stop();
    }
    // An operator whose probe target moved replaces nothing.
    const before = backend.calls.filter((c) => c.startsWith('create')).length;
    op = await operatorWith(backend, store, 41_000);
    try {
      await waitFor(() => op.settled() || backend.calls.length > 0);
      await new Promise((r) => setTimeout(r, 50));
      expect(backend.calls.filter((c) => c.startsWith('delete'))).toEqual([]);
      expect(backend.calls.filter((c) => c.startsWith('create')).length).toBe(before);
    } finally {
      await op.stop();
    }
  });

  it('a change of spec.egress replaces the instance', async () => {
    const backend = new ScriptedBackend();
    const store = new MemoryStore();
    store.apply('default', 'web', spec({ provider: 'lab' }));
    const op = await operatorWith(backend, store, 40_000);
    try {
      const name = instanceName('default', 'web');
      await waitFor(() => backend.vms.get(name)?.egress !== undefined);
      const first = store.get('default/web')?.status.specHash;
      store.apply('default', 'web', spec({ provider: 'lab', egress: { deny: ['*.example.org'] } }));
      await waitFor(
        () =>
          store.get('default/web')?.status.specHash !== first &&
          backend.vms.get(name)?.egress?.deny?.[0] === '*.example.org',
      );
    } finally {
      await op.stop();
    }
  });
});
