/**
 * What every operation works with: the config, the decorated seam, the
 * logger, the clock and the budgets; and the small rules they share.
 *
 * @module
 */
import type { Clock, Logger } from '@proxy-op/contract';
import type { Budgets } from './budgets.js';
import type { ProxmoxConfig } from './config.js';
import { ApiError } from './errors.js';
import type { ProxmoxApi } from './seam.js';

/** The provider's state, shared by its operations. Built once per provider. */
export interface Runtime {
  readonly config: ProxmoxConfig;
  /** The seam, bounded per call and logging one line per call. */
  readonly api: ProxmoxApi;
  /** The provider's logger (`provider` bound; redacts declared secrets). */
  readonly log: Logger;
  readonly clock: Clock;
  readonly budgets: Budgets;
}

/** True for a lock a task holds (`clone`, `backup`, ...): anything but none or `suspended`. */
export function isTaskLock(lock: string | undefined): boolean {
  return lock !== undefined && lock !== '' && lock !== 'suspended';
}

/**
 * Whether a config's `agent` value turns the guest agent on: `1`, or
 * `enabled=1` among other options. Absent or `0`, QEMU runs without the
 * agent's channel and no address can ever be read.
 */
export function agentEnabled(value: string | undefined): boolean {
  if (value === undefined) return false;
  const first = value.split(',')[0] ?? '';
  const enabled = first.includes('=') ? /(?:^|,)enabled=([^,]*)/.exec(value)?.[1] : first;
  return enabled === '1';
}

/** The seed ISO's file name for an instance. */
export function seedName(name: string): string {
  return `${name}-seed.iso`;
}

/** The seed ISO's volume id on `storage`. */
export function seedVolid(storage: string, name: string): string {
  return `${storage}:iso/${seedName(name)}`;
}

/** Log fields of a failure: the HTTP status and API message, or the error's name. */
export function errorFields(err: unknown): Record<string, string | number> {
  if (ApiError.isInstance(err)) return { httpStatus: err.status, error: err.apiMessage };
  return { error: err instanceof Error ? err.name : typeof err };
}
