/**
 * The scale subresource of custom resources, as apiextensions-apiserver
 * serves it: the CRD-side checks of `subresources.scale`, the checks of
 * the replicas and selector paths every custom resource write runs, the
 * `autoscaling/v1 Scale` read from a custom resource, and the reading of
 * a Scale body as the Go type decodes it (its type errors and unknown
 * fields in the JSON decoder's words).
 *
 * @module
 */
import { type FieldError, fieldInvalid, fieldRequired } from './errors.js';
import { isObject, type JsonObject, type JsonValue, meta, str } from './json.js';

/** `subresources.scale` of a CRD version. */
export interface ScaleSubresource {
  readonly specReplicasPath: string;
  readonly statusReplicasPath: string;
  /** Empty when the CRD names none. */
  readonly labelSelectorPath: string;
}

/** The API version and kind every scale subresource answers in. */
export const SCALE_API_VERSION = 'autoscaling/v1';
export const SCALE_KIND = 'Scale';

/** The replicas a Scale carries when the custom resource has none (smallest int32). */
export const UNSET_REPLICAS = -2147483648;
const MAX_INT32 = 2147483647;

/** The scale subresource a CRD version declares, or undefined. */
export function scaleOf(subresources: JsonValue | undefined): ScaleSubresource | undefined {
  if (!isObject(subresources) || !isObject(subresources.scale)) return undefined;
  const s = subresources.scale;
  return {
    specReplicasPath: str(s, 'specReplicasPath') ?? '',
    statusReplicasPath: str(s, 'statusReplicasPath') ?? '',
    labelSelectorPath: str(s, 'labelSelectorPath') ?? '',
  };
}

function simplePath(path: string, field: string): FieldError[] {
  if (path[0] !== '.')
    return [fieldInvalid(field, path, 'must be a simple json path starting with .')];
  return [];
}

/**
 * `ValidateCustomResourceDefinitionSubresources` for the scale part:
 * `field` is where the subresources sit (`spec.subresources` when every
 * version declares the same ones, as the v1 conversion hoists them, else
 * `spec.versions[i].subresources`).
 */
export function validateScaleSubresource(scale: ScaleSubresource, field: string): FieldError[] {
  const errs: FieldError[] = [];
  const check = (path: string, name: string, prefixes: string[], detail: string) => {
    const f = `${field}.scale.${name}`;
    const bad = simplePath(path, f);
    if (bad.length > 0) errs.push(...bad);
    else if (!prefixes.some((p) => path.startsWith(p))) errs.push(fieldInvalid(f, path, detail));
  };
  if (scale.specReplicasPath === '') errs.push(fieldRequired(`${field}.scale.specReplicasPath`));
  else
    check(
      scale.specReplicasPath,
      'specReplicasPath',
      ['.spec.'],
      'should be a json path under .spec',
    );
  if (scale.statusReplicasPath === '')
    errs.push(fieldRequired(`${field}.scale.statusReplicasPath`));
  else
    check(
      scale.statusReplicasPath,
      'statusReplicasPath',
      ['.status.'],
      'should be a json path under .status',
    );
  if (scale.labelSelectorPath !== '')
    check(
      scale.labelSelectorPath,
      'labelSelectorPath',
      ['.spec.', '.status.'],
      'should be a json path under either .spec or .status',
    );
  return errs;
}

/** A path's fields: `.spec.replicas` → `spec`, `replicas`. */
export function pathFields(path: string): string[] {
  return (path.startsWith('.') ? path.slice(1) : path).split('.');
}

