/**
 * The scale subresource of custom resources (apiextensions-apiserver's
 * `serveScale`): GET, PUT and PATCH of `.../<name>/scale` in
 * `autoscaling/v1 Scale`, through the generic get, update and patch
 * handlers with the Scale codec, answered as a Scale, a Table (Desired,
 * Available, Age) or its metadata. Other verbs are 405.
 *
 * @module
 */
import { parse as parseYaml } from 'yaml';
import type { WriteOptions } from '../../engine/options.js';
import { readScale, writeScale } from '../../engine/scale.js';
import {
  badRequest,
  fieldInvalid,
  invalid,
  methodNotSupported,
  StatusError,
  unsupportedMediaType,
} from '../../errors.js';
import { isObject, type JsonObject, type JsonValue, meta, str } from '../../json.js';
import { jsonPatch, mergePatch } from '../../patch.js';
import { PROTOBUF_MEDIA_TYPE } from '../../protobuf/envelope.js';
import { AGE_COLUMN, type Column, column, NAME_COLUMN } from '../../resource-type.js';
import { type DecodedScale, decodeScale, SCALE_API_VERSION, SCALE_KIND } from '../../scale.js';
import { parseIncludeObject, toPartial, toTable } from '../../table.js';
import { writeJson } from '../responsewriters.js';
import { type ResourceRequest, writeOptions } from './rest.js';

/** Where `runtime.NewScheme()` of the Scale codec is called: its name in "not registered" errors. */
const SCALE_SCHEME = 'k8s.io/client-go/scale/util.go:146';
/** The other versions the Scale codec knows `Scale` in. */
const OTHER_SCALE_VERSIONS = ['extensions/v1beta1', 'apps/v1beta1', 'apps/v1beta2'];

/** The columns of a Scale as a Table (`getScaleColumnsForVersion`): desired and actual replicas. */
const SCALE_COLUMNS: readonly Column[] = [
  NAME_COLUMN,
  column(
    'Desired',
    (o) => {
      const r = isObject(o.spec) ? o.spec.replicas : undefined;
      return typeof r === 'number' ? r : null;
    },
    { type: 'integer', description: 'Number of desired replicas' },
  ),
  column(
    'Available',
    (o) => {
      const r = isObject(o.status) ? o.status.replicas : undefined;
      return typeof r === 'number' ? r : null;
    },
    { type: 'integer', description: 'Number of actual replicas' },
  ),
  { ...AGE_COLUMN, type: 'date' },
];

/** Serves one request to `/scale`. */
export function serveScale(r: ResourceRequest, verb: string) {
  switch (verb) {
    case 'get':
      return getScale(r);
    case 'update':
      return updateScale(r);
    case 'patch':
      return patchScale(r);
    default:
      throw methodNotSupported({ group: r.type.group, resource: r.type.resource }, verb);
  }
}

/** A Scale as the client negotiated it: itself, a Table (Desired, Available, Age), or its metadata. */
function renderScale(r: ResourceRequest, scale: JsonObject): JsonValue {
  const { rendering, url } = r;
  if (rendering.as === 'table')
    return toTable(
      { ...r.type, columns: SCALE_COLUMNS },
      [scale],
      { resourceVersion: str(meta(scale), 'resourceVersion') ?? '' },
      {
        includeObject: parseIncludeObject(url.searchParams.get('includeObject')),
        noHeaders: false,
        apiVersion: rendering.apiVersion,
      },
    );
  if (rendering.as === 'partial') return toPartial(scale, rendering.apiVersion);
  return scale;
}

function getScale(r: ResourceRequest): void {
  const { ctx, type: t } = r;
  writeJson(r.res, 200, renderScale(r, readScale(ctx.store, t, r.namespace, r.name)));
}

/** `checkName` and the namespace check of the update and patch handlers. */
function checkNameAndNamespace(r: ResourceRequest, s: DecodedScale): void {
  if (s.name !== r.name)
    throw badRequest(
      `the name of the object (${s.name}) does not match the name on the URL (${r.name})`,
    );
  if (s.namespace !== '' && r.namespace !== '' && s.namespace !== r.namespace)
    throw badRequest(
      'the namespace of the provided object does not match the namespace sent on the request',
    );
}

