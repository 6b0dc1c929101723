/**
 * ListByTag: two listings, filtered on the managed tag by EC2 and on the
 * installation here: every instance (DescribeInstances) and every security
 * group in the VPC (DescribeSecurityGroups), each every page. An instance
 * that runs is listed with its state; one that ended is listed only while
 * its group is there (Preempted for a Spot Instance EC2 took back,
 * Terminated otherwise), and a group whose instance EC2 no longer lists is
 * listed as a Terminated instance, so garbage collection deletes what is
 * left. This provider's launches of the last moments that the listing does
 * not show yet are asked for by ID (profile `listPartial: single-call`: any
 * failure fails the whole listing).
 *
 * @module
 */
import { type Instance, markedInstances, type OperationContext } from '@proxy-op/contract';
import { instanceOf, remnantOf } from './get.js';
import { awaitVisible, current, newestFirst, recentLaunch } from './lookup.js';
import type { Runtime } from './runtime.js';
import type { GroupView, InstanceView } from './seam.js';
import { isLive } from './state.js';
import { MANAGED_FILTER, NAME_TAG, readMark } from './tags.js';

/** Every instance marked for `installation`. */
export async function listInstances(
  rt: Runtime,
  installation: string,
  ctx: OperationContext,
): Promise<Instance[]> {
  const views = await rt.seam.describeInstances({ filters: [MANAGED_FILTER] }, ctx.signal);
  const groups = await rt.seam.describeSecurityGroups(
    [MANAGED_FILTER, { name: 'vpc-id', values: [rt.config.vpcId] }],
    ctx.signal,
  );
  const byName = new Map<string, InstanceView[]>();
  for (const v of views) {
    const name = v.tags[NAME_TAG];
    if (name !== undefined) byName.set(name, [...(byName.get(name) ?? []), v]);
  }
  for (const name of [...rt.recent.keys()]) {
    const r = recentLaunch(rt, name);
    if (r === undefined) continue;
    if (views.some((v) => v.instanceId === r.instanceId)) {
      rt.recent.delete(name);
      continue;
    }
    const v = await awaitVisible(rt, r.instanceId, ctx);
    if (v !== undefined && readMark(v.tags) !== undefined)
      byName.set(name, [...(byName.get(name) ?? []), v]);
  }
  const groupOf = new Map<string, GroupView>();
  for (const g of groups) {
    const name = g.tags[NAME_TAG];
    if (name !== undefined) groupOf.set(name, g);
  }
  const entries: Instance[] = [];
  for (const name of new Set([...byName.keys(), ...groupOf.keys()])) {
    const id = { region: rt.config.region, name };
    const chosen = current(newestFirst(byName.get(name) ?? []));
    const group = groupOf.get(name);
    let inst: Instance | undefined;
    if (chosen !== undefined && (isLive(chosen) || group !== undefined))
      inst = instanceOf(rt, id, chosen);
    else if (group !== undefined) inst = remnantOf(rt, id, group);
    if (inst !== undefined) entries.push(inst);
  }
  const marked = entries.map((e) => ({
    id: e.id,
    mark: { uid: e.uid, createdAt: e.createdAt, installation: e.installation ?? '' },
    state: e.state,
    location: e.location,
  }));
  return markedInstances(installation, marked);
}
