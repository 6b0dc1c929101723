/**
 * The Checker: one target per configured host, each checked on a
 * connection of its own (never the pooled one a reconcile may be using),
 * closed when the check ends. The operation shell runs the targets
 * concurrently, keeps config order and answers `Timeout` for a host still
 * being checked when the round ends; `failed` names the reason of what a
 * check threw.
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
import { ErrorCode, LibvirtError, RpcError, StoragePoolState } from '@proxy-op/libvirt-rpc';
import { hasCode } from './classify.js';
import type { HostConfig } from './config.js';
import { DialError } from './errors.js';
import { checkPool, type Runtime } from './runtime.js';
import type { LibvirtConnection } from './seam.js';

const GIB = 1024 ** 3;
const POOL_STATES = ['inactive', 'building', 'running', 'degraded', 'inaccessible'];

/** The Checker's reasons besides the contract's shared ones; each names a different fix. */
export const LibvirtReason = Object.freeze({
  /** The SSH key or known_hosts file is missing or unreadable: mount the Secret, fix the path. */
  CredentialsUnavailable: 'CredentialsUnavailable',
  /** The host's pool does not exist: create it or fix `hosts[].pool`. */
  PoolNotFound: 'PoolNotFound',
  /** The pool exists but is not running: `virsh pool-start`. */
  PoolNotActive: 'PoolNotActive',
} as const);

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
    failed: (err) => ({
      reason: reasonFor(err),
      message: err instanceof Error ? err.message : 'check failed',
    }),
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
  } finally {
    rt.log.debug({ host: host.name, ...d }, `${rt.flavour.prefix} host checked`);
    await conn?.close();
  }
}

/**
 * The Checker's reason for a failure (the shell answers `Timeout` for an
 * ended round and for a call past its budget, a dial's included).
 */
function reasonFor(err: unknown): Reason {
  if (DialError.isInstance(err)) {
    switch (err.stage) {
      case 'credentials':
        return LibvirtReason.CredentialsUnavailable;
      case 'hostkey':
      case 'auth':
        return Reason.Unauthorized;
      case 'libvirt':
        return reasonFor(err.cause);
      default:
        return Reason.Unreachable;
    }
  }
  if (LibvirtError.isInstance(err)) {
    if (err.code === ErrorCode.ERR_ACCESS_DENIED || err.code === ErrorCode.ERR_AUTH_FAILED) {
      return Reason.Forbidden;
    }
    if (err.code === ErrorCode.ERR_NO_STORAGE_POOL) return LibvirtReason.PoolNotFound;
    return Reason.APIError;
  }
  if (RpcError.isInstance(err) && err.code === 'ERR_RPC_TIMEOUT') return Reason.Timeout;
  return Reason.Unreachable;
}
