/**
 * The contract's state of a Pod.
 *
 * @module
 */
import { isIPv4 } from 'node:net';
import type { State } from '@proxy-op/contract';

/** The parts of a Pod the state is read from. */
export interface PodFacts {
  /** Set once a delete was accepted. */
  readonly deletionTimestamp?: unknown;
  readonly phase?: string | undefined;
  readonly podIP?: string | undefined;
  /** The status of the Pod's `Ready` condition (`True`, `False`, `Unknown`), if reported. */
  readonly ready?: string | undefined;
}

/**
 * The state table:
 *
 * | Pod | state |
 * |---|---|
 * | being deleted (`deletionTimestamp` set), whatever its phase | Terminated |
 * | `Pending` (or no phase yet) | Provisioning |
 * | `Running`, Ready, with an IPv4 `podIP` | Running |
 * | `Running`, not Ready or without an IPv4 yet | Provisioning |
 * | `Succeeded`, `Failed` | Terminated |
 * | `Unknown`, any other phase | Stopped |
 */
export function podState(p: PodFacts): State {
  if (p.deletionTimestamp !== undefined && p.deletionTimestamp !== null) return 'Terminated';
  switch (p.phase) {
    case undefined:
    case '':
    case 'Pending':
      return 'Provisioning';
    case 'Running':
      return p.ready === 'True' && isIPv4(p.podIP ?? '') ? 'Running' : 'Provisioning';
    case 'Succeeded':
    case 'Failed':
      return 'Terminated';
    default:
      return 'Stopped';
  }
}
