/**
 * Get: the instance of the name, read back from EC2. One call
 * (DescribeInstances filtered on the `Name` tag) while the instance runs.
 * Once EC2 has no live instance of the name, a second one reads its
 * security group, which records whether the instance's end was collected:
 * with the group there, a Spot Instance EC2 took back is Preempted and a
 * launch EC2 gave up is reported with its failure's class; an instance a
 * Delete terminated has its group removed here (EC2 frees it only once the
 * instance is terminated), and is then NotFound.
 *
 * @module
 */
import type { Instance, OperationContext } from '@proxy-op/contract';
import { findGroup, removeGroup } from './group.js';
import { type AwsId, formatId } from './id.js';
import { current, findInstances } from './lookup.js';
import type { Runtime } from './runtime.js';
import type { GroupView, InstanceView } from './seam.js';
import {
  addressOf,
  isLive,
  launchFailure,
  locationOf,
  mapState,
  wasDeleted,
  wasPreempted,
} from './state.js';
import { readMark } from './tags.js';

/** An ID of another region than the provider's: Permanent (the provider talks to its own region only). */
export function checkRegion(rt: Runtime, id: AwsId, ctx: OperationContext): void {
  if (id.region !== rt.config.region) {
    throw ctx.permanent(
      `instance ${id.name} is in region ${id.region}, and this provider is configured for ${rt.config.region} (aws.region)`,
    );
  }
}

/** The contract's view of a live instance (or an ended one still listed). */
export function instanceOf(rt: Runtime, id: AwsId, v: InstanceView): Instance | undefined {
  const mark = readMark(v.tags);
  if (mark === undefined) return undefined;
  const address = addressOf(v, rt.config.addressMode);
  const state = mapState(v, address);
  return {
    id: formatId(id),
    uid: mark.uid,
    createdAt: mark.createdAt,
    state,
    ip: state === 'Running' ? address : undefined,
    installation: mark.installation,
    location: locationOf(rt.config.region, v.zone),
  };
}

/** What is left of an instance EC2 no longer lists: its group, reported Terminated until Delete removes it. */
export function remnantOf(rt: Runtime, id: AwsId, group: GroupView): Instance | undefined {
  const mark = readMark(group.tags);
  if (mark === undefined) return undefined;
  return {
    id: formatId(id),
    uid: mark.uid,
    createdAt: mark.createdAt,
    state: 'Terminated',
    installation: mark.installation,
    location: locationOf(rt.config.region, undefined),
  };
}

/** Reads the instance back from EC2 (see the module comment). */
export async function getInstance(
  rt: Runtime,
  id: AwsId,
  ctx: OperationContext,
): Promise<Instance> {
  checkRegion(rt, id, ctx);
  const views = await findInstances(rt, id.name, ctx);
  const chosen = current(views);
  if (chosen !== undefined && isLive(chosen)) {
    const inst = instanceOf(rt, id, chosen);
    if (inst === undefined) throw ctx.notFound(`instance ${id.name} is not managed by proxy-op`);
    rt.log.trace(
      { name: id.name, instanceId: chosen.instanceId, state: chosen.state, ip: inst.ip },
      'aws instance read',
    );
    return inst;
  }
  const group = await findGroup(rt, id.name, ctx);
  const groupMark = group === undefined ? undefined : readMark(group.tags);
  if (group === undefined || groupMark === undefined) {
    throw ctx.notFound(`instance ${id.name} does not exist in ${rt.config.region}`);
  }
  if (chosen === undefined) {
    // EC2 lists no instance of it any more; its group is left until Delete collects it.
    const remnant = remnantOf(rt, id, group);
    if (remnant === undefined) throw ctx.notFound(`instance ${id.name} does not exist`);
    return remnant;
  }
  const mark = readMark(chosen.tags);
  if (mark === undefined || mark.uid !== groupMark.uid) {
    // The name's last instance was not the one the group was made for: the ID is gone; the
    // group is an older instance's, listed for garbage collection.
    throw ctx.notFound(`instance ${id.name} (${chosen.instanceId}) is ${chosen.state}`);
  }
  if (wasDeleted(chosen)) {
    if (await removeGroup(rt, group, {}, ctx)) {
      throw ctx.notFound(`instance ${id.name} was terminated and its security group removed`);
    }
    return instanceOf(rt, id, chosen) as Instance;
  }
  if (wasPreempted(chosen)) return instanceOf(rt, id, chosen) as Instance;
  const failure = launchFailure(chosen);
  if (failure !== undefined) {
    const message = `instance ${id.name}: ${failure.message}`;
    if (failure.errorClass === 'QuotaExceeded') throw ctx.quotaExceeded(message);
    throw failure.errorClass === 'Permanent' ? ctx.permanent(message) : ctx.transient(message);
  }
  return instanceOf(rt, id, chosen) as Instance;
}
