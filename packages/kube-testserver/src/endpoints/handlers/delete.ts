/**
 * The delete handlers (the real server's `handlers/delete.go`): DELETE of
 * one object, and of every object of a collection that the selectors
 * match, with `DeleteOptions` from the query or the body.
 *
 * @module
 */
import type { DeleteOptions } from '../../engine/options.js';
import { badRequest, methodNotSupported, StatusError } from '../../errors.js';
import { isObject, type JsonObject, type JsonValue, meta, str } from '../../json.js';
import { groupVersion, resourceKey } from '../../resource-type.js';
import { writeJson } from '../responsewriters.js';
import { predicateFor, type ResourceRequest, render, withTypeMeta } from './rest.js';

/** `metav1.DeleteOptions` from the query, falling back to the body's. */
function deleteOptions(url: URL, body: Buffer): DeleteOptions {
  let o: JsonObject = {};
  if (body.length > 0) {
    const v = JSON.parse(body.toString('utf8')) as JsonValue;
    if (isObject(v)) o = v;
  }
  const policy =
    url.searchParams.get('propagationPolicy') ??
    (typeof o.propagationPolicy === 'string' ? o.propagationPolicy : undefined);
  const orphan =
    url.searchParams.get('orphanDependents') ??
    (typeof o.orphanDependents === 'boolean' ? String(o.orphanDependents) : undefined);
  if (
    policy !== undefined &&
    policy !== 'Orphan' &&
    policy !== 'Background' &&
    policy !== 'Foreground'
  )
    throw new StatusError({
      message: `DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "${policy}": supported values: "Foreground", "Background", "Orphan", "nil"`,
      reason: 'Invalid',
      code: 422,
    });
  const graceText =
    url.searchParams.get('gracePeriodSeconds') ??
    (typeof o.gracePeriodSeconds === 'number' ? String(o.gracePeriodSeconds) : undefined);
  const grace = graceText === undefined ? undefined : Number(graceText);
  if (grace !== undefined && !Number.isInteger(grace))
    throw badRequest(`invalid value for gracePeriodSeconds: "${graceText}"`);
  const pre = isObject(o.preconditions) ? o.preconditions : {};
  const dryRun =
    url.searchParams.getAll('dryRun').length > 0 ||
    (Array.isArray(o.dryRun) && o.dryRun.length > 0);
  return {
    ...(policy !== undefined
      ? { propagationPolicy: policy }
      : orphan === 'true'
        ? { propagationPolicy: 'Orphan' as const }
        : {}),
    preconditions: {
      ...(typeof pre.uid === 'string' ? { uid: pre.uid } : {}),
      ...(typeof pre.resourceVersion === 'string' ? { resourceVersion: pre.resourceVersion } : {}),
    },
    dryRun,
    ...(grace === undefined ? {} : { gracePeriodSeconds: grace }),
  };
}

/**
 * DELETE of one object: a Success Status once it is gone (the object for
 * types that answer with it), or the object still terminating (202 when
 * `orphanDependents=false` asked to wait).
 */
export function deleteResource(r: ResourceRequest) {
  const { ctx, url, type: t, name } = r;
  const opts = deleteOptions(url, r.body);
  const { object, deleted } = ctx.engine.delete(t, r.namespace, name, opts);
  const orphanFalse = url.searchParams.get('orphanDependents') === 'false';
  const code = !deleted && orphanFalse ? 202 : 200;
  if (deleted && !t.deleteReturnsObject) {
    return writeJson(r.res, code, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      details: {
        name,
        ...(t.group === '' ? {} : { group: t.group }),
        kind: t.resource,
        uid: str(meta(object), 'uid') ?? '',
      },
    });
  }
  return writeJson(r.res, code, render(r, withTypeMeta(t, object)));
}

/** DELETE of a collection: deletes each object the selectors match and lists what went. */
export function deleteCollection(r: ResourceRequest): void {
  const { ctx, url, type: t, namespace } = r;
  if (!t.verbs.includes('deletecollection'))
    throw methodNotSupported({ group: t.group, resource: t.resource }, 'deletecollection');
  const opts = deleteOptions(url, r.body);
  const pred = predicateFor(url, t);
  const items: JsonValue[] = [];
  for (const { object } of ctx.store.list(resourceKey(t), t.namespaced ? namespace : undefined)) {
    if (!pred(object)) continue;
    const m = meta(object);
    const { object: gone } = ctx.engine.delete(
      t,
      str(m, 'namespace') ?? '',
      str(m, 'name') ?? '',
      opts,
    );
    items.push(gone);
  }
  writeJson(r.res, 200, {
    kind: t.listKind,
    apiVersion: groupVersion(t),
    metadata: { resourceVersion: String(ctx.store.resourceVersion) },
    items,
  });
}
