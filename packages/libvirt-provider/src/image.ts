/**
 * The image cache: one volume per catalogue image and pool, trusted only
 * with its marker. A missing image is downloaded with undici and streamed
 * straight into a volume upload on a dedicated connection, hashed on the
 * way and never held whole; the marker is written last, after the byte
 * count and the SHA-256 matched, so a cut, short or corrupt download never
 * becomes a cached image. The pool-space precheck (the provider's only
 * QuotaExceeded) runs before any volume is created.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { trace } from '@opentelemetry/api';
import { type OperationContext, withChildSpan } from '@proxy-op/contract';
import { ErrorCode, StoragePoolState } from '@proxy-op/libvirt-rpc';
import { request } from 'undici';
import { hasCode } from './classify.js';
import type { HostConfig, ImageEntry } from './config.js';
import { ImageError } from './errors.js';
import {
  checkPool,
  checkVol,
  cleanupSignal,
  errorFields,
  imageName,
  markerName,
  type Runtime,
  signalOf,
} from './runtime.js';
import type { LibvirtSeam, StoragePool, StorageVol } from './seam.js';
import { volumeXml } from './xml.js';

/** Room kept free beside the image and the disk: the seed and some slack. */
export const POOL_SLACK_BYTES = 16 * 1024 * 1024;
const GIB = 1024 ** 3;

/** A cached image, ready to back overlays. */
export interface CachedImage {
  readonly vol: StorageVol;
  readonly path: string;
  /** Its virtual size in bytes (what the guest sees). */
  readonly capacity: number;
}

/** What one Create needs from the pool. */
export interface ImagePlan {
  readonly host: HostConfig;
  readonly pool: StoragePool;
  readonly key: string;
  readonly image: ImageEntry;
  /** The overlay's size in bytes (the disk the guest gets). */
  readonly diskBytes: number;
  /** The pool's free bytes when the Create began. */
  readonly available: number;
}

function gib(bytes: number): string {
  return (bytes / GIB).toFixed(2);
}

/** Looks a volume up; undefined when it does not exist. */
export async function lookupVolume(
  seam: LibvirtSeam,
  pool: StoragePool,
  name: string,
  signal: AbortSignal,
): Promise<StorageVol | undefined> {
  try {
    return checkVol(await seam.storageVolLookupByName({ pool, name }, signal));
  } catch (err) {
    if (hasCode(err, ErrorCode.ERR_NO_STORAGE_VOL)) return undefined;
    throw err;
  }
}

/** How often a volume libvirtd is still allocating is looked at again (a delete tried again), in ms. */
export const ALLOCATING_POLL_MS = 100;

/**
 * Deletes a volume; a volume already gone is fine. A volume libvirtd is
 * still allocating (the creation of a Create that was cancelled goes on in
 * the daemon) cannot be deleted yet: the delete is tried again until the
 * allocation is over, for as long as `signal` allows.
 */
export async function deleteVolume(
  seam: LibvirtSeam,
  vol: StorageVol,
  signal: AbortSignal,
): Promise<void> {
  for (;;) {
    try {
      await seam.storageVolDelete({ vol }, signal);
      return;
    } catch (err) {
      if (hasCode(err, ErrorCode.ERR_NO_STORAGE_VOL)) return;
      if (!stillAllocating(err)) throw err;
    }
    await sleep(ALLOCATING_POLL_MS, undefined, { signal });
  }
}

/** Whether libvirtd refused an operation on a volume because it is still being allocated. */
function stillAllocating(err: unknown): boolean {
  return (
    hasCode(err, ErrorCode.ERR_OPERATION_INVALID) &&
    /still being allocated/.test(String((err as { message?: unknown }).message ?? ''))
  );
}

/**
 * The pool-space precheck (profile `quota: detected`): the pool must be
 * running and have room for `imageBytes` (0 when cached), the disk and
 * {@link POOL_SLACK_BYTES}, else QuotaExceeded before any volume exists.
 */
