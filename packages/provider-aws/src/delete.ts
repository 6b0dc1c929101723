/**
 * Delete: terminates the caller's live instance of the name and returns
 * (profile `deleteReturn: returns-early`); Get reaches NotFound once EC2
 * has terminated it (and Get has removed its security group). With no live
 * instance left, Delete removes the group itself, which is how a Spot
 * Instance EC2 took back, or a launch EC2 gave up, is collected. A Spot
 * Instance EC2 is still taking back is tagged `proxy-operator-deleted`, so
 * it reads as deleted, not Preempted, once terminated. What is not the
 * caller's is left alone.
 *
 * @module
 */
import { type DeleteContext, deletionProblem, formatMarkTime } from '@proxy-op/contract';
import { Ec2ApiError } from './errors.js';
import { checkRegion } from './get.js';
import { findGroup, removeGroup } from './group.js';
import type { AwsId } from './id.js';
import { findInstances } from './lookup.js';
import type { Runtime } from './runtime.js';
import { isLive, wasPreempted } from './state.js';
import { DELETED_TAG, readMark } from './tags.js';

/** Deletes the instance and, once it is terminated, its group, leaving alone what is not the caller's. */
export async function deleteInstance(rt: Runtime, id: AwsId, ctx: DeleteContext): Promise<void> {
  checkRegion(rt, id, ctx);
  const views = await findInstances(rt, id.name, ctx);
  const live = views.filter(isLive);
  if (live.length > 0) {
    const ours = live.filter((v) => deletionProblem(readMark(v.tags), ctx.owner) === undefined);
    if (ours.length < live.length) {
      rt.log.debug(
        { name: id.name, left: live.length - ours.length },
        'aws instances not the caller’s; left alone',
      );
    }
    const running = ours.filter((v) => v.state !== 'shutting-down').map((v) => v.instanceId);
    const taken = ours
      .filter(
        (v) => v.state === 'shutting-down' && wasPreempted(v) && v.tags[DELETED_TAG] === undefined,
      )
      .map((v) => v.instanceId);
    try {
      if (running.length > 0) await rt.seam.terminateInstances(running, ctx.signal);
      if (taken.length > 0) {
        await rt.seam.createTags(taken, { [DELETED_TAG]: formatMarkTime(new Date()) }, ctx.signal);
      }
    } catch (err) {
      // Only an instance launched a moment ago can be listed and not found: not gone, not yet.
      if (Ec2ApiError.isInstance(err) && err.ec2Code === 'InvalidInstanceID.NotFound') {
        throw ctx.transient(`instance ${id.name} is not visible to EC2 yet; try again`, err);
      }
      throw err;
    }
    rt.recent.delete(id.name);
    if (running.length > 0) {
      rt.log.debug({ name: id.name, instanceIds: running.join(',') }, 'aws termination accepted');
    }
    return;
  }
  rt.recent.delete(id.name);
  const group = await findGroup(rt, id.name, ctx);
  if (group !== undefined && !(await removeGroup(rt, group, ctx.owner, ctx))) {
    throw ctx.transient(`the security group of instance ${id.name} is still in use; try again`);
  }
}
