/**
 * Delete: read the Pod, leave it alone unless it is the caller's, then
 * delete exactly that Pod (a UID precondition) and return: the Pod
 * terminates on its own (`deleteReturn: returns-early`).
 *
 * @module
 */

import type { V1Pod } from '@kubernetes/client-node';
import { type DeleteContext, deletionProblem } from '@proxy-op/contract';
import { KubernetesApiError } from './errors.js';
import type { KubernetesId } from './id.js';
import { podMark } from './labels.js';
import { podMeta, type Runtime } from './runtime.js';

function isNotFound(err: unknown): boolean {
  return KubernetesApiError.isInstance(err) && err.status === 404;
}

/** Deletes the caller's Pod at `id`; succeeds when there is none. */
export async function deleteInstance(
  rt: Runtime,
  id: KubernetesId,
  ctx: DeleteContext,
): Promise<void> {
  let pod: V1Pod;
  try {
    pod = await rt.seam.readPod(id, ctx.signal);
  } catch (err) {
    if (!isNotFound(err)) throw err;
    rt.log.debug({ ...id }, 'kubernetes pod already gone');
    return;
  }
  const meta = podMeta(pod);
  const problem = deletionProblem(podMark(meta.labels, meta.creationTimestamp), ctx.owner);
  if (problem !== undefined) {
    rt.log.debug({ ...id, problem }, "kubernetes pod not the caller's; left alone");
    return;
  }
  if (meta.deletionTimestamp !== undefined && meta.deletionTimestamp !== null) {
    rt.log.debug({ ...id }, 'kubernetes pod already being deleted');
    return;
  }
  try {
    await rt.seam.deletePod(id, meta.uid, ctx.signal);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  rt.log.debug({ ...id, podUID: meta.uid }, 'kubernetes pod deleted');
}
