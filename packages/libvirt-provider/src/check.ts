/**
 * The Checker: one target per configured host, each checked on a
 * connection of its own (never the pooled one a reconcile may be using),
 * closed when the check ends. The operation shell runs the targets
 * concurrently, keeps config order and answers `Timeout` for a host still
 * being checked when the round ends.
 *
 * @module
 */
import {
  type CheckAnswer,
  type CheckContext,
  type CheckTarget,
  type ImplementationChecker,
  Reason,
} from '@proxy-op/contract';
import { ErrorCode, StoragePoolState } from '@proxy-op/libvirt-rpc';
import { hasCode, LibvirtReason, reasonFor } from './classify.js';
import type { HostConfig } from './config.js';
import { checkPool, type Runtime } from './runtime.js';
import type { LibvirtConnection } from './seam.js';

const GIB = 1024 ** 3;
const POOL_STATES = ['inactive', 'building', 'running', 'degraded', 'inaccessible'];

/** Formats libvirt's version number (major * 1e6 + minor * 1e3 + micro). */
export function formatLibvirtVersion(v: number): string {
  return `${Math.floor(v / 1_000_000)}.${Math.floor(v / 1000) % 1000}.${v % 1000}`;
}

/** The Checker over the configured hosts. */
export function checker(rt: Runtime): ImplementationChecker {
  return {
    targets: (): CheckTarget[] =>
      rt.config.hosts.map((h) => ({
        target: h.name,
        address: `${h.user}@${h.address}:${h.port}`,
        details: { user: h.user, pool: h.pool },
      })),
    check: (target, ctx) =>
      checkHost(rt, rt.config.hosts.find((h) => h.name === target.target) as HostConfig, ctx),
  };
}

/**
 * Checks one host: a fresh dial (the key files, SSH, the socket, the
 * libvirt handshake), the library version, the hostname, then the pool:
 * it must exist and run. `details` fills in as the check goes.
 */
async function checkHost(rt: Runtime, host: HostConfig, ctx: CheckContext): Promise<CheckAnswer> {
  const d = ctx.details;
  let conn: LibvirtConnection | undefined;
  try {
    conn = await rt.hosts.dedicated(host, 'check', ctx.signal);
    const { seam } = conn;
    const version = await seam.connectGetLibVersion({}, ctx.signal);
    if (typeof version !== 'number') throw new TypeError('a libvirt version that is not a number');
    d.libvirtVersion = formatLibvirtVersion(version);
    const hostname = await seam.connectGetHostname({}, ctx.signal);
    if (typeof hostname !== 'string') throw new TypeError('a hostname that is not a string');
    d.hostname = hostname;
    let pool: Awaited<ReturnType<typeof seam.storagePoolLookupByName>>;
    try {
      pool = checkPool(await seam.storagePoolLookupByName({ name: host.pool }, ctx.signal));
    } catch (err) {
      if (hasCode(err, ErrorCode.ERR_NO_STORAGE_POOL)) {
        return {
          reason: LibvirtReason.PoolNotFound,
          message: `storage pool ${host.pool} does not exist on ${host.name}: create it or fix ${rt.flavour.type}.hosts[].pool`,
        };
      }
      throw err;
    }
    const info = await seam.storagePoolGetInfo({ pool }, ctx.signal);
    if (typeof info?.state !== 'number') throw new TypeError('pool info without state');
    d.poolState = POOL_STATES[info.state] ?? String(info.state);
    d.poolCapacityGiB = Math.round((info.capacity / GIB) * 10) / 10;
    d.poolAvailableGiB = Math.round((info.available / GIB) * 10) / 10;
    if (info.state !== StoragePoolState.RUNNING) {
      return {
        reason: LibvirtReason.PoolNotActive,
        message: `storage pool ${host.pool} on ${host.name} is ${d.poolState}: virsh pool-start ${host.pool}`,
      };
    }
    return {
      reason: Reason.Reachable,
      message: `libvirt ${d.libvirtVersion} on ${hostname} answers`,
    };
  } catch (err) {
    return {
      reason: reasonFor(err, ctx.signal.aborted),
      message: err instanceof Error ? err.message : 'check failed',
    };
  } finally {
    rt.log.debug({ host: host.name, ...d }, `${rt.flavour.prefix} host checked`);
    await conn?.close();
  }
}