export function checkPoolSpace(
  rt: Runtime,
  ctx: OperationContext,
  plan: ImagePlan,
  imageBytes: number,
): void {
  if (rt.flavour.profile.quota !== 'detected') return;
  const needed = imageBytes + plan.diskBytes + POOL_SLACK_BYTES;
  rt.log.trace(
    {
      host: plan.host.name,
      pool: plan.pool.name,
      availableBytes: plan.available,
      neededBytes: needed,
    },
    `${rt.flavour.prefix} pool space`,
  );
  if (plan.available < needed) {
    throw ctx.quotaExceeded(
      `pool ${plan.pool.name} on host ${plan.host.name} has ${gib(plan.available)} GiB free, ${gib(needed)} GiB needed (image ${gib(imageBytes)}, disk ${gib(plan.diskBytes)}, seed and slack): free space in the pool, or lower diskSizeGb`,
    );
  }
}

/**
 * The cached image for `plan`, downloading it first when the pool has no
 * marked copy. One download per host and image runs at a time; the others
 * wait and then find it cached.
 */
export async function ensureImage(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  plan: ImagePlan,
): Promise<CachedImage> {
  const name = imageName(plan.key, plan.image);
  const signal = signalOf(ctx);
  return rt.imageLocks.run(
    `${plan.host.name}/${plan.pool.name}/${name}`,
    async () => {
      const marker = await lookupVolume(seam, plan.pool, markerName(plan.key, plan.image), signal);
      let vol = await lookupVolume(seam, plan.pool, name, signal);
      if (marker !== undefined && vol !== undefined) {
        checkPoolSpace(rt, ctx, plan, 0);
        return cached(seam, vol, signal);
      }
      if (marker !== undefined) await deleteVolume(seam, marker, signal);
      vol = await download(rt, ctx, seam, plan, name, vol);
      await seam.storagePoolRefresh({ pool: plan.pool }, signal);
      const image = await cached(seam, vol, signal);
      await seam.storageVolCreateXml(
        { pool: plan.pool, xml: volumeXml(markerName(plan.key, plan.image), 0) },
        signal,
      );
      rt.log.debug(
        { host: plan.host.name, pool: plan.pool.name, image: plan.key, volume: name },
        `${rt.flavour.prefix} image cached`,
      );
      return image;
    },
    { signal },
  );
}

async function cached(
  seam: LibvirtSeam,
  vol: StorageVol,
  signal: AbortSignal,
): Promise<CachedImage> {
  const path = await seam.storageVolGetPath({ vol }, signal);
  if (typeof path !== 'string') throw new TypeError('a volume path that is not a string');
  const info = await seam.storageVolGetInfo({ vol }, signal);
  if (typeof info?.capacity !== 'number') throw new TypeError('volume info without capacity');
  return { vol, path, capacity: info.capacity };
}

/**
 * Downloads the image into a new volume (replacing `stale`, an unmarked
 * leftover): GET, the precheck with its Content-Length, the volume, then
 * the body streamed into a volume upload on a dedicated connection with
 * its bytes counted and hashed on the way. Any failure deletes the volume.
 */
async function download(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  plan: ImagePlan,
  name: string,
  stale: StorageVol | undefined,
): Promise<StorageVol> {
  const { prefix } = rt.flavour;
  const url = new URL(plan.image.url);
  const attrs = {
    [`${prefix}.url_host`]: url.host,
    [`${prefix}.sha256_configured`]: true,
    [`${prefix}.image`]: plan.key,
  };
  return withChildSpan(rt.tracer, `${prefix}.download`, attrs, async () => {
    const signal = AbortSignal.any([signalOf(ctx), AbortSignal.timeout(rt.budgets.image)]);
    const res = await request(url, {
      method: 'GET',
      dispatcher: rt.http,
      signal,
      headersTimeout: rt.budgets.call,
      bodyTimeout: rt.budgets.call,
    });
    // Destroying the body on a failure must not raise an unheard 'error' event.
    res.body.on('error', () => {});
    let consumed = false;
    try {
      if (res.statusCode < 200 || res.statusCode > 299) {
        const permanent =
          res.statusCode >= 400 &&
          res.statusCode < 500 &&
          res.statusCode !== 408 &&
          res.statusCode !== 429;
        throw new ImageError(
          'status',
          `image ${plan.key}: GET ${url.host}${url.pathname} answered ${res.statusCode}${permanent ? ': fix its url in the catalogue' : ''}`,
          permanent,
        );
      }
      const length = Number(res.headers['content-length']);
      if (!Number.isSafeInteger(length) || length <= 0) {
        throw new ImageError(
          'length',
          `image ${plan.key}: ${url.host} sent no Content-Length; the image server must send one`,
          true,
        );
      }
      trace.getActiveSpan()?.setAttribute(`${prefix}.bytes`, length);
      checkPoolSpace(rt, ctx, plan, length);
      if (stale !== undefined) await deleteVolume(seam, stale, signalOf(ctx));
      const vol = checkVol(
        await seam.storageVolCreateXml(
          { pool: plan.pool, xml: volumeXml(name, length) },
          signalOf(ctx),
        ),
      );
      try {
        consumed = true;
        await upload(rt, plan, vol, res.body, length, signal);
      } catch (err) {
        await deleteVolume(seam, vol, cleanupSignal(rt)).catch((e: unknown) => {
          rt.log.debug(
            { host: plan.host.name, volume: name, ...errorFields(e) },
            `${prefix} image cleanup failed`,
          );
        });
        throw err;
      }
      return vol;
    } finally {
      if (!consumed) res.body.destroy();
    }
  });
}

