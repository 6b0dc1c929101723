/**
 * Instance status to the contract's state, and the address Get reports.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import type { Location, State } from '@proxy-op/contract';
import type { InstanceView } from './answers.js';
import { regionOf } from './config.js';
import { REGION_COUNTRY } from './regions.js';

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

/** Statuses of an instance that is stopping, stopped or suspended. */
const DOWN = new Set(['STOPPING', 'STOPPED', 'SUSPENDING', 'SUSPENDED', 'TERMINATED']);

/** The operation type Compute Engine records when it takes a Spot instance back. */
export const PREEMPTED_OPERATION = 'compute.instances.preempted';

/**
 * Whether an instance is a Spot instance that is going down or is down:
 * the one case where whether Compute Engine took it back has to be read
 * from its operations.
 */
export function isDownSpot(instance: InstanceView): boolean {
  return instance.provisioningModel === 'SPOT' && DOWN.has(instance.status);
}

/**
 * The contract's state of an instance: Preempted when Compute Engine took
 * it back (`preempted`: its operations hold a `compute.instances.preempted`
 * one), {@link mapState} of its status otherwise.
 */
export function stateOf(instance: InstanceView, ip: string | undefined, preempted: boolean): State {
  if (preempted && isDownSpot(instance)) return 'Preempted';
  return mapState(instance.status, ip);
}

/** Where an instance runs: its zone, the zone's region, and the region's country where known. */
export function locationOf(zone: string): Location {
  const region = regionOf(zone);
  const country = REGION_COUNTRY[region];
  return { region, zone, ...(country === undefined ? {} : { country }) };
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
