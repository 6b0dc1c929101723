/**
 * What every operation of the `hetzner` provider works with.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import type { HetznerConfig } from './config.js';
import type { HetznerSeam } from './seam.js';

/** The config, the decorated seam and the provider's logger. */
export interface Runtime {
  /** The provider's config block, after defaults. */
  readonly config: HetznerConfig;
  /** The seam, decorated (`decorateSeam`): every call is a child span and a debug line. */
  readonly seam: HetznerSeam;
  /** The provider's logger (`provider` field set). */
  readonly log: Logger;
}
