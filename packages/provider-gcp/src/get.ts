/**
 * Get: the instance, or why there is none. One call (`instances.get`) when
 * the instance exists (two for a Spot instance that is down: its operations
 * say whether Compute Engine took it back); when it does not, a second one reads its insert
 * operations, so an insert the API accepted and then failed (quota, a
 * missing image) is reported with the API's reason and its class instead of
 * NotFound, and an insert still running is Transient.
 *
 * @module
 */
import type { Instance, OperationContext, ProviderError } from '@proxy-op/contract';
import type { InstanceView, OperationView } from './answers.js';
import { operationErrorClass } from './classify.js';
import { formatId, type GcpId, instanceLink } from './id.js';
import { readMark } from './labels.js';
import type { Runtime } from './runtime.js';
import { addressOf, isDownSpot, locationOf, PREEMPTED_OPERATION, stateOf } from './state.js';

/** Reads the instance back from the API. */
export async function getInstance(
  rt: Runtime,
  id: GcpId,
  ctx: OperationContext,
): Promise<Instance> {
  const inst = await rt.seam.getInstance(id.zone, id.name, ctx.signal);
  if (inst === undefined) throw await whyMissing(rt, id, ctx);
  const mark = readMark(inst.labels, inst.creationTimestamp);
  if (mark === undefined) throw ctx.notFound(`instance ${id.name} is not managed by proxy-op`);
  const address = addressOf(inst, rt.config.addressMode);
  const state = stateOf(inst, address, await wasPreempted(rt, inst, ctx));
  const ip = state === 'Running' ? address : undefined;
  rt.log.trace({ name: id.name, status: inst.status, state, ip }, 'gcp instance read');
  return {
    id: formatId(id),
    uid: mark.uid,
    createdAt: mark.createdAt,
    state,
    ip,
    installation: mark.installation,
    location: locationOf(id.zone),
  };
}

/**
 * Whether Compute Engine took the instance back: asked of its operations
 * only for a Spot instance that is down (one call), false for any other.
 */
export async function wasPreempted(
  rt: Runtime,
  inst: InstanceView,
  ctx: OperationContext,
): Promise<boolean> {
  if (!isDownSpot(inst)) return false;
  const link = instanceLink(rt.config.project, { zone: inst.zone, name: inst.name });
  const ops = await rt.seam.listInstanceOperations(inst.zone, link, ctx.signal);
  return ops.some((op) => op.operationType === PREEMPTED_OPERATION);
}

/**
 * The error for an instance the API does not have: Transient while its
 * insert runs, the failed insert's own error (class and message) when it
 * failed, NotFound otherwise.
 */
async function whyMissing(rt: Runtime, id: GcpId, ctx: OperationContext): Promise<ProviderError> {
  const ops = await rt.seam.listInstanceOperations(
    id.zone,
    instanceLink(rt.config.project, id),
    ctx.signal,
  );
  const insert = ops.find((op) => op.operationType === 'insert');
  if (insert !== undefined && insert.status !== 'DONE') {
    return ctx.transient(
      `instance ${id.name} is being created (operation ${insert.name} is ${insert.status}); try again`,
    );
  }
  if (insert !== undefined && insert.errors.length > 0) return insertFailure(id, insert, ctx);
  return ctx.notFound(`instance ${id.name} does not exist in zone ${id.zone}`);
}

/** The error of a failed insert operation: its class and the API's message. */
export function insertFailure(id: GcpId, op: OperationView, ctx: OperationContext): ProviderError {
  const first = op.errors[0];
  const code = first?.code ?? 'UNKNOWN';
  const text = op.errors.map((e) => `${e.code}: ${e.message}`).join('; ');
  const message = `the insert of instance ${id.name} failed (operation ${op.name}): ${text}`;
  switch (operationErrorClass(code, op.httpErrorStatusCode)) {
    case 'QuotaExceeded':
      return ctx.quotaExceeded(message);
    case 'Permanent':
      return ctx.permanent(message);
    default:
      return ctx.transient(message);
  }
}
