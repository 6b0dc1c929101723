/**
 * Instance status to the contract's state, and the address Get reports.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import type { State } from '@proxy-op/contract';
import type { InstanceView } from './answers.js';

/**
 * The contract's state of a Compute Engine status: `PROVISIONING`,
 * `STAGING` and `REPAIRING` are Provisioning; `RUNNING` is Running with an
 * address and Provisioning without one; `STOPPING`, `STOPPED`,
 * `SUSPENDING`, `SUSPENDED` and `DEPROVISIONING` are Stopped; `TERMINATED`
 * is Terminated; anything else is Stopped.
 */
export function mapState(status: string, ip: string | undefined): State {
  switch (status) {
    case 'PROVISIONING':
    case 'STAGING':
    case 'REPAIRING':
      return 'Provisioning';
    case 'RUNNING':
      return ip === undefined ? 'Provisioning' : 'Running';
    case 'TERMINATED':
      return 'Terminated';
    default:
      return 'Stopped';
  }
}

/**
 * The address of an instance: the external NAT address of its first
 * interface's first access config (`external`), or its first interface's
 * internal address (`internal`); undefined until one is assigned.
 */
export function addressOf(
  instance: InstanceView,
  mode: 'external' | 'internal',
): string | undefined {
  const nic = instance.networkInterfaces[0];
  const ip = mode === 'internal' ? nic?.networkIP : nic?.natIP;
  return ip !== undefined && isIPv4(ip) ? ip : undefined;
}
