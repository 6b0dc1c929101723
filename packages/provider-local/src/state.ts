/**
 * The contract's state of a `local` instance, from its state file and its
 * process.
 *
 * @module
 */
import type { State } from '@proxy-op/contract';
import type { InstanceRecord } from './record.js';

/**
 * The state an instance is in, from its state file and process: Running
 * only when the process answers on its address, Stopped when it died,
 * Provisioning before it was spawned or while it starts.
 *
 * | phase | process | state |
 * |---|---|---|
 * | `starting` | any | Provisioning |
 * | `running` | alive, answers, address set | Running |
 * | `running` | alive, not answering yet | Provisioning |
 * | `running` | dead or unknown | Stopped |
 * | any other | any | Stopped |
 */
export function mapLocalState(
  record: InstanceRecord,
  alive: boolean | undefined,
  answers: boolean,
): State {
  switch (record.phase) {
    case 'starting':
      return 'Provisioning';
    case 'running':
      if (alive !== true) return 'Stopped';
      return answers && record.address !== undefined ? 'Running' : 'Provisioning';
    default:
      return 'Stopped';
  }
}
