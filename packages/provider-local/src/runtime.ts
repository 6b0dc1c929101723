/**
 * What every operation of the `local` provider works with.
 *
 * @module
 */
import type { Clock, Logger } from '@proxy-op/contract';
import type { KeyedLock } from '@proxy-op/keyedlock';
import type { LocalConfig } from './config.js';
import type { LocalSeam } from './seam.js';

/** The provider's state shared by its operations. Built once per provider. */
export interface Runtime {
  /** The provider's config block, after defaults. */
  readonly config: LocalConfig;
  /** The decorated seam: every call bounded by its budget, a child span and a debug line. */
  readonly seam: LocalSeam;
  /** The provider's logger (`provider` field set). */
  readonly log: Logger;
  /** Gives the creation time written in the mark. */
  readonly clock: Clock;
  /** Serialises address choices inside this process (see `address.ts`). */
  readonly allocation: KeyedLock<string>;
  /** Spawns under way, by instance name (they outlive a cancelled Create). */
  readonly spawning: Map<string, Promise<number>>;
}