/** Streams `body` into `vol` on a dedicated connection, counting and hashing; throws on a short, long or corrupt body. */
async function upload(
  rt: Runtime,
  plan: ImagePlan,
  vol: StorageVol,
  body: AsyncIterable<Uint8Array> & { destroy(err?: Error): unknown },
  length: number,
  signal: AbortSignal,
): Promise<void> {
  const hash = createHash('sha256');
  let bytes = 0;
  let failure: ImageError | undefined;
  const fail = (e: ImageError): ImageError => {
    failure = e;
    return e;
  };
  async function* hashed(): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      if (bytes > length) {
        throw fail(
          new ImageError(
            'size',
            `image ${plan.key}: the server sent more than its Content-Length`,
            false,
          ),
        );
      }
      hash.update(chunk);
      yield chunk;
    }
    if (bytes !== length) {
      throw fail(
        new ImageError(
          'short',
          `image ${plan.key}: the download ended after ${bytes} of ${length} bytes`,
          false,
        ),
      );
    }
    const digest = hash.digest('hex');
    if (digest !== plan.image.sha256) {
      throw fail(
        new ImageError(
          'sha256',
          `image ${plan.key}: the download's SHA-256 is ${digest}, the catalogue says ${plan.image.sha256}: fix the catalogue or the file on the server; nothing was cached`,
          true,
        ),
      );
    }
  }
  const conn = await rt.hosts.dedicated(plan.host, 'upload', signal);
  try {
    await conn.seam.storageVolUpload({ vol, source: hashed(), length }, signal);
  } catch (err) {
    body.destroy();
    if (failure !== undefined) throw failure;
    if (bytes < length && !signal.aborted && !ImageError.isInstance(err)) {
      rt.log.debug(
        { host: plan.host.name, bytes, length, ...errorFields(err) },
        `${rt.flavour.prefix} image upload cut`,
      );
    }
    throw err;
  } finally {
    await conn.close();
  }
  if (failure !== undefined) throw failure;
  if (bytes !== length) {
    throw new ImageError(
      'short',
      `image ${plan.key}: ${bytes} of ${length} bytes reached the volume`,
      false,
    );
  }
}

/** The pool of `host`, running, and its free bytes; Permanent naming the config field otherwise. */
export async function runningPool(
  rt: Runtime,
  ctx: OperationContext,
  seam: LibvirtSeam,
  host: HostConfig,
): Promise<{ pool: StoragePool; available: number }> {
  const signal = signalOf(ctx);
  let pool: StoragePool;
  try {
    pool = checkPool(await seam.storagePoolLookupByName({ name: host.pool }, signal));
  } catch (err) {
    if (hasCode(err, ErrorCode.ERR_NO_STORAGE_POOL)) {
      throw ctx.permanent(
        `storage pool ${host.pool} does not exist on host ${host.name}: create it, or fix ${rt.flavour.type}.hosts[].pool`,
        err,
      );
    }
    throw err;
  }
  const info = await seam.storagePoolGetInfo({ pool }, signal);
  if (typeof info?.state !== 'number' || typeof info.available !== 'number') {
    throw new TypeError('pool info without state or available');
  }
  if (info.state !== StoragePoolState.RUNNING) {
    throw ctx.permanent(
      `storage pool ${host.pool} on host ${host.name} is not running: virsh pool-start ${host.pool}`,
    );
  }
  return { pool, available: info.available };
}
