/**
 * Delete: submits the instance's deletion and returns (profile
 * `deleteReturn: returns-early`); the boot disk goes with the instance
 * (`autoDelete`), the opt-in firewall rule is deleted by name. What is not
 * the caller's is left alone. When the instance is already gone, its failed
 * inserts are forgotten (their operations deleted), so Get answers NotFound
 * instead of the old failure.
 *
 * @module
 */
import { type DeleteContext, deletionProblem } from '@proxy-op/contract';
import type { InstanceView } from './answers.js';
import { firewallMark, firewallName } from './build.js';
import { ComputeApiError, OperationFailedError } from './errors.js';
import { type GcpId, instanceLink } from './id.js';
import { readMark } from './labels.js';
import type { Runtime } from './runtime.js';

/** Deletes the instance and its rule, leaving alone what is not the caller's. */
export async function deleteInstance(rt: Runtime, id: GcpId, ctx: DeleteContext): Promise<void> {
  const inst = await rt.seam.getInstance(id.zone, id.name, ctx.signal);
  if (inst === undefined) {
    await forgetFailedInserts(rt, id, ctx);
  } else {
    const problem = deletionProblem(readMark(inst.labels, inst.creationTimestamp), ctx.owner);
    if (problem !== undefined) {
      rt.log.debug(
        { name: id.name, zone: id.zone, problem },
        'gcp instance not the caller’s; left alone',
      );
      return;
    }
    await submitDelete(rt, { ...inst, zone: inst.zone === '' ? id.zone : inst.zone }, ctx);
  }
  if (rt.config.firewall.enabled) await deleteRule(rt, id, ctx);
}

async function submitDelete(rt: Runtime, inst: InstanceView, ctx: DeleteContext): Promise<void> {
  const id: GcpId = { zone: inst.zone, name: inst.name };
  try {
    const op = await rt.seam.deleteInstance(id.zone, id.name, ctx.signal);
    if (op === undefined) return;
    if (op.status === 'DONE' && op.errors.length > 0) {
      throw new OperationFailedError(`the delete of instance ${id.name}`, op);
    }
    rt.log.debug({ name: id.name, zone: id.zone, operation: op.name }, 'gcp delete accepted');
  } catch (err) {
    if (!(ComputeApiError.isInstance(err) && err.reasons.includes('resourceNotReady'))) throw err;
    // The instance is busy: fine when that is its own deletion (running, or finished by now),
    // Transient otherwise.
    const ops = await rt.seam.listInstanceOperations(
      id.zone,
      instanceLink(rt.config.project, id),
      ctx.signal,
    );
    const born = Date.parse(inst.creationTimestamp ?? '');
    const deleting = ops.find(
      (op) =>
        op.operationType === 'delete' &&
        op.errors.length === 0 &&
        !(Date.parse(op.insertTime) < born),
    );
    if (deleting === undefined) {
      throw ctx.transient(`instance ${id.name} is busy with another operation; try again`, err);
    }
    rt.log.debug({ name: id.name, operation: deleting.name }, 'gcp delete already in progress');
  }
}

/**
 * For a missing instance: an insert still running means the instance is on
 * its way, so the Delete is Transient (succeeding now would leave the
 * instance behind once the insert finishes); failed inserts are deleted, so
 * Get is NotFound.
 */
async function forgetFailedInserts(rt: Runtime, id: GcpId, ctx: DeleteContext): Promise<void> {
  const ops = await rt.seam.listInstanceOperations(
    id.zone,
    instanceLink(rt.config.project, id),
    ctx.signal,
  );
  const inserts = ops.filter((op) => op.operationType === 'insert');
  const running = inserts.find((op) => op.status !== 'DONE');
  if (running !== undefined) {
    throw ctx.transient(
      `instance ${id.name} is still being created (operation ${running.name}); delete it again once the insert ends`,
    );
  }
  for (const op of inserts) {
    if (op.errors.length > 0) await rt.seam.deleteOperation(id.zone, op.name, ctx.signal);
  }
}

/** Deletes the instance's firewall rule when its mark says it is the caller's. */
async function deleteRule(rt: Runtime, id: GcpId, ctx: DeleteContext): Promise<void> {
  const name = firewallName(id);
  const rule = await rt.seam.getFirewall(name, ctx.signal);
  if (rule === undefined) return;
  const problem = deletionProblem(firewallMark(rule.description), ctx.owner);
  if (problem !== undefined) {
    rt.log.debug({ firewall: name, problem }, 'gcp firewall rule not the caller’s; left alone');
    return;
  }
  await rt.seam.deleteFirewall(name, ctx.signal);
}