/** The unknown fields of a Scale: `Warning` headers, or under Strict the error `strict` makes. */
function strictFields(opts: WriteOptions, unknown: string[], strict: (m: string) => StatusError) {
  if (unknown.length === 0 || opts.fieldValidation === 'Ignore') return;
  const errs = unknown.map((f) => `unknown field "${f}"`);
  if (opts.fieldValidation === 'Warn') opts.warnings.push(...errs);
  else throw strict(`strict decoding error: ${errs.join(', ')}`);
}

/** PUT: the body is a Scale (JSON or YAML); only its `spec.replicas` and resourceVersion are used. */
function updateScale(r: ResourceRequest): void {
  const { ctx, req, body, type: t } = r;
  const opts = writeOptions(r, 'update');
  const type = (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim();
  const cannot = (kind: string, version: string, why: string) =>
    badRequest(`${kind} in version "${version}" cannot be handled as a ${SCALE_KIND}: ${why}`);
  let v: JsonValue;
  if (type === 'application/json' || type === '' || type === '*/*') {
    try {
      v = JSON.parse(body.toString('utf8')) as JsonValue;
    } catch (e) {
      throw cannot(SCALE_KIND, 'v1', e instanceof Error ? e.message : String(e));
    }
  } else if (type === 'application/yaml') v = parseYaml(body.toString('utf8')) as JsonValue;
  else if (type === PROTOBUF_MEDIA_TYPE)
    throw new StatusError({
      ...unsupportedMediaType(['application/json', 'application/yaml']).status,
      message: `${unsupportedMediaType(['application/json', 'application/yaml']).message} (${PROTOBUF_MEDIA_TYPE} is not decoded by this test server for ${SCALE_API_VERSION} ${SCALE_KIND})`,
    });
  else throw unsupportedMediaType(['application/json', 'application/yaml', PROTOBUF_MEDIA_TYPE]);
  if (!isObject(v))
    throw badRequest(`Object 'Kind' is missing in '${body.toString('utf8').slice(0, 100)}'`);
  const apiVersion = str(v, 'apiVersion') || SCALE_API_VERSION;
  const kind = str(v, 'kind') || SCALE_KIND;
  const version = apiVersion.slice(apiVersion.lastIndexOf('/') + 1);
  if (
    kind !== SCALE_KIND ||
    (apiVersion !== SCALE_API_VERSION && !OTHER_SCALE_VERSIONS.includes(apiVersion))
  )
    throw cannot(
      kind,
      version,
      `no kind "${kind}" is registered for version "${apiVersion}" in scheme "${SCALE_SCHEME}"`,
    );
  const decoded = decodeScale(v);
  if ('error' in decoded) throw cannot(kind, version, decoded.error);
  strictFields(opts, decoded.unknown, (m) => cannot(kind, version, m));
  if (apiVersion !== SCALE_API_VERSION)
    throw badRequest(
      `the API version in the data (${apiVersion}) does not match the expected API version (${SCALE_API_VERSION})`,
    );
  checkNameAndNamespace(r, decoded.scale);
  const out = writeScale(ctx.store, t, r.namespace, r.name, () => decoded.scale, opts);
  writeJson(r.res, 200, renderScale(r, out), {}, opts.warnings);
}

/** Go's `json.Marshal` of a decoded map: keys sorted, HTML characters escaped. */
function goJson(v: JsonValue): string {
  const sorted = (x: JsonValue): JsonValue => {
    if (Array.isArray(x)) return x.map(sorted);
    if (!isObject(x)) return x;
    const out: JsonObject = {};
    for (const k of Object.keys(x).sort()) out[k] = sorted(x[k]!);
    return out;
  };
  return JSON.stringify(sorted(v))
    .replace(/</g, '\\u003c')
    .replace(/>/g, '\\u003e')
    .replace(/&/g, '\\u0026');
}

/** The 422 of a patched Scale that does not decode (`patch: Invalid value: "<patched>": ...`). */
function patchInvalid(patched: JsonValue, why: string): StatusError {
  return invalid('', '', '', [fieldInvalid('patch', goJson(patched), why)]);
}

/** The JSON patch and merge patch a Scale takes; strategic merge is 415 as for every custom resource. */
const PATCH_TYPES = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/apply-patch+yaml',
];

