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
 * only when the process answers on its address, Stopped when it died or
 * its password file is no longer the provider's (`ownFiles` false: the
 * proxy may serve someone else's credentials, so it is to be replaced),
 * Provisioning before it was spawned or while it starts.
 *
 * | phase | process | state |
 * |---|---|---|
 * | `starting` | any | Provisioning |
 * | `running` | alive, password file not ours | Stopped |
 * | `running` | alive, answers, address set | Running |
 * | `running` | alive, not answering yet | Provisioning |
 * | `running` | dead or unknown | Stopped |
 * | any other | any | Stopped |
 */
export function mapLocalState(
  record: InstanceRecord,
  alive: boolean | undefined,
  answers: boolean,
  ownFiles = true,
): State {
  switch (record.phase) {
    case 'starting':
      return 'Provisioning';
    case 'running':
      if (alive !== true || !ownFiles) return 'Stopped';
      return answers && record.address !== undefined ? 'Running' : 'Provisioning';
    default:
      return 'Stopped';
  }
}
