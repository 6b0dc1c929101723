/**
 * Orphaned volumes: an overlay or a seed whose domain is gone (removed by
 * hand, or a Create or Delete cut off half-way) holds pool space that no
 * domain accounts for. Volumes carry no mark, so a volume counts as the
 * engine's only with proof: an overlay whose backing file is a cached
 * image in the same pool, or a seed whose ISO 9660 volume label is
 * NoCloud's `cidata`. Names the engine never gives (cached images, names
 * that are not domain names) are never candidates.
 *
 * @module
 */
import { ErrorCode, type LibvirtError } from '@proxy-op/libvirt-rpc';
import { SEED_LABEL } from '@proxy-op/nocloud';
import { hasCode } from './classify.js';
import type { HostConfig } from './config.js';
import { DOMAIN_NAME_RE } from './id.js';
import {
  checkPool,
  checkVol,
  IMAGE_PREFIX,
  overlayName,
  type Runtime,
  seedName,
} from './runtime.js';
import type { LibvirtSeam, StoragePool, StorageVol } from './seam.js';
import { readVolumeTarget, readVolumeXml } from './xml.js';

/** The volumes of one domain name that no domain uses, and when they last changed. */
export interface Orphan {
  readonly name: string;
  readonly volumes: readonly string[];
  readonly changedAt: Date;
}

/** Where an ISO 9660 primary volume descriptor starts (sector 16). */
const PVD_OFFSET = 16 * 2048;
/** Its length: one sector. */
const PVD_LENGTH = 2048;

/** True when `pvd` is an ISO 9660 primary volume descriptor labelled `cidata`. */
export function isNoCloudDescriptor(pvd: Uint8Array): boolean {
  if (pvd.length < 72 || pvd[0] !== 1) return false;
  if (Buffer.from(pvd.subarray(1, 6)).toString('latin1') !== 'CD001') return false;
  const label = Buffer.from(pvd.subarray(40, 72)).toString('latin1').trimEnd();
  return label.toLowerCase() === SEED_LABEL;
}

/** The domain name an overlay or seed volume belongs to, or undefined for any other volume. */
export function stemOf(volume: string): { name: string; kind: 'overlay' | 'seed' } | undefined {
  if (volume.startsWith(IMAGE_PREFIX)) return undefined;
  const seed = /^(.+)-seed\.iso$/.exec(volume);
  const overlay = /^(.+)\.qcow2$/.exec(volume);
  const m = seed ?? overlay;
  if (m === null || !DOMAIN_NAME_RE.test(m[1] as string)) return undefined;
  return { name: m[1] as string, kind: seed === null ? 'overlay' : 'seed' };
}

/**
 * The orphaned volumes of `host`'s pool: those whose domain name is not in
 * `domains` (every domain on the host, marked or not) and that are proven
 * the engine's. A pool that is missing or not running has none to report;
 * a volume that vanishes while it is looked at is passed over.
 */
export async function findOrphans(
  rt: Runtime,
  seam: LibvirtSeam,
  host: HostConfig,
  domains: ReadonlySet<string>,
  signal: AbortSignal,
): Promise<Orphan[]> {
  let pool: StoragePool;
  let vols: StorageVol[];
  try {
    pool = checkPool(await seam.storagePoolLookupByName({ name: host.pool }, signal));
    vols = await seam.storagePoolListAllVolumes({ pool }, signal);
  } catch (err) {
    if (!hasCode(err, ErrorCode.ERR_NO_STORAGE_POOL, ErrorCode.ERR_OPERATION_INVALID)) throw err;
    rt.log.debug(
      { host: host.name, pool: host.pool, libvirtCode: (err as LibvirtError).code },
      `${rt.flavour.prefix} pool not readable, no orphaned volumes looked for`,
    );
    return [];
  }
  if (!Array.isArray(vols)) throw new TypeError('a volume listing that is not a list');
  const byName = new Map<string, { overlay?: StorageVol; seed?: StorageVol }>();
  for (const v of vols) {
    const vol = checkVol(v);
    const stem = stemOf(vol.name);
    if (stem === undefined || domains.has(stem.name)) continue;
    const entry = byName.get(stem.name) ?? {};
    entry[stem.kind] = vol;
    byName.set(stem.name, entry);
  }
  const out: Orphan[] = [];
  for (const [name, { overlay, seed }] of byName) {
    const found = await judge(rt, seam, host, name, overlay, seed, signal);
    if (found !== undefined) out.push(found);
  }
  return out;
}

async function judge(
  rt: Runtime,
  seam: LibvirtSeam,
  host: HostConfig,
  name: string,
  overlay: StorageVol | undefined,
  seed: StorageVol | undefined,
  signal: AbortSignal,
): Promise<Orphan | undefined> {
  const fields = { host: host.name, name };
  try {
    const times: (Date | undefined)[] = [];
    const volumes: string[] = [];
    let proven = false;
    if (overlay !== undefined) {
      const xml = await volumeXml(seam, overlay, signal);
      const own = readVolumeTarget(xml);
      const backing = readVolumeXml(xml).backingPath;
      const slash = own.path?.lastIndexOf('/') ?? -1;
      const dir = slash > 0 ? (own.path as string).slice(0, slash + 1) : undefined;
      if (
        dir !== undefined &&
        backing?.startsWith(`${dir}${IMAGE_PREFIX}`) === true &&
        !backing.slice(dir.length).includes('/')
      ) {
        proven = true;
        volumes.push(overlayName(name));
        times.push(own.changedAt);
      }
    }
    if (seed !== undefined) {
      const xml = await volumeXml(seam, seed, signal);
      let ours = proven;
      if (!ours && (readVolumeXml(xml).capacity ?? 0) >= PVD_OFFSET + PVD_LENGTH) {
        const pvd = await seam.storageVolDownload(
          { vol: seed, offset: PVD_OFFSET, length: PVD_LENGTH },
          signal,
        );
        if (!(pvd instanceof Uint8Array))
          throw new TypeError('downloaded bytes that are not bytes');
        ours = isNoCloudDescriptor(pvd);
      }
      if (ours) {
        proven = true;
        volumes.push(seedName(name));
        times.push(readVolumeTarget(xml).changedAt);
      }
    }
    if (!proven) return undefined;
    if (times.some((t) => t === undefined)) {
      // Without a time GC cannot tell it from a Create under way: never report it as old.
      rt.log.debug(
        { ...fields, volumes },
        `${rt.flavour.prefix} orphaned volume without timestamps passed over`,
      );
      return undefined;
    }
    const changedAt = new Date(Math.max(...times.map((t) => (t as Date).getTime())));
    rt.log.debug(
      { ...fields, volumes, changedAt: changedAt.toISOString() },
      `${rt.flavour.prefix} orphaned volumes found`,
    );
    return { name, volumes, changedAt };
  } catch (err) {
    // Gone while looked at: nothing left to report.
    if (hasCode(err, ErrorCode.ERR_NO_STORAGE_VOL)) return undefined;
    throw err;
  }
}

async function volumeXml(seam: LibvirtSeam, vol: StorageVol, signal: AbortSignal): Promise<string> {
  const xml = await seam.storageVolGetXmlDesc({ vol }, signal);
  if (typeof xml !== 'string') throw new TypeError('volume XML that is not a string');
  return xml;
}
