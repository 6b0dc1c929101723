/**
 * Address choice: a stable first address per instance (a hash of its name
 * and UID over the range), then the next free ones, under one allocation
 * lock per provider so two Creates in this process never pick the same.
 *
 * @module
 */
import { createHash } from 'node:crypto';
import { loopbackHosts } from './cidr.js';
import { LocalError } from './errors.js';
import type { Runtime } from './runtime.js';

/** The allocation lock's key (never an instance name). */
const ALLOCATE = '\0allocate';

/** The first address to try for an instance: a stable hash of its name and UID over the range. */
export function preferredIndex(name: string, uid: string, size: number): number {
  const h = createHash('sha256').update(`${name}\0${uid}`).digest();
  return h.readUInt32BE(0) % size;
}

/** Runs `body` under the provider's allocation lock (waiting for it ends when `signal` fires). */
export function underAllocation<T>(
  rt: Runtime,
  signal: AbortSignal | undefined,
  body: () => Promise<T>,
): Promise<T> {
  return rt.allocation.run(ALLOCATE, body, { signal });
}

/**
 * The first address of the range, from the hash of name and UID onwards,
 * that no other state file holds and where `port` can be bound. Called
 * under the allocation lock.
 */
export async function pickAddress(
  rt: Runtime,
  name: string,
  uid: string,
  port: number,
  signal: AbortSignal | undefined,
): Promise<string> {
  const hosts = loopbackHosts(rt.config.addressRange);
  const taken = new Set(
    (await rt.seam.listStates(signal))
      .filter((r) => r.name !== name)
      .map((r) => r.address)
      .filter((a) => a !== undefined),
  );
  const start = preferredIndex(name, uid, hosts.length);
  for (let i = 0; i < hosts.length; i++) {
    const address = hosts[(start + i) % hosts.length] as string;
    if (taken.has(address)) continue;
    if (await rt.seam.bindable(address, port, signal)) return address;
  }
  throw new LocalError(
    'ADDRESS_RANGE_EXHAUSTED',
    `no address of ${rt.config.addressRange} is free on port ${port}`,
  );
}
