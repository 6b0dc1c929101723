/**
 * The checks every write runs before the object's own validation: strict
 * or warning field decoding (`fieldValidation`), and the namespace
 * lifecycle (the namespace must exist, and take no new content while it
 * terminates).
 *
 * @module
 */
import { badRequest, forbidden, notFound, StatusError } from '../errors.js';
import { isObject, type JsonObject } from '../json.js';
import type { ResourceType, WriteContext } from '../resource-type.js';
import type { Store } from '../store.js';
import { gr, NS_KEY } from './objects.js';
import type { WriteOptions } from './options.js';

/** What a type's defaulting, decoding and preparation hooks receive. */
export function writeContext(opts: WriteOptions): WriteContext {
  return { now: new Date(), fieldValidation: opts.fieldValidation, warnings: opts.warnings };
}

/**
 * The unknown fields of `obj`: ignored, collected as warnings, or (with
 * `fieldValidation=Strict`) the error the verb answers.
 */
export function decodeFields(t: ResourceType, obj: JsonObject, opts: WriteOptions): void {
  const unknown = t.decode?.(obj, writeContext(opts)) ?? [];
  if (unknown.length === 0 || opts.fieldValidation === 'Ignore') return;
  const errs = unknown.map((f) => `unknown field "${f}"`);
  if (opts.fieldValidation === 'Warn') {
    opts.warnings.push(...errs);
    return;
  }
  const message = `strict decoding error: ${errs.join(', ')}`;
  if (opts.verb === 'patch')
    throw new StatusError({
      message: ` "" is invalid: patch: Invalid value: "${JSON.stringify(obj).replace(/"/g, '\\"')}": ${message}`,
      reason: 'Invalid',
      details: { causes: [{ reason: 'FieldValueInvalid', message, field: 'patch' }] },
      code: 422,
    });
  throw badRequest(
    `${t.kind} in version "${t.version}" cannot be handled as a ${t.kind}: ${message}`,
  );
}

/** Throws unless the namespace of a namespaced write exists (and, for a create, is not terminating). */
export function checkNamespace(
  store: Store,
  t: ResourceType,
  namespace: string,
  name: string,
  verb: string,
): void {
  if (!t.namespaced) return;
  const ns = store.get(NS_KEY, namespace);
  if (ns === undefined) throw notFound({ group: '', resource: 'namespaces' }, namespace);
  if (verb === 'create' && isObject(ns.metadata) && ns.metadata.deletionTimestamp !== undefined)
    throw forbidden(
      gr(t),
      name,
      `unable to create new content in namespace ${namespace} because it is being terminated`,
    );
}
