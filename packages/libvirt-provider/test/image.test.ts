// Peer: the in-memory libvirt model behind the engine, and a real HTTP image server on loopback (undici downloads from it).
import { buildSeedISO } from '@proxy-op/nocloud';
import { createLogSink, createSpanRecorder } from '@proxy-op/providertest';
import { afterEach, describe, expect, it } from 'vitest';
import { libvirtProviderModule } from '../src/module.js';
import { IMAGE_PREFIX } from '../src/runtime.js';
import { createModelFixture, type ModelFixture } from './support/fixture.js';
import { testFlavour } from './support/flavours.js';
import type { LibvirtModel } from './support/model.js';
import { qcow2Header } from './support/qcow2.js';

const module = libvirtProviderModule(testFlavour);
let fx: ModelFixture | undefined;

afterEach(async () => {
  await fx?.cleanup?.();
  fx = undefined;
});

async function fixture(config: Record<string, unknown> = {}) {
  const logs = createLogSink();
  const spans = createSpanRecorder();
  fx = await createModelFixture(
    module,
    testFlavour,
    { logger: logs.logger, tracer: spans.tracer },
    { config },
  );
  return { fx, logs, spans };
}

let n = 0;
function request(patch: Record<string, unknown> = {}) {
  n++;
  return {
    name: `proxy-img-${n}`,
    namespace: 'default',
    uid: `uid-${n}`,
    port: 3128,
    cloudInit: new TextEncoder().encode(`#cloud-config\n# request ${n}\n`),
    placement: { zone: 'kvm-a', machineType: 'small', image: 'tiny' },
    ...patch,
  };
}

function volumeNames(model: LibvirtModel, host: string): string[] {
  return [...(model.host(host).pools.get('default')?.volumes.keys() ?? [])].sort();
}

describe('the image cache', () => {
  it('downloads once per host, streams it into an upload on a connection of its own, and marks it last', async () => {
    const { fx, spans } = await fixture();
    await fx.provider.create(request());
    expect(fx.images.requests(fx.imagePath)).toBe(1);
    const image = fx.model
      .volumes()
      .find((v) => v.name.startsWith(IMAGE_PREFIX) && !v.name.includes('.sha256-'));
    expect(image?.data.equals(qcow2Header())).toBe(true);
    // The refresh probed the qcow2 header: the image reads as 48 MiB, as libvirt would say.
    expect(image?.capacity).toBe(48 * 1024 ** 2);
    const calls = fx.model.calls;
    const upload = calls.find((c) => c.method === 'storageVolUpload' && c.conn !== calls[1]?.conn);
    expect(upload, 'the image upload ran on a connection other than the pooled one').toBeDefined();
    const uploadConn = upload?.conn;
    expect(calls.filter((c) => c.conn === uploadConn).map((c) => c.method)).toEqual([
      'storageVolUpload',
    ]);
    expect([...fx.model.host('kvm-a').connections].map((c) => c.id)).not.toContain(uploadConn);
    // The marker is written after the upload and the refresh, and before the overlay.
    const at = (p: (c: (typeof calls)[number]) => boolean) => calls.findIndex(p);
    const uploaded = at((c) => c === upload);
    const refreshed = at((c) => c.method === 'storagePoolRefresh');
    const marked = at(
      (c) => c.method === 'storageVolCreateXml' && (c.target ?? '').includes('.sha256-'),
    );
    const overlaid = at(
      (c) => c.method === 'storageVolCreateXml' && c.target === `proxy-img-${n}.qcow2`,
    );
    expect([uploaded < refreshed, refreshed < marked, marked < overlaid]).toEqual([
      true,
      true,
      true,
    ]);
    expect(spans.spans().map((s) => s.name)).toContain('testvirt.download');

    // A second domain on the same host uses the cache; another host downloads its own.
    await fx.provider.create(request());
    expect(fx.images.requests(fx.imagePath)).toBe(1);
    await fx.provider.create(
      request({ placement: { zone: 'kvm-b', machineType: 'small', image: 'tiny' } }),
    );
    expect(fx.images.requests(fx.imagePath)).toBe(2);
  });

  it('lets two Creates on one host share one download', async () => {
    const { fx } = await fixture();
    await Promise.all([
      fx.provider.create(request()),
      fx.provider.create(request()),
      fx.provider.create(request()),
    ]);
    expect(fx.images.requests(fx.imagePath)).toBe(1);
    expect(fx.model.domains()).toHaveLength(3);
  });

  it('never caches a download whose SHA-256 does not match: Permanent, nothing left', async () => {
    const { fx } = await fixture();
    fx.images.mode(fx.imagePath, 'corrupt');
    const err = await fx.provider.create(request()).catch((e: unknown) => e);
    expect(err).toMatchObject({ errorClass: 'Permanent' });
    expect((err as Error).message).toMatch(
      /image tiny: the download's SHA-256 is [0-9a-f]{64}, the catalogue says [0-9a-f]{64}/,
    );
    expect(volumeNames(fx.model, 'kvm-a')).toEqual([]);
    expect(fx.model.domains()).toEqual([]);
    fx.images.mode(fx.imagePath, 'ok');
    await fx.provider.create(request());
    expect(volumeNames(fx.model, 'kvm-a')).toHaveLength(4);
  });

  it('never caches a short download: Transient, and the retry succeeds', async () => {
    const { fx } = await fixture();
    fx.images.mode(fx.imagePath, 'short');
    const req = request();
    expect(await fx.provider.create(req).catch((e: unknown) => e)).toMatchObject({
      errorClass: 'Transient',
    });
    expect(volumeNames(fx.model, 'kvm-a')).toEqual([]);
    fx.images.mode(fx.imagePath, 'ok');
    await fx.provider.create(req);
    expect(fx.images.requests(fx.imagePath)).toBe(2);
  });

  it('needs a Content-Length and a 2xx answer', async () => {
    const { fx } = await fixture();
    fx.images.mode(fx.imagePath, 'no-length');
    const noLength = await fx.provider.create(request()).catch((e: unknown) => e);
    expect(noLength).toMatchObject({ errorClass: 'Permanent' });
    expect((noLength as Error).message).toContain('sent no Content-Length');
    fx.images.mode(fx.imagePath, { status: 404 });
    expect(await fx.provider.create(request()).catch((e: unknown) => e)).toMatchObject({
      errorClass: 'Permanent',
    });
    fx.images.mode(fx.imagePath, { status: 503 });
    expect(await fx.provider.create(request()).catch((e: unknown) => e)).toMatchObject({
      errorClass: 'Transient',
    });
    expect(volumeNames(fx.model, 'kvm-a')).toEqual([]);
  });

  it('replaces an unmarked image a cut upload left, and trusts a marked one', async () => {
    const { fx } = await fixture();
    await fx.provider.create(request());
    const pool = fx.model.host('kvm-a').pools.get('default');
    const names = volumeNames(fx.model, 'kvm-a').filter((v) => v.startsWith(IMAGE_PREFIX));
    const markerName = names.find((v) => v.includes('.sha256-')) as string;
    const imageName = names.find((v) => !v.includes('.sha256-')) as string;
    // Marked: trusted as it is, even with different bytes (the marker is the only proof kept).
    const img = pool?.volumes.get(imageName);
    if (img !== undefined) img.data = Buffer.from('pretend');
    await fx.provider.create(request());
    expect(fx.images.requests(fx.imagePath)).toBe(1);
    // Unmarked: a cut upload's leftover, downloaded again.
    pool?.volumes.delete(markerName);
    await fx.provider.create(request());
    expect(fx.images.requests(fx.imagePath)).toBe(2);
    expect(pool?.volumes.get(imageName)?.data.equals(qcow2Header())).toBe(true);
    expect(pool?.volumes.has(markerName)).toBe(true);
  });

  it('checks the pool has room for the image, the disk and the seed before any volume', async () => {
    const { fx } = await fixture({ diskSizeGb: 2 });
    const pool = fx.model.host('kvm-a').pools.get('default');
    if (pool !== undefined) pool.capacity = 2 * 1024 ** 3 + 1024 ** 2;
    const err = await fx.provider.create(request()).catch((e: unknown) => e);
    expect(err).toMatchObject({ errorClass: 'QuotaExceeded' });
    expect((err as Error).message).toContain(
      'pool default on host kvm-a has 2.00 GiB free, 2.02 GiB needed',
    );
    expect(volumeNames(fx.model, 'kvm-a')).toEqual([]);
  });
});

