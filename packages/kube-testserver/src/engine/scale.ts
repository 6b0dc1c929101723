/**
 * Writes through the scale subresource of a custom resource, as
 * apiextensions-apiserver's `ScaleREST` does them: the Scale is read from
 * the stored object, the request turns it into a new Scale, and only its
 * `spec.replicas` (and a resourceVersion precondition) goes back into the
 * object, which then takes the ordinary update path of the main resource
 * (optimistic concurrency, validation, generation, the watch event).
 *
 * managedFields follow the real 1.32 server, whose field manager for
 * `/scale` of custom resources has no type for `autoscaling/v1 Scale`:
 * the write takes the replicas path out of every entry and records no
 * entry of its own (kubernetes/kubernetes#116311, #131892).
 *
 * @module
 */
import { badRequest, internalError, StatusError } from '../errors.js';
import { fromFieldsV1, toFieldsV1 } from '../fieldmanager.js';
import { clone, isObject, type JsonObject, type JsonValue, meta } from '../json.js';
import type { ResourceType } from '../resource-type.js';
import {
  type DecodedScale,
  pathFields,
  SCALE_API_VERSION,
  type ScaleSubresource,
  scaleFromCustomResource,
  UNSET_REPLICAS,
} from '../scale.js';
import type { Store } from '../store.js';
import { findStored } from './objects.js';
import type { WriteOptions } from './options.js';
import { updateObject } from './update.js';

/** An error the real server answers as a bare 500 (not an API status: no reason). */
function unknownError(message: string): StatusError {
  return new StatusError({ message, code: 500 });
}

function scaleOfType(t: ResourceType): ScaleSubresource {
  if (t.scale === undefined) throw new Error(`${t.resource} has no scale subresource`);
  return t.scale;
}

/** GET `/scale`: the Scale of the stored object (500 when its replicas path is not set). */
export function readScale(
  store: Store,
  t: ResourceType,
  namespace: string,
  name: string,
): JsonObject {
  const scale = scaleOfType(t);
  const { existing } = findStored(store, t, namespace, name);
  const r = scaleFromCustomResource(existing, scale);
  if ('error' in r) throw unknownError(r.error);
  if (!r.replicasFound)
    throw internalError(`the spec replicas field "${scale.specReplicasPath}" does not exist`);
  return r.scale;
}

function ownsPath(entry: JsonObject, path: readonly string[]): boolean {
  return fromFieldsV1(entry.fieldsV1).has(JSON.stringify(path.map((p) => `f:${p}`)));
}

/**
 * The managedFields of the Scale a write starts from (`ToSubresource`):
 * the entries that own the replicas path, as owners of `spec.replicas`
 * in `autoscaling/v1`.
 */
function scaleManagedFields(t: ResourceType, cr: JsonObject): JsonValue[] {
  const entries = meta(cr).managedFields;
  if (!Array.isArray(entries)) return [];
  const out: JsonObject[] = [];
  for (const e of entries) {
    if (!isObject(e) || typeof e.apiVersion !== 'string') continue;
    const path = t.replicasPaths?.[e.apiVersion];
    if (path === undefined || path === null || !ownsPath(e, pathFields(path))) continue;
    out.push({
      manager: e.manager ?? '',
      operation: e.operation ?? '',
      apiVersion: SCALE_API_VERSION,
      ...(e.time === undefined ? {} : { time: e.time }),
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:replicas': {} } },
      ...(e.subresource === undefined ? {} : { subresource: e.subresource }),
    });
  }
  return sortEntries(out);
}

function seconds(e: JsonObject): number {
  return typeof e.time === 'string' ? Math.floor(Date.parse(e.time) / 1000) : 0;
}

/** The order the real field manager encodes managedFields in: operation, time, manager, version, subresource. */
function sortEntries(entries: JsonObject[]): JsonObject[] {
  const s = (v: JsonValue | undefined) => (typeof v === 'string' ? v : '');
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...entries].sort(
    (p, q) =>
      cmp(s(p.operation), s(q.operation)) ||
      seconds(p) - seconds(q) ||
      cmp(s(p.manager), s(q.manager)) ||
      cmp(s(p.apiVersion), s(q.apiVersion)) ||
      cmp(s(p.subresource), s(q.subresource)),
  );
}

/**
 * `ToParent` with a Scale whose field manager failed: every entry loses
 * the replicas path of its version (an entry left empty goes), entries of
 * versions the CRD does not have go, nothing is added.
 */
function parentManagedFields(t: ResourceType, cr: JsonObject): JsonObject[] {
  const entries = meta(cr).managedFields;
  if (!Array.isArray(entries)) return [];
  const out: JsonObject[] = [];
  for (const e of entries) {
    if (!isObject(e) || typeof e.apiVersion !== 'string') continue;
    const path = t.replicasPaths?.[e.apiVersion];
    if (path === undefined) continue;
    if (path === null || !ownsPath(e, pathFields(path))) {
      out.push(e);
      continue;
    }
    const fields = fromFieldsV1(e.fieldsV1);
    fields.delete(JSON.stringify(pathFields(path).map((p) => `f:${p}`)));
    if (fields.size > 0) out.push({ ...e, fieldsV1: toFieldsV1(fields) });
  }
  return sortEntries(out);
}

/** `unstructured.SetNestedField`: sets the replicas path, making the maps on the way. */
function setReplicas(cr: JsonObject, path: string, replicas: number): void {
  const fields = pathFields(path);
  let cur = cr;
  fields.slice(0, -1).forEach((f, i) => {
    const next = cur[f];
    if (next === undefined) cur[f] = {};
    else if (!isObject(next))
      throw unknownError(
        `value cannot be set because .${fields.slice(0, i + 1).join('.')} is not a map[string]interface{}`,
      );
    cur = cur[f] as JsonObject;
  });
  cur[fields.at(-1)!] = replicas;
}

/**
 * PUT or PATCH of `/scale`: `produce` turns the current Scale into the
 * requested one (the body, or the patched Scale; its errors are the
 * request's); only `spec.replicas` and a resourceVersion precondition are
 * taken from it. Answers the Scale of the object as written.
 */
export function writeScale(
  store: Store,
  t: ResourceType,
  namespace: string,
  name: string,
  produce: (current: JsonObject) => DecodedScale,
  opts: WriteOptions,
): JsonObject {
  const scale = scaleOfType(t);
  const { existing } = findStored(store, t, namespace, name);
  const old = scaleFromCustomResource(existing, scale);
  if ('error' in old) throw unknownError(old.error);
  const current = old.scale;
  if (!old.replicasFound) current.spec = { replicas: UNSET_REPLICAS };
  const managed = scaleManagedFields(t, existing);
  if (managed.length > 0) meta(current).managedFields = managed;
  const wanted = produce(current);
  if (wanted.replicas === UNSET_REPLICAS)
    throw badRequest(`the spec replicas field "${scale.specReplicasPath}" cannot be empty`);
  const cr = clone(existing);
  setReplicas(cr, scale.specReplicasPath, wanted.replicas);
  const m = meta(cr);
  if (wanted.resourceVersion !== '') m.resourceVersion = wanted.resourceVersion;
  const entries = parentManagedFields(t, existing);
  if (entries.length > 0) m.managedFields = entries;
  else delete m.managedFields;
  const written = updateObject(
    store,
    t,
    namespace,
    name,
    cr,
    { ...opts, fieldValidation: 'Ignore', warnings: [] },
    'main',
    { requireVersion: false, managed: 'keep' },
  );
  const r = scaleFromCustomResource(written, scale);
  if ('error' in r) throw badRequest(r.error);
  return r.scale;
}