/** A value as Go's `%v` prints what `encoding/json` decoded into `interface{}`. */
export function goFormat(v: JsonValue | undefined): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goFormat).join(' ')}]`;
  if (isObject(v))
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goFormat(v[k])}`)
      .join(' ')}]`;
  return String(v);
}

/** The Go type `encoding/json` decodes a value into, in an unstructured object. */
function goType(v: JsonValue): string {
  if (v === null) return '<nil>';
  if (Array.isArray(v)) return '[]interface {}';
  if (isObject(v)) return 'map[string]interface {}';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int64' : 'float64';
  return typeof v === 'boolean' ? 'bool' : 'string';
}

/** What `unstructured.NestedInt64`/`NestedString` find at a path: the value, absent, or their error. */
type Nested<T> = { found: true; value: T } | { found: false } | { error: string };

function nested(obj: JsonObject, path: string): Nested<JsonValue> {
  const fields = pathFields(path);
  let cur: JsonValue = obj;
  for (let i = 0; i < fields.length; i++) {
    if (cur === null) return { found: false };
    if (!isObject(cur))
      return {
        error: `.${fields.slice(0, i + 1).join('.')} accessor error: ${goFormat(cur)} is of the type ${goType(cur)}, expected map[string]interface{}`,
      };
    const next: JsonValue | undefined = cur[fields[i]!];
    if (next === undefined) return { found: false };
    cur = next;
  }
  return { found: true, value: cur };
}

function nestedTyped(obj: JsonObject, path: string, want: 'int64' | 'string'): Nested<JsonValue> {
  const r = nested(obj, path);
  if (!('found' in r) || !r.found) return r;
  const ok =
    want === 'int64'
      ? typeof r.value === 'number' && Number.isInteger(r.value)
      : typeof r.value === 'string';
  if (ok) return r;
  return {
    error: `.${pathFields(path).join('.')} accessor error: ${goFormat(r.value)} is of the type ${goType(r.value)}, expected ${want}`,
  };
}

/**
 * The checks of the replicas and selector paths every write of a custom
 * resource with a scale subresource runs (`ValidateScaleSpec` and
 * `ValidateScaleStatus`): the fields are named by their paths, leading
 * dot and all.
 */
export function validateScalePaths(obj: JsonObject, scale: ScaleSubresource): FieldError[] {
  const errs: FieldError[] = [];
  for (const path of [scale.specReplicasPath, scale.statusReplicasPath]) {
    const r = nestedTyped(obj, path, 'int64');
    if ('error' in r) errs.push(fieldInvalid(path, 0, r.error));
    else if (r.found) {
      const n = r.value as number;
      if (n < 0) errs.push(fieldInvalid(path, n, 'should be a non-negative integer'));
      else if (n > MAX_INT32)
        errs.push(fieldInvalid(path, n, `should be less than or equal to ${MAX_INT32}`));
    }
  }
  if (scale.labelSelectorPath !== '') {
    const r = nestedTyped(obj, scale.labelSelectorPath, 'string');
    if ('error' in r) errs.push(fieldInvalid(scale.labelSelectorPath, '', r.error));
  }
  return errs;
}

/** `scaleFromCustomResource`: the Scale of a custom resource, or the accessor error it meets. */
export function scaleFromCustomResource(
  cr: JsonObject,
  scale: ScaleSubresource,
): { scale: JsonObject; replicasFound: boolean } | { error: string } {
  const spec = nestedTyped(cr, scale.specReplicasPath, 'int64');
  if ('error' in spec) return spec;
  const status = nestedTyped(cr, scale.statusReplicasPath, 'int64');
  if ('error' in status) return status;
  let selector = '';
  if (scale.labelSelectorPath !== '') {
    const s = nestedTyped(cr, scale.labelSelectorPath, 'string');
    if ('error' in s) return s;
    if (s.found) selector = s.value as string;
  }
  const m = meta(cr);
  const specReplicas = spec.found ? toInt32(spec.value as number) : 0;
  const statusReplicas = status.found ? toInt32(status.value as number) : 0;
  return {
    scale: scaleObject(
      {
        name: str(m, 'name') ?? '',
        namespace: str(m, 'namespace') ?? '',
        uid: str(m, 'uid') ?? '',
        resourceVersion: str(m, 'resourceVersion') ?? '',
        creationTimestamp: m.creationTimestamp ?? null,
      },
      specReplicas,
      statusReplicas,
      selector,
    ),
    replicasFound: spec.found,
  };
}

/** Go's `int32(int64)`: wraps around as the conversion does. */
function toInt32(n: number): number {
  return Number(BigInt.asIntN(32, BigInt(n)));
}

/** A Scale as the Go type marshals it (`spec.replicas` is `omitempty`, `status.replicas` is not). */
export function scaleObject(
  m: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: JsonValue;
    managedFields?: JsonValue[];
  },
  specReplicas: number,
  statusReplicas: number,
  selector: string,
): JsonObject {
  const metadata: JsonObject = { name: m.name };
  if (m.namespace !== '') metadata.namespace = m.namespace;
  if (m.uid !== '') metadata.uid = m.uid;
  if (m.resourceVersion !== '') metadata.resourceVersion = m.resourceVersion;
  metadata.creationTimestamp = m.creationTimestamp;
  if (m.managedFields !== undefined && m.managedFields.length > 0)
    metadata.managedFields = m.managedFields;
  return {
    kind: SCALE_KIND,
    apiVersion: SCALE_API_VERSION,
    metadata,
    spec: specReplicas === 0 ? {} : { replicas: specReplicas },
    status: { replicas: statusReplicas, ...(selector === '' ? {} : { selector }) },
  };
}

/** What a Scale body decodes to: the fields a scale write uses. */
export interface DecodedScale {
  readonly name: string;
  readonly namespace: string;
  readonly resourceVersion: string;
  readonly replicas: number;
}

const OBJECT_META_FIELDS = new Set([
  'name',
  'generateName',
  'namespace',
  'selfLink',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'labels',
  'annotations',
  'ownerReferences',
  'finalizers',
  'managedFields',
]);
const META_STRINGS = ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion'];

/** `encoding/json`'s word for a JSON value it could not store. */
function jsonKind(v: JsonValue): string {
  if (Array.isArray(v)) return 'array';
  if (isObject(v)) return 'object';
  return typeof v === 'boolean' ? 'bool' : typeof v === 'number' ? 'number' : 'string';
}

function typeError(v: JsonValue, struct: string, field: string, type: string): string {
  return `json: cannot unmarshal ${jsonKind(v)} into Go struct field ${struct}.${field} of type ${type}`;
}

function int32Error(v: JsonValue, struct: string, field: string): string | undefined {
  if (v === null) return undefined;
  if (typeof v !== 'number') return typeError(v, struct, field, 'int32');
  if (!Number.isInteger(v) || v < UNSET_REPLICAS || v > MAX_INT32)
    return `json: cannot unmarshal number ${String(v)} into Go struct field ${struct}.${field} of type int32`;
  return undefined;
}

/**
 * Reads a Scale body (already parsed JSON) as the Go decoder does: the
 * first type error it meets (`json: cannot unmarshal string into Go
 * struct field ScaleSpec.spec.replicas of type int32`), the unknown
 * fields strict decoding reports, and the fields a scale write uses.
 */
export function decodeScale(
  v: JsonObject,
): { error: string } | { scale: DecodedScale; unknown: string[] } {
  const unknown: string[] = [];
  for (const k of Object.keys(v))
    if (!['apiVersion', 'kind', 'metadata', 'spec', 'status'].includes(k)) unknown.push(k);
  const m = v.metadata;
  if (m !== undefined && m !== null && !isObject(m))
    return { error: typeError(m, 'Scale', 'metadata', 'v1.ObjectMeta') };
  const md = isObject(m) ? m : {};
  for (const k of Object.keys(md)) if (!OBJECT_META_FIELDS.has(k)) unknown.push(`metadata.${k}`);
  for (const k of META_STRINGS) {
    const x = md[k];
    if (x !== undefined && x !== null && typeof x !== 'string')
      return { error: typeError(x, 'ObjectMeta', `metadata.${k}`, 'string') };
  }
  const spec = v.spec;
  if (spec !== undefined && spec !== null && !isObject(spec))
    return { error: typeError(spec, 'Scale', 'spec', 'v1.ScaleSpec') };
  const sp = isObject(spec) ? spec : {};
  for (const k of Object.keys(sp)) if (k !== 'replicas') unknown.push(`spec.${k}`);
  const replicasError = int32Error(sp.replicas ?? null, 'ScaleSpec', 'spec.replicas');
  if (replicasError !== undefined) return { error: replicasError };
  const status = v.status;
  if (status !== undefined && status !== null && !isObject(status))
    return { error: typeError(status, 'Scale', 'status', 'v1.ScaleStatus') };
  const st = isObject(status) ? status : {};
  for (const k of Object.keys(st))
    if (k !== 'replicas' && k !== 'selector') unknown.push(`status.${k}`);
  const statusError = int32Error(st.replicas ?? null, 'ScaleStatus', 'status.replicas');
  if (statusError !== undefined) return { error: statusError };
  if (st.selector !== undefined && st.selector !== null && typeof st.selector !== 'string')
    return { error: typeError(st.selector, 'ScaleStatus', 'status.selector', 'string') };
  return {
    scale: {
      name: str(md, 'name') ?? '',
      namespace: str(md, 'namespace') ?? '',
      resourceVersion: str(md, 'resourceVersion') ?? '',
      replicas: typeof sp.replicas === 'number' ? sp.replicas : 0,
    },
    unknown,
  };
}
