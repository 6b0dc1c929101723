/**
 * ListByTag: one list request, across every namespace or in the
 * configured one, filtered by the mark's labels; each Pod's location read
 * from the Pod as Get reads it.
 *
 * @module
 */
import { type Instance, markedInstances, type OperationContext } from '@proxy-op/contract';
import { formatId, parseId } from './id.js';
import { managedSelector, podMark } from './labels.js';
import { podLocation } from './pod.js';
import { podMeta, type Runtime } from './runtime.js';

/** Every Pod of the installation, with ID, UID, creation time, installation and location. */
export async function listInstances(
  rt: Runtime,
  installation: string,
  ctx: OperationContext,
): Promise<Instance[]> {
  const pods = await rt.seam.listPods(
    { namespace: rt.config.namespace, labelSelector: managedSelector(installation) },
    ctx.signal,
  );
  const entries = [];
  for (const pod of pods.items) {
    const meta = podMeta(pod);
    const id = `${meta.namespace}/${meta.name}`;
    if (parseId(id) === undefined) {
      // A hand-made Pod with the labels and a name that is no DNS label: not one of ours.
      rt.log.debug({ namespace: meta.namespace, name: meta.name }, 'kubernetes pod skipped');
      continue;
    }
    entries.push({
      id: formatId({ namespace: meta.namespace, name: meta.name }),
      mark: podMark(meta.labels, meta.creationTimestamp),
      location: podLocation(pod),
    });
  }
  const out = markedInstances(installation, entries);
  rt.log.debug(
    { installation, listed: pods.items.length, kept: out.length },
    'kubernetes pods listed',
  );
  return out;
}
