/**
 * ListByTag: one aggregated listing of every zone, filtered on the managed
 * label by the API and on the installation here. A zone the API reports
 * unreachable is left out (profile `listPartial: omit-unreachable`): its
 * instances are missing from this round, never reported gone. Each
 * instance comes with its state and location, read from the same answer
 * (and, for a Spot instance that is down, from its operations).
 *
 * @module
 */
import {
  belongsTo,
  type Instance,
  markedInstances,
  type OperationContext,
} from '@proxy-op/contract';
import { wasPreempted } from './get.js';
import { formatId } from './id.js';
import { MANAGED_FILTER, readMark } from './labels.js';
import type { Runtime } from './runtime.js';
import { addressOf, locationOf, stateOf } from './state.js';

/** Every instance of the project marked for `installation`. */
export async function listInstances(
  rt: Runtime,
  installation: string,
  ctx: OperationContext,
): Promise<Instance[]> {
  const { instances, unreachable } = await rt.seam.listInstances(MANAGED_FILTER, ctx.signal);
  if (unreachable.length > 0) {
    rt.log.debug(
      { zones: unreachable.join(',') },
      'gcp zones unreachable; left out of the listing',
    );
  }
  const entries = [];
  for (const inst of instances) {
    if (inst.zone === '') continue;
    const mark = readMark(inst.labels, inst.creationTimestamp);
    if (mark === undefined || !belongsTo(mark, installation)) continue;
    const address = addressOf(inst, rt.config.addressMode);
    // Only a Spot instance of ours that is down costs a call (its operations).
    const preempted = await wasPreempted(rt, inst, ctx);
    entries.push({
      id: formatId({ zone: inst.zone, name: inst.name }),
      mark,
      state: stateOf(inst, address, preempted),
      location: locationOf(inst.zone),
    });
  }
  return markedInstances(installation, entries);
}
