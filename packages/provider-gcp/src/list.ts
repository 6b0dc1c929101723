/**
 * ListByTag: one aggregated listing of every zone, filtered on the managed
 * label by the API and on the installation here. A zone the API reports
 * unreachable is left out (profile `listPartial: omit-unreachable`): its
 * instances are missing from this round, never reported gone.
 *
 * @module
 */
import { type Instance, markedInstances, type OperationContext } from '@proxy-op/contract';
import { formatId } from './id.js';
import { MANAGED_FILTER, readMark } from './labels.js';
import type { Runtime } from './runtime.js';

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
  return markedInstances(
    installation,
    instances
      .filter((inst) => inst.zone !== '')
      .map((inst) => ({
        id: formatId({ zone: inst.zone, name: inst.name }),
        mark: readMark(inst.labels, inst.creationTimestamp),
      })),
  );
}
