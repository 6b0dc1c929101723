/**
 * The create path of the generic registry: namespace and name (or
 * `generateName`), system metadata, defaults, validation, quota
 * admission, AlreadyExists, managedFields, then storage.
 *
 * @module
 */
import { randomUUID } from 'node:crypto';
import { nowTime } from '../duration.js';
import { alreadyExists, badRequest, invalid } from '../errors.js';
import { recordUpdate } from '../fieldmanager.js';
import { clone, isObject, type JsonObject, meta, str } from '../json.js';
import { admitPod } from '../quota.js';
import { groupVersion, type ResourceType, resourceKey } from '../resource-type.js';
import { objectKey, type Store } from '../store.js';
import { gr, POD_KEY, QUOTA_KEY, SYSTEM_META } from './objects.js';
import type { WriteOptions } from './options.js';
import { updateQuotas } from './quota-controller.js';
import { checkNamespace, decodeFields, writeContext } from './write-checks.js';

const GENERATE_ALPHABET = 'bcdfghjklmnpqrstvwxz2456789';

/** POST: a new object, or 409 AlreadyExists. `fromApply` keeps the managedFields apply computed. */
export function createObject(
  store: Store,
  t: ResourceType,
  namespace: string,
  body: JsonObject,
  opts: WriteOptions,
  fromApply = false,
): JsonObject {
  const obj = clone(body);
  const m = meta(obj);
  if (t.namespaced) {
    const bodyNs = str(m, 'namespace');
    if (bodyNs !== undefined && bodyNs !== '' && bodyNs !== namespace)
      throw badRequest(
        'the namespace of the provided object does not match the namespace sent on the request',
      );
    m.namespace = namespace;
  } else delete m.namespace;
  if (
    (str(m, 'name') ?? '') === '' &&
    typeof m.generateName === 'string' &&
    m.generateName !== ''
  ) {
    let suffix = '';
    for (let i = 0; i < 5; i++)
      suffix += GENERATE_ALPHABET[Math.floor(Math.random() * GENERATE_ALPHABET.length)];
    m.name = `${m.generateName}${suffix}`;
  }
  const name = str(m, 'name') ?? '';
  if (!fromApply && (str(m, 'resourceVersion') ?? '') !== '')
    throw badRequest('resourceVersion should not be set on objects to be created');
  delete m.resourceVersion;
  checkNamespace(store, t, namespace, name, 'create');
  const ctx = writeContext(opts);
  if (!fromApply) decodeFields(t, obj, opts);
  obj.apiVersion = groupVersion(t);
  obj.kind = t.kind;
  for (const k of SYSTEM_META) delete m[k];
  if (!fromApply) delete m.managedFields;
  m.uid = randomUUID();
  m.creationTimestamp = nowTime(ctx.now);
  if (t.generation) m.generation = 1;
  if (t.custom && t.statusSubresource) delete obj.status;
  t.defaults?.(obj, ctx);
  t.prepareCreate?.(obj, ctx);
  const errs = t.validate?.(obj, undefined) ?? [];
  if (errs.length > 0) throw invalid(t.group, t.kind, name, errs);
  // Validating admission runs before storage, so a full quota answers 403
  // even where the name is taken.
  const isPod = resourceKey(t) === POD_KEY;
  if (isPod)
    admitPod(
      obj,
      store.list(QUOTA_KEY, namespace).map((e) => e.object),
    );
  const key = objectKey(t.namespaced ? namespace : '', name);
  const existing = store.get(resourceKey(t), key);
  if (existing !== undefined)
    throw alreadyExists(
      gr(t),
      name,
      isObject(existing.metadata) && existing.metadata.deletionTimestamp !== undefined,
    );
  if (!fromApply)
    recordUpdate(undefined, obj, t, {
      manager: opts.fieldManager,
      apiVersion: groupVersion(t),
      time: nowTime(ctx.now),
      scope: 'main',
    });
  if (opts.dryRun) return obj;
  const stored = clone(store.put(resourceKey(t), key, obj));
  // The plugin charges the quotas as it admits (the controller only
  // recalculates later), so the next create already sees this pod.
  if (isPod) updateQuotas(store, namespace);
  return stored;
}
