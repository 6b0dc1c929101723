/**
 * What every operation of the `aws` provider works with.
 *
 * @module
 */
import type { Logger } from '@proxy-op/contract';
import type { AwsConfig } from './config.js';
import type { Ec2Seam } from './seam.js';

/** An instance this provider launched a moment ago: EC2 may not show it yet. */
export interface RecentLaunch {
  readonly instanceId: string;
  /** When RunInstances answered (ms since the epoch). */
  readonly at: number;
}

/** The config, the decorated seam, the provider's logger and its recent launches. */
export interface Runtime {
  /** The provider's config block, after defaults. */
  readonly config: AwsConfig;
  /** The seam, decorated (`decorateSeam`): every call is a child span and a debug line. */
  readonly seam: Ec2Seam;
  /** The provider's logger (`provider` field set). */
  readonly log: Logger;
  /**
   * The instances launched within `consistency.windowMs`, by name: an
   * answer that does not show one yet is not taken for its absence.
   */
  readonly recent: Map<string, RecentLaunch>;
  /**
   * The client tokens of the launches sent within `consistency.windowMs`
   * (ms since the epoch), answered or not.
   */
  readonly launches: Map<string, number>;
}
