/**
 * What the engine's write paths and controllers share about stored
 * objects: the keys of the types with rules of their own, the system
 * metadata a client cannot set, finding a stored object, and the
 * finalizers that hold an object from going.
 *
 * @module
 */
import { CRD_GROUP } from '../crd.js';
import { notFound } from '../errors.js';
import { isObject, type JsonObject, meta, strings } from '../json.js';
import { type ResourceType, resourceKey } from '../resource-type.js';
import { objectKey, type Store } from '../store.js';

/** Store key of Namespaces. */
export const NS_KEY = '/namespaces';
/** Store key of Pods. */
export const POD_KEY = '/pods';
/** Store key of ResourceQuotas. */
export const QUOTA_KEY = '/resourcequotas';
/** Store key of CustomResourceDefinitions. */
export const CRD_KEY = `${CRD_GROUP}/customresourcedefinitions`;

/** The metadata only the server sets: kept from the stored object on every update. */
export const SYSTEM_META: readonly string[] = [
  'uid',
  'creationTimestamp',
  'generation',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
];

/** A type's group and resource, as errors name it. */
export function gr(t: ResourceType): { group: string; resource: string } {
  return { group: t.group, resource: t.resource };
}

/** What holds the object from going: its finalizers, and a Namespace's `spec.finalizers`. */
export function finalizers(t: ResourceType, o: JsonObject): string[] {
  const f = strings(meta(o), 'finalizers');
  if (resourceKey(t) === NS_KEY && isObject(o.spec)) f.push(...strings(o.spec, 'finalizers'));
  return f;
}

/** The stored object a request names and its store key, or 404 NotFound. */
export function findStored(
  store: Store,
  t: ResourceType,
  namespace: string,
  name: string,
): { key: string; existing: JsonObject } {
  const key = objectKey(t.namespaced ? namespace : '', name);
  const existing = store.get(resourceKey(t), key);
  if (existing === undefined) throw notFound(gr(t), name);
  return { key, existing };
}
