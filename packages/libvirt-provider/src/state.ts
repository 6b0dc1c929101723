/**
 * From libvirt's domain state to the contract's.
 *
 * @module
 */
import type { State } from '@proxy-op/contract';
import { DomainState } from '@proxy-op/libvirt-rpc';

/** `VIR_DOMAIN_SHUTOFF_UNKNOWN`: a shut-off domain that has not run since it was defined. */
export const SHUTOFF_UNKNOWN = 0;
/** `VIR_DOMAIN_SHUTOFF_FAILED`: a domain whose start failed (a missing disk, QEMU refused). */
export const SHUTOFF_FAILED = 6;
/** `VIR_DOMAIN_PAUSED_STARTING_UP`: QEMU is up with its vCPUs held while libvirt finishes the start. */
export const PAUSED_STARTING_UP = 11;

/** True while libvirt is still starting the domain (paused, reason starting up). */
export function isStarting(state: number, reason: number): boolean {
  return state === DomainState.PAUSED && reason === PAUSED_STARTING_UP;
}

/**
 * The contract state of a libvirt state and reason:
 *
 * | libvirt state | reason | address | state |
 * |---|---|---|---|
 * | nostate | any | any | Provisioning |
 * | running, blocked | any | none | Provisioning |
 * | running, blocked | any | an IPv4 | Running |
 * | shutoff | unknown (defined, never started), failed (its start failed) | any | Provisioning |
 * | paused | starting up (a start in progress) | any | Provisioning |
 * | shutoff (other reasons), paused, shutdown, crashed, pmsuspended, anything else | any | any | Stopped |
 */
export function mapState(state: number, reason: number, ip: string | undefined): State {
  switch (state) {
    case DomainState.NOSTATE:
      return 'Provisioning';
    case DomainState.RUNNING:
    case DomainState.BLOCKED:
      return ip === undefined ? 'Provisioning' : 'Running';
    case DomainState.PAUSED:
      return reason === PAUSED_STARTING_UP ? 'Provisioning' : 'Stopped';
    case DomainState.SHUTOFF:
      return reason === SHUTOFF_UNKNOWN || reason === SHUTOFF_FAILED ? 'Provisioning' : 'Stopped';
    default:
      return 'Stopped';
  }
}

/** True while the domain runs (its addresses are worth asking). */
export function isActive(state: number): boolean {
  return state === DomainState.RUNNING || state === DomainState.BLOCKED;
}
