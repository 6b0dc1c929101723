/**
 * The VMID a Proxy's VM gets: derived from its UID, so a retry lands on the
 * same number.
 *
 * @module
 */
import type { VmidRange } from './config.js';

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const MASK = 0xffffffffffffffffn;

/** FNV-1a, 64 bits, over the UTF-8 bytes of `s`. */
export function fnv1a64(s: string): bigint {
  let h = FNV_OFFSET;
  for (const b of new TextEncoder().encode(s)) {
    h ^= BigInt(b);
    h = (h * FNV_PRIME) & MASK;
  }
  return h;
}

/**
 * The VMID probed at `attempt` for `uid`:
 * `min + (fnv1a64(uid) + attempt) mod (max - min + 1)`. Attempt 0 is where a Proxy's VM normally lives;
 * later attempts step forward past VMIDs taken by others.
 */
export function vmidFor(uid: string, attempt: number, range: VmidRange): number {
  const span = BigInt(range.max - range.min + 1);
  return range.min + Number((fnv1a64(uid) + BigInt(attempt)) % span);
}

/** How many VMIDs Create probes before giving up. */
export const MAX_PROBES = 33;