describe('the domain volumes', () => {
  it('reuses an overlay only when its backing image and size match', async () => {
    const { fx } = await fixture();
    const req = request();
    const id = await fx.provider.create(req);
    await fx.provider.delete(id);
    const pool = fx.model.host('kvm-a').pools.get('default');
    if (pool === undefined) throw new Error('no pool');
    const imagePath = [...pool.volumes.values()].find(
      (v) => v.name.startsWith(IMAGE_PREFIX) && v.format === 'qcow2',
    )?.path;
    const overlay = (backingPath: string | undefined, capacity: number) => ({
      name: `${req.name}.qcow2`,
      path: `${pool.dir}/${req.name}.qcow2`,
      format: 'qcow2' as const,
      capacity,
      data: Buffer.from('guest writes'),
      backingPath,
      backingFormat: 'qcow2',
    });
    const oneGiB = 1024 ** 3;
    // Matching: reused, its data untouched.
    pool.volumes.set(`${req.name}.qcow2`, overlay(imagePath, oneGiB));
    await fx.provider.create(req);
    expect(pool.volumes.get(`${req.name}.qcow2`)?.data.toString()).toBe('guest writes');
    await fx.provider.delete(id);
    // Another size, or another backing file: made again.
    for (const stale of [
      overlay(imagePath, 2 * oneGiB),
      overlay('/elsewhere/base.qcow2', oneGiB),
    ]) {
      pool.volumes.set(stale.name, stale);
      await fx.provider.create(req);
      const now = pool.volumes.get(stale.name);
      expect(now?.data.length, 'a fresh overlay').toBe(0);
      expect([now?.backingPath, now?.capacity]).toEqual([imagePath, oneGiB]);
      await fx.provider.delete(id);
    }
  });

  it('rebuilds the seed on every attempt from the request, byte for byte', async () => {
    const { fx } = await fixture({
      vendorData: '#cloud-config\nruncmd: [vendor]\n',
      installGuestAgent: false,
    });
    const req = request({ cloudInit: Buffer.from([0, 1, 2, 255, 10, 13]) });
    const pool = fx.model.host('kvm-a').pools.get('default');
    pool?.volumes.set(`${req.name}-seed.iso`, {
      name: `${req.name}-seed.iso`,
      path: `${pool.dir}/${req.name}-seed.iso`,
      format: 'raw',
      capacity: 10,
      data: Buffer.from('half a seed'),
    });
    await fx.provider.create(req);
    const seed = pool?.volumes.get(`${req.name}-seed.iso`);
    const want = buildSeedISO({
      instanceId: req.name,
      userData: req.cloudInit,
      vendorData: '#cloud-config\nruncmd: [vendor]\n',
      installGuestAgent: false,
    });
    expect(seed?.data.equals(Buffer.from(want))).toBe(true);
    expect(seed?.capacity).toBe(want.byteLength);
  });
});
