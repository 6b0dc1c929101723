/**
 * Instance states to the contract's, what became of an instance that is no
 * longer running, the address Get reports and where an instance runs.
 *
 * @module
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { ErrorClass, Location, State } from '@proxy-op/contract';
import { REGION_COUNTRY } from './regions.js';
import type { InstanceView } from './seam.js';
import { DELETED_TAG } from './tags.js';

/** The state reason of a Spot Instance EC2 took back. */
export const SPOT_TERMINATION = 'Server.SpotInstanceTermination';

/** The state reason of an instance a client terminated (TerminateInstances: ours, or a person's). */
export const USER_SHUTDOWN = 'Client.UserInitiatedShutdown';

/**
 * State reasons of a launch EC2 accepted and then gave up, with the class
 * of the failure: no capacity or a volume limit (QuotaExceeded), a launch
 * that can never work as configured (Permanent).
 */
const LAUNCH_FAILURES: Readonly<Record<string, ErrorClass>> = {
  'Server.InsufficientInstanceCapacity': 'QuotaExceeded',
  'Client.VolumeLimitExceeded': 'QuotaExceeded',
  'Client.InvalidSnapshot.NotFound': 'Permanent',
  'Client.InternalError': 'Permanent',
};

/** Whether an instance still exists for EC2 (anything but terminated). */
export function isLive(v: InstanceView): boolean {
  return v.state !== 'terminated';
}

/** Whether EC2 took the instance back (a Spot interruption). */
export function wasPreempted(v: InstanceView): boolean {
  return v.stateReason === SPOT_TERMINATION;
}

/**
 * Whether a Delete (or a person) ended the instance, or a Delete came for
 * it while EC2 was taking it back: once it is terminated, its end is
 * collected.
 */
export function wasDeleted(v: InstanceView): boolean {
  return v.stateReason === USER_SHUTDOWN || v.tags[DELETED_TAG] !== undefined;
}

/** The failure of a launch EC2 accepted and then gave up, with its class; undefined for any other instance. */
export function launchFailure(
  v: InstanceView,
): { errorClass: ErrorClass; message: string } | undefined {
  const cls = v.stateReason === undefined ? undefined : LAUNCH_FAILURES[v.stateReason];
  if (cls === undefined) return undefined;
  return {
    errorClass: cls,
    message: `EC2 accepted the launch of instance ${v.instanceId} and then ended it: ${v.stateReasonMessage ?? v.stateReason}`,
  };
}

/**
 * The contract's state of an instance: `pending` is Provisioning,
 * `running` Running with an address and Provisioning without one,
 * `stopping` and `stopped` Stopped, `shutting-down` and `terminated`
 * Preempted when EC2 took a Spot Instance back (a Delete under way
 * included, so the state does not change under the operator) and
 * Terminated otherwise;
 * any other state is Stopped.
 */
export function mapState(v: InstanceView, ip: string | undefined): State {
  switch (v.state) {
    case 'pending':
      return 'Provisioning';
    case 'running':
      return ip === undefined ? 'Provisioning' : 'Running';
    case 'shutting-down':
    case 'terminated':
      return wasPreempted(v) ? 'Preempted' : 'Terminated';
    default:
      return 'Stopped';
  }
}

/**
 * The address of an instance: its public IPv4 address, or its IPv6
 * address where it has no public IPv4 one (`public`), or its private IPv4
 * address (`private`); undefined until one is assigned.
 */
export function addressOf(v: InstanceView, mode: 'public' | 'private'): string | undefined {
  if (mode === 'private')
    return v.privateIp !== undefined && isIPv4(v.privateIp) ? v.privateIp : undefined;
  if (v.publicIp !== undefined && isIPv4(v.publicIp)) return v.publicIp;
  return v.ipv6 !== undefined && isIPv6(v.ipv6) ? v.ipv6 : undefined;
}

/** Where an instance runs: the region, its availability zone when known, the region's country where known. */
export function locationOf(region: string, zone: string | undefined): Location {
  const country = REGION_COUNTRY[region];
  return {
    region,
    ...(zone === undefined || zone === '' ? {} : { zone }),
    ...(country === undefined ? {} : { country }),
  };
}
