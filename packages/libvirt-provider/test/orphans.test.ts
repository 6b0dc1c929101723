// Peer: the in-memory libvirt model behind the engine (orphaned overlays and seeds in the listing, proven by backing image or NoCloud label; Delete removing them).
import { trace } from '@opentelemetry/api';
import { createProvider, silentLogger } from '@proxy-op/contract';
import { DomainState } from '@proxy-op/libvirt-rpc';
import { buildSeedISO } from '@proxy-op/nocloud';
import { afterEach, describe, expect, it } from 'vitest';
import { libvirtProviderModule } from '../src/module.js';
import { isNoCloudDescriptor, stemOf } from '../src/orphans.js';
import type { LibvirtSeam, Transport } from '../src/seam.js';
import { readVolumeTarget } from '../src/xml.js';
import { createModelFixture, type ModelFixture } from './support/fixture.js';
import { otherFlavour, testFlavour } from './support/flavours.js';
import type { ModelPool } from './support/model.js';

const fixtures: ModelFixture[] = [];

afterEach(async () => {
  for (const fx of fixtures.splice(0)) await fx.cleanup?.();
});

async function fixture(flavour = otherFlavour) {
  const fx = await createModelFixture(libvirtProviderModule(flavour), flavour, {
    logger: silentLogger,
    tracer: trace.getTracer('orphans'),
  });
  fixtures.push(fx);
  return fx;
}

let n = 0;
function request() {
  n++;
  return {
    name: `proxy-orph-${n}`,
    namespace: 'default',
    uid: `uid-orph-${n}`,
    port: 3128,
    cloudInit: new TextEncoder().encode('#cloud-config\n'),
    placement: { zone: 'kvm-a', machineType: 'small', image: 'tiny' },
  };
}

const pool = (fx: ModelFixture, host = 'kvm-a'): ModelPool =>
  fx.model.host(host).pools.get('default') as ModelPool;

/** A volume put in the pool behind the engine's back. */
function plantVolume(
  p: ModelPool,
  name: string,
  o: { data?: Buffer; backingPath?: string; changedMs?: number } = {},
): void {
  p.volumes.set(name, {
    name,
    path: `${p.dir}/${name}`,
    format: o.backingPath === undefined ? 'raw' : 'qcow2',
    capacity: Math.max(o.data?.length ?? 0, 1024 * 1024),
    data: o.data ?? Buffer.alloc(0),
    backingPath: o.backingPath,
    backingFormat: o.backingPath === undefined ? undefined : 'qcow2',
    changedMs: o.changedMs,
  });
}

