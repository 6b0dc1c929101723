/**
 * The update path of the generic registry, which PUT, PATCH and apply all
 * end in: name and namespace checks, optimistic concurrency on
 * `resourceVersion`, the main or status scope, system metadata kept,
 * validation, generation, managedFields, and the no-op that stores
 * nothing.
 *
 * @module
 */
import { nowTime } from '../duration.js';
import { badRequest, conflict, fieldForbidden, fieldInvalid, invalid } from '../errors.js';
import { recordUpdate, type Scope } from '../fieldmanager.js';
import { clone, deepEqual, isObject, type JsonObject, meta, str, strings } from '../json.js';
import { groupVersion, type ResourceType, resourceKey } from '../resource-type.js';
import type { Store } from '../store.js';
import { finalizers, findStored, gr, SYSTEM_META } from './objects.js';
import type { WriteOptions } from './options.js';
import { decodeFields, writeContext } from './write-checks.js';

/** How a write treats versions and managedFields. */
export interface WriteHow {
  /** PUT's rule for custom resources: no unconditional update. */
  readonly requireVersion: boolean;
  /** `update` records this write in managedFields; `keep` stores the candidate's (apply computed them). */
  readonly managed: 'update' | 'keep';
}

function withoutVolatile(o: JsonObject): JsonObject {
  const m = isObject(o.metadata) ? { ...o.metadata } : {};
  delete m.resourceVersion;
  if (Array.isArray(m.managedFields))
    m.managedFields = m.managedFields.map((e) => (isObject(e) ? { ...e, time: '' } : e));
  return { ...o, metadata: m };
}

function nonMetadata(o: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(o)) if (k !== 'metadata') out[k] = v;
  return out;
}

/**
 * Writes `candidate` over the stored object: the update pipeline of PUT,
 * PATCH and apply. `requireVersion` is PUT's rule for custom resources
 * (no unconditional update).
 */
export function updateObject(
  store: Store,
  t: ResourceType,
  namespace: string,
  name: string,
  candidate: JsonObject,
  opts: WriteOptions,
  scope: Scope,
  how: WriteHow,
): JsonObject {
  const { key, existing } = findStored(store, t, namespace, name);
  const obj = clone(candidate);
  const m = meta(obj);
  const old = meta(existing);
  const bodyName = str(m, 'name');
  if (bodyName !== undefined && bodyName !== name)
    throw badRequest(
      `the name of the object (${bodyName}) does not match the name on the URL (${name})`,
    );
  if (t.namespaced) {
    const bodyNs = str(m, 'namespace');
    if (bodyNs !== undefined && bodyNs !== '' && bodyNs !== namespace)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
  }
  const rv = str(m, 'resourceVersion') ?? '';
  if (rv === '') {
    if (how.requireVersion && t.custom)
      throw invalid(t.group, t.resource, name, [
        fieldInvalid('metadata.resourceVersion', 0, 'must be specified for an update'),
      ]);
  } else if (rv !== old.resourceVersion) throw conflict(gr(t), name);
  const ctx = writeContext(opts);
  decodeFields(t, obj, opts);
  let next: JsonObject;
  if (scope === 'status') {
    next = clone(existing);
    if (obj.status === undefined) delete next.status;
    else next.status = obj.status;
    if (how.managed === 'keep') {
      if (m.managedFields === undefined) delete meta(next).managedFields;
      else meta(next).managedFields = m.managedFields;
    }
  } else {
    next = obj;
    if (t.statusSubresource) {
      if (existing.status === undefined) delete next.status;
      else next.status = clone(existing.status);
    }
    const nm = meta(next);
    for (const k of SYSTEM_META) {
      if (old[k] === undefined) delete nm[k];
      else nm[k] = old[k]!;
    }
    if (how.managed === 'update') {
      if (old.managedFields === undefined) delete nm.managedFields;
      else nm.managedFields = clone(old.managedFields);
    }
    nm.name = name;
    if (t.namespaced) nm.namespace = namespace;
    else delete nm.namespace;
  }
  next.apiVersion = groupVersion(t);
  next.kind = t.kind;
  const nm = meta(next);
  nm.resourceVersion = old.resourceVersion ?? '';
  t.defaults?.(next, ctx);
  const errs = t.validate?.(next, existing) ?? [];
  if (old.deletionTimestamp !== undefined) {
    const added = strings(nm, 'finalizers').filter((f) => !strings(old, 'finalizers').includes(f));
    if (added.length > 0)
      errs.push(
        fieldForbidden(
          'metadata.finalizers',
          `no new finalizers can be added if the object is being deleted, found new finalizers []string{${added.map((f) => JSON.stringify(f)).join(', ')}}`,
        ),
      );
  }
  if (errs.length > 0) throw invalid(t.group, t.kind, name, errs);
  if (t.generation && scope === 'main' && !deepEqual(nonMetadata(next), nonMetadata(existing)))
    nm.generation = (typeof old.generation === 'number' ? old.generation : 0) + 1;
  if (how.managed === 'update')
    recordUpdate(existing, next, t, {
      manager: opts.fieldManager,
      apiVersion: groupVersion(t),
      time: nowTime(ctx.now),
      scope,
    });
  if (deepEqual(withoutVolatile(next), withoutVolatile(existing))) return clone(existing);
  if (opts.dryRun) return next;
  // An update lets a deleted object go once nothing holds it: no
  // finalizer, and no grace period still running (a terminating pod).
  if (
    nm.deletionTimestamp !== undefined &&
    (nm.deletionGracePeriodSeconds ?? 0) === 0 &&
    finalizers(t, next).length === 0
  ) {
    return clone(store.remove(resourceKey(t), key) ?? next);
  }
  return clone(store.put(resourceKey(t), key, next));
}
