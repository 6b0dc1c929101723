/**
 * What every operation of the `gcp` provider works with.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import type { GcpConfig } from './config.js';
import type { ComputeSeam } from './seam.js';

/** The config, the decorated seam and the provider's logger. */
export interface GcpContext {
  readonly config: GcpConfig;
  /** The seam, decorated with `observeSeam`: every call is a child span and a debug line. */
  readonly seam: ComputeSeam;
  readonly log: Logger;
}
