/**
 * The patch handler (the real server's `handlers/patch.go`): JSON patch,
 * merge patch, strategic merge patch (built-in types only) and
 * server-side apply.
 *
 * @module
 */
import { parse as parseYaml } from 'yaml';
import { badRequest, StatusError, unsupportedMediaType } from '../../errors.js';
import { isObject, type JsonValue, meta, str } from '../../json.js';
import { jsonPatch, mergePatch, strategicMergePatch } from '../../patch.js';
import { resourceKey } from '../../resource-type.js';
import { writeJson } from '../responsewriters.js';
import { type ResourceRequest, render, withTypeMeta, writeOptions } from './rest.js';

const PATCH_TYPES_BUILTIN = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];
const PATCH_TYPES_CUSTOM = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/apply-patch+yaml',
];

/** PATCH of an object (or its status), by the patch type its `Content-Type` names (415 for any other). */
export function patchResource(r: ResourceRequest) {
  const { ctx, req, res, url, type: t, namespace, name, scope, body } = r;
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
  const accepted = t.custom ? PATCH_TYPES_CUSTOM : PATCH_TYPES_BUILTIN;
  if (!accepted.includes(type)) throw unsupportedMediaType(accepted);
  const opts = writeOptions(r, 'patch');
  const forceParam = url.searchParams.get('force');
  if (type === 'application/apply-patch+yaml') {
    if (
      url.searchParams.get('fieldManager') === null ||
      url.searchParams.get('fieldManager') === ''
    )
      throw new StatusError({
        message:
          'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
        reason: 'Invalid',
        details: {
          group: 'meta.k8s.io',
          kind: 'PatchOptions',
          causes: [
            {
              reason: 'FieldValueRequired',
              message: 'Required value: is required for apply patch',
              field: 'fieldManager',
            },
          ],
        },
        code: 422,
      });
    let applied: JsonValue;
    try {
      applied = parseYaml(body.toString('utf8')) as JsonValue;
    } catch (e) {
      throw badRequest(`error decoding YAML: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!isObject(applied))
      throw badRequest('error decoding YAML: the applied configuration is not an object');
    const existed =
      ctx.store.get(resourceKey(t), t.namespaced ? `${namespace}/${name}` : name) !== undefined;
    const out = ctx.engine.apply(t, namespace, name, applied, opts, scope, forceParam === 'true');
    return writeJson(res, existed ? 200 : 201, render(r, out), {}, opts.warnings);
  }
  if (forceParam !== null)
    throw new StatusError({
      message:
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
      reason: 'Invalid',
      code: 422,
    });
  const current = withTypeMeta(t, ctx.engine.get(t, namespace, name));
  let patch: JsonValue;
  try {
    patch = JSON.parse(body.toString('utf8')) as JsonValue;
  } catch (e) {
    throw badRequest(`error decoding patch: ${e instanceof Error ? e.message : String(e)}`);
  }
  let patched: JsonValue | undefined;
  if (type === 'application/json-patch+json') patched = jsonPatch(current, patch);
  else if (type === 'application/merge-patch+json') {
    if (!isObject(patch))
      throw badRequest(
        'json: cannot unmarshal array into Go value of type map[string]interface {}',
      );
    patched = mergePatch(current, patch);
  } else {
    if (!isObject(patch))
      throw badRequest(
        'json: cannot unmarshal array into Go value of type map[string]interface {}',
      );
    patched = strategicMergePatch(current, patch, t.listMapKeys);
  }
  if (!isObject(patched)) throw badRequest('the patched object is not an object');
  const pm = meta(patched);
  if ((str(pm, 'resourceVersion') ?? '') === '')
    pm.resourceVersion = str(meta(current), 'resourceVersion') ?? '';
  const out = ctx.engine.write(t, namespace, name, patched, opts, scope, {
    requireVersion: false,
    managed: 'update',
  });
  return writeJson(res, 200, render(r, withTypeMeta(t, out)), {}, opts.warnings);
}
