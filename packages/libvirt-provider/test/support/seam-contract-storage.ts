// The seam contract's storage part: pools and volumes as the engine relies
// on them (see seam-contract.ts).
import { randomBytes } from 'node:crypto';
import { ErrorCode, StoragePoolState } from '@proxy-op/libvirt-rpc';
import type * as Vitest from 'vitest';
import type { StorageVol } from '../../src/seam.js';
import { overlayXml, readVolumeTarget, readVolumeXml, volumeXml } from '../../src/xml.js';
import { failure, type SeamBackend, SIGNAL } from './seam-contract.js';

export function describeStorageContract(
  vitest: typeof Vitest,
  backend: () => SeamBackend,
  unique: (what: string) => string,
): void {
  const { expect, it } = vitest;
  const seam = () => backend().seam;
  const poolHandle = () => seam().storagePoolLookupByName({ name: backend().pool }, SIGNAL);
  const removeAll = async (vols: StorageVol[]) => {
    for (const vol of vols)
      await seam()
        .storageVolDelete({ vol }, SIGNAL)
        .catch(() => {});
  };

  it('pools: missing, running with sizes, inactive', async () => {
    const s = seam();
    const missing = await failure(s.storagePoolLookupByName({ name: 'sc-no-such-pool' }, SIGNAL));
    expect([missing.code, missing.message]).toEqual([
      ErrorCode.ERR_NO_STORAGE_POOL,
      "Storage pool not found: no storage pool with matching name 'sc-no-such-pool'",
    ]);
    const pool = await poolHandle();
    const info = await s.storagePoolGetInfo({ pool }, SIGNAL);
    expect(info.state).toBe(StoragePoolState.RUNNING);
    expect(info.available).toBeGreaterThan(0);
    expect(info.available).toBeLessThanOrEqual(info.capacity);
    const vol = await s.storageVolCreateXml(
      { pool, xml: volumeXml(unique('inactive'), 4096) },
      SIGNAL,
    );
    await backend().setPoolActive(false);
    try {
      expect((await s.storagePoolGetInfo({ pool }, SIGNAL)).state).toBe(StoragePoolState.INACTIVE);
      const listing = await failure(s.storagePoolListAllVolumes({ pool }, SIGNAL));
      expect([listing.code, listing.message]).toEqual([
        ErrorCode.ERR_OPERATION_INVALID,
        `Requested operation is not valid: storage pool '${backend().pool}' is not active`,
      ]);
      const inactive = await failure(s.storageVolLookupByName({ pool, name: vol.name }, SIGNAL));
      expect([inactive.code, inactive.message]).toEqual([
        ErrorCode.ERR_OPERATION_INVALID,
        `Requested operation is not valid: storage pool '${backend().pool}' is not active`,
      ]);
      const create = await failure(
        s.storageVolCreateXml({ pool, xml: volumeXml(unique('x'), 4096) }, SIGNAL),
      );
      expect(create.code).toBe(ErrorCode.ERR_OPERATION_INVALID);
    } finally {
      await backend().setPoolActive(true);
    }
    await s.storageVolDelete(
      { vol: await s.storageVolLookupByName({ pool, name: vol.name }, SIGNAL) },
      SIGNAL,
    );
  });

  it('volumes: create, duplicate, look up, upload, read, delete, delete again', async () => {
    const s = seam();
    const pool = await poolHandle();
    const name = unique('vol');
    const vol = await s.storageVolCreateXml({ pool, xml: volumeXml(name, 8192) }, SIGNAL);
    expect(vol).toMatchObject({ pool: backend().pool, name });
    const path = await s.storageVolGetPath({ vol }, SIGNAL);
    expect(path.endsWith(`/${name}`)).toBe(true);
    expect(vol.key).toBe(path);
    expect(await s.storageVolGetInfo({ vol }, SIGNAL)).toMatchObject({ type: 0, capacity: 8192 });
    const dup = await failure(s.storageVolCreateXml({ pool, xml: volumeXml(name, 8192) }, SIGNAL));
    expect([dup.code, dup.message]).toEqual([
      ErrorCode.ERR_STORAGE_VOL_EXIST,
      `storage volume '${name}' exists already`,
    ]);
    const slash = await failure(s.storageVolCreateXml({ pool, xml: volumeXml('a/b', 1) }, SIGNAL));
    expect([slash.code, slash.message]).toEqual([
      ErrorCode.ERR_OPERATION_INVALID,
      "Requested operation is not valid: volume name 'a/b' cannot contain '/'",
    ]);
    await s.storageVolUpload(
      { vol, source: [randomBytes(3000), randomBytes(5192)], length: 8192 },
      SIGNAL,
    );
    expect(readVolumeXml(await s.storageVolGetXmlDesc({ vol }, SIGNAL))).toEqual({
      capacity: 8192,
      backingPath: undefined,
    });
    const marker = await s.storageVolCreateXml(
      { pool, xml: volumeXml(`${name}.sha256-${'0'.repeat(64)}`, 0) },
      SIGNAL,
    );
    expect((await s.storageVolGetInfo({ vol: marker }, SIGNAL)).capacity).toBe(0);
    await s.storageVolDelete({ vol: marker }, SIGNAL);
    await s.storageVolDelete({ vol }, SIGNAL);
    const missing = await failure(s.storageVolLookupByName({ pool, name }, SIGNAL));
    expect([missing.code, missing.message]).toEqual([
      ErrorCode.ERR_NO_STORAGE_VOL,
      `Storage volume not found: no storage vol with matching name '${name}'`,
    ]);
    expect((await failure(s.storageVolDelete({ vol }, SIGNAL))).code).toBe(
      ErrorCode.ERR_NO_STORAGE_VOL,
    );
    // Read through a handle to a volume that is gone (a listing's, say): not found, by name.
    const goneXml = await failure(s.storageVolGetXmlDesc({ vol }, SIGNAL));
    expect([goneXml.code, goneXml.message]).toEqual([
      ErrorCode.ERR_NO_STORAGE_VOL,
      `Storage volume not found: no storage vol with matching name '${name}'`,
    ]);
    expect((await failure(s.storageVolGetPath({ vol }, SIGNAL))).code).toBe(
      ErrorCode.ERR_NO_STORAGE_VOL,
    );
  });

  it('volumes are listed, dated by their last change, and read back in part', async () => {
    const s = seam();
    const pool = await poolHandle();
    const name = unique('listed');
    const before = Date.now();
    const vol = await s.storageVolCreateXml({ pool, xml: volumeXml(name, 64 * 1024) }, SIGNAL);
    try {
      const listed = await s.storagePoolListAllVolumes({ pool }, SIGNAL);
      expect(listed).toContainEqual(vol);
      const path = await s.storageVolGetPath({ vol }, SIGNAL);
      const created = readVolumeTarget(await s.storageVolGetXmlDesc({ vol }, SIGNAL));
      expect(created.path).toBe(path);
      expect(created.changedAt?.getTime()).toBeGreaterThan(before - 5_000);
      expect(created.changedAt?.getTime()).toBeLessThan(Date.now() + 5_000);
      const data = randomBytes(40 * 1024);
      await s.storageVolUpload({ vol, source: [data], length: data.length }, SIGNAL);
      const part = await s.storageVolDownload({ vol, offset: 32 * 1024, length: 2048 }, SIGNAL);
      expect(Buffer.from(part).equals(data.subarray(32 * 1024, 34 * 1024))).toBe(true);
      // Never written: the file's zeros up to the volume's size.
      const tail = await s.storageVolDownload({ vol, offset: 48 * 1024, length: 1024 }, SIGNAL);
      expect(Buffer.from(tail).equals(Buffer.alloc(1024))).toBe(true);
    } finally {
      await removeAll([vol]);
    }
    expect((await s.storagePoolListAllVolumes({ pool }, SIGNAL)).map((v) => v.name)).not.toContain(
      name,
    );
  });

  it('an image uploaded raw reads as its qcow2 after a refresh; overlays read back their backing file', async () => {
    const s = seam();
    const pool = await poolHandle();
    const { image } = backend();
    const name = unique('image');
    const base = await s.storageVolCreateXml({ pool, xml: volumeXml(name, image.length) }, SIGNAL);
    const vols = [base];
    try {
      await s.storageVolUpload({ vol: base, source: [image], length: image.length }, SIGNAL);
      // libvirtd refreshes the pool in a thread of its own once an upload ends, so until an
      // explicit refresh the capacity is either the bytes or the image's virtual size.
      expect([image.length, 48 * 1024 ** 2]).toContain(
        (await s.storageVolGetInfo({ vol: base }, SIGNAL)).capacity,
      );
      await s.storagePoolRefresh({ pool }, SIGNAL);
      expect((await s.storageVolGetInfo({ vol: base }, SIGNAL)).capacity).toBe(48 * 1024 ** 2);
      const basePath = await s.storageVolGetPath({ vol: base }, SIGNAL);
      const overlay = await s.storageVolCreateXml(
        { pool, xml: overlayXml(`${name}-overlay.qcow2`, 2 * 1024 ** 3, basePath, 'qcow2') },
        SIGNAL,
      );
      vols.unshift(overlay);
      expect(readVolumeXml(await s.storageVolGetXmlDesc({ vol: overlay }, SIGNAL))).toEqual({
        capacity: 2 * 1024 ** 3,
        backingPath: basePath,
      });
      expect((await s.storageVolGetInfo({ vol: overlay }, SIGNAL)).capacity).toBe(2 * 1024 ** 3);
      const dir = basePath.slice(0, basePath.lastIndexOf('/'));
      const orphan = await failure(
        s.storageVolCreateXml(
          {
            pool,
            xml: overlayXml(`${name}-orphan.qcow2`, 1024 ** 2, `${dir}/sc-missing.qcow2`, 'qcow2'),
          },
          SIGNAL,
        ),
      );
      expect([orphan.code, orphan.message]).toEqual([
        ErrorCode.ERR_SYSTEM_ERROR,
        `inaccessible backing store volume ${dir}/sc-missing.qcow2: No such file or directory`,
      ]);
    } finally {
      await removeAll(vols);
    }
  });
}
