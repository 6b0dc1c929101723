/**
 * A domain's own volumes: its overlay (reused only when its backing image
 * and size match) and its seed (rebuilt on every attempt, since a seed cut
 * off mid-upload must never be trusted).
 *
 * @module
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CheckedCreateRequest, OperationContext } from '@proxy-op/contract';
import { ErrorCode } from '@proxy-op/libvirt-rpc';
import { buildSeedISO } from '@proxy-op/nocloud';
import { hasCode } from './classify.js';
import {
  ALLOCATING_POLL_MS,
  type CachedImage,
  deleteVolume,
  type ImagePlan,
  lookupVolume,
} from './image.js';
import { checkVol, overlayName, type Runtime, seedName, signalOf } from './runtime.js';
import type { LibvirtSeam, StoragePool, StorageVol } from './seam.js';
import { overlayXml, readVolumeXml, volumeXml } from './xml.js';

/** A volume of the domain, with its path on the host. */
export interface PlacedVolume {
  readonly vol: StorageVol;
  readonly path: string;
}

/**
 * The domain's overlay on `image`, `bytes` large. An overlay left by an
 * earlier attempt is reused only when its backing file is this image and
 * its capacity is `bytes`; any other is deleted and made again. One the
 * daemon is still building for a cancelled attempt is waited for.
 */
export async function ensureOverlay(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  plan: ImagePlan,
  image: CachedImage,
  name: string,
  bytes: number,
): Promise<PlacedVolume> {
  const signal = signalOf(ctx);
  const volName = overlayName(name);
  const fields = { host: plan.host.name, name, volume: volName };
  // An earlier attempt's creation or deletion can still be under way in the daemon, so the
  // volume may come or go between two calls of this one: three such changes are allowed. A
  // volume the daemon lists but cannot read yet is one it is still building (qemu-img has not
  // made its file): that is waited for, for as long as one call may take.
  const building = Date.now() + rt.budgets.call;
  let changes = 0;
  const unreadable = async (): Promise<boolean> => {
    if (Date.now() >= building) return false;
    await sleep(ALLOCATING_POLL_MS, undefined, { signal });
    return true;
  };
  while (changes < 3) {
    const existing = await lookupVolume(seam, plan.pool, volName, signal);
    if (existing !== undefined) {
      const xml = await gone(seam.storageVolGetXmlDesc({ vol: existing }, signal));
      if (xml === GONE) {
        if (!(await unreadable())) changes++;
        continue;
      }
      if (typeof xml !== 'string') throw new TypeError('volume XML that is not a string');
      const found = readVolumeXml(xml);
      if (found.backingPath === image.path && found.capacity === bytes) {
        const path = await gone(volumePath(seam, existing, signal));
        if (path === GONE) {
          changes++;
          continue;
        }
        rt.log.debug(fields, `${rt.flavour.prefix} overlay reused`);
        return { vol: existing, path };
      }
      rt.log.debug(
        {
          ...fields,
          backing: found.backingPath ?? '',
          capacity: found.capacity ?? -1,
          wantBacking: image.path,
          wantCapacity: bytes,
        },
        `${rt.flavour.prefix} overlay does not match, replaced`,
      );
      await deleteVolume(seam, existing, signal);
    }
    try {
      const vol = checkVol(
        await seam.storageVolCreateXml(
          { pool: plan.pool, xml: overlayXml(volName, bytes, image.path, plan.image.format) },
          signal,
        ),
      );
      return { vol, path: await volumePath(seam, vol, signal) };
    } catch (err) {
      // Made meanwhile by an attempt the daemon was still carrying out: judge that one.
      if (!hasCode(err, ErrorCode.ERR_STORAGE_VOL_EXIST)) throw err;
      changes++;
    }
  }
  throw ctx.transient(`overlay ${volName} on host ${plan.host.name} keeps changing under us`);
}

/**
 * Writes the domain's NoCloud seed: deletes any seed an earlier attempt
 * left, builds the ISO from the request's cloud-init (byte for byte) and
 * the config's vendor data, and uploads it on the pooled connection (tens
 * of KiB).
 */
export async function writeSeed(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  pool: StoragePool,
  req: CheckedCreateRequest,
): Promise<PlacedVolume> {
  const signal = signalOf(ctx);
  const volName = seedName(req.name);
  const iso = buildSeedISO({
    instanceId: req.name,
    userData: req.cloudInit,
    ...(rt.config.vendorData === undefined ? {} : { vendorData: rt.config.vendorData }),
    installGuestAgent: rt.config.installGuestAgent,
  });
  for (let attempt = 0; attempt < 2; attempt++) {
    const old = await lookupVolume(seam, pool, volName, signal);
    if (old !== undefined) await deleteVolume(seam, old, signal);
    let vol: StorageVol;
    try {
      vol = checkVol(
        await seam.storageVolCreateXml({ pool, xml: volumeXml(volName, iso.byteLength) }, signal),
      );
    } catch (err) {
      if (hasCode(err, ErrorCode.ERR_STORAGE_VOL_EXIST)) continue;
      throw err;
    }
    await seam.storageVolUpload({ vol, source: [iso], length: iso.byteLength }, signal);
    return { vol, path: await volumePath(seam, vol, signal) };
  }
  throw ctx.transient(`seed ${volName} keeps changing under us`);
}

/** What {@link gone} gives for a volume that went away while it was looked at. */
const GONE = Symbol('gone');

/** `call`'s answer, or {@link GONE} when libvirtd says the volume is not there (any more). */
async function gone<T>(call: Promise<T>): Promise<T | typeof GONE> {
  try {
    return await call;
  } catch (err) {
    if (hasCode(err, ErrorCode.ERR_NO_STORAGE_VOL)) return GONE;
    throw err;
  }
}

/** A volume's path; a TypeError when the answer is not a string. */
export async function volumePath(
  seam: LibvirtSeam,
  vol: StorageVol,
  signal: AbortSignal,
): Promise<string> {
  const path = await seam.storageVolGetPath({ vol }, signal);
  if (typeof path !== 'string' || path === '')
    throw new TypeError('a volume path that is not a string');
  return path;
}

/**
 * Deletes the domain's seed and then its overlay by name, each tolerant of
 * "already gone"; a missing pool is nothing to do. The overlay goes last:
 * a Delete cut off half-way leaves the volume whose backing image proves
 * it the engine's, so the orphan listing can still find it.
 */
export async function removeVolumes(
  seam: LibvirtSeam,
  poolName: string,
  name: string,
  signal: AbortSignal,
): Promise<number> {
  let pool: StoragePool;
  try {
    pool = await seam.storagePoolLookupByName({ name: poolName }, signal);
  } catch (err) {
    if (hasCode(err, ErrorCode.ERR_NO_STORAGE_POOL)) return 0;
    throw err;
  }
  let removed = 0;
  for (const volName of [seedName(name), overlayName(name)]) {
    const vol = await lookupVolume(seam, pool, volName, signal);
    if (vol === undefined) continue;
    await deleteVolume(seam, vol, signal);
    removed++;
  }
  return removed;
}
