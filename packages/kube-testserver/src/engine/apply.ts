/**
 * Server-side apply: the applied configuration merged by field ownership
 * (see `fieldmanager.ts`), then created or written through the ordinary
 * paths with the managedFields apply computed.
 *
 * @module
 */
import { nowTime } from '../duration.js';
import { badRequest, notFound } from '../errors.js';
import { apply, type Scope } from '../fieldmanager.js';
import { clone, type JsonObject, meta, str } from '../json.js';
import { groupVersion, type ResourceType, resourceKey } from '../resource-type.js';
import { objectKey, type Store } from '../store.js';
import { createObject } from './create.js';
import { gr } from './objects.js';
import type { WriteOptions } from './options.js';
import { updateObject } from './update.js';
import { decodeFields } from './write-checks.js';

/** Server-side apply (PATCH with `application/apply-patch+yaml`). */
export function applyObject(
  store: Store,
  t: ResourceType,
  namespace: string,
  name: string,
  applied: JsonObject,
  opts: WriteOptions,
  scope: Scope,
  force: boolean,
): JsonObject {
  const cfg = clone(applied);
  const m = meta(cfg);
  if (
    typeof cfg.apiVersion !== 'string' ||
    cfg.apiVersion === '' ||
    typeof cfg.kind !== 'string' ||
    cfg.kind === ''
  )
    throw badRequest('invalid object type: /, Kind=');
  const bodyName = str(m, 'name');
  if (bodyName !== undefined && bodyName !== name)
    throw badRequest(
      `the name of the object (${bodyName}) does not match the name on the URL (${name})`,
    );
  m.name = name;
  if (t.namespaced) m.namespace = namespace;
  decodeFields(t, cfg, opts);
  const key = objectKey(t.namespaced ? namespace : '', name);
  const existing = store.get(resourceKey(t), key);
  const manager = {
    manager: opts.fieldManager,
    apiVersion: groupVersion(t),
    time: nowTime(),
    scope,
  };
  const noDecode: WriteOptions = { ...opts, fieldValidation: 'Ignore' };
  if (existing === undefined) {
    if (scope === 'status') throw notFound(gr(t), name);
    const rv = str(m, 'resourceVersion');
    if (rv !== undefined && rv !== '') throw notFound(gr(t), name);
    const merged = apply(undefined, cfg, t, manager, force);
    return createObject(store, t, namespace, merged, noDecode, true);
  }
  const merged = apply(existing, cfg, t, manager, force);
  const mm = meta(merged);
  const rv = str(m, 'resourceVersion');
  mm.resourceVersion =
    rv !== undefined && rv !== '' ? rv : (str(meta(existing), 'resourceVersion') ?? '');
  return updateObject(store, t, namespace, name, merged, noDecode, scope, {
    requireVersion: false,
    managed: 'keep',
  });
}