function patchScale(r: ResourceRequest) {
  const { ctx, req, url, body, type: t } = r;
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
  if (!PATCH_TYPES.includes(type)) throw unsupportedMediaType(PATCH_TYPES);
  const opts = writeOptions(r, 'patch');
  if (type === 'application/apply-patch+yaml') return applyScale(r, opts);
  if (url.searchParams.get('force') !== null)
    throw new StatusError({
      message:
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch',
      reason: 'Invalid',
      code: 422,
    });
  const produce = (current: JsonObject): DecodedScale => {
    let patch: JsonValue;
    try {
      patch = JSON.parse(body.toString('utf8')) as JsonValue;
    } catch (e) {
      throw badRequest(`error decoding patch: ${e instanceof Error ? e.message : String(e)}`);
    }
    let patched: JsonValue;
    if (type === 'application/json-patch+json') patched = jsonPatch(current, patch);
    else {
      if (!isObject(patch))
        throw badRequest(
          'json: cannot unmarshal array into Go value of type map[string]interface {}',
        );
      patched = mergePatch(current, patch);
    }
    if (!isObject(patched))
      throw patchInvalid(
        patched,
        `json: cannot unmarshal ${Array.isArray(patched) ? 'array' : typeof patched} into Go value of type v1.Scale`,
      );
    const decoded = decodeScale(patched);
    if ('error' in decoded) throw patchInvalid(patched, decoded.error);
    strictFields(opts, decoded.unknown, (m) => patchInvalid(patched, m));
    checkNameAndNamespace(r, decoded.scale);
    return decoded.scale;
  };
  const out = writeScale(ctx.store, t, r.namespace, r.name, produce, opts);
  writeJson(r.res, 200, renderScale(r, out), {}, opts.warnings);
}

/** `schema.GroupVersionKind.String()` of an applied object. */
function gvkString(o: JsonObject): string {
  const apiVersion = str(o, 'apiVersion') ?? '';
  const slash = apiVersion.indexOf('/');
  const group = slash < 0 ? '' : apiVersion.slice(0, slash);
  const version = slash < 0 ? apiVersion : apiVersion.slice(slash + 1);
  return `${group}/${version}, Kind=${str(o, 'kind') ?? ''}`;
}

/**
 * Server-side apply of a Scale. The real 1.32 server's field manager for
 * the scale subresource of custom resources has no type for
 * `autoscaling/v1 Scale`, so an apply that passes the version checks
 * fails with its bare 500 (kubernetes/kubernetes#116311); this answers
 * the same, after the same checks.
 */
function applyScale(r: ResourceRequest, opts: WriteOptions): void {
  const { ctx, url, body, type: t } = r;
  const manager = url.searchParams.get('fieldManager');
  if (manager === null || manager === '')
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
  writeScale(
    ctx.store,
    t,
    r.namespace,
    r.name,
    () => {
      let applied: JsonValue;
      try {
        applied = parseYaml(body.toString('utf8')) as JsonValue;
      } catch (e) {
        throw badRequest(`error decoding YAML: ${e instanceof Error ? e.message : String(e)}`);
      }
      if (!isObject(applied))
        throw badRequest('error decoding YAML: the applied configuration is not an object');
      const gvk = gvkString(applied);
      if (gvk !== `autoscaling/v1, Kind=${SCALE_KIND}`)
        throw badRequest(`invalid object type: ${gvk}`);
      const m = isObject(applied.metadata) ? applied.metadata : {};
      if (m.managedFields !== undefined) throw badRequest('metadata.managedFields must be nil');
      throw new StatusError({
        message: `failed to create typed patch object (${str(m, 'namespace') ?? ''}/${str(m, 'name') ?? ''}; ${gvk}): no corresponding type for ${gvk}`,
        code: 500,
      });
    },
    opts,
  );
}