describe('orphaned volumes', () => {
  it('lists the overlay and seed of a domain removed by hand, dated by their last change and placed on their host, and Delete removes them', async () => {
    const fx = await fixture();
    const req = request();
    fx.model.now = () => Date.parse('2026-03-01T10:00:00Z');
    const id = await fx.provider.create(req);
    fx.model.host('kvm-a').domains.delete(req.name);
    const seed = pool(fx).volumes.get(`${req.name}-seed.iso`);
    if (seed !== undefined) seed.changedMs = Date.parse('2026-03-01T10:05:00Z');

    const listed = await fx.provider.listByTag({ installation: 'blue' });
    expect(listed).toEqual([
      {
        id,
        uid: '',
        createdAt: new Date('2026-03-01T10:05:00Z'),
        installation: 'blue',
        location: { zone: 'kvm-a' },
      },
    ]);
    expect(await fx.provider.get(id).catch((e: { errorClass: string }) => e.errorClass)).toBe(
      'NotFound',
    );
    // What garbage collection does with an empty UID once it is old enough.
    await fx.provider.delete(id, { uid: '', installation: 'blue' });
    expect(fx.model.volumes().filter((v) => v.name.startsWith(req.name))).toEqual([]);
    expect(await fx.provider.listByTag({ installation: 'blue' })).toEqual([]);
  });

  it('proves an overlay alone by its cached backing image and a seed alone by its NoCloud label', async () => {
    const fx = await fixture();
    const a = request();
    const b = request();
    const idA = await fx.provider.create(a);
    const idB = await fx.provider.create(b);
    for (const r of [a, b]) fx.model.host('kvm-a').domains.delete(r.name);
    pool(fx).volumes.delete(`${a.name}-seed.iso`); // a Delete cut off after the seed
    pool(fx).volumes.delete(`${b.name}.qcow2`); // the original's order: overlay, then seed
    const listed = await fx.provider.listByTag();
    expect(listed.map((i) => [i.id, i.uid]).sort()).toEqual(
      [
        [idA, ''],
        [idB, ''],
      ].sort(),
    );
    await fx.provider.delete(idA);
    await fx.provider.delete(idB);
    expect(fx.model.volumes().filter((v) => !v.name.startsWith('proxy-op-image-'))).toEqual([]);
  });

  it('never reports a volume it cannot prove its own, nor the volumes of any domain on the host', async () => {
    const fx = await fixture();
    const req = request();
    await fx.provider.create(req);
    const p = pool(fx);
    const image = [...p.volumes.values()].find((v) => v.format === 'qcow2' && v.data.length > 0);
    expect(image?.name.startsWith('proxy-op-image-')).toBe(true);
    plantVolume(p, 'web.qcow2'); // an admin's disk: no backing file
    plantVolume(p, 'db.qcow2', { backingPath: `${p.dir}/golden.qcow2` }); // backed by the admin's image
    plantVolume(p, 'golden.qcow2');
    plantVolume(p, 'notes-seed.iso', { data: Buffer.alloc(40 * 1024, 7) }); // not an ISO
    plantVolume(p, 'other-seed.iso', {
      // An ISO, but not a NoCloud one.
      data: Buffer.from(buildSeedISO({ instanceId: 'x', userData: new Uint8Array(1) })).fill(
        0x20,
        16 * 2048 + 40,
        16 * 2048 + 72,
      ),
    });
    plantVolume(p, 'Not_A_Name.qcow2', { backingPath: image?.path as string });
    // Another provider's domain (no mark of ours) with volumes named like ours.
    fx.model.plantDomain(fx.model.host('kvm-a'), {
      name: 'proxy-foreign',
      state: DomainState.RUNNING,
      reason: 1,
    });
    plantVolume(p, 'proxy-foreign.qcow2', { backingPath: image?.path as string });
    expect((await fx.provider.listByTag()).map((i) => i.id)).toEqual([
      `hosts/kvm-a/domains/${req.name}`,
    ]);
  });

  it('reports nothing from a pool that is missing or stopped, and lists the domains all the same', async () => {
    const fx = await fixture();
    const req = request();
    const id = await fx.provider.create(req);
    const other = request();
    const gone = await fx.provider.create(other);
    fx.model.host('kvm-a').domains.delete(other.name);
    pool(fx).running = false;
    expect((await fx.provider.listByTag()).map((i) => i.id)).toEqual([id]);
    pool(fx).running = true;
    expect((await fx.provider.listByTag()).map((i) => i.id)).toEqual([id, gone]);
  });

  it('passes over orphaned volumes without timestamps: their age is unknown', async () => {
    const fx = await fixture();
    const req = request();
    await fx.provider.create(req);
    fx.model.host('kvm-a').domains.delete(req.name);
    const base = fx.model.transport();
    const stripped: Transport = {
      async open(target, signal) {
        const conn = await base.open(target, signal);
        const seam: LibvirtSeam = new Proxy(conn.seam, {
          get(t, prop, receiver) {
            const v: unknown = Reflect.get(t, prop, receiver);
            if (typeof v !== 'function') return v;
            if (prop !== 'storageVolGetXmlDesc') return v.bind(t);
            return async (a: never, s: AbortSignal) =>
              String(await v.call(t, a, s)).replace(/<timestamps>[\s\S]*?<\/timestamps>/, '');
          },
        });
        return { ...conn, seam, isOpen: () => conn.isOpen(), close: () => conn.close() };
      },
    };
    const blind = await createProvider(libvirtProviderModule(otherFlavour), 'blind', fx.config, {
      transport: stripped,
    });
    try {
      expect(await blind.listByTag()).toEqual([]);
      expect((await fx.provider.listByTag()).map((i) => i.uid)).toEqual(['']);
    } finally {
      await blind.close?.();
    }
  });

  it('is off unless the flavour asks for it', async () => {
    const fx = await fixture(testFlavour);
    const req = request();
    await fx.provider.create(req);
    fx.model.host('kvm-a').domains.delete(req.name);
    expect(await fx.provider.listByTag()).toEqual([]);
    expect(fx.model.calls.filter((c) => c.method === 'storagePoolListAllVolumes')).toEqual([]);
  });

  it('deletes the seed before the overlay, so a cut Delete leaves the provable volume', async () => {
    const fx = await fixture();
    const id = await fx.provider.create(request());
    const before = fx.model.calls.length;
    await fx.provider.delete(id);
    const deleted = fx.model.calls
      .slice(before)
      .filter((c) => c.method === 'storageVolDelete')
      .map((c) => c.target);
    expect(deleted).toEqual([`${id.split('/')[3]}-seed.iso`, `${id.split('/')[3]}.qcow2`]);
  });
});

describe('orphan rules', () => {
  it('knows the volume names the engine gives', () => {
    expect(stemOf('proxy-a.qcow2')).toEqual({ name: 'proxy-a', kind: 'overlay' });
    expect(stemOf('proxy-a-seed.iso')).toEqual({ name: 'proxy-a', kind: 'seed' });
    expect(stemOf('proxy-op-image-tiny-0123456789abcdef.qcow2')).toBeUndefined();
    expect(stemOf('Proxy_A.qcow2')).toBeUndefined();
    expect(stemOf('proxy-a.img')).toBeUndefined();
  });

  it('reads the ISO 9660 label of a seed', () => {
    const iso = buildSeedISO({ instanceId: 'x', userData: new Uint8Array(1) });
    const pvd = iso.subarray(16 * 2048, 17 * 2048);
    expect(isNoCloudDescriptor(pvd)).toBe(true);
    expect(isNoCloudDescriptor(new Uint8Array(2048))).toBe(false);
    const relabelled = Buffer.from(pvd);
    relabelled.write('CONFIG-2'.padEnd(32, ' '), 40, 'latin1');
    expect(isNoCloudDescriptor(relabelled)).toBe(false);
  });

  it('reads a volume path and its newest change time as libvirt writes them', () => {
    const xml = [
      "<volume type='file'>",
      '  <target>',
      '    <path>/pool/a.qcow2</path>',
      '    <timestamps>',
      '      <atime>1796056176.685165131</atime>',
      '      <mtime>1796056176.679258609</mtime>',
      '      <ctime>1796056176.685083107</ctime>',
      '      <btime>0</btime>',
      '    </timestamps>',
      '  </target>',
      '  <backingStore>',
      '    <path>/pool/base.qcow2</path>',
      '    <timestamps><mtime>1896056176.5</mtime></timestamps>',
      '  </backingStore>',
      '</volume>',
    ].join('\n');
    expect(readVolumeTarget(xml)).toEqual({
      path: '/pool/a.qcow2',
      changedAt: new Date(1796056176685),
    });
    expect(readVolumeTarget('<volume><target><path>/p/x</path></target></volume>')).toEqual({
      path: '/p/x',
      changedAt: undefined,
    });
  });
});
