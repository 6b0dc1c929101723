/**
 * The delete path of the generic registry: preconditions, graceful
 * deletion of scheduled pods, orphaning or foreground propagation to
 * dependents, and the `deletionTimestamp` that finalizers hold an object
 * under until their owners let it go.
 *
 * @module
 */
import { nowTime } from '../duration.js';
import { conflict } from '../errors.js';
import { clone, isObject, type JsonObject, meta, str, strings } from '../json.js';
import { type ResourceType, resourceKey } from '../resource-type.js';
import { objectKey, type Store } from '../store.js';
import { finalizers, findStored, gr, NS_KEY, POD_KEY } from './objects.js';
import type { DeleteOptions } from './options.js';

/** What a delete did: the object as it is now, and whether it is gone. */
export interface DeleteResult {
  readonly object: JsonObject;
  readonly deleted: boolean;
}

/**
 * DELETE: removes the object, or, while it has finalizers, sets
 * `deletionTimestamp` and leaves it for whoever owns the finalizers.
 */
export function deleteObject(
  store: Store,
  t: ResourceType,
  namespace: string,
  name: string,
  opts: DeleteOptions,
): DeleteResult {
  const { key, existing } = findStored(store, t, namespace, name);
  const m = meta(existing);
  const pre = opts.preconditions;
  if (pre?.uid !== undefined && pre.uid !== m.uid)
    throw conflict(
      gr(t),
      name,
      `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${String(m.uid ?? '')}`,
    );
  if (pre?.resourceVersion !== undefined && pre.resourceVersion !== m.resourceVersion)
    throw conflict(
      gr(t),
      name,
      `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${String(m.resourceVersion ?? '')}`,
    );
  const graceful = podGrace(store, t, existing, opts);
  if (graceful !== undefined) return graceful;
  if (m.deletionTimestamp !== undefined) return { object: clone(existing), deleted: false };
  const next = clone(existing);
  const nm = meta(next);
  if (opts.propagationPolicy === 'Orphan' && !opts.dryRun) orphan(store, m.uid);
  if (opts.propagationPolicy === 'Foreground') {
    const f = strings(nm, 'finalizers');
    if (!f.includes('foregroundDeletion')) nm.finalizers = [...f, 'foregroundDeletion'];
  }
  if (finalizers(t, next).length > 0) {
    nm.deletionTimestamp = nowTime();
    nm.deletionGracePeriodSeconds = 0;
    if (resourceKey(t) === NS_KEY)
      next.status = { ...(isObject(next.status) ? next.status : {}), phase: 'Terminating' };
    if (opts.dryRun) return { object: next, deleted: false };
    return { object: clone(store.put(resourceKey(t), key, next)), deleted: false };
  }
  if (opts.dryRun) return { object: next, deleted: true };
  return { object: clone(store.remove(resourceKey(t), key) ?? next), deleted: true };
}

/**
 * Graceful deletion of a pod, as the pod strategy and the generic
 * registry do it: a pod bound to a node gets `deletionTimestamp` in
 * `gracePeriodSeconds` (its `terminationGracePeriodSeconds`, 30 by
 * default) and stays until its kubelet deletes it again with 0; an
 * unscheduled or finished pod goes at once. A second delete may only
 * shorten the period. Undefined when the ordinary path applies.
 */
function podGrace(
  store: Store,
  t: ResourceType,
  existing: JsonObject,
  opts: DeleteOptions,
): DeleteResult | undefined {
  if (resourceKey(t) !== POD_KEY) return undefined;
  const spec = isObject(existing.spec) ? existing.spec : {};
  const status = isObject(existing.status) ? existing.status : {};
  const m = meta(existing);
  let grace =
    opts.gracePeriodSeconds ??
    (typeof spec.terminationGracePeriodSeconds === 'number'
      ? spec.terminationGracePeriodSeconds
      : 30);
  if ((str(spec, 'nodeName') ?? '') === '') grace = 0;
  if (status.phase === 'Succeeded' || status.phase === 'Failed') grace = 0;
  if (grace < 0) grace = 1;
  const current =
    typeof m.deletionGracePeriodSeconds === 'number' ? m.deletionGracePeriodSeconds : undefined;
  if (m.deletionTimestamp !== undefined) {
    // Already terminating: only a shorter period changes anything.
    if (current === undefined || grace >= current)
      return { object: clone(existing), deleted: false };
  } else if (grace === 0) return undefined;
  const requested =
    m.deletionTimestamp !== undefined && current !== undefined
      ? Date.parse(String(m.deletionTimestamp)) - current * 1000
      : Date.now();
  const next = clone(existing);
  const nm = meta(next);
  nm.deletionTimestamp = nowTime(new Date(requested + grace * 1000));
  nm.deletionGracePeriodSeconds = grace;
  if (opts.dryRun) return { object: next, deleted: false };
  if (grace === 0 && finalizers(t, next).length === 0) {
    return {
      object: clone(
        store.remove(resourceKey(t), objectKey(str(m, 'namespace') ?? '', str(m, 'name') ?? '')) ??
          next,
      ),
      deleted: true,
    };
  }
  const key = objectKey(str(m, 'namespace') ?? '', str(m, 'name') ?? '');
  return { object: clone(store.put(resourceKey(t), key, next)), deleted: false };
}

/** `propagationPolicy=Orphan`: the owner's reference removed from each dependent. */
function orphan(store: Store, uid: unknown): void {
  if (typeof uid !== 'string') return;
  for (const d of store.dependents(uid)) {
    const o = store.get(d.resource, d.key);
    if (o === undefined) continue;
    const next = clone(o);
    const nm = meta(next);
    const refs = Array.isArray(nm.ownerReferences) ? nm.ownerReferences : [];
    const kept = refs.filter((r) => !(isObject(r) && r.uid === uid));
    if (kept.length === 0) delete nm.ownerReferences;
    else nm.ownerReferences = kept;
    store.put(d.resource, d.key, next);
  }
}
