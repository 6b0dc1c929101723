/**
 * Get: one Pod read; its labels give the mark, its phase, IP, Ready
 * condition and deletion timestamp the state, its zone affinity the
 * location.
 *
 * @module
 */
import type { Instance, OperationContext } from '@proxy-op/contract';
import { formatId, type KubernetesId } from './id.js';
import { podMark } from './labels.js';
import { podLocation } from './pod.js';
import { podMeta, type Runtime, readyStatus } from './runtime.js';
import { podState } from './state.js';

/** Reads the instance back from its Pod. */
export async function getInstance(
  rt: Runtime,
  id: KubernetesId,
  ctx: OperationContext,
): Promise<Instance> {
  const pod = await rt.seam.readPod(id, ctx.signal);
  const meta = podMeta(pod);
  const mark = podMark(meta.labels, meta.creationTimestamp);
  if (mark === undefined) {
    throw ctx.notFound(`Pod ${id.namespace}/${id.name} is not managed by proxy-op`);
  }
  const podIP = pod.status?.podIP;
  const state = podState({
    deletionTimestamp: meta.deletionTimestamp,
    phase: pod.status?.phase,
    podIP,
    ready: readyStatus(pod),
  });
  const ip = state === 'Running' ? podIP : undefined;
  const location = podLocation(pod);
  rt.log.trace({ ...id, phase: pod.status?.phase, state, ip }, 'kubernetes pod read');
  return {
    id: formatId(id),
    uid: mark.uid,
    createdAt: mark.createdAt,
    state,
    ...(ip === undefined ? {} : { ip }),
    installation: mark.installation,
    ...(location === undefined ? {} : { location }),
  };
}
