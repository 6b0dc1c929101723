/**
 * What every operation of the `gcp` provider works with.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import type { GcpConfig } from './config.js';
import type { ComputeSeam } from './seam.js';

/** The config, the decorated seam and the provider's logger. */
export interface Runtime {
  /** The provider's config block, after defaults. */
  readonly config: GcpConfig;
  /** The seam, decorated (`decorateSeam`): every call is a child span and a debug line. */
  readonly seam: ComputeSeam;
  /** The provider's logger (`provider` field set). */
  readonly log: Logger;
}
