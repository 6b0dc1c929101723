// Peer: none (in-process). The façade bindOperations builds, run through createProvider.
import { describe, expect, it } from 'vitest';
import {
  bindOperations,
  createProvider,
  type Instance,
  idFormat,
  type Profile,
  type ProviderModule,
} from '../src/index.js';

const profile = {
  readiness: 'immediate',
  createReturn: 'blocking',
  deleteReturn: 'waits',
  ipSource: 'assigned-at-create',
  gcMark: 'written-metadata',
  createdAt: 'written-at-create',
  listPartial: 'single-call',
  quota: 'absent',
  notFound: 'error-code',
  primaryKey: 'name-is-key',
  provisioningState: 'create-blocks',
  asyncOps: [],
  secondaryResources: 'none',
  credentials: 'mounted-files',
  clientKind: 'in-process',
  timeouts: 'signal-only',
  logging: 'tiered',
  childSpans: 'span-decorator',
  backendTest: 'local-peer',
} satisfies Profile;

const ids = idFormat(['boxes', ':name']);
interface Runtime {
  readonly boxes: Map<string, Instance>;
  readonly calls: string[];
}

describe('bindOperations', () => {
  it('binds each operation to the runtime and keeps the checker and close', async () => {
    const rt: Runtime = { boxes: new Map(), calls: [] };
    let closed = 0;
    const module: ProviderModule<Record<string, never>, object, { name: string }> = {
      type: 'boxes',
      configSchema: {
        '~standard': { version: 1, vendor: 'test', validate: () => ({ value: {} }) },
      },
      profile,
      classify: () => 'Transient',
      create: () =>
        bindOperations(rt, {
          ids,
          lockKey: (id) => id.name,
          operations: {
            async createInstance(r, req, ctx) {
              r.calls.push(`${ctx.op} ${req.name}`);
              const id = ids.format({ name: req.name });
              r.boxes.set(req.name, { id, uid: req.uid, createdAt: new Date(0) });
              return id;
            },
            async getInstance(r, id, ctx) {
              r.calls.push(`${ctx.op} ${id.name}`);
              const box = r.boxes.get(id.name);
              if (box === undefined) throw ctx.notFound(`${id.name} is gone`);
              return box;
            },
            async deleteInstance(r, id, ctx) {
              r.calls.push(`${ctx.op} ${id.name} ${ctx.owner.uid}`);
              r.boxes.delete(id.name);
            },
            async listInstances(r, installation) {
              r.calls.push(`list ${installation}`);
              return [...r.boxes.values()];
            },
          },
          checker: {
            targets: () => [{ target: 'boxes', address: 'memory' }],
            check: async () => ({ reason: 'Reachable', message: `${rt.boxes.size} boxes` }),
          },
          close: async () => {
            closed++;
          },
        }),
    };
    const provider = await createProvider(module, 'boxes-a', {}, {});
    const req = {
      name: 'proxy-a',
      namespace: 'default',
      uid: 'u-1',
      port: 3128,
      cloudInit: new Uint8Array(),
      placement: {},
    };
    const id = await provider.create(req);
    expect((await provider.get(id)).uid).toBe('u-1');
    expect(await provider.listByTag()).toHaveLength(1);
    expect((await provider.check?.())?.[0]?.message).toBe('1 boxes');
    await provider.delete(id, { uid: 'u-1' });
    await expect(provider.get(id)).rejects.toMatchObject({ errorClass: 'NotFound' });
    await provider.close?.();
    await provider.close?.();
    expect(closed).toBe(1);
    expect(rt.calls).toEqual([
      'create proxy-a',
      'get proxy-a',
      'list default',
      'delete proxy-a u-1',
      'get proxy-a',
    ]);
  });
});
